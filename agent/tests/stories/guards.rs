//! Action guards: a tool whose policy is `ask` waits for a person, who
//! approves, edits or denies the call; the decision is on the run log and
//! the model reads what happened. A question nobody answered before a
//! restart expires. A call a grant of the run covers runs without asking,
//! until the grant is revoked.

use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use agent::host::Host;
use agent::llm::CallRole;
use agent::run::{ToolPolicy, Verdict};
use agent::tools::{files::FileTools, ToolBox, Toolset};
use agent::{ModeChoice, RunEntry, RunState};
use serde_json::{json, Value};

/// A world whose agent writes files in `dir`, `write_file` guarded.
fn guarded_world(llm: agent::ScriptedLlm, dir: &std::path::Path) -> World {
    let root = dir.to_path_buf();
    World::with_agent(llm, move |agent| {
        agent.with_tools(move |_| {
            let files: Arc<dyn ToolBox> = Arc::new(FileTools::new(&root).unwrap());
            Toolset::new(vec![files]).with_policies([("write_file".to_string(), ToolPolicy::Ask)])
        })
    })
}

fn write(content: &str) -> Value {
    json!({"action": "write_file", "arguments": {"path": "out.txt", "content": content}})
}

fn one_step(task: &str) -> agent::RunConfig {
    let mut c = config(task);
    c.mode = ModeChoice::Simple;
    c
}

/// Waits for the run's first open guarded call and returns its id.
async fn asked(world: &World) -> (String, Value) {
    for _ in 0..4000 {
        if let Some((call, arguments)) = world.entries().iter().find_map(|e| match e {
            RunEntry::ToolApproval {
                call, arguments, ..
            } => Some((call.clone(), arguments.clone())),
            _ => None,
        }) {
            return (call, arguments);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("no guarded call was asked: {:#?}", world.entries());
}

async fn decide(
    world: &World,
    call: &str,
    verdict: Verdict,
    reason: Option<&str>,
    arguments: Option<Value>,
) {
    let run = world.stored_run().id;
    world
        .host
        .log(
            run,
            RunEntry::ToolDecision {
                call: call.to_string(),
                verdict,
                by: "ada".into(),
                reason: reason.map(str::to_string),
                arguments,
            },
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn an_ask_tool_waits_for_a_person_and_runs_once_approved() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("save", &[])]))
        .push_json(CallRole::Executor, write("hello"));
    let world = guarded_world(llm, dir.path());
    let driving = world.start(one_step("Save a greeting")).await;
    let (call, arguments) = asked(&world).await;
    assert_eq!(
        arguments["content"], "hello",
        "the exact arguments are shown"
    );
    // Nothing ran while it waited, and the run is still running.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!dir.path().join("out.txt").exists());
    assert_eq!(world.run_state(), RunState::Running);
    decide(&world, &call, Verdict::Approved, None, None).await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "hello"
    );
    let kinds: Vec<String> = world
        .entries()
        .iter()
        .map(|e| e.kind().to_string())
        .collect();
    let at = |k: &str| kinds.iter().position(|x| x == k).unwrap();
    assert!(at("tool_approval") < at("tool_decision") && at("tool_decision") < at("tool_call"));
}

#[tokio::test]
async fn a_denied_call_is_not_run_and_the_model_reads_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("save", &[])]))
        .push_json(CallRole::Executor, write("rm -rf"));
    let world = guarded_world(llm, dir.path());
    let driving = world.start(one_step("Save a greeting")).await;
    let (call, _) = asked(&world).await;
    decide(
        &world,
        &call,
        Verdict::Denied,
        Some("not in this folder"),
        None,
    )
    .await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert!(
        !dir.path().join("out.txt").exists(),
        "a denied call never runs"
    );
    let next = world
        .llm
        .requests()
        .into_iter()
        .filter(|r| r.role == CallRole::Executor)
        .nth(1)
        .expect("the executor went on");
    let said = next.messages.last().unwrap().content.clone();
    assert!(
        said.contains("denied the call of write_file: not in this folder"),
        "{said}"
    );
    assert!(!world
        .entries()
        .iter()
        .any(|e| matches!(e, RunEntry::ToolCall { .. })));
}

#[tokio::test]
async fn an_edited_call_runs_with_the_persons_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("save", &[])]))
        .push_json(CallRole::Executor, write("helo"));
    let world = guarded_world(llm, dir.path());
    let driving = world.start(one_step("Save a greeting")).await;
    let (call, _) = asked(&world).await;
    let fixed = json!({"path": "out.txt", "content": "hello"});
    decide(&world, &call, Verdict::Edited, None, Some(fixed)).await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "hello"
    );
    let next = world
        .llm
        .requests()
        .into_iter()
        .filter(|r| r.role == CallRole::Executor)
        .nth(1)
        .unwrap();
    assert!(next
        .messages
        .last()
        .unwrap()
        .content
        .contains("A person edited the arguments"));
}

#[tokio::test]
async fn a_question_open_when_the_run_restarts_expires() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("save", &[])]))
        .push_json(CallRole::Executor, write("hello"));
    let world = guarded_world(llm, dir.path());
    let driving = world.start(one_step("Save a greeting")).await;
    let (call, _) = asked(&world).await;
    // The process dies while the question is open...
    driving.abort();
    let _ = driving.await;
    assert_eq!(
        world
            .host
            .open_tool_calls(world.stored_run().id)
            .await
            .unwrap(),
        std::slice::from_ref(&call)
    );
    // ...and the run is picked up again.
    let again = world.agent.clone();
    let record = world.stored_run();
    let _redriving = tokio::spawn(async move { again.drive(record).await });
    for _ in 0..400 {
        if world.entries().iter().any(|e| {
            matches!(e,
            RunEntry::ToolDecision { call: c, verdict: Verdict::Expired, .. } if *c == call)
        }) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the open question did not expire: {:#?}", world.entries());
}

#[tokio::test]
async fn a_subtask_that_names_a_tool_but_is_completed_without_it_gets_one_checking_turn() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the answer is 42").unwrap();
    let plan = json!({"title": "t", "subtasks": [
        {"name": "look it up", "description": "with read_file, read notes.txt", "expected_outcome": "the number", "depends_on": []},
        {"name": "say it", "description": "say the number", "expected_outcome": "", "depends_on": []}
    ]});
    let llm = worker()
        .push_json(CallRole::Planner, plan)
        // From its head first; after the check, the tool; then the result.
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "it is 7"}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "read_file", "arguments": {"path": "notes.txt"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "42"}),
        );
    let root = dir.path().to_path_buf();
    let world = World::with_agent(llm, move |agent| {
        agent.with_tools(move |_| {
            let files: Arc<dyn ToolBox> = Arc::new(FileTools::new(&root).unwrap());
            Toolset::new(vec![files])
        })
    });
    let run = world.run(one_step("Find the number")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    assert_eq!(plan.subtasks()[0].outcome(), Some("42"));
    let executor: Vec<_> = world
        .llm
        .requests()
        .into_iter()
        .filter(|r| r.role == CallRole::Executor)
        .collect();
    let checked = executor[1].messages.last().unwrap().content.clone();
    assert!(checked.contains("names the tool read_file"), "{checked}");
    // The planner was told the tools and to name them.
    let planner = world
        .llm
        .requests()
        .into_iter()
        .find(|r| r.role == CallRole::Planner)
        .unwrap();
    assert!(planner.messages[1].content.contains("- read_file:"));
    // "say it" names no tool: done at its first answer (4 executor calls
    // in all: three for the first subtask, one for the second).
    assert_eq!(executor.len(), 4);
}

/// The executor's call of `write_file` on `path`.
fn write_to(path: &str, content: &str) -> Value {
    json!({"action": "write_file", "arguments": {"path": path, "content": content}})
}

/// Waits for the run's guarded call number `n` (0-based) and returns its
/// id and arguments.
async fn asked_nth(world: &World, n: usize) -> (String, Value) {
    for _ in 0..4000 {
        let found = world
            .entries()
            .iter()
            .filter_map(|e| match e {
                RunEntry::ToolApproval {
                    call, arguments, ..
                } => Some((call.clone(), arguments.clone())),
                _ => None,
            })
            .nth(n);
        if let Some(found) = found {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("no guarded call #{n} was asked: {:#?}", world.entries());
}

#[tokio::test]
async fn a_granted_call_runs_without_asking_and_a_revoked_grant_asks_again() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("save", &[])]))
        .push_json(CallRole::Executor, write_to("a.txt", "one"))
        .push_json(CallRole::Executor, write_to("b.txt", "two"))
        .push_json(CallRole::Executor, write_to("a.txt", "three"));
    let world = guarded_world(llm, dir.path());
    let mut c = one_step("Save the notes");
    c.approval_required = true;
    let driving = world.start(c).await;
    let plan = world
        .wait_plan(|p| p.state() == plan_engine::PlanState::AwaitingApproval)
        .await;
    // Granted with the approval: calls on a* run without asking.
    let run = world.stored_run().id;
    let grant = world.host.grant_tool(run, "write_file", Some("a*"), "ada");
    world
        .person(plan.id(), vec![plan_engine::Op::Approve { comment: None }])
        .await;
    // b.txt is not covered: it asks, and a.txt ran meanwhile unasked.
    let (b, arguments) = asked_nth(&world, 0).await;
    assert_eq!(arguments["path"], "b.txt");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "one"
    );
    assert!(
        world.entries().iter().any(|e| matches!(
            e,
            RunEntry::ToolGranted { grant: g, by, .. } if *g == grant.id && by == "ada"
        )),
        "the log says which grant let it run"
    );
    // Revoked: the next call on a.txt asks again.
    world.host.revoke(grant.id, "ada");
    decide(&world, &b, Verdict::Approved, None, None).await;
    let (again, arguments) = asked_nth(&world, 1).await;
    assert_eq!(arguments["path"], "a.txt");
    assert_eq!(arguments["content"], "three");
    decide(&world, &again, Verdict::Approved, None, None).await;
    let run = driving.await.unwrap();
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "three"
    );
}
