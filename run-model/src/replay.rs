//! Replaying a run against its recording (issue 56): a new run of the
//! same task and files, on a chosen model, whose tool calls are answered
//! from what the earlier run recorded when they are the same call (the
//! same tool, the same canonical arguments: [`crate::call_digest`]); any
//! other call is made live or stops the replay, as the person chose
//! ([`Unmatched`]).
//!
//! A run's recording is its log's [`RunEntry::ToolCall`]s, in order; each
//! recorded result answers one call, the first recorded one of its digest
//! first. What a replayed call answers is what the log kept of the result
//! (its first 2,000 characters).

use plan_engine::SubtaskId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::entry::RunEntry;

// What a run's config says of its replay: defined with the config, which
// every part of a run reads.
pub use crate::config::{ReplayOf, Unmatched, MODEL_NAME_CHARS};

/// One tool call a run recorded, as a replay answers from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RecordedCall {
    pub subtask: SubtaskId,
    pub name: String,
    /// [`crate::call_digest`] of the call as it ran (a person's edit
    /// included).
    pub digest: String,
    /// What the log kept of its result (or of its error).
    pub result: String,
    pub ok: bool,
}

impl RecordedCall {
    /// The recorded call of a log entry, if it is a tool call.
    pub fn of(entry: &RunEntry) -> Option<RecordedCall> {
        match entry {
            RunEntry::ToolCall {
                subtask,
                name,
                arguments,
                result,
                ok,
                ..
            } => Some(RecordedCall {
                subtask: *subtask,
                name: name.clone(),
                digest: crate::call_digest(name, arguments),
                result: result.clone(),
                ok: *ok,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_recorded_call_is_keyed_by_the_digest_of_its_tool_and_canonical_arguments() {
        let entry = RunEntry::ToolCall {
            subtask: SubtaskId(2),
            name: "fetch_url".into(),
            arguments: json!({"url": "https://a.example/", "max": 3}),
            result: "page".into(),
            ok: true,
            duration_ms: 40,
            replayed: false,
        };
        let call = RecordedCall::of(&entry).unwrap();
        assert_eq!(
            call.digest,
            crate::call_digest("fetch_url", &json!({"max": 3, "url": "https://a.example/"}))
        );
        assert_eq!(
            (call.subtask, call.ok, call.result.as_str()),
            (SubtaskId(2), true, "page")
        );
        assert_eq!(
            RecordedCall::of(&RunEntry::Answer { text: "x".into() }),
            None
        );
    }

    #[test]
    fn a_replay_of_without_its_optional_fields_reads_as_live_from_the_start() {
        let id = uuid::Uuid::nil();
        let read: ReplayOf = serde_json::from_value(json!({"run": id})).unwrap();
        assert_eq!(
            read,
            ReplayOf {
                run: id,
                unmatched: Unmatched::Live,
                from: None
            }
        );
        let json = serde_json::to_value(&read).unwrap();
        assert!(json.get("from").is_none());
    }
}
