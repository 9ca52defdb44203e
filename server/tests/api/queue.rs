//! Many runs on one model: calls wait their turn in planboard's queue, and
//! the run says how many go before it.

use std::time::Duration;

use serde_json::json;
use server::config::Config;

use crate::fake_openai::FakeOpenAi;
use crate::support::{local, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_sharing_a_one_slot_model_wait_their_turn_and_say_how_many_are_ahead() {
    let fake = FakeOpenAi::start().await;
    fake.latency(Duration::from_millis(300));
    let dir = tempfile::tempdir().unwrap();
    let mut llm = fake.config(Duration::from_secs(5));
    llm.concurrency = 1;
    let config = Config {
        lease: Duration::from_secs(3600),
        llm: Some(llm),
        workspaces: dir.path().join("ws"),
        ..Config::defaults(
            format!("sqlite://{}", dir.path().join("q.db").display()),
            local(),
        )
    };
    let runs = std::sync::Arc::new(std::sync::Mutex::new(None));
    let keep = runs.clone();
    let mut server = TestServer::with_config(&config, move |services| {
        *keep.lock().unwrap() = Some(services.runs.clone());
    })
    .await;
    server._dir = Some(dir);
    let runs = runs.lock().unwrap().clone().expect("the runs service");
    let mut ids = Vec::new();
    for i in 0..4 {
        let (status, view) = server
            .post(
                "/api/runs",
                json!({"task": format!("Queue story {i}"), "mode": "simple", "approval_required": false}),
            )
            .await;
        assert_eq!(status, reqwest::StatusCode::CREATED, "{view}");
        ids.push(view["id"].as_str().unwrap().parse::<uuid::Uuid>().unwrap());
    }
    // While one call runs, the others wait, each told its place.
    let mut seen_ahead = None;
    for _ in 0..200 {
        let ahead: Vec<usize> = ids
            .iter()
            .filter_map(|id| runs.model_position(*id))
            .collect();
        if ahead.iter().any(|n| *n >= 1) {
            seen_ahead = Some(ahead);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ahead = seen_ahead.expect("a run waited behind another");
    assert!(runs.model_waiting() >= 1, "{ahead:?}");
    // And every run finishes: no call is cancelled for waiting.
    for id in &ids {
        let mut state = String::new();
        for _ in 0..600 {
            let (_, view) = server.get(&format!("/api/runs/{id}")).await;
            state = view["state"].as_str().unwrap_or_default().to_string();
            if ["done", "failed"].contains(&state.as_str()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(state, "done", "run {id}");
    }
    assert_eq!(runs.model_waiting(), 0);
}
