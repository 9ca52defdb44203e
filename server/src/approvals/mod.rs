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
use run_model::{ApprovalDecision, ApprovalKind, ApprovalRecord, RunId};

use crate::runlog::RunStore;
use crate::service::{ApprovalGate, PlanService, ServiceError};
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
    /// it; how many went.
    async fn purge_approvals(&self, before: Timestamp) -> Result<u64, StoreError>;
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
}

/// The plan after an approval, and the events that recorded it.
pub struct Approved {
    pub plan: Plan,
    pub events: Vec<Event>,
}

/// Recording and listing approvals; the plan service's gate.
pub struct Approvals {
    plans: Arc<PlanService>,
    store: Arc<dyn ApprovalStore>,
    /// Which run works a plan, for the records of its approvals.
    runs: Arc<dyn RunStore>,
}

impl Approvals {
    /// The service, told of every plan approval the plan service commits.
    pub fn new(
        plans: Arc<PlanService>,
        store: Arc<dyn ApprovalStore>,
        runs: Arc<dyn RunStore>,
    ) -> Arc<Approvals> {
        let approvals = Arc::new(Approvals {
            plans: plans.clone(),
            store,
            runs,
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

    /// Approves plan `id` for `who`: only the plan as the person read it
    /// (its `digest`, and the version they saw), never one that changed
    /// since. The record is written by the plan service's gate, like any
    /// approval's.
    pub async fn approve_plan(
        &self,
        id: PlanId,
        approval: PlanApproval,
        who: &str,
    ) -> Result<Approved, ApprovalError> {
        let mut expected_version = approval.expected_version;
        if let Some(seen) = approval.digest.as_deref().map(str::trim) {
            let plan = self
                .plans
                .get(id)
                .await
                .ok_or(ServiceError::Plan(PlanError::UnknownPlan { id }))?;
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
        let command = Command {
            op: Op::Approve {
                comment: approval.comment,
            },
            expected_version,
        };
        let (plan, events) = self.plans.command(id, &command, who).await?;
        Ok(Approved { plan, events })
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
    async fn check(&self, _plan: &Plan, _actor: &str, _approve: bool) -> Result<(), ServiceError> {
        Ok(())
    }

    /// A plan record: the version decided on and the digest of what it
    /// said then; how long it waited since its last change before the
    /// decision (its submission, or the last edit a person read).
    async fn decided(
        &self,
        before: &Plan,
        after: &Plan,
        actor: &str,
        approve: bool,
        comment: Option<&str>,
    ) {
        let now = chrono::Utc::now();
        let decision = if approve {
            ApprovalDecision::Approved
        } else {
            ApprovalDecision::Denied
        };
        let mut record = ApprovalRecord::new(
            uuid::Uuid::new_v4(),
            ApprovalKind::Plan,
            decision,
            actor,
            now,
            run_model::plan_digest(before),
        )
        .with_note(comment);
        record.run_id = self.run_on(after.id()).await.map(|r| r.id);
        record.plan_id = Some(after.id());
        record.plan_version = Some(before.version());
        record.waited_ms = Some(waited(before.updated_at(), now));
        let _ = self.record(&record).await;
    }
}
