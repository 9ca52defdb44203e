//! Plans (`/`): every plan with its state, mode, progress, approval and
//! last activity; filters and text search; live from `/api/stream`.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::{list_plans, ListFilter, PlanRow};
use crate::live::use_live;

const SHOWS: [(&str, &str); 4] = [
    ("", "All"),
    ("awaiting_approval", "Awaiting approval"),
    ("running", "Running"),
    ("finished", "Finished"),
];

#[component]
pub fn PlansPage() -> impl IntoView {
    let query = use_query_map();
    let filter = move || {
        let q = query.read();
        ListFilter {
            show: q.get("show").unwrap_or_default(),
            mode: q.get("mode").unwrap_or_default(),
            text: q.get("q").unwrap_or_default(),
        }
    };
    let plans = Resource::new(filter, |f| async move { list_plans(f).await });
    let live = use_live("/api/stream".into());
    Effect::new(move |first: Option<()>| {
        // Any change anywhere may change a line or the filter's result.
        live.heard.track();
        if first.is_some() {
            plans.refetch();
        }
    });
    let chips = move || {
        let current = filter();
        SHOWS
            .iter()
            .map(|(key, label)| {
                let mut f = current.clone();
                f.show = key.to_string();
                let active = current.show == *key;
                view! {
                    <a class="chip" class:active=active aria-current=active.then_some("page") href=href(&f) data-testid=format!("show-{}", if key.is_empty() { "all" } else { key })>
                        {*label}
                    </a>
                }
            })
            .collect_view()
    };
    view! {
        <section class="plans-page">
            <div class="page-head">
                <h1>"Plans"</h1>
                <a class="button primary" href="/plans/new" data-testid="new-plan">"New plan"</a>
            </div>
            <form class="filters" method="get" action="/" role="search">
                <nav class="chips" aria-label="Show">{chips}</nav>
                <input type="hidden" name="show" prop:value=move || filter().show/>
                <label>
                    "Mode "
                    <select name="mode" prop:value=move || filter().mode>
                        <option value="">"any"</option>
                        <option value="simple">"simple"</option>
                        <option value="complex">"complex"</option>
                        <option value="emergent">"emergent"</option>
                    </select>
                </label>
                <label>
                    <span class="sr-only">"Search titles"</span>
                    <input type="search" name="q" placeholder="Search titles" prop:value=move || filter().text data-testid="search"/>
                </label>
                <button type="submit">"Filter"</button>
            </form>
            <p class="connection" class:offline=move || !live.connected.get() role="status">
                {move || if live.connected.get() { "live" } else { "reconnecting…" }}
            </p>
            <Transition fallback=|| view! { <p class="loading">"Loading plans…"</p> }>
                {move || plans.get().map(|r| match r {
                    Ok(Ok(rows)) if rows.is_empty() => view! {
                        <p class="empty">"No plans here yet. Agents create them over the API or MCP, or "<a href="/plans/new">"make one by hand"</a>"."</p>
                    }.into_any(),
                    Ok(Ok(rows)) => view! { <PlanTable rows/> }.into_any(),
                    Ok(Err(e)) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                })}
            </Transition>
        </section>
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

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// "2026-11-22T18:01:02.123Z" → "2026-11-22 18:01".
pub fn short_time(at: &str) -> String {
    at.get(..16).unwrap_or(at).replace('T', " ")
}

#[component]
fn PlanTable(rows: Vec<PlanRow>) -> impl IntoView {
    let lines = rows
        .into_iter()
        .map(|r| {
            let approval = match (r.approval_required, r.approval) {
                (false, _) => None,
                (true, plan_engine::ApprovalStatus::Approved) => Some(("approved", "approved")),
                (true, plan_engine::ApprovalStatus::Rejected) => Some(("rejected", "rejected")),
                (true, _) => Some(("pending", "needs approval")),
            };
            view! {
                <tr data-testid="plan-row">
                    <td class="title"><a href=format!("/plans/{}", r.id)>{r.title.clone()}</a></td>
                    <td><span class="badge mode">{r.mode.as_str()}</span></td>
                    <td><span class=format!("badge plan-state state-{}", r.state.as_str())>{r.state.as_str().replace('_', " ")}</span></td>
                    <td>
                        <div class="progress small" role="progressbar" aria-label=format!("{} progress", r.title) aria-valuemin="0" aria-valuemax="100" aria-valuenow=r.percent>
                            <div class="progress-bar" style=format!("width: {}%", r.percent)></div>
                        </div>
                        <span class="progress-text">{r.percent}"% of "{r.subtasks}</span>
                    </td>
                    <td>{approval.map(|(class, label)| view! { <span class=format!("badge approval-{class}")>{label}</span> })}</td>
                    <td><time>{short_time(&r.updated_at)}</time></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="plans">
            <thead>
                <tr><th>"Plan"</th><th>"Mode"</th><th>"State"</th><th>"Progress"</th><th>"Approval"</th><th>"Last activity"</th></tr>
            </thead>
            <tbody>{lines}</tbody>
        </table>
    }
}
