//! What people teach the agent, over HTTP: an edit made before approving
//! and a change to dependencies or expected outcomes mid-run are
//! remembered as corrections; a team writes a standing rule by hand
//! (pinned) and the planner of a later task reads it.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::fake_openai::{shape, FakeOpenAi};
use crate::runs::{server_on, start, wait_for};
use crate::support::TestServer;

/// The correction memories of `run`, once the run has left them.
async fn corrections_of(server: &TestServer, run: &str, query: &str) -> Vec<String> {
    for _ in 0..200 {
        let (status, body) = server.get(&format!("/api/memories?q={query}")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let mine: Vec<String> = body
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["run_id"] == run && m["kind"] == "correction")
            .map(|m| m["text"].as_str().unwrap().to_string())
            .collect();
        if !mine.is_empty() {
            return mine;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("run {run} left no correction found by {query}");
}

async fn patch(server: &TestServer, path: &str, body: Value) -> (StatusCode, Value) {
    let response = server
        .client
        .patch(server.url(path))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_plan_edited_before_it_was_approved_is_remembered_as_a_correction() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    let (run, plan) = start(
        &server,
        json!({"task": "Summarise the quarterly sales figures", "mode": "simple"}),
    )
    .await;
    wait_for(&server, &run, "awaiting_approval").await;
    // "Edit, then approve": the person rewrites the second step.
    let (status, body) = patch(
        &server,
        &format!("/api/plans/{plan}/subtasks/2"),
        json!({"description": "write the report in French, with a chart per region"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = server
        .post(&format!("/api/plans/{plan}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for(&server, &run, "done").await;
    let found = corrections_of(&server, &run, "french%20chart").await;
    assert!(
        found.iter().any(
            |t| t.contains("a person edited the plan before approving it")
                && t.contains(
                    "edited #2 report: write the report in French, with a chart per region"
                )
        ),
        "{found:#?}"
    );
}

#[tokio::test]
async fn dependencies_and_expected_outcomes_changed_mid_run_are_remembered_as_corrections() {
    let fake = FakeOpenAi::start().await;
    fake.plan(json!({"title": "the plan", "subtasks": [
        {"name": "gather", "description": "gather the facts", "expected_outcome": "facts", "depends_on": []},
        {"name": "check", "description": "check the facts", "expected_outcome": "checked facts", "depends_on": []},
        {"name": "report", "description": "write the report", "expected_outcome": "a report", "depends_on": []}
    ]}));
    let server = server_on(&fake, None).await;
    // Simple plans run in order: the planner's steps are chained.
    let (run, plan) = start(
        &server,
        json!({"task": "Audit the warehouse stock counts", "mode": "simple"}),
    )
    .await;
    wait_for(&server, &run, "awaiting_approval").await;
    // The executor thinks a while, so the person's changes land mid-run.
    fake.latency(Duration::from_millis(1_500));
    server
        .post(&format!("/api/plans/{plan}/approve"), json!({}))
        .await;
    for _ in 0..400 {
        let p = server.plan(&plan).await;
        if p["subtasks"][0]["state"] == "in_progress" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, body) = patch(
        &server,
        &format!("/api/plans/{plan}/subtasks/3"),
        json!({"expected_outcome": "a one-page summary with the discrepancies"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = server
        .post(
            &format!("/api/plans/{plan}/subtasks/3/dependencies"),
            json!({"dependencies": [1, 2]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    fake.latency(Duration::ZERO);
    wait_for(&server, &run, "done").await;
    let found = corrections_of(&server, &run, "warehouse%20discrepancies").await;
    let all = found.join("\n");
    assert!(
        all.contains("a person changed the plan while it ran")
            && all.contains(
                "changed what #3 report must achieve to: a one-page summary with the discrepancies"
            )
            && all.contains("made #3 report depend on #1 gather, #2 check (was #2 check)"),
        "{found:#?}"
    );
}

#[tokio::test]
async fn a_standing_rule_written_over_http_is_pinned_and_read_by_the_planner_of_the_tasks_it_is_for(
) {
    standing_rule_story(None).await;
}

#[tokio::test]
async fn a_standing_rule_written_over_http_is_pinned_and_read_by_the_planner_on_postgres() {
    let Some(url) = crate::postgres::fresh_database().await else {
        return;
    };
    standing_rule_story(Some(&url)).await;
}

/// On a database of its own: it counts every memory there.
async fn standing_rule_story(database: Option<&str>) {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, database).await;
    let (status, rule) = server
        .post(
            "/api/memories",
            json!({"text": "End every answer with a line for the on-call team"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{rule}");
    assert_eq!(
        (rule["kind"].clone(), rule["pinned"].clone()),
        (json!("rule"), json!(true))
    );
    let (status, scoped) = server
        .post(
            "/api/memories",
            json!({"text": "Take a backup before any schema change", "applies_to": "database migration"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{scoped}");
    assert_eq!(scoped["task"], "database migration");
    // Bad input is refused with a reason, and nothing is kept.
    for bad in [
        json!({"text": "   "}),
        json!({"text": "x".repeat(2_001)}),
        json!({"text": "ok", "applies_to": "y".repeat(501)}),
        json!({"text": "ok", "pinned": false}),
        json!({}),
    ] {
        let (status, body) = server.post("/api/memories", bad.clone()).await;
        assert!(status.is_client_error(), "{bad}: {status} {body}");
    }
    let (_, all) = server.get("/api/memories").await;
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");

    // A task that shares no word with the first rule still reads it; the
    // scoped rule is not for it.
    let (run, _) = start(
        &server,
        json!({"task": "Look up the weather in Shanghai", "approval_required": false}),
    )
    .await;
    wait_for(&server, &run, "done").await;
    let planner = fake
        .requests()
        .into_iter()
        .rfind(|r| shape(r) == "plan")
        .expect("a planner call");
    let prompt = planner["messages"].to_string();
    assert!(
        prompt.contains("Rule: End every answer with a line for the on-call team"),
        "{prompt}"
    );
    assert!(!prompt.contains("Take a backup"), "{prompt}");
    let (_, events) = server.get(&format!("/api/runs/{run}/events")).await;
    let recalled = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["entry"]["kind"] == "recalled")
        .expect("the run log says what was recalled");
    assert_eq!(recalled["entry"]["memories"][0]["id"], rule["id"]);

    // A task about a migration reads both.
    let (run, _) = start(
        &server,
        json!({"task": "Plan the database migration to PostgreSQL 17", "approval_required": false}),
    )
    .await;
    wait_for(&server, &run, "done").await;
    let planner = fake
        .requests()
        .into_iter()
        .rfind(|r| shape(r) == "plan")
        .expect("a planner call");
    let prompt = planner["messages"].to_string();
    assert!(
        prompt.contains("Rule: Take a backup before any schema change")
            && prompt.contains("Rule: End every answer"),
        "{prompt}"
    );
}
