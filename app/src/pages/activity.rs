//! A run's activity (`/plans/{id}/activity`, `?subtask=n` for one subtask):
//! every model call with its tokens, latency and attempt, every tool call
//! with its arguments and result, retries, overrides, questions, results
//! and the answer; the messages and replies fold out. Rendered on the
//! server (it costs the wasm nothing); the board links here.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use run_model::EntryKind;

use crate::api::{load_activity, Activity};
use crate::i18n::use_lang;

/// "16:53:02.123" (UTC, like every time the board shows): calls are
/// milliseconds apart, so the page shows them.
fn clock(at: &plan_engine::Timestamp) -> String {
    use chrono::Timelike;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        at.hour(),
        at.minute(),
        at.second(),
        at.timestamp_subsec_millis()
    )
}

/// An entry kind's words.
fn kind_label(kind: EntryKind, lang: crate::i18n::Lang) -> &'static str {
    let (en, zh) = match kind {
        EntryKind::StateChanged => ("state", "状态"),
        EntryKind::Classified => ("classified", "分类"),
        EntryKind::PlanProposed => ("plan proposed", "提出计划"),
        EntryKind::Rejected => ("rejected", "被驳回"),
        EntryKind::PlanRepaired => ("plan repaired", "计划已修复"),
        EntryKind::LlmCall => ("model call", "模型调用"),
        EntryKind::ToolCall => ("tool call", "工具调用"),
        EntryKind::RetryScheduled => ("retry scheduled", "计划重试"),
        EntryKind::ToolRetryScheduled => ("tool retry scheduled", "计划重试工具"),
        EntryKind::SubtaskRetry => ("subtask tried again", "子任务重试"),
        EntryKind::Recovery => ("planner's recovery", "规划器的恢复决定"),
        EntryKind::Recalled => ("memories recalled", "调取记忆"),
        EntryKind::Remembered => ("remembered", "已记住"),
        EntryKind::ToolApproval => ("asks to use a tool", "请求使用工具"),
        EntryKind::ToolDecision => ("tool decision", "工具决定"),
        EntryKind::Overridden => ("overridden", "被人工改动"),
        EntryKind::Asked => ("question", "提问"),
        EntryKind::SubtaskResult => ("result", "结果"),
        EntryKind::PlanAdjusted => ("plan adjusted", "计划调整"),
        EntryKind::BudgetReached => ("budget reached", "预算用尽"),
        EntryKind::PeopleChanged => ("people changed", "人工修改"),
        EntryKind::BatchPlanned => ("batch planned", "批次已规划"),
        EntryKind::BatchFinished => ("batch finished", "批次完成"),
        EntryKind::Answer => ("answer", "答案"),
    };
    lang.pick(en, zh)
}

/// One line of activity. A subtask's tag opens its activity alone; a
/// scheduled retry counts down to its time (in CSS: no script, no wasm).
fn activity_row(plan: plan_engine::PlanId, a: Activity, lang: crate::i18n::Lang) -> impl IntoView {
    let who = a.subtask.map(|s| {
        view! { <a href=format!("/plans/{plan}/activity?subtask={s}")>{format!("#{s}")}</a> }
    });
    let countdown = a.retry_in_secs.filter(|left| *left > 0).map(|left| {
        view! {
            <span class="countdown" style=format!("--from: {left}; animation-duration: {left}s") data-testid="retry-countdown">
                {lang.pick("retry in ", "重试倒计时 ")}
            </span>
        }
    });
    view! {
        <li class=format!("activity-row kind-{}", a.kind) class:failed=!a.ok data-testid="activity-row">
            <span class="activity-at"><time>{clock(&a.at)}</time></span>
            <span class="activity-who" data-testid="activity-who">{who}</span>
            <span class="activity-kind">{kind_label(a.kind, lang)}</span>
            <span class="activity-summary">{a.summary}{countdown}</span>
            {a.detail.map(|d| view! {
                <details class="activity-detail">
                    <summary>{lang.pick("messages and reply", "消息与回复")}</summary>
                    <pre>{d}</pre>
                </details>
            })}
        </li>
    }
}

/// The newest lines of a run's activity, newest first, as HTML for the
/// board's live activity panel: drawn here with the page's own rows, so
/// the wasm carries none of it, and model text is escaped like anywhere
/// on a server-rendered page.
#[cfg(feature = "ssr")]
pub fn panel_html(
    plan: plan_engine::PlanId,
    tail: crate::api::ActivityTail,
    lang: crate::i18n::Lang,
) -> String {
    let shown = tail.rows.len();
    let lines = tail
        .rows
        .into_iter()
        .rev()
        .map(|a| activity_row(plan, a, lang))
        .collect_view();
    let link = match tail.total {
        Some(total) if total > shown => {
            Some(lang.pick(format!("all {total} lines"), format!("全部 {total} 条")))
        }
        Some(_) => None,
        None => Some(lang.pick("all lines".to_string(), "全部记录".to_string())),
    };
    let more = link.map(|text| {
        view! {
            <p class="hint">
                <a href=format!("/plans/{plan}/activity")>{text}</a>
            </p>
        }
    });
    let empty = (shown == 0)
        .then(|| view! { <p class="empty">{lang.pick("Nothing yet.", "还没有活动。")}</p> });
    view! { {empty}<ol class="activity">{lines}</ol>{more} }.to_html()
}

/// What the run's model calls used and cost: in all and per model, or
/// the one subtask's.
fn cost_table(
    report: run_model::CostReport,
    subtask: Option<u32>,
    lang: crate::i18n::Lang,
) -> impl IntoView {
    let money = |u: &run_model::Use| {
        crate::board::run::cost_line(u.cost, None, u.unpriced_calls, u.calls, lang)
    };
    let line = |name: String, u: &run_model::Use| {
        view! {
            <tr data-testid="cost-row">
                <td>{name}</td>
                <td class="number">{u.calls}</td>
                <td class="number">{u.prompt_tokens}</td>
                <td class="number">{u.completion_tokens}</td>
                <td class="number" data-testid="cost-amount">{money(u)}</td>
            </tr>
        }
    };
    let rows = match subtask {
        Some(s) => report
            .subtask(plan_engine::SubtaskId(s))
            .map(|u| line(format!("#{s}"), u))
            .into_iter()
            .collect_view()
            .into_any(),
        None => {
            let models = report
                .by_model
                .iter()
                .map(|m| line(m.model.clone(), &m.used))
                .collect_view();
            view! { {models}{line(lang.pick("all", "合计").to_string(), &report.total)} }.into_any()
        }
    };
    view! {
        <table class="plans cost" data-testid="cost-table">
            <thead><tr>
                <th>{lang.pick("Model", "模型")}</th>
                <th>{lang.pick("Calls", "调用")}</th>
                <th>{lang.pick("Prompt tokens", "提示 tokens")}</th>
                <th>{lang.pick("Completion tokens", "生成 tokens")}</th>
                <th>{lang.pick("Cost", "费用")}</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

#[component]
pub fn ActivityPage() -> impl IntoView {
    let lang = use_lang();
    let plan = use_params_map()
        .read_untracked()
        .get("id")
        .and_then(|s| uuid::Uuid::parse_str(&s).ok());
    let subtask = use_query_map()
        .read_untracked()
        .get("subtask")
        .and_then(|s| s.parse::<u32>().ok());
    let Some(plan) = plan else {
        return view! { <p class="error" role="alert">{lang.pick("No plan has this id.", "没有这个 id 的计划。")}</p> }.into_any();
    };
    let log = crate::codec::load(move || (plan, subtask), |(p, s)| load_activity(p, s));
    let row = move |a: Activity| activity_row(plan, a, lang);
    view! {
        <section class="activity-page">
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || log.get().map(|r| match r {
                    Ok(log) => {
                        let heading = match subtask {
                            Some(s) => lang.pick(format!("Agent activity on #{s}"), format!("智能体在 #{s} 上的活动")),
                            None => lang.pick("Agent activity".to_string(), "智能体活动".to_string()),
                        };
                        let empty = log.rows.is_empty();
                        // The workspace's files, each a download with its
                        // start shown, and the whole workspace as a zip.
                        let files = log.run_id.filter(|_| !log.artifacts.is_empty()).map(|run| {
                            let links = log.artifacts.iter().map(|f| {
                                let preview = f.preview.clone().map(|text| view! {
                                    <details class="file-preview">
                                        <summary>{lang.pick("preview", "预览")}</summary>
                                        <pre data-testid="file-preview">{text}</pre>
                                    </details>
                                });
                                view! {
                                    <li>
                                        <a href=format!("/api/runs/{run}/artifacts/{}", f.path) download data-testid="artifact">{f.path.clone()}</a>
                                        " "<span class="hint">{format!("{} B", f.bytes)}</span>
                                        {preview}
                                    </li>
                                }
                            }).collect_view();
                            view! {
                                <h2>{lang.pick("Files in the workspace", "工作区中的文件")}</h2>
                                <p><a href=format!("/api/runs/{run}/workspace.zip") download data-testid="workspace-zip">{lang.pick("Download the whole workspace (zip)", "下载整个工作区（zip）")}</a></p>
                                <ul class="artifacts">{links}</ul>
                            }
                        });
                        let cost = log.cost.map(|report| cost_table(report, subtask, lang));
                        let rows = log.rows.into_iter().map(row).collect_view();
                        view! {
                            <h1>{heading}</h1>
                            <p class="hint">
                                <a href=format!("/plans/{plan}")>{log.plan_title}</a>
                                {subtask.map(|_| view! { " · " <a href=format!("/plans/{plan}/activity")>{lang.pick("the whole run", "整个运行")}</a> })}
                            </p>
                            {cost}
                            {files}
                            {empty.then(|| view! { <p class="empty">{lang.pick("Nothing yet.", "还没有活动。")}</p> })}
                            <ol class="activity">{rows}</ol>
                        }.into_any()
                    }
                    Err(e) => view! { <p class="error" role="alert">{crate::board::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }.into_any()
}
