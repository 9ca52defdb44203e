//! What a run is: its configuration and budget, its states, and the run
//! log entries that record what the agent did.
//!
//! Run log entries are not plan events: they never bump the plan's
//! version. The plan holds the work (subtasks, states, results, approval,
//! pause); the run log holds how the agent got there.

use std::time::Duration;

use plan_engine::{Mode, PlanId, SubtaskId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub type RunId = uuid::Uuid;

/// `auto` lets the classifier decide.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModeChoice {
    #[default]
    Auto,
    Simple,
    Complex,
    Emergent,
}

impl ModeChoice {
    pub fn forced(self) -> Option<Mode> {
        match self {
            ModeChoice::Auto => None,
            ModeChoice::Simple => Some(Mode::Simple),
            ModeChoice::Complex => Some(Mode::Complex),
            ModeChoice::Emergent => Some(Mode::Emergent),
        }
    }
}

/// Limits per run; reaching one pauses the run with the reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Budget {
    pub max_llm_calls: u32,
    pub max_tokens: u64,
    /// Seconds of wall time, counted while the run is running (seed 002: 30 min).
    pub max_wall_secs: u64,
    /// ReAct turns per subtask attempt.
    pub max_turns: u32,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_llm_calls: 200,
            max_tokens: 1_000_000,
            max_wall_secs: 30 * 60,
            max_turns: 8,
        }
    }
}

/// Everything a run is started with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunConfig {
    pub task: String,
    pub mode: ModeChoice,
    pub approval_required: bool,
    /// Subtasks in progress at once (complex mode; simple and emergent run one at a time).
    pub max_parallel: u32,
    pub budget: Budget,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            task: String::new(),
            mode: ModeChoice::Auto,
            approval_required: true,
            max_parallel: 4,
            budget: Budget::default(),
        }
    }
}

/// The longest task, in characters.
pub const MAX_TASK_CHARS: usize = 8000;
/// The most subtasks a run may have in progress at once.
pub const MAX_PARALLEL: u32 = 32;

impl RunConfig {
    /// The config with its task trimmed, or why it cannot start a run (in
    /// words for whoever sent it: the API, the board, MCP).
    pub fn checked(mut self) -> Result<RunConfig, String> {
        self.task = self.task.trim().to_string();
        let chars = self.task.chars().count();
        if chars == 0 || chars > MAX_TASK_CHARS {
            return Err(format!(
                "the task must have 1 to {MAX_TASK_CHARS} characters, not {chars}"
            ));
        }
        if !(1..=MAX_PARALLEL).contains(&self.max_parallel) {
            return Err(format!(
                "max_parallel must be 1 to {MAX_PARALLEL}, not {}",
                self.max_parallel
            ));
        }
        Ok(self)
    }
}

/// The run's state machine; see [`RunState::can_become`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Classifying,
    Planning,
    AwaitingApproval,
    Running,
    Paused,
    Done,
    Failed,
    Cancelled,
}

impl RunState {
    pub const ALL: [RunState; 8] = [
        RunState::Classifying,
        RunState::Planning,
        RunState::AwaitingApproval,
        RunState::Running,
        RunState::Paused,
        RunState::Done,
        RunState::Failed,
        RunState::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Classifying => "classifying",
            RunState::Planning => "planning",
            RunState::AwaitingApproval => "awaiting_approval",
            RunState::Running => "running",
            RunState::Paused => "paused",
            RunState::Done => "done",
            RunState::Failed => "failed",
            RunState::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<RunState> {
        RunState::ALL.into_iter().find(|s| s.as_str() == text)
    }

    pub fn is_finished(self) -> bool {
        matches!(
            self,
            RunState::Done | RunState::Failed | RunState::Cancelled
        )
    }

    /// The run state table. Planning follows classifying, or a rejection,
    /// or a mode override; a finished run stays finished.
    pub fn can_become(self, to: RunState) -> bool {
        use RunState::*;
        match self {
            Classifying => matches!(to, Planning | Failed | Cancelled),
            Planning => matches!(to, AwaitingApproval | Running | Failed | Cancelled),
            AwaitingApproval => matches!(to, Planning | Running | Failed | Cancelled),
            Running => matches!(to, Paused | Done | Failed | Cancelled),
            Paused => matches!(to, Running | Failed | Cancelled | Done),
            Done | Failed | Cancelled => false,
        }
    }
}

/// Who decided the mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// The person who started the run forced it.
    Person,
    /// A rule was certain.
    Rules,
    Model,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Classification {
    pub mode: Mode,
    pub reason: String,
    pub confidence: f32,
    pub by: DecidedBy,
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
    LlmCall(LlmCallRecord),
    ToolCall {
        subtask: SubtaskId,
        name: String,
        arguments: serde_json::Value,
        result: String,
        ok: bool,
        duration_ms: u64,
    },
    RetryScheduled {
        role: String,
        attempt: u32,
        delay_ms: u64,
        class: String,
        error: String,
    },
    /// A person moved a subtask the agent was working on; its late result
    /// was dropped.
    Overridden {
        subtask: SubtaskId,
        now: String,
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
    Answer {
        text: String,
    },
}

/// A run as it is stored: enough to pick it up again after a restart,
/// together with its plan (the plan holds the work itself).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunRecord {
    pub id: RunId,
    pub config: RunConfig,
    /// Who started it.
    pub started_by: String,
    pub state: RunState,
    /// Why the run is paused, failed or cancelled.
    pub reason: Option<String>,
    pub classification: Option<Classification>,
    pub plan_id: Option<PlanId>,
    /// Planning rounds so far (1 + rejections answered).
    pub round: u32,
    pub spent: Spent,
    pub answer: Option<String>,
}

impl RunRecord {
    pub fn new(id: RunId, config: RunConfig) -> RunRecord {
        RunRecord {
            id,
            config,
            started_by: String::new(),
            state: RunState::Classifying,
            reason: None,
            classification: None,
            plan_id: None,
            round: 0,
            spent: Spent::default(),
            answer: None,
        }
    }
}

/// Seed 002's progress: counts, success rate, mean subtask time, ETA.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunProgress {
    pub done: usize,
    pub failed: usize,
    pub skipped: usize,
    pub total: usize,
    /// Done out of done + failed; `None` before anything settled.
    pub success_rate: Option<f32>,
    pub mean_subtask_ms: Option<u64>,
    /// Mean time × subtasks left ÷ parallelism.
    pub eta_ms: Option<u64>,
}

impl RunProgress {
    pub fn of(plan: &plan_engine::Plan, parallel: u32) -> RunProgress {
        use plan_engine::SubtaskState as S;
        let count = |s| plan.count(s);
        let (done, failed, skipped) = (count(S::Done), count(S::Failed), count(S::Skipped));
        let total = plan.subtasks().len();
        let times: Vec<i64> = plan
            .subtasks()
            .iter()
            .filter(|s| s.state() == S::Done)
            .filter_map(|s| Some((s.finished_at()? - s.started_at()?).num_milliseconds()))
            .filter(|ms| *ms >= 0)
            .collect();
        let mean =
            (!times.is_empty()).then(|| (times.iter().sum::<i64>() / times.len() as i64) as u64);
        let left = total.saturating_sub(done + skipped) as u64;
        RunProgress {
            done,
            failed,
            skipped,
            total,
            success_rate: (done + failed > 0).then(|| done as f32 / (done + failed) as f32),
            mean_subtask_ms: mean,
            eta_ms: mean.map(|m| m * left / u64::from(parallel.max(1))),
        }
    }
}

/// One model call as the run log keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LlmCallRecord {
    pub role: String,
    pub model: String,
    pub subtask: Option<SubtaskId>,
    pub attempt: u32,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub latency_ms: u64,
    pub finish_reason: Option<String>,
    pub error: Option<String>,
    /// The messages and the reply, cut to [`MESSAGE_CAP`] characters in all.
    pub transcript: String,
}

/// A piece of a reply as the model writes it, for people watching. Not
/// on the run log: the whole reply is, in the call's [`LlmCallRecord`]. A
/// retried call starts its text over; `attempt` says which one this is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplyDelta {
    pub role: String,
    pub subtask: Option<SubtaskId>,
    pub attempt: u32,
    pub text: String,
    /// The call is over (answered or failed): `text` is empty, and whoever
    /// shows the reply being written can let it go.
    #[serde(default)]
    pub done: bool,
}

/// What the run log keeps of one call's messages.
pub const MESSAGE_CAP: usize = 16 * 1024;

/// Usage counted against the budget.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Spent {
    pub llm_calls: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub wall_ms: u64,
}

impl Spent {
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    /// The first budget this usage has reached, in words.
    pub fn reached(&self, budget: &Budget) -> Option<String> {
        if self.llm_calls >= budget.max_llm_calls {
            return Some(format!(
                "the run made {} LLM calls (budget {})",
                self.llm_calls, budget.max_llm_calls
            ));
        }
        if self.tokens() >= budget.max_tokens {
            return Some(format!(
                "the run used {} tokens (budget {})",
                self.tokens(),
                budget.max_tokens
            ));
        }
        if Duration::from_millis(self.wall_ms) >= Duration::from_secs(budget.max_wall_secs) {
            return Some(format!(
                "the run ran for {} s (budget {} s)",
                self.wall_ms / 1000,
                budget.max_wall_secs
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_runs_never_move_and_every_state_has_a_name() {
        for from in [RunState::Done, RunState::Failed, RunState::Cancelled] {
            assert!(RunState::ALL.iter().all(|to| !from.can_become(*to)));
        }
        for s in RunState::ALL {
            assert_eq!(RunState::parse(s.as_str()), Some(s));
        }
        assert!(
            RunState::AwaitingApproval.can_become(RunState::Planning),
            "reject → re-plan"
        );
        assert!(!RunState::Classifying.can_become(RunState::Running));
    }

    #[test]
    fn a_config_is_checked_and_its_task_trimmed() {
        let config = |task: &str, max_parallel| RunConfig {
            task: task.into(),
            max_parallel,
            ..RunConfig::default()
        };
        assert_eq!(config("  do it \n", 4).checked().unwrap().task, "do it");
        assert!(config("   ", 4)
            .checked()
            .unwrap_err()
            .contains("1 to 8000"));
        assert!(config(&"x".repeat(8001), 4).checked().is_err());
        assert!(config("do it", 0)
            .checked()
            .unwrap_err()
            .contains("max_parallel"));
        assert!(config("do it", 33).checked().is_err());
    }

    #[test]
    fn the_first_budget_reached_is_named() {
        let budget = Budget {
            max_llm_calls: 2,
            ..Budget::default()
        };
        let mut spent = Spent::default();
        assert_eq!(spent.reached(&budget), None);
        spent.llm_calls = 2;
        assert!(spent.reached(&budget).unwrap().contains("2 LLM calls"));
    }
}
