//! People steering a run: rejection, a mode switch, edits, a skip, a
//! question, pause, abandoning, budgets.

use std::time::Duration;

use crate::support::*;
use agent::llm::CallRole;
use agent::run::DecidedBy;
use agent::{ModeChoice, RunEntry, RunState};
use plan_engine::{Mode, Op, PlanState, SubtaskId, SubtaskState};
use serde_json::json;

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
    world.person(plan.id(), vec![Op::Pause {}]).await;
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
    world.person(plan.id(), vec![Op::Resume {}]).await;
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
    world.person(world.plan().id(), vec![Op::Resume {}]).await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
}

/// "scripted" at $1 per million prompt tokens and $2 per million
/// completion tokens.
fn priced() -> run_model::PriceTable {
    run_model::PriceTable::builtin()
        .with_given(r#"{"scripted": {"prompt": 1, "completion": 2}}"#)
        .unwrap()
}

#[tokio::test]
async fn every_call_is_priced_and_the_run_costs_exactly_what_its_calls_did() {
    let llm = worker().push_json(CallRole::Planner, plan_json(&[("one", &[]), ("two", &[1])]));
    let world = World::with_agent(llm, |agent| agent.with_prices(priced()));
    let mut c = config("Two");
    c.mode = ModeChoice::Complex;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let calls: Vec<agent::run::LlmCallRecord> = world
        .entries()
        .into_iter()
        .filter_map(|e| match e {
            RunEntry::LlmCall(c) => Some(c),
            _ => None,
        })
        .collect();
    assert!(calls.len() >= 3, "{calls:?}");
    for call in &calls {
        let expected = u64::from(call.prompt_tokens) * 1_000_000
            + u64::from(call.completion_tokens) * 2_000_000;
        assert_eq!(
            call.cost.map(run_model::Usd::pico),
            Some(expected),
            "{call:?}"
        );
    }
    let sum: run_model::Usd = calls.iter().filter_map(|c| c.cost).sum();
    assert!(sum > run_model::Usd::ZERO);
    assert_eq!(run.spent.cost, sum);
    assert_eq!(run.spent.unpriced_calls, 0);
    let report = run_model::CostReport::of(&calls);
    assert_eq!(report.total.cost, run.spent.cost);
    assert!(report.subtask(plan_engine::SubtaskId(1)).is_some());
}

#[tokio::test]
async fn a_model_without_a_price_is_counted_apart_and_costs_nothing() {
    let llm = worker().push_json(CallRole::Planner, plan_json(&[("one", &[])]));
    let world = World::new(llm);
    let mut c = config("One");
    c.mode = ModeChoice::Simple;
    c.budget.max_cost = run_model::Usd::from_dollars(0.000001);
    let run = world.run(c).await;
    // An unpriced model never reaches a money budget.
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(run.spent.cost, run_model::Usd::ZERO);
    assert_eq!(run.spent.unpriced_calls, run.spent.llm_calls);
}

#[tokio::test]
async fn reaching_the_money_budget_pauses_the_run_and_raising_it_lets_it_finish() {
    let llm = worker().push_json(
        CallRole::Planner,
        plan_json(&[("one", &[]), ("two", &[]), ("three", &[])]),
    );
    let world = World::with_agent(llm, |agent| agent.with_prices(priced()));
    let mut c = config("Three");
    c.mode = ModeChoice::Simple;
    // Less than the calls of the whole run cost, more than the planner's.
    c.budget.max_cost = run_model::Usd::from_dollars(0.0005);
    let driving = world.start(c).await;
    let run = world.wait_run(|r| r.state == RunState::Paused).await;
    let reason = run.reason.clone().unwrap();
    assert!(
        reason.starts_with("budget reached: the run cost $0.000")
            && reason.ends_with("(budget $0.0005)"),
        "{reason}"
    );
    assert!(run.spent.cost >= run_model::Usd::from_dollars(0.0005).unwrap());
    assert!(world
        .entries()
        .iter()
        .any(|e| matches!(e, RunEntry::BudgetReached { .. })));
    assert!(world.agent.raise_budget(run.id, agent::Budget::default()));
    world.person(world.plan().id(), vec![Op::Resume {}]).await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
}

/// Tokens and running time pause the run like calls do, each saying which
/// limit it reached, and raising that one lets the run finish. (`max_turns`
/// is per attempt: running out of turns fails the attempt, which the agent
/// tries again — the failure stories — rather than pausing the run.)
#[tokio::test]
async fn reaching_the_token_or_time_budget_pauses_the_run_and_raising_it_lets_it_finish() {
    for limit in ["tokens", "time"] {
        let mut llm =
            worker().push_json(CallRole::Planner, plan_json(&[("one", &[]), ("two", &[])]));
        let mut c = config("Two");
        c.mode = ModeChoice::Simple;
        match limit {
            "tokens" => c.budget.max_tokens = 1,
            _ => {
                llm = llm.slow(CallRole::Executor, std::time::Duration::from_millis(1_100));
                c.budget.max_wall_secs = 1;
            }
        }
        let world = World::new(llm);
        let driving = world.start(c).await;
        world.wait_plan(|p| p.state() == PlanState::Paused).await;
        let run = world.wait_run(|r| r.state == RunState::Paused).await;
        let reason = run.reason.clone().unwrap();
        match limit {
            "tokens" => assert!(reason.contains("tokens (budget 1)"), "{reason}"),
            _ => assert!(reason.contains("(budget 1 s)"), "{reason}"),
        }
        assert!(world
            .entries()
            .iter()
            .any(|e| matches!(e, RunEntry::BudgetReached { .. })));
        let raised = agent::Budget {
            max_wall_secs: 3_600,
            ..agent::Budget::default()
        };
        assert!(world.agent.raise_budget(run.id, raised));
        world.person(world.plan().id(), vec![Op::Resume {}]).await;
        let run = driving.await.unwrap();
        assert_eq!(run.state, RunState::Done, "{limit}: {:?}", run.reason);
    }
}

/// A plan with a cycle goes back to the planner with the engine's reason:
/// fixed on the second answer, the run goes on; three cycles in a row
/// (two repairs) fail the run, quoting what the model answered.
#[tokio::test]
async fn the_planners_cycle_is_repaired_on_the_second_try_and_given_up_after_the_third() {
    let cycle = || plan_json(&[("a", &[2]), ("b", &[1])]);
    for fixed_on in [Some(2usize), None] {
        let mut llm = worker().push_json(CallRole::Planner, cycle());
        llm = match fixed_on {
            Some(_) => llm.push_json(CallRole::Planner, plan_json(&[("a", &[]), ("b", &[1])])),
            None => llm
                .push_json(CallRole::Planner, cycle())
                .push_json(CallRole::Planner, cycle()),
        };
        let world = World::new(llm);
        let mut c = config("Build, then ship");
        c.mode = ModeChoice::Complex;
        let run = world.run(c).await;
        let planner: Vec<_> = world
            .llm
            .requests()
            .into_iter()
            .filter(|r| r.role == CallRole::Planner)
            .collect();
        match fixed_on {
            Some(tries) => {
                assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
                assert_eq!(planner.len(), tries);
                let repair = &planner[1].messages.last().unwrap().content;
                assert!(
                    repair.contains("The plan was refused") && repair.contains("cycle"),
                    "{repair}"
                );
            }
            None => {
                assert_eq!(run.state, RunState::Failed);
                assert_eq!(planner.len(), 3, "the answer and two repairs");
                let reason = run.reason.unwrap();
                assert!(
                    reason.contains("refused 3 times") && reason.contains("\"a\""),
                    "{reason}"
                );
            }
        }
    }
}

/// People may send a plan back three times; the fourth rejection ends the
/// run, saying how many rounds there were and the last comment.
#[tokio::test]
async fn a_fourth_rejection_ends_the_run_with_the_last_comment() {
    let world = World::new(worker());
    let mut c = config("Plan the offsite");
    c.mode = ModeChoice::Simple;
    c.approval_required = true;
    let driving = world.start(c).await;
    for round in 1..=4u32 {
        let plan = world
            .wait_plan(|p| p.state() == PlanState::AwaitingApproval)
            .await;
        world
            .person(
                plan.id(),
                vec![Op::Reject {
                    comment: format!("not yet, round {round}"),
                }],
            )
            .await;
        if round < 4 {
            world
                .wait_run(|r| r.round == round + 1 && r.state == RunState::AwaitingApproval)
                .await;
        }
    }
    let run = tokio::time::timeout(Duration::from_secs(20), driving)
        .await
        .expect("the fourth rejection ends the run")
        .unwrap();
    assert_eq!(run.state, RunState::Failed);
    assert_eq!(world.llm.calls(CallRole::Planner), 4, "three revisions");
    let reason = run.reason.unwrap();
    assert!(
        reason.contains("rejected 4 times") && reason.contains("not yet, round 4"),
        "{reason}"
    );
}

#[tokio::test]
async fn the_agent_works_a_plan_people_wrote_as_it_is_after_their_approval() {
    use agent::Host;
    use plan_engine::{NewPlan, NewSubtask};
    let world = World::new(worker());
    let written = world
        .host
        .create_plan(
            NewPlan {
                title: "Release 2.0".into(),
                approval_required: true,
                draft: true,
                subtasks: vec![
                    NewSubtask {
                        name: "build the release".into(),
                        description: "run the build".into(),
                        ..NewSubtask::default()
                    },
                    NewSubtask {
                        name: "ship it".into(),
                        dependencies: vec![plan_engine::SubtaskId(1)],
                        ..NewSubtask::default()
                    },
                ],
                ..NewPlan::default()
            },
            "ada",
        )
        .await
        .unwrap();
    let mut c = config("Release 2.0");
    c.plan = Some(written.id());
    let driving = world.start(c).await;
    let waiting = world
        .wait_run(|r| r.state == RunState::AwaitingApproval)
        .await;
    assert_eq!(waiting.plan_id, Some(written.id()), "no new plan");
    world
        .person(written.id(), vec![Op::Approve { comment: None }])
        .await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    let names: Vec<&str> = plan.subtasks().iter().map(|s| s.name()).collect();
    assert_eq!(names, ["build the release", "ship it"], "worked as written");
    assert!(plan
        .subtasks()
        .iter()
        .all(|s| s.state() == plan_engine::SubtaskState::Done));
    let roles: Vec<CallRole> = world.llm.requests().iter().map(|r| r.role).collect();
    assert!(
        !roles.contains(&CallRole::Classifier) && !roles.contains(&CallRole::Planner),
        "no classifier, no planner: {roles:?}"
    );
    assert_eq!(run.classification.unwrap().mode, plan_engine::Mode::Simple);
    // A finished plan is not given to the agent.
    let mut again = config("Release 2.0 again");
    again.plan = Some(written.id());
    let refused = world.agent.start(again, "ada").await.unwrap_err();
    assert!(
        refused.to_string().contains("has not finished"),
        "{refused}"
    );
}
