//! A run's activity (`/plans/{id}/activity`, `?subtask=n` for one subtask):
//! every model call with its tokens, latency and attempt, every tool call
//! with its arguments and result, retries, overrides, questions, results
//! and the answer; the messages and replies fold out. Rendered on the
//! server (it costs the wasm nothing); the board links here.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::{load_activity, Activity};
use crate::board::activity::{activity_row, image_gallery};
use crate::i18n::use_lang;

/// What the run's model calls used and cost: in all and per model, or
/// the one subtask's.
fn cost_table(
    report: run_model::CostReport,
    subtask: Option<u32>,
    lang: crate::i18n::Lang,
) -> impl IntoView {
    let money =
        |u: &run_model::Use| crate::words::cost_line(u.cost, None, u.unpriced_calls, u.calls, lang);
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
                        // start shown, the images among them as
                        // thumbnails, and the whole workspace as a zip.
                        let files = log.run_id.filter(|_| !log.artifacts.is_empty()).map(|run| {
                            let images = log.artifacts.iter().filter(|f| f.image).cloned().collect();
                            let links = log.artifacts.iter().map(|f| {
                                let preview = f.preview.clone().map(|text| view! {
                                    <details class="file-preview">
                                        <summary>{lang.pick("preview", "预览")}</summary>
                                        <pre data-testid="file-preview">{text}</pre>
                                    </details>
                                });
                                view! {
                                    <li>
                                        <a href=f.url.clone() download data-testid="artifact">{f.path.clone()}</a>
                                        " "<span class="hint">{format!("{} B", f.bytes)}</span>
                                        {preview}
                                    </li>
                                }
                            }).collect_view();
                            view! {
                                <h2>{lang.pick("Files in the workspace", "工作区中的文件")}</h2>
                                <p><a href=format!("/api/runs/{run}/workspace.zip") download data-testid="workspace-zip">{lang.pick("Download the whole workspace (zip)", "下载整个工作区（zip）")}</a></p>
                                {image_gallery(images, "artifact-images")}
                                <ul class="artifacts">{links}</ul>
                            }
                        });
                        let cost = log.cost.map(|report| cost_table(report, subtask, lang));
                        let approvals = (!log.approvals.is_empty() && subtask.is_none()).then(|| {
                            let run = log.run_id.map(|r| r.to_string()).unwrap_or_default();
                            view! {
                                <h2>{lang.pick("Approvals", "批准记录")}</h2>
                                {crate::pages::approvals::approval_table(log.approvals.clone(), lang)}
                                <p class="hint"><a href=format!("/approvals?run={run}")>{lang.pick("All of them on the approvals page", "在批准记录页查看全部")}</a></p>
                            }
                        });
                        let rows = log.rows.into_iter().map(row).collect_view();
                        view! {
                            <h1>{heading}</h1>
                            <p class="hint">
                                <a href=format!("/plans/{plan}")>{log.plan_title}</a>
                                {subtask.map(|_| view! { " · " <a href=format!("/plans/{plan}/activity")>{lang.pick("the whole run", "整个运行")}</a> })}
                            </p>
                            {cost}
                            {approvals}
                            {files}
                            {empty.then(|| view! { <p class="empty">{lang.pick("Nothing yet.", "还没有活动。")}</p> })}
                            <ol class="activity">{rows}</ol>
                        }.into_any()
                    }
                    Err(e) => view! { <p class="error" role="alert">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }.into_any()
}
