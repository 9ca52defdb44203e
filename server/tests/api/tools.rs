//! The agents' door: dialect schemas and tool calls over HTTP, each session
//! with its own active plan.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::TestServer;

async fn call(
    server: &TestServer,
    dialect: &str,
    tool: &str,
    session: &str,
    args: Value,
) -> (StatusCode, Value) {
    server
        .post(
            &format!("/api/tools/{dialect}/{tool}?session={session}"),
            args,
        )
        .await
}

#[tokio::test]
async fn every_dialect_lists_openai_function_schemas() {
    let server = TestServer::start().await;
    for (dialect, some_tool) in [
        ("canonical", "create_plan"),
        ("planmanager", "startNextTask"),
        ("openmanus", "planning"),
        ("agentscope", "finish_subtask"),
    ] {
        let (status, tools) = server.get(&format!("/api/tools?dialect={dialect}")).await;
        assert_eq!(status, StatusCode::OK);
        let names: Vec<&str> = tools
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert!(names.contains(&some_tool), "{dialect}: {names:?}");
        assert!(tools[0]["function"]["parameters"]["type"] == "object");
    }
    let (status, _) = server.get("/api/tools?dialect=langchain").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_agentscope_agent_walks_its_plan_over_http_on_its_session() {
    let server = TestServer::start().await;
    let (status, created) = call(
        &server,
        "agentscope",
        "create_plan",
        "agent-a",
        json!({
            "name": "Write a report", "description": "d", "expected_outcome": "a report",
            "subtasks": [{"name": "research", "description": "r", "expected_outcome": "notes"},
                         {"name": "write", "description": "w", "expected_outcome": "text"}]
        }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    // Another session has no plan: the tools say how to make one.
    let (status, other) = call(
        &server,
        "agentscope",
        "view_subtasks",
        "agent-b",
        json!({"subtask_idx": [0]}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        other["text"].as_str().unwrap().contains("create_plan"),
        "{other}"
    );

    // Sloppy arguments, as a JSON string with a numeric string id.
    let (status, r) = call(
        &server,
        "agentscope",
        "update_subtask_state",
        "agent-a",
        json!("{\"subtask_idx\": \"0\", \"state\": \"in_progress\"}"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let (status, r) = call(
        &server,
        "agentscope",
        "finish_subtask",
        "agent-a",
        json!({"subtask_idx": 0, "subtask_outcome": "notes taken"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let id = r["plan_id"].as_str().unwrap().to_string();
    let plan = server.plan(&id).await;
    assert_eq!(plan["subtasks"][0]["state"], "done");
    assert_eq!(
        plan["subtasks"][1]["state"], "in_progress",
        "finish_subtask started the next ready one"
    );

    let (status, hint) = server
        .get("/api/tools/agentscope/hint?session=agent-a")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        hint.as_str()
            .unwrap()
            .contains("finish_subtask(subtask_idx=1"),
        "{hint}"
    );

    // A refused call is a 422 carrying text for the model, and changes nothing.
    let (status, r) = call(
        &server,
        "agentscope",
        "update_subtask_state",
        "agent-a",
        json!({"subtask_idx": 0, "state": "todo"}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
    assert!(r["text"].as_str().unwrap().starts_with("Error:"));
    assert_eq!(server.plan(&id).await["version"], plan["version"]);
}

#[tokio::test]
async fn openmanus_and_planmanager_dialects_share_the_store() {
    let server = TestServer::start().await;
    let (status, r) = call(
        &server,
        "openmanus",
        "planning",
        "m",
        json!({
            "command": "create", "plan_id": "trip", "title": "Trip", "steps": ["book", "pack", "go"]
        }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let (status, r) = call(&server, "openmanus", "planning", "m", json!({"command": "mark_step", "step_index": 0, "step_status": "completed", "step_notes": "booked"})).await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let (_, r) = call(
        &server,
        "openmanus",
        "planning",
        "m",
        json!({"command": "get"}),
    )
    .await;
    assert!(
        r["text"]
            .as_str()
            .unwrap()
            .contains("Progress: 1/3 steps completed (33.3%)"),
        "{r}"
    );
    let (status, r) = call(&server, "planmanager", "startNextTask", "m", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let (_, page) = server.get("/api/plans?q=trip").await;
    assert_eq!(page["plans"][0]["state"], "running");
}
