//! Recalling memories: the time of the query a run makes before it
//! classifies (`RunStore::memories` with the task as the query, the 8
//! best), with 1,000, 10,000 and 100,000 memories in the store, on SQLite
//! and, when `BENCH_DATABASE_URL` names one, on PostgreSQL (a fresh
//! schema's worth of rows is added there; the bench's own tag keeps its
//! queries to its own rows only in what they rank first).
//!
//! The memories are made like a team's: tasks from a few dozen kinds of
//! work, with words shared between kinds, so a query matches thousands of
//! rows and ranking has work to do.
//!
//! Run: `cargo bench -p server --bench memory`.

use std::time::{Duration, Instant};

use run_model::memory::{MemoryKind, NewMemory};
use server::memories::MemoryStore;
use server::store::SqlStore;

const VERBS: [&str; 8] = [
    "deploy",
    "review",
    "summarise",
    "migrate",
    "test",
    "document",
    "benchmark",
    "investigate",
];
const THINGS: [&str; 12] = [
    "billing service",
    "sales report",
    "login page",
    "nightly import",
    "search index",
    "payment api",
    "user database",
    "mobile app",
    "release notes",
    "cache layer",
    "email queue",
    "analytics dashboard",
];
const WHERE: [&str; 6] = [
    "staging",
    "production",
    "the eu region",
    "the test cluster",
    "q3",
    "march",
];

fn memory(i: usize) -> NewMemory {
    let task = format!(
        "{} the {} in {} ({i})",
        VERBS[i % VERBS.len()],
        THINGS[(i / 8) % THINGS.len()],
        WHERE[(i / 96) % WHERE.len()]
    );
    NewMemory {
        kind: if i.is_multiple_of(3) { MemoryKind::Correction } else { MemoryKind::Run },
        text: format!(
            "For the task «{task}», a person rejected the plan with: always check the {} first and add a rollback step",
            THINGS[(i / 5) % THINGS.len()]
        ),
        task,
        run_id: None,
        plan_id: None,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn bench(name: &str, url: &str) {
    let store = SqlStore::connect(url).await.expect("store");
    let mut have = 0;
    for target in [1_000, 10_000, 100_000] {
        let started = Instant::now();
        let batch: Vec<NewMemory> = (have..target).map(memory).collect();
        for chunk in batch.chunks(1_000) {
            store.remember(chunk).await.expect("remember");
        }
        let filled = started.elapsed();
        have = target;
        let queries = [
            "Deploy the billing service to production",
            "Summarise the sales report for March",
            "Why does the nightly import time out in staging?",
            "Document the payment api",
        ];
        let mut times = Vec::new();
        for round in 0..50 {
            for q in queries {
                let t = Instant::now();
                let found = store.memories(Some(q), 0, 8).await.expect("recall");
                times.push(t.elapsed());
                assert!(!found.is_empty() || round > 0, "{q} found nothing");
            }
        }
        times.sort();
        println!(
            "{name:<10} {target:>7} memories: recall p50 {:>6.2} ms  p99 {:>6.2} ms  ({} queries; {} s to add {})",
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
            times.len(),
            filled.as_secs(),
            batch.len()
        );
    }
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    bench(
        "SQLite",
        &format!("sqlite://{}", dir.path().join("memory.db").display()),
    )
    .await;
    if let Ok(url) = std::env::var("BENCH_DATABASE_URL") {
        bench("PostgreSQL", &url).await;
    }
}
