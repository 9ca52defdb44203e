//! Which plans a list shows: one filter for the API's list, the board's
//! plans page and history, so "running" means the same everywhere.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{Mode, Plan, PlanState};

crate::wire_enum! {
    /// A plan state, or a group of them.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum StateFilter: "state filter (a plan state, active or finished)" {
        Draft = "draft",
        AwaitingApproval = "awaiting_approval",
        Approved = "approved",
        Running = "running",
        Paused = "paused",
        Done = "done",
        Failed = "failed",
        Abandoned = "abandoned",
        /// Approved, running or paused: under way (what people call running).
        Active = "active",
        /// Done, failed or abandoned.
        Finished = "finished",
    }
}

impl StateFilter {
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
            assert_eq!(StateFilter::from_wire(f.as_str()), Some(f));
            let json = serde_json::to_string(&f).unwrap();
            assert_eq!(
                json,
                format!("\"{}\"", f.as_str()),
                "serde and as_str agree"
            );
        }
    }
}
