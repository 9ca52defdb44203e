//! An MCP round trip with rmcp's own client over streamable HTTP.

use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::auth::token_mode;
use crate::support::TestServer;

pub(crate) fn params(name: &'static str, args: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name);
    params.arguments = args.as_object().cloned();
    params
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
async fn mcp_speaks_every_revision_with_sessions_up_to_2025_11_25_and_ends_a_session_with_204() {
    let server = TestServer::start().await;
    for revision in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let (_, chosen) = initialize(&server, revision).await;
        assert_eq!(chosen, revision, "a known revision is the one spoken");
    }
    // 2026-07-28 has no handshake (see the sessionless test below): asked
    // at `initialize`, the newest revision with sessions is answered.
    let (_, chosen) = initialize(&server, "2026-07-28").await;
    assert_eq!(
        chosen, "2025-11-25",
        "the sessionless revision gets the newest with sessions"
    );
    let (session, chosen) = initialize(&server, "2099-01-01").await;
    assert_eq!(chosen, "2025-11-25", "an unknown revision gets the newest");

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
    let limit = server::web::mcp::MCP_BODY_LIMIT;
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

/// A call that must succeed; its text.
async fn ok(
    mcp: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    name: &'static str,
    args: Value,
) -> String {
    let result = mcp.call_tool(params(name, args)).await.expect(name);
    assert_ne!(result.is_error, Some(true), "{name}: {}", text(&result));
    text(&result)
}

/// A call the tool must refuse; its text.
async fn refused(
    mcp: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    name: &'static str,
    args: Value,
) -> String {
    let result = mcp.call_tool(params(name, args.clone())).await.expect(name);
    assert_eq!(
        result.is_error,
        Some(true),
        "{name}({args}) should be refused: {}",
        text(&result)
    );
    text(&result)
}

#[tokio::test]
async fn an_mcp_client_gets_the_hint_for_its_plan_in_its_language_with_the_rules_it_set() {
    let server = token_mode().await.with_token(crate::auth::OPERATOR);
    let mcp = client(&server, crate::auth::OPERATOR).await;
    let tools = mcp.list_all_tools().await.expect("tools");
    for (name, argument) in [
        ("get_hint", "lang"),
        ("search_memory", "query"),
        ("set_session_settings", "max_subtasks"),
    ] {
        let tool = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is listed"));
        assert!(
            tool.input_schema["properties"].get(argument).is_some(),
            "{name}: {:?}",
            tool.input_schema
        );
    }
    let confirm = "WAIT FOR USER CONFIRMATION";

    // No plan, no rules set: the no-plan hint alone.
    let none = ok(&mcp, "get_hint", json!({})).await;
    assert!(none.contains("create_plan"), "{none}");
    assert!(!none.contains(confirm), "{none}");
    let set = ok(
        &mcp,
        "set_session_settings",
        json!({"need_user_confirm": true, "max_subtasks": 2}),
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&set).unwrap(),
        json!({"need_user_confirm": true, "max_subtasks": 2})
    );
    let none = ok(&mcp, "get_hint", json!({"lang": "zh"})).await;
    assert!(none.contains("等待用户确认"), "{none}");
    assert!(none.contains("不超过 2 个子任务"), "{none}");
    refused(&mcp, "set_session_settings", json!({"max_subtasks": 0})).await;
    refused(&mcp, "get_hint", json!({"lang": "fr"})).await;

    // The session's limit holds for the plans it creates.
    let full = refused(
        &mcp,
        "create_plan",
        json!({"title": "市场调研", "subtasks": [{"name": "一"}, {"name": "二"}, {"name": "三"}]}),
    )
    .await;
    assert!(full.contains("at most 2 subtasks"), "{full}");
    ok(
        &mcp,
        "create_plan",
        json!({"title": "市场调研", "subtasks": [{"name": "一"}, {"name": "二"}]}),
    )
    .await;
    // Without lang, the plan's language; the rules come with it.
    let hint = ok(&mcp, "get_hint", json!({})).await;
    assert!(hint.starts_with("# 市场调研"), "{hint}");
    assert!(hint.contains("等待用户确认"), "{hint}");
    assert!(hint.contains("不超过 2 个子任务"), "{hint}");
    // Unchanged since: one line; fresh repeats it whole, in English if asked.
    let again = ok(&mcp, "get_hint", json!({"lang": "en"})).await;
    assert!(
        again.starts_with("No change since your last hint"),
        "{again}"
    );
    let fresh = ok(&mcp, "get_hint", json!({"lang": "en", "fresh": true})).await;
    assert!(fresh.contains(confirm), "{fresh}");
    assert!(fresh.contains("no more than 2 subtasks"), "{fresh}");
    // The plan's own setting wins over the session's.
    ok(
        &mcp,
        "update_plan_info",
        json!({"need_user_confirm": false}),
    )
    .await;
    let hint = ok(&mcp, "get_hint", json!({"lang": "en"})).await;
    assert!(!hint.contains(confirm), "{hint}");

    // Another MCP session has settings of its own.
    let other = client(&server, crate::auth::OPERATOR).await;
    let theirs = ok(&other, "get_hint", json!({"lang": "en"})).await;
    assert!(!theirs.contains(confirm), "{theirs}");
    mcp.cancel().await.ok();
    other.cancel().await.ok();
}

#[tokio::test]
async fn search_memory_answers_the_teams_memories_best_first_and_keeps_to_its_limits() {
    use run_model::memory::{MemoryKind, NewMemory};
    let server = token_mode().await.with_token(crate::auth::OPERATOR);
    let memory = |task: &str, text: &str| NewMemory {
        kind: MemoryKind::Correction,
        task: task.into(),
        text: text.into(),
        run_id: None,
        plan_id: None,
    };
    server
        .services
        .memories
        .store()
        .remember(&[
            memory(
                "Deploy the billing service",
                "Roll back with the blue-green switch, never by redeploying.",
            ),
            memory("Write a poem about autumn", "Keep it to four lines."),
            memory(
                &"long task ".repeat(100),
                "The rollback runbook is in ops/.",
            ),
        ])
        .await
        .unwrap();
    let mcp = client(&server, crate::auth::OPERATOR).await;
    let found = ok(
        &mcp,
        "search_memory",
        json!({"query": "blue-green switch for billing"}),
    )
    .await;
    let found: Value = serde_json::from_str(&found).unwrap();
    let memories = found["memories"].as_array().unwrap();
    assert!(!memories.is_empty(), "{found}");
    assert!(
        memories[0]["text"].as_str().unwrap().contains("blue-green"),
        "{found}"
    );
    assert!(
        memories
            .iter()
            .all(|m| m["text"] != "Keep it to four lines."),
        "{found}"
    );
    // Each of the three matches; `limit` keeps to the best.
    let count = |found: String| {
        let found: Value = serde_json::from_str(&found).unwrap();
        found["memories"].as_array().unwrap().len()
    };
    let words = "rollback billing poem";
    assert_eq!(
        count(ok(&mcp, "search_memory", json!({"query": words})).await),
        3
    );
    let one = json!({"query": words, "limit": 1});
    assert_eq!(count(ok(&mcp, "search_memory", one).await), 1);
    let found = ok(&mcp, "search_memory", json!({"query": "runbook"})).await;
    let found: Value = serde_json::from_str(&found).unwrap();
    let memories = found["memories"].as_array().unwrap();
    // A long task is shown cut, not whole.
    assert!(
        memories[0]["task"].as_str().unwrap().chars().count() <= 300,
        "{found}"
    );
    for bad in [
        json!({"query": "rollback", "limit": 21}),
        json!({"query": "rollback", "limit": 0}),
        json!({"query": "   "}),
        json!({"query": "x".repeat(501)}),
        json!({}),
    ] {
        refused(&mcp, "search_memory", bad).await;
    }
    mcp.cancel().await.ok();
}

/// What an MCP client heard the server say changed.
struct Heard(tokio::sync::mpsc::UnboundedSender<String>);

impl rmcp::ClientHandler for Heard {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }
}

fn resource_text(read: &rmcp::model::ReadResourceResult) -> String {
    match &read.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("a text resource: {other:?}"),
    }
}

/// Seed 003's hint for clients that read: the session's plan hint is a
/// resource, and a client that subscribed to it is told when the plan
/// changes (its own changes and a person's on the board alike).
#[tokio::test]
// `resources/subscribe` is how the revisions with sessions (all this
// server speaks) follow a resource; rmcp marks it legacy for 2026-07-28.
#[allow(deprecated)]
async fn an_mcp_client_subscribed_to_the_plan_hint_hears_when_the_plan_changes() {
    use rmcp::model::{ReadResourceRequestParams, SubscribeRequestParams};
    let server = token_mode().await.with_token(crate::auth::OPERATOR);
    let (told, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let config = StreamableHttpClientTransportConfig::with_uri(server.url("/mcp"))
        .auth_header(crate::auth::OPERATOR);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    let client = Heard(told).serve(transport).await.expect("MCP session");
    let resources_cap = client
        .peer_info()
        .and_then(|info| info.capabilities.resources.clone())
        .expect("resources offered");
    assert_eq!(resources_cap.subscribe, Some(true));
    let resources = client.list_all_resources().await.unwrap();
    assert!(
        resources
            .iter()
            .any(|r| r.uri == "planboard://session/hint"),
        "{resources:?}"
    );
    let hint = "planboard://session/hint".to_string();
    client
        .subscribe(SubscribeRequestParams::new(hint.clone()))
        .await
        .expect("subscribed");
    let created = client
        .call_tool(params(
            "create_plan",
            json!({"title": "Hinted plan", "subtasks": [{"name": "measure the room"}]}),
        ))
        .await
        .unwrap();
    assert_ne!(created.is_error, Some(true), "{}", text(&created));
    let uri = tokio::time::timeout(std::time::Duration::from_secs(10), heard.recv())
        .await
        .expect("told within 10 s")
        .unwrap();
    assert_eq!(uri, hint);
    let read = client
        .read_resource(ReadResourceRequestParams::new(hint.clone()))
        .await
        .unwrap();
    assert!(
        resource_text(&read).contains("measure the room"),
        "{read:?}"
    );
    // A person's move on the board is news too.
    let plans = server.get("/api/plans").await.1;
    let id = plans["plans"][0]["id"]
        .as_str()
        .or_else(|| plans[0]["id"].as_str())
        .expect("the plan's id")
        .to_string();
    while heard.try_recv().is_ok() {}
    let (status, _) = server
        .post(
            &format!("/api/plans/{id}/comments"),
            json!({"body": "use metres"}),
        )
        .await;
    assert!(status.is_success());
    let again = tokio::time::timeout(std::time::Duration::from_secs(10), heard.recv())
        .await
        .expect("told of the person's change")
        .unwrap();
    assert_eq!(again, hint);
    // A plan's own hint, by its id; an unknown resource is an error.
    let by_id = client
        .read_resource(ReadResourceRequestParams::new(format!(
            "planboard://plans/{id}/hint"
        )))
        .await
        .unwrap();
    assert!(resource_text(&by_id).contains("measure the room"));
    assert!(client
        .read_resource(ReadResourceRequestParams::new("planboard://nothing"))
        .await
        .is_err());
}

/// rmcp's own defaults since 1.x would refuse two things planboard serves:
/// a `Host` other than a loopback name (the board behind a proxy, named in
/// `PLANBOARD_ALLOWED_HOSTS`; planboard's own guard decides) and a body
/// over 4 MiB (`start_run`'s files go up to [`MCP_BODY_LIMIT`]).
#[tokio::test]
async fn mcp_answers_on_a_host_the_operator_named_and_takes_a_body_over_4_mib() {
    let dir = tempfile::tempdir().unwrap();
    let config = server::config::Config {
        allowed_hosts: vec!["board.example".into()],
        ..server::config::Config::defaults(
            format!("sqlite://{}", dir.path().join("mcp-host.db").display()),
            crate::support::local(),
        )
    };
    let server = TestServer::with_config(&config, |_| {}).await;
    let post = |session: Option<&str>, body: Value| {
        let mut request = server
            .client
            .post(server.url("/mcp"))
            .header("host", "board.example")
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        request.send()
    };
    let opened = post(
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "behind-a-proxy", "version": "1"}}}),
    )
    .await
    .unwrap();
    assert_eq!(opened.status(), 200, "{:?}", opened.text().await);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let ready = post(
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await
    .unwrap();
    assert!(ready.status().is_success(), "{}", ready.status());
    // 5 MiB of a plan's title: too long for a plan (the tool says so),
    // not too long for the transport.
    let title = "t".repeat(5 * 1024 * 1024);
    let big = post(
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "create_plan", "arguments": {"title": title, "subtasks": [{"name": "a"}]}}}),
    )
    .await
    .unwrap();
    assert_eq!(big.status(), 200);
    let body = big.text().await.unwrap();
    assert!(
        body.contains("\"isError\":true") && body.contains("title"),
        "the tool's own refusal: {}",
        &body[body.len().saturating_sub(600)..]
    );
}

/// Runs an official SDK's client script (`end2end/mcp-sdk-client.*`)
/// against the server and checks what every such client does there: it
/// lists the tools, plans with `create_plan`, and reads its session's
/// active plan back through `get_hint` and the hint resource. Answers the
/// client's JSON line for the checks of its own.
async fn planned_through(mut client: tokio::process::Command) -> Value {
    let output = client.output().await.expect("the client runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let said: Value = serde_json::from_slice(&output.stdout).expect("one JSON line");
    assert!(
        said["tools"].to_string().contains("\"start_run\""),
        "{said}"
    );
    assert_eq!(said["created"]["isError"], false, "{said}");
    assert!(
        said["hint"].as_str().unwrap().contains("measure the room"),
        "the session's active plan: {said}"
    );
    assert!(
        said["resource"]
            .as_str()
            .unwrap()
            .contains("measure the room"),
        "{said}"
    );
    said
}

#[tokio::test]
async fn the_official_typescript_sdk_client_plans_over_mcp_at_2025_11_25_and_at_2025_06_18() {
    // `end2end/mcp-sdk-client.mjs`: the TypeScript SDK's client.
    let Some(script) = crate::support::test_file("PLANBOARD_TEST_MCP_SDK_CLIENT") else {
        return;
    };
    let server = TestServer::start().await;
    for revision in ["2025-11-25", "2025-06-18"] {
        let mut client = tokio::process::Command::new("node");
        client.arg(&script).arg(server.url("/mcp")).arg(revision);
        let said = planned_through(client).await;
        assert_eq!(said["negotiated"], revision, "{said}");
        assert_eq!(said["ended"], "terminated", "{said}");
    }
}

/// The Python SDK's client asks for 2026-07-28 first (`server/discover`)
/// and plans at it, with no session: its requests share the caller's own
/// agent session (as REST tool calls without a session name do), so the
/// plan it creates is the one its hint and the hint resource are about.
#[tokio::test]
async fn the_official_python_sdk_client_plans_at_2026_07_28_without_a_session() {
    // The Python that has the SDK, and `end2end/mcp-sdk-client.py`.
    let (Ok(python), Some(script)) = (
        std::env::var("PLANBOARD_TEST_MCP_PYTHON"),
        crate::support::test_file("PLANBOARD_TEST_MCP_PY_CLIENT"),
    ) else {
        return;
    };
    let server = TestServer::start().await;
    let mut client = tokio::process::Command::new(python);
    client.arg(&script).arg(server.url("/mcp"));
    let said = planned_through(client).await;
    assert_eq!(said["negotiated"], "2026-07-28", "{said}");
}

/// One JSON-RPC request at 2026-07-28, which has no session: the revision
/// and the client's capabilities ride in the request's `_meta`. Answers
/// the reply and whether the response named a session.
async fn sessionless(
    server: &TestServer,
    method: &str,
    mut params: Value,
    agent_session: Option<&str>,
) -> (Value, bool) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"}
    });
    let mut request = server
        .client
        .post(server.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        // SEP-2243: the method, and the tool or resource, in headers too.
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str().or(params["uri"].as_str()) {
        request = request.header("mcp-name", name);
    }
    if let Some(name) = agent_session {
        request = request.header("x-planboard-session", name);
    }
    let response = request
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    let named = response.headers().contains_key("mcp-session-id");
    let body = response.text().await.unwrap();
    let data = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| d.starts_with('{'))
        .unwrap_or(&body)
        .to_string();
    (
        serde_json::from_str(&data).expect("a JSON-RPC reply"),
        named,
    )
}

fn said(reply: &Value) -> String {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a tool's text: {reply}"))
        .to_string()
}

/// At 2026-07-28 each request stands alone: the agent session (its active
/// plan, what its hints remember) is the one `X-Planboard-Session` names,
/// else the caller's own, as for the REST tools; there is no subscribing
/// without a session.
#[tokio::test]
async fn requests_at_2026_07_28_work_in_the_agent_session_they_name_or_the_callers() {
    let server = TestServer::start().await;
    let create = |title: &str| {
        json!({"name": "create_plan",
               "arguments": {"title": title, "subtasks": [{"name": "the only step"}]}})
    };
    let hint = json!({"name": "get_hint", "arguments": {"fresh": true}});
    let (created, named) = sessionless(
        &server,
        "tools/call",
        create("Planned by agent A"),
        Some("agent-a"),
    )
    .await;
    assert!(said(&created).contains("Created plan"), "{created}");
    assert!(!named, "no session at 2026-07-28");
    let (a, _) = sessionless(&server, "tools/call", hint.clone(), Some("agent-a")).await;
    assert!(said(&a).contains("Planned by agent A"), "{a}");
    let (b, _) = sessionless(&server, "tools/call", hint.clone(), Some("agent-b")).await;
    assert!(
        !said(&b).contains("Planned by agent A"),
        "another session: {b}"
    );
    // No name: the caller's own session, the one REST tool calls use.
    sessionless(&server, "tools/call", create("Planned by the caller"), None).await;
    let (mine, _) = sessionless(&server, "tools/call", hint.clone(), None).await;
    assert!(said(&mine).contains("Planned by the caller"), "{mine}");
    let (_, rest) = server.get("/api/tools/canonical/hint").await;
    assert!(
        rest.to_string().contains("Planned by the caller"),
        "the same session as REST's: {rest}"
    );
    let (read, _) = sessionless(
        &server,
        "resources/read",
        json!({"uri": "planboard://session/hint"}),
        Some("agent-a"),
    )
    .await;
    assert!(
        read["result"].to_string().contains("Planned by agent A"),
        "{read}"
    );
    let (followed, _) = sessionless(
        &server,
        "resources/subscribe",
        json!({"uri": "planboard://session/hint"}),
        Some("agent-a"),
    )
    .await;
    // 2026-07-28 has no resources/subscribe (rmcp answers it unknown).
    assert_eq!(followed["error"]["code"], -32601, "{followed}");
}
