//! The timeline: every event with who, when and what, and a replay control
//! that shows the board as it was after any event (the log folded up to it
//! with the engine).

use leptos::prelude::*;
use plan_engine::{describe, Lang, Plan};

use crate::i18n::use_lang;

use super::{replay, Board};

/// Entries (and a snapshot's rows) shown before a "Show more": the
/// timeline of a 5,000-subtask plan drawn whole took seconds.
const PAGE: usize = 200;

#[component]
pub fn Timeline(board: Board) -> impl IntoView {
    let lang = board.lang;
    // `None`: follow the present.
    let at = RwSignal::new(None::<usize>);
    // The newest entries shown; older ones a click away.
    let shown = RwSignal::new(PAGE);
    let entries = move || {
        let limit = shown.get();
        board.log.with(|log| {
            let mut before: Option<Plan> = None;
            let first_shown = log.len().saturating_sub(limit);
            let mut lines = Vec::with_capacity(log.len().min(limit));
            for (i, entry) in log.iter().enumerate() {
                let Some(event) = &entry.event else { continue };
                // Every event is folded (each entry is told against the
                // plan before it); only the shown ones are described.
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
                    <li class="entry" class:current=move || at.get() == Some(i) data-testid="timeline-entry">
                        <button class="link" on:click=move |_| at.set(Some(i)) aria-label=lang.pick(format!("Show the board after event {}", i + 1), format!("显示第 {} 个事件之后的看板", i + 1))>
                            <time>{when}</time>
                        </button>
                        " "<span class="actor">{who}</span>
                        " "<span class="what">{text}</span>
                        " "<span class="version">"v"{version}</span>
                    </li>
                });
            }
            lines.reverse();
            lines.collect_view()
        })
    };
    let total = move || board.log.with(Vec::len);
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
    // The present is the board's own plan; only a moment in the past is
    // folded again from the log.
    let replayed = move || match at.get() {
        None => Some(board.plan.get()),
        Some(i) => board.log.with(|log| replay(&log[..(i + 1).min(log.len())])),
    };
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
            <div class="replayed" data-testid="replayed">
                {move || replayed().map(|p| view! { <Snapshot plan=p/> })}
            </div>
            <ol class="entries" reversed>{entries}</ol>
            {older}
        </div>
    }
}

/// A compact, read-only picture of a plan at one moment.
#[component]
fn Snapshot(plan: Plan) -> impl IntoView {
    let lang: Lang = use_lang();
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
