//! AgentScope's PlanNotebook tools (seed 003): all ten, by their snake_case
//! names, addressing subtasks by 0-based index and naming states
//! todo / in_progress / done / abandoned.
//!
//! Differences from AgentScope, all deliberate:
//! - subtasks run as a chain (each depends on the one before), so the
//!   "finish the previous subtasks first" rule is the engine's dependency
//!   check rather than a scan of every earlier subtask;
//! - `finish_subtask` starts the next subtask only if it is ready, never
//!   blindly the one at index + 1;
//! - `create_plan` and `recover_historical_plan` archive the replaced plan
//!   (abandoned, recoverable) instead of dropping it;
//! - `revise_current_plan` with `add` accepts `subtask_idx == len` (append);
//! - `update_subtask_state` to the state a subtask already has (any state,
//!   as in every dialect) is a harmless no-op, not an error.

use serde_json::Value;

use super::{at_index, Reply, Session, ToolError};
use crate::command::{Op, Position, SubtaskPatch};
use crate::model::{NewPlan, NewSubtask, Plan, PlanState, Subtask, SubtaskState};

mod args;
use args::*;

toolset! {
    /// A call to one of the dialect's tools, its arguments parsed.
    Call {
        "create_plan" => CreatePlan(CreatePlan),
        "update_plan_info" => UpdatePlanInfo(UpdatePlanInfo),
        "revise_current_plan" => ReviseCurrentPlan(ReviseCurrentPlan),
        "update_subtask_state" => UpdateSubtaskState(UpdateSubtaskState),
        "finish_subtask" => FinishSubtask(FinishSubtask),
        "view_subtasks" => ViewSubtasks(ViewSubtasks),
        "get_subtask_count" => GetSubtaskCount(GetSubtaskCount),
        "finish_plan" => FinishPlan(FinishPlan),
        "view_historical_plans" => ViewHistoricalPlans(ViewHistoricalPlans),
        "recover_historical_plan" => RecoverHistoricalPlan(RecoverHistoricalPlan),
    }
}

pub(crate) fn call(s: &mut Session<'_>, tool: &str, raw: &Value) -> Result<Reply, ToolError> {
    match Call::parse(tool, raw)? {
        Call::CreatePlan(a) => create_plan(s, a),
        Call::UpdatePlanInfo(a) => {
            let id = s.current_id()?;
            let patch = crate::command::InfoPatch {
                title: a.name,
                description: a.description,
                expected_outcome: a.expected_outcome,
                ..Default::default()
            };
            let events = s.exec(id, vec![Op::UpdateInfo { patch }])?;
            Ok(Reply::text("The current plan is updated successfully.").on(id, events))
        }
        Call::ReviseCurrentPlan(a) => revise(s, a),
        Call::UpdateSubtaskState(a) => update_state(s, a),
        Call::FinishSubtask(a) => finish_subtask(s, a),
        Call::ViewSubtasks(a) => {
            let plan = s.current()?;
            let mut parts = Vec::new();
            let mut invalid = Vec::new();
            for idx in a.subtask_idx.0 {
                match plan.subtasks.get(idx as usize) {
                    Some(sub) => parts.push(format!(
                        "Subtask at index {idx}:\n```\n{}\n```\n",
                        detailed(sub)
                    )),
                    None => invalid.push(idx.to_string()),
                }
            }
            if !invalid.is_empty() {
                let message = format!(
                    "Invalid subtask_idx [{}]. Must be between 0 and {}.",
                    invalid.join(", "),
                    plan.subtasks.len().saturating_sub(1)
                );
                // Nothing to show is a refusal, so the model hears it as one.
                if parts.is_empty() {
                    return Err(ToolError::BadArgs {
                        tool: tool.into(),
                        message,
                    });
                }
                parts.push(message);
            }
            if parts.is_empty() {
                return Err(ToolError::BadArgs {
                    tool: tool.into(),
                    message: "subtask_idx lists no subtask; give at least one index".into(),
                });
            }
            Ok(Reply::text(parts.join("\n")))
        }
        Call::GetSubtaskCount(_) => {
            let plan = s.current()?;
            let c = |st| plan.count(st);
            Ok(Reply::text(format!(
                "The current plan has {} subtasks: {} done, {} in_progress, {} todo, {} abandoned, {} blocked, {} failed.",
                plan.subtasks.len(),
                c(SubtaskState::Done),
                c(SubtaskState::InProgress),
                c(SubtaskState::Todo),
                c(SubtaskState::Skipped),
                c(SubtaskState::Blocked),
                c(SubtaskState::Failed),
            )))
        }
        Call::FinishPlan(a) => {
            let Ok(id) = s.current_id() else {
                return Ok(Reply::text("There is no plan to finish."));
            };
            let state = match a.state {
                FinishState::Done => PlanState::Done,
                FinishState::Abandoned => PlanState::Abandoned,
                FinishState::Failed => PlanState::Failed,
            };
            let events = s.exec(
                id,
                vec![Op::Finish {
                    state,
                    outcome: a.outcome,
                }],
            )?;
            s.book.set_active(&s.ctx.session, None);
            Ok(Reply::text(format!(
                "The current plan is finished successfully as '{}'.",
                state
            ))
            .on(id, events))
        }
        Call::ViewHistoricalPlans(_) => {
            let lines: Vec<String> = s
                .book
                .plans()
                .into_iter()
                .filter(|p| p.state.is_finished())
                .map(|p| {
                    format!(
                        "- plan_id: {}, name: '{}', state: {}, created_at: {}, outcome: {}",
                        p.id,
                        p.title,
                        p.state,
                        p.created_at.to_rfc3339(),
                        p.outcome.as_deref().unwrap_or("N/A")
                    )
                })
                .collect();
            if lines.is_empty() {
                return Ok(Reply::text("There are no historical plans."));
            }
            Ok(Reply::text(format!(
                "Historical plans:\n{}",
                lines.join("\n")
            )))
        }
        Call::RecoverHistoricalPlan(a) => {
            let id = s.resolve(Some(&a.plan_id))?;
            let target = s.plan(id)?;
            if !target.state.is_finished() {
                return Err(ToolError::BadArgs {
                    tool: tool.into(),
                    message: format!(
                        "the plan '{}' is {} and not historical; only done, failed or abandoned plans can be recovered",
                        target.title, target.state
                    ),
                });
            }
            let name = target.title.clone();
            let mut events = Vec::new();
            if s.current_id().ok() != Some(id) {
                events = s.archive_current(format!("Replaced by the recovered plan '{name}'."))?;
            }
            events.extend(s.exec(id, vec![Op::Recover {}])?);
            s.book.set_active(&s.ctx.session, Some(id));
            Ok(Reply::text(format!(
                "The historical plan named '{name}' is recovered and is now the current plan."
            ))
            .on(id, events))
        }
    }
}

fn create_plan(s: &mut Session<'_>, a: CreatePlan) -> Result<Reply, ToolError> {
    let subtasks: Vec<NewSubtask> = a
        .subtasks
        .0
        .iter()
        .enumerate()
        .map(|(i, sub)| {
            let new = sub.to_new();
            if i == 0 {
                new
            } else {
                new.after(&[i as u32])
            }
        })
        .collect();
    let spec = NewPlan {
        id: s.ctx.new_plan_id,
        title: a.name.clone(),
        description: a.description,
        expected_outcome: a.expected_outcome,
        subtasks,
        ..NewPlan::default()
    };
    // Validate the new plan before archiving the old one, so a bad call changes nothing.
    Plan::create(&s.with_defaults(spec.clone()), &s.ctx.actor, s.ctx.now)?;
    let replaced = s
        .current()
        .ok()
        .filter(|p| !p.state.is_finished())
        .map(|p| (p.title.clone(), p.id));
    let mut events = s.archive_current(format!("Replaced by the new plan '{}'.", a.name))?;
    let (id, created) = s.create(spec)?;
    events.extend(created);
    let text = match replaced {
        None => format!("Plan '{}' created successfully.", a.name),
        Some((old, old_id)) => format!(
            "The current plan named '{old}' is replaced by the newly created plan named '{}'. The old plan is archived; call 'recover_historical_plan' with plan_id='{old_id}' to bring it back.",
            a.name
        ),
    };
    Ok(Reply::text(text).on(id, events))
}

fn revise(s: &mut Session<'_>, a: ReviseCurrentPlan) -> Result<Reply, ToolError> {
    let plan = s.current()?;
    let id = plan.id;
    let idx = a.subtask_idx.0 as usize;
    let need_subtask = || ToolError::BadArgs {
        tool: "revise_current_plan".into(),
        message: "the subtask must be provided when action is 'add' or 'revise'".into(),
    };
    let (op, text) = match a.action {
        ReviseAction::Add => {
            let sub = a.subtask.ok_or_else(need_subtask)?;
            let len = plan.subtasks.len();
            if idx > len {
                return Err(crate::error::PlanError::UnknownIndex { index: idx, len }.into());
            }
            let previous = idx.checked_sub(1).map(|p| plan.subtasks[p].id);
            let mut new = sub.to_new();
            new.dependencies = previous.into_iter().collect();
            let required_by = match (previous, plan.subtasks.first()) {
                (None, Some(first)) if first.state.is_unstarted() => vec![first.id],
                _ => Vec::new(),
            };
            (
                Op::AddSubtask {
                    subtask: new,
                    position: Position::Index(idx),
                    rewire_after: previous,
                    required_by,
                },
                format!("New subtask is added successfully at index {idx}."),
            )
        }
        ReviseAction::Revise => {
            let sub = a.subtask.ok_or_else(need_subtask)?;
            let target = at_index(plan, a.subtask_idx.0)?;
            (
                Op::EditSubtask {
                    id: target,
                    patch: SubtaskPatch {
                        name: Some(sub.name),
                        description: Some(sub.description),
                        expected_outcome: Some(sub.expected_outcome),
                        ..SubtaskPatch::default()
                    },
                },
                format!("Subtask at index {idx} is revised successfully."),
            )
        }
        ReviseAction::Delete => {
            let target = at_index(plan, a.subtask_idx.0)?;
            let name = plan
                .subtask(target)
                .map(|x| x.name.clone())
                .unwrap_or_default();
            (
                Op::DeleteSubtask { id: target },
                format!("Subtask (named '{name}') at index {idx} is deleted successfully."),
            )
        }
    };
    let events = s.exec(id, vec![op])?;
    Ok(Reply::text(text).on(id, events))
}

fn update_state(s: &mut Session<'_>, a: UpdateSubtaskState) -> Result<Reply, ToolError> {
    let plan = s.current()?;
    let id = plan.id;
    let target = at_index(plan, a.subtask_idx.0)?;
    let sub = &plan.subtasks[a.subtask_idx.0 as usize];
    let name = sub.name.clone();
    let idx = a.subtask_idx.0;
    let state = match a.state {
        SubtaskStateArg::Todo => SubtaskState::Todo,
        SubtaskStateArg::InProgress => SubtaskState::InProgress,
        SubtaskStateArg::Abandoned => SubtaskState::Skipped,
        SubtaskStateArg::Blocked => SubtaskState::Blocked,
        SubtaskStateArg::Failed => SubtaskState::Failed,
        SubtaskStateArg::Done => {
            return Err(ToolError::BadArgs {
                tool: "update_subtask_state".into(),
                message:
                    "to mark a subtask as done, call 'finish_subtask' with the specific outcome"
                        .into(),
            })
        }
    };
    if sub.state == state {
        return Ok(Reply::text(format!(
            "Subtask at index {idx}, named '{name}' is already '{}'.",
            state_name(state)
        )));
    }
    let events = s.exec(
        id,
        vec![Op::SetSubtaskState {
            id: target,
            state,
            note: None,
            start_next: false,
        }],
    )?;
    Ok(Reply::text(format!(
        "Subtask at index {idx}, named '{name}' is marked as '{}' successfully.",
        state_name(state)
    ))
    .on(id, events))
}

fn finish_subtask(s: &mut Session<'_>, a: FinishSubtask) -> Result<Reply, ToolError> {
    let plan = s.current()?;
    let id = plan.id;
    let target = at_index(plan, a.subtask_idx.0)?;
    let mut ops = Vec::with_capacity(2);
    if plan
        .subtask(target)
        .is_some_and(|x| x.state != SubtaskState::InProgress)
    {
        // AgentScope lets a todo subtask be finished directly: start it first, so
        // the dependency and approval checks still apply.
        ops.push(Op::SetSubtaskState {
            id: target,
            state: SubtaskState::InProgress,
            note: None,
            start_next: false,
        });
    }
    ops.push(Op::SetSubtaskState {
        id: target,
        state: SubtaskState::Done,
        note: Some(a.subtask_outcome),
        start_next: true,
    });
    let events = s.exec(id, ops)?;
    let plan = s.plan(id)?;
    let idx = a.subtask_idx.0;
    let name = plan.subtask(target).map(|x| x.name.as_str()).unwrap_or("");
    let mut text =
        format!("Subtask (at index {idx}) named '{name}' is marked as done successfully.");
    let started = events.iter().rev().find_map(|e| match &e.kind {
        crate::event::EventKind::SubtaskStateChanged {
            id: next,
            to: SubtaskState::InProgress,
            ..
        } if *next != target => Some(*next),
        _ => None,
    });
    if let Some(next) = started {
        let next_name = plan.subtask(next).map(|x| x.name.as_str()).unwrap_or("");
        let next_idx = plan.position(next).unwrap_or_default();
        text.push_str(&format!(
            " The next subtask named '{next_name}' (at index {next_idx}) is activated."
        ));
    }
    Ok(Reply::text(text).on(id, events))
}

fn state_name(state: SubtaskState) -> &'static str {
    match state {
        SubtaskState::Skipped => "abandoned",
        other => other.as_str(),
    }
}

fn one_line(sub: &Subtask) -> String {
    let prefix = match sub.state {
        SubtaskState::Todo => "- [ ]",
        SubtaskState::InProgress => "- [ ] [WIP]",
        SubtaskState::Done => "- [x]",
        SubtaskState::Skipped => "- [ ] [Abandoned]",
        SubtaskState::Blocked => "- [ ] [Blocked]",
        SubtaskState::Failed => "- [ ] [Failed]",
    };
    format!("{prefix} {}", sub.name)
}

fn detailed(sub: &Subtask) -> String {
    let na = |s: &str| {
        if s.is_empty() {
            "N/A".to_string()
        } else {
            s.to_string()
        }
    };
    let mut out = format!(
        "{}\n\t- Created At: {}\n\t- Description: {}\n\t- Expected Outcome: {}\n\t- State: {}",
        one_line(sub),
        sub.created_at.to_rfc3339(),
        na(&sub.description),
        na(&sub.expected_outcome),
        state_name(sub.state)
    );
    if sub.state == SubtaskState::Done {
        out.push_str(&format!(
            "\n\t- Finished At: {}\n\t- Actual Outcome: {}",
            sub.finished_at.map_or("N/A".into(), |t| t.to_rfc3339()),
            sub.outcome.as_deref().unwrap_or("N/A")
        ));
    } else if let Some(outcome) = &sub.outcome {
        out.push_str(&format!("\n\t- Reason: {outcome}"));
    }
    out
}
