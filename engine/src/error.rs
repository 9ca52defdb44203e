//! The engine's one error type. Every message is written for the model that
//! made the call: it names the offending ids and says what to do instead.

use crate::model::{PlanId, PlanState, SubtaskId, SubtaskState};

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("no plan has id {id}; list the plans to see their ids")]
    UnknownPlan { id: PlanId },

    #[error("no subtask has id {id}; the plan's subtask ids are {known}")]
    UnknownSubtask { id: SubtaskId, known: String },

    #[error("no subtask at index {index}; valid indexes are 0 to {last} (the plan has {len} subtasks)", last = .len.saturating_sub(1))]
    UnknownIndex { index: usize, len: usize },

    #[error("subtask {id} cannot depend on itself")]
    SelfDependency { id: SubtaskId },

    #[error("dependencies must form a DAG: this change would create the cycle {}; drop one of these dependencies", join_path(.path))]
    Cycle { path: Vec<SubtaskId> },

    #[error("subtask {id} cannot go from {from} to {to}: {why}")]
    IllegalTransition {
        id: SubtaskId,
        from: SubtaskState,
        to: SubtaskState,
        why: String,
    },

    #[error("subtask {id} cannot start yet: it depends on {}, which must be done or skipped first", join_waiting(.waiting_on))]
    NotReady {
        id: SubtaskId,
        waiting_on: Vec<(SubtaskId, SubtaskState)>,
    },

    #[error("at most {max} subtasks may be in progress at once and {} already are; finish one of them first", join_ids(.running))]
    ParallelLimit { max: u32, running: Vec<SubtaskId> },

    #[error("no subtask may start while the plan is {state}: {why}")]
    PlanNotStartable { state: PlanState, why: String },

    #[error("the plan is full: it may hold at most {max} subtasks; finish, revise or delete existing subtasks instead of adding more")]
    PlanFull { max: usize },

    #[error("the plan is {state} and can no longer change; recover it first to continue it")]
    PlanFinished { state: PlanState },

    #[error("the plan cannot go from {from} to {to}: {why}")]
    IllegalPlanTransition {
        from: PlanState,
        to: PlanState,
        why: String,
    },

    #[error("subtask {id} is {state}, so it can no longer be {what}; only todo or blocked subtasks can, so add a new subtask instead")]
    NotEditable {
        id: SubtaskId,
        state: SubtaskState,
        what: &'static str,
    },

    #[error("subtask {id} is in progress and cannot be deleted; set it back to todo, skip it or finish it first")]
    DeleteInProgress { id: SubtaskId },

    #[error("subtask {id} cannot be reopened while {} that depend on it have started; reset those first", join_ids(.dependents))]
    DependentsStarted {
        id: SubtaskId,
        dependents: Vec<SubtaskId>,
    },

    #[error("the plan cannot be done while subtasks {} are not done or skipped; finish or skip them, or finish the plan as failed or abandoned", join_ids(.ids))]
    UnfinishedSubtasks { ids: Vec<SubtaskId> },

    #[error("nothing can start: {0}")]
    NothingReady(String),

    #[error("no subtask is in progress; start one first")]
    NoCurrentSubtask,

    #[error("subtasks {} are all in progress; say which one you mean by its id", join_ids(.running))]
    AmbiguousCurrentSubtask { running: Vec<SubtaskId> },

    #[error("the plan changed since you read it: you sent version {expected}, it is now at version {actual}; read it again and retry")]
    StaleVersion { expected: u64, actual: u64 },

    #[error("{field} is too long: {len} characters, at most {max} allowed")]
    TooLong {
        field: &'static str,
        len: usize,
        max: usize,
    },

    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
}

impl PlanError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> PlanError {
        PlanError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    /// A stable machine-readable name, for APIs and tool results.
    pub fn code(&self) -> &'static str {
        match self {
            PlanError::UnknownPlan { .. }
            | PlanError::UnknownSubtask { .. }
            | PlanError::UnknownIndex { .. } => "not_found",
            PlanError::SelfDependency { .. } | PlanError::Cycle { .. } => "cycle",
            PlanError::IllegalTransition { .. }
            | PlanError::IllegalPlanTransition { .. }
            | PlanError::NotEditable { .. }
            | PlanError::DeleteInProgress { .. }
            | PlanError::DependentsStarted { .. }
            | PlanError::UnfinishedSubtasks { .. }
            | PlanError::PlanFinished { .. } => "illegal_transition",
            PlanError::NotReady { .. }
            | PlanError::ParallelLimit { .. }
            | PlanError::PlanNotStartable { .. }
            | PlanError::NoCurrentSubtask
            | PlanError::NothingReady(_)
            | PlanError::AmbiguousCurrentSubtask { .. } => "not_ready",
            PlanError::PlanFull { .. } => "plan_full",
            PlanError::StaleVersion { .. } => "conflict",
            PlanError::TooLong { .. } | PlanError::Invalid { .. } => "invalid",
        }
    }
}

pub(crate) fn join_ids(ids: &[SubtaskId]) -> String {
    let parts: Vec<String> = ids.iter().map(ToString::to_string).collect();
    parts.join(", ")
}

fn join_path(path: &[SubtaskId]) -> String {
    let parts: Vec<String> = path.iter().map(ToString::to_string).collect();
    parts.join(" → ")
}

fn join_waiting(waiting: &[(SubtaskId, SubtaskState)]) -> String {
    let parts: Vec<String> = waiting
        .iter()
        .map(|(id, state)| format!("subtask {id} ({state})"))
        .collect();
    parts.join(", ")
}

/// "1-4, 7, 9-12": a compact list of the ids that exist, for not-found errors.
pub(crate) fn summarize_ids(mut ids: Vec<SubtaskId>) -> String {
    if ids.is_empty() {
        return "none (the plan has no subtasks)".to_string();
    }
    ids.sort();
    let mut out: Vec<String> = Vec::new();
    let mut start = ids[0].0;
    let mut end = start;
    for id in ids.iter().skip(1).map(|i| i.0) {
        if id == end + 1 {
            end = id;
            continue;
        }
        out.push(range_text(start, end));
        start = id;
        end = id;
    }
    out.push(range_text(start, end));
    out.join(", ")
}

fn range_text(start: u32, end: u32) -> String {
    if start == end {
        start.to_string()
    } else {
        format!("{start}-{end}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_ids_are_summarized_as_ranges() {
        let ids = [1, 2, 3, 4, 7, 9, 10].map(SubtaskId).to_vec();
        assert_eq!(summarize_ids(ids), "1-4, 7, 9-10");
    }

    #[test]
    fn a_cycle_error_names_the_whole_path() {
        let err = PlanError::Cycle {
            path: [3, 5, 3].map(SubtaskId).to_vec(),
        };
        assert!(err.to_string().contains("3 → 5 → 3"), "{err}");
    }
}
