//! Before the work: classifying, planning (and re-planning after a
//! rejection or a mode switch), waiting for approval.

use super::*;

/// Model calls a run must have left for the router to ask where the
/// answer comes from: the question and its repair round, the plan, a first
/// step.
const ROOM_TO_ASK: u32 = 4;

impl Driver {
    pub(super) async fn classify(&mut self) -> Flow {
        let task = self.run.config.task.clone();
        let memory = self.recalled().await;
        let given = match self.run.config.plan {
            Some(id) => Some(self.host.plan(id).await?),
            None => None,
        };
        let decided = match self.run.config.mode.forced() {
            // A plan people wrote keeps its mode; a plan made by hand
            // (manual) runs one step at a time, or in super-steps when it
            // allows several at once.
            _ if given.is_some() => {
                let plan = given.as_ref().expect("just matched");
                let mode = match plan.mode() {
                    Mode::Manual if plan.max_parallel().unwrap_or(1) > 1 => Mode::Complex,
                    Mode::Manual => Mode::Simple,
                    mode => mode,
                };
                Classification {
                    mode,
                    reason: format!(
                        "the agent works a plan people wrote ({} subtasks), as it is",
                        plan.subtasks().len()
                    ),
                    confidence: 1.0,
                    by: DecidedBy::Person,
                    in_words: false,
                    about: Vec::new(),
                }
            }
            // A run in batches plans each batch as independent subtasks.
            _ if self.batching() => Classification {
                mode: Mode::Complex,
                reason: "a run in batches over its input (seed 002)".into(),
                confidence: 1.0,
                by: DecidedBy::Person,
                in_words: false,
                about: Vec::new(),
            },
            Some(mode) => {
                self.correction(format!("a person chose the {} mode", mode.as_str()));
                Classification {
                    mode,
                    reason: "chosen by the person who started the run".into(),
                    confidence: 1.0,
                    by: DecidedBy::Person,
                    in_words: false,
                    about: Vec::new(),
                }
            }
            // A person who starts from a template chose its mode with it.
            None => match &self.run.config.template {
                Some(template) => Classification {
                    mode: template.mode,
                    reason: format!(
                        "started from the template «{}», a {} plan",
                        template.name,
                        template.mode.as_str()
                    ),
                    confidence: 1.0,
                    by: DecidedBy::Person,
                    in_words: false,
                    about: Vec::new(),
                },
                None => match self.in_words(&task).await {
                    Some(decided) => decided,
                    None => classify::classify(&self.caller, &task, &memory)
                        .await
                        .map_err(RunFailure::Classifying)?,
                },
            },
        };
        if decided.in_words {
            self.words_only();
        }
        self.caller.log(RunEntry::Classified(decided.clone())).await;
        self.run.classification = Some(decided);
        self.move_to(RunState::Planning, "classified").await;
        Ok(())
    }

    /// The rule `words_only`: for a task given no files, the router asks
    /// where the answer comes from before anything else (the answer is
    /// kept for [`Driver::plans_offline`]); an answer written in words is
    /// a simple run of one step with no tool.
    async fn in_words(&mut self, task: &str) -> Option<Classification> {
        // Only where the wording settles nothing, and where the run has
        // tools to misuse (with none, every step answers in words anyway).
        if !crate::rules::on(&crate::rules::WORDS_ONLY)
            || classify::by_rules(task).is_some()
            || self.tools.specs().is_empty()
        {
            return None;
        }
        // Given files: only the rule `given_texts_written_about` answers
        // in words, a text about short prose files the writer reads whole.
        if !self.run.config.inputs.is_empty() {
            let about = classify::written_about(task, &self.run.config.inputs)?;
            let names: Vec<&str> = about.iter().map(|f| f.path.as_str()).collect();
            self.source = Some(Some(crate::protocol::SourceWord::Words));
            return Some(Classification {
                mode: Mode::Simple,
                reason: format!(
                    "the task asks for a text about the given {} and for nothing a tool does: \
                     one step, no tool, written from the whole text (rule \
                     given_texts_written_about)",
                    names.join(", ")
                ),
                confidence: 1.0,
                by: DecidedBy::Rules,
                in_words: true,
                about: names.iter().map(|n| n.to_string()).collect(),
            });
        }
        // The rule `writing_by_its_verb`: a text asked for by its verb,
        // and nothing a tool would do, without the router's model call.
        // The rule `known_answers_in_words`: so is a question of settled
        // knowledge.
        let by_rule = if classify::written(task) {
            Some(
                "the task asks for a text by its verb and for nothing a tool does: one step, no \
                 tool (rule writing_by_its_verb)",
            )
        } else if classify::known(task) {
            Some(
                "the task asks a question of settled knowledge: one step, no tool (rule \
                 known_answers_in_words)",
            )
        } else {
            None
        };
        if let Some(reason) = by_rule {
            self.source = Some(Some(crate::protocol::SourceWord::Words));
            return Some(Classification {
                mode: Mode::Simple,
                reason: reason.into(),
                confidence: 1.0,
                by: DecidedBy::Rules,
                in_words: true,
                about: Vec::new(),
            });
        }
        if !self.room_to_ask() {
            return None;
        }
        let source = classify::source(&self.caller, task).await;
        self.source = Some(source);
        // The rule `numbers_are_computed`: a task holding a number keeps
        // its tools whatever the router's model said.
        if crate::rules::on(&crate::rules::NUMBERS_ARE_COMPUTED) && classify::holds_numbers(task) {
            return None;
        }
        (source == Some(crate::protocol::SourceWord::Words)).then(|| Classification {
            mode: Mode::Simple,
            reason: "the answer is written in words: one step, no tool".into(),
            confidence: 1.0,
            by: DecidedBy::Model,
            in_words: true,
            about: Vec::new(),
        })
    }

    /// Whether the budget leaves room for the router's question (a repair
    /// round included), the plan and a first step: a run given 2 calls
    /// spends them on work.
    pub(super) fn room_to_ask(&self) -> bool {
        let left = self
            .caller
            .budget()
            .max_llm_calls
            .saturating_sub(self.caller.spent().llm_calls);
        left >= ROOM_TO_ASK
    }

    /// The plan of a task answered in words: one step, named after what it
    /// produces (the task's own words), with no tool.
    fn words_plan(&self) -> Planned {
        let task = &self.run.config.task;
        let first_line = task.lines().find(|l| !l.trim().is_empty()).unwrap_or(task);
        Planned {
            title: cut(first_line.trim(), 120),
            subtasks: vec![NewSubtask {
                name: cut(first_line.trim(), 120),
                description: cut(task.trim(), 1_500),
                expected_outcome: "the text the task asks for, written out in full, in words"
                    .into(),
                ..NewSubtask::default()
            }],
            repairs: vec![
                "planned without the planner: the answer is written in words, one step with no \
                 tool (rule words_only)"
                    .into(),
            ],
        }
    }

    /// The plan's settings for the mode.
    pub(super) fn info(&self, planned: &Planned) -> InfoPatch {
        let mode = self.mode();
        InfoPatch {
            title: Some(cut(&planned.title, 190)),
            mode: Some(mode),
            // Emergent: independent ready TODOs run together too (seed
            // 004's future direction); each result is still followed by
            // its own update, which edits only TODOs not yet started.
            max_parallel: Some(if mode == Mode::Simple {
                1
            } else {
                self.run.config.max_parallel.max(1)
            }),
            // 0 removes a limit an earlier mode set.
            max_subtasks: Some(if mode == Mode::Emergent {
                EMERGENT_CAP
            } else {
                0
            }),
            ..InfoPatch::default()
        }
    }

    /// Fills the run's plan with the planner's subtasks, replacing any
    /// earlier proposal (after a rejection, or a person switched the mode),
    /// and submits it.
    pub(super) async fn plan(&mut self) -> Flow {
        let mode = self.mode();
        let task = self.run.config.task_for_model();
        let plan_id = self.plan_id()?;
        let old = self.host.plan(plan_id).await?;
        let comment = match (old.approval().status, old.approval().comment.clone()) {
            (ApprovalStatus::Rejected, Some(c)) => Some(c),
            _ if self.run.round > 0 => Some(format!("use the {} planner instead", mode.as_str())),
            _ => None,
        };
        if self.batching() {
            return self.plan_first_batch(&old, comment).await;
        }
        // A plan people wrote is worked as it is, until a rejection asks
        // the planner for a revision.
        if self.run.config.plan.is_some() && comment.is_none() {
            return self.take_given(old).await;
        }
        let in_words = self.run.in_words();
        if in_words && comment.is_none() {
            let planned = self.words_plan();
            return self.propose(old, planned).await;
        }
        let revision = comment.as_deref().map(|comment| Revision {
            plan: &old,
            comment,
        });
        let mut tools = self.tools.specs();
        let offline = self.plans_offline(&tools, &task, revision.is_some()).await;
        if offline {
            tools.retain(|t| !crate::tools::web::WEB_TOOLS.contains(&t.name.as_str()));
        }
        let mut memory = self.recalled().await;
        if let Some(template) = &self.run.config.template {
            memory = format!("{}\n{memory}", template.prompt_section());
        }
        let inputs = &self.run.config.inputs;
        let mut planned = planner::plan(
            &self.caller,
            mode,
            &task,
            &tools,
            &memory,
            revision,
            !inputs.is_empty(),
        )
        .await
        .map_err(RunFailure::Planning)?;
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        planner::drop_unasked_writes(&mut planned, &names, &self.run.config.task);
        // A given file by its path and by its name alone.
        let given: Vec<String> = inputs
            .iter()
            .flat_map(|i| [i.path.clone(), i.name().to_string()])
            .collect();
        planner::files_written_before_read(&mut planned, mode, &given);
        planner::drop_reads_of_an_empty_workspace(
            &mut planned,
            mode,
            inputs.is_empty() && self.run.config.plan.is_none(),
        );
        planner::tidy(
            &mut planned,
            mode,
            &names,
            !inputs.is_empty() && inputs.len() <= run_model::config::INPUTS_LISTED,
            inputs.is_empty() && self.run.config.plan.is_none(),
        );
        planner::compute_unasked_writes(&mut planned, &names, &self.run.config.task);
        if offline {
            planned.repairs.push(
                "planned without the web tools: the task's answer comes from computation or \
                 its files, the router judged (the executor still has them)"
                    .into(),
            );
        }
        self.propose(old, planned).await
    }

    /// Replaces the run's plan with `planned` (after logging its repairs)
    /// and submits it for approval.
    async fn propose(&mut self, old: Plan, planned: Planned) -> Flow {
        if !planned.repairs.is_empty() {
            self.caller
                .log(RunEntry::PlanRepaired {
                    repairs: planned.repairs.clone(),
                })
                .await;
        }
        let mut ops: Vec<Op> = old
            .subtasks()
            .iter()
            .map(|s| Op::DeleteSubtask { id: s.id() })
            .collect();
        ops.push(Op::UpdateInfo {
            patch: self.info(&planned),
        });
        // New subtasks get ids from the plan's counter, in order.
        let first = old.next_subtask_id();
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
        if old.state() == PlanState::Draft {
            ops.push(Op::Submit {});
        }
        let plan = match self.apply(ops).await {
            Ok(plan) => plan,
            // Cancelled while the planner was thinking.
            Err(_) if self.abandoned().await => {
                self.move_to(
                    RunState::Cancelled,
                    "the plan was abandoned while it was planned",
                )
                .await;
                return Ok(());
            }
            Err(e) => return Err(RunFailure::PlanRefused(e)),
        };
        self.proposed(&plan, "planned").await;
        Ok(())
    }

    /// Whether the first plan is made without the web tools: only when
    /// the planner would have both the web and run_python, the budget
    /// leaves room for the question ([`ROOM_TO_ASK`]), and the router
    /// judges the answer computable from the task or its files. Revisions
    /// keep every tool (a person's comment may ask for the web).
    async fn plans_offline(
        &self,
        tools: &[crate::protocol::ToolSpec],
        task: &str,
        revising: bool,
    ) -> bool {
        let web = tools
            .iter()
            .any(|t| crate::tools::web::WEB_TOOLS.contains(&t.name.as_str()));
        let code = tools.iter().any(|t| t.name == planner::CODE);
        if revising || !web || !code {
            return false;
        }
        // Asked already (before classifying), or now.
        let source = match self.source {
            Some(source) => source,
            None if self.room_to_ask() => classify::source(&self.caller, task).await,
            None => return false,
        };
        !classify::needs_web(source)
    }

    /// A plan people wrote, taken as the run's first proposal: a draft is
    /// submitted (the plan's own approval setting decides whether it waits
    /// for one: its authors chose it); an approved or running one runs.
    async fn take_given(&mut self, plan: Plan) -> Flow {
        let plan = match plan.state() {
            PlanState::Draft => (*self
                .apply(vec![Op::Submit {}])
                .await
                .map_err(RunFailure::PlanRefused)?)
            .clone(),
            _ => plan,
        };
        self.proposed(&plan, "the plan people wrote").await;
        Ok(())
    }

    /// A plan is proposed (another round): logged, and the run waits for
    /// approval or runs, as the plan does.
    pub(super) async fn proposed(&mut self, plan: &Plan, why: &str) {
        self.run.round += 1;
        self.caller
            .log(RunEntry::PlanProposed {
                plan_id: plan.id(),
                round: self.run.round,
                subtasks: plan.subtasks().len(),
            })
            .await;
        let next = if plan.state() == PlanState::AwaitingApproval {
            RunState::AwaitingApproval
        } else {
            RunState::Running
        };
        self.move_to(next, why).await;
    }

    /// "Edit, then approve": what a person changed in the proposed plan
    /// (the one the agent submitted, still `seen`) before approving it is
    /// a correction, and the run log says what.
    async fn edited_before_approval(&mut self, approved: &Plan) {
        let Some(proposed) = self.seen.clone() else {
            return;
        };
        if proposed.id() != approved.id() || proposed.version() == approved.version() {
            return;
        }
        let changes = super::plan_changes(&proposed, approved);
        if changes.is_empty() {
            return;
        }
        let summary = changes.join("; ");
        self.correction(format!(
            "a person edited the plan before approving it: {summary}"
        ));
        self.caller.log(RunEntry::PeopleChanged { summary }).await;
    }

    pub(super) async fn await_approval(&mut self) -> Flow {
        let plan_id = self.plan_id()?;
        let mut plan = self.host.plan(plan_id).await?;
        // Told once per wait (again after a restart, if still waiting).
        let mut reminded = self.approval_remind.is_none();
        loop {
            match plan.state() {
                PlanState::Approved | PlanState::Running | PlanState::Paused => {
                    self.edited_before_approval(&plan).await;
                    // What the person approved is the contract (also while
                    // the run is held, before it starts).
                    self.baseline(&plan);
                    self.seen = Some(Arc::new(plan));
                    self.move_to(RunState::Running, "approved").await;
                    return Ok(());
                }
                PlanState::Abandoned => {
                    self.move_to(RunState::Cancelled, "the plan was abandoned")
                        .await;
                    return Ok(());
                }
                PlanState::Done | PlanState::Failed => {
                    self.run.answer = plan.outcome().map(str::to_string);
                    let to = if plan.state() == PlanState::Done {
                        RunState::Running
                    } else {
                        RunState::Failed
                    };
                    self.move_to(to, "a person finished the plan").await;
                    return Ok(());
                }
                PlanState::Draft if plan.approval().status == ApprovalStatus::Rejected => {
                    let comment = plan.approval().comment.clone().unwrap_or_default();
                    let names: Vec<&str> =
                        plan.subtasks().iter().take(8).map(|s| s.name()).collect();
                    self.correction(format!(
                        "a person rejected the plan ({}) with: {comment}",
                        names.join(" → ")
                    ));
                    self.caller
                        .log(RunEntry::Rejected {
                            comment: comment.clone(),
                            round: self.run.round,
                        })
                        .await;
                    if self.run.round > MAX_REVISIONS {
                        return Err(RunFailure::Rejected {
                            rounds: self.run.round,
                            comment: comment.clone(),
                        });
                    }
                    self.move_to(RunState::Planning, "rejected: re-planning with the comment")
                        .await;
                    return Ok(());
                }
                PlanState::AwaitingApproval | PlanState::Draft
                    if plan.mode() != self.mode() && plan.mode() != Mode::Manual =>
                {
                    self.correction(format!(
                        "a person switched the mode from {} to {}",
                        self.mode().as_str(),
                        plan.mode().as_str()
                    ));
                    let decided = Classification {
                        mode: plan.mode(),
                        reason: "a person switched the mode before approving".into(),
                        confidence: 1.0,
                        by: DecidedBy::Person,
                        in_words: false,
                        about: Vec::new(),
                    };
                    self.caller.log(RunEntry::Classified(decided.clone())).await;
                    self.run.classification = Some(decided);
                    self.move_to(RunState::Planning, "mode switched: re-planning")
                        .await;
                    return Ok(());
                }
                _ => {}
            }
            let changed = self.host.changed(plan_id, plan.version());
            let after = self.approval_remind.filter(|_| !reminded);
            let Some(after) = after else {
                plan = changed.await?;
                continue;
            };
            // From the plan's last change: its submission, or an edit.
            let waited = (chrono::Utc::now() - plan.updated_at())
                .to_std()
                .unwrap_or_default();
            match tokio::time::timeout(after.saturating_sub(waited), changed).await {
                Ok(next) => plan = next?,
                Err(_) => {
                    reminded = true;
                    let waited_secs = (chrono::Utc::now() - plan.updated_at())
                        .num_seconds()
                        .max(0) as u64;
                    self.caller
                        .log(RunEntry::ApprovalOverdue { waited_secs })
                        .await;
                }
            }
        }
    }
}
