//! The server benchmark: one state change through HTTP, the engine, the
//! database and the SSE fan-out, as agents and boards see it.
//!
//! - latency of one change at 1 client (p50/p99), with one SSE subscriber
//!   on the plan so every change is also delivered;
//! - throughput at 32 clients, each walking its own plan;
//! - fan-out: 1,000 SSE subscribers on one plan, time from sending a change
//!   to its delivery at each subscriber (p50/p99, and the slowest of each
//!   change), and resident memory per subscriber;
//! - the board's server-side render for a 500-subtask plan, per view.
//!
//! Clients run in the same process as the server (on the same 2 cores), so
//! every number includes the client's own cost. SQLite always; PostgreSQL
//! too when `BENCH_DATABASE_URL` is set.
//! Run: `cargo bench -p server --bench api`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};
use server::config::{Access, Config};

struct Running {
    base: String,
    client: reqwest::Client,
    _dir: Option<tempfile::TempDir>,
}

async fn start(url: Option<&str>) -> Running {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = url.map_or_else(
        || format!("sqlite://{}", dir.path().join("bench.db").display()),
        str::to_string,
    );
    let config = Config {
        lease: Duration::from_secs(3600),
        ..Config::defaults(
            url,
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
    let app = server::router(options, services);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Running {
        base,
        client: reqwest::Client::new(),
        _dir: Some(dir),
    }
}

async fn create(r: &Running, title: &str) -> String {
    let plan: Value = r
        .client
        .post(format!("{}/api/plans", r.base))
        .json(&json!({"title": title, "subtasks": [{"name": "a"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    plan["plan"]["id"].as_str().unwrap().to_string()
}

/// One state change: subtask 1 to in_progress or back to todo.
async fn change(r: &Running, id: &str, i: usize) {
    let state = if i.is_multiple_of(2) {
        "in_progress"
    } else {
        "todo"
    };
    let response = r
        .client
        .post(format!("{}/api/plans/{id}/subtasks/1/state", r.base))
        .json(&json!({"state": state}))
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_success(),
        "{}",
        response.text().await.unwrap()
    );
    let _ = response.bytes().await;
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Counts SSE messages on a stream, sending each receipt time.
fn subscribe(
    r: &Running,
    id: &str,
    tx: tokio::sync::mpsc::UnboundedSender<(usize, Instant)>,
    who: usize,
) -> tokio::task::JoinHandle<()> {
    let request = r.client.get(format!("{}/api/plans/{id}/stream", r.base));
    tokio::spawn(async move {
        let response = request.send().await.unwrap();
        let mut stream = response.bytes_stream();
        let mut buffer = Vec::new();
        while let Some(Ok(chunk)) = stream.next().await {
            buffer.extend_from_slice(&chunk);
            while let Some(pos) = buffer.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = buffer.drain(..pos + 2).collect();
                if block.starts_with(b"data:") || block.windows(6).any(|w| w == b"\ndata:") {
                    let _ = tx.send((who, Instant::now()));
                }
            }
        }
    })
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

async fn latency_and_throughput(label: &str, url: Option<&str>) {
    let r = Arc::new(start(url).await);
    let id = create(&r, "latency").await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let _sub = subscribe(&r, &id, tx, 0);
    let _ = rx.recv().await; // ready
    for i in 0..200 {
        change(&r, &id, i).await;
    }
    let mut times = Vec::new();
    for i in 0..2000 {
        let t = Instant::now();
        change(&r, &id, i).await;
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "{label}: one change at 1 client (2,000 changes): p50 {}, p99 {}",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.99))
    );

    let mut plans = Vec::new();
    for c in 0..32 {
        plans.push(create(&r, &format!("client {c}")).await);
    }
    let run_for = Duration::from_secs(5);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for id in plans {
        let r = r.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = 0usize;
            while started.elapsed() < run_for {
                change(&r, &id, n).await;
                n += 1;
            }
            n
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{label}: 32 clients, {total} changes in {secs:.1} s: {:.0} changes/s",
        total as f64 / secs
    );
}

async fn fan_out(subscribers: usize) {
    let r = start(None).await;
    let id = create(&r, "fan-out").await;
    let before = rss_kib();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut subs = Vec::new();
    for who in 0..subscribers {
        subs.push(subscribe(&r, &id, tx.clone(), who));
    }
    for _ in 0..subscribers {
        rx.recv().await.unwrap(); // every `ready`
    }
    // The first change also starts the plan (two events): keep it out of the sample.
    change(&r, &id, 0).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    while rx.try_recv().is_ok() {}
    let after = rss_kib();
    let mut all = Vec::new();
    let mut slowest = Vec::new();
    for i in 1..=20 {
        let sent = Instant::now();
        change(&r, &id, i).await;
        let mut worst = Duration::ZERO;
        for _ in 0..subscribers {
            let (_, at) = rx.recv().await.unwrap();
            let d = at - sent;
            worst = worst.max(d);
            all.push(d);
        }
        slowest.push(worst);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    all.sort();
    slowest.sort();
    println!(
        "SSE fan-out, {subscribers} subscribers, 20 changes: delivery p50 {}, p99 {}; all delivered within p50 {} / max {}",
        ms(percentile(&all, 0.5)),
        ms(percentile(&all, 0.99)),
        ms(percentile(&slowest, 0.5)),
        ms(*slowest.last().unwrap())
    );
    println!(
        "  memory: {:.1} KiB resident per subscriber (server and client side together)",
        (after.saturating_sub(before)) as f64 / subscribers as f64
    );
    for s in subs {
        s.abort();
    }
}

/// Server-side render of the board for a 500-subtask plan, each view,
/// through HTTP: the log is read, folded, laid out and rendered to HTML.
async fn board_render() {
    let r = start(None).await;
    let subtasks: Vec<Value> = (1..=500)
        .map(|i| {
            let deps: Vec<u32> = match i {
                1..=10 => vec![],
                _ if i % 7 == 0 => vec![i - 10, i - 3],
                _ => vec![i - 10],
            };
            json!({"name": format!("subtask number {i}"), "dependencies": deps})
        })
        .collect();
    let plan: Value = r
        .client
        .post(format!("{}/api/plans", r.base))
        .json(&json!({"title": "five hundred", "max_subtasks": 500, "subtasks": subtasks}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = plan["plan"]["id"].as_str().unwrap().to_string();
    // Some history for the timeline: ten subtasks started and finished.
    for sid in 1..=10 {
        for state in ["in_progress", "done"] {
            let url = format!("{}/api/plans/{id}/subtasks/{sid}/state", r.base);
            let ok = r
                .client
                .post(url)
                .json(&json!({"state": state}))
                .send()
                .await
                .unwrap();
            assert!(ok.status().is_success());
        }
    }
    for view in ["kanban", "dag", "timeline"] {
        let url = format!("{}/plans/{id}?view={view}", r.base);
        let mut times = Vec::new();
        let mut size = 0;
        for round in 0..55 {
            let t = Instant::now();
            let response = r.client.get(&url).send().await.unwrap();
            assert!(response.status().is_success());
            let html = response.text().await.unwrap();
            if round >= 5 {
                times.push(t.elapsed());
            }
            size = html.len();
        }
        times.sort();
        println!(
            "board SSR, 500 subtasks, {view}: p50 {}, p99 {} (50 renders, {:.0} KiB of HTML)",
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99)),
            size as f64 / 1024.0
        );
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // `BENCH_ONLY=board` renders the board and skips the write benchmarks.
    let only_board = std::env::var("BENCH_ONLY").is_ok_and(|v| v == "board");
    runtime.block_on(async {
        if only_board {
            board_render().await;
            return;
        }
        latency_and_throughput("SQLite", None).await;
        if let Ok(url) = std::env::var("BENCH_DATABASE_URL") {
            latency_and_throughput("PostgreSQL", Some(&url)).await;
        }
        fan_out(1000).await;
        board_render().await;
    });
}
