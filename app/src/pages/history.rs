//! History (`/history`): finished and abandoned plans for team review —
//! outcome, duration, who approved, how much was said — each opening on
//! the board's timeline.

use leptos::prelude::*;

use super::plans::short_time;
use crate::api::{list_plans, ListFilter, PlanRow};

fn duration(r: &PlanRow) -> String {
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    match (
        parse(&r.created_at),
        r.finished_at.as_deref().and_then(parse),
    ) {
        (Some(a), Some(b)) => {
            let s = (b - a).num_seconds().max(0);
            match s {
                0..=59 => format!("{s} s"),
                60..=3599 => format!("{} min", s / 60),
                3600..=86_399 => format!("{:.1} h", s as f64 / 3600.0),
                _ => format!("{:.1} days", s as f64 / 86_400.0),
            }
        }
        _ => "—".into(),
    }
}

#[component]
pub fn HistoryPage() -> impl IntoView {
    let plans = Resource::new(
        || (),
        |_| async move {
            list_plans(ListFilter {
                show: "finished".into(),
                ..ListFilter::default()
            })
            .await
        },
    );
    view! {
        <section class="history-page">
            <h1>"History"</h1>
            <p class="hint">"Finished, failed and abandoned plans, newest first. Open one to read its timeline."</p>
            <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || plans.get().map(|r| match r {
                    Ok(Ok(rows)) if rows.is_empty() => view! { <p class="empty">"No finished plans yet."</p> }.into_any(),
                    Ok(Ok(rows)) => {
                        let lines = rows.into_iter().map(|r| {
                            let took = duration(&r);
                            view! {
                                <tr data-testid="history-row">
                                    <td class="title"><a href=format!("/plans/{}?view=timeline", r.id)>{r.title.clone()}</a></td>
                                    <td><span class=format!("badge plan-state state-{}", r.state.as_str())>{r.state.as_str()}</span></td>
                                    <td class="outcome">{r.outcome.clone().unwrap_or_default()}</td>
                                    <td>{took}</td>
                                    <td>{r.approved_by.clone().unwrap_or_else(|| "—".into())}</td>
                                    <td>{r.comments}</td>
                                    <td><time>{r.finished_at.as_deref().map(short_time).unwrap_or_default()}</time></td>
                                </tr>
                            }
                        }).collect_view();
                        view! {
                            <table class="plans">
                                <thead><tr><th>"Plan"</th><th>"State"</th><th>"Outcome"</th><th>"Took"</th><th>"Approved by"</th><th>"Comments"</th><th>"Finished"</th></tr></thead>
                                <tbody>{lines}</tbody>
                            </table>
                        }.into_any()
                    }
                    Ok(Err(e)) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}
