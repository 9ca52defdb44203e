//! The run's activity lines: the board's live panel (HTML drawn on the
//! server, set by the island as it comes) and the rows the activity page
//! (`crate::pages::activity`) lists, drawn by the same code.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use plan_engine::PlanId;
#[cfg(feature = "ssr")]
use plan_engine::{Lang, Timestamp};
use run_model::EntryKind;
#[cfg(feature = "ssr")]
use run_model::RunEntry;

#[cfg(feature = "ssr")]
use crate::api::{answered, backend, viewer};
use crate::api::{Activity, BoardError};

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
        EntryKind::ToolStarted => ("tool started", "工具开始"),
        EntryKind::ToolInterrupted => ("tool interrupted by a stop", "工具因服务器停止而中断"),
        EntryKind::RetryScheduled => ("retry scheduled", "计划重试"),
        EntryKind::ToolRetryScheduled => ("tool retry scheduled", "计划重试工具"),
        EntryKind::SubtaskRetry => ("subtask tried again", "子任务重试"),
        EntryKind::Recovery => ("planner's recovery", "规划器的恢复决定"),
        EntryKind::Recalled => ("memories recalled", "调取记忆"),
        EntryKind::Remembered => ("remembered", "已记住"),
        EntryKind::ToolApproval => ("asks to use a tool", "请求使用工具"),
        EntryKind::ToolDecision => ("tool decision", "工具决定"),
        EntryKind::ToolGranted => ("granted tool", "已授权的工具"),
        EntryKind::ApprovalOverdue => ("approval overdue", "批准已超时"),
        EntryKind::Drifted => ("plan drifted", "计划偏离"),
        EntryKind::Overridden => ("overridden", "被人工改动"),
        EntryKind::Asked => ("question", "提问"),
        EntryKind::SubtaskResult => ("result", "结果"),
        EntryKind::PlanAdjusted => ("plan adjusted", "计划调整"),
        EntryKind::BudgetReached => ("budget reached", "预算用尽"),
        EntryKind::PeopleChanged => ("people changed", "人工修改"),
        EntryKind::BatchPlanned => ("batch planned", "批次已规划"),
        EntryKind::BatchFinished => ("batch finished", "批次完成"),
        EntryKind::Answer => ("answer", "答案"),
        EntryKind::SuiteFinished => ("suite run finished", "回归套件运行结束"),
        EntryKind::AgentMessage => ("agent says", "智能体说"),
    };
    lang.pick(en, zh)
}

/// One line of activity. A subtask's tag opens its activity alone; a
/// scheduled retry counts down to its time (in CSS: no script, no wasm).
pub(crate) fn activity_row(
    plan: plan_engine::PlanId,
    a: Activity,
    lang: crate::i18n::Lang,
) -> impl IntoView {
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
        <li class=format!("activity-row kind-{}", a.kind) class:failed=!a.ok class:replayed-call=a.replayed data-testid="activity-row" data-replayed=a.replayed.then_some("true")>
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

/// Images a run wrote, each a thumbnail (at most 480 px wide) that opens
/// the file at full size: the activity page's files and the answer's.
/// The files were written by the model's code, so they are only ever
/// shown in `<img>` (an SVG's scripts never run there) and their names
/// as text; `test_id` names the gallery, `test_id` without its `s` each
/// image. At most [`crate::api::IMAGES_SHOWN`] of `images` are shown.
pub(crate) fn image_gallery(
    images: Vec<crate::api::FileRow>,
    test_id: &'static str,
) -> Option<impl IntoView> {
    if images.is_empty() {
        return None;
    }
    let each = test_id.trim_end_matches('s');
    let figures = images
        .into_iter()
        .take(crate::api::IMAGES_SHOWN)
        .map(|f| {
            let (href, alt, path) = (f.url.clone(), f.path.clone(), f.path.clone());
            view! {
                <figure class="image-thumb">
                    <a href=href target="_blank" rel="noopener">
                        <img src=f.url alt=alt data-path=path data-testid=each/>
                    </a>
                    <figcaption>{f.path}</figcaption>
                </figure>
            }
        })
        .collect_view();
    Some(view! { <div class="image-gallery" data-testid=test_id>{figures}</div> })
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

/// One run-log entry as an activity line, in the person's language (the
/// model's and people's own text stays as written). `now` counts a
/// scheduled retry's seconds down.
#[cfg(feature = "ssr")]
pub fn activity_of(at: Timestamp, entry: RunEntry, now: Timestamp, lang: Lang) -> Activity {
    use RunEntry as E;
    let kind = entry.kind();
    let line = |subtask: Option<u32>, summary: String, detail: Option<String>, ok: bool| Activity {
        at,
        kind,
        subtask,
        summary,
        detail,
        ok,
        retry_in_secs: None,
        replayed: false,
    };
    // Whole seconds still to wait for a retry, rounded up, from now.
    let countdown = |delay_ms: u64| {
        let waited = (now - at).num_milliseconds().max(0) as u64;
        delay_ms.saturating_sub(waited).div_ceil(1000)
    };
    match entry {
        E::LlmCall(c) => {
            let mut summary = lang.pick(
                format!(
                    "{} · {} · attempt {} · {} → {} tokens · {} ms",
                    c.role, c.model, c.attempt, c.prompt_tokens, c.completion_tokens, c.latency_ms
                ),
                format!(
                    "{} · {} · 第 {} 次尝试 · {} → {} tokens · {} 毫秒",
                    c.role, c.model, c.attempt, c.prompt_tokens, c.completion_tokens, c.latency_ms
                ),
            );
            if let Some(cost) = c.cost {
                summary.push_str(&format!(" · {cost}"));
            }
            if let Some(finish) = &c.finish_reason {
                summary.push_str(&format!(" · {finish}"));
            }
            if let Some(error) = &c.error {
                summary.push_str(&format!(" · {error}"));
            }
            let ok = c.error.is_none();
            line(c.subtask.map(|s| s.0), summary, Some(c.transcript), ok)
        }
        E::ToolCall {
            subtask,
            name,
            arguments,
            result,
            ok,
            duration_ms,
            replayed,
        } => Activity {
            replayed,
            ..line(
                Some(subtask.0),
                format!(
                    "{name} · {} · {}",
                    if ok { lang.pick("ok", "成功") } else { lang.pick("error", "出错") },
                    // Answered from the recording of the run this one
                    // replays: nothing ran.
                    if replayed {
                        lang.pick("replayed".to_string(), "回放".to_string())
                    } else {
                        lang.pick(format!("{duration_ms} ms"), format!("{duration_ms} 毫秒"))
                    }
                ),
                Some(lang.pick(
                    format!("arguments: {arguments}\n\nresult:\n{result}"),
                    format!("参数：{arguments}\n\n结果：\n{result}"),
                )),
                ok,
            )
        },
        E::ToolStarted {
            subtask,
            name,
            arguments,
            ..
        } => line(
            Some(subtask.0),
            lang.pick(format!("{name} started"), format!("{name} 开始")),
            Some(lang.pick(
                format!("arguments: {arguments}"),
                format!("参数：{arguments}"),
            )),
            true,
        ),
        E::ToolInterrupted {
            subtask,
            name,
            times,
            ..
        } => line(
            Some(subtask.0),
            lang.pick(
                format!("{name} was running when the server stopped (time {times} for this call)"),
                format!("服务器停止时 {name} 正在运行（此调用第 {times} 次）"),
            ),
            None,
            false,
        ),
        E::RetryScheduled {
            role,
            attempt,
            delay_ms,
            class,
            error,
        } => Activity {
            retry_in_secs: Some(countdown(delay_ms)),
            ..line(
                None,
                lang.pick(
                    format!("{role} attempt {attempt} failed ({class}: {error}); again in {delay_ms} ms"),
                    format!("{role} 第 {attempt} 次尝试失败（{class}：{error}）；{delay_ms} 毫秒后重试"),
                ),
                None,
                false,
            )
        },
        E::ToolRetryScheduled {
            subtask,
            name,
            attempt,
            delay_ms,
            error,
        } => Activity {
            retry_in_secs: Some(countdown(delay_ms)),
            ..line(
                Some(subtask.0),
                lang.pick(
                    format!("{name} attempt {attempt} failed ({error}); again in {delay_ms} ms"),
                    format!("{name} 第 {attempt} 次尝试失败（{error}）；{delay_ms} 毫秒后重试"),
                ),
                None,
                false,
            )
        },
        E::SubtaskRetry {
            subtask,
            attempt,
            of,
            delay_ms,
            reason,
        } => Activity {
            retry_in_secs: Some(countdown(delay_ms)),
            ..line(
                Some(subtask.0),
                lang.pick(
                    format!("attempt {attempt} of {of} failed ({reason}); again in {delay_ms} ms"),
                    format!("第 {attempt}/{of} 次尝试失败（{reason}）；{delay_ms} 毫秒后重试"),
                ),
                None,
                false,
            )
        },
        E::Recovery {
            subtask,
            decision,
            reason,
            replacement,
        } => line(
            Some(subtask.0),
            match replacement {
                Some(new) => lang.pick(
                    format!("{decision}: replaced by #{} · {reason}", new.0),
                    format!("{decision}：由 #{} 取代 · {reason}", new.0),
                ),
                None => format!("{decision} · {reason}"),
            },
            None,
            decision != run_model::RecoveryDecision::GiveUp,
        ),
        E::Recalled { memories } => line(
            None,
            lang.pick(
                format!("{} memories of earlier runs", memories.len()),
                format!("{} 条以往运行的记忆", memories.len()),
            ),
            Some(
                memories
                    .iter()
                    .map(|m| format!("- [{}] {}", m.kind, m.excerpt))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            true,
        ),
        E::Remembered { count } => line(None, lang.pick(format!("{count} memories kept"), format!("记住了 {count} 条")), None, true),
        E::ToolApproval {
            subtask,
            name,
            arguments,
            asker,
            ..
        } => line(
            Some(subtask.0),
            match asker {
                Some(server) => lang.pick(
                    format!("the MCP server {server} asks a person, mid-call"),
                    format!("MCP 服务器 {server} 在调用中向人提问"),
                ),
                None => lang.pick(
                    format!("{name} waits for a person's approval"),
                    format!("{name} 等待人工批准"),
                ),
            },
            Some(lang.pick(
                format!("arguments: {arguments}"),
                format!("参数：{arguments}"),
            )),
            true,
        ),
        E::ToolDecision {
            verdict,
            by,
            reason,
            arguments,
            ..
        } => line(
            None,
            lang.pick(
                format!(
                    "{verdict} by {by}{}",
                    reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default()
                ),
                format!(
                    "{verdict}，由 {by} 决定{}",
                    reason.as_deref().map(|r| format!("：{r}")).unwrap_or_default()
                ),
            ),
            arguments.map(|a| lang.pick(format!("arguments: {a}"), format!("参数：{a}"))),
            !matches!(verdict, run_model::Verdict::Denied),
        ),
        E::ToolGranted {
            subtask,
            name,
            arguments,
            by,
            ..
        } => line(
            Some(subtask.0),
            lang.pick(
                format!("{name} runs without asking: granted by {by}"),
                format!("{name} 无需询问即运行：由 {by} 授权"),
            ),
            Some(lang.pick(
                format!("arguments: {arguments}"),
                format!("参数：{arguments}"),
            )),
            true,
        ),
        E::Drifted(d) => line(
            None,
            lang.pick(
                format!(
                    "the plan drifted from the approved v{} (v{}: similarity {:.2}, below {:.2}); it waits to be approved again",
                    d.approved, d.version, d.similarity, d.threshold
                ),
                format!(
                    "计划偏离了已批准的第 {} 版（第 {} 版：相似度 {:.2}，低于 {:.2}）；等待重新批准",
                    d.approved, d.version, d.similarity, d.threshold
                ),
            ),
            None,
            false,
        ),
        E::ApprovalOverdue { waited_secs } => line(
            None,
            lang.pick(
                format!(
                    "the plan has waited {} min for approval; it is never approved by a timer",
                    waited_secs / 60
                ),
                format!("计划已等待批准 {} 分钟；不会被计时器自动批准", waited_secs / 60),
            ),
            None,
            false,
        ),
        E::SubtaskResult {
            subtask,
            ok,
            text,
            duration_ms,
        } => line(
            Some(subtask.0),
            lang.pick(
                format!("{text} · {duration_ms} ms"),
                format!("{text} · {duration_ms} 毫秒"),
            ),
            None,
            ok,
        ),
        E::Overridden { subtask, now } => line(
            Some(subtask.0),
            {
                let to = now.map_or(lang.pick("deleted", "已删除").to_string(), |s| s.label(lang).to_string());
                lang.pick(
                    format!("a person moved it to {to}; the agent's late result was dropped"),
                    format!("有人把它改成了{to}；智能体迟到的结果被丢弃"),
                )
            },
            None,
            true,
        ),
        E::Asked { subtask, question } => line(Some(subtask.0), question, None, true),
        E::StateChanged { to, reason, .. } => line(
            None,
            format!("{} · {reason}", crate::words::run_state_label(to, lang)),
            None,
            true,
        ),
        E::Classified(c) => line(
            None,
            format!("{} · {}", c.mode.as_str(), c.reason),
            None,
            true,
        ),
        E::PlanProposed {
            round, subtasks, ..
        } => line(
            None,
            lang.pick(
                format!("round {round}: {subtasks} subtasks"),
                format!("第 {round} 轮：{subtasks} 个子任务"),
            ),
            None,
            true,
        ),
        E::PlanRepaired { repairs } => line(None, repairs.join("; "), None, true),
        E::Rejected { comment, round } => {
            line(
                None,
                lang.pick(format!("round {round}: {comment}"), format!("第 {round} 轮：{comment}")),
                None,
                true,
            )
        }
        E::PlanAdjusted { reason, changes } => {
            line(
                None,
                lang.pick(format!("{changes} changes: {reason}"), format!("{changes} 处修改：{reason}")),
                None,
                true,
            )
        }
        E::BudgetReached { what } => line(None, what, None, false),
        E::PeopleChanged { summary } => line(None, summary, None, true),
        E::BatchPlanned {
            batch,
            retried,
            new,
            subtasks,
        } => line(
            None,
            lang.pick(
                format!("batch {batch}: {new} new items, {retried} planned again, {subtasks} subtasks"),
                format!("第 {batch} 批：{new} 个新条目，{retried} 个重新规划，{subtasks} 个子任务"),
            ),
            None,
            true,
        ),
        E::BatchFinished(b) => line(
            None,
            {
                let failures = if b.failures.is_empty() {
                    String::new()
                } else {
                    let named: Vec<String> =
                        b.failures.iter().map(|f| item_failure(f, lang)).collect();
                    lang.pick(
                        format!(" ({})", named.join("; ")),
                        format!("（{}）", named.join("；")),
                    )
                };
                let secs = b.ms as f64 / 1000.0;
                lang.pick(
                    format!(
                        "batch {}: {} of {} items succeeded, {} failed, {secs:.1} s{failures}",
                        b.batch, b.succeeded, b.items, b.failed
                    ),
                    format!(
                        "第 {} 批：{} 个条目中 {} 个成功，{} 个失败，{secs:.1} 秒{failures}",
                        b.batch, b.items, b.succeeded, b.failed
                    ),
                )
            },
            None,
            b.failed == 0,
        ),
        E::Answer { text } => line(None, text, None, true),
        E::SuiteFinished(summary) => {
            let ok = summary.failed == 0;
            line(None, summary.sentence(), None, ok)
        }
        // An ACP agent's words: its thinking is marked as such, and a long
        // message keeps its first lines on the row, the whole in the detail.
        E::AgentMessage {
            subtask,
            text,
            thought,
        } => {
            let shown = plan_engine::text::ellipsis(&text, 300);
            let summary = if thought {
                lang.pick(format!("(thinking) {shown}"), format!("（思考）{shown}"))
            } else {
                shown.clone()
            };
            let detail = (shown != text).then_some(text);
            line(subtask.map(|s| s.0), summary, detail, true)
        }
    }
}

/// A batch's failure with its item named in the person's words ("item 4:
/// timeout", "第 4 项：timeout"): on the board `#4` is a subtask, and older
/// runs wrote the item so. The reason stays as the tool or model gave it.
#[cfg(feature = "ssr")]
fn item_failure(failure: &str, lang: Lang) -> String {
    match run_model::batch::failure_item(failure) {
        Some((n, reason)) => lang.pick(
            format!("item {n}: {reason}"),
            format!("第 {n} 项：{reason}"),
        ),
        None => failure.to_string(),
    }
}

/// Lines the board's live activity panel shows; the page has them all.
#[cfg(feature = "ssr")]
pub const PANEL_LINES: usize = 40;

/// The board's live activity panel (the whole run, or one subtask's), as
/// HTML drawn on the server: the board sets it as it comes, so the wasm
/// decodes a string instead of every kind of activity.
#[server(prefix = "/_board", input = Json)]
pub async fn activity_html(plan: PlanId, subtask: Option<u32>) -> Result<String, BoardError> {
    answered(
        async {
            viewer().await?;
            let tail = backend()?
                .activity_tail(plan, subtask, PANEL_LINES, crate::i18n::detect())
                .await?;
            Ok(panel_html(plan, tail, crate::i18n::detect()))
        }
        .await,
    )
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::activity_of;

    #[test]
    fn a_batchs_failures_name_items_as_item_n_never_as_a_subtasks_hash_n() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let finished = RunEntry::BatchFinished(run_model::BatchSummary {
            batch: 2,
            items: 5,
            succeeded: 3,
            failed: 2,
            ms: 1_500,
            // As this run writes them, and as older runs did.
            failures: vec!["item 4: HTTP 500".into(), "#7: timeout".into()],
        });
        assert_eq!(
            activity_of(at, finished.clone(), at, Lang::En).summary,
            "batch 2: 3 of 5 items succeeded, 2 failed, 1.5 s (item 4: HTTP 500; item 7: timeout)"
        );
        assert_eq!(
            activity_of(at, finished, at, Lang::Zh).summary,
            "第 2 批：5 个条目中 3 个成功，2 个失败，1.5 秒（第 4 项：HTTP 500；第 7 项：timeout）"
        );
    }
    use plan_engine::{Lang, SubtaskId};
    use run_model::RunEntry;

    #[test]
    fn a_line_reads_in_the_persons_language_and_keeps_the_models_words() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let proposed = RunEntry::PlanProposed {
            round: 2,
            subtasks: 3,
            plan_id: uuid::Uuid::nil(),
        };
        assert_eq!(
            activity_of(at, proposed.clone(), at, Lang::En).summary,
            "round 2: 3 subtasks"
        );
        assert_eq!(
            activity_of(at, proposed, at, Lang::Zh).summary,
            "第 2 轮：3 个子任务"
        );
        let asked = RunEntry::Asked {
            subtask: SubtaskId(4),
            question: "Which region?".into(),
        };
        let line = activity_of(at, asked, at, Lang::Zh);
        assert_eq!(
            line.summary, "Which region?",
            "the model's question as asked"
        );
        assert_eq!(line.subtask, Some(4));
    }
}
