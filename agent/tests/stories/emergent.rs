//! Seed 004's emergent mode as written: initial TODOs that depend on each
//! other (checked, then real dependencies the scheduler waits for), and a
//! TODO list updated after a TODO that failed as after one that finished.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::*;
use agent::llm::{CallRole, ChatRequest, Reply, Shape};
use agent::{ModeChoice, RunEntry, RunState, ScriptedLlm};
use plan_engine::{Op, SubtaskId, SubtaskState};
use serde_json::json;

fn emergent(task: &str) -> agent::RunConfig {
    let mut c = config(task);
    c.mode = ModeChoice::Emergent;
    c
}

fn is_update(request: &ChatRequest) -> bool {
    matches!(
        &request.shape,
        Shape::Json {
            name: "todo_update",
            ..
        }
    )
}

/// The planner's requests, in order, each as its last message.
fn planner_turns(world: &World) -> Vec<String> {
    world
        .llm
        .requests()
        .iter()
        .filter(|r| r.role == CallRole::Planner)
        .map(|r| {
            r.messages
                .last()
                .map(|m| m.content.clone())
                .unwrap_or_default()
        })
        .collect()
}

#[tokio::test]
async fn an_emergent_todo_that_depends_on_another_starts_only_after_it_is_done() {
    // "dig" needs "look"; "aside" needs nothing and runs beside "look".
    let llm = worker().with_latency(Duration::from_millis(40)).push_json(
        CallRole::Planner,
        plan_json(&[("look", &[]), ("dig", &[1]), ("aside", &[])]),
    );
    let world = World::new(llm);
    let watcher = world.watch_parallelism();
    let run = world
        .run(emergent("Find out why the nightly job is slow"))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    // A real dependency on the plan: the board's DAG draws it.
    let deps: Vec<Vec<SubtaskId>> = plan
        .subtasks()
        .iter()
        .map(|s| s.dependencies().to_vec())
        .collect();
    assert_eq!(deps, vec![vec![], vec![SubtaskId(1)], vec![]]);
    // The default parallelism (4) let the two independent TODOs run
    // together, and the dependent one waited.
    assert_eq!(plan.max_parallel(), Some(4));
    assert_eq!(watcher.max(), 2, "look and aside at once, dig after");
    let look = &plan.subtasks()[0];
    let dig = &plan.subtasks()[1];
    assert!(
        dig.started_at().unwrap() >= look.finished_at().unwrap(),
        "dig started at {:?}, before look was done at {:?}",
        dig.started_at(),
        look.finished_at()
    );
    assert!(plan
        .subtasks()
        .iter()
        .all(|s| s.state() == SubtaskState::Done));
}

#[tokio::test]
async fn an_emergent_start_naming_a_todo_it_does_not_have_is_refused_and_the_model_told_why() {
    let llm = worker()
        .push_json(
            CallRole::Planner,
            plan_json(&[("survey", &[5]), ("compare", &[])]),
        )
        .push_json(
            CallRole::Planner,
            plan_json(&[("survey", &[]), ("compare", &[1])]),
        );
    let world = World::new(llm);
    let run = world.run(emergent("Explore the supplier data")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let turns = planner_turns(&world);
    assert_eq!(turns.len(), 2, "answered once more after the refusal");
    assert!(
        turns[1].contains("TODO 1 ('survey') depends on 5, but the answer has TODOs 1 to 2"),
        "{}",
        turns[1]
    );
    let plan = world.plan();
    assert_eq!(plan.subtasks()[1].dependencies(), vec![SubtaskId(1)]);
    assert!(
        !world
            .entries()
            .iter()
            .any(|e| matches!(e, RunEntry::PlanRepaired { .. })),
        "the model fixed it itself"
    );
}

#[tokio::test]
async fn an_emergent_start_whose_cycle_the_model_never_fixes_runs_its_todos_unordered_and_says_so()
{
    // Every answer: a needs b, b needs a.
    let llm = worker().responder(|request| {
        if request.role == CallRole::Planner {
            return Reply::Json(plan_json(&[("a", &[2]), ("b", &[1])]));
        }
        answer(request)
    });
    let world = World::new(llm);
    let run = world.run(emergent("Look into the flaky tests")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let turns = planner_turns(&world);
    assert_eq!(turns.len(), 3, "the first answer and two repairs");
    assert!(
        turns[1].contains("cycle"),
        "in the engine's words: {}",
        turns[1]
    );
    let plan = world.plan();
    assert!(plan.subtasks().iter().all(|s| s.dependencies().is_empty()));
    let repairs: Vec<String> = world
        .entries()
        .iter()
        .filter_map(|e| match e {
            RunEntry::PlanRepaired { repairs } => Some(repairs.join("; ")),
            _ => None,
        })
        .collect();
    assert!(
        repairs.iter().any(
            |r| r.contains("dropped the TODOs' dependencies, refused 3 times")
                && r.contains("cycle")
        ),
        "{repairs:?}"
    );
}

#[tokio::test]
async fn after_an_emergent_todo_fails_for_good_the_update_hears_why_and_may_add_a_way_around_it() {
    let llm = worker()
        .push_json(
            CallRole::Planner,
            plan_json(&[("fetch the page", &[]), ("summarise", &[1])]),
        )
        .responder(|request| {
            if request.role == CallRole::Executor
                && subtask_name(request).as_deref() == Some("fetch the page")
            {
                return Reply::Json(json!({"action": "fail", "reason": "the site answers 403"}));
            }
            if is_update(request) {
                let told = &request.messages[1].content;
                if told.contains("failed after every attempt") {
                    // The failed TODO again by its name (a retry), and a
                    // way around it that waits for it.
                    return Reply::Json(json!({"needs_update": true, "reason": "use the cache",
                        "new_todos": [
                            {"name": "Fetch the page", "description": "try once more"},
                            {"name": "read the cached copy", "description": "open the cache",
                             "depends_on": [1]}]}));
                }
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = emergent("Find out what the vendor's page says about prices");
    c.max_attempts = 1;
    c.retry_delay_ms = 1;
    let _driving = world.start(c).await;
    let run = world
        .wait_run(|r| {
            matches!(
                r.state,
                RunState::Paused | RunState::Done | RunState::Failed
            )
        })
        .await;
    let updates: Vec<String> = world
        .llm
        .requests()
        .iter()
        .filter(|r| is_update(r))
        .map(|r| r.messages[1].content.clone())
        .collect();
    assert!(
        updates[0]
            .contains("TODO 1 ('fetch the page') failed after every attempt: the site answers 403"),
        "{updates:?}"
    );
    // It sees what waits for the failed TODO.
    assert!(
        updates[0].contains("2. [todo] summarise (after 1)"),
        "{updates:?}"
    );
    let plan = world.plan();
    assert_eq!(plan.subtasks().len(), 3, "the retry by name was refused");
    let said: Vec<String> = world
        .entries()
        .iter()
        .filter_map(|e| match e {
            RunEntry::PlanAdjusted { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(
        said.iter()
            .any(|r| r.contains("'Fetch the page' is already in the plan as #1 (failed)")),
        "{said:?}"
    );
    let cached = &plan.subtasks()[2];
    assert_eq!(cached.name(), "read the cached copy");
    assert_eq!(
        cached.state(),
        SubtaskState::Done,
        "it ran, not waiting for the failed TODO"
    );
    assert!(cached.dependencies().is_empty());
    // The failed TODO is a person's to retry or skip.
    assert_eq!(run.state, RunState::Paused, "{:?}", run.reason);
    let reason = run.reason.unwrap_or_default();
    assert!(
        reason.contains("#1 fetch the page failed") && reason.contains("retry or skip it"),
        "{reason}"
    );
    world
        .person(
            plan.id(),
            vec![Op::SetSubtaskState {
                id: SubtaskId(1),
                state: SubtaskState::Skipped,
                note: Some("the cache will do".into()),
                start_next: false,
            }],
        )
        .await;
    // Skipped, it no longer holds back what waited for it.
    let run = world.wait_run(|r| r.state == RunState::Done).await;
    assert_eq!(run.answer.as_deref(), Some("the final answer"));
    assert_eq!(world.plan().subtasks()[1].state(), SubtaskState::Done);
}

#[tokio::test]
async fn a_todo_in_flight_goes_on_while_the_list_is_updated_after_another() {
    // "quick" is done at its first call; "steady" lists the files twice
    // first. The update after "quick" takes a second: the run works in
    // parallel, so "steady" must not wait for it.
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let seen: Arc<Mutex<Vec<(String, Duration)>>> = Arc::default();
    let steady_calls = Arc::new(AtomicUsize::new(0));
    let log = seen.clone();
    let calls = steady_calls.clone();
    let llm = ScriptedLlm::new()
        .with_latency(Duration::from_millis(20))
        .slow(CallRole::Adapter, Duration::from_secs(1))
        .push_json(
            CallRole::Planner,
            plan_json(&[("quick", &[]), ("steady", &[])]),
        )
        .responder(move |request| {
            let what = match request.role {
                CallRole::Executor => subtask_name(request).unwrap_or_default(),
                _ if is_update(request) => "update".to_string(),
                _ => String::new(),
            };
            log.lock().unwrap().push((what.clone(), started.elapsed()));
            if what == "steady" && calls.fetch_add(1, Ordering::SeqCst) < 2 {
                return Reply::Json(json!({"action": "list_files", "arguments": {"path": "."}}));
            }
            answer(request)
        });
    let world = World::reading(llm, dir.path());
    let run = world.run(emergent("Look into the two logs")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let seen = seen.lock().unwrap().clone();
    let at = |what: &str| -> Vec<Duration> {
        seen.iter()
            .filter(|(w, _)| w == what)
            .map(|(_, t)| *t)
            .collect()
    };
    let update = at("update")[0];
    let steady = at("steady");
    assert_eq!(steady.len(), 3, "{seen:?}");
    assert!(
        steady[2] < update + Duration::from_millis(700),
        "steady's last call began {:?} after the update began: it waited for it ({seen:?})",
        steady[2].saturating_sub(update)
    );
}
