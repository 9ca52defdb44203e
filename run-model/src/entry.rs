//! The run log: one [`RunEntry`] per thing the agent did, the model calls
//! in it, and the pieces of a reply streamed while it is written.
//!
//! Run log entries are not plan events: they never bump the plan's
//! version. The plan holds the work (subtasks, states, results, approval,
//! pause); the run log holds how the agent got there.

use plan_engine::{PlanId, SubtaskId, SubtaskState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::state::{Classification, RunState};

// A setting of a run's config, defined there; `entry::ToolPolicy`, where
// it was first, still names it.
pub use crate::config::ToolPolicy;

plan_engine::wire_enum! {
    /// What a model call is for: recorded on the run log and used to pick the
    /// model.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum CallRole: "call role" {
        Classifier = "classifier",
        Planner = "planner",
        Executor = "executor",
        /// Computes a subtask's number again, independently, before it is kept.
        Checker = "checker",
        Adapter = "adapter",
        Compiler = "compiler",
    }
}

plan_engine::wire_enum! {
    /// Why a model call failed, sorted by what to do about it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum ErrorClass: "error class" {
        /// 429: wait (as long as the server asked, if it said) and try again.
        RateLimited = "rate_limited",
        /// 5xx: try again.
        Server = "server",
        /// No answer in time.
        Timeout = "timeout",
        /// The connection broke or the body could not be read.
        Dropped = "dropped",
        /// 400 and other refusals of the request itself.
        BadRequest = "bad_request",
        /// 401/403: the key is wrong.
        Auth = "auth",
        /// The prompt does not fit the model.
        ContextTooLong = "context_too_long",
        /// The account is out of money or quota.
        Quota = "quota",
    }
}

impl ErrorClass {
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorClass::RateLimited
                | ErrorClass::Server
                | ErrorClass::Timeout
                | ErrorClass::Dropped
        )
    }
}

plan_engine::wire_enum! {
    /// A person's answer to a guarded tool call.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum Verdict: "verdict" {
        /// Run it as the agent asked.
        Approved = "approved",
        /// Run it with the person's arguments.
        Edited = "edited",
        /// Do not run it; the reason goes back to the model.
        Denied = "denied",
        /// Nobody answered before the run restarted; the agent may ask again.
        Expired = "expired",
    }
}

plan_engine::wire_enum! {
    /// What the planner chose for a subtask that failed all its attempts
    /// (seed 002's failure analysis: recoverable or not).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum RecoveryDecision: "recovery decision (revise, workaround, skip or give_up)" {
        /// The subtask is rewritten and tried again.
        Revise = "revise",
        /// A new subtask takes its place (the failed one is skipped, what
        /// depended on it depends on the new one).
        Workaround = "workaround",
        /// The subtask is skipped: the rest of the plan reaches the goal
        /// without its result (a web page for what code can compute).
        Skip = "skip",
        /// Only a person can help: the run pauses on the failed subtask.
        GiveUp = "give_up",
    }
}

/// A recalled memory as the run log names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecalledMemory {
    pub id: crate::memory::MemoryId,
    pub kind: crate::memory::MemoryKind,
    /// Its first 200 characters.
    pub excerpt: String,
}

/// One line of the run log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunEntry {
    StateChanged {
        from: Option<RunState>,
        to: RunState,
        reason: String,
    },
    Classified(Classification),
    PlanProposed {
        plan_id: PlanId,
        round: u32,
        subtasks: usize,
    },
    Rejected {
        comment: String,
        round: u32,
    },
    /// What was wrong with a planner's answer and mended without the model
    /// (too many subtasks, a dependency on itself, …).
    PlanRepaired {
        repairs: Vec<String>,
    },
    LlmCall(LlmCallRecord),
    ToolCall {
        subtask: SubtaskId,
        name: String,
        arguments: serde_json::Value,
        result: String,
        ok: bool,
        duration_ms: u64,
        /// Answered from the recording of the run this one replays
        /// ([`crate::ReplayOf`]): nothing ran.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        replayed: bool,
    },
    /// A work tool is about to run (written before it runs, and waited
    /// for): a [`RunEntry::ToolCall`] of the same subtask ends it. One
    /// that nothing ended was running when the process stopped.
    ToolStarted {
        subtask: SubtaskId,
        name: String,
        arguments: serde_json::Value,
        /// [`crate::call_digest`] of the call.
        digest: String,
    },
    /// A call that was running when the process stopped (a crash, a kill,
    /// a restart), found when the run resumed; `times`: how often this
    /// same call (tool and arguments) of this subtask has been so far.
    ToolInterrupted {
        subtask: SubtaskId,
        name: String,
        digest: String,
        times: u32,
    },
    RetryScheduled {
        role: CallRole,
        attempt: u32,
        delay_ms: u64,
        class: ErrorClass,
        error: String,
    },
    /// A work tool failed for a moment (its server was down); the executor
    /// calls it again after `delay_ms`.
    ToolRetryScheduled {
        subtask: SubtaskId,
        name: String,
        attempt: u32,
        delay_ms: u64,
        error: String,
    },
    /// An attempt at a subtask failed; the agent tries it again after
    /// `delay_ms` (seed 002's backoff), telling the next attempt why.
    SubtaskRetry {
        subtask: SubtaskId,
        /// The attempt that failed (1-based) and how many the run allows.
        attempt: u32,
        of: u32,
        delay_ms: u64,
        reason: String,
    },
    /// The planner's choice for a subtask that failed every attempt.
    Recovery {
        subtask: SubtaskId,
        decision: RecoveryDecision,
        reason: String,
        /// The subtask that took its place (`workaround`).
        #[serde(default)]
        replacement: Option<SubtaskId>,
    },
    /// The memories recalled before classifying and planning.
    Recalled {
        memories: Vec<RecalledMemory>,
    },
    /// What the run left in memory when it ended.
    Remembered {
        count: usize,
    },
    /// A call of a tool whose policy is `ask` waits for a person.
    ToolApproval {
        subtask: SubtaskId,
        /// Names the request; the decision refers to it.
        call: String,
        name: String,
        arguments: serde_json::Value,
        /// Set by planboard's agent alone, when the server of a tool the
        /// agent is calling asks a person something mid-call (an MCP
        /// elicitation): the server's name. The entry is then the server's
        /// question, not a call waiting to run (the board says so).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        asker: Option<String>,
    },
    /// A person's decision on a [`RunEntry::ToolApproval`].
    ToolDecision {
        call: String,
        verdict: Verdict,
        /// Who decided (the token's name or the local user; `planboard`
        /// for an expiry).
        by: String,
        #[serde(default)]
        reason: Option<String>,
        /// The arguments the person gave instead (`edited`).
        #[serde(default)]
        arguments: Option<serde_json::Value>,
    },
    /// A call of an `ask` tool that a grant of the run covers: it runs
    /// without asking (the grant's approval record names who allowed it).
    ToolGranted {
        subtask: SubtaskId,
        name: String,
        arguments: serde_json::Value,
        /// The grant that covers it, and who gave it.
        grant: crate::GrantId,
        by: String,
    },
    /// The run's plan has waited for approval this long (seconds): people
    /// are told (Needs you, the webhooks); it is never approved by a
    /// timer.
    ApprovalOverdue {
        waited_secs: u64,
    },
    /// The plan drifted from the version a person approved: the run
    /// paused until a person approves it again.
    Drifted(crate::Drift),
    /// A person moved a subtask the agent was working on; its late result
    /// was dropped.
    Overridden {
        subtask: SubtaskId,
        /// The subtask's state now; `deleted` (`None`) when it is gone.
        #[serde(with = "state_or_deleted")]
        #[schemars(with = "String")]
        now: Option<SubtaskState>,
    },
    Asked {
        subtask: SubtaskId,
        question: String,
    },
    SubtaskResult {
        subtask: SubtaskId,
        ok: bool,
        text: String,
        duration_ms: u64,
    },
    PlanAdjusted {
        reason: String,
        changes: usize,
    },
    BudgetReached {
        what: String,
    },
    /// Someone else changed the plan while the agent ran it.
    PeopleChanged {
        summary: String,
    },
    /// A batch of a run's input is on the plan (seed 002).
    BatchPlanned {
        batch: u32,
        /// Items planned again after a failure, and new ones.
        retried: usize,
        new: usize,
        subtasks: usize,
    },
    /// A batch is over.
    BatchFinished(crate::BatchSummary),
    Answer {
        text: String,
    },
    /// A suite run over the regression cases ended (written under the
    /// suite run's id, which is no run's: the webhooks read it).
    SuiteFinished(crate::SuiteSummary),
    /// What an ACP agent said, whole, once it finished saying it: its
    /// message to the person, or its thinking (`thought`). While it
    /// writes, the pieces go out live as [`ReplyDelta`]s.
    AgentMessage {
        /// The subtask in progress on its plan when it spoke, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subtask: Option<SubtaskId>,
        text: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        thought: bool,
    },
}

plan_engine::wire_enum! {
    /// The `kind` of a [`RunEntry`], without its fields: how the store, the
    /// streams and the board tell entries apart.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum EntryKind: "run-log entry kind" {
        StateChanged = "state_changed",
        Classified = "classified",
        PlanProposed = "plan_proposed",
        Rejected = "rejected",
        PlanRepaired = "plan_repaired",
        LlmCall = "llm_call",
        ToolCall = "tool_call",
        ToolStarted = "tool_started",
        ToolInterrupted = "tool_interrupted",
        RetryScheduled = "retry_scheduled",
        ToolRetryScheduled = "tool_retry_scheduled",
        SubtaskRetry = "subtask_retry",
        Recovery = "recovery",
        Recalled = "recalled",
        Remembered = "remembered",
        ToolApproval = "tool_approval",
        ToolDecision = "tool_decision",
        ToolGranted = "tool_granted",
        ApprovalOverdue = "approval_overdue",
        Drifted = "drifted",
        Overridden = "overridden",
        Asked = "asked",
        SubtaskResult = "subtask_result",
        PlanAdjusted = "plan_adjusted",
        BudgetReached = "budget_reached",
        PeopleChanged = "people_changed",
        BatchPlanned = "batch_planned",
        BatchFinished = "batch_finished",
        Answer = "answer",
        SuiteFinished = "suite_finished",
        AgentMessage = "agent_message",
    }
}

impl RunEntry {
    pub fn kind(&self) -> EntryKind {
        match self {
            RunEntry::StateChanged { .. } => EntryKind::StateChanged,
            RunEntry::Classified(_) => EntryKind::Classified,
            RunEntry::PlanProposed { .. } => EntryKind::PlanProposed,
            RunEntry::Rejected { .. } => EntryKind::Rejected,
            RunEntry::PlanRepaired { .. } => EntryKind::PlanRepaired,
            RunEntry::LlmCall(_) => EntryKind::LlmCall,
            RunEntry::ToolCall { .. } => EntryKind::ToolCall,
            RunEntry::ToolStarted { .. } => EntryKind::ToolStarted,
            RunEntry::ToolInterrupted { .. } => EntryKind::ToolInterrupted,
            RunEntry::RetryScheduled { .. } => EntryKind::RetryScheduled,
            RunEntry::ToolRetryScheduled { .. } => EntryKind::ToolRetryScheduled,
            RunEntry::SubtaskRetry { .. } => EntryKind::SubtaskRetry,
            RunEntry::Recovery { .. } => EntryKind::Recovery,
            RunEntry::Recalled { .. } => EntryKind::Recalled,
            RunEntry::Remembered { .. } => EntryKind::Remembered,
            RunEntry::ToolApproval { .. } => EntryKind::ToolApproval,
            RunEntry::ToolDecision { .. } => EntryKind::ToolDecision,
            RunEntry::ToolGranted { .. } => EntryKind::ToolGranted,
            RunEntry::ApprovalOverdue { .. } => EntryKind::ApprovalOverdue,
            RunEntry::Drifted(_) => EntryKind::Drifted,
            RunEntry::Overridden { .. } => EntryKind::Overridden,
            RunEntry::Asked { .. } => EntryKind::Asked,
            RunEntry::SubtaskResult { .. } => EntryKind::SubtaskResult,
            RunEntry::PlanAdjusted { .. } => EntryKind::PlanAdjusted,
            RunEntry::BudgetReached { .. } => EntryKind::BudgetReached,
            RunEntry::PeopleChanged { .. } => EntryKind::PeopleChanged,
            RunEntry::BatchPlanned { .. } => EntryKind::BatchPlanned,
            RunEntry::BatchFinished(_) => EntryKind::BatchFinished,
            RunEntry::Answer { .. } => EntryKind::Answer,
            RunEntry::SuiteFinished(_) => EntryKind::SuiteFinished,
            RunEntry::AgentMessage { .. } => EntryKind::AgentMessage,
        }
    }

    /// The subtask the entry is about, if any.
    pub fn subtask(&self) -> Option<SubtaskId> {
        match self {
            RunEntry::LlmCall(call) => call.subtask,
            RunEntry::ToolCall { subtask, .. }
            | RunEntry::ToolStarted { subtask, .. }
            | RunEntry::ToolInterrupted { subtask, .. }
            | RunEntry::ToolRetryScheduled { subtask, .. }
            | RunEntry::ToolApproval { subtask, .. }
            | RunEntry::ToolGranted { subtask, .. }
            | RunEntry::SubtaskRetry { subtask, .. }
            | RunEntry::Recovery { subtask, .. }
            | RunEntry::Overridden { subtask, .. }
            | RunEntry::Asked { subtask, .. }
            | RunEntry::SubtaskResult { subtask, .. } => Some(*subtask),
            RunEntry::AgentMessage { subtask, .. } => *subtask,
            _ => None,
        }
    }
}

/// `Overridden.now` on the wire: the state's name, or `deleted`.
mod state_or_deleted {
    use plan_engine::SubtaskState;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(
        now: &Option<SubtaskState>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match now {
            Some(state) => state.serialize(serializer),
            None => serializer.serialize_str("deleted"),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<SubtaskState>, D::Error> {
        let name = String::deserialize(deserializer)?;
        if name == "deleted" {
            return Ok(None);
        }
        SubtaskState::from_wire(&name)
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom(format!("`{name}` is not a subtask state")))
    }
}

/// One model call as the run log keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LlmCallRecord {
    pub role: CallRole,
    pub model: String,
    pub subtask: Option<SubtaskId>,
    pub attempt: u32,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub latency_ms: u64,
    pub finish_reason: Option<String>,
    pub error: Option<String>,
    /// What the call cost; `None` when its model has no price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::Usd>,
    /// The messages and the reply, cut to [`MESSAGE_CAP`] characters in all.
    pub transcript: String,
}

/// What the run log keeps of one call's messages.
pub const MESSAGE_CAP: usize = 16 * 1024;

/// A piece of a reply as the model writes it, for people watching. Not
/// on the run log: the whole reply is, in the call's [`LlmCallRecord`]. A
/// retried call starts its text over; `attempt` says which one this is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplyDelta {
    pub role: CallRole,
    pub subtask: Option<SubtaskId>,
    pub attempt: u32,
    pub text: String,
    /// The call is over (answered or failed): `text` is empty, and whoever
    /// shows the reply being written can let it go.
    #[serde(default)]
    pub done: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_kind_is_the_tag_serde_writes() {
        let entry = RunEntry::Overridden {
            subtask: SubtaskId(3),
            now: None,
        };
        let json = serde_json::to_value(&entry).unwrap();
        assert_eq!(json["kind"], entry.kind().to_string());
        assert_eq!(json["now"], "deleted");
        assert_eq!(serde_json::from_value::<RunEntry>(json).unwrap(), entry);
        let moved = RunEntry::Overridden {
            subtask: SubtaskId(3),
            now: Some(SubtaskState::Skipped),
        };
        let json = serde_json::to_value(&moved).unwrap();
        assert_eq!(json["now"], "skipped");
        assert_eq!(serde_json::from_value::<RunEntry>(json).unwrap(), moved);
        let retry = RunEntry::RetryScheduled {
            role: CallRole::Planner,
            attempt: 2,
            delay_ms: 10,
            class: ErrorClass::RateLimited,
            error: "slow down".into(),
        };
        let json = serde_json::to_value(&retry).unwrap();
        assert_eq!(json["kind"], "retry_scheduled");
        assert_eq!(json["class"], "rate_limited");
        assert_eq!(json["role"], "planner");
    }

    #[test]
    fn an_acp_agents_message_reads_back_and_names_its_subtask_only_when_it_has_one() {
        let said = RunEntry::AgentMessage {
            subtask: None,
            text: "Looking at the tests".into(),
            thought: true,
        };
        let json = serde_json::to_value(&said).unwrap();
        assert_eq!(json["kind"], "agent_message");
        assert!(json.get("subtask").is_none(), "{json}");
        assert_eq!(serde_json::from_value::<RunEntry>(json).unwrap(), said);
        let on_step = RunEntry::AgentMessage {
            subtask: Some(SubtaskId(2)),
            text: "Done".into(),
            thought: false,
        };
        assert_eq!(on_step.subtask(), Some(SubtaskId(2)));
        let json = serde_json::to_value(&on_step).unwrap();
        assert!(json.get("thought").is_none(), "{json}");
    }

    #[test]
    fn only_transient_errors_are_retried() {
        assert!(ErrorClass::Server.is_retryable());
        assert!(!ErrorClass::ContextTooLong.is_retryable());
        assert!(!ErrorClass::Quota.is_retryable());
    }
}
