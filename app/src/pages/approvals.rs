//! Approval records (`/approvals`, linked from History; `?person=`,
//! `?tool=`, `?run=`): every decision people made for the agent — plans
//! approved or rejected, guarded calls approved, edited or denied,
//! budgets raised, drifted plans approved again, grants — newest first,
//! each with the digest of exactly what was decided. A run's own records
//! are on its activity page ([`approval_table`]). Rendered on the server.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use run_model::{ApprovalDecision, ApprovalKind, ApprovalRecord};

use crate::api::{load_approvals, ApprovalsFilter};
use crate::i18n::{use_lang, Lang};
use crate::words::{short_time, table_head};

const COLUMNS: [(&str, &str); 7] = [
    ("When", "时间"),
    ("Who", "谁"),
    ("Decision", "决定"),
    ("On", "对象"),
    ("Waited", "等待"),
    ("Digest (SHA-256)", "摘要（SHA-256）"),
    ("Note", "备注"),
];

pub fn kind_label(kind: ApprovalKind, lang: Lang) -> &'static str {
    match kind {
        ApprovalKind::Plan => lang.pick("plan", "计划"),
        ApprovalKind::ToolCall => lang.pick("tool call", "工具调用"),
        ApprovalKind::Budget => lang.pick("budget", "预算"),
        ApprovalKind::Reapproval => lang.pick("re-approval", "重新批准"),
        ApprovalKind::Grant => lang.pick("grant", "授权"),
    }
}

pub fn decision_label(decision: ApprovalDecision, lang: Lang) -> &'static str {
    match decision {
        ApprovalDecision::Approved => lang.pick("approved", "批准"),
        ApprovalDecision::Edited => lang.pick("edited", "修改后批准"),
        ApprovalDecision::Denied => lang.pick("denied", "拒绝"),
        ApprovalDecision::Revoked => lang.pick("revoked", "撤销"),
    }
}

/// "3.2 s", "4 min": how long a decision waited.
fn waited(ms: Option<u64>, lang: Lang) -> String {
    match ms {
        None => "—".into(),
        Some(ms) if ms < 60_000 => {
            let tenths = ms / 100;
            lang.pick(
                format!("{}.{} s", tenths / 10, tenths % 10),
                format!("{}.{} 秒", tenths / 10, tenths % 10),
            )
        }
        Some(ms) if ms < 3_600_000 => {
            let min = ms / 60_000;
            lang.pick(format!("{min} min"), format!("{min} 分钟"))
        }
        Some(ms) => {
            let h = ms / 3_600_000;
            lang.pick(format!("{h} h"), format!("{h} 小时"))
        }
    }
}

/// What a record decided on: the plan's version, the tool, the budget.
fn decided_on(r: &ApprovalRecord, lang: Lang) -> String {
    let mut text = kind_label(r.kind, lang).to_string();
    if let Some(tool) = &r.tool {
        text.push_str(&format!(" {tool}"));
    }
    if let (Some(version), None) = (r.plan_version, &r.tool) {
        text.push_str(&lang.pick(format!(" v{version}"), format!(" 第 {version} 版")));
    }
    if let Some(pattern) = r
        .detail
        .as_ref()
        .and_then(|d| d.get("pattern"))
        .and_then(|p| p.as_str())
    {
        text.push_str(&format!(" ({pattern})"));
    }
    text
}

/// The records as a table, in the order given.
pub fn approval_table(records: Vec<ApprovalRecord>, lang: Lang) -> impl IntoView {
    let rows = records
        .into_iter()
        .map(|r| {
            let short = plan_engine::text::prefix(&r.digest, 12).to_string();
            let plan_link = r.plan_id.map(|p| {
                view! { " " <a href=format!("/plans/{p}")>{lang.pick("plan", "计划")}</a> }
            });
            view! {
                <tr data-testid="approval-row" data-kind=r.kind.as_str() data-decision=r.decision.as_str()>
                    <td><time>{short_time(&r.at)}</time></td>
                    <td data-testid="approval-by">{r.by.clone()}</td>
                    <td><span class=format!("badge decision-{}", r.decision.as_str())>{decision_label(r.decision, lang)}</span></td>
                    <td data-testid="approval-on">{decided_on(&r, lang)}{plan_link}</td>
                    <td>{waited(r.waited_ms, lang)}</td>
                    <td><code title=r.digest.clone() data-testid="approval-digest">{short}</code></td>
                    <td class="note">{r.note.clone().unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="plans approvals" data-testid="approval-table">
            {table_head(lang, &COLUMNS)}
            <tbody>{rows}</tbody>
        </table>
    }
}

#[component]
pub fn ApprovalsPage() -> impl IntoView {
    let lang = use_lang();
    let filter = {
        let query = use_query_map().read_untracked();
        let text = |name: &str| {
            query
                .get(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        ApprovalsFilter {
            run: text("run").and_then(|r| uuid::Uuid::parse_str(&r).ok()),
            person: text("person"),
            tool: text("tool"),
        }
    };
    let (person, tool, run) = (
        filter.person.clone().unwrap_or_default(),
        filter.tool.clone().unwrap_or_default(),
        filter.run,
    );
    let records = crate::codec::load(move || filter.clone(), load_approvals);
    view! {
        <section class="approvals-page">
            <h1>{lang.pick("Approval records", "批准记录")}</h1>
            <p class="hint">{lang.pick(
                "Every decision people made for the agent, newest first: plans approved or rejected, guarded calls approved, edited or denied, budgets raised, drifted plans approved again, tools granted for a run. The digest is the SHA-256 of exactly what was decided. The same list: GET /api/approvals.",
                "人为智能体做出的每个决定，最新的在前：批准或拒绝的计划、批准、修改或拒绝的受控调用、提高的预算、偏离后重新批准的计划、为运行授权的工具。摘要是所决定内容的 SHA-256。同样的列表：GET /api/approvals。",
            )}</p>
            <p><a href="/approvals/insights" data-testid="approvals-insights-link">{lang.pick("Approval insights (time to decide, suggestions)", "批准分析（决定用时、建议）")}</a></p>
            <form class="filters" method="get" action="/approvals" role="search">
                <label>{lang.pick("Person ", "人员 ")}<input name="person" value=person data-testid="approvals-person"/></label>
                <label>{lang.pick("Tool ", "工具 ")}<input name="tool" value=tool data-testid="approvals-tool"/></label>
                {run.map(|run| view! { <input type="hidden" name="run" value=run.to_string()/> })}
                <button type="submit">{lang.pick("Filter", "筛选")}</button>
            </form>
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || records.get().map(|r| match r {
                    Ok(list) if list.is_empty() => view! { <p class="empty" data-testid="approvals-empty">{lang.pick("No decisions recorded.", "没有记录的决定。")}</p> }.into_any(),
                    Ok(list) => approval_table(list, lang).into_any(),
                    Err(e) => view! { <p class="error" role="alert">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}
