//! Moving subtasks through the state table: start guards, completion with
//! `start_next`, and batch starts.

use super::running_if_approved;
use super::validate::text;
use crate::dag::require_known;
use crate::error::PlanError;
use crate::event::EventKind;
use crate::model::{limits, Plan, PlanState, Subtask, SubtaskId, SubtaskState};
use crate::transitions::{subtask_transition, SubtaskMove};

pub(super) fn set_state(
    plan: &Plan,
    id: SubtaskId,
    to: SubtaskState,
    note: Option<&str>,
    start_next: bool,
) -> Result<Vec<EventKind>, PlanError> {
    let p = require_known(plan, id)?;
    let s = &plan.subtasks[p];
    if let Some(n) = note {
        text("note", n, limits::TEXT)?;
    }
    let how = subtask_transition(s.state, to).map_err(|why| PlanError::IllegalTransition {
        id,
        from: s.state,
        to,
        why: why.to_string(),
    })?;
    let mut events = Vec::with_capacity(3);
    match how {
        SubtaskMove::Start => {
            check_can_start(plan, s)?;
            events.extend(running_if_approved(plan));
        }
        SubtaskMove::Reopen => {
            let started: Vec<SubtaskId> = plan
                .index()
                .dependents(id)
                .iter()
                .copied()
                .filter(|d| {
                    plan.subtask(*d).is_some_and(|x| {
                        matches!(x.state, SubtaskState::InProgress | SubtaskState::Done)
                    })
                })
                .collect();
            if !started.is_empty() {
                return Err(PlanError::DependentsStarted {
                    id,
                    dependents: started,
                });
            }
        }
        _ => {}
    }
    events.push(EventKind::SubtaskStateChanged {
        id,
        from: s.state,
        to,
        note: note.map(str::to_string),
    });
    if start_next && to.is_settled() && plan.state_allows_start() {
        if let Some(next) = first_ready_after_settling(plan, id) {
            let in_progress_after = plan.count(SubtaskState::InProgress)
                - usize::from(s.state == SubtaskState::InProgress);
            let has_slot = plan
                .max_parallel
                .is_none_or(|max| in_progress_after < max as usize);
            if has_slot {
                events.extend(running_if_approved(plan));
                events.push(EventKind::SubtaskStateChanged {
                    id: next,
                    from: SubtaskState::Todo,
                    to: SubtaskState::InProgress,
                    note: None,
                });
            }
        }
    }
    Ok(events)
}

impl Plan {
    /// The first subtask in display order that will be ready once
    /// `settling` is done or skipped, if any: what a `start_next` right
    /// after it would start, asked without changing the plan.
    pub fn next_ready_after(&self, settling: SubtaskId) -> Option<SubtaskId> {
        first_ready_after_settling(self, settling)
    }
}

/// The first subtask in display order that is ready once `settling` is done:
/// today's ready set plus dependents whose only unmet dependency it is.
fn first_ready_after_settling(plan: &Plan, settling: SubtaskId) -> Option<SubtaskId> {
    let index = plan.index();
    let unlocked = index.dependents(settling).iter().filter_map(|d| {
        let q = index.position(*d)?;
        let waits_only_on_it = index.unmet(*d) == 1 && !settled(plan, settling);
        (plan.subtasks[q].state == SubtaskState::Todo && waits_only_on_it).then_some(q)
    });
    let first_ready = index
        .ready_positions()
        .find(|&q| plan.subtasks[q].id != settling);
    unlocked
        .chain(first_ready)
        .min()
        .map(|q| plan.subtasks[q].id)
}

pub(super) fn start_next(plan: &Plan, count: usize) -> Result<Vec<EventKind>, PlanError> {
    if count == 0 {
        return Err(PlanError::invalid("count", "must be at least 1"));
    }
    check_plan_can_start(plan)?;
    let batch = plan.next_batch(count);
    if batch.is_empty() {
        if let (Some(max), false) = (plan.max_parallel, plan.free_slots() > 0) {
            return Err(PlanError::ParallelLimit {
                max,
                running: plan.in_progress(),
            });
        }
        return Err(PlanError::NothingReady(nothing_ready_message(plan)));
    }
    let mut events: Vec<EventKind> = running_if_approved(plan).into_iter().collect();
    events.extend(batch.into_iter().map(|id| EventKind::SubtaskStateChanged {
        id,
        from: SubtaskState::Todo,
        to: SubtaskState::InProgress,
        note: None,
    }));
    Ok(events)
}

fn nothing_ready_message(plan: &Plan) -> String {
    let open =
        plan.subtasks.len() - plan.count(SubtaskState::Done) - plan.count(SubtaskState::Skipped);
    if open == 0 {
        return "all subtasks are done or skipped; finish the plan".into();
    }
    format!(
        "no subtask is ready: {} in progress, {} blocked, {} failed, {} waiting on dependencies",
        plan.count(SubtaskState::InProgress),
        plan.count(SubtaskState::Blocked),
        plan.count(SubtaskState::Failed),
        plan.count(SubtaskState::Todo)
    )
}

fn check_can_start(plan: &Plan, s: &Subtask) -> Result<(), PlanError> {
    check_plan_can_start(plan)?;
    let waiting_on: Vec<(SubtaskId, SubtaskState)> = s
        .dependencies
        .iter()
        .filter_map(|d| plan.subtask(*d))
        .filter(|d| !d.state.is_settled())
        .map(|d| (d.id, d.state))
        .collect();
    if !waiting_on.is_empty() {
        return Err(PlanError::NotReady {
            id: s.id,
            waiting_on,
        });
    }
    if let Some(max) = plan.max_parallel {
        if plan.free_slots() == 0 {
            return Err(PlanError::ParallelLimit {
                max,
                running: plan.in_progress(),
            });
        }
    }
    Ok(())
}

fn check_plan_can_start(plan: &Plan) -> Result<(), PlanError> {
    let why = match plan.state {
        PlanState::Approved | PlanState::Running => return Ok(()),
        PlanState::Draft => "it is a draft; submit it first",
        PlanState::AwaitingApproval => {
            "it is awaiting approval; a person must approve it before any subtask starts"
        }
        PlanState::Paused => "it is paused; resume it first",
        PlanState::Done | PlanState::Failed | PlanState::Abandoned => {
            "it is finished; recover it first"
        }
    };
    Err(PlanError::PlanNotStartable {
        state: plan.state,
        why: why.into(),
    })
}

fn settled(plan: &Plan, id: SubtaskId) -> bool {
    plan.subtask(id).is_some_and(|s| s.state.is_settled())
}
