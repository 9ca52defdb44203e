//! The coordinator (seed 002's CoordinatorAgent): drives one run from its
//! stored state to a finished one. Everything people do reaches it through
//! the plan: approval and rejection, edits, pause and resume, skipping or
//! releasing a subtask, answering a question, abandoning the plan. So a run
//! resumes after a restart from its row and its plan alone.
//!
//! # Scheduling
//! Parallelism is the run's `max_parallel` (`run_model::DEFAULT_PARALLEL`,
//! 4, unless the run says), set on the plan by mode:
//! - simple: one subtask at a time (the plan's `max_parallel` is 1).
//! - complex: super-steps. Every ready subtask starts together (the
//!   engine's `start_next`, up to `max_parallel`); the next super-step
//!   starts when the current one has finished. After a super-step with a
//!   failure or a result short of its expected outcome (the executor says
//!   so), an adapt call may revise, drop and add subtasks and rewire
//!   unstarted ones; the engine checks the change, and a refusal (a cycle)
//!   goes back to the model once with the reason.
//! - emergent: no super-steps: whenever fewer than `max_parallel` TODOs
//!   run, ready ones start (a TODO waits for the TODOs it depends on).
//!   After each TODO that finished, or failed for good, an update call may
//!   add TODOs (none once the list is at 80 % of its cap, when it is asked
//!   to drop instead; none for a failed workaround), revise, drop or block
//!   unstarted ones; what is ready starts only after it.
//!
//! - in batches (`RunConfig::batches`, seed 002): the plan grows a batch
//!   of the input's items at a time (`batches`).
//!
//! # Memory
//! A run recalls memories like its task before classifying (`memory`),
//! and leaves its own when it ends.
//!
//! # Failure
//! A failed attempt is the agent's to handle first (`recover`): the
//! subtask is tried again with the reasons, then the planner revises it,
//! replaces it or gives up; only then is the run stuck for a person.
//!
//! # Run again
//! A finished plan becomes a new run that keeps the results before a
//! chosen subtask and redoes the rest (`again`); it starts at `running`.
//!
//! # Replay
//! A run whose config names a recorded run (`RunConfig::replay`) gets the
//! recording with its tools (`crate::replay`): a call the recording holds
//! is answered from it; another is made live, or stops the run (released,
//! paused with the reason, later unmatched calls made live once a person
//! resumes). A run may ask for another model (`RunConfig::model`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::{AbortHandle, Abortable, Aborted, BoxFuture, FutureExt};
use futures_util::stream::{FuturesUnordered, StreamExt};
use plan_engine::{
    ApprovalStatus, InfoPatch, Mode, NewPlan, NewSubtask, Op, Plan, PlanState, SubtaskId,
    SubtaskPatch, SubtaskState,
};

use crate::call::{CallError, Caller};
use crate::host::{Host, HostError};
use crate::llm::{CallRole, Llm, Message, ModelQueue, Protocol};
use crate::prompts;
use crate::protocol::{AdaptAnswer, UpdateAnswer};
use crate::retry::RetryPolicy;
use crate::roles::classify;
use crate::roles::executor::{self, cut, cut_within, Job, Outcome, AGENT_ACTOR};
use crate::roles::planner::{self, Planned, Revision, EMERGENT_CAP};
use crate::run::{
    Budget, Classification, DecidedBy, RunConfig, RunEntry, RunId, RunRecord, RunState,
};
use crate::tools::Toolset;

mod adjust;
pub mod again;
mod batches;
mod memory;
mod prepare;
mod recover;
mod schedule;

/// How often the same call may be running when the process stops before
/// the run waits for a person.
pub const CRASHES_BEFORE_PAUSE: u32 = 2;

/// Rejections a planner answers before the run gives up (seed 003).
pub const MAX_REVISIONS: u32 = 3;
/// Emergent lists are compacted from this many TODOs on (80 % of 20).
pub const COMPACT_AT: usize = (EMERGENT_CAP as usize * 4) / 5;
/// Characters of one result given to the compiler, and of all of them.
const COMPILE_EACH: usize = 1_500;
const COMPILE_ALL: usize = 12_000;

type ToolsFor = dyn Fn(RunId) -> Toolset + Send + Sync;

/// The agent runtime: shared by all runs of a process.
pub struct Agent {
    pub host: Arc<dyn Host>,
    pub llm: Arc<dyn Llm>,
    /// The model endpoint's queue, across all runs: as many calls in
    /// flight as the endpoint serves at once, the runs served in turn,
    /// fewer after a 429. The board reads it: `queue.position(run)` is
    /// `Some(n)` while the run waits for the model with `n` calls before
    /// its next one; `queue.waiting()` and `queue.status()` the whole.
    pub queue: ModelQueue,
    pub retry: RetryPolicy,
    pub protocol: Protocol,
    tools: Arc<ToolsFor>,
    budgets: Mutex<HashMap<RunId, Arc<Mutex<Budget>>>>,
    /// What model calls are charged at (the built-in list by default).
    pub prices: Arc<run_model::PriceTable>,
    /// A plan waiting for approval this long is logged as overdue once
    /// (`approval_overdue`: Needs you and the webhooks tell people); it is
    /// never approved by a timer. `None`: never.
    pub approval_remind: Option<Duration>,
}

impl Agent {
    /// An agent on `llm` with `concurrency` model calls in flight at once
    /// (`PLANBOARD_LLM_CONCURRENCY`): `0` asks the endpoint how many it
    /// serves (llama.cpp's server: its slots), with
    /// [`crate::llm::queue::DEFAULT_CONCURRENCY`] when it does not say; a
    /// number is taken as it is. See [`ModelQueue`].
    pub fn new(host: Arc<dyn Host>, llm: Arc<dyn Llm>, concurrency: usize) -> Agent {
        Agent {
            queue: ModelQueue::for_setting(llm.clone(), concurrency),
            host,
            llm,
            retry: RetryPolicy::default(),
            protocol: Protocol::Auto,
            tools: Arc::new(|_| Toolset::default()),
            budgets: Mutex::new(HashMap::new()),
            prices: Arc::default(),
            approval_remind: None,
        }
    }

    /// Charges model calls at `prices`.
    pub fn with_prices(mut self, prices: run_model::PriceTable) -> Agent {
        self.prices = Arc::new(prices);
        self
    }

    /// Which tools a run gets (its workspace, the MCP servers).
    pub fn with_tools(mut self, f: impl Fn(RunId) -> Toolset + Send + Sync + 'static) -> Agent {
        self.tools = Arc::new(f);
        self
    }

    /// Puts this agent's calls in `queue` (one shared with others that
    /// call the same endpoint).
    pub fn with_queue(mut self, queue: ModelQueue) -> Agent {
        self.queue = queue;
        self
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Agent {
        self.retry = retry;
        self
    }

    /// A new run: its plan (an empty draft the planner fills in, so the
    /// board shows it from the first moment) and its row, stored;
    /// [`Agent::drive`] then runs it.
    pub async fn start(&self, config: RunConfig, who: &str) -> Result<RunRecord, HostError> {
        self.start_as(uuid::Uuid::new_v4(), config, who).await
    }

    /// [`Agent::start`] with the run's id chosen by the caller, who has put
    /// the run's files in its workspace already.
    pub async fn start_as(
        &self,
        id: RunId,
        config: RunConfig,
        who: &str,
    ) -> Result<RunRecord, HostError> {
        self.start_traced(id, config, who, None).await
    }

    /// [`Agent::start_as`] for a run whose spans join `trace` (the
    /// request that started it).
    pub async fn start_traced(
        &self,
        id: RunId,
        config: RunConfig,
        who: &str,
        trace: Option<run_model::TraceParent>,
    ) -> Result<RunRecord, HostError> {
        if let Some(given) = config.plan {
            return self.start_on(id, config, given, who, trace).await;
        }
        let title = config.task.lines().next().unwrap_or_default();
        let spec = NewPlan {
            title: cut(title.trim(), 80),
            goal: cut_within(&config.task, plan_engine::model::limits::TEXT),
            mode: config.mode.forced().unwrap_or(Mode::Manual),
            approval_required: config.approval_required,
            draft: true,
            ..NewPlan::default()
        };
        let plan = self.host.create_plan(spec, AGENT_ACTOR).await?;
        self.begin(
            id,
            config,
            plan.id(),
            who,
            trace,
            format!("started by {who}"),
        )
        .await
    }

    /// A new run's row on `plan`, saved, with its first log line.
    async fn begin(
        &self,
        id: RunId,
        config: RunConfig,
        plan: plan_engine::PlanId,
        who: &str,
        trace: Option<run_model::TraceParent>,
        reason: String,
    ) -> Result<RunRecord, HostError> {
        let mut run = RunRecord::new(id, config);
        run.plan_id = Some(plan);
        run.started_by = who.to_string();
        run.trace_parent = trace;
        run.model = Some(self.llm.model(CallRole::Executor));
        self.host.save_run(&run).await?;
        self.host
            .log(
                run.id,
                RunEntry::StateChanged {
                    from: None,
                    to: run.state,
                    reason,
                },
            )
            .await?;
        Ok(run)
    }

    /// A run on a plan people wrote: the plan stays as it is (no new plan,
    /// no planner); refused when the plan is finished.
    async fn start_on(
        &self,
        id: RunId,
        config: RunConfig,
        given: plan_engine::PlanId,
        who: &str,
        trace: Option<run_model::TraceParent>,
    ) -> Result<RunRecord, HostError> {
        let plan = self.host.plan(given).await?;
        if plan.state().is_finished() {
            return Err(HostError::NotWorkable(format!(
                "plan {given} is {}; the agent works a plan that has not finished",
                plan.state().as_str()
            )));
        }
        if plan.subtasks().is_empty() {
            return Err(HostError::NotWorkable(format!(
                "plan {given} has no subtasks for the agent to work"
            )));
        }
        let reason = format!("started by {who} on a plan people wrote");
        self.begin(id, config, given, who, trace, reason).await
    }

    /// The recording `run` replays, less the results it answered from
    /// before a restart (its own log's replayed calls). A recording that
    /// cannot be read is an empty one: every call is then unmatched, and
    /// the run makes it live or stops at it, as it asked.
    async fn recording_of(
        &self,
        run: RunId,
        replay: &run_model::ReplayOf,
    ) -> crate::replay::Recording {
        let calls = match self.host.recording(replay).await {
            Ok(calls) => calls,
            Err(e) => {
                tracing::warn!(
                    "run {run}: the recording of run {} could not be read: {e}",
                    replay.run
                );
                Vec::new()
            }
        };
        let recording = crate::replay::Recording::new(replay, calls);
        if let Ok(history) = self.host.tool_history(run).await {
            for entry in &history {
                if let RunEntry::ToolCall {
                    name,
                    arguments,
                    replayed: true,
                    ..
                } = entry
                {
                    recording.take(name, arguments);
                }
            }
        }
        recording
    }

    /// A live run's budget, so a person can raise it (then resume).
    pub fn raise_budget(&self, run: RunId, budget: Budget) -> bool {
        match self.budgets.lock().expect("budgets lock").get(&run) {
            Some(live) => {
                *live.lock().expect("budget lock") = budget;
                true
            }
            None => false,
        }
    }

    /// Runs `run` until it is done, failed or cancelled; waits (without
    /// polling) for approval, answers and resumes on the way.
    pub async fn drive(&self, run: RunRecord) -> RunRecord {
        // A guarded call asked before a restart waits on a job that is
        // gone: it expires, and the agent asks again if it still needs to.
        if let Ok(open) = self.host.open_tool_calls(run.id).await {
            for call in open {
                let _ = self
                    .host
                    .log(
                        run.id,
                        RunEntry::ToolDecision {
                            call,
                            verdict: crate::run::Verdict::Expired,
                            by: AGENT_ACTOR.to_string(),
                            reason: Some("the run restarted before anyone decided".into()),
                            arguments: None,
                        },
                    )
                    .await;
            }
        }
        // A call that was running when the process stopped: the second
        // time the same call (tool and arguments) of a subtask was, the run
        // waits for a person instead of making it again (a page that took
        // the server's memory took it again at every restart).
        let mut crashed = None;
        if let Ok(history) = self.host.tool_history(run.id).await {
            for call in crate::host::interrupted(&history) {
                let _ = self
                    .host
                    .log_stored(
                        run.id,
                        RunEntry::ToolInterrupted {
                            subtask: call.subtask,
                            name: call.name.clone(),
                            digest: call.digest.clone(),
                            times: call.times,
                        },
                    )
                    .await;
                if call.times >= CRASHES_BEFORE_PAUSE {
                    crashed = Some(crashed_call(&call));
                }
            }
        }
        // A replay answers from its recording the calls it holds; those
        // this run answered before a restart are used up already.
        let recording = match &run.config.replay {
            Some(replay) => Some(Arc::new(self.recording_of(run.id, replay).await)),
            None => None,
        };
        // A run may ask for another model on the same endpoint (a replay's
        // or a suite's choice); a model that cannot be switched keeps its own.
        let llm = run
            .config
            .model
            .as_deref()
            .and_then(|model| self.llm.with_model(model))
            .unwrap_or_else(|| self.llm.clone());
        let budget = Arc::new(Mutex::new(run.config.budget.clone()));
        self.budgets
            .lock()
            .expect("budgets lock")
            .insert(run.id, budget.clone());
        let caller = Caller {
            llm,
            queue: self.queue.clone(),
            retry: self.retry.clone(),
            host: self.host.clone(),
            run: run.id,
            spent: Arc::new(Mutex::new(run.spent.clone())),
            budget,
            protocol: self.protocol,
            prices: self.prices.clone(),
            shapes: Arc::default(),
        };
        let mut tools = (self.tools)(run.id)
            .only(run.config.tools.as_deref())
            .overridden(&run.config.policies);
        if let Some(recording) = recording {
            tools = tools.replaying(recording);
        }
        let mut driver = Driver {
            host: self.host.clone(),
            tools,
            caller,
            run,
            seen: None,
            people: Vec::new(),
            stuck: false,
            adapt_due: false,
            saved: Instant::now(),
            recalled: None,
            input: None,
            crashed,
            source: None,
            asks_sent_back: false,
            approval_remind: self.approval_remind,
            drift_due: true,
            drift_len: 0,
        };
        if driver.run.in_words() {
            driver.words_only();
        }
        if let Err(why) = driver.go().await {
            driver.move_to(RunState::Failed, why.to_string()).await;
        }
        driver.remember().await;
        self.budgets
            .lock()
            .expect("budgets lock")
            .remove(&driver.run.id);
        driver.run
    }
}

struct Driver {
    host: Arc<dyn Host>,
    tools: Toolset,
    caller: Caller,
    run: RunRecord,
    /// The plan as last seen, to tell what people changed.
    seen: Option<Arc<Plan>>,
    people: Vec<String>,
    /// Nothing can proceed until a person acts.
    stuck: bool,
    /// The current super-step had a failure or a result short of its
    /// expected outcome: an adapt call is due before the next one.
    adapt_due: bool,
    /// When the row was last saved.
    saved: Instant,
    /// The memories recalled for this run, once recalled.
    recalled: Option<Vec<run_model::Memory>>,
    /// A run in batches: its input's items, once read.
    input: Option<Arc<run_model::BatchInput>>,
    /// Why the run must wait for a person before it goes on: a call that
    /// was running when the process stopped, twice.
    crashed: Option<String>,
    /// The router's answer to where the task's answer comes from, once
    /// asked in this process (`None` inside: it could not be had).
    source: Option<Option<crate::protocol::SourceWord>>,
    /// The answer's missing parts were sent back once already (the rule
    /// `every_ask_answered`).
    asks_sent_back: bool,
    /// See [`Agent::approval_remind`].
    approval_remind: Option<Duration>,
    /// The plan changed in what it says since drift was last measured
    /// (people's edits, an adaptation): measure it again.
    drift_due: bool,
    /// The plan's size when drift was last measured: a step added or
    /// removed (an executor's, a workaround) makes it due too.
    drift_len: usize,
}

/// Why a run failed, recorded as its reason.
#[derive(Debug, thiserror::Error)]
pub enum RunFailure {
    #[error("{0}")]
    Host(#[from] HostError),
    #[error("the run has no plan")]
    NoPlan,
    #[error("classifying failed: {0}")]
    Classifying(CallError),
    #[error("planning failed: {0}")]
    Planning(CallError),
    #[error("the plan was refused: {0}")]
    PlanRefused(HostError),
    #[error("the plan was rejected {rounds} times; last comment: {comment}")]
    Rejected { rounds: u32, comment: String },
    #[error("starting subtasks failed: {0}")]
    Starting(HostError),
    #[error("finishing the plan failed: {0}")]
    Finishing(HostError),
    #[error("{0}")]
    BatchInput(#[from] run_model::BatchInputError),
}

type Flow = Result<(), RunFailure>;

impl Driver {
    async fn go(&mut self) -> Flow {
        loop {
            if matches!(self.run.state, RunState::Classifying | RunState::Planning)
                && self.abandoned().await
            {
                self.move_to(
                    RunState::Cancelled,
                    "the plan was abandoned before it was planned",
                )
                .await;
            }
            match self.run.state {
                RunState::Classifying => self.classify().await?,
                RunState::Planning => self.plan().await?,
                RunState::AwaitingApproval => self.await_approval().await?,
                RunState::Running | RunState::Paused => self.execute().await?,
                RunState::Done | RunState::Failed | RunState::Cancelled => return Ok(()),
            }
        }
    }

    /// A person may cancel a run while it classifies or plans.
    async fn abandoned(&self) -> bool {
        let Some(id) = self.run.plan_id else {
            return false;
        };
        self.host
            .plan(id)
            .await
            .is_ok_and(|p| p.state() == PlanState::Abandoned)
    }

    /// Whether nothing new should start (the plan is paused or the run
    /// is stuck or out of budget).
    fn pausing(&self) -> bool {
        self.run.state != RunState::Running
            || self
                .seen
                .as_ref()
                .is_some_and(|p| p.state() == PlanState::Paused)
            || self.caller.budget_reached().is_some()
    }

    /// Saves the row at most once a second while work goes on; state
    /// changes always save.
    async fn save_now_and_then(&mut self) {
        if self.saved.elapsed() >= Duration::from_secs(1) {
            self.save().await;
        }
    }

    async fn save(&mut self) {
        self.saved = Instant::now();
        self.run.spent = self.caller.spent();
        self.run.config.budget = self.caller.budget();
        if let Err(e) = self.host.save_run(&self.run).await {
            tracing::warn!("run {}: could not save: {e}", self.run.id);
        }
    }

    async fn move_to(&mut self, to: RunState, reason: impl Into<String>) {
        let reason = reason.into();
        let from = self.run.state;
        if from == to || !from.can_become(to) {
            return;
        }
        self.run.state = to;
        self.run.reason = matches!(
            to,
            RunState::Paused | RunState::Failed | RunState::Cancelled
        )
        .then(|| reason.clone());
        // Saved before it is logged: whoever hears the entry and reads the
        // run then finds the new state.
        self.save().await;
        self.caller
            .log(RunEntry::StateChanged {
                from: Some(from),
                to,
                reason,
            })
            .await;
    }

    fn plan_id(&self) -> Result<plan_engine::PlanId, RunFailure> {
        self.run.plan_id.ok_or(RunFailure::NoPlan)
    }

    /// Runs ops as the agent; remembers the plan so our own change is not
    /// taken for a person's.
    /// (Shared, not copied: a copy of a plan costs as much as the plan.)
    async fn apply(&mut self, ops: Vec<Op>) -> Result<Arc<Plan>, HostError> {
        let plan = Arc::new(
            self.host
                .execute(
                    self.run
                        .plan_id
                        .ok_or_else(|| HostError::Unavailable(RunFailure::NoPlan.to_string()))?,
                    ops,
                    AGENT_ACTOR,
                )
                .await?,
        );
        self.seen = Some(plan.clone());
        Ok(plan)
    }

    fn mode(&self) -> Mode {
        self.run
            .classification
            .as_ref()
            .map_or(Mode::Complex, |c| c.mode)
    }

    /// Whether drift from the approved plan is measured for this run: not
    /// an emergent list (meant to grow) nor a run in batches (planned a
    /// batch at a time), with a threshold above 0.
    fn drift_measured(&self) -> bool {
        self.run.config.drift_threshold > 0.0 && self.mode() != Mode::Emergent && !self.batching()
    }

    /// Keeps the plan as it was approved, when a person approved it (a
    /// plan that needs no approval has no contract), the first time the
    /// run works it.
    fn baseline(&mut self, plan: &Plan) {
        let approved = plan.approval().required
            && plan.approval().status == plan_engine::ApprovalStatus::Approved;
        if self.run.approved.is_none() && approved && self.drift_measured() {
            self.run.approved = run_model::ApprovedPlan::of(plan);
            self.drift_len = plan.subtasks().len();
            self.drift_due = false;
        }
    }

    /// A person resumed a run paused for drift: they approved the plan
    /// again (the approvals recorded it), and it is the contract now.
    fn reapproved(&mut self, plan: &Plan) {
        if self.run.drift.take().is_some() {
            self.run.approved = run_model::ApprovedPlan::of(plan);
            self.drift_len = plan.subtasks().len();
            self.drift_due = false;
        }
    }

    /// Pauses the run for a person when its plan drifted from the version
    /// approved (`run_model::ApprovedPlan::drift`); whether it did.
    /// Measured only when the plan changed in what it says, so a step of
    /// the work costs nothing.
    async fn check_drift(&mut self, plan: &Plan) -> Result<bool, RunFailure> {
        if plan.subtasks().len() != self.drift_len {
            self.drift_due = true;
        }
        if !self.drift_due || self.run.drift.is_some() || !self.drift_measured() {
            return Ok(false);
        }
        self.drift_due = false;
        self.drift_len = plan.subtasks().len();
        let threshold = self.run.config.drift_threshold;
        let Some(drift) = self
            .run
            .approved
            .as_ref()
            .and_then(|approved| approved.drift(plan, threshold))
        else {
            return Ok(false);
        };
        let why = drift.reason();
        self.caller.log(RunEntry::Drifted(drift.clone())).await;
        let _ = self
            .apply(vec![
                Op::Pause {},
                Op::Comment {
                    subtask: None,
                    body: why.clone(),
                },
            ])
            .await;
        self.run.drift = Some(drift);
        self.move_to(RunState::Paused, why).await;
        Ok(true)
    }

    /// Tells the run log (and later prompts) what others changed.
    async fn notice_people(&mut self, plan: &Arc<Plan>) {
        let Some(before) = self.seen.replace(plan.clone()) else {
            return;
        };
        if before.version() == plan.version() {
            return;
        }
        let changes = plan_changes(&before, plan);
        if changes.is_empty() {
            return;
        }
        let summary = changes.join("; ");
        self.drift_due = true;
        self.people.push(summary.clone());
        self.correction(format!("a person changed the plan while it ran: {summary}"));
        self.caller.log(RunEntry::PeopleChanged { summary }).await;
    }

    fn tick(&mut self, last: &mut Instant) {
        let now = Instant::now();
        if self.run.state == RunState::Running {
            let mut spent = self.caller.spent.lock().expect("spent lock");
            spent.wall_ms += now.duration_since(*last).as_millis() as u64;
        }
        *last = now;
    }

    fn wall_left(&self) -> Duration {
        let budget = self.caller.budget();
        let spent = self.caller.spent();
        Duration::from_secs(budget.max_wall_secs)
            .saturating_sub(Duration::from_millis(spent.wall_ms))
    }

    /// A run answered in words offers its executor no tool (the rule
    /// `words_only`): what it writes is the answer.
    fn words_only(&mut self) {
        self.tools = std::mem::take(&mut self.tools).only(Some(&[][..]));
    }

    /// Pauses the run for a person, saying why on the plan.
    async fn pause_for_crash(&mut self, why: String) -> Flow {
        let _ = self
            .apply(vec![
                Op::Pause {},
                Op::Comment {
                    subtask: None,
                    body: why.clone(),
                },
            ])
            .await;
        self.move_to(RunState::Paused, why).await;
        Ok(())
    }

    /// Pauses a replay that met a call its recording does not hold (and
    /// stops at such calls): from now on such calls are made live, so a
    /// person who resumes the run lets the call run; the run's row keeps
    /// that, so a restart does too.
    async fn pause_for_replay(&mut self, why: String) -> Flow {
        if let Some(recording) = self.tools.recording() {
            recording.go_live();
        }
        if let Some(replay) = &mut self.run.config.replay {
            replay.unmatched = run_model::Unmatched::Live;
        }
        let _ = self
            .apply(vec![
                Op::Pause {},
                Op::Comment {
                    subtask: None,
                    body: why.clone(),
                },
            ])
            .await;
        self.move_to(RunState::Paused, why).await;
        Ok(())
    }

    async fn pause_for_budget(&mut self, why: String) -> Flow {
        self.caller
            .log(RunEntry::BudgetReached { what: why.clone() })
            .await;
        let body = format!("Budget reached: {why}. Raise the budget and resume the plan to go on.");
        let _ = self
            .apply(vec![
                Op::Pause {},
                Op::Comment {
                    subtask: None,
                    body,
                },
            ])
            .await;
        self.move_to(RunState::Paused, format!("budget reached: {why}"))
            .await;
        Ok(())
    }
}

/// What a person reads on a run paused because the same call was running
/// when the process stopped, again.
fn crashed_call(call: &crate::host::Interrupted) -> String {
    format!(
        "Paused: {} was running in subtask #{} when the server stopped, {} times with the same \
         arguments ({}). The run waits so that the call does not stop the server again: skip or \
         edit the subtask, or resume to try it once more.",
        call.name,
        call.subtask.0,
        call.times,
        cut(&call.arguments.to_string(), 300)
    )
}

/// What changed in a plan's subtasks from `before` to `after`, in words a
/// later prompt reads: added, deleted, edited (name, description, expected
/// outcome), rewired (dependencies) and reordered.
pub(crate) fn plan_changes(before: &Plan, after: &Plan) -> Vec<String> {
    let old: HashMap<SubtaskId, &plan_engine::Subtask> =
        before.subtasks().iter().map(|s| (s.id(), &**s)).collect();
    let now: HashSet<SubtaskId> = after.subtasks().iter().map(|s| s.id()).collect();
    let named = |ids: &[SubtaskId], plan: &Plan| {
        let names: Vec<String> = ids
            .iter()
            .map(|id| match plan.subtask(*id) {
                Some(d) => format!("#{} {}", id.0, cut(d.name(), 60)),
                None => format!("#{}", id.0),
            })
            .collect();
        if names.is_empty() {
            "nothing".to_string()
        } else {
            names.join(", ")
        }
    };
    let mut changes = Vec::new();
    for s in after.subtasks() {
        let Some(o) = old.get(&s.id()) else {
            changes.push(format!("added #{} {}", s.id().0, s.name()));
            continue;
        };
        if o.name() != s.name() || o.description() != s.description() {
            changes.push(format!(
                "edited #{} {}: {}",
                s.id().0,
                s.name(),
                cut(s.description(), 200)
            ));
        }
        if o.expected_outcome() != s.expected_outcome() {
            changes.push(format!(
                "changed what #{} {} must achieve to: {}",
                s.id().0,
                s.name(),
                cut(s.expected_outcome(), 200)
            ));
        }
        if o.dependencies() != s.dependencies() {
            changes.push(format!(
                "made #{} {} depend on {} (was {})",
                s.id().0,
                s.name(),
                named(s.dependencies(), after),
                named(o.dependencies(), before)
            ));
        }
    }
    for s in before.subtasks() {
        if !now.contains(&s.id()) {
            changes.push(format!("deleted #{} {}", s.id().0, s.name()));
        }
    }
    let order_before: Vec<SubtaskId> = before
        .subtasks()
        .iter()
        .map(|s| s.id())
        .filter(|id| now.contains(id))
        .collect();
    let order_now: Vec<SubtaskId> = after
        .subtasks()
        .iter()
        .map(|s| s.id())
        .filter(|id| old.contains_key(id))
        .collect();
    if order_before != order_now {
        changes.push("reordered the subtasks".into());
    }
    changes
}
