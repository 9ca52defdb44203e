//! The first screen (`/`): the task box for planboard's agent (its
//! advanced settings folded), then what waits for the person ("Needs
//! you"), then the plans: every plan with its state, mode, progress,
//! approval and last activity; filters and text search; live from
//! `/api/stream`.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use plan_engine::{Lang, Mode, StateFilter};

#[cfg(feature = "ssr")]
use crate::api::{answered, backend, viewer};
use crate::api::{BoardError, ListFilter};
use crate::i18n::use_lang;
use crate::live::use_live;
use crate::words::connection_text;

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

/// `?by=agent` → plans planboard's agent made; `?by=manual` → the others.
pub fn by_name(agent: Option<bool>) -> &'static str {
    match agent {
        Some(true) => "agent",
        Some(false) => "manual",
        None => "",
    }
}

/// The mode select of the lists' filter forms.
pub fn mode_select(lang: Lang, mode: Option<Mode>, testid: &'static str) -> impl IntoView {
    let modes = Mode::ALL
        .into_iter()
        .map(|m| view! { <option value=m.as_str() selected=mode == Some(m)>{m.label(lang)}</option> })
        .collect_view();
    view! {
        <label>
            {lang.pick("Mode ", "模式 ")}
            <select name="mode" data-testid=testid>
                <option value="" selected=mode.is_none()>{lang.pick("any", "任意")}</option>
                {modes}
            </select>
        </label>
    }
}

/// The "made by" select of the lists' filter forms.
pub fn by_select(lang: Lang, agent: Option<bool>) -> impl IntoView {
    view! {
        <label>
            {lang.pick("Made by ", "来源 ")}
            <select name="by" data-testid="by">
                <option value="" selected=agent.is_none()>{lang.pick("anyone", "全部")}</option>
                <option value="agent" selected=agent == Some(true)>{lang.pick("planboard's agent", "planboard 智能体")}</option>
                <option value="manual" selected=agent == Some(false)>{lang.pick("others (API, MCP, by hand)", "其他（API、MCP、手动）")}</option>
            </select>
        </label>
    }
}

/// The address's query string, as the server saw it.
pub fn address() -> String {
    leptos_router::hooks::use_location().search.get_untracked()
}

/// The page, rendered on the server: heading and filters are plain HTML
/// (a filter is a page load); the table is an island that follows the
/// stream.
#[component]
pub fn PlansPage() -> impl IntoView {
    let lang = use_lang();
    let address = address();
    let filter = ListFilter::from_address(&address);
    let chips = SHOWS
        .iter()
        .map(|(state, en, zh)| {
            let mut q = filter.clone();
            q.query.state = *state;
            let active = filter.query.state == *state;
            let key = state.map_or("all", StateFilter::as_str);
            view! {
                <a class="chip" class:active=active aria-current=active.then_some("page") href=href(&q, 0) data-testid=format!("show-{key}")>
                    {lang.pick(*en, *zh)}
                </a>
            }
        })
        .collect_view();
    let show = filter
        .query
        .state
        .map(StateFilter::as_str)
        .unwrap_or_default();
    #[cfg(feature = "ssr")]
    let agent = crate::api::agent_info();
    #[cfg(not(feature = "ssr"))]
    let agent = crate::api::AgentInfo::default();
    view! {
        <super::task::TaskBox agent from="/" advanced_open=false/>
        <NeedsYou/>
        <section class="plans-page">
            <div class="page-head">
                <h1>{lang.pick("Plans", "计划")}</h1>
                <a class="button primary" href="/plans/new" data-testid="new-plan">{lang.pick("New plan", "新建计划")}</a>
            </div>
            <form class="filters" method="get" action="/" role="search">
                <nav class="chips" aria-label=lang.pick("Show", "显示")>{chips}</nav>
                <input type="hidden" name="show" value=show/>
                {mode_select(lang, filter.query.mode, "mode")}
                <label>
                    <span class="sr-only">{lang.pick("Search titles", "搜索标题")}</span>
                    <input type="search" name="q" placeholder=lang.pick("Search titles", "搜索标题") value=filter.query.text.clone() data-testid="search"/>
                </label>
                {by_select(lang, filter.agent)}
                <button type="submit">{lang.pick("Filter", "筛选")}</button>
            </form>
            <PlansLive address/>
        </section>
    }
}

/// Most of what waits for the person shown on the first screen; the rest
/// is a link away, on `/inbox`.
const NEEDS_SHOWN: usize = 5;

/// What waits for the person, on the first screen: the first few, each
/// with the place to act. Its links are named for the action, not the
/// plan, so the plan's own link below stays the one named for it.
#[component]
fn NeedsYou() -> impl IntoView {
    let lang = use_lang();
    let needs = crate::codec::load(|| (), |_| crate::api::load_needs());
    view! {
        <section class="home-needs" data-testid="home-needs">
            <h2>{lang.pick("Needs you", "待处理")}</h2>
            <Transition fallback=|| ()>
                {move || needs.get().map(|r| match r {
                    Ok(list) if list.is_empty() => view! {
                        <p class="empty" data-testid="home-needs-empty">{lang.pick("Nothing waits for you.", "没有等待你处理的事项。")}</p>
                    }.into_any(),
                    Ok(list) => {
                        let total = list.len();
                        let items = list
                            .into_iter()
                            .take(NEEDS_SHOWN)
                            .map(|n| super::inbox::need_item(n, lang))
                            .collect_view();
                        view! {
                            <ul class="needs-list">{items}</ul>
                            <a href="/inbox" data-testid="home-needs-all">{lang.pick(
                                format!("All {total} in Needs you →"),
                                format!("全部 {total} 项待处理 →"),
                            )}</a>
                        }.into_any()
                    }
                    Err(e) => view! { <p class="error" role="alert">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}

/// The plans the list's address (its query string) asks for, loaded again
/// whenever the stream reports a change anywhere. The server reads the
/// address and draws the table ([`list_html`]): the wasm neither encodes a
/// filter nor decodes a row, it sets the HTML it is given.
#[island]
pub fn PlansLive(address: String) -> impl IntoView {
    let lang = use_lang();
    let plans = crate::codec::load(move || address.clone(), plans_html);
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
                Ok(html) => view! { <div class="plans-list" inner_html=html></div> }.into_any(),
                Err(e) => view! { <p class="error" role="alert">{crate::words::explain(&e, lang)}</p> }.into_any(),
            })}
        </Transition>
    }
}

/// The plans list at `address`, its query string (see [`ListFilter`]),
/// drawn as HTML for the live list's island.
#[server(prefix = "/_board", input = Json)]
pub async fn plans_html(address: String) -> Result<String, BoardError> {
    answered(
        async {
            viewer().await?;
            let filter = ListFilter::from_address(&address);
            let list = backend()?.list(&filter).await?;
            Ok(list_html(list, &filter, crate::i18n::detect()))
        }
        .await,
    )
}

/// The list's table, pager or empty note, as HTML ([`PlansLive`] sets it).
#[cfg(feature = "ssr")]
pub fn list_html(list: crate::api::PlanList, filter: &ListFilter, lang: Lang) -> String {
    let page = filter.page;
    if list.rows.is_empty() && page == 0 {
        return view! {
            <p class="empty">
                {lang.pick("No plans here yet. Give the agent a task above; agents also create them over the API or MCP, or ", "这里还没有计划。在上面把任务交给智能体；智能体也会通过 API 或 MCP 创建计划，你也可以")}
                <a href="/plans/new">{lang.pick("make one by hand", "手动新建一个")}</a>
                {lang.pick(".", "。")}
            </p>
        }
        .to_html();
    }
    let filter = filter.clone();
    view! {
        {plan_table(list.rows, lang)}
        <Pager lang page more=list.more href=move |p| href(&filter, p)/>
    }
    .to_html()
}

/// A filter's address at `page`: the chips' links and the pager's.
fn href(f: &ListFilter, page: u32) -> String {
    let q = &f.query;
    let show = q.state.map(StateFilter::as_str).unwrap_or_default();
    let mode = q.mode.map(Mode::as_str).unwrap_or_default();
    let by = by_name(f.agent);
    page_href(
        "/",
        &[("show", show), ("mode", mode), ("q", &q.text), ("by", by)],
        page,
    )
}

/// `path?k=v&…&page=n` with the empty parameters left out (`page` counts
/// from 1 in the address).
pub fn page_href(path: &str, params: &[(&str, &str)], page: u32) -> String {
    let page = (page + 1).to_string();
    let mut parts: Vec<String> = params
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", crate::words::urlencode(v)))
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

/// The plans table's columns: English, Chinese.
#[cfg(feature = "ssr")]
const COLUMNS: [(&str, &str); 6] = [
    ("Plan", "计划"),
    ("Mode", "模式"),
    ("State", "状态"),
    ("Progress", "进度"),
    ("Approval", "审批"),
    ("Last activity", "最近活动"),
];

#[cfg(feature = "ssr")]
fn plan_table(rows: Vec<crate::api::PlanRow>, lang: Lang) -> impl IntoView {
    use plan_engine::ApprovalStatus;
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
                    <td class="title">
                        <a href=format!("/plans/{}", r.id)>{r.title.clone()}</a>
                        {r.run.map(|state| view! {
                            <span class="badge agent" data-testid="plan-run">{lang.pick("agent: ", "智能体：")}{crate::words::run_state_label(state, lang)}</span>
                        })}
                        {r.working_on.map(|names| view! {
                            <span class="working-on" data-testid="working-on">{lang.pick("working on ", "正在进行：")}{names}</span>
                        })}
                    </td>
                    <td><span class="badge mode">{r.mode.label(lang)}</span></td>
                    <td><span class=format!("badge plan-state state-{}", r.state.as_str())>{r.state.label(lang)}</span></td>
                    <td>
                        <div class="progress small" role="progressbar" aria-label=lang.pick(format!("{} progress", r.title), format!("{} 的进度", r.title)) aria-valuemin="0" aria-valuemax="100" aria-valuenow=r.percent>
                            <div class="progress-bar" style=format!("width: {}%", r.percent)></div>
                        </div>
                        <span class="progress-text">{lang.pick(format!("{}% of {}", r.percent, r.subtasks), format!("{} 个中的 {}%", r.subtasks, r.percent))}</span>
                    </td>
                    <td>{approval.map(|(class, label)| view! { <span class=format!("badge approval-{class}")>{label}</span> })}</td>
                    <td><time>{crate::words::short_time(&r.updated_at)}</time></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="plans">
            {crate::words::table_head(lang, &COLUMNS)}
            <tbody>{lines}</tbody>
        </table>
    }
}
