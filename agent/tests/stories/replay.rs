//! Replay (issue 56): a run planned and worked again on another model,
//! its tool calls answered from the recorded run's log when they are the
//! same call; a call the recording does not hold stops a replay that
//! stops (the run pauses with the call named) or is made live; a replay
//! from a subtask keeps the recorded results before it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use agent::host::Host;
use agent::llm::CallRole;
use agent::protocol::ToolSpec;
use agent::tools::{ToolBox, ToolError, Toolset};
use agent::{Agent, RunEntry, RunRecord, RunState};
use plan_engine::{Op, SubtaskId, SubtaskState};
use run_model::{LogStep, ReplayOf, Unmatched};
use serde_json::{json, Value};

/// A tool that answers from a table and counts the calls that ran.
#[derive(Default)]
struct Lookup {
    ran: AtomicUsize,
}

#[async_trait::async_trait]
impl ToolBox for Lookup {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "lookup".into(),
            description: "looks a key up".into(),
            parameters: json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}),
        }]
    }

    async fn call(&self, _name: &str, arguments: &Value) -> Result<String, ToolError> {
        self.ran.fetch_add(1, Ordering::SeqCst);
        Ok(format!(
            "the value of {}",
            arguments["key"].as_str().unwrap_or("?")
        ))
    }
}

fn lookup(key: &str) -> Value {
    json!({"action": "lookup", "arguments": {"key": key}})
}

/// An agent on `world`'s host whose model is `llm` and whose one tool is
/// `tool` (the recorded run's agent and its replay's share them).
fn agent_on(world: &World, llm: agent::ScriptedLlm, tool: &Arc<Lookup>) -> Arc<Agent> {
    let tool = tool.clone();
    Arc::new(
        Agent::new(world.host.clone(), Arc::new(llm), 8)
            .with_tools(move |_| Toolset::new(vec![tool.clone() as Arc<dyn ToolBox>])),
    )
}

async fn run_to_end(agent: &Arc<Agent>, record: RunRecord) -> RunRecord {
    let agent = agent.clone();
    tokio::time::timeout(
        Duration::from_secs(20),
        async move { agent.drive(record).await },
    )
    .await
    .expect("the run ends")
}

async fn wait_state(world: &World, run: agent::RunId, state: RunState) -> RunRecord {
    for _ in 0..4000 {
        if let Some(record) = world.host.run(run).filter(|r| r.state == state) {
            return record;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("run {run} never got to {state}: {:#?}", world.host.run(run));
}

fn steps(world: &World, run: agent::RunId) -> Vec<LogStep> {
    world
        .host
        .entries(run)
        .iter()
        .filter_map(LogStep::of)
        .collect()
}

fn replayed(world: &World, run: agent::RunId) -> Vec<(String, bool)> {
    world
        .host
        .entries(run)
        .iter()
        .filter_map(|e| match e {
            RunEntry::ToolCall {
                arguments,
                replayed,
                ..
            } => Some((
                arguments["key"].as_str().unwrap_or("?").to_string(),
                *replayed,
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_replay_answers_the_recorded_calls_stops_at_its_second_models_one_different_call_and_goes_on_live_when_resumed(
) {
    let tool = Arc::new(Lookup::default());
    let first = worker()
        .push_json(CallRole::Planner, plan_json(&[("look up", &[])]))
        .push_json(CallRole::Executor, lookup("a"))
        .push_json(CallRole::Executor, lookup("b"));
    let world = World::with_agent(first, {
        let tool = tool.clone();
        move |agent| agent.with_tools(move |_| Toolset::new(vec![tool.clone() as Arc<dyn ToolBox>]))
    });
    let recorded = world.run(simple("Look a and b up")).await;
    assert_eq!(recorded.state, RunState::Done, "{:?}", recorded.reason);
    assert_eq!(tool.ran.load(Ordering::SeqCst), 2);

    // The second model makes the first call again, then another one.
    let second = worker()
        .push_json(CallRole::Planner, plan_json(&[("look up", &[])]))
        .push_json(CallRole::Executor, lookup("a"))
        .push_json(CallRole::Executor, lookup("c"))
        .push_json(CallRole::Executor, lookup("a"))
        .push_json(CallRole::Executor, lookup("c"));
    let agent = agent_on(&world, second, &tool);
    let mut config = simple("Look a and b up");
    config.memory = false;
    config.replay = Some(ReplayOf {
        run: recorded.id,
        unmatched: Unmatched::Stop,
        from: None,
    });
    let record = agent.start(config, "ada").await.unwrap();
    let replay = record.id;
    let driving = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.drive(record).await })
    };
    let paused = wait_state(&world, replay, RunState::Paused).await;
    let why = paused.reason.clone().unwrap_or_default();
    assert!(
        why.contains(&recorded.id.to_string())
            && why.contains("lookup")
            && why.contains(r#""key":"c""#),
        "the reason names the call: {why}"
    );
    assert_eq!(
        tool.ran.load(Ordering::SeqCst),
        2,
        "nothing ran: `a` was answered"
    );
    assert_eq!(replayed(&world, replay), [("a".to_string(), true)]);
    let plan_id = paused.plan_id.unwrap();
    let plan = world.host.plan(plan_id).await.unwrap();
    assert_eq!(plan.subtasks()[0].state(), SubtaskState::Todo, "released");
    // The compare page's first divergence: the executor's reply that asks
    // for `c` where the recorded one asked for `b`.
    let divergence =
        run_model::first_divergence(&steps(&world, recorded.id), &steps(&world, replay))
            .expect("the logs part");
    match (&divergence.a, &divergence.b) {
        (Some(LogStep::Model { reply: a, .. }), Some(LogStep::Model { role, reply: b, .. })) => {
            assert_eq!(*role, CallRole::Executor);
            assert!(a.contains("\"b\"") && b.contains("\"c\""), "{a} / {b}");
        }
        other => panic!("the divergence is the executor's reply: {other:?}"),
    }

    // Resumed: the call is made live, and the recorded one answered again.
    world.person(plan_id, vec![Op::Resume {}]).await;
    let done = tokio::time::timeout(Duration::from_secs(20), driving)
        .await
        .expect("the replay ends")
        .unwrap();
    assert_eq!(done.state, RunState::Done, "{:?}", done.reason);
    assert_eq!(tool.ran.load(Ordering::SeqCst), 3, "only `c` ran");
    assert_eq!(
        replayed(&world, replay),
        [
            ("a".to_string(), true),
            ("a".to_string(), true),
            ("c".to_string(), false)
        ],
        "the released attempt gave its recorded answer back"
    );
    assert_eq!(
        done.config.replay.map(|r| r.unmatched),
        Some(Unmatched::Live),
        "kept live on the row, so a restart keeps it"
    );
}

#[tokio::test]
async fn a_replay_from_a_subtask_keeps_the_results_before_it_and_answers_the_rest_from_the_recording(
) {
    let tool = Arc::new(Lookup::default());
    let first = worker()
        .push_json(
            CallRole::Planner,
            plan_json(&[("first", &[]), ("second", &[1])]),
        )
        .push_json(CallRole::Executor, lookup("one"))
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "first done"}),
        )
        .push_json(CallRole::Executor, lookup("two"));
    let world = World::with_agent(first, {
        let tool = tool.clone();
        move |agent| agent.with_tools(move |_| Toolset::new(vec![tool.clone() as Arc<dyn ToolBox>]))
    });
    let recorded = world.run(simple("Look one and two up")).await;
    assert_eq!(recorded.state, RunState::Done, "{:?}", recorded.reason);
    assert_eq!(tool.ran.load(Ordering::SeqCst), 2);
    let source = world.host.plan(recorded.plan_id.unwrap()).await.unwrap();

    let second = worker().push_json(CallRole::Executor, lookup("two"));
    let agent = agent_on(&world, second, &tool);
    let mut config = recorded.config.clone();
    config.memory = false;
    config.replay = Some(ReplayOf {
        run: recorded.id,
        unmatched: Unmatched::Stop,
        from: Some(SubtaskId(2)),
    });
    let id = uuid::Uuid::new_v4();
    let record = agent
        .start_again(id, config, "ada", recorded.id, &source, SubtaskId(2))
        .await
        .unwrap();
    let done = run_to_end(&agent, record).await;
    assert_eq!(done.state, RunState::Done, "{:?}", done.reason);
    assert_eq!(tool.ran.load(Ordering::SeqCst), 2, "nothing ran again");
    assert_eq!(replayed(&world, id), [("two".to_string(), true)]);
    let plan = world.host.plan(done.plan_id.unwrap()).await.unwrap();
    assert_eq!(plan.subtasks()[0].outcome(), Some("first done"), "kept");
}

#[tokio::test]
async fn a_replay_that_makes_unmatched_calls_live_runs_them_and_answers_the_rest() {
    let tool = Arc::new(Lookup::default());
    let first = worker()
        .push_json(CallRole::Planner, plan_json(&[("look up", &[])]))
        .push_json(CallRole::Executor, lookup("a"));
    let world = World::with_agent(first, {
        let tool = tool.clone();
        move |agent| agent.with_tools(move |_| Toolset::new(vec![tool.clone() as Arc<dyn ToolBox>]))
    });
    let recorded = world.run(simple("Look a up")).await;
    let second = worker()
        .push_json(CallRole::Planner, plan_json(&[("look up", &[])]))
        .push_json(CallRole::Executor, lookup("a"))
        .push_json(CallRole::Executor, lookup("z"));
    let agent = agent_on(&world, second, &tool);
    let mut config = simple("Look a up");
    config.replay = Some(ReplayOf {
        run: recorded.id,
        unmatched: Unmatched::Live,
        from: None,
    });
    let record = agent.start(config, "ada").await.unwrap();
    let done = run_to_end(&agent, record).await;
    assert_eq!(done.state, RunState::Done, "{:?}", done.reason);
    assert_eq!(
        tool.ran.load(Ordering::SeqCst),
        2,
        "`a` once, then `z` live"
    );
    assert_eq!(
        replayed(&world, done.id),
        [("a".to_string(), true), ("z".to_string(), false)]
    );
}
