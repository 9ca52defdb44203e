//! Plans (`/`): every plan with its state, mode, progress, approval and
//! last activity; filters and text search; live from `/api/stream`.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use plan_engine::{ApprovalStatus, Lang, Mode, PlanQuery, StateFilter, Timestamp};

use crate::api::{list_plans, ListFilter, PlanRow};
use crate::i18n::use_lang;
use crate::live::use_live;

/// Filter chips: the state filter (none for all), English, Chinese.
const SHOWS: [(Option<StateFilter>, &str, &str); 4] = [
    (None, "All", "全部"),
    (
        Some(StateFilter::AwaitingApproval),
        "Awaiting approval",
        "待审批",
    ),
    (Some(StateFilter::Active), "Running", "运行中"),
    (Some(StateFilter::Finished), "Finished", "已结束"),
];

/// The list's filter and page from the address (`?show=&mode=&q=&page=`,
/// `page` counting from 1); what is not understood is left out.
fn list_filter(q: &leptos_router::params::ParamsMap) -> ListFilter {
    ListFilter {
        query: PlanQuery {
            state: q.get("show").as_deref().and_then(StateFilter::parse),
            mode: q.get("mode").as_deref().and_then(Mode::parse),
            text: q.get("q").unwrap_or_default(),
        },
        page: page_param(q),
    }
}

/// `?page=2` → 1 (0-based); anything else → 0.
pub fn page_param(q: &leptos_router::params::ParamsMap) -> u32 {
    q.get("page")
        .and_then(|p| p.parse::<u32>().ok())
        .map_or(0, |p| p.saturating_sub(1))
}

/// The page, rendered on the server: heading and filters are plain HTML
/// (a filter is a page load); the table is an island that follows the
/// stream.
#[component]
pub fn PlansPage() -> impl IntoView {
    let lang = use_lang();
    let filter = list_filter(&use_query_map().read_untracked());
    let chips = SHOWS
        .iter()
        .map(|(state, en, zh)| {
            let mut q = filter.query.clone();
            q.state = *state;
            let active = filter.query.state == *state;
            let key = state.map_or("all", StateFilter::as_str);
            view! {
                <a class="chip" class:active=active aria-current=active.then_some("page") href=href(&q, 0) data-testid=format!("show-{key}")>
                    {lang.pick(*en, *zh)}
                </a>
            }
        })
        .collect_view();
    let modes = Mode::ALL
        .into_iter()
        .map(|m| view! { <option value=m.as_str() selected=filter.query.mode == Some(m)>{m.label(lang)}</option> })
        .collect_view();
    let show = filter
        .query
        .state
        .map(StateFilter::as_str)
        .unwrap_or_default();
    view! {
        <section class="plans-page">
            <div class="page-head">
                <h1>{lang.pick("Plans", "计划")}</h1>
                <a class="button primary" href="/plans/new" data-testid="new-plan">{lang.pick("New plan", "新建计划")}</a>
            </div>
            <form class="filters" method="get" action="/" role="search">
                <nav class="chips" aria-label=lang.pick("Show", "显示")>{chips}</nav>
                <input type="hidden" name="show" value=show/>
                <label>
                    {lang.pick("Mode ", "模式 ")}
                    <select name="mode">
                        <option value="" selected=filter.query.mode.is_none()>{lang.pick("any", "任意")}</option>
                        {modes}
                    </select>
                </label>
                <label>
                    <span class="sr-only">{lang.pick("Search titles", "搜索标题")}</span>
                    <input type="search" name="q" placeholder=lang.pick("Search titles", "搜索标题") value=filter.query.text.clone() data-testid="search"/>
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
    let page = filter.page;
    let query = filter.query.clone();
    let plans = crate::codec::load(move || filter.clone(), list_plans);
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
                Ok(list) if list.rows.is_empty() && page == 0 => view! {
                    <p class="empty">
                        {lang.pick("No plans here yet. Agents create them over the API or MCP, or ", "这里还没有计划。智能体通过 API 或 MCP 创建计划，你也可以")}
                        <a href="/plans/new">{lang.pick("make one by hand", "手动新建一个")}</a>
                        {lang.pick(".", "。")}
                    </p>
                }.into_any(),
                Ok(list) => {
                    let query = query.clone();
                    view! {
                        <PlanTable rows=list.rows/>
                        <Pager lang page more=list.more href=move |p| href(&query, p)/>
                    }.into_any()
                }
                                Err(e) => view! { <p class="error" role="alert">{crate::board::explain(&e, lang)}</p> }.into_any(),
            })}
        </Transition>
    }
}

fn href(q: &PlanQuery, page: u32) -> String {
    let show = q.state.map(StateFilter::as_str).unwrap_or_default();
    let mode = q.mode.map(Mode::as_str).unwrap_or_default();
    page_href("/", &[("show", show), ("mode", mode), ("q", &q.text)], page)
}

/// `path?k=v&…&page=n` with the empty parameters left out (`page` counts
/// from 1 in the address).
pub fn page_href(path: &str, params: &[(&str, &str)], page: u32) -> String {
    let page = (page + 1).to_string();
    let mut parts: Vec<String> = params
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", urlencode(v)))
        .collect();
    if page != "1" {
        parts.push(format!("page={page}"));
    }
    if parts.is_empty() {
        path.into()
    } else {
        format!("{path}?{}", parts.join("&"))
    }
}

/// Previous / next links under a paged list (plain links: each page is
/// rendered on the server).
#[component]
pub fn Pager(
    lang: Lang,
    page: u32,
    more: bool,
    href: impl Fn(u32) -> String + 'static,
) -> impl IntoView {
    (page > 0 || more).then(|| {
        view! {
            <nav class="pager" aria-label=lang.pick("Pages", "分页")>
                {(page > 0).then(|| view! { <a class="button" rel="prev" href=href(page - 1) data-testid="page-prev">{lang.pick("← Newer", "← 较新")}</a> })}
                <span class="page-number">{lang.pick(format!("Page {}", page + 1), format!("第 {} 页", page + 1))}</span>
                {more.then(|| view! { <a class="button" rel="next" href=href(page + 1) data-testid="page-next">{lang.pick("Older →", "较旧 →")}</a> })}
            </nav>
        }
    })
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

/// "2026-11-22 18:01", in UTC like every time the board shows.
pub fn short_time(at: &Timestamp) -> String {
    use chrono::{Datelike, Timelike};
    format!(
        "{}-{:02}-{:02} {:02}:{:02}",
        at.year(),
        at.month(),
        at.day(),
        at.hour(),
        at.minute()
    )
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
