//! Every class of bad input gets a 4xx with a JSON message, and the plan is
//! exactly as it was.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{chain, TestServer};

async fn refused(
    server: &TestServer,
    id: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
    want: StatusCode,
    code: &str,
) {
    let before = server.plan(id).await;
    let (status, error) = server.send(method, path, body).await;
    assert_eq!(status, want, "{path}: {error}");
    assert_eq!(error["error"], code, "{error}");
    assert!(
        error["message"].as_str().is_some_and(|m| m.len() > 10),
        "a sentence: {error}"
    );
    assert_eq!(server.plan(id).await, before, "{path} changed nothing");
}

#[tokio::test]
async fn bad_requests_get_clear_errors_and_change_nothing() {
    let server = TestServer::start().await;
    let id = server.create(chain("bad input")).await;
    let p = |rest: &str| format!("/api/plans/{id}{rest}");

    // Malformed JSON.
    let response = server
        .client
        .post(server.url(&p("/subtasks")))
        .header("content-type", "application/json")
        .body("{\"subtask\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"], "bad_request");

    // Unknown plan, unknown subtask, not an id.
    let (status, _) = server
        .get(&format!("/api/plans/{}", uuid::Uuid::new_v4()))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = server.get("/api/plans/not-a-uuid").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    refused(
        &server,
        &id,
        Method::POST,
        &p("/subtasks/99/state"),
        Some(json!({"state": "in_progress"})),
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;

    // A cycle, a self-edge, an unknown dependency.
    refused(
        &server,
        &id,
        Method::POST,
        &p("/subtasks/1/dependencies"),
        Some(json!({"dependencies": [3]})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "cycle",
    )
    .await;
    refused(
        &server,
        &id,
        Method::POST,
        &p("/subtasks/2/dependencies"),
        Some(json!({"dependencies": [2]})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "cycle",
    )
    .await;
    refused(
        &server,
        &id,
        Method::POST,
        &p("/subtasks/2/dependencies"),
        Some(json!({"dependencies": [42]})),
        // The path's plan and subtask exist: the body is at fault.
        StatusCode::UNPROCESSABLE_ENTITY,
        "not_found",
    )
    .await;

    // Illegal transitions: todo → done, and starting before a dependency is done.
    refused(
        &server,
        &id,
        Method::POST,
        &p("/subtasks/1/state"),
        Some(json!({"state": "done"})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "illegal_transition",
    )
    .await;
    refused(
        &server,
        &id,
        Method::POST,
        &p("/subtasks/3/state"),
        Some(json!({"state": "in_progress"})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "not_ready",
    )
    .await;

    // An unknown state name and a wrongly typed field.
    refused(
        &server,
        &id,
        Method::POST,
        &p("/subtasks/1/state"),
        Some(json!({"state": "finished"})),
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    refused(
        &server,
        &id,
        Method::POST,
        &p("/subtasks/1/move"),
        Some(json!({"to_index": "first"})),
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;

    // Too long a string, too big a body.
    let long = "x".repeat(10_000);
    refused(
        &server,
        &id,
        Method::PATCH,
        &p("/subtasks/1"),
        Some(json!({"name": long})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid",
    )
    .await;
    let huge = "y".repeat(3 * 1024 * 1024);
    refused(
        &server,
        &id,
        Method::POST,
        &p("/comments"),
        Some(json!({"body": huge})),
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
    )
    .await;

    // A stale expected version: 409 with the current version.
    let version = server.plan(&id).await["version"].as_u64().unwrap();
    let (status, error) = server
        .post(
            &p("/subtasks"),
            json!({"subtask": {"name": "late"}, "expected_version": version - 1}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    assert_eq!(error["current_version"], version);
    assert_eq!(server.plan(&id).await["version"], version);
}

#[tokio::test]
async fn a_full_plan_refuses_another_subtask() {
    let server = TestServer::start().await;
    let mut body = chain("small");
    body["max_subtasks"] = json!(3);
    let id = server.create(body).await;
    refused(
        &server,
        &id,
        Method::POST,
        &format!("/api/plans/{id}/subtasks"),
        Some(json!({"subtask": {"name": "one too many"}})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "plan_full",
    )
    .await;
    // And a plan created over its own limit is refused whole.
    let mut body = chain("too big");
    body["max_subtasks"] = json!(2);
    let (status, error) = server.post("/api/plans", body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    let (_, page) = server.get("/api/plans?q=too%20big").await;
    assert_eq!(
        page["plans"].as_array().map(Vec::len),
        Some(0),
        "no half-written plan"
    );
}

#[tokio::test]
async fn a_misspelt_field_is_refused_by_name_instead_of_silently_dropped() {
    let server = TestServer::start().await;
    // `depends_on` for `dependencies`: dropping it would create a plan whose
    // second step runs before the first.
    let body = json!({"title": "misspelt", "subtasks": [
        {"name": "fetch"}, {"name": "sum", "depends_on": [1]}
    ]});
    let (status, error) = server.post("/api/plans", body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("depends_on")),
        "names the field: {error}"
    );
    let (status, error) = server
        .post("/api/plans", json!({"title": "misspelt", "bogus": 1}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    let (_, page) = server.get("/api/plans?q=misspelt").await;
    assert_eq!(page["plans"].as_array().map(Vec::len), Some(0), "no plan");

    // The same inside a command and a new subtask, on an existing plan.
    let id = server.create(chain("kept")).await;
    refused(
        &server,
        &id,
        Method::POST,
        &format!("/api/plans/{id}/commands"),
        Some(json!({"op": "set_subtask_state", "id": 1, "state": "in_progress", "outcome": "x"})),
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    refused(
        &server,
        &id,
        Method::POST,
        &format!("/api/plans/{id}/subtasks"),
        Some(json!({"subtask": {"name": "new", "depends_on": [1]}})),
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
}

#[tokio::test]
async fn an_unknown_api_route_or_method_answers_json_not_the_boards_page() {
    let server = TestServer::start().await;
    for path in ["/api/plan", "/api/v2/plans", "/api/plans/x/y/z/w"] {
        let response = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json"),
            "{path}"
        );
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "not_found", "{path}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains(path),
            "{path}: {body}"
        );
    }
    let (status, body) = server
        .send(reqwest::Method::PUT, "/api/plans", Some(json!({})))
        .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
    assert_eq!(body["error"], "method_not_allowed");
    // The board's pages still answer HTML 404s.
    let page = server
        .client
        .get(server.url("/no-such-page"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_text_and_size_limits_hold_at_their_edges() {
    let server = TestServer::start().await;
    let id = server.create(chain("limits")).await;
    let x = |n: usize| "x".repeat(n);
    // (path, body at the limit, body one over)
    let cases = [
        (
            "/api/plans".to_string(),
            json!({"title": x(200)}),
            json!({"title": x(201)}),
        ),
        (
            format!("/api/plans/{id}/subtasks"),
            json!({"subtask": {"name": x(200), "description": x(8_000)}}),
            json!({"subtask": {"name": "n", "description": x(8_001)}}),
        ),
        (
            format!("/api/plans/{id}/comments"),
            json!({"body": x(4_000)}),
            json!({"body": x(4_001)}),
        ),
    ];
    for (path, at_limit, over) in cases {
        let (status, body) = server.post(&path, at_limit).await;
        assert!(status.is_success(), "{path} at the limit: {body}");
        let (status, body) = server.post(&path, over).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{path} over: {body}"
        );
        assert_eq!(body["error"], "invalid", "{body}");
    }
    // 2,000 subtasks fit in a plan, 2,001 do not; 100 dependencies, not 101.
    let many =
        |n: usize| -> Vec<Value> { (0..n).map(|i| json!({"name": format!("s{i}")})).collect() };
    let (status, body) = server
        .post(
            "/api/plans",
            json!({"title": "big", "subtasks": many(5_000)}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{}", body["message"]);
    let (status, body) = server
        .post(
            "/api/plans",
            json!({"title": "too big", "subtasks": many(5_001)}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["error"], "plan_full", "{body}");
    let mut deps = many(102);
    deps[101]["dependencies"] = json!((1..=100).collect::<Vec<u32>>());
    let (status, body) = server
        .post(
            "/api/plans",
            json!({"title": "100 deps", "subtasks": deps.clone()}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{}", body["message"]);
    deps[101]["dependencies"] = json!((1..=101).collect::<Vec<u32>>());
    let (status, body) = server
        .post("/api/plans", json!({"title": "101 deps", "subtasks": deps}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
}

#[tokio::test]
async fn if_match_guards_a_write_like_expected_version_and_commands_take_any_op() {
    let server = TestServer::start().await;
    let id = server.create(chain("guarded")).await;
    let version = server.plan(&id).await["version"].as_u64().unwrap();
    let patch = |if_match: String| {
        server
            .client
            .patch(server.url(&format!("/api/plans/{id}")))
            .header("if-match", if_match)
            .json(&json!({"title": "renamed"}))
            .send()
    };
    let stale = patch(format!("\"{}\"", version - 1)).await.unwrap();
    assert_eq!(stale.status(), StatusCode::CONFLICT);
    let body: Value = stale.json().await.unwrap();
    assert_eq!(body["current_version"], version);
    let malformed = patch("soon".into()).await.unwrap();
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    let fresh = patch(version.to_string()).await.unwrap();
    assert_eq!(fresh.status(), StatusCode::OK);
    assert_eq!(server.plan(&id).await["title"], "renamed");

    let (status, body) = server
        .post(
            &format!("/api/plans/{id}/commands"),
            json!({"op": "set_notes", "id": 2, "notes": "via /commands", "expected_version": version + 1}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["plan"]["subtasks"][1]["notes"], "via /commands");
    let (status, body) = server
        .post(
            &format!("/api/plans/{id}/commands"),
            json!({"op": "teleport"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}
