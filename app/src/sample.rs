//! A sample plan built with the engine: seed 000's shopping task, part-way
//! through, with the popup subtask inserted. Built from fixed ids and times,
//! so the server's render and the browser's hydration see the same plan.

use chrono::{TimeZone, Utc};
use plan_engine::{Command, NewPlan, NewSubtask, Op, Plan, Position, SubtaskId, SubtaskState};

pub const SAMPLE_AGENT: &str = "shopping-agent";

pub fn sample_plan() -> Plan {
    let at = |minute: u32| {
        Utc.with_ymd_and_hms(2026, 11, 22, 9, minute, 0)
            .single()
            .unwrap_or_default()
    };
    let spec = NewPlan {
        id: uuid::Uuid::from_u128(0x5a3b1e),
        title: "Buy a mechanical keyboard on JD.com".into(),
        goal:
            "Search JD.com for a mechanical keyboard and add the first one under ¥500 to the cart."
                .into(),
        subtasks: vec![
            step(
                "Navigate to JD.com homepage",
                "The first step is to open the target website.",
                &[],
            ),
            step(
                "Input 'mechanical keyboard' into search bar",
                "The search bar is on the homepage.",
                &[1],
            ),
            step(
                "Click the search button",
                "Typing alone does not search.",
                &[2],
            ),
            step(
                "Filter results by price (under 500)",
                "Filtering needs the results page.",
                &[3],
            ),
            step(
                "Add the first item to the shopping cart",
                "The goal ends with the cart.",
                &[4],
            ),
        ],
        ..NewPlan::default()
    };
    let Ok((mut plan, _)) = Plan::create(&spec, SAMPLE_AGENT, at(0)) else {
        unreachable!("the sample plan is valid")
    };
    let steps = [
        Op::StartNext { count: 1 },
        done(1, "Navigated to https://www.jd.com"),
        Op::StartNext { count: 1 },
        done(2, "Typed 'mechanical keyboard'"),
        Op::AddSubtask {
            subtask: NewSubtask {
                name: "Close the new user coupon popup".into(),
                reasoning: "An unexpected popup is blocking the search button.".into(),
                dependencies: vec![SubtaskId(2)],
                ..NewSubtask::default()
            },
            position: Position::After(SubtaskId(2)),
            rewire_after: Some(SubtaskId(2)),
            required_by: Vec::new(),
        },
    ];
    for (minute, op) in steps.into_iter().enumerate() {
        // Every step above is legal; a failure would show as an unchanged plan.
        let _ = plan.execute(&Command::from(op), SAMPLE_AGENT, at(minute as u32 + 1));
    }
    plan
}

fn step(name: &str, reasoning: &str, deps: &[u32]) -> NewSubtask {
    NewSubtask {
        name: name.into(),
        reasoning: reasoning.into(),
        ..NewSubtask::default()
    }
    .after(deps)
}

fn done(id: u32, outcome: &str) -> Op {
    Op::SetSubtaskState {
        id: SubtaskId(id),
        state: SubtaskState::Done,
        note: Some(outcome.into()),
        start_next: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_is_seed_000_with_the_popup_inserted_after_task_2() {
        let plan = sample_plan();
        let order: Vec<u32> = plan.subtasks.iter().map(|s| s.id.0).collect();
        assert_eq!(order, [1, 2, 6, 3, 4, 5]);
        assert_eq!(plan.ready(), vec![SubtaskId(6)]);
        assert_eq!(plan.version, 6);
    }
}
