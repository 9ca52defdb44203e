//! An MCP round trip with rmcp's own client over streamable HTTP.

use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::auth::token_mode;
use crate::support::TestServer;

pub(crate) fn params(name: &'static str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams {
        meta: None,
        name: name.into(),
        arguments: args.as_object().cloned(),
        task: None,
    }
}

pub(crate) fn text(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn client(
    server: &TestServer,
    token: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let config =
        StreamableHttpClientTransportConfig::with_uri(server.url("/mcp")).auth_header(token);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    ().serve(transport).await.expect("MCP session")
}

#[tokio::test]
async fn an_mcp_client_plans_through_the_canonical_tools_on_its_own_session() {
    let server = token_mode().await.with_token(crate::auth::OPERATOR);
    let a = client(&server, crate::auth::OPERATOR).await;
    let tools = a.list_all_tools().await.expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for name in [
        "create_plan",
        "start_subtask",
        "complete_subtask",
        "get_plan",
    ] {
        assert!(names.contains(&name), "{names:?}");
    }
    assert!(tools[0].input_schema.get("properties").is_some());

    let created = a
        .call_tool(params("create_plan", json!({"title": "MCP plan", "subtasks": [{"name": "one"}, {"name": "two", "dependencies": [1]}]})))
        .await
        .expect("create");
    assert_ne!(created.is_error, Some(true), "{}", text(&created));
    let started = a
        .call_tool(params("start_subtask", json!({"subtask_id": 1})))
        .await
        .unwrap();
    assert_ne!(started.is_error, Some(true), "{}", text(&started));
    let refused = a
        .call_tool(params("start_subtask", json!({"subtask_id": 2})))
        .await
        .unwrap();
    assert_eq!(
        refused.is_error,
        Some(true),
        "2 waits on 1: {}",
        text(&refused)
    );
    let done = a
        .call_tool(params(
            "complete_subtask",
            json!({"subtask_id": "1", "outcome": "did one"}),
        ))
        .await
        .unwrap();
    assert_ne!(done.is_error, Some(true), "{}", text(&done));

    // A second MCP session has no active plan of its own.
    let b = client(&server, crate::auth::OPERATOR).await;
    let none = b.call_tool(params("get_plan", json!({}))).await.unwrap();
    assert_eq!(none.is_error, Some(true));
    assert!(text(&none).contains("create_plan"), "{}", text(&none));

    // The change is durable and attributed to the token's name.
    let (_, page) = server.get("/api/plans?q=mcp%20plan").await;
    let id = page["plans"][0]["id"]
        .as_str()
        .expect("the MCP plan is listed")
        .to_string();
    let (_, events) = server.get(&format!("/api/plans/{id}/events")).await;
    let last = events["events"].as_array().unwrap().last().unwrap().clone();
    let actor = last["actor"].as_str().unwrap();
    assert!(
        actor.starts_with("robot · "),
        "the token and the MCP client: {actor}"
    );
    a.cancel().await.ok();
    b.cancel().await.ok();
}

#[tokio::test]
async fn mcp_without_a_token_is_refused_in_token_mode() {
    let server = token_mode().await;
    let response = server
        .client
        .post(server.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}

/// Initialises an MCP session over plain HTTP, as any client would;
/// answers the session id and the revision the server chose.
async fn initialize(server: &TestServer, revision: &str) -> (String, String) {
    let response = server
        .client
        .post(server.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": revision, "capabilities": {},
                       "clientInfo": {"name": "raw-http", "version": "1"}}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let body = response.text().await.unwrap();
    // A JSON body, or an event stream whose one JSON-RPC message is the reply
    // (after, maybe, an empty priming event).
    let data = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| d.starts_with('{'))
        .unwrap_or(&body)
        .to_string();
    let reply: Value = serde_json::from_str(&data).expect("a JSON-RPC reply");
    let chosen = reply["result"]["protocolVersion"]
        .as_str()
        .unwrap()
        .to_string();
    (session, chosen)
}

#[tokio::test]
async fn mcp_speaks_every_revision_rmcp_knows_and_ends_a_session_with_204() {
    let server = TestServer::start().await;
    for revision in ["2024-11-05", "2025-03-26", "2025-06-18"] {
        let (_, chosen) = initialize(&server, revision).await;
        assert_eq!(chosen, revision, "a known revision is the one spoken");
    }
    let (session, chosen) = initialize(&server, "2099-01-01").await;
    assert_eq!(chosen, "2025-06-18", "an unknown revision gets the newest");

    let unknown = server
        .client
        .post(server.url("/mcp"))
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "1999-01-01")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 400);

    // The Python SDK counts only 200 and 204 as a clean termination.
    let ended = server
        .client
        .delete(server.url("/mcp"))
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 204);
}
