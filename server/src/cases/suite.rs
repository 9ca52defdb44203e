//! Suite runs: every case not retired (or those of a tag), one after
//! another, each an ordinary run of the agent planned anew on the suite's
//! model (no approval asked, nothing recalled or remembered), its tool
//! calls answered from the case's recording where they are the same call
//! (`replay`) or all made (`live`). A case's run that pauses or waits for
//! a person, or outlasts its time, is cancelled and the case fails with
//! why. The suite's budget bounds what all the runs may spend: each run
//! is given what is left, and the cases after it runs out are skipped.
//! Cancelling stops the case's run going on and skips the rest. The cases
//! themselves are only read.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use run_model::{
    Case, CaseChange, CaseOutcome, CaseResult, CaseRun, Evidence, NewSuiteRun, ReplayOf, RunState,
    SuiteReport, SuiteRun, SuiteRunId, SuiteSpent, SuiteState, SuiteSummary, SuiteTools, Unmatched,
};

use super::{CaseError, Cases};

/// Who starts a case's runs and cancels them.
pub const SUITE_ACTOR: &str = "planboard-suite";

/// Why a case was not judged when the suite run was cancelled.
const CANCELLED: &str = "the suite run was cancelled";

/// How often a case's run is looked at while it goes on.
const POLL: Duration = Duration::from_millis(250);
/// A case's run may take its wall budget and this much more (its queue
/// for the model, its planning) before it is cancelled.
const GRACE: Duration = Duration::from_secs(120);

/// The planboard version a suite runs under (the chart's series).
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

impl Cases {
    /// Starts a suite run over the cases `new` names (see the module);
    /// `who` started it, `slot` is a scheduled run's.
    pub async fn start_suite(
        self: &Arc<Self>,
        new: NewSuiteRun,
        who: &str,
        slot: Option<&str>,
    ) -> Result<SuiteRun, CaseError> {
        let asked = match new.model.as_deref().map(str::trim) {
            None => None,
            Some(model)
                if !model.is_empty()
                    && model.chars().count() <= run_model::replay::MODEL_NAME_CHARS
                    && !model.contains(char::is_control) =>
            {
                Some(model.to_string())
            }
            Some(_) => {
                return Err(CaseError::Invalid(format!(
                    "model must name a model of 1 to {} characters",
                    run_model::replay::MODEL_NAME_CHARS
                )))
            }
        };
        let configured = self.runs.model_name();
        let model = asked.clone().or(configured).ok_or_else(|| {
            CaseError::Run(crate::runs::RunError::NoModel(
                "planboard's agent has no model: set PLANBOARD_LLM_MODEL and \
                 PLANBOARD_LLM_BASE_URL, then restart; a suite runs its cases on it"
                    .into(),
            ))
        })?;
        let tag = match &new.tag {
            Some(tag) => run_model::case::checked_tags(vec![tag.clone()])?.pop(),
            None => None,
        };
        let cases = self.list(tag.as_deref(), Some(false)).await?;
        if cases.is_empty() {
            return Err(CaseError::Invalid(match &tag {
                Some(tag) => format!("no case that is not retired has the tag {tag}"),
                None => "there is no case to run (make one from a run reviewed good)".into(),
            }));
        }
        let run = SuiteRun {
            id: uuid::Uuid::new_v4(),
            state: SuiteState::Running,
            reason: None,
            tag,
            model,
            version: version(),
            unmatched: new.unmatched,
            budget: new.budget,
            started_by: who.to_string(),
            started_at: chrono::Utc::now(),
            finished_at: None,
            cases: cases.len() as u32,
            passed: 0,
            failed: 0,
            skipped: 0,
            score: None,
            node_f1: None,
            edge_f1: None,
            spent: SuiteSpent::default(),
        };
        let results: Vec<CaseResult> = cases
            .iter()
            .enumerate()
            .map(|(i, case)| pending(&run, case, i))
            .collect();
        self.store
            .insert_suite(&run, self.runs.owner(), slot)
            .await?;
        self.store.put_results(&results).await?;
        let cancel = Arc::new(AtomicBool::new(false));
        self.going
            .lock()
            .expect("suites lock")
            .insert(run.id, cancel.clone());
        let me = self.clone();
        let started = run.clone();
        tokio::spawn(async move {
            let id = started.id;
            me.clone()
                .run_suite(started, cases, results, asked, cancel)
                .await;
            me.going.lock().expect("suites lock").remove(&id);
        });
        Ok(run)
    }

    /// A suite run and its results.
    pub async fn report(&self, id: SuiteRunId) -> Result<SuiteReport, CaseError> {
        let run = self.store.suite(id).await?.ok_or(CaseError::NoSuite(id))?;
        let results = self.store.results(id).await?;
        Ok(SuiteReport { run, results })
    }

    /// The report of suite run `id` once it has ended (looked at every
    /// `every`): what `planboard eval` waits for.
    pub async fn wait_report(
        &self,
        id: SuiteRunId,
        every: Duration,
    ) -> Result<SuiteReport, CaseError> {
        loop {
            let report = self.report(id).await?;
            if report.run.state.is_finished() {
                return Ok(report);
            }
            tokio::time::sleep(every).await;
        }
    }

    /// Suite runs, newest first.
    pub async fn suites(&self, limit: u32) -> Result<Vec<SuiteRun>, CaseError> {
        Ok(self.store.suites(limit).await?)
    }

    /// Cancels a suite run: its case's run going on is cancelled, the
    /// rest skipped. One that ended already is left as it is. A suite run
    /// another process drives is cancelled when it next looks.
    pub async fn cancel(&self, id: SuiteRunId, who: &str) -> Result<SuiteRun, CaseError> {
        let mut run = self.store.suite(id).await?.ok_or(CaseError::NoSuite(id))?;
        if run.state.is_finished() {
            return Ok(run);
        }
        let flag = self.going.lock().expect("suites lock").get(&id).cloned();
        match flag {
            Some(flag) => flag.store(true, Ordering::SeqCst),
            None => {
                // Nobody here drives it (another replica, or a process
                // that stopped): marked, and skipped by whoever looks.
                run.state = SuiteState::Cancelled;
                run.reason = Some(format!("cancelled by {who}"));
                run.finished_at = Some(chrono::Utc::now());
                self.store.save_suite(&run).await?;
            }
        }
        if run.reason.is_none() {
            run.reason = Some(format!("cancelled by {who}"));
        }
        Ok(run)
    }

    /// Fails the suite runs this process held when it stopped (a restart
    /// cannot pick a suite up where it was: its case's run goes on alone).
    pub async fn fail_interrupted(&self) -> Result<usize, CaseError> {
        let left = self.store.running_suites(self.runs.owner()).await?;
        for mut run in left.iter().cloned() {
            let mut results = self.store.results(run.id).await?;
            for r in results
                .iter_mut()
                .filter(|r| matches!(r.outcome, CaseOutcome::Pending | CaseOutcome::Running))
            {
                r.outcome = CaseOutcome::Skipped;
                r.reason = Some("the server stopped during the suite run".into());
            }
            self.store.put_results(&results).await?;
            run.tally(&results);
            run.state = SuiteState::Failed;
            run.reason = Some("the server stopped during the suite run".into());
            run.finished_at = Some(chrono::Utc::now());
            self.store.save_suite(&run).await?;
        }
        Ok(left.len())
    }

    /// Runs a suite's cases one after another, then ends it: saved, with
    /// a `suite_finished` entry on the run log for the webhooks.
    async fn run_suite(
        self: Arc<Self>,
        mut run: SuiteRun,
        cases: Vec<Case>,
        mut results: Vec<CaseResult>,
        model: Option<String>,
        cancel: Arc<AtomicBool>,
    ) {
        let started = Instant::now();
        let mut cancelled = false;
        for (i, case) in cases.iter().enumerate() {
            cancelled = cancel.load(Ordering::SeqCst) || self.cancelled_elsewhere(run.id).await;
            let stopped = if cancelled {
                Some(CANCELLED.to_string())
            } else {
                spent_out(&run)
            };
            if let Some(why) = stopped {
                for r in &mut results[i..] {
                    r.outcome = CaseOutcome::Skipped;
                    r.reason = Some(why.clone());
                }
                if run.reason.is_none() {
                    run.reason = Some(why);
                }
                break;
            }
            results[i].outcome = CaseOutcome::Running;
            let _ = self.store.put_results(&results[i..=i]).await;
            let result = self
                .run_case(&run, case, results[i].clone(), model.as_deref(), &cancel)
                .await;
            run.spent.llm_calls = run.spent.llm_calls.saturating_add(result.llm_calls);
            run.spent.tokens = run.spent.tokens.saturating_add(result.tokens);
            run.spent.cost = run.spent.cost.saturating_add(result.cost);
            results[i] = result;
            run.spent.wall_ms = started.elapsed().as_millis() as u64;
            run.tally(&results);
            if let Err(e) = self.store.put_results(&results[i..=i]).await {
                tracing::error!("suite run {}: a result could not be stored: {e}", run.id);
            }
            if let Err(e) = self.store.save_suite(&run).await {
                tracing::error!("suite run {}: it could not be saved: {e}", run.id);
            }
        }
        run.spent.wall_ms = started.elapsed().as_millis() as u64;
        run.tally(&results);
        run.state = if cancelled || cancel.load(Ordering::SeqCst) {
            SuiteState::Cancelled
        } else {
            SuiteState::Done
        };
        run.finished_at = Some(chrono::Utc::now());
        if let Err(e) = self.store.put_results(&results).await {
            tracing::error!("suite run {}: its results could not be stored: {e}", run.id);
        }
        if let Err(e) = self.store.save_suite(&run).await {
            tracing::error!("suite run {}: it could not be saved: {e}", run.id);
        }
        let changed = match self.changed(&run).await {
            Ok(changed) => changed.into_iter().map(|c| c.case_name).collect(),
            Err(e) => {
                tracing::warn!("suite run {}: what changed could not be read: {e}", run.id);
                Vec::new()
            }
        };
        self.announce(&run, changed).await;
        tracing::info!(
            "suite run {} ended {}: {} passed, {} failed, {} skipped",
            run.id,
            run.state,
            run.passed,
            run.failed,
            run.skipped
        );
    }

    /// Whether the stored suite run was cancelled by a process that does
    /// not drive it.
    async fn cancelled_elsewhere(&self, id: SuiteRunId) -> bool {
        matches!(
            self.store.suite(id).await,
            Ok(Some(stored)) if stored.state == SuiteState::Cancelled
        )
    }

    /// Tells the run log (and so the webhooks) that the suite run ended.
    async fn announce(&self, run: &SuiteRun, changed: Vec<String>) {
        let entry = run_model::RunEntry::SuiteFinished(SuiteSummary {
            suite: run.id,
            state: run.state,
            model: run.model.clone(),
            version: run.version.clone(),
            passed: run.passed,
            failed: run.failed,
            skipped: run.skipped,
            score: run.score,
            changed,
        });
        let kind = entry.kind();
        let Ok(entry) = serde_json::to_value(&entry) else {
            return;
        };
        let appended = self
            .runs
            .log()
            .append_run_log(&[crate::runlog::NewRunEntry {
                run: run.id,
                plan: None,
                kind,
                at: chrono::Utc::now(),
                entry,
            }])
            .await;
        if let Err(e) = appended {
            tracing::warn!("suite run {}: its end could not be logged: {e}", run.id);
        }
    }

    /// Plans and runs one case, and judges it.
    async fn run_case(
        self: &Arc<Self>,
        suite: &SuiteRun,
        case: &Case,
        mut result: CaseResult,
        model: Option<&str>,
        cancel: &AtomicBool,
    ) -> CaseResult {
        let failed = |mut result: CaseResult, why: String| {
            result.outcome = CaseOutcome::Failed;
            result.reason = Some(why);
            result
        };
        let setup = match self.store.case_setup(case.id).await {
            Ok(Some(setup)) => setup,
            Ok(None) => return failed(result, "the case was deleted meanwhile".into()),
            Err(e) => {
                tracing::error!("suite run {}: case {}: {e}", suite.id, case.id);
                return failed(
                    result,
                    "the case could not be read (see the server log)".into(),
                );
            }
        };
        let (reviewed, mut config) = setup;
        config.plan = None;
        config.approval_required = false;
        config.memory = false;
        config.model = model.map(str::to_string);
        config.replay = match suite.unmatched {
            SuiteTools::Replay => Some(ReplayOf {
                run: case.run_id,
                unmatched: Unmatched::Live,
                from: None,
            }),
            SuiteTools::Live => None,
        };
        config.case = Some(CaseRun {
            case: case.id,
            suite: suite.id,
        });
        // Within what the suite has left.
        if let Some(max) = suite.budget.max_llm_calls {
            let left = max.saturating_sub(suite.spent.llm_calls).max(1);
            config.budget.max_llm_calls = config.budget.max_llm_calls.min(left);
        }
        if let Some(max) = suite.budget.max_cost {
            let left = run_model::Usd::from_pico(
                max.pico().saturating_sub(suite.spent.cost.pico()).max(1),
            );
            config.budget.max_cost = Some(config.budget.max_cost.map_or(left, |own| own.min(left)));
        }
        let limit = Duration::from_secs(config.budget.max_wall_secs) + GRACE;
        let started = Instant::now();
        let view = match self
            .runs
            .start_on_inputs(config, self.folder(case.id), SUITE_ACTOR)
            .await
        {
            Ok(view) => view,
            Err(e) => return failed(result, format!("its run could not start: {e}")),
        };
        let id = view.record.id;
        result.run_id = Some(id);
        // Until the run ends, stops for a person, or outlasts its time.
        let mut why_not = None;
        loop {
            let record = match self.runs.record(id).await {
                Ok(record) => record,
                Err(e) => {
                    why_not = Some(format!("its run could not be read: {e}"));
                    break;
                }
            };
            if record.state.is_finished() {
                break;
            }
            let stop = if cancel.load(Ordering::SeqCst) {
                Some(CANCELLED.to_string())
            } else if matches!(record.state, RunState::Paused | RunState::AwaitingApproval) {
                Some(format!(
                    "its run stopped for a person ({}): {}",
                    record.state,
                    record.reason.unwrap_or_default()
                ))
            } else if started.elapsed() > limit {
                Some(format!(
                    "its run took longer than {} s and was cancelled",
                    limit.as_secs()
                ))
            } else {
                None
            };
            if let Some(why) = stop {
                if let Err(e) = self.runs.cancel(id, SUITE_ACTOR).await {
                    tracing::warn!(
                        "suite run {}: run {id} could not be cancelled: {e}",
                        suite.id
                    );
                }
                why_not = Some(why);
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        // Cancelled: wait a moment for the run to settle before reading it.
        if why_not.is_some() {
            for _ in 0..40 {
                match self.runs.record(id).await {
                    Ok(r) if r.state.is_finished() => break,
                    _ => tokio::time::sleep(POLL).await,
                }
            }
        }
        let cancelled = why_not.as_deref() == Some(CANCELLED);
        let mut judged = self.judge(case, &reviewed, id, result, why_not).await;
        // A case the suite's cancel cut short was not judged.
        if cancelled {
            judged.outcome = CaseOutcome::Skipped;
        }
        judged
    }

    /// Judges a case's finished run: its plan against the reviewed one,
    /// each check, what it spent, where it parted from the recording.
    async fn judge(
        &self,
        case: &Case,
        reviewed: &plan_engine::Plan,
        run: run_model::RunId,
        mut result: CaseResult,
        why_not: Option<String>,
    ) -> CaseResult {
        let record = match self.runs.record(run).await {
            Ok(record) => record,
            Err(e) => {
                result.outcome = CaseOutcome::Failed;
                result.reason =
                    Some(why_not.unwrap_or_else(|| format!("its run could not be read: {e}")));
                return result;
            }
        };
        result.wall_ms = record.spent.wall_ms;
        result.llm_calls = record.spent.llm_calls;
        result.tokens = record.spent.tokens();
        result.cost = record.spent.cost;
        result.answer = record
            .answer
            .as_deref()
            .map(|a| plan_engine::text::fit(a, 4_000));
        let plan = match record.plan_id {
            Some(id) => self.plans.get(id).await,
            None => None,
        };
        let mut evidence = Evidence {
            answer: record.answer.clone(),
            ..Evidence::default()
        };
        if let Some(plan) = &plan {
            let matched = plan_engine::graph_match(reviewed, plan);
            result.node_f1 = Some(matched.node_f1);
            result.edge_f1 = Some(matched.edge_f1);
            for (theirs, ours) in matched.matched {
                let done = plan
                    .subtask(ours)
                    .is_some_and(|s| s.state() == plan_engine::SubtaskState::Done);
                evidence.done.insert(theirs.0, done);
            }
        }
        let mut files: BTreeMap<String, Option<String>> = BTreeMap::new();
        for path in case.checks.iter().filter_map(|c| c.file()) {
            if files.contains_key(path) {
                continue;
            }
            let text = self
                .runs
                .artifact(run, path)
                .await
                .ok()
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
            files.insert(path.to_string(), text);
        }
        evidence.files = files;
        result.checks = case.checks.iter().map(|c| c.judge(&evidence)).collect();
        let checks_hold = result.checks.iter().all(|c| c.passed);
        result.reason = match (&why_not, record.state) {
            (Some(why), _) => Some(why.clone()),
            (None, RunState::Done) => None,
            (None, state) => Some(format!(
                "its run ended {state}: {}",
                record.reason.clone().unwrap_or_default()
            )),
        };
        result.outcome = if why_not.is_none() && record.state == RunState::Done && checks_hold {
            CaseOutcome::Passed
        } else {
            CaseOutcome::Failed
        };
        result.divergence = match (
            self.runs.steps_of(case.run_id).await,
            self.runs.steps_of(run).await,
        ) {
            (Ok((recorded, _, _)), Ok((now, _, _))) => run_model::first_divergence(&recorded, &now),
            _ => None,
        };
        result
    }

    /// The cases whose outcome changed between `run` and the suite run
    /// before it on the same model.
    pub(super) async fn changed(&self, run: &SuiteRun) -> Result<Vec<CaseChange>, CaseError> {
        let earlier = self
            .store
            .suites(500)
            .await?
            .into_iter()
            .filter(|s| {
                s.model == run.model
                    && s.id != run.id
                    && s.state.is_finished()
                    && s.started_at < run.started_at
            })
            .max_by_key(|s| s.started_at);
        let Some(earlier) = earlier else {
            return Ok(Vec::new());
        };
        let before: HashMap<run_model::CaseId, CaseOutcome> = self
            .store
            .results(earlier.id)
            .await?
            .into_iter()
            .map(|r| (r.case_id, r.outcome))
            .collect();
        Ok(self
            .store
            .results(run.id)
            .await?
            .into_iter()
            .filter_map(|r| {
                let was = *before.get(&r.case_id)?;
                let judged =
                    |o: CaseOutcome| matches!(o, CaseOutcome::Passed | CaseOutcome::Failed);
                if !(judged(was) && judged(r.outcome) && was != r.outcome) {
                    return None;
                }
                Some(CaseChange {
                    case_id: r.case_id,
                    case_name: r.case_name,
                    before: was,
                    now: r.outcome,
                    run_id: r.run_id,
                    divergence: r.divergence,
                })
            })
            .collect())
    }
}

/// A suite run's report as `planboard eval` prints it: the run, a line
/// per case (with each failed check and why), the totals.
pub fn report_text(report: &SuiteReport) -> String {
    let percent =
        |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{:.0} %", v * 100.0));
    let run = &report.run;
    let mut out = format!(
        "suite run {} on {} (planboard {}, tool calls {}): {}\n",
        run.id, run.model, run.version, run.unmatched, run.state
    );
    for r in &report.results {
        out.push_str(&format!(
            "  {:<8} {}  node F1 {}  edge F1 {}  {:.1} s  {} calls  {}\n",
            r.outcome.as_str(),
            r.case_name,
            percent(r.node_f1),
            percent(r.edge_f1),
            r.wall_ms as f64 / 1000.0,
            r.llm_calls,
            r.cost
        ));
        if let Some(why) = &r.reason {
            out.push_str(&format!("           {why}\n"));
        }
        for c in r.checks.iter().filter(|c| !c.passed) {
            out.push_str(&format!(
                "           ✗ {} — {}\n",
                c.check.label(false),
                c.detail
            ));
        }
        if let (CaseOutcome::Failed, Some(d)) = (r.outcome, &r.divergence) {
            out.push_str(&format!(
                "           first divergence from the recording at step {}\n",
                d.index + 1
            ));
        }
    }
    out.push_str(&format!(
        "score {} · {} passed, {} failed, {} skipped · {} model calls · {} · {:.1} s\n",
        percent(run.score),
        run.passed,
        run.failed,
        run.skipped,
        run.spent.llm_calls,
        run.spent.cost,
        run.spent.wall_ms as f64 / 1000.0
    ));
    if let Some(why) = &run.reason {
        out.push_str(&format!("{why}\n"));
    }
    out
}

/// A case's result before it runs.
fn pending(run: &SuiteRun, case: &Case, position: usize) -> CaseResult {
    CaseResult {
        suite_id: run.id,
        case_id: case.id,
        case_name: case.name.clone(),
        position: position as u32,
        outcome: CaseOutcome::Pending,
        case_run: Some(case.run_id),
        run_id: None,
        reason: None,
        node_f1: None,
        edge_f1: None,
        checks: Vec::new(),
        wall_ms: 0,
        llm_calls: 0,
        tokens: 0,
        cost: run_model::Usd::ZERO,
        answer: None,
        divergence: None,
    }
}

/// Why the suite's budget lets no further case run, if it does not.
fn spent_out(run: &SuiteRun) -> Option<String> {
    if let Some(max) = run
        .budget
        .max_llm_calls
        .filter(|max| run.spent.llm_calls >= *max)
    {
        return Some(format!(
            "the suite's budget is used up: {} model calls (budget {max})",
            run.spent.llm_calls
        ));
    }
    if let Some(max) = run.budget.max_cost.filter(|max| run.spent.cost >= *max) {
        return Some(format!(
            "the suite's budget is used up: it cost {} (budget {max})",
            run.spent.cost
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suite_whose_budget_is_spent_runs_no_further_case_and_says_why() {
        let mut run = SuiteRun {
            id: uuid::Uuid::nil(),
            state: SuiteState::Running,
            reason: None,
            tag: None,
            model: "m".into(),
            version: version(),
            unmatched: SuiteTools::Replay,
            budget: run_model::SuiteBudget {
                max_cost: run_model::Usd::from_dollars(0.5),
                max_llm_calls: Some(10),
            },
            started_by: "ada".into(),
            started_at: chrono::Utc::now(),
            finished_at: None,
            cases: 2,
            passed: 0,
            failed: 0,
            skipped: 0,
            score: None,
            node_f1: None,
            edge_f1: None,
            spent: SuiteSpent::default(),
        };
        assert_eq!(spent_out(&run), None);
        run.spent.llm_calls = 10;
        assert!(spent_out(&run)
            .unwrap()
            .contains("10 model calls (budget 10)"));
        run.spent.llm_calls = 3;
        run.spent.cost = run_model::Usd::from_dollars(0.5).unwrap();
        assert!(spent_out(&run).unwrap().contains("budget $0.5000"));
    }
}
