//! The run's state machine, and who decided its mode.

use plan_engine::Mode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

plan_engine::wire_enum! {
    /// The run's state machine; see [`RunState::can_become`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum RunState: "run state" {
        Classifying = "classifying",
        Planning = "planning",
        AwaitingApproval = "awaiting_approval",
        Running = "running",
        Paused = "paused",
        Done = "done",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

impl RunState {
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            RunState::Done | RunState::Failed | RunState::Cancelled
        )
    }

    /// The run state table. Planning follows classifying, or a rejection,
    /// or a mode override; a finished run stays finished.
    pub fn can_become(self, to: RunState) -> bool {
        use RunState::*;
        match self {
            Classifying => matches!(to, Planning | Failed | Cancelled),
            Planning => matches!(to, AwaitingApproval | Running | Failed | Cancelled),
            AwaitingApproval => matches!(to, Planning | Running | Failed | Cancelled),
            Running => matches!(to, Paused | Done | Failed | Cancelled),
            Paused => matches!(to, Running | Failed | Cancelled | Done),
            Done | Failed | Cancelled => false,
        }
    }
}

plan_engine::wire_enum! {
    /// Who decided the mode.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    pub enum DecidedBy: "decider" {
        /// The person who started the run forced it.
        Person = "person",
        /// A rule was certain.
        Rules = "rules",
        Model = "model",
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Classification {
    pub mode: Mode,
    pub reason: String,
    pub confidence: f32,
    pub by: DecidedBy,
    /// The answer is written in words (a poem, an email, an explanation, a
    /// translation, an answer from the task's own text): one step, no
    /// tool, its result the answer (the agent's rule `words_only`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_words: bool,
    /// The given files the written answer is about, read whole by the
    /// writer (the agent's rule `given_texts_written_about`): decided once,
    /// with the rest, so a restart or a rule switched off since never
    /// leaves the writer without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub about: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_runs_never_move() {
        for from in [RunState::Done, RunState::Failed, RunState::Cancelled] {
            assert!(from.is_finished());
            assert!(RunState::ALL.iter().all(|to| !from.can_become(*to)));
        }
        assert!(
            RunState::AwaitingApproval.can_become(RunState::Planning),
            "reject → re-plan"
        );
        assert!(!RunState::Classifying.can_become(RunState::Running));
    }
}
