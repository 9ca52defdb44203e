//! [`PlanService`]: the one path every write takes — the engine decides on
//! the working set, the store commits snapshots and events in one
//! version-guarded transaction, and the log reader publishes.
//!
//! Writes are decided one at a time under the working set's lock, which is
//! released before the commit. Calls that arrive while a commit is in flight
//! queue in the working set, and whoever waits first after that commit
//! writes all of them in one transaction (group commit); every caller
//! returns once its own call is durable. If a commit fails, every call not
//! yet committed is undone (see `book.rs`) and run again, or reported.
//!
//! Writers in other processes (PostgreSQL replicas) are caught by the
//! version guard: the calls are undone, the plan reloaded and the calls run
//! again on the fresh plan, so nobody's update is lost. A caller that sent
//! `expected_version` gets a conflict instead, because it asked not to
//! overwrite what it has not seen.

use std::sync::Arc;
use std::time::Duration;

use plan_engine::{
    call, CallContext, Command, Dialect, Event, HintOptions, NewPlan, Op, Plan, PlanBook,
    PlanError, PlanId, PlanQuery, SubtaskState, ToolResult,
};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::book::{Book, Failure, Outcome, Ticket};
use crate::hints::HintsShown;
use crate::live::Hub;
use crate::metrics::Metrics;
use crate::store::{PlanStore, StoreError, StoredComment, StoredEvent};

/// The actor recorded on changes planboard makes by itself.
pub const SYSTEM_ACTOR: &str = "planboard";

/// Retries after another process won a race for the same plan.
const CONFLICT_RETRIES: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("no plan has id {0}")]
    NotFound(PlanId),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The commit of a group of calls failed.
    #[error(transparent)]
    Commit(Arc<StoreError>),
    /// The call was undone again and again because commits kept failing.
    #[error("the plan store keeps failing to commit; try again later")]
    Busy,
}

pub struct PlanService {
    store: Arc<dyn PlanStore>,
    book: Mutex<Book>,
    /// Held by whoever is committing the queued calls.
    committing: Mutex<()>,
    hub: Arc<Hub>,
    shared: bool,
    /// Session → the plan and version of the last hint it was shown, so an
    /// unchanged plan gets a one-line hint instead of the same window again.
    hints_shown: std::sync::Mutex<HintsShown>,
    metrics: Metrics,
}

impl PlanService {
    /// Loads the working set and starts the log reader. `shared` means other
    /// processes may write the same database (PostgreSQL).
    pub async fn open(
        store: Arc<dyn PlanStore>,
        shared: bool,
    ) -> Result<Arc<PlanService>, StoreError> {
        let plans = store.load_all().await?;
        let hub = Arc::new(Hub::new(store.last_seq().await?));
        let remote = store.listen().await?;
        let service = Arc::new(PlanService {
            store,
            book: Mutex::new(Book::new(plans)),
            committing: Mutex::new(()),
            hub,
            shared,
            hints_shown: std::sync::Mutex::new(HintsShown::new()),
            metrics: Metrics::new(),
        });
        tokio::spawn(read_log(Arc::downgrade(&service), remote));
        Ok(service)
    }

    pub fn hub(&self) -> Arc<Hub> {
        self.hub.clone()
    }

    pub fn store(&self) -> Arc<dyn PlanStore> {
        self.store.clone()
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Runs `change` on the working set and returns once what it did is
    /// committed; see the module docs for the conflict rule.
    async fn write<T>(
        &self,
        actor: &str,
        mut change: impl FnMut(&mut Book) -> Result<T, ServiceError>,
    ) -> Result<T, ServiceError> {
        let mut attempt = 0;
        loop {
            let (out, ticket) = {
                let mut book = self.book.lock().await;
                book.begin(actor);
                let out = change(&mut book);
                if out.is_err() {
                    book.undo();
                }
                (out, book.end())
            };
            // A refusal, too, waits for the calls it was judged after: if
            // they fail, it was judged on state that never existed.
            let outcome = match ticket {
                Some(ticket) => self.committed(ticket).await,
                None => Ok(()),
            };
            let failure = match outcome {
                Ok(()) => return out,
                Err(failure) => failure,
            };
            if attempt == CONFLICT_RETRIES {
                return Err(match failure {
                    Failure::Commit(e) => ServiceError::Commit(e),
                    Failure::Undone => ServiceError::Busy,
                });
            }
            attempt += 1;
            if let Failure::Commit(e) = &failure {
                match e.as_ref() {
                    StoreError::Conflict { plan_id, .. } => {
                        let fresh = self.store.load(*plan_id).await?;
                        self.book.lock().await.absorb(*plan_id, fresh);
                    }
                    // Only this call's own failure is final; a group's
                    // failure may have been another call's doing.
                    _ if out.is_ok() => return Err(ServiceError::Commit(e.clone())),
                    _ => {}
                }
            }
        }
    }

    /// Waits until the call behind `ticket` is committed or has failed,
    /// committing the queued calls itself when no commit is in flight.
    async fn committed(&self, mut ticket: Ticket) -> Outcome {
        loop {
            if let Some(outcome) = ticket.borrow_and_update().clone() {
                return outcome;
            }
            let _leader = self.committing.lock().await;
            if let Some(outcome) = ticket.borrow_and_update().clone() {
                return outcome;
            }
            let (batch, calls) = self.book.lock().await.take_group();
            let started = std::time::Instant::now();
            let result = self.store.commit(&batch).await;
            if result.is_ok() {
                self.metrics.commit(calls, started.elapsed());
            }
            let mut book = self.book.lock().await;
            match result {
                Ok(()) => {
                    book.settle(calls);
                    drop(book);
                    self.hub.wake();
                }
                Err(e) => book.rollback(calls, Failure::Commit(Arc::new(e))),
            }
        }
    }

    pub async fn create(&self, spec: NewPlan, actor: &str) -> Result<Plan, ServiceError> {
        let now = chrono::Utc::now();
        self.write(actor, |book| {
            let (plan, events) = Plan::create(&spec, actor, now)?;
            let id = plan.id();
            book.insert(plan, events)?;
            book.get(id).cloned().ok_or(ServiceError::NotFound(id))
        })
        .await
    }

    /// Stores a plan from an export under a new id, as created by `actor`.
    pub async fn import(&self, plan: Plan, actor: &str) -> Result<Plan, ServiceError> {
        let (plan, events) =
            plan_engine::render::adopt(plan, uuid::Uuid::new_v4(), actor, chrono::Utc::now());
        self.write(actor, |book| {
            book.insert(plan.clone(), events.clone())?;
            Ok(plan.clone())
        })
        .await
    }

    /// With other processes on the database, brings one plan up to the
    /// database's version before a call decides on it, so a write made
    /// through another replica a moment ago is never judged on stale state.
    async fn refresh(&self, id: PlanId) -> Result<(), ServiceError> {
        if !self.shared {
            return Ok(());
        }
        let stored = self.store.version(id).await?;
        let cached = self.book.lock().await.committed(id).map(|p| p.version());
        if stored != cached {
            let fresh = self.store.load(id).await?;
            self.book.lock().await.absorb(id, fresh);
        }
        Ok(())
    }

    /// Applies one command to one plan; returns the plan after it and the events.
    pub async fn command(
        &self,
        id: PlanId,
        command: &Command,
        actor: &str,
    ) -> Result<(Plan, Vec<Event>), ServiceError> {
        self.refresh(id).await?;
        let now = chrono::Utc::now();
        self.write(actor, |book| {
            if book.get(id).is_none() {
                return Err(ServiceError::NotFound(id));
            }
            let events = book.command(id, command, actor, now)?;
            let plan = book.get(id).cloned().ok_or(ServiceError::NotFound(id))?;
            Ok((plan, events))
        })
        .await
    }

    /// Runs several ops as one change, all or none (the agent's path);
    /// returns the plan after it.
    pub async fn execute(
        &self,
        id: PlanId,
        ops: Vec<Op>,
        actor: &str,
    ) -> Result<Plan, ServiceError> {
        self.refresh(id).await?;
        let now = chrono::Utc::now();
        self.write(actor, |book| {
            if book.get(id).is_none() {
                return Err(ServiceError::NotFound(id));
            }
            book.execute(id, ops.clone(), actor, now)?;
            book.get(id).cloned().ok_or(ServiceError::NotFound(id))
        })
        .await
    }

    pub async fn delete(&self, id: PlanId, actor: &str) -> Result<(), ServiceError> {
        self.refresh(id).await?;
        self.write(actor, |book| {
            if book.get(id).is_none() {
                return Err(ServiceError::NotFound(id));
            }
            book.remove(id)?;
            Ok(())
        })
        .await
    }

    /// One tool call in a dialect, on the session's active plan unless the
    /// arguments name another.
    pub async fn tool(
        &self,
        dialect: Dialect,
        tool: &str,
        args: &Value,
        session: &str,
        actor: &str,
    ) -> Result<ToolResult, ServiceError> {
        if self.shared {
            // Another replica may have moved this session's pointer.
            let active = self.store.active(session).await?;
            if let Some(id) = active {
                self.refresh(id).await?;
            }
            // A call naming another plan by its id is judged on it fresh too.
            let named = args
                .get("plan_id")
                .and_then(Value::as_str)
                .and_then(|s| uuid::Uuid::parse_str(s.trim()).ok())
                .filter(|id| Some(*id) != active);
            if let Some(id) = named {
                self.refresh(id).await?;
            }
            self.book.lock().await.sync_active(session, active);
        }
        let ctx = CallContext {
            session: session.to_string(),
            actor: actor.to_string(),
            now: chrono::Utc::now(),
            new_plan_id: uuid::Uuid::new_v4(),
        };
        self.write(actor, |book| {
            let result = call(book, dialect, tool, args, &ctx);
            if !result.ok {
                // A call that fails halfway (say, archived the old plan, then
                // failed to create the new one) keeps nothing.
                book.undo();
            }
            Ok(result)
        })
        .await
    }

    /// The plan as committed.
    pub async fn get(&self, id: PlanId) -> Option<Plan> {
        self.book.lock().await.committed(id).cloned()
    }

    /// Runs `read` on a plan as committed, under the lock, without copying it.
    pub async fn read<T>(&self, id: PlanId, read: impl FnOnce(&Plan) -> T) -> Option<T> {
        self.book.lock().await.committed(id).map(read)
    }

    /// Maps every committed plan, keeping the `Some`s.
    pub async fn scan<T>(&self, mut keep: impl FnMut(&Plan) -> Option<T>) -> Vec<T> {
        let book = self.book.lock().await;
        let ids: Vec<PlanId> = book.all().map(|p| p.id()).collect();
        ids.into_iter()
            .filter_map(|id| book.committed(id))
            .filter_map(&mut keep)
            .collect()
    }

    /// One page of the plans `query` admits, latest activity first, each
    /// mapped by `row`, and whether more follow: the one list path of the
    /// API, the board and history.
    pub async fn list<T>(
        &self,
        query: &PlanQuery,
        offset: usize,
        limit: usize,
        row: impl Fn(&Plan) -> T,
    ) -> (Vec<T>, bool) {
        let book = self.book.lock().await;
        let ids: Vec<PlanId> = book.all().map(|p| p.id()).collect();
        let mut hits: Vec<&Plan> = ids
            .into_iter()
            .filter_map(|id| book.committed(id))
            .filter(|plan| query.matches(plan))
            .collect();
        hits.sort_by(|a, b| {
            b.updated_at()
                .cmp(&a.updated_at())
                .then(a.id().cmp(&b.id()))
        });
        let more = hits.len() > offset.saturating_add(limit);
        let rows = hits.into_iter().skip(offset).take(limit).map(row).collect();
        (rows, more)
    }

    /// The hint for a session's next step, and the version of the plan it
    /// describes. Reads only: `opts.since_version` (the caller's) decides
    /// whether an unchanged plan gets the one-line hint.
    pub async fn session_hint(&self, session: &str, opts: &HintOptions) -> (String, Option<u64>) {
        let book = self.book.lock().await;
        let plan = PlanBook::active(&*book, session).and_then(|id| book.get(id));
        (plan_engine::hint(plan, opts), plan.map(|p| p.version()))
    }

    /// [`PlanService::session_hint`] for an agent that wants the server to
    /// remember what it was shown: unless `fresh`, a plan still at the
    /// version of this session's previous hint gets the one-line hint.
    pub async fn session_hint_remembered(
        &self,
        session: &str,
        opts: &HintOptions,
        fresh: bool,
    ) -> (String, Option<u64>) {
        let book = self.book.lock().await;
        let plan = PlanBook::active(&*book, session).and_then(|id| book.get(id));
        let mut shown = self.hints_shown.lock().unwrap_or_else(|e| e.into_inner());
        let mut opts = opts.clone();
        if let (Some(plan), false) = (plan, fresh) {
            opts.since_version = shown.version_shown(session, plan.id());
        }
        shown.record(session, plan.map(|p| (p.id(), p.version())));
        (plan_engine::hint(plan, &opts), plan.map(|p| p.version()))
    }

    pub async fn events(
        &self,
        id: PlanId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, ServiceError> {
        Ok(self.store.events(Some(id), after, limit).await?)
    }

    /// Whether the plan exists or existed (a deleted plan's log is kept).
    pub async fn ever_existed(&self, id: PlanId) -> Result<bool, ServiceError> {
        if self.read(id, |_| ()).await.is_some() {
            return Ok(true);
        }
        Ok(!self.store.events(Some(id), 0, 1).await?.is_empty())
    }

    pub async fn comments(&self, id: PlanId) -> Result<Vec<StoredComment>, ServiceError> {
        Ok(self.store.comments(id).await?)
    }

    /// Puts subtasks back to todo whose plan has seen no activity for
    /// `lease`: the agent that started them is presumed gone (its process
    /// died, or it gave up). Each release is an event saying why.
    pub async fn reconcile(&self, lease: Duration) -> Result<usize, ServiceError> {
        self.reconcile_except(lease, &[]).await
    }

    /// [`PlanService::reconcile`], leaving alone the plans in `held` (their
    /// run's driver holds a live lease: quiet is not gone).
    pub async fn reconcile_except(
        &self,
        lease: Duration,
        held: &[PlanId],
    ) -> Result<usize, ServiceError> {
        let now = chrono::Utc::now();
        let cutoff = now - chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
        let minutes = lease.as_secs() / 60;
        let stale: Vec<(PlanId, Vec<plan_engine::SubtaskId>)> = {
            let book = self.book.lock().await;
            book.all()
                .filter(|p| p.updated_at() < cutoff && p.count(SubtaskState::InProgress) > 0)
                .filter(|p| !held.contains(&p.id()))
                .map(|p| (p.id(), p.in_progress()))
                .collect()
        };
        let mut released = 0;
        for (plan_id, ids) in stale {
            let ops: Vec<Op> = ids
                .iter()
                .map(|id| Op::SetSubtaskState {
                    id: *id,
                    state: SubtaskState::Todo,
                    note: Some(format!(
                        "lease expired: no activity on this plan for {minutes} min; released so it can be started again"
                    )),
                    start_next: false,
                })
                .collect();
            let count = ops.len();
            let result = self
                .write(SYSTEM_ACTOR, |book| {
                    // Someone may have touched the plan since the scan.
                    match book.get(plan_id) {
                        Some(p) if p.updated_at() < cutoff => {
                            Ok(book.execute(plan_id, ops.clone(), SYSTEM_ACTOR, now)?)
                        }
                        _ => Ok(Vec::new()),
                    }
                })
                .await;
            match result {
                Ok(events) if !events.is_empty() => released += count,
                Ok(_) => {}
                Err(e) => tracing::warn!("could not release subtasks of plan {plan_id}: {e}"),
            }
        }
        Ok(released)
    }

    /// Brings the working set up to date with rows other processes wrote.
    async fn absorb(&self, rows: &[StoredEvent]) {
        let mut stale: Vec<PlanId> = Vec::new();
        {
            let book = self.book.lock().await;
            for row in rows {
                let behind = match book.get(row.plan_id) {
                    Some(plan) => plan.version() < row.version || row.kind == "plan_deleted",
                    None => row.kind != "plan_deleted",
                };
                if behind && !stale.contains(&row.plan_id) {
                    stale.push(row.plan_id);
                }
            }
        }
        for id in stale {
            match self.store.load(id).await {
                Ok(fresh) => self.book.lock().await.absorb(id, fresh),
                Err(e) => tracing::error!("reloading plan {id} failed: {e}"),
            }
        }
    }
}

/// The log reader: publishes new rows and absorbs other processes' writes.
/// Holds the service weakly so it ends when the service is dropped.
async fn read_log(
    service: std::sync::Weak<PlanService>,
    mut remote: Option<tokio::sync::mpsc::Receiver<()>>,
) {
    loop {
        let Some(hub) = service.upgrade().map(|s| s.hub()) else {
            return;
        };
        hub.wait(remote.as_mut()).await;
        let Some(service) = service.upgrade() else {
            return;
        };
        let rows = service.hub.read_new(service.store.as_ref()).await;
        // Absorb first: whoever sees a row on a stream and then writes to
        // this process finds the working set already at that row.
        if service.shared && !rows.is_empty() {
            service.absorb(&rows).await;
        }
        service.hub.publish(&rows);
    }
}
