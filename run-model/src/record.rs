//! A run as it is stored, what it spent, and seed 002's progress.

use std::time::Duration;

use plan_engine::PlanId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::{Budget, RunConfig, RunId};
use crate::state::{Classification, RunState};

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
    /// The subtasks that failed an attempt, so the count and the reasons
    /// survive a restart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<SubtaskAttempts>,
    /// What people corrected on the way (rejections, a mode switched,
    /// changes mid-run, answers), remembered when the run ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub corrections: Vec<String>,
    /// The trace of the request that started the run, which its spans
    /// join (kept here so they still do after a restart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_parent: Option<crate::TraceParent>,
    /// The earlier run this one started again from ("Run again from
    /// here"); the earlier plan names this one in a comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub again_of: Option<AgainOf>,
    /// Where a run in batches stands ([`crate::Batching`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<crate::BatchProgress>,
    /// What adapting the plan spent ([`crate::Adaptation`]), so a restart
    /// keeps the bound.
    #[serde(default, skip_serializing_if = "crate::Adaptation::is_untouched")]
    pub adaptation: crate::Adaptation,
    /// A person keeps the run: the retentions
    /// (`PLANBOARD_WORKSPACE_RETENTION_DAYS`,
    /// `PLANBOARD_RUN_LOG_RETENTION_HOURS`) leave its files and its log
    /// alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kept: bool,
    /// What the task asks for ([`crate::asks::of`]): its questions and the
    /// files it asks to be written, shown with the plan and checked before
    /// the answer is kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asks: Vec<crate::Ask>,
    /// When the workspace retention removed the run's files (its row,
    /// plan, answer and memories stay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_removed_at: Option<plan_engine::Timestamp>,
    /// The model the run's steps were worked on (its executor's), so a
    /// forecast reads runs of the same model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The plan as a person approved it (or approved it again after a
    /// drift), which its drift is measured from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<crate::ApprovedPlan>,
    /// Set while the run is paused because its plan drifted from
    /// `approved`; a person's approval (resuming the plan) clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<crate::Drift>,
}

/// Where a run started again from: an earlier run, its plan, and the
/// subtask from which the work was redone (the results before it kept).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgainOf {
    pub run: crate::RunId,
    pub plan: plan_engine::PlanId,
    pub from: plan_engine::SubtaskId,
}

/// How a subtask's attempts went so far.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubtaskAttempts {
    pub subtask: plan_engine::SubtaskId,
    /// Failed attempts since the agent last started over on it (a
    /// revision or a person's retry starts over).
    pub failed: u32,
    /// Why the latest attempts failed, newest last (at most
    /// [`SubtaskAttempts::KEPT`]): told to the next attempt.
    pub reasons: Vec<String>,
    /// The planner has been asked what to do with it once already.
    pub recovered: bool,
    /// It was added to work around a failure (recovery's workaround, or
    /// an emergent update after a TODO failed): when it fails in turn,
    /// nothing is added to work around it again, so a model that fails
    /// everything cannot grow the plan failure by failure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub workaround: bool,
}

impl SubtaskAttempts {
    pub const KEPT: usize = 3;

    /// Counts a failed attempt and keeps its reason.
    pub fn failed_with(&mut self, reason: &str) {
        self.failed += 1;
        let reason = plan_engine::text::prefix(reason, 500).to_string();
        self.reasons.push(reason);
        if self.reasons.len() > Self::KEPT {
            self.reasons.remove(0);
        }
    }
}

impl RunRecord {
    /// Whether the classifier said the task is answered in words (no
    /// tools, each step one writing turn); not before it was classified.
    pub fn in_words(&self) -> bool {
        self.classification.as_ref().is_some_and(|c| c.in_words)
    }

    /// The attempts record of `subtask`, made when it has none.
    pub fn attempts_of(&mut self, subtask: plan_engine::SubtaskId) -> &mut SubtaskAttempts {
        match self.attempts.iter().position(|a| a.subtask == subtask) {
            Some(i) => &mut self.attempts[i],
            None => {
                self.attempts.push(SubtaskAttempts {
                    subtask,
                    failed: 0,
                    reasons: Vec::new(),
                    recovered: false,
                    workaround: false,
                });
                self.attempts.last_mut().expect("just pushed")
            }
        }
    }

    /// Why `subtask`'s earlier attempts failed, oldest first.
    pub fn failures_of(&self, subtask: plan_engine::SubtaskId) -> Vec<String> {
        self.attempts
            .iter()
            .find(|a| a.subtask == subtask)
            .map(|a| a.reasons.clone())
            .unwrap_or_default()
    }

    pub fn new(id: RunId, config: RunConfig) -> RunRecord {
        let config_task = config.task.clone();
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
            attempts: Vec::new(),
            corrections: Vec::new(),
            trace_parent: None,
            again_of: None,
            batches: None,
            adaptation: crate::Adaptation::default(),
            kept: false,
            files_removed_at: None,
            asks: crate::asks::of(&config_task),
            model: None,
            approved: None,
            drift: None,
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

/// Usage counted against the budget.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Spent {
    pub llm_calls: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub wall_ms: u64,
    /// What the priced calls cost.
    #[serde(default)]
    pub cost: crate::Usd,
    /// Calls to a model without a price (not in `cost`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_calls: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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
        if let Some(max) = budget.max_cost.filter(|max| self.cost >= *max) {
            return Some(format!("the run cost {} (budget {max})", self.cost));
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

    #[test]
    fn a_money_budget_is_reached_at_its_amount_and_not_before() {
        let budget = Budget {
            max_cost: crate::Usd::from_dollars(0.01),
            ..Budget::default()
        };
        let mut spent = Spent {
            cost: crate::Usd::from_dollars(0.0099).unwrap(),
            ..Spent::default()
        };
        assert_eq!(spent.reached(&budget), None);
        spent.cost = crate::Usd::from_dollars(0.01).unwrap();
        assert_eq!(
            spent.reached(&budget).as_deref(),
            Some("the run cost $0.0100 (budget $0.0100)")
        );
        assert_eq!(spent.reached(&Budget::default()), None);
    }
}
