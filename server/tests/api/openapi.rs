//! The OpenAPI document describes what the server really does: typed
//! bodies from the same types the handlers read, and every error status.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::TestServer;

async fn document(server: &TestServer) -> Value {
    let (status, doc) = server.get("/api/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    doc
}

#[tokio::test]
async fn every_operation_has_typed_bodies_and_documents_its_errors() {
    let server = TestServer::start().await;
    let doc = document(&server).await;
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for name in [
        "Plan",
        "NewPlan",
        "Command",
        "Event",
        "ErrorBody",
        "SetState",
        "Changed",
    ] {
        assert!(schemas.contains_key(name), "components lack {name}");
    }
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            operations += 1;
            let responses = op["responses"].as_object().unwrap();
            assert!(
                responses.contains_key("400") && responses.contains_key("401"),
                "{method} {path} documents no 400/401: {:?}",
                responses.keys().collect::<Vec<_>>()
            );
            // A failed store is a 500 on every route.
            assert!(
                responses.contains_key("500"),
                "{method} {path} documents no 500: {:?}",
                responses.keys().collect::<Vec<_>>()
            );
            // Every $ref points at a component that exists.
            for reference in refs(op) {
                let name = reference.trim_start_matches("#/components/schemas/");
                assert!(
                    schemas.contains_key(name),
                    "{method} {path}: dangling {reference}"
                );
            }
            if let Some(body) = op.get("requestBody") {
                let schema = &body["content"]["application/json"]["schema"];
                assert_ne!(
                    schema.get("type"),
                    Some(&json!("object")),
                    "{method} {path}: a bare object body"
                );
            }
        }
    }
    assert!(operations >= 34, "{operations} operations");
    // The error body's code is the one mapping's typed code: every code
    // a client can get is listed, the store's among them.
    assert_eq!(
        schemas["ErrorBody"].pointer("/properties/error/$ref"),
        Some(&json!("#/components/schemas/ErrorCode"))
    );
    let codes: Vec<String> = consts(&schemas["ErrorCode"]);
    for code in [
        "bad_request",
        "not_found",
        "conflict",
        "already_exists",
        "invalid",
        "cycle",
        "no_model",
        "store",
        "internal",
    ] {
        assert!(codes.contains(&code.to_string()), "{code}: {codes:?}");
    }
    for schema in schemas.values() {
        for reference in refs(schema) {
            let name = reference.trim_start_matches("#/components/schemas/");
            assert!(schemas.contains_key(name), "dangling {reference}");
        }
    }
    assert_eq!(
        doc.pointer("/paths/~1api~1plans/post/requestBody/content/application~1json/schema/$ref"),
        Some(&json!("#/components/schemas/NewPlan"))
    );
    let links = doc
        .pointer("/paths/~1api~1plans/post/responses/201/links")
        .and_then(Value::as_object)
        .expect("create links to the plan's routes");
    assert!(links.contains_key("get_plan"), "{links:?}");
    // A started run leads to its routes (by its id) and its plan's (by plan_id).
    let links = doc
        .pointer("/paths/~1api~1runs/post/responses/201/links")
        .and_then(Value::as_object)
        .expect("starting a run links to the run's routes");
    assert_eq!(links["get_run"]["parameters"]["id"], "$response.body#/id");
    assert_eq!(
        links["get_plan"]["parameters"]["id"],
        "$response.body#/plan_id"
    );
    assert!(
        links.contains_key("pause_run") && links.contains_key("run_events"),
        "{links:?}"
    );
    assert!(
        !links.contains_key("get_artifact"),
        "needs a path besides the id"
    );
    // A subtask's tool is in what is read, created and edited, never required.
    for name in ["Subtask", "NewSubtask", "EditSubtask"] {
        let schema = &schemas[name];
        assert!(
            schema.pointer("/properties/tool").is_some(),
            "{name} has a tool: {schema}"
        );
        let required = schema["required"].as_array().cloned().unwrap_or_default();
        assert!(!required.contains(&json!("tool")), "{name}: {schema}");
    }
}

/// The strings an enum's schema allows (`const` or `enum`).
fn consts(value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(c)) = map.get("const") {
                    found.push(c.clone());
                }
                if let Some(Value::Array(all)) = map.get("enum") {
                    found.extend(all.iter().filter_map(Value::as_str).map(str::to_string));
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    found
}

fn refs(value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    found.push(r.clone());
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    found
}

#[tokio::test]
async fn what_the_schema_forbids_is_refused_and_what_it_allows_is_read() {
    let server = TestServer::start().await;
    // `title` is required.
    let (status, error) = server.post("/api/plans", json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    // Out of the documented ranges and enums: 400, not silently clamped.
    for path in [
        "/api/plans?limit=0",
        "/api/plans?limit=201",
        "/api/plans?state=sleeping",
        "/api/tools?dialect=",
    ] {
        let (status, error) = server.get(path).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {error}");
        assert_eq!(error["error"], "bad_request", "{path}");
    }
    let id = server.create(crate::support::chain("typed")).await;
    let (status, error) = server.get(&format!("/api/plans/{id}/export?format=")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    // An unknown field in a body is named, not ignored.
    let (status, error) = server
        .post(
            &format!("/api/plans/{id}/subtasks/1/state"),
            json!({"state": "in_progress", "nte": "typo"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("nte"),
        "{error}"
    );
    // `active` lists what is under way: approved, running or paused plans.
    server
        .post(
            &format!("/api/plans/{id}/subtasks/1/state"),
            json!({"state": "in_progress"}),
        )
        .await;
    let (_, page) = server.get("/api/plans?state=active").await;
    assert_eq!(page["plans"][0]["id"], id.as_str());
    // A body is an object: `[]` is not "no fields".
    let response = server
        .client
        .post(server.url(&format!("/api/plans/{id}/pause")))
        .json(&json!([]))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    // A move past the end names the body's index, not a missing resource.
    let (status, error) = server
        .post(
            &format!("/api/plans/{id}/subtasks/1/move"),
            json!({"to_index": 99}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    // An empty body is fine where every field is optional.
    let response = server
        .client
        .post(server.url(&format!("/api/plans/{id}/pause")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    // So is one of JSON's own whitespace (read as no body: the plan, paused
    // already, then cannot pause again); a form feed is not JSON at all
    // (Schemathesis sent one, and it was read as no body).
    for (body, status) in [
        (" \t\r\n", StatusCode::UNPROCESSABLE_ENTITY),
        ("\x0c", StatusCode::BAD_REQUEST),
    ] {
        let response = server
            .client
            .post(server.url(&format!("/api/plans/{id}/pause")))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let got = response.status();
        let text = response.text().await.unwrap();
        assert_eq!(got, status, "{body:?}: {text}");
    }
}

#[tokio::test]
async fn a_deleted_plans_log_stays_readable_and_an_unknown_plans_is_a_404() {
    let server = TestServer::start().await;
    let id = server.create(crate::support::chain("gone")).await;
    server
        .send(reqwest::Method::DELETE, &format!("/api/plans/{id}"), None)
        .await;
    let (status, page) = server.get(&format!("/api/plans/{id}/events")).await;
    assert_eq!(status, StatusCode::OK);
    let kinds: Vec<&str> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.last(), Some(&"plan_deleted"), "{kinds:?}");
    let (status, _) = server
        .get(&format!("/api/plans/{}/events", uuid::Uuid::new_v4()))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
