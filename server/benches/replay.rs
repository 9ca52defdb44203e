//! Replay (issue 56): a recorded 20-step run replayed wholly from its
//! recording, beside the original run. The agent runs inside the real
//! server (SQLite, the one write path, the run log); its model answers in
//! process, the same way each time (a chain of 20 subtasks, each reads a
//! page with `fetch_url`, then completes); the pages come from a local
//! server that takes `PAGE_MS` per page, as a slow web or tool would.
//!
//! The original makes its 20 tool calls; the replay (on the same model,
//! `unmatched: stop`, so any call the recording did not hold would stop
//! it) answers all 20 from the recording and reaches no page. Both make
//! the same model calls: a replay re-asks the model (what it tests), and
//! saves the tools' time. Printed: wall time, model calls, tool calls
//! made and replayed, and the compare route's verdict on the two logs.
//!
//! Run: `cargo bench -p server --bench replay` (release build).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use serde_json::json;
use server::config::{Access, Config};

/// Subtasks in the recorded run.
const STEPS: usize = 20;
/// What one page takes to answer.
const PAGE_MS: u64 = 100;

/// The in-process model: the same answers every time.
struct Model {
    pages: String,
    calls: AtomicUsize,
}

fn reply(content: String) -> agent::llm::ChatReply {
    agent::llm::ChatReply {
        content,
        calls: vec![],
        finish_reason: Some("stop".into()),
        usage: Some(agent::llm::Usage {
            prompt_tokens: 100,
            completion_tokens: 10,
        }),
        model: "fake".into(),
    }
}

#[async_trait::async_trait]
impl agent::Llm for Model {
    async fn chat(
        &self,
        request: &agent::llm::ChatRequest,
    ) -> Result<agent::llm::ChatReply, agent::llm::LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let shape = match &request.shape {
            agent::llm::Shape::Json { name, .. } => *name,
            _ => "text",
        };
        let content = match shape {
            "source" => json!({"source": "web", "why": "pages"}).to_string(),
            "plan" => json!({"title": "read the pages", "subtasks": (1..=STEPS).map(|i| json!({
                "name": format!("step {i}"), "description": format!("read page {i}"),
                "expected_outcome": "", "depends_on": if i > 1 { vec![i - 1] } else { vec![] }
            })).collect::<Vec<_>>()})
            .to_string(),
            "action" => {
                let brief = request
                    .messages
                    .get(1)
                    .map(|m| m.content.as_str())
                    .unwrap_or_default();
                let step = brief
                    .lines()
                    .find_map(|l| l.strip_prefix("Your subtask #"))
                    .and_then(|l| l.split_once(": step "))
                    .map(|(_, n)| n.trim().to_string())
                    .unwrap_or_default();
                if request.messages.len() <= 2 {
                    json!({"action": "fetch_url", "arguments": {"url": format!("{}/page/{step}", self.pages)}})
                        .to_string()
                } else {
                    json!({"action": "complete", "result": "the page was read"}).to_string()
                }
            }
            _ => "the pages were read".to_string(),
        };
        Ok(reply(content))
    }

    fn model(&self, _role: agent::llm::CallRole) -> String {
        "fake".into()
    }
}

async fn page(State(hits): State<Arc<AtomicUsize>>) -> &'static str {
    hits.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(PAGE_MS)).await;
    "a page of text that the step reads"
}

async fn wait_done(services: &server::Services, run: agent::RunId) -> agent::RunRecord {
    loop {
        let view = services.runs.get(run).await.expect("run");
        if view.record.state.is_finished() {
            assert_eq!(
                view.record.state,
                agent::RunState::Done,
                "{:?}",
                view.record.reason
            );
            return view.record;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::main]
async fn main() {
    let hits = Arc::new(AtomicUsize::new(0));
    let pages = Router::new()
        .route("/page/{n}", get(page))
        .with_state(hits.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let pages_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, pages).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    let llm = agent::LlmConfig::from_vars(|n| match n {
        "PLANBOARD_LLM_MODEL" => Some("fake".into()),
        // Never called: the model answers in process.
        "PLANBOARD_LLM_BASE_URL" => Some("http://127.0.0.1:9/v1".into()),
        "PLANBOARD_LLM_CONCURRENCY" => Some("4".into()),
        _ => None,
    })
    .unwrap()
    .unwrap();
    let config = Config {
        lease: Duration::from_secs(3600),
        llm: Some(llm),
        workspaces: dir.path().join("ws"),
        fetch: agent::tools::web::WebPolicy {
            allow_private: true,
            ..agent::tools::web::WebPolicy::default()
        },
        ..Config::defaults(
            format!("sqlite://{}", dir.path().join("bench.db").display()),
            Access::Local {
                user: "bench".into(),
            },
        )
    };
    let model = Arc::new(Model {
        pages: pages_url,
        calls: AtomicUsize::new(0),
    });
    let services = server::start_with_model(&config, Some(model.clone()))
        .await
        .unwrap();

    let started = Instant::now();
    let recorded = services
        .runs
        .start(
            agent::RunConfig {
                task: "Read the twenty pages".into(),
                mode: agent::ModeChoice::Complex, // a simple plan holds at most 7 steps
                approval_required: false,
                memory: false,
                budget: agent::Budget {
                    max_llm_calls: 10_000,
                    ..agent::Budget::default()
                },
                ..agent::RunConfig::default()
            },
            "bench",
        )
        .await
        .unwrap();
    let original = wait_done(&services, recorded.record.id).await;
    let original_time = started.elapsed();
    let original_pages = hits.load(Ordering::SeqCst);
    let original_calls = model.calls.load(Ordering::SeqCst);

    let started = Instant::now();
    let replay = services
        .runs
        .replay(
            recorded.record.id,
            server::runs::ReplayRequest {
                unmatched: run_model::Unmatched::Stop,
                ..server::runs::ReplayRequest::default()
            },
            "bench",
        )
        .await
        .unwrap();
    let replayed = wait_done(&services, replay.record.id).await;
    let replay_time = started.elapsed();
    let replay_pages = hits.load(Ordering::SeqCst) - original_pages;
    let replay_calls = model.calls.load(Ordering::SeqCst) - original_calls;

    let compared = services
        .runs
        .compare(original.id, replayed.id)
        .await
        .unwrap();
    println!("a recorded run of {STEPS} steps, each a fetch_url of a page that takes {PAGE_MS} ms, and its replay:");
    println!(
        "  {:<9} {:>9} {:>12} {:>11} {:>9}",
        "", "wall", "model calls", "tools run", "replayed"
    );
    println!(
        "  {:<9} {:>7.2} s {:>12} {:>11} {:>9}",
        "original",
        original_time.as_secs_f64(),
        original_calls,
        original_pages,
        compared.a.totals.replayed_calls
    );
    println!(
        "  {:<9} {:>7.2} s {:>12} {:>11} {:>9}",
        "replay",
        replay_time.as_secs_f64(),
        replay_calls,
        replay_pages,
        compared.b.totals.replayed_calls
    );
    println!(
        "  the logs {} (node F1 {:.2}, edge F1 {:.2}); the replay took {:.0} % of the original's time",
        match &compared.divergence {
            None => "hold the same steps".to_string(),
            Some(d) => format!("part at step {}", d.index + 1),
        },
        compared.node_f1,
        compared.edge_f1,
        100.0 * replay_time.as_secs_f64() / original_time.as_secs_f64()
    );
    assert_eq!(original_pages, STEPS, "the original reads every page");
    assert_eq!(replay_pages, 0, "the replay reads none");
    assert_eq!(compared.b.totals.replayed_calls as usize, STEPS);
    assert_eq!(replay_calls, original_calls, "the same model calls");
}
