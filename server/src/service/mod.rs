//! [`PlanService`]: the one path every write takes — the engine decides on
//! the working set, the store commits snapshots and events in one
//! version-guarded transaction, and the log reader publishes.
//!
//! Writes are decided one at a time under the working set's lock, which is
//! released before the commit. Calls that arrive while a commit is in flight
//! queue in the working set, and whoever waits first after that commit
//! writes all of them in one transaction (group commit); every caller
//! returns once its own call is durable. If a commit fails, every call not
//! yet committed is undone (see `crate::book`) and run again, or reported.
//!
//! Writers in other processes (PostgreSQL replicas) are caught by the
//! version guard: the calls are undone, the plan reloaded and the calls run
//! again on the fresh plan, so nobody's update is lost. A caller that sent
//! `expected_version` gets a conflict instead, because it asked not to
//! overwrite what it has not seen.
//!
//! Approving or rejecting a plan, through any edge, is told to an
//! [`ApprovalGate`] (the approvals' records and rules, set at start):
//! checked before the write, recorded after the commit.
//!
//! # Layout
//! - `mod.rs`: the write path (decide, group commit, undo on failure);
//! - `read.rs`: reads of the committed working set and the stored log;
//! - `upkeep.rs`: releasing stale subtasks, and the log reader that
//!   publishes new rows and absorbs other processes' writes.

mod read;
mod upkeep;

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
use crate::store::{PlanStore, SessionSettings, StoreError, StoredComment, StoredEvent};

pub use crate::book::SYSTEM_ACTOR;

/// Retries after another process won a race for the same plan.
const CONFLICT_RETRIES: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The commit of a group of calls failed.
    #[error(transparent)]
    Commit(Arc<StoreError>),
    /// The call was undone again and again because commits kept failing.
    #[error("the plan store keeps failing to commit; try again later")]
    Busy,
    /// The caller's role does not allow what the call did (it was undone).
    #[error("{0}")]
    Forbidden(String),
    /// The approval was recorded, but the plan needs more (a two-person
    /// rule): the sentence says who still has to approve. Nothing changed.
    #[error("{0}")]
    Waiting(String),
}

/// Hears of every decision on a plan's approval that the write path
/// commits, whatever edge it came through (the API, the board, MCP, the
/// commands route): an approval, a rejection, and a resume (which
/// approves a plan again when its run paused because the plan drifted).
/// The approval records and the rules on who may approve live above the
/// plan service (`crate::approvals`), which knows them only through this.
#[async_trait::async_trait]
pub trait ApprovalGate: Send + Sync {
    /// Whether `actor` may make `decision` on `plan` as it stands: a
    /// refusal is the caller's error, and nothing changes. `Ok(false)`:
    /// allowed, and nothing to record (a resume that approves nothing).
    async fn check(
        &self,
        plan: &Plan,
        actor: &str,
        decision: &GateDecision,
    ) -> Result<bool, ServiceError>;
    /// The decision on `before` is committed; `after` is the plan now.
    async fn decided(&self, before: &Plan, after: &Plan, actor: &str, decision: &GateDecision);
}

/// What a command decides that the [`ApprovalGate`] hears of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateDecision {
    Approve {
        comment: Option<String>,
    },
    Reject {
        comment: String,
    },
    /// Resuming the plan, which approves it again when its run paused
    /// for drift.
    Resume,
}

impl GateDecision {
    /// What `op` decides, if the gate hears of it.
    fn of(op: &Op) -> Option<GateDecision> {
        match op {
            Op::Approve { comment } => Some(GateDecision::Approve {
                comment: comment.clone(),
            }),
            Op::Reject { comment } => Some(GateDecision::Reject {
                comment: comment.clone(),
            }),
            Op::Resume {} => Some(GateDecision::Resume),
            _ => None,
        }
    }
}

/// A decision under way: checked by the gate before the write, told to it
/// once committed.
struct Gated {
    gate: Arc<dyn ApprovalGate>,
    before: Plan,
    decision: GateDecision,
}

impl Gated {
    async fn done(self, after: &Plan, actor: &str) {
        self.gate
            .decided(&self.before, after, actor, &self.decision)
            .await;
    }
}

/// What a tool call may do besides an operator's changes to plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolRights {
    /// Change plans, but not delete one.
    Operator,
    /// Delete plans too (`DELETE /api/plans/{id}` is the admins' as well).
    Admin,
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
    /// Told of every approval and rejection (set once, at start).
    gate: std::sync::OnceLock<Arc<dyn ApprovalGate>>,
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
            gate: std::sync::OnceLock::new(),
        });
        tokio::spawn(upkeep::read_log(Arc::downgrade(&service), remote));
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

    /// Sets who hears of approvals and rejections (once; later calls are
    /// ignored).
    pub fn set_gate(&self, gate: Arc<dyn ApprovalGate>) {
        let _ = self.gate.set(gate);
    }

    /// For ops that approve, reject or resume: the gate's check on the
    /// plan as it stands, and what to tell it once committed. Other ops
    /// (every step of an agent) cost a match.
    async fn gated(
        &self,
        id: PlanId,
        ops: &[Op],
        actor: &str,
    ) -> Result<Option<Gated>, ServiceError> {
        let Some(gate) = self.gate.get() else {
            return Ok(None);
        };
        let Some(decision) = ops.iter().find_map(GateDecision::of) else {
            return Ok(None);
        };
        // An unknown plan is the write's to report.
        let Some(before) = self.get(id).await else {
            return Ok(None);
        };
        if !gate.check(&before, actor, &decision).await? {
            return Ok(None);
        }
        Ok(Some(Gated {
            gate: gate.clone(),
            before,
            decision,
        }))
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
                Ok(rows) => {
                    book.settle(calls);
                    drop(book);
                    // Alone on the database, the rows this commit wrote are
                    // the log's next rows: published now, in commit order
                    // (under `committing`), with no read back. Beside other
                    // processes the reader reads the log between commits.
                    if self.shared {
                        self.hub.wake();
                    } else {
                        self.hub.publish(&rows);
                    }
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
            book.get(id)
                .cloned()
                .ok_or(ServiceError::from(PlanError::UnknownPlan { id }))
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
        let gated = self
            .gated(id, std::slice::from_ref(&command.op), actor)
            .await?;
        let now = chrono::Utc::now();
        let (plan, events) = self
            .write(actor, |book| {
                if book.get(id).is_none() {
                    return Err(ServiceError::from(PlanError::UnknownPlan { id }));
                }
                let events = book.command(id, command, actor, now)?;
                let plan = book
                    .get(id)
                    .cloned()
                    .ok_or(ServiceError::from(PlanError::UnknownPlan { id }))?;
                Ok((plan, events))
            })
            .await?;
        if let Some(gated) = gated {
            gated.done(&plan, actor).await;
        }
        Ok((plan, events))
    }

    /// Runs several commands on one plan as one change, all or none (an
    /// approval held by a pause); returns the plan after it and the events.
    pub async fn commands(
        &self,
        id: PlanId,
        commands: &[Command],
        actor: &str,
    ) -> Result<(Plan, Vec<Event>), ServiceError> {
        self.refresh(id).await?;
        let ops: Vec<Op> = commands.iter().map(|c| c.op.clone()).collect();
        let gated = self.gated(id, &ops, actor).await?;
        let now = chrono::Utc::now();
        let (plan, events) = self
            .write(actor, |book| {
                if book.get(id).is_none() {
                    return Err(ServiceError::from(PlanError::UnknownPlan { id }));
                }
                let events = book.commands(id, commands, actor, now)?;
                let plan = book
                    .get(id)
                    .cloned()
                    .ok_or(ServiceError::from(PlanError::UnknownPlan { id }))?;
                Ok((plan, events))
            })
            .await?;
        if let Some(gated) = gated {
            gated.done(&plan, actor).await;
        }
        Ok((plan, events))
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
        let gated = self.gated(id, &ops, actor).await?;
        let now = chrono::Utc::now();
        let plan = self
            .write(actor, |book| {
                if book.get(id).is_none() {
                    return Err(ServiceError::from(PlanError::UnknownPlan { id }));
                }
                book.execute(id, ops.clone(), actor, now)?;
                book.get(id)
                    .cloned()
                    .ok_or(ServiceError::from(PlanError::UnknownPlan { id }))
            })
            .await?;
        if let Some(gated) = gated {
            gated.done(&plan, actor).await;
        }
        Ok(plan)
    }

    pub async fn delete(&self, id: PlanId, actor: &str) -> Result<(), ServiceError> {
        self.refresh(id).await?;
        self.write(actor, |book| {
            if book.get(id).is_none() {
                return Err(ServiceError::from(PlanError::UnknownPlan { id }));
            }
            book.remove(id)?;
            Ok(())
        })
        .await
    }

    /// Replaces an agent session's settings; answers them as stored.
    pub async fn set_session_settings(
        &self,
        session: &str,
        settings: SessionSettings,
    ) -> Result<SessionSettings, ServiceError> {
        settings
            .check()
            .map_err(|why| PlanError::invalid("session settings", why))?;
        self.store.set_session_settings(session, &settings).await?;
        Ok(settings)
    }

    /// One tool call in a dialect, on the session's active plan unless the
    /// arguments name another. A call that deletes a plan (OpenManus'
    /// `planning` `delete`, or any tool that comes to) without
    /// [`ToolRights::Admin`] is undone and refused: the roles are the
    /// API's whatever the dialect. The check is on what the call did, not
    /// on its name, so no spelling of a tool or its arguments gets past it.
    /// A plan the call creates takes `settings` where set, else the
    /// session's (the arguments' own win over both, in the engine).
    #[allow(clippy::too_many_arguments)]
    pub async fn tool(
        &self,
        dialect: Dialect,
        tool: &str,
        args: &Value,
        session: &str,
        actor: &str,
        rights: ToolRights,
        settings: SessionSettings,
    ) -> Result<ToolResult, ServiceError> {
        settings
            .check()
            .map_err(|why| PlanError::invalid("plan settings", why))?;
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
            defaults: settings
                .over(self.store.session_settings(session).await?)
                .defaults(),
        };
        self.write(actor, |book| {
            let result = call(book, dialect, tool, args, &ctx);
            if result.ok && rights != ToolRights::Admin && book.deletes_a_plan() {
                // `write` undoes the call.
                return Err(ServiceError::Forbidden(format!(
                    "'{actor}' may not delete a plan: deleting needs the admin role"
                )));
            }
            if !result.ok {
                // A call that fails halfway (say, archived the old plan, then
                // failed to create the new one) keeps nothing.
                book.undo();
            }
            Ok(result)
        })
        .await
    }
}
