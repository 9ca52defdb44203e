//! Measures planboard's agent on real tasks with verifiable answers, end to
//! end through the API, the way a person starts them: the task's files
//! uploaded with `POST /api/runs`, approval off, memory off (no task learns
//! from another), then `GET /api/runs/{id}` until the run ends.
//!
//! ```text
//! cargo run -p server --release --bin task-eval -- [--fake] [--only NAME]... [--limit SECS] [--tasks FILE] [--keep]
//! ```
//!
//! The server runs in this process on a port of its own, with a fresh
//! SQLite file and workspace folder (removed at the end; `--keep` keeps
//! them and prints where, so each model call's transcript can be read), and the rest of its configuration
//! from the environment as `planboard` reads it (`PLANBOARD_LLM_*`,
//! `PLANBOARD_PYTHON_PACKAGES`, …). Without `PLANBOARD_LLM_MODEL` the
//! default local model (`scripts/local-model.sh` on port 8091) is asked.
//! `--fake` puts a model in place that answers every schema validly and
//! does no work (one subtask, "complete: done", "done"): the scorer must
//! give it nothing.
//!
//! The tasks (`server/eval/tasks.json`, files in `server/eval/files/`) are
//! questions only a tool answers reliably. Scoring, automatic:
//! - `number`: the first number of the answer that is not already in the
//!   task (so a year or a count the question names is skipped) must equal
//!   it, within `tolerance`: the answer must say the result first and not
//!   hedge between two;
//! - `word`: the answer names it and none of `not`;
//! - `file`: the run's workspace holds the file with exactly `lines`.
//!
//! A run that is not done within the limit (default 300 s) is cancelled and
//! counts as wrong, as does one that fails or waits for a person.
//!
//! # Layout
//! - `Task`, `Expect`: the task file's shape; `score`: the verdicts.
//! - `fake_model`: the idle model (the server under test is `eval_server`'s,
//!   shared with `memory-eval`).
//! - `run_task`: one task through the API; `main`: the table and the rate.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use eval_server::get_json;
use serde::Deserialize;
use serde_json::{json, Value};

#[path = "eval_server/mod.rs"]
mod eval_server;

#[derive(Deserialize)]
struct Task {
    name: String,
    task: String,
    #[serde(default)]
    files: Vec<String>,
    expect: Expect,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Expect {
    Number {
        number: f64,
        #[serde(default)]
        tolerance: f64,
    },
    Word {
        word: String,
        #[serde(default)]
        not: Vec<String>,
    },
    File {
        file: String,
        lines: Vec<String>,
    },
}

/// The numbers in `text`, in order, read as the agent reads a model's
/// numbers ([`agent::grounded::numbers`]).
fn numbers(text: &str) -> Vec<f64> {
    agent::grounded::numbers(text)
        .into_iter()
        .map(|n| n.value)
        .collect()
}

/// Whether the answer (or the workspace file) is right, and if not, why.
fn score(task: &Task, answer: &str, file: Option<&str>) -> Result<(), String> {
    match &task.expect {
        Expect::Number { number, tolerance } => {
            let given = numbers(&task.task);
            let first = numbers(answer)
                .into_iter()
                .find(|n| !given.iter().any(|g| (g - n).abs() < 1e-9));
            match first {
                Some(n) if (n - number).abs() <= tolerance.max(1e-9) => Ok(()),
                Some(n) => Err(format!("first number {n}, expected {number}")),
                None => Err(format!("no number; expected {number}")),
            }
        }
        Expect::Word { word, not } => {
            let lower = answer.to_lowercase();
            if !lower.contains(&word.to_lowercase()) {
                return Err(format!("does not name {word}"));
            }
            match not.iter().find(|w| lower.contains(&w.to_lowercase())) {
                Some(w) => Err(format!("also names {w}")),
                None => Ok(()),
            }
        }
        Expect::File { file: name, lines } => {
            let Some(text) = file else {
                return Err(format!("no {name} in the workspace"));
            };
            let got: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            if got == lines.iter().map(String::as_str).collect::<Vec<_>>() {
                Ok(())
            } else {
                Err(format!("{name} holds {got:?}"))
            }
        }
    }
}

/// A model that answers every schema validly and does nothing.
async fn fake_model() -> String {
    eval_server::serve_model(|body: Value| async move {
        match eval_server::schema_name(&body) {
            "mode" => json!({"confidence": 1.0, "mode": "simple", "reason": "fake"}).to_string(),
            "plan" => json!({"title": "Do it", "subtasks": [
                {"name": "Do the task", "description": "Do the task.", "expected_outcome": "done"}
            ]})
            .to_string(),
            "action" => json!({"action": "complete", "result": "done"}).to_string(),
            "" => "done".to_string(),
            other => {
                // Any other schema: the smallest valid answer the agent takes
                // (false flags, empty lists) from its own schema's shape.
                let mut answer = serde_json::Map::new();
                if let Some(props) = body
                    .pointer("/response_format/json_schema/schema/properties")
                    .and_then(Value::as_object)
                {
                    for (key, prop) in props {
                        let v = match prop.get("type").and_then(Value::as_str) {
                            Some("boolean") => json!(false),
                            Some("array") => json!([]),
                            Some("integer") | Some("number") => json!(0),
                            _ => json!(other),
                        };
                        answer.insert(key.clone(), v);
                    }
                }
                Value::Object(answer).to_string()
            }
        }
    })
    .await
}

struct Outcome {
    verdict: Result<(), String>,
    seconds: f64,
    calls: u64,
    answer: String,
    steps: Vec<String>,
}

async fn run_task(
    http: &reqwest::Client,
    base: &str,
    files: &Path,
    task: &Task,
    limit: Duration,
) -> Result<Outcome, String> {
    let run = json!({"task": task.task, "approval_required": false, "memory": false});
    let mut form = reqwest::multipart::Form::new().text("run", run.to_string());
    for name in &task.files {
        let bytes = std::fs::read(files.join(name)).map_err(|e| format!("{name}: {e}"))?;
        form = form.part(
            "files",
            reqwest::multipart::Part::bytes(bytes).file_name(name.clone()),
        );
    }
    let started = Instant::now();
    let response = http
        .post(format!("{base}/api/runs"))
        .multipart(form)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let view: Value = response.json().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("POST /api/runs answered {status}: {view}"));
    }
    let id = view["id"].as_str().unwrap_or_default().to_string();
    let view = loop {
        let view = get_json(http, &format!("{base}/api/runs/{id}")).await?;
        let state = view["state"].as_str().unwrap_or_default();
        if ["done", "failed", "cancelled", "paused"].contains(&state) || started.elapsed() > limit {
            break view;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let seconds = started.elapsed().as_secs_f64();
    let state = view["state"].as_str().unwrap_or_default().to_string();
    if !["done", "failed", "cancelled"].contains(&state.as_str()) {
        let _ = http
            .post(format!("{base}/api/runs/{id}/cancel"))
            .json(&json!({}))
            .send()
            .await;
    }
    let answer = view["answer"].as_str().unwrap_or_default().to_string();
    let mut steps = Vec::new();
    if let Some(plan) = view["plan_id"].as_str() {
        let plan = get_json(http, &format!("{base}/api/plans/{plan}")).await?;
        for s in plan["plan"]["subtasks"].as_array().into_iter().flatten() {
            steps.push(format!(
                "#{} {} [{}] → {}",
                s["id"],
                s["name"].as_str().unwrap_or_default(),
                s["state"].as_str().unwrap_or_default(),
                plan_engine::text::prefix(s["outcome"].as_str().unwrap_or_default(), 160)
                    .replace('\n', " ")
            ));
        }
    }
    // The tool calls, in order: what the model did, for the report.
    let calls = get_json(http, &format!("{base}/api/runs/{id}/events?limit=1000"))
        .await
        .unwrap_or(Value::Null);
    for c in calls
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| &e["entry"])
        .filter(|e| e["kind"] == "tool_call")
    {
        steps.push(format!(
            "  {}({}) {} → {}",
            c["name"].as_str().unwrap_or_default(),
            plan_engine::text::prefix(&c["arguments"].to_string(), 200).replace("\\n", "; "),
            if c["ok"].as_bool() == Some(false) {
                "FAILED"
            } else {
                "ok"
            },
            plan_engine::text::prefix(c["result"].as_str().unwrap_or_default(), 120)
                .replace('\n', " ")
        ));
    }
    let file = match &task.expect {
        Expect::File { file, .. } => {
            let response = http
                .get(format!("{base}/api/runs/{id}/artifacts/{file}"))
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if response.status().is_success() {
                Some(response.text().await.map_err(|e| e.to_string())?)
            } else {
                None
            }
        }
        _ => None,
    };
    let verdict = if state == "done" {
        score(task, &answer, file.as_deref())
    } else if seconds > limit.as_secs_f64() {
        Err(format!("not done within {} s ({state})", limit.as_secs()))
    } else {
        Err(format!(
            "the run ended {state}: {}",
            view["reason"].as_str().unwrap_or_default()
        ))
    };
    Ok(Outcome {
        verdict,
        seconds,
        calls: view["spent"]["llm_calls"].as_u64().unwrap_or(0),
        answer,
        steps,
    })
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let mut fake = false;
    let mut keep = false;
    let mut only = Vec::new();
    let mut limit = Duration::from_secs(300);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("eval");
    let mut tasks_file = root.join("tasks.json");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--fake" => fake = true,
            "--keep" => keep = true,
            "--only" => only.push(args.next().ok_or("--only takes a task name")?),
            "--limit" => {
                let secs = args.next().ok_or("--limit takes seconds")?;
                limit = Duration::from_secs(secs.parse().map_err(|_| "--limit takes seconds")?);
            }
            "--tasks" => tasks_file = PathBuf::from(args.next().ok_or("--tasks takes a file")?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let files = tasks_file
        .parent()
        .map(|p| p.join("files"))
        .unwrap_or_else(|| root.join("files"));
    let tasks: Vec<Task> = serde_json::from_str(
        &std::fs::read_to_string(&tasks_file)
            .map_err(|e| format!("{}: {e}", tasks_file.display()))?,
    )
    .map_err(|e| format!("{}: {e}", tasks_file.display()))?;
    let tasks: Vec<Task> = tasks
        .into_iter()
        .filter(|t| only.is_empty() || only.contains(&t.name))
        .collect();
    // A fresh database and workspace folder for each evaluation.
    let dir = std::env::temp_dir().join(format!("planboard-task-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let model = if fake { Some(fake_model().await) } else { None };
    let base = eval_server::start(&dir, model, |_| None).await?.0;
    let http = reqwest::Client::new();
    let mut right = 0;
    let mut total_seconds = 0.0;
    for task in &tasks {
        let outcome = run_task(&http, &base, &files, task, limit).await?;
        total_seconds += outcome.seconds;
        let mark = match &outcome.verdict {
            Ok(()) => {
                right += 1;
                "right".to_string()
            }
            Err(why) => format!("WRONG: {why}"),
        };
        println!(
            "{:<22} {:>6.1} s {:>3} calls  {mark}",
            task.name, outcome.seconds, outcome.calls
        );
        println!(
            "    answer: {}",
            plan_engine::text::prefix(&outcome.answer, 300).replace('\n', " ⏎ ")
        );
        for step in &outcome.steps {
            println!("    {step}");
        }
    }
    println!(
        "\n{right}/{} right ({:.0} %), {:.0} s in all, {:.0} s per task",
        tasks.len(),
        100.0 * f64::from(right) / (tasks.len().max(1) as f64),
        total_seconds,
        total_seconds / (tasks.len().max(1) as f64)
    );
    if keep {
        println!("kept: {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(text: &str, expect: Expect) -> Task {
        Task {
            name: "t".into(),
            task: text.into(),
            files: Vec::new(),
            expect,
        }
    }

    #[test]
    fn the_first_new_number_decides_and_numbers_of_the_task_are_skipped() {
        let t = task(
            "How many primes are below 10000?",
            Expect::Number {
                number: 1229.0,
                tolerance: 0.0,
            },
        );
        assert!(score(&t, "Below 10,000 there are 1229 primes.", None).is_ok());
        assert!(score(&t, "There are 4 kinds, and 1229 primes.", None).is_err());
        assert!(score(&t, "I cannot tell.", None).is_err());
    }

    #[test]
    fn a_word_answer_must_not_hedge() {
        let t = task(
            "Which product?",
            Expect::Word {
                word: "widget".into(),
                not: vec!["gadget".into()],
            },
        );
        assert!(score(&t, "The widget.", None).is_ok());
        assert!(score(&t, "The widget or the gadget.", None).is_err());
    }
}
