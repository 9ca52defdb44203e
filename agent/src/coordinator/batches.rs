//! Seed 002's iterative batches: a run over a large input plans a batch of
//! items at a time (`RunConfig::batches`). The first batch is the plan a
//! person approves; each later one is planned when the last has settled,
//! from the run's counts and the last batch's summary, the failed items
//! first (`rescheduleFailedTasks`), until every item is done or has failed
//! `max_attempts` times.
//!
//! Where the iteration stands is on the run's row ([`BatchProgress`]), so
//! a restart goes on from the last batch. The subtasks of a batch are
//! written to the row (`opening`) before they are added to the plan: a
//! restart in between finds them on the plan by name instead of adding
//! them twice.
//!
//! A failed attempt at a batch's subtask is not tried again in place (nor
//! handed to the recovery planner): the subtask is skipped with the reason
//! and its items wait for the next batch, whose planner reads why.

use super::*;
use crate::roles::batch_planner::{self, BatchAsk};
use run_model::{BatchInput, BatchProgress, BatchSlot, BatchSummary};

/// How a batch is added to the plan.
pub(super) enum Opened {
    /// On the plan.
    Added(Arc<Plan>),
    /// Nothing left to plan.
    Nothing,
    /// A budget ran out while planning (the run is paused).
    Paused,
}

impl Driver {
    pub(super) fn batching(&self) -> bool {
        self.run.config.batches.is_some()
    }

    /// The input file's path, as the person named it.
    fn input_path(&self) -> String {
        self.run
            .config
            .batches
            .as_ref()
            .map(|b| b.input.clone())
            .unwrap_or_default()
    }

    /// The input's items, read once per drive.
    async fn batch_input(&mut self) -> Result<Arc<BatchInput>, RunFailure> {
        if let Some(input) = &self.input {
            return Ok(input.clone());
        }
        let path = self.input_path();
        let bytes = self.host.input(self.run.id, &path).await?;
        let input = Arc::new(BatchInput::parse(&path, &bytes)?);
        self.input = Some(input.clone());
        Ok(input)
    }

    /// The first batch, as the plan a person approves (again after a
    /// rejection, with the comment: the count starts over).
    pub(super) async fn plan_first_batch(&mut self, old: &Plan, comment: Option<String>) -> Flow {
        let input = self.batch_input().await?;
        self.run.batches = Some(BatchProgress::new(input.items.len()));
        let mut ops: Vec<Op> = old
            .subtasks()
            .iter()
            .map(|s| Op::DeleteSubtask { id: s.id() })
            .collect();
        let title = self.run.config.task.lines().next().unwrap_or_default();
        ops.push(Op::UpdateInfo {
            patch: InfoPatch {
                title: Some(cut(title.trim(), 190)),
                mode: Some(Mode::Complex),
                max_parallel: Some(self.run.config.max_parallel.max(1)),
                max_subtasks: Some(0),
                ..InfoPatch::default()
            },
        });
        let submit = old.state() == PlanState::Draft;
        let opened = self
            .open_batch(old, ops, submit, comment.as_deref())
            .await?;
        let plan = match opened {
            Opened::Added(plan) => plan,
            Opened::Paused => return Ok(()),
            Opened::Nothing => {
                return Err(run_model::BatchInputError::Empty(self.input_path()).into())
            }
        };
        self.proposed(&plan, "planned the first batch").await;
        Ok(())
    }

    /// Plans the next batch and adds it to the plan after `before` (the
    /// ops in `first`, then the subtasks, then a submit when asked), one
    /// change. The row says what is being added before the plan changes.
    async fn open_batch(
        &mut self,
        plan: &Plan,
        first: Vec<Op>,
        submit: bool,
        comment: Option<&str>,
    ) -> Result<Opened, RunFailure> {
        let input = self.batch_input().await?;
        let size = self.run.config.batches.as_ref().map_or(5, |b| b.size);
        let Some(progress) = self.run.batches.clone() else {
            return Ok(Opened::Nothing);
        };
        let items = progress.next_items(size);
        if items.is_empty() {
            return Ok(Opened::Nothing);
        }
        let path = self.input_path();
        let tools = self.tools.specs();
        // Each batch is planned as the first plan is: with what the run
        // recalled (the batch's planner decides how items are done).
        let memory = self.recalled().await;
        let ask = BatchAsk {
            task: &self.run.config.task,
            path: &path,
            input: &input,
            progress: &progress,
            items: &items,
            tools: &tools,
            comment,
            memory: &memory,
        };
        let planned = match batch_planner::plan_batch(&self.caller, &ask).await {
            Ok(planned) => planned,
            Err(CallError::Budget(why)) => {
                self.pause_for_budget(why).await?;
                return Ok(Opened::Paused);
            }
            Err(e) => return Err(RunFailure::Planning(e)),
        };
        if !planned.repairs.is_empty() {
            self.caller
                .log(RunEntry::PlanRepaired {
                    repairs: planned.repairs.clone(),
                })
                .await;
        }
        let retried = items
            .iter()
            .filter(|n| progress.failures_of(**n).is_some())
            .count();
        let mut ops = first;
        let (mut names, mut covered) = (Vec::new(), Vec::new());
        for (subtask, items) in planned.subtasks {
            names.push(subtask.name.clone());
            covered.push(items);
            ops.push(Op::AddSubtask {
                subtask,
                position: Default::default(),
                rewire_after: None,
                required_by: Vec::new(),
            });
        }
        if submit {
            ops.push(Op::Submit {});
        }
        if let Some(p) = self.run.batches.as_mut() {
            p.opening = Some(run_model::batch::Opening {
                from: plan.next_subtask_id(),
                names,
                items: covered.clone(),
            });
        }
        self.save().await;
        let after = match self.apply(ops).await {
            Ok(after) => after,
            Err(_) if self.abandoned().await => {
                self.move_to(
                    RunState::Cancelled,
                    "the plan was abandoned while a batch was planned",
                )
                .await;
                return Ok(Opened::Paused);
            }
            Err(e) => return Err(RunFailure::PlanRefused(e)),
        };
        // The change is one commit, applied last: its new subtasks hold
        // the plan's last ids, in order.
        let n = covered.len() as u32;
        let first_id = after.next_subtask_id() - n;
        let slots = covered
            .into_iter()
            .enumerate()
            .map(|(i, items)| BatchSlot {
                subtask: SubtaskId(first_id + i as u32),
                items,
                failed: false,
            })
            .collect();
        self.opened(&items, slots, retried).await;
        Ok(Opened::Added(after))
    }

    async fn opened(&mut self, items: &[u32], slots: Vec<BatchSlot>, retried: usize) {
        let subtasks = slots.len();
        let Some(progress) = self.run.batches.as_mut() else {
            return;
        };
        progress.opened(items, slots);
        let batch = progress.batch;
        self.save().await;
        self.caller
            .log(RunEntry::BatchPlanned {
                batch,
                retried,
                new: items.len() - retried,
                subtasks,
            })
            .await;
    }

    /// A restart between writing `opening` and its slots: the subtasks
    /// are on the plan if a run of them after `from` has the names, in
    /// order; then they are the batch. Otherwise the batch is planned
    /// again (nothing was added).
    pub(super) async fn adopt_opening(&mut self, plan: &Plan) {
        let Some(opening) = self.run.batches.as_ref().and_then(|p| p.opening.clone()) else {
            return;
        };
        let after: Vec<&Arc<plan_engine::Subtask>> = plan
            .subtasks()
            .iter()
            .filter(|s| s.id().0 >= opening.from)
            .collect();
        let found = after.windows(opening.names.len()).find(|w| {
            w.iter()
                .zip(&opening.names)
                .all(|(s, name)| s.name() == name.as_str())
        });
        match found {
            Some(window) if !opening.names.is_empty() => {
                let slots = window
                    .iter()
                    .zip(&opening.items)
                    .map(|(s, items)| BatchSlot {
                        subtask: s.id(),
                        items: items.clone(),
                        failed: false,
                    })
                    .collect();
                let items: Vec<u32> = opening.items.concat();
                let retried = items
                    .iter()
                    .filter(|n| {
                        self.run
                            .batches
                            .as_ref()
                            .is_some_and(|p| p.failures_of(**n).is_some())
                    })
                    .count();
                self.opened(&items, slots, retried).await;
            }
            _ => {
                if let Some(p) = self.run.batches.as_mut() {
                    p.opening = None;
                }
                self.save().await;
            }
        }
    }

    /// Whether `id` is a subtask of the current batch.
    pub(super) fn in_batch(&self, id: SubtaskId) -> bool {
        self.run
            .batches
            .as_ref()
            .is_some_and(|p| p.current.iter().any(|s| s.subtask == id))
    }

    /// A failed attempt at a batch's subtask: skipped with the reason, its
    /// items to a later batch (or given up after `max_attempts`).
    pub(super) async fn reschedule(&mut self, id: SubtaskId, reason: &str) -> Flow {
        let max = self.run.config.max_attempts.max(1);
        let Some(progress) = self.run.batches.as_mut() else {
            return Ok(());
        };
        let Some(slot) = progress.current.iter_mut().find(|s| s.subtask == id) else {
            return Ok(());
        };
        slot.failed = true;
        let items = slot.items.clone();
        let mut again = Vec::new();
        let mut given_up = Vec::new();
        for n in &items {
            if progress.failed(*n, reason, max) {
                given_up.push(n.to_string());
            } else {
                again.push(n.to_string());
            }
            if progress.failing.len() < run_model::batch::FAILURES_SHOWN {
                // "item 4: …", as the coverage line names items; the board
                // reads the number to name it in the person's language.
                progress.failing.push(format!(
                    "item {n}: {}",
                    cut(reason, run_model::batch::FAILURE_CHARS)
                ));
            }
        }
        // Items by their number in the input ("item 4"), never "#4",
        // which on the board is a subtask's id.
        let items_named = |list: &[String]| match list {
            [one] => format!("item {one}"),
            many => format!("items {}", many.join(", ")),
        };
        let mut note = format!("failed: {}", cut(reason, 2_000));
        if !again.is_empty() {
            note.push_str(&format!(
                "; {} planned again in a later batch",
                items_named(&again)
            ));
        }
        if !given_up.is_empty() {
            note.push_str(&format!(
                "; {} given up after {max} failed attempts",
                items_named(&given_up)
            ));
        }
        self.save().await;
        let applied = self
            .apply(vec![Op::SetSubtaskState {
                id,
                state: SubtaskState::Skipped,
                note: Some(cut(&note, executor::OWN_TEXT)),
                start_next: false,
            }])
            .await;
        if !self.landed(id, applied).await? {
            return Ok(());
        }
        self.caller
            .log(RunEntry::SubtaskResult {
                subtask: id,
                ok: false,
                text: cut(&note, 2_000),
                duration_ms: 0,
            })
            .await;
        Ok(())
    }

    /// Nothing is in flight or ready: closes the current batch once its
    /// subtasks have settled, and plans the next. `true` when the plan
    /// changed (the loop looks again).
    pub(super) async fn next_batch(&mut self, plan: &Arc<Plan>) -> Result<bool, RunFailure> {
        if self.run.batches.is_none() {
            return Ok(false);
        }
        // The batch planner reads how the batch went instead of adapt.
        self.adapt_due = false;
        self.adopt_opening(plan).await;
        let current = self
            .run
            .batches
            .as_ref()
            .map(|p| p.current.clone())
            .unwrap_or_default();
        let settled = |id: SubtaskId| {
            plan.subtask(id)
                .is_none_or(|s| matches!(s.state(), SubtaskState::Done | SubtaskState::Skipped))
        };
        if !current.iter().all(|slot| settled(slot.subtask)) {
            // A failed one (a person's move) or one waiting on an answer:
            // a person decides first.
            return Ok(false);
        }
        if !current.is_empty() {
            self.close_batch(plan, &current).await;
        }
        let remaining = self.run.batches.as_ref().is_some_and(|p| p.remaining());
        if !remaining {
            return Ok(false);
        }
        match self.open_batch(plan, Vec::new(), false, None).await? {
            Opened::Added(_) | Opened::Paused => Ok(true),
            Opened::Nothing => Ok(false),
        }
    }

    async fn close_batch(&mut self, plan: &Plan, current: &[BatchSlot]) {
        let Some(progress) = self.run.batches.as_mut() else {
            return;
        };
        let (mut succeeded, mut failed, mut items) = (0, 0, 0);
        let (mut first, mut last) = (None, None);
        for slot in current {
            items += slot.items.len();
            let subtask = plan.subtask(slot.subtask);
            if let Some(s) = subtask {
                if let Some(t) = s.started_at() {
                    first = Some(first.map_or(t, |f: plan_engine::Timestamp| f.min(t)));
                }
                if let Some(t) = s.finished_at() {
                    last = Some(last.map_or(t, |l: plan_engine::Timestamp| l.max(t)));
                }
            }
            match subtask.map(|s| s.state()) {
                Some(SubtaskState::Done) => {
                    succeeded += slot.items.len();
                    for n in &slot.items {
                        progress.mark_done(*n);
                    }
                }
                _ if slot.failed => failed += slot.items.len(),
                // Skipped or deleted by a person: not tried again.
                _ => {
                    for n in &slot.items {
                        progress.skipped(*n);
                    }
                }
            }
        }
        let ms = match (first, last) {
            (Some(a), Some(b)) => (b - a).num_milliseconds().max(0) as u64,
            _ => 0,
        };
        let summary = BatchSummary {
            batch: progress.batch,
            items,
            succeeded,
            failed,
            ms,
            failures: std::mem::take(&mut progress.failing),
        };
        progress.close(summary.clone());
        self.save().await;
        self.caller.log(RunEntry::BatchFinished(summary)).await;
    }

    /// The coverage line a batched run's answer ends with.
    pub(super) fn coverage(&self) -> Option<String> {
        let progress = self.run.batches.as_ref()?;
        let view = progress.view(1);
        let mut line = format!(
            "Covered {} of {} items in {} batches: {} done, {} given up",
            view.covered, view.total_items, progress.batch, view.done, view.given_up
        );
        if !progress.given_up.is_empty() {
            let shown: Vec<String> = progress
                .given_up
                .iter()
                .take(20)
                // "item 7": on the board `#7` is a subtask's id.
                .map(|n| format!("item {n}"))
                .collect();
            line.push_str(&format!(
                " ({}{})",
                shown.join(", "),
                if progress.given_up.len() > 20 {
                    ", …"
                } else {
                    ""
                }
            ));
        }
        line.push('.');
        Some(line)
    }
}
