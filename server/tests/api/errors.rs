//! One mapping of errors: the same error answers the same status through
//! the API and the board's plain forms, and a failed store reaches no
//! client with its own words (the API, the board, MCP's run tools).

use reqwest::StatusCode;
use serde_json::json;

use crate::fake_openai::FakeOpenAi;
use crate::mcp::{client, params};
use crate::support::TestServer;

/// What the client sees of any store failure.
const STORE_FAILED: &str = "the database failed; see the server log";

/// A board form posted as a browser posts it: its status and its text.
async fn form(server: &TestServer, path: &str, fields: &[(&str, &str)]) -> (StatusCode, String) {
    let response = server
        .client
        .post(server.url(path))
        .form(fields)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.text().await.unwrap())
}

#[tokio::test]
async fn a_taken_name_or_url_is_the_same_409_on_the_api_and_on_the_boards_forms() {
    let server = TestServer::start().await;

    // An MCP server's name, taken.
    let server_spec = json!({"name": "twice", "url": "http://127.0.0.1:9/mcp"});
    let (status, body) = server.post("/api/tool-servers", server_spec.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (api, body) = server.post("/api/tool-servers", server_spec).await;
    assert_eq!(api, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "already_exists", "{body}");
    let (board, text) = form(
        &server,
        "/tools/servers",
        &[("name", "twice"), ("url", "http://127.0.0.1:9/mcp")],
    )
    .await;
    assert_eq!(board, api, "the board's form: {text}");
    assert!(text.contains(body["message"].as_str().unwrap()), "{text}");

    // A webhook endpoint's URL, taken.
    let url = "https://hooks.example.com/planboard";
    let (status, body) = server.post("/api/webhooks", json!({"url": url})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (api, body) = server.post("/api/webhooks", json!({"url": url})).await;
    assert_eq!(api, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "already_exists", "{body}");
    let (board, text) = form(&server, "/settings/webhooks", &[("url", url)]).await;
    assert_eq!(board, api, "the board's form: {text}");
    assert!(text.contains(body["message"].as_str().unwrap()), "{text}");
    // Removing one that is not there: 404 on both.
    let missing = uuid::Uuid::new_v4();
    let (api, body) = server
        .send(
            reqwest::Method::DELETE,
            &format!("/api/webhooks/{missing}"),
            None,
        )
        .await;
    assert_eq!(api, StatusCode::NOT_FOUND, "{body}");
    let (board, text) = form(
        &server,
        &format!("/settings/webhooks/{missing}/remove"),
        &[],
    )
    .await;
    assert_eq!(board, api, "the board's form: {text}");
}

/// Renames a table of the server's SQLite database under it: every query
/// on it fails from now on with the database's own words, which name it.
async fn break_table(database: &str, table: &str) {
    use sqlx::Connection;
    let mut db = sqlx::SqliteConnection::connect(database).await.unwrap();
    sqlx::query(&format!("ALTER TABLE {table} RENAME TO {table}_broken"))
        .execute(&mut db)
        .await
        .unwrap();
    db.close().await.unwrap();
}

/// A 500 with the code `store` and the generic sentence, without a word
/// of what the database said.
fn store_failure(status: StatusCode, body: &serde_json::Value, table: &str) {
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert_eq!(body["error"], "store", "{body}");
    assert_eq!(body["message"], STORE_FAILED, "{body}");
    let said = body.to_string();
    assert!(
        !said.contains(table) && !said.contains("no such table"),
        "{said}"
    );
}

/// The protocol error an MCP tool call gets for a failed store.
fn mcp_store_failure(answer: Result<rmcp::model::CallToolResult, rmcp::ServiceError>, table: &str) {
    match answer {
        Err(rmcp::ServiceError::McpError(e)) => {
            assert_eq!(e.code, rmcp::model::ErrorCode::INTERNAL_ERROR, "{e:?}");
            assert_eq!(e.message, STORE_FAILED, "{e:?}");
            assert_eq!(e.data, Some(json!({"error": "store"})), "{e:?}");
            assert!(!format!("{e:?}").contains(table), "{e:?}");
        }
        other => panic!("a store failure is a protocol error, not {other:?}"),
    }
}

#[tokio::test]
async fn a_failed_store_is_a_500_without_its_words_on_the_api_the_board_and_mcp() {
    let fake = FakeOpenAi::start().await;
    let server = crate::runs::server_on(&fake, None).await;
    let database = format!(
        "sqlite://{}",
        server
            ._dir
            .as_ref()
            .unwrap()
            .path()
            .join("runs.db")
            .display()
    );
    let mcp = client(&server, "local").await;

    // Starting a run while its plan cannot be written: the agent's host
    // reports the store's failure, which is the server's, not a refusal.
    break_table(&database, "plan_events").await;
    let (status, body) = server
        .post(
            "/api/runs",
            json!({"task": "Write a note", "mode": "simple"}),
        )
        .await;
    store_failure(status, &body, "plan_events");
    let answer = mcp
        .call_tool(params(
            "start_run",
            json!({"task": "Write a note", "mode": "simple"}),
        ))
        .await;
    mcp_store_failure(answer, "plan_events");

    // Reading a run while the runs cannot be read.
    break_table(&database, "runs").await;
    let run = uuid::Uuid::new_v4();
    let (status, body) = server.get(&format!("/api/runs/{run}")).await;
    store_failure(status, &body, "runs");
    let answer = mcp
        .call_tool(params("get_run", json!({"run_id": run})))
        .await;
    mcp_store_failure(answer, "runs");
    // The board's form about a plan's run.
    let plan = uuid::Uuid::new_v4();
    let (status, text) = form(
        &server,
        &format!("/plans/{plan}/budget"),
        &[("max_tokens", "5000")],
    )
    .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{text}");
    assert!(text.contains(STORE_FAILED), "{text}");
    assert!(
        !text.contains("runs") && !text.contains("no such table"),
        "{text}"
    );
    mcp.cancel().await.ok();
}
