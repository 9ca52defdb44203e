//! The subtasks in plan order, with state, dependencies and outcome.

use leptos::prelude::*;
use plan_engine::{Plan, SubtaskState};

#[component]
pub fn SubtaskList(plan: RwSignal<Plan>) -> impl IntoView {
    let rows = move || {
        plan.with(|p| {
            let ready = p.ready();
            p.subtasks
                .iter()
                .map(|s| {
                    let id = s.id;
                    let state = s.state;
                    let is_ready = ready.contains(&id);
                    let deps = s
                        .dependencies
                        .iter()
                        .map(|d| format!("#{d}"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let outcome = s.outcome.clone();
                    let name = s.name.clone();
                    let reasoning = s.reasoning.clone();
                    view! {
                        <li
                            class=format!("subtask state-{state}")
                            class:ready=is_ready
                            data-testid=format!("subtask-{id}")
                            data-state=state.as_str()
                        >
                            <span class="subtask-id">"#"{id.0}</span>
                            <span class=format!("badge state-{state}")>{state_label(state)}</span>
                            {is_ready.then(|| view! { <span class="badge ready-badge">"ready"</span> })}
                            <span class="subtask-name">{name}</span>
                            {(!deps.is_empty()).then(|| view! { <span class="deps">"after "{deps}</span> })}
                            {(!reasoning.is_empty()).then(|| view! { <p class="reasoning">{reasoning}</p> })}
                            {outcome.map(|o| view! { <p class="outcome">{o}</p> })}
                        </li>
                    }
                })
                .collect_view()
        })
    };
    view! { <ol class="subtasks" aria-label="Subtasks">{rows}</ol> }
}

fn state_label(state: SubtaskState) -> &'static str {
    match state {
        SubtaskState::Todo => "todo",
        SubtaskState::InProgress => "in progress",
        SubtaskState::Blocked => "blocked",
        SubtaskState::Done => "done",
        SubtaskState::Failed => "failed",
        SubtaskState::Skipped => "skipped",
    }
}
