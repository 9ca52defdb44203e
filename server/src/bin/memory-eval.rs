//! Measures whether planboard's agent follows what people taught it on
//! *other* tasks: each case's lesson is planted as the correction a person
//! made on an earlier, similar task (a rejection's comment), then a new
//! task is planned twice through the API, without memory (`memory:
//! false`) and with it, and the proposed plan is checked for the lesson.
//!
//! ```text
//! cargo run -p server --release --bin memory-eval -- [--fake] [--only NAME]... [--limit SECS] [--cases FILE]
//! ```
//!
//! The server runs in this process on a port of its own with a fresh
//! SQLite file, configured from the environment as `planboard` reads it;
//! without `PLANBOARD_LLM_MODEL` the default local model
//! (`scripts/local-model.sh` on port 8091) is asked. Every case's
//! correction is planted before the first run, so each task recalls among
//! the lessons of ten unrelated tasks too. A run is started with approval
//! required and read once its plan awaits approval (then cancelled, and
//! the memories it left are forgotten, so no run teaches the next).
//!
//! Scoring, automatic: the plan *follows* the lesson when a subtask's
//! name, description or expected outcome names one of the case's
//! `follow` words (case-insensitive). A run that proposes no plan within
//! the limit (default 300 s) counts as not following.
//!
//! `--fake` puts a model in place that plans one subtask per correction
//! it is shown and nothing else: it follows every lesson it reads and no
//! other, so the rates are 0 % without memory and 100 % with it exactly
//! when recall brings each task its lesson (a check of the plumbing, not
//! of a model).
//!
//! # Layout
//! - `Case`: the cases' shape (`server/eval/memory.json`); `follows`.
//! - `plant`: the corrections, straight into the store.
//! - `plan_of`: one task through the API; `main`: the table and the rates.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use eval_server::get_json;
use run_model::memory::{MemoryKind, NewMemory};
use serde::Deserialize;
use serde_json::{json, Value};
use server::memories::MemoryStore;
use server::store::SqlStore;

#[path = "eval_server/mod.rs"]
mod eval_server;

#[derive(Deserialize)]
struct Taught {
    task: String,
    lesson: String,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    /// The other task, and what a person said when rejecting its plan.
    taught: Taught,
    /// The new task.
    task: String,
    /// Words that show the plan follows the lesson.
    follow: Vec<String>,
}

/// Whether the plan's subtasks name one of `words`; the word found.
fn follows(plan: &Value, words: &[String]) -> Option<String> {
    let text = plan["subtasks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            format!(
                "{} {} {}",
                s["name"].as_str().unwrap_or_default(),
                s["description"].as_str().unwrap_or_default(),
                s["expected_outcome"].as_str().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
        .to_lowercase();
    words
        .iter()
        .find(|w| text.contains(&w.to_lowercase()))
        .cloned()
}

/// The correction a person's rejection leaves, as the agent words it.
fn correction(case: &Case) -> NewMemory {
    let task = &case.taught.task;
    NewMemory {
        kind: MemoryKind::Correction,
        task: task.clone(),
        text: format!(
            "For the task «{task}», a person rejected the plan (do the task) with: {}",
            case.taught.lesson
        ),
        run_id: None,
        plan_id: None,
    }
}

/// A model that plans one subtask per correction in its prompt (quoting
/// it), or a single plain step when it reads none.
async fn fake_model() -> String {
    eval_server::serve_model(|body: Value| async move {
        let prompt = body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["content"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let content = match eval_server::schema_name(&body) {
            "mode" => json!({"confidence": 1.0, "mode": "simple", "reason": "fake"}),
            "plan" => {
                let mut steps: Vec<Value> = prompt
                    .lines()
                    .filter_map(|l| l.strip_prefix("- Correction: "))
                    .map(|lesson| {
                        let said = lesson.rsplit(" with: ").next().unwrap_or(lesson);
                        json!({"name": "Follow what the team taught", "description": said,
                               "expected_outcome": "done", "depends_on": []})
                    })
                    .collect();
                steps.push(json!({"name": "Do the task", "description": "Do the task.",
                                  "expected_outcome": "done", "depends_on": []}));
                json!({"title": "Do it", "subtasks": steps})
            }
            _ => json!({}),
        };
        content.to_string()
    })
    .await
}

/// The real server on a port of its own (`eval_server`'s, with hybrid
/// recall only when asked for: the measure is of the default, full-text
/// recall): its base URL, and its store.
async fn start_server(dir: &Path, model_url: Option<String>) -> Result<(String, SqlStore), String> {
    let (url, database) = eval_server::start(dir, model_url, |name| {
        (name == "PLANBOARD_EMBEDDING_MODEL")
            .then(|| std::env::var("MEMORY_EVAL_EMBEDDING_MODEL").ok())
    })
    .await?;
    // The same database, for planting and forgetting memories.
    let store = SqlStore::connect(&database)
        .await
        .map_err(|e| e.to_string())?;
    Ok((url, store))
}

/// `task` planned through the API (with or without memory): the proposed
/// plan, or why there is none; then the run is cancelled and what it left
/// in memory forgotten.
async fn plan_of(
    http: &reqwest::Client,
    base: &str,
    store: &SqlStore,
    task: &str,
    memory: bool,
    limit: Duration,
) -> Result<Result<Value, String>, String> {
    let body = json!({"task": task, "approval_required": true, "memory": memory});
    let response = http
        .post(format!("{base}/api/runs"))
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let view: Value = response.json().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("POST /api/runs answered {status}: {view}"));
    }
    let id = view["id"].as_str().unwrap_or_default().to_string();
    let started = Instant::now();
    let view = loop {
        let view = get_json(http, &format!("{base}/api/runs/{id}")).await?;
        let state = view["state"].as_str().unwrap_or_default();
        if [
            "awaiting_approval",
            "running",
            "done",
            "failed",
            "cancelled",
        ]
        .contains(&state)
            || started.elapsed() > limit
        {
            break view;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let state = view["state"].as_str().unwrap_or_default().to_string();
    let plan = match view["plan_id"].as_str() {
        Some(plan) if state == "awaiting_approval" => {
            let plan = get_json(http, &format!("{base}/api/plans/{plan}")).await?;
            Ok(plan["plan"].clone())
        }
        _ => Err(format!(
            "no plan to approve ({state} after {:.0} s): {}",
            started.elapsed().as_secs_f64(),
            view["reason"].as_str().unwrap_or_default()
        )),
    };
    let _ = http
        .post(format!("{base}/api/runs/{id}/cancel"))
        .json(&json!({}))
        .send()
        .await;
    // The cancelled run's summary (with its plan) must not teach the next.
    for _ in 0..40 {
        let view = get_json(http, &format!("{base}/api/runs/{id}")).await?;
        if view["state"] == "cancelled" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let left = store
        .memories(None, 0, 200)
        .await
        .map_err(|e| e.to_string())?;
    for m in left.iter().filter(|m| m.run_id.is_some()) {
        store.forget(m.id).await.map_err(|e| e.to_string())?;
    }
    Ok(plan)
}

fn steps(plan: &Value) -> String {
    plan["subtasks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["name"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join(" → ")
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let mut fake = false;
    let mut only = Vec::new();
    let mut limit = Duration::from_secs(300);
    let mut cases_file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("eval/memory.json");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--fake" => fake = true,
            "--only" => only.push(args.next().ok_or("--only takes a case name")?),
            "--limit" => {
                let secs = args.next().ok_or("--limit takes seconds")?;
                limit = Duration::from_secs(secs.parse().map_err(|_| "--limit takes seconds")?);
            }
            "--cases" => cases_file = PathBuf::from(args.next().ok_or("--cases takes a file")?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let cases: Vec<Case> = serde_json::from_str(
        &std::fs::read_to_string(&cases_file)
            .map_err(|e| format!("{}: {e}", cases_file.display()))?,
    )
    .map_err(|e| format!("{}: {e}", cases_file.display()))?;
    let dir = std::env::temp_dir().join(format!("planboard-memory-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let model = if fake { Some(fake_model().await) } else { None };
    let (base, store) = start_server(&dir, model).await?;
    // Every case's lesson, as another task's correction.
    let planted: Vec<NewMemory> = cases.iter().map(correction).collect();
    store.remember(&planted).await.map_err(|e| e.to_string())?;
    let chosen: Vec<&Case> = cases
        .iter()
        .filter(|c| only.is_empty() || only.contains(&c.name))
        .collect();
    let http = reqwest::Client::new();
    let started = Instant::now();
    let (mut without, mut with) = (0usize, 0usize);
    for case in &chosen {
        let mut marks = Vec::new();
        for memory in [false, true] {
            let plan = plan_of(&http, &base, &store, &case.task, memory, limit).await?;
            let (mark, shown) = match &plan {
                Ok(plan) => match follows(plan, &case.follow) {
                    Some(word) => {
                        if memory {
                            with += 1;
                        } else {
                            without += 1;
                        }
                        (format!("follows ({word})"), steps(plan))
                    }
                    None => ("does not".to_string(), steps(plan)),
                },
                Err(why) => ("no plan".to_string(), why.clone()),
            };
            marks.push(format!(
                "    {:<8} {mark:<22} {}",
                if memory { "with" } else { "without" },
                plan_engine::text::prefix(&shown, 200)
            ));
        }
        println!("{}", case.name);
        for m in marks {
            println!("{m}");
        }
    }
    let n = chosen.len().max(1) as f64;
    println!(
        "\nthe next plan follows another task's correction: without memory {without}/{} ({:.0} %), with memory {with}/{} ({:.0} %); {:.0} s",
        chosen.len(),
        100.0 * without as f64 / n,
        chosen.len(),
        100.0 * with as f64 / n,
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_follows_when_a_step_names_a_word_of_the_lesson() {
        let plan = json!({"subtasks": [
            {"name": "Back up the database", "description": "dump it", "expected_outcome": ""},
            {"name": "Migrate", "description": "run the scripts", "expected_outcome": "a BACKUP exists"}
        ]});
        let words = vec!["backup".to_string(), "back up".to_string()];
        assert_eq!(follows(&plan, &words).as_deref(), Some("backup"));
        let other =
            json!({"subtasks": [{"name": "Migrate", "description": "go", "expected_outcome": ""}]});
        assert_eq!(follows(&other, &words), None);
        assert_eq!(follows(&json!({}), &words), None);
    }

    #[test]
    fn the_cases_parse_and_each_lesson_names_a_word_it_is_scored_by() {
        let text = include_str!("../../eval/memory.json");
        let cases: Vec<Case> = serde_json::from_str(text).unwrap();
        assert!(cases.len() >= 10);
        for case in &cases {
            let lesson = case.taught.lesson.to_lowercase();
            assert!(
                case.follow
                    .iter()
                    .any(|w| lesson.contains(&w.to_lowercase())),
                "{}: a plan that quotes the lesson follows it",
                case.name
            );
            assert_ne!(case.taught.task, case.task, "{}: another task", case.name);
        }
    }
}
