//! The kanban view: a column per state, todo split into ready and waiting.
//! Moving a card sends the engine's `set_subtask_state`; the engine's
//! refusal (approval, dependencies, the state table) shows on the card.

use std::collections::HashSet;

use leptos::prelude::*;
use plan_engine::revision::RevisionMark;
use plan_engine::transitions::subtask_transition;
use plan_engine::{Lang, Op, Plan, PlanState, Subtask, SubtaskId, SubtaskState};

use super::Board;

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
            view! {
                <section class=format!("column column-{key}") data-testid=format!("column-{key}") aria-label=label>
                    <h2>{label}" "<span class="count-n">{total}</span></h2>
                    <div class="cards">
                        <For
                            each=move || columns.with(|cols| cols[c].cards.clone())
                            key=|d: &Drawn| d.key
                            children=move |d: Drawn| view! { <Card board subtask=d.subtask why=d.why/> }
                        />
                    </div>
                    {more}
                </section>
            }
        })
        .collect_view();
    view! { <div class="kanban">{columns_view}</div> }
}

#[component]
fn Card(board: Board, subtask: Subtask, why: Option<String>) -> impl IntoView {
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
            let op = Op::SetSubtaskState {
                id,
                state: to,
                note: Some(lang.pick("moved on the board", "在看板上移动").into()),
                start_next: false,
            };
            board.act(op, false, error);
        }
    };
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
            <Show when=move || error.get().is_some()>
                <p class="error" role="alert" data-testid=format!("card-error-{}", id.0)>{move || error.get()}</p>
            </Show>
        </article>
    }
}
