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

pub(crate) async fn client(
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

/// A body past `/mcp`'s limit is a 413, refused before rmcp reads it, by
/// its declared length or, sent in chunks without one, by its bytes; the
/// server answers the next call as before.
#[tokio::test]
async fn an_mcp_body_over_the_limit_is_a_413_and_the_server_stays_up() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = token_mode().await;
    let limit = server::mcp::MCP_BODY_LIMIT;
    // Declared: the answer comes before a byte of the body is sent.
    let mut stream = tokio::net::TcpStream::connect(server.base.trim_start_matches("http://"))
        .await
        .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {}\r\n\
         accept: application/json, text/event-stream\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n",
        crate::auth::OPERATOR,
        limit + 1
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 1024];
    let n = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut answer))
        .await
        .expect("answered without the body")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    drop(stream);
    // Streamed without a length: limit + 1 bytes, cut at the limit.
    let chunk = vec![b' '; 1024 * 1024];
    let chunks = (limit + 1).div_ceil(chunk.len());
    let last = limit + 1 - (chunks - 1) * chunk.len();
    let body = futures_util::stream::iter((0..chunks).map(move |i| {
        let n = if i + 1 == chunks { last } else { chunk.len() };
        Ok::<_, std::io::Error>(bytes::Bytes::from(chunk[..n].to_vec()))
    }));
    let response = server
        .client
        .post(server.url("/mcp"))
        .bearer_auth(crate::auth::OPERATOR)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(body))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "too_large", "{body}");
    // Still up: a whole MCP session works.
    let mcp = client(&server, crate::auth::OPERATOR).await;
    assert!(!mcp.list_all_tools().await.unwrap().is_empty());
    mcp.cancel().await.ok();
}

/// `start_run`'s base64 files are measured before they are decoded: one
/// file, or all of them together, past the run's limits is refused with
/// the limit named. The base64 here is not even valid, so a refusal that
/// came from decoding would say so instead.
#[tokio::test]
async fn start_run_refuses_base64_files_over_the_limits_before_decoding_them() {
    let server = token_mode().await;
    let mcp = client(&server, crate::auth::OPERATOR).await;
    // Valid-looking base64 of `bytes` bytes, but for its last characters.
    let encoded = |bytes: usize| {
        let mut text = "A".repeat(bytes / 3 * 4);
        text.replace_range(text.len() - 4.., "*!*!");
        text
    };
    // Whole groups of three bytes, so the size is exact without padding.
    let one = (run_model::MAX_FILE_BYTES / 3 + 1) * 3;
    let refused = mcp
        .call_tool(params(
            "start_run",
            json!({"task": "read it", "files": [{"name": "big.bin", "base64": encoded(one)}]}),
        ))
        .await
        .unwrap();
    let said = text(&refused);
    assert_eq!(refused.is_error, Some(true), "{said}");
    assert!(
        said.contains(&format!(
            "big.bin has {one} bytes; a file may have at most {}",
            run_model::MAX_FILE_BYTES
        )),
        "{said}"
    );
    // Three files, each within its limit, over the limit together.
    let each = (run_model::MAX_FILES_BYTES / 9 + 1) * 3;
    assert!(each <= run_model::MAX_FILE_BYTES && each * 3 > run_model::MAX_FILES_BYTES);
    let files: Vec<Value> = (0..3)
        .map(|i| json!({"name": format!("part{i}.bin"), "base64": encoded(each)}))
        .collect();
    let refused = mcp
        .call_tool(params(
            "start_run",
            json!({"task": "read them", "files": files}),
        ))
        .await
        .unwrap();
    let said = text(&refused);
    assert_eq!(refused.is_error, Some(true), "{said}");
    assert!(
        said.contains(&format!(
            "the files have {} bytes in all; at most {} are taken",
            each * 3,
            run_model::MAX_FILES_BYTES
        )),
        "{said}"
    );
    mcp.cancel().await.ok();
}
