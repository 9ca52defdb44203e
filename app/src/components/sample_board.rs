//! The sample board: a real engine plan, driven by buttons. After hydration
//! the buttons run `Plan::execute` in the browser; refused commands show the
//! engine's own message, as an agent would read it.

use leptos::prelude::*;
use plan_engine::render::markdown;
use plan_engine::{Command, Op, Plan, SubtaskState};

use super::plan_header::PlanHeader;
use super::subtask_list::SubtaskList;
use crate::sample::sample_plan;

/// A person at the board; recorded as the actor of every event it causes.
const BOARD_USER: &str = "you";

#[component]
pub fn SampleBoard() -> impl IntoView {
    let plan = RwSignal::new(sample_plan());
    let message: RwSignal<Option<Result<String, String>>> = RwSignal::new(None);

    let run = move |op: Op| {
        let mut next: Plan = plan.get_untracked();
        // The sample has no clock: each change happens a minute after the last.
        let now = next.updated_at + chrono::Duration::minutes(1);
        match next.execute(&Command::from(op), BOARD_USER, now) {
            Ok(events) => {
                let kinds: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
                message.set(Some(Ok(format!(
                    "Version {}: {}",
                    next.version,
                    kinds.join(", ")
                ))));
                plan.set(next);
            }
            Err(err) => message.set(Some(Err(err.to_string()))),
        }
    };
    let start_next = move |_| run(Op::StartNext { count: 1 });
    let complete = move |_| {
        let current = plan.with_untracked(|p| p.in_progress().first().copied());
        match current {
            Some(id) => run(Op::SetSubtaskState {
                id,
                state: SubtaskState::Done,
                note: Some("Completed from the board".into()),
                start_next: false,
            }),
            None => message.set(Some(Err(
                plan_engine::PlanError::NoCurrentSubtask.to_string()
            ))),
        }
    };
    let reset = move |_| {
        plan.set(sample_plan());
        message.set(None);
    };
    let status = move || {
        match message.get() {
        Some(Ok(text)) => view! { <p class="status ok" role="status" data-testid="status">{text}</p> }.into_any(),
        Some(Err(text)) => view! { <p class="status error" role="alert" data-testid="status">{text}</p> }.into_any(),
        None => view! { <p class="status" role="status" data-testid="status">"Sample plan from seed 000, built by the engine."</p> }.into_any(),
    }
    };
    let md = move || plan.with(markdown);
    // Effects run only in the browser, so this marks the board as hydrated.
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));

    view! {
        <section class="board" data-hydrated=move || hydrated.get().to_string()>
            <PlanHeader plan/>
            <div class="controls" role="group" aria-label="Plan controls">
                <button type="button" data-testid="start-next" on:click=start_next>"Start next ready subtask"</button>
                <button type="button" data-testid="complete-current" on:click=complete>"Complete current subtask"</button>
                <button type="button" class="secondary" data-testid="reset" on:click=reset>"Reset sample"</button>
            </div>
            {status}
            <SubtaskList plan/>
            <details class="export">
                <summary>"Markdown export"</summary>
                <pre data-testid="markdown">{md}</pre>
            </details>
        </section>
    }
}
