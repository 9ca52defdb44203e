//! A run converges under any model: models that answer every schema
//! validly but always ask for more (every result short, three new steps
//! each time, a new TODO after every TODO, a workaround for every
//! failure) still see their run end, or stop with a reason a person can
//! act on, well inside the call budget (run_model::Adaptation).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::support::*;
use agent::llm::{CallRole, Reply, Shape};
use agent::{ModeChoice, RunEntry, RunState};
use plan_engine::SubtaskState;
use serde_json::json;

fn is(request: &agent::llm::ChatRequest, name: &str) -> bool {
    matches!(&request.shape, Shape::Json { name: n, .. } if *n == name)
}

fn adjusted(world: &World) -> Vec<String> {
    world
        .entries()
        .iter()
        .filter_map(|e| match e {
            RunEntry::PlanAdjusted { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_complex_run_whose_model_always_wants_three_new_steps_ends_within_its_adaptation_budget()
{
    // Every result is short of something new, and every adapt call adds
    // three steps never seen before: only the budget can stop it.
    let adapts = Arc::new(AtomicUsize::new(0));
    let (calls, shorts) = (adapts.clone(), Arc::new(AtomicUsize::new(0)));
    let llm = worker()
        .push_json(
            CallRole::Planner,
            plan_json(&[("gather", &[]), ("check", &[]), ("report", &[1, 2])]),
        )
        .responder(move |request| {
            if is(request, "adapt") {
                let n = calls.fetch_add(1, Ordering::SeqCst);
                let add: Vec<_> = (0..3)
                    .map(|k| json!({"name": format!("extra step {n}-{k}"), "description": format!("dig deeper, part {n}-{k}")}))
                    .collect();
                return Reply::Json(json!({"needs_change": true, "reason": "more is needed", "add": add}));
            }
            if request.role == CallRole::Executor {
                let n = shorts.fetch_add(1, Ordering::SeqCst);
                return Reply::Json(json!({"action": "complete", "result": "partial",
                    "short_of": format!("the figures of region number {n}")}));
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = config("Gather, check and report the figures");
    c.mode = ModeChoice::Complex;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    // The approved plan had 3 subtasks: at most 3 added, in at most 3 rounds.
    assert!(
        plan.subtasks().len() <= 6,
        "{} subtasks",
        plan.subtasks().len()
    );
    assert!(plan.subtasks().len() > 3, "it did adapt");
    assert_eq!(run.adaptation.added, 3);
    assert!(
        adapts.load(Ordering::SeqCst) <= 4,
        "{} adapt calls",
        adapts.load(Ordering::SeqCst)
    );
    assert!(
        run.spent.llm_calls < 40,
        "{} calls of the 200 budget",
        run.spent.llm_calls
    );
    let said = adjusted(&world);
    assert!(
        said.iter().any(|r| r.contains("the run goes on without")),
        "the board is told the plan adapts no more: {said:?}"
    );
}

#[tokio::test]
async fn the_same_three_steps_proposed_again_are_refused_and_the_same_gap_buys_no_second_round() {
    let adapts = Arc::new(AtomicUsize::new(0));
    let calls = adapts.clone();
    let llm = worker()
        .push_json(
            CallRole::Planner,
            plan_json(&[
                ("gather", &[]),
                ("check", &[]),
                ("report", &[1, 2]),
                ("archive", &[3]),
            ]),
        )
        .responder(move |request| {
            if is(request, "adapt") {
                calls.fetch_add(1, Ordering::SeqCst);
                // "check" is in the plan already (and done); so is "gather".
                return Reply::Json(json!({"needs_change": true, "reason": "again", "add": [
                    {"name": "check", "description": "anything"},
                    {"name": "Gather", "description": "do gather"},
                    {"name": "verify totals", "description": "add them up"},
                ]}));
            }
            if request.role == CallRole::Executor {
                return Reply::Json(json!({"action": "complete", "result": "partial",
                    "short_of": "the totals per region"}));
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = config("Gather, check, report and archive");
    c.mode = ModeChoice::Complex;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    let names: Vec<&str> = plan.subtasks().iter().map(|s| s.name()).collect();
    assert_eq!(
        names
            .iter()
            .filter(|n| n.eq_ignore_ascii_case("check"))
            .count(),
        1,
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| **n == "verify totals").count(),
        1,
        "{names:?}"
    );
    // The same gap ("the totals per region") paid for one round only: one
    // adapt call, answered once more after the refusal.
    assert_eq!(adapts.load(Ordering::SeqCst), 2, "{names:?}");
    let said = adjusted(&world);
    assert!(
        said.iter()
            .any(|r| r.contains("'Gather' is already in the plan as #1")),
        "{said:?}"
    );
}

#[tokio::test]
async fn an_emergent_list_whose_update_always_adds_todos_still_finishes() {
    let updates = Arc::new(AtomicUsize::new(0));
    let calls = updates.clone();
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("start", &[])]))
        .responder(move |request| {
            if is(request, "todo_update") {
                let n = calls.fetch_add(1, Ordering::SeqCst);
                // The same follow-up every time, and two new ones.
                let mut new_todos = vec![json!({"name": "follow-up", "description": "look again"})];
                new_todos.extend((0..2).map(|k| {
                    json!({"name": format!("angle {n}-{k}"), "description": format!("look into {n}-{k}")})
                }));
                return Reply::Json(json!({"needs_update": true, "reason": "more", "drop": [], "new_todos": new_todos}));
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = config("Explore the topic");
    c.mode = ModeChoice::Emergent;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    assert!(
        plan.subtasks().len() <= 21,
        "{} TODOs",
        plan.subtasks().len()
    );
    assert!(run.adaptation.added <= 20, "{:?}", run.adaptation);
    assert!(
        run.spent.llm_calls < 200,
        "ended by design, not by the call budget"
    );
    let names: Vec<&str> = plan.subtasks().iter().map(|s| s.name()).collect();
    assert_eq!(
        names.iter().filter(|n| **n == "follow-up").count(),
        1,
        "a TODO the list holds is not added again: {names:?}"
    );
    assert!(plan
        .subtasks()
        .iter()
        .all(|s| matches!(s.state(), SubtaskState::Done | SubtaskState::Skipped)));
}

#[tokio::test]
async fn a_model_that_fails_everything_and_always_proposes_a_workaround_stops_for_a_person() {
    let recovers = Arc::new(AtomicUsize::new(0));
    let calls = recovers.clone();
    let llm = worker()
        .push_json(
            CallRole::Planner,
            plan_json(&[("fetch", &[]), ("sum", &[1])]),
        )
        .responder(move |request| {
            if is(request, "recover") {
                let n = calls.fetch_add(1, Ordering::SeqCst);
                return Reply::Json(
                    json!({"decision": "workaround", "reason": "try another way",
                    "name": format!("another way {n}"), "description": format!("way {n}")}),
                );
            }
            if request.role == CallRole::Executor {
                return Reply::Json(json!({"action": "fail", "reason": "it does not work"}));
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = config("Fetch and sum");
    c.mode = ModeChoice::Simple;
    c.max_attempts = 2;
    c.retry_delay_ms = 1;
    let _driving = world.start(c).await;
    let run = world
        .wait_run(|r| {
            matches!(
                r.state,
                RunState::Paused | RunState::Failed | RunState::Done
            )
        })
        .await;
    assert_eq!(run.state, RunState::Paused, "{:?}", run.reason);
    assert!(run.reason.is_some(), "a reason a person can act on");
    // One workaround for the first step; the workaround itself is not
    // worked around again: its failure waits for a person.
    assert_eq!(recovers.load(Ordering::SeqCst), 1);
    let plan = world.plan();
    assert_eq!(plan.subtasks().len(), 3);
    assert!(plan
        .subtasks()
        .iter()
        .any(|s| s.state() == SubtaskState::Failed));
}

/// Seed 004's adaptive re-planning as written: with `adapt_every_step` a
/// complex plan is reviewed after every super-step, also when nothing fell
/// short; by default only after one that did. A model that always asks for
/// more still stays within the adaptation budget.
#[tokio::test]
async fn a_run_that_adapts_after_every_super_step_is_reviewed_each_step_and_still_converges() {
    for every in [false, true] {
        let adapts = Arc::new(AtomicUsize::new(0));
        let calls = adapts.clone();
        let llm = worker()
            .push_json(
                CallRole::Planner,
                plan_json(&[("gather", &[]), ("check", &[1]), ("report", &[2])]),
            )
            .responder(move |request| {
                if request.role == CallRole::Adapter
                    && matches!(&request.shape, agent::llm::Shape::Json { name: "adapt", .. })
                {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    return Reply::Json(json!({"needs_change": true, "reason": "more",
                        "add": [{"name": format!("extra {n}"), "description": format!("more, part {n}")}]}));
                }
                answer(request)
            });
        let world = World::new(llm);
        let mut c = config("Gather, check and report");
        c.mode = ModeChoice::Complex;
        c.adapt_every_step = every;
        let run = world.run(c).await;
        assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
        let asked = adapts.load(Ordering::SeqCst);
        if every {
            assert!(asked >= 3, "reviewed after each of the 3 steps: {asked}");
            // The approved plan had 3 subtasks: at most 3 added.
            assert!(run.adaptation.added <= 3, "{}", run.adaptation.added);
            assert!(world.plan().subtasks().len() <= 6);
        } else {
            assert_eq!(asked, 0, "nothing fell short: no review");
        }
    }
}

/// Seed 004 updates the TODO list after a failure too. A model that fails
/// every TODO and answers every update with three new ones (and, the
/// second time, every recovery with a workaround) still stops, for a
/// person, with the failures named: what an update adds after a failure
/// is a workaround, and a workaround's failure adds nothing.
#[tokio::test]
async fn an_emergent_model_that_fails_every_todo_and_always_adds_a_way_around_stops_for_a_person() {
    for works_around in [false, true] {
        let updates = Arc::new(AtomicUsize::new(0));
        let calls = updates.clone();
        let llm = worker()
            .push_json(CallRole::Planner, plan_json(&[("start", &[])]))
            .responder(move |request| {
                if is(request, "todo_update") {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    let new_todos: Vec<_> = (0..3)
                        .map(|k| json!({"name": format!("other way {n}-{k}"), "description": format!("try way {n}-{k}")}))
                        .collect();
                    return Reply::Json(json!({"needs_update": true, "reason": "try around it", "new_todos": new_todos}));
                }
                if is(request, "recover") && works_around {
                    return Reply::Json(json!({"decision": "workaround", "reason": "another way",
                        "name": "recovered way", "description": "the recovery's way"}));
                }
                if request.role == CallRole::Executor {
                    return Reply::Json(json!({"action": "fail", "reason": "it does not work"}));
                }
                answer(request)
            });
        let world = World::new(llm);
        let mut c = config("Explore why the export breaks");
        c.mode = ModeChoice::Emergent;
        c.max_attempts = 2;
        c.retry_delay_ms = 1;
        let _driving = world.start(c).await;
        let run = world
            .wait_run(|r| {
                matches!(
                    r.state,
                    RunState::Paused | RunState::Failed | RunState::Done
                )
            })
            .await;
        assert_eq!(run.state, RunState::Paused, "{:?}", run.reason);
        let reason = run.reason.clone().unwrap_or_default();
        assert!(
            reason.contains("failed (it does not work)") && reason.contains("retry or skip it"),
            "a reason a person can act on: {reason}"
        );
        let plan = world.plan();
        let names: Vec<&str> = plan.subtasks().iter().map(|s| s.name()).collect();
        if works_around {
            // start → the recovery's workaround, whose failure adds nothing.
            assert_eq!(names, ["start", "recovered way"]);
            assert_eq!(updates.load(Ordering::SeqCst), 1);
        } else {
            // start → three ways around it, whose failures add nothing.
            assert_eq!(plan.subtasks().len(), 4, "{names:?}");
            assert_eq!(updates.load(Ordering::SeqCst), 4);
            assert_eq!(run.adaptation.added, 3);
        }
        assert!(
            adjusted(&world)
                .iter()
                .any(|r| r.contains("was itself a workaround of a failure")),
            "{:?}",
            adjusted(&world)
        );
        assert!(run.spent.llm_calls < 40, "{} calls", run.spent.llm_calls);
    }
}

#[tokio::test]
async fn a_complex_run_whose_executors_always_add_a_subtask_ends_with_its_plan_bounded() {
    // Every executor asks twice to add a new subtask, never seen before,
    // and then completes: without a bound each added subtask's executor
    // adds another, and only the call budget ends the run.
    let adds = Arc::new(AtomicUsize::new(0));
    let asked = adds.clone();
    let llm = worker()
        .push_json(
            CallRole::Planner,
            plan_json(&[("gather", &[]), ("report", &[1])]),
        )
        .responder(move |request| {
            if request.role == CallRole::Executor {
                // Valid answers only: adding while the schema offers it.
                let offered = matches!(&request.shape, Shape::Json { schema, .. }
                    if schema.to_string().contains(r#""add_subtask""#));
                // Two adds in a row, then complete.
                let early = request.messages.len() <= 4;
                let n = asked.fetch_add(1, Ordering::SeqCst);
                return Reply::Json(if offered && early {
                    json!({"action": "add_subtask", "name": format!("#{n} more work {n}"),
                        "description": format!("dig deeper, part {n}")})
                } else {
                    json!({"action": "complete", "result": "done"})
                });
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = config("Gather and report the figures");
    c.mode = ModeChoice::Complex;
    c.budget.max_llm_calls = 1000;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    assert_eq!(
        run.adaptation.base, 2,
        "the budget starts from the approved plan and is stored with the run"
    );
    // Approved with 2: it may grow by 3 (MIN_ADDED) to 5, one attempt past
    // it at most while subtasks run one after another here.
    assert!(
        plan.subtasks().len() <= 6,
        "{} subtasks: {:?}",
        plan.subtasks().len(),
        plan.subtasks().iter().map(|s| s.name()).collect::<Vec<_>>()
    );
    assert!(
        plan.subtasks().iter().all(|s| !s.name().starts_with('#')),
        "a copied number is no part of a name"
    );
    let refused = world.llm.requests().iter().any(|r| {
        r.role == CallRole::Executor
            && r.messages
                .last()
                .is_some_and(|m| m.content.contains("one new subtask per attempt"))
    });
    assert!(refused, "a second add in one attempt is refused");
    assert!(run.spent.llm_calls < 100, "{} calls", run.spent.llm_calls);
}

#[tokio::test]
async fn a_subtask_the_plan_holds_is_not_added_again_by_an_executor() {
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("gather", &[]), ("report", &[1])]))
        .responder(|request| {
            if request.role == CallRole::Executor && request.messages.len() <= 2 {
                // plan_json describes "report" as "do report".
                return Reply::Json(
                    json!({"action": "add_subtask", "name": "#2 Report", "description": "do report"}),
                );
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = config("Gather and report the figures");
    c.mode = ModeChoice::Complex;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.plan().subtasks().len(), 2);
    let told = world.llm.requests().iter().any(|r| {
        r.role == CallRole::Executor
            && r.messages.last().is_some_and(|m| {
                m.content
                    .starts_with("The plan holds that subtask already (#2)")
            })
    });
    assert!(told, "the executor is told the plan holds it");
}
