//! The REST story, written once and run on SQLite here and on PostgreSQL in
//! `postgres.rs`.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::support::{chain, state_of, TestServer};

/// Create → list → walk → edit → approve → comment → history → export/import.
pub async fn story(server: &TestServer, tag: &str) {
    let title = format!("Story {tag}");
    let id = server.create(chain(&title)).await;

    let (status, page) = server
        .get(&format!(
            "/api/plans?q={}",
            title.to_lowercase().replace(' ', "%20")
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["plans"].as_array().map(Vec::len), Some(1), "{page}");
    assert_eq!(page["plans"][0]["title"], title.as_str());

    let (status, changed) = server
        .post(
            &format!("/api/plans/{id}/subtasks/1/state"),
            json!({"state": "in_progress"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["plan"]["state"], "running");
    let (status, changed) = server
        .post(
            &format!("/api/plans/{id}/subtasks/1/state"),
            json!({"state": "done", "note": "found 3 sources", "start_next": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(state_of(&changed["plan"], 1), "done");
    assert_eq!(
        state_of(&changed["plan"], 2),
        "in_progress",
        "the next ready subtask started"
    );

    // Insert a review step after 2 with seed 000's rewiring: 3 now waits on it.
    let (status, changed) = server
        .post(
            &format!("/api/plans/{id}/subtasks"),
            json!({"subtask": {"name": "review"}, "position": {"after": 2}, "rewire_after": 2}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    let report = &changed["plan"]["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == 3)
        .unwrap()
        .clone();
    assert_eq!(report["dependencies"], json!([4]));

    let (status, changed) = server
        .send(
            Method::PATCH,
            &format!("/api/plans/{id}/subtasks/3"),
            Some(json!({"name": "write the report", "tool": "write_file"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    let tool_of_3 = |plan: &serde_json::Value| {
        plan["subtasks"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["id"] == 3))
            .map(|s| s["tool"].clone())
    };
    assert_eq!(tool_of_3(&changed["plan"]), Some(json!("write_file")));
    // A tool is one name: a sentence is refused and changes nothing.
    let (status, refused) = server
        .send(
            Method::PATCH,
            &format!("/api/plans/{id}/subtasks/3"),
            Some(json!({"tool": "write the file"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"], "invalid", "{refused}");
    let (_, read) = server.get(&format!("/api/plans/{id}")).await;
    assert_eq!(
        tool_of_3(&read["plan"]),
        Some(json!("write_file")),
        "{read}"
    );
    let (status, changed) = server
        .send(
            Method::PATCH,
            &format!("/api/plans/{id}"),
            Some(json!({"goal": "a better goal"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["plan"]["goal"], "a better goal");

    let (status, _) = server
        .post(
            &format!("/api/plans/{id}/comments"),
            json!({"body": "looks good", "subtask": 2}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, comments) = server.get(&format!("/api/plans/{id}/comments")).await;
    assert_eq!(comments[0]["body"], "looks good");
    assert_eq!(comments[0]["author"], "tester");

    let (_, hint) = server.get(&format!("/api/plans/{id}/hint?lang=zh")).await;
    assert!(
        hint.as_str().unwrap_or_default().contains("进行中"),
        "{hint}"
    );

    let (status, page) = server.get(&format!("/api/plans/{id}/events?limit=3")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["events"].as_array().map(Vec::len), Some(3));
    assert_eq!(page["events"][0]["kind"], "plan_created");
    assert_eq!(page["events"][0]["actor"], "tester");
    let after = page["next_after"].as_i64().expect("more pages");
    let (_, rest) = server
        .get(&format!("/api/plans/{id}/events?after={after}"))
        .await;
    let kinds: Vec<&str> = rest["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"comment_added"), "{kinds:?}");

    let (status, markdown) = server
        .get(&format!("/api/plans/{id}/export?format=markdown"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(markdown
        .as_str()
        .unwrap_or_default()
        .contains("write the report"));
    let (_, exported) = server.get(&format!("/api/plans/{id}/export")).await;
    let (status, imported) = server.post("/api/plans/import", exported.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{imported}");
    assert_ne!(
        imported["plan"]["id"], exported["id"],
        "an import gets a new id"
    );
    assert_eq!(imported["plan"]["subtasks"], exported["subtasks"]);

    // Finish: abandoned plans stay readable as history.
    let (status, changed) = server
        .post(
            &format!("/api/plans/{id}/finish"),
            json!({"state": "abandoned", "outcome": "test over"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    let (_, page) = server.get("/api/plans?state=abandoned&limit=200").await;
    assert!(page["plans"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["id"] == id.as_str()));
}

#[tokio::test]
async fn the_plan_story_works_on_sqlite() {
    let server = TestServer::start().await;
    story(&server, "sqlite").await;
}

#[tokio::test]
async fn plans_survive_a_restart_with_their_history() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("p.db").display());
    let first = TestServer::on(&url, crate::support::local()).await;
    let id = first.create(chain("durable")).await;
    first
        .post(
            &format!("/api/plans/{id}/subtasks/1/state"),
            json!({"state": "in_progress"}),
        )
        .await;
    let version = first.plan(&id).await["version"].clone();
    let old_base = first.base.clone();
    first.stop().await;
    // Really gone: the old address answers nothing.
    assert!(reqwest::get(format!("{old_base}/healthz")).await.is_err());

    let second = TestServer::on(&url, crate::support::local()).await;
    let plan = second.plan(&id).await;
    assert_eq!(plan["version"], version);
    assert_eq!(state_of(&plan, 1), "in_progress");
    let (_, page) = second.get(&format!("/api/plans/{id}/events")).await;
    assert_eq!(
        page["events"].as_array().map(Vec::len),
        Some(3),
        "created, running, started: {page}"
    );
}

#[tokio::test]
async fn approval_gates_the_start_and_records_the_decision() {
    let server = TestServer::start().await;
    let mut body = chain("needs approval");
    body["approval_required"] = json!(true);
    let id = server.create(body).await;
    let (status, refused) = server
        .post(
            &format!("/api/plans/{id}/subtasks/1/state"),
            json!({"state": "in_progress"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("approv"),
        "{refused}"
    );
    let (status, _) = server
        .post(
            &format!("/api/plans/{id}/reject"),
            json!({"comment": "split step 2"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    server
        .post(&format!("/api/plans/{id}/submit"), json!({}))
        .await;
    let (status, changed) = server
        .post(
            &format!("/api/plans/{id}/approve"),
            json!({"comment": "go"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["plan"]["approval"]["by"], "tester");
    let (status, _) = server
        .post(
            &format!("/api/plans/{id}/subtasks/1/state"),
            json!({"state": "in_progress"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_subtask_left_in_progress_past_its_lease_goes_back_to_todo_with_a_reason() {
    let server = TestServer::start().await;
    let id = server.create(chain("lease")).await;
    server
        .post(
            &format!("/api/plans/{id}/subtasks/1/state"),
            json!({"state": "in_progress"}),
        )
        .await;
    let released = server
        .services
        .plans
        .reconcile(std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(released, 1);
    let plan = server.plan(&id).await;
    assert_eq!(state_of(&plan, 1), "todo");
    let (_, page) = server.get(&format!("/api/plans/{id}/events")).await;
    let last = page["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["actor"], "planboard");
    assert!(
        last["event"]["note"]
            .as_str()
            .unwrap()
            .contains("lease expired"),
        "{last}"
    );
}

#[tokio::test]
async fn every_response_carries_a_request_id_and_json_and_html_are_gzipped_but_streams_are_not() {
    let server = TestServer::start().await;
    server.create(chain("compressed")).await;
    let response = server
        .client
        .get(server.url("/api/plans"))
        .header("x-request-id", "trace-me-42")
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "trace-me-42");
    assert_eq!(response.headers()["content-encoding"], "gzip");
    let page = server
        .client
        .get(server.url("/"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(page.headers()["content-encoding"], "gzip");
    let generated = page.headers()["x-request-id"].to_str().unwrap();
    assert!(uuid::Uuid::parse_str(generated).is_ok(), "{generated}");
    let stream = server
        .client
        .get(server.url("/api/stream"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    assert!(
        stream.headers().get("content-encoding").is_none(),
        "an event stream must not be buffered by a compressor"
    );
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_commits_subscribers_and_plans_by_state() {
    let server = TestServer::start().await;
    let id = server.create(chain("measured")).await;
    server
        .post(
            &format!("/api/plans/{id}/subtasks/1/state"),
            json!({"state": "in_progress"}),
        )
        .await;
    let mut stream = server
        .client
        .get(server.url(&format!("/api/plans/{id}/stream")))
        .send()
        .await
        .unwrap();
    // `ready` comes once the stream is subscribed.
    assert!(stream.chunk().await.unwrap().is_some());
    let response = server
        .client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/openmetrics-text"));
    let text = response.text().await.unwrap();
    for line in [
        r#"planboard_http_requests_total{method="POST",route="/api/plans",status="201"} 1"#,
        r#"planboard_http_requests_total{method="POST",route="/api/plans/{id}/subtasks/{sid}/state",status="200"} 1"#,
        r#"planboard_plans{state="running"} 1"#,
        "planboard_sse_subscribers 1",
        "planboard_commits_total 2",
    ] {
        assert!(text.lines().any(|l| l == line), "no line {line} in\n{text}");
    }
    assert!(
        text.contains("planboard_http_request_duration_seconds_bucket{"),
        "{text}"
    );
    assert!(
        text.contains("planboard_commit_batch_calls_count 2"),
        "{text}"
    );
    assert!(!text.contains(&id), "plan ids are never labels");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_check_runs_on_its_schedule_and_leaves_an_active_plan_alone() {
    let dir = tempfile::tempdir().unwrap();
    let config = server::config::Config {
        lease: std::time::Duration::from_secs(2),
        ..server::config::Config::defaults(
            format!("sqlite://{}", dir.path().join("l.db").display()),
            crate::support::local(),
        )
    };
    let server = TestServer::with_config(&config, |_| {}).await;
    let idle = server.create(chain("idle")).await;
    let busy = server.create(chain("busy")).await;
    for id in [&idle, &busy] {
        let (status, _) = server
            .post(
                &format!("/api/plans/{id}/subtasks/1/state"),
                json!({"state": "in_progress"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    // The busy plan sees activity every 300 ms; the idle one none.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(8);
    loop {
        server
            .post(
                &format!("/api/plans/{busy}/comments"),
                json!({"body": "still here"}),
            )
            .await;
        if state_of(&server.plan(&idle).await, 1) == "todo" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the idle plan's subtask was not released within 8 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    assert_eq!(state_of(&server.plan(&busy).await, 1), "in_progress");
    let (_, page) = server.get(&format!("/api/plans/{idle}/events")).await;
    let last = page["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["actor"], "planboard");
    assert!(
        last["event"]["note"]
            .as_str()
            .unwrap_or_default()
            .contains("lease expired"),
        "{last}"
    );
}

/// Found by the API fuzzer: an imported plan may number its subtasks up to
/// 2³², and the engine's index once made tables as long as the largest id
/// (25 GB for 2³⁰): the server died. Sparse ids now get a compact index.
#[tokio::test]
async fn an_imported_plan_with_huge_subtask_ids_is_served_and_changed() {
    let server = TestServer::start().await;
    let id = server.create(crate::support::chain("sparse ids")).await;
    let (_, mut exported) = server.get(&format!("/api/plans/{id}/export")).await;
    let huge: u64 = 1 << 30;
    let subtasks = exported["subtasks"].as_array_mut().unwrap();
    let first = subtasks[0]["id"].clone();
    subtasks.truncate(2);
    subtasks[1]["id"] = json!(huge);
    subtasks[1]["dependencies"] = json!([first]);
    exported["next_subtask_id"] = json!(huge + 1);
    let (status, imported) = server.post("/api/plans/import", exported).await;
    assert_eq!(status, StatusCode::CREATED, "{imported}");
    let plan = imported["plan"]["id"].as_str().unwrap().to_string();
    let (status, view) = server.get(&format!("/api/plans/{plan}")).await;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(view["plan"]["subtasks"][1]["id"], json!(huge));
    // The huge id depends on the first: not ready before it is done.
    let (status, _) = server
        .post(
            &format!("/api/plans/{plan}/subtasks/{huge}/state"),
            json!({"state": "in_progress"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "not ready yet");
    let (status, body) = server
        .post(
            &format!("/api/plans/{plan}/subtasks/{first}/state"),
            json!({"state": "in_progress"}),
        )
        .await;
    assert!(status.is_success(), "{body}");
    let (status, body) = server
        .post(
            &format!("/api/plans/{plan}/subtasks/{first}/state"),
            json!({"state": "done", "note": "ok"}),
        )
        .await;
    assert!(status.is_success(), "{body}");
    let (status, body) = server
        .post(
            &format!("/api/plans/{plan}/subtasks/{huge}/state"),
            json!({"state": "in_progress"}),
        )
        .await;
    assert!(
        status.is_success(),
        "ready once its dependency is done: {body}"
    );
    let (status, changed) = server
        .post(
            &format!("/api/plans/{plan}/replace-subtasks"),
            json!({"subtasks": [{"name": "one"}, {"name": "two"}]}),
        )
        .await;
    assert!(status.is_success() || status.is_client_error(), "{changed}");
    assert_eq!(server.get("/healthz").await.0, StatusCode::OK);
}
