//! The agent benchmark: planboard's own agent inside the real server
//! (SQLite, the one write path, the run log), its model a fake
//! OpenAI-compatible server over HTTP with a fixed latency per call.
//!
//! - parallel DAG: 20 independent subtasks, 200 ms per call,
//!   `max_parallel` 5; from approval to the last subtask done and to the
//!   run done (the answer call included), against the ideal 0.8 s;
//! - orchestration overhead: a zero-latency model, chains of 10 and 100
//!   subtasks; the time between one subtask's completion and the next one's
//!   (prompt building, database writes, events), p50/p99;
//! - scale: 200 concurrent runs of 10 subtasks at 100 ms per call; 1,000
//!   runs waiting for approval: resident memory and CPU while idle;
//! - prompt size: the executor's first message for plans of 10, 100 and
//!   1,000 subtasks.
//!
//! Run: `cargo bench -p server --bench agent` (release build).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use server::config::{Access, Config};

/// The fake model: answers by the schema asked for, after `latency`.
#[derive(Clone)]
struct Fake {
    latency: Duration,
    plan: Arc<Mutex<VecDeque<Value>>>,
    default_plan: Value,
}

async fn chat(State(fake): State<Fake>, Json(request): Json<Value>) -> axum::response::Response {
    use axum::response::IntoResponse;
    if !fake.latency.is_zero() {
        tokio::time::sleep(fake.latency).await;
    }
    let shape = request["response_format"]["json_schema"]["name"]
        .as_str()
        .unwrap_or("text");
    let content = match shape {
        "mode" => json!({"confidence": 1.0, "mode": "complex", "reason": "bench"}).to_string(),
        "plan" => fake
            .plan
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| fake.default_plan.clone())
            .to_string(),
        "action" => json!({"action": "complete", "result": "done"}).to_string(),
        "adapt" => {
            json!({"drop": [], "needs_change": false, "reason": "ok", "revise": []}).to_string()
        }
        "todo_update" => {
            json!({"drop": [], "needs_update": false, "reason": "ok", "new_todos": []}).to_string()
        }
        _ => "the answer".to_string(),
    };
    if request["stream"] != json!(true) {
        return Json(
            json!({"id": "x", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10}}),
        )
        .into_response();
    }
    // Streamed, as planboard asks by default: the text, the end with usage, [DONE].
    let chunk = |delta: Value, finish: Value, usage: Value| {
        json!({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": usage})
    };
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        chunk(json!({"content": content}), Value::Null, Value::Null),
        chunk(
            json!({}),
            json!("stop"),
            json!({"prompt_tokens": 100, "completion_tokens": 10})
        )
    );
    ([("content-type", "text/event-stream")], body).into_response()
}

fn plan_of(n: usize, chain: bool) -> Value {
    json!({"title": "bench", "subtasks": (1..=n).map(|i| json!({
        "name": format!("step {i}"), "description": "do it", "expected_outcome": "",
        "depends_on": if chain && i > 1 { vec![i - 1] } else { vec![] }
    })).collect::<Vec<_>>()})
}

async fn fake_model(latency: Duration, default_plan: Value) -> String {
    let fake = Fake {
        latency,
        plan: Arc::default(),
        default_plan,
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

struct Bench {
    services: server::Services,
    _dir: tempfile::TempDir,
}

async fn start(model_url: &str, concurrency: usize) -> Bench {
    let dir = tempfile::tempdir().unwrap();
    let mut llm = agent::LlmConfig::from_vars(|n| match n {
        "PLANBOARD_LLM_MODEL" => Some("fake".into()),
        "PLANBOARD_LLM_BASE_URL" => Some(model_url.into()),
        _ => None,
    })
    .unwrap()
    .unwrap();
    llm.concurrency = concurrency;
    let config = Config {
        lease: Duration::from_secs(3600),
        llm: Some(llm),
        workspaces: dir.path().join("ws"),
        ..Config::defaults(
            format!("sqlite://{}", dir.path().join("bench.db").display()),
            Access::Local {
                user: "bench".into(),
            },
        )
    };
    let services = server::start(&config).await.unwrap();
    Bench {
        services,
        _dir: dir,
    }
}

fn run_config(task: &str, approval: bool, parallel: u32) -> agent::RunConfig {
    agent::RunConfig {
        task: task.into(),
        mode: agent::ModeChoice::Complex,
        approval_required: approval,
        max_parallel: parallel,
        budget: agent::Budget {
            max_llm_calls: 100_000,
            ..agent::Budget::default()
        },
    }
}

async fn wait_state(b: &Bench, run: agent::RunId, state: agent::RunState) -> agent::RunRecord {
    loop {
        let view = b.services.runs.get(run).await.unwrap();
        if view.record.state == state {
            return view.record;
        }
        assert!(
            !view.record.state.is_finished(),
            "run ended as {:?}: {:?}",
            view.record.state,
            view.record.reason
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn parallel_dag() {
    let url = fake_model(Duration::from_millis(200), plan_of(20, false)).await;
    let b = start(&url, 8).await;
    let mut last_done = Vec::new();
    let mut run_done = Vec::new();
    for i in 0..3 {
        let view = b
            .services
            .runs
            .start(run_config(&format!("dag {i}"), true, 5), "bench")
            .await
            .unwrap();
        let run = view.record.id;
        let plan = view.record.plan_id.unwrap();
        wait_state(&b, run, agent::RunState::AwaitingApproval).await;
        let approved = Instant::now();
        b.services
            .plans
            .command(
                plan,
                &plan_engine::Op::Approve { comment: None }.into(),
                "bench",
            )
            .await
            .unwrap();
        let mut subtasks_done = None;
        loop {
            let (done, total) = b
                .services
                .plans
                .read(plan, |p| {
                    (p.count(plan_engine::SubtaskState::Done), p.subtasks().len())
                })
                .await
                .unwrap();
            if done == total && subtasks_done.is_none() {
                subtasks_done = Some(approved.elapsed());
            }
            if b.services.runs.get(run).await.unwrap().record.state == agent::RunState::Done {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        last_done.push(subtasks_done.unwrap().as_secs_f64());
        run_done.push(approved.elapsed().as_secs_f64());
    }
    last_done.sort_by(f64::total_cmp);
    run_done.sort_by(f64::total_cmp);
    println!(
        "parallel DAG (20 independent, 200 ms/call, max_parallel 5, ideal 0.8 s): approval → last subtask done {:.3} s ({:.3}× ideal), → run done with the answer call {:.3} s (median of 3)",
        last_done[1],
        last_done[1] / 0.8,
        run_done[1]
    );
}

async fn overhead() {
    let url = fake_model(Duration::ZERO, plan_of(10, true)).await;
    for n in [10usize, 100] {
        let b = start(&url, 8).await;
        // The planner's next answer: a chain of n.
        let fake_plan = plan_of(n, true);
        let _ = fake_plan;
        let url_n = fake_model(Duration::ZERO, plan_of(n, true)).await;
        let b = {
            drop(b);
            start(&url_n, 8).await
        };
        let view = b
            .services
            .runs
            .start(run_config(&format!("chain {n}"), false, 1), "bench")
            .await
            .unwrap();
        let run = view.record.id;
        let plan = view.record.plan_id.unwrap();
        wait_state(&b, run, agent::RunState::Done).await;
        let finished: Vec<chrono::DateTime<chrono::Utc>> = b
            .services
            .plans
            .read(plan, |p| {
                p.subtasks()
                    .iter()
                    .filter_map(|s| s.finished_at())
                    .collect()
            })
            .await
            .unwrap();
        let mut gaps: Vec<f64> = finished
            .windows(2)
            .map(|w| (w[1] - w[0]).num_microseconds().unwrap_or(0) as f64 / 1000.0)
            .collect();
        gaps.sort_by(f64::total_cmp);
        println!(
            "orchestration per subtask, chain of {n} (zero-latency model over HTTP, SQLite): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            percentile(&gaps, 0.5),
            percentile(&gaps, 0.99),
            gaps.last().copied().unwrap_or(0.0)
        );
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// User + system CPU time of this process, in clock ticks (1/100 s).
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    fields
        .get(11)
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
        + fields
            .get(12)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
}

async fn scale() {
    let url = fake_model(Duration::from_millis(100), plan_of(10, false)).await;
    let b = Arc::new(start(&url, 64).await);
    let started = Instant::now();
    let mut runs = Vec::new();
    for i in 0..200 {
        let view = b
            .services
            .runs
            .start(run_config(&format!("scale {i}"), false, 4), "bench")
            .await
            .unwrap();
        runs.push(view.record.id);
    }
    let mut failed = 0;
    for run in &runs {
        loop {
            let state = b.services.runs.get(*run).await.unwrap().record.state;
            if state == agent::RunState::Done {
                break;
            }
            if state.is_finished() || state == agent::RunState::Paused {
                failed += 1;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    println!(
        "scale: 200 concurrent runs × 10 subtasks at 100 ms/call (LLM concurrency 64): all settled in {:.1} s, {failed} not done",
        started.elapsed().as_secs_f64()
    );
    let before = rss_kib();
    for i in 0..1000 {
        b.services
            .runs
            .start(run_config(&format!("waiting {i}"), true, 4), "bench")
            .await
            .unwrap();
    }
    // Let them all classify and plan.
    loop {
        let waiting = b
            .services
            .runs
            .list(Some(agent::RunState::AwaitingApproval), None, 0, 1)
            .await
            .unwrap();
        let left = b
            .services
            .runs
            .list(Some(agent::RunState::Planning), None, 0, 1)
            .await
            .unwrap()
            .len()
            + b.services
                .runs
                .list(Some(agent::RunState::Classifying), None, 0, 1)
                .await
                .unwrap()
                .len();
        if !waiting.is_empty() && left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = rss_kib();
    let ticks = cpu_ticks();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let idle = cpu_ticks() - ticks;
    println!(
        "1,000 runs awaiting approval: {:.1} MiB more resident ({:.1} KiB per run), {:.2} % of one core while idle over 10 s",
        (after.saturating_sub(before)) as f64 / 1024.0,
        (after.saturating_sub(before)) as f64 / 1000.0,
        idle as f64 / 10.0
    );
}

fn prompt_size() {
    let mut sizes = Vec::new();
    for n in [10usize, 100, 1000] {
        let spec = plan_engine::NewPlan {
            title: "big".into(),
            mode: plan_engine::Mode::Complex,
            subtasks: (1..=n)
                .map(|i| plan_engine::NewSubtask::named(format!("step {i}")))
                .collect(),
            ..Default::default()
        };
        let (mut plan, _) = plan_engine::Plan::create(&spec, "bench", chrono::Utc::now()).unwrap();
        for i in 1..n as u32 / 2 {
            let id = plan_engine::SubtaskId(i);
            let now = chrono::Utc::now();
            plan.execute(
                &plan_engine::Op::SetSubtaskState {
                    id,
                    state: plan_engine::SubtaskState::InProgress,
                    note: None,
                    start_next: false,
                }
                .into(),
                "b",
                now,
            )
            .unwrap();
            plan.execute(
                &plan_engine::Op::SetSubtaskState {
                    id,
                    state: plan_engine::SubtaskState::Done,
                    note: Some("a result of some length".into()),
                    start_next: false,
                }
                .into(),
                "b",
                now,
            )
            .unwrap();
        }
        let next = plan_engine::SubtaskId(n as u32 / 2);
        plan.execute(
            &plan_engine::Op::SetSubtaskState {
                id: next,
                state: plan_engine::SubtaskState::InProgress,
                note: None,
                start_next: false,
            }
            .into(),
            "b",
            chrono::Utc::now(),
        )
        .unwrap();
        let job = agent::executor::Job {
            task: "a task".into(),
            plan,
            subtask: next,
            may_add: true,
            max_turns: 8,
            people_changes: vec![],
        };
        sizes.push(agent::executor::brief(&job).len());
    }
    println!(
        "executor prompt (first user message), plans of 10 / 100 / 1,000 subtasks, half done: {} / {} / {} bytes (≈ {} / {} / {} tokens at 4 bytes each); 1,000 ÷ 10 = {:.2}×",
        sizes[0], sizes[1], sizes[2], sizes[0] / 4, sizes[1] / 4, sizes[2] / 4,
        sizes[2] as f64 / sizes[0] as f64
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    prompt_size();
    runtime.block_on(parallel_dag());
    runtime.block_on(overhead());
    runtime.block_on(scale());
}
