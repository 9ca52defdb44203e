//! People's reviews of finished plans over HTTP and MCP: the queue, each
//! reviewer's own review, the refusals, and the loop back to the agent:
//! a review's note reaches the planner of a similar later task and not of
//! an unrelated one.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::fake_openai::{shape, FakeOpenAi};
use crate::runs::{server_on, start, wait_for};
use crate::support::TestServer;

/// A request as `reviewer`: the local user acting through an agent of
/// that name, so one local server has several reviewers.
async fn as_reviewer(
    server: &TestServer,
    reviewer: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = server
        .client
        .request(method, server.url(path))
        .header("x-planboard-agent", reviewer);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The planner prompts the fake model was sent for tasks containing `word`.
fn planner_prompts(fake: &FakeOpenAi, word: &str) -> Vec<String> {
    fake.requests()
        .iter()
        .filter(|r| shape(r) == "plan")
        .map(|r| r["messages"].to_string())
        .filter(|m| m.contains(word))
        .collect()
}

#[tokio::test]
async fn a_finished_plan_is_queued_reviewed_by_several_people_and_the_note_reaches_a_similar_tasks_planner(
) {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    let (run, plan) = start(
        &server,
        json!({"task": "Deploy the billing service to staging", "approval_required": false}),
    )
    .await;
    // Not finished yet, or just: a review of a running plan is refused,
    // a finished one is queued with what was asked.
    let view = wait_for(&server, &run, "done").await;
    assert_eq!(view["plan_id"], plan.as_str());
    let (status, queue) = server.get("/api/review-queue").await;
    assert_eq!(status, StatusCode::OK, "{queue}");
    let queued = queue["plans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["plan_id"] == plan.as_str())
        .unwrap_or_else(|| panic!("queued: {queue}"))
        .clone();
    assert_eq!(queued["task"], "Deploy the billing service to staging");
    assert_eq!(queued["run_id"], run.as_str());
    assert_eq!(queue["total"], 1);

    let path = format!("/api/plans/{plan}/review");
    // Refusals, each with its reason; nothing is stored.
    let (status, body) = as_reviewer(
        &server,
        "ana",
        Method::PUT,
        &path,
        Some(json!({"verdict": "wrong"})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("needs a note"),
        "{body}"
    );
    let (status, body) = as_reviewer(
        &server,
        "ana",
        Method::PUT,
        &path,
        Some(json!({"verdict": "good", "subtasks": [{"subtask": 99, "note": "?"}]})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("no subtask 99"),
        "{body}"
    );
    let (status, _) = as_reviewer(
        &server,
        "ana",
        Method::PUT,
        &path,
        Some(json!({"verdict": "fine"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "not a verdict");
    let (status, _) = as_reviewer(
        &server,
        "ana",
        Method::PUT,
        &path,
        Some(json!({"verdict": "good", "note": "x".repeat(4001)})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = server.get(&format!("/api/plans/{plan}/reviews")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        server.get("/api/review-queue").await.1["total"],
        1,
        "still waiting"
    );

    // Two reviewers; ana changes her own review (same id, new note).
    let (status, first) = as_reviewer(
        &server,
        "ana",
        Method::PUT,
        &path,
        Some(json!({"verdict": "good", "note": "fine as it is"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["reviewer"], "tester · ana");
    let (status, changed) = as_reviewer(
        &server,
        "ana",
        Method::PUT,
        &path,
        Some(json!({
            "verdict": "needs_changes",
            "note": "always add a rollback step before deploying",
            "subtasks": [{"subtask": 1, "note": "check the service health first"}]
        })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["id"], first["id"], "her review, changed");
    assert_eq!(changed["verdict"], "needs_changes");
    let (status, _) = as_reviewer(
        &server,
        "bo",
        Method::PUT,
        &path,
        Some(json!({"verdict": "good"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, reviews) = server.get(&format!("/api/plans/{plan}/reviews")).await;
    let who: Vec<&str> = reviews
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reviewer"].as_str().unwrap())
        .collect();
    assert_eq!(who, ["tester · ana", "tester · bo"], "{reviews}");
    assert_eq!(
        server.get("/api/review-queue").await.1["total"],
        0,
        "reviewed"
    );
    let (_, wanting) = server.get("/api/reviews?verdict=needs_changes").await;
    assert_eq!(wanting.as_array().unwrap().len(), 1, "{wanting}");
    let (_, by_bo) = server
        .get("/api/reviews?reviewer=tester%20%C2%B7%20bo")
        .await;
    assert_eq!(by_bo.as_array().unwrap().len(), 1, "{by_bo}");
    let (status, _) = server.get("/api/reviews?verdict=meh").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // The review is remembered; ana's first words were forgotten with it.
    let (_, memories) = server.get("/api/memories?q=rollback%20deploying").await;
    assert!(
        memories
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["text"].as_str().unwrap().contains("rollback step")),
        "{memories}"
    );
    let (_, old) = server.get("/api/memories?q=fine%20as%20it%20is").await;
    assert!(
        old.as_array()
            .unwrap()
            .iter()
            .all(|m| !m["text"].as_str().unwrap().contains("fine as it is")),
        "the replaced review's memory is gone: {old}"
    );

    // A similar task's planner reads the note; an unrelated one's does not.
    let (similar, _) = start(
        &server,
        json!({"task": "Deploy the billing service to production", "approval_required": false}),
    )
    .await;
    wait_for(&server, &similar, "done").await;
    let (unrelated, _) = start(
        &server,
        json!({"task": "A short poem about autumn leaves", "approval_required": false}),
    )
    .await;
    wait_for(&server, &unrelated, "done").await;
    let prompts = planner_prompts(&fake, "billing service to production");
    assert!(!prompts.is_empty());
    assert!(
        prompts
            .iter()
            .all(|p| p.contains("always add a rollback step")),
        "{prompts:?}"
    );
    assert!(
        prompts
            .iter()
            .all(|p| p.contains("check the service health first")),
        "{prompts:?}"
    );
    let prompts = planner_prompts(&fake, "autumn leaves");
    assert!(!prompts.is_empty());
    assert!(
        prompts.iter().all(|p| !p.contains("rollback")),
        "{prompts:?}"
    );

    // Only one's own review is removed; twice is a 404.
    let (status, _) = as_reviewer(&server, "ana", Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = as_reviewer(&server, "ana", Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, reviews) = server.get(&format!("/api/plans/{plan}/reviews")).await;
    assert_eq!(
        reviews.as_array().unwrap().len(),
        1,
        "bo's stays: {reviews}"
    );
    let (_, memories) = server.get("/api/memories?q=rollback%20deploying").await;
    assert!(
        memories
            .as_array()
            .unwrap()
            .iter()
            .all(|m| !m["text"].as_str().unwrap().contains("rollback step")),
        "her review's memory went with it: {memories}"
    );
    let (status, _) = server
        .get(&format!("/api/plans/{}/reviews", uuid::Uuid::new_v4()))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_plan_still_running_is_not_reviewed_and_mcp_clients_review_too() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    let plan = server
        .create(json!({"title": "Hand-made", "subtasks": [{"name": "one"}]}))
        .await;
    let (status, body) = server
        .send(
            Method::PUT,
            &format!("/api/plans/{plan}/review"),
            Some(json!({"verdict": "good"})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "not_finished");
    let (status, _) = server
        .post(
            &format!("/api/plans/{plan}/finish"),
            json!({"state": "abandoned", "outcome": "dropped"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    use rmcp::ServiceExt;
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(server.url("/mcp"));
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    for name in ["review_plan", "plan_reviews", "review_queue"] {
        assert!(tools.iter().any(|t| t.name == name), "{name} listed");
    }
    let call = |name: &'static str, args: Value| {
        let client = &client;
        async move {
            client
                .call_tool(crate::mcp::params(name, args))
                .await
                .unwrap()
        }
    };
    let queue = call("review_queue", json!({})).await;
    assert!(crate::mcp::text(&queue).contains(&plan), "{queue:?}");
    let done = call(
        "review_plan",
        json!({"plan_id": plan, "verdict": "wrong", "note": "this should have been complex"}),
    )
    .await;
    assert_ne!(done.is_error, Some(true), "{done:?}");
    let reviews = call("plan_reviews", json!({"plan_id": plan})).await;
    let text = crate::mcp::text(&reviews);
    assert!(text.contains("this should have been complex"), "{text}");
    let refused = call("review_plan", json!({"plan_id": plan, "verdict": "wrong"})).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let (_, reviews) = server.get(&format!("/api/plans/{plan}/reviews")).await;
    assert_eq!(reviews[0]["verdict"], "wrong");
    assert!(
        reviews[0]["reviewer"]
            .as_str()
            .unwrap()
            .starts_with("tester · "),
        "{reviews}"
    );
    client.cancel().await.unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
}

#[tokio::test]
async fn a_finished_run_runs_again_from_a_subtask_keeping_the_results_before_it_and_linked_both_ways(
) {
    use reqwest::multipart::{Form, Part};
    let fake = FakeOpenAi::start().await;
    let server = crate::inputs::server(&fake, Vec::new()).await;
    let form = Form::new()
        .part(
            "run",
            crate::inputs::run_part(json!({"task": "Summarise the sales", "mode": "simple", "approval_required": false})),
        )
        .part("files", Part::bytes(b"north,3\n".to_vec()).file_name("sales.csv"));
    let (status, view) = crate::inputs::upload(&server, form).await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    let run = view["id"].as_str().unwrap().to_string();
    let plan = view["plan_id"].as_str().unwrap().to_string();
    wait_for(&server, &run, "done").await;
    let executed = |name: &str| {
        fake.requests()
            .iter()
            .filter(|r| shape(r) == "action" && crate::fake_openai::subtask(r) == name)
            .count()
    };
    assert_eq!((executed("gather"), executed("report")), (1, 1));

    // Refusals first: a subtask the plan lacks, an unknown run.
    let again = |run: String, from: u32| {
        let request = server
            .client
            .post(server.url(&format!("/api/runs/{run}/again")))
            .json(&json!({"from": from}));
        async move {
            let response = request.send().await.unwrap();
            let status = response.status();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let (status, body) = again(run.clone(), 9).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("no subtask 9"),
        "{body}"
    );
    let (status, _) = again(uuid::Uuid::new_v4().to_string(), 1).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // From #2: #1's result is kept, #2 is done again, in a copy of the workspace.
    let (status, second) = again(run.clone(), 2).await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    let second_run = second["id"].as_str().unwrap().to_string();
    let second_plan = second["plan_id"].as_str().unwrap().to_string();
    assert_ne!(second_plan, plan);
    assert_eq!(second["again_of"]["run"], run.as_str());
    assert_eq!(second["again_of"]["from"], 2);
    wait_for(&server, &second_run, "done").await;
    assert_eq!(
        (executed("gather"), executed("report")),
        (1, 2),
        "only #2 ran again"
    );
    let fresh = server.plan(&second_plan).await;
    let old = server.plan(&plan).await;
    assert_eq!(
        fresh["subtasks"][0]["outcome"], old["subtasks"][0]["outcome"],
        "#1's result kept"
    );
    assert_eq!(fresh["subtasks"][0]["state"], "done");
    let (_, files) = server
        .get(&format!("/api/runs/{second_run}/artifacts"))
        .await;
    assert!(
        files.to_string().contains("sales.csv"),
        "the workspace was copied: {files}"
    );
    // The earlier plan names the new one.
    let (_, comments) = server.get(&format!("/api/plans/{plan}/comments")).await;
    assert!(comments.to_string().contains(&second_plan), "{comments}");

    // A plan still at work is not run again.
    let (running, _) = start(
        &server,
        json!({"task": "Wait for approval", "approval_required": true}),
    )
    .await;
    wait_for(&server, &running, "awaiting_approval").await;
    let (status, body) = again(running, 1).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "not_finished");
}

/// With an embedding model (`PLANBOARD_EMBEDDING_MODEL`), recall is
/// hybrid: a review note on "Release the invoicing app" reaches the
/// planner of "Ship accounting software tonight", which shares no word
/// with it but its meaning (the fake model's vectors), and not the
/// planner of an unrelated task; vectors are made once and kept; with the
/// endpoint down, runs go on with full-text recall.
#[tokio::test]
async fn with_embeddings_a_review_reaches_a_task_of_the_same_meaning_in_other_words() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut llm = fake.config(Duration::from_secs(10));
    llm.embedding_model = Some("fake-embed".into());
    let config = server::config::Config {
        lease: Duration::from_secs(3600),
        llm: Some(llm),
        workspaces: dir.path().join("workspaces"),
        run_lease: Duration::from_secs(3),
        ..server::config::Config::defaults(
            format!("sqlite://{}", dir.path().join("runs.db").display()),
            crate::support::local(),
        )
    };
    let server = TestServer::with_config(&config, |_| {}).await;
    let (run, plan) = start(
        &server,
        json!({"task": "Release the invoicing app", "approval_required": false}),
    )
    .await;
    wait_for(&server, &run, "done").await;
    let (status, _) = as_reviewer(
        &server,
        "ana",
        Method::PUT,
        &format!("/api/plans/{plan}/review"),
        Some(json!({"verdict": "needs_changes", "note": "announce the maintenance window first"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // No word in common: full-text search alone finds nothing.
    let (_, by_words) = server
        .get("/api/memories?q=Ship%20accounting%20software%20tonight")
        .await;
    assert_eq!(by_words, json!([]), "no shared word");

    let (similar, _) = start(
        &server,
        json!({"task": "Ship accounting software tonight", "approval_required": false}),
    )
    .await;
    wait_for(&server, &similar, "done").await;
    let prompts = planner_prompts(&fake, "Ship accounting software");
    assert_eq!(prompts.len(), 1);
    assert!(
        prompts[0].contains("announce the maintenance window first"),
        "{}",
        prompts[0]
    );
    let (unrelated, _) = start(
        &server,
        json!({"task": "Bake a chocolate cake for the team", "approval_required": false}),
    )
    .await;
    wait_for(&server, &unrelated, "done").await;
    let prompts = planner_prompts(&fake, "chocolate cake");
    assert_eq!(prompts.len(), 1);
    assert!(
        !prompts[0].contains("maintenance window"),
        "an unrelated task recalls nothing of it: {}",
        prompts[0]
    );
    // The review's memory was embedded once, then read back.
    let embedded = fake.embedded();
    assert_eq!(
        embedded
            .iter()
            .filter(|t| t.contains("announce the maintenance window"))
            .count(),
        1,
        "{embedded:?}"
    );

    // The endpoint down: the run still recalls by words and finishes.
    fake.embeddings_down(true);
    let (down, _) = start(
        &server,
        json!({"task": "Deploy the invoicing app again", "approval_required": false}),
    )
    .await;
    wait_for(&server, &down, "done").await;
    let prompts = planner_prompts(&fake, "invoicing app again");
    assert!(
        prompts[0].contains("announce the maintenance window first"),
        "full-text recall by 'invoicing app': {}",
        prompts[0]
    );
}
