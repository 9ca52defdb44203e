//! What goes wrong: rate limits and refusals, unreadable answers, a list
//! growing to its cap, a crash, a growing plan, a plan abandoned early.

use std::time::Duration;

use crate::support::*;
use agent::llm::{CallRole, ErrorClass, LlmError, Reply};
use agent::{ModeChoice, RunEntry, RunState};
use plan_engine::{Mode, Op, PlanState, SubtaskId, SubtaskState};
use serde_json::json;

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
    assert!(
        !entries
            .iter()
            .any(|e| matches!(e, RunEntry::SubtaskRetry { .. } | RunEntry::Recovery { .. })),
        "a model that refuses the key is not tried again by the agent: a person must fix it"
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
    // One attempt: the agent's own retries are the failure stories'.
    c.max_attempts = 1;
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
    // New names each time: the same TODO again would be refused
    // (run_model::adaptation::same_step), which is not this story.
    let rounds = std::sync::atomic::AtomicUsize::new(0);
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("start", &[])]))
        .responder(move |request| match request.role {
            // Near the cap, the model drops the last TODO (as told to).
            CallRole::Adapter if request.messages[0].content.contains("nearly full") => {
                let listed: u32 = request.messages[1]
                    .content
                    .split_once("TODO list (")
                    .and_then(|(_, rest)| rest.split(' ').next()?.parse().ok())
                    .unwrap_or(1);
                Reply::Json(json!({
                    "drop": [listed], "needs_update": false, "reason": "covered by the others",
                    "new_todos": []
                }))
            }
            CallRole::Adapter => {
                let n = rounds.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Reply::Json(json!({
                    "drop": [], "needs_update": true, "reason": "more",
                    "new_todos": [{"name": format!("more {n}a"), "description": ""}, {"name": format!("more {n}b"), "description": ""}, {"name": format!("more {n}c"), "description": ""}]
                }))
            }
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
    // Adds stop at the compaction mark (16 of 20), and the model's drop
    // is carried out: the last TODO is skipped, the rest done.
    assert_eq!(plan.subtasks().len(), 16);
    let skipped: Vec<_> = plan
        .subtasks()
        .iter()
        .filter(|s| s.state() == SubtaskState::Skipped)
        .map(|s| s.id())
        .collect();
    assert_eq!(skipped, [SubtaskId(16)], "compaction dropped a TODO");
    assert!(world.entries().iter().any(|e| matches!(
        e,
        RunEntry::PlanAdjusted { reason, changes: 1 } if reason == "covered by the others"
    )));
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
        let job = agent::roles::executor::Job {
            task: "a big task".into(),
            said: "a big task".into(),
            plan: plan.into(),
            subtask: SubtaskId(1),
            offered: agent::protocol::Actions {
                add_subtask: true,
                ask: true,
            },
            max_turns: 8,
            people_changes: vec![],
            earlier_failures: Vec::new(),
            taught: String::new(),
            written: false,
            material: Vec::new(),
            inputs: Vec::new(),
        };
        sizes.push(agent::roles::executor::brief(&job).len());
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

/// Watches the executor's model calls: how many are in flight at most,
/// the order they start and end in, and whether the first call held back
/// saw a second one arrive while it waited (it waits at most 2 s).
struct Gate {
    inner: std::sync::Arc<agent::ScriptedLlm>,
    seen: std::sync::Mutex<GateSeen>,
}

#[derive(Default)]
struct GateSeen {
    in_flight: usize,
    max: usize,
    events: Vec<String>,
    started: usize,
    held: bool,
    overlapped: Option<bool>,
}

#[async_trait::async_trait]
impl agent::Llm for Gate {
    async fn chat(
        &self,
        request: &agent::llm::ChatRequest,
    ) -> Result<agent::llm::ChatReply, LlmError> {
        if request.role != CallRole::Executor {
            return self.inner.chat(request).await;
        }
        let name = subtask_name(request).unwrap_or_default();
        let hold = {
            let mut seen = self.seen.lock().unwrap();
            seen.in_flight += 1;
            seen.max = seen.max.max(seen.in_flight);
            seen.events.push(format!("start {name}"));
            seen.started += 1;
            !std::mem::replace(&mut seen.held, true)
        };
        if hold {
            // Held (so in flight) until another call starts: then two are
            // in flight at once.
            let waited = tokio::time::timeout(Duration::from_secs(2), async {
                while self.seen.lock().unwrap().started < 2 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
            .await;
            self.seen.lock().unwrap().overlapped = Some(waited.is_ok());
        } else {
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        let reply = self.inner.chat(request).await;
        let mut seen = self.seen.lock().unwrap();
        seen.in_flight -= 1;
        seen.events.push(format!("end {name}"));
        reply
    }

    fn model(&self, role: CallRole) -> String {
        self.inner.model(role)
    }
}

/// A super-step runs its ready subtasks' model calls at once: the first
/// executor call is held until a second is in flight (provably
/// concurrent), never more than `max_parallel` although four are ready,
/// and the subtask after the barrier starts only when all four have ended.
/// With one model call allowed at a time (`PLANBOARD_LLM_CONCURRENCY=1`)
/// the same plan's calls never overlap.
#[tokio::test]
async fn a_super_step_runs_its_calls_at_once_within_max_parallel_and_the_concurrency_limit() {
    for concurrency in [8, 1] {
        let gate = std::sync::Arc::new(std::sync::Mutex::new(None::<std::sync::Arc<Gate>>));
        let slot = gate.clone();
        let llm = worker().push_json(
            CallRole::Planner,
            plan_json(&[
                ("a", &[]),
                ("b", &[]),
                ("c", &[]),
                ("d", &[]),
                ("merge", &[1, 2, 3, 4]),
            ]),
        );
        let world = World::wrapped(
            llm,
            move |inner| {
                let g = std::sync::Arc::new(Gate {
                    inner,
                    seen: Default::default(),
                });
                *slot.lock().unwrap() = Some(g.clone());
                g
            },
            concurrency,
        );
        let mut c = config("Four checks, then merge");
        c.mode = ModeChoice::Complex;
        c.max_parallel = 2;
        let run = world.run(c).await;
        assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
        let g = gate.lock().unwrap().clone().unwrap();
        let seen = g.seen.lock().unwrap();
        let merge_start = seen.events.iter().position(|e| e == "start merge").unwrap();
        for name in ["a", "b", "c", "d"] {
            let end = seen
                .events
                .iter()
                .position(|e| *e == format!("end {name}"))
                .unwrap();
            assert!(end < merge_start, "the barrier: {:?}", seen.events);
        }
        if concurrency == 8 {
            assert_eq!(
                seen.overlapped,
                Some(true),
                "two calls in flight at once: {:?}",
                seen.events
            );
            assert_eq!(
                seen.max, 2,
                "max_parallel 2 with four ready: {:?}",
                seen.events
            );
        } else {
            assert_eq!(seen.overlapped, Some(false), "{:?}", seen.events);
            assert_eq!(seen.max, 1, "one model call at a time: {:?}", seen.events);
        }
    }
}

/// The emergent list's cap is exact: each executor adds one TODO while it
/// works, so the list grows by one per step until it holds exactly 20; the
/// 21st is refused by the plan in the engine's words (told to the model,
/// which goes on with its own subtask), and the run still finishes.
#[tokio::test]
async fn an_emergent_list_fills_to_exactly_its_cap_and_the_next_todo_is_refused() {
    let found = std::sync::atomic::AtomicUsize::new(0);
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("start", &[])]))
        .responder(move |request| match request.role {
            // First turn: add a TODO; then complete the own subtask.
            CallRole::Executor if request.messages.len() <= 2 => Reply::Json(json!({
                "action": "add_subtask",
                "name": format!("found {}", found.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1),
                "description": "more to look at"
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
    assert_eq!(plan.subtasks().len(), 20, "exactly the cap");
    assert!(plan
        .subtasks()
        .iter()
        .all(|s| s.state() == SubtaskState::Done));
    let refused = world
        .llm
        .requests()
        .iter()
        .filter(|r| {
            r.role == CallRole::Executor
                && r.messages
                    .iter()
                    .any(|m| m.content.contains("The plan refused the new subtask"))
        })
        .count();
    assert!(refused >= 1, "the 21st TODO was refused and the model told");
}

/// Inside a run, what the model's server refuses for good — quota, a 400,
/// a prompt too long for its context — fails the subtask at once and waits
/// for a person (no call retry, no attempt again); a server error is
/// retried by the call layer until its retries run out (3 calls in all),
/// and then goes to a person the same way.
#[tokio::test(start_paused = true)]
async fn quota_400_and_context_too_long_go_to_a_person_at_once_and_server_errors_after_their_retries(
) {
    for (class, calls, retries) in [
        (ErrorClass::Quota, 1, 0),
        (ErrorClass::BadRequest, 1, 0),
        (ErrorClass::ContextTooLong, 1, 0),
        (ErrorClass::Server, 3, 2),
    ] {
        let mut llm = worker().push_json(CallRole::Planner, plan_json(&[("one", &[])]));
        for _ in 0..calls {
            llm = llm.push(
                CallRole::Executor,
                Reply::Error(LlmError::new(class, format!("refused: {class:?}"))),
            );
        }
        let world = World::new(llm);
        let mut c = config("One step");
        c.mode = ModeChoice::Simple;
        let driving = world.start(c).await;
        let run = world.wait_run(|r| r.state == RunState::Paused).await;
        assert!(
            run.reason
                .clone()
                .unwrap()
                .contains(&format!("refused: {class:?}")),
            "{class:?}: {:?}",
            run.reason
        );
        assert_eq!(world.llm.calls(CallRole::Executor), calls, "{class:?}");
        let entries = world.entries();
        let scheduled = entries
            .iter()
            .filter(|e| matches!(e, RunEntry::RetryScheduled { .. }))
            .count();
        assert_eq!(scheduled, retries, "{class:?}");
        assert!(
            !entries
                .iter()
                .any(|e| matches!(e, RunEntry::SubtaskRetry { .. } | RunEntry::Recovery { .. })),
            "{class:?}: not the agent's to try again"
        );
        assert_eq!(world.plan().subtasks()[0].state(), SubtaskState::Failed);
        driving.abort();
    }
}

/// A tool whose server is down for good: every call a transient failure.
struct Down {
    calls: std::sync::atomic::AtomicU32,
}

#[async_trait::async_trait]
impl agent::tools::ToolBox for Down {
    fn specs(&self) -> Vec<agent::protocol::ToolSpec> {
        vec![agent::protocol::ToolSpec {
            name: "lookup".into(),
            description: "Looks a word up.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }]
    }

    async fn call(
        &self,
        _name: &str,
        _arguments: &serde_json::Value,
    ) -> Result<String, agent::tools::ToolError> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Err(agent::tools::ToolError {
            message: "503 from the dictionary".into(),
            retryable: true,
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_tool_failing_for_a_moment_is_tried_again_after_doubling_waits_within_the_runs_attempts()
{
    let down = std::sync::Arc::new(Down {
        calls: std::sync::atomic::AtomicU32::new(0),
    });
    let tools = down.clone();
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("look", &[])]))
        .push_json(
            CallRole::Executor,
            json!({"action": "lookup", "arguments": {}}),
        );
    let world = World::with_agent(llm, move |agent| {
        agent.with_tools(move |_| agent::tools::Toolset::new(vec![tools.clone()]))
    });
    let mut c = config("Look a word up");
    c.mode = ModeChoice::Simple;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let retries: Vec<(u32, u64)> = world
        .entries()
        .iter()
        .filter_map(|e| match e {
            RunEntry::ToolRetryScheduled {
                attempt, delay_ms, ..
            } => Some((*attempt, *delay_ms)),
            _ => None,
        })
        .collect();
    // The run's retry policy (3 attempts, 1 s doubling), without jitter.
    assert_eq!(retries, [(1, 1_000), (2, 2_000)]);
    assert_eq!(
        down.calls.load(std::sync::atomic::Ordering::SeqCst),
        3,
        "3 attempts in all, then the model reads the failure"
    );
}

/// A tool that never returns: the process "stops" while it runs.
struct Hangs;

#[async_trait::async_trait]
impl agent::tools::ToolBox for Hangs {
    fn specs(&self) -> Vec<agent::protocol::ToolSpec> {
        vec![agent::protocol::ToolSpec {
            name: "fetch_url".into(),
            description: "fetches".into(),
            parameters: json!({"type": "object", "properties": {"url": {"type": "string"}}}),
        }]
    }

    async fn call(
        &self,
        _name: &str,
        _arguments: &serde_json::Value,
    ) -> Result<String, agent::tools::ToolError> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn the_same_call_running_at_two_stops_pauses_the_run_for_a_person_instead_of_a_third() {
    // Every executor turn calls the same page (the model keys its
    // arguments in another order each time: the same call all the same).
    let turn = std::sync::atomic::AtomicUsize::new(0);
    let llm = worker()
        .push_json(CallRole::Planner, plan_json(&[("read the page", &[])]))
        .responder(move |request| {
            if request.role == CallRole::Executor {
                let n = turn.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let arguments = if n.is_multiple_of(2) {
                    json!({"url": "https://big.example/page", "x": 1})
                } else {
                    json!({"x": 1, "url": "https://big.example/page"})
                };
                return agent::llm::Reply::Json(
                    json!({"action": "fetch_url", "arguments": arguments}),
                );
            }
            answer(request)
        });
    let world = World::with_agent(llm, |agent| {
        agent.with_tools(|_| {
            let hangs: std::sync::Arc<dyn agent::tools::ToolBox> = std::sync::Arc::new(Hangs);
            agent::tools::Toolset::new(vec![hangs])
        })
    });
    let started = |world: &World| {
        world
            .entries()
            .iter()
            .filter(|e| matches!(e, RunEntry::ToolStarted { .. }))
            .count()
    };
    let wait_started = |n: usize| {
        let world = &world;
        async move {
            tokio::time::timeout(Duration::from_secs(10), async {
                while started(world) < n {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
            .await
            .expect("the call started")
        }
    };
    // Stopped while the call runs; the restart makes the same call, and
    // the process stops again.
    let driving = world.start(simple("Read the big page")).await;
    wait_started(1).await;
    driving.abort();
    let _ = driving.await;
    let stored = world.stored_run();
    assert_eq!(stored.state, RunState::Running);
    let agent = world.agent.clone();
    let again = tokio::spawn(async move { agent.drive(stored).await });
    wait_started(2).await;
    again.abort();
    let _ = again.await;
    let interrupted: Vec<u32> = world
        .entries()
        .iter()
        .filter_map(|e| match e {
            RunEntry::ToolInterrupted { times, .. } => Some(*times),
            _ => None,
        })
        .collect();
    assert_eq!(
        interrupted,
        [1],
        "the first stop was found at the first restart"
    );
    // The third start finds the same call stopped twice: it waits.
    let agent = world.agent.clone();
    let stored = world.stored_run();
    let driving = tokio::spawn(async move { agent.drive(stored).await });
    let run = world.wait_run(|r| r.state == RunState::Paused).await;
    let reason = run.reason.unwrap_or_default();
    assert!(
        reason.contains("fetch_url was running in subtask #1 when the server stopped, 2 times"),
        "{reason}"
    );
    assert_eq!(started(&world), 2, "the call was not made a third time");
    assert_eq!(world.plan().state(), PlanState::Paused);
    driving.abort();
}
