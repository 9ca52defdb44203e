//! OpenManus' `planning` tool (seed 001): one tool, a `command` argument,
//! plans named by the caller's `plan_id`, steps addressed by 0-based index.
//!
//! Differences from OpenManus, all deliberate:
//! - `update` matches steps by text, not position: a step whose text is
//!   unchanged keeps its status and notes wherever it moves;
//! - steps run as a chain, so a step starts only after the one before it is
//!   completed (or skipped); marking a not-started step `completed` starts
//!   and completes it in one atomic change, through the same checks;
//! - extra statuses `failed` and `skipped` (markers `[✗]` and `[-]`) and a
//!   `finish` command, so a plan can end as done, failed or abandoned;
//! - `mark_step` answers with the step and the progress line, not the whole
//!   plan (call `get` for that), so its reply stays small on long plans.

use std::fmt::Write;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::lenient::{Int, List};
use super::{at_index, Reply, Session, ToolError};
use crate::command::{InfoPatch, Op};
use crate::model::{NewPlan, NewSubtask, Plan, PlanState, Subtask, SubtaskState};

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum PlanningCommand {
    Create,
    Update,
    List,
    Get,
    SetActive,
    MarkStep,
    Delete,
    Finish,
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum StepStatus {
    NotStarted,
    InProgress,
    Completed,
    Blocked,
    Failed,
    Skipped,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum PlanStatus {
    Done,
    Failed,
    Abandoned,
}

/// A planning tool that allows the agent to create and manage plans for solving complex tasks. The tool provides functionality for creating plans, updating plan steps, and tracking progress.
#[derive(Deserialize, JsonSchema)]
struct Planning {
    /// The command to execute. Available commands: create, update, list, get, set_active, mark_step, delete, finish.
    command: PlanningCommand,
    /// Unique identifier for the plan. Required for create, update, set_active, and delete commands. Optional for get and mark_step (uses active plan if not specified).
    #[serde(default)]
    plan_id: Option<String>,
    /// Title for the plan. Required for create command, optional for update command.
    #[serde(default)]
    title: Option<String>,
    /// List of plan steps. Required for create command, optional for update command.
    #[serde(default)]
    steps: Option<List<String>>,
    /// Index of the step to update (0-based). Required for mark_step command.
    #[serde(default)]
    step_index: Option<Int>,
    /// Status to set for a step. Used with mark_step command.
    #[serde(default)]
    step_status: Option<StepStatus>,
    /// Additional notes for a step. Optional for mark_step command; with completed, failed, blocked or skipped it is also the step's outcome.
    #[serde(default)]
    step_notes: Option<String>,
    /// How the plan ends. Used with the finish command.
    #[serde(default)]
    plan_status: Option<PlanStatus>,
    /// The plan's outcome, or why it failed or was abandoned. Used with the finish command.
    #[serde(default)]
    outcome: Option<String>,
}

toolset! {
    /// OpenManus' one tool, its arguments parsed.
    Call {
        "planning" => Planning(Planning),
    }
}

fn missing(what: &str, command: &str) -> ToolError {
    ToolError::BadArgs {
        tool: "planning".into(),
        message: format!("parameter `{what}` is required for command: {command}"),
    }
}

pub(crate) fn call(s: &mut Session<'_>, tool: &str, raw: &Value) -> Result<Reply, ToolError> {
    let Call::Planning(a) = Call::parse(tool, raw)?;
    match a.command {
        PlanningCommand::Create => create(s, a),
        PlanningCommand::Update => update(s, a),
        PlanningCommand::List => {
            let active = s.current_id().ok();
            let plans = s.book.plans();
            if plans.is_empty() {
                return Ok(Reply::text(
                    "No plans available. Create a plan with the 'create' command.",
                ));
            }
            let mut out = String::from("Available plans:\n");
            for p in plans {
                let marker = if Some(p.id) == active {
                    " (active)"
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "• {}{marker}: {} - {}/{} steps completed [{}]",
                    key(p),
                    p.title,
                    p.count(SubtaskState::Done),
                    p.subtasks.len(),
                    p.state
                );
            }
            Ok(Reply::text(out))
        }
        PlanningCommand::Get => {
            let id = s.resolve(a.plan_id.as_deref())?;
            Ok(Reply::text(format_plan(s.plan(id)?)))
        }
        PlanningCommand::SetActive => {
            let reference = a.plan_id.ok_or_else(|| missing("plan_id", "set_active"))?;
            let id = s.resolve(Some(&reference))?;
            s.book.set_active(&s.ctx.session, Some(id));
            Ok(Reply::text(format!(
                "Plan '{reference}' is now the active plan.\n\n{}",
                format_plan(s.plan(id)?)
            )))
        }
        PlanningCommand::MarkStep => mark_step(s, a),
        PlanningCommand::Delete => {
            let reference = a.plan_id.ok_or_else(|| missing("plan_id", "delete"))?;
            let id = s.resolve(Some(&reference))?;
            s.book.remove(id)?;
            Ok(Reply::text(format!("Plan '{reference}' has been deleted.")))
        }
        PlanningCommand::Finish => {
            let id = s.resolve(a.plan_id.as_deref())?;
            let state = match a
                .plan_status
                .ok_or_else(|| missing("plan_status", "finish"))?
            {
                PlanStatus::Done => PlanState::Done,
                PlanStatus::Failed => PlanState::Failed,
                PlanStatus::Abandoned => PlanState::Abandoned,
            };
            let outcome = a.outcome.unwrap_or_default();
            let events = s.exec(id, vec![Op::Finish { state, outcome }])?;
            Ok(
                Reply::text(format!("Plan '{}' finished as {state}.", key(s.plan(id)?)))
                    .on(id, events),
            )
        }
    }
}

fn create(s: &mut Session<'_>, a: Planning) -> Result<Reply, ToolError> {
    let plan_id = a.plan_id.ok_or_else(|| missing("plan_id", "create"))?;
    let title = a.title.ok_or_else(|| missing("title", "create"))?;
    let steps = a.steps.map(|l| l.0).unwrap_or_default();
    if steps.is_empty() || steps.iter().any(|x| x.trim().is_empty()) {
        return Err(ToolError::BadArgs {
            tool: "planning".into(),
            message: "parameter `steps` must be a non-empty list of non-empty strings for command: create".into(),
        });
    }
    let spec = NewPlan {
        id: s.ctx.new_plan_id,
        key: Some(plan_id.clone()),
        title,
        subtasks: chain(&steps),
        ..NewPlan::default()
    };
    let (id, events) = s.create(spec)?;
    Ok(Reply::text(format!(
        "Plan created successfully with ID: {plan_id}\n\n{}",
        format_plan(s.plan(id)?)
    ))
    .on(id, events))
}

fn update(s: &mut Session<'_>, a: Planning) -> Result<Reply, ToolError> {
    let reference = a.plan_id.ok_or_else(|| missing("plan_id", "update"))?;
    let id = s.resolve(Some(&reference))?;
    let mut ops = Vec::new();
    if let Some(title) = a.title {
        ops.push(Op::UpdateInfo {
            patch: InfoPatch {
                title: Some(title),
                ..InfoPatch::default()
            },
        });
    }
    if let Some(steps) = a.steps {
        ops.push(Op::ReplaceSubtasks {
            subtasks: chain(&steps.0),
        });
    }
    if ops.is_empty() {
        return Err(ToolError::BadArgs {
            tool: "planning".into(),
            message: "give a new `title`, new `steps`, or both, for command: update".into(),
        });
    }
    let events = s.exec(id, ops)?;
    Ok(Reply::text(format!(
        "Plan updated successfully: {reference}\n\n{}",
        format_plan(s.plan(id)?)
    ))
    .on(id, events))
}

fn mark_step(s: &mut Session<'_>, a: Planning) -> Result<Reply, ToolError> {
    let id = s.resolve(a.plan_id.as_deref())?;
    let index = a
        .step_index
        .ok_or_else(|| missing("step_index", "mark_step"))?
        .0;
    let plan = s.plan(id)?;
    let step = at_index(plan, index)?;
    let current = plan
        .subtask(step)
        .map(|x| x.state)
        .unwrap_or(SubtaskState::Todo);
    let note = a.step_notes.clone();
    let mut ops = Vec::new();
    if let Some(status) = a.step_status {
        let target = match status {
            StepStatus::NotStarted => SubtaskState::Todo,
            StepStatus::InProgress => SubtaskState::InProgress,
            StepStatus::Completed => SubtaskState::Done,
            StepStatus::Blocked => SubtaskState::Blocked,
            StepStatus::Failed => SubtaskState::Failed,
            StepStatus::Skipped => SubtaskState::Skipped,
        };
        let needs_start =
            matches!(target, SubtaskState::Done | SubtaskState::Failed) && current.is_unstarted();
        if needs_start {
            ops.push(set(step, SubtaskState::InProgress, None));
        }
        if target != current || needs_start {
            ops.push(set(step, target, note.clone()));
        }
    }
    if let Some(notes) = note {
        ops.push(Op::SetNotes { id: step, notes });
    }
    let events = if ops.is_empty() {
        Vec::new()
    } else {
        s.exec(id, ops)?
    };
    let plan = s.plan(id)?;
    let line = plan
        .subtask(step)
        .map(|x| step_line(index as usize, x))
        .unwrap_or_default();
    Ok(Reply::text(format!(
        "Step {index} updated in plan '{}'.\n{line}\n{}",
        key(plan),
        progress_line(plan)
    ))
    .on(id, events))
}

fn set(id: crate::model::SubtaskId, state: SubtaskState, note: Option<String>) -> Op {
    Op::SetSubtaskState {
        id,
        state,
        note,
        start_next: false,
    }
}

fn chain(steps: &[String]) -> Vec<NewSubtask> {
    steps
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let new = NewSubtask::named(text.trim());
            if i == 0 {
                new
            } else {
                new.after(&[i as u32])
            }
        })
        .collect()
}

fn key(plan: &Plan) -> String {
    plan.key.clone().unwrap_or_else(|| plan.id.to_string())
}

fn marker(state: SubtaskState) -> &'static str {
    match state {
        SubtaskState::Done => "[✓]",
        SubtaskState::InProgress => "[→]",
        SubtaskState::Blocked => "[!]",
        SubtaskState::Todo => "[ ]",
        SubtaskState::Failed => "[✗]",
        SubtaskState::Skipped => "[-]",
    }
}

fn step_line(index: usize, step: &Subtask) -> String {
    let mut line = format!("{index}. {} {}", marker(step.state), step.name);
    if !step.notes.is_empty() {
        let _ = write!(line, "\n   Notes: {}", step.notes);
    }
    line
}

/// "Progress: x/y steps completed (p%)", as OpenManus prints it.
pub(crate) fn progress_line(plan: &Plan) -> String {
    let total = plan.subtasks.len();
    let done = plan.count(SubtaskState::Done);
    let pct = if total == 0 {
        0.0
    } else {
        done as f64 * 100.0 / total as f64
    };
    format!("Progress: {done}/{total} steps completed ({pct:.1}%)")
}

/// OpenManus' `_format_plan`, with the two extra states counted too.
pub(crate) fn format_plan(plan: &Plan) -> String {
    let mut out = format!("Plan: {} (ID: {})\n", plan.title, key(plan));
    let underline = out.trim_end().chars().count();
    out.push_str(&"=".repeat(underline));
    let _ = write!(out, "\n\n{}\n", progress_line(plan));
    let c = |st| plan.count(st);
    let _ = writeln!(
        out,
        "Status: {} completed, {} in progress, {} blocked, {} not started, {} failed, {} skipped\n",
        c(SubtaskState::Done),
        c(SubtaskState::InProgress),
        c(SubtaskState::Blocked),
        c(SubtaskState::Todo),
        c(SubtaskState::Failed),
        c(SubtaskState::Skipped)
    );
    out.push_str("Steps:\n");
    for (i, step) in plan.subtasks.iter().enumerate() {
        out.push_str(&step_line(i, step));
        out.push('\n');
    }
    out
}
