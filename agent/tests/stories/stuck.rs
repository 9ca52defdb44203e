//! An attempt that gets stuck. One that repeats itself: a call with the
//! arguments of an earlier one is not run again and the model is told to
//! use what it saw; a call that returns what an earlier one returned is
//! pointed out; the second repeat fails the attempt, whose next try starts
//! with the reason (a small model printed the same files until the run's
//! time ran out). One that gives up on its own code's error is sent back
//! once to fix it.

use std::sync::Arc;

use crate::support::*;
use agent::llm::CallRole;
use agent::tools::{ToolBox, ToolError, Toolset};
use agent::{RunEntry, RunState};
use serde_json::json;

/// The simple mode, attempts retried at once.
fn quick(task: &str) -> agent::RunConfig {
    let mut c = simple(task);
    c.retry_delay_ms = 0;
    c
}

fn read(path: &str) -> serde_json::Value {
    json!({"action": "read_file", "arguments": {"path": path}})
}

/// The tool calls that ran.
fn tool_calls(world: &World) -> usize {
    world
        .entries()
        .iter()
        .filter(|e| matches!(e, RunEntry::ToolCall { .. }))
        .count()
}

/// What the model read after each of its executor answers.
fn told(world: &World) -> Vec<String> {
    world
        .llm
        .requests()
        .iter()
        .filter(|r| r.role == CallRole::Executor)
        .filter_map(|r| r.messages.last().map(|m| m.content.clone()))
        .collect()
}

#[tokio::test]
async fn a_call_repeated_with_the_same_arguments_is_not_run_again_and_a_second_repeat_fails_the_attempt(
) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let llm = worker()
        .push_json(CallRole::Executor, read("notes.txt"))
        .push_json(CallRole::Executor, read("notes.txt"))
        .push_json(CallRole::Executor, read("notes.txt"))
        // The next attempt uses what it read.
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "alpha and beta"}),
        );
    let world = World::reading(llm, dir.path());
    let run = world.run(quick("What do the notes say?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(tool_calls(&world), 1, "the repeats were not run");
    let told = told(&world);
    assert!(
        told[2].contains("You already called read_file with exactly these arguments (call 1)"),
        "{told:#?}"
    );
    let retried = world
        .llm
        .requests()
        .iter()
        .filter(|r| r.role == CallRole::Executor)
        .filter_map(|r| r.messages.get(1))
        .any(|m| {
            m.content
                .contains("called read_file again with the same arguments")
        });
    assert!(
        retried,
        "the next attempt starts with the reason: {told:#?}"
    );
    assert_eq!(world.plan().subtasks()[0].outcome(), Some("alpha and beta"));
}

#[tokio::test]
async fn a_call_that_returns_what_an_earlier_one_returned_is_pointed_out_and_a_second_time_fails_the_attempt(
) {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.txt", "b.txt", "c.txt"] {
        std::fs::write(dir.path().join(name), "same words\n").unwrap();
    }
    let llm = worker()
        .push_json(CallRole::Executor, read("a.txt"))
        .push_json(CallRole::Executor, read("b.txt"))
        .push_json(CallRole::Executor, read("c.txt"))
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "the same words"}),
        );
    let world = World::reading(llm, dir.path());
    let run = world.run(quick("What do the files say?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(tool_calls(&world), 3, "different calls run");
    let told = told(&world);
    assert!(
        told[2].contains("This is exactly what call 1 of read_file returned"),
        "{told:#?}"
    );
    assert!(
        !told[1].contains("exactly what call"),
        "a new result is not a repeat: {told:#?}"
    );
    let retried = world
        .llm
        .requests()
        .iter()
        .filter(|r| r.role == CallRole::Executor)
        .filter_map(|r| r.messages.get(1))
        .any(|m| m.content.contains("read_file returned the same as before"));
    assert!(
        retried,
        "the next attempt starts with the reason: {told:#?}"
    );
}

/// A `run_python` whose code fails on a line that is not Python and
/// prints 12 otherwise.
struct StrictPython;

#[async_trait::async_trait]
impl ToolBox for StrictPython {
    fn specs(&self) -> Vec<agent::protocol::ToolSpec> {
        vec![agent::protocol::ToolSpec {
            name: "run_python".into(),
            description: "Runs Python.".into(),
            parameters: json!({"type": "object", "properties": {"code": {"type": "string"}}}),
        }]
    }

    async fn call(&self, _name: &str, arguments: &serde_json::Value) -> Result<String, ToolError> {
        let code = arguments["code"].as_str().unwrap_or_default();
        Ok(if code.contains("Goal:") {
            "exit status 1 (0.01 s)\n--- stdout ---\n(empty)\n--- stderr ---\n  File \"<code>\", line 2\n    Goal: count\n        ^\nSyntaxError: invalid syntax".into()
        } else {
            "exit status 0 (0.01 s)\n--- stdout ---\n12".into()
        })
    }
}

fn python(code: &str) -> serde_json::Value {
    json!({"action": "run_python", "arguments": {"code": code}})
}

#[tokio::test]
async fn a_subtask_failed_right_after_its_code_failed_is_sent_back_once_to_fix_the_code() {
    let llm = worker()
        .push_json(CallRole::Executor, python("x = 1\nGoal: count"))
        .push_json(
            CallRole::Executor,
            json!({"action": "fail", "reason": "The code contains a syntax error."}),
        )
        .push_json(CallRole::Executor, python("print(12)"))
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "There are 12."}),
        );
    let world = World::with_agent(llm, |agent| {
        agent.with_tools(|_| Toolset::new(vec![Arc::new(StrictPython)]))
    });
    let run = world.run(quick("Count them")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.plan().subtasks()[0].outcome(), Some("There are 12."));
    let told = told(&world);
    assert!(
        told[2].contains("a code error is yours to fix") && told[2].contains("SyntaxError"),
        "{told:#?}"
    );
    assert_eq!(
        world.llm.calls(CallRole::Executor),
        4,
        "one attempt: the fail was not taken"
    );
}

#[tokio::test]
async fn a_subtask_failed_after_its_code_ran_well_is_failed_at_once() {
    let llm = worker()
        .push_json(CallRole::Executor, python("print(12)"))
        .push_json(
            CallRole::Executor,
            json!({"action": "fail", "reason": "not what was asked"}),
        );
    let world = World::with_agent(llm, |agent| {
        agent.with_tools(|_| Toolset::new(vec![Arc::new(StrictPython)]))
    });
    let mut c = quick("Count them");
    c.max_attempts = 1;
    world.start(c).await;
    world.wait_run(|r| r.state == RunState::Paused).await;
    assert_eq!(
        world.plan().subtasks()[0].state(),
        plan_engine::SubtaskState::Failed
    );
    let told = told(&world);
    assert!(
        !told.iter().any(|m| m.contains("yours to fix")),
        "{told:#?}"
    );
    assert_eq!(world.llm.calls(CallRole::Executor), 2, "{told:#?}");
}
