//! planboard's own tools: snake_case, subtasks addressed by their stable id,
//! every engine operation available. This is the set MCP clients get.

use std::fmt::Write;

use serde_json::Value;

use super::lenient::Int;
use super::{subtask_id, Reply, Session, ToolError};
use crate::command::{InfoPatch, Op, Position, SubtaskPatch};
use crate::model::{NewPlan, Plan, PlanState, SubtaskId, SubtaskState, DEFAULT_BATCH};
use crate::render::{markdown, subtask_line};

mod args;
use args::*;

toolset! {
    /// A call to one of the dialect's tools, its arguments parsed.
    Call {
        "create_plan" => CreatePlan(CreatePlan),
        "get_plan" => GetPlan(GetPlan),
        "list_plans" => ListPlans(ListPlans),
        "set_active_plan" => SetActivePlan(SetActivePlan),
        "update_plan_info" => UpdatePlanInfo(UpdatePlanInfo),
        "add_subtask" => AddSubtask(AddSubtask),
        "edit_subtask" => EditSubtask(EditSubtask),
        "set_dependencies" => SetDependencies(SetDependencies),
        "delete_subtask" => DeleteSubtask(DeleteSubtask),
        "move_subtask" => MoveSubtask(MoveSubtask),
        "start_subtask" => StartSubtask(StartSubtask),
        "start_next" => StartNext(StartNext),
        "next_batch" => NextBatch(NextBatch),
        "complete_subtask" => CompleteSubtask(CompleteSubtask),
        "fail_subtask" => FailSubtask(FailSubtask),
        "skip_subtask" => SkipSubtask(SkipSubtask),
        "block_subtask" => BlockSubtask(BlockSubtask),
        "reset_subtask" => ResetSubtask(ResetSubtask),
        "set_notes" => SetNotes(SetNotes),
        "view_subtasks" => ViewSubtasks(ViewSubtasks),
        "get_subtask_count" => GetSubtaskCount(GetSubtaskCount),
        "submit_plan" => SubmitPlan(SubmitPlan),
        "finish_plan" => FinishPlan(FinishPlan),
        "view_historical_plans" => ViewHistoricalPlans(ViewHistoricalPlans),
        "recover_plan" => RecoverPlan(RecoverPlan),
        "comment" => Comment(CommentArgs),
    }
}

fn limit(value: Option<Int>) -> Option<u32> {
    value.map(|v| u32::try_from(v.0).unwrap_or(u32::MAX))
}

pub(crate) fn call(s: &mut Session<'_>, tool: &str, raw: &Value) -> Result<Reply, ToolError> {
    match Call::parse(tool, raw)? {
        Call::CreatePlan(a) => {
            let spec = NewPlan {
                id: s.ctx.new_plan_id,
                title: a.title,
                goal: a.goal,
                description: a.description,
                expected_outcome: a.expected_outcome,
                approval_required: a.approval_required,
                max_subtasks: limit(a.max_subtasks),
                max_parallel: limit(a.max_parallel),
                need_user_confirm: a.need_user_confirm,
                subtasks: a
                    .subtasks
                    .0
                    .into_iter()
                    .map(SubtaskSpec::into_new)
                    .collect(),
                ..NewPlan::default()
            };
            let (id, events) = s.create(spec)?;
            let plan = s.plan(id)?;
            let text = format!(
                "Created plan {id} (version {}).\n\n{}",
                plan.version,
                overview(plan)
            );
            Ok(Reply::text(text).on(id, events))
        }
        Call::GetPlan(a) => {
            let id = s.resolve(a.plan_id.as_deref())?;
            Ok(Reply::text(overview(s.plan(id)?)).on(id, Vec::new()))
        }
        Call::ListPlans(_) => {
            let active = s.current_id().ok();
            let mut out = String::new();
            for p in s.book.plans() {
                let marker = if Some(p.id) == active {
                    " (current)"
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "- {}{marker}: '{}' [{}] {}% of {} subtasks",
                    p.id,
                    p.title,
                    p.state,
                    p.percent(),
                    p.subtasks.len()
                );
            }
            if out.is_empty() {
                out = "There are no plans yet; create one with 'create_plan'.".into();
            }
            Ok(Reply::text(out))
        }
        Call::SetActivePlan(a) => {
            let id = s.resolve(Some(&a.plan_id))?;
            s.book.set_active(&s.ctx.session, Some(id));
            Ok(Reply::text(format!("Plan {id} is now the current plan.")).on(id, Vec::new()))
        }
        Call::UpdatePlanInfo(a) => {
            let patch = InfoPatch {
                title: a.title,
                goal: a.goal,
                description: a.description,
                expected_outcome: a.expected_outcome,
                mode: None,
                max_subtasks: limit(a.max_subtasks),
                max_parallel: limit(a.max_parallel),
                need_user_confirm: a.need_user_confirm,
            };
            mutate(s, Op::UpdateInfo { patch }, |_| "Plan info updated.".into())
        }
        Call::AddSubtask(a) => {
            let after = a.after_subtask_id.map(|i| subtask_id(i.0));
            let position = match (after, a.before_subtask_id) {
                (Some(x), _) => Position::After(x),
                (None, Some(b)) => Position::Before(subtask_id(b.0)),
                (None, None) => Position::End,
            };
            let op = Op::AddSubtask {
                subtask: a.subtask.into_new(),
                position,
                rewire_after: after.filter(|_| a.rewire.unwrap_or(true)),
                required_by: Vec::new(),
            };
            mutate(s, op, |plan| {
                let id = SubtaskId(plan.next_subtask_id - 1);
                format!("Added {}", line(plan, id))
            })
        }
        Call::EditSubtask(a) => {
            let id = subtask_id(a.subtask_id.0);
            let patch = SubtaskPatch {
                name: a.name,
                description: a.description,
                expected_outcome: a.expected_outcome,
                reasoning: a.reasoning,
                assignee: a.assignee,
                tool: a.tool,
            };
            mutate(s, Op::EditSubtask { id, patch }, |plan| {
                format!("Edited {}", line(plan, id))
            })
        }
        Call::SetDependencies(a) => {
            let id = subtask_id(a.subtask_id.0);
            let dependencies = a.dependencies.0.into_iter().map(subtask_id).collect();
            mutate(s, Op::SetDependencies { id, dependencies }, |plan| {
                format!("Dependencies set: {}", line(plan, id))
            })
        }
        Call::DeleteSubtask(a) => {
            let id = subtask_id(a.subtask_id.0);
            mutate(s, Op::DeleteSubtask { id }, |_| {
                format!("Deleted subtask {id}.")
            })
        }
        Call::MoveSubtask(a) => {
            let id = subtask_id(a.subtask_id.0);
            let to_index = usize::try_from(a.to_index.0).unwrap_or(usize::MAX);
            mutate(s, Op::MoveSubtask { id, to_index }, |_| {
                format!("Moved subtask {id} to index {to_index}.")
            })
        }
        Call::StartSubtask(a) => set_state(s, a.subtask_id, SubtaskState::InProgress, None, false),
        Call::StartNext(a) => {
            let count = a.count.map_or(1, |c| c.0 as usize);
            let id = s.current_id()?;
            let events = s.exec(id, vec![Op::StartNext { count }])?;
            let plan = s.plan(id)?;
            let started: Vec<String> = events
                .iter()
                .filter_map(|e| match &e.kind {
                    crate::event::EventKind::SubtaskStateChanged { id, .. } => {
                        Some(line(plan, *id))
                    }
                    _ => None,
                })
                .collect();
            Ok(Reply::text(format!("Started:\n{}", started.join("\n"))).on(id, events))
        }
        Call::NextBatch(a) => {
            let k = a.k.map_or(DEFAULT_BATCH, |k| k.0 as usize);
            let plan = s.current()?;
            let batch = plan.next_batch(k);
            if batch.is_empty() {
                return Ok(Reply::text("No subtask can start right now."));
            }
            let lines: Vec<String> = batch.iter().map(|id| line(plan, *id)).collect();
            Ok(Reply::text(format!(
                "Ready to start:\n{}",
                lines.join("\n")
            )))
        }
        Call::CompleteSubtask(a) => set_state(
            s,
            a.subtask_id,
            SubtaskState::Done,
            Some(a.outcome),
            a.start_next,
        ),
        Call::FailSubtask(a) => {
            set_state(s, a.subtask_id, SubtaskState::Failed, Some(a.error), false)
        }
        Call::SkipSubtask(a) => set_state(
            s,
            a.subtask_id,
            SubtaskState::Skipped,
            Some(a.reason),
            false,
        ),
        Call::BlockSubtask(a) => set_state(
            s,
            a.subtask_id,
            SubtaskState::Blocked,
            Some(a.reason),
            false,
        ),
        Call::ResetSubtask(a) => set_state(s, a.subtask_id, SubtaskState::Todo, a.reason, false),
        Call::SetNotes(a) => {
            let id = subtask_id(a.subtask_id.0);
            mutate(s, Op::SetNotes { id, notes: a.notes }, |_| {
                format!("Notes of subtask {id} saved.")
            })
        }
        Call::ViewSubtasks(a) => {
            let plan = s.current()?;
            let mut out = String::new();
            for n in a.subtask_ids.0 {
                let id = subtask_id(n);
                match plan.subtask(id) {
                    Some(sub) => {
                        let _ = writeln!(
                            out,
                            "{}",
                            serde_json::to_string_pretty(sub).unwrap_or_default()
                        );
                    }
                    None => {
                        let _ = writeln!(out, "No subtask has id {id}.");
                    }
                }
            }
            Ok(Reply::text(out))
        }
        Call::GetSubtaskCount(_) => {
            let plan = s.current()?;
            let mut out = format!("{} subtasks:", plan.subtasks.len());
            for st in SubtaskState::ALL {
                let _ = write!(out, " {} {st},", plan.count(st));
            }
            out.pop();
            Ok(Reply::text(out))
        }
        Call::SubmitPlan(_) => mutate(s, Op::Submit {}, |plan| {
            format!("The plan is now {}.", plan.state)
        }),
        Call::FinishPlan(a) => {
            let state = match a.state {
                FinishState::Done => PlanState::Done,
                FinishState::Failed => PlanState::Failed,
                FinishState::Abandoned => PlanState::Abandoned,
            };
            let outcome = a.outcome;
            mutate(s, Op::Finish { state, outcome }, |plan| {
                format!("The plan is {}.", plan.state)
            })
        }
        Call::ViewHistoricalPlans(_) => {
            let mut out = String::new();
            for p in s.book.plans().into_iter().filter(|p| p.state.is_finished()) {
                let _ = writeln!(
                    out,
                    "- {}: '{}' [{}] outcome: {}",
                    p.id,
                    p.title,
                    p.state,
                    p.outcome.as_deref().unwrap_or("N/A")
                );
            }
            if out.is_empty() {
                out = "There are no finished plans.".into();
            }
            Ok(Reply::text(out))
        }
        Call::RecoverPlan(a) => {
            let id = s.resolve(Some(&a.plan_id))?;
            let events = s.exec(id, vec![Op::Recover {}])?;
            s.book.set_active(&s.ctx.session, Some(id));
            let plan = s.plan(id)?;
            Ok(Reply::text(format!(
                "Recovered; the plan is {} and current.",
                plan.state
            ))
            .on(id, events))
        }
        Call::Comment(a) => {
            let op = Op::Comment {
                subtask: a.subtask_id.map(|i| subtask_id(i.0)),
                body: a.body,
            };
            mutate(s, op, |_| "Comment added.".into())
        }
    }
}

fn set_state(
    s: &mut Session<'_>,
    id: Int,
    state: SubtaskState,
    note: Option<String>,
    start_next: bool,
) -> Result<Reply, ToolError> {
    let id = subtask_id(id.0);
    let plan_id = s.current_id()?;
    if s.already_in(plan_id, id, state) {
        let plan = s.plan(plan_id)?;
        return Ok(Reply::text(format!(
            "{}\nIt already was {state}; nothing changed.",
            line(plan, id)
        )));
    }
    let op = Op::SetSubtaskState {
        id,
        state,
        note,
        start_next,
    };
    let events = s.exec(plan_id, vec![op])?;
    let plan = s.plan(plan_id)?;
    let mut text = line(plan, id);
    for e in &events {
        if let crate::event::EventKind::SubtaskStateChanged { id: other, .. } = &e.kind {
            if *other != id {
                let _ = write!(text, "\nStarted next: {}", line(plan, *other));
            }
        }
    }
    Ok(Reply::text(text).on(plan_id, events))
}

fn mutate(
    s: &mut Session<'_>,
    op: Op,
    describe: impl FnOnce(&Plan) -> String,
) -> Result<Reply, ToolError> {
    let id = s.current_id()?;
    let events = s.exec(id, vec![op])?;
    let text = describe(s.plan(id)?);
    Ok(Reply::text(text).on(id, events))
}

fn line(plan: &Plan, id: SubtaskId) -> String {
    plan.subtask(id)
        .map(subtask_line)
        .unwrap_or_else(|| format!("subtask {id}"))
}

fn overview(plan: &Plan) -> String {
    let progress = plan.progress();
    let ids = |v: &[SubtaskId]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|i| format!("#{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    format!(
        "{}\nReady: {}\nCritical path ({} left): {}\nVersion: {}",
        markdown(plan),
        ids(&progress.ready),
        progress.critical_path.len(),
        ids(&progress.critical_path),
        plan.version
    )
}
