//! Approval records: every decision a person makes for the agent (a plan
//! version approved or rejected, a guarded call approved, edited or
//! denied, a budget raised, a drifted plan approved again, a grant given
//! or revoked), kept in a table of their own for audit: who, when, what
//! exactly (the plan's version and content digest, the call's tool and
//! digest), the decision and the note. They survive restarts and
//! replicas (the database), are listed on a run's page and over `GET
//! /api/approvals`, and are removed by the runs' retention with a longer
//! default (`PLANBOARD_APPROVAL_RETENTION_DAYS`, 365).
//!
//! A plan's approval is recorded whatever edge it came through: the plan
//! service tells [`Approvals`] (its [`ApprovalGate`]) of every approve
//! and reject it commits. The runs record what is decided on them
//! (guarded calls, budgets) through [`Approvals::record`].
//!
//! # Layout
//! - this file: [`Approvals`], the one service; [`ApprovalStore`], what it
//!   needs stored; [`ApprovalFilter`]; [`ApprovalError`];
//! - `sql.rs`: [`ApprovalStore`] over the server's SQL store.

mod sql;

use std::sync::Arc;

use async_trait::async_trait;
use plan_engine::{Command, Event, Op, Plan, PlanError, PlanId, Timestamp};
use run_model::approval::person_of;
use run_model::{
    ApprovalDecision, ApprovalKind, ApprovalRecord, ApprovalRule, Grant, GrantId, Hold, NewGrant,
    RuleScope, RunId,
};

use crate::runlog::RunStore;
use crate::service::{ApprovalGate, GateDecision, PlanService, ServiceError};
use crate::store::StoreError;

/// Which records to list: every field narrows; none lists all, newest
/// first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApprovalFilter {
    pub run: Option<RunId>,
    pub plan: Option<plan_engine::PlanId>,
    /// The person (`alice`, whoever acted for her).
    pub person: Option<String>,
    pub tool: Option<String>,
    pub kind: Option<ApprovalKind>,
    /// From this time on (inclusive).
    pub from: Option<Timestamp>,
    /// Up to this time (inclusive).
    pub to: Option<Timestamp>,
    pub offset: u32,
    pub limit: u32,
}

/// The records' table: written once per decision, never changed, removed
/// by the retention.
#[async_trait]
pub trait ApprovalStore: Send + Sync {
    async fn insert_approval(&self, record: &ApprovalRecord) -> Result<(), StoreError>;
    /// The records `filter` admits, newest first.
    async fn list_approvals(
        &self,
        filter: &ApprovalFilter,
    ) -> Result<Vec<ApprovalRecord>, StoreError>;
    /// Deletes the records of the runs that ended before `before` (runs a
    /// person keeps are left alone) and the records of no run made before
    /// it, with those runs' grants and holds; how many records went.
    async fn purge_approvals(&self, before: Timestamp) -> Result<u64, StoreError>;
    async fn insert_grants(&self, grants: &[Grant]) -> Result<(), StoreError>;
    /// Removes grants an approval gave that did not go through.
    async fn delete_grants(&self, ids: &[GrantId]) -> Result<(), StoreError>;
    /// A run's grants, oldest first, the revoked ones too.
    async fn run_grants(&self, run: RunId) -> Result<Vec<Grant>, StoreError>;
    /// Revokes `run`'s grant `grant` unless it is revoked already; whether
    /// this call did.
    async fn revoke_grant(
        &self,
        run: RunId,
        grant: GrantId,
        by: &str,
        at: Timestamp,
    ) -> Result<bool, StoreError>;
    async fn put_hold(&self, hold: &Hold) -> Result<(), StoreError>;
    /// The run's hold, released or not.
    async fn hold_of(&self, run: RunId) -> Result<Option<Hold>, StoreError>;
    /// Marks the run's hold released at `at`; whether this call did (so
    /// of two replicas only one starts the run).
    async fn release_hold(&self, run: RunId, at: Timestamp) -> Result<bool, StoreError>;
    /// The holds still held whose start time is at or before `now`.
    async fn due_holds(&self, now: Timestamp) -> Result<Vec<Hold>, StoreError>;
    /// The tool policies operators set (over `PLANBOARD_TOOL_POLICY`).
    async fn stored_policies(&self) -> Result<Vec<(String, run_model::ToolPolicy)>, StoreError>;
    /// Sets (or replaces) an operator's policy of `tool`.
    async fn put_policy(
        &self,
        tool: &str,
        policy: run_model::ToolPolicy,
        by: &str,
        at: Timestamp,
    ) -> Result<(), StoreError>;
}

#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// The request cannot be answered as asked (a bound out of range, a
    /// grant's pattern refused).
    #[error("{0}")]
    Invalid(String),
    /// The decision was made on something other than what is there now:
    /// another version's content (an approval is never replayed onto it).
    #[error("{0}")]
    Stale(String),
    /// No such run, grant or plan.
    #[error("{0}")]
    NotFound(String),
    /// The plan service refused (the engine, a role, a conflict).
    #[error(transparent)]
    Plan(#[from] ServiceError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The most records one page lists.
pub const PAGE_LIMIT: u32 = 500;

/// A person's approval of a plan, as the API and the board send it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanApproval {
    pub comment: Option<String>,
    /// The plan's content digest as the person read it: the approval is of
    /// that, never of what the plan says after a change they did not see.
    pub digest: Option<String>,
    /// The version the person saw (`expected_version`, `If-Match`).
    pub expected_version: Option<u64>,
    /// Guarded tools granted for the run with the approval: their calls
    /// (or those matching a pattern) no longer ask.
    pub grants: Vec<NewGrant>,
    /// Approve without starting: `Some(None)` starts on a click,
    /// `Some(Some(t))` at `t` (or on a click before it).
    pub hold: Option<Option<Timestamp>>,
}

/// The plan after an approval, and the events that recorded it.
pub struct Approved {
    pub plan: Plan,
    pub events: Vec<Event>,
    /// The grants it gave.
    pub grants: Vec<Grant>,
    /// The hold, when it was approved and held.
    pub hold: Option<Hold>,
}

/// Finished runs a forecast reads, newest first, and of those the most of
/// the same mode and model it is made from.
pub const FORECAST_READ: u32 = 100;
pub const FORECAST_FROM: usize = 50;

/// The most records the insights read.
pub const INSIGHTS_READ: usize = 10_000;

/// The longest a run may be held before it starts by itself: a year.
pub const LONGEST_HOLD_DAYS: i64 = 366;

/// The work tools a run can be given, by name (the runs' list, set at
/// start: a grant of a tool that does not exist is refused).
pub type ToolNames = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// Recording and listing approvals; the plan service's gate.
pub struct Approvals {
    plans: Arc<PlanService>,
    store: Arc<dyn ApprovalStore>,
    /// Which run works a plan, for the records of its approvals.
    runs: Arc<dyn RunStore>,
    /// The tools a grant may name (set once the runs exist).
    tools: std::sync::OnceLock<ToolNames>,
    /// What the models' calls cost, for the forecasts.
    prices: run_model::PriceTable,
    /// The operator's two-person rules (`PLANBOARD_APPROVAL_RULES`).
    rules: Vec<(RuleScope, ApprovalRule)>,
}

impl Approvals {
    /// The service, told of every plan approval the plan service commits.
    pub fn new(
        plans: Arc<PlanService>,
        store: Arc<dyn ApprovalStore>,
        runs: Arc<dyn RunStore>,
        prices: run_model::PriceTable,
        rules: Vec<(RuleScope, ApprovalRule)>,
    ) -> Arc<Approvals> {
        let approvals = Arc::new(Approvals {
            plans: plans.clone(),
            store,
            runs,
            tools: std::sync::OnceLock::new(),
            prices,
            rules,
        });
        plans.set_gate(approvals.clone());
        approvals
    }

    /// Keeps `record`. A failure is logged and returned: the decision it
    /// records has been made (and stays made) either way.
    pub async fn record(&self, record: &ApprovalRecord) -> Result<(), StoreError> {
        let kept = self.store.insert_approval(record).await;
        if let Err(e) = &kept {
            tracing::error!(
                "the approval record of {} by {} ({} {}) could not be kept: {e}",
                record.kind,
                record.by,
                record.decision,
                record.digest
            );
        }
        kept
    }

    /// Tells the service which tools a grant may name.
    pub fn know_tools(&self, names: ToolNames) {
        let _ = self.tools.set(names);
    }

    /// Approves plan `id` for `who`: only the plan as the person read it
    /// (its `digest`, and the version they saw), never one that changed
    /// since; with the grants and the hold asked for, in one change (the
    /// grants are stored first and removed again if the approval does not
    /// go through). The plan's record is written by the plan service's
    /// gate, like any approval's; each grant and the hold are records too.
    pub async fn approve_plan(
        &self,
        id: PlanId,
        approval: PlanApproval,
        who: &str,
    ) -> Result<Approved, ApprovalError> {
        let now = chrono::Utc::now();
        let mut expected_version = approval.expected_version;
        let plan = self
            .plans
            .get(id)
            .await
            .ok_or(ServiceError::Plan(PlanError::UnknownPlan { id }))?;
        if let Some(seen) = approval.digest.as_deref().map(str::trim) {
            let digest = run_model::plan_digest(&plan);
            if !seen.eq_ignore_ascii_case(&digest) {
                return Err(ApprovalError::Stale(format!(
                    "plan {id} says something else now than what was read (its digest is \
                     {digest}, not {}): read it again and approve what it says now",
                    plan_engine::text::prefix(seen, 64)
                )));
            }
            // Bound to the version just read: a change in between is a
            // conflict, never approved unread.
            expected_version = expected_version.or(Some(plan.version()));
        }
        let grants = self.checked_grants(approval.grants)?;
        // A grant approves a tool's calls ahead: none under a two-person
        // rule for that tool, whose every call needs its people.
        if !grants.is_empty() {
            if let Some(run) = self.run_on(id).await {
                for g in &grants {
                    if !self
                        .rule_for(&run, Some(plan.mode()), Some(&g.tool))
                        .is_plain()
                    {
                        return Err(ApprovalError::Plan(ServiceError::Forbidden(format!(
                            "{} cannot be granted for this run: a two-person rule asks its \
                             people to approve each of its calls",
                            g.tool
                        ))));
                    }
                }
            }
        }
        let hold = approval.hold.map(|at| at.filter(|t| *t > now));
        if let Some(Some(at)) = hold {
            if at > now + chrono::Duration::days(LONGEST_HOLD_DAYS) {
                return Err(ApprovalError::Invalid(format!(
                    "hold starts the run within {LONGEST_HOLD_DAYS} days, not at {}",
                    at.to_rfc3339()
                )));
            }
        }
        let run = if grants.is_empty() && hold.is_none() {
            None
        } else {
            let run = self
                .run_on(id)
                .await
                .filter(|r| !r.state.is_finished())
                .ok_or_else(|| {
                    ApprovalError::Invalid(format!(
                        "grants and hold are for a plan planboard's agent works; plan {id} has \
                         no run that goes on"
                    ))
                })?;
            Some(run.id)
        };
        let grants: Vec<Grant> = grants
            .into_iter()
            .map(|g| Grant {
                id: uuid::Uuid::new_v4(),
                run_id: run.unwrap_or_default(),
                tool: g.tool,
                pattern: g.pattern,
                by: who.to_string(),
                at: now,
                revoked_by: None,
                revoked_at: None,
            })
            .collect();
        self.store.insert_grants(&grants).await?;
        let mut commands = vec![Command {
            op: Op::Approve {
                comment: approval.comment,
            },
            expected_version,
        }];
        if hold.is_some() {
            commands.push(Command::from(Op::Pause {}));
        }
        let (plan, events) = match self.plans.commands(id, &commands, who).await {
            Ok(done) => done,
            Err(e) => {
                let ids: Vec<GrantId> = grants.iter().map(|g| g.id).collect();
                if let Err(undo) = self.store.delete_grants(&ids).await {
                    tracing::error!("grants of a refused approval stay (revoke them): {undo}");
                }
                return Err(e.into());
            }
        };
        for grant in &grants {
            let _ = self.record(&self.grant_record(grant, &plan, false)).await;
        }
        let hold = match (hold, run) {
            (Some(start_at), Some(run_id)) => {
                let hold = Hold {
                    run_id,
                    plan_id: id,
                    start_at,
                    by: who.to_string(),
                    at: now,
                    released_at: None,
                };
                self.store.put_hold(&hold).await?;
                Some(hold)
            }
            _ => None,
        };
        Ok(Approved {
            plan,
            events,
            grants,
            hold,
        })
    }

    /// The grants asked for, checked: each well formed and naming a tool
    /// a run can be given.
    fn checked_grants(&self, grants: Vec<NewGrant>) -> Result<Vec<NewGrant>, ApprovalError> {
        if grants.len() > run_model::grant::MAX_GRANTS {
            return Err(ApprovalError::Invalid(
                run_model::GrantError::TooMany.to_string(),
            ));
        }
        let known = self.tools.get().map(|names| names());
        grants
            .into_iter()
            .map(|g| -> Result<NewGrant, ApprovalError> {
                let g = g
                    .checked()
                    .map_err(|e| ApprovalError::Invalid(e.to_string()))?;
                if let Some(known) = &known {
                    if !known.contains(&g.tool) {
                        return Err(ApprovalError::Invalid(format!(
                            "there is no tool named {} to grant; the tools are {}",
                            g.tool,
                            known.join(", ")
                        )));
                    }
                }
                Ok(g)
            })
            .collect()
    }

    /// The approval record of a grant given (or revoked).
    fn grant_record(&self, grant: &Grant, plan: &Plan, revoked: bool) -> ApprovalRecord {
        let (decision, by, at) = match (revoked, &grant.revoked_by, grant.revoked_at) {
            (true, Some(by), Some(at)) => (ApprovalDecision::Revoked, by.as_str(), at),
            _ => (ApprovalDecision::Approved, grant.by.as_str(), grant.at),
        };
        let what = serde_json::json!({"tool": grant.tool, "pattern": grant.pattern});
        let mut record = ApprovalRecord::new(
            uuid::Uuid::new_v4(),
            ApprovalKind::Grant,
            decision,
            by,
            at,
            run_model::digest::value_digest(&what),
        );
        record.run_id = Some(grant.run_id);
        record.plan_id = Some(plan.id());
        record.plan_version = Some(plan.version());
        record.tool = Some(grant.tool.clone());
        record.call = Some(grant.id.to_string());
        record.detail = Some(what);
        record
    }

    /// A run's grants, oldest first (the revoked ones too); a run that
    /// does not exist is not found.
    pub async fn run_grants(&self, run: RunId) -> Result<Vec<Grant>, ApprovalError> {
        if self.runs.load_run(run).await?.is_none() {
            return Err(ApprovalError::NotFound(format!("no run has id {run}")));
        }
        Ok(self.store.run_grants(run).await?)
    }

    /// A run's grants, oldest first (the revoked ones too).
    pub async fn grants_of(&self, run: RunId) -> Result<Vec<Grant>, StoreError> {
        self.store.run_grants(run).await
    }

    /// The run's grant, not revoked, that covers a call of `tool` with
    /// `arguments`: read from the store for each call (a guarded call,
    /// which would otherwise wait for a person), so a revocation on any
    /// replica counts at once.
    pub async fn grant_for(
        &self,
        run: RunId,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> Result<Option<Grant>, StoreError> {
        Ok(self
            .store
            .run_grants(run)
            .await?
            .into_iter()
            .find(|g| g.covers(tool, arguments)))
    }

    /// Revokes `run`'s grant `grant` for `who`: its calls ask again from
    /// the next one on. A record says who took it back.
    pub async fn revoke_grant(
        &self,
        run: RunId,
        grant: GrantId,
        who: &str,
    ) -> Result<Grant, ApprovalError> {
        let now = chrono::Utc::now();
        let revoked = self.store.revoke_grant(run, grant, who, now).await?;
        let found = self
            .store
            .run_grants(run)
            .await?
            .into_iter()
            .find(|g| g.id == grant)
            .ok_or_else(|| ApprovalError::NotFound(format!("run {run} has no grant {grant}")))?;
        if revoked {
            let plan = match self.runs.load_run(run).await {
                Ok(Some(record)) => record.plan_id,
                _ => None,
            };
            if let Some(plan) = plan {
                if let Some(plan) = self.plans.get(plan).await {
                    let _ = self.record(&self.grant_record(&found, &plan, true)).await;
                }
            }
        }
        Ok(found)
    }

    /// The run's hold, if it was approved and held (released or not).
    pub async fn hold_of(&self, run: RunId) -> Result<Option<Hold>, StoreError> {
        self.store.hold_of(run).await
    }

    /// Marks the run's hold released now; whether this call did.
    pub async fn release_hold(&self, run: RunId) -> Result<bool, StoreError> {
        self.store.release_hold(run, chrono::Utc::now()).await
    }

    /// The holds whose time to start has come.
    pub async fn due_holds(&self) -> Result<Vec<Hold>, StoreError> {
        self.store.due_holds(chrono::Utc::now()).await
    }

    /// The tool policies operators set.
    pub async fn stored_policies(
        &self,
    ) -> Result<Vec<(String, run_model::ToolPolicy)>, StoreError> {
        self.store.stored_policies().await
    }

    /// Stores an operator's policy of `tool`.
    pub async fn put_policy(
        &self,
        tool: &str,
        policy: run_model::ToolPolicy,
        who: &str,
    ) -> Result<(), StoreError> {
        self.store
            .put_policy(tool, policy, who, chrono::Utc::now())
            .await
    }

    /// The records of the last `days` days, newest first (at most
    /// [`INSIGHTS_READ`]), for the insights.
    pub async fn recent(&self, days: u32) -> Result<Vec<ApprovalRecord>, StoreError> {
        let from = chrono::Utc::now() - chrono::Duration::days(i64::from(days));
        let mut out = Vec::new();
        while out.len() < INSIGHTS_READ {
            let page = self
                .store
                .list_approvals(&ApprovalFilter {
                    from: Some(from),
                    offset: out.len() as u32,
                    limit: PAGE_LIMIT,
                    ..ApprovalFilter::default()
                })
                .await?;
            let last = page.len() < PAGE_LIMIT as usize;
            out.extend(page);
            if last {
                break;
            }
        }
        Ok(out)
    }

    /// The records `filter` admits, newest first (none when `from` is
    /// after `to`).
    pub async fn list(
        &self,
        filter: &ApprovalFilter,
    ) -> Result<Vec<ApprovalRecord>, ApprovalError> {
        if !(1..=PAGE_LIMIT).contains(&filter.limit) {
            return Err(ApprovalError::Invalid(format!(
                "limit must be 1 to {PAGE_LIMIT}, not {}",
                filter.limit
            )));
        }
        Ok(self.store.list_approvals(filter).await?)
    }

    /// A run's records, oldest first (its page's list).
    pub async fn of_run(&self, run: RunId) -> Result<Vec<ApprovalRecord>, ApprovalError> {
        let mut records = self
            .list(&ApprovalFilter {
                run: Some(run),
                limit: PAGE_LIMIT,
                ..ApprovalFilter::default()
            })
            .await?;
        records.reverse();
        Ok(records)
    }

    /// The retention's pass: the records of runs that ended before
    /// `before`, and of no run made before it, go.
    pub async fn purge(&self, before: Timestamp) -> Result<u64, StoreError> {
        self.store.purge_approvals(before).await
    }

    /// The plan service, for what the records say of a plan.
    pub fn plans(&self) -> &Arc<PlanService> {
        &self.plans
    }

    /// What `plan` (the plan of `run`) will likely cost: from the latest
    /// finished runs of the same mode on the same model, answered the same
    /// way (in words or with tools: a run in words spends a tenth of one
    /// with tools, and a forecast of both together fitted neither)
    /// ([`FORECAST_FROM`] at most), or from its size when fewer than
    /// [`run_model::card::SIMILAR_RUNS`] are there; and whether it fits
    /// the run's budget.
    pub async fn forecast(
        &self,
        run: &run_model::RunRecord,
        plan: &Plan,
    ) -> Result<run_model::Forecast, StoreError> {
        let done = self
            .runs
            .list_runs(Some(run_model::RunState::Done), None, 0, FORECAST_READ)
            .await?;
        let mut past = Vec::new();
        for other in done {
            if past.len() == FORECAST_FROM {
                break;
            }
            if other.id == run.id || other.model != run.model || other.in_words() != run.in_words()
            {
                continue;
            }
            let Some(id) = other.plan_id else { continue };
            let steps = self
                .plans
                .read(id, |p| {
                    (p.mode() == plan.mode()).then(|| p.subtasks().len())
                })
                .await
                .flatten();
            if let Some(steps) = steps {
                past.push(run_model::card::Past {
                    steps,
                    spent: other.spent,
                });
            }
        }
        let price = run.model.as_deref().and_then(|m| self.prices.price(m));
        Ok(run_model::card::forecast(
            plan.subtasks().len(),
            run.in_words(),
            &past,
            price,
            &run.config.budget,
        ))
    }

    /// The forecast the run's plan was approved with (kept on its
    /// approval record), to show beside what the run spent.
    pub async fn approved_forecast(
        &self,
        run: RunId,
    ) -> Result<Option<run_model::Forecast>, StoreError> {
        let records = self
            .store
            .list_approvals(&ApprovalFilter {
                run: Some(run),
                kind: Some(ApprovalKind::Plan),
                limit: 1,
                ..ApprovalFilter::default()
            })
            .await?;
        Ok(records
            .into_iter()
            .filter(|r| r.decision == ApprovalDecision::Approved)
            .find_map(|r| serde_json::from_value(r.detail?.get("forecast")?.clone()).ok()))
    }

    /// How often finished runs spent within the forecast they were approved
    /// with (the latest [`PAGE_LIMIT`] approvals).
    pub async fn forecast_accuracy(&self) -> Result<run_model::ForecastAccuracy, StoreError> {
        let records = self
            .store
            .list_approvals(&ApprovalFilter {
                kind: Some(ApprovalKind::Plan),
                limit: PAGE_LIMIT,
                ..ApprovalFilter::default()
            })
            .await?;
        let mut pairs = Vec::new();
        let mut counted = std::collections::HashSet::new();
        for record in records {
            let (Some(run), Some(detail)) = (record.run_id, record.detail) else {
                continue;
            };
            let Some(forecast) = detail
                .get("forecast")
                .and_then(|f| serde_json::from_value::<run_model::Forecast>(f.clone()).ok())
            else {
                continue;
            };
            // The latest approval of each run counts (newest first).
            if !counted.insert(run) {
                continue;
            }
            if let Some(done) = self.runs.load_run(run).await? {
                if done.state == run_model::RunState::Done {
                    pairs.push((forecast, done.spent));
                }
            }
        }
        Ok(run_model::card::accuracy(&pairs))
    }

    /// The rule a decision on `run` must meet: the run's own, made
    /// stricter by each of the operator's that applies (every run; its
    /// plan's `mode`; the `tool` of a guarded call or grant; the template
    /// it started from).
    pub fn rule_for(
        &self,
        run: &run_model::RunRecord,
        mode: Option<plan_engine::Mode>,
        tool: Option<&str>,
    ) -> ApprovalRule {
        let template = run.config.template.as_ref().map(|t| t.name.as_str());
        let mut rule = run.config.approval_rule.clone().unwrap_or_default();
        for (scope, operator) in &self.rules {
            let applies = match scope {
                RuleScope::All => true,
                RuleScope::Mode(m) => mode == Some(*m),
                RuleScope::Tool(t) => tool == Some(t.as_str()),
                RuleScope::Template(name) => template == Some(name.as_str()),
            };
            if applies {
                rule = rule.and(operator);
            }
        }
        rule
    }

    /// The rule a decision on `plan` itself (its approval, its
    /// re-approval after a drift) must meet: [`Self::rule_for`] its mode,
    /// made stricter by the rule of each tool its steps name. A plan whose
    /// steps will call `run_shell` is approved as `run_shell`'s calls are:
    /// otherwise the starter alone could approve the plan that sets the
    /// calls going, and be stopped only at each call.
    pub fn plan_rule(&self, run: &run_model::RunRecord, plan: &Plan) -> ApprovalRule {
        let mode = Some(plan.mode());
        let mut tools: Vec<&str> = plan.subtasks().iter().filter_map(|s| s.tool()).collect();
        tools.sort_unstable();
        tools.dedup();
        tools
            .into_iter()
            .fold(self.rule_for(run, mode, None), |rule, tool| {
                rule.and(&self.rule_for(run, mode, Some(tool)))
            })
    }

    /// The people whose approval of `kind` is recorded as part of a
    /// two-person decision on this digest (of the plan, or of the call
    /// `call`), oldest first.
    async fn partial_approvals(
        &self,
        plan: PlanId,
        kind: ApprovalKind,
        digest: &str,
        call: Option<&str>,
    ) -> Result<Vec<String>, StoreError> {
        let records = self
            .store
            .list_approvals(&ApprovalFilter {
                plan: Some(plan),
                kind: Some(kind),
                limit: PAGE_LIMIT,
                ..ApprovalFilter::default()
            })
            .await?;
        let mut people: Vec<String> = Vec::new();
        for r in records.iter().rev() {
            let partial = r
                .detail
                .as_ref()
                .and_then(|d| d.get("partial"))
                .and_then(serde_json::Value::as_bool)
                == Some(true);
            let same = r.digest == digest && r.call.as_deref() == call;
            if partial
                && same
                && r.decision != ApprovalDecision::Denied
                && !people.contains(&r.person)
            {
                people.push(r.person.clone());
            }
        }
        Ok(people)
    }

    /// Applies `rule` to `actor`'s approval of what `digest` names (the
    /// plan's content, or the guarded call `call` with its tool): refused
    /// when the rule keeps them out; recorded and [`ServiceError::Waiting`]
    /// while more people must approve; `Ok` when this approval completes
    /// it (or the rule asks for no more).
    #[allow(clippy::too_many_arguments)]
    pub async fn meet(
        &self,
        rule: &ApprovalRule,
        run: &run_model::RunRecord,
        plan: &Plan,
        kind: ApprovalKind,
        digest: &str,
        call: Option<(&str, &str)>,
        actor: &str,
    ) -> Result<(), ServiceError> {
        if rule.is_plain() {
            return Ok(());
        }
        let person = person_of(actor).to_string();
        if let Some(why) = rule.refuses(&person, &run.started_by) {
            return Err(ServiceError::Forbidden(why));
        }
        let needed = rule.needed() as usize;
        if needed <= 1 {
            return Ok(());
        }
        let mut approved = self
            .partial_approvals(plan.id(), kind, digest, call.map(|(id, _)| id))
            .await?;
        approved.retain(|p| *p != person);
        if approved.len() + 1 >= needed {
            return Ok(());
        }
        approved.push(person.clone());
        let waiting = rule.waiting_for(&approved, &run.started_by);
        let mut record = ApprovalRecord::new(
            uuid::Uuid::new_v4(),
            kind,
            ApprovalDecision::Approved,
            actor,
            chrono::Utc::now(),
            digest.to_string(),
        );
        record.run_id = Some(run.id);
        record.plan_id = Some(plan.id());
        record.plan_version = Some(plan.version());
        record.call = call.map(|(id, _)| id.to_string());
        record.tool = call.map(|(_, tool)| tool.to_string());
        record.detail = Some(serde_json::json!({
            "partial": true,
            "needed": needed,
            "waiting_for": waiting,
        }));
        self.record(&record).await?;
        Err(ServiceError::Waiting(format!(
            "{person}'s approval is recorded ({} of {needed}); still to approve: {}",
            approved.len(),
            waiting.join(", ")
        )))
    }

    /// Who still has to approve `plan`, which its run waits on, under the
    /// run's two-person rule (empty: anyone who may).
    pub async fn waiting_for(
        &self,
        run: &run_model::RunRecord,
        plan: &Plan,
    ) -> Result<Vec<String>, StoreError> {
        let rule = self.plan_rule(run, plan);
        if rule.is_plain() {
            return Ok(Vec::new());
        }
        let digest = run_model::plan_digest(plan);
        let approved = self
            .partial_approvals(plan.id(), ApprovalKind::Plan, &digest, None)
            .await?;
        Ok(rule.waiting_for(&approved, &run.started_by))
    }

    /// The run working `plan` now (else the latest that did).
    async fn run_on(&self, plan: plan_engine::PlanId) -> Option<run_model::RunRecord> {
        match self.runs.runs_on(&[plan]).await {
            Ok(runs) => {
                let latest = runs.iter().rposition(|r| !r.state.is_finished());
                match latest {
                    Some(i) => runs.into_iter().nth(i),
                    None => runs.into_iter().last(),
                }
            }
            Err(e) => {
                tracing::warn!("the run of plan {plan} could not be read: {e}");
                None
            }
        }
    }
}

/// Milliseconds from `since` to `now`, never negative.
pub fn waited(since: Timestamp, now: Timestamp) -> u64 {
    u64::try_from((now - since).num_milliseconds()).unwrap_or(0)
}

#[async_trait]
impl ApprovalGate for Approvals {
    /// Approvals and rejections are recorded; a resume only when it
    /// approves a drifted plan again (its run paused for drift).
    async fn check(
        &self,
        plan: &Plan,
        actor: &str,
        decision: &GateDecision,
    ) -> Result<bool, ServiceError> {
        let run = self
            .run_on(plan.id())
            .await
            .filter(|r| !r.state.is_finished());
        let reapproves = run
            .as_ref()
            .is_some_and(|r| r.state == run_model::RunState::Paused && r.drift.is_some());
        let (approves, kind) = match decision {
            GateDecision::Reject { .. } => return Ok(true),
            GateDecision::Resume if !reapproves => return Ok(false),
            GateDecision::Resume => (true, ApprovalKind::Reapproval),
            GateDecision::Approve { .. } => (true, ApprovalKind::Plan),
        };
        // Two people for what is risky: the run's rule and the operator's.
        if let (true, Some(run)) = (approves, run.as_ref()) {
            let rule = self.plan_rule(run, plan);
            let digest = run_model::plan_digest(plan);
            self.meet(&rule, run, plan, kind, &digest, None, actor)
                .await?;
        }
        Ok(true)
    }

    /// A plan record: the version decided on and the digest of what it
    /// said then; how long it waited since its last change before the
    /// decision (its submission, or the last edit a person read). An
    /// approval keeps the forecast shown with it; a re-approval the drift
    /// it answered.
    async fn decided(&self, before: &Plan, after: &Plan, actor: &str, decision: &GateDecision) {
        let now = chrono::Utc::now();
        let (kind, approve, comment) = match decision {
            GateDecision::Approve { comment } => (ApprovalKind::Plan, true, comment.as_deref()),
            GateDecision::Reject { comment } => (ApprovalKind::Plan, false, Some(comment.as_str())),
            GateDecision::Resume => (ApprovalKind::Reapproval, true, None),
        };
        let decided = if approve {
            ApprovalDecision::Approved
        } else {
            ApprovalDecision::Denied
        };
        let mut record = ApprovalRecord::new(
            uuid::Uuid::new_v4(),
            kind,
            decided,
            actor,
            now,
            run_model::plan_digest(before),
        )
        .with_note(comment);
        let run = self.run_on(after.id()).await;
        match (kind, run.as_ref()) {
            // The forecast the person approved with, to weigh the spend
            // against once the run is over.
            (ApprovalKind::Plan, Some(run)) if approve => match self.forecast(run, before).await {
                Ok(forecast) => record.detail = Some(serde_json::json!({"forecast": forecast})),
                Err(e) => tracing::warn!("run {}: no forecast for its record: {e}", run.id),
            },
            (ApprovalKind::Reapproval, Some(run)) => {
                record.detail = Some(serde_json::json!({"drift": run.drift}));
            }
            _ => {}
        }
        record.run_id = run.map(|r| r.id);
        record.plan_id = Some(after.id());
        record.plan_version = Some(before.version());
        record.waited_ms = Some(waited(before.updated_at(), now));
        let _ = self.record(&record).await;
    }
}
