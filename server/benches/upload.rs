//! A run's files over HTTP: the time from sending a 1 MB file to having it
//! stored in a run's workspace, for a run that goes on
//! (`POST /api/runs/{id}/files`) and for a run that starts with it
//! (`POST /api/runs` as multipart; the time to its `201`, which comes once
//! the file is in the workspace). The model answers in process, so what is
//! timed is planboard: the multipart parse, the checks, the staging write
//! and the move, and for a start the run's plan and rows.
//!
//! Run: `cargo bench -p server --bench upload`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::multipart::{Form, Part};
use server::config::{Access, Config};

/// Plans one subtask and waits for approval: the run goes on, untouched.
struct Planner;

#[async_trait::async_trait]
impl agent::Llm for Planner {
    async fn chat(
        &self,
        request: &agent::llm::ChatRequest,
    ) -> Result<agent::llm::ChatReply, agent::llm::LlmError> {
        let content = match &request.shape {
            agent::llm::Shape::Json { name: "plan", .. } => serde_json::json!({
                "title": "t", "subtasks": [{"name": "read", "description": "read the file", "expected_outcome": "", "depends_on": []}]
            })
            .to_string(),
            _ => r#"{"confidence": 1, "mode": "simple", "reason": "r"}"#.to_string(),
        };
        Ok(agent::llm::ChatReply {
            content,
            calls: vec![],
            finish_reason: Some("stop".into()),
            usage: None,
            model: "fake".into(),
        })
    }

    fn model(&self, _role: agent::llm::CallRole) -> String {
        "fake".into()
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "{name:<48} p50 {:>6.1} ms  p99 {:>6.1} ms  ({} uploads)",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3,
        times.len()
    );
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let llm = agent::LlmConfig::from_vars(|n| match n {
        "PLANBOARD_LLM_MODEL" => Some("fake".into()),
        "PLANBOARD_LLM_BASE_URL" => Some("http://127.0.0.1:9/v1".into()),
        _ => None,
    })
    .unwrap();
    let config = Config {
        lease: Duration::from_secs(3600),
        llm,
        workspaces: dir.path().join("ws"),
        ..Config::defaults(
            format!("sqlite://{}", dir.path().join("bench.db").display()),
            Access::Local {
                user: "bench".into(),
            },
        )
    };
    let services = server::start_with_model(&config, Some(Arc::new(Planner)))
        .await
        .unwrap();
    let options = leptos::config::LeptosOptions::builder()
        .output_name("planboard")
        .site_root(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/site"))
        .build();
    let app = server::router(options, services);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = reqwest::Client::new();
    let file: Vec<u8> = (0..1_000_000u32)
        .map(|i| b"abcdefghij,\n"[i as usize % 12])
        .collect();

    const UPLOADS: usize = 40;
    let mut starts = Vec::new();
    let mut run = String::new();
    for _ in 0..UPLOADS {
        let form = Form::new()
            .part(
                "run",
                Part::text(r#"{"task": "Read the file", "mode": "simple"}"#),
            )
            .part("files", Part::bytes(file.clone()).file_name("data.csv"));
        let t = Instant::now();
        let response = client
            .post(format!("{base}/api/runs"))
            .multipart(form)
            .send()
            .await
            .unwrap();
        starts.push(t.elapsed());
        assert_eq!(response.status(), 201);
        let view: serde_json::Value = response.json().await.unwrap();
        run = view["id"].as_str().unwrap().to_string();
    }
    report("POST /api/runs with a 1 MB file (to 201)", starts);
    let mut adds = Vec::new();
    for i in 0..UPLOADS {
        let form = Form::new().part(
            "files",
            Part::bytes(file.clone()).file_name(format!("more-{i}.csv")),
        );
        let t = Instant::now();
        let response = client
            .post(format!("{base}/api/runs/{run}/files"))
            .multipart(form)
            .send()
            .await
            .unwrap();
        adds.push(t.elapsed());
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    }
    report("POST /api/runs/{id}/files, 1 MB, to a running run", adds);
}
