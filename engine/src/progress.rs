//! Progress: counts per state, percent, ready list and critical path.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::dag::critical_path;
use crate::model::{Plan, SubtaskId, SubtaskState};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Progress {
    pub total: usize,
    pub todo: usize,
    pub in_progress: usize,
    pub blocked: usize,
    pub done: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Done or skipped, as a whole percent of all subtasks (100 for an empty plan).
    pub percent: u8,
    pub ready: Vec<SubtaskId>,
    /// The longest chain of unfinished dependent subtasks, first to last.
    pub critical_path: Vec<SubtaskId>,
}

impl Plan {
    /// Settled (done or skipped) subtasks as a whole percent.
    pub fn percent(&self) -> u8 {
        let total = self.subtasks.len();
        if total == 0 {
            return 100;
        }
        let settled = self.count(SubtaskState::Done) + self.count(SubtaskState::Skipped);
        (settled * 100 / total) as u8
    }

    pub fn progress(&self) -> Progress {
        Progress {
            total: self.subtasks.len(),
            todo: self.count(SubtaskState::Todo),
            in_progress: self.count(SubtaskState::InProgress),
            blocked: self.count(SubtaskState::Blocked),
            done: self.count(SubtaskState::Done),
            failed: self.count(SubtaskState::Failed),
            skipped: self.count(SubtaskState::Skipped),
            percent: self.percent(),
            ready: self.ready(),
            critical_path: critical_path(self),
        }
    }
}
