//! The work: starting ready subtasks, following people's moves, settling
//! outcomes on the plan.

use super::adjust::Finished;
use super::recover::Again;
use super::*;

/// A subtask's job as it ends: its id, its outcome and how long it took.
type Joined = (SubtaskId, Outcome, Duration);

/// The subtasks in flight; `None` for a job that panicked, `Aborted` for
/// one a person's move cancelled.
pub(super) type Jobs = FuturesUnordered<BoxFuture<'static, Result<Option<Joined>, Aborted>>>;

/// A spawned job, aborted when its entry in [`Jobs`] is dropped (the
/// subtask was moved, or the run ended).
struct Spawned(tokio::task::JoinHandle<Joined>);

impl Drop for Spawned {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Driver {
    pub(super) fn job(&self, plan: &Arc<Plan>, id: SubtaskId) -> Job {
        Job {
            task: self.run.config.task_for_model(),
            said: self.run.config.task.clone(),
            plan: plan.clone(),
            subtask: id,
            // A run over a list in batches: the batch planner owns the
            // plan (each subtask covers its items), and a question per
            // item would stop the list at every step; an item that cannot
            // be done fails and is rescheduled. (Qwen2.5-1.5B asked on 2
            // of its first 3 items, and added 35 subtasks, with them.)
            offered: crate::protocol::Actions {
                add_subtask: self.mode() != Mode::Simple
                    && !self.batching()
                    && self.steps_may_add(plan),
                ask: !self.batching(),
            },
            max_turns: self.caller.budget().max_turns,
            people_changes: self.people.clone(),
            earlier_failures: self.run.failures_of(id),
            taught: self.taught_for_step(plan, id),
            written: crate::rules::on(&crate::rules::WORDS_WRITTEN_WHOLE) && self.run.in_words(),
            // Decided with the classification, never again here: the
            // rule switched off since, or new inputs, leave it as it was.
            material: self.material(),
            inputs: self.run.config.inputs.clone(),
        }
    }

    /// The given files the written answer is about: decided with the
    /// classification, so a rule switched off since changes nothing. A run
    /// classified before the classification kept them (answered in words
    /// with files given, which only the rule `given_texts_written_about`
    /// does, and no files kept) has them found again, as it had then.
    fn material(&self) -> Vec<String> {
        let inputs = &self.run.config.inputs;
        match &self.run.classification {
            Some(c) if c.in_words && c.about.is_empty() && !inputs.is_empty() => {
                crate::roles::classify::written_about(&self.run.config.task, inputs)
                    .map(|about| about.into_iter().map(|f| f.path.clone()).collect())
                    .unwrap_or_default()
            }
            Some(c) if c.in_words => c.about.clone(),
            _ => Vec::new(),
        }
    }

    /// Whether an executor may still add a subtask: the plan is smaller
    /// than the adaptation budget lets it grow (the approved size and as
    /// many again, at least [`run_model::adaptation::MIN_ADDED`]; an
    /// emergent list up to its cap). Each attempt adds at most one, so
    /// the plan ends at most `max_parallel - 1` past it. (Qwen2.5-1.5B's
    /// executors each added "calculate_north_region_revenue", whose
    /// executors added it again: 28 subtasks from a plan of 2 in 5
    /// minutes.)
    fn steps_may_add(&self, plan: &Plan) -> bool {
        plan.subtasks().len() < self.run.adaptation.most_subtasks()
    }

    /// Starts the adaptation budget from the plan's size when its subtasks
    /// first run, in the modes whose executors may add subtasks: stored
    /// with the run, so a restart keeps the approved size.
    fn start_budget(&mut self, plan: &Plan) {
        let floor = match self.mode() {
            Mode::Emergent => EMERGENT_CAP,
            Mode::Complex => run_model::adaptation::MIN_ADDED,
            _ => return,
        };
        if !self.batching() {
            self.run.adaptation.start(plan.subtasks().len(), floor);
        }
    }

    /// Starts subtask `id`'s job (after `wait`, another attempt's
    /// backoff). `alone`: the run does one subtask at a time, so the job is
    /// polled on the coordinator's own task, which waits for nothing else
    /// meanwhile; a spawned task's start and its wake-up of the coordinator
    /// were most of a step's cost (`cargo bench -p server --bench agent`,
    /// chains of 10: p50 0.25 → 0.14 ms). A run that works in parallel
    /// spawns its jobs, so a long call of the coordinator (a recovery, an
    /// emergent list's update) holds none of them up. A job that panics
    /// ends as no outcome either way, as a spawned task's did.
    pub(super) fn spawn(
        &self,
        set: &mut Jobs,
        plan: &Arc<Plan>,
        id: SubtaskId,
        wait: Duration,
    ) -> AbortHandle {
        let job = self.job(plan, id);
        let caller = self.caller.clone();
        let host = self.host.clone();
        let tools = self.tools.clone();
        let work = async move {
            // Another attempt's backoff: the subtask stays in progress
            // meanwhile, so a person who moves it aborts the wait too.
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            let started = Instant::now();
            let outcome = executor::execute(&caller, &*host, &tools, job).await;
            (id, outcome, started.elapsed())
        };
        let alone = plan.max_parallel().unwrap_or(1) <= 1;
        let job: BoxFuture<'static, Option<Joined>> = if alone {
            std::panic::AssertUnwindSafe(work)
                .catch_unwind()
                .map(Result::ok)
                .boxed()
        } else {
            let task = Spawned(tokio::spawn(work));
            async move {
                let mut task = task;
                (&mut task.0).await.ok()
            }
            .boxed()
        };
        let (handle, registration) = AbortHandle::new_pair();
        set.push(Abortable::new(job, registration).boxed());
        handle
    }

    pub(super) async fn execute(&mut self) -> Flow {
        let plan_id = self.plan_id()?;
        let mut set = Jobs::new();
        let mut inflight: HashMap<SubtaskId, AbortHandle> = HashMap::new();
        let mut last = Instant::now();
        // What people taught reaches the executors (once: a run resumed
        // after a restart recalls here).
        self.recall_once().await;
        loop {
            // The plan as last seen, unless it has moved on since.
            let current = self.host.version(plan_id).await.ok();
            let plan = match &self.seen {
                Some(seen) if current == Some(seen.version()) => seen.clone(),
                _ => Arc::new(self.host.plan(plan_id).await?),
            };
            self.start_budget(&plan);
            self.notice_people(&plan).await;
            // A batch added to the plan just before a restart becomes the
            // current batch before any of it runs (it is no-op otherwise).
            self.adopt_opening(&plan).await;
            let gone: Vec<SubtaskId> = inflight
                .keys()
                .copied()
                .filter(|id| plan.subtask(*id).map(|s| s.state()) != Some(SubtaskState::InProgress))
                .collect();
            for id in gone {
                if let Some(handle) = inflight.remove(&id) {
                    handle.abort();
                }
                let now = plan.subtask(id).map(|s| s.state());
                self.caller
                    .log(RunEntry::Overridden { subtask: id, now })
                    .await;
            }
            self.tick(&mut last);
            match plan.state() {
                PlanState::Abandoned => {
                    set.clear();
                    self.move_to(
                        RunState::Cancelled,
                        plan.outcome().unwrap_or("the plan was abandoned"),
                    )
                    .await;
                    return Ok(());
                }
                PlanState::Done => {
                    set.clear();
                    if self.run.answer.is_none() {
                        self.run.answer = plan.outcome().map(str::to_string);
                    }
                    self.move_to(RunState::Done, "the plan is done").await;
                    return Ok(());
                }
                PlanState::Failed => {
                    set.clear();
                    self.move_to(
                        RunState::Failed,
                        plan.outcome().unwrap_or("the plan failed"),
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
                    self.reapproved(&plan);
                    let work = !plan.ready().is_empty() || !plan.in_progress().is_empty();
                    // A stuck run goes on once people dealt with what
                    // failed: retried, there is work again; skipped, maybe
                    // nothing is left but to finish.
                    let settled = plan
                        .subtasks()
                        .iter()
                        .all(|s| matches!(s.state(), SubtaskState::Done | SubtaskState::Skipped));
                    if self.run.state == RunState::Paused && (!self.stuck || work || settled) {
                        self.stuck = false;
                        self.move_to(RunState::Running, "resumed").await;
                    }
                }
                PlanState::Draft | PlanState::AwaitingApproval => {
                    set.clear();
                    inflight.clear();
                    self.move_to(RunState::Failed, "the plan went back to approval mid-run")
                        .await;
                    return Ok(());
                }
            }
            if self.run.state == RunState::Running {
                if let Some(why) = self.crashed.take() {
                    self.pause_for_crash(why).await?;
                    continue;
                }
                if let Some(why) = self.caller.budget_reached() {
                    self.pause_for_budget(why).await?;
                    continue;
                }
                // The approved plan is the contract: one that drifted
                // waits for a person to approve it again.
                self.baseline(&plan);
                if self.check_drift(&plan).await? {
                    continue;
                }
                // Work in progress that nobody does: after a restart, or a
                // person started it.
                for id in plan.in_progress() {
                    if let std::collections::hash_map::Entry::Vacant(slot) = inflight.entry(id) {
                        slot.insert(self.spawn(&mut set, &plan, id, Duration::ZERO));
                    }
                }
                let limit = plan.max_parallel().unwrap_or(1).max(1) as usize;
                let barrier = self.mode() == Mode::Complex;
                if inflight.len() < limit
                    && (!barrier || inflight.is_empty())
                    && !plan.ready().is_empty()
                {
                    if barrier && self.adapt_due && !self.batching() {
                        self.adapt_due = false;
                        self.adapt(&plan).await?;
                        continue;
                    }
                    let after = self
                        .apply(vec![Op::StartNext {
                            count: limit - inflight.len(),
                        }])
                        .await
                        .map_err(RunFailure::Starting)?;
                    for id in after.in_progress() {
                        if let std::collections::hash_map::Entry::Vacant(slot) = inflight.entry(id)
                        {
                            slot.insert(self.spawn(&mut set, &after, id, Duration::ZERO));
                        }
                    }
                    continue;
                }
                if inflight.is_empty() && plan.ready().is_empty() {
                    // The last super-step fell short: adapt may add work
                    // before the plan is called done.
                    if barrier && self.adapt_due && !self.batching() {
                        self.adapt_due = false;
                        self.adapt(&plan).await?;
                        continue;
                    }
                    // A run in batches: the next batch, once this one
                    // settled (the batch planner adapts instead).
                    if self.next_batch(&plan).await? {
                        continue;
                    }
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
                Some(joined) = set.next(), if !set.is_empty() => {
                    if let Ok(Some((id, outcome, took))) = joined {
                        if inflight.remove(&id).is_some() {
                            let again = match &outcome {
                                // A batch's failed attempt: its items go to a
                                // later batch (a failure of the model itself,
                                // `again: false`, goes to a person as anywhere).
                                Outcome::Failed { reason, again: true } if self.in_batch(id) => {
                                    self.reschedule(id, reason).await?;
                                    Again::Handled
                                }
                                Outcome::Failed { reason, again: true } => {
                                    self.try_again(id, reason).await?
                                }
                                _ => Again::No,
                            };
                            match again {
                                Again::After(wait) => {
                                    let plan = Arc::new(self.host.plan(plan_id).await?);
                                    inflight.insert(id, self.spawn(&mut set, &plan, id, wait));
                                }
                                Again::Handled => {}
                                Again::No => {
                                    let step_over = inflight.is_empty();
                                    self.settle(id, outcome, took, step_over).await?;
                                }
                            }
                        }
                    }
                }
                changed = self.host.changed(plan_id, plan.version()) => {
                    changed?;
                }
                _ = tokio::time::sleep(wall), if running => {}
            }
        }
    }

    /// Records a subtask's outcome on the plan. `step_over`: nothing else
    /// is in flight, so in complex mode this ends the super-step.
    pub(super) async fn settle(
        &mut self,
        id: SubtaskId,
        outcome: Outcome,
        took: Duration,
        step_over: bool,
    ) -> Flow {
        let (ops, ok, text) = match &outcome {
            Outcome::Done { result, short_of } => {
                // Seed 004: a result short of its expected outcome is
                // what the adapt step after the super-step is paid for.
                let note = match short_of {
                    Some(missing) => {
                        // A gap buys an adapt round once, and only when it
                        // names what is missing (run_model::Adaptation).
                        match self.run.adaptation.gap(missing) {
                            run_model::Gap::New => self.adapt_due = true,
                            run_model::Gap::Vague | run_model::Gap::Repeated => {}
                        }
                        format!(
                            "{}\n\nShort of the expected outcome: {}",
                            cut(result, 7_000),
                            cut(missing, 500)
                        )
                    }
                    None => cut_within(result, plan_engine::model::limits::TEXT),
                };
                let done = Op::SetSubtaskState {
                    id,
                    state: SubtaskState::Done,
                    note: Some(note),
                    // One at a time: the same commit starts the next ready
                    // subtask, which the loop then takes up — in simple
                    // mode. An emergent list is updated first (seed 004:
                    // the update may revise or block the next TODO), and
                    // the loop starts what is ready after it.
                    start_next: self.mode() == Mode::Simple && !self.pausing(),
                };
                // Seed 004 as written: review the plan after every
                // super-step, when the run asks for it.
                if step_over && self.mode() == Mode::Complex && self.run.config.adapt_every_step {
                    self.adapt_due = true;
                }
                let mut ops = vec![done];
                if let Some(next) = self.next_step_with(id, step_over) {
                    ops.push(next);
                }
                (ops, true, result.clone())
            }
            Outcome::Failed { reason, .. } => {
                self.adapt_due = true;
                // A person decides now; their retry gives the agent its
                // attempts again.
                let record = self.run.attempts_of(id);
                record.failed = 0;
                record.recovered = false;
                (
                    vec![Op::SetSubtaskState {
                        id,
                        state: SubtaskState::Failed,
                        note: Some(cut_within(reason, plan_engine::model::limits::TEXT)),
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
                            note: Some(cut(
                                &format!("{}{question}", plan_engine::model::QUESTION_NOTE),
                                executor::OWN_TEXT,
                            )),
                            start_next: false,
                        },
                        Op::Comment {
                            subtask: Some(id),
                            body: cut_within(
                                &format!("Question: {question}"),
                                plan_engine::model::limits::COMMENT,
                            ),
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
            Outcome::Stopped(why) => {
                let _ = self
                    .apply(vec![Op::SetSubtaskState {
                        id,
                        state: SubtaskState::Todo,
                        note: Some(
                            "released: the replay stopped at a call its recording does not hold"
                                .into(),
                        ),
                        start_next: false,
                    }])
                    .await;
                return self.pause_for_replay(why.clone()).await;
            }
        };
        let mut applied = self.apply(ops.clone()).await;
        if ops.len() > 1 && matches!(applied, Err(HostError::Refused(_))) {
            // The next step's start was judged on a plan people have
            // changed since: settle alone; the loop starts what is ready.
            applied = self.apply(ops[..1].to_vec()).await;
        }
        if !self.landed(id, applied).await? {
            return Ok(());
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
        self.save_now_and_then().await;
        // Seed 004 updates the list after every result; a TODO that failed
        // for good is one too (a way around it may be added).
        if self.mode() == Mode::Emergent {
            if ok {
                self.update_todos(Finished::Done(&text)).await?;
            } else if matches!(outcome, Outcome::Failed { .. }) {
                self.update_todos(Finished::Failed { id, reason: &text })
                    .await?;
            }
        }
        Ok(())
    }

    /// Whether a subtask's outcome landed on the plan. A person who moved
    /// the subtask meanwhile makes the engine refuse it: that is logged
    /// as `overridden` and is no failure of the run (`false`); any other
    /// failure of the host is.
    pub(super) async fn landed(
        &mut self,
        id: SubtaskId,
        applied: Result<Arc<Plan>, HostError>,
    ) -> Result<bool, RunFailure> {
        match applied {
            Ok(_) => Ok(true),
            Err(HostError::Refused(_)) | Err(HostError::NotFound(_)) => {
                let now = self
                    .host
                    .plan(self.plan_id()?)
                    .await
                    .ok()
                    .and_then(|p| p.subtask(id).map(|s| s.state()));
                self.caller
                    .log(RunEntry::Overridden { subtask: id, now })
                    .await;
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// In complex mode, the start of the next super-step, to commit with
    /// the subtask that ends this one (one write instead of two): only when
    /// the loop would start it anyway (nothing failed this step, so no
    /// adaptation is due; not pausing) and something is ready after `id`
    /// on the plan as last seen (a refusal falls back to `id` alone).
    fn next_step_with(&self, id: SubtaskId, step_over: bool) -> Option<Op> {
        if self.mode() != Mode::Complex || !step_over || self.adapt_due || self.pausing() {
            return None;
        }
        let seen = self.seen.as_ref()?;
        if seen.subtask(id).map(|s| s.state()) != Some(SubtaskState::InProgress)
            || seen.in_progress().len() != 1
        {
            return None;
        }
        seen.next_ready_after(id)?;
        let count = seen.max_parallel().unwrap_or(1).max(1) as usize;
        Some(Op::StartNext { count })
    }
}

fn stuck_reason(plan: &Plan) -> String {
    let failed: Vec<String> = plan
        .subtasks()
        .iter()
        .filter(|s| s.state() == SubtaskState::Failed)
        .take(3)
        .map(|s| {
            format!(
                "#{} {} failed ({})",
                s.id().0,
                s.name(),
                cut(s.outcome().unwrap_or(""), 120)
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
