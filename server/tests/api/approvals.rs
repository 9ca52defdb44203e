//! Approvals a team can trust (issue 55) over HTTP: every decision is a
//! record (who, when, the plan's version and content digest, the call's
//! tool and digest), an approval is of what the person read and is never
//! replayed onto another version or call, and the records are listed with
//! filters at `GET /api/approvals`.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::fake_openai::FakeOpenAi;
use crate::runs::{server_on, start, wait_for};
use crate::support::TestServer;

/// A plan of one step for the fake planner.
fn one_step(name: &str) -> Value {
    json!({"title": "t", "subtasks": [
        {"name": name, "description": "write the file", "expected_outcome": "a file", "depends_on": []}
    ]})
}

/// The executor's call of `write_file`.
fn write(path: &str, content: &str) -> Value {
    json!({"action": "write_file", "arguments": {"path": path, "content": content}})
}

/// The run's first guarded call whose id is not `decided`, once it asks.
async fn asked(server: &TestServer, run: &str, decided: &[&str]) -> Value {
    for _ in 0..400 {
        let (status, calls) = server.get(&format!("/api/runs/{run}/tool-calls")).await;
        assert_eq!(status, StatusCode::OK, "{calls}");
        let open = calls
            .as_array()
            .unwrap()
            .iter()
            .find(|c| !decided.contains(&c["call"].as_str().unwrap_or_default()))
            .cloned();
        if let Some(call) = open {
            return call;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("run {run} never asked again");
}

/// `GET /api/approvals?{query}`, as a list.
async fn records(server: &TestServer, query: &str) -> Vec<Value> {
    let (status, body) = server.get(&format!("/api/approvals?{query}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body.as_array().unwrap().clone()
}

#[tokio::test]
async fn a_plan_approval_is_a_record_bound_to_the_digest_the_person_read() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    fake.content(one_step("save"));
    let (run, plan) = start(&server, json!({"task": "Save a note", "mode": "simple"})).await;
    wait_for(&server, &run, "awaiting_approval").await;
    let (_, read) = server.get(&format!("/api/plans/{plan}")).await;
    let seen = read["digest"].as_str().unwrap().to_string();
    assert_eq!(seen.len(), 64, "{read}");
    // Someone edits the plan after it was read: the approval of what was
    // read is refused, and nothing is approved.
    let (status, body) = server
        .send(
            reqwest::Method::PATCH,
            &format!("/api/plans/{plan}/subtasks/1"),
            Some(json!({"description": "write the file and sign it"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = server
        .post(
            &format!("/api/plans/{plan}/approve"),
            json!({"digest": seen}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "stale");
    assert_eq!(server.plan(&plan).await["state"], "awaiting_approval");
    assert!(records(&server, &format!("run={run}")).await.is_empty());
    // What it says now, approved as read.
    let (_, read) = server.get(&format!("/api/plans/{plan}")).await;
    let now = read["digest"].as_str().unwrap().to_string();
    let version = read["plan"]["version"].as_u64().unwrap();
    assert_ne!(now, seen);
    let (status, body) = server
        .post(
            &format!("/api/plans/{plan}/approve"),
            json!({"digest": now, "comment": "looks right"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The same approval again is refused: a plan is approved once.
    let (status, _) = server
        .post(
            &format!("/api/plans/{plan}/approve"),
            json!({"digest": now}),
        )
        .await;
    assert!(status.is_client_error(), "{status}");
    let list = records(&server, &format!("run={run}")).await;
    assert_eq!(list.len(), 1, "{list:?}");
    let record = &list[0];
    assert_eq!(record["kind"], "plan");
    assert_eq!(record["decision"], "approved");
    assert_eq!(record["digest"], now.as_str());
    assert_eq!(record["plan_version"], version);
    assert_eq!(record["plan_id"], plan.as_str());
    assert_eq!(record["person"], "tester");
    assert_eq!(record["note"], "looks right");
    assert!(record["waited_ms"].is_u64(), "{record}");
    // The filters.
    assert_eq!(records(&server, "kind=plan&person=tester").await.len(), 1);
    assert!(records(&server, "person=nobody").await.is_empty());
    assert!(records(&server, "to=2000-01-01T00:00:00Z").await.is_empty());
    assert_eq!(records(&server, "from=2000-01-01T00:00:00Z").await.len(), 1);
    let (status, body) = server.get("/api/approvals?from=yesterday").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    wait_for(&server, &run, "done").await;
}

#[tokio::test]
async fn a_guarded_calls_decision_is_a_record_of_what_ran_and_a_changed_argument_asks_again() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    fake.content(one_step("save"));
    fake.content(write("a.txt", "one"));
    fake.content(write("a.txt", "two"));
    fake.content(json!({"action": "complete", "result": "saved"}));
    let (run, _) = start(
        &server,
        json!({"task": "Save a note", "mode": "simple", "approval_required": false,
               "policies": {"write_file": "ask"}}),
    )
    .await;
    let first = asked(&server, &run, &[]).await;
    let first_id = first["call"].as_str().unwrap().to_string();
    let digest = first["digest"].as_str().unwrap().to_string();
    assert_eq!(
        digest,
        run_model::call_digest("write_file", &first["arguments"]),
        "{first}"
    );
    let decide = |call: String, body: Value| {
        let path = format!("/api/runs/{run}/tool-calls/{call}");
        let server = &server;
        async move { server.post(&path, body).await }
    };
    // An approval given for another call's digest is refused.
    let (status, body) = decide(
        first_id.clone(),
        json!({"verdict": "approve", "digest": "0".repeat(64)}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "stale");
    let (status, body) = decide(
        first_id.clone(),
        json!({"verdict": "approve", "digest": digest}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Single-use: the same approval again is refused.
    let (status, body) = decide(first_id.clone(), json!({"verdict": "approve"})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "decided");
    // The model calls again with other arguments: it asks again.
    let second = asked(&server, &run, &[first_id.as_str()]).await;
    assert_eq!(second["arguments"]["content"], "two");
    assert_ne!(second["digest"], first["digest"]);
    let edited = json!({"path": "a.txt", "content": "three"});
    let (status, body) = decide(
        second["call"].as_str().unwrap().to_string(),
        json!({"verdict": "edit", "arguments": edited, "reason": "three, not two",
               "digest": second["digest"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for(&server, &run, "done").await;
    // Newest first: the edit (bound to what ran), then the approval.
    let list = records(&server, &format!("run={run}&kind=tool_call")).await;
    assert_eq!(list.len(), 2, "{list:?}");
    assert_eq!(list[0]["decision"], "edited");
    assert_eq!(
        list[0]["digest"],
        run_model::call_digest("write_file", &edited).as_str()
    );
    assert_eq!(list[0]["note"], "three, not two");
    assert_eq!(list[1]["decision"], "approved");
    assert_eq!(list[1]["digest"], digest.as_str());
    assert_eq!(list[1]["call"], first_id.as_str());
    for record in &list {
        assert_eq!(record["tool"], "write_file");
        assert_eq!(record["run_id"], run.as_str());
        assert!(record["waited_ms"].is_u64(), "{record}");
    }
    assert_eq!(records(&server, "tool=write_file").await.len(), 2);
    assert!(records(&server, "tool=run_shell").await.is_empty());
}

#[tokio::test]
async fn a_budget_raised_to_resume_a_run_is_a_record_of_the_new_limits() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    let (run, _) = start(
        &server,
        json!({"task": "Say hello", "mode": "simple", "approval_required": false,
               "budget": {"max_llm_calls": 2}}),
    )
    .await;
    wait_for(&server, &run, "paused").await;
    let (status, body) = server
        .post(
            &format!("/api/runs/{run}/resume"),
            json!({"budget": {"max_llm_calls": 50}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for(&server, &run, "done").await;
    let list = records(&server, &format!("run={run}&kind=budget")).await;
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["decision"], "approved");
    assert_eq!(list[0]["detail"]["before"]["max_llm_calls"], 2);
    assert_eq!(list[0]["detail"]["after"]["max_llm_calls"], 50);
    assert_eq!(list[0]["digest"].as_str().unwrap().len(), 64);
}

/// The run log's entries of `kind`.
async fn entries(server: &TestServer, run: &str, kind: &str) -> Vec<Value> {
    let (_, events) = server
        .get(&format!("/api/runs/{run}/events?limit=1000"))
        .await;
    events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind)
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_grant_stops_the_asking_and_a_revoked_grant_restores_it() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    fake.content(json!({"title": "t", "subtasks": [
        {"name": "save", "description": "save the notes with write_file", "expected_outcome": "files", "depends_on": []}
    ]}));
    fake.content(write("a.txt", "one"));
    fake.content(write("b.txt", "two"));
    fake.content(write("a2.txt", "three"));
    fake.content(json!({"action": "complete", "result": "saved"}));
    let (run, plan) = start(
        &server,
        json!({"task": "Save the notes", "mode": "simple", "policies": {"write_file": "ask"}}),
    )
    .await;
    let view = wait_for(&server, &run, "awaiting_approval").await;
    // The card lists the guarded tool its step will call.
    assert_eq!(view["guarded_tools"][0]["tool"], "write_file", "{view}");
    assert_eq!(view["guarded_tools"][0]["steps"], json!([1]));
    // Refused grants change nothing: a pattern for a tool without a main
    // argument, a tool that does not exist.
    for (grants, words) in [
        (
            json!([{"tool": "run_python", "pattern": "print(*)"}]),
            "grant it whole",
        ),
        (json!([{"tool": "write_fiel"}]), "no tool named write_fiel"),
    ] {
        let (status, body) = server
            .post(
                &format!("/api/plans/{plan}/approve"),
                json!({"grants": grants}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(body["message"].as_str().unwrap().contains(words), "{body}");
        assert_eq!(server.plan(&plan).await["state"], "awaiting_approval");
    }
    let (status, body) = server
        .post(
            &format!("/api/plans/{plan}/approve"),
            json!({"grants": [{"tool": "write_file", "pattern": "a*"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, grants) = server.get(&format!("/api/runs/{run}/grants")).await;
    assert_eq!(grants.as_array().unwrap().len(), 1, "{grants}");
    let grant = grants[0]["id"].as_str().unwrap().to_string();
    assert_eq!(grants[0]["pattern"], "a*");
    // a.txt ran without asking; b.txt is not covered and asks.
    let asked_b = asked(&server, &run, &[]).await;
    assert_eq!(asked_b["arguments"]["path"], "b.txt", "{asked_b}");
    let granted = entries(&server, &run, "tool_granted").await;
    assert_eq!(granted.len(), 1, "{granted:?}");
    assert_eq!(granted[0]["entry"]["arguments"]["path"], "a.txt");
    assert_eq!(granted[0]["entry"]["grant"], grant.as_str());
    // Revoked mid-run: the grant's calls ask again from the next one on.
    let (status, body) = server
        .send(
            reqwest::Method::DELETE,
            &format!("/api/runs/{run}/grants/{grant}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["revoked_at"].is_string(), "{body}");
    let b_id = asked_b["call"].as_str().unwrap().to_string();
    let (status, body) = server
        .post(
            &format!("/api/runs/{run}/tool-calls/{b_id}"),
            json!({"verdict": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let asked_a2 = asked(&server, &run, &[b_id.as_str()]).await;
    assert_eq!(asked_a2["arguments"]["path"], "a2.txt", "{asked_a2}");
    let (status, body) = server
        .post(
            &format!(
                "/api/runs/{run}/tool-calls/{}",
                asked_a2["call"].as_str().unwrap()
            ),
            json!({"verdict": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for(&server, &run, "done").await;
    assert_eq!(entries(&server, &run, "tool_granted").await.len(), 1);
    // The grant and its revocation are records, beside the plan's.
    let list = records(&server, &format!("run={run}&kind=grant")).await;
    let decisions: Vec<&str> = list
        .iter()
        .map(|r| r["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["revoked", "approved"], "{list:?}");
    assert!(list.iter().all(|r| r["call"] == grant.as_str()));
    assert_eq!(list[1]["detail"]["pattern"], "a*");
    // An unknown grant is not found.
    let (status, _) = server
        .send(
            reqwest::Method::DELETE,
            &format!("/api/runs/{run}/grants/{}", uuid::Uuid::new_v4()),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_plan_approved_and_held_starts_on_a_click_or_at_its_time() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    // Held until a click.
    let (run, plan) = start(&server, json!({"task": "Say hello", "mode": "simple"})).await;
    wait_for(&server, &run, "awaiting_approval").await;
    let (status, body) = server
        .post(&format!("/api/plans/{plan}/approve"), json!({"hold": true}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let view = wait_for(&server, &run, "paused").await;
    assert_eq!(view["hold"]["released_at"], Value::Null, "{view}");
    assert_eq!(view["progress"]["done"], 0);
    let (_, needs) = server.get("/api/inbox").await;
    let held = needs
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["run_id"] == run.as_str())
        .cloned()
        .expect("the held run is in Needs you");
    assert!(held["text"].as_str().unwrap().contains("held"), "{held}");
    let (status, body) = server
        .post(&format!("/api/runs/{run}/start"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for(&server, &run, "done").await;
    let (status, body) = server
        .post(&format!("/api/runs/{run}/start"), json!({}))
        .await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "started once: {body}"
    );
    // Held until a time two seconds ahead: it starts by itself.
    let (run, plan) = start(
        &server,
        json!({"task": "Say hello again", "mode": "simple"}),
    )
    .await;
    wait_for(&server, &run, "awaiting_approval").await;
    let at = (chrono::Utc::now() + chrono::Duration::seconds(2)).to_rfc3339();
    let (status, body) = server
        .post(&format!("/api/plans/{plan}/approve"), json!({"hold": at}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let view = wait_for(&server, &run, "done").await;
    assert!(view["hold"]["released_at"].is_string(), "{view}");
    // A run without a plan of the agent's cannot be held.
    let other = server.create(crate::support::chain("by hand")).await;
    let (status, body) = server
        .post(
            &format!("/api/plans/{other}/approve"),
            json!({"hold": true}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
}

#[tokio::test]
async fn a_plan_waiting_too_long_is_reported_and_never_approved_by_a_timer() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = server::config::Config {
        lease: Duration::from_secs(3600),
        llm: Some(fake.config(Duration::from_secs(10))),
        workspaces: dir.path().join("workspaces"),
        run_lease: Duration::from_secs(3),
        approval_remind: Some(Duration::from_secs(1)),
        ..server::config::Config::defaults(
            format!("sqlite://{}", dir.path().join("runs.db").display()),
            crate::support::local(),
        )
    };
    let server = TestServer::with_config(&config, |_| {}).await;
    let (run, plan) = start(&server, json!({"task": "Say hello", "mode": "simple"})).await;
    wait_for(&server, &run, "awaiting_approval").await;
    let mut overdue = Vec::new();
    for _ in 0..200 {
        overdue = entries(&server, &run, "approval_overdue").await;
        if !overdue.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(overdue.len(), 1, "told once");
    let (_, needs) = server.get("/api/inbox").await;
    let approval = needs
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "approval" && n["plan_id"] == plan.as_str())
        .cloned()
        .expect("the approval waits in Needs you");
    assert_eq!(approval["overdue"], true, "{approval}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(server.plan(&plan).await["state"], "awaiting_approval");
    assert_eq!(entries(&server, &run, "approval_overdue").await.len(), 1);
}

#[tokio::test]
async fn a_plan_awaiting_approval_carries_its_checks_and_forecast_and_the_forecast_stays_with_the_approval(
) {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    fake.content(json!({"title": "sales", "subtasks": [
        {"name": "Load the sales", "description": "read sales.csv", "expected_outcome": "", "depends_on": []},
        {"name": "Sum", "description": "sum the rows", "expected_outcome": "a total", "depends_on": [1]},
        {"name": "Draw", "description": "draw a chart", "expected_outcome": "a chart", "depends_on": []},
        {"name": "Report", "description": "report the total", "expected_outcome": "a report", "depends_on": [1]}
    ]}));
    let (run, plan) = start(&server, json!({"task": "Sum the sales", "mode": "complex"})).await;
    let view = wait_for(&server, &run, "awaiting_approval").await;
    let checks: Vec<(String, Value)> = view["plan_checks"]
        .as_array()
        .expect("plan_checks while awaiting approval")
        .iter()
        .map(|c| (c["kind"].as_str().unwrap().to_string(), c["steps"].clone()))
        .collect();
    assert_eq!(
        checks,
        vec![
            ("unconnected".to_string(), json!([3])),
            ("missing_file".to_string(), json!([1])),
            ("no_outcome".to_string(), json!([1])),
        ],
        "{view}"
    );
    assert!(view["plan_checks"][1]["text"]
        .as_str()
        .unwrap()
        .contains("sales.csv"));
    let forecast = &view["forecast"];
    assert_eq!(forecast["basis"], "plan_size", "{view}");
    for measure in ["calls", "tokens", "minutes"] {
        let (low, high) = (
            forecast[measure]["low"].as_f64().unwrap(),
            forecast[measure]["high"].as_f64().unwrap(),
        );
        assert!(0.0 < low && low <= high, "{measure}: {forecast}");
    }
    assert_eq!(forecast["fits_budget"], true);
    let (status, body) = server
        .post(&format!("/api/plans/{plan}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let done = wait_for(&server, &run, "done").await;
    // The forecast it was approved with, beside what it spent.
    assert_eq!(done["forecast"], *forecast, "{done}");
    assert!(
        done.get("plan_checks").is_none(),
        "only while awaiting approval"
    );
    let list = records(&server, &format!("run={run}&kind=plan")).await;
    assert_eq!(list[0]["detail"]["forecast"], *forecast);
    let (status, accuracy) = server.get("/api/approvals/forecasts").await;
    assert_eq!(status, StatusCode::OK, "{accuracy}");
    assert_eq!(accuracy["runs"], 1, "{accuracy}");
    let share = accuracy["calls"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&share), "{accuracy}");
}

#[tokio::test]
async fn a_plan_that_drifts_past_the_threshold_pauses_until_a_person_approves_it_again() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    let (run, plan) = start(&server, json!({"task": "Write a report", "mode": "simple"})).await;
    wait_for(&server, &run, "awaiting_approval").await;
    let (status, body) = server
        .post(&format!("/api/plans/{plan}/approve"), json!({"hold": true}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for(&server, &run, "paused").await;
    // Three steps added to the approved two while it was held.
    for name in [
        "translate the findings",
        "print the posters",
        "book the venue",
    ] {
        let (status, body) = server
            .post(
                &format!("/api/plans/{plan}/subtasks"),
                json!({"subtask": {"name": name, "expected_outcome": "done"}}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, body) = server
        .post(&format!("/api/runs/{run}/start"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut view = Value::Null;
    for _ in 0..400 {
        view = server.get(&format!("/api/runs/{run}")).await.1;
        if view["drift"].is_object() && view["state"] == "paused" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        view["drift"].is_object(),
        "the run paused for drift: {view}"
    );
    let similarity = view["drift"]["similarity"].as_f64().unwrap();
    assert!(similarity < 0.7, "{view}");
    assert!(
        view["reason"]
            .as_str()
            .unwrap()
            .contains("approve it again"),
        "{view}"
    );
    assert_eq!(view["progress"]["done"], 0, "nothing ran past the contract");
    assert!(records(&server, &format!("run={run}&kind=reapproval"))
        .await
        .is_empty());
    // Approved again: a record, and the run goes on to the end.
    let (status, body) = server
        .post(&format!("/api/runs/{run}/resume"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let done = wait_for(&server, &run, "done").await;
    assert!(done.get("drift").is_none(), "{done}");
    let list = records(&server, &format!("run={run}&kind=reapproval")).await;
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["decision"], "approved");
    assert_eq!(list[0]["person"], "tester");
    assert_eq!(
        list[0]["detail"]["drift"]["similarity"].as_f64().unwrap(),
        similarity
    );
}

/// A request as the holder of `token`.
async fn as_person(
    server: &TestServer,
    token: &str,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    let response = server
        .client
        .post(server.url(path))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A server in token mode with two people, robot (operator) and boss
/// (admin), and the operator's approval `rules`.
async fn two_people(
    fake: &FakeOpenAi,
    dir: &tempfile::TempDir,
    rules: Vec<(run_model::RuleScope, run_model::ApprovalRule)>,
) -> TestServer {
    use crate::auth::{ADMIN, OPERATOR};
    let mut tokens = std::collections::HashMap::new();
    tokens.insert(
        OPERATOR.to_string(),
        server::auth::Identity::new("robot", server::auth::Role::Operator),
    );
    tokens.insert(
        ADMIN.to_string(),
        server::auth::Identity::new("boss", server::auth::Role::Admin),
    );
    let config = server::config::Config {
        lease: Duration::from_secs(3600),
        llm: Some(fake.config(Duration::from_secs(10))),
        workspaces: dir.path().join("workspaces"),
        run_lease: Duration::from_secs(3),
        approval_rules: rules,
        ..server::config::Config::defaults(
            format!("sqlite://{}", dir.path().join("runs.db").display()),
            server::config::Access::Tokens(tokens.into()),
        )
    };
    TestServer::with_config(&config, |_| {}).await
}

#[tokio::test]
async fn under_the_two_person_rule_the_starter_cannot_approve_and_two_approvals_are_counted_once_each(
) {
    use crate::auth::{ADMIN, OPERATOR};
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let server = two_people(&fake, &dir, Vec::new()).await;
    let start_as = |token: &'static str, rule: Value| {
        let server = &server;
        async move {
            let (status, view) = as_person(
                server,
                token,
                "/api/runs",
                json!({"task": "Deploy the release", "mode": "simple", "approval_rule": rule}),
            )
            .await;
            assert_eq!(status, StatusCode::CREATED, "{view}");
            (
                view["id"].as_str().unwrap().to_string(),
                view["plan_id"].as_str().unwrap().to_string(),
            )
        }
    };
    let wait = |run: String| {
        let server = &server;
        async move {
            for _ in 0..400 {
                let response = server
                    .client
                    .get(server.url(&format!("/api/runs/{run}")))
                    .bearer_auth(ADMIN)
                    .send()
                    .await
                    .unwrap();
                let view: Value = response.json().await.unwrap();
                if view["state"] == "awaiting_approval" {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            panic!("run {run} never awaited approval");
        }
    };
    // The starter may not approve their own plan; another person may.
    let (run, plan) = start_as(OPERATOR, json!({"not_starter": true})).await;
    wait(run.clone()).await;
    let approve = format!("/api/plans/{plan}/approve");
    let (status, body) = as_person(&server, OPERATOR, &approve, json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("robot started this run"),
        "{body}"
    );
    let (status, body) = as_person(&server, ADMIN, &approve, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Two approvals by different people: the first waits for the second.
    let (run, plan) = start_as(ADMIN, json!({"at_least": 2})).await;
    wait(run.clone()).await;
    let approve = format!("/api/plans/{plan}/approve");
    for _ in 0..2 {
        let (status, body) = as_person(&server, OPERATOR, &approve, json!({})).await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(body["error"], "waiting");
        assert!(
            body["message"].as_str().unwrap().contains("(1 of 2)"),
            "{body}"
        );
    }
    let response = server
        .client
        .get(server.url("/api/inbox"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    let needs: Value = response.json().await.unwrap();
    let need = needs
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["plan_id"] == plan.as_str())
        .cloned()
        .unwrap();
    assert_eq!(need["waiting_for"], json!(["1 × another person"]), "{need}");
    let (status, body) = as_person(&server, ADMIN, &approve, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let response = server
        .client
        .get(server.url(&format!("/api/approvals?run={run}&kind=plan")))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    let list: Value = response.json().await.unwrap();
    let people: Vec<(&str, bool)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["person"].as_str().unwrap(),
                r["detail"]["partial"] == true,
            )
        })
        .collect();
    assert_eq!(people, [("boss", false), ("robot", true), ("robot", true)]);
}

/// An operator's rule for a tool holds for the plan whose steps name the
/// tool, not only for each call: the starter cannot approve a plan that
/// will call `run_python` under `tool:run_python=not-starter`, and may
/// approve one that names no such tool.
#[tokio::test]
async fn a_tools_two_person_rule_holds_for_the_plan_whose_steps_call_it() {
    use crate::auth::{ADMIN, OPERATOR};
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let rule = run_model::ApprovalRule {
        not_starter: true,
        ..Default::default()
    };
    let server = two_people(
        &fake,
        &dir,
        vec![(run_model::RuleScope::Tool("run_python".into()), rule)],
    )
    .await;
    let planned = |tool: Option<&str>| {
        let mut step = json!({"name": "save", "description": "count the notes", "expected_outcome": "a file", "depends_on": []});
        if let Some(tool) = tool {
            step["tool"] = json!(tool);
        }
        json!({"title": "t", "subtasks": [step]})
    };
    let start_and_wait = |plan: Value| {
        let server = &server;
        let fake = &fake;
        async move {
            fake.content(plan);
            let (status, view) = as_person(
                server,
                OPERATOR,
                "/api/runs",
                json!({"task": "Save the notes", "mode": "simple"}),
            )
            .await;
            assert_eq!(status, StatusCode::CREATED, "{view}");
            let run = view["id"].as_str().unwrap().to_string();
            for _ in 0..400 {
                let response = server
                    .client
                    .get(server.url(&format!("/api/runs/{run}")))
                    .bearer_auth(ADMIN)
                    .send()
                    .await
                    .unwrap();
                let view: Value = response.json().await.unwrap();
                if view["state"] == "awaiting_approval" {
                    return view["plan_id"].as_str().unwrap().to_string();
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            panic!("run {run} never awaited approval");
        }
    };
    let plan = start_and_wait(planned(Some("run_python"))).await;
    let approve = format!("/api/plans/{plan}/approve");
    let (status, body) = as_person(&server, OPERATOR, &approve, json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("robot started this run"),
        "{body}"
    );
    let (status, body) = as_person(&server, ADMIN, &approve, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A plan that names no run_python: the starter approves it.
    let plan = start_and_wait(planned(None)).await;
    let approve = format!("/api/plans/{plan}/approve");
    let (status, body) = as_person(&server, OPERATOR, &approve, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn a_two_person_rule_is_refused_in_local_mode_with_the_reason() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    let (status, body) = server
        .post(
            "/api/runs",
            json!({"task": "Deploy", "approval_rule": {"not_starter": true}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("token mode"),
        "{body}"
    );
}

#[tokio::test]
async fn the_insights_measure_the_decisions_and_an_operator_applies_a_suggested_policy() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    let apply = |tool: &str, policy: &str| {
        let body = json!({"tool": tool, "policy": policy});
        let server = &server;
        async move { server.post("/api/approvals/insights/apply", body).await }
    };
    // The operator has write_file ask for every run from now on.
    let (status, body) = apply("write_file", "ask").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Twenty quick approvals as asked, as the guarded calls record them.
    for i in 0..20u64 {
        let mut record = run_model::ApprovalRecord::new(
            uuid::Uuid::new_v4(),
            run_model::ApprovalKind::ToolCall,
            run_model::ApprovalDecision::Approved,
            "tester",
            chrono::Utc::now(),
            "0".repeat(64),
        );
        record.tool = Some("write_file".into());
        record.waited_ms = Some(400 + i);
        server.services.approvals.record(&record).await.unwrap();
    }
    let (status, insights) = server.get("/api/approvals/insights").await;
    assert_eq!(status, StatusCode::OK, "{insights}");
    assert_eq!(insights["people"][0]["name"], "tester", "{insights}");
    assert_eq!(insights["people"][0]["quick"], 20);
    assert_eq!(insights["tools"][0]["name"], "write_file");
    assert_eq!(insights["tools"][0]["approved_share"], 1.0);
    let suggestion = &insights["suggestions"][0];
    assert_eq!(
        (&suggestion["tool"], &suggestion["from"], &suggestion["to"]),
        (&json!("write_file"), &json!("ask"), &json!("auto")),
        "{insights}"
    );
    // Applied: the runs started from now on do not ask, and nothing is
    // left to suggest.
    let (status, body) = apply("write_file", "auto").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, insights) = server.get("/api/approvals/insights").await;
    assert_eq!(insights["suggestions"], json!([]), "{insights}");
    let (status, body) = apply("no_such_tool", "ask").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, _) = server.get("/api/approvals/insights?days=0").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// Issue 55's decisions over MCP, as the board's cards make them: a plan
/// approved with a grant (a stale digest refused), a guarded call decided
/// (a changed digest refused), the grant revoked; each one a record.
#[tokio::test]
async fn an_mcp_client_approves_a_plan_with_a_grant_decides_a_guarded_call_and_revokes_the_grant() {
    use crate::mcp::{client, params, text};
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    fake.content(json!({"title": "t", "subtasks": [
        {"name": "save", "description": "save the notes with write_file", "expected_outcome": "files", "depends_on": []}
    ]}));
    fake.content(write("a.txt", "one"));
    fake.content(write("b.txt", "two"));
    fake.content(json!({"action": "complete", "result": "saved"}));
    let (run, plan) = start(
        &server,
        json!({"task": "Save the notes", "mode": "simple", "policies": {"write_file": "ask"}}),
    )
    .await;
    wait_for(&server, &run, "awaiting_approval").await;
    let mcp = client(&server, "local").await;
    let call = |name: &'static str, args: Value| {
        let mcp = &mcp;
        async move {
            let result = mcp.call_tool(params(name, args)).await.expect(name);
            (result.is_error != Some(true), text(&result))
        }
    };
    let names: Vec<String> = mcp
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    for tool in [
        "approve_plan",
        "pending_calls",
        "decide_call",
        "revoke_grant",
    ] {
        assert!(names.iter().any(|n| n == tool), "{tool}: {names:?}");
    }
    // A digest of something else: refused, nothing approved.
    let (ok, said) = call(
        "approve_plan",
        json!({"plan_id": plan, "digest": "0".repeat(64)}),
    )
    .await;
    assert!(!ok, "{said}");
    assert_eq!(server.plan(&plan).await["state"], "awaiting_approval");
    let (_, read) = server.get(&format!("/api/plans/{plan}")).await;
    let digest = read["digest"].as_str().unwrap().to_string();
    let (ok, said) = call(
        "approve_plan",
        json!({"plan_id": plan, "digest": digest, "comment": "over MCP",
               "grants": [{"tool": "write_file", "pattern": "a*"}]}),
    )
    .await;
    assert!(ok, "{said}");
    let approved: Value = serde_json::from_str(&said).unwrap();
    assert_eq!(approved["grants"][0]["pattern"], "a*", "{approved}");
    let grant = approved["grants"][0]["id"].as_str().unwrap().to_string();
    // a.txt ran under the grant; b.txt asks, and is decided over MCP.
    let asked_b = asked(&server, &run, &[]).await;
    assert_eq!(asked_b["arguments"]["path"], "b.txt", "{asked_b}");
    let (ok, said) = call("pending_calls", json!({"run_id": run})).await;
    assert!(ok, "{said}");
    let pending: Value = serde_json::from_str(&said).unwrap();
    assert_eq!(pending[0]["call"], asked_b["call"], "{pending}");
    let (ok, said) = call(
        "decide_call",
        json!({"run_id": run, "call": asked_b["call"], "verdict": "approve", "digest": "f".repeat(64)}),
    )
    .await;
    assert!(!ok, "a decision of other arguments: {said}");
    let (ok, said) = call(
        "decide_call",
        json!({"run_id": run, "call": asked_b["call"], "verdict": "approve", "digest": asked_b["digest"]}),
    )
    .await;
    assert!(ok, "{said}");
    let (ok, said) = call(
        "decide_call",
        json!({"run_id": run, "call": asked_b["call"], "verdict": "deny"}),
    )
    .await;
    assert!(!ok, "decided once: {said}");
    let (ok, said) = call("revoke_grant", json!({"run_id": run, "grant_id": grant})).await;
    assert!(ok, "{said}");
    wait_for(&server, &run, "done").await;
    let list = records(&server, &format!("run={run}")).await;
    let kinds: Vec<(&str, &str)> = list
        .iter()
        .map(|r| (r["kind"].as_str().unwrap(), r["decision"].as_str().unwrap()))
        .collect();
    for kind in [
        ("plan", "approved"),
        ("grant", "approved"),
        ("tool_call", "approved"),
        ("grant", "revoked"),
    ] {
        assert!(kinds.contains(&kind), "{kind:?} in {kinds:?}");
    }
    assert!(list
        .iter()
        .any(|r| r["kind"] == "plan" && r["note"] == "over MCP"));
    mcp.cancel().await.ok();
}

/// A run answered in words takes one or two calls a step, one with tools
/// up to its turn limit: a forecast read from the one kind fits neither
/// (issue 55's measured forecast). Similar runs are those of the same mode
/// and model answered the same way.
#[tokio::test]
async fn a_forecast_reads_only_the_finished_runs_answered_the_same_way() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    for task in [
        "Write a haiku about plans",
        "Write a short poem about rivers",
        "Write a limerick about a cat",
    ] {
        let (run, _) = start(&server, json!({"task": task, "approval_required": false})).await;
        let done = wait_for(&server, &run, "done").await;
        assert_eq!(done["classification"]["in_words"], true, "{done}");
    }
    let forecast_of = |task: &'static str| {
        let server = &server;
        async move {
            let (run, _) = start(server, json!({"task": task, "approval_required": true})).await;
            wait_for(server, &run, "awaiting_approval").await
        }
    };
    let words = forecast_of("Write a sonnet about the sea").await;
    assert_eq!(words["classification"]["in_words"], true, "{words}");
    assert_eq!(words["forecast"]["basis"], "similar_runs", "{words}");
    let tools = forecast_of("Look up the weather in Shanghai").await;
    assert_ne!(tools["classification"]["in_words"], true, "{tools}");
    assert_eq!(
        tools["classification"]["mode"],
        words["classification"]["mode"]
    );
    assert_eq!(
        tools["forecast"]["basis"], "plan_size",
        "three simple runs of the same model, all answered in words, are not like it: {tools}"
    );
}
