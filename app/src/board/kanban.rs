//! The kanban view: a column per state, todo split into ready and waiting.
//! Moving a card sends the engine's `set_subtask_state`; the engine's
//! refusal (approval, dependencies, the state table) shows on the card.
//!
//! A card moves by its *Move* menu (which the keyboard reaches) or by
//! dragging it onto another column. The drag asks the
//! engine's state table ([`drop_target`]) which columns take the card and
//! sends the menu's own op; the listeners sit once on the columns'
//! container, not on each of thousands of cards.

use std::collections::HashSet;

use leptos::prelude::*;
use plan_engine::revision::RevisionMark;
use plan_engine::transitions::subtask_transition;
use plan_engine::{Lang, Op, Plan, PlanState, Subtask, SubtaskId, SubtaskState};

use super::Board;
use crate::words::explain;

/// Columns: key, English, Chinese.
const COLUMNS: [(&str, &str, &str); 7] = [
    ("ready", "Ready", "就绪"),
    ("waiting", "Waiting on dependencies", "等待依赖"),
    ("in_progress", "In progress", "进行中"),
    ("blocked", "Blocked", "阻塞"),
    ("done", "Done", "已完成"),
    ("failed", "Failed", "失败"),
    ("skipped", "Skipped", "已跳过"),
];

/// The state a card in state `from` asks for when dropped on `column`, if
/// the engine's state table allows that move (both todo columns mean
/// todo). The guards beyond the table (approval, dependencies, parallelism)
/// are the server's to check, as for the *Move* menu, which offers the same
/// moves.
pub(crate) fn drop_target(from: SubtaskState, column: &str) -> Option<SubtaskState> {
    let to = column_state(column)?;
    subtask_transition(from, to).ok().map(|_| to)
}

/// The state a column holds (todo for both todo columns).
fn column_state(key: &str) -> Option<SubtaskState> {
    match key {
        "ready" | "waiting" => Some(SubtaskState::Todo),
        other => SubtaskState::parse(other),
    }
}

/// What the *Move* menu and a drop both send.
fn move_op(id: SubtaskId, to: SubtaskState, lang: Lang) -> Op {
    Op::SetSubtaskState {
        id,
        state: to,
        note: Some(lang.pick("moved on the board", "在看板上移动").into()),
        start_next: false,
    }
}

fn column_of(plan: &Plan, s: &Subtask, ready: &HashSet<SubtaskId>) -> &'static str {
    // A plan that cannot run yet has no ready subtasks, only waiting ones.
    let runnable = matches!(plan.state(), PlanState::Approved | PlanState::Running);
    match s.state() {
        SubtaskState::Todo if runnable && ready.contains(&s.id()) => "ready",
        SubtaskState::Todo => "waiting",
        other => other.as_str(),
    }
}

/// Why a todo card cannot start now, if it cannot.
fn why_waiting(plan: &Plan, s: &Subtask, lang: Lang) -> Option<String> {
    if s.state() != SubtaskState::Todo {
        return None;
    }
    match plan.state() {
        PlanState::AwaitingApproval | PlanState::Draft => {
            return Some(
                lang.pick("waits for the plan's approval", "等待计划获批")
                    .into(),
            )
        }
        PlanState::Paused => return Some(lang.pick("the plan is paused", "计划已暂停").into()),
        _ => {}
    }
    let open: Vec<String> = s
        .dependencies()
        .iter()
        .filter(|d| plan.subtask(**d).is_some_and(|x| !x.state().is_settled()))
        .map(|d| format!("#{}", d.0))
        .collect();
    (!open.is_empty()).then(|| {
        let open = open.join(", ");
        lang.pick(format!("waits for {open}"), format!("等待 {open}"))
    })
}

/// Cards a column shows before its "Show more": a column of thousands
/// costs the browser seconds to draw and nobody reads it whole.
pub const PAGE: usize = 100;

/// One card as drawn, with a key that changes whenever anything the card
/// shows changes: the columns are keyed lists, so a change redraws only
/// the cards it touched.
#[derive(Clone)]
struct Drawn {
    subtask: Subtask,
    why: Option<String>,
    key: (SubtaskId, u64),
}

impl PartialEq for Drawn {
    fn eq(&self, other: &Drawn) -> bool {
        self.key == other.key
    }
}

impl Drawn {
    fn new(subtask: Subtask, why: Option<String>) -> Drawn {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        subtask.state().hash(&mut h);
        subtask.name().hash(&mut h);
        subtask.dependencies().hash(&mut h);
        subtask.assignee().hash(&mut h);
        subtask.tool().hash(&mut h);
        subtask.attempts().hash(&mut h);
        subtask.outcome().hash(&mut h);
        subtask.question().hash(&mut h);
        why.hash(&mut h);
        Drawn {
            key: (subtask.id(), h.finish()),
            subtask,
            why,
        }
    }
}

/// A drop the server refused: which card, in which state, and why.
#[derive(Clone)]
struct Refused {
    id: SubtaskId,
    from: SubtaskState,
    why: String,
}

/// A column's first `shown` cards and how many it holds.
#[derive(Clone, Default, PartialEq)]
struct Column {
    cards: Vec<Drawn>,
    total: usize,
}

#[component]
pub fn Kanban(board: Board) -> impl IntoView {
    let lang = board.lang;
    let shown: [RwSignal<usize>; 7] = std::array::from_fn(|_| RwSignal::new(PAGE));
    // The card being dragged, and the last drop the server refused: shown
    // on that card (which never left its column) while it keeps the state
    // it was refused in.
    let dragging = RwSignal::new(None::<SubtaskId>);
    let refused = RwSignal::new(None::<Refused>);
    // The dragged card's state now: a live change during the drag counts.
    let dragged_from = move || {
        let id = dragging.get()?;
        board.plan.with(|p| p.subtask(id).map(|s| (id, s.state())))
    };
    // Every column at once, from one pass over the plan.
    let columns = Memo::new(move |_| {
        let limits: Vec<usize> = shown.iter().map(|s| s.get()).collect();
        board.plan.with(|plan| {
            let ready: HashSet<SubtaskId> = plan.ready().into_iter().collect();
            let mut out: Vec<Column> = vec![Column::default(); COLUMNS.len()];
            for s in plan.subtasks() {
                let key = column_of(plan, s, &ready);
                let Some(c) = COLUMNS.iter().position(|(k, _, _)| *k == key) else {
                    continue;
                };
                out[c].total += 1;
                if out[c].cards.len() < limits[c] {
                    let why = why_waiting(plan, s, lang);
                    out[c].cards.push(Drawn::new(Subtask::clone(s), why));
                }
            }
            out
        })
    });
    let columns_view = COLUMNS
        .iter()
        .enumerate()
        .map(|(c, (key, en, zh))| {
            let label = lang.pick(*en, *zh);
            let total = move || columns.with(|cols| cols[c].total);
            let more = move || {
                let left = total().saturating_sub(shown[c].get());
                (left > 0).then(|| {
                    let next = left.min(PAGE);
                    view! {
                        <button class="more" data-testid=format!("more-{key}")
                            on:click=move |_| shown[c].update(|k| *k += PAGE)>
                            {lang.pick(
                                format!("Show {next} more ({left} not shown)"),
                                format!("再显示 {next} 个（还有 {left} 个未显示）"),
                            )}
                        </button>
                    }
                })
            };
            // While a card is dragged: "ok" on the columns that take it,
            // "no" on the others, nothing on its own.
            let drop = move || {
                let (_, from) = dragged_from()?;
                match drop_target(from, key) {
                    Some(_) => Some("ok"),
                    None if column_state(key) == Some(from) => None,
                    None => Some("no"),
                }
            };
            view! {
                <section class=format!("column column-{key}") data-testid=format!("column-{key}") aria-label=label
                    data-column=*key data-drop=drop>
                    <h2>{label}" "<span class="count-n">{total}</span></h2>
                    <div class="cards">
                        <For
                            each=move || columns.with(|cols| cols[c].cards.clone())
                            key=|d: &Drawn| d.key
                            children=move |d: Drawn| view! { <Card board subtask=d.subtask why=d.why refused/> }
                        />
                    </div>
                    {more}
                </section>
            }
        })
        .collect_view();
    let on_drop = move |ev: leptos::ev::DragEvent| {
        let moved = dragged_from();
        dragging.set(None);
        let Some((id, from)) = moved else { return };
        let Some(to) = dom::column_under(&ev).and_then(|c| drop_target(from, &c)) else {
            return;
        };
        ev.prevent_default();
        leptos::task::spawn_local(async move {
            let answer = board.send(move_op(id, to, lang), false).await;
            refused.set(answer.err().map(|e| Refused {
                id,
                from,
                why: explain(&e, lang),
            }));
        });
    };
    view! {
        <div
            class="kanban"
            class:dragging=move || dragging.with(Option::is_some)
            on:dragstart=move |ev| {
                refused.set(None);
                dragging.set(dom::start_drag(&ev));
            }
            on:dragover=move |ev| {
                let takes = dragged_from().zip(dom::column_under(&ev)).is_some_and(|((_, from), c)| {
                    drop_target(from, &c).is_some()
                });
                dom::offer(&ev, takes);
            }
            on:drop=on_drop
            on:dragend=move |_| dragging.set(None)
            // A drag whose card was redrawn by a live change loses its
            // dragend; the first move of a released mouse ends it instead.
            on:mousemove=move |ev| {
                if ev.buttons() == 0 && dragging.with_untracked(Option::is_some) {
                    dragging.set(None);
                }
            }
        >
            {columns_view}
        </div>
    }
}

/// The drag's few touches of the DOM, read off the `data-` attributes the
/// cards and columns carry (only the browser has them).
#[cfg(feature = "hydrate")]
mod dom {
    use leptos::ev::DragEvent;
    use plan_engine::SubtaskId;
    use wasm_bindgen::JsCast;

    fn closest(ev: &DragEvent, selector: &str) -> Option<web_sys::Element> {
        let element = ev.target()?.dyn_into::<web_sys::Element>().ok()?;
        element.closest(selector).ok()?
    }

    /// The card a drag starts on, if it is a draggable card.
    pub fn start_drag(ev: &DragEvent) -> Option<SubtaskId> {
        let id = closest(ev, "[data-drag]")?.get_attribute("data-drag")?;
        let id = SubtaskId(id.parse().ok()?);
        if let Some(data) = ev.data_transfer() {
            // Firefox starts a drag only with some data set.
            _ = data.set_data("text/plain", &format!("#{}", id.0));
            data.set_effect_allowed("move");
        }
        Some(id)
    }

    /// The column under the pointer.
    pub fn column_under(ev: &DragEvent) -> Option<String> {
        closest(ev, "[data-column]")?.get_attribute("data-column")
    }

    /// Lets the drop happen here (the move cursor), or not (not-allowed).
    pub fn offer(ev: &DragEvent, takes: bool) {
        if takes {
            ev.prevent_default();
        }
        if let Some(data) = ev.data_transfer() {
            data.set_drop_effect(if takes { "move" } else { "none" });
        }
    }
}

#[cfg(not(feature = "hydrate"))]
mod dom {
    use leptos::ev::DragEvent;
    use plan_engine::SubtaskId;

    pub fn start_drag(_: &DragEvent) -> Option<SubtaskId> {
        None
    }

    pub fn column_under(_: &DragEvent) -> Option<String> {
        None
    }

    pub fn offer(_: &DragEvent, _: bool) {}
}

#[component]
fn Card(
    board: Board,
    subtask: Subtask,
    why: Option<String>,
    refused: RwSignal<Option<Refused>>,
) -> impl IntoView {
    let lang = board.lang;
    let id = subtask.id();
    let state = subtask.state();
    let error = RwSignal::new(None::<String>);
    let targets: Vec<SubtaskState> = SubtaskState::ALL
        .into_iter()
        .filter(|to| subtask_transition(state, *to).is_ok())
        .collect();
    let target = RwSignal::new(targets.first().copied());
    let deps = if subtask.dependencies().is_empty() {
        None
    } else {
        Some(
            subtask
                .dependencies()
                .iter()
                .map(|d| format!("#{}", d.0))
                .collect::<Vec<_>>()
                .join(", "),
        )
    };
    let options = targets
        .iter()
        .map(|t| view! { <option value=t.as_str()>{t.label(lang)}</option> })
        .collect_view();
    let move_card = move |_| {
        if let Some(to) = target.get_untracked() {
            board.act(move_op(id, to, lang), false, error);
        }
    };
    // This card's own refusal, or a refused drop of it.
    let shown_error = move || {
        error.get().or_else(|| {
            refused.with(|r| {
                r.as_ref()
                    .filter(|r| r.id == id && r.from == state)
                    .map(|r| r.why.clone())
            })
        })
    };
    let draggable = board.can_edit() && !targets.is_empty();
    // A failed subtask, or one blocked on something other than a question
    // (questions are answered in the run's banner), offers the two usual
    // ways on: try again, or skip it.
    let stuck = board.can_edit()
        && (state == SubtaskState::Failed
            || (state == SubtaskState::Blocked && subtask.question().is_none()));
    let set = move |to: SubtaskState, en: &'static str, zh: &'static str| {
        let op = Op::SetSubtaskState {
            id,
            state: to,
            note: Some(lang.pick(en, zh).into()),
            start_next: false,
        };
        board.act(op, false, error);
    };
    let selected = move || board.selected.get() == Some(id);
    let label = lang.pick(format!("Move #{} to", id.0), format!("把 #{} 移到", id.0));
    view! {
        <article
            class=format!("card state-{}", state.as_str())
            class:selected=selected
            data-revised=move || board.revision.with(|r| r.mark(id)).map(|m| match m {
                RevisionMark::Added => "added",
                RevisionMark::Changed => "changed",
            })
            data-testid=format!("card-{}", id.0)
            draggable=draggable.then_some("true")
            data-drag=draggable.then_some(id.0)
        >
            <header>
                <span class="card-id">"#"{id.0}</span>
                <button class="link card-name" on:click=move |_| board.selected.set(Some(id)) data-testid=format!("open-{}", id.0)>
                    {subtask.name().to_string()}
                </button>
            </header>
            {subtask.tool().map(str::to_string).map(|t| view! {
                <p class="meta"><span class="tool-chip" title=lang.pick("tool", "工具") data-testid=format!("tool-{}", id.0)>{t}</span></p>
            })}
            {deps.map(|d| view! { <p class="meta">{lang.pick("after ", "依赖 ")}{d}</p> })}
            {subtask.assignee().map(str::to_string).map(|a| view! { <p class="meta">{lang.pick("assignee: ", "负责人：")}{a}</p> })}
            {(subtask.attempts() > 1).then(|| view! { <p class="meta">{lang.pick("attempts: ", "尝试次数：")}{subtask.attempts()}</p> })}
            {subtask.outcome().map(str::to_string).map(|o| view! { <p class="result">{o}</p> })}
            {why.map(|w| view! { <p class="why">{w}</p> })}
            {stuck.then(|| view! {
                <div class="card-actions">
                    <button on:click=move |_| set(SubtaskState::Todo, "retry asked on the board", "在看板上要求重试") data-testid=format!("retry-{}", id.0)>{lang.pick("Retry", "重试")}</button>
                    <button on:click=move |_| set(SubtaskState::Skipped, "skipped on the board", "在看板上跳过") data-testid=format!("skip-{}", id.0)>{lang.pick("Skip", "跳过")}</button>
                </div>
            })}
            {(board.can_edit() && !targets.is_empty()).then(|| view! {
                <div class="move">
                    <select
                        aria-label=label.clone()
                        on:change=move |ev| target.set(SubtaskState::parse(&event_target_value(&ev)))
                        data-testid=format!("target-{}", id.0)
                    >
                        {options}
                    </select>
                    <button on:click=move_card data-testid=format!("move-{}", id.0)>{lang.pick("Move", "移动")}</button>
                </div>
            })}
            <Show when=move || shown_error().is_some()>
                <p class="error" role="alert" data-testid=format!("card-error-{}", id.0)>{shown_error}</p>
            </Show>
        </article>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drop_asks_for_the_columns_state_only_where_the_state_table_allows_the_move() {
        use SubtaskState::*;
        // A todo card (ready or waiting) starts, blocks or is skipped; it
        // cannot be done or failed before it ran, nor moved between the
        // two todo columns.
        assert_eq!(drop_target(Todo, "in_progress"), Some(InProgress));
        assert_eq!(drop_target(Todo, "blocked"), Some(Blocked));
        assert_eq!(drop_target(Todo, "skipped"), Some(Skipped));
        assert_eq!(drop_target(Todo, "done"), None);
        assert_eq!(drop_target(Todo, "failed"), None);
        assert_eq!(drop_target(Todo, "ready"), None);
        assert_eq!(drop_target(Todo, "waiting"), None);
        // Work in progress goes anywhere but back to itself; either todo
        // column releases it.
        assert_eq!(drop_target(InProgress, "done"), Some(Done));
        assert_eq!(drop_target(InProgress, "failed"), Some(Failed));
        assert_eq!(drop_target(InProgress, "waiting"), Some(Todo));
        assert_eq!(drop_target(InProgress, "ready"), Some(Todo));
        assert_eq!(drop_target(InProgress, "in_progress"), None);
        // Done and skipped only reopen.
        assert_eq!(drop_target(Done, "ready"), Some(Todo));
        assert_eq!(drop_target(Done, "skipped"), None);
        assert_eq!(drop_target(Skipped, "in_progress"), None);
        assert_eq!(drop_target(Failed, "in_progress"), Some(InProgress));
        // A column the board does not have takes nothing.
        assert_eq!(drop_target(InProgress, "elsewhere"), None);
    }

    #[test]
    fn every_column_the_board_draws_takes_exactly_the_moves_the_engine_allows() {
        for (key, _, _) in COLUMNS {
            let to = column_state(key).expect("every column holds a state");
            for from in SubtaskState::ALL {
                assert_eq!(
                    drop_target(from, key).is_some(),
                    subtask_transition(from, to).is_ok(),
                    "{from:?} onto {key}"
                );
            }
        }
    }
}
