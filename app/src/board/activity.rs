//! The run's activity lines: the board's live panel (HTML drawn on the
//! server, set by the island as it comes) and the rows the activity page
//! (`crate::pages::activity`) lists, drawn by the same code.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use plan_engine::PlanId;
use run_model::EntryKind;

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
            let tail = backend()?.activity_tail(plan, subtask, PANEL_LINES).await?;
            Ok(panel_html(plan, tail, crate::i18n::detect()))
        }
        .await,
    )
}
