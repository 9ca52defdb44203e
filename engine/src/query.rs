//! Which plans a list shows: one filter for the API's list, the board's
//! plans page and history, so "running" means the same everywhere.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{Mode, Plan, PlanState};

/// A plan state, or a group of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StateFilter {
    Draft,
    AwaitingApproval,
    Approved,
    Running,
    Paused,
    Done,
    Failed,
    Abandoned,
    /// Approved, running or paused: under way (what people call running).
    Active,
    /// Done, failed or abandoned.
    Finished,
}

impl StateFilter {
    pub const ALL: [StateFilter; 10] = [
        StateFilter::Draft,
        StateFilter::AwaitingApproval,
        StateFilter::Approved,
        StateFilter::Running,
        StateFilter::Paused,
        StateFilter::Done,
        StateFilter::Failed,
        StateFilter::Abandoned,
        StateFilter::Active,
        StateFilter::Finished,
    ];

    pub fn admits(self, state: PlanState) -> bool {
        use PlanState as S;
        match self {
            StateFilter::Draft => state == S::Draft,
            StateFilter::AwaitingApproval => state == S::AwaitingApproval,
            StateFilter::Approved => state == S::Approved,
            StateFilter::Running => state == S::Running,
            StateFilter::Paused => state == S::Paused,
            StateFilter::Done => state == S::Done,
            StateFilter::Failed => state == S::Failed,
            StateFilter::Abandoned => state == S::Abandoned,
            StateFilter::Active => matches!(state, S::Approved | S::Running | S::Paused),
            StateFilter::Finished => state.is_finished(),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StateFilter::Draft => "draft",
            StateFilter::AwaitingApproval => "awaiting_approval",
            StateFilter::Approved => "approved",
            StateFilter::Running => "running",
            StateFilter::Paused => "paused",
            StateFilter::Done => "done",
            StateFilter::Failed => "failed",
            StateFilter::Abandoned => "abandoned",
            StateFilter::Active => "active",
            StateFilter::Finished => "finished",
        }
    }

    pub fn parse(text: &str) -> Option<StateFilter> {
        StateFilter::ALL.into_iter().find(|f| f.as_str() == text)
    }
}

/// A list's filter: every given part must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanQuery {
    #[serde(default)]
    pub state: Option<StateFilter>,
    #[serde(default)]
    pub mode: Option<Mode>,
    /// Text the title contains, ignoring case; empty matches every title.
    #[serde(default)]
    pub text: String,
}

impl PlanQuery {
    pub fn matches(&self, plan: &Plan) -> bool {
        let text = self.text.trim();
        self.state.is_none_or(|s| s.admits(plan.state))
            && self.mode.is_none_or(|m| m == plan.mode)
            && (text.is_empty() || contains_ignoring_case(&plan.title, text))
    }
}

fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_means_under_way_and_finished_means_ended() {
        assert!(StateFilter::Active.admits(PlanState::Approved));
        assert!(StateFilter::Active.admits(PlanState::Paused));
        assert!(!StateFilter::Active.admits(PlanState::AwaitingApproval));
        assert!(StateFilter::Finished.admits(PlanState::Abandoned));
        assert!(!StateFilter::Finished.admits(PlanState::Running));
        for f in StateFilter::ALL {
            assert_eq!(StateFilter::parse(f.as_str()), Some(f));
            let json = serde_json::to_string(&f).unwrap();
            assert_eq!(
                json,
                format!("\"{}\"", f.as_str()),
                "serde and as_str agree"
            );
        }
    }
}
