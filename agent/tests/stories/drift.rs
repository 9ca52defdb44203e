//! Drift: a run keeps the plan a person approved, and when the plan moves
//! too far from it (people's edits, the agent's adaptations) the run
//! pauses until a person approves it again; a run that needed no approval
//! is not measured.

use agent::llm::CallRole;
use agent::{RunEntry, RunState};
use plan_engine::{NewSubtask, Op, PlanState, SubtaskState};

use crate::support::*;

fn add(name: &str) -> Op {
    Op::AddSubtask {
        subtask: NewSubtask::named(name),
        position: Default::default(),
        rewire_after: None,
        required_by: Vec::new(),
    }
}

#[tokio::test]
async fn a_plan_grown_past_its_drift_threshold_pauses_until_a_person_resumes_it() {
    let llm = worker().push_json(
        CallRole::Planner,
        plan_json(&[("gather the facts", &[]), ("write the report", &[1])]),
    );
    let world = World::new(llm);
    let mut c = simple("Write the report");
    c.approval_required = true;
    let driving = world.start(c).await;
    let plan = world
        .wait_plan(|p| p.state() == PlanState::AwaitingApproval)
        .await;
    // Approved and held in one change, then three steps added.
    world
        .person(plan.id(), vec![Op::Approve { comment: None }, Op::Pause {}])
        .await;
    world.wait_run(|r| r.state == RunState::Paused).await;
    world
        .person(
            plan.id(),
            vec![
                add("translate the findings"),
                add("print the posters"),
                add("book the venue"),
            ],
        )
        .await;
    world.person(plan.id(), vec![Op::Resume {}]).await;
    let paused = world.wait_run(|r| r.drift.is_some()).await;
    assert_eq!(paused.state, RunState::Paused, "{:?}", paused.reason);
    assert_eq!(paused.approved.as_ref().unwrap().steps.len(), 2);
    assert!(world
        .entries()
        .iter()
        .any(|e| matches!(e, RunEntry::Drifted(d) if d.similarity < d.threshold)));
    assert!(
        world
            .plan()
            .subtasks()
            .iter()
            .all(|s| s.state() == SubtaskState::Todo),
        "nothing started past the contract"
    );
    // A person resumes it: approved again, the grown plan is the contract.
    world.person(plan.id(), vec![Op::Resume {}]).await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert!(run.drift.is_none());
    assert_eq!(run.approved.unwrap().steps.len(), 5);
}

#[tokio::test]
async fn a_run_that_needed_no_approval_is_not_held_to_a_plan_nobody_approved() {
    let llm = worker().push_json(
        CallRole::Planner,
        plan_json(&[("gather the facts", &[]), ("write the report", &[1])]),
    );
    let world = World::new(llm);
    let run = world.run(simple("Write the report")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert!(run.approved.is_none());
}
