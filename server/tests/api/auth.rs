//! Local mode and token mode.

use std::collections::HashMap;

use reqwest::{Method, StatusCode};
use serde_json::json;
use server::auth::{Identity, Role};
use server::config::{Access, Config};

use crate::support::{chain, TestServer};

pub const VIEWER: &str = "viewer-token-0123456789";
pub const OPERATOR: &str = "operator-token-0123456789";
pub const ADMIN: &str = "admin-token-0123456789";

pub async fn token_mode() -> TestServer {
    let mut tokens = HashMap::new();
    for (token, name, role) in [
        (VIEWER, "watcher", Role::Viewer),
        (OPERATOR, "robot", Role::Operator),
        (ADMIN, "boss", Role::Admin),
    ] {
        tokens.insert(token.to_string(), Identity::new(name, role));
    }
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let mut server = TestServer::on(&url, Access::Tokens(tokens)).await;
    server._dir = Some(dir);
    server
}

#[tokio::test]
async fn tokens_decide_who_may_read_and_write() {
    let server = token_mode().await;
    let (status, error) = server.get("/api/plans").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{error}");
    let server = server.with_token("not-a-real-token-at-all");
    let (status, _) = server.get("/api/plans").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let server = server.with_token(OPERATOR);
    let id = server.create(chain("by a robot")).await;
    let (_, page) = server.get(&format!("/api/plans/{id}/events")).await;
    assert_eq!(
        page["events"][0]["actor"], "robot",
        "the token's name is the actor"
    );
    let (status, _) = server
        .send(Method::DELETE, &format!("/api/plans/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "deleting needs admin");

    let server = server.with_token(VIEWER);
    let (status, _) = server.get(&format!("/api/plans/{id}")).await;
    assert_eq!(status, StatusCode::OK, "viewers read");
    let (status, error) = server
        .post(&format!("/api/plans/{id}/comments"), json!({"body": "hi"}))
        .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "viewers cannot write: {error}"
    );

    let server = server.with_token(ADMIN);
    let (status, _) = server
        .send(Method::DELETE, &format!("/api/plans/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = server.get(&format!("/api/plans/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The deletion is itself in the log.
    let (_, page) = server.get(&format!("/api/plans/{id}/events")).await;
    assert_eq!(
        page["events"].as_array().unwrap().last().unwrap()["kind"],
        "plan_deleted"
    );
}

#[test]
fn local_mode_refuses_to_listen_beyond_loopback() {
    let local = Config {
        lease: std::time::Duration::ZERO,
        ..Config::defaults("", crate::support::local())
    };
    assert!(local.check_bind("127.0.0.1:3000".parse().unwrap()).is_ok());
    let err = local
        .check_bind("0.0.0.0:3000".parse().unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("PLANBOARD_TOKENS"), "{err}");
    let tokens = Config {
        access: Access::Tokens(HashMap::new()),
        ..local
    };
    assert!(tokens.check_bind("0.0.0.0:3000".parse().unwrap()).is_ok());
}

/// In token mode the runs follow the roles: no token reads nothing;
/// viewers read runs and their files but neither start nor steer them
/// (over HTTP or MCP); operators do; the actor is the token's name. An
/// artifact path climbing out of the workspace is refused.
#[tokio::test]
async fn in_token_mode_viewers_read_runs_and_only_operators_start_and_steer_them() {
    use std::time::Duration;
    let fake = crate::fake_openai::FakeOpenAi::start().await;
    let mut tokens = HashMap::new();
    tokens.insert(VIEWER.to_string(), Identity::new("watcher", Role::Viewer));
    tokens.insert(OPERATOR.to_string(), Identity::new("robot", Role::Operator));
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        lease: Duration::from_secs(3600),
        llm: Some(fake.config(Duration::from_secs(10))),
        workspaces: dir.path().join("workspaces"),
        ..Config::defaults(
            format!("sqlite://{}", dir.path().join("t.db").display()),
            Access::Tokens(tokens),
        )
    };
    let anonymous = TestServer::with_config(&config, |_| {}).await;
    let task = json!({"task": "Summarise the week", "approval_required": true});
    let (status, _) = anonymous.post("/api/runs", task.clone()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = anonymous.get("/api/runs").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let operator = anonymous.with_token(OPERATOR);
    let (status, run) = operator.post("/api/runs", task.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{run}");
    assert_eq!(run["started_by"], "robot");
    let id = run["id"].as_str().unwrap().to_string();
    // Climbing out of the workspace: never the file.
    let (status, body) = operator
        .get(&format!("/api/runs/{id}/artifacts/..%2F..%2Ft.db"))
        .await;
    assert!(
        status == StatusCode::NOT_FOUND || status == StatusCode::BAD_REQUEST,
        "{status} {body}"
    );

    let viewer = operator.with_token(VIEWER);
    for path in [
        "/api/runs".to_string(),
        format!("/api/runs/{id}"),
        format!("/api/runs/{id}/events"),
        format!("/api/runs/{id}/artifacts"),
    ] {
        let (status, body) = viewer.get(&path).await;
        assert_eq!(status, StatusCode::OK, "viewers read {path}: {body}");
    }
    let (status, _) = viewer.post("/api/runs", task.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "viewers do not start runs");
    for action in ["pause", "cancel"] {
        let (status, _) = viewer
            .post(&format!("/api/runs/{id}/{action}"), json!({}))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "viewers do not {action}");
    }
    // Over MCP too: a viewer's start_run is refused.
    let (status, body) = viewer
        .send(
            Method::POST,
            "/mcp",
            Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "start_run", "arguments": {"task": "x"}}})),
        )
        .await;
    assert!(
        status == StatusCode::FORBIDDEN || body.to_string().contains("viewer"),
        "{status} {body}"
    );
    let operator = viewer.with_token(OPERATOR);
    let (status, _) = operator
        .post(&format!("/api/runs/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "operators steer runs");
}
