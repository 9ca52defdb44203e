//! A failed subtask is the agent's to handle first (seed 002's
//! `rescheduleFailedTasks` and its backoff; seed 004 "失败处理：标记为
//! PENDING 以便重试"): it is tried again, each attempt told why the
//! earlier ones failed; when the run's `max_attempts` are used up, the
//! planner chooses to revise it, replace it with a workaround, or give up.
//! Only a give-up (or a model that cannot be used at all) leaves it to a
//! person.
//!
//! The subtask stays in progress while it waits for its next attempt, so
//! the plan never shows it ready for someone else, and a restart simply
//! takes it up again (the count and the reasons are on the run's row).

use super::*;
use crate::protocol::RecoverAnswer;
use crate::run::RecoveryDecision;

/// What happens to a failed attempt.
pub(super) enum Again {
    /// Run it again after this wait.
    After(Duration),
    /// The planner revised it (it is ready again) or a workaround took
    /// its place.
    Handled,
    /// Settle it as failed: a person decides.
    No,
}

impl Driver {
    pub(super) async fn try_again(
        &mut self,
        id: SubtaskId,
        reason: &str,
    ) -> Result<Again, RunFailure> {
        let max = self.run.config.max_attempts.max(1);
        let backoff = RetryPolicy::subtasks(max, self.run.config.retry_delay_ms);
        let record = self.run.attempts_of(id);
        record.failed_with(reason);
        let (failed, recovered) = (record.failed, record.recovered);
        if let Some(wait) = backoff.backoff(failed) {
            self.save().await;
            self.caller
                .log(RunEntry::SubtaskRetry {
                    subtask: id,
                    attempt: failed,
                    of: max,
                    delay_ms: wait.as_millis() as u64,
                    reason: cut(reason, 500),
                })
                .await;
            let body = format!(
                "Attempt {failed} of {max} failed: {}. The agent tries again in {:.1} s.",
                cut(reason, 1_000),
                wait.as_secs_f64()
            );
            self.comment(id, body).await;
            return Ok(Again::After(wait));
        }
        if recovered {
            return Ok(Again::No);
        }
        self.run.attempts_of(id).recovered = true;
        self.save().await;
        self.recover(id, failed).await
    }

    async fn comment(&mut self, id: SubtaskId, body: String) {
        let _ = self
            .apply(vec![Op::Comment {
                subtask: Some(id),
                body: cut_within(&body, plan_engine::model::limits::COMMENT),
            }])
            .await;
    }

    /// Asks the planner what to do with a subtask that failed `failed`
    /// times, and does it.
    async fn recover(&mut self, id: SubtaskId, failed: u32) -> Result<Again, RunFailure> {
        let plan = self.host.plan(self.plan_id()?).await?;
        let Some(s) = plan.subtask(id) else {
            return Ok(Again::No);
        };
        let reasons: Vec<String> = self
            .run
            .failures_of(id)
            .iter()
            .map(|r| format!("- {}", cut(r, 400)))
            .collect();
        let tools: Vec<String> = self.tools.specs().into_iter().map(|t| t.name).collect();
        let taught = self.taught().await;
        let user = format!(
            "Task: {}\nPlan:\n{}\n\nThe subtask that failed {failed} times: {}\n{}\nExpected outcome: {}\nWhy it failed:\n{}\nTools the executor has: {}\n{taught}{}",
            self.run.config.task,
            Self::listing(&plan),
            s.name(),
            cut(s.description(), 600),
            cut(s.expected_outcome(), 300),
            reasons.join("\n"),
            if tools.is_empty() { "none".to_string() } else { tools.join(", ") },
            prompts::LANGUAGE
        );
        let answer: Result<RecoverAnswer, CallError> = self
            .caller
            .json(
                CallRole::Adapter,
                "recover",
                vec![Message::system(prompts::RECOVER), Message::user(user)],
                500,
                Some(id),
            )
            .await;
        let mut answer = match answer {
            Ok(a) => a,
            Err(e) => RecoverAnswer {
                decision: RecoveryDecision::GiveUp,
                reason: format!("the planner could not decide: {}", cut(&e.to_string(), 300)),
                name: String::new(),
                description: String::new(),
            },
        };
        // A workaround with no name but a description of what to do
        // instead (Qwen2.5-Coder-1.5B: "I will use run_python to …") is
        // that description given to the failed subtask: a revision.
        if answer.decision == RecoveryDecision::Workaround
            && answer.name.trim().is_empty()
            && !answer.description.trim().is_empty()
        {
            answer.decision = RecoveryDecision::Revise;
        }
        let reason = cut(answer.reason.trim(), 300);
        let (decision, outcome, replacement, reason) = match answer.decision {
            RecoveryDecision::Revise if !answer.description.trim().is_empty() => {
                // Released first: only an unstarted subtask can be edited;
                // the loop then starts it again like any ready subtask.
                let ops = vec![
                    Op::SetSubtaskState {
                        id,
                        state: SubtaskState::Todo,
                        note: Some(cut(
                            &format!("revised after {failed} failed attempts"),
                            executor::OWN_TEXT,
                        )),
                        start_next: false,
                    },
                    Op::EditSubtask {
                        id,
                        patch: SubtaskPatch {
                            description: Some(cut(answer.description.trim(), executor::OWN_TEXT)),
                            ..SubtaskPatch::default()
                        },
                    },
                    Op::Comment {
                        subtask: Some(id),
                        body: cut(
                            &format!("Failed {failed} times; the planner revised it: {reason}"),
                            executor::OWN_TEXT,
                        ),
                    },
                ];
                match self.apply(ops).await {
                    Ok(_) => {
                        // A revised subtask has its attempts again (once:
                        // `recovered` stays set).
                        self.run.attempts_of(id).failed = 0;
                        self.save().await;
                        (RecoveryDecision::Revise, Again::Handled, None, reason)
                    }
                    Err(e) => gave_up(format!("the revision was refused: {e}")),
                }
            }
            RecoveryDecision::Workaround if !answer.name.trim().is_empty() => {
                // A workaround is a subtask added: it spends the plan's
                // adaptation budget, may not repeat a step the plan holds,
                // and is not worked around again (its failure goes to a
                // person), so a model that fails everything cannot chain
                // workarounds forever.
                self.run
                    .adaptation
                    .start(plan.subtasks().len(), run_model::adaptation::MIN_ADDED);
                let (kept, refused) =
                    self.screen(&plan, &[(answer.name.trim(), answer.description.trim())]);
                if kept.is_empty() {
                    let why = format!("the workaround was refused: {}", refused.join("; "));
                    return self.finish_recovery(id, failed, gave_up(why)).await;
                }
                let new_id = SubtaskId(plan.next_subtask_id());
                let ops = vec![
                    Op::AddSubtask {
                        subtask: NewSubtask {
                            name: cut(answer.name.trim(), 200),
                            description: cut(answer.description.trim(), executor::OWN_TEXT),
                            expected_outcome: s.expected_outcome().to_string(),
                            dependencies: s.dependencies().to_vec(),
                            ..NewSubtask::default()
                        },
                        position: plan_engine::Position::After(id),
                        rewire_after: Some(id),
                        required_by: Vec::new(),
                    },
                    Op::SetSubtaskState {
                        id,
                        state: SubtaskState::Skipped,
                        note: Some(cut(
                            &format!(
                                "failed {failed} times; replaced by #{} {}: {reason}",
                                new_id.0,
                                answer.name.trim()
                            ),
                            executor::OWN_TEXT,
                        )),
                        start_next: false,
                    },
                ];
                match self.apply(ops).await {
                    Ok(_) => {
                        self.run.adaptation.spent(1);
                        let record = self.run.attempts_of(new_id);
                        record.recovered = true;
                        record.workaround = true;
                        self.save().await;
                        (
                            RecoveryDecision::Workaround,
                            Again::Handled,
                            Some(new_id),
                            reason,
                        )
                    }
                    Err(e) => gave_up(format!("the workaround was refused: {e}")),
                }
            }
            // Skipped only with work left that may reach the goal without
            // it: skipping the last step would end a run with nothing done.
            RecoveryDecision::Skip if work_left(&plan, id) => {
                let ops = vec![Op::SetSubtaskState {
                    id,
                    state: SubtaskState::Skipped,
                    note: Some(cut(
                        &format!("failed {failed} times; skipped by the planner: {reason}"),
                        executor::OWN_TEXT,
                    )),
                    start_next: false,
                }];
                match self.apply(ops).await {
                    Ok(_) => (RecoveryDecision::Skip, Again::Handled, None, reason),
                    Err(e) => gave_up(format!("the skip was refused: {e}")),
                }
            }
            RecoveryDecision::Skip => gave_up(format!(
                "the planner chose to skip it, but nothing left in the plan could reach the goal \
                 without it: {reason}"
            )),
            RecoveryDecision::GiveUp => gave_up(reason),
            // A revision without a text or a workaround without a name
            // cannot be carried out.
            _ => gave_up(format!(
                "the planner chose {} without saying how: {reason}",
                answer.decision
            )),
        };
        self.finish_recovery(id, failed, (decision, outcome, replacement, reason))
            .await
    }

    /// Says what recovery decided, on the subtask and the run log.
    async fn finish_recovery(
        &mut self,
        id: SubtaskId,
        failed: u32,
        (decision, outcome, replacement, reason): (
            RecoveryDecision,
            Again,
            Option<SubtaskId>,
            String,
        ),
    ) -> Result<Again, RunFailure> {
        if decision == RecoveryDecision::GiveUp {
            self.comment(
                id,
                format!("Failed {failed} times; the planner gave up: {reason}"),
            )
            .await;
        }
        self.caller
            .log(RunEntry::Recovery {
                subtask: id,
                decision,
                reason,
                replacement,
            })
            .await;
        Ok(outcome)
    }
}

/// Whether a subtask other than `id` is still to be done (not done, not
/// skipped, not failed).
fn work_left(plan: &plan_engine::Plan, id: SubtaskId) -> bool {
    plan.subtasks().iter().any(|s| {
        s.id() != id
            && !matches!(
                s.state(),
                SubtaskState::Done | SubtaskState::Skipped | SubtaskState::Failed
            )
    })
}

fn gave_up(why: String) -> (RecoveryDecision, Again, Option<SubtaskId>, String) {
    (RecoveryDecision::GiveUp, Again::No, None, why)
}
