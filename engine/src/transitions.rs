//! The two state machines, each enforced by one exhaustive `match`.
//!
//! # Subtasks
//!
//! | from \ to   | todo    | in_progress | blocked | done     | failed | skipped |
//! |-------------|---------|-------------|---------|----------|--------|---------|
//! | todo        | –       | start*      | block   | ✗        | ✗      | skip    |
//! | in_progress | release | –           | block   | complete | fail   | skip    |
//! | blocked     | unblock | start*      | –       | ✗        | ✗      | skip    |
//! | done        | reopen† | ✗           | ✗       | –        | ✗      | ✗       |
//! | failed      | retry   | start*      | ✗       | ✗        | –      | skip    |
//! | skipped     | reopen† | ✗           | ✗       | ✗        | ✗      | –       |
//!
//! \* start is guarded: the plan is approved or running (so never before a
//! required approval), every dependency is done or skipped, and fewer than
//! `max_parallel` subtasks are in progress. Because a subtask only starts once
//! its dependencies are settled, subtasks in progress together are always
//! independent of each other.
//! † reopen is guarded: no dependent may be in progress or done, so a started
//! subtask never waits on an unsettled dependency.
//!
//! # Plans
//!
//! | from              | to                                                            |
//! |-------------------|---------------------------------------------------------------|
//! | draft             | awaiting_approval (submit), approved (submit or approve), abandoned |
//! | awaiting_approval | approved (approve), draft (reject), abandoned                 |
//! | approved          | running (first start), paused, done‡, failed, abandoned       |
//! | running           | paused, done‡, failed, abandoned                              |
//! | paused            | running (resume), done‡, failed, abandoned                    |
//! | done/failed/abandoned | approved or running (recover)                            |
//!
//! ‡ done is guarded: every subtask is done or skipped.

use crate::model::{PlanState, SubtaskState};

/// What a legal subtask transition means; the fold and the hints use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubtaskMove {
    Start,
    Release,
    Block,
    Unblock,
    Complete,
    Fail,
    Skip,
    Retry,
    Reopen,
}

/// The subtask transition table. `Err` carries the reason, in words for the model.
pub fn subtask_transition(
    from: SubtaskState,
    to: SubtaskState,
) -> Result<SubtaskMove, &'static str> {
    use SubtaskState::*;
    match (from, to) {
        (Todo, InProgress) | (Blocked, InProgress) | (Failed, InProgress) => Ok(SubtaskMove::Start),
        (InProgress, Todo) => Ok(SubtaskMove::Release),
        (Todo, Blocked) | (InProgress, Blocked) => Ok(SubtaskMove::Block),
        (Blocked, Todo) => Ok(SubtaskMove::Unblock),
        (InProgress, Done) => Ok(SubtaskMove::Complete),
        (InProgress, Failed) => Ok(SubtaskMove::Fail),
        (Todo, Skipped) | (InProgress, Skipped) | (Blocked, Skipped) | (Failed, Skipped) => {
            Ok(SubtaskMove::Skip)
        }
        (Failed, Todo) => Ok(SubtaskMove::Retry),
        (Done, Todo) | (Skipped, Todo) => Ok(SubtaskMove::Reopen),
        (Todo, Done) | (Blocked, Done) => {
            Err("a subtask is done only after it was in progress; start it first")
        }
        (Todo, Failed) | (Blocked, Failed) => {
            Err("it never started, so it cannot fail; skip it or block it instead")
        }
        (Failed, Done) => Err("it failed; retry it (start it again) before completing it"),
        (Failed, Blocked) => Err("it failed; set it back to todo before blocking it"),
        (Done, InProgress) | (Done, Blocked) | (Done, Failed) | (Done, Skipped) => {
            Err("it is done; reopen it (set it back to todo) first")
        }
        (Skipped, InProgress) | (Skipped, Blocked) | (Skipped, Done) | (Skipped, Failed) => {
            Err("it was skipped; reopen it (set it back to todo) first")
        }
        (Todo, Todo)
        | (InProgress, InProgress)
        | (Blocked, Blocked)
        | (Done, Done)
        | (Failed, Failed)
        | (Skipped, Skipped) => Err("it already is in that state"),
    }
}

/// The plan transition table. Guards beyond the table (approval, all
/// subtasks settled) are checked by the command that asks for the move.
pub fn plan_transition(from: PlanState, to: PlanState) -> Result<(), &'static str> {
    use PlanState::*;
    let allowed = match from {
        Draft => matches!(to, AwaitingApproval | Approved | Abandoned),
        AwaitingApproval => matches!(to, Approved | Draft | Abandoned),
        Approved => matches!(to, Running | Paused | Done | Failed | Abandoned),
        Running => matches!(to, Paused | Done | Failed | Abandoned),
        Paused => matches!(to, Running | Done | Failed | Abandoned),
        Done | Failed | Abandoned => matches!(to, Approved | Running),
    };
    if allowed {
        return Ok(());
    }
    Err(match (from, to) {
        (_, _) if from == to => "it already is in that state",
        (Draft, _) => "a draft must be submitted (and approved, if approval is required) first",
        (AwaitingApproval, _) => "it is waiting for a person to approve or reject it",
        (Done | Failed | Abandoned, _) => "it is finished; recover it first",
        (Paused, _) => "it is paused; resume it first",
        _ => "that move is not in the plan state table",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_of_subtask_states_has_an_answer_and_only_same_state_pairs_say_already() {
        for from in SubtaskState::ALL {
            for to in SubtaskState::ALL {
                let result = subtask_transition(from, to);
                if from == to {
                    assert_eq!(result, Err("it already is in that state"));
                }
            }
        }
    }

    #[test]
    fn a_todo_subtask_cannot_jump_to_done() {
        assert!(subtask_transition(SubtaskState::Todo, SubtaskState::Done).is_err());
    }

    #[test]
    fn a_failed_subtask_can_be_retried_or_skipped() {
        assert_eq!(
            subtask_transition(SubtaskState::Failed, SubtaskState::InProgress),
            Ok(SubtaskMove::Start)
        );
        assert_eq!(
            subtask_transition(SubtaskState::Failed, SubtaskState::Skipped),
            Ok(SubtaskMove::Skip)
        );
    }

    #[test]
    fn a_plan_awaiting_approval_cannot_start_running() {
        assert!(plan_transition(PlanState::AwaitingApproval, PlanState::Running).is_err());
    }

    #[test]
    fn a_finished_plan_can_only_be_recovered() {
        assert!(plan_transition(PlanState::Done, PlanState::Paused).is_err());
        assert!(plan_transition(PlanState::Abandoned, PlanState::Running).is_ok());
    }
}
