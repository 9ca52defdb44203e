//! The end of a suite run as the run log tells it (and so the webhooks:
//! `suite_finished`): how a suite run stands ([`SuiteState`]) and what
//! its end says ([`SuiteSummary`]). Below the run log's entries, which
//! carry it; the suite runs themselves are [`crate::suite`]'s.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::SuiteRunId;

plan_engine::wire_enum! {
    /// Where a suite run stands.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum SuiteState: "suite state" {
        Running = "running",
        /// Every case was judged, or skipped when the budget ran out.
        Done = "done",
        Cancelled = "cancelled",
        /// The suite could not go on (the server stopped under it).
        Failed = "failed",
    }
}

impl SuiteState {
    pub fn is_finished(self) -> bool {
        self != SuiteState::Running
    }
}

/// What the run log (and so the webhooks) says when a suite run ends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SuiteSummary {
    pub suite: SuiteRunId,
    pub state: SuiteState,
    pub model: String,
    pub version: String,
    pub passed: u32,
    pub failed: u32,
    pub skipped: u32,
    pub score: Option<f64>,
    /// The cases whose outcome changed since the previous suite run on
    /// the same model, by name.
    pub changed: Vec<String>,
}

impl SuiteSummary {
    /// The summary in one sentence (the webhooks' text).
    pub fn sentence(&self) -> String {
        let score = self.score.map_or("no score".to_string(), |s| {
            format!("score {:.0} %", s * 100.0)
        });
        let mut text = format!(
            "suite run {} on {} (planboard {}) {}: {} passed, {} failed, {} skipped, {score}",
            self.suite,
            self.model,
            self.version,
            self.state,
            self.passed,
            self.failed,
            self.skipped
        );
        if !self.changed.is_empty() {
            text.push_str(&format!(
                "; changed since the last run: {}",
                self.changed.join(", ")
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suites_end_says_its_score_and_what_changed_in_a_sentence() {
        let summary = SuiteSummary {
            suite: uuid::Uuid::nil(),
            state: SuiteState::Done,
            model: "qwen".into(),
            version: "0.1.0".into(),
            passed: 1,
            failed: 1,
            skipped: 0,
            score: Some(0.5),
            changed: vec!["sales".into()],
        };
        assert_eq!(
            summary.sentence(),
            "suite run 00000000-0000-0000-0000-000000000000 on qwen (planboard 0.1.0) done: \
             1 passed, 1 failed, 0 skipped, score 50 %; changed since the last run: sales"
        );
        assert!(SuiteState::Cancelled.is_finished() && !SuiteState::Running.is_finished());
    }
}
