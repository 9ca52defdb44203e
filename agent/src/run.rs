//! What a run is: its configuration and budget, its states, and the run
//! log entries that record what the agent did. The types live in the pure
//! `run-model` crate, which the server and the board share; this module
//! names them where the agent has always found them.

pub use run_model::{
    Budget, CallRole, Classification, ConfigError, DecidedBy, EntryKind, ErrorClass, InputFile,
    LlmCallRecord, ModeChoice, RecoveryDecision, ReplyDelta, RunConfig, RunEntry, RunId,
    RunProgress, RunRecord, RunState, Spent, SubtaskAttempts, ToolPolicy, Verdict, MAX_PARALLEL,
    MAX_TASK_CHARS, MESSAGE_CAP,
};
