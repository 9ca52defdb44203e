//! Crash-resume: a real server process is killed with SIGKILL at random
//! moments while it drives several runs, and started again each time. Every
//! run must finish, no subtask may be completed twice, and the plans' logs
//! must have no gap.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use crate::fake_openai::FakeOpenAi;
use crate::support::{free_port, spawn_planboard, Process};

async fn spawn(dir: &std::path::Path, fake: &FakeOpenAi, port: u16) -> Process {
    let db = format!("sqlite://{}", dir.join("crash.db").display());
    spawn_planboard(
        port,
        &[
            ("DATABASE_URL", db),
            ("PLANBOARD_USER", "crash".into()),
            ("PLANBOARD_INSTANCE", "crash-test".into()),
            ("PLANBOARD_WORKSPACES", dir.join("ws").display().to_string()),
            ("PLANBOARD_RUN_LEASE_SECS", "3".into()),
            ("PLANBOARD_LLM_MODEL", "fake".into()),
            ("PLANBOARD_LLM_BASE_URL", fake.url.clone()),
            ("PLANBOARD_LLM_TIMEOUT_SECS", "10".into()),
        ],
    )
    .await
}

/// A cheap random number: this test needs variety, not quality.
fn random(below: u64) -> u64 {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    (nanos.wrapping_mul(6364136223846793005) >> 33) % below.max(1)
}

async fn get(client: &reqwest::Client, url: String) -> Value {
    client.get(url).send().await.unwrap().json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_survive_sigkill_with_no_subtask_done_twice_and_no_event_lost() {
    let fake = FakeOpenAi::start().await;
    fake.latency(Duration::from_millis(250));
    fake.plan(json!({"title": "six steps", "subtasks": (1..=6).map(|i| json!({
        "name": format!("step {i}"), "description": "do it", "expected_outcome": "", "depends_on": []
    })).collect::<Vec<_>>()}));
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let client = reqwest::Client::new();
    let mut process = spawn(dir.path(), &fake, port).await;
    let mut runs = Vec::new();
    for i in 0..3 {
        let view: Value = client
            .post(format!("{}/api/runs", process.base))
            .json(&json!({"task": format!("Crash story {i}"), "mode": "simple", "approval_required": false}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(view["id"].is_string(), "{view}");
        runs.push((
            view["id"].as_str().unwrap().to_string(),
            view["plan_id"].as_str().unwrap().to_string(),
        ));
    }
    let mut kills = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let mut done = 0;
        for (run, _) in &runs {
            let view = get(&client, format!("{}/api/runs/{run}", process.base)).await;
            match view["state"].as_str().unwrap_or_default() {
                "done" => done += 1,
                "failed" | "cancelled" | "paused" => panic!("run {run} stopped: {view}"),
                _ => {}
            }
        }
        if done == runs.len() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the runs did not finish in time"
        );
        if kills < 5 {
            tokio::time::sleep(Duration::from_millis(300 + random(700))).await;
            // SIGKILL: no shutdown, no flush, no goodbye.
            process.child.kill().unwrap();
            process.child.wait().unwrap();
            kills += 1;
            process = spawn(dir.path(), &fake, port).await;
        } else {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    assert!(kills >= 1, "the server was killed at least once mid-run");
    for (run, plan) in &runs {
        let page = get(
            &client,
            format!("{}/api/plans/{plan}/events?limit=1000", process.base),
        )
        .await;
        let events = page["events"].as_array().unwrap();
        // One change may write several events under one version (finishing
        // a plan releases what is in progress), so versions never go back
        // and none is missing.
        let versions: Vec<u64> = events
            .iter()
            .map(|e| e["version"].as_u64().unwrap())
            .collect();
        assert!(
            versions.windows(2).all(|w| w[0] <= w[1]),
            "run {run}: {versions:?}"
        );
        let mut distinct = versions.clone();
        distinct.dedup();
        let expected: Vec<u64> = (1..=distinct.len() as u64).collect();
        assert_eq!(distinct, expected, "run {run}: the plan's log has no gap");
        let mut completed: HashMap<u64, usize> = HashMap::new();
        for e in events {
            let event = &e["event"];
            if event["type"] == "subtask_state_changed" && event["to"] == "done" {
                *completed.entry(event["id"].as_u64().unwrap()).or_default() += 1;
            }
        }
        assert_eq!(
            completed.len(),
            6,
            "run {run}: every subtask was completed: {completed:?}"
        );
        assert!(
            completed.values().all(|n| *n == 1),
            "run {run}: no subtask completed twice: {completed:?}"
        );
        let plan_view = get(&client, format!("{}/api/plans/{plan}", process.base)).await;
        assert_eq!(plan_view["plan"]["state"], "done");
        assert_eq!(
            plan_view["plan"]["version"].as_u64().unwrap(),
            distinct.len() as u64
        );
    }
    println!("{kills} SIGKILLs; {} model calls", fake.requests().len());
}
