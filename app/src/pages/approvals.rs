//! Approval records (`/approvals`, linked from History; `?person=`,
//! `?tool=`, `?run=`): every decision people made for the agent — plans
//! approved or rejected, guarded calls approved, edited or denied,
//! budgets raised, drifted plans approved again, grants — newest first,
//! each with the digest of exactly what was decided. A run's own records
//! are on its activity page ([`approval_table`]). The insights
//! (`/approvals/insights`, operators and admins): approval fatigue per
//! person and per tool, and the policy moves worth an operator's click.
//! Rendered on the server.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use run_model::{ApprovalDecision, ApprovalKind, ApprovalRecord};

use crate::api::{load_approvals, load_insights, ApprovalsFilter, InsightsPage};
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

const STATS_COLUMNS: [(&str, &str); 7] = [
    ("", ""),
    ("Decisions", "决定数"),
    ("Median time to decide", "决定用时中位数"),
    ("Approved as asked", "按原样批准"),
    ("Approved in under 2 s", "2 秒内批准"),
    ("Denials", "拒绝"),
    ("Edits", "修改"),
];

fn percent(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

fn stats_table(
    rows: Vec<run_model::DecisionStats>,
    first: (&'static str, &'static str),
    lang: Lang,
    testid: &'static str,
) -> impl IntoView {
    let mut columns = STATS_COLUMNS;
    columns[0] = first;
    let lines = rows
        .into_iter()
        .map(|s| {
            view! {
                <tr data-testid=format!("{testid}-row")>
                    <td>{s.name.clone()}</td>
                    <td class="number">{s.decisions}</td>
                    <td class="number">{waited(s.median_ms, lang)}</td>
                    <td class="number">{format!("{} ({})", s.approved, percent(s.approved_share))}</td>
                    <td class="number" data-testid="quick">{s.quick}</td>
                    <td class="number">{s.denials}</td>
                    <td class="number">{s.edits}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="plans insights" data-testid=testid>
            {table_head(lang, &columns)}
            <tbody>{lines}</tbody>
        </table>
    }
}

fn policy_label(policy: run_model::ToolPolicy, lang: Lang) -> &'static str {
    match policy {
        run_model::ToolPolicy::Auto => lang.pick("auto (no asking)", "自动（不询问）"),
        run_model::ToolPolicy::Ask => lang.pick("ask (each call)", "询问（每次调用）"),
        run_model::ToolPolicy::Never => lang.pick("never", "禁用"),
    }
}

fn insights_view(page: InsightsPage, lang: Lang) -> impl IntoView {
    let can_apply = page.can_apply;
    let none = page.insights.suggestions.is_empty();
    let suggestions = page
        .insights
        .suggestions
        .into_iter()
        .map(|s| {
            let apply = can_apply.then(|| view! {
                <form class="inline" method="post" action="/approvals/insights/apply">
                    <input type="hidden" name="tool" value=s.tool.clone()/>
                    <input type="hidden" name="policy" value=s.to.as_str()/>
                    <button type="submit" data-testid=format!("apply-{}", s.tool)>{lang.pick("Apply", "应用")}</button>
                </form>
            });
            view! {
                <li data-testid="suggestion" data-tool=s.tool.clone()>
                    <code>{s.tool.clone()}</code>": "
                    {policy_label(s.from, lang)}" → "<strong>{policy_label(s.to, lang)}</strong>" · "
                    <span class="hint">{s.why.clone()}</span>" "{apply}
                </li>
            }
        })
        .collect_view();
    let f = &page.forecasts;
    let held = |share: Option<f64>| share.map_or_else(|| "—".to_string(), percent);
    let forecasts = lang.pick(
        format!(
            "Of {} finished runs, the spend fell inside the forecast: calls {}, tokens {}, minutes {}, cost {}.",
            f.runs, held(f.calls), held(f.tokens), held(f.minutes), held(f.cost)
        ),
        format!(
            "{} 个已完成的运行中，花费落在预测区间内的比例：调用 {}，tokens {}，分钟 {}，费用 {}。",
            f.runs, held(f.calls), held(f.tokens), held(f.minutes), held(f.cost)
        ),
    );
    view! {
        <p class="hint" data-testid="insights-records">{lang.pick(
            format!("From {} decisions of the last {} days.", page.insights.records, page.days),
            format!("来自最近 {} 天的 {} 个决定。", page.days, page.insights.records),
        )}</p>
        <h2>{lang.pick("Suggestions", "建议")}</h2>
        {none.then(|| view! { <p class="empty" data-testid="no-suggestions">{lang.pick("Nothing to suggest yet.", "暂无建议。")}</p> })}
        <ul class="suggestions">{suggestions}</ul>
        <h2>{lang.pick("Per person", "按人员")}</h2>
        {stats_table(page.insights.people, ("Person", "人员"), lang, "insights-people")}
        <h2>{lang.pick("Per tool", "按工具")}</h2>
        {stats_table(page.insights.tools, ("Tool", "工具"), lang, "insights-tools")}
        <h2>{lang.pick("Forecasts", "预测")}</h2>
        <p data-testid="insights-forecasts">{forecasts}</p>
    }
}

#[component]
pub fn ApprovalInsightsPage() -> impl IntoView {
    let lang = use_lang();
    let days = use_query_map()
        .read_untracked()
        .get("days")
        .and_then(|d| d.parse::<u32>().ok())
        .filter(|d| (1..=3650).contains(d))
        .unwrap_or(90);
    let page = crate::codec::load(move || days, load_insights);
    view! {
        <section class="insights-page">
            <h1>{lang.pick("Approval insights", "批准分析")}</h1>
            <p class="hint">{lang.pick(
                "How people decide: time to decide, approvals given as asked or in under two seconds, denials and edits, per person and per tool. A tool always approved as asked may move from ask to auto; one often denied from auto to ask. Applying a move sets the tool's policy for the runs started from now on.",
                "人们如何做决定：决定用时、按原样或在两秒内给出的批准、拒绝和修改，按人员和工具统计。总是按原样批准的工具可以从“询问”改为“自动”；经常被拒绝的工具可以从“自动”改为“询问”。应用建议会改变此后启动的运行的工具策略。",
            )}</p>
            <p><a href="/approvals">{lang.pick("The approval records", "批准记录")}</a></p>
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || page.get().map(|r| match r {
                    Ok(page) => insights_view(page, lang).into_any(),
                    Err(e) => view! { <p class="error" role="alert">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}
