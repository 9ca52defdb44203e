//! Regression cases and suite runs over HTTP (issue 56), on the fake
//! model: a run reviewed good becomes a case with checks; the suite plans
//! and runs it again, its tool calls answered from the recording, and it
//! passes; a broken check fails it, and the change shows on the Cases
//! page; a review of the suite's run is a finding, not a case; the case
//! is untouched by the suites; `planboard eval` exits non-zero on a
//! failed case.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::fake_openai::FakeOpenAi;
use crate::replay::recorded_run;
use crate::runs::server_on;
use crate::support::TestServer;

fn read(path: &str) -> Value {
    json!({"action": "read_file", "arguments": {"path": path}})
}

/// A case made of a recorded run reviewed good, with `checks`.
async fn case_of_a_good_run(
    server: &TestServer,
    fake: &FakeOpenAi,
    checks: Value,
) -> (String, String) {
    let run = recorded_run(server, fake).await;
    let (_, view) = server.get(&format!("/api/runs/{run}")).await;
    let plan = view["plan_id"].as_str().unwrap().to_string();
    // Not reviewed yet: refused with why.
    let (status, body) = server
        .post("/api/cases", json!({"run_id": run, "checks": checks}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["message"].as_str().unwrap().contains("good"), "{body}");
    let (status, body) = server
        .send(
            reqwest::Method::PUT,
            &format!("/api/plans/{plan}/review"),
            Some(json!({"verdict": "good"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, case) = server
        .post(
            "/api/cases",
            json!({"run_id": run, "name": "notes", "tags": ["Notes"], "checks": checks}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{case}");
    (case["id"].as_str().unwrap().to_string(), run)
}

async fn suite_report(server: &TestServer, body: Value) -> Value {
    let (status, run) = server.post("/api/cases/run", body).await;
    assert_eq!(status, StatusCode::CREATED, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    for _ in 0..600 {
        let (status, report) = server.get(&format!("/api/cases/runs/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{report}");
        if report["run"]["state"] != "running" {
            return report;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("suite run {id} never ended");
}

#[tokio::test]
async fn a_case_made_from_a_review_runs_in_the_suite_and_a_broken_check_fails_it() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    let (case, run) = case_of_a_good_run(
        &server,
        &fake,
        json!([
            {"kind": "answer_text", "text": "final answer"},
            {"kind": "file_exists", "path": "a.txt"},
            {"kind": "step_done", "subtask": 1}
        ]),
    )
    .await;
    let (_, made) = server.get(&format!("/api/cases/{case}")).await;
    assert_eq!(made["tags"], json!(["notes"]));
    assert_eq!(
        made["checks"][2]["name"], "gather",
        "the step named from the plan"
    );
    assert_eq!(made["inputs"].as_array().unwrap().len(), 3);
    let (_, kept) = server.get(&format!("/api/runs/{run}")).await;
    assert_eq!(kept["kept"], true, "a case keeps its run");
    let (status, twice) = server.post("/api/cases", json!({"run_id": run})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{twice}");

    // The suite's run reads the same files: answered from the recording.
    fake.action_for("fake", read("a.txt"))
        .action_for("fake", read("b.txt"))
        .action_for(
            "fake",
            json!({"action": "complete", "result": "the notes say alpha and beta"}),
        );
    let report = suite_report(&server, json!({})).await;
    assert_eq!(report["run"]["state"], "done", "{report}");
    assert_eq!(report["run"]["passed"], 1, "{report}");
    assert_eq!(report["run"]["score"], 1.0);
    let result = &report["results"][0];
    assert_eq!(result["outcome"], "passed", "{result}");
    assert_eq!(result["node_f1"], 1.0);
    assert!(result["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["passed"] == true));
    let suite_run = result["run_id"].as_str().unwrap().to_string();
    let (_, log) = server
        .get(&format!("/api/runs/{suite_run}/events?limit=1000"))
        .await;
    let replayed = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "tool_call")
        .all(|e| e["entry"]["replayed"] == true);
    assert!(
        replayed,
        "every tool call answered from the recording: {log}"
    );
    let (_, after) = server.get(&format!("/api/cases/{case}")).await;
    assert_eq!(after, made, "the suite leaves the case untouched");

    // A broken check fails the case, and the change shows.
    let (status, edited) = server
        .send(
            reqwest::Method::PATCH,
            &format!("/api/cases/{case}"),
            Some(json!({"checks": [{"kind": "answer_text", "text": "no such words"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{edited}");
    let report = suite_report(&server, json!({"unmatched": "live"})).await;
    assert_eq!(report["run"]["failed"], 1, "{report}");
    let result = &report["results"][0];
    assert_eq!(result["outcome"], "failed");
    assert_eq!(result["checks"][0]["passed"], false);
    let page = reqwest::get(server.url("/cases"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("data-testid=\"changed-case\""), "{page}");
    assert!(page.contains("data-testid=\"score-chart\""), "{page}");

    // A review of the suite's run that is not good is a finding.
    let (_, suite_view) = server
        .get(&format!("/api/runs/{}", result["run_id"].as_str().unwrap()))
        .await;
    let suite_plan = suite_view["plan_id"].as_str().unwrap();
    let (status, _) = server
        .send(
            reqwest::Method::PUT,
            &format!("/api/plans/{suite_plan}/review"),
            Some(json!({"verdict": "wrong", "note": "it said nothing of the words"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, refused) = server
        .post("/api/cases", json!({"run_id": result["run_id"]}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("finding"),
        "{refused}"
    );
    let page = reqwest::get(server.url("/cases"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("data-testid=\"finding\""), "{page}");

    // Retired, it runs no more.
    let (status, _) = server
        .send(
            reqwest::Method::PATCH,
            &format!("/api/cases/{case}"),
            Some(json!({"retired": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = server.post("/api/cases/run", json!({})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
}

#[tokio::test]
async fn planboard_eval_exits_non_zero_when_a_case_fails() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("eval.db").display());
    let workspaces = dir.path().join("workspaces");
    {
        let config = server::config::Config {
            lease: Duration::from_secs(3600),
            llm: Some(fake.config(Duration::from_secs(10))),
            workspaces: workspaces.clone(),
            run_lease: Duration::from_secs(3),
            ..server::config::Config::defaults(database.clone(), crate::support::local())
        };
        let server = TestServer::with_config(&config, |_| {}).await;
        case_of_a_good_run(
            &server,
            &fake,
            json!([{"kind": "answer_text", "text": "no such words"}]),
        )
        .await;
        server.stop().await;
    }
    // The fake model answers on this test's runtime: the child is waited
    // for off it.
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_planboard"));
    command
        .arg("eval")
        .env("DATABASE_URL", &database)
        .env("PLANBOARD_WORKSPACES", &workspaces)
        .env("PLANBOARD_LLM_MODEL", "fake")
        .env("PLANBOARD_LLM_BASE_URL", &fake.url)
        .env("PLANBOARD_LLM_CONCURRENCY", "4")
        .env("PLANBOARD_SANDBOX", "off")
        .env("RUST_LOG", "warn");
    let eval = tokio::task::spawn_blocking(move || command.output());
    let output = tokio::time::timeout(Duration::from_secs(120), eval)
        .await
        .expect("eval ends")
        .unwrap()
        .expect("eval runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("failed") && stdout.contains("no such words"),
        "{stdout}"
    );
    assert!(stdout.contains("0 passed, 1 failed"), "{stdout}");

    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_planboard"))
        .args(["eval", "--unmatched", "sometimes"])
        .output()
        .unwrap();
    assert_eq!(
        bad.status.code(),
        Some(2),
        "a bad argument: the suite does not start"
    );
}
