//! The coordinator (seed 002's CoordinatorAgent): drives one run from its
//! stored state to a finished one. Everything people do reaches it through
//! the plan: approval and rejection, edits, pause and resume, skipping or
//! releasing a subtask, answering a question, abandoning the plan. So a run
//! resumes after a restart from its row and its plan alone.
//!
//! # Scheduling
//! - simple and emergent: one subtask at a time.
//! - complex: super-steps. Every ready subtask starts together (the
//!   engine's `start_next`, up to `max_parallel`); the next super-step
//!   starts when the current one has finished. After a super-step with a
//!   failure, an adapt call may revise or drop unstarted subtasks.
//! - emergent: after each TODO, an update call may add TODOs (none once
//!   the list is at 80 % of its cap, when it is asked to drop instead).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use plan_engine::{
    ApprovalStatus, InfoPatch, Mode, NewPlan, NewSubtask, Op, Plan, PlanState, SubtaskId,
    SubtaskPatch, SubtaskState,
};
use tokio::sync::Semaphore;
use tokio::task::{AbortHandle, JoinSet};

use crate::call::{CallError, Caller};
use crate::classify;
use crate::executor::{self, cut, Job, Outcome, AGENT_ACTOR};
use crate::host::{Host, HostError};
use crate::llm::{CallRole, Llm, Message, Protocol};
use crate::planner::{self, Planned, Revision, EMERGENT_CAP};
use crate::prompts;
use crate::protocol::{AdaptAnswer, UpdateAnswer};
use crate::retry::RetryPolicy;
use crate::run::{
    Budget, Classification, DecidedBy, RunConfig, RunEntry, RunId, RunRecord, RunState,
};
use crate::tools::Toolset;

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
    /// One limit on model calls in flight, across all runs.
    pub limit: Arc<Semaphore>,
    pub retry: RetryPolicy,
    pub protocol: Protocol,
    tools: Arc<ToolsFor>,
    budgets: Mutex<HashMap<RunId, Arc<Mutex<Budget>>>>,
}

impl Agent {
    pub fn new(host: Arc<dyn Host>, llm: Arc<dyn Llm>, concurrency: usize) -> Agent {
        Agent {
            host,
            llm,
            limit: Arc::new(Semaphore::new(concurrency.max(1))),
            retry: RetryPolicy::default(),
            protocol: Protocol::Auto,
            tools: Arc::new(|_| Toolset::default()),
            budgets: Mutex::new(HashMap::new()),
        }
    }

    /// Which tools a run gets (its workspace, the MCP servers).
    pub fn with_tools(mut self, f: impl Fn(RunId) -> Toolset + Send + Sync + 'static) -> Agent {
        self.tools = Arc::new(f);
        self
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Agent {
        self.retry = retry;
        self
    }

    /// A new run's row, stored; [`Agent::drive`] then runs it.
    pub async fn start(&self, config: RunConfig) -> Result<RunRecord, HostError> {
        let run = RunRecord::new(uuid::Uuid::new_v4(), config);
        self.host.save_run(&run).await?;
        self.host
            .log(
                run.id,
                RunEntry::StateChanged {
                    from: None,
                    to: run.state,
                    reason: "started".into(),
                },
            )
            .await?;
        Ok(run)
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
        let budget = Arc::new(Mutex::new(run.config.budget.clone()));
        self.budgets
            .lock()
            .expect("budgets lock")
            .insert(run.id, budget.clone());
        let caller = Caller {
            llm: self.llm.clone(),
            limit: self.limit.clone(),
            retry: self.retry.clone(),
            host: self.host.clone(),
            run: run.id,
            spent: Arc::new(Mutex::new(run.spent.clone())),
            budget,
            protocol: self.protocol,
        };
        let mut driver = Driver {
            host: self.host.clone(),
            tools: (self.tools)(run.id),
            caller,
            run,
            seen: None,
            people: Vec::new(),
            stuck: false,
            step_failed: false,
        };
        if let Err(why) = driver.go().await {
            driver.move_to(RunState::Failed, why).await;
        }
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
    seen: Option<Plan>,
    people: Vec<String>,
    /// Nothing can proceed until a person acts.
    stuck: bool,
    /// The current super-step had a failure.
    step_failed: bool,
}

type Flow = Result<(), String>;

impl Driver {
    async fn go(&mut self) -> Flow {
        loop {
            match self.run.state {
                RunState::Classifying => self.classify().await?,
                RunState::Planning => self.plan().await?,
                RunState::AwaitingApproval => self.await_approval().await?,
                RunState::Running | RunState::Paused => self.execute().await?,
                RunState::Done | RunState::Failed | RunState::Cancelled => return Ok(()),
            }
        }
    }

    async fn save(&mut self) {
        self.run.spent = self.caller.spent();
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
        self.caller
            .log(RunEntry::StateChanged {
                from: Some(from),
                to,
                reason,
            })
            .await;
        self.save().await;
    }

    fn plan_id(&self) -> Result<plan_engine::PlanId, String> {
        self.run
            .plan_id
            .ok_or_else(|| "the run has no plan".to_string())
    }

    /// Runs ops as the agent; remembers the plan so our own change is not
    /// taken for a person's.
    async fn apply(&mut self, ops: Vec<Op>) -> Result<Plan, HostError> {
        let plan = self
            .host
            .execute(
                self.plan_id().map_err(HostError::Unavailable)?,
                ops,
                AGENT_ACTOR,
            )
            .await?;
        self.seen = Some(plan.clone());
        Ok(plan)
    }

    fn mode(&self) -> Mode {
        self.run
            .classification
            .as_ref()
            .map_or(Mode::Complex, |c| c.mode)
    }

    async fn classify(&mut self) -> Flow {
        let task = self.run.config.task.clone();
        let decided = match self.run.config.mode.forced() {
            Some(mode) => Classification {
                mode,
                reason: "chosen by the person who started the run".into(),
                confidence: 1.0,
                by: DecidedBy::Person,
            },
            None => classify::classify(&self.caller, &task)
                .await
                .map_err(|e| format!("classifying failed: {e}"))?,
        };
        self.caller.log(RunEntry::Classified(decided.clone())).await;
        self.run.classification = Some(decided);
        self.move_to(RunState::Planning, "classified").await;
        Ok(())
    }

    fn spec(&self, planned: &Planned) -> NewPlan {
        let mode = self.mode();
        let config = &self.run.config;
        NewPlan {
            title: cut(&planned.title, 190),
            goal: cut(&config.task, 7_900),
            mode,
            approval_required: config.approval_required,
            max_parallel: Some(if mode == Mode::Complex {
                config.max_parallel.max(1)
            } else {
                1
            }),
            max_subtasks: (mode == Mode::Emergent).then_some(EMERGENT_CAP),
            subtasks: planned.subtasks.clone(),
            ..NewPlan::default()
        }
    }

    async fn plan(&mut self) -> Flow {
        let mode = self.mode();
        let task = self.run.config.task.clone();
        let Some(plan_id) = self.run.plan_id else {
            let planned = planner::plan(&self.caller, mode, &task, None)
                .await
                .map_err(|e| format!("planning failed: {e}"))?;
            let plan = self
                .host
                .create_plan(self.spec(&planned), AGENT_ACTOR)
                .await
                .map_err(|e| format!("the plan could not be created: {e}"))?;
            self.run.plan_id = Some(plan.id);
            self.run.round = 1;
            self.seen = Some(plan.clone());
            self.caller
                .log(RunEntry::PlanProposed {
                    plan_id: plan.id,
                    round: 1,
                    subtasks: plan.subtasks.len(),
                })
                .await;
            let next = if plan.state == PlanState::AwaitingApproval {
                RunState::AwaitingApproval
            } else {
                RunState::Running
            };
            self.move_to(next, "planned").await;
            return Ok(());
        };
        // A revision: after a rejection, or a person switched the mode.
        let old = self.host.plan(plan_id).await.map_err(|e| e.to_string())?;
        let comment = match (old.approval.status, old.approval.comment.clone()) {
            (ApprovalStatus::Rejected, Some(c)) => c,
            _ => format!("use the {} planner instead", mode.as_str()),
        };
        let planned = planner::plan(
            &self.caller,
            mode,
            &task,
            Some(Revision {
                plan: &old,
                comment: &comment,
            }),
        )
        .await
        .map_err(|e| format!("re-planning failed: {e}"))?;
        let mut ops: Vec<Op> = old
            .subtasks
            .iter()
            .map(|s| Op::DeleteSubtask { id: s.id })
            .collect();
        let spec = self.spec(&planned);
        ops.push(Op::UpdateInfo {
            patch: InfoPatch {
                title: Some(spec.title.clone()),
                mode: Some(mode),
                max_parallel: spec.max_parallel,
                max_subtasks: Some(spec.max_subtasks.unwrap_or(0)),
                ..InfoPatch::default()
            },
        });
        // New subtasks get ids from the plan's counter, in order.
        let first = old.next_subtask_id;
        for s in planned.subtasks {
            let dependencies = s
                .dependencies
                .iter()
                .map(|d| SubtaskId(first + d.0 - 1))
                .collect();
            ops.push(Op::AddSubtask {
                subtask: NewSubtask { dependencies, ..s },
                position: Default::default(),
                rewire_after: None,
                required_by: Vec::new(),
            });
        }
        if old.state == PlanState::Draft {
            ops.push(Op::Submit);
        }
        let plan = self
            .apply(ops)
            .await
            .map_err(|e| format!("the revised plan was refused: {e}"))?;
        self.run.round += 1;
        self.caller
            .log(RunEntry::PlanProposed {
                plan_id,
                round: self.run.round,
                subtasks: plan.subtasks.len(),
            })
            .await;
        let next = if plan.state == PlanState::AwaitingApproval {
            RunState::AwaitingApproval
        } else {
            RunState::Running
        };
        self.move_to(next, "re-planned").await;
        Ok(())
    }

    async fn await_approval(&mut self) -> Flow {
        let plan_id = self.plan_id()?;
        let mut plan = self.host.plan(plan_id).await.map_err(|e| e.to_string())?;
        loop {
            match plan.state {
                PlanState::Approved | PlanState::Running | PlanState::Paused => {
                    self.seen = Some(plan.clone());
                    self.move_to(RunState::Running, "approved").await;
                    return Ok(());
                }
                PlanState::Abandoned => {
                    self.move_to(RunState::Cancelled, "the plan was abandoned")
                        .await;
                    return Ok(());
                }
                PlanState::Done | PlanState::Failed => {
                    self.run.answer = plan.outcome.clone();
                    let to = if plan.state == PlanState::Done {
                        RunState::Running
                    } else {
                        RunState::Failed
                    };
                    self.move_to(to, "a person finished the plan").await;
                    return Ok(());
                }
                PlanState::Draft if plan.approval.status == ApprovalStatus::Rejected => {
                    let comment = plan.approval.comment.clone().unwrap_or_default();
                    self.caller
                        .log(RunEntry::Rejected {
                            comment: comment.clone(),
                            round: self.run.round,
                        })
                        .await;
                    if self.run.round > MAX_REVISIONS {
                        return Err(format!(
                            "the plan was rejected {} times; last comment: {comment}",
                            self.run.round
                        ));
                    }
                    self.move_to(RunState::Planning, "rejected: re-planning with the comment")
                        .await;
                    return Ok(());
                }
                PlanState::AwaitingApproval | PlanState::Draft
                    if plan.mode != self.mode() && plan.mode != Mode::Manual =>
                {
                    let decided = Classification {
                        mode: plan.mode,
                        reason: "a person switched the mode before approving".into(),
                        confidence: 1.0,
                        by: DecidedBy::Person,
                    };
                    self.caller.log(RunEntry::Classified(decided.clone())).await;
                    self.run.classification = Some(decided);
                    self.move_to(RunState::Planning, "mode switched: re-planning")
                        .await;
                    return Ok(());
                }
                _ => {}
            }
            plan = self
                .host
                .changed(plan_id, plan.version)
                .await
                .map_err(|e| e.to_string())?;
        }
    }

    /// Tells the run log (and later prompts) what others changed.
    async fn notice_people(&mut self, plan: &Plan) {
        let Some(before) = self.seen.replace(plan.clone()) else {
            return;
        };
        if before.version == plan.version {
            return;
        }
        let old: HashMap<SubtaskId, &plan_engine::Subtask> =
            before.subtasks.iter().map(|s| (s.id, s)).collect();
        let now: HashSet<SubtaskId> = plan.subtasks.iter().map(|s| s.id).collect();
        let mut changes = Vec::new();
        for s in &plan.subtasks {
            match old.get(&s.id) {
                None => changes.push(format!("added #{} {}", s.id.0, s.name)),
                Some(o) if o.name != s.name || o.description != s.description => {
                    changes.push(format!(
                        "edited #{} {}: {}",
                        s.id.0,
                        s.name,
                        cut(&s.description, 200)
                    ))
                }
                _ => {}
            }
        }
        for s in &before.subtasks {
            if !now.contains(&s.id) {
                changes.push(format!("deleted #{} {}", s.id.0, s.name));
            }
        }
        let order_before: Vec<SubtaskId> = before
            .subtasks
            .iter()
            .map(|s| s.id)
            .filter(|id| now.contains(id))
            .collect();
        let order_now: Vec<SubtaskId> = plan
            .subtasks
            .iter()
            .map(|s| s.id)
            .filter(|id| old.contains_key(id))
            .collect();
        if order_before != order_now {
            changes.push("reordered the subtasks".into());
        }
        if changes.is_empty() {
            return;
        }
        let summary = changes.join("; ");
        self.people.push(summary.clone());
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
        let budget = self.caller.budget.lock().expect("budget lock").clone();
        let spent = self.caller.spent();
        Duration::from_secs(budget.max_wall_secs)
            .saturating_sub(Duration::from_millis(spent.wall_ms))
    }

    async fn pause_for_budget(&mut self, why: String) -> Flow {
        self.caller
            .log(RunEntry::BudgetReached { what: why.clone() })
            .await;
        let body = format!("Budget reached: {why}. Raise the budget and resume the plan to go on.");
        let _ = self
            .apply(vec![
                Op::Pause,
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

    fn job(&self, plan: &Plan, id: SubtaskId) -> Job {
        Job {
            task: self.run.config.task.clone(),
            plan: plan.clone(),
            subtask: id,
            may_add: self.mode() != Mode::Simple,
            max_turns: self.caller.budget.lock().expect("budget lock").max_turns,
            people_changes: self.people.clone(),
        }
    }

    fn spawn(
        &self,
        set: &mut JoinSet<(SubtaskId, Outcome, Duration)>,
        plan: &Plan,
        id: SubtaskId,
    ) -> AbortHandle {
        let job = self.job(plan, id);
        let caller = self.caller.clone();
        let host = self.host.clone();
        let tools = self.tools.clone();
        set.spawn(async move {
            let started = Instant::now();
            let outcome = executor::execute(&caller, &*host, &tools, job).await;
            (id, outcome, started.elapsed())
        })
    }

    async fn execute(&mut self) -> Flow {
        let plan_id = self.plan_id()?;
        let mut set: JoinSet<(SubtaskId, Outcome, Duration)> = JoinSet::new();
        let mut inflight: HashMap<SubtaskId, AbortHandle> = HashMap::new();
        let mut last = Instant::now();
        loop {
            let plan = self.host.plan(plan_id).await.map_err(|e| e.to_string())?;
            self.notice_people(&plan).await;
            let gone: Vec<SubtaskId> = inflight
                .keys()
                .copied()
                .filter(|id| plan.subtask(*id).map(|s| s.state) != Some(SubtaskState::InProgress))
                .collect();
            for id in gone {
                if let Some(handle) = inflight.remove(&id) {
                    handle.abort();
                }
                let now = plan
                    .subtask(id)
                    .map_or("deleted".to_string(), |s| s.state.as_str().to_string());
                self.caller
                    .log(RunEntry::Overridden { subtask: id, now })
                    .await;
            }
            self.tick(&mut last);
            match plan.state {
                PlanState::Abandoned => {
                    set.abort_all();
                    self.move_to(
                        RunState::Cancelled,
                        plan.outcome
                            .clone()
                            .unwrap_or_else(|| "the plan was abandoned".into()),
                    )
                    .await;
                    return Ok(());
                }
                PlanState::Done => {
                    set.abort_all();
                    if self.run.answer.is_none() {
                        self.run.answer = plan.outcome.clone();
                    }
                    self.move_to(RunState::Done, "the plan is done").await;
                    return Ok(());
                }
                PlanState::Failed => {
                    set.abort_all();
                    self.move_to(
                        RunState::Failed,
                        plan.outcome
                            .clone()
                            .unwrap_or_else(|| "the plan failed".into()),
                    )
                    .await;
                    return Ok(());
                }
                PlanState::Paused => {
                    if self.run.state != RunState::Paused {
                        self.move_to(RunState::Paused, "a person paused the plan")
                            .await;
                    }
                }
                PlanState::Approved | PlanState::Running => {
                    let work = !plan.ready().is_empty() || !plan.in_progress().is_empty();
                    if self.run.state == RunState::Paused && (!self.stuck || work) {
                        self.stuck = false;
                        self.move_to(RunState::Running, "resumed").await;
                    }
                }
                PlanState::Draft | PlanState::AwaitingApproval => {
                    set.abort_all();
                    inflight.clear();
                    self.move_to(RunState::Failed, "the plan went back to approval mid-run")
                        .await;
                    return Ok(());
                }
            }
            if self.run.state == RunState::Running {
                if let Some(why) = {
                    let budget = self.caller.budget.lock().expect("budget lock").clone();
                    self.caller.spent().reached(&budget)
                } {
                    self.pause_for_budget(why).await?;
                    continue;
                }
                // Work in progress that nobody does: after a restart, or a
                // person started it.
                for id in plan.in_progress() {
                    if let std::collections::hash_map::Entry::Vacant(slot) = inflight.entry(id) {
                        slot.insert(self.spawn(&mut set, &plan, id));
                    }
                }
                let limit = plan.max_parallel.unwrap_or(1).max(1) as usize;
                let barrier = self.mode() == Mode::Complex;
                if inflight.len() < limit
                    && (!barrier || inflight.is_empty())
                    && !plan.ready().is_empty()
                {
                    if barrier && self.step_failed {
                        self.step_failed = false;
                        self.adapt(&plan).await?;
                        continue;
                    }
                    let after = self
                        .apply(vec![Op::StartNext {
                            count: limit - inflight.len(),
                        }])
                        .await
                        .map_err(|e| format!("starting subtasks failed: {e}"))?;
                    for id in after.in_progress() {
                        if let std::collections::hash_map::Entry::Vacant(slot) = inflight.entry(id)
                        {
                            slot.insert(self.spawn(&mut set, &after, id));
                        }
                    }
                    continue;
                }
                if inflight.is_empty() && plan.ready().is_empty() {
                    if self.finish_if_settled(&plan).await? {
                        return Ok(());
                    }
                    if plan.count(SubtaskState::Blocked) == 0 {
                        self.stuck = true;
                        let why = stuck_reason(&plan);
                        self.move_to(RunState::Paused, why).await;
                    }
                }
            }
            let wall = self.wall_left();
            let running = self.run.state == RunState::Running;
            tokio::select! {
                Some(joined) = set.join_next(), if !set.is_empty() => {
                    if let Ok((id, outcome, took)) = joined {
                        if inflight.remove(&id).is_some() {
                            self.settle(id, outcome, took).await?;
                        }
                    }
                }
                changed = self.host.changed(plan_id, plan.version) => {
                    changed.map_err(|e| e.to_string())?;
                }
                _ = tokio::time::sleep(wall), if running => {}
            }
        }
    }

    /// Records a subtask's outcome on the plan.
    async fn settle(&mut self, id: SubtaskId, outcome: Outcome, took: Duration) -> Flow {
        let (ops, ok, text) = match &outcome {
            Outcome::Done(result) => (
                vec![Op::SetSubtaskState {
                    id,
                    state: SubtaskState::Done,
                    note: Some(cut(result, 7_900)),
                    start_next: false,
                }],
                true,
                result.clone(),
            ),
            Outcome::Failed(reason) => {
                self.step_failed = true;
                (
                    vec![Op::SetSubtaskState {
                        id,
                        state: SubtaskState::Failed,
                        note: Some(cut(reason, 7_900)),
                        start_next: false,
                    }],
                    false,
                    reason.clone(),
                )
            }
            Outcome::Asked(question) => {
                self.caller
                    .log(RunEntry::Asked {
                        subtask: id,
                        question: question.clone(),
                    })
                    .await;
                (
                    vec![
                        Op::SetSubtaskState {
                            id,
                            state: SubtaskState::Blocked,
                            note: Some(cut(&format!("waiting for an answer: {question}"), 3_900)),
                            start_next: false,
                        },
                        Op::Comment {
                            subtask: Some(id),
                            body: cut(&format!("Question: {question}"), 3_900),
                        },
                    ],
                    false,
                    String::new(),
                )
            }
            Outcome::Budget(why) => {
                let _ = self
                    .apply(vec![Op::SetSubtaskState {
                        id,
                        state: SubtaskState::Todo,
                        note: Some("released: the run's budget is used up".into()),
                        start_next: false,
                    }])
                    .await;
                return self.pause_for_budget(why.clone()).await;
            }
        };
        match self.apply(ops).await {
            Ok(_) => {}
            Err(HostError::Refused(_)) | Err(HostError::NotFound(_)) => {
                let now = self
                    .host
                    .plan(self.plan_id()?)
                    .await
                    .ok()
                    .and_then(|p| p.subtask(id).map(|s| s.state.as_str().to_string()))
                    .unwrap_or_else(|| "deleted".into());
                self.caller
                    .log(RunEntry::Overridden { subtask: id, now })
                    .await;
                return Ok(());
            }
            Err(e) => return Err(e.to_string()),
        }
        if !text.is_empty() || ok {
            self.caller
                .log(RunEntry::SubtaskResult {
                    subtask: id,
                    ok,
                    text: cut(&text, 2_000),
                    duration_ms: took.as_millis() as u64,
                })
                .await;
        }
        self.save().await;
        if ok && self.mode() == Mode::Emergent {
            self.update_todos(&text).await?;
        }
        Ok(())
    }

    fn listing(plan: &Plan) -> String {
        plan.subtasks
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. [{}] {}", i + 1, s.state.as_str(), s.name))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Seed 004's `_update_todo_list`, with compaction near the cap.
    async fn update_todos(&mut self, last_result: &str) -> Flow {
        let plan = self
            .host
            .plan(self.plan_id()?)
            .await
            .map_err(|e| e.to_string())?;
        let compact = plan.subtasks.len() >= COMPACT_AT;
        let mut system = prompts::UPDATE.to_string();
        if compact {
            system.push('\n');
            system.push_str(prompts::COMPACT);
        }
        let user = format!(
            "Task: {}\nLast result: {}\nTODO list ({} of at most {}):\n{}\n{}",
            self.run.config.task,
            cut(last_result, 500),
            plan.subtasks.len(),
            EMERGENT_CAP,
            Self::listing(&plan),
            prompts::LANGUAGE
        );
        let answer: UpdateAnswer = match self
            .caller
            .json(
                CallRole::Adapter,
                "todo_update",
                vec![Message::system(system), Message::user(user)],
                600,
                None,
            )
            .await
        {
            Ok(a) => a,
            Err(CallError::Budget(why)) => return self.pause_for_budget(why).await,
            Err(e) => {
                tracing::info!("run {}: the TODO update was skipped: {e}", self.run.id);
                return Ok(());
            }
        };
        let mut ops = self.drops(&plan, &answer.drop, &answer.reason);
        if answer.needs_update && !compact {
            for todo in &answer.new_todos {
                let dependencies = todo
                    .depends_on
                    .iter()
                    .filter_map(|p| {
                        plan.subtasks
                            .get((*p as usize).checked_sub(1)?)
                            .map(|s| s.id)
                    })
                    .collect();
                ops.push(Op::AddSubtask {
                    subtask: planner::subtask_of(todo, dependencies),
                    position: Default::default(),
                    rewire_after: None,
                    required_by: Vec::new(),
                });
            }
        }
        self.adjust(ops, answer.reason).await
    }

    /// Unstarted subtasks at these 1-based positions, skipped with `reason`.
    fn drops(&self, plan: &Plan, positions: &[u32], reason: &str) -> Vec<Op> {
        positions
            .iter()
            .filter_map(|p| plan.subtasks.get((*p as usize).checked_sub(1)?))
            .filter(|s| s.state == SubtaskState::Todo)
            .map(|s| Op::SetSubtaskState {
                id: s.id,
                state: SubtaskState::Skipped,
                note: Some(cut(&format!("dropped by the planner: {reason}"), 3_900)),
                start_next: false,
            })
            .collect()
    }

    async fn adjust(&mut self, ops: Vec<Op>, reason: String) -> Flow {
        if ops.is_empty() {
            return Ok(());
        }
        let changes = ops.len();
        match self.apply(ops).await {
            Ok(_) => {
                self.caller
                    .log(RunEntry::PlanAdjusted { reason, changes })
                    .await;
            }
            Err(e) => {
                self.caller
                    .log(RunEntry::PlanAdjusted {
                        reason: format!("refused by the plan: {e}"),
                        changes: 0,
                    })
                    .await;
            }
        }
        Ok(())
    }

    /// Seed 004's adaptation between super-steps.
    async fn adapt(&mut self, plan: &Plan) -> Flow {
        if plan.count(SubtaskState::Todo) == 0 {
            return Ok(());
        }
        let results: Vec<String> = plan
            .subtasks
            .iter()
            .filter(|s| s.state.is_settled() || s.state == SubtaskState::Failed)
            .rev()
            .take(10)
            .map(|s| {
                format!(
                    "- {} [{}]: {}",
                    s.name,
                    s.state.as_str(),
                    cut(s.outcome.as_deref().unwrap_or(""), 300)
                )
            })
            .collect();
        let user = format!(
            "Task: {}\nPlan:\n{}\nRecent results:\n{}",
            self.run.config.task,
            Self::listing(plan),
            results.join("\n")
        );
        let answer: AdaptAnswer = match self
            .caller
            .json(
                CallRole::Adapter,
                "adapt",
                vec![Message::system(prompts::ADAPT), Message::user(user)],
                600,
                None,
            )
            .await
        {
            Ok(a) => a,
            Err(CallError::Budget(why)) => return self.pause_for_budget(why).await,
            Err(_) => return Ok(()),
        };
        if !answer.needs_change {
            return Ok(());
        }
        let mut ops = self.drops(plan, &answer.drop, &answer.reason);
        for r in &answer.revise {
            let Some(s) = plan.subtasks.get((r.position as usize).saturating_sub(1)) else {
                continue;
            };
            if s.state == SubtaskState::Todo && r.position > 0 {
                ops.push(Op::EditSubtask {
                    id: s.id,
                    patch: SubtaskPatch {
                        description: Some(r.description.clone()),
                        ..SubtaskPatch::default()
                    },
                });
            }
        }
        self.adjust(ops, answer.reason).await
    }

    /// Compiles the answer and finishes the plan when everything is done
    /// or skipped. Emergent TODOs that can never start are skipped first.
    async fn finish_if_settled(&mut self, plan: &Plan) -> Result<bool, String> {
        let mut plan = plan.clone();
        if self.mode() == Mode::Emergent {
            let unreachable: Vec<Op> = plan
                .subtasks
                .iter()
                .filter(|s| s.state == SubtaskState::Todo)
                .map(|s| Op::SetSubtaskState {
                    id: s.id,
                    state: SubtaskState::Skipped,
                    note: Some("unreachable: a TODO it depends on did not finish".into()),
                    start_next: false,
                })
                .collect();
            if !unreachable.is_empty() && plan.count(SubtaskState::Failed) == 0 {
                plan = self.apply(unreachable).await.map_err(|e| e.to_string())?;
            }
        }
        let settled = plan.count(SubtaskState::Done) + plan.count(SubtaskState::Skipped);
        if settled < plan.subtasks.len() || plan.subtasks.is_empty() {
            return Ok(false);
        }
        let answer = self.compile(&plan).await?;
        self.apply(vec![Op::Finish {
            state: PlanState::Done,
            outcome: cut(&answer, 7_900),
        }])
        .await
        .map_err(|e| format!("finishing the plan failed: {e}"))?;
        self.caller
            .log(RunEntry::Answer {
                text: answer.clone(),
            })
            .await;
        self.run.answer = Some(answer);
        self.move_to(RunState::Done, "every subtask is done").await;
        Ok(true)
    }

    async fn compile(&mut self, plan: &Plan) -> Result<String, String> {
        let mut results = String::new();
        for s in plan
            .subtasks
            .iter()
            .filter(|s| s.state == SubtaskState::Done)
        {
            let line = format!(
                "## {}\n{}\n\n",
                s.name,
                cut(s.outcome.as_deref().unwrap_or(""), COMPILE_EACH)
            );
            if results.len() + line.len() > COMPILE_ALL {
                results.push_str("(more results not shown)\n");
                break;
            }
            results.push_str(&line);
        }
        let messages = vec![
            Message::system(prompts::COMPILER),
            Message::user(format!(
                "Task: {}\n\nResults:\n{results}\n{}",
                self.run.config.task,
                prompts::LANGUAGE
            )),
        ];
        match self
            .caller
            .text(CallRole::Compiler, messages, 900, None)
            .await
        {
            Ok(answer) if !answer.is_empty() => Ok(answer),
            // The results are the answer when the model cannot write one.
            Ok(_) | Err(_) => Ok(results.trim().to_string()),
        }
    }
}

fn stuck_reason(plan: &Plan) -> String {
    let failed: Vec<String> = plan
        .subtasks
        .iter()
        .filter(|s| s.state == SubtaskState::Failed)
        .take(3)
        .map(|s| {
            format!(
                "#{} {} failed ({})",
                s.id.0,
                s.name,
                cut(s.outcome.as_deref().unwrap_or(""), 120)
            )
        })
        .collect();
    if failed.is_empty() {
        "stuck: no subtask can start; check the dependencies".into()
    } else {
        format!(
            "stuck: {}; retry or skip it, or cancel the run",
            failed.join("; ")
        )
    }
}
