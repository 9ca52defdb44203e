//! Regression cases and suite runs (issue 56): a run a reviewer judged
//! good becomes a case (its task and config, its input files, its plan
//! as reviewed, its answer and the reviewer's checks); a suite run plans
//! and runs every case again (or a tag of them) on the configured or a
//! chosen model, its tool calls answered from each case's recording where
//! they are the same call or all made live, and judges each by its
//! checks, its plan's graph F1 against the reviewed plan, its time and
//! its cost. A review that is not good of a suite's run of a case is a
//! finding about the case, never a new case.
//!
//! A case keeps its run from the retentions (`kept`): its log is the
//! recording a suite replays, and each suite run's first divergence is
//! measured against it. Its input files are copied into the workspaces'
//! `.cases/<id>` folder, so the run's own retention never takes them.
//!
//! # Layout
//! - this file: [`Cases`], the one service the API, MCP, the board and
//!   `planboard eval` call (making, listing, editing, retiring and
//!   deleting cases; the Cases page's overview); [`CaseStore`], what it
//!   needs stored; [`CaseError`];
//! - `suite.rs`: suite runs: starting one, running its cases one after
//!   another within its budget, cancelling, the report, the webhook entry;
//! - `schedule.rs`: `PLANBOARD_SUITE_SCHEDULE`'s runs;
//! - `sql.rs`: [`CaseStore`] over the server's SQL store.

mod schedule;
mod sql;
mod suite;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use plan_engine::Plan;
use run_model::{
    Case, CaseId, CasePatch, CaseResult, CasesOverview, Finding, GraphNode, NewCase, ReviewVerdict,
    RunConfig, RunId, SuiteRun, SuiteRunId,
};

use crate::reviews::{ReviewError, Reviews};
use crate::runs::{RunError, Runs};
use crate::service::PlanService;
use crate::store::StoreError;
use crate::workspace::inputs::InputError;
use crate::workspace::Workspaces;

pub use suite::{report_text, version, SUITE_ACTOR};

/// The cases' and suite runs' tables.
#[async_trait]
pub trait CaseStore: Send + Sync {
    /// Stores a new case with its checks, its reviewed plan and its run's
    /// config, all or nothing.
    async fn insert_case(
        &self,
        case: &Case,
        plan: &Plan,
        config: &RunConfig,
    ) -> Result<(), StoreError>;
    /// Every case with its checks, newest first.
    async fn cases(&self) -> Result<Vec<Case>, StoreError>;
    async fn case(&self, id: CaseId) -> Result<Option<Case>, StoreError>;
    /// The case made from `run`, if one was.
    async fn case_of_run(&self, run: RunId) -> Result<Option<CaseId>, StoreError>;
    /// What a suite runs a case from: its reviewed plan and its run's config.
    async fn case_setup(&self, id: CaseId) -> Result<Option<(Plan, RunConfig)>, StoreError>;
    /// Rewrites a case's name, tags, checks, retirement and change time;
    /// whether there was one.
    async fn update_case(&self, case: &Case) -> Result<bool, StoreError>;
    /// Deletes a case and its checks (its suite results stay); whether
    /// there was one.
    async fn delete_case(&self, id: CaseId) -> Result<bool, StoreError>;
    /// Stores a new suite run, held by `owner`, in `slot` when scheduled
    /// (a slot taken already is [`StoreError::Constraint`]).
    async fn insert_suite(
        &self,
        run: &SuiteRun,
        owner: &str,
        slot: Option<&str>,
    ) -> Result<(), StoreError>;
    async fn save_suite(&self, run: &SuiteRun) -> Result<(), StoreError>;
    async fn suite(&self, id: SuiteRunId) -> Result<Option<SuiteRun>, StoreError>;
    /// Suite runs, newest first, at most `limit`.
    async fn suites(&self, limit: u32) -> Result<Vec<SuiteRun>, StoreError>;
    /// `owner`'s suite runs that are still running (after a restart: left
    /// by the process that stopped).
    async fn running_suites(&self, owner: &str) -> Result<Vec<SuiteRun>, StoreError>;
    /// Stores each result (replacing the one at its suite and position).
    async fn put_results(&self, results: &[CaseResult]) -> Result<(), StoreError>;
    /// A suite run's results, in its order.
    async fn results(&self, suite: SuiteRunId) -> Result<Vec<CaseResult>, StoreError>;
}

#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Review(#[from] ReviewError),
    /// The case, its checks or the suite asked for were refused; nothing
    /// was stored.
    #[error(transparent)]
    Refused(#[from] run_model::CaseError),
    /// What was asked cannot be done with this run or these cases.
    #[error("{0}")]
    Invalid(String),
    /// The run has not finished yet.
    #[error("{0}")]
    NotFinished(String),
    /// The run is a case already.
    #[error("{0}")]
    Taken(String),
    #[error("no case has id {0}")]
    NotFound(CaseId),
    #[error("no suite run has id {0}")]
    NoSuite(SuiteRunId),
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The cases and their suite runs.
pub struct Cases {
    plans: Arc<PlanService>,
    runs: Arc<Runs>,
    reviews: Arc<Reviews>,
    store: Arc<dyn CaseStore>,
    workspaces: Arc<Workspaces>,
    /// The suite runs this process drives, each with its cancel flag.
    going: Mutex<HashMap<SuiteRunId, Arc<AtomicBool>>>,
}

impl Cases {
    pub fn new(
        plans: Arc<PlanService>,
        runs: Arc<Runs>,
        reviews: Arc<Reviews>,
        store: Arc<dyn CaseStore>,
        workspaces: Arc<Workspaces>,
    ) -> Arc<Cases> {
        Arc::new(Cases {
            plans,
            runs,
            reviews,
            store,
            workspaces,
            going: Mutex::new(HashMap::new()),
        })
    }

    /// Where a case's copy of its input files is.
    fn folder(&self, id: CaseId) -> PathBuf {
        self.workspaces.root().join(".cases").join(id.to_string())
    }

    /// Makes a case of a run reviewed good (see the module).
    pub async fn make(&self, new: NewCase, who: &str) -> Result<Case, CaseError> {
        // The body names the run: an unknown one is the body's mistake.
        let record = self.runs.record(new.run_id).await.map_err(|e| match e {
            RunError::NotFound(id) => CaseError::Invalid(format!("no run has id {id}")),
            e => e.into(),
        })?;
        if let Some(of) = &record.config.case {
            return Err(CaseError::Invalid(format!(
                "run {} is suite run {}'s run of case {}: a review of it is a finding about that \
                 case, not a new case",
                record.id, of.suite, of.case
            )));
        }
        if !record.state.is_finished() {
            return Err(CaseError::NotFinished(format!(
                "run {} is {}; a case is made of a finished run a reviewer judged good",
                record.id, record.state
            )));
        }
        if let Some(case) = self.store.case_of_run(record.id).await? {
            return Err(CaseError::Taken(format!(
                "run {} is case {case} already",
                record.id
            )));
        }
        let plan_id = record
            .plan_id
            .ok_or_else(|| CaseError::Invalid(format!("run {} has no plan to keep", record.id)))?;
        let plan =
            self.plans.get(plan_id).await.ok_or_else(|| {
                CaseError::Invalid(format!("run {}'s plan was deleted", record.id))
            })?;
        let good = self
            .reviews
            .of_plan(plan_id)
            .await?
            .iter()
            .any(|r| r.verdict == ReviewVerdict::Good);
        if !good {
            return Err(CaseError::Invalid(format!(
                "run {}'s plan has no review judging it good; only a run reviewed good becomes a case",
                record.id
            )));
        }
        if let Some(at) = record
            .files_removed_at
            .filter(|_| !record.config.inputs.is_empty())
        {
            return Err(CaseError::Invalid(format!(
                "run {}'s files were removed on {} (PLANBOARD_WORKSPACE_RETENTION_DAYS): the \
                 files its task started from are gone, and a case keeps them",
                record.id,
                at.format("%Y-%m-%d %H:%M UTC")
            )));
        }
        let graph = GraphNode::of_plan(&plan);
        let name = run_model::case::checked_name(new.name.as_deref().unwrap_or(plan.title()))?;
        let tags = run_model::case::checked_tags(new.tags)?;
        let checks = run_model::case::checked_checks(new.checks, &graph)?;
        let now = chrono::Utc::now();
        let id = uuid::Uuid::new_v4();
        let case = Case {
            id,
            name,
            tags,
            task: record.config.task.clone(),
            run_id: record.id,
            plan_id,
            graph,
            answer: record.answer.clone(),
            inputs: record.config.inputs.clone(),
            checks,
            retired: false,
            created_by: who.to_string(),
            created_at: now,
            updated_at: now,
        };
        let paths: Vec<String> = case.inputs.iter().map(|f| f.path.clone()).collect();
        crate::workspace::inputs::copy_files(
            self.runs.workspace(record.id),
            self.folder(id),
            paths,
            self.workspaces.quota(),
        )
        .await?;
        if let Err(e) = self.store.insert_case(&case, &plan, &record.config).await {
            let _ = tokio::fs::remove_dir_all(self.folder(id)).await;
            return Err(e.into());
        }
        // Its log is the recording, its plan the reference: kept.
        if let Err(e) = self.runs.keep_run(record.id, true).await {
            tracing::warn!("case {id}: its run {} could not be kept: {e}", record.id);
        }
        self.get(id).await
    }

    pub async fn get(&self, id: CaseId) -> Result<Case, CaseError> {
        self.store.case(id).await?.ok_or(CaseError::NotFound(id))
    }

    /// The cases (of `tag`, retired or not as asked), newest first.
    pub async fn list(
        &self,
        tag: Option<&str>,
        retired: Option<bool>,
    ) -> Result<Vec<Case>, CaseError> {
        let tag = tag.map(|t| t.trim().to_lowercase());
        Ok(self
            .store
            .cases()
            .await?
            .into_iter()
            .filter(|c| tag.as_ref().is_none_or(|t| c.tags.contains(t)))
            .filter(|c| retired.is_none_or(|r| c.retired == r))
            .collect())
    }

    /// The case made from `run`, if one was.
    pub async fn case_of_run(&self, run: RunId) -> Result<Option<CaseId>, CaseError> {
        Ok(self.store.case_of_run(run).await?)
    }

    /// Changes a case's name, tags, checks (checked against its plan) or
    /// retirement.
    pub async fn edit(&self, id: CaseId, patch: CasePatch) -> Result<Case, CaseError> {
        let mut case = self.get(id).await?;
        if let Some(name) = patch.name {
            case.name = run_model::case::checked_name(&name)?;
        }
        if let Some(tags) = patch.tags {
            case.tags = run_model::case::checked_tags(tags)?;
        }
        if let Some(checks) = patch.checks {
            case.checks = run_model::case::checked_checks(checks, &case.graph)?;
        }
        if let Some(retired) = patch.retired {
            case.retired = retired;
        }
        case.updated_at = chrono::Utc::now();
        if !self.store.update_case(&case).await? {
            return Err(CaseError::NotFound(id));
        }
        self.get(id).await
    }

    /// Deletes a case, its checks and its copy of the input files; its
    /// suite results stay, and its run stays kept (let it go on its page).
    pub async fn delete(&self, id: CaseId) -> Result<(), CaseError> {
        if !self.store.delete_case(id).await? {
            return Err(CaseError::NotFound(id));
        }
        let _ = tokio::fs::remove_dir_all(self.folder(id)).await;
        Ok(())
    }

    /// The reviews that are not good of the suites' runs of cases, newest
    /// first (at most 100).
    pub async fn findings(&self) -> Result<Vec<Finding>, CaseError> {
        let mut reviews = Vec::new();
        for verdict in [ReviewVerdict::Wrong, ReviewVerdict::NeedsChanges] {
            reviews.extend(self.reviews.list(Some(verdict), None, 0, 200).await?);
        }
        let plans: Vec<plan_engine::PlanId> = reviews.iter().map(|r| r.plan_id).collect();
        let runs: HashMap<plan_engine::PlanId, run_model::RunRecord> = self
            .runs
            .store()
            .runs_on(&plans)
            .await?
            .into_iter()
            .filter_map(|r| Some((r.plan_id?, r)))
            .collect();
        let mut found: Vec<Finding> = reviews
            .into_iter()
            .filter_map(|r| {
                let run = runs.get(&r.plan_id)?;
                let of = run.config.case.as_ref()?;
                Some(Finding {
                    case_id: of.case,
                    suite_id: of.suite,
                    run_id: run.id,
                    plan_id: r.plan_id,
                    reviewer: r.reviewer,
                    verdict: r.verdict,
                    note: r.note,
                    at: r.updated_at,
                })
            })
            .collect();
        found.sort_by_key(|f| std::cmp::Reverse(f.at));
        found.truncate(100);
        Ok(found)
    }

    /// What the Cases page leads with (see [`CasesOverview`]).
    pub async fn overview(&self) -> Result<CasesOverview, CaseError> {
        let suites = self.store.suites(500).await?;
        let running = suites
            .iter()
            .filter(|s| !s.state.is_finished())
            .cloned()
            .collect();
        let mut history: Vec<SuiteRun> = suites
            .iter()
            .filter(|s| s.state.is_finished() && s.score.is_some())
            .cloned()
            .collect();
        history.reverse();
        let mut latest = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for run in suites.iter().filter(|s| s.state.is_finished()) {
            if seen.contains(&run.model.as_str()) {
                continue;
            }
            seen.push(&run.model);
            latest.push(run_model::ModelScore {
                run: run.clone(),
                changed: self.changed(run).await?,
            });
        }
        Ok(CasesOverview {
            latest,
            history,
            running,
            findings: self.findings().await?,
            cases: self.store.cases().await?,
        })
    }
}
