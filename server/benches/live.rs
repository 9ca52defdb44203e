//! The live loop's benchmark: many running runs with long logs, board tabs
//! following them, the agent writing.
//!
//! `BENCH_RUNS` running runs (50), each with a log of `BENCH_ENTRIES`
//! entries (5,000) written before the clock starts; `BENCH_SUBSCRIBERS`
//! board tabs (20), tab k on run k's plan. A tab does what the board's
//! wasm does: it follows its plan's stream (`/api/plans/{id}/stream`) and
//! the top bar's `/api/stream`; on every `run` event and every plan row it
//! fetches the run header (`run_html`); on every event of `/api/stream`,
//! and every 15 s, the "Needs you" count (`needs_count`). Then the agent
//! side appends `BENCH_RATE` entries a second (100) for `BENCH_SECONDS`
//! (20), round robin over the runs, through the host the agent writes
//! through, and one plan change (a comment) every `BENCH_PLAN_EVERY`
//! entries (25).
//!
//! Measured: the server's CPU per entry appended (the process's CPU time
//! minus the tabs' own threads', from /proc, divided by the entries), and
//! the time from an entry handed to the log to its tab holding the header
//! fetched after hearing it (p50/p99), as a person sees it; the needs
//! count's time too. The tabs run on their own runtime's threads in this
//! process, so their CPU is told apart; the server's runtime has the
//! other core. SQLite.
//!
//! Run: `cargo bench -p server --bench live`; small:
//! `BENCH_RUNS=5 BENCH_ENTRIES=500 BENCH_SUBSCRIBERS=3 BENCH_SECONDS=3 cargo bench -p server --bench live`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};
use server::config::{Access, Config};

/// The tabs' threads: their CPU is not the server's.
const CLIENT_THREAD: &str = "bench-tab";

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds of this process's threads, split: (all, the tabs').
fn cpu() -> (f64, f64) {
    // Clock ticks: 100 a second on Linux.
    const TICK: f64 = 0.01;
    let mut all = 0.0;
    let mut tabs = 0.0;
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return (0.0, 0.0);
    };
    for task in dir.flatten() {
        let path = task.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        // The fields after the command's closing parenthesis; utime and
        // stime are the 14th and 15th of the line (12th and 13th here).
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: f64 = fields
            .get(11..13)
            .map(|f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum())
            .unwrap_or(0.0);
        all += ticks * TICK;
        if comm.trim() == CLIENT_THREAD {
            tabs += ticks * TICK;
        }
    }
    // Threads that ended are counted by the process's own line.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) {
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let total: f64 = fields
            .get(11..13)
            .map(|f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum())
            .unwrap_or(0.0);
        all = all.max(total * TICK);
    }
    (all, tabs)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// A tool call's result as an agent logs one: a few hundred bytes.
fn tool_call(n: u64, subtask: u32) -> agent::RunEntry {
    agent::RunEntry::ToolCall {
        subtask: plan_engine::SubtaskId(subtask),
        name: "read_file".into(),
        arguments: json!({"path": format!("notes/{n}.md"), "n": n}),
        result: "lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(6),
        ok: true,
        duration_ms: 12,
        replayed: false,
    }
}

/// The log a run has when the clock starts: tool calls, now and then a
/// guarded call and its decision, and (every fifth run) one call still
/// waiting for a person.
fn seed_log(
    run: agent::RunId,
    plan: plan_engine::PlanId,
    entries: usize,
    open: bool,
) -> Vec<server::runlog::NewRunEntry> {
    let at = chrono::Utc::now();
    let mut out = Vec::with_capacity(entries);
    let mut push = |entry: agent::RunEntry| {
        out.push(server::runlog::NewRunEntry {
            run,
            plan: Some(plan),
            kind: entry.kind(),
            at,
            entry: serde_json::to_value(&entry).unwrap(),
        })
    };
    for i in 0..entries {
        if i % 500 == 7 {
            let call = format!("guarded-{i}");
            push(agent::RunEntry::ToolApproval {
                subtask: plan_engine::SubtaskId(1),
                call: call.clone(),
                name: "run_command".into(),
                arguments: json!({"command": "ls"}),
                asker: None,
            });
            push(agent::RunEntry::ToolDecision {
                call,
                verdict: run_model::Verdict::Approved,
                by: "bench".into(),
                reason: None,
                arguments: None,
            });
        } else {
            push(tool_call(u64::MAX, 1));
        }
    }
    if open {
        push(agent::RunEntry::ToolApproval {
            subtask: plan_engine::SubtaskId(2),
            call: "waiting".into(),
            name: "run_command".into(),
            arguments: json!({"command": "rm -rf build"}),
            asker: None,
        });
    }
    out.truncate(entries);
    out
}

/// The paths of the board's server functions.
fn server_fn(name: &str) -> String {
    leptos::server_fn::axum::server_fn_paths()
        .map(|(path, _)| path)
        .find(|p| p.contains(name))
        .unwrap_or_else(|| panic!("no server function {name}"))
        .to_string()
}

/// What the tabs saw.
#[derive(Default)]
struct Seen {
    /// Entry appended to header fetched, per entry heard.
    header: Vec<Duration>,
    needs: Vec<Duration>,
    run_events: u64,
    /// Fetches the server failed (an error status, a dropped connection).
    failed_headers: u64,
    failed_needs: u64,
}

struct Tabs {
    base: String,
    client: reqwest::Client,
    run_html: String,
    needs_count: String,
    /// When each entry was handed to the log, by its number.
    appended: Mutex<HashMap<u64, Instant>>,
    seen: Mutex<Seen>,
    /// Header fetches under way.
    fetching: AtomicU64,
    stop: AtomicBool,
}

/// SSE blocks of a response: (event name, data).
async fn each_event(response: reqwest::Response, mut on: impl FnMut(&str, &str) -> bool) {
    let mut stream = response.bytes_stream();
    let mut buffer: Vec<u8> = Vec::new();
    while let Some(Ok(chunk)) = stream.next().await {
        buffer.extend_from_slice(&chunk);
        while let Some(pos) = buffer.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = buffer.drain(..pos + 2).collect();
            let text = String::from_utf8_lossy(&block);
            let mut name = "message";
            let mut data = String::new();
            for line in text.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    name = v.trim();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            if !data.is_empty() && !on(name, &data) {
                return;
            }
        }
    }
}

impl Tabs {
    /// Fetches the run header; false when the server failed to answer.
    async fn header(self: &Arc<Self>, plan: &str) -> bool {
        let response = self
            .client
            .post(format!("{}{}", self.base, self.run_html))
            .json(&json!({"plan": plan}))
            .send()
            .await;
        let ok = match response {
            Ok(r) if r.status().is_success() => r.text().await.is_ok_and(|b| b.contains("run")),
            _ => false,
        };
        if !ok {
            self.seen.lock().unwrap().failed_headers += 1;
        }
        ok
    }

    async fn needs(self: &Arc<Self>) {
        let started = Instant::now();
        let response = self
            .client
            .post(format!("{}{}", self.base, self.needs_count))
            .json(&json!({}))
            .send()
            .await;
        let ok = match response {
            Ok(r) if r.status().is_success() => r.text().await.is_ok(),
            _ => false,
        };
        let mut seen = self.seen.lock().unwrap();
        match ok {
            true => seen.needs.push(started.elapsed()),
            false => seen.failed_needs += 1,
        }
    }

    /// Fetches the header for the entries `numbers` heard (none for a
    /// plan row) and times each from its append to the header's arrival.
    fn fetch(self: &Arc<Self>, plan: &str, numbers: Vec<u64>, limit: &Arc<tokio::sync::Semaphore>) {
        let (tabs, plan, limit) = (self.clone(), plan.to_string(), limit.clone());
        tabs.fetching.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            let _turn = limit.acquire().await;
            if !tabs.header(&plan).await {
                tabs.fetching.fetch_sub(1, Ordering::SeqCst);
                return;
            }
            for n in numbers {
                let at = tabs.appended.lock().unwrap().get(&n).copied();
                if let Some(at) = at {
                    tabs.seen.lock().unwrap().header.push(at.elapsed());
                }
            }
            tabs.fetching.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// A tab on `plan`: the plan's stream, the header fetched again for the
    /// run entries and plan rows heard (at most 4 at once, a browser's
    /// connections): for each (`every` zero, the board before issue 36) or
    /// at most once every `every`, the first at once (the board since).
    fn open(self: &Arc<Self>, plan: String, every: Duration) {
        let (heard_tx, mut heard) = tokio::sync::mpsc::unbounded_channel::<Option<u64>>();
        let tabs = self.clone();
        let watched = plan.clone();
        tokio::spawn(async move {
            let url = format!("{}/api/plans/{plan}/stream", tabs.base);
            let response = tabs.client.get(url).send().await.unwrap();
            each_event(response, |name, data| {
                if tabs.stop.load(Ordering::Relaxed) {
                    return false;
                }
                let number = match name {
                    "run" => {
                        tabs.seen.lock().unwrap().run_events += 1;
                        serde_json::from_str::<Value>(data)
                            .ok()
                            .and_then(|v| v["entry"]["arguments"]["n"].as_u64())
                    }
                    "message" => None,
                    _ => return true,
                };
                heard_tx.send(number).is_ok()
            })
            .await;
        });
        let tabs = self.clone();
        tokio::spawn(async move {
            let limit = Arc::new(tokio::sync::Semaphore::new(4));
            while let Some(first) = heard.recv().await {
                if every.is_zero() {
                    tabs.fetch(&watched, first.into_iter().collect(), &limit);
                    continue;
                }
                let mut numbers: Vec<u64> = first.into_iter().collect();
                loop {
                    while let Ok(more) = heard.try_recv() {
                        numbers.extend(more);
                    }
                    tabs.fetch(&watched, std::mem::take(&mut numbers), &limit);
                    tokio::time::sleep(every).await;
                    let mut missed = false;
                    while let Ok(more) = heard.try_recv() {
                        missed = true;
                        numbers.extend(more);
                    }
                    if !missed {
                        break;
                    }
                }
            }
        });
        // The top bar: the count again on every event of /api/stream
        // (one at a time, a newer wish waiting behind it) and every 15 s.
        let tabs = self.clone();
        tokio::spawn(async move {
            let wanted = Arc::new(tokio::sync::Notify::new());
            let counter = {
                let (tabs, wanted) = (tabs.clone(), wanted.clone());
                tokio::spawn(async move {
                    loop {
                        tokio::select! {
                            () = wanted.notified() => {}
                            () = tokio::time::sleep(Duration::from_secs(15)) => {}
                        }
                        if tabs.stop.load(Ordering::Relaxed) {
                            return;
                        }
                        tabs.needs().await;
                    }
                })
            };
            let url = format!("{}/api/stream", tabs.base);
            let response = tabs.client.get(url).send().await.unwrap();
            each_event(response, |_, _| {
                wanted.notify_one();
                !tabs.stop.load(Ordering::Relaxed)
            })
            .await;
            counter.abort();
        });
    }
}

async fn start(dir: &std::path::Path) -> (server::Services, String) {
    let config = Config {
        lease: Duration::from_secs(3600),
        workspaces: dir.join("ws"),
        ..Config::defaults(
            format!("sqlite://{}", dir.join("bench.db").display()),
            Access::Local {
                user: "bench".into(),
            },
        )
    };
    let services = server::start(&config).await.expect("start");
    let options = leptos::config::LeptosOptions::builder()
        .output_name("planboard")
        .site_root(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/site"))
        .build();
    let app = server::router(options, services.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (services, base)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runs = env("BENCH_RUNS", 50).max(1);
    let entries = env("BENCH_ENTRIES", 5_000);
    let subscribers = env("BENCH_SUBSCRIBERS", 20);
    let rate = env("BENCH_RATE", 100).max(1);
    let seconds = env("BENCH_SECONDS", 20).max(1);
    let plan_every = env("BENCH_PLAN_EVERY", 25).max(1);
    // How often a tab loads the header again at most (0: on every entry).
    let every = Duration::from_millis(env("BENCH_HEADER_EVERY_MS", 250) as u64);

    // The server on one runtime, the tabs on another, one thread each:
    // the machine's two cores, and the tabs' CPU told apart by name.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("bench-server")
        .enable_all()
        .build()
        .unwrap();
    let tabs_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(CLIENT_THREAD)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (services, base) = server_rt.block_on(start(dir.path()));
    let host = services.runs.agent_host();

    // The runs, their plans and their logs, before the clock starts.
    let started = Instant::now();
    let plans: Vec<(agent::RunId, plan_engine::PlanId)> = server_rt.block_on(async {
        let mut made = Vec::new();
        for i in 0..runs {
            let plan = host
                .create_plan(
                    serde_json::from_value(json!({
                        "title": format!("run {i}"),
                        "subtasks": (1..=10).map(|s| json!({"name": format!("step {s}")})).collect::<Vec<_>>(),
                    }))
                    .unwrap(),
                    "agent",
                )
                .await
                .expect("plan")
                .id();
            let mut record = agent::run::RunRecord::new(
                uuid::Uuid::new_v4(),
                run_model::RunConfig {
                    task: format!("bench run {i}"),
                    ..Default::default()
                },
            );
            record.state = agent::run::RunState::Running;
            record.plan_id = Some(plan);
            host.save_run(&record).await.expect("save run");
            let log = seed_log(record.id, plan, entries, i % 5 == 0);
            for chunk in log.chunks(500) {
                services
                    .runs
                    .log()
                    .append_run_log(chunk)
                    .await
                    .expect("seed log");
            }
            made.push((record.id, plan));
        }
        made
    });
    println!(
        "{runs} running runs, {entries} entries each, written in {:.1} s; {subscribers} tabs; \
         {rate} entries/s for {seconds} s, a plan change every {plan_every}; a tab loads \
         the header at most every {} ms",
        started.elapsed().as_secs_f64(),
        every.as_millis()
    );

    let tabs = Arc::new(Tabs {
        base,
        client: reqwest::Client::new(),
        run_html: server_fn("run_html"),
        needs_count: server_fn("needs_count"),
        appended: Mutex::default(),
        seen: Mutex::default(),
        fetching: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    tabs_rt.block_on(async {
        for k in 0..subscribers {
            tabs.open(plans[k % runs].1.to_string(), every);
        }
        // Each tab's first count and header, as a page load does.
        for k in 0..subscribers {
            assert!(tabs.header(&plans[k % runs].1.to_string()).await);
        }
        tabs.needs().await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    });
    *tabs.seen.lock().unwrap() = Seen::default();

    let total = (rate * seconds) as u64;
    let (cpu_before, tabs_before) = cpu();
    let wall = Instant::now();
    server_rt.block_on(async {
        let mut tick = tokio::time::interval(Duration::from_millis(10));
        let per_tick = (rate as f64 / 100.0).max(0.01);
        let mut owed = 0.0;
        let mut n: u64 = 0;
        while n < total {
            tick.tick().await;
            owed += per_tick;
            while owed >= 1.0 && n < total {
                owed -= 1.0;
                let (run, plan) = plans[n as usize % runs];
                tabs.appended.lock().unwrap().insert(n, Instant::now());
                host.log(run, tool_call(n, 1 + (n % 10) as u32))
                    .await
                    .expect("log");
                if n.is_multiple_of(plan_every as u64) {
                    host.execute(
                        plan,
                        vec![plan_engine::Op::Comment {
                            subtask: None,
                            body: format!("note {n}"),
                        }],
                        "agent",
                    )
                    .await
                    .expect("plan change");
                }
                n += 1;
            }
        }
    });
    let writing = wall.elapsed();
    // Until every header fetch is back (at most 60 s more).
    let drained = Instant::now();
    while tabs.fetching.load(Ordering::SeqCst) > 0 && drained.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (cpu_after, tabs_after) = cpu();
    tabs.stop.store(true, Ordering::Relaxed);
    let server_cpu = (cpu_after - cpu_before) - (tabs_after - tabs_before);
    let seen = std::mem::take(&mut *tabs.seen.lock().unwrap());
    let mut header = seen.header;
    header.sort();
    let mut needs = seen.needs;
    needs.sort();
    let watched = (0..total)
        .filter(|n| (*n as usize % runs) < subscribers)
        .count();
    println!(
        "wrote {total} entries in {:.1} s, drained {:.1} s later; load average {}",
        writing.as_secs_f64(),
        drained.elapsed().as_secs_f64(),
        load()
    );
    println!(
        "server CPU {:.2} s = {:.3} ms per entry (tabs' own CPU {:.2} s, not counted)",
        server_cpu,
        server_cpu * 1000.0 / total as f64,
        tabs_after - tabs_before
    );
    println!(
        "entry to header fetched: {} of {watched} watched entries heard ({} run events, {} \
         header fetches failed); p50 {}, p99 {}, max {}",
        header.len(),
        seen.run_events,
        seen.failed_headers,
        ms(percentile(&header, 0.5)),
        ms(percentile(&header, 0.99)),
        ms(header.last().copied().unwrap_or_default()),
    );
    println!(
        "needs count: {} fetches, {} failed; p50 {}, p99 {}",
        needs.len(),
        seen.failed_needs,
        ms(percentile(&needs, 0.5)),
        ms(percentile(&needs, 0.99)),
    );
    drop(services);
}
