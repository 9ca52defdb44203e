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
//! - webhooks: the same overhead with a webhook endpoint and OpenTelemetry
//!   tracing (to an OTLP receiver) configured and without, alternating (the
//!   deliverer reads the run log beside the run; spans are made as it is
//!   written and sent in batches by the exporter's thread);
//! - steering: a person's Pause and Skip reaching the agent;
//! - prompt size: the executor's first message for plans of 10, 100 and
//!   1,000 subtasks;
//! - batches (seed 002): a 200-item catalog in batches of 5 and 20, one
//!   item in ten failing once: coverage, the failures planned again, the
//!   batch planner's prompt from the first batch to the last, time per
//!   subtask beside a plain plan's.
//!
//! Run: `cargo bench -p server --bench agent` (release build); name a
//! part (`prompt_size`, `parallel_dag`, `overhead`, `webhooks`, `steering`, `scale`, `batches`) to run only it.

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
    /// Shared: axum clones the state for every request, and a deep copy
    /// of a 100-subtask plan per call was the fake's cost, not planboard's.
    default_plan: Arc<Value>,
}

impl Fake {
    /// The answer to a request for this schema name (`text` for none).
    fn answer(&self, shape: &str) -> String {
        match shape {
            "mode" => json!({"confidence": 1.0, "mode": "complex", "reason": "bench"}).to_string(),
            "plan" => self
                .plan
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| (*self.default_plan).clone())
                .to_string(),
            "action" => json!({"action": "complete", "result": "done"}).to_string(),
            "adapt" => {
                json!({"drop": [], "needs_change": false, "reason": "ok", "revise": []}).to_string()
            }
            "todo_update" => {
                json!({"drop": [], "needs_update": false, "reason": "ok", "new_todos": []})
                    .to_string()
            }
            _ => "the answer".to_string(),
        }
    }
}

/// A whole reply of the in-process fakes: 100 tokens in, 10 out.
fn reply(content: String) -> agent::llm::ChatReply {
    agent::llm::ChatReply {
        content,
        calls: vec![],
        finish_reason: Some("stop".into()),
        usage: Some(agent::llm::Usage {
            prompt_tokens: 100,
            completion_tokens: 10,
        }),
        model: "fake".into(),
    }
}

/// The same fake without HTTP: answers inside the server's process, so
/// what is timed is planboard's own work.
#[async_trait::async_trait]
impl agent::Llm for Fake {
    async fn chat(
        &self,
        request: &agent::llm::ChatRequest,
    ) -> Result<agent::llm::ChatReply, agent::llm::LlmError> {
        let shape = match &request.shape {
            agent::llm::Shape::Json { name, .. } => name,
            _ => "text",
        };
        Ok(reply(self.answer(shape)))
    }

    fn model(&self, _role: agent::llm::CallRole) -> String {
        "fake".into()
    }
}

async fn chat(State(fake): State<Fake>, Json(request): Json<Value>) -> axum::response::Response {
    use axum::response::IntoResponse;
    if !fake.latency.is_zero() {
        tokio::time::sleep(fake.latency).await;
    }
    let shape = request["response_format"]["json_schema"]["name"]
        .as_str()
        .unwrap_or("text");
    let content = fake.answer(shape);
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
        default_plan: Arc::new(default_plan),
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
    start_with(model_url, concurrency, None).await
}

async fn start_with(
    model_url: &str,
    concurrency: usize,
    model: Option<Arc<dyn agent::Llm>>,
) -> Bench {
    start_configured(model_url, concurrency, model, |_| {}).await
}

async fn start_configured(
    model_url: &str,
    concurrency: usize,
    model: Option<Arc<dyn agent::Llm>>,
    adjust: impl FnOnce(&mut Config),
) -> Bench {
    let dir = tempfile::tempdir().unwrap();
    let mut llm = agent::LlmConfig::from_vars(|n| match n {
        "PLANBOARD_LLM_MODEL" => Some("fake".into()),
        "PLANBOARD_LLM_BASE_URL" => Some(model_url.into()),
        _ => None,
    })
    .unwrap()
    .unwrap();
    llm.concurrency = concurrency;
    let mut config = Config {
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
    adjust(&mut config);
    let services = server::start_with_model(&config, model).await.unwrap();
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
        ..agent::RunConfig::default()
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
    for n in [10usize, 100] {
        let url = fake_model(Duration::ZERO, plan_of(n, true)).await;
        let b = start(&url, 8).await;
        report_gaps(&b, n, "zero-latency model over HTTP").await;
        let model = Fake {
            latency: Duration::ZERO,
            plan: Arc::default(),
            default_plan: Arc::new(plan_of(n, true)),
        };
        let b = start_with("http://127.0.0.1:9/v1", 8, Some(Arc::new(model))).await;
        report_gaps(&b, n, "zero-latency model in process").await;
    }
}

/// Runs chains of `n` one after another (about 1,000 subtasks in all, so
/// the percentiles rest on many gaps) and prints the time between one
/// subtask's completion and the next one's.
async fn report_gaps(b: &Bench, n: usize, model: &str) {
    let mut gaps = chain_gaps(b, n, (1000 / n).max(1)).await;
    gaps.sort_by(f64::total_cmp);
    println!(
        "orchestration per subtask, chains of {n} ({model}, SQLite, {} gaps): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        gaps.len(),
        percentile(&gaps, 0.5),
        percentile(&gaps, 0.99),
        gaps.last().copied().unwrap_or(0.0)
    );
}

/// The gaps between subtask completions of `runs` chains of `n`, run one
/// after another.
async fn chain_gaps(b: &Bench, n: usize, runs: usize) -> Vec<f64> {
    let mut gaps: Vec<f64> = Vec::new();
    for _ in 0..runs {
        let view = b
            .services
            .runs
            .start(run_config(&format!("chain {n}"), false, 1), "bench")
            .await
            .unwrap();
        let run = view.record.id;
        let plan = view.record.plan_id.unwrap();
        wait_state(b, run, agent::RunState::Done).await;
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
        gaps.extend(
            finished
                .windows(2)
                .map(|w| (w[1] - w[0]).num_microseconds().unwrap_or(0) as f64 / 1000.0),
        );
    }
    gaps
}

/// Orchestration per subtask with webhooks and tracing on and off: chains
/// of 100, the model in process, a webhook receiver answering 204 at once
/// and an OTLP receiver answering 200. The
/// deliverer reads the run log beside the run; what it costs the run is
/// the difference (rounds alternate, so drift hits both alike).
async fn webhooks_overhead() {
    use axum::http::StatusCode;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    let posts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = posts.clone();
    let app = Router::new().route(
        "/hook",
        post(move || {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                StatusCode::NO_CONTENT
            }
        }),
    );
    let exports = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let exported = exports.clone();
    let app = app.route(
        "/v1/traces",
        post(move |body: axum::body::Bytes| {
            let exported = exported.clone();
            async move {
                exported.fetch_add(body.len(), std::sync::atomic::Ordering::Relaxed);
                StatusCode::OK
            }
        }),
    );
    let traces = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let n = 100;
    let mut off: Vec<f64> = Vec::new();
    let mut on: Vec<f64> = Vec::new();
    for round in 0..6 {
        let hooked = round % 2 == 1;
        let model = Fake {
            latency: Duration::ZERO,
            plan: Arc::default(),
            default_plan: Arc::new(plan_of(n, true)),
        };
        let b = start_configured(
            "http://127.0.0.1:9/v1",
            8,
            Some(Arc::new(model)),
            |config| {
                if hooked {
                    config.webhooks.endpoints = vec![server::webhooks::Endpoint {
                        url: hook.parse().unwrap(),
                        secret: Some("bench-secret".into()),
                        slack: false,
                    }];
                    config.telemetry = Some(server::telemetry::TelemetryConfig {
                        batch_delay: Duration::from_millis(200),
                        ..server::telemetry::TelemetryConfig::to(traces.clone())
                    });
                }
            },
        )
        .await;
        let gaps = chain_gaps(&b, n, 3).await;
        if hooked {
            on.extend(gaps);
        } else {
            off.extend(gaps);
        }
    }
    off.sort_by(f64::total_cmp);
    on.sort_by(f64::total_cmp);
    let (p_off, p_on) = (percentile(&off, 0.5), percentile(&on, 0.5));
    println!(
        "orchestration per subtask, chains of {n}, webhooks and tracing off / on ({} / {} gaps): p50 {:.2} / {:.2} ms ({:+.1} %), p99 {:.2} / {:.2} ms; {} notifications delivered, {} KB of spans exported",
        off.len(),
        on.len(),
        p_off,
        p_on,
        (p_on / p_off - 1.0) * 100.0,
        percentile(&off, 0.99),
        percentile(&on, 0.99),
        posts.load(std::sync::atomic::Ordering::Relaxed),
        exports.load(std::sync::atomic::Ordering::Relaxed) / 1024
    );
}

/// Waits for the run's next log entry of `kind` (and, for
/// `state_changed`, into `to`); returns when it was heard.
async fn heard(
    news: &mut tokio::sync::broadcast::Receiver<server::runs::RunNews>,
    run: agent::RunId,
    kind: &str,
    to: Option<&str>,
) -> Instant {
    loop {
        if let Ok(server::runs::RunNews::Entry(e)) = news.recv().await {
            let to_matches = to.is_none_or(|to| e.entry["to"] == to);
            if e.run_id == run && e.kind.to_string() == kind && to_matches {
                return Instant::now();
            }
        }
    }
}

/// A person's click reaching the agent: Pause (the run says paused, and
/// the subtask in flight finishes but no other starts) and Skip of the
/// running subtask (its work is dropped: the run logs it overridden).
/// 300 ms per call, chains of 8; the median of 5 of each.
async fn steering() {
    let url = fake_model(Duration::from_millis(300), plan_of(8, true)).await;
    let b = start(&url, 8).await;
    let mut pause_ms = Vec::new();
    let mut skip_ms = Vec::new();
    let mut started_while_paused = 0;
    for i in 0..5 {
        let mut news = b.services.runs.subscribe();
        let view = b
            .services
            .runs
            .start(run_config(&format!("steer {i}"), false, 1), "bench")
            .await
            .unwrap();
        let (run, plan) = (view.record.id, view.record.plan_id.unwrap());
        let in_progress = |b: &Bench| {
            let plans = b.services.plans.clone();
            async move {
                plans
                    .read(plan, |p| p.in_progress().first().copied())
                    .await
                    .flatten()
            }
        };
        // Pause while subtask 2 is being worked on.
        while in_progress(&b).await != Some(plan_engine::SubtaskId(2)) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let clicked = Instant::now();
        b.services.runs.pause(run, "bench").await.unwrap();
        let at = heard(&mut news, run, "state_changed", Some("paused")).await;
        pause_ms.push((at - clicked).as_secs_f64() * 1000.0);
        tokio::time::sleep(Duration::from_millis(700)).await;
        let started = b
            .services
            .plans
            .read(plan, |p| {
                p.subtasks()
                    .iter()
                    .filter(|s| s.id().0 > 2 && s.started_at().is_some())
                    .count()
            })
            .await
            .unwrap();
        started_while_paused += started;
        b.services.runs.resume(run, None, "bench").await.unwrap();
        // Skip the subtask being worked on.
        let Some(running) = ({
            let mut found = None;
            for _ in 0..2000 {
                found = in_progress(&b).await;
                if found.is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            found
        }) else {
            panic!("nothing started after resume");
        };
        let clicked = Instant::now();
        b.services
            .plans
            .command(
                plan,
                &plan_engine::Op::SetSubtaskState {
                    id: running,
                    state: plan_engine::SubtaskState::Skipped,
                    note: Some("bench".into()),
                    start_next: false,
                }
                .into(),
                "bench",
            )
            .await
            .unwrap();
        let at = heard(&mut news, run, "overridden", None).await;
        skip_ms.push((at - clicked).as_secs_f64() * 1000.0);
        b.services.runs.cancel(run, "bench").await.unwrap();
    }
    pause_ms.sort_by(f64::total_cmp);
    skip_ms.sort_by(f64::total_cmp);
    println!(
        "a click reaching the agent (300 ms per call): Pause → run paused {:.2} ms (median of 5, max {:.2}), {} subtask(s) started while paused; Skip of the running subtask → its work dropped {:.2} ms (median of 5, max {:.2})",
        pause_ms[2], pause_ms[4], started_while_paused, skip_ms[2], skip_ms[4]
    );
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
        let job = agent::roles::executor::Job {
            task: "a task".into(),
            said: "a task".into(),
            plan: plan.into(),
            subtask: next,
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
    println!(
        "executor prompt (first user message), plans of 10 / 100 / 1,000 subtasks, half done: {} / {} / {} bytes (≈ {} / {} / {} tokens at 4 bytes each); 1,000 ÷ 10 = {:.2}×",
        sizes[0], sizes[1], sizes[2], sizes[0] / 4, sizes[1] / 4, sizes[2] / 4,
        sizes[2] as f64 / sizes[0] as f64
    );
}

/// Seed 002's iterative batches: a model in process that plans a batch as
/// one subtask per item (from the schema's item numbers), fails one item
/// in ten on its first attempt (its brief has no earlier failure), and
/// keeps the size of every planning prompt.
struct Catalog {
    planner_prompts: Mutex<Vec<usize>>,
}

#[async_trait::async_trait]
impl agent::Llm for Catalog {
    async fn chat(
        &self,
        request: &agent::llm::ChatRequest,
    ) -> Result<agent::llm::ChatReply, agent::llm::LlmError> {
        let content = match &request.shape {
            agent::llm::Shape::Json {
                name: "batch",
                schema,
            } => {
                self.planner_prompts
                    .lock()
                    .unwrap()
                    .push(request.messages[1].content.len());
                let items = schema
                    .pointer("/properties/subtasks/items/properties/items/items/enum")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                json!({"subtasks": items.iter().map(|n| json!({
                    "name": format!("test tool {n}"), "description": "call it with a sample",
                    "expected_outcome": "it answers", "items": [n],
                })).collect::<Vec<_>>()})
                .to_string()
            }
            agent::llm::Shape::Json { name: "action", .. } => {
                let brief = &request.messages[1].content;
                let item: u32 = brief
                    .lines()
                    .find_map(|l| l.strip_prefix("Your subtask #"))
                    .and_then(|l| l.split_once(": test tool "))
                    .and_then(|(_, n)| n.trim().parse().ok())
                    .unwrap_or(0);
                if item.is_multiple_of(10) && !brief.contains("an earlier attempt failed") {
                    json!({"action": "fail", "reason": format!("tool {item}: HTTP 503")})
                        .to_string()
                } else {
                    json!({"action": "complete", "result": "it answered"}).to_string()
                }
            }
            _ => "the catalog is tested".to_string(),
        };
        Ok(reply(content))
    }

    fn model(&self, _role: agent::llm::CallRole) -> String {
        "fake".into()
    }
}

/// A 200-item catalog, 10 % of the items failing once: every item
/// covered, the failures planned again, the planner's prompt from the
/// first batch to the last, and the time per item against a plain plan.
async fn batches() {
    const ITEMS: usize = 200;
    for size in [5u32, 20] {
        let model = Arc::new(Catalog {
            planner_prompts: Mutex::default(),
        });
        let b = start_with("http://127.0.0.1:9/v1", 8, Some(model.clone())).await;
        let catalog: String = (1..=ITEMS)
            .map(|i| format!("tool {i}: GET /api/v1/thing/{i}\n"))
            .collect();
        let staged = b
            .services
            .workspaces
            .stage_uploads(vec![server::workspace::inputs::Upload {
                name: "catalog.txt".into(),
                bytes: catalog.into_bytes(),
            }])
            .await
            .unwrap();
        let mut config = run_config("Test every tool in catalog.txt", false, size);
        config.batches = Some(run_model::Batching {
            input: "catalog.txt".into(),
            size,
        });
        let started = Instant::now();
        let view = b
            .services
            .runs
            .start_with(config, None, Some(staged), "bench", None)
            .await
            .unwrap();
        let record = wait_state(&b, view.record.id, agent::RunState::Done).await;
        let took = started.elapsed();
        let progress = record.batches.unwrap();
        let plan = record.plan_id.unwrap();
        let (subtasks, skipped) = b
            .services
            .plans
            .read(plan, |p| {
                (
                    p.subtasks().len(),
                    p.count(plan_engine::SubtaskState::Skipped),
                )
            })
            .await
            .unwrap();
        let prompts = model.planner_prompts.lock().unwrap().clone();
        let first = prompts[0];
        let biggest = *prompts.iter().max().unwrap();
        let last = *prompts.last().unwrap();
        println!(
            "batches of {size}, {ITEMS} items, 10 % failing once (model in process, SQLite): {} covered ({} done, {} given up), {} failed attempts planned again, {} batches, {subtasks} subtasks ({skipped} skipped as failed); planner prompt first / largest / last {first} / {biggest} / {last} bytes = {:.2}× / {:.2}×; {:.0} ms in all, {:.2} ms per subtask",
            progress.done_count() + progress.given_up.len(),
            progress.done_count(),
            progress.given_up.len(),
            progress.failed_attempts,
            progress.batch,
            biggest as f64 / first as f64,
            last as f64 / first as f64,
            took.as_secs_f64() * 1000.0,
            took.as_secs_f64() * 1000.0 / subtasks as f64,
        );
    }
    // The same number of subtasks as one plain plan, for the per-item cost.
    let model = Fake {
        latency: Duration::ZERO,
        plan: Arc::default(),
        default_plan: Arc::new(plan_of(100, false)),
    };
    let b = start_with("http://127.0.0.1:9/v1", 8, Some(Arc::new(model))).await;
    let started = Instant::now();
    let view = b
        .services
        .runs
        .start(run_config("a plain plan of 100", false, 5), "bench")
        .await
        .unwrap();
    wait_state(&b, view.record.id, agent::RunState::Done).await;
    println!(
        "one plain plan of 100 independent subtasks, max_parallel 5 (the same model): {:.0} ms in all, {:.2} ms per subtask",
        started.elapsed().as_secs_f64() * 1000.0,
        started.elapsed().as_secs_f64() * 1000.0 / 100.0
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // `cargo bench -p server --bench agent -- overhead` runs one part.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wanted = |part: &str| only.is_empty() || only.iter().any(|o| part.contains(o.as_str()));
    if wanted("prompt_size") {
        prompt_size();
    }
    if wanted("parallel_dag") {
        runtime.block_on(parallel_dag());
    }
    if wanted("overhead") {
        runtime.block_on(overhead());
    }
    if wanted("webhooks") {
        runtime.block_on(webhooks_overhead());
    }
    if wanted("steering") {
        runtime.block_on(steering());
    }
    if wanted("scale") {
        runtime.block_on(scale());
    }
    if wanted("batches") {
        runtime.block_on(batches());
    }
}
