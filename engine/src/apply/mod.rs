//! Deciding: `apply(plan, command, actor, now) -> Result<Vec<Event>, PlanError>`.
//!
//! # Layout
//! - this file: `create`, `apply`, the dispatch over `Op`, plan-level commands.
//! - `structure`: add, edit, dependencies, delete, replace.
//! - `advance`: subtask state changes and their guards, batch starts.
//! - `validate`: text lengths, limits, the actor.
//!
//! `apply` reads the plan and never changes it; [`Plan::fold`] records the
//! events it returns. [`Plan::execute`] does both. A rejected command returns
//! `Err` and leaves no trace, so a plan is never half-written.

mod advance;
mod structure;
mod validate;

use std::sync::Arc;

use advance::{set_state, start_next};
use structure::{
    add_subtask, delete_subtask, edit_subtask, new_subtask, replace_subtasks, set_dependencies,
};
use validate::{check_actor, check_capacity, check_limit_setting, required_text, text};

use crate::command::{Command, InfoPatch, Op};
use crate::dag::{require_known, validate_graph};
use crate::error::PlanError;
use crate::event::{Event, EventKind};
use crate::model::{
    limits, Approval, ApprovalStatus, Comment, NewPlan, Plan, PlanState, SubtaskId, SubtaskState,
    Timestamp,
};
use crate::transitions::plan_transition;

impl Plan {
    /// Creates a plan: the returned plan is exactly the fold of the returned events.
    pub fn create(
        spec: &NewPlan,
        actor: &str,
        now: Timestamp,
    ) -> Result<(Plan, Vec<Event>), PlanError> {
        let events = create(spec, actor, now)?;
        let plan = Plan::replay(&events)?;
        Ok((plan, events))
    }

    /// Decides and records one command; returns the events it produced.
    pub fn execute(
        &mut self,
        command: &Command,
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Event>, PlanError> {
        let events = apply(self, command, actor, now)?;
        for event in &events {
            self.fold(event);
        }
        Ok(events)
    }

    /// Runs several ops as one change, all or none: if any op is refused
    /// the plan stays as it was. A single op needs no copy, because
    /// [`Plan::execute`] never writes on failure.
    pub fn execute_all(
        &mut self,
        ops: Vec<Op>,
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Event>, PlanError> {
        match <[Op; 1]>::try_from(ops) {
            Ok([op]) => self.execute(&Command::from(op), actor, now),
            Err(ops) => {
                let mut scratch = self.clone();
                let mut events = Vec::new();
                for op in ops {
                    events.extend(scratch.execute(&Command::from(op), actor, now)?);
                }
                *self = scratch;
                Ok(events)
            }
        }
    }
}

/// Decides a create: one `plan_created` event holding the initial plan.
pub fn create(spec: &NewPlan, actor: &str, now: Timestamp) -> Result<Vec<Event>, PlanError> {
    check_actor(actor)?;
    required_text("title", &spec.title, limits::TITLE)?;
    if let Some(key) = &spec.key {
        required_text("key", key, limits::KEY)?;
    }
    text("goal", &spec.goal, limits::TEXT)?;
    text("description", &spec.description, limits::TEXT)?;
    text("expected_outcome", &spec.expected_outcome, limits::TEXT)?;
    check_limit_setting("max_parallel", spec.max_parallel)?;
    check_limit_setting("max_subtasks", spec.max_subtasks)?;
    check_capacity(spec.max_subtasks, 0, spec.subtasks.len())?;
    let mut subtasks = Vec::with_capacity(spec.subtasks.len());
    for (i, new) in spec.subtasks.iter().enumerate() {
        subtasks.push(Arc::new(new_subtask(new, SubtaskId(i as u32 + 1), now)?));
    }
    let next_subtask_id = subtasks.len() as u32 + 1;
    validate_graph(&subtasks, next_subtask_id)?;
    let state = if spec.draft {
        PlanState::Draft
    } else if spec.approval_required {
        PlanState::AwaitingApproval
    } else {
        PlanState::Approved
    };
    let approval = Approval {
        required: spec.approval_required,
        status: if spec.approval_required {
            ApprovalStatus::Pending
        } else {
            ApprovalStatus::Approved
        },
        by: None,
        comment: None,
        at: None,
    };
    let plan = Plan {
        id: spec.id,
        key: spec.key.clone(),
        title: spec.title.trim().to_string(),
        goal: spec.goal.clone(),
        description: spec.description.clone(),
        expected_outcome: spec.expected_outcome.clone(),
        state,
        mode: spec.mode,
        approval,
        max_subtasks: spec.max_subtasks,
        max_parallel: spec.max_parallel,
        need_user_confirm: spec.need_user_confirm,
        version: 1,
        created_by: actor.to_string(),
        created_at: now,
        updated_at: now,
        finished_at: None,
        outcome: None,
        subtasks,
        next_subtask_id,
        comments: Vec::new(),
        next_comment_id: 1,
        index: Default::default(),
    };
    Ok(vec![Event {
        plan_id: spec.id,
        version: 1,
        actor: actor.into(),
        at: now,
        kind: EventKind::PlanCreated {
            plan: Box::new(plan),
        },
    }])
}

/// Decides one command against `plan`.
pub fn apply(
    plan: &Plan,
    command: &Command,
    actor: &str,
    now: Timestamp,
) -> Result<Vec<Event>, PlanError> {
    check_actor(actor)?;
    if let Some(expected) = command.expected_version {
        if expected != plan.version {
            return Err(PlanError::StaleVersion {
                expected,
                actual: plan.version,
            });
        }
    }
    let history_only = matches!(command.op, Op::Comment { .. } | Op::Recover {});
    if plan.state.is_finished() && !history_only {
        return Err(PlanError::PlanFinished { state: plan.state });
    }
    let kinds = decide(plan, &command.op, actor, now)?;
    let version = plan.version + 1;
    let actor: std::sync::Arc<str> = actor.into();
    Ok(kinds
        .into_iter()
        .map(|kind| Event {
            plan_id: plan.id,
            version,
            actor: actor.clone(),
            at: now,
            kind,
        })
        .collect())
}

fn decide(plan: &Plan, op: &Op, actor: &str, now: Timestamp) -> Result<Vec<EventKind>, PlanError> {
    match op {
        Op::UpdateInfo { patch } => update_info(plan, patch),
        Op::AddSubtask {
            subtask,
            position,
            rewire_after,
            required_by,
        } => add_subtask(plan, subtask, *position, *rewire_after, required_by, now),
        Op::EditSubtask { id, patch } => edit_subtask(plan, *id, patch),
        Op::SetDependencies { id, dependencies } => set_dependencies(plan, *id, dependencies),
        Op::DeleteSubtask { id } => delete_subtask(plan, *id),
        Op::MoveSubtask { id, to_index } => {
            require_known(plan, *id)?;
            if *to_index >= plan.subtasks.len() {
                return Err(PlanError::UnknownIndex {
                    index: *to_index,
                    len: plan.subtasks.len(),
                });
            }
            Ok(vec![EventKind::SubtaskMoved {
                id: *id,
                to_index: *to_index,
            }])
        }
        Op::SetSubtaskState {
            id,
            state,
            note,
            start_next,
        } => set_state(plan, *id, *state, note.as_deref(), *start_next),
        Op::StartNext { count } => start_next(plan, *count),
        Op::SetNotes { id, notes } => {
            require_known(plan, *id)?;
            text("notes", notes, limits::TEXT)?;
            Ok(vec![EventKind::SubtaskNotesSet {
                id: *id,
                notes: notes.clone(),
            }])
        }
        Op::ReplaceSubtasks { subtasks } => replace_subtasks(plan, subtasks, now),
        Op::Submit {} => {
            let to = if plan.approval.required && plan.approval.status != ApprovalStatus::Approved {
                PlanState::AwaitingApproval
            } else {
                PlanState::Approved
            };
            Ok(vec![plan_move(plan, to, None)?])
        }
        Op::Approve { comment } => {
            if let Some(c) = comment {
                text("comment", c, limits::COMMENT)?;
            }
            if !matches!(plan.state, PlanState::Draft | PlanState::AwaitingApproval) {
                return Err(PlanError::IllegalPlanTransition {
                    from: plan.state,
                    to: PlanState::Approved,
                    why: "only a draft or a plan awaiting approval can be approved".into(),
                });
            }
            Ok(vec![
                EventKind::ApprovalDecided {
                    status: ApprovalStatus::Approved,
                    comment: comment.clone(),
                },
                plan_move(plan, PlanState::Approved, comment.clone())?,
            ])
        }
        Op::Reject { comment } => {
            required_text("comment", comment, limits::COMMENT)?;
            if plan.state != PlanState::AwaitingApproval {
                return Err(PlanError::IllegalPlanTransition {
                    from: plan.state,
                    to: PlanState::Draft,
                    why: "only a plan awaiting approval can be rejected".into(),
                });
            }
            Ok(vec![
                EventKind::ApprovalDecided {
                    status: ApprovalStatus::Rejected,
                    comment: Some(comment.clone()),
                },
                plan_move(plan, PlanState::Draft, Some(comment.clone()))?,
            ])
        }
        Op::Pause {} => Ok(vec![plan_move(plan, PlanState::Paused, None)?]),
        Op::Resume {} => {
            if plan.state != PlanState::Paused {
                return Err(PlanError::IllegalPlanTransition {
                    from: plan.state,
                    to: PlanState::Running,
                    why: "only a paused plan can be resumed".into(),
                });
            }
            Ok(vec![plan_move(plan, PlanState::Running, None)?])
        }
        Op::Finish { state, outcome } => finish(plan, *state, outcome),
        Op::Recover {} => {
            if !plan.state.is_finished() {
                return Err(PlanError::IllegalPlanTransition {
                    from: plan.state,
                    to: PlanState::Running,
                    why: "only a done, failed or abandoned plan can be recovered".into(),
                });
            }
            let started = plan.subtasks.iter().any(|s| s.state != SubtaskState::Todo);
            let to = if started {
                PlanState::Running
            } else {
                PlanState::Approved
            };
            Ok(vec![plan_move(plan, to, None)?])
        }
        Op::Comment { subtask, body } => {
            required_text("body", body, limits::COMMENT)?;
            if let Some(id) = subtask {
                require_known(plan, *id)?;
            }
            Ok(vec![EventKind::CommentAdded {
                comment: Box::new(Comment {
                    id: fresh_id(plan.next_comment_id, "comments")?,
                    subtask: *subtask,
                    author: actor.to_string(),
                    body: body.clone(),
                    at: now,
                }),
            }])
        }
    }
}

fn update_info(plan: &Plan, patch: &InfoPatch) -> Result<Vec<EventKind>, PlanError> {
    let mut info = plan.info();
    if let Some(title) = &patch.title {
        required_text("title", title, limits::TITLE)?;
        info.title = title.trim().to_string();
    }
    if let Some(goal) = &patch.goal {
        text("goal", goal, limits::TEXT)?;
        info.goal.clone_from(goal);
    }
    if let Some(d) = &patch.description {
        text("description", d, limits::TEXT)?;
        info.description.clone_from(d);
    }
    if let Some(o) = &patch.expected_outcome {
        text("expected_outcome", o, limits::TEXT)?;
        info.expected_outcome.clone_from(o);
    }
    if let Some(mode) = patch.mode {
        info.mode = mode;
    }
    if let Some(max) = patch.max_subtasks {
        info.max_subtasks = (max > 0).then_some(max);
        check_capacity(info.max_subtasks, plan.subtasks.len(), 0)?;
    }
    if let Some(max) = patch.max_parallel {
        info.max_parallel = (max > 0).then_some(max);
    }
    if let Some(confirm) = patch.need_user_confirm {
        info.need_user_confirm = Some(confirm);
    }
    Ok(vec![EventKind::InfoUpdated {
        info: Box::new(info),
    }])
}

fn finish(plan: &Plan, to: PlanState, outcome: &str) -> Result<Vec<EventKind>, PlanError> {
    text("outcome", outcome, limits::TEXT)?;
    if !to.is_finished() {
        return Err(PlanError::invalid(
            "state",
            format!("a plan finishes as done, failed or abandoned, not {to}"),
        ));
    }
    // The counts say whether anything is open; only then is the list scanned.
    let settled = plan.count(SubtaskState::Done) + plan.count(SubtaskState::Skipped);
    if to == PlanState::Done && settled < plan.subtasks.len() {
        let open: Vec<SubtaskId> = plan
            .subtasks
            .iter()
            .filter(|s| !s.state.is_settled())
            .map(|s| s.id)
            .take(20)
            .collect();
        if !open.is_empty() {
            return Err(PlanError::UnfinishedSubtasks { ids: open });
        }
    }
    // Nothing stays "in progress" in a finished plan: release what still runs.
    let mut events: Vec<EventKind> = plan
        .in_progress()
        .into_iter()
        .map(|id| EventKind::SubtaskStateChanged {
            id,
            from: SubtaskState::InProgress,
            to: SubtaskState::Todo,
            note: Some(format!("plan finished as {to}")),
        })
        .collect();
    events.push(plan_move(plan, to, Some(outcome.to_string()))?);
    Ok(events)
}

/// `next`, the id a plan's counter hands out now, unless the counter has
/// none left: only an imported plan can start that high, and the id after
/// it could not be counted.
pub(super) fn fresh_id(next: u32, what: &str) -> Result<u32, PlanError> {
    if next == u32::MAX {
        return Err(PlanError::invalid(
            what,
            "this plan has used up its ids (an imported plan set its counter to the maximum); \
             import it again with lower ids",
        ));
    }
    Ok(next)
}

pub(super) fn running_if_approved(plan: &Plan) -> Option<EventKind> {
    (plan.state == PlanState::Approved).then_some(EventKind::PlanStateChanged {
        from: PlanState::Approved,
        to: PlanState::Running,
        reason: None,
    })
}

fn plan_move(plan: &Plan, to: PlanState, reason: Option<String>) -> Result<EventKind, PlanError> {
    plan_transition(plan.state, to).map_err(|why| PlanError::IllegalPlanTransition {
        from: plan.state,
        to,
        why: why.into(),
    })?;
    Ok(EventKind::PlanStateChanged {
        from: plan.state,
        to,
        reason,
    })
}

#[cfg(test)]
mod tests;
