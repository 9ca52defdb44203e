//! The plan's title, state, goal and progress.

use leptos::prelude::*;
use plan_engine::{Plan, SubtaskState};

#[component]
pub fn PlanHeader(plan: RwSignal<Plan>) -> impl IntoView {
    let title = move || plan.with(|p| p.title.clone());
    let goal = move || plan.with(|p| p.goal.clone());
    let state = move || plan.with(|p| p.state.as_str());
    let mode = move || plan.with(|p| p.mode.as_str());
    let percent = move || plan.with(|p| p.percent());
    let version = move || plan.with(|p| p.version);
    let counts = move || {
        plan.with(|p| {
            SubtaskState::ALL
                .into_iter()
                .filter(|s| p.count(*s) > 0)
                .map(|s| {
                    let n = p.count(s);
                    view! {
                        <li class=format!("count state-{s}")>
                            <span class="count-n">{n}</span>" "{s.as_str().replace('_', " ")}
                        </li>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <header class="plan-header">
            <div class="plan-title-row">
                <h1 data-testid="plan-title">{title}</h1>
                <span class=move || format!("badge plan-state state-{}", state()) data-testid="plan-state">
                    {state}
                </span>
                <span class="badge mode">{mode}</span>
                <span class="version">"v"{version}</span>
            </div>
            <p class="goal">{goal}</p>
            <div
                class="progress"
                role="progressbar"
                aria-label="Plan progress"
                aria-valuemin="0"
                aria-valuemax="100"
                aria-valuenow=percent
            >
                <div class="progress-bar" style=move || format!("width: {}%", percent())></div>
            </div>
            <p class="progress-text" data-testid="progress-text">{percent}"% done or skipped"</p>
            <ul class="counts">{counts}</ul>
        </header>
    }
}
