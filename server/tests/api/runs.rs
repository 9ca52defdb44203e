//! planboard's own agent over HTTP, against the fake OpenAI server: the
//! real async-openai path, the run routes, approval on the plan's route.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use server::config::Config;

use crate::fake_openai::FakeOpenAi;
use crate::support::{local, TestServer};

async fn server_with(fake: &FakeOpenAi) -> TestServer {
    server_on(fake, None).await
}

/// A server driving runs with the fake model, on a temporary SQLite file
/// or on `database`.
pub async fn server_on(fake: &FakeOpenAi, database: Option<&str>) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let database = database.map_or_else(
        || format!("sqlite://{}", dir.path().join("runs.db").display()),
        str::to_string,
    );
    let config = Config {
        lease: Duration::from_secs(3600),
        llm: Some(fake.config(Duration::from_secs(10))),
        workspaces: dir.path().join("workspaces"),
        run_lease: Duration::from_secs(3),
        ..Config::defaults(database, local())
    };
    let mut server = TestServer::with_config(&config, |_| {}).await;
    server._dir = Some(dir);
    server
}

pub async fn wait_for(server: &TestServer, run: &str, state: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..400 {
        let (status, view) = server.get(&format!("/api/runs/{run}")).await;
        assert_eq!(status, StatusCode::OK, "{view}");
        last = view.clone();
        if view["state"] == state {
            return view;
        }
        if ["done", "failed", "cancelled"].contains(&view["state"].as_str().unwrap_or_default()) {
            panic!(
                "the run ended as {} instead of {state}: {view}",
                view["state"]
            );
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // What the run did last, so a stuck run says where it stopped.
    let (_, log) = server
        .get(&format!("/api/runs/{run}/events?limit=1000"))
        .await;
    let tail: Vec<&Value> = log
        .as_array()
        .map(|l| l.iter().rev().take(8).collect())
        .unwrap_or_default();
    panic!(
        "run {run} never became {state}: {last}\nits log's last entries, newest first: {tail:?}"
    );
}

pub async fn start(server: &TestServer, body: Value) -> (String, String) {
    let (status, view) = server.post("/api/runs", body).await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    (
        view["id"].as_str().unwrap().to_string(),
        view["plan_id"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn without_a_model_a_run_is_refused_with_what_to_set_and_the_rest_works() {
    let server = TestServer::start().await;
    let (status, body) = server
        .post("/api/runs", json!({"task": "write a haiku"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "no_model");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("PLANBOARD_LLM_MODEL"));
    let (status, runs) = server.get("/api/runs").await;
    assert_eq!((status, runs), (StatusCode::OK, json!([])));
    server
        .create(crate::support::chain("plans still work"))
        .await;
}

#[tokio::test]
async fn a_run_waits_for_approval_on_the_plans_route_then_runs_to_its_answer() {
    let fake = FakeOpenAi::start().await;
    let server = server_with(&fake).await;
    let (run, plan) = start(&server, json!({"task": "Look up the weather in Shanghai"})).await;
    let view = wait_for(&server, &run, "awaiting_approval").await;
    assert_eq!(view["classification"]["mode"], "simple");
    assert_eq!(view["classification"]["by"], "model");
    let p = server.plan(&plan).await;
    assert_eq!(p["state"], "awaiting_approval");
    assert_eq!(p["mode"], "simple");
    assert_eq!(p["subtasks"].as_array().unwrap().len(), 2);
    let (status, body) = server
        .post(&format!("/api/plans/{plan}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let view = wait_for(&server, &run, "done").await;
    assert_eq!(view["answer"], "the final answer");
    assert_eq!(view["progress"]["done"], 2);
    assert_eq!(view["progress"]["total"], 2);
    assert_eq!(server.plan(&plan).await["state"], "done");
    let (status, events) = server.get(&format!("/api/runs/{run}/events")).await;
    assert_eq!(status, StatusCode::OK);
    // The page's bounds are the document's: outside them, a 400 saying so.
    for bad in ["limit=0", "limit=1001", "after=-1"] {
        let (status, body) = server.get(&format!("/api/runs/{run}/events?{bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let (_, one) = server.get(&format!("/api/runs/{run}/events?limit=1")).await;
    assert_eq!(one.as_array().unwrap().len(), 1);
    let kinds: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    for kind in [
        "classified",
        "plan_proposed",
        "llm_call",
        "subtask_result",
        "answer",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    let all = format!("{events}{view}");
    assert!(
        !all.contains("sk-fake-secret"),
        "the key never leaves the server"
    );
    let (status, artifacts) = server.get(&format!("/api/runs/{run}/artifacts")).await;
    assert_eq!((status, artifacts), (StatusCode::OK, json!([])));
    // The answer is the finished plan's outcome, so its Markdown export has it.
    let markdown = server
        .client
        .get(server.url(&format!("/api/plans/{plan}/export?format=markdown")))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        markdown.contains("**Outcome**: the final answer"),
        "{markdown}"
    );
}

#[tokio::test]
async fn a_question_is_answered_over_http_and_the_answer_reaches_the_model() {
    let fake = FakeOpenAi::start().await;
    fake.content(json!({"confidence": 0.9, "mode": "simple", "reason": "clear"}));
    fake.content(json!({"title": "book", "subtasks": [{"name": "book a hotel", "description": "book it", "expected_outcome": "", "depends_on": []}]}));
    fake.content(json!({"action": "ask", "question": "Which city?"}));
    let server = server_with(&fake).await;
    let (run, plan) = start(
        &server,
        json!({"task": "Book a hotel", "approval_required": false}),
    )
    .await;
    for _ in 0..200 {
        if crate::support::state_of(&server.plan(&plan).await, 1) == "blocked" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // The question waits in the inbox, on its subtask.
    let (_, needs) = server.get("/api/inbox").await;
    let asked: Vec<&Value> = needs
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "question")
        .collect();
    assert_eq!(asked.len(), 1, "{needs}");
    assert_eq!(asked[0]["subtask"], 1, "{needs}");
    assert_eq!(asked[0]["text"], "Which city?", "{needs}");
    let (status, body) = server
        .post(
            &format!("/api/runs/{run}/answer"),
            json!({"subtask": 1, "answer": "Hangzhou"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for(&server, &run, "done").await;
    let asked_again = fake
        .requests()
        .iter()
        .filter(|r| crate::fake_openai::shape(r) == "action")
        .any(|r| {
            r["messages"][1]["content"]
                .as_str()
                .unwrap_or_default()
                .contains("Hangzhou")
        });
    assert!(asked_again, "the answer is in the executor's prompt");
    let (status, body) = server
        .post(
            &format!("/api/runs/{run}/answer"),
            json!({"subtask": 1, "answer": "again"}),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "nothing is waiting: {body}"
    );
}

#[tokio::test]
async fn a_run_is_paused_resumed_and_cancelled_over_http() {
    let fake = FakeOpenAi::start().await;
    fake.latency(Duration::from_millis(150));
    fake.content(json!({"confidence": 0.9, "mode": "simple", "reason": "clear"}));
    fake.content(json!({"title": "steps", "subtasks": [
        {"name": "one", "description": "", "expected_outcome": "", "depends_on": []},
        {"name": "two", "description": "", "expected_outcome": "", "depends_on": []},
        {"name": "three", "description": "", "expected_outcome": "", "depends_on": []}]}));
    let server = server_with(&fake).await;
    let (run, plan) = start(
        &server,
        json!({"task": "Three steps", "approval_required": false}),
    )
    .await;
    wait_for(&server, &run, "running").await;
    let (status, body) = server
        .post(&format!("/api/runs/{run}/pause"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for(&server, &run, "paused").await;
    assert_eq!(server.plan(&plan).await["state"], "paused");
    let (status, body) = server
        .post(&format!("/api/runs/{run}/resume"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for(&server, &run, "running").await;
    let (status, body) = server
        .post(&format!("/api/runs/{run}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let view = wait_for(&server, &run, "cancelled").await;
    assert!(view["reason"]
        .as_str()
        .unwrap()
        .contains("cancelled by tester"));
    let p = server.plan(&plan).await;
    assert_eq!(p["state"], "abandoned");
    assert!(p["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["state"] != "in_progress"));
}

#[tokio::test]
async fn the_run_stream_replays_the_log_and_follows_it_to_the_answer() {
    let fake = FakeOpenAi::start().await;
    fake.latency(Duration::from_millis(50));
    let server = server_with(&fake).await;
    let (run, _) = start(
        &server,
        json!({"task": "Say hello", "approval_required": false}),
    )
    .await;
    follow_to_the_answer(&server, &run).await;
}

/// Follows a run's stream on `server` from its start to its answer: the
/// entries in order with increasing ids, and the answer's deltas.
pub async fn follow_to_the_answer(server: &TestServer, run: &str) {
    use futures_util::StreamExt;
    let response = server
        .client
        .get(server.url(&format!("/api/runs/{run}/stream")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut events = eventsource_stream::Eventsource::eventsource(response.bytes_stream());
    let mut kinds = Vec::new();
    let mut last_id = 0i64;
    let mut answer_pieces = String::new();
    // Through another replica the deltas take their own path, so the
    // answer's last piece may come after the answer's entry.
    let (mut answered, mut written) = (false, false);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while let Ok(Some(Ok(event))) = tokio::time::timeout_at(deadline, events.next()).await {
        if event.event == "delta" {
            // A piece of a reply being written: not on the log, no id of its own.
            let delta: Value = serde_json::from_str(&event.data).unwrap();
            assert_eq!(delta["run_id"], run);
            if delta["role"] == "compiler" {
                answer_pieces.push_str(delta["text"].as_str().unwrap());
                written |= delta["done"] == true;
            }
        } else {
            let id: i64 = event.id.parse().unwrap();
            assert!(id > last_id, "ids increase");
            last_id = id;
            let entry: Value = serde_json::from_str(&event.data).unwrap();
            if !answered {
                kinds.push(entry["kind"].as_str().unwrap().to_string());
            }
            answered |= entry["kind"] == "answer";
        }
        if answered && written {
            break;
        }
    }
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("state_changed"),
        "from the start"
    );
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("answer"),
        "{kinds:?}"
    );
    assert_eq!(
        answer_pieces, "the final answer",
        "the answer streamed live as it was written"
    );
}

#[tokio::test]
async fn another_agent_delegates_a_whole_task_over_mcp() {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::ServiceExt;
    let fake = FakeOpenAi::start().await;
    let server = server_with(&fake).await;
    let config = StreamableHttpClientTransportConfig::with_uri(server.url("/mcp"));
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    let client = ().serve(transport).await.expect("MCP session");
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "start_run"));
    let call = |name: &'static str, args: Value| {
        let mut params = CallToolRequestParams::new(name);
        params.arguments = args.as_object().cloned();
        params
    };
    let text = |r: &rmcp::model::CallToolResult| -> Value {
        let t: String = r
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        serde_json::from_str(&t).unwrap_or(Value::String(t))
    };
    let started = client
        .call_tool(call(
            "start_run",
            json!({"task": "Summarise the week", "approval_required": false}),
        ))
        .await
        .unwrap();
    assert_ne!(started.is_error, Some(true), "{:?}", text(&started));
    let run = text(&started)["run_id"].as_str().unwrap().to_string();
    let mut last = Value::Null;
    for _ in 0..200 {
        let got = client
            .call_tool(call("get_run", json!({"run_id": run})))
            .await
            .unwrap();
        last = text(&got);
        if last["state"] == "done" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(last["state"], "done", "{last}");
    assert_eq!(last["answer"], "the final answer");
    let refused = client
        .call_tool(call("start_run", json!({"task": ""})))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true), "an empty task is refused");
    let view = server.get(&format!("/api/runs/{run}")).await.1;
    assert!(
        view["started_by"].as_str().unwrap().contains("tester"),
        "{view}"
    );
}

/// An MCP client that speaks the Tasks extension (SEP-2663).
struct TasksClient;

impl rmcp::ClientHandler for TasksClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder()
                .enable_tasks()
                .build(),
            rmcp::model::Implementation::new("tasks-client", "1"),
        )
    }
}

#[tokio::test]
async fn an_mcp_client_follows_a_run_as_a_task_through_its_approval_to_the_answer() {
    follow_a_run_as_a_task(rmcp::service::ClientLifecycleMode::Initialize, "2025-11-25").await;
}

/// The same at 2026-07-28, with no session: a task is the run, so it is
/// followed without one.
#[tokio::test]
async fn an_mcp_client_at_2026_07_28_follows_a_run_as_a_task_without_a_session() {
    let newest = rmcp::model::ProtocolVersion::V_2026_07_28;
    follow_a_run_as_a_task(
        rmcp::service::ClientLifecycleMode::Discover {
            preferred_versions: vec![newest],
        },
        "2026-07-28",
    )
    .await;
}

/// rmcp's client (MCP's official Rust SDK), connected by `lifecycle`,
/// starts runs as tasks and follows them: an approval, the answer, a
/// cancel, unknown tasks.
async fn follow_a_run_as_a_task(lifecycle: rmcp::service::ClientLifecycleMode, revision: &str) {
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, InputRequest,
        TaskPayload, TaskStatus,
    };
    use rmcp::transport::StreamableHttpClientTransport;
    let fake = FakeOpenAi::start().await;
    let server = server_with(&fake).await;
    let transport = StreamableHttpClientTransport::from_uri(server.url("/mcp"));
    let client = rmcp::service::serve_client_with_lifecycle(TasksClient, transport, lifecycle)
        .await
        .expect("MCP client");
    assert_eq!(
        client.peer_info().map(|i| i.protocol_version.to_string()),
        Some(revision.to_string())
    );
    let start = |task: &str| {
        let mut params = CallToolRequestParams::new("start_run");
        params.arguments = json!({"task": task, "approval_required": true})
            .as_object()
            .cloned();
        params
    };
    let CallToolResponse::Task(created) = client
        .call_tool_once(start("Look up the weather in Shanghai"))
        .await
        .unwrap()
    else {
        panic!("start_run answers a task to a client of the Tasks extension")
    };
    let run = created.task.task_id.clone();
    assert!(
        server.get(&format!("/api/runs/{run}")).await.0.is_success(),
        "the task is the run"
    );
    let follow = |want: TaskStatus| {
        let (client, run) = (&client, run.clone());
        async move {
            for _ in 0..400 {
                let got = client
                    .get_task(GetTaskParams::new(run.clone()))
                    .await
                    .unwrap();
                if got.task.status() == want {
                    return got.task;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            panic!("the task never became {want:?}")
        }
    };
    // Waiting for the plan's approval: a person's to give, on the board.
    let waiting = follow(TaskStatus::InputRequired).await;
    assert_eq!(
        waiting.task.created_at, created.task.created_at,
        "a task is created once: when its run was"
    );
    let TaskPayload::InputRequired { input_requests } = &waiting.payload else {
        unreachable!()
    };
    let plan = server.get(&format!("/api/runs/{run}")).await.1["plan_id"]
        .as_str()
        .unwrap()
        .to_string();
    let asks = serde_json::to_value(input_requests).unwrap().to_string();
    assert!(
        input_requests
            .values()
            .all(|r| matches!(r, InputRequest::Elicitation(_)))
            && asks.contains(&format!("/plans/{plan}"))
            && asks.contains("\"mode\":\"url\""),
        "each thing the run waits for is the board's address: {asks}"
    );
    let (status, body) = server
        .post(&format!("/api/plans/{plan}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let done = follow(TaskStatus::Completed).await;
    let TaskPayload::Completed { result } = &done.payload else {
        unreachable!()
    };
    assert!(
        Value::Object(result.clone())
            .to_string()
            .contains("the final answer"),
        "the result is get_run's answer: {result:?}"
    );

    // Cancelled through the task, as by the run's Cancel button.
    let CallToolResponse::Task(second) = client
        .call_tool_once(start("Look up the weather in Paris"))
        .await
        .unwrap()
    else {
        panic!("a task again")
    };
    client
        .cancel_task(CancelTaskParams::new(second.task.task_id.clone()))
        .await
        .unwrap();
    let view = wait_for(&server, &second.task.task_id, "cancelled").await;
    assert_eq!(view["plan_state"], "abandoned", "{view}");
    let cancelled = client
        .get_task(GetTaskParams::new(second.task.task_id.clone()))
        .await
        .unwrap();
    assert_eq!(cancelled.task.status(), TaskStatus::Cancelled);
    // A task that is no run is an error, not a crash or another's run.
    assert!(client
        .get_task(GetTaskParams::new(uuid::Uuid::new_v4().to_string()))
        .await
        .is_err());
    assert!(client
        .get_task(GetTaskParams::new("not a run"))
        .await
        .is_err());
}

#[tokio::test]
async fn the_agent_uses_an_mcp_servers_tools_as_work_tools() {
    // The MCP server is another planboard: its plan tools are the work tools.
    let tool_server = TestServer::start().await;
    let fake = FakeOpenAi::start().await;
    fake.content(json!({"title": "delegate", "subtasks": [{"name": "make a plan elsewhere", "description": "", "expected_outcome": "", "depends_on": []}]}));
    fake.content(json!({"action": "create_plan", "arguments": {"title": "made by the agent", "subtasks": [{"name": "x"}]}}));
    let dir = tempfile::tempdir().unwrap();
    let mut servers = std::collections::BTreeMap::new();
    servers.insert(
        "board".to_string(),
        agent::tools::mcp::McpServer {
            url: Some(tool_server.url("/mcp")),
            token: None,
            command: None,
            args: vec![],
            env: Default::default(),
        },
    );
    let config = Config {
        llm: Some(fake.config(Duration::from_secs(10))),
        workspaces: dir.path().join("ws"),
        mcp_servers: servers,
        ..Config::defaults(
            format!("sqlite://{}", dir.path().join("a.db").display()),
            local(),
        )
    };
    let server = TestServer::with_config(&config, |_| {}).await;
    let (run, _) = start(&server, json!({"task": "Make a plan on the other board", "mode": "simple", "approval_required": false})).await;
    // create_plan is not marked read-only: it waits for a person (the
    // default policy of an MCP tool that may write).
    let call = loop {
        let (_, calls) = server.get(&format!("/api/runs/{run}/tool-calls")).await;
        if let Some(call) = calls.as_array().and_then(|c| c.first()).cloned() {
            break call;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(call["name"], "create_plan");
    let (_, plans) = tool_server.get("/api/plans").await;
    assert!(
        !plans.to_string().contains("made by the agent"),
        "not before the approval"
    );
    let (status, body) = server
        .post(
            &format!(
                "/api/runs/{run}/tool-calls/{}",
                call["call"].as_str().unwrap()
            ),
            json!({"verdict": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for(&server, &run, "done").await;
    let (_, plans) = tool_server.get("/api/plans").await;
    assert!(plans.to_string().contains("made by the agent"), "{plans}");
    let first = fake
        .requests()
        .into_iter()
        .find(|r| crate::fake_openai::shape(r) == "action")
        .unwrap();
    let variants = first["response_format"]["json_schema"]["schema"]["oneOf"].to_string();
    assert!(
        variants.contains("create_plan") && variants.contains("write_file"),
        "both tool sources are offered"
    );
    let (_, events) = server.get(&format!("/api/runs/{run}/events")).await;
    let call = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "tool_call")
        .expect("the tool call is on the run log");
    assert_eq!(call["entry"]["name"], "create_plan");
    assert_eq!(call["entry"]["ok"], true);
}

#[tokio::test]
async fn the_plans_stream_carries_its_runs_entries_as_run_events() {
    use futures_util::StreamExt;
    let fake = FakeOpenAi::start().await;
    let server = server_with(&fake).await;
    let (run, plan) = start(&server, json!({"task": "Say hello"})).await;
    wait_for(&server, &run, "awaiting_approval").await;
    let response = server
        .client
        .get(server.url(&format!("/api/plans/{plan}/stream")))
        .send()
        .await
        .unwrap();
    let mut events = eventsource_stream::Eventsource::eventsource(response.bytes_stream());
    let ready = events.next().await.unwrap().unwrap();
    assert_eq!(ready.event, "ready");
    server
        .post(&format!("/api/plans/{plan}/approve"), json!({}))
        .await;
    let (mut plan_events, mut run_kinds, mut deltas) = (0, Vec::new(), 0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while let Ok(Some(Ok(event))) = tokio::time::timeout_at(deadline, events.next()).await {
        let data: Value = serde_json::from_str(&event.data).unwrap();
        if event.event == "run" {
            // No id of its own: a client's Last-Event-ID stays the plan log's.
            assert_eq!(data["run_id"], run.as_str());
            run_kinds.push(data["kind"].as_str().unwrap().to_string());
            if data["kind"] == "answer" {
                break;
            }
        } else if event.event == "delta" {
            assert_eq!(data["plan_id"], plan.as_str());
            deltas += 1;
        } else {
            plan_events += 1;
        }
    }
    assert!(plan_events > 0, "the plan's own events are there too");
    assert!(deltas >= 3, "replies stream as delta events: {deltas}");
    assert!(run_kinds.contains(&"llm_call".to_string()), "{run_kinds:?}");
    assert_eq!(run_kinds.last().map(String::as_str), Some("answer"));
}

#[tokio::test]
async fn the_task_box_form_starts_a_run_and_opens_its_board_or_says_why_not() {
    let fake = FakeOpenAi::start().await;
    let server = server_with(&fake).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let post = |form: Vec<(&'static str, &'static str)>| {
        client
            .post(server.url("/plans/new/task"))
            .form(&form)
            .send()
    };
    let location = |r: &reqwest::Response| {
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        r.headers()["location"].to_str().unwrap().to_string()
    };
    // A plain form post (no script): the run starts, the board opens.
    let answer = post(vec![
        ("task", "Say hello"),
        ("mode", "simple"),
        ("max_parallel", "2"),
        ("max_tokens", "50,000"),
        ("max_minutes", "5"),
    ])
    .await
    .unwrap();
    let to = location(&answer);
    let plan = to.strip_prefix("/plans/").expect("the plan's board");
    let (_, runs) = server.get(&format!("/api/runs?plan={plan}")).await;
    let run = runs[0]["id"].as_str().expect("a run on that plan");
    // Approval unticked: the run goes on without waiting for a person.
    let view = wait_for(&server, run, "done").await;
    assert_eq!(view["config"]["mode"], "simple", "{view}");
    assert_eq!(view["config"]["max_parallel"], 2, "{view}");
    assert_eq!(view["config"]["approval_required"], false, "{view}");
    assert_eq!(view["config"]["budget"]["max_tokens"], 50_000, "{view}");
    assert_eq!(view["config"]["budget"]["max_wall_secs"], 300, "{view}");
    // Nobody followed a stream, so no reply was streamed (it costs more).
    assert!(!fake.requests().is_empty());
    assert!(fake.requests().iter().all(|r| r["stream"] == false));
    // A refusal goes back to the form with the reason and the task as typed.
    for (form, says) in [
        (
            vec![
                ("task", "Say it twice"),
                ("mode", "auto"),
                ("max_parallel", "many"),
            ],
            "At once",
        ),
        (
            vec![
                ("task", "Say it twice"),
                ("mode", "sideways"),
                ("max_parallel", "1"),
                ("approval", "on"),
            ],
            "sideways",
        ),
        (
            vec![
                ("task", "Say it twice"),
                ("mode", "auto"),
                ("max_parallel", "1"),
                ("max_tokens", "12"),
            ],
            "Token budget",
        ),
        (
            vec![
                ("task", "Say it twice"),
                ("mode", "auto"),
                ("max_parallel", "1"),
                ("max_minutes", "-3"),
            ],
            "Time budget",
        ),
    ] {
        let to = location(&post(form).await.unwrap());
        let query = to.strip_prefix("/plans/new?").expect("back to the form");
        let fields: std::collections::HashMap<String, String> =
            serde_urlencoded::from_str(query).unwrap();
        assert!(fields["task_error"].contains(says), "{fields:?}");
        assert_eq!(fields["task"], "Say it twice");
        let page = client
            .get(server.url(&to))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(page.contains(says) && page.contains(">Say it twice</textarea>"));
    }
}

#[tokio::test]
async fn the_agent_works_a_plan_made_by_hand_over_the_api_and_from_the_boards_form() {
    let fake = FakeOpenAi::start().await;
    let server = server_with(&fake).await;
    let (status, made) = server
        .post(
            "/api/plans",
            json!({"title": "Release 2.0", "goal": "ship the release",
                   "approval_required": true,
                   "subtasks": [{"name": "build the release"}, {"name": "ship it", "dependencies": [1]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let plan = made["plan"]["id"].as_str().unwrap().to_string();
    let planner_calls = || {
        fake.requests()
            .iter()
            .filter(|r| crate::fake_openai::shape(r) == "plan")
            .count()
    };
    let before = planner_calls();
    let (status, view) = server.post("/api/runs", json!({"plan": plan})).await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    let run = view["id"].as_str().unwrap().to_string();
    assert_eq!(view["plan_id"], plan.as_str(), "no new plan");
    assert_eq!(view["config"]["task"], "Release 2.0\n\nship the release");
    // A second run on the same plan is refused while this one works it.
    let (status, body) = server.post("/api/runs", json!({"plan": plan})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("already works plan"),
        "{body}"
    );
    wait_for(&server, &run, "awaiting_approval").await;
    let (status, _) = server
        .post(&format!("/api/plans/{plan}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    wait_for(&server, &run, "done").await;
    let done = server.plan(&plan).await;
    let names: Vec<&str> = done["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["build the release", "ship it"], "worked as written");
    assert_eq!(planner_calls(), before, "no planner call");
    // A finished plan is refused, with the reason.
    let (status, body) = server.post("/api/runs", json!({"plan": plan})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("has not finished"),
        "{body}"
    );
    // From the board: a plain form starts the run and opens the board.
    let (_, other) = server
        .post(
            "/api/plans",
            json!({"title": "By hand", "subtasks": [{"name": "one"}]}),
        )
        .await;
    let other = other["plan"]["id"].as_str().unwrap().to_string();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let started = client
        .post(server.url(&format!("/plans/{other}/agent")))
        .form(&[("go", "1")])
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), StatusCode::SEE_OTHER);
    let (_, runs) = server.get(&format!("/api/runs?plan={other}")).await;
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
}

#[tokio::test]
async fn a_run_paused_by_its_budget_is_raised_and_resumed_from_the_board_in_one_step() {
    let fake = FakeOpenAi::start().await;
    let server = server_with(&fake).await;
    // Two calls: the classifier is skipped (mode given), the planner is one,
    // the first executor turn the second; then the budget pauses the run.
    let (run, plan) = start(
        &server,
        json!({"task": "Say hello", "mode": "simple", "approval_required": false,
               "budget": {"max_llm_calls": 2}}),
    )
    .await;
    let paused = wait_for(&server, &run, "paused").await;
    assert!(
        paused["reason"]
            .as_str()
            .unwrap()
            .contains("budget reached"),
        "{paused}"
    );
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let post = |form: Vec<(&'static str, &'static str)>| {
        client
            .post(server.url(&format!("/plans/{plan}/budget")))
            .form(&form)
            .send()
    };
    // Refused with a sentence, and nothing changed.
    let refused = post(vec![("max_llm_calls", "many")]).await.unwrap();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.text().await.unwrap().contains("max_llm_calls"));
    assert_eq!(
        server.get(&format!("/api/runs/{run}")).await.1["state"],
        "paused"
    );
    // Raised and resumed in one step: the run goes on to the end.
    let raised = post(vec![
        ("max_llm_calls", "50"),
        ("max_tokens", ""),
        ("max_minutes", "30"),
        ("max_cost", ""),
    ])
    .await
    .unwrap();
    assert_eq!(raised.status(), StatusCode::SEE_OTHER);
    let done = wait_for(&server, &run, "done").await;
    assert_eq!(done["config"]["budget"]["max_llm_calls"], 50, "{done}");
    assert_eq!(done["config"]["budget"]["max_wall_secs"], 1800, "{done}");
}

#[tokio::test]
async fn the_boards_answer_and_replan_forms_change_the_plan_or_say_why_not() {
    let fake = FakeOpenAi::start().await;
    let server = server_with(&fake).await;
    let (run, plan) = start(&server, json!({"task": "Say hello", "mode": "complex"})).await;
    wait_for(&server, &run, "awaiting_approval").await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let post = |path: String, form: Vec<(&'static str, &'static str)>| {
        client.post(server.url(&path)).form(&form).send()
    };
    // A planner that does not exist is refused with a sentence.
    let refused = post(format!("/plans/{plan}/replan"), vec![("mode", "sideways")])
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.text().await.unwrap().contains("sideways"));
    // Re-plan as simple: back to the board, and the agent plans again.
    let moved = post(format!("/plans/{plan}/replan"), vec![("mode", "simple")])
        .await
        .unwrap();
    assert_eq!(moved.status(), StatusCode::SEE_OTHER);
    assert_eq!(server.plan(&plan).await["mode"], "simple");
    let mut view = json!(null);
    for _ in 0..400 {
        view = server.get(&format!("/api/runs/{run}")).await.1;
        if view["round"] == 2 && view["state"] == "awaiting_approval" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(view["round"], 2, "planned again: {view}");
    assert_eq!(view["classification"]["mode"], "simple", "{view}");
    assert_eq!(view["classification"]["by"], "person", "{view}");
    // An answer for a subtask that is not waiting on one is refused as
    // the API refuses it (one path for every answer), nothing changed.
    let before = server.plan(&plan).await;
    let first: &'static str = Box::leak(before["subtasks"][0]["id"].to_string().into_boxed_str());
    let refused = post(
        format!("/plans/{plan}/answer"),
        vec![("subtask", first), ("answer", "the first")],
    )
    .await
    .unwrap();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let says = refused.text().await.unwrap();
    assert!(
        says.contains(&format!(
            "subtask {first} is todo, not waiting for an answer"
        )),
        "{says}"
    );
    assert_eq!(server.plan(&plan).await["version"], before["version"]);
    let empty = post(
        format!("/plans/{plan}/answer"),
        vec![("subtask", "1"), ("answer", " ")],
    )
    .await
    .unwrap();
    assert_eq!(empty.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_finished_run_is_remembered_and_its_memories_are_searched_pinned_and_forgotten_over_http()
{
    let fake = FakeOpenAi::start().await;
    let server = server_with(&fake).await;
    let (run, _) = start(
        &server,
        json!({"task": "Look up the weather in Shanghai", "approval_required": false}),
    )
    .await;
    wait_for(&server, &run, "done").await;
    // Remembered just after the run's last state change.
    let mut found = Value::Null;
    for _ in 0..200 {
        let (status, body) = server.get("/api/memories?q=weather%20shanghai").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if body.as_array().is_some_and(|a| !a.is_empty()) {
            found = body;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let memory = found
        .as_array()
        .and_then(|a| a.iter().find(|m| m["run_id"] == run.as_str()))
        .unwrap_or_else(|| panic!("the run's memory: {found}"))
        .clone();
    assert_eq!(memory["kind"], "run");
    assert!(
        memory["text"].as_str().unwrap().contains("Outcome: done"),
        "{memory}"
    );
    let (_, unrelated) = server.get("/api/memories?q=poem%20autumn").await;
    assert_eq!(unrelated, json!([]));
    let id = memory["id"].as_str().unwrap();
    let (status, pinned) = server
        .post(&format!("/api/memories/{id}/pin"), json!({"pinned": true}))
        .await;
    assert_eq!(
        (status, pinned["pinned"].clone()),
        (StatusCode::OK, json!(true))
    );
    // A person corrects what a memory says; the agent reads the new words.
    let (_, left) = server.get("/api/memories?q=weather%20shanghai").await;
    let other = left.as_array().unwrap()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let edit = |id: String, body: Value| {
        let request = server
            .client
            .patch(server.url(&format!("/api/memories/{id}")))
            .json(&body);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let (status, edited) = edit(
        other.clone(),
        json!({"text": "Bring an umbrella in Shanghai"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{edited}");
    assert_eq!(edited["text"], "Bring an umbrella in Shanghai");
    let (_, found) = server.get("/api/memories?q=umbrella").await;
    assert_eq!(found[0]["id"], other.as_str());
    let (status, _) = edit(other.clone(), json!({"text": "  "})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = edit(other.clone(), json!({"text": "x".repeat(2001)})).await;
    assert!(status.is_client_error());
    // The bound is on the text as sent: a word in 2,000 spaces is refused,
    // not trimmed into a memory (the API fuzzer's find).
    let padded = format!("wet{}", "\u{a0}".repeat(2_000));
    let (status, body) = edit(other, json!({ "text": padded })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, _) = edit(
        uuid::Uuid::new_v4().to_string(),
        json!({"text": "nobody's"}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let forget = |id: String| {
        let request = server
            .client
            .delete(server.url(&format!("/api/memories/{id}")));
        async move { request.send().await.unwrap().status() }
    };
    assert_eq!(forget(id.to_string()).await, StatusCode::NO_CONTENT);
    assert_eq!(forget(id.to_string()).await, StatusCode::NOT_FOUND);
    assert_eq!(forget("not-a-uuid".into()).await, StatusCode::NOT_FOUND);
    let (_, after) = server.get("/api/memories?q=weather%20shanghai").await;
    assert!(
        after.as_array().unwrap().iter().all(|m| m["id"] != id),
        "forgotten: {after}"
    );
    let (status, _) = server.get("/api/memories?limit=0").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_task_box_says_while_the_model_does_not_answer_and_not_once_it_does() {
    let page = |server: &TestServer| {
        let request = server.client.get(server.url("/plans/new"));
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    // A model configured on a port nothing listens on: a local model
    // server still starting.
    let fake = FakeOpenAi::start().await;
    let mut away = fake.config(Duration::from_secs(2));
    away.base_url = format!("http://127.0.0.1:{}/v1", crate::support::free_port());
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        llm: Some(away),
        workspaces: dir.path().join("workspaces"),
        ..Config::defaults(
            format!("sqlite://{}", dir.path().join("waiting.db").display()),
            local(),
        )
    };
    let server = TestServer::with_config(&config, |_| {}).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(page(&server)
        .await
        .contains("data-testid=\"model-waiting\""));
    // The fake answers: once asked, the note goes.
    let up = server_with(&fake).await;
    let mut gone = false;
    for _ in 0..100 {
        if !page(&up).await.contains("data-testid=\"model-waiting\"") {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "the note stays while the model answers");
}

#[tokio::test]
async fn a_local_model_that_dies_is_reported_dead_within_seconds_with_its_log() {
    // The local model's folder as scripts/local-model.sh keeps it, with a
    // model process that is alive, then dies as an AMX build does.
    let home = tempfile::tempdir().unwrap();
    let mut model = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    std::fs::write(
        home.path().join("planboard-model.pid"),
        model.id().to_string(),
    )
    .unwrap();
    std::fs::write(home.path().join("state"), "starting\n").unwrap();
    std::fs::write(
        home.path().join("planboard-model.log"),
        "load_tensors: loaded\nggml_compute_forward: Illegal instruction (core dumped)\n",
    )
    .unwrap();
    let fake = FakeOpenAi::start().await;
    let mut away = fake.config(Duration::from_secs(2));
    away.base_url = format!("http://127.0.0.1:{}/v1", crate::support::free_port());
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        llm: Some(away),
        workspaces: dir.path().join("workspaces"),
        local_model_home: Some(home.path().to_path_buf()),
        ..Config::defaults(
            format!("sqlite://{}", dir.path().join("dying.db").display()),
            local(),
        )
    };
    let server = TestServer::with_config(&config, |_| {}).await;
    let (_, tools) = server.get("/api/agent/tools").await;
    assert_eq!(tools["model"]["state"], "waiting", "{tools}");
    assert_eq!(tools["model"]["doing"], "starting", "{tools}");
    // It dies: the next look says so, with the log, at once.
    model.kill().unwrap();
    model.wait().unwrap();
    let died = std::time::Instant::now();
    let (_, tools) = server.get("/api/agent/tools").await;
    assert_eq!(tools["model"]["state"], "died", "{tools}");
    assert!(died.elapsed() < Duration::from_secs(3));
    assert!(
        tools["model"]["log"]
            .as_str()
            .unwrap()
            .contains("Illegal instruction"),
        "{tools}"
    );
    let page = server
        .client
        .get(server.url("/plans/new"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("data-testid=\"model-died\""), "{page}");
    assert!(page.contains("Illegal instruction"));
    assert!(!page.contains("data-testid=\"model-waiting\""));
    // A build that failed says why, with the script's own words.
    std::fs::write(
        home.path().join("state"),
        "failed: llama-server died at its first completion\n",
    )
    .unwrap();
    let (_, tools) = server.get("/api/agent/tools").await;
    assert_eq!(
        tools["model"]["reason"],
        "llama-server died at its first completion"
    );
}

#[tokio::test]
async fn a_runs_cost_is_served_per_subtask_and_model_and_metrics_count_the_agents_work() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        llm: Some(fake.config(Duration::from_secs(10))),
        workspaces: dir.path().join("workspaces"),
        prices: run_model::PriceTable::builtin()
            .with_given(r#"{"fake": {"prompt": 1, "completion": 2}}"#)
            .unwrap(),
        ..Config::defaults(
            format!("sqlite://{}", dir.path().join("runs.db").display()),
            local(),
        )
    };
    let server = TestServer::with_config(&config, |_| {}).await;
    // A money budget must be an amount above nothing.
    for bad in [json!(0), json!(-1), json!(2_000_000)] {
        let (status, body) = server
            .post(
                "/api/runs",
                json!({"task": "t", "budget": {"max_cost": bad}}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
    }
    let (run, plan) = start(
        &server,
        json!({"task": "Look up the weather in Shanghai", "approval_required": false,
               "budget": {"max_cost": 5}}),
    )
    .await;
    let view = wait_for(&server, &run, "done").await;
    assert_eq!(view["config"]["budget"]["max_cost"], 5.0);
    let (status, cost) = server.get(&format!("/api/runs/{run}/cost")).await;
    assert_eq!(status, StatusCode::OK, "{cost}");
    assert_eq!(cost["total"]["calls"], view["spent"]["llm_calls"]);
    assert_eq!(cost["total"]["unpriced_calls"], 0, "{cost}");
    assert_eq!(cost["total"]["cost"], view["spent"]["cost"]);
    assert_eq!(cost["by_model"][0]["model"], "fake");
    let subtasks: Vec<&Value> = cost["by_subtask"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["subtask"])
        .collect();
    assert!(subtasks.contains(&&Value::Null), "planning: {cost}");
    assert!(subtasks.contains(&&json!(1)), "{cost}");
    let (status, _) = server
        .get(&format!("/api/runs/{}/cost", uuid::Uuid::new_v4()))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The board's pages show it: the history row and the activity table.
    let (_, history) = crate::site::page(&server, "/history?sort=cost").await;
    assert!(
        history.contains(r#"data-testid="history-cost""#),
        "{history}"
    );
    assert!(history.contains(r#"aria-sort="descending""#), "{history}");
    let (_, activity) = crate::site::page(&server, &format!("/plans/{plan}/activity")).await;
    assert!(
        activity.contains(r#"data-testid="cost-table""#),
        "{activity}"
    );
    let metrics = server
        .client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let calls = view["spent"]["llm_calls"].as_u64().unwrap();
    let counted: u64 = metrics
        .lines()
        .filter(|l| {
            l.starts_with("planboard_agent_model_calls_total{") && l.contains(r#"model="fake""#)
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(counted, calls, "{metrics}");
    for line in [
        r#"planboard_agent_runs{state="done"} 1"#,
        r#"planboard_agent_tokens_total{model="fake",kind="prompt"}"#,
        r#"planboard_agent_model_call_duration_seconds_count{model="fake",role="planner"} 1"#,
        "planboard_agent_cost_usd_total",
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }
}

#[tokio::test]
async fn the_inbox_lists_what_waits_for_a_person_and_lets_it_go_once_done() {
    let fake = FakeOpenAi::start().await;
    let server = server_with(&fake).await;
    let (status, empty) = server.get("/api/inbox").await;
    assert_eq!((status, empty), (StatusCode::OK, json!([])));
    let (run, plan) = start(&server, json!({"task": "Look up the weather in Shanghai"})).await;
    wait_for(&server, &run, "awaiting_approval").await;
    let (_, needs) = server.get("/api/inbox").await;
    assert_eq!(needs.as_array().unwrap().len(), 1, "{needs}");
    assert_eq!(needs[0]["kind"], "approval");
    assert_eq!(needs[0]["plan_id"], plan.as_str());
    assert_eq!(needs[0]["href"], format!("/plans/{plan}"));
    let (_, page) = crate::site::page(&server, "/inbox").await;
    assert!(page.contains(r#"data-kind="approval""#), "{page}");
    assert!(page.contains(&format!(r#"href="/plans/{plan}""#)), "{page}");
    // Approved, it no longer waits; paused, the run does.
    fake.latency(Duration::from_millis(1500));
    server
        .post(&format!("/api/plans/{plan}/approve"), json!({}))
        .await;
    wait_for(&server, &run, "running").await;
    let (status, view) = server
        .post(&format!("/api/runs/{run}/pause"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{view}");
    let mut kinds = Vec::new();
    for _ in 0..400 {
        let (_, needs) = server.get("/api/inbox").await;
        kinds = needs
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["kind"].as_str().unwrap().to_string())
            .collect();
        if kinds == ["stuck"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(kinds, ["stuck"], "a paused run waits for a person");
    let (_, needs) = server.get("/api/inbox").await;
    assert_eq!(needs[0]["run_id"], run.as_str());
    // Cancelled, nothing waits any more.
    server
        .post(&format!("/api/runs/{run}/cancel"), json!({}))
        .await;
    wait_for(&server, &run, "cancelled").await;
    let (_, needs) = server.get("/api/inbox").await;
    assert_eq!(needs, json!([]));
}

#[tokio::test]
async fn a_run_stuck_on_a_subtask_the_agent_gave_up_on_is_in_the_inbox_until_a_person_skips_it() {
    let fake = FakeOpenAi::start().await;
    let server = server_with(&fake).await;
    fake.content(json!({"confidence": 0.9, "mode": "simple", "reason": "one step"}));
    fake.content(json!({"title": "t", "subtasks": [
        {"name": "fetch the data", "description": "d", "expected_outcome": "data", "depends_on": []}
    ]}));
    fake.content(json!({"action": "fail", "reason": "the source is offline"}));
    // The planner's recovery (the fake's default) gives up.
    let (run, plan) = start(
        &server,
        json!({"task": "Fetch the data", "approval_required": false, "max_attempts": 1}),
    )
    .await;
    let mut needs = json!([]);
    for _ in 0..400 {
        needs = server.get("/api/inbox").await.1;
        if needs.as_array().is_some_and(|n| !n.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(needs.as_array().unwrap().len(), 1, "{needs}");
    assert_eq!(needs[0]["kind"], "stuck");
    assert_eq!(needs[0]["run_id"], run.as_str());
    let text = needs[0]["text"].as_str().unwrap();
    assert!(
        text.contains("fetch the data") && text.contains("failed"),
        "{text}"
    );
    // The give-up pauses the run on the failed subtask.
    assert_eq!(
        server.get(&format!("/api/runs/{run}")).await.1["state"],
        "paused"
    );
    // A person skips it (its last subtask): the run finishes by itself
    // and nothing waits.
    let (status, body) = server
        .post(
            &format!("/api/plans/{plan}/subtasks/1/state"),
            json!({"state": "skipped"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for(&server, &run, "done").await;
    assert_eq!(server.get("/api/inbox").await.1, json!([]));
}

/// A webhook receiver: answers each POST with the next status of
/// `statuses` (then 200), keeping the headers and bodies it got.
struct Receiver {
    url: String,
    got: std::sync::Arc<std::sync::Mutex<Vec<(axum::http::HeaderMap, String)>>>,
}

async fn receiver_on(listener: tokio::net::TcpListener, statuses: Vec<u16>) -> Receiver {
    use axum::routing::post;
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let got: std::sync::Arc<std::sync::Mutex<Vec<(axum::http::HeaderMap, String)>>> =
        Default::default();
    let statuses = std::sync::Arc::new(std::sync::Mutex::new(statuses.into_iter()));
    let seen = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        post(move |headers: axum::http::HeaderMap, body: String| {
            let (seen, statuses) = (seen.clone(), statuses.clone());
            async move {
                seen.lock().unwrap().push((headers, body));
                let status = statuses.lock().unwrap().next().unwrap_or(200);
                axum::http::StatusCode::from_u16(status).unwrap()
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Receiver { url, got }
}

fn webhook_server_config(dir: &std::path::Path, fake: &FakeOpenAi, url: &str) -> Config {
    let mut config = Config {
        llm: Some(fake.config(Duration::from_secs(10))),
        workspaces: dir.join("workspaces"),
        ..Config::defaults(
            format!("sqlite://{}", dir.join("runs.db").display()),
            local(),
        )
    };
    config.webhooks = server::webhooks::WebhookConfig {
        endpoints: vec![server::webhooks::Endpoint {
            url: url.parse().unwrap(),
            secret: Some("whsec-test".into()),
            slack: false,
        }],
        board_url: "http://board.example".into(),
        retry_base: Duration::from_millis(50),
        max_attempts: 5,
        poll: Duration::from_millis(20),
        timeout: Duration::from_secs(2),
        // Nothing settles during a test: every round reads the run's
        // entries again, and must record nothing twice.
        settle: Duration::from_secs(3600),
        retention: Duration::from_secs(30 * 24 * 3600),
    };
    config
}

/// The test's own check of the signature, as docs/agent.md (*Webhooks*) tells receivers.
fn verify(headers: &axum::http::HeaderMap, body: &str) -> bool {
    use hmac::Mac;
    let Some(sig) = headers
        .get("x-planboard-signature")
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some((t, v1)) = sig
        .split_once(',')
        .and_then(|(t, v)| Some((t.strip_prefix("t=")?, v.strip_prefix("v1=")?)))
    else {
        return false;
    };
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(b"whsec-test").unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    mac.verify_slice(&hex::decode(v1).unwrap_or_default())
        .is_ok()
}

async fn wait_for_posts(receiver: &Receiver, n: usize) -> Vec<(axum::http::HeaderMap, String)> {
    for _ in 0..400 {
        let got = receiver.got.lock().unwrap().clone();
        if got.len() >= n {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "the receiver got {} posts, not {n}",
        receiver.got.lock().unwrap().len()
    );
}

#[tokio::test]
async fn a_plan_waiting_for_approval_is_posted_signed_and_a_failing_endpoint_is_retried() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    // The endpoint fails twice before it takes the notification.
    let receiver = receiver_on(listener, vec![500, 503]).await;
    let config = webhook_server_config(dir.path(), &fake, &receiver.url);
    let server = TestServer::with_config(&config, |_| {}).await;
    let (run, plan) = start(&server, json!({"task": "Look up the weather in Shanghai"})).await;
    wait_for(&server, &run, "awaiting_approval").await;
    let got = wait_for_posts(&receiver, 3).await;
    for (headers, body) in &got {
        assert!(verify(headers, body), "signed: {headers:?}");
        assert_eq!(headers["x-planboard-event"], "approval_needed");
    }
    // The same notification each time, with the link to the plan.
    assert!(got.iter().all(|(_, body)| body == &got[0].1));
    let payload: Value = serde_json::from_str(&got[0].1).unwrap();
    assert_eq!(payload["event"], "approval_needed");
    assert_eq!(payload["plan_id"], plan.as_str());
    assert_eq!(payload["run_id"], run.as_str());
    assert_eq!(
        payload["link"],
        format!("http://board.example/plans/{plan}")
    );
    // A tampered body does not verify.
    assert!(!verify(
        &got[0].0,
        &got[0].1.replace("approval", "approvel")
    ));
    let mut delivered = Value::Null;
    for _ in 0..200 {
        let (status, list) = server.get("/api/webhooks/deliveries").await;
        assert_eq!(status, StatusCode::OK, "{list}");
        if list[0]["status"] == "delivered" {
            delivered = list[0].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(delivered["attempts"], 3, "{delivered}");
    assert_eq!(delivered["last_status"], 200);
    assert!(
        delivered["endpoint"].as_str().unwrap().ends_with("/…"),
        "{delivered}"
    );
    assert!(delivered.get("body").is_none());
    // Read again every round (nothing settled), recorded once; the cursor
    // waits before the entries that may still have company below them.
    let (_, list) = server.get("/api/webhooks/deliveries").await;
    let approvals = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["event"] == "approval_needed")
        .count();
    assert_eq!(approvals, 1, "{list}");
    let log = server.services.runs.log();
    let cursor = server
        .services
        .webhooks
        .store()
        .webhook_cursor()
        .await
        .unwrap()
        .unwrap();
    let logged = log.run_log_since(0, 500).await.unwrap();
    assert!(
        logged.iter().all(|e| e.seq > cursor),
        "the cursor {cursor} moved past unsettled entries"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_before_delivery_loses_no_notification() {
    use crate::support::{free_port, spawn_planboard};
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    // The endpoint's port, with nobody listening yet: every attempt fails.
    let address = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let port = free_port();
    let vars = vec![
        (
            "DATABASE_URL",
            format!("sqlite://{}", dir.path().join("hooks.db").display()),
        ),
        ("PLANBOARD_USER", "hooks".to_string()),
        ("PLANBOARD_INSTANCE", "hooks-test".to_string()),
        (
            "PLANBOARD_WORKSPACES",
            dir.path().join("ws").display().to_string(),
        ),
        ("PLANBOARD_LLM_MODEL", "fake".to_string()),
        ("PLANBOARD_LLM_BASE_URL", fake.url.clone()),
        ("PLANBOARD_WEBHOOK_URL", format!("http://{address}/hook")),
        ("PLANBOARD_WEBHOOK_SECRET", "whsec-test".to_string()),
    ];
    let process = spawn_planboard(port, &vars).await;
    let client = reqwest::Client::new();
    let view: Value = client
        .post(format!("{}/api/runs", process.base))
        .json(&json!({"task": "Look up the weather in Shanghai"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run = view["id"].as_str().unwrap().to_string();
    let mut tried = Value::Null;
    for _ in 0..400 {
        let list: Value = client
            .get(format!("{}/api/webhooks/deliveries", process.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if list[0]["attempts"].as_u64().unwrap_or(0) >= 1 {
            tried = list[0].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(tried["status"], "pending", "{tried}");
    assert_eq!(tried["run_id"], run.as_str());
    // SIGKILL with the notification undelivered…
    drop(process);
    // …the endpoint comes up, and the server again, on the same database.
    let listener = tokio::net::TcpListener::bind(address).await.unwrap();
    let receiver = receiver_on(listener, Vec::new()).await;
    let process = spawn_planboard(port, &vars).await;
    let got = wait_for_posts(&receiver, 1).await;
    assert!(verify(&got[0].0, &got[0].1));
    assert_eq!(got[0].0["x-planboard-event"], "approval_needed");
    let payload: Value = serde_json::from_str(&got[0].1).unwrap();
    assert_eq!(payload["run_id"], run.as_str());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.got.lock().unwrap().len(), 1, "delivered once");
    drop(process);
}

#[tokio::test]
async fn an_admin_adds_a_webhook_endpoint_at_run_time_and_it_is_called_until_removed() {
    let fake = FakeOpenAi::start().await;
    let server = server_with(&fake).await;
    let (status, none) = server.get("/api/webhooks").await;
    assert_eq!((status, none), (StatusCode::OK, json!([])));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let receiver = receiver_on(listener, Vec::new()).await;
    for (bad, why) in [
        (json!({"url": "ftp://example.com/x"}), "http(s)"),
        (
            json!({"url": "https://example.com/x", "secret": ""}),
            "secret",
        ),
        (
            json!({"url": "https://example.com/x", "format": "xml"}),
            "format",
        ),
    ] {
        let (status, body) = server.post("/api/webhooks", bad).await;
        assert!(status.is_client_error(), "{why}: {status} {body}");
    }
    let (status, added) = server
        .post(
            "/api/webhooks",
            json!({"url": receiver.url, "secret": "whsec-test", "format": "json"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    assert_eq!(added["signed"], true);
    assert_eq!(added["source"], "added");
    assert!(!added.to_string().contains("whsec-test"), "{added}");
    assert!(
        !added.to_string().contains("/hook"),
        "the path is not shown: {added}"
    );
    let (status, again) = server
        .post("/api/webhooks", json!({"url": receiver.url}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    // Added while the server runs, it is called.
    let (run, _) = start(&server, json!({"task": "Look up the weather in Shanghai"})).await;
    wait_for(&server, &run, "awaiting_approval").await;
    let got = wait_for_posts(&receiver, 1).await;
    assert!(verify(&got[0].0, &got[0].1));
    // The settings page lists it and the delivery.
    let (status, page) = crate::site::page(&server, "/settings").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains(r#"data-testid="endpoint-row""#), "{page}");
    assert!(!page.contains("whsec-test"));
    let id = added["id"].as_str().unwrap().to_string();
    let response = server
        .client
        .delete(server.url(&format!("/api/webhooks/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let response = server
        .client
        .delete(server.url(&format!("/api/webhooks/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(server.get("/api/webhooks").await.1, json!([]));
    // Removed, it is not called any more.
    let before = receiver.got.lock().unwrap().len();
    let (run, _) = start(&server, json!({"task": "Look up the weather in Beijing"})).await;
    wait_for(&server, &run, "awaiting_approval").await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(receiver.got.lock().unwrap().len(), before);
}

#[tokio::test]
async fn only_admins_manage_webhooks() {
    let mut server = crate::auth::token_mode().await;
    for token in [crate::auth::OPERATOR, crate::auth::VIEWER] {
        server = server.with_token(token);
        let (status, _) = server.get("/api/webhooks").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{token}");
        let (status, _) = server
            .post("/api/webhooks", json!({"url": "https://example.com/hook"}))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{token}");
        let (status, _) = server.get("/api/webhooks/deliveries").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{token}");
    }
    let admin = server.with_token(crate::auth::ADMIN);
    let (status, list) = admin.get("/api/webhooks").await;
    assert_eq!((status, list), (StatusCode::OK, json!([])));
}

/// `PLANBOARD_LLM_PROTOCOL=tool_calls` end to end: the executor is offered
/// its actions and tools as functions (`tool_choice: required`, no JSON
/// schema) and the fake answers with `tool_calls`, whose `complete` result
/// becomes the subtask's outcome; the key goes as `Authorization: Bearer`
/// on every call, and the classifier uses its own model when one is set.
#[tokio::test]
async fn with_the_tool_calls_protocol_a_run_works_through_function_calls() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut llm = fake.config(Duration::from_secs(10));
    llm.protocol = agent::llm::Protocol::ToolCalls;
    llm.stream = false;
    llm.classifier_model = Some("fake-small".into());
    let config = Config {
        lease: Duration::from_secs(3600),
        llm: Some(llm),
        workspaces: dir.path().join("workspaces"),
        ..Config::defaults(
            format!("sqlite://{}", dir.path().join("runs.db").display()),
            local(),
        )
    };
    let server = TestServer::with_config(&config, |_| {}).await;
    let (status, run) = server
        .post(
            "/api/runs",
            // Not led by a writing verb, which the rules answer in words.
            json!({"task": "The week's summary, please", "approval_required": false}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{run}");
    let view = wait_for(&server, run["id"].as_str().unwrap(), "done").await;
    let plan = server.plan(view["plan_id"].as_str().unwrap()).await;
    let outcomes: Vec<&str> = plan["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["outcome"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(outcomes, ["done: gather", "done: report"], "{plan}");
    let requests = fake.requests();
    let executor: Vec<&Value> = requests
        .iter()
        .filter(|r| r.get("tools").is_some())
        .collect();
    assert_eq!(executor.len(), 2, "one function call per subtask");
    for r in &executor {
        assert_eq!(r["tool_choice"], "required");
        assert!(r.get("response_format").is_none(), "{r}");
        let names: Vec<&str> = r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"complete") && names.contains(&"fail"),
            "{names:?}"
        );
    }
    // The router's questions (the mode, and where the answer comes from)
    // go to the classifier's model, the rest to the main one.
    let routing = |r: &Value| ["mode", "source"].contains(&crate::fake_openai::shape(r).as_str());
    let classifier: Vec<&Value> = requests.iter().filter(|r| routing(r)).collect();
    assert_eq!(classifier.len(), 2);
    assert!(classifier.iter().all(|r| r["model"] == "fake-small"));
    assert!(requests
        .iter()
        .filter(|r| !routing(r))
        .all(|r| r["model"] == "fake"));
    let keys = fake.authorization();
    assert_eq!(keys.len(), requests.len());
    assert!(
        keys.iter().all(|k| k == "Bearer sk-fake-secret"),
        "{keys:?}"
    );
}

#[tokio::test]
async fn a_guarded_call_waiting_in_a_long_log_reaches_the_inbox_and_the_run_and_a_decided_one_does_not(
) {
    use server::runlog::NewRunEntry;
    let server = TestServer::start().await;
    let plan = server.create(crate::support::chain("guarded")).await;
    let store = server.services.runs.store();
    let mut record = run_model::RunRecord::new(
        uuid::Uuid::new_v4(),
        run_model::RunConfig {
            task: "guarded".into(),
            ..Default::default()
        },
    );
    record.state = run_model::RunState::Running;
    record.plan_id = Some(plan.parse().unwrap());
    store.save_run(&record).await.unwrap();
    let run = record.id;
    let line = |entry: agent::RunEntry| NewRunEntry {
        run,
        plan: record.plan_id,
        kind: entry.kind(),
        at: chrono::Utc::now(),
        entry: serde_json::to_value(&entry).unwrap(),
    };
    let note = || {
        line(agent::RunEntry::PeopleChanged {
            summary: "a line".into(),
        })
    };
    let asked = |call: &str| {
        line(agent::RunEntry::ToolApproval {
            subtask: plan_engine::SubtaskId(1),
            call: call.into(),
            name: "run_shell".into(),
            arguments: json!({"command": format!("echo {call}")}),
            asker: None,
        })
    };
    let mut log: Vec<NewRunEntry> = (0..1000).map(|_| note()).collect();
    log.push(asked("a1"));
    log.push(line(agent::RunEntry::ToolDecision {
        call: "a1".into(),
        verdict: run_model::Verdict::Approved,
        by: "ann".into(),
        reason: None,
        arguments: None,
    }));
    log.push(asked("a2"));
    log.extend((0..1000).map(|_| note()));
    server
        .services
        .runs
        .log()
        .append_run_log(&log)
        .await
        .unwrap();

    let tool_needs = |needs: &Value| -> Vec<Value> {
        needs
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["kind"] == "tool_call")
            .cloned()
            .collect()
    };
    let (_, needs) = server.get("/api/inbox").await;
    let waiting = tool_needs(&needs);
    assert_eq!(waiting.len(), 1, "{needs}");
    assert_eq!(waiting[0]["run_id"], run.to_string());
    assert!(
        waiting[0]["text"].as_str().unwrap().contains("echo a2"),
        "{needs}"
    );
    let (status, calls) = server.get(&format!("/api/runs/{run}/tool-calls")).await;
    assert_eq!(status, StatusCode::OK, "{calls}");
    let ids: Vec<&str> = calls
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["call"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a2"], "{calls}");

    let decide = |call: &str| {
        let path = format!("/api/runs/{run}/tool-calls/{call}");
        let server = &server;
        async move { server.post(&path, json!({"verdict": "approve"})).await }
    };
    let (status, body) = decide("a1").await;
    assert_eq!(status, StatusCode::CONFLICT, "decided already: {body}");
    let (status, body) = decide("nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "never asked: {body}");
    let (status, body) = decide("a2").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, needs) = server.get("/api/inbox").await;
    assert!(tool_needs(&needs).is_empty(), "{needs}");
    let (_, calls) = server.get(&format!("/api/runs/{run}/tool-calls")).await;
    assert_eq!(calls, json!([]));
}

/// What one run waits for (an MCP task's `input_required`, read each
/// poll) is what the inbox lists for that run's plan, found without the
/// inbox's walk of every plan: a plan's approval, an agent's question, a
/// pause and a guarded call, each named with its run.
#[tokio::test]
async fn one_runs_needs_are_the_inboxs_needs_on_its_plan_named_with_the_run() {
    use plan_engine::{Op, SubtaskId, SubtaskState};
    use server::runlog::NewRunEntry;
    let server = TestServer::start().await;
    let runs = server.services.runs.clone();
    let plans = server.services.plans.clone();
    let store = runs.store();
    let plan_with = |title: &'static str, approval: bool| {
        let server = &server;
        async move {
            let mut body = crate::support::chain(title);
            body["approval_required"] = json!(approval);
            let id: plan_engine::PlanId = server.create(body).await.parse().unwrap();
            id
        }
    };
    let plan_of = |title: &'static str| plan_with(title, false);
    let run_on = |plan: plan_engine::PlanId, state: run_model::RunState| {
        let mut record = run_model::RunRecord::new(
            uuid::Uuid::new_v4(),
            run_model::RunConfig {
                task: "needs".into(),
                ..Default::default()
            },
        );
        record.state = state;
        record.plan_id = Some(plan);
        record.reason = Some("a person paused it".into());
        record
    };
    // A plan that waits for its approval.
    let approving = plan_with("to approve", true).await;
    assert_eq!(
        plans.get(approving).await.unwrap().state(),
        plan_engine::PlanState::AwaitingApproval
    );
    let approval = run_on(approving, run_model::RunState::AwaitingApproval);
    // A subtask blocked on the agent's question.
    let asking = plan_of("with a question").await;
    let block = |state, note: Option<&str>| Op::SetSubtaskState {
        id: SubtaskId(1),
        state,
        note: note.map(str::to_string),
        start_next: false,
    };
    plans
        .execute(
            asking,
            vec![
                block(SubtaskState::InProgress, None),
                block(
                    SubtaskState::Blocked,
                    Some(&format!(
                        "{}Which colour?",
                        plan_engine::model::QUESTION_NOTE
                    )),
                ),
            ],
            "agent",
        )
        .await
        .unwrap();
    let question = run_on(asking, run_model::RunState::Running);
    let paused = run_on(plan_of("paused").await, run_model::RunState::Paused);
    let guarded = run_on(plan_of("guarded").await, run_model::RunState::Running);
    let quiet = run_on(plan_of("quiet").await, run_model::RunState::Running);
    for run in [&approval, &question, &paused, &guarded, &quiet] {
        store.save_run(run).await.unwrap();
    }
    let entry = agent::RunEntry::ToolApproval {
        subtask: SubtaskId(1),
        call: "c1".into(),
        name: "run_shell".into(),
        arguments: json!({"command": "ls"}),
        asker: None,
    };
    runs.log()
        .append_run_log(&[NewRunEntry {
            run: guarded.id,
            plan: guarded.plan_id,
            kind: entry.kind(),
            at: chrono::Utc::now(),
            entry: serde_json::to_value(&entry).unwrap(),
        }])
        .await
        .unwrap();

    let all = runs.needs().await.unwrap();
    let shown = |needs: Vec<run_model::Need>| -> Vec<Value> {
        needs
            .into_iter()
            .map(|n| {
                let mut n = serde_json::to_value(n).unwrap();
                n["run_id"] = Value::Null;
                n
            })
            .collect()
    };
    for (run, kind) in [
        (&approval, "approval"),
        (&question, "question"),
        (&paused, "stuck"),
        (&guarded, "tool_call"),
    ] {
        let own = runs.needs_of(run).await.unwrap();
        assert_eq!(own.len(), 1, "{kind}: {own:?}");
        assert_eq!(serde_json::to_value(&own[0]).unwrap()["kind"], kind);
        assert!(own.iter().all(|n| n.run_id == Some(run.id)), "{own:?}");
        let listed: Vec<run_model::Need> = all
            .iter()
            .filter(|n| Some(n.plan_id) == run.plan_id)
            .cloned()
            .collect();
        assert_eq!(
            shown(own),
            shown(listed),
            "{kind}: the inbox's, for its plan"
        );
    }
    assert!(runs.needs_of(&quiet).await.unwrap().is_empty());
}
