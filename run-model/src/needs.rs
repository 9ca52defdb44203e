//! "Needs you": what waits for a person across every plan and run — a
//! plan to approve, a question from the agent, a guarded tool call, a run
//! paused — each pointing at the place to act.

use plan_engine::{PlanId, SubtaskId, Timestamp};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::RunId;

plan_engine::wire_enum! {
    /// What kind of thing waits.
    #[derive(
        Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
    )]
    pub enum NeedKind: "need kind (approval, question, tool_call or stuck)" {
        /// A plan waits for approval before it runs.
        Approval = "approval",
        /// The agent asked a question on a subtask and waits for the answer.
        Question = "question",
        /// The agent asks to use a guarded tool.
        ToolCall = "tool_call",
        /// A run is paused (its budget reached, or a person paused it) or
        /// stuck on a subtask nobody can do: it goes on when a person acts.
        Stuck = "stuck",
    }
}

/// One thing waiting for a person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Need {
    pub kind: NeedKind,
    pub plan_id: PlanId,
    pub plan_title: String,
    /// The agent's run, when one is involved.
    pub run_id: Option<RunId>,
    pub subtask: Option<SubtaskId>,
    /// The question, the tool and its arguments, or why the run stopped
    /// (at most [`Need::TEXT_CHARS`] characters).
    pub text: String,
    /// Since when it waits (the plan's last change).
    pub since: Timestamp,
    /// The board address where a person acts on it.
    pub href: String,
    /// It has waited longer than the operator's reminder time
    /// (`PLANBOARD_APPROVAL_REMIND_MINUTES`, an approval).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub overdue: bool,
    /// Who still has to approve under a two-person rule, by name (`any
    /// other person` when the rule only keeps the starter out); empty:
    /// anyone who may.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_for: Vec<String>,
}

impl Need {
    pub const TEXT_CHARS: usize = 300;

    /// A need with its address: a question's answer box, else the plan.
    pub fn new(
        kind: NeedKind,
        plan: (PlanId, &str),
        run_id: Option<RunId>,
        subtask: Option<SubtaskId>,
        text: &str,
        since: Timestamp,
    ) -> Need {
        let href = match (kind, subtask) {
            (NeedKind::Question, Some(s)) => format!("/plans/{}#question-{}", plan.0, s.0),
            _ => format!("/plans/{}", plan.0),
        };
        Need {
            kind,
            plan_id: plan.0,
            plan_title: plan.1.to_string(),
            run_id,
            subtask,
            text: Need::cut(text),
            since,
            href,
            overdue: false,
            waiting_for: Vec::new(),
        }
    }

    /// `text` within [`Need::TEXT_CHARS`] characters.
    pub fn cut(text: &str) -> String {
        plan_engine::text::ellipsis(text.trim(), Need::TEXT_CHARS)
    }

    /// Oldest first within each kind, approvals first: what has waited
    /// longest is seen first.
    pub fn sort(needs: &mut [Need]) {
        needs.sort_by(|a, b| {
            (a.kind, a.since, a.plan_id, a.subtask).cmp(&(b.kind, b.since, b.plan_id, b.subtask))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(kind: NeedKind, secs: i64, subtask: Option<u32>) -> Need {
        Need::new(
            kind,
            (uuid::Uuid::nil(), "p"),
            None,
            subtask.map(SubtaskId),
            "",
            Timestamp::default() + chrono::Duration::seconds(secs),
        )
    }

    #[test]
    fn needs_are_approvals_first_then_oldest_first() {
        let mut needs = vec![
            need(NeedKind::Stuck, 1, None),
            need(NeedKind::Question, 5, Some(2)),
            need(NeedKind::Approval, 9, None),
            need(NeedKind::Question, 3, Some(1)),
        ];
        Need::sort(&mut needs);
        let order: Vec<(NeedKind, i64)> = needs
            .iter()
            .map(|n| (n.kind, (n.since - Timestamp::default()).num_seconds()))
            .collect();
        assert_eq!(
            order,
            [
                (NeedKind::Approval, 9),
                (NeedKind::Question, 3),
                (NeedKind::Question, 5),
                (NeedKind::Stuck, 1)
            ]
        );
    }

    #[test]
    fn a_question_links_to_its_answer_box_and_long_text_is_cut() {
        let q = need(NeedKind::Question, 0, Some(4));
        assert_eq!(
            q.href,
            "/plans/00000000-0000-0000-0000-000000000000#question-4"
        );
        assert_eq!(
            need(NeedKind::Approval, 0, None).href,
            "/plans/00000000-0000-0000-0000-000000000000"
        );
        let long = "x".repeat(400);
        assert_eq!(Need::cut(&long).chars().count(), Need::TEXT_CHARS + 1);
    }
}
