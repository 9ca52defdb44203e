//! The types of a run of planboard's agent that cross a crate or the wire:
//! what a run is started with, its states, what it spent, the lines of its
//! log, the pieces of a reply as the model writes it, and the names of the
//! live streams' events.
//!
//! The agent writes these, the server stores and streams them, and the
//! board (compiled to wasm) reads them: one type on every side, so a state
//! or a role never travels as a bare string. Like the engine, the crate is
//! pure (serde, schemars, uuid, chrono, thiserror and the engine).
//!
//! Names on the wire are serde's (`snake_case`); [`wire_name`] and the
//! `Display` / `FromStr` impls read them from serde instead of repeating
//! them in hand-written tables.
//!
//! # Layout
//! - [`adaptation`]: how far a run may change its own plan after approval
//!   ([`Adaptation`]: the budget, the gaps, no step twice).
//! - [`batch`]: seed 002's iterative batches: [`Batching`] (the setting),
//!   [`BatchInput`] (an input file's items), [`BatchProgress`] (where a
//!   batched run stands, on its row) and the [`BatchView`] the board shows.
//! - [`config`]: [`RunConfig`], [`ModeChoice`], [`Budget`], the
//!   [`ToolPolicy`] per tool and the typed [`ConfigError`] a refused
//!   config gives.
//! - [`state`]: [`RunState`] and its table, [`Classification`] and
//!   [`DecidedBy`].
//! - [`entry`]: [`RunEntry`] (one line of the run log) and its
//!   [`EntryKind`], [`LlmCallRecord`], [`ReplyDelta`], [`CallRole`],
//!   [`ErrorClass`].
//! - [`record`]: [`RunRecord`] (a stored run), [`Spent`], [`RunProgress`].
//! - [`money`]: [`Usd`], a model's [`Price`], the [`PriceTable`]
//!   (built-in list prices, the operator's, local models free).
//! - [`cost`]: what a run's calls cost, the [`CostReport`] read from its
//!   log (the money types re-exported).
//! - [`memory`]: what the agent remembers of finished runs
//!   ([`Memory`], [`MemoryKind`]), the search terms both stores index,
//!   and the prompt section recalled memories make.
//! - [`model_status`]: whether the agent's model answers, or is still
//!   building, or died ([`ModelStatus`]).
//! - [`needs`]: what waits for a person across plans and runs ([`Need`]).
//! - [`storage`]: what planboard stores and how much ([`StorageReport`]),
//!   with the retentions in effect.
//! - [`stream`]: [`StreamEvent`], the SSE event names.
//! - [`template`]: plans saved as [`Template`]s, and what the planner
//!   reads of one.
//! - [`trace`]: the W3C [`TraceParent`] a run's spans join.
//! - [`tools`]: the MCP servers as the Tools page shows them
//!   ([`ToolServerView`]).

pub mod adaptation;
pub mod batch;
pub mod config;
pub mod cost;
pub mod entry;
pub mod memory;
pub mod model_status;
pub mod money;
pub mod needs;
pub mod record;
pub mod review;
pub mod state;
pub mod storage;
pub mod stream;
pub mod template;
pub mod tools;
pub mod trace;

pub use adaptation::{Adaptation, Gap};
pub use batch::{
    BatchInput, BatchProgress, BatchSlot, BatchSummary, BatchView, Batching,
    InputError as BatchInputError,
};
pub use config::{
    Budget, ConfigError, InputFile, ModeChoice, RunConfig, RunId, ToolPolicy, DEFAULT_PARALLEL,
    MAX_FILES, MAX_FILES_BYTES, MAX_FILE_BYTES, MAX_PARALLEL, MAX_TASK_CHARS, MAX_TOOLS,
    PREVIEW_CHARS,
};
pub use cost::{CostReport, ModelUse, SubtaskUse, Use};
pub use entry::{
    CallRole, EntryKind, ErrorClass, LlmCallRecord, RecalledMemory, RecoveryDecision, ReplyDelta,
    RunEntry, Verdict, MESSAGE_CAP,
};
pub use memory::{Memory, MemoryId, MemoryKind, NewMemory};
pub use model_status::ModelStatus;
pub use money::{BadPrices, Price, PriceTable, Usd};
pub use needs::{Need, NeedKind};
pub use record::{AgainOf, RunProgress, RunRecord, Spent, SubtaskAttempts};
pub use review::{NewReview, Review, ReviewError, ReviewId, ReviewVerdict, SubtaskNote, ToReview};
pub use state::{Classification, DecidedBy, RunState};
pub use storage::{Retention, StorageReport, WorkspacesUse};
pub use stream::StreamEvent;
pub use template::{NewTemplate, Template, TemplateError, TemplateId, TemplateStep};
pub use tools::{ToolServerView, ToolSource, ToolTransport};
pub use trace::{BadTraceParent, TraceParent};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The name serde gives a unit variant (`RunState::AwaitingApproval` →
/// `awaiting_approval`); empty for anything that is not a string.
pub fn wire_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

/// The unit variant serde calls `name`, if any.
pub fn from_wire_name<T: DeserializeOwned>(name: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
}

/// A name that is not one of a type's wire names.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{given}` is not a {what}")]
pub struct UnknownName {
    pub what: &'static str,
    pub given: String,
}

/// `Display` and `FromStr` through serde's names, for the enums here.
macro_rules! wire_names {
    ($($ty:ty => $what:literal),* $(,)?) => {$(
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&$crate::wire_name(self))
            }
        }
        impl std::str::FromStr for $ty {
            type Err = $crate::UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $crate::from_wire_name(s).ok_or_else(|| $crate::UnknownName {
                    what: $what,
                    given: s.to_string(),
                })
            }
        }
    )*};
}

wire_names! {
    RunState => "run state",
    ModeChoice => "mode (auto, simple, complex or emergent)",
    DecidedBy => "decider",
    CallRole => "call role",
    ErrorClass => "error class",
    EntryKind => "run-log entry kind",
    StreamEvent => "stream event",
    ToolPolicy => "tool policy (auto, ask or never)",
    Verdict => "verdict",
    RecoveryDecision => "recovery decision (revise, workaround or give_up)",
    MemoryKind => "memory kind (run, correction, review or rule)",
    NeedKind => "need kind (approval, question, tool_call or stuck)",
    ReviewVerdict => "review verdict (good, needs_changes or wrong)",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_serde_and_read_back() {
        assert_eq!(RunState::AwaitingApproval.to_string(), "awaiting_approval");
        for s in RunState::ALL {
            assert_eq!(s.to_string().parse::<RunState>(), Ok(s));
        }
        assert_eq!(
            "sleeping".parse::<RunState>().unwrap_err().to_string(),
            "`sleeping` is not a run state"
        );
        assert_eq!(ErrorClass::ContextTooLong.to_string(), "context_too_long");
        assert_eq!(CallRole::Executor.to_string(), "executor");
    }
}
