//! ACP agents given tasks from the board, end to end over the API, on a
//! test agent built on the protocol's official TypeScript SDK
//! (`end2end/acp-test-agent.mjs`, `@agentclientprotocol/sdk` from npm;
//! `scripts/test` names it in `PLANBOARD_TEST_ACP_AGENT`). No model is
//! configured: an ACP agent needs none of planboard's.

use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use server::config::Config;

use crate::runs::{start, wait_for};
use crate::support::{local, TestServer};

/// The test agent's script, or `None` (the test is skipped) outside
/// `scripts/test`.
fn test_agent() -> Option<String> {
    crate::support::test_file("PLANBOARD_TEST_ACP_AGENT")
}

fn config(dir: &Path) -> Config {
    Config {
        workspaces: dir.join("ws"),
        sandbox: false,
        ..Config::defaults(
            format!("sqlite://{}", dir.join("acp.db").display()),
            local(),
        )
    }
}

/// Adds the test agent as `name`, in `mode` (`full`, `slow`).
async fn add_agent(server: &TestServer, script: &str, name: &str, mode: &str) -> Value {
    let (status, added) = server
        .post(
            "/api/agents",
            json!({"name": name, "command": "node", "args": [script],
                   "env": {"PLANBOARD_TEST_ACP_MODE": mode, "PLANBOARD_ACP_PROBE": "handed-over"}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    added
}

/// A file of the run's workspace, as text.
async fn artifact(server: &TestServer, run: &str, path: &str) -> String {
    let response = server
        .client
        .get(server.url(&format!("/api/runs/{run}/artifacts/{path}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    response.text().await.unwrap()
}

/// Waits for the run's first guarded call (the agent's permission
/// request) and returns it.
async fn asked(server: &TestServer, run: &str) -> Value {
    for _ in 0..1200 {
        let (status, calls) = server.get(&format!("/api/runs/{run}/tool-calls")).await;
        assert_eq!(status, StatusCode::OK, "{calls}");
        if let Some(call) = calls.as_array().and_then(|c| c.first()) {
            return call.clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let (_, run_view) = server.get(&format!("/api/runs/{run}")).await;
    panic!("the agent never asked permission: {run_view}");
}

async fn kinds(server: &TestServer, run: &str) -> Vec<String> {
    let (_, log) = server
        .get(&format!("/api/runs/{run}/events?limit=1000"))
        .await;
    log.as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn an_acp_agent_given_a_task_plans_asks_permission_and_answers_on_the_board() {
    let Some(script) = test_agent() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::with_config(&config(dir.path()), |_| {}).await;
    assert_eq!(server.get("/api/agents").await.1, json!([]));
    let added = add_agent(&server, &script, "tester", "full").await;
    // The check started it and heard its name.
    assert!(
        added["agent_info"]
            .as_str()
            .unwrap_or_default()
            .contains("planboard-test-agent"),
        "{added}"
    );
    assert_eq!(
        added["env"],
        json!(["PLANBOARD_ACP_PROBE", "PLANBOARD_TEST_ACP_MODE"])
    );
    assert!(
        !added.to_string().contains("handed-over"),
        "no env value shown"
    );

    let (run, plan) = start(
        &server,
        json!({"task": "What is 6 times 7? Write the answer to answer.txt.", "agent": "tester"}),
    )
    .await;
    let call = asked(&server, &run).await;
    assert_eq!(call["name"], "Write answer.txt", "{call}");
    let options: Vec<&str> = call["arguments"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["allow-once", "allow-always", "reject-once"]);
    assert_eq!(call["arguments"]["option"], "allow-once");
    // The agent's plan is on the board while it waits: its entries as
    // subtasks, with their states and priorities.
    let live = server.plan(&plan).await;
    let states: Vec<(&str, &str)> = live["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [
            ("Read the task", "done"),
            ("Write the answer to answer.txt", "in_progress"),
            ("Report the answer", "todo"),
        ]
    );
    assert_eq!(live["subtasks"][0]["notes"], "priority: high");
    // "Needs you" lists it.
    let (_, inbox) = server.get("/api/inbox").await;
    assert!(inbox.to_string().contains("tool_call"), "{inbox}");

    let call_id = call["call"].as_str().unwrap();
    let (status, decided) = server
        .post(
            &format!("/api/runs/{run}/tool-calls/{call_id}"),
            json!({"verdict": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    let done = wait_for(&server, &run, "done").await;
    assert_eq!(done["answer"], "The answer is 42.", "{done}");
    assert_eq!(done["plan_state"], "done");
    assert_eq!(artifact(&server, &run, "answer.txt").await, "42\n");
    assert_eq!(
        artifact(&server, &run, "decisions.log").await,
        "allow-once\n"
    );

    // Each plan update was a change of the plan by the agent: the plan's
    // log has them, so History and Compare do.
    let finished = server.plan(&plan).await;
    assert!(finished["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["state"] == "done"));
    let (_, events) = server
        .get(&format!("/api/plans/{plan}/events?limit=1000"))
        .await;
    let by_agent = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["actor"] == "acp · tester")
        .count();
    assert!(by_agent >= 6, "{events}");
    assert!(finished["version"].as_u64().unwrap() >= 8, "{finished}");

    // Its words and its tool call are on the run log (the activity page).
    let kinds = kinds(&server, &run).await;
    for kind in [
        "state_changed",
        "plan_proposed",
        "plan_adjusted",
        "agent_message",
        "tool_started",
        "tool_approval",
        "tool_decision",
        "tool_call",
        "answer",
        "remembered",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} in {kinds:?}");
    }
    let (_, log) = server
        .get(&format!("/api/runs/{run}/events?limit=1000"))
        .await;
    let said: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "agent_message")
        .map(|e| &e["entry"])
        .collect();
    assert!(
        said.iter()
            .any(|e| e["thought"] == true && e["text"].as_str().unwrap().contains("6 times 7")),
        "{said:?}"
    );
    let tool = log
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "tool_call")
        .unwrap();
    assert_eq!(tool["entry"]["ok"], true, "{tool}");
    assert!(tool["entry"]["result"]
        .as_str()
        .unwrap()
        .contains("wrote answer.txt"));

    // The agent started with a cleared environment: its own variables,
    // PATH, HOME and LANG, nothing of the server's.
    let keys = artifact(&server, &run, "env-keys.txt").await;
    for key in keys.lines() {
        assert!(
            [
                "PATH",
                "HOME",
                "LANG",
                "PLANBOARD_ACP_PROBE",
                "PLANBOARD_TEST_ACP_MODE"
            ]
            .contains(&key),
            "{key} reached the agent: {keys}"
        );
    }
    assert!(keys.contains("PLANBOARD_ACP_PROBE"), "{keys}");

    // The run joins memory (a record of it) and review.
    let (_, memories) = server.get("/api/memories?q=times").await;
    assert!(
        memories.to_string().contains("ACP agent tester"),
        "{memories}"
    );
    let (_, queue) = server.get("/api/review-queue").await;
    assert!(queue.to_string().contains(&plan), "{queue}");
}

#[tokio::test]
async fn a_comment_reaches_the_agent_as_a_prompt_and_a_denial_picks_its_reject_option() {
    let Some(script) = test_agent() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::with_config(&config(dir.path()), |_| {}).await;
    add_agent(&server, &script, "tester", "full").await;
    let (run, plan) = start(
        &server,
        json!({"task": "Weigh the parcel", "agent": "tester"}),
    )
    .await;
    let call = asked(&server, &run).await;
    let (status, _) = server
        .post(
            &format!("/api/plans/{plan}/comments"),
            json!({"body": "Use kilograms, please"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let call_id = call["call"].as_str().unwrap();
    let (status, decided) = server
        .post(
            &format!("/api/runs/{run}/tool-calls/{call_id}"),
            json!({"verdict": "deny", "reason": "not in this folder"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    let done = wait_for(&server, &run, "done").await;
    assert_eq!(
        artifact(&server, &run, "decisions.log").await,
        "reject-once\n"
    );
    // The comment and the denial's reason came back as the next prompt,
    // which the agent answered.
    let prompts = artifact(&server, &run, "prompts.log").await;
    assert!(prompts.contains("--- prompt 2"), "{prompts}");
    assert!(prompts.contains("Use kilograms, please"), "{prompts}");
    assert!(prompts.contains("not in this folder"), "{prompts}");
    assert!(
        done["answer"].as_str().unwrap().starts_with("I read:"),
        "{done}"
    );
    // The entry it dropped after the denial was skipped, not lost.
    let finished = server.plan(&plan).await;
    let states: Vec<(&str, &str)> = finished["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert!(
        states.contains(&("Write the answer to answer.txt", "skipped")),
        "{states:?}"
    );
    let (_, log) = server
        .get(&format!("/api/runs/{run}/events?limit=1000"))
        .await;
    let tool = log
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "tool_call")
        .unwrap();
    assert_eq!(tool["entry"]["ok"], false, "{tool}");
}

#[tokio::test]
async fn pause_resume_and_cancel_reach_the_agent_as_acp_cancel_and_a_new_prompt() {
    let Some(script) = test_agent() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::with_config(&config(dir.path()), |_| {}).await;
    add_agent(&server, &script, "slow", "slow").await;
    let (run, plan) = start(&server, json!({"task": "Take your time", "agent": "slow"})).await;
    // Its plan arrives, then it waits for a cancel.
    for _ in 0..1200 {
        if !server.plan(&plan).await["subtasks"]
            .as_array()
            .unwrap()
            .is_empty()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let (status, _) = server
        .post(&format!("/api/runs/{run}/pause"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let paused = wait_for(&server, &run, "paused").await;
    assert_eq!(paused["plan_state"], "paused");
    let (status, _) = server
        .post(&format!("/api/runs/{run}/resume"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let done = wait_for(&server, &run, "done").await;
    let prompts = artifact(&server, &run, "prompts.log").await;
    assert!(
        prompts.contains("paused your work and has resumed it"),
        "{prompts}"
    );
    assert!(
        done["answer"].as_str().unwrap().starts_with("I read:"),
        "{done}"
    );

    let (second, second_plan) =
        start(&server, json!({"task": "Take your time", "agent": "slow"})).await;
    for _ in 0..1200 {
        if !server.plan(&second_plan).await["subtasks"]
            .as_array()
            .unwrap()
            .is_empty()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let (status, _) = server
        .post(&format!("/api/runs/{second}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let cancelled = wait_for(&server, &second, "cancelled").await;
    assert_eq!(cancelled["plan_state"], "abandoned");
}

#[tokio::test]
async fn a_run_for_an_unknown_or_broken_agent_is_refused_or_fails_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::with_config(&config(dir.path()), |_| {}).await;
    let (status, body) = server
        .post("/api/runs", json!({"task": "x", "agent": "nobody"}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("POST /api/agents"));
    for bad in [
        json!({"name": "no spaces", "command": "node"}),
        json!({"name": "x", "command": ""}),
        json!({"name": "x", "command": "node", "url": "http://127.0.0.1:9"}),
    ] {
        let (status, body) = server.post("/api/agents", bad.clone()).await;
        assert!(status.is_client_error(), "{bad}: {status} {body}");
    }
    // A program that is not there: kept with its error, and a run given
    // to it fails saying so.
    let (status, added) = server
        .post(
            "/api/agents",
            json!({"name": "gone", "command": "/nonexistent/acp-agent"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    assert!(
        added["error"]
            .as_str()
            .unwrap()
            .contains("could not be started"),
        "{added}"
    );
    let (status, _) = server
        .post("/api/agents", json!({"name": "gone", "command": "node"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (run, plan) = start(&server, json!({"task": "x", "agent": "gone"})).await;
    let mut failed = Value::Null;
    for _ in 0..1200 {
        let (_, view) = server.get(&format!("/api/runs/{run}")).await;
        failed = view;
        if failed["state"] == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(failed["state"], "failed", "{failed}");
    assert!(
        failed["reason"]
            .as_str()
            .unwrap()
            .contains("could not be started"),
        "{failed}"
    );
    assert_eq!(server.plan(&plan).await["state"], "failed");
    let (status, _) = server
        .send(reqwest::Method::DELETE, "/api/agents/gone", None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(server.get("/api/agents").await.1, json!([]));
}

#[tokio::test]
async fn only_admins_manage_acp_agents_and_their_args_are_shown_to_admins_only() {
    let mut server = crate::auth::token_mode().await;
    let secret = "--api-key=sk-hunter2";
    server = server.with_token(crate::auth::ADMIN);
    let (status, added) = server
        .post(
            "/api/agents",
            json!({"name": "codex", "command": "/nonexistent/codex-acp", "args": [secret],
                   "env": {"OPENAI_API_KEY": "sk-env-secret"}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    let (_, list) = server.get("/api/agents").await;
    assert_eq!(list[0]["args"], json!([secret]));
    for token in [crate::auth::OPERATOR, crate::auth::VIEWER] {
        server = server.with_token(token);
        let (status, list) = server.get("/api/agents").await;
        assert_eq!(status, StatusCode::OK, "{token}");
        assert!(!list.to_string().contains("hunter2"), "{token}: {list}");
        assert!(
            !list.to_string().contains("sk-env-secret"),
            "{token}: {list}"
        );
        assert_eq!(list[0]["hidden_args"], 1, "{list}");
        let (status, _) = server
            .post("/api/agents", json!({"name": "x", "command": "node"}))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{token}");
        let (status, _) = server.post("/api/agents/codex/test", json!({})).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{token}");
        let (status, _) = server
            .send(reqwest::Method::DELETE, "/api/agents/codex", None)
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{token}");
    }
}
