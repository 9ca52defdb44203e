//! Seed 000's PlanManager tools: camelCase names, tasks addressed by id,
//! statuses pending / in_progress / completed / failed / skipped (+ blocked),
//! JSON replies (`{"success": true, ...}`), and a derived `currentTaskID`.
//!
//! Differences from the seed, all deliberate:
//! - `currentTaskID` is derived: the one task in progress. With several in
//!   progress, `completeCurrentTask` / `failCurrentTask` take an explicit
//!   `task_id` instead of guessing.
//! - `startNextTask` accepts a task whose dependencies are completed *or
//!   skipped* (the seed only counts completed, which strands the plan after
//!   a skip).
//! - `addTask` rewires only dependents that have not started yet.
//! - `createPlan`, `getPlan`, `getTask` and `finishPlan` are added, so the
//!   dialect can run a plan from start to end on its own.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::lenient::{Int, Ints, List};
use super::{subtask_id, Reply, Session, ToolError};
use crate::command::{Op, Position, SubtaskPatch};
use crate::error::PlanError;
use crate::model::{NewPlan, NewSubtask, Plan, PlanState, Subtask, SubtaskId, SubtaskState};

/// A task to put in a new plan.
#[derive(Deserialize, JsonSchema)]
struct TaskSpec {
    /// A short description of what to do.
    name: String,
    /// Ids of tasks in this list (numbered 1, 2, 3… in order) that must be completed first.
    #[serde(default)]
    dependencies: Ints,
    /// Why the task is needed.
    #[serde(default)]
    reasoning: String,
}

/// Create a plan for an overall goal as a list of tasks; it becomes the current plan.
#[derive(Deserialize, JsonSchema)]
struct CreatePlan {
    /// The user's final, highest-level goal.
    #[serde(rename = "overallGoal")]
    overall_goal: String,
    /// A short title; defaults to the goal.
    #[serde(default)]
    title: Option<String>,
    /// The tasks, in order; their ids will be 1, 2, 3…
    tasks: List<TaskSpec>,
}

/// Get the whole current plan: overallGoal, currentTaskID and every task.
#[derive(Deserialize, JsonSchema)]
struct GetPlan {}

/// Get one task by id.
#[derive(Deserialize, JsonSchema)]
struct GetTask {
    task_id: Int,
}

/// Find the first pending task whose dependencies are all completed (or skipped), mark it in_progress and return it.
#[derive(Deserialize, JsonSchema)]
struct StartNextTask {}

/// Mark the current in-progress task as completed and record its result.
#[derive(Deserialize, JsonSchema)]
struct CompleteCurrentTask {
    /// What the task achieved; stored as the task's result.
    result_message: String,
    /// Only needed when several tasks are in progress.
    #[serde(default)]
    task_id: Option<Int>,
}

/// Mark the current in-progress task as failed and record why.
#[derive(Deserialize, JsonSchema)]
struct FailCurrentTask {
    /// Why the task failed; stored as the task's result.
    error_message: String,
    /// Only needed when several tasks are in progress.
    #[serde(default)]
    task_id: Option<Int>,
}

/// Skip a task and record why.
#[derive(Deserialize, JsonSchema)]
struct SkipTask {
    task_id: Int,
    reason: String,
}

/// Insert a new task after another one, e.g. to handle a popup or a captcha. Tasks that depended on after_task_id (and have not started) will depend on the new task instead.
#[derive(Deserialize, JsonSchema)]
struct AddTask {
    /// The new task's name.
    name: String,
    /// Ids of the tasks the new task depends on.
    #[serde(default)]
    dependencies: Ints,
    /// Why the task is needed.
    #[serde(default)]
    reasoning: String,
    /// Insert the new task after this task id.
    after_task_id: Int,
}

/// Modify a task that has not started yet (pending or blocked).
#[derive(Deserialize, JsonSchema)]
struct ModifyTask {
    task_id: Int,
    #[serde(default)]
    new_name: Option<String>,
    #[serde(default)]
    new_dependencies: Option<Ints>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum FinishStatus {
    Completed,
    Failed,
    Abandoned,
}

/// End the current plan as completed (every task completed or skipped), failed, or abandoned.
#[derive(Deserialize, JsonSchema)]
struct FinishPlan {
    status: FinishStatus,
    /// The overall result, or why the plan failed or was abandoned.
    summary: String,
}

toolset! {
    /// A call to one of the dialect's tools, its arguments parsed.
    Call {
        "createPlan" => CreatePlan(CreatePlan),
        "getPlan" => GetPlan(GetPlan),
        "getTask" => GetTask(GetTask),
        "startNextTask" => StartNextTask(StartNextTask),
        "completeCurrentTask" => CompleteCurrentTask(CompleteCurrentTask),
        "failCurrentTask" => FailCurrentTask(FailCurrentTask),
        "skipTask" => SkipTask(SkipTask),
        "addTask" => AddTask(AddTask),
        "modifyTask" => ModifyTask(ModifyTask),
        "finishPlan" => FinishPlan(FinishPlan),
    }
}

pub(crate) fn call(s: &mut Session<'_>, tool: &str, raw: &Value) -> Result<Reply, ToolError> {
    match Call::parse(tool, raw)? {
        Call::CreatePlan(a) => {
            let tasks = a
                .tasks
                .0
                .into_iter()
                .map(|t| NewSubtask {
                    name: t.name,
                    reasoning: t.reasoning,
                    dependencies: t.dependencies.0.into_iter().map(subtask_id).collect(),
                    ..NewSubtask::default()
                })
                .collect();
            let spec = NewPlan {
                id: s.ctx.new_plan_id,
                title: a.title.unwrap_or_else(|| a.overall_goal.clone()),
                goal: a.overall_goal,
                subtasks: tasks,
                ..NewPlan::default()
            };
            let (id, events) = s.create(spec)?;
            let plan = plan_json(s.plan(id)?);
            Ok(Reply::text(json!({ "success": true, "plan": plan }).to_string()).on(id, events))
        }
        Call::GetPlan(_) => Ok(Reply::text(plan_json(s.current()?).to_string())),
        Call::GetTask(a) => {
            let plan = s.current()?;
            let task = task(plan, subtask_id(a.task_id.0))?;
            Ok(Reply::text(
                json!({ "success": true, "task": task_json(task) }).to_string(),
            ))
        }
        Call::StartNextTask(_) => {
            let id = s.current_id()?;
            let events = match s.exec(id, vec![Op::StartNext { count: 1 }]) {
                Ok(events) => events,
                Err(ToolError::Plan(PlanError::NothingReady(message))) => {
                    let text = format!("All tasks are completed or blocked: {message}.");
                    return Ok(Reply::text(
                        json!({ "success": false, "message": text }).to_string(),
                    ));
                }
                Err(e) => return Err(e),
            };
            let plan = s.plan(id)?;
            let started = plan.in_progress();
            let task = started.last().and_then(|t| plan.subtask(*t)).map(task_json);
            Ok(Reply::text(json!({ "success": true, "task": task }).to_string()).on(id, events))
        }
        Call::CompleteCurrentTask(a) => finish_current(
            s,
            a.task_id,
            SubtaskState::Done,
            a.result_message,
            "completed",
        ),
        Call::FailCurrentTask(a) => finish_current(
            s,
            a.task_id,
            SubtaskState::Failed,
            a.error_message,
            "failed",
        ),
        Call::SkipTask(a) => {
            let id = s.current_id()?;
            let task = subtask_id(a.task_id.0);
            if s.already_in(id, task, SubtaskState::Skipped) {
                let message = format!("Task {task} already was skipped; nothing changed.");
                return Ok(Reply::text(
                    json!({ "success": true, "message": message }).to_string(),
                ));
            }
            let events = s.exec(id, vec![set(task, SubtaskState::Skipped, a.reason)])?;
            let message = format!("Task {task} skipped.");
            Ok(
                Reply::text(json!({ "success": true, "message": message }).to_string())
                    .on(id, events),
            )
        }
        Call::AddTask(a) => {
            let id = s.current_id()?;
            let after = subtask_id(a.after_task_id.0);
            let new = NewSubtask {
                name: a.name,
                reasoning: a.reasoning,
                dependencies: a.dependencies.0.into_iter().map(subtask_id).collect(),
                ..NewSubtask::default()
            };
            let events = s.exec(
                id,
                vec![Op::AddSubtask {
                    subtask: new,
                    position: Position::After(after),
                    rewire_after: Some(after),
                    required_by: Vec::new(),
                }],
            )?;
            let plan = s.plan(id)?;
            let new_id = SubtaskId(plan.next_subtask_id - 1);
            let new_task = plan.subtask(new_id).map(task_json);
            Ok(
                Reply::text(json!({ "success": true, "newTask": new_task }).to_string())
                    .on(id, events),
            )
        }
        Call::ModifyTask(a) => {
            let id = s.current_id()?;
            let task = subtask_id(a.task_id.0);
            let mut ops = Vec::new();
            if let Some(name) = a.new_name {
                ops.push(Op::EditSubtask {
                    id: task,
                    patch: SubtaskPatch {
                        name: Some(name),
                        ..SubtaskPatch::default()
                    },
                });
            }
            if let Some(deps) = a.new_dependencies {
                ops.push(Op::SetDependencies {
                    id: task,
                    dependencies: deps.0.into_iter().map(subtask_id).collect(),
                });
            }
            if ops.is_empty() {
                return Err(ToolError::BadArgs {
                    tool: tool.into(),
                    message: "give new_name, new_dependencies, or both".into(),
                });
            }
            let events = s.exec(id, ops)?;
            let updated = s.plan(id)?.subtask(task).map(task_json);
            Ok(
                Reply::text(json!({ "success": true, "updatedTask": updated }).to_string())
                    .on(id, events),
            )
        }
        Call::FinishPlan(a) => {
            let id = s.current_id()?;
            let state = match a.status {
                FinishStatus::Completed => PlanState::Done,
                FinishStatus::Failed => PlanState::Failed,
                FinishStatus::Abandoned => PlanState::Abandoned,
            };
            let events = s.exec(
                id,
                vec![Op::Finish {
                    state,
                    outcome: a.summary,
                }],
            )?;
            let message = format!("Plan finished as {state}.");
            Ok(
                Reply::text(json!({ "success": true, "message": message }).to_string())
                    .on(id, events),
            )
        }
    }
}

fn finish_current(
    s: &mut Session<'_>,
    explicit: Option<Int>,
    state: SubtaskState,
    message: String,
    word: &str,
) -> Result<Reply, ToolError> {
    let plan = s.current()?;
    let id = plan.id;
    let task = match explicit {
        Some(t) => subtask_id(t.0),
        None => current_task(plan)?,
    };
    if s.already_in(id, task, state) {
        let message = format!("Task {task} already was {word}; nothing changed.");
        return Ok(Reply::text(
            json!({ "success": true, "message": message }).to_string(),
        ));
    }
    let events = s.exec(id, vec![set(task, state, message)])?;
    let message = format!("Task {task} marked as {word}.");
    Ok(Reply::text(json!({ "success": true, "message": message }).to_string()).on(id, events))
}

fn current_task(plan: &Plan) -> Result<SubtaskId, ToolError> {
    match plan.in_progress().as_slice() {
        [] => Err(PlanError::NoCurrentSubtask.into()),
        [one] => Ok(*one),
        many => Err(PlanError::AmbiguousCurrentSubtask {
            running: many.to_vec(),
        }
        .into()),
    }
}

fn set(id: SubtaskId, state: SubtaskState, note: String) -> Op {
    Op::SetSubtaskState {
        id,
        state,
        note: Some(note),
        start_next: false,
    }
}

fn task(plan: &Plan, id: SubtaskId) -> Result<&Subtask, ToolError> {
    plan.subtask(id).ok_or_else(|| {
        PlanError::UnknownSubtask {
            id,
            known: crate::error::summarize_ids(plan.subtasks.iter().map(|s| s.id).collect()),
        }
        .into()
    })
}

fn status(state: SubtaskState) -> &'static str {
    match state {
        SubtaskState::Todo => "pending",
        SubtaskState::InProgress => "in_progress",
        SubtaskState::Blocked => "blocked",
        SubtaskState::Done => "completed",
        SubtaskState::Failed => "failed",
        SubtaskState::Skipped => "skipped",
    }
}

fn task_json(t: &Subtask) -> Value {
    json!({
        "id": t.id,
        "name": t.name,
        "status": status(t.state),
        "dependencies": t.dependencies,
        "reasoning": t.reasoning,
        "result": t.outcome,
    })
}

/// The seed's JSON model: overallGoal, currentTaskID, tasks.
fn plan_json(plan: &Plan) -> Value {
    let current = match plan.in_progress().as_slice() {
        [one] => json!(one),
        _ => Value::Null,
    };
    json!({
        "overallGoal": plan.goal,
        "title": plan.title,
        "state": plan.state,
        "currentTaskID": current,
        "tasks": plan.subtasks.iter().map(|s| task_json(s)).collect::<Vec<_>>(),
    })
}
