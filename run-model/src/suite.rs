//! Suite runs (issue 56): every regression case (or a tag of them) planned
//! and run again on the configured or a chosen model, each judged by its
//! checks, its plan's graph F1 against the reviewed plan, its time and
//! its cost; bounded by a budget, cancellable, and leaving the cases as
//! they were.
//!
//! A case passes when its run ends done and every check holds. The
//! suite's score is the share of the cases judged (passed or failed; not
//! those skipped) that passed.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::case::{CaseId, CheckOutcome};
use crate::compare::Divergence;
use crate::config::RunId;
use crate::money::Usd;

/// A suite run's id (defined with the config, which names it), how a
/// suite run stands and what its end says: defined where the run log
/// finds them.
pub use crate::config::SuiteRunId;
pub use crate::suite_log::{SuiteState, SuiteSummary};

/// The longest tag a suite run is asked for.
pub const SUITE_TAG_CHARS: usize = crate::case::TAG_CHARS;

plan_engine::wire_enum! {
    /// Where a suite run's tool calls are answered.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum SuiteTools: "suite tools (live or replay)" {
        /// From each case's recording when they are the same call, else
        /// live.
        #[default]
        Replay = "replay",
        /// Every call live.
        Live = "live",
    }
}

plan_engine::wire_enum! {
    /// How one case went in a suite run.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum CaseOutcome: "case outcome" {
        /// Not run yet.
        Pending = "pending",
        Running = "running",
        /// Its run ended done and every check held.
        Passed = "passed",
        /// Its run did not end done, or a check failed.
        Failed = "failed",
        /// Not run: the budget ran out or the suite was cancelled first.
        Skipped = "skipped",
    }
}

/// What a suite run may spend in all; each case's run is given what is
/// left. Absent limits: none beyond each run's own budget.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SuiteBudget {
    /// US dollars the suite's model calls may cost (priced models only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<Usd>,
    /// Model calls the suite may make.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_llm_calls: Option<u32>,
}

/// The body of `POST /api/cases/run`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSuiteRun {
    /// Only the cases with this tag (default: every case not retired).
    #[serde(default)]
    #[schemars(length(min = 1, max = SUITE_TAG_CHARS))]
    pub tag: Option<String>,
    /// The model to plan and run the cases on (default: the configured
    /// one).
    #[serde(default)]
    #[schemars(length(min = 1, max = crate::config::MODEL_NAME_CHARS))]
    pub model: Option<String>,
    /// `replay` (default): tool calls are answered from each case's
    /// recording where they are the same call, else made live; `live`:
    /// every call is made.
    #[serde(default)]
    pub unmatched: SuiteTools,
    #[serde(default)]
    pub budget: SuiteBudget,
}

/// What a suite run spent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SuiteSpent {
    pub llm_calls: u32,
    pub tokens: u64,
    pub cost: Usd,
    pub wall_ms: u64,
}

/// A suite run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SuiteRun {
    pub id: SuiteRunId,
    pub state: SuiteState,
    /// Why it was cancelled or failed, or why cases were skipped.
    pub reason: Option<String>,
    pub tag: Option<String>,
    /// The model the cases ran on.
    pub model: String,
    /// planboard's version that ran them.
    pub version: String,
    pub unmatched: SuiteTools,
    pub budget: SuiteBudget,
    /// Who started it (`schedule` for `PLANBOARD_SUITE_SCHEDULE`).
    pub started_by: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub cases: u32,
    pub passed: u32,
    pub failed: u32,
    pub skipped: u32,
    /// Passed out of judged (passed + failed); `None` before any was judged.
    pub score: Option<f64>,
    /// The mean graph F1s of the judged cases' plans against theirs.
    pub node_f1: Option<f64>,
    pub edge_f1: Option<f64>,
    pub spent: SuiteSpent,
}

impl SuiteRun {
    /// The score and the mean F1s of `results`, counted again.
    pub fn tally(&mut self, results: &[CaseResult]) {
        let count = |o: CaseOutcome| results.iter().filter(|r| r.outcome == o).count() as u32;
        self.cases = results.len() as u32;
        self.passed = count(CaseOutcome::Passed);
        self.failed = count(CaseOutcome::Failed);
        self.skipped = count(CaseOutcome::Skipped);
        let judged = self.passed + self.failed;
        self.score = if judged > 0 {
            Some(f64::from(self.passed) / f64::from(judged))
        } else {
            None
        };
        let mean = |f: fn(&CaseResult) -> Option<f64>| {
            let values: Vec<f64> = results.iter().filter_map(f).collect();
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        };
        self.node_f1 = mean(|r| r.node_f1);
        self.edge_f1 = mean(|r| r.edge_f1);
    }
}

/// How one case went in a suite run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CaseResult {
    pub suite_id: SuiteRunId,
    pub case_id: CaseId,
    /// The case's name when the suite ran.
    pub case_name: String,
    /// Its place in the suite, from 0.
    pub position: u32,
    pub outcome: CaseOutcome,
    /// The case's recorded run (what the run is compared with).
    #[serde(default)]
    pub case_run: Option<RunId>,
    /// The run that planned and ran the case.
    pub run_id: Option<RunId>,
    /// Why it failed or was skipped, when not by a check.
    pub reason: Option<String>,
    /// The run's plan against the case's reviewed plan.
    pub node_f1: Option<f64>,
    pub edge_f1: Option<f64>,
    pub checks: Vec<CheckOutcome>,
    pub wall_ms: u64,
    pub llm_calls: u32,
    pub tokens: u64,
    pub cost: Usd,
    pub answer: Option<String>,
    /// The first model reply or tool call where the run parted from the
    /// case's recorded run.
    pub divergence: Option<Divergence>,
}

/// A suite run and its cases (`GET /api/cases/runs/{id}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SuiteReport {
    pub run: SuiteRun,
    pub results: Vec<CaseResult>,
}

/// A case whose outcome changed between a model's last two suite runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CaseChange {
    pub case_id: CaseId,
    pub case_name: String,
    pub before: CaseOutcome,
    pub now: CaseOutcome,
    /// The run of the case in the latest suite run.
    pub run_id: Option<RunId>,
    /// Where that run first parted from the case's recorded run.
    pub divergence: Option<Divergence>,
}

/// A model's latest finished suite run and what changed since its
/// previous one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelScore {
    pub run: SuiteRun,
    pub changed: Vec<CaseChange>,
}

/// A review of a case's suite run that was not good: a finding about the
/// case (the model, prompt or policy under test got it wrong), never a
/// new case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    pub case_id: CaseId,
    pub suite_id: SuiteRunId,
    pub run_id: RunId,
    pub plan_id: plan_engine::PlanId,
    pub reviewer: String,
    pub verdict: crate::ReviewVerdict,
    pub note: String,
    pub at: DateTime<Utc>,
}

/// What the Cases page leads with: each model's latest score and the
/// cases that changed, the score over time, the suite runs going on, the
/// findings, and the cases themselves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CasesOverview {
    pub latest: Vec<ModelScore>,
    /// Finished suite runs with a score, oldest first (the chart).
    pub history: Vec<SuiteRun>,
    pub running: Vec<SuiteRun>,
    pub findings: Vec<Finding>,
    pub cases: Vec<crate::Case>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(outcome: CaseOutcome, f1: Option<f64>) -> CaseResult {
        CaseResult {
            suite_id: uuid::Uuid::nil(),
            case_id: uuid::Uuid::nil(),
            case_name: "c".into(),
            position: 0,
            outcome,
            case_run: None,
            run_id: None,
            reason: None,
            node_f1: f1,
            edge_f1: f1,
            checks: Vec::new(),
            wall_ms: 0,
            llm_calls: 0,
            tokens: 0,
            cost: Usd::ZERO,
            answer: None,
            divergence: None,
        }
    }

    #[test]
    fn the_score_is_the_share_of_judged_cases_that_passed() {
        let mut run = SuiteRun {
            id: uuid::Uuid::nil(),
            state: SuiteState::Done,
            reason: None,
            tag: None,
            model: "m".into(),
            version: "0.1.0".into(),
            unmatched: SuiteTools::Replay,
            budget: SuiteBudget::default(),
            started_by: "ada".into(),
            started_at: chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
            finished_at: None,
            cases: 0,
            passed: 0,
            failed: 0,
            skipped: 0,
            score: None,
            node_f1: None,
            edge_f1: None,
            spent: SuiteSpent::default(),
        };
        run.tally(&[]);
        assert_eq!(run.score, None);
        run.tally(&[
            result(CaseOutcome::Passed, Some(1.0)),
            result(CaseOutcome::Failed, Some(0.5)),
            result(CaseOutcome::Passed, None),
            result(CaseOutcome::Skipped, None),
        ]);
        assert_eq!(
            (run.cases, run.passed, run.failed, run.skipped),
            (4, 2, 1, 1)
        );
        assert_eq!(run.score, Some(2.0 / 3.0));
        assert_eq!(run.node_f1, Some(0.75));
    }
}
