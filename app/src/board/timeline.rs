//! The timeline: every event with who, when and what, and a replay control
//! that shows the board as it was after any event (the log folded up to it
//! with the engine).
//!
//! The server draws the entries and the replayed snapshot
//! ([`timeline_html`]); the island keeps the slider, the buttons, and reads
//! a click on an entry off its `data-event`. Telling each event and
//! folding the log to a moment cost the wasm nothing.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use plan_engine::PlanId;
#[cfg(feature = "ssr")]
use plan_engine::{describe, Lang, Plan};

use super::Board;
use crate::api::BoardError;
#[cfg(feature = "ssr")]
use crate::api::{answered, backend, viewer, LogEntry};

/// Entries (and a snapshot's rows) shown before a "Show more": the
/// timeline of a 5,000-subtask plan drawn whole took seconds.
const PAGE: usize = 200;

/// The newest `limit` entries of `log`, newest first, each told against
/// the plan before it (every event is folded; only the shown are told),
/// and the plan after event `at` (after the last with `None`).
#[cfg(feature = "ssr")]
pub fn drawing(log: &[LogEntry], at: Option<usize>, limit: usize, lang: Lang) -> String {
    let mut before: Option<Plan> = None;
    let first_shown = log.len().saturating_sub(limit);
    let upto = at.map_or(log.len(), |i| (i + 1).min(log.len()));
    let mut snapshot = None;
    let mut lines = Vec::with_capacity(log.len().min(limit));
    for (i, entry) in log.iter().enumerate() {
        if i == upto {
            snapshot = before.clone();
        }
        let Some(event) = &entry.event else { continue };
        let text = match &mut before {
            Some(plan) => {
                let text = (i >= first_shown).then(|| describe(event, plan, lang));
                plan.fold(event);
                text
            }
            None => {
                // The first event creates the plan; it names no earlier state.
                before = Plan::replay([event]).ok();
                Some(
                    before
                        .as_ref()
                        .map(|plan| describe(event, plan, lang))
                        .unwrap_or_default(),
                )
            }
        };
        let Some(text) = text.filter(|_| i >= first_shown) else {
            continue;
        };
        let who = event.actor.to_string();
        let when = crate::words::stamp(&event.at, true);
        let version = event.version;
        lines.push(view! {
            <li class="entry" class:current=at == Some(i) data-testid="timeline-entry">
                <button class="link" data-event=i aria-label=lang.pick(format!("Show the board after event {}", i + 1), format!("显示第 {} 个事件之后的看板", i + 1))>
                    <time>{when}</time>
                </button>
                " "<span class="actor">{who}</span>
                " "<span class="what">{text}</span>
                " "<span class="version">"v"{version}</span>
            </li>
        });
    }
    if upto >= log.len() {
        snapshot = before;
    }
    lines.reverse();
    view! {
        <div class="replayed" data-testid="replayed">
            {snapshot.map(|mut plan| {
                plan.reindex();
                snapshot_view(&plan, lang)
            })}
        </div>
        <ol class="entries" reversed>{lines}</ol>
    }
    .to_html()
}

/// The plan's timeline as the server draws it, for the island to set.
#[server(prefix = "/_board", input = Json)]
pub async fn timeline_html(
    plan: PlanId,
    at: Option<usize>,
    shown: usize,
) -> Result<String, BoardError> {
    answered(
        async {
            viewer().await?;
            let log = backend()?.log(plan).await?;
            Ok(drawing(&log, at, shown, crate::i18n::detect()))
        }
        .await,
    )
}

#[component]
pub fn Timeline(board: Board) -> impl IntoView {
    let lang = board.lang;
    let id = board.id;
    // `None`: follow the present.
    let at = RwSignal::new(None::<usize>);
    // The newest entries shown; older ones a click away.
    let shown = RwSignal::new(PAGE);
    let total = move || board.entries();
    // The last drawing stays on screen while the next one loads.
    let drawn = super::server_html(Box::new(move || -> super::HtmlFuture {
        let at = at.get();
        let shown = shown.get();
        total();
        Box::pin(async move { timeline_html(id, at, shown).await.ok() })
    }));
    let older = move || {
        let left = total().saturating_sub(shown.get());
        (left > 0).then(|| view! {
            <button class="more" data-testid="timeline-more" on:click=move |_| shown.update(|k| *k += PAGE)>
                {lang.pick(
                    format!("Show {} older ({left} not shown)", left.min(PAGE)),
                    format!("再显示 {} 个更早的（还有 {left} 个未显示）", left.min(PAGE)),
                )}
            </button>
        })
    };
    let upto = move || at.get().map_or_else(total, |i| i + 1);
    view! {
        <div class="timeline">
            <div class="replay">
                <label for="replay">
                    {move || lang.pick(
                        format!("Replay: the board after event {} of {}", upto(), total()),
                        format!("回放：第 {} / {} 个事件之后的看板", upto(), total()),
                    )}
                </label>
                <input
                    id="replay"
                    type="range"
                    min="1"
                    max=total
                    prop:value=move || upto().to_string()
                    on:input=move |ev| {
                        let v: usize = event_target_value(&ev).parse().unwrap_or(1);
                        at.set(if v >= total() { None } else { Some(v.saturating_sub(1)) });
                    }
                    data-testid="replay"
                />
                <button on:click=move |_| at.set(None) disabled=move || at.get().is_none()>{lang.pick("Back to now", "回到现在")}</button>
            </div>
            <div class="timeline-drawn" inner_html=move || drawn.get()
                on:click=move |ev| {
                    if let Some(i) = event_of(&ev) {
                        at.set(Some(i));
                    }
                }
            ></div>
            {older}
        </div>
    }
}

/// The entry a click on the drawing landed on (`data-event`), if any.
#[cfg(feature = "hydrate")]
fn event_of(ev: &leptos::ev::MouseEvent) -> Option<usize> {
    use wasm_bindgen::JsCast;
    let element = ev.target()?.dyn_into::<web_sys::Element>().ok()?;
    element
        .closest("[data-event]")
        .ok()??
        .get_attribute("data-event")?
        .parse()
        .ok()
}

#[cfg(not(feature = "hydrate"))]
fn event_of(_: &leptos::ev::MouseEvent) -> Option<usize> {
    None
}

/// A compact, read-only picture of a plan at one moment.
#[cfg(feature = "ssr")]
fn snapshot_view(plan: &Plan, lang: Lang) -> impl IntoView {
    let hidden = plan.subtasks().len().saturating_sub(PAGE);
    let rows = plan
        .subtasks()
        .iter()
        .take(PAGE)
        .map(|s| {
            view! {
                <li class=format!("snap state-{}", s.state().as_str())>
                    "#"{s.id().0}" "{s.name().to_string()}" — "{s.state().label(lang)}
                </li>
            }
        })
        .collect_view();
    view! {
        <p class="snap-head">
            "v"{plan.version()}{lang.pick(" · plan ", " · 计划：")}{plan.state().label(lang)}" · "{plan.percent()}
            {lang.pick("% done", "% 完成")}
        </p>
        <ul class="snapshot">{rows}</ul>
        {(hidden > 0).then(|| view! {
            <p class="meta">{lang.pick(
                format!("… and {hidden} more subtasks (the kanban shows them all)"),
                format!("……还有 {hidden} 个子任务（看板中可看到全部）"),
            )}</p>
        })}
    }
}
