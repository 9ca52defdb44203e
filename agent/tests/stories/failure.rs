//! Failure is the agent's first: a failed subtask is tried again with the
//! reasons (seed 002's backoff), then the planner revises it, replaces it
//! with a workaround or gives up; only a give-up stops for a person.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::support::*;
use agent::llm::{CallRole, ChatRequest, Reply, Shape};
use agent::run::RecoveryDecision;
use agent::{ModeChoice, RunEntry, RunState};
use plan_engine::{Op, SubtaskId, SubtaskState};
use serde_json::json;

fn fail(reason: &str) -> Reply {
    Reply::Json(json!({"action": "fail", "reason": reason}))
}

fn is_recover(request: &ChatRequest) -> bool {
    matches!(
        request.shape,
        Shape::Json {
            name: "recover",
            ..
        }
    )
}

fn retries(world: &World) -> Vec<(u32, u32, u64)> {
    world
        .entries()
        .iter()
        .filter_map(|e| match e {
            RunEntry::SubtaskRetry {
                attempt,
                of,
                delay_ms,
                ..
            } => Some((*attempt, *of, *delay_ms)),
            _ => None,
        })
        .collect()
}

fn recoveries(world: &World) -> Vec<(SubtaskId, RecoveryDecision, Option<SubtaskId>)> {
    world
        .entries()
        .iter()
        .filter_map(|e| match e {
            RunEntry::Recovery {
                subtask,
                decision,
                replacement,
                ..
            } => Some((*subtask, *decision, *replacement)),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_failed_subtask_is_tried_again_with_the_reasons_after_the_seeds_backoff_and_no_person_is_needed(
) {
    let llm = worker()
        .push_json(
            CallRole::Planner,
            plan_json(&[("fetch", &[]), ("write", &[])]),
        )
        .push(CallRole::Executor, fail("the page timed out"))
        .push(CallRole::Executor, fail("the page said 503"));
    let world = World::new(llm);
    let mut c = config("Fetch and write");
    c.mode = ModeChoice::Simple;
    let started = tokio::time::Instant::now();
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    // Seed 002: retryDelay (1 s) · 2^attempt, logged and waited (the
    // clock is tokio's, paused: it moves only through the waits).
    assert_eq!(retries(&world), [(1, 3, 2_000), (2, 3, 4_000)]);
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert!(recoveries(&world).is_empty(), "the third attempt succeeded");
    let third = world.executor_prompt("fetch");
    assert!(
        third.contains("Earlier attempts at this subtask failed:\n- attempt 1: the page timed out\n- attempt 2: the page said 503"),
        "{third}"
    );
    assert!(third.contains("Do not repeat what failed"), "{third}");
    let plan = world.plan();
    assert_eq!(plan.subtasks()[0].state(), SubtaskState::Done);
    let said: Vec<&str> = plan
        .comments()
        .iter()
        .filter(|c| c.subtask == Some(SubtaskId(1)))
        .map(|c| c.body.as_str())
        .collect();
    assert!(
        said.iter()
            .any(|b| b.starts_with("Attempt 1 of 3 failed: the page timed out")),
        "the board shows the attempts: {said:?}"
    );
    // The count and the reasons are on the run's row (for a restart).
    let stored = world.stored_run();
    assert_eq!(stored.attempts.len(), 1);
    assert_eq!(stored.attempts[0].failed, 2);
}

#[tokio::test]
async fn after_its_attempts_a_subtask_the_planner_replaces_is_skipped_and_its_dependents_wait_for_the_workaround(
) {
    let recover_calls = Arc::new(AtomicUsize::new(0));
    let seen = recover_calls.clone();
    let llm = worker()
        .push_json(
            CallRole::Planner,
            plan_json(&[
                ("read the api", &[]),
                ("read the docs", &[]),
                ("compare", &[1, 2]),
            ]),
        )
        .responder(move |request| {
            if is_recover(request) {
                seen.fetch_add(1, Ordering::SeqCst);
                assert!(
                    request.messages[1]
                        .content
                        .contains("- the api needs a key")
                        && request.messages[1]
                            .content
                            .contains("The subtask that failed 2 times: read the api"),
                    "{}",
                    request.messages[1].content
                );
                return Reply::Json(json!({
                    "decision": "workaround", "reason": "the public mirror needs no key",
                    "name": "read the api's public mirror", "description": "fetch_url the mirror"
                }));
            }
            if request.role == CallRole::Executor
                && subtask_name(request).as_deref() == Some("read the api")
            {
                return fail("the api needs a key");
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = config("Compare the api with its docs");
    c.mode = ModeChoice::Complex;
    c.max_attempts = 2;
    c.retry_delay_ms = 1;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(recover_calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        recoveries(&world),
        [(
            SubtaskId(1),
            RecoveryDecision::Workaround,
            Some(SubtaskId(4))
        )]
    );
    assert_eq!(retries(&world).len(), 1, "two attempts: one retry");
    let plan = world.plan();
    let failed = plan.subtask(SubtaskId(1)).unwrap();
    assert_eq!(failed.state(), SubtaskState::Skipped);
    assert!(failed
        .outcome()
        .unwrap()
        .contains("replaced by #4 read the api's public mirror"));
    let mirror = plan.subtask(SubtaskId(4)).unwrap();
    assert_eq!(mirror.state(), SubtaskState::Done);
    let compare = plan.subtask(SubtaskId(3)).unwrap();
    // The engine's rewiring: the replacement takes the failed one's place.
    assert_eq!(compare.dependencies(), [SubtaskId(4), SubtaskId(2)]);
    assert!(world
        .executor_prompt("compare")
        .contains("#4 read the api's public mirror: result of read the api's public mirror"));
}

#[tokio::test]
async fn a_subtask_the_planner_revises_runs_again_with_its_new_description() {
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("total", &[])]))
        .responder(|request| {
            if is_recover(request) {
                return Reply::Json(json!({
                    "decision": "revise", "reason": "sum it in code",
                    "name": "", "description": "with run_python, sum the amounts column"
                }));
            }
            if request.role == CallRole::Executor {
                let brief = &request.messages[1].content;
                if !brief.contains("with run_python") {
                    return fail("I lost count");
                }
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = config("Total the amounts");
    c.mode = ModeChoice::Simple;
    c.max_attempts = 2;
    c.retry_delay_ms = 1;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        recoveries(&world),
        [(SubtaskId(1), RecoveryDecision::Revise, None)]
    );
    assert_eq!(
        world.plan().subtasks()[0].description(),
        "with run_python, sum the amounts column"
    );
    assert_eq!(
        world.llm.calls(CallRole::Executor),
        3,
        "two failed, one revised"
    );
}

#[tokio::test]
async fn a_workaround_without_a_name_but_with_a_description_is_carried_out_as_a_revision() {
    // Qwen2.5-Coder-1.5B answered "workaround" with only a description
    // ("I will use run_python to …"), and the run stopped for a person.
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("total", &[])]))
        .responder(|request| {
            if is_recover(request) {
                return Reply::Json(json!({
                    "decision": "workaround", "reason": "sum it in code",
                    "name": " ", "description": "with run_python, sum the amounts column"
                }));
            }
            if request.role == CallRole::Executor {
                let brief = &request.messages[1].content;
                if !brief.contains("with run_python") {
                    return fail("I lost count");
                }
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = config("Total the amounts");
    c.mode = ModeChoice::Simple;
    c.max_attempts = 2;
    c.retry_delay_ms = 1;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        recoveries(&world),
        [(SubtaskId(1), RecoveryDecision::Revise, None)]
    );
    assert_eq!(
        world.plan().subtasks()[0].description(),
        "with run_python, sum the amounts column"
    );
}

/// A model whose executor fails `failing` every time and whose recovery
/// always answers skip.
fn skipping(plan: serde_json::Value, failing: &'static str) -> agent::ScriptedLlm {
    worker()
        .push_json(CallRole::Planner, plan)
        .responder(move |request| {
            if is_recover(request) {
                return Reply::Json(json!({
                    "decision": "skip", "reason": "the count is computed in the next step",
                    "name": "", "description": ""
                }));
            }
            if request.role == CallRole::Executor
                && subtask_name(request).as_deref() == Some(failing)
            {
                return fail("cannot resolve www.primes.example");
            }
            answer(request)
        })
}

#[tokio::test]
async fn a_failed_subtask_the_planner_skips_lets_the_rest_of_the_plan_reach_the_goal() {
    // Qwen2.5-Coder-1.5B planned "fetch a page of primes, then count them
    // in code" with no internet here, and gave up on the fetch.
    let world = World::new(skipping(
        plan_json(&[("fetch the primes", &[]), ("count the primes", &[1])]),
        "fetch the primes",
    ));
    let mut c = config("How many primes are below 10000?");
    c.mode = ModeChoice::Simple;
    c.max_attempts = 2;
    c.retry_delay_ms = 1;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        recoveries(&world),
        [(SubtaskId(1), RecoveryDecision::Skip, None)]
    );
    let plan = world.plan();
    assert_eq!(plan.subtasks()[0].state(), SubtaskState::Skipped);
    assert_eq!(plan.subtasks()[1].state(), SubtaskState::Done);
}

#[tokio::test]
async fn skipping_the_last_step_left_is_not_done_and_the_run_waits_for_a_person() {
    let world = World::new(skipping(plan_json(&[("count", &[])]), "count"));
    let mut c = config("How many primes are below 10000?");
    c.mode = ModeChoice::Simple;
    c.max_attempts = 2;
    c.retry_delay_ms = 1;
    let driving = world.start(c).await;
    let run = world.wait_run(|r| r.state == RunState::Paused).await;
    assert!(run.reason.unwrap_or_default().contains("stuck"));
    assert_eq!(
        recoveries(&world),
        [(SubtaskId(1), RecoveryDecision::GiveUp, None)]
    );
    assert_eq!(world.plan().subtasks()[0].state(), SubtaskState::Failed);
    driving.abort();
}

#[tokio::test]
async fn when_the_planner_gives_up_the_run_waits_for_a_person_whose_retry_gives_the_agent_its_attempts_again(
) {
    let fixed = Arc::new(AtomicBool::new(false));
    let now_fixed = fixed.clone();
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("deploy", &[])]))
        .responder(move |request| {
            if request.role == CallRole::Executor && !now_fixed.load(Ordering::SeqCst) {
                return fail("no access to the server");
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = config("Deploy it");
    c.mode = ModeChoice::Simple;
    c.max_attempts = 2;
    c.retry_delay_ms = 1;
    let driving = world.start(c).await;
    let run = world.wait_run(|r| r.state == RunState::Paused).await;
    assert!(run.reason.unwrap().contains("no access"), "stuck on it");
    assert_eq!(
        recoveries(&world),
        [(SubtaskId(1), RecoveryDecision::GiveUp, None)]
    );
    let plan = world.plan();
    assert_eq!(plan.subtasks()[0].state(), SubtaskState::Failed);
    assert!(plan
        .comments()
        .iter()
        .any(|c| c.body.contains("the planner gave up: a person must look")));
    // ada grants access and retries; the agent starts over on it.
    assert_eq!(world.stored_run().attempts[0].failed, 0);
    fixed.store(true, Ordering::SeqCst);
    world
        .person(
            plan.id(),
            vec![Op::SetSubtaskState {
                id: SubtaskId(1),
                state: SubtaskState::Todo,
                note: None,
                start_next: false,
            }],
        )
        .await;
    let run = tokio::time::timeout(std::time::Duration::from_secs(20), driving)
        .await
        .expect("the run finishes")
        .unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
}

#[tokio::test]
async fn an_emergent_todo_that_waits_on_a_question_keeps_what_depends_on_it() {
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("ask", &[]), ("other", &[])]))
        .push_json(
            CallRole::Executor,
            json!({"action": "ask", "question": "Which server?"}),
        )
        .responder(|request| {
            // After "other", a TODO that needs the answer to "ask".
            if request.role == CallRole::Adapter
                && request.messages[1].content.contains("Last result: result of other")
            {
                return Reply::Json(json!({
                    "drop": [], "needs_update": true, "reason": "the answer decides",
                    "new_todos": [{"name": "follow the answer", "description": "", "depends_on": [1]}]
                }));
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = config("Look into the slow nights");
    c.mode = ModeChoice::Emergent;
    // One TODO at a time: the update after the survey reaches the next
    // ones before they start (with more at once they would be running).
    c.max_parallel = 1;
    let driving = world.start(c).await;
    let plan = world
        .wait_plan(|p| {
            p.subtasks().len() == 3
                && p.subtask(SubtaskId(2))
                    .is_some_and(|s| s.state() == SubtaskState::Done)
        })
        .await;
    // Nothing can start; the question is open. The TODO that needs its
    // answer waits instead of being skipped as unreachable.
    world
        .wait_run(|r| r.state == RunState::Paused || r.state == RunState::Running)
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(
        world.plan().subtask(SubtaskId(3)).unwrap().state(),
        SubtaskState::Todo
    );
    world
        .person(
            plan.id(),
            vec![
                Op::Comment {
                    subtask: Some(SubtaskId(1)),
                    body: "the night one".into(),
                },
                Op::SetSubtaskState {
                    id: SubtaskId(1),
                    state: SubtaskState::Todo,
                    note: None,
                    start_next: false,
                },
            ],
        )
        .await;
    let run = tokio::time::timeout(std::time::Duration::from_secs(20), driving)
        .await
        .expect("the run finishes")
        .unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        world.plan().subtask(SubtaskId(3)).unwrap().state(),
        SubtaskState::Done,
        "followed once answered"
    );
}

#[tokio::test]
async fn a_result_short_of_its_outcome_has_the_plan_adapted_and_a_cycle_goes_back_to_the_model_once(
) {
    let adapt_calls = Arc::new(AtomicUsize::new(0));
    let calls = adapt_calls.clone();
    let llm = worker()
        .push_json(
            CallRole::Planner,
            plan_json(&[
                ("count the rows", &[]),
                ("read the notes", &[]),
                ("report", &[1, 2]),
            ]),
        )
        .responder(move |request| {
            if matches!(request.shape, Shape::Json { name: "adapt", .. }) {
                let n = calls.fetch_add(1, Ordering::SeqCst);
                assert!(
                    request.messages[1]
                        .content
                        .contains("Short of the expected outcome: the second file was not read"),
                    "adapt sees what fell short: {}",
                    request.messages[1].content
                );
                return Reply::Json(if n == 0 {
                    // 3 would need 4 and 4 would need 3.
                    json!({"needs_change": true, "reason": "count the second file",
                           "add": [{"name": "count the second file", "depends_on": [3]}],
                           "depends": [{"position": 3, "depends_on": [1, 2, 4]}]})
                } else {
                    assert!(
                        request
                            .messages
                            .last()
                            .unwrap()
                            .content
                            .contains("The plan refused these changes"),
                        "the second answer is asked with the engine's reason"
                    );
                    json!({"needs_change": true, "reason": "count the second file",
                           "add": [{"name": "count the second file", "depends_on": [1]}],
                           "depends": [{"position": 3, "depends_on": [1, 2, 4]}]})
                });
            }
            if request.role == CallRole::Executor
                && subtask_name(request).as_deref() == Some("count the rows")
            {
                return Reply::Json(json!({"action": "complete", "result": "120 rows in a.csv",
                                          "short_of": "the second file was not read"}));
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = config("Count the rows of both files and report");
    c.mode = ModeChoice::Complex;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        adapt_calls.load(Ordering::SeqCst),
        2,
        "one refusal, one repair"
    );
    let plan = world.plan();
    let added = plan.subtask(SubtaskId(4)).expect("adapt added a subtask");
    assert_eq!(added.name(), "count the second file");
    assert_eq!(added.state(), SubtaskState::Done);
    assert_eq!(
        plan.subtask(SubtaskId(3)).unwrap().dependencies(),
        [SubtaskId(1), SubtaskId(2), SubtaskId(4)]
    );
    assert!(world
        .executor_prompt("report")
        .contains("#4 count the second file: result of count the second file"));
    assert!(world
        .entries()
        .iter()
        .any(|e| matches!(e, RunEntry::PlanAdjusted { changes: 2, .. })));
}

/// Seed 004's update may also rewrite an unstarted TODO's description and
/// mark one blocked: the revised TODO runs with its new description; the
/// blocked one waits as a question does (its reason on the card, the run
/// neither skipping it nor finishing) until a person answers, then runs.
#[tokio::test]
async fn an_emergent_update_revises_a_todo_and_blocks_one_until_a_person_answers() {
    let llm = worker()
        .push_json(
            CallRole::Planner,
            plan_json(&[("survey", &[]), ("measure", &[]), ("deploy the fix", &[])]),
        )
        .responder(|request| {
            if request.role == CallRole::Adapter
                && request.messages[1]
                    .content
                    .contains("Last result: result of survey")
            {
                return Reply::Json(json!({
                    "blocked": [{"position": 3, "reason": "which environment may we deploy to?"}],
                    "drop": [], "needs_update": false, "reason": "the survey changed things",
                    "new_todos": [],
                    "revise": [{"position": 2, "description": "measure only the nightly jobs"}]
                }));
            }
            answer(request)
        });
    let world = World::new(llm);
    let mut c = config("Look into the slow nights");
    c.mode = ModeChoice::Emergent;
    // One TODO at a time: the update after the survey reaches the next
    // ones before they start (with more at once they would be running).
    c.max_parallel = 1;
    let driving = world.start(c).await;
    let plan = world
        .wait_plan(|p| {
            p.subtask(SubtaskId(2))
                .is_some_and(|s| s.state() == SubtaskState::Done)
        })
        .await;
    let measure = world.executor_prompt("measure");
    assert!(
        measure.contains("measure only the nightly jobs"),
        "{measure}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let blocked = world.plan().subtask(SubtaskId(3)).unwrap().clone();
    assert_eq!(
        blocked.state(),
        SubtaskState::Blocked,
        "not skipped, not run"
    );
    assert_eq!(
        blocked.question(),
        Some("which environment may we deploy to?"),
        "it waits as a question does"
    );
    assert_eq!(
        world.llm.calls(CallRole::Compiler),
        0,
        "the run is not over"
    );
    world
        .person(
            plan.id(),
            vec![
                Op::Comment {
                    subtask: Some(SubtaskId(3)),
                    body: "staging only".into(),
                },
                Op::SetSubtaskState {
                    id: SubtaskId(3),
                    state: SubtaskState::Todo,
                    note: None,
                    start_next: false,
                },
            ],
        )
        .await;
    let run = tokio::time::timeout(std::time::Duration::from_secs(20), driving)
        .await
        .expect("the run finishes")
        .unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        world.plan().subtask(SubtaskId(3)).unwrap().state(),
        SubtaskState::Done
    );
}
