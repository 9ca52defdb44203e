//! The agent's stories against the in-memory host and a scripted model:
//! each mode, approval and rejection, people steering a run, budgets,
//! retries and repairs, restart. The server's own stories (over HTTP,
//! with a fake OpenAI server) build on the same runtime.

mod support;

use std::time::Duration;

use agent::llm::{CallRole, ErrorClass, LlmError, Reply};
use agent::run::DecidedBy;
use agent::{ModeChoice, RunEntry, RunState};
use plan_engine::{Mode, Op, PlanState, SubtaskId, SubtaskState};
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
async fn a_rejected_plan_is_revised_with_the_comment_then_approved_and_done() {
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("deploy on friday", &[])]))
        .push_json(CallRole::Planner, plan_json(&[("deploy on monday", &[])]));
    let world = World::new(llm);
    let mut c = config("Deploy the release");
    c.mode = ModeChoice::Simple;
    c.approval_required = true;
    let driving = world.start(c).await;
    let plan = world
        .wait_plan(|p| p.state() == PlanState::AwaitingApproval)
        .await;
    world
        .person(
            plan.id(),
            vec![Op::Reject {
                comment: "never deploy on a friday".into(),
            }],
        )
        .await;
    let plan = world
        .wait_plan(|p| {
            p.state() == PlanState::AwaitingApproval
                && p.subtasks().iter().any(|s| s.name().contains("monday"))
        })
        .await;
    assert_eq!(plan.subtasks().len(), 1, "the old subtasks are gone");
    let revision = &world.llm.requests()[1];
    assert!(revision.messages[1]
        .content
        .contains("never deploy on a friday"));
    world
        .person(plan.id(), vec![Op::Approve { comment: None }])
        .await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(run.round, 2);
    assert!(world
        .entries()
        .iter()
        .any(|e| matches!(e, RunEntry::Rejected { .. })));
}

#[tokio::test]
async fn a_person_switching_the_mode_before_approval_replans_with_that_planner() {
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("one", &[])]))
        .push_json(
            CallRole::Planner,
            plan_json(&[("x", &[]), ("y", &[]), ("z", &[1, 2])]),
        );
    let world = World::new(llm);
    let mut c = config("Do it");
    c.mode = ModeChoice::Simple;
    c.approval_required = true;
    let driving = world.start(c).await;
    let plan = world
        .wait_plan(|p| p.state() == PlanState::AwaitingApproval)
        .await;
    world
        .person(
            plan.id(),
            vec![Op::UpdateInfo {
                patch: plan_engine::InfoPatch {
                    mode: Some(Mode::Complex),
                    ..Default::default()
                },
            }],
        )
        .await;
    let plan = world
        .wait_plan(|p| p.subtasks().len() == 3 && p.state() == PlanState::AwaitingApproval)
        .await;
    assert_eq!(plan.max_parallel(), Some(4));
    assert!(world.llm.requests()[1].messages[0]
        .content
        .contains("dependency graph"));
    world
        .person(plan.id(), vec![Op::Approve { comment: None }])
        .await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(run.classification.unwrap().by, DecidedBy::Person);
}

#[tokio::test]
async fn todo_subtasks_people_add_edit_and_delete_mid_run_are_followed() {
    let llm = worker().with_latency(Duration::from_millis(30)).push_json(
        CallRole::Planner,
        plan_json(&[("first", &[]), ("second", &[]), ("third", &[])]),
    );
    let world = World::new(llm);
    let mut c = config("Three steps");
    c.mode = ModeChoice::Simple;
    let driving = world.start(c).await;
    let plan = world
        .wait_plan(|p| {
            p.subtask(SubtaskId(1))
                .is_some_and(|s| s.state() == SubtaskState::InProgress)
        })
        .await;
    world
        .person(
            plan.id(),
            vec![
                Op::EditSubtask {
                    id: SubtaskId(2),
                    patch: plan_engine::SubtaskPatch {
                        name: Some("second, edited".into()),
                        ..Default::default()
                    },
                },
                Op::DeleteSubtask { id: SubtaskId(3) },
                Op::AddSubtask {
                    subtask: plan_engine::NewSubtask::named("added by ada"),
                    position: Default::default(),
                    rewire_after: None,
                    required_by: vec![],
                },
            ],
        )
        .await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    let names: Vec<&str> = plan.subtasks().iter().map(|s| s.name()).collect();
    assert_eq!(names, ["first", "second, edited", "added by ada"]);
    assert!(plan
        .subtasks()
        .iter()
        .all(|s| s.state() == SubtaskState::Done));
    assert!(world
        .executor_prompt("added by ada")
        .contains("People changed the plan while it ran"));
}

#[tokio::test]
async fn a_person_skipping_the_running_subtask_overrides_the_agent() {
    let llm = worker().with_latency(Duration::from_millis(200)).push_json(
        CallRole::Planner,
        plan_json(&[("slow", &[]), ("next", &[])]),
    );
    let world = World::new(llm);
    let mut c = config("Two steps");
    c.mode = ModeChoice::Simple;
    let driving = world.start(c).await;
    let plan = world
        .wait_plan(|p| {
            p.subtask(SubtaskId(1))
                .is_some_and(|s| s.state() == SubtaskState::InProgress)
        })
        .await;
    world
        .person(
            plan.id(),
            vec![Op::SetSubtaskState {
                id: SubtaskId(1),
                state: SubtaskState::Skipped,
                note: Some("not needed".into()),
                start_next: false,
            }],
        )
        .await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    assert_eq!(plan.subtasks()[0].state(), SubtaskState::Skipped);
    assert_eq!(plan.subtasks()[0].outcome(), Some("not needed"));
    assert!(world.entries().iter().any(|e| matches!(
        e,
        RunEntry::Overridden {
            subtask: SubtaskId(1),
            ..
        }
    )));
}

#[tokio::test]
async fn a_question_blocks_the_subtask_until_a_person_answers() {
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("book", &[])]))
        .push_json(
            CallRole::Executor,
            json!({"action": "ask", "question": "Which city?"}),
        );
    let world = World::new(llm);
    let mut c = config("Book a hotel");
    c.mode = ModeChoice::Simple;
    let driving = world.start(c).await;
    let plan = world
        .wait_plan(|p| {
            p.subtasks()
                .first()
                .is_some_and(|s| s.state() == SubtaskState::Blocked)
        })
        .await;
    assert!(plan
        .comments()
        .iter()
        .any(|c| c.body.contains("Which city?")));
    world
        .person(
            plan.id(),
            vec![
                Op::Comment {
                    subtask: Some(SubtaskId(1)),
                    body: "Hangzhou".into(),
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
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert!(world.executor_prompt("book").contains("ada: Hangzhou"));
}

#[tokio::test]
async fn pause_lets_work_in_flight_finish_and_starts_nothing_until_resumed() {
    let llm = worker()
        .with_latency(Duration::from_millis(100))
        .push_json(CallRole::Planner, plan_json(&[("one", &[]), ("two", &[])]));
    let world = World::new(llm);
    let mut c = config("Two steps");
    c.mode = ModeChoice::Simple;
    let driving = world.start(c).await;
    let plan = world
        .wait_plan(|p| {
            p.subtasks()
                .first()
                .is_some_and(|s| s.state() == SubtaskState::InProgress)
        })
        .await;
    world.person(plan.id(), vec![Op::Pause]).await;
    let plan = world
        .wait_plan(|p| {
            p.subtasks()
                .first()
                .is_some_and(|s| s.state() == SubtaskState::Done)
        })
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let paused = world.plan();
    assert_eq!(
        paused.subtasks()[1].state(),
        SubtaskState::Todo,
        "nothing new starts"
    );
    assert_eq!(world.run_state(), RunState::Paused);
    world.person(plan.id(), vec![Op::Resume]).await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
}

#[tokio::test]
async fn abandoning_the_plan_cancels_the_run_and_drops_the_work_in_flight() {
    let llm = worker()
        .slow(CallRole::Executor, Duration::from_secs(30))
        .push_json(CallRole::Planner, plan_json(&[("forever", &[])]));
    let world = World::new(llm);
    let mut c = config("Long");
    c.mode = ModeChoice::Simple;
    let driving = world.start(c).await;
    let plan = world
        .wait_plan(|p| {
            p.subtasks()
                .first()
                .is_some_and(|s| s.state() == SubtaskState::InProgress)
        })
        .await;
    world
        .person(
            plan.id(),
            vec![Op::Finish {
                state: PlanState::Abandoned,
                outcome: "cancelled by ada".into(),
            }],
        )
        .await;
    let run = tokio::time::timeout(Duration::from_secs(5), driving)
        .await
        .expect("cancelling does not wait for the model")
        .unwrap();
    assert_eq!(run.state, RunState::Cancelled);
    assert_eq!(run.reason.as_deref(), Some("cancelled by ada"));
    assert_eq!(
        world.plan().subtasks()[0].state(),
        SubtaskState::Todo,
        "released"
    );
}

#[tokio::test]
async fn reaching_a_budget_pauses_the_run_and_raising_it_lets_it_finish() {
    let llm = worker().push_json(
        CallRole::Planner,
        plan_json(&[("one", &[]), ("two", &[]), ("three", &[])]),
    );
    let world = World::new(llm);
    let mut c = config("Three");
    c.mode = ModeChoice::Simple;
    c.budget.max_llm_calls = 3;
    let driving = world.start(c).await;
    world.wait_plan(|p| p.state() == PlanState::Paused).await;
    let run = world.wait_run(|r| r.state == RunState::Paused).await;
    assert!(run.reason.unwrap().contains("3 LLM calls"));
    assert!(world
        .entries()
        .iter()
        .any(|e| matches!(e, RunEntry::BudgetReached { .. })));
    assert!(world.agent.raise_budget(run.id, agent::Budget::default()));
    world.person(world.plan().id(), vec![Op::Resume]).await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
}

#[tokio::test(start_paused = true)]
async fn a_429_is_retried_after_the_servers_delay_and_a_401_fails_the_subtask_at_once() {
    let mut limited = LlmError::new(ErrorClass::RateLimited, "slow down");
    limited.retry_after = Some(Duration::from_secs(7));
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("one", &[]), ("two", &[])]))
        .push(CallRole::Executor, Reply::Error(limited))
        .push(
            CallRole::Executor,
            Reply::Json(json!({"action": "complete", "result": "ok"})),
        )
        .push(
            CallRole::Executor,
            Reply::Error(LlmError::new(ErrorClass::Auth, "bad key")),
        );
    let world = World::new(llm);
    let mut c = config("Two");
    c.mode = ModeChoice::Simple;
    let driving = world.start(c).await;
    let run = world.wait_run(|r| r.state == RunState::Paused).await;
    assert!(
        run.reason.unwrap().contains("bad key"),
        "stuck on the failed subtask"
    );
    let entries = world.entries();
    let retries: Vec<u64> = entries
        .iter()
        .filter_map(|e| match e {
            RunEntry::RetryScheduled { delay_ms, .. } => Some(*delay_ms),
            _ => None,
        })
        .collect();
    assert_eq!(
        retries,
        [7000],
        "one retry, after Retry-After; none for the 401"
    );
    assert_eq!(world.plan().subtasks()[1].state(), SubtaskState::Failed);
    driving.abort();
}

#[tokio::test]
async fn an_unreadable_answer_gets_one_repair_round_then_fails_the_subtask() {
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("one", &[]), ("two", &[])]))
        .push(CallRole::Executor, Reply::Text("I did it!".into()))
        .push(
            CallRole::Executor,
            Reply::Json(json!({"action": "complete", "result": "fixed"})),
        )
        .push(
            CallRole::Executor,
            Reply::Text("{\"action\": \"dance\"}".into()),
        )
        .push(CallRole::Executor, Reply::Text("still no".into()));
    let world = World::new(llm);
    let mut c = config("Two");
    c.mode = ModeChoice::Simple;
    let driving = world.start(c).await;
    let run = world.wait_run(|r| r.state == RunState::Paused).await;
    let plan = world.plan();
    assert_eq!(plan.subtasks()[0].outcome(), Some("fixed"));
    assert_eq!(plan.subtasks()[1].state(), SubtaskState::Failed);
    assert!(run.reason.unwrap().contains("could not be read"));
    let repair = &world.llm.requests()[2];
    assert!(repair
        .messages
        .last()
        .unwrap()
        .content
        .contains("could not be used"));
    driving.abort();
}

#[tokio::test]
async fn an_emergent_list_stops_growing_at_its_cap_and_is_compacted_near_it() {
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("start", &[])]))
        .responder(|request| match request.role {
            CallRole::Adapter => Reply::Json(json!({
                "drop": [], "needs_update": true, "reason": "more",
                "new_todos": [{"name": "more a", "description": ""}, {"name": "more b", "description": ""}, {"name": "more c", "description": ""}]
            })),
            _ => answer(request),
        });
    let world = World::new(llm);
    let mut c = config("Explore");
    c.mode = ModeChoice::Emergent;
    c.budget.max_llm_calls = 1000;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    assert!(plan.subtasks().len() <= 20, "{}", plan.subtasks().len());
    assert!(plan.subtasks().len() >= 16);
    let compacting = world
        .llm
        .requests()
        .iter()
        .filter(|r| r.role == CallRole::Adapter && r.messages[0].content.contains("nearly full"))
        .count();
    assert!(compacting > 0, "the model was asked to compact");
}

#[tokio::test]
async fn a_run_picked_up_again_after_a_crash_never_redoes_a_finished_subtask() {
    let llm = worker().with_latency(Duration::from_millis(40)).push_json(
        CallRole::Planner,
        plan_json(&[("one", &[]), ("two", &[]), ("three", &[])]),
    );
    let world = World::new(llm);
    let mut c = config("Three");
    c.mode = ModeChoice::Simple;
    let driving = world.start(c).await;
    world
        .wait_plan(|p| {
            p.subtasks().len() == 3
                && p.subtasks()[0].state() == SubtaskState::Done
                && p.subtasks()[1].state() == SubtaskState::InProgress
        })
        .await;
    driving.abort();
    let _ = driving.await;
    let stored = world.stored_run();
    assert_eq!(stored.state, RunState::Running);
    let run = world.agent.drive(stored).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let executor_calls: Vec<String> = world
        .llm
        .requests()
        .iter()
        .filter(|r| r.role == CallRole::Executor)
        .map(|r| subtask_name(r).unwrap_or_default())
        .collect();
    assert_eq!(executor_calls.iter().filter(|n| *n == "one").count(), 1);
    assert_eq!(
        executor_calls.iter().filter(|n| *n == "two").count(),
        2,
        "the call in flight is redone"
    );
    let completions = world
        .host
        .applied()
        .iter()
        .filter(|(_, _, op)| {
            matches!(
                op,
                Op::SetSubtaskState {
                    state: SubtaskState::Done,
                    ..
                }
            )
        })
        .count();
    assert_eq!(completions, 3, "each subtask completed once");
}

#[tokio::test]
async fn executor_prompts_stay_flat_as_the_plan_grows() {
    let mut sizes = Vec::new();
    for n in [10usize, 100, 1000] {
        let names: Vec<String> = (1..=n).map(|i| format!("step {i}")).collect();
        let subtasks: Vec<(&str, &[u32])> = names.iter().map(|s| (s.as_str(), &[][..])).collect();
        let spec = plan_engine::NewPlan {
            title: "big".into(),
            mode: Mode::Complex,
            subtasks: subtasks
                .iter()
                .map(|(name, _)| plan_engine::NewSubtask::named(*name))
                .collect(),
            ..Default::default()
        };
        let (mut plan, _) = plan_engine::Plan::create(&spec, "t", chrono::Utc::now()).unwrap();
        plan.execute(&Op::StartNext { count: 1 }.into(), "t", chrono::Utc::now())
            .unwrap();
        let job = agent::executor::Job {
            task: "a big task".into(),
            plan,
            subtask: SubtaskId(1),
            may_add: true,
            max_turns: 8,
            people_changes: vec![],
        };
        sizes.push(agent::executor::brief(&job).len());
    }
    let ratio = sizes[2] as f64 / sizes[0] as f64;
    assert!(
        ratio <= 1.2,
        "prompt sizes {sizes:?} grew {ratio:.2}x from 10 to 1000 subtasks"
    );
}

#[tokio::test]
async fn abandoning_the_plan_while_the_planner_thinks_cancels_the_run() {
    let llm = worker().slow(CallRole::Planner, Duration::from_millis(300));
    let world = World::new(llm);
    let mut c = config("Plan slowly");
    c.mode = ModeChoice::Simple;
    let driving = world.start(c).await;
    let plan = world.wait_plan(|p| p.state() == PlanState::Draft).await;
    world
        .person(
            plan.id(),
            vec![Op::Finish {
                state: PlanState::Abandoned,
                outcome: "never mind".into(),
            }],
        )
        .await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Cancelled, "{:?}", run.reason);
    assert!(
        world.plan().subtasks().is_empty(),
        "nothing was added to the abandoned plan"
    );
}
