//! Changing the plan as work goes: emergent TODO updates, adaptation
//! between super-steps, and the final answer.

use super::*;

impl Driver {
    /// The plan for a prompt: each subtask's position, state and name,
    /// and the positions it waits for (`(after 1, 2)`), so a model that
    /// sees a failure also sees what cannot start without it (the 1.5B
    /// model revised a TODO behind a failed one, unaware it still waited).
    pub(super) fn listing(plan: &Plan) -> String {
        plan.subtasks()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let after: Vec<String> = s
                    .dependencies()
                    .iter()
                    .filter_map(|d| plan.position(*d).map(|p| (p + 1).to_string()))
                    .collect();
                let after = if after.is_empty() {
                    String::new()
                } else {
                    format!(" (after {})", after.join(", "))
                };
                format!("{}. [{}] {}{after}", i + 1, s.state().as_str(), s.name())
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Seed 004's `_update_todo_list`, with compaction near the cap: after
    /// every TODO that finished, and after one that failed for good (its
    /// attempts and recovery spent), with the failure, so the model may
    /// add a way around it. What it adds then counts as a workaround: a
    /// workaround that fails in turn gets an update that may add nothing
    /// (`UPDATE_FAILED_AGAIN`), so a model that fails everything adds at
    /// most one round per TODO it planned, within the adaptation budget.
    pub(super) async fn update_todos(&mut self, last: Finished<'_>) -> Flow {
        let plan = self.host.plan(self.plan_id()?).await?;
        let compact = plan.subtasks().len() >= COMPACT_AT;
        let mut system = prompts::UPDATE.to_string();
        if compact {
            system.push('\n');
            system.push_str(prompts::COMPACT);
        }
        let (said, after_failure, may_add) = match last {
            Finished::Done(result) => (format!("Last result: {}", cut(result, 500)), false, true),
            Finished::Failed { id, reason } => {
                let workaround = self.run.attempts_of(id).workaround;
                let (at, name) = plan
                    .position(id)
                    .zip(plan.subtask(id))
                    .map_or((0, ""), |(p, s)| (p + 1, s.name()));
                let next = if workaround {
                    prompts::UPDATE_FAILED_AGAIN
                } else {
                    prompts::UPDATE_FAILED
                };
                (
                    format!(
                        "TODO {at} ('{}') failed after every attempt: {}\n{next}",
                        cut(name, 80),
                        cut(reason, 500)
                    ),
                    true,
                    !workaround,
                )
            }
        };
        let taught = self.taught().await;
        let user = format!(
            "Task: {}\n{said}\nTODO list ({} of at most {}):\n{}\n{taught}{}",
            self.run.config.task,
            plan.subtasks().len(),
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
        ops.extend(Self::todo_edits(&plan, &answer));
        let mut added = 0;
        if answer.needs_update && !may_add && !answer.new_todos.is_empty() {
            self.caller
                .log(RunEntry::PlanAdjusted {
                    reason: "not added: the TODO that failed was itself a workaround of a \
                             failure; a person looks at it"
                        .into(),
                    changes: 0,
                })
                .await;
        }
        if answer.needs_update && may_add && !compact && !answer.new_todos.is_empty() {
            self.run
                .adaptation
                .start(plan.subtasks().len(), EMERGENT_CAP);
            let proposed: Vec<(&str, &str)> = answer
                .new_todos
                .iter()
                .map(|t| (t.name.as_str(), t.description.as_str()))
                .collect();
            let (kept, refused) = self.screen(&plan, &proposed);
            if !refused.is_empty() {
                self.caller
                    .log(RunEntry::PlanAdjusted {
                        reason: cut(&format!("not added: {}", refused.join("; ")), 1_000),
                        changes: 0,
                    })
                    .await;
            }
            // Positions past the list name the new TODOs, in order.
            let len = plan.subtasks().len();
            let first_new = plan.next_subtask_id();
            for &k in &kept {
                // A TODO that failed never lets one that waits for it
                // start: a new TODO (most often its way around) does not.
                let dependencies = answer.new_todos[k]
                    .depends_on
                    .iter()
                    .filter_map(|p| {
                        let i = (*p as usize).checked_sub(1)?;
                        match plan.subtasks().get(i) {
                            Some(s) if s.state() == SubtaskState::Failed => None,
                            Some(s) => Some(s.id()),
                            None => new_id(&kept, i - len, k, first_new),
                        }
                    })
                    .collect();
                ops.push(Op::AddSubtask {
                    subtask: planner::subtask_of(&answer.new_todos[k], dependencies),
                    position: Default::default(),
                    rewire_after: None,
                    required_by: Vec::new(),
                });
            }
            added = kept.len() as u32;
        }
        let changed = self.adjust(ops, answer.reason).await?;
        if changed && added > 0 {
            self.run.adaptation.spent(added);
            if after_failure {
                // New subtasks take the plan's next ids, in order.
                let first = plan.next_subtask_id();
                for n in 0..added {
                    let record = self.run.attempts_of(SubtaskId(first + n));
                    record.workaround = true;
                    // Not worked around by recovery either (as recovery's
                    // own workaround is not).
                    record.recovered = true;
                }
            }
            self.save().await;
        }
        Ok(())
    }

    /// Screens proposed new subtasks (name, description) against the plan
    /// and the adaptation budget ([`run_model::Adaptation`]): a step the
    /// plan holds already (or one proposed twice) is refused, and so is
    /// what passes the budget's room. Returns the indices kept and a
    /// sentence for each refusal, for the model and the run log.
    pub(super) fn screen(
        &mut self,
        plan: &Plan,
        proposed: &[(&str, &str)],
    ) -> (Vec<usize>, Vec<String>) {
        let mut kept: Vec<usize> = Vec::new();
        let mut refused = Vec::new();
        let room = self.run.adaptation.room() as usize;
        for (k, (name, description)) in proposed.iter().enumerate() {
            let held = plan.subtasks().iter().find(|s| {
                run_model::adaptation::same_step(
                    name,
                    description,
                    s.name(),
                    s.description(),
                    // A failed one's name too: the same step again is
                    // a retry, which recovery already declined (the 1.5B
                    // model re-added a TODO that failed, by its name).
                    matches!(s.state(), SubtaskState::Done | SubtaskState::Failed),
                )
            });
            if let Some(held) = held {
                refused.push(format!(
                    "'{}' is already in the plan as #{} ({})",
                    cut(name, 80),
                    held.id().0,
                    held.state().as_str()
                ));
                continue;
            }
            let twice = kept.iter().any(|&j| {
                let (other, other_description) = proposed[j];
                run_model::adaptation::same_step(name, description, other, other_description, false)
            });
            if twice {
                refused.push(format!("'{}' is proposed twice", cut(name, 80)));
                continue;
            }
            if kept.len() >= room {
                refused.push(format!(
                    "'{}' passes the plan's adaptation budget ({} subtasks added of {})",
                    cut(name, 80),
                    self.run.adaptation.added,
                    self.run.adaptation.limits().added
                ));
                continue;
            }
            kept.push(k);
        }
        (kept, refused)
    }

    /// Says once, on the run log (the board's activity), that the plan
    /// adapts no more. Returns whether the budget is used up.
    pub(super) async fn adaptation_exhausted(&mut self) -> bool {
        let Some(why) = self.run.adaptation.exhausted() else {
            return false;
        };
        if !self.run.adaptation.told {
            self.run.adaptation.told = true;
            self.save().await;
            self.caller
                .log(RunEntry::PlanAdjusted {
                    reason: why,
                    changes: 0,
                })
                .await;
        }
        true
    }

    /// The update's revisions and blocks, on unstarted TODOs only (a
    /// position naming anything else is passed over). A blocked TODO waits
    /// as a question does: on the board's banner and in Needs you, until a
    /// person answers it (which sets it back to todo).
    fn todo_edits(plan: &Plan, answer: &UpdateAnswer) -> Vec<Op> {
        let unstarted = |position: u32| {
            plan.subtasks()
                .get((position as usize).checked_sub(1)?)
                .filter(|s| s.state() == SubtaskState::Todo)
        };
        let mut ops = Vec::new();
        for r in &answer.revise {
            if let Some(s) = unstarted(r.position).filter(|_| !r.description.trim().is_empty()) {
                ops.push(Op::EditSubtask {
                    id: s.id(),
                    patch: SubtaskPatch {
                        description: Some(cut(&r.description, 400)),
                        ..SubtaskPatch::default()
                    },
                });
            }
        }
        for b in &answer.blocked {
            if let Some(s) = unstarted(b.position).filter(|_| !b.reason.trim().is_empty()) {
                ops.push(Op::SetSubtaskState {
                    id: s.id(),
                    state: SubtaskState::Blocked,
                    note: Some(cut(
                        &format!("{}{}", plan_engine::model::QUESTION_NOTE, b.reason.trim()),
                        executor::OWN_TEXT,
                    )),
                    start_next: false,
                });
                ops.push(Op::Comment {
                    subtask: Some(s.id()),
                    body: cut_within(
                        &format!("Blocked: {}", b.reason.trim()),
                        plan_engine::model::limits::COMMENT,
                    ),
                });
            }
        }
        ops
    }

    /// Unstarted subtasks at these 1-based positions, skipped with `reason`.
    pub(super) fn drops(&self, plan: &Plan, positions: &[u32], reason: &str) -> Vec<Op> {
        positions
            .iter()
            .filter_map(|p| plan.subtasks().get((*p as usize).checked_sub(1)?))
            .filter(|s| s.state() == SubtaskState::Todo)
            .map(|s| Op::SetSubtaskState {
                id: s.id(),
                state: SubtaskState::Skipped,
                note: Some(cut(
                    &format!("dropped by the planner: {reason}"),
                    executor::OWN_TEXT,
                )),
                start_next: false,
            })
            .collect()
    }

    /// Applies an adjustment and logs it; whether it landed.
    pub(super) async fn adjust(
        &mut self,
        ops: Vec<Op>,
        reason: String,
    ) -> Result<bool, RunFailure> {
        if ops.is_empty() {
            return Ok(false);
        }
        let changes = ops.len();
        match self.apply(ops).await {
            Ok(_) => {
                self.drift_due = true;
                self.caller
                    .log(RunEntry::PlanAdjusted { reason, changes })
                    .await;
                Ok(true)
            }
            Err(e) => {
                self.caller
                    .log(RunEntry::PlanAdjusted {
                        reason: format!("refused by the plan: {e}"),
                        changes: 0,
                    })
                    .await;
                Ok(false)
            }
        }
    }

    /// Seed 004's adaptation between super-steps: paid only when a
    /// subtask failed or fell short. The engine checks the change as one
    /// commit; a refusal (a cycle, a dependency on a started subtask) goes
    /// back to the model once with the engine's reason.
    pub(super) async fn adapt(&mut self, plan: &Plan) -> Flow {
        self.run
            .adaptation
            .start(plan.subtasks().len(), run_model::adaptation::MIN_ADDED);
        if self.adaptation_exhausted().await {
            return Ok(());
        }
        let results: Vec<String> = plan
            .subtasks()
            .iter()
            .filter(|s| s.state().is_settled() || s.state() == SubtaskState::Failed)
            .rev()
            .take(10)
            .map(|s| {
                format!(
                    "- {} [{}]: {}",
                    s.name(),
                    s.state().as_str(),
                    cut(s.outcome().unwrap_or(""), 300)
                )
            })
            .collect();
        let taught = self.taught().await;
        let user = format!(
            "Task: {}\nPlan ({} subtasks):\n{}\nRecent results:\n{}\n{taught}{}",
            self.run.config.task,
            plan.subtasks().len(),
            Self::listing(plan),
            results.join("\n"),
            prompts::LANGUAGE
        );
        let mut messages = vec![Message::system(prompts::ADAPT), Message::user(user)];
        for round in 0..2 {
            let answer: AdaptAnswer = match self
                .caller
                .json(CallRole::Adapter, "adapt", messages.clone(), 800, None)
                .await
            {
                Ok(a) => a,
                Err(CallError::Budget(why)) => return self.pause_for_budget(why).await,
                Err(_) => return Ok(()),
            };
            if !answer.needs_change {
                return Ok(());
            }
            let proposed: Vec<(&str, &str)> = answer
                .add
                .iter()
                .map(|a| (a.name.as_str(), a.description.as_str()))
                .collect();
            let (kept, refused) = self.screen(plan, &proposed);
            if !refused.is_empty() {
                let said = format!("not added: {}", refused.join("; "));
                if round == 0 {
                    // Once back to the model with the reason, as for a
                    // cycle: it may propose what is really missing.
                    messages.push(Message::assistant(
                        serde_json::to_string(&answer).unwrap_or_default(),
                    ));
                    messages.push(Message::user(format!(
                        "The plan refused part of this: {said}. Propose only steps the plan does not hold, or none (needs_change false)."
                    )));
                    continue;
                }
                self.caller
                    .log(RunEntry::PlanAdjusted {
                        reason: cut(&said, 1_000),
                        changes: 0,
                    })
                    .await;
            }
            let ops = self.adapt_ops(plan, &answer, &kept);
            if ops.is_empty() {
                return Ok(());
            }
            let changes = ops.len();
            match self.apply(ops).await {
                Ok(_) => {
                    self.run.adaptation.spent(kept.len() as u32);
                    self.save().await;
                    self.caller
                        .log(RunEntry::PlanAdjusted {
                            reason: answer.reason,
                            changes,
                        })
                        .await;
                    return Ok(());
                }
                Err(HostError::Refused(e)) if round == 0 => {
                    messages.push(Message::assistant(
                        serde_json::to_string(&answer).unwrap_or_default(),
                    ));
                    messages.push(Message::user(format!(
                        "The plan refused these changes: {e}. Answer again without that mistake."
                    )));
                }
                Err(e) => {
                    self.caller
                        .log(RunEntry::PlanAdjusted {
                            reason: format!("refused by the plan: {e}"),
                            changes: 0,
                        })
                        .await;
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// An adapt answer as ops: drops, revisions and rewiring touch only
    /// unstarted subtasks; new subtasks go at the end.
    fn adapt_ops(&self, plan: &Plan, answer: &AdaptAnswer, kept: &[usize]) -> Vec<Op> {
        let mut ops = self.drops(plan, &answer.drop, &answer.reason);
        let unstarted = |position: u32| {
            plan.subtasks()
                .get((position as usize).checked_sub(1)?)
                .filter(|s| s.state() == SubtaskState::Todo)
        };
        for r in &answer.revise {
            if let Some(s) = unstarted(r.position) {
                ops.push(Op::EditSubtask {
                    id: s.id(),
                    patch: SubtaskPatch {
                        description: Some(r.description.clone()),
                        ..SubtaskPatch::default()
                    },
                });
            }
        }
        // Positions past the plan's end name the new subtasks, in order;
        // one that was not kept is no dependency.
        let len = plan.subtasks().len();
        let first_new = plan.next_subtask_id();
        let id_at = |p: u32| -> Option<SubtaskId> {
            let i = (p as usize).checked_sub(1)?;
            match plan.subtasks().get(i) {
                Some(s) => Some(s.id()),
                None => new_id(kept, i - len, usize::MAX, first_new),
            }
        };
        for step in kept.iter().map(|&k| &answer.add[k]) {
            ops.push(Op::AddSubtask {
                subtask: NewSubtask {
                    name: cut(step.name.trim(), 200),
                    description: step.description.clone(),
                    dependencies: step.depends_on.iter().filter_map(|p| id_at(*p)).collect(),
                    ..NewSubtask::default()
                },
                position: Default::default(),
                rewire_after: None,
                required_by: Vec::new(),
            });
        }
        for r in &answer.depends {
            if let Some(s) = unstarted(r.position) {
                ops.push(Op::SetDependencies {
                    id: s.id(),
                    dependencies: r.depends_on.iter().filter_map(|p| id_at(*p)).collect(),
                });
            }
        }
        ops
    }

    /// Compiles the answer and finishes the plan when everything is done
    /// or skipped. Emergent TODOs that can never start are skipped first.
    pub(super) async fn finish_if_settled(&mut self, plan: &Arc<Plan>) -> Result<bool, RunFailure> {
        let mut plan = plan.clone();
        if self.mode() == Mode::Emergent {
            let unreachable: Vec<Op> = plan
                .subtasks()
                .iter()
                .filter(|s| s.state() == SubtaskState::Todo)
                .map(|s| Op::SetSubtaskState {
                    id: s.id(),
                    state: SubtaskState::Skipped,
                    note: Some("unreachable: a TODO it depends on did not finish".into()),
                    start_next: false,
                })
                .collect();
            // Not while a TODO waits on a person's answer (blocked): what
            // depends on it starts once it is answered.
            if !unreachable.is_empty()
                && plan.count(SubtaskState::Failed) == 0
                && plan.count(SubtaskState::Blocked) == 0
            {
                plan = self.apply(unreachable).await?;
            }
        }
        let settled = plan.count(SubtaskState::Done) + plan.count(SubtaskState::Skipped);
        if settled < plan.subtasks().len() || plan.subtasks().is_empty() {
            return Ok(false);
        }
        let mut answer = self.compile(&plan).await;
        // The rule `every_ask_answered`: each question and file the task
        // asked for, checked before the answer is kept; what is missing
        // goes back once as subtasks, then is said in the first line.
        if crate::rules::on(&crate::rules::EVERY_ASK_ANSWERED) && !self.run.asks.is_empty() {
            let missing = self.missing_asks(&answer).await;
            if !missing.is_empty() {
                // Sent back once, and only with room in the budget for the
                // new steps and the answer again.
                if !self.asks_sent_back && self.room_to_ask() {
                    self.asks_sent_back = true;
                    if self.send_back(&missing).await {
                        return Ok(false);
                    }
                }
                let parts: Vec<String> = missing.iter().map(Missing::describe).collect();
                let mut first = format!("Not done: {}", parts.join("; "));
                if !first.ends_with(['.', '?', '!', '。', '？']) {
                    first.push('.');
                }
                answer = format!("{first}\n\n{answer}");
            }
        }
        if let Some(coverage) = self.coverage() {
            answer = format!("{answer}\n\n{coverage}");
        }
        self.apply(vec![Op::Finish {
            state: PlanState::Done,
            outcome: cut_within(&answer, plan_engine::model::limits::TEXT),
        }])
        .await
        .map_err(RunFailure::Finishing)?;
        self.caller
            .log(RunEntry::Answer {
                text: answer.clone(),
            })
            .await;
        self.run.answer = Some(answer);
        self.move_to(RunState::Done, "every subtask is done").await;
        Ok(true)
    }

    /// The asks of the run that `answer` and the workspace leave
    /// unanswered: a file asked for that is not there, is empty or is not
    /// of its name's kind ([`run_model::asks::file_fits`]; when the host
    /// can list and read the workspace), a question asking how many or how
    /// much that the answer gives no number of its own for
    /// ([`run_model::asks::open_questions`]).
    async fn missing_asks(&self, answer: &str) -> Vec<Missing> {
        let files = self.host.workspace_files(self.run.id).await.ok().flatten();
        let task = &self.run.config.task;
        let asks = &self.run.asks;
        let open = run_model::asks::open_questions(asks, answer, task);
        let mut missing = Vec::new();
        for (i, ask) in asks.iter().enumerate() {
            match ask {
                run_model::Ask::File { path } => {
                    let Some(files) = &files else { continue };
                    let found = files.iter().find(|(p, bytes)| {
                        (p == path || p.ends_with(&format!("/{path}"))) && *bytes > 0
                    });
                    let Some((written, bytes)) = found else {
                        missing.push(Missing {
                            ask: ask.clone(),
                            not_a: None,
                        });
                        continue;
                    };
                    let max = run_model::asks::HEAD_BYTES;
                    let head = self.host.workspace_head(self.run.id, written, max).await;
                    if let Ok(Some(head)) = head {
                        let whole = head.len() as u64 >= *bytes;
                        if let Err(kind) = run_model::asks::file_fits(path, &head, whole) {
                            missing.push(Missing {
                                ask: ask.clone(),
                                not_a: Some(kind),
                            });
                        }
                    }
                }
                _ if open.contains(&i) => missing.push(Missing {
                    ask: ask.clone(),
                    not_a: None,
                }),
                _ => {}
            }
        }
        missing
    }

    /// Adds a subtask for each missing ask, so the run does that part;
    /// whether the plan took them.
    async fn send_back(&mut self, missing: &[Missing]) -> bool {
        let names: Vec<String> = self.tools.specs().into_iter().map(|s| s.name).collect();
        let code = names.iter().any(|n| n == planner::CODE);
        let task = self.run.config.task.clone();
        let ops: Vec<Op> = missing
            .iter()
            .map(|Missing { ask, not_a }| {
                let (name, description, tool) = match ask {
                    run_model::Ask::File { path } => (
                        format!("Write {path}"),
                        match not_a {
                            Some(kind) => format!(
                                "The task asks for the file {path}, and what was written \
                                 there is not {kind}. Write it again as {kind}, as the task \
                                 says. The task: {task}"
                            ),
                            None => format!(
                                "The task asks for the file {path}, and it was not written \
                                 (or is empty). Write it as the task says. The task: {task}"
                            ),
                        },
                        code.then(|| planner::CODE.to_string()),
                    ),
                    run_model::Ask::Question { text, number } => (
                        format!("Answer: {}", cut(text, 100)),
                        format!(
                            "The answer so far does not answer this part of the task: {text}{} \
                             The task: {task}",
                            if *number {
                                " Give the number it asks for."
                            } else {
                                ""
                            }
                        ),
                        None,
                    ),
                };
                Op::AddSubtask {
                    subtask: NewSubtask {
                        name: cut(&name, 190),
                        description: cut(&description, 1_500),
                        tool,
                        ..NewSubtask::default()
                    },
                    position: Default::default(),
                    rewire_after: None,
                    required_by: Vec::new(),
                }
            })
            .collect();
        let count = ops.len();
        match self.apply(ops).await {
            Ok(_) => {
                let parts: Vec<String> = missing.iter().map(Missing::describe).collect();
                self.caller
                    .log(RunEntry::PlanAdjusted {
                        reason: format!(
                            "the answer left parts of the task undone ({}): sent back once \
                             (rule every_ask_answered)",
                            parts.join("; ")
                        ),
                        changes: count,
                    })
                    .await;
                true
            }
            Err(_) => false,
        }
    }

    /// The answer, written by the model from the results; the results
    /// themselves when the model cannot write one (one result alone, with
    /// no heading: a person asked a question, not for a plan's steps).
    pub(super) async fn compile(&mut self, plan: &Plan) -> String {
        let done: Vec<_> = plan
            .subtasks()
            .iter()
            .filter(|s| s.state() == SubtaskState::Done)
            .collect();
        // Written in words (the rule `words_only`): the one step's text is
        // the answer, as written; a compiler would summarise a poem.
        let in_words = self.run.in_words();
        if let ([only], true) = (done.as_slice(), in_words) {
            if let Some(text) = only.outcome().filter(|t| !t.trim().is_empty()) {
                return text.trim().to_string();
            }
        }
        let mut results = String::new();
        for s in &done {
            let line = format!(
                "## {}\n{}\n\n",
                s.name(),
                cut(s.outcome().unwrap_or(""), COMPILE_EACH)
            );
            if results.len() + line.len() > COMPILE_ALL {
                results.push_str("(more results not shown)\n");
                break;
            }
            results.push_str(&line);
        }
        let fallback = match done.as_slice() {
            [only] => only.outcome().unwrap_or_default().trim().to_string(),
            _ => results.trim().to_string(),
        };
        let given = format!(
            "Task: {}\n\nResults:\n{results}\n{}",
            self.run.config.task_for_model(),
            prompts::LANGUAGE
        );
        let names: Vec<&str> = done.iter().map(|s| s.name()).collect();
        let mut messages = vec![
            Message::system(prompts::COMPILER),
            Message::user(given.clone()),
        ];
        // The answer may state only numbers the person's own words or the
        // results hold (not the files' previews: Qwen2.5-1.5B answered
        // "widget" and added "followed by gizmo with 39", a price from the
        // CSV's first rows); one more try when it states others, then the
        // results themselves.
        for last in [false, true] {
            let answer = match self
                .caller
                .text(CallRole::Compiler, messages.clone(), 900, None)
                .await
            {
                Ok(answer) if !answer.is_empty() => answer,
                Ok(_) | Err(_) => return fallback,
            };
            let answer = unpasted(&answer, &names).to_string();
            let missing = crate::grounded::unsupported(&answer, &[&self.run.config.task, &results]);
            if missing.is_empty() {
                return answer;
            }
            if last {
                break;
            }
            messages.push(Message::assistant(answer));
            messages.push(Message::user(format!(
                "Your answer states {}, which the results do not show. Write the answer again, \
                 the result first, with only the numbers the results give.",
                missing.join(", ")
            )));
        }
        fallback
    }
}

/// The answer without the results it pasted under their headings: what it
/// wrote before the first `## <subtask name>` line, when it wrote anything
/// there. The compiler reads each result under such a heading, and
/// Qwen2.5-1.5B wrote the right answer ("3 perfect numbers: 6, 28 and
/// 496") and pasted the results below it, one of them wrong ("[1]"): a
/// person reads the answer, the results are on the board.
pub(super) fn unpasted<'a>(answer: &'a str, names: &[&str]) -> &'a str {
    let mut at = 0;
    for line in answer.split_inclusive('\n') {
        let heading = line.trim().strip_prefix("## ").map(str::trim);
        if heading.is_some_and(|h| names.contains(&h)) {
            let before = answer[..at].trim_end();
            return if before.trim().is_empty() {
                answer
            } else {
                before
            };
        }
        at += line.len();
    }
    answer
}

/// What the TODO an emergent update follows came to.
pub(super) enum Finished<'a> {
    /// It is done, with this result.
    Done(&'a str),
    /// It failed for good (after its attempts and recovery), for `reason`.
    Failed { id: SubtaskId, reason: &'a str },
}

/// The id the `index`-th proposed new subtask gets when only `kept` are
/// added (in order), if it is kept and comes before `before` (a new
/// subtask depends only on those proposed before it).
fn new_id(kept: &[usize], index: usize, before: usize, first_new: u32) -> Option<SubtaskId> {
    if index >= before {
        return None;
    }
    let at = kept.iter().position(|&k| k == index)?;
    Some(SubtaskId(first_new + at as u32))
}

/// An ask the answer left undone, and for a file written under the wrong
/// kind, the kind it is not.
struct Missing {
    ask: run_model::Ask,
    not_a: Option<&'static str>,
}

impl Missing {
    /// The part in a person's words ("write chart.png (it is not a PNG
    /// image)").
    fn describe(&self) -> String {
        match self.not_a {
            Some(kind) => format!("{} (it is not {kind})", self.ask.describe()),
            None => self.ask.describe(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::unpasted;

    #[test]
    fn an_answer_keeps_what_it_wrote_before_the_results_it_pasted() {
        let names = ["Count the perfect numbers", "List them"];
        let answer =
            "There are 3: 6, 28 and 496.\n\n## Count the perfect numbers\n3\n\n## List them\n[1]";
        assert_eq!(unpasted(answer, &names), "There are 3: 6, 28 and 496.");
        // A heading of its own, not a subtask's, is the answer's.
        let own = "There are 3.\n## How\nBy trial division.";
        assert_eq!(unpasted(own, &names), own);
        // Nothing written before the pasted results: they are the answer.
        let only = "## List them\n6, 28, 496";
        assert_eq!(unpasted(only, &names), only);
    }
}
