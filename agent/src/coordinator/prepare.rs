//! Before the work: classifying, planning (and re-planning after a
//! rejection or a mode switch), waiting for approval.

use super::*;

impl Driver {
    pub(super) async fn classify(&mut self) -> Flow {
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

    pub(super) fn spec(&self, planned: &Planned) -> NewPlan {
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

    pub(super) async fn plan(&mut self) -> Flow {
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

    pub(super) async fn await_approval(&mut self) -> Flow {
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
}
