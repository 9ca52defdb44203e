//! MCP servers managed while the server runs: added (HTTP and stdio, a
//! real third-party server among them), shown with their state and never
//! their secrets, offered to runs, tested, changed, removed, kept across a
//! restart; the file's servers are shown and left alone; admins only.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use server::config::Config;

use crate::fake_openai::FakeOpenAi;
use crate::runs::{start, wait_for};
use crate::support::{local, TestServer};

fn config(dir: &std::path::Path, fake: &FakeOpenAi) -> Config {
    Config {
        llm: Some(fake.config(Duration::from_secs(10))),
        workspaces: dir.join("ws"),
        sandbox: false,
        ..Config::defaults(
            format!("sqlite://{}", dir.join("tools.db").display()),
            local(),
        )
    }
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

async fn agent_tools(server: &TestServer) -> Vec<String> {
    let (_, tools) = server.get("/api/agent/tools").await;
    tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn an_admin_adds_mcp_servers_at_run_time_and_runs_are_offered_their_tools() {
    let tool_server = TestServer::start().await;
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &fake);
    let server = TestServer::with_config(&config, |_| {}).await;
    assert_eq!(server.get("/api/tool-servers").await.1, json!([]));
    for bad in [
        json!({"name": "no spaces", "command": "node"}),
        json!({"name": "neither"}),
        json!({"name": "both", "command": "node", "url": "http://127.0.0.1:9/mcp"}),
        json!({"name": "tok", "command": "node", "token": "t"}),
    ] {
        let (status, body) = server.post("/api/tool-servers", bad.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
    }
    // Streamable HTTP, with a token: connected, its tools listed, the
    // token and the URL's path never shown.
    let (status, board) = server
        .post(
            "/api/tool-servers",
            json!({"name": "board", "url": tool_server.url("/mcp"), "token": "tok-secret-1"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{board}");
    assert_eq!(board["connected"], true, "{board}");
    assert_eq!(board["source"], "board");
    assert_eq!(board["transport"], "http");
    assert_eq!(board["has_token"], true);
    assert!(
        board["tools"].to_string().contains("create_plan"),
        "{board}"
    );
    assert!(
        !board["target"].as_str().unwrap().contains("/mcp"),
        "{board}"
    );
    let (status, _) = server
        .post(
            "/api/tool-servers",
            json!({"name": "board", "url": tool_server.url("/mcp")}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "a name is taken once");
    assert!(agent_tools(&server)
        .await
        .contains(&"create_plan".to_string()));
    // An unreachable server is kept, with its error, offering nothing.
    let (status, down) = server
        .post(
            "/api/tool-servers",
            json!({"name": "down", "url": "http://127.0.0.1:9/mcp"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{down}");
    assert_eq!(down["connected"], false);
    assert!(down["error"].as_str().unwrap().contains("down"), "{down}");
    let (status, again) = server.post("/api/tool-servers/down/test", json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["connected"], false);
    // A real third-party server over stdio, with an environment whose
    // values are never shown.
    if let Ok(everything) = std::env::var("PLANBOARD_TEST_MCP_EVERYTHING") {
        let (status, view) = server
            .post(
                "/api/tool-servers",
                json!({"name": "everything", "command": "node", "args": [everything, "stdio"],
                       "env": {"PROBE_SECRET": "env-secret-2"}}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{view}");
        assert_eq!(view["connected"], true, "{view}");
        assert_eq!(view["transport"], "stdio");
        assert_eq!(view["env"], json!(["PROBE_SECRET"]));
        assert!(view["tools"].to_string().contains("echo"), "{view}");
        assert!(agent_tools(&server).await.contains(&"echo".to_string()));
    } else {
        eprintln!("skipped the stdio part: PLANBOARD_TEST_MCP_EVERYTHING is not set");
    }
    let (_, list) = server.get("/api/tool-servers").await;
    let shown = list.to_string();
    assert!(
        !shown.contains("tok-secret-1") && !shown.contains("env-secret-2"),
        "{shown}"
    );
    // The Tools page shows them, their state and never a secret.
    let (_, page) = crate::site::page(&server, "/tools").await;
    assert!(
        page.contains(r#"data-name="board" data-connected="true""#),
        "{page}"
    );
    assert!(
        page.contains(r#"data-name="down" data-connected="false""#),
        "{page}"
    );
    assert!(
        page.contains(r#"data-testid="server-add""#),
        "an admin gets the forms"
    );
    assert!(!page.contains("tok-secret-1") && !page.contains("env-secret-2"));
    // Its forms: add one by URL (an env line that is not NAME=value is
    // refused), remove it.
    let form = |path: String, fields: Vec<(&'static str, String)>| {
        server.client.post(server.url(&path)).form(&fields).send()
    };
    let refused = form(
        "/tools/servers".into(),
        vec![
            ("name", "f".into()),
            ("command", "node".into()),
            ("env", "no equals sign".into()),
        ],
    )
    .await
    .unwrap();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let added = form(
        "/tools/servers".into(),
        vec![("name", "formed".into()), ("url", tool_server.url("/mcp"))],
    )
    .await
    .unwrap();
    assert!(
        added.status().is_redirection() || added.status().is_success(),
        "{}",
        added.status()
    );
    let (_, formed) = server.get("/api/tool-servers").await;
    assert!(names(&formed).contains(&"formed".to_string()), "{formed}");
    let removed = form("/tools/servers/formed/remove".into(), vec![])
        .await
        .unwrap();
    assert!(removed.status().is_redirection() || removed.status().is_success());
    assert!(!names(&server.get("/api/tool-servers").await.1).contains(&"formed".to_string()));
    // A run is offered the added server's tools beside the built-in ones.
    let (run, _) = start(
        &server,
        json!({"task": "Write a note", "mode": "simple", "approval_required": false}),
    )
    .await;
    wait_for(&server, &run, "done").await;
    let action = fake
        .requests()
        .into_iter()
        .find(|r| crate::fake_openai::shape(r) == "action")
        .unwrap();
    let offered = action["response_format"]["json_schema"]["schema"]["oneOf"].to_string();
    assert!(
        offered.contains("create_plan") && offered.contains("write_file"),
        "{offered}"
    );
    // Changed: connected again with the new address; the token is kept.
    let (status, changed) = server
        .send(
            reqwest::Method::PUT,
            "/api/tool-servers/down",
            Some(json!({"name": "down", "url": tool_server.url("/mcp")})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["connected"], true, "{changed}");
    // Removed: its tools are offered no more.
    for name in ["board", "down"] {
        let (status, _) = server
            .send(
                reqwest::Method::DELETE,
                &format!("/api/tool-servers/{name}"),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
    }
    let (status, _) = server
        .send(reqwest::Method::DELETE, "/api/tool-servers/board", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!agent_tools(&server)
        .await
        .contains(&"create_plan".to_string()));
    let kept = names(&server.get("/api/tool-servers").await.1);
    // Kept across a restart on the same database.
    drop(server);
    let server = TestServer::with_config(&config, |_| {}).await;
    let (_, list) = server.get("/api/tool-servers").await;
    assert_eq!(names(&list), kept);
    for view in list.as_array().unwrap() {
        assert_eq!(view["connected"], true, "connected at start: {view}");
    }
}

#[tokio::test]
async fn the_files_servers_are_shown_and_left_alone() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), &fake);
    config.mcp_servers.insert(
        "filed".into(),
        agent::tools::mcp::McpServer {
            url: Some("http://127.0.0.1:9/mcp".into()),
            token: Some("file-token".into()),
            command: None,
            args: vec![],
            env: Default::default(),
        },
    );
    let server = TestServer::with_config(&config, |_| {}).await;
    let (_, list) = server.get("/api/tool-servers").await;
    assert_eq!(list[0]["name"], "filed");
    assert_eq!(list[0]["source"], "file");
    assert_eq!(list[0]["connected"], false);
    assert!(!list.to_string().contains("file-token"));
    let (status, body) = server
        .send(reqwest::Method::DELETE, "/api/tool-servers/filed", None)
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("PLANBOARD_MCP_SERVERS"));
    let (status, _) = server
        .send(
            reqwest::Method::PUT,
            "/api/tool-servers/filed",
            Some(json!({"name": "filed", "url": "http://127.0.0.1:9/other"})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = server
        .post(
            "/api/tool-servers",
            json!({"name": "filed", "command": "node"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "the file's name is taken");
}

#[tokio::test]
async fn only_admins_manage_mcp_servers_and_everyone_may_look() {
    let mut server = crate::auth::token_mode().await;
    for token in [crate::auth::OPERATOR, crate::auth::VIEWER] {
        server = server.with_token(token);
        let (status, _) = server.get("/api/tool-servers").await;
        assert_eq!(status, StatusCode::OK, "{token}");
        let (status, _) = server
            .post(
                "/api/tool-servers",
                json!({"name": "x", "url": "http://127.0.0.1:9/mcp"}),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{token}");
        let (status, _) = server
            .send(reqwest::Method::DELETE, "/api/tool-servers/x", None)
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{token}");
        let (status, _) = server.post("/api/tool-servers/x/test", json!({})).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{token}");
    }
    let admin = server.with_token(crate::auth::ADMIN);
    let (status, _) = admin
        .post(
            "/api/tool-servers",
            json!({"name": "x", "url": "http://127.0.0.1:9/mcp"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
}

/// A command's arguments may hold a password: viewers and operators see
/// the command and how many arguments it has, over the API and on the
/// Tools page; admins see the arguments. An environment value is shown to
/// nobody.
#[tokio::test]
async fn a_commands_arguments_are_shown_to_admins_only() {
    let admin = crate::auth::token_mode()
        .await
        .with_token(crate::auth::ADMIN);
    let secret = "--password=hunter2-secret";
    let (status, added) = admin
        .post(
            "/api/tool-servers",
            json!({"name": "db", "command": "/nonexistent/mcp-db",
                   "args": ["--user", "planboard", secret],
                   "env": {"DB_PASSWORD": "env-secret-value"}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    let (_, list) = admin.get("/api/tool-servers").await;
    assert_eq!(list[0]["args"], json!(["--user", "planboard", secret]));
    assert!(list[0]["hidden_args"].is_null(), "{list}");
    let cookies = crate::auth::session_cookies(&admin).await;
    let (client, url) = (admin.client.clone(), admin.url("/tools"));
    let tools_page = |token: &'static str| {
        let request = client.get(&url).header("cookie", cookies[token].clone());
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            response.text().await.unwrap()
        }
    };
    assert!(tools_page(crate::auth::ADMIN).await.contains(secret));
    let mut server = admin;
    for token in [crate::auth::VIEWER, crate::auth::OPERATOR] {
        server = server.with_token(token);
        let (status, list) = server.get("/api/tool-servers").await;
        assert_eq!(status, StatusCode::OK);
        assert!(!list.to_string().contains("hunter2"), "{token}: {list}");
        assert_eq!(list[0]["target"], "/nonexistent/mcp-db", "the command");
        assert_eq!(list[0]["args"], json!([]), "{token}: {list}");
        assert_eq!(list[0]["hidden_args"], 3, "{token}: {list}");
        assert_eq!(list[0]["env"], json!(["DB_PASSWORD"]));
        let page = tools_page(token).await;
        assert!(page.contains("/nonexistent/mcp-db"), "{token}: {page}");
        assert!(!page.contains("hunter2"), "{token}: {page}");
        assert!(!page.contains("env-secret-value"), "{token}");
    }
}

/// A real third-party server asks a form in the middle of a call (an MCP
/// elicitation): the question waits in the run's guarded calls, a person
/// answers it by editing, and the tool returns what they answered.
#[tokio::test]
async fn a_servers_question_mid_call_waits_on_the_board_and_the_persons_answer_goes_back() {
    let Ok(everything) = std::env::var("PLANBOARD_TEST_MCP_EVERYTHING") else {
        eprintln!("skipped: PLANBOARD_TEST_MCP_EVERYTHING is not set");
        return;
    };
    let fake = FakeOpenAi::start().await;
    fake.content(json!({"title": "sign up", "subtasks": [{"name": "fill in the form", "description": "", "expected_outcome": "", "depends_on": []}]}));
    fake.content(json!({"action": "trigger-elicitation-request", "arguments": {}}));
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), &fake);
    config.mcp_servers.insert(
        "everything".into(),
        agent::tools::mcp::McpServer {
            url: None,
            token: None,
            command: Some("node".into()),
            args: vec![everything, "stdio".into()],
            env: Default::default(),
        },
    );
    let server = TestServer::with_config(&config, |_| {}).await;
    let (run, _) = start(
        &server,
        json!({"task": "Fill in the sign-up form", "mode": "simple", "approval_required": false}),
    )
    .await;
    let pending = |name: &'static str| {
        let server = &server;
        let run = run.clone();
        async move {
            tokio::time::timeout(Duration::from_secs(30), async {
                loop {
                    let (_, calls) = server.get(&format!("/api/runs/{run}/tool-calls")).await;
                    let found = calls
                        .as_array()
                        .into_iter()
                        .flatten()
                        .find(|c| c["name"].as_str().unwrap_or_default().starts_with(name))
                        .cloned();
                    if let Some(call) = found {
                        return call;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
            .await
            .unwrap_or_else(|_| panic!("{name} waits for a person"))
        }
    };
    // The tool may write (not read-only): its call is approved first.
    let call = pending("trigger-elicitation-request").await;
    let decide = |call: Value, body: Value| {
        let server = &server;
        let run = run.clone();
        async move {
            let path = format!(
                "/api/runs/{run}/tool-calls/{}",
                call["call"].as_str().unwrap()
            );
            let (status, view) = server.post(&path, body).await;
            assert_eq!(status, StatusCode::OK, "{view}");
        }
    };
    decide(call, json!({"verdict": "approve"})).await;
    // Mid-call, the server's form: shown with its fields and defaults.
    let question = pending("everything asks").await;
    assert_eq!(
        question["name"], "everything asks (in trigger-elicitation-request)",
        "{question}"
    );
    assert_eq!(
        question["asker"], "everything",
        "a server's question: {question}"
    );
    let asked = &question["arguments"];
    assert!(
        asked["question"]
            .as_str()
            .unwrap()
            .contains("Please provide inputs"),
        "{asked}"
    );
    assert_eq!(asked["answer"]["name"], Value::Null, "{asked}");
    assert_eq!(
        asked["answer"]["integer"], 42,
        "the form's default: {asked}"
    );
    assert!(
        asked["fields"]["name"]
            .as_str()
            .unwrap()
            .contains("required"),
        "{asked}"
    );
    let (_, view) = server.get(&format!("/api/runs/{run}")).await;
    assert_eq!(view["state"], "running", "{view}");
    decide(
        question,
        json!({"verdict": "edit", "arguments": {"answer": {"name": "Ada Lovelace", "integer": 7}}}),
    )
    .await;
    wait_for(&server, &run, "done").await;
    let (_, events) = server.get(&format!("/api/runs/{run}/events")).await;
    let result = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "tool_call")
        .expect("the tool call is on the run log")["entry"]["result"]
        .to_string();
    assert!(
        result.contains("Name: Ada Lovelace") && result.contains("Favorite Integer: 7"),
        "the person's answer went back to the server: {result}"
    );
}
