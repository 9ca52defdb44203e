//! Measures planboard's agent on real tasks with answers a program checks,
//! end to end through the API, the way a person starts them: the task's
//! files uploaded with `POST /api/runs`, memory off (no task learns from
//! another), approval off unless a person is to edit the plan first, then
//! `GET /api/runs/{id}` until the run ends.
//!
//! ```text
//! cargo run -p server --release --bin task-eval -- [--set dev|heldout|all] [--category NAME]...
//!     [--only ID]... [--fake] [--limit SECS] [--tasks FILE] [--keep] [--list]
//!     [--at-once N] [--approve] [--memory] [--warm SET]
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
//! give it nothing. `--list` prints the tasks and checks the files
//! without running anything.
//!
//! # The sets
//!
//! Two files in `server/eval/`, each `{set, about, tasks}`:
//! - `dev.json`, the development set: the agent is tuned on these (the
//!   ten tasks of the first evaluation are its first ten);
//! - `heldout.json`, the held-out set: run only to report. No rule or
//!   prompt may name its tasks, and nothing is changed because one of
//!   them failed; written apart from the dev set (other topics, other
//!   wording, other numbers).
//!
//! `--set` picks one (`dev` by default) or `all`; `--category` and
//! `--only` (a task's id) narrow it; `--tasks FILE` reads another file.
//! `--at-once N` starts N tasks together (in order, N in flight): the
//! model queue's test on a real model; each task's time is its own, and
//! the total is printed at the end.
//! `--approve` starts every task with approval required and approves each
//! plan as it is, the way a person who reads and agrees would: the card's
//! forecast is kept on the approval record, and the report adds, per task,
//! the forecast beside what the run spent and, at the end, how often the
//! spend fell inside the forecast (`GET /api/approvals/forecasts`, the
//! number issue 55 asks for on real runs).
//! `--memory` starts every run with memory on, in the evaluation's one
//! database, so each task may recall what the earlier ones left;
//! `--warm SET` (with `--memory` implied) first runs every task of that
//! set, unscored, to leave its memories, then the tasks chosen. The
//! memory comparison issue 53 asks for is `--set heldout` against
//! `--set heldout --warm dev`. Each scored answer is then searched for
//! what only the warm runs held (a file name, a number of three or more
//! characters, in their answers but not in the task or its files) and
//! such borrowings are printed under the task and counted at the end.
//!
//! A task: `id`, `category`, `task` (the text a person types), `files`
//! (names in `server/eval/files/`), `inline` (file name → contents, for
//! files given in the task file itself), `edits` (a person's edits of the
//! plan before approving it, below), `note` (how the expected answer was
//! computed) and `checks`, in the language of `eval_server/checks.rs`
//! (answers, words, lines, tool calls, mode, files read back through
//! `GET /api/runs/{id}/artifacts`; a file must be at the path the check
//! names). Every check must hold; a run that is
//! not done within the limit (default 300 s) is cancelled and counts as
//! wrong, as does one that fails or waits for a person.
//!
//! # Edits before approval
//!
//! A task with `edits` starts with approval required; when its plan waits
//! for approval, each edit is made through the plan API, then the plan is
//! approved (`POST /api/plans/{id}/approve`):
//! - `{"add": {name, description, expected_outcome}}`: a subtask at the
//!   end (`POST /api/plans/{id}/subtasks`);
//! - `{"edit": {"subtask": "first"|"last"|"all"|N, name, description,
//!   expected_outcome, append}}`: `PATCH /api/plans/{id}/subtasks/{sid}`
//!   on the chosen subtasks (N: 1-based position); `append` adds text to
//!   the description;
//! - `{"command": {"op": …}}`: one engine operation through
//!   `POST /api/plans/{id}/commands`; an `"id"` of `"first"` or `"last"`
//!   names that subtask.
//!
//! # What it prints
//!
//! Each task's verdict, time, model calls (`llm_call` entries on the
//! run's log) and tool calls, its answer and plan; then per category:
//! right / total, percent, the median time per task and model calls per
//! task; and the total.
//!
//! # Layout
//! - `SetFile`, `TaskSpec` → `Task`: the files' shape, checked on reading;
//!   `Edit`: a person's change to the plan.
//! - `fake_model`: the idle model (the server under test is `eval_server`'s,
//!   shared with `memory-eval`; the checks are `eval_server/checks.rs`).
//! - `run_task`: one task through the API; `report`: the table;
//!   `borrowed`: what an answer holds of other runs' answers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use checks::{Check, Evidence};
use eval_server::get_json;
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};

#[path = "eval_server/mod.rs"]
mod eval_server;

#[path = "eval_server/checks.rs"]
mod checks;

/// A task file: which set it is, what that means, its tasks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetFile {
    set: String,
    about: String,
    tasks: Vec<TaskSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskSpec {
    id: String,
    category: String,
    task: String,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    inline: BTreeMap<String, String>,
    #[serde(default)]
    edits: Vec<Value>,
    /// How the expected answer was computed; for people only.
    #[serde(default, rename = "note")]
    _note: Option<String>,
    checks: Vec<Value>,
}

/// A task as it is run: its checks and edits read.
struct Task {
    id: String,
    category: String,
    set: String,
    text: String,
    files: Vec<String>,
    inline: BTreeMap<String, String>,
    edits: Vec<Edit>,
    checks: Vec<Check>,
}

/// Which subtasks an edit changes.
#[derive(Clone, Copy, Debug)]
enum Pick {
    First,
    Last,
    All,
    /// 1-based position in the plan.
    At(usize),
}

/// A person's change to the plan before approving it.
enum Edit {
    /// A new subtask (`NewSubtask`'s JSON) at the end.
    Add(Value),
    /// The fields of a `SubtaskPatch`, and text to add to the description.
    Patch {
        pick: Pick,
        patch: serde_json::Map<String, Value>,
        append: Option<String>,
    },
    /// An engine command, whole.
    Command(Value),
}

impl Edit {
    fn parse(v: &Value) -> Result<Edit, String> {
        let obj = v
            .as_object()
            .filter(|o| o.len() == 1)
            .ok_or_else(|| format!("an edit is one of add, edit, command: {v}"))?;
        let (kind, arg) = obj.iter().next().ok_or("an empty edit")?;
        let fields = arg
            .as_object()
            .ok_or_else(|| format!("{kind}: an object, not {arg}"))?;
        match kind.as_str() {
            "add" => {
                if !fields.get("name").is_some_and(Value::is_string) {
                    return Err(format!("add: a subtask with a name: {v}"));
                }
                Ok(Edit::Add(arg.clone()))
            }
            "edit" => {
                let pick = match fields.get("subtask") {
                    Some(Value::String(s)) if s == "first" => Pick::First,
                    Some(Value::String(s)) if s == "last" => Pick::Last,
                    Some(Value::String(s)) if s == "all" => Pick::All,
                    Some(n) => match n.as_u64() {
                        Some(n) if n >= 1 => Pick::At(n as usize),
                        _ => {
                            return Err(format!(
                                "edit: subtask is first, last, all or a position: {v}"
                            ))
                        }
                    },
                    None => return Err(format!("edit: which subtask? {v}")),
                };
                let mut patch = serde_json::Map::new();
                let mut append = None;
                for (key, value) in fields {
                    let Some(text) = value.as_str() else {
                        if key == "subtask" {
                            continue;
                        }
                        return Err(format!("edit: {key} is text: {v}"));
                    };
                    match key.as_str() {
                        "subtask" => {}
                        "append" => append = Some(text.to_string()),
                        "name" | "description" | "expected_outcome" => {
                            patch.insert(key.clone(), Value::String(text.to_string()));
                        }
                        other => return Err(format!("edit: no field {other}: {v}")),
                    }
                }
                if patch.is_empty() && append.is_none() {
                    return Err(format!("edit: nothing to change: {v}"));
                }
                Ok(Edit::Patch {
                    pick,
                    patch,
                    append,
                })
            }
            "command" => {
                if !fields.get("op").is_some_and(Value::is_string) {
                    return Err(format!("command: an engine command with its op: {v}"));
                }
                Ok(Edit::Command(arg.clone()))
            }
            other => Err(format!("no edit is called {other}: {v}")),
        }
    }
}

/// The tasks of a set file, with their checks and edits read (a mistake
/// in the file stops the evaluation before any run).
fn load(path: &Path) -> Result<(SetFile, Vec<Task>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut file: SetFile =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut tasks = Vec::new();
    for spec in std::mem::take(&mut file.tasks) {
        let id = spec.id.clone();
        let mistake = |e: String| format!("{}: task {id}: {e}", path.display());
        if spec.checks.is_empty() {
            return Err(mistake("no checks".into()));
        }
        let checks = spec
            .checks
            .iter()
            .map(Check::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(mistake)?;
        let edits = spec
            .edits
            .iter()
            .map(Edit::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(mistake)?;
        tasks.push(Task {
            id: spec.id,
            category: spec.category,
            set: file.set.clone(),
            text: spec.task,
            files: spec.files,
            inline: spec.inline,
            edits,
            checks,
        });
    }
    Ok((file, tasks))
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
    /// `llm_call` entries on the run's log.
    model_calls: usize,
    tool_calls: usize,
    mode: Option<String>,
    answer: String,
    steps: Vec<String>,
    /// The forecast the plan was approved with, beside what the run spent
    /// (with `--approve`, for a run that was approved).
    forecast: Option<String>,
}

/// One measure's forecast and spend, `calls 3.0 in [2.0, 6.0] inside`.
fn against(name: &str, interval: run_model::card::Interval, spent: f64) -> String {
    format!(
        "{name} {spent:.1} in [{:.1}, {:.1}] {}",
        interval.low,
        interval.high,
        if interval.contains(spent) {
            "inside"
        } else {
            "OUTSIDE"
        }
    )
}

/// The run's approved forecast beside its spend, in one line.
fn forecast_line(view: &Value) -> Option<String> {
    let forecast: run_model::Forecast =
        serde_json::from_value(view.get("forecast")?.clone()).ok()?;
    let spent: run_model::Spent = serde_json::from_value(view["spent"].clone()).ok()?;
    Some(format!(
        "forecast ({}, {} runs): {}; {}; {}",
        forecast.basis.as_str(),
        forecast.runs,
        against("calls", forecast.calls, f64::from(spent.llm_calls)),
        against("tokens", forecast.tokens, spent.tokens() as f64),
        against("minutes", forecast.minutes, spent.wall_ms as f64 / 60_000.0),
    ))
}

/// A request that must succeed: its JSON body, or what it answered.
async fn send_ok(request: reqwest::RequestBuilder, what: &str) -> Result<Value, String> {
    let response = request.send().await.map_err(|e| format!("{what}: {e}"))?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    if status.is_success() {
        Ok(body)
    } else {
        Err(format!("{what} answered {status}: {body}"))
    }
}

/// The plan's subtasks, in order: id and description.
async fn subtasks(
    http: &reqwest::Client,
    base: &str,
    plan: &str,
) -> Result<Vec<(u64, String)>, String> {
    let view = get_json(http, &format!("{base}/api/plans/{plan}")).await?;
    Ok(view["plan"]["subtasks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            Some((
                s["id"].as_u64()?,
                s["description"].as_str().unwrap_or_default().to_string(),
            ))
        })
        .collect())
}

fn picked(pick: Pick, all: &[(u64, String)]) -> Vec<(u64, String)> {
    match pick {
        Pick::First => all.first().cloned().into_iter().collect(),
        Pick::Last => all.last().cloned().into_iter().collect(),
        Pick::All => all.to_vec(),
        Pick::At(n) => all.get(n - 1).cloned().into_iter().collect(),
    }
}

/// Makes a person's edits on the plan that waits for approval; what was
/// done, for the report.
async fn apply_edits(
    http: &reqwest::Client,
    base: &str,
    plan: &str,
    edits: &[Edit],
) -> Result<Vec<String>, String> {
    let mut done = Vec::new();
    for edit in edits {
        let now = subtasks(http, base, plan).await?;
        match edit {
            Edit::Add(subtask) => {
                send_ok(
                    http.post(format!("{base}/api/plans/{plan}/subtasks"))
                        .json(&json!({ "subtask": subtask })),
                    "adding a subtask",
                )
                .await?;
                done.push(format!(
                    "edit: added {}",
                    subtask["name"].as_str().unwrap_or_default()
                ));
            }
            Edit::Patch {
                pick,
                patch,
                append,
            } => {
                let chosen = picked(*pick, &now);
                if chosen.is_empty() {
                    return Err(format!("no subtask {pick:?} among {}", now.len()));
                }
                for (id, description) in chosen {
                    let mut body = patch.clone();
                    if let Some(more) = append {
                        let base_text = patch
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or(&description);
                        body.insert(
                            "description".into(),
                            Value::String(format!("{base_text}{more}")),
                        );
                    }
                    send_ok(
                        http.patch(format!("{base}/api/plans/{plan}/subtasks/{id}"))
                            .json(&Value::Object(body)),
                        "editing a subtask",
                    )
                    .await?;
                    done.push(format!("edit: #{id} changed ({pick:?})"));
                }
            }
            Edit::Command(command) => {
                let mut command = command.clone();
                let named = match command.get("id").and_then(Value::as_str) {
                    Some("first") => now.first().map(|s| s.0),
                    Some("last") => now.last().map(|s| s.0),
                    _ => None,
                };
                if let Some(id) = named {
                    command["id"] = json!(id);
                }
                send_ok(
                    http.post(format!("{base}/api/plans/{plan}/commands"))
                        .json(&command),
                    "a plan command",
                )
                .await?;
                done.push(format!(
                    "edit: command {}",
                    command["op"].as_str().unwrap_or_default()
                ));
            }
        }
    }
    Ok(done)
}

/// Every entry of the run's log, a page at a time.
async fn run_log(http: &reqwest::Client, base: &str, id: &str) -> Vec<Value> {
    const PAGE: usize = 1000;
    let mut entries = Vec::new();
    let mut after = 0;
    for _ in 0..100 {
        let url = format!("{base}/api/runs/{id}/events?after={after}&limit={PAGE}");
        let Ok(value) = get_json(http, &url).await else {
            break;
        };
        let Some(page) = value.as_array() else {
            break;
        };
        if let Some(last) = page.last().and_then(|e| e["seq"].as_i64()) {
            after = last;
        }
        entries.extend(page.iter().cloned());
        if page.len() < PAGE {
            break;
        }
    }
    entries
}

/// The files the checks name that the run's workspace holds at their
/// paths, read back through the API (`GET /api/runs/{id}/artifacts`, then
/// each file's address).
async fn fetch_files(
    http: &reqwest::Client,
    base: &str,
    id: &str,
    task: &Task,
) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut files = BTreeMap::new();
    let wanted: Vec<&str> = task.checks.iter().filter_map(Check::file).collect();
    if wanted.is_empty() {
        return Ok(files);
    }
    let listing = get_json(http, &format!("{base}/api/runs/{id}/artifacts")).await?;
    let listed: Vec<(&str, &str)> = listing
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| Some((a["path"].as_str()?, a["url"].as_str()?)))
        .collect();
    for want in wanted {
        let Some(found) = listed.iter().find(|(path, _)| *path == want) else {
            continue;
        };
        let response = http
            .get(format!("{base}{}", found.1))
            .send()
            .await
            .map_err(|e| format!("{want}: {e}"))?;
        if response.status().is_success() {
            let bytes = response.bytes().await.map_err(|e| format!("{want}: {e}"))?;
            files.insert(want.to_string(), bytes.to_vec());
        }
    }
    Ok(files)
}

async fn run_task(
    http: &reqwest::Client,
    base: &str,
    files: &Path,
    task: &Task,
    limit: Duration,
    approve_all: bool,
    memory: bool,
) -> Result<Outcome, String> {
    let approval = approve_all || !task.edits.is_empty();
    let run = json!({"task": task.text, "approval_required": approval, "memory": memory});
    let mut form = reqwest::multipart::Form::new().text("run", run.to_string());
    for name in &task.files {
        let bytes = std::fs::read(files.join(name)).map_err(|e| format!("{name}: {e}"))?;
        form = form.part(
            "files",
            reqwest::multipart::Part::bytes(bytes).file_name(name.clone()),
        );
    }
    for (name, text) in &task.inline {
        form = form.part(
            "files",
            reqwest::multipart::Part::bytes(text.clone().into_bytes()).file_name(name.clone()),
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
    let mut steps = Vec::new();
    // A person's part: the edits once, then an approval for each round of
    // planning (a plan the run proposes again is approved as it is).
    let mut edited = false;
    let mut approved_round = None;
    let mut trouble = None;
    let view = loop {
        let view = get_json(http, &format!("{base}/api/runs/{id}")).await?;
        let state = view["state"].as_str().unwrap_or_default();
        if ["done", "failed", "cancelled", "paused"].contains(&state) || started.elapsed() > limit {
            break view;
        }
        let round = view["round"].as_u64();
        if approval && state == "awaiting_approval" && approved_round != Some(round) {
            let plan = view["plan_id"].as_str().unwrap_or_default().to_string();
            if !edited {
                edited = true;
                match apply_edits(http, base, &plan, &task.edits).await {
                    Ok(done) => steps.extend(done),
                    Err(e) => {
                        trouble = Some(format!("the edits failed: {e}"));
                        break view;
                    }
                }
            }
            let approve = http
                .post(format!("{base}/api/plans/{plan}/approve"))
                .json(&json!({}));
            if let Err(e) = send_ok(approve, "approving").await {
                trouble = Some(e);
                break view;
            }
            approved_round = Some(round);
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
    let mut mode = view["classification"]["mode"].as_str().map(str::to_string);
    if let Some(plan) = view["plan_id"].as_str() {
        let plan = get_json(http, &format!("{base}/api/plans/{plan}")).await?;
        if mode.is_none() {
            mode = plan["plan"]["mode"].as_str().map(str::to_string);
        }
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
    // The run's log: its model calls counted, its tool calls counted and
    // listed in order (what the model did, for the report).
    let log = run_log(http, base, &id).await;
    let model_calls = log.iter().filter(|e| e["kind"] == "llm_call").count();
    let calls: Vec<&Value> = log
        .iter()
        .filter(|e| e["kind"] == "tool_call")
        .map(|e| &e["entry"])
        .collect();
    for c in &calls {
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
    let verdict = if let Some(trouble) = trouble {
        Err(trouble)
    } else if state == "done" {
        let written = fetch_files(http, base, &id, task).await?;
        let evidence = Evidence {
            task: &task.text,
            answer: &answer,
            tool_calls: calls.len(),
            mode: mode.as_deref(),
            files: &written,
        };
        let wrong: Vec<String> = task
            .checks
            .iter()
            .filter_map(|c| c.judge(&evidence).err())
            .collect();
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(wrong.join("; "))
        }
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
        model_calls,
        tool_calls: calls.len(),
        mode,
        answer,
        steps,
        forecast: forecast_line(&view),
    })
}

/// The middle value (the mean of the two middle ones for an even count).
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// One line of the table: right / total, percent, median seconds per
/// task, model calls per task.
fn row(name: &str, outcomes: &[&Outcome]) -> String {
    let total = outcomes.len().max(1) as f64;
    let right = outcomes.iter().filter(|o| o.verdict.is_ok()).count();
    let seconds: Vec<f64> = outcomes.iter().map(|o| o.seconds).collect();
    let calls: usize = outcomes.iter().map(|o| o.model_calls).sum();
    let fraction = format!("{right}/{}", outcomes.len());
    format!(
        "{name:<18} {fraction:>7} {:>5.0} % {:>10.1} {:>12.1}",
        100.0 * right as f64 / total,
        median(&seconds),
        calls as f64 / total
    )
}

/// The file of the set named `dev` or `heldout`.
fn set_file(root: &Path, name: &str) -> Option<PathBuf> {
    matches!(name, "dev" | "heldout").then(|| root.join(format!("{name}.json")))
}

/// Where the input files named by the tasks of the set file `path` are.
fn files_beside(path: &Path, root: &Path) -> PathBuf {
    path.parent()
        .map(|p| p.join("files"))
        .unwrap_or_else(|| root.join("files"))
}

/// The tokens of a text that would betray where an answer came from: file
/// names (as the agent's grounding reads them, `agent::grounded`) and
/// numbers of three or more characters (`1526`, `4.5`), lowercased. Short
/// numbers are left out: 2, 10 and 31 turn up in any answer. Numbers are
/// split at commas here, unlike `grounded::numbers` (`1,526` is one number
/// there): a task's CSV row `7,4500` holds 4500.
fn telling(text: &str) -> std::collections::BTreeSet<String> {
    let files = agent::grounded::file_names(text)
        .into_iter()
        .map(str::to_string);
    let numbers = text
        .split(|c: char| c.is_whitespace() || ",;:!?()[]{}\"'`*".contains(c))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| {
            w.len() >= 3
                && w.chars().all(|c| c.is_ascii_digit() || c == '.')
                && w.chars().any(|c| c.is_ascii_digit())
        })
        .map(str::to_string);
    files.chain(numbers).map(|t| t.to_lowercase()).collect()
}

/// What an answer holds that only other runs held: telling tokens of the
/// warm runs' answers that are neither in this task's text nor in its
/// files (inline or named, names and contents). A token in both is not proof of a borrowing (two runs
/// may both say 2026), but each is worth a person's look.
fn borrowed(
    answer: &str,
    task: &Task,
    files: &Path,
    others: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    let mut own = telling(&task.text);
    for (name, text) in &task.inline {
        own.extend(telling(name));
        own.extend(telling(text));
    }
    for name in &task.files {
        own.extend(telling(name));
        own.extend(telling(
            &std::fs::read_to_string(files.join(name)).unwrap_or_default(),
        ));
    }
    telling(answer)
        .into_iter()
        .filter(|t| others.contains(t) && !own.contains(t))
        .collect()
}

/// The table: per category (in the order the tasks came), then all.
fn report(results: &[(&Task, Outcome)]) -> String {
    let mut categories: Vec<&str> = Vec::new();
    for (task, _) in results {
        if !categories.contains(&task.category.as_str()) {
            categories.push(&task.category);
        }
    }
    let mut lines = vec![format!(
        "{:<18} {:>7} {:>7} {:>10} {:>12}",
        "category", "right", "", "median s", "calls/task"
    )];
    for category in categories {
        let of: Vec<&Outcome> = results
            .iter()
            .filter(|(t, _)| t.category == category)
            .map(|(_, o)| o)
            .collect();
        lines.push(row(category, &of));
    }
    let all: Vec<&Outcome> = results.iter().map(|(_, o)| o).collect();
    lines.push(row("all", &all));
    lines.join("\n")
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let mut fake = false;
    let mut keep = false;
    let mut list = false;
    let mut only = Vec::new();
    let mut categories = Vec::new();
    let mut set = "dev".to_string();
    let mut limit = Duration::from_secs(300);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("eval");
    let mut tasks_file = None;
    // Tasks started together (the model queue's test on a real model);
    // each task's seconds are still its own, from its start.
    let mut at_once = 1usize;
    let mut approve_all = false;
    let mut memory = false;
    let mut warm: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--fake" => fake = true,
            "--keep" => keep = true,
            "--list" => list = true,
            "--approve" => approve_all = true,
            "--memory" => memory = true,
            "--warm" => {
                warm = Some(args.next().ok_or("--warm takes dev or heldout")?);
                memory = true;
            }
            "--only" | "--id" => only.push(args.next().ok_or("--only takes a task id")?),
            "--category" => categories.push(args.next().ok_or("--category takes a name")?),
            "--set" => set = args.next().ok_or("--set takes dev, heldout or all")?,
            "--limit" => {
                let secs = args.next().ok_or("--limit takes seconds")?;
                limit = Duration::from_secs(secs.parse().map_err(|_| "--limit takes seconds")?);
            }
            "--at-once" => {
                let n = args.next().ok_or("--at-once takes a count")?;
                at_once = n
                    .parse()
                    .ok()
                    .filter(|n| (1..=32).contains(n))
                    .ok_or("--at-once takes a count from 1 to 32")?;
            }
            "--tasks" => {
                tasks_file = Some(PathBuf::from(args.next().ok_or("--tasks takes a file")?))
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let paths = match (&tasks_file, set.as_str()) {
        (Some(file), _) => vec![file.clone()],
        (None, "all") => vec![root.join("dev.json"), root.join("heldout.json")],
        (None, name) => vec![set_file(&root, name)
            .ok_or_else(|| format!("--set is dev, heldout or all, not {name}"))?],
    };
    let warm_path = match warm.as_deref() {
        None => None,
        Some(name) => Some(
            set_file(&root, name).ok_or_else(|| format!("--warm is dev or heldout, not {name}"))?,
        ),
    };
    if warm_path.as_ref().is_some_and(|w| paths.contains(w)) {
        return Err("--warm names a set being scored".into());
    }
    let mut tasks = Vec::new();
    for path in &paths {
        let (file, loaded) = load(path)?;
        println!("{} ({} tasks): {}", file.set, loaded.len(), file.about);
        let files = files_beside(path, &root);
        tasks.extend(loaded.into_iter().map(|t| (t, files.clone())));
    }
    let tasks: Vec<(Task, PathBuf)> = tasks
        .into_iter()
        .filter(|(t, _)| only.is_empty() || only.contains(&t.id))
        .filter(|(t, _)| categories.is_empty() || categories.contains(&t.category))
        .collect();
    if tasks.is_empty() {
        return Err("no task matches --only and --category".into());
    }
    if list {
        for (t, _) in &tasks {
            println!(
                "{:<8} {:<18} {:<28} {} checks{}",
                t.set,
                t.category,
                t.id,
                t.checks.len(),
                if t.edits.is_empty() {
                    String::new()
                } else {
                    format!(", {} edits before approval", t.edits.len())
                }
            );
        }
        return Ok(());
    }
    // Without the data stack the code runner's pandas and matplotlib
    // fail to import, and the files-out scores measure that, not the agent.
    if !fake && std::env::var_os("PLANBOARD_PYTHON_PACKAGES").is_none() {
        println!(
            "warning: PLANBOARD_PYTHON_PACKAGES is unset, so the code runner has no pandas, \
             numpy or matplotlib (`source scripts/setup.sh && ensure_pydata` sets it)"
        );
    }
    // A fresh database and workspace folder for each evaluation.
    let dir = std::env::temp_dir().join(format!("planboard-task-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let model = if fake { Some(fake_model().await) } else { None };
    let base = eval_server::start(&dir, model, |_| None).await?.0;
    let http = reqwest::Client::new();
    // The warm set's runs, one at a time, to leave their memories.
    let mut others = std::collections::BTreeSet::new();
    if let Some(path) = &warm_path {
        let (file, loaded) = load(path)?;
        let files = files_beside(path, &root);
        println!(
            "warming with {} ({} tasks, unscored, memory on)",
            file.set,
            loaded.len()
        );
        for task in &loaded {
            let outcome = run_task(&http, &base, &files, task, limit, false, true).await?;
            println!(
                "  warm {:<28} {:>6.1} s {}",
                task.id,
                outcome.seconds,
                if outcome.verdict.is_ok() {
                    "right"
                } else {
                    "wrong"
                }
            );
            others.extend(telling(&outcome.answer));
        }
    }
    let mut results = Vec::new();
    let mut borrowings = 0usize;
    let started = Instant::now();
    // In the tasks' order, `at_once` of them in flight.
    let mut outcomes = futures_util::stream::iter(
        tasks
            .iter()
            .map(|(task, files)| run_task(&http, &base, files, task, limit, approve_all, memory)),
    )
    .buffered(at_once);
    for (task, files) in &tasks {
        let outcome = outcomes
            .next()
            .await
            .ok_or("a task's outcome went missing")??;
        let mark = match &outcome.verdict {
            Ok(()) => "right".to_string(),
            Err(why) => format!("WRONG: {why}"),
        };
        println!(
            "{:<28} {:<16} {:>6.1} s {:>3} model calls {:>3} tool calls {:<8}  {mark}",
            task.id,
            task.category,
            outcome.seconds,
            outcome.model_calls,
            outcome.tool_calls,
            outcome.mode.as_deref().unwrap_or("-"),
        );
        println!(
            "    answer: {}",
            plan_engine::text::prefix(&outcome.answer, 300).replace('\n', " ⏎ ")
        );
        if let Some(line) = &outcome.forecast {
            println!("    {line}");
        }
        for step in &outcome.steps {
            println!("    {step}");
        }
        let taken = borrowed(&outcome.answer, task, files, &others);
        if !taken.is_empty() {
            borrowings += 1;
            println!(
                "    held by the warm runs, not by this task: {}",
                taken.join(", ")
            );
        }
        results.push((task, outcome));
    }
    drop(outcomes);
    println!("\n{}", report(&results));
    if warm_path.is_some() {
        println!(
            "answers holding what only the warm runs held: {borrowings} of {}",
            results.len()
        );
    }
    if at_once > 1 {
        println!(
            "{} tasks, {at_once} at a time: {:.0} s in all",
            results.len(),
            started.elapsed().as_secs_f64()
        );
    }
    if approve_all {
        let accuracy = get_json(&http, &format!("{base}/api/approvals/forecasts")).await?;
        println!("forecasts: of {} finished runs approved with one, the share whose spend fell inside the interval: {accuracy}", accuracy["runs"]);
    }
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

    fn set(name: &str) -> (SetFile, Vec<Task>) {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("eval");
        load(&root.join(name)).unwrap()
    }

    /// Both sets read, each with its files at hand; the held-out set says
    /// what it is; no task is in both; eight categories in each.
    #[test]
    fn the_two_sets_read_and_keep_apart() {
        let (dev_file, dev) = set("dev.json");
        let (held_file, held) = set("heldout.json");
        assert_eq!(dev_file.set, "dev");
        assert_eq!(held_file.set, "heldout");
        assert!(held_file.about.starts_with("held out: run only to report"));
        assert!(held.len() >= 30, "{} held-out tasks", held.len());
        assert!(dev.len() + held.len() >= 60);
        let files = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("eval/files");
        let mut ids = std::collections::BTreeSet::new();
        for task in dev.iter().chain(&held) {
            assert!(ids.insert(task.id.clone()), "{} twice", task.id);
            for name in &task.files {
                assert!(files.join(name).is_file(), "{}: no {name}", task.id);
            }
        }
        for tasks in [&dev, &held] {
            let categories: std::collections::BTreeSet<&str> =
                tasks.iter().map(|t| t.category.as_str()).collect();
            assert_eq!(categories.len(), 8, "{categories:?}");
        }
        let first: Vec<&str> = dev.iter().take(10).map(|t| t.id.as_str()).collect();
        assert!(first.contains(&"sales-north-march") && first.contains(&"sorted-words"));
    }

    /// The fake model's run (the answer "done", no tool call, planned
    /// simple, no file written) is right on no task.
    #[test]
    fn an_idle_run_is_right_on_no_task() {
        let none = BTreeMap::new();
        for task in set("dev.json").1.iter().chain(&set("heldout.json").1) {
            let evidence = Evidence {
                task: &task.text,
                answer: "done",
                tool_calls: 0,
                mode: Some("simple"),
                files: &none,
            };
            assert!(
                task.checks.iter().any(|c| c.judge(&evidence).is_err()),
                "{} passes doing nothing",
                task.id
            );
        }
    }

    /// A file name and a long number that only a warm run's answer held
    /// count as borrowed; the task's own words, its files' contents and
    /// short numbers do not.
    #[test]
    fn an_answer_borrowing_another_runs_file_or_number_is_caught_and_its_own_are_not() {
        let task = Task {
            id: "t".into(),
            category: "writing".into(),
            set: "heldout".into(),
            text: "Write a haiku about plans in notes.txt for 2031".into(),
            files: Vec::new(),
            inline: BTreeMap::from([("data.csv".to_string(), "a,b\n7,4500\n".to_string())]),
            edits: Vec::new(),
            checks: Vec::new(),
        };
        let others = telling(
            "Wrote run/artifacts/west.xlsx (42 bytes); total 1526.5; notes.txt; 4500 and 2031",
        );
        let answer =
            "Saved to run/artifacts/west.xlsx. Total 1526.5, 42 lines, 4500, in notes.txt, 2031.";
        let taken = borrowed(answer, &task, Path::new("/nonexistent"), &others);
        assert_eq!(
            taken,
            vec!["1526.5".to_string(), "run/artifacts/west.xlsx".to_string()]
        );
        assert!(borrowed(
            answer,
            &task,
            Path::new("/nonexistent"),
            &Default::default()
        )
        .is_empty());
    }

    #[test]
    fn edits_name_their_subtasks_and_fields() {
        assert!(Edit::parse(&json!({"edit": {"subtask": "last", "append": " more"}})).is_ok());
        assert!(Edit::parse(&json!({"edit": {"subtask": 2, "description": "x"}})).is_ok());
        assert!(Edit::parse(&json!({"edit": {"subtask": 0, "description": "x"}})).is_err());
        assert!(Edit::parse(&json!({"edit": {"subtask": "last"}})).is_err());
        assert!(Edit::parse(&json!({"edit": {"subtask": "last", "notes": "x"}})).is_err());
        assert!(Edit::parse(&json!({"add": {"description": "no name"}})).is_err());
        assert!(Edit::parse(&json!({"command": {"op": "add_subtask"}})).is_ok());
        assert!(Edit::parse(&json!({"add": {"name": "a"}, "edit": {}})).is_err());
        let all = vec![(3, "a".to_string()), (5, "b".to_string())];
        assert_eq!(picked(Pick::Last, &all), vec![(5u64, "b".to_string())]);
        assert!(picked(Pick::At(3), &all).is_empty());
        assert_eq!(picked(Pick::All, &all).len(), 2);
    }

    /// The forecast line marks each measure inside (edges included) or
    /// outside its interval, and a run approved with no forecast has none.
    #[test]
    fn a_forecast_line_marks_each_measure_inside_or_outside() {
        let view = json!({
            "forecast": {
                "basis": "plan_size", "runs": 0,
                "calls": {"low": 2.0, "high": 6.0},
                "tokens": {"low": 1000.0, "high": 3000.0},
                "minutes": {"low": 0.5, "high": 2.0},
                "over_budget": [], "fits_budget": true
            },
            "spent": {"llm_calls": 6, "prompt_tokens": 3000, "completion_tokens": 1, "wall_ms": 20000}
        });
        let line = forecast_line(&view).unwrap();
        assert!(line.contains("calls 6.0 in [2.0, 6.0] inside"), "{line}");
        assert!(
            line.contains("tokens 3001.0 in [1000.0, 3000.0] OUTSIDE"),
            "{line}"
        );
        assert!(line.contains("minutes 0.3 in [0.5, 2.0] OUTSIDE"), "{line}");
        assert!(forecast_line(&json!({"forecast": null, "spent": {}})).is_none());
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert!((median(&[4.0, 1.0, 3.0]) - 3.0).abs() < 1e-12);
        assert!((median(&[4.0, 1.0, 3.0, 2.0]) - 2.5).abs() < 1e-12);
        assert!(median(&[]).abs() < 1e-12);
    }
}
