//! "Run again from here" (LangGraph's fork, Dagster's re-execution): a
//! finished or failed plan becomes a new run that keeps the results of
//! the subtasks before a chosen one and redoes that one and the rest. The
//! new run skips classifying and planning (the plan is the earlier one);
//! the earlier plan gets a comment naming the new one, and the new run's
//! record names the earlier one, so reviewers can compare the two.

use plan_engine::{NewPlan, NewSubtask, Op, Plan, SubtaskId, SubtaskState};
use run_model::{
    AgainOf, Classification, DecidedBy, RunConfig, RunEntry, RunId, RunRecord, RunState,
};

use super::Agent;
use crate::host::HostError;
use crate::roles::executor::AGENT_ACTOR;

/// Why a plan cannot be run again from a subtask.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgainError {
    #[error("the plan has no subtask {0}")]
    NoSubtask(u32),
    #[error("only a finished plan (done, failed or abandoned) is run again; this one is {0}")]
    NotFinished(plan_engine::PlanState),
}

/// Why a run could not start again.
#[derive(Debug, thiserror::Error)]
pub enum AgainFailure {
    #[error(transparent)]
    Again(#[from] AgainError),
    #[error(transparent)]
    Host(#[from] HostError),
}

/// The new plan for running `source` again from `from`, and the changes
/// that put back the kept results (as the agent, on the new plan): the
/// subtasks before `from` that were done or skipped keep their outcome;
/// `from`, every subtask after it, every subtask that had not finished,
/// and everything depending on a redone subtask is done again.
pub fn again_from(source: &Plan, from: SubtaskId) -> Result<(NewPlan, Vec<Op>), AgainError> {
    if !source.state().is_finished() {
        return Err(AgainError::NotFinished(source.state()));
    }
    let start = source.position(from).ok_or(AgainError::NoSubtask(from.0))?;
    let subtasks = source.subtasks();
    let mut redo: Vec<bool> = subtasks
        .iter()
        .enumerate()
        .map(|(i, s)| {
            i >= start || !matches!(s.state(), SubtaskState::Done | SubtaskState::Skipped)
        })
        .collect();
    // Whatever depends on redone work is redone too (until nothing moves:
    // positions need not follow dependencies).
    loop {
        let mut moved = false;
        for (i, s) in subtasks.iter().enumerate() {
            if !redo[i]
                && s.dependencies()
                    .iter()
                    .any(|d| source.position(*d).is_some_and(|j| redo[j]))
            {
                redo[i] = true;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    // The new plan numbers its subtasks 1..n in the same order.
    let new_id = |old: SubtaskId| source.position(old).map(|i| SubtaskId(i as u32 + 1));
    let spec = NewPlan {
        title: source.title().to_string(),
        goal: source.goal().to_string(),
        description: source.description().to_string(),
        expected_outcome: source.expected_outcome().to_string(),
        mode: source.mode(),
        approval_required: false,
        draft: false,
        subtasks: subtasks
            .iter()
            .map(|s| NewSubtask {
                name: s.name().to_string(),
                description: s.description().to_string(),
                expected_outcome: s.expected_outcome().to_string(),
                reasoning: s.reasoning().to_string(),
                dependencies: s.dependencies().iter().filter_map(|d| new_id(*d)).collect(),
                assignee: s.assignee().map(str::to_string),
                tool: s.tool().map(str::to_string),
            })
            .collect(),
        ..NewPlan::default()
    };
    let mut ops = Vec::new();
    for (i, s) in subtasks.iter().enumerate().filter(|(i, _)| !redo[*i]) {
        let id = SubtaskId(i as u32 + 1);
        let note = Some(
            s.outcome()
                .unwrap_or("kept from the earlier run")
                .to_string(),
        );
        if s.state() == SubtaskState::Done {
            ops.push(Op::SetSubtaskState {
                id,
                state: SubtaskState::InProgress,
                note: None,
                start_next: false,
            });
            ops.push(Op::SetSubtaskState {
                id,
                state: SubtaskState::Done,
                note,
                start_next: false,
            });
        } else {
            ops.push(Op::SetSubtaskState {
                id,
                state: SubtaskState::Skipped,
                note,
                start_next: false,
            });
        }
    }
    Ok((spec, ops))
}

impl Agent {
    /// Starts run `id` on a copy of `source` (the plan of run `earlier`)
    /// that keeps the results before subtask `from` and redoes the rest;
    /// it goes straight to work. The caller has copied the earlier
    /// run's workspace into the new one.
    pub async fn start_again(
        &self,
        id: RunId,
        config: RunConfig,
        who: &str,
        earlier: RunId,
        source: &Plan,
        from: SubtaskId,
    ) -> Result<RunRecord, AgainFailure> {
        let (spec, ops) = again_from(source, from)?;
        let name = source.subtask(from).map_or("", |s| s.name()).to_string();
        let plan = self.host.create_plan(spec, AGENT_ACTOR).await?;
        if !ops.is_empty() {
            self.host.execute(plan.id(), ops, AGENT_ACTOR).await?;
        }
        let mut run = RunRecord::new(id, config);
        run.state = RunState::Running;
        run.round = 1;
        run.plan_id = Some(plan.id());
        run.started_by = who.to_string();
        run.model = Some(self.llm.model(crate::llm::CallRole::Executor));
        run.classification = Some(Classification {
            mode: source.mode(),
            reason: format!("run again from #{} '{name}' of run {earlier}", from.0),
            confidence: 1.0,
            by: DecidedBy::Person,
            in_words: false,
            about: Vec::new(),
        });
        run.again_of = Some(AgainOf {
            run: earlier,
            plan: source.id(),
            from,
        });
        self.host.save_run(&run).await?;
        self.host
            .log(
                run.id,
                RunEntry::StateChanged {
                    from: None,
                    to: run.state,
                    reason: format!(
                        "run again by {who} from #{} '{name}' of run {earlier}",
                        from.0
                    ),
                },
            )
            .await?;
        // The earlier plan names the new one (its comments stay open on a
        // finished plan), so each links to the other.
        let _ = self
            .host
            .execute(
                source.id(),
                vec![Op::Comment {
                    subtask: Some(from),
                    body: format!(
                        "Run again from here by {who}: plan {} (run {id})",
                        plan.id()
                    ),
                }],
                AGENT_ACTOR,
            )
            .await;
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan_engine::PlanState;

    fn at() -> plan_engine::Timestamp {
        chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    /// fetch(1) → parse(2) → chart(3), and notes(4) independent; 1, 2 and
    /// 4 done, 3 failed, then the plan failed.
    fn failed_plan() -> Plan {
        let spec = NewPlan {
            title: "Report".into(),
            subtasks: vec![
                NewSubtask::named("fetch"),
                NewSubtask::named("parse").after(&[1]),
                NewSubtask::named("chart").after(&[2]),
                NewSubtask::named("notes"),
            ],
            ..NewPlan::default()
        };
        let (mut plan, _) = Plan::create(&spec, "ana", at()).unwrap();
        let mut go = |id: u32, state: SubtaskState, note: &str| {
            plan.execute(
                &Op::SetSubtaskState {
                    id: SubtaskId(id),
                    state,
                    note: Some(note.into()),
                    start_next: false,
                }
                .into(),
                "agent",
                at(),
            )
            .unwrap();
        };
        for (id, last) in [
            (1, SubtaskState::Done),
            (2, SubtaskState::Done),
            (4, SubtaskState::Done),
            (3, SubtaskState::Failed),
        ] {
            go(id, SubtaskState::InProgress, "");
            go(id, last, &format!("result {id}"));
        }
        plan.execute(
            &Op::Finish {
                state: PlanState::Failed,
                outcome: "chart failed".into(),
            }
            .into(),
            "agent",
            at(),
        )
        .unwrap();
        plan
    }

    fn kept(ops: &[Op]) -> Vec<(u32, SubtaskState, Option<String>)> {
        ops.iter()
            .filter_map(|op| match op {
                Op::SetSubtaskState {
                    id, state, note, ..
                } if *state != SubtaskState::InProgress => Some((id.0, *state, note.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn running_again_from_a_subtask_keeps_the_results_before_it_and_redoes_it_and_what_follows() {
        let plan = failed_plan();
        let (spec, ops) = again_from(&plan, SubtaskId(2)).unwrap();
        assert_eq!(spec.subtasks.len(), 4);
        assert_eq!(spec.subtasks[2].dependencies, vec![SubtaskId(2)]);
        assert!(!spec.approval_required && !spec.draft);
        // fetch is kept; parse, chart and notes (after parse) are redone.
        assert_eq!(
            kept(&ops),
            vec![(1, SubtaskState::Done, Some("result 1".into()))]
        );
        // From the failed one: everything before it that was done is kept.
        let (_, ops) = again_from(&plan, SubtaskId(3)).unwrap();
        assert_eq!(
            kept(&ops).iter().map(|k| k.0).collect::<Vec<_>>(),
            vec![1, 2]
        );
        // The new plan takes the ops: the kept ones done, the rest to do.
        let (mut fresh, _) = Plan::create(&spec, "agent", at()).unwrap();
        let (_, ops) = again_from(&plan, SubtaskId(2)).unwrap();
        for op in ops {
            fresh.execute(&op.into(), "agent", at()).unwrap();
        }
        let states: Vec<SubtaskState> = fresh.subtasks().iter().map(|s| s.state()).collect();
        assert_eq!(
            states,
            vec![
                SubtaskState::Done,
                SubtaskState::Todo,
                SubtaskState::Todo,
                SubtaskState::Todo
            ]
        );
    }

    #[test]
    fn work_depending_on_a_redone_subtask_is_redone_even_when_it_comes_first() {
        let spec = NewPlan {
            title: "Odd order".into(),
            subtasks: vec![
                NewSubtask::named("uses b").after(&[2]),
                NewSubtask::named("b"),
            ],
            ..NewPlan::default()
        };
        let (mut plan, _) = Plan::create(&spec, "ana", at()).unwrap();
        for (id, state) in [
            (2, SubtaskState::InProgress),
            (2, SubtaskState::Done),
            (1, SubtaskState::InProgress),
            (1, SubtaskState::Done),
        ] {
            plan.execute(
                &Op::SetSubtaskState {
                    id: SubtaskId(id),
                    state,
                    note: None,
                    start_next: false,
                }
                .into(),
                "agent",
                at(),
            )
            .unwrap();
        }
        plan.execute(
            &Op::Finish {
                state: PlanState::Done,
                outcome: "ok".into(),
            }
            .into(),
            "agent",
            at(),
        )
        .unwrap();
        let (_, ops) = again_from(&plan, SubtaskId(2)).unwrap();
        assert!(kept(&ops).is_empty(), "#1 depends on the redone #2");
    }

    #[test]
    fn only_a_finished_plans_known_subtask_is_a_starting_point() {
        let plan = failed_plan();
        assert_eq!(
            again_from(&plan, SubtaskId(9)).unwrap_err(),
            AgainError::NoSubtask(9)
        );
        let (open, _) = Plan::create(
            &NewPlan {
                title: "open".into(),
                ..NewPlan::default()
            },
            "ana",
            at(),
        )
        .unwrap();
        assert!(matches!(
            again_from(&open, SubtaskId(1)),
            Err(AgainError::NotFinished(_))
        ));
    }
}
