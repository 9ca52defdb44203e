//! Events: what happened to a plan, and the fold that replays them.
//!
//! One event type feeds the database log, the live stream and the board's
//! history replay. Events carry results, not requests: the fold never
//! re-decides anything, so replaying a log always gives the same plan, and
//! folding a plan's events from empty gives that plan exactly.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::PlanError;
use crate::model::{
    ApprovalStatus, Comment, Plan, PlanId, PlanInfo, PlanState, Subtask, SubtaskId, SubtaskState,
    Timestamp,
};
use crate::transitions::{subtask_transition, SubtaskMove};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    pub plan_id: PlanId,
    /// The plan's version after the command; all events of one command share it.
    pub version: u64,
    /// The agent or person whose command this was; shared by the command's
    /// events, so copying an event never copies the name.
    pub actor: std::sync::Arc<str>,
    pub at: Timestamp,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    PlanCreated {
        plan: Box<Plan>,
    },
    // Large payloads are boxed so every event stays small to copy and log.
    InfoUpdated {
        info: Box<PlanInfo>,
    },
    SubtaskAdded {
        subtask: Box<Subtask>,
        index: usize,
        /// With `rewired`: these subtasks' dependency on `rewired_from` now points at the new one.
        rewired_from: Option<SubtaskId>,
        rewired: Vec<SubtaskId>,
        /// These subtasks gained the new one as a dependency.
        required_by: Vec<SubtaskId>,
    },
    SubtaskEdited {
        id: SubtaskId,
        fields: Box<SubtaskFields>,
    },
    DependenciesSet {
        id: SubtaskId,
        dependencies: Vec<SubtaskId>,
    },
    SubtaskDeleted {
        id: SubtaskId,
        /// The not-yet-started dependents that inherited its dependencies.
        inherited_by: Vec<SubtaskId>,
    },
    SubtaskMoved {
        id: SubtaskId,
        to_index: usize,
    },
    SubtaskStateChanged {
        id: SubtaskId,
        from: SubtaskState,
        to: SubtaskState,
        note: Option<String>,
    },
    SubtaskNotesSet {
        id: SubtaskId,
        notes: String,
    },
    SubtasksReplaced {
        subtasks: Vec<Subtask>,
        next_subtask_id: u32,
    },
    PlanStateChanged {
        from: PlanState,
        to: PlanState,
        reason: Option<String>,
    },
    ApprovalDecided {
        status: ApprovalStatus,
        comment: Option<String>,
    },
    CommentAdded {
        comment: Box<Comment>,
    },
}

/// A subtask's editable text fields, all present: an edit carries the new values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubtaskFields {
    pub name: String,
    pub description: String,
    pub expected_outcome: String,
    pub reasoning: String,
    pub assignee: Option<String>,
    /// Absent in events logged before subtasks had tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

impl EventKind {
    /// The snake_case name used as the SSE event name and in the log's `kind` column.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::PlanCreated { .. } => "plan_created",
            EventKind::InfoUpdated { .. } => "info_updated",
            EventKind::SubtaskAdded { .. } => "subtask_added",
            EventKind::SubtaskEdited { .. } => "subtask_edited",
            EventKind::DependenciesSet { .. } => "dependencies_set",
            EventKind::SubtaskDeleted { .. } => "subtask_deleted",
            EventKind::SubtaskMoved { .. } => "subtask_moved",
            EventKind::SubtaskStateChanged { .. } => "subtask_state_changed",
            EventKind::SubtaskNotesSet { .. } => "subtask_notes_set",
            EventKind::SubtasksReplaced { .. } => "subtasks_replaced",
            EventKind::PlanStateChanged { .. } => "plan_state_changed",
            EventKind::ApprovalDecided { .. } => "approval_decided",
            EventKind::CommentAdded { .. } => "comment_added",
        }
    }
}

impl Plan {
    /// Rebuilds a plan from its whole log, which must start with `plan_created`.
    pub fn replay<'a>(events: impl IntoIterator<Item = &'a Event>) -> Result<Plan, PlanError> {
        let mut events = events.into_iter();
        let Some(first) = events.next() else {
            return Err(PlanError::invalid("events", "the log is empty"));
        };
        let EventKind::PlanCreated { plan } = &first.kind else {
            return Err(PlanError::invalid(
                "events",
                format!(
                    "the log must start with plan_created, not {}",
                    first.kind.name()
                ),
            ));
        };
        let mut plan = plan.as_ref().clone();
        plan.index_invalidate();
        for event in events {
            if event.plan_id != plan.id || event.version < plan.version {
                return Err(PlanError::invalid(
                    "events",
                    format!(
                        "event for plan {} at version {} does not follow plan {} at version {}",
                        event.plan_id, event.version, plan.id, plan.version
                    ),
                ));
            }
            plan.fold(event);
        }
        Ok(plan)
    }

    /// Applies one event's effect. Decisions were made by `apply`; this only records them.
    pub fn fold(&mut self, event: &Event) {
        self.version = event.version;
        self.updated_at = event.at;
        match &event.kind {
            EventKind::PlanCreated { plan } => {
                *self = plan.as_ref().clone();
                self.index_invalidate();
            }
            EventKind::InfoUpdated { info } => {
                self.title.clone_from(&info.title);
                self.goal.clone_from(&info.goal);
                self.description.clone_from(&info.description);
                self.expected_outcome.clone_from(&info.expected_outcome);
                self.mode = info.mode;
                self.max_subtasks = info.max_subtasks;
                self.max_parallel = info.max_parallel;
                self.need_user_confirm = info.need_user_confirm;
            }
            EventKind::SubtaskAdded {
                subtask,
                index,
                rewired_from,
                rewired,
                required_by,
            } => {
                let new_id = subtask.id;
                for shared in self.subtasks.iter_mut() {
                    let rewire = (*rewired_from).filter(|_| rewired.contains(&shared.id));
                    let required = required_by.contains(&shared.id);
                    let adds = required && !shared.dependencies.contains(&new_id);
                    if rewire.is_none() && !adds {
                        continue;
                    }
                    let s = Arc::make_mut(shared);
                    if let Some(from) = rewire {
                        replace_dependency(&mut s.dependencies, from, &[new_id]);
                    }
                    // After the rewiring, which may have added it already.
                    if required && !s.dependencies.contains(&new_id) {
                        s.dependencies.push(new_id);
                    }
                }
                self.subtasks.insert(
                    (*index).min(self.subtasks.len()),
                    Arc::new(subtask.as_ref().clone()),
                );
                // Saturating: a log never makes the fold panic (apply
                // refuses to hand out the last id).
                self.next_subtask_id = self.next_subtask_id.max(new_id.0.saturating_add(1));
                self.index_invalidate();
            }
            EventKind::SubtaskEdited { id, fields } => {
                if let Some(s) = self.subtask_mut(*id) {
                    s.name.clone_from(&fields.name);
                    s.description.clone_from(&fields.description);
                    s.expected_outcome.clone_from(&fields.expected_outcome);
                    s.reasoning.clone_from(&fields.reasoning);
                    s.assignee.clone_from(&fields.assignee);
                    s.tool.clone_from(&fields.tool);
                }
            }
            EventKind::DependenciesSet { id, dependencies } => {
                if let Some(s) = self.subtask_mut(*id) {
                    s.dependencies.clone_from(dependencies);
                }
                self.index_invalidate();
            }
            EventKind::SubtaskDeleted { id, inherited_by } => {
                if let Some(p) = self.position(*id) {
                    let removed = self.subtasks.remove(p);
                    for shared in self.subtasks.iter_mut() {
                        if !shared.dependencies.contains(id) {
                            continue;
                        }
                        let s = Arc::make_mut(shared);
                        if inherited_by.contains(&s.id) {
                            replace_dependency(&mut s.dependencies, *id, &removed.dependencies);
                        } else {
                            s.dependencies.retain(|d| d != id);
                        }
                    }
                }
                self.index_invalidate();
            }
            EventKind::SubtaskMoved { id, to_index } => {
                if let Some(p) = self.position(*id) {
                    let s = self.subtasks.remove(p);
                    self.subtasks
                        .insert((*to_index).min(self.subtasks.len()), s);
                }
                self.index_invalidate();
            }
            EventKind::SubtaskStateChanged { id, from, to, note } => {
                self.fold_state_change(*id, *from, *to, note.clone(), event.at);
            }
            EventKind::SubtaskNotesSet { id, notes } => {
                if let Some(s) = self.subtask_mut(*id) {
                    s.notes.clone_from(notes);
                }
            }
            EventKind::SubtasksReplaced {
                subtasks,
                next_subtask_id,
            } => {
                self.subtasks = subtasks.iter().cloned().map(Arc::new).collect();
                self.next_subtask_id = *next_subtask_id;
                self.index_invalidate();
            }
            EventKind::PlanStateChanged { from, to, reason } => {
                self.state = *to;
                if to.is_finished() {
                    self.finished_at = Some(event.at);
                    self.outcome.clone_from(reason);
                } else if from.is_finished() {
                    self.finished_at = None;
                    self.outcome = None;
                }
            }
            EventKind::ApprovalDecided { status, comment } => {
                self.approval.status = *status;
                self.approval.by = Some(event.actor.to_string());
                self.approval.comment.clone_from(comment);
                self.approval.at = Some(event.at);
            }
            EventKind::CommentAdded { comment } => {
                self.next_comment_id = self.next_comment_id.max(comment.id.saturating_add(1));
                self.comments.push(comment.as_ref().clone());
            }
        }
    }

    fn fold_state_change(
        &mut self,
        id: SubtaskId,
        from: SubtaskState,
        to: SubtaskState,
        note: Option<String>,
        at: Timestamp,
    ) {
        let Some(s) = self.subtask_mut(id) else {
            return;
        };
        s.state = to;
        if subtask_transition(from, to) == Ok(SubtaskMove::Start) {
            s.attempts += 1;
            s.started_at = Some(at);
        }
        let finished = matches!(
            to,
            SubtaskState::Done | SubtaskState::Failed | SubtaskState::Skipped
        );
        s.finished_at = finished.then_some(at);
        s.outcome = if finished || to == SubtaskState::Blocked {
            note
        } else {
            None
        };
        self.index_state_changed(id, from, to);
    }

    pub(crate) fn subtask_mut(&mut self, id: SubtaskId) -> Option<&mut Subtask> {
        let p = self.position(id)?;
        self.subtasks.get_mut(p).map(Arc::make_mut)
    }
}

/// Replaces `old` in a dependency list by `new` (keeping order, no duplicates).
fn replace_dependency(deps: &mut Vec<SubtaskId>, old: SubtaskId, new: &[SubtaskId]) {
    let Some(at) = deps.iter().position(|d| *d == old) else {
        return;
    };
    deps.remove(at);
    let mut insert_at = at;
    for n in new {
        if !deps.contains(n) {
            deps.insert(insert_at, *n);
            insert_at += 1;
        }
    }
}
