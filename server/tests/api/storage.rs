//! Storage that does not only grow: the workspace retention removes the
//! files of runs that ended long enough ago (never a run that goes on, or
//! one a person keeps, and never what a planted link points at), uploads
//! past the workspace quota are refused, and `GET /api/storage` counts
//! what planboard holds.

use std::time::Duration;

use reqwest::multipart::{Form, Part};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use server::config::Config;

use crate::fake_openai::FakeOpenAi;
use crate::inputs::{run_part, upload};
use crate::runs::{start, wait_for};
use crate::support::{local, TestServer};

/// A server driving runs with the fake model, its workspaces in a
/// temporary folder, on a temporary SQLite file.
pub async fn server(fake: &FakeOpenAi, quota: Option<u64>) -> TestServer {
    server_on(fake, quota, None).await
}

/// [`server`] on `database` when given (a PostgreSQL database of the
/// test's own: the retention and the storage report see the whole
/// database).
async fn server_on(fake: &FakeOpenAi, quota: Option<u64>, database: Option<&str>) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let database = database.map_or_else(
        || format!("sqlite://{}", dir.path().join("runs.db").display()),
        str::to_string,
    );
    let defaults = Config::defaults(database, local());
    let config = Config {
        lease: Duration::from_secs(3600),
        llm: Some(fake.config(Duration::from_secs(10))),
        workspaces: dir.path().join("workspaces"),
        run_lease: Duration::from_secs(3),
        workspace_quota: quota.unwrap_or(defaults.workspace_quota),
        ..defaults
    };
    let mut server = TestServer::with_config(&config, |_| {}).await;
    server._dir = Some(dir);
    server
}

fn workspace(server: &TestServer, run: &str) -> std::path::PathBuf {
    server
        ._dir
        .as_ref()
        .unwrap()
        .path()
        .join("workspaces")
        .join(run)
}

/// A run approved and worked to its answer.
pub async fn finished_run(server: &TestServer) -> (String, String) {
    let (run, plan) = start(server, json!({"task": "Look up the weather in Shanghai"})).await;
    wait_for(server, &run, "awaiting_approval").await;
    let (status, body) = server
        .post(&format!("/api/plans/{plan}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for(server, &run, "done").await;
    (run, plan)
}

/// Files as the code runner leaves them: a result, a folder, and links
/// to a host file and a host folder.
fn fill(ws: &std::path::Path, outside: &std::path::Path) {
    std::fs::create_dir_all(ws.join("out")).unwrap();
    std::fs::write(ws.join("out/result.csv"), vec![b'x'; 1000]).unwrap();
    std::fs::write(ws.join("notes.md"), "# notes\n").unwrap();
    std::os::unix::fs::symlink(outside.join("host.txt"), ws.join("host-file")).unwrap();
    std::os::unix::fs::symlink(outside, ws.join("out/host-folder")).unwrap();
}

#[tokio::test]
async fn the_retention_removes_old_finished_workspaces_and_keeps_running_kept_and_recent_ones() {
    retention_story(None).await;
}

#[tokio::test]
async fn the_retention_removes_old_finished_workspaces_and_keeps_running_kept_and_recent_ones_on_postgres(
) {
    let Some(url) = crate::postgres::fresh_database().await else {
        return;
    };
    retention_story(Some(&url)).await;
}

async fn retention_story(database: Option<&str>) {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None, database).await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("host.txt"), "a host file").unwrap();

    let (old, _) = finished_run(&server).await;
    fill(&workspace(&server, &old), outside.path());
    let (kept, _) = finished_run(&server).await;
    fill(&workspace(&server, &kept), outside.path());
    let (status, view) = server
        .send(
            Method::PUT,
            &format!("/api/runs/{kept}/kept"),
            Some(json!({"kept": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(view["kept"], true);
    // A run that goes on: waiting for its approval.
    let (waiting, _) = start(&server, json!({"task": "Look up the weather in Paris"})).await;
    wait_for(&server, &waiting, "awaiting_approval").await;
    fill(&workspace(&server, &waiting), outside.path());
    let (status, body) = server
        .send(
            Method::PUT,
            &format!("/api/runs/{waiting}/kept"),
            Some(json!({"kept": true})),
        )
        .await;
    assert!(status.is_client_error(), "{status} {body}");
    assert!(body["message"].as_str().unwrap().contains("never removed"));

    // Today: everything ended less than the 7 days of the default.
    let runs = &server.services.runs;
    let now = chrono::Utc::now();
    runs.upkeep_storage(now).await;
    for run in [&old, &kept, &waiting] {
        assert!(workspace(&server, run).join("notes.md").exists(), "{run}");
    }
    let (_, view) = server.get(&format!("/api/runs/{old}")).await;
    assert_eq!(view["files_removed_at"], Value::Null);

    // Eight days later: the old run's files go, the rest stays.
    let later = now + chrono::Duration::days(8);
    runs.upkeep_storage(later).await;
    assert!(
        !workspace(&server, &old).exists(),
        "the old run's files went"
    );
    assert!(workspace(&server, &kept).join("out/result.csv").exists());
    assert!(workspace(&server, &waiting).join("out/result.csv").exists());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("host.txt")).unwrap(),
        "a host file",
        "what a planted link pointed at is untouched"
    );
    let (status, view) = server.get(&format!("/api/runs/{old}")).await;
    assert_eq!(status, StatusCode::OK, "the run stays");
    assert_eq!(view["state"], "done");
    assert_eq!(view["answer"], "the final answer");
    let removed: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(view["files_removed_at"].clone()).unwrap();
    assert_eq!(removed, later);
    let (status, files) = server.get(&format!("/api/runs/{old}/artifacts")).await;
    assert_eq!((status, files), (StatusCode::OK, json!([])));
    // Running it again would build on files that are gone: refused.
    let (status, body) = server
        .post(&format!("/api/runs/{old}/again"), json!({"from": 2}))
        .await;
    assert!(status.is_client_error(), "{status} {body}");
    assert!(
        body["message"].as_str().unwrap().contains("were removed"),
        "{body}"
    );

    // A month later the logs go too, but the kept run's stays.
    runs.upkeep_storage(now + chrono::Duration::days(31)).await;
    let log_len = |run: String| {
        let server = &server;
        async move {
            let (status, log) = server.get(&format!("/api/runs/{run}/events")).await;
            assert_eq!(status, StatusCode::OK, "{log}");
            log.as_array().unwrap().len()
        }
    };
    assert_eq!(log_len(old.clone()).await, 0, "the old run's log went");
    assert!(log_len(kept.clone()).await > 0, "the kept run's log stays");
    assert!(
        log_len(waiting.clone()).await > 0,
        "a run that goes on keeps its log"
    );

    // Let go, the kept run's files go at the next pass.
    let (status, _) = server
        .send(
            Method::PUT,
            &format!("/api/runs/{kept}/kept"),
            Some(json!({"kept": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    runs.upkeep_storage(later).await;
    assert!(!workspace(&server, &kept).exists());
    assert!(workspace(&server, &waiting).exists());
}

#[tokio::test]
async fn the_storage_route_counts_what_planboard_holds_and_the_retentions_in_effect() {
    storage_report_story(None).await;
}

#[tokio::test]
async fn the_storage_route_counts_what_planboard_holds_and_the_retentions_in_effect_on_postgres() {
    let Some(url) = crate::postgres::fresh_database().await else {
        return;
    };
    storage_report_story(Some(&url)).await;
}

async fn storage_report_story(database: Option<&str>) {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None, database).await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("host.txt"), vec![b'h'; 50_000]).unwrap();
    let (run, _) = finished_run(&server).await;
    fill(&workspace(&server, &run), outside.path());
    let (other, _) = finished_run(&server).await;
    let _ = std::fs::remove_dir_all(workspace(&server, &other));

    // A finished run's last entries (its final state, what it remembered)
    // are written just after its row says done: read the report once the
    // logs have stopped growing, when both sides count the same rows.
    let mut report = Value::Null;
    let mut entries = 0;
    for _ in 0..50 {
        let (status, now) = server.get("/api/storage").await;
        assert_eq!(status, StatusCode::OK, "{now}");
        report = now;
        entries = 0;
        for id in [&run, &other] {
            let (status, log) = server
                .get(&format!("/api/runs/{id}/events?limit=1000"))
                .await;
            assert_eq!(status, StatusCode::OK, "{log}");
            entries += log.as_array().unwrap().len();
        }
        if report["run_log_entries"] == entries {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let kind = if database.is_some() {
        "postgres"
    } else {
        "sqlite"
    };
    assert_eq!(report["database"], kind);
    assert!(report["database_bytes"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["plans"], 2);
    assert_eq!(report["runs"], 2);
    assert_eq!(report["run_log_entries"], entries, "{report}");
    let (status, memories) = server.get("/api/memories?limit=200").await;
    assert_eq!(status, StatusCode::OK, "{memories}");
    assert_eq!(report["memories"], memories.as_array().unwrap().len());
    assert_eq!(report["webhook_deliveries"], 0);
    // One folder; its files' bytes, not the 50,000 a link points at.
    assert_eq!(report["workspaces"]["count"], 1, "{report}");
    assert_eq!(report["workspaces"]["bytes"], 1000 + 8);
    assert_eq!(report["workspaces"]["kept"], 0);
    assert_eq!(report["workspaces"]["removed"], 0);
    assert_eq!(
        report["retention"],
        json!({
            "approval_days": 365,
            "workspace_days": 7,
            "run_log_hours": 720,
            "webhook_days": 30,
            "workspace_quota_bytes": 1024u64 * 1024 * 1024,
            "staging_hours": 6,
        })
    );

    server
        .send(
            Method::PUT,
            &format!("/api/runs/{other}/kept"),
            Some(json!({"kept": true})),
        )
        .await;
    let later = chrono::Utc::now() + chrono::Duration::days(8);
    server.services.runs.upkeep_storage(later).await;
    let (_, report) = server.get("/api/storage").await;
    assert_eq!(report["workspaces"]["count"], 0, "{report}");
    assert_eq!(report["workspaces"]["bytes"], 0);
    assert_eq!(report["workspaces"]["kept"], 1);
    assert_eq!(report["workspaces"]["removed"], 1);
}

#[tokio::test]
async fn uploads_past_the_workspace_quota_are_refused_with_the_quota_named() {
    quota_story(None).await;
}

#[tokio::test]
async fn uploads_past_the_workspace_quota_are_refused_with_the_quota_named_on_postgres() {
    let Some(url) = crate::postgres::fresh_database().await else {
        return;
    };
    quota_story(Some(&url)).await;
}

async fn quota_story(database: Option<&str>) {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, Some(100), database).await;
    let form = Form::new()
        .part(
            "run",
            run_part(json!({"task": "Total the sales per region"})),
        )
        .part("files", Part::bytes(vec![b'1'; 60]).file_name("a.csv"))
        .part("files", Part::bytes(vec![b'2'; 60]).file_name("b.csv"));
    let (status, body) = upload(&server, form).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("at most 100 bytes") && message.contains("PLANBOARD_WORKSPACE_QUOTA_MB"),
        "{message}"
    );
    let (_, runs) = server.get("/api/runs").await;
    assert_eq!(runs, json!([]), "no run started");
    let workspaces = server._dir.as_ref().unwrap().path().join("workspaces");
    let staged = std::fs::read_dir(workspaces.join(".incoming"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(staged, 0, "nothing was left behind");
    // Within the quota, the same files start a run.
    let form = Form::new()
        .part(
            "run",
            run_part(json!({"task": "Total the sales per region"})),
        )
        .part("files", Part::bytes(vec![b'1'; 60]).file_name("a.csv"));
    let (status, body) = upload(&server, form).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}
