//! Two runs side by side (issue 56): their plans as graphs (the engine's
//! graph matching scores them: node and edge F1), the first point where
//! their logs part (a model's reply or a tool call that differs), their
//! answers and what each spent.
//!
//! A log is compared as its steps ([`LogStep`]): each model call that
//! answered (its role and its reply; a failed attempt is left out, since
//! a retry is the endpoint's weather, not the agent's choice) and each
//! tool call (its tool and the digest of its canonical arguments), in the
//! order they were logged. The first index where the two lists hold
//! different steps, or where one ends, is the first divergence.

use plan_engine::{Plan, PlanId, SubtaskId, SubtaskState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::RunId;
use crate::entry::{CallRole, RunEntry};
use crate::money::Usd;
use crate::state::RunState;

/// Characters of a reply or a tool result a step shows (the comparison
/// itself reads the whole reply, through its digest).
pub const STEP_SHOWN: usize = 2_000;
/// Characters of a subtask's result a graph shows.
pub const RESULT_SHOWN: usize = 1_000;

/// A subtask as a compared plan shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GraphNode {
    pub id: SubtaskId,
    pub name: String,
    pub depends_on: Vec<SubtaskId>,
    pub state: SubtaskState,
    /// Its outcome (cut to [`RESULT_SHOWN`] characters).
    pub result: Option<String>,
}

impl GraphNode {
    /// The plan's subtasks, in its order.
    pub fn of_plan(plan: &Plan) -> Vec<GraphNode> {
        plan.subtasks()
            .iter()
            .map(|s| GraphNode {
                id: s.id(),
                name: s.name().to_string(),
                depends_on: s.dependencies().to_vec(),
                state: s.state(),
                result: s.outcome().map(|o| plan_engine::text::fit(o, RESULT_SHOWN)),
            })
            .collect()
    }
}

/// One step of a run's log as two runs are compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LogStep {
    /// A model call that answered.
    Model {
        role: CallRole,
        subtask: Option<SubtaskId>,
        model: String,
        /// The reply (cut to [`STEP_SHOWN`] characters).
        reply: String,
        /// SHA-256 of the whole reply as the log kept it: what is compared.
        digest: String,
    },
    /// A tool call, made or answered from a recording.
    Tool {
        subtask: SubtaskId,
        name: String,
        /// [`crate::call_digest`]: what is compared.
        digest: String,
        arguments: serde_json::Value,
        /// Its result (cut to [`STEP_SHOWN`] characters).
        result: String,
        ok: bool,
        replayed: bool,
    },
}

/// The reply a model call's transcript ends with (the log writes the
/// messages, then `[reply]` and the reply); "" when the log cut the
/// transcript before it.
pub fn reply_of(transcript: &str) -> &str {
    const MARK: &str = "[reply]\n";
    match transcript.rfind(MARK) {
        Some(at) => &transcript[at + MARK.len()..],
        None => "",
    }
}

fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl LogStep {
    /// The step a log entry is, if it is one.
    pub fn of(entry: &RunEntry) -> Option<LogStep> {
        match entry {
            RunEntry::LlmCall(call) if call.error.is_none() => {
                let reply = reply_of(&call.transcript);
                Some(LogStep::Model {
                    role: call.role,
                    subtask: call.subtask,
                    model: call.model.clone(),
                    reply: plan_engine::text::fit(reply, STEP_SHOWN),
                    digest: sha256(reply),
                })
            }
            RunEntry::ToolCall {
                subtask,
                name,
                arguments,
                result,
                ok,
                replayed,
                ..
            } => Some(LogStep::Tool {
                subtask: *subtask,
                name: name.clone(),
                digest: crate::call_digest(name, arguments),
                arguments: arguments.clone(),
                result: plan_engine::text::fit(result, STEP_SHOWN),
                ok: *ok,
                replayed: *replayed,
            }),
            _ => None,
        }
    }

    /// Whether two steps are the same: the same role and reply, or the
    /// same tool with the same canonical arguments.
    pub fn same(&self, other: &LogStep) -> bool {
        match (self, other) {
            (
                LogStep::Model {
                    role: a, digest: x, ..
                },
                LogStep::Model {
                    role: b, digest: y, ..
                },
            ) => a == b && x == y,
            (LogStep::Tool { digest: x, .. }, LogStep::Tool { digest: y, .. }) => x == y,
            _ => false,
        }
    }
}

/// Where two runs' logs first part: the index in both lists of steps and
/// each side's step there (`None`: that log ended before it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Divergence {
    pub index: usize,
    pub a: Option<LogStep>,
    pub b: Option<LogStep>,
}

/// The first divergence of two logs' steps; `None` when they are the same.
pub fn first_divergence(a: &[LogStep], b: &[LogStep]) -> Option<Divergence> {
    let index = a
        .iter()
        .zip(b)
        .position(|(x, y)| !x.same(y))
        .unwrap_or(a.len().min(b.len()));
    if index == a.len() && index == b.len() {
        return None;
    }
    Some(Divergence {
        index,
        a: a.get(index).cloned(),
        b: b.get(index).cloned(),
    })
}

/// What a run spent: its model calls (from its log), its tool calls and
/// how many of them a recording answered, and its wall time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunTotals {
    pub llm_calls: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost: Usd,
    /// Calls to a model without a price (not in `cost`).
    pub unpriced_calls: u32,
    pub tool_calls: u32,
    pub replayed_calls: u32,
    /// Time the run spent running (pauses and waits for people not counted).
    pub wall_ms: u64,
}

/// One side of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunSide {
    pub run: RunId,
    pub plan_id: Option<PlanId>,
    /// The plan's title.
    pub title: String,
    pub task: String,
    pub state: RunState,
    /// The models its calls went to, in the order first called.
    pub models: Vec<String>,
    /// The run it replays, if it is a replay.
    pub replay_of: Option<RunId>,
    /// Its plan as it stands (empty when the plan was deleted).
    pub graph: Vec<GraphNode>,
    pub answer: Option<String>,
    pub totals: RunTotals,
    /// Steps on its log (model replies and tool calls).
    pub steps: usize,
}

/// Two runs side by side (`GET /api/runs/compare?a=&b=`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunComparison {
    pub a: RunSide,
    pub b: RunSide,
    /// Both runs were asked the same task.
    pub same_task: bool,
    /// The engine's graph matching of the two plans: F1 over subtasks and
    /// over dependencies (1 for two empty plans).
    pub node_f1: f64,
    pub edge_f1: f64,
    /// The matched subtasks: (a's, b's).
    pub matched: Vec<(SubtaskId, SubtaskId)>,
    /// The first model reply or tool call that differs; `None` when the
    /// two logs hold the same steps.
    pub divergence: Option<Divergence>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::LlmCallRecord;
    use serde_json::json;

    fn call(role: CallRole, reply: &str) -> RunEntry {
        RunEntry::LlmCall(LlmCallRecord {
            role,
            model: "m".into(),
            subtask: None,
            attempt: 1,
            prompt_tokens: 1,
            completion_tokens: 1,
            latency_ms: 1,
            finish_reason: None,
            error: None,
            cost: None,
            transcript: format!(
                "[system]\nbe brief\n[user]\nwhat? [reply] in text\n[reply]\n{reply}"
            ),
        })
    }

    fn tool(path: &str) -> RunEntry {
        RunEntry::ToolCall {
            subtask: SubtaskId(1),
            name: "read_file".into(),
            arguments: json!({"path": path}),
            result: "text".into(),
            ok: true,
            duration_ms: 1,
            replayed: false,
        }
    }

    fn steps(entries: &[RunEntry]) -> Vec<LogStep> {
        entries.iter().filter_map(LogStep::of).collect()
    }

    #[test]
    fn the_first_divergence_is_the_first_step_that_differs_or_where_one_log_ends() {
        let a = steps(&[
            call(CallRole::Planner, "plan"),
            tool("a.csv"),
            call(CallRole::Executor, "done"),
        ]);
        let same = steps(&[
            call(CallRole::Planner, "plan"),
            tool("a.csv"),
            call(CallRole::Executor, "done"),
        ]);
        assert_eq!(first_divergence(&a, &same), None);
        let other = steps(&[
            call(CallRole::Planner, "plan"),
            tool("b.csv"),
            call(CallRole::Executor, "done"),
        ]);
        let d = first_divergence(&a, &other).unwrap();
        assert_eq!(d.index, 1);
        assert!(
            matches!(&d.b, Some(LogStep::Tool { arguments, .. }) if arguments["path"] == "b.csv")
        );
        let shorter = steps(&[call(CallRole::Planner, "plan")]);
        let d = first_divergence(&a, &shorter).unwrap();
        assert_eq!((d.index, d.b.is_none()), (1, true));
        let reworded = steps(&[call(CallRole::Planner, "another plan")]);
        assert_eq!(first_divergence(&a, &reworded).unwrap().index, 0);
    }

    #[test]
    fn a_failed_call_is_no_step_and_a_reply_is_read_after_its_last_mark() {
        let mut failed = call(CallRole::Executor, "");
        if let RunEntry::LlmCall(c) = &mut failed {
            c.error = Some("503".into());
        }
        assert_eq!(LogStep::of(&failed), None);
        assert_eq!(
            reply_of("[user]\nsay [reply]\nx\n[reply]\nthe end"),
            "the end"
        );
        assert_eq!(reply_of("cut before it"), "");
    }
}
