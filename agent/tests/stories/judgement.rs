//! The agent's judgement as named rules (`agent::rules`): a task answered
//! in words, a task whose parts must all be answered, a step that reports
//! files no tool showed.

use crate::support::*;
use agent::llm::{CallRole, Reply, Shape};
use agent::{RunEntry, RunState};
use serde_json::json;

/// The executor's action schema names the tools it was offered.
fn offered_tools(request: &agent::llm::ChatRequest) -> String {
    match &request.shape {
        Shape::Json { schema, .. } => schema.to_string(),
        Shape::Tools { functions } => serde_json::to_string(functions).unwrap(),
        Shape::Text => String::new(),
    }
}

#[tokio::test]
async fn a_poem_is_one_step_with_no_tool_and_its_text_is_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let poem = "Plans unfold slowly\nsteps waiting on their own turn\nthe board turns to green";
    let llm = worker()
        .push_json(
            CallRole::Classifier,
            json!({"source": "words", "why": "a poem is written"}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": poem}),
        );
    let world = World::reading(llm, dir.path());
    let run = world.run(config("Write a haiku about plans")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let c = run.classification.unwrap();
    assert!(c.in_words && c.mode == plan_engine::Mode::Simple, "{c:?}");
    // No planner and no compiler: the question, then the one step.
    assert_eq!(world.llm.calls(CallRole::Planner), 0);
    assert_eq!(world.llm.calls(CallRole::Compiler), 0);
    assert_eq!(world.llm.calls(CallRole::Classifier), 1);
    let plan = world.plan();
    assert_eq!(plan.subtasks().len(), 1);
    assert_eq!(plan.subtasks()[0].name(), "Write a haiku about plans");
    assert_eq!(plan.subtasks()[0].tool(), None);
    // The executor was offered no tool at all.
    let executor = world
        .llm
        .requests()
        .into_iter()
        .find(|r| r.role == CallRole::Executor)
        .unwrap();
    let offered = offered_tools(&executor);
    assert!(
        !offered.contains("read_file") && !offered.contains("list_files"),
        "{offered}"
    );
    assert_eq!(run.answer.as_deref(), Some(poem), "the poem as written");
}

#[tokio::test]
async fn a_task_that_needs_computing_is_planned_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker().push_json(
        CallRole::Classifier,
        json!({"source": "computation", "why": "a count"}),
    );
    let world = World::reading(llm, dir.path());
    let run = world.run(config("Count the vowels in 'planboard'")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert!(!run.classification.unwrap().in_words);
    assert_eq!(world.llm.calls(CallRole::Planner), 1);
}

#[tokio::test]
async fn a_part_of_the_task_the_answer_left_out_is_sent_back_once_and_then_answered() {
    let llm = worker()
        .push(
            CallRole::Compiler,
            Reply::Text("The bar chart of units per region was saved.".into()),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "only"}),
        )
        // Told once that no tool shows 42, a step without tools keeps its
        // words.
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "North sold the most: 42 units."}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "North sold the most: 42 units."}),
        )
        .push(
            CallRole::Compiler,
            Reply::Text("North sold the most units: 42.".into()),
        );
    let world = World::new(llm);
    let task = "Which region sold the most units, and how many?";
    let run = world.run(simple(task)).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(run.asks.len(), 1, "{:?}", run.asks);
    let plan = world.plan();
    assert_eq!(plan.subtasks().len(), 2, "one step sent back");
    assert!(
        plan.subtasks()[1]
            .name()
            .starts_with("Answer: Which region"),
        "{}",
        plan.subtasks()[1].name()
    );
    assert_eq!(
        run.answer.as_deref(),
        Some("North sold the most units: 42.")
    );
    assert!(world.entries().iter().any(|e| matches!(
        e,
        RunEntry::PlanAdjusted { reason, .. } if reason.contains("every_ask_answered")
    )));
}

#[tokio::test]
async fn a_part_still_missing_after_the_second_try_is_named_in_the_first_line() {
    let llm = worker();
    let world = World::new(llm);
    // The scripted compiler always answers "the final answer": no number.
    let run = world
        .run(simple(
            "How many days are there from 2026-03-14 to 2027-01-01?",
        ))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let answer = run.answer.unwrap();
    assert!(
        answer.starts_with("Not done: How many days are there from 2026-03-14 to 2027-01-01?\n"),
        "{answer}"
    );
    assert_eq!(
        world.plan().subtasks().len(),
        2,
        "sent back once, not twice"
    );
}

#[tokio::test]
async fn a_file_the_task_asks_for_that_is_missing_is_sent_back_and_one_written_is_not() {
    let world = World::new(worker());
    world.host.put_file("notes/other.txt", 12);
    let run = world.run(simple("Write a short report to report.md")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    assert!(
        plan.subtasks()
            .iter()
            .any(|s| s.name() == "Write report.md"),
        "{:?}",
        plan.subtasks().iter().map(|s| s.name()).collect::<Vec<_>>()
    );
    assert!(run.answer.unwrap().starts_with("Not done: write report.md"));

    let world = World::new(worker());
    world.host.put_file("report.md", 120);
    let run = world.run(simple("Write a short report to report.md")).await;
    assert_eq!(world.plan().subtasks().len(), 1, "nothing sent back");
    assert!(!run.answer.unwrap().starts_with("Not done"));
}

#[tokio::test]
async fn a_step_that_reports_files_no_tool_showed_fails_its_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker()
        .push_json(
            CallRole::Classifier,
            json!({"source": "files", "why": "files"}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "list_files", "arguments": {"path": "."}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "The workspace holds file1.txt and file2.txt."}),
        );
    let world = World::reading(llm, dir.path());
    let mut c = simple("Tell me what the workspace holds");
    c.max_attempts = 1;
    let driving = world.start(c).await;
    world
        .wait_run(|r| r.state.is_finished() || r.state == RunState::Paused)
        .await;
    driving.abort();
    let said: Vec<String> = world
        .entries()
        .iter()
        .filter_map(|e| match e {
            RunEntry::SubtaskResult {
                ok: false, text, ..
            } => Some(text.clone()),
            RunEntry::SubtaskRetry { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(
        said.iter()
            .any(|t| t.contains("file1.txt") && t.contains("no tool output shows")),
        "{said:?}"
    );
}

#[tokio::test]
async fn an_earlier_run_about_another_kind_of_task_does_not_reach_the_planner() {
    let world = World::new(worker());
    let first = "Make the release plans for the billing deploy";
    let record = world.agent.start(simple(first), "ada").await.unwrap();
    world.agent.drive(record).await;
    assert!(
        !world.host.memories().is_empty(),
        "the first run is remembered"
    );
    let later = "Make the release plans for the billing deploy on Friday";
    let record = world.agent.start(simple(later), "ada").await.unwrap();
    world.agent.drive(record).await;
    let other = "Write plans of a treehouse as a list of boards";
    let record = world.agent.start(simple(other), "ada").await.unwrap();
    world.agent.drive(record).await;
    let planner = |task: &str| {
        world
            .llm
            .requests()
            .iter()
            .filter(|r| r.role == CallRole::Planner)
            .map(|r| r.messages[1].content.clone())
            .rfind(|m| m.contains(&format!("Task: {task}")))
            .unwrap()
    };
    assert!(
        planner(later).contains("Records of earlier runs"),
        "the same kind of task recalls it"
    );
    assert!(
        !planner(other).contains("Records of earlier runs"),
        "plans of a treehouse are another kind of task: {}",
        planner(other)
    );
}
