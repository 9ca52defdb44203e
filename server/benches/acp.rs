//! ACP agents' plans on the board: `BENCH_AGENTS` ACP agents at once (20)
//! on one server, each sending `BENCH_UPDATES` plan updates (100), one
//! every `BENCH_EVERY_MS` (100 ms), through planboard's ACP client
//! (`agent::acp`, the driver runs use) into the run's plan.
//!
//! The agents are in-process fakes speaking ACP over a pipe (a tokio
//! duplex per agent, newline-delimited JSON-RPC as over a child's stdio):
//! `initialize`, `session/new`, then on `session/prompt` a first plan of
//! `BENCH_UPDATES / 2 + 1` entries and the updates, each moving one entry
//! on (pending → in progress, in progress → completed: one op, one plan
//! version each), then the end of the turn. They run on their own
//! runtime's thread, named, so their CPU is told apart from the server's.
//!
//! Measured: the time from an update written to the pipe to the plan's
//! new version published on the server's one broadcast of the event log
//! (`live::Hub`, what every SSE stream and the board's islands follow):
//! stored, read back and streamed; p50 and p99. And the server's CPU per
//! update (the process's CPU time minus the agents' threads', from
//! /proc). SQLite.
//!
//! Run: `cargo bench -p server --bench acp`; small:
//! `BENCH_AGENTS=3 BENCH_UPDATES=20 cargo bench -p server --bench acp`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use server::config::{Access, Config};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The fake agents' thread: its CPU is not the server's.
const AGENT_THREAD: &str = "bench-acp-agent";

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds of this process's threads, split: (all, the agents').
fn cpu() -> (f64, f64) {
    const TICK: f64 = 0.01;
    let ticks = |stat: &str| -> f64 {
        stat.rsplit_once(')')
            .map(|(_, rest)| {
                let fields: Vec<&str> = rest.split_whitespace().collect();
                fields
                    .get(11..13)
                    .map(|f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum())
                    .unwrap_or(0.0)
            })
            .unwrap_or(0.0)
    };
    let mut agents = 0.0;
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for task in dir.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim() == AGENT_THREAD {
                let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
                agents += ticks(&stat) * TICK;
            }
        }
    }
    let all = ticks(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default()) * TICK;
    (all, agents)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// When each timed update of a plan was written, oldest first.
type Sent = Arc<Mutex<VecDeque<Instant>>>;

/// A message as one line of the pipe.
fn send(message: Value) -> String {
    let mut line = message.to_string();
    line.push('\n');
    line
}

/// One fake ACP agent on its side of the pipe.
async fn fake_agent(pipe: tokio::io::DuplexStream, updates: usize, every: Duration, sent: Sent) {
    let (read, mut write) = tokio::io::split(pipe);
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = message.get("id").cloned();
        let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        let out = match message["method"].as_str() {
            Some("initialize") => reply(json!({
                "protocolVersion": 1, "agentCapabilities": {}, "authMethods": [],
                "agentInfo": {"name": "bench-agent", "version": "1"}})),
            Some("session/new") => reply(json!({"sessionId": "bench"})),
            Some("session/prompt") => {
                let steps = updates / 2 + 1;
                let mut entries: Vec<Value> = (0..steps)
                    .map(|i| json!({"content": format!("Step {}", i + 1), "priority": "medium", "status": "pending"}))
                    .collect();
                let update = |entries: &[Value]| {
                    json!({"jsonrpc": "2.0", "method": "session/update", "params": {
                        "sessionId": "bench",
                        "update": {"sessionUpdate": "plan", "entries": entries}}})
                };
                // The first plan (its entries added) is not timed.
                if write
                    .write_all(send(update(&entries)).as_bytes())
                    .await
                    .is_err()
                {
                    return;
                }
                tokio::time::sleep(every).await;
                for n in 0..updates {
                    let step = n / 2;
                    entries[step]["status"] = json!(if n % 2 == 0 {
                        "in_progress"
                    } else {
                        "completed"
                    });
                    let line = send(update(&entries));
                    sent.lock().unwrap().push_back(Instant::now());
                    if write.write_all(line.as_bytes()).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(every).await;
                }
                reply(json!({"stopReason": "end_turn"}))
            }
            // Notifications (a cancel) need no answer.
            _ if id.is_none() => continue,
            _ => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
            }
        };
        if write.write_all(send(out).as_bytes()).await.is_err() {
            return;
        }
    }
}

fn main() {
    let agents = env("BENCH_AGENTS", 20);
    let updates = env("BENCH_UPDATES", 100);
    let every = Duration::from_millis(env("BENCH_EVERY_MS", 100) as u64);
    let agent_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(AGENT_THREAD)
        .enable_all()
        .build()
        .expect("the agents' runtime");
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("the server's runtime");
    let agents_side = agent_runtime.handle().clone();
    server_runtime.block_on(async move {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = Config {
            lease: Duration::from_secs(3600),
            // The keeper looks again in 20 minutes: it never meets these
            // runs, whose agents are not on the ACP registry.
            run_lease: Duration::from_secs(3600),
            workspaces: dir.path().join("ws"),
            sandbox: false,
            ..Config::defaults(
                format!("sqlite://{}", dir.path().join("bench.db").display()),
                Access::Local {
                    user: "bench".into(),
                },
            )
        };
        let services = server::start(&config).await.expect("start");
        // The keeper's first look at the runs is over before any exists.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let host = services.runs.agent_host();
        // Each plan's updates, heard on the broadcast every stream follows.
        let by_plan: Arc<Mutex<HashMap<plan_engine::PlanId, Sent>>> = Arc::default();
        let latencies: Arc<Mutex<Vec<Duration>>> = Arc::default();
        let mut published = services.plans.hub().subscribe();
        {
            let (by_plan, latencies) = (by_plan.clone(), latencies.clone());
            tokio::spawn(async move {
                loop {
                    let row = match published.recv().await {
                        Ok(row) => row,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                            eprintln!("the listener fell {n} rows behind");
                            continue;
                        }
                        Err(_) => return,
                    };
                    if !row.json.contains("subtask_state_changed") {
                        continue;
                    }
                    let sent = by_plan.lock().unwrap().get(&row.plan_id).cloned();
                    let at = sent.and_then(|s| s.lock().unwrap().pop_front());
                    if let Some(at) = at {
                        latencies.lock().unwrap().push(at.elapsed());
                    }
                }
            });
        }
        let (cpu_before, agents_before) = cpu();
        let started = Instant::now();
        let mut drives = Vec::new();
        for i in 0..agents {
            let run_config = run_model::RunConfig {
                task: format!("bench task {i}"),
                agent: Some("bench".into()),
                memory: false,
                ..Default::default()
            };
            let record = agent::acp::start(
                host.as_ref(),
                uuid::Uuid::new_v4(),
                run_config,
                "bench",
                None,
            )
            .await
            .expect("a run");
            let sent: Sent = Arc::default();
            by_plan
                .lock()
                .unwrap()
                .insert(record.plan_id.expect("a plan"), sent.clone());
            let (ours, theirs) = tokio::io::duplex(1 << 20);
            agents_side.spawn(fake_agent(theirs, updates, every, sent));
            let (read, write) = tokio::io::split(ours);
            let (connection, incoming) = agent::acp::Connection::over(write, read, None, None);
            let workspace = services.runs.workspace(record.id);
            std::fs::create_dir_all(&workspace).expect("workspace");
            drives.push(tokio::spawn(agent::acp::drive_connected(
                host.clone(),
                connection,
                incoming,
                workspace,
                record,
            )));
        }
        let mut done = 0;
        for drive in drives {
            let run = drive.await.expect("the drive ends");
            if run.state == run_model::RunState::Done {
                done += 1;
            } else {
                eprintln!("a run ended {}: {:?}", run.state, run.reason);
            }
        }
        let wall = started.elapsed();
        // The last rows reach the listener.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (cpu_after, agents_after) = cpu();
        let server_cpu = (cpu_after - cpu_before) - (agents_after - agents_before);
        let mut latencies = latencies.lock().unwrap().clone();
        latencies.sort();
        let total = agents * updates;
        println!(
            "ACP plan updates: {agents} agents at once, {updates} updates each, one every {} ms; \
             {done} of {agents} runs done in {:.1} s",
            every.as_millis(),
            wall.as_secs_f64()
        );
        println!(
            "update → new version streamed: p50 {}, p99 {}, max {} ({} of {total} timed)",
            ms(percentile(&latencies, 0.50)),
            ms(percentile(&latencies, 0.99)),
            ms(latencies.last().copied().unwrap_or_default()),
            latencies.len()
        );
        println!(
            "server CPU: {:.2} s in all, {:.2} ms per update ({:.0}% of a core at {:.0} updates/s)",
            server_cpu,
            server_cpu * 1000.0 / total.max(1) as f64,
            server_cpu / wall.as_secs_f64() * 100.0,
            total as f64 / wall.as_secs_f64()
        );
        services.shutdown();
    });
    agent_runtime.shutdown_background();
}
