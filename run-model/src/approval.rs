//! Approval records: every decision a person makes for the agent, kept for
//! audit. A plan version approved or rejected, a guarded call approved,
//! edited or denied, a budget raised, a drifted plan approved again, a
//! grant given or revoked: each is an [`ApprovalRecord`] naming who
//! decided, when, exactly what (the plan's version and the SHA-256 of its
//! content, or the call's tool and the SHA-256 of its canonical
//! arguments), the decision and the note.

use plan_engine::{PlanId, Timestamp};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::RunId;
pub use crate::rule::person_of;

/// An approval record's id.
pub type ApprovalId = uuid::Uuid;

plan_engine::wire_enum! {
    /// What was decided on.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum ApprovalKind: "approval kind (plan, tool_call, budget, reapproval or grant)" {
        /// A plan version, approved (it may run) or rejected (re-planned).
        Plan = "plan",
        /// A guarded tool call, approved, edited or denied.
        ToolCall = "tool_call",
        /// A budget a run reached, raised so it goes on.
        Budget = "budget",
        /// A plan that drifted from its approved version, approved again.
        Reapproval = "reapproval",
        /// A tool granted for a run (no more asking), or the grant revoked.
        Grant = "grant",
    }
}

plan_engine::wire_enum! {
    /// What the person decided.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum ApprovalDecision: "approval decision (approved, edited, denied or revoked)" {
        /// As asked.
        Approved = "approved",
        /// With the person's changes (a guarded call's arguments).
        Edited = "edited",
        /// Refused: a plan rejected, a call denied.
        Denied = "denied",
        /// A grant taken back.
        Revoked = "revoked",
    }
}

/// One decision as it is kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalRecord {
    pub id: ApprovalId,
    pub kind: ApprovalKind,
    pub decision: ApprovalDecision,
    /// Who decided, as the plan's events name them: the token's name or
    /// the local user, with the agent acting for them
    /// (`alice · release-bot`).
    pub by: String,
    /// The person alone ([`person_of`] `by`): what `?person=` matches.
    pub person: String,
    pub at: Timestamp,
    pub run_id: Option<RunId>,
    pub plan_id: Option<PlanId>,
    /// The plan's version the decision was made on.
    pub plan_version: Option<u64>,
    /// Hex SHA-256 of exactly what was decided: the plan's content
    /// ([`crate::digest::plan_digest`]) for a plan or a re-approval; the
    /// call ([`crate::call_digest`] of its tool and the arguments that
    /// ran, the person's for an edit) for a guarded call; the canonical
    /// JSON of the new budget or of the grant otherwise.
    pub digest: String,
    /// The tool of a guarded call or a grant.
    pub tool: Option<String>,
    /// The guarded call's id, or the grant's.
    pub call: Option<String>,
    /// What the person said (a rejection's comment, a denial's reason).
    pub note: Option<String>,
    /// Milliseconds from being asked to the decision, when known: how
    /// long people take (the approvals' insights).
    pub waited_ms: Option<u64>,
    /// What else the decision holds: a grant's pattern, a budget's limits.
    pub detail: Option<serde_json::Value>,
}

/// A run approved and held: it starts on a person's click, or at
/// `start_at` when set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Hold {
    pub run_id: RunId,
    pub plan_id: PlanId,
    /// When it starts by itself; `None`: on a click.
    pub start_at: Option<Timestamp>,
    /// Who approved it and held it, and when.
    pub by: String,
    pub at: Timestamp,
    /// When it started (a click or its time); `None`: still held.
    pub released_at: Option<Timestamp>,
}

/// The longest note kept with a decision, in characters.
pub const NOTE_CHARS: usize = 2000;

impl ApprovalRecord {
    /// A decision made `at` by `by`, with no plan, run or tool yet.
    pub fn new(
        id: ApprovalId,
        kind: ApprovalKind,
        decision: ApprovalDecision,
        by: &str,
        at: Timestamp,
        digest: String,
    ) -> ApprovalRecord {
        ApprovalRecord {
            id,
            kind,
            decision,
            by: by.to_string(),
            person: person_of(by).to_string(),
            at,
            run_id: None,
            plan_id: None,
            plan_version: None,
            digest,
            tool: None,
            call: None,
            note: None,
            waited_ms: None,
            detail: None,
        }
    }

    /// With the note, trimmed and cut to [`NOTE_CHARS`]; an empty one is none.
    pub fn with_note(mut self, note: Option<&str>) -> ApprovalRecord {
        self.note = note
            .map(|n| plan_engine::text::prefix(n.trim(), NOTE_CHARS).to_string())
            .filter(|n| !n.is_empty());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_person_is_the_actor_without_the_agent_acting_for_them() {
        assert_eq!(person_of("alice · release-bot"), "alice");
        assert_eq!(person_of("bob"), "bob");
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let record = ApprovalRecord::new(
            uuid::Uuid::nil(),
            ApprovalKind::Plan,
            ApprovalDecision::Denied,
            "alice · claude-code",
            at,
            "0".repeat(64),
        )
        .with_note(Some("  "));
        assert_eq!(record.person, "alice");
        assert_eq!(record.note, None);
        let json = serde_json::to_value(&record).unwrap();
        assert_eq!(json["kind"], "plan");
        assert_eq!(json["decision"], "denied");
    }
}
