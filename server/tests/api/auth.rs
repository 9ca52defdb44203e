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
