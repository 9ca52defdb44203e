//! Memory: what people corrected on one run reaches the classifier and
//! the planner of a similar later run, and not of an unrelated one;
//! forgetting a memory takes it out; a run may opt out.

use crate::support::*;
use agent::llm::CallRole;
use agent::{Host, ModeChoice, RunConfig, RunEntry, RunState};
use plan_engine::{Op, PlanState};
use run_model::memory::{MemoryKind, NewMemory, RECALL_BUDGET};

/// The user message of the last `role` call made for `task`.
fn prompt_of(world: &World, role: CallRole, task: &str) -> String {
    world
        .llm
        .requests()
        .iter()
        .filter(|r| r.role == role)
        .map(|r| r.messages[1].content.clone())
        .rfind(|m| m.contains(&format!("Task: {task}")))
        .unwrap_or_else(|| panic!("no {role} call for {task}"))
}

fn planner_prompt(world: &World, task: &str) -> String {
    prompt_of(world, CallRole::Planner, task)
}

/// Another run on the same host, driven to its end.
async fn another(world: &World, config: RunConfig) -> agent::RunRecord {
    let record = world.agent.start(config, "ada").await.unwrap();
    tokio::time::timeout(
        std::time::Duration::from_secs(20),
        world.agent.drive(record),
    )
    .await
    .expect("the run finishes")
}

#[tokio::test]
async fn a_rejection_comment_reaches_the_planner_of_a_similar_later_task_and_not_an_unrelated_one()
{
    let world = World::new(
        worker()
            .push_json(CallRole::Planner, plan_json(&[("deploy", &[])]))
            .push_json(
                CallRole::Planner,
                plan_json(&[("deploy", &[]), ("roll back if needed", &[])]),
            ),
    );
    let first = "Deploy the billing service to production";
    let mut c = config(first);
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
                comment: "always add a rollback step".into(),
            }],
        )
        .await;
    let plan = world
        .wait_plan(|p| p.state() == PlanState::AwaitingApproval && p.subtasks().len() == 2)
        .await;
    world
        .person(plan.id(), vec![Op::Approve { comment: None }])
        .await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let kept = world.host.memories();
    assert!(
        kept.iter().any(|m| m.kind == MemoryKind::Correction
            && m.text.contains("rejected the plan")
            && m.text.contains("always add a rollback step")),
        "{kept:#?}"
    );
    assert!(kept.iter().any(|m| m.kind == MemoryKind::Run
        && m.text.contains("Outcome: done")
        && m.text.contains("Mode: simple (decided by person)")));
    assert!(world
        .entries()
        .iter()
        .any(|e| matches!(e, RunEntry::Remembered { count } if *count == kept.len())));

    // A similar task: its planner reads the correction.
    let similar = "Deploy the billing service to staging";
    let mut c = config(similar);
    c.mode = ModeChoice::Simple;
    assert_eq!(another(&world, c).await.state, RunState::Done);
    let prompt = planner_prompt(&world, similar);
    assert!(
        prompt.contains("What your team taught you")
            && prompt.contains("Correction: For the task «Deploy the billing service to production», a person rejected the plan (deploy) with: always add a rollback step"),
        "{prompt}"
    );

    // An unrelated one: no memory at all.
    let unrelated = "Write a poem about autumn leaves";
    let mut c = config(unrelated);
    c.mode = ModeChoice::Simple;
    assert_eq!(another(&world, c).await.state, RunState::Done);
    let prompt = planner_prompt(&world, unrelated);
    assert!(!prompt.contains("What your team taught you"), "{prompt}");
}

#[tokio::test]
async fn a_person_switching_the_mode_becomes_an_example_for_the_classifier() {
    let world = World::new(
        worker()
            .push_json(CallRole::Planner, plan_json(&[("one", &[])]))
            .push_json(CallRole::Planner, plan_json(&[("explore", &[])])),
    );
    let first = "Investigate why the nightly import jobs time out";
    let mut c = config(first);
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
                    mode: Some(plan_engine::Mode::Emergent),
                    ..Default::default()
                },
            }],
        )
        .await;
    let plan = world
        .wait_plan(|p| {
            p.state() == PlanState::AwaitingApproval
                && p.subtasks().first().is_some_and(|s| s.name() == "explore")
        })
        .await;
    world
        .person(plan.id(), vec![Op::Approve { comment: None }])
        .await;
    assert_eq!(driving.await.unwrap().state, RunState::Done);
    let later = "Investigate why the nightly export jobs time out";
    assert_eq!(another(&world, config(later)).await.state, RunState::Done);
    let prompt = prompt_of(&world, CallRole::Classifier, later);
    assert!(
        prompt.contains("a person switched the mode from simple to emergent"),
        "{prompt}"
    );
}

#[tokio::test]
async fn a_forgotten_memory_is_not_recalled_and_a_run_may_opt_out() {
    let world = World::new(worker());
    world
        .host
        .remember(vec![NewMemory {
            kind: MemoryKind::Correction,
            task: "Rotate the database passwords".into(),
            text: "For the task «Rotate the database passwords», never rotate on a Friday".into(),
            run_id: None,
            plan_id: None,
        }])
        .await
        .unwrap();
    let task = "Rotate the database passwords for the reports replica";
    let mut c = config(task);
    c.mode = ModeChoice::Simple;
    c.memory = false;
    assert_eq!(another(&world, c.clone()).await.state, RunState::Done);
    assert!(
        !planner_prompt(&world, task).contains("never rotate on a Friday"),
        "opted out"
    );
    let before = world.host.memories().len();
    assert_eq!(before, 1, "an opted-out run leaves nothing either");

    c.memory = true;
    assert_eq!(another(&world, c.clone()).await.state, RunState::Done);
    assert!(planner_prompt(&world, task).contains("never rotate on a Friday"));

    let id = world
        .host
        .memories()
        .iter()
        .find(|m| m.text.contains("Friday"))
        .unwrap()
        .id;
    world.host.forget(id);
    let again = "Rotate the database passwords for the billing replica";
    let mut c = config(again);
    c.mode = ModeChoice::Simple;
    assert_eq!(another(&world, c).await.state, RunState::Done);
    assert!(!planner_prompt(&world, again).contains("never rotate on a Friday"));
}

#[tokio::test]
async fn the_prompt_keeps_its_budget_with_ten_thousand_memories() {
    let world = World::new(worker());
    let memories: Vec<NewMemory> = (0..10_000usize)
        .map(|i| NewMemory {
            kind: if i.is_multiple_of(3) {
                MemoryKind::Correction
            } else {
                MemoryKind::Run
            },
            task: format!("Summarise the sales report number {i}"),
            text: format!(
                "For the task «Summarise the sales report {i}», {}",
                "keep it short ".repeat(40)
            ),
            run_id: None,
            plan_id: None,
        })
        .collect();
    world.host.remember(memories).await.unwrap();
    let task = "Summarise the sales report for March";
    let mut c = config(task);
    c.mode = ModeChoice::Simple;
    assert_eq!(another(&world, c).await.state, RunState::Done);
    let prompt = planner_prompt(&world, task);
    // The section is the prompt's last part (no tools in this world).
    let start = prompt
        .find("What your team taught you")
        .expect("memories recalled");
    let section = &prompt[start..];
    assert!(section.chars().count() <= RECALL_BUDGET, "{section}");
    assert!(
        section.contains("Correction:"),
        "corrections first: {section}"
    );
    assert!(
        prompt.chars().count() < 4_000,
        "{} characters",
        prompt.chars().count()
    );
}
