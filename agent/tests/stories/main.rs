//! The agent's stories against the in-memory host and a scripted model:
//! each mode, approval and rejection, people steering a run, budgets,
//! retries and repairs, restart, drift from the approved plan. The server's own stories (over HTTP,
//! with a fake OpenAI server) build on the same runtime.

mod batches;
mod convergence;
mod data;
mod drift;
mod emergent;
mod failure;
mod grounding;
mod guards;
mod judgement;
mod memory;
mod people;
mod resilience;
mod stuck;
mod support;

use std::time::Duration;

use agent::llm::CallRole;
use agent::run::DecidedBy;
use agent::{ModeChoice, RunEntry, RunState};
use plan_engine::{Mode, PlanState, SubtaskId, SubtaskState};
use serde_json::json;
use support::*;

#[tokio::test]
async fn auto_sends_a_clear_linear_task_to_the_simple_planner_and_answers() {
    let llm = worker()
        .push_json(
            CallRole::Classifier,
            json!({"confidence": 0.9, "mode": "simple", "reason": "one clear path"}),
        )
        .push_json(
            CallRole::Planner,
            plan_json(&[("look up", &[]), ("write down", &[])]),
        );
    let world = World::new(llm);
    let run = world.run(config("Look up the weather in Shanghai")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(run.answer.as_deref(), Some("the final answer"));
    let c = run.classification.unwrap();
    assert_eq!((c.mode, c.by), (Mode::Simple, DecidedBy::Model));
    let plan = world.plan();
    assert_eq!(plan.mode(), Mode::Simple);
    assert_eq!(plan.state(), PlanState::Done);
    assert!(plan
        .subtasks()
        .iter()
        .all(|s| s.state() == SubtaskState::Done));
    assert_eq!(
        plan.subtasks()[1].dependencies(),
        vec![SubtaskId(1)],
        "a chain"
    );
    assert_eq!(plan.subtasks()[0].outcome(), Some("result of look up"));
    // Every reply was passed on live in pieces as it was written; the
    // compiler's pieces make up the answer.
    let deltas = world.host.deltas(run.id);
    let roles: std::collections::BTreeSet<String> =
        deltas.iter().map(|d| d.role.to_string()).collect();
    assert_eq!(
        roles.into_iter().collect::<Vec<_>>(),
        ["classifier", "compiler", "executor", "planner"]
    );
    let answer: String = deltas
        .iter()
        .filter(|d| d.role == agent::run::CallRole::Compiler)
        .map(|d| d.text.as_str())
        .collect();
    assert_eq!(answer, "the final answer");
    assert!(deltas
        .iter()
        .any(|d| d.role == agent::run::CallRole::Executor && d.subtask == Some(SubtaskId(2))));
}

#[tokio::test]
async fn parallel_wording_is_complex_by_rule_and_ready_subtasks_run_together() {
    let llm = worker().with_latency(Duration::from_millis(50)).push_json(
        CallRole::Planner,
        plan_json(&[("a", &[]), ("b", &[]), ("merge", &[1, 2])]),
    );
    let world = World::new(llm);
    let watcher = world.watch_parallelism();
    let run = world
        .run(config("Fetch both files in parallel and merge them"))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let c = run.classification.unwrap();
    assert_eq!((c.mode, c.by), (Mode::Complex, DecidedBy::Rules));
    assert_eq!(
        world.llm.calls(CallRole::Classifier),
        0,
        "the rule was sure"
    );
    assert_eq!(watcher.max(), 2, "a and b were in progress at once");
    let prompt = world.executor_prompt("merge");
    assert!(
        prompt.contains("result of a") && prompt.contains("result of b"),
        "the merge step sees its dependencies' results"
    );
}

#[tokio::test]
async fn an_emergent_run_adds_todos_as_work_reveals_them() {
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("survey", &[])]))
        .push_json(
            CallRole::Adapter,
            json!({"drop": [], "needs_update": true, "reason": "found two areas",
                   "new_todos": [{"name": "area one", "description": "d"}, {"name": "area two", "description": "d", "depends_on": [2]}]}),
        );
    let world = World::new(llm);
    let mut c = config("Explore the Rust web ecosystem");
    c.mode = ModeChoice::Emergent;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    let names: Vec<&str> = plan.subtasks().iter().map(|s| s.name()).collect();
    assert_eq!(names, ["survey", "area one", "area two"]);
    assert_eq!(plan.subtasks()[2].dependencies(), vec![SubtaskId(2)]);
    assert_eq!(plan.max_subtasks(), Some(20));
    assert!(world
        .entries()
        .iter()
        .any(|e| matches!(e, RunEntry::PlanAdjusted { changes: 2, .. })));
}

#[tokio::test]
async fn independent_emergent_todos_run_together_up_to_max_parallel_each_followed_by_its_update() {
    for parallel in [2u32, 1] {
        let llm = worker().with_latency(Duration::from_millis(60)).push_json(
            CallRole::Planner,
            plan_json(&[("survey a", &[]), ("survey b", &[]), ("survey c", &[])]),
        );
        let world = World::new(llm);
        let watcher = world.watch_parallelism();
        let mut c = config("Explore three unknown corners of the codebase");
        c.mode = ModeChoice::Emergent;
        c.max_parallel = parallel;
        let run = world.run(c).await;
        assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
        assert_eq!(world.plan().max_parallel(), Some(parallel));
        assert_eq!(
            watcher.max(),
            parallel as usize,
            "TODOs in progress at once with max_parallel {parallel}"
        );
        // Every result had its own update call.
        assert_eq!(world.llm.calls(CallRole::Adapter), 3);
        assert!(world
            .plan()
            .subtasks()
            .iter()
            .all(|s| s.state() == SubtaskState::Done));
    }
}
