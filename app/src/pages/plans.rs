//! Plans (`/`): every plan with its state, mode, progress, approval and
//! last activity; filters and text search; live from `/api/stream`.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use plan_engine::{ApprovalStatus, Lang, Mode};

use crate::api::{list_plans, ListFilter, PlanRow};
use crate::i18n::use_lang;
use crate::live::use_live;

/// Filter chips: key, English, Chinese.
const SHOWS: [(&str, &str, &str); 4] = [
    ("", "All", "全部"),
    ("awaiting_approval", "Awaiting approval", "待审批"),
    ("running", "Running", "运行中"),
    ("finished", "Finished", "已结束"),
];

/// The page, rendered on the server: heading and filters are plain HTML
/// (a filter is a page load); the table is an island that follows the
/// stream.
#[component]
pub fn PlansPage() -> impl IntoView {
    let lang = use_lang();
    let query = use_query_map();
    let filter = {
        let q = query.read_untracked();
        ListFilter {
            show: q.get("show").unwrap_or_default(),
            mode: q.get("mode").unwrap_or_default(),
            text: q.get("q").unwrap_or_default(),
        }
    };
    let chips = SHOWS
        .iter()
        .map(|(key, en, zh)| {
            let mut f = filter.clone();
            f.show = key.to_string();
            let active = filter.show == *key;
            view! {
                <a class="chip" class:active=active aria-current=active.then_some("page") href=href(&f) data-testid=format!("show-{}", if key.is_empty() { "all" } else { key })>
                    {lang.pick(*en, *zh)}
                </a>
            }
        })
        .collect_view();
    let modes = [Mode::Manual, Mode::Simple, Mode::Complex, Mode::Emergent]
        .into_iter()
        .map(|m| view! { <option value=m.as_str() selected=filter.mode == m.as_str()>{m.label(lang)}</option> })
        .collect_view();
    view! {
        <section class="plans-page">
            <div class="page-head">
                <h1>{lang.pick("Plans", "计划")}</h1>
                <a class="button primary" href="/plans/new" data-testid="new-plan">{lang.pick("New plan", "新建计划")}</a>
            </div>
            <form class="filters" method="get" action="/" role="search">
                <nav class="chips" aria-label=lang.pick("Show", "显示")>{chips}</nav>
                <input type="hidden" name="show" value=filter.show.clone()/>
                <label>
                    {lang.pick("Mode ", "模式 ")}
                    <select name="mode">
                        <option value="" selected=filter.mode.is_empty()>{lang.pick("any", "任意")}</option>
                        {modes}
                    </select>
                </label>
                <label>
                    <span class="sr-only">{lang.pick("Search titles", "搜索标题")}</span>
                    <input type="search" name="q" placeholder=lang.pick("Search titles", "搜索标题") value=filter.text.clone() data-testid="search"/>
                </label>
                <button type="submit">{lang.pick("Filter", "筛选")}</button>
            </form>
            <PlansLive filter/>
        </section>
    }
}

/// The plans that pass `filter`, loaded again whenever the stream reports
/// a change anywhere.
#[island]
pub fn PlansLive(filter: ListFilter) -> impl IntoView {
    let lang = use_lang();
    let plans = crate::codec::load(
        move || filter.clone(),
        |f| async move { list_plans(f).await },
    );
    let live = use_live("/api/stream".into());
    Effect::new(move |first: Option<()>| {
        // Any change anywhere may change a line or the filter's result.
        live.heard.track();
        if first.is_some() {
            plans.refetch();
        }
    });
    view! {
        <p class="connection" class:offline=move || !live.connected.get() role="status">
            {move || connection_text(lang, live.connected.get())}
        </p>
        <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading plans…", "正在加载计划…")}</p> }>
            {move || plans.get().map(|r| match r {
                Ok(Ok(rows)) if rows.is_empty() => view! {
                    <p class="empty">
                        {lang.pick("No plans here yet. Agents create them over the API or MCP, or ", "这里还没有计划。智能体通过 API 或 MCP 创建计划，你也可以")}
                        <a href="/plans/new">{lang.pick("make one by hand", "手动新建一个")}</a>
                        {lang.pick(".", "。")}
                    </p>
                }.into_any(),
                Ok(Ok(rows)) => view! { <PlanTable rows/> }.into_any(),
                Ok(Err(e)) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
            })}
        </Transition>
    }
}

fn href(f: &ListFilter) -> String {
    let mut parts = Vec::new();
    for (k, v) in [("show", &f.show), ("mode", &f.mode), ("q", &f.text)] {
        if !v.is_empty() {
            parts.push(format!("{k}={}", urlencode(v)));
        }
    }
    if parts.is_empty() {
        "/".into()
    } else {
        format!("/?{}", parts.join("&"))
    }
}

pub fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The live/reconnecting line of a page that follows a stream.
pub fn connection_text(lang: Lang, connected: bool) -> &'static str {
    if connected {
        lang.pick("live", "实时")
    } else {
        lang.pick("reconnecting…", "正在重新连接…")
    }
}

/// "2026-11-22T18:01:02.123Z" → "2026-11-22 18:01".
pub fn short_time(at: &str) -> String {
    at.get(..16).unwrap_or(at).replace('T', " ")
}

/// The plans table's columns: English, Chinese.
const COLUMNS: [(&str, &str); 6] = [
    ("Plan", "计划"),
    ("Mode", "模式"),
    ("State", "状态"),
    ("Progress", "进度"),
    ("Approval", "审批"),
    ("Last activity", "最近活动"),
];

/// A table's header row from (English, Chinese) column names.
pub fn table_head(lang: Lang, columns: &[(&'static str, &'static str)]) -> impl IntoView {
    let cells = columns
        .iter()
        .map(|(en, zh)| view! { <th>{lang.pick(*en, *zh)}</th> })
        .collect_view();
    view! { <thead><tr>{cells}</tr></thead> }
}

#[component]
fn PlanTable(rows: Vec<PlanRow>) -> impl IntoView {
    let lang = use_lang();
    let lines = rows
        .into_iter()
        .map(|r| {
            let approval = match (r.approval_required, r.approval) {
                (false, _) => None,
                (true, ApprovalStatus::Approved) => {
                    Some(("approved", lang.pick("approved", "已批准")))
                }
                (true, ApprovalStatus::Rejected) => {
                    Some(("rejected", lang.pick("rejected", "已驳回")))
                }
                (true, _) => Some(("pending", lang.pick("needs approval", "待审批"))),
            };
            view! {
                <tr data-testid="plan-row">
                    <td class="title"><a href=format!("/plans/{}", r.id)>{r.title.clone()}</a></td>
                    <td><span class="badge mode">{r.mode.label(lang)}</span></td>
                    <td><span class=format!("badge plan-state state-{}", r.state.as_str())>{r.state.label(lang)}</span></td>
                    <td>
                        <div class="progress small" role="progressbar" aria-label=lang.pick(format!("{} progress", r.title), format!("{} 的进度", r.title)) aria-valuemin="0" aria-valuemax="100" aria-valuenow=r.percent>
                            <div class="progress-bar" style=format!("width: {}%", r.percent)></div>
                        </div>
                        <span class="progress-text">{lang.pick(format!("{}% of {}", r.percent, r.subtasks), format!("{} 个中的 {}%", r.subtasks, r.percent))}</span>
                    </td>
                    <td>{approval.map(|(class, label)| view! { <span class=format!("badge approval-{class}")>{label}</span> })}</td>
                    <td><time>{short_time(&r.updated_at)}</time></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="plans">
            {table_head(lang, &COLUMNS)}
            <tbody>{lines}</tbody>
        </table>
    }
}
