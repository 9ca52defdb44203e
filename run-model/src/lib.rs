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
//! Names on the wire are written once per variant, through
//! [`plan_engine::wire_enum!`]: serde, `as_str`, `Display` and `FromStr`
//! all read that one table.
//!
//! # Layout
//! - [`adaptation`]: how far a run may change its own plan after approval
//!   ([`Adaptation`]: the budget, the gaps, no step twice).
//! - [`asks`]: a task's asks (its questions, the files it asks for),
//!   read from its words, and whether an answer answers them.
//! - [`approval`]: every decision a person makes for the agent, as kept for
//!   audit ([`ApprovalRecord`], [`ApprovalKind`], [`ApprovalDecision`]).
//! - [`batch`]: seed 002's iterative batches: [`Batching`] (the setting),
//!   [`BatchInput`] (an input file's items), [`BatchProgress`] (where a
//!   batched run stands, on its row) and the [`BatchView`] the board shows.
//! - [`card`]: the card a person reads before approving a run's plan: the
//!   guarded tools its steps call ([`GuardedTool`]), what is wrong with it
//!   ([`PlanCheck`]), what it will likely cost ([`Forecast`]) and how often
//!   such forecasts held ([`ForecastAccuracy`]).
//! - [`config`]: [`RunConfig`], [`ModeChoice`], [`Budget`], the
//!   [`ToolPolicy`] per tool, what a replay and a suite's run say of
//!   themselves ([`ReplayOf`], [`Unmatched`], [`CaseRun`]) and the typed
//!   [`ConfigError`] a refused config gives.
//! - [`state`]: [`RunState`] and its table, [`Classification`] and
//!   [`DecidedBy`].
//! - [`drift`]: how far a run's plan moved from the approved version
//!   ([`ApprovedPlan`], [`Drift`]), measured with the engine's graph
//!   distance.
//! - [`digest`]: a tool call's SHA-256 digest over its name and its
//!   arguments written canonically ([`call_digest`]); a plan's over what a
//!   person approves of it ([`plan_digest`]).
//! - [`grant`]: a guarded tool granted for one run at approval ([`Grant`],
//!   [`NewGrant`]), the whole tool or the calls whose main argument
//!   matches a glob.
//! - [`entry`]: [`RunEntry`] (one line of the run log) and its
//!   [`EntryKind`], [`LlmCallRecord`], [`ReplyDelta`], [`CallRole`],
//!   [`ErrorClass`].
//! - [`record`]: [`RunRecord`] (a stored run), [`Spent`], [`RunProgress`].
//! - [`rule`]: two people for what is risky: [`ApprovalRule`] (not the
//!   starter, n people, named approvers) and where an operator's applies
//!   ([`RuleScope`]).
//! - [`money`]: [`Usd`], a model's [`Price`], the [`PriceTable`]
//!   (built-in list prices, the operator's, local models free).
//! - [`cost`]: what a run's calls cost, the [`CostReport`] read from its
//!   log (the money types re-exported).
//! - [`replay`]: replaying a run against its recording ([`ReplayOf`],
//!   [`Unmatched`], the [`RecordedCall`]s a replay answers from).
//! - [`compare`]: two runs side by side ([`RunComparison`]): their graphs,
//!   the steps of their logs ([`LogStep`]) and the first [`Divergence`].
//! - [`case`]: regression [`Case`]s made from runs reviewed good, their
//!   [`Check`]s and how a check is judged ([`Evidence`]).
//! - [`suite`]: suite runs over the cases ([`SuiteRun`], [`CaseResult`],
//!   [`SuiteReport`], the Cases page's [`CasesOverview`]);
//!   [`suite_log`]: how one stands and what its end tells the run log
//!   ([`SuiteState`], [`SuiteSummary`]).
//! - [`insights`]: approval fatigue measured from the records, and the
//!   tool policies worth changing ([`Insights`]).
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
//! - [`tools`]: the MCP servers and the ACP agents as the Tools page
//!   shows them ([`ToolServerView`], [`AcpAgentView`]).

pub mod adaptation;
pub mod approval;
pub mod asks;
pub mod batch;
pub mod card;
pub mod case;
pub mod compare;
pub mod config;
pub mod cost;
pub mod digest;
pub mod drift;
pub mod entry;
pub mod grant;
pub mod insights;
pub mod memory;
pub mod model_status;
pub mod money;
pub mod needs;
pub mod record;
pub mod replay;
pub mod review;
pub mod rule;
pub mod state;
pub mod storage;
pub mod stream;
pub mod suite;
pub mod suite_log;
pub mod template;
pub mod tools;
pub mod trace;

pub use adaptation::{Adaptation, Gap};
pub use approval::{ApprovalDecision, ApprovalId, ApprovalKind, ApprovalRecord, Hold};
pub use asks::Ask;
pub use batch::{
    BatchInput, BatchProgress, BatchSlot, BatchSummary, BatchView, Batching,
    InputError as BatchInputError,
};
pub use card::{
    Forecast, ForecastAccuracy, ForecastBasis, GuardedTool, Interval, PlanCheck, PlanCheckKind,
};
pub use case::{
    Case, CaseError, CaseId, CasePatch, CaseRun, Check, CheckOutcome, Evidence, NewCase,
};
pub use compare::{
    first_divergence, Divergence, GraphNode, LogStep, RunComparison, RunSide, RunTotals,
};
pub use config::{valid_agent_name, AGENT_NAME_CHARS};
pub use config::{
    Budget, ConfigError, InputFile, ModeChoice, RunConfig, RunId, ToolPolicy, DEFAULT_PARALLEL,
    FILE_NAME_BYTES, MAX_ATTEMPTS, MAX_FILES, MAX_FILES_BYTES, MAX_FILE_BYTES, MAX_PARALLEL,
    MAX_RETRY_DELAY_MS, MAX_TASK_CHARS, MAX_TOOLS, PREVIEW_CHARS, TOOL_NAME_CHARS,
};
pub use cost::{CostReport, ModelUse, SubtaskUse, Use};
pub use digest::{call_digest, plan_digest};
pub use drift::{ApprovedPlan, ApprovedStep, Drift};
pub use entry::{
    CallRole, EntryKind, ErrorClass, LlmCallRecord, RecalledMemory, RecoveryDecision, ReplyDelta,
    RunEntry, Verdict, MESSAGE_CAP,
};
pub use grant::{Grant, GrantError, GrantId, NewGrant};
pub use insights::{DecisionStats, Insights, Suggestion};
pub use memory::{Memory, MemoryId, MemoryKind, NewMemory};
pub use model_status::ModelStatus;
pub use money::{BadPrices, Price, PriceTable, Usd};
pub use needs::{Need, NeedKind};
pub use record::{AgainOf, RunProgress, RunRecord, Spent, SubtaskAttempts};
pub use replay::{RecordedCall, ReplayOf, Unmatched};
pub use review::{NewReview, Review, ReviewError, ReviewId, ReviewVerdict, SubtaskNote, ToReview};
pub use rule::{person_of, ApprovalRule, RuleScope};
pub use state::{Classification, DecidedBy, RunState};
pub use storage::{Retention, StorageReport, WorkspacesUse};
pub use stream::StreamEvent;
pub use suite::{
    CaseChange, CaseOutcome, CaseResult, CasesOverview, Finding, ModelScore, NewSuiteRun,
    SuiteBudget, SuiteReport, SuiteRun, SuiteRunId, SuiteSpent, SuiteState, SuiteSummary,
    SuiteTools,
};
pub use template::{NewTemplate, Template, TemplateError, TemplateId, TemplateStep};
pub use tools::{AcpAgentView, ToolServerView, ToolSource, ToolTransport};
pub use trace::{BadTraceParent, TraceParent};

/// The error of every enum's `FromStr` here: names come from
/// [`plan_engine::wire_enum!`], one table per enum.
pub use plan_engine::UnknownName;

#[cfg(test)]
mod tests {
    use super::*;
    use plan_engine::wire::names_agree;

    #[test]
    fn every_enums_wire_name_is_the_one_serde_writes_and_reads_back() {
        names_agree(&RunState::ALL).unwrap();
        names_agree(&DecidedBy::ALL).unwrap();
        names_agree(&ModeChoice::ALL).unwrap();
        names_agree(&ToolPolicy::ALL).unwrap();
        names_agree(&CallRole::ALL).unwrap();
        names_agree(&ErrorClass::ALL).unwrap();
        names_agree(&Verdict::ALL).unwrap();
        names_agree(&RecoveryDecision::ALL).unwrap();
        names_agree(&EntryKind::ALL).unwrap();
        names_agree(&NeedKind::ALL).unwrap();
        names_agree(&MemoryKind::ALL).unwrap();
        names_agree(&StreamEvent::ALL).unwrap();
        names_agree(&ReviewVerdict::ALL).unwrap();
        names_agree(&ToolSource::ALL).unwrap();
        names_agree(&ToolTransport::ALL).unwrap();
        names_agree(&Unmatched::ALL).unwrap();
        names_agree(&SuiteTools::ALL).unwrap();
        names_agree(&SuiteState::ALL).unwrap();
        names_agree(&CaseOutcome::ALL).unwrap();
        names_agree(&ApprovalKind::ALL).unwrap();
        names_agree(&ApprovalDecision::ALL).unwrap();
        names_agree(&PlanCheckKind::ALL).unwrap();
        names_agree(&ForecastBasis::ALL).unwrap();
        assert_eq!(RunState::AwaitingApproval.to_string(), "awaiting_approval");
        assert_eq!(
            "sleeping".parse::<RunState>().unwrap_err().to_string(),
            "`sleeping` is not a run state"
        );
        assert_eq!(ErrorClass::ContextTooLong.as_str(), "context_too_long");
    }
}
