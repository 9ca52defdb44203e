//! Replay and compare over HTTP (issue 56), on the fake model: a run
//! recorded on one model, replayed on a second model that makes one
//! different call; the replay reaches that call (its recorded calls
//! answered, nothing else run) and stops there, and the compare route
//! shows it as the first divergence.

use reqwest::multipart::{Form, Part};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::fake_openai::FakeOpenAi;
use crate::inputs::{run_part, upload};
use crate::runs::{server_on, wait_for};
use crate::support::TestServer;

fn read(path: &str) -> Value {
    json!({"action": "read_file", "arguments": {"path": path}})
}

/// A finished run on the fake's own model that read `a.txt` and `b.txt`.
pub(crate) async fn recorded_run(server: &TestServer, fake: &FakeOpenAi) -> String {
    fake.plan(json!({"title": "notes", "subtasks": [
        {"name": "gather", "description": "read the notes", "expected_outcome": "what they say", "depends_on": []}
    ]}));
    fake.action_for("fake", read("a.txt"))
        .action_for("fake", read("b.txt"))
        .action_for(
            "fake",
            json!({"action": "complete", "result": "the notes say alpha and beta"}),
        );
    let form = Form::new()
        .part(
            "run",
            run_part(json!({"task": "Say what the notes say", "mode": "simple", "approval_required": false})),
        )
        .part("files", Part::bytes(b"alpha\n".to_vec()).file_name("a.txt"))
        .part("files", Part::bytes(b"beta\n".to_vec()).file_name("b.txt"))
        .part("files", Part::bytes(b"gamma\n".to_vec()).file_name("c.txt"));
    let (status, view) = upload(server, form).await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    let run = view["id"].as_str().unwrap().to_string();
    wait_for(server, &run, "done").await;
    run
}

async fn tool_calls(server: &TestServer, run: &str) -> Vec<(String, bool)> {
    let (status, log) = server
        .get(&format!("/api/runs/{run}/events?limit=1000"))
        .await;
    assert_eq!(status, StatusCode::OK, "{log}");
    log.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "tool_call")
        .map(|e| {
            (
                e["entry"]["arguments"]["path"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                e["entry"]["replayed"] == true,
            )
        })
        .collect()
}

#[tokio::test]
async fn a_replay_on_a_second_model_reaches_its_one_different_call_and_the_compare_route_shows_it_first(
) {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    let recorded = recorded_run(&server, &fake).await;
    assert_eq!(
        tool_calls(&server, &recorded).await,
        [("a.txt".to_string(), false), ("b.txt".to_string(), false)]
    );

    // The second model reads `a.txt` again, then `c.txt` where the first
    // read `b.txt`.
    fake.action_for("fake-b", read("a.txt"))
        .action_for("fake-b", read("c.txt"));
    let (status, view) = server
        .post(
            &format!("/api/runs/{recorded}/replay"),
            json!({"model": "fake-b", "unmatched": "stop"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    assert_eq!(view["config"]["replay"]["run"], recorded.as_str());
    assert_eq!(view["config"]["model"], "fake-b");
    assert_eq!(
        view["config"]["memory"], false,
        "not remembered unless asked"
    );
    let replay = view["id"].as_str().unwrap().to_string();
    let paused = wait_for(&server, &replay, "paused").await;
    let why = paused["reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("read_file") && why.contains("c.txt") && why.contains(&recorded),
        "the pause names the call: {why}"
    );
    assert_eq!(
        tool_calls(&server, &replay).await,
        [("a.txt".to_string(), true)],
        "a.txt answered from the recording; c.txt never ran"
    );
    assert!(
        fake.requests().iter().any(|r| r["model"] == "fake-b"),
        "the replay asked the second model"
    );

    let (status, compared) = server
        .get(&format!("/api/runs/compare?a={recorded}&b={replay}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{compared}");
    assert_eq!(compared["same_task"], true);
    assert_eq!(compared["node_f1"], 1.0, "the same plan: {compared}");
    assert_eq!(compared["b"]["replay_of"], recorded.as_str());
    assert_eq!(compared["a"]["totals"]["tool_calls"], 2);
    assert_eq!(compared["b"]["totals"]["replayed_calls"], 1);
    let divergence = &compared["divergence"];
    assert_eq!(divergence["a"]["kind"], "model", "{divergence}");
    assert_eq!(divergence["b"]["role"], "executor", "{divergence}");
    let (said_a, said_b) = (
        divergence["a"]["reply"].as_str().unwrap_or_default(),
        divergence["b"]["reply"].as_str().unwrap_or_default(),
    );
    assert!(
        said_a.contains("b.txt") && said_b.contains("c.txt"),
        "{said_a} / {said_b}"
    );
    // The page draws the same.
    let page = reqwest::get(server.url(&format!("/runs/compare?a={recorded}&b={replay}")))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("data-testid=\"divergence\""), "{page}");
    assert!(page.contains("c.txt"), "{page}");

    let (status, _) = server
        .post(&format!("/api/runs/{replay}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_run_that_goes_on_is_not_replayed_and_an_unknown_one_is_a_404() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    let (run, _) =
        crate::runs::start(&server, json!({"task": "wait for me", "mode": "simple"})).await;
    wait_for(&server, &run, "awaiting_approval").await;
    let (status, body) = server
        .post(&format!("/api/runs/{run}/replay"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "not_finished");
    let unknown = uuid::Uuid::new_v4();
    let (status, _) = server
        .post(&format!("/api/runs/{unknown}/replay"), json!({}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = server
        .get(&format!("/api/runs/compare?a={run}&b={unknown}"))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
