//! planboard's own tools: snake_case, subtasks addressed by their stable id,
//! every engine operation available. This is the set MCP clients get.

use std::fmt::Write;

use serde_json::Value;

use super::lenient::Int;
use super::{args, function, subtask_id, unknown_tool, Reply, Session, ToolError};
use crate::command::{InfoPatch, Op, Position, SubtaskPatch};
use crate::model::{NewPlan, Plan, PlanState, SubtaskId, SubtaskState, DEFAULT_BATCH};
use crate::render::{markdown, subtask_line};

mod args;
use args::*;

pub(crate) fn specs() -> Vec<Value> {
    vec![
        function::<CreatePlan>("create_plan"),
        function::<GetPlan>("get_plan"),
        function::<ListPlans>("list_plans"),
        function::<SetActivePlan>("set_active_plan"),
        function::<UpdatePlanInfo>("update_plan_info"),
        function::<AddSubtask>("add_subtask"),
        function::<EditSubtask>("edit_subtask"),
        function::<SetDependencies>("set_dependencies"),
        function::<DeleteSubtask>("delete_subtask"),
        function::<MoveSubtask>("move_subtask"),
        function::<StartSubtask>("start_subtask"),
        function::<StartNext>("start_next"),
        function::<NextBatch>("next_batch"),
        function::<CompleteSubtask>("complete_subtask"),
        function::<FailSubtask>("fail_subtask"),
        function::<SkipSubtask>("skip_subtask"),
        function::<BlockSubtask>("block_subtask"),
        function::<ResetSubtask>("reset_subtask"),
        function::<SetNotes>("set_notes"),
        function::<ViewSubtasks>("view_subtasks"),
        function::<GetSubtaskCount>("get_subtask_count"),
        function::<SubmitPlan>("submit_plan"),
        function::<FinishPlan>("finish_plan"),
        function::<ViewHistoricalPlans>("view_historical_plans"),
        function::<RecoverPlan>("recover_plan"),
        function::<CommentArgs>("comment"),
    ]
}

fn limit(value: Option<Int>) -> Option<u32> {
    value.map(|v| u32::try_from(v.0).unwrap_or(u32::MAX))
}

pub(crate) fn call(s: &mut Session<'_>, tool: &str, raw: &Value) -> Result<Reply, ToolError> {
    match tool {
        "create_plan" => {
            let a: CreatePlan = args(tool, raw)?;
            let spec = NewPlan {
                id: s.ctx.new_plan_id,
                title: a.title,
                goal: a.goal,
                description: a.description,
                expected_outcome: a.expected_outcome,
                approval_required: a.approval_required,
                max_subtasks: limit(a.max_subtasks),
                max_parallel: limit(a.max_parallel),
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
        "get_plan" => {
            let a: GetPlan = args(tool, raw)?;
            let id = s.resolve(a.plan_id.as_deref())?;
            Ok(Reply::text(overview(s.plan(id)?)).on(id, Vec::new()))
        }
        "list_plans" => {
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
        "set_active_plan" => {
            let a: SetActivePlan = args(tool, raw)?;
            let id = s.resolve(Some(&a.plan_id))?;
            s.book.set_active(&s.ctx.session, Some(id));
            Ok(Reply::text(format!("Plan {id} is now the current plan.")).on(id, Vec::new()))
        }
        "update_plan_info" => {
            let a: UpdatePlanInfo = args(tool, raw)?;
            let patch = InfoPatch {
                title: a.title,
                goal: a.goal,
                description: a.description,
                expected_outcome: a.expected_outcome,
                mode: None,
                max_subtasks: limit(a.max_subtasks),
                max_parallel: limit(a.max_parallel),
            };
            mutate(s, Op::UpdateInfo { patch }, |_| "Plan info updated.".into())
        }
        "add_subtask" => {
            let a: AddSubtask = args(tool, raw)?;
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
        "edit_subtask" => {
            let a: EditSubtask = args(tool, raw)?;
            let id = subtask_id(a.subtask_id.0);
            let patch = SubtaskPatch {
                name: a.name,
                description: a.description,
                expected_outcome: a.expected_outcome,
                reasoning: a.reasoning,
                assignee: a.assignee,
            };
            mutate(s, Op::EditSubtask { id, patch }, |plan| {
                format!("Edited {}", line(plan, id))
            })
        }
        "set_dependencies" => {
            let a: SetDependencies = args(tool, raw)?;
            let id = subtask_id(a.subtask_id.0);
            let dependencies = a.dependencies.0.into_iter().map(subtask_id).collect();
            mutate(s, Op::SetDependencies { id, dependencies }, |plan| {
                format!("Dependencies set: {}", line(plan, id))
            })
        }
        "delete_subtask" => {
            let a: DeleteSubtask = args(tool, raw)?;
            let id = subtask_id(a.subtask_id.0);
            mutate(s, Op::DeleteSubtask { id }, |_| {
                format!("Deleted subtask {id}.")
            })
        }
        "move_subtask" => {
            let a: MoveSubtask = args(tool, raw)?;
            let id = subtask_id(a.subtask_id.0);
            let to_index = usize::try_from(a.to_index.0).unwrap_or(usize::MAX);
            mutate(s, Op::MoveSubtask { id, to_index }, |_| {
                format!("Moved subtask {id} to index {to_index}.")
            })
        }
        "start_subtask" => {
            let a: StartSubtask = args(tool, raw)?;
            set_state(s, a.subtask_id, SubtaskState::InProgress, None, false)
        }
        "start_next" => {
            let a: StartNext = args(tool, raw)?;
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
        "next_batch" => {
            let a: NextBatch = args(tool, raw)?;
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
        "complete_subtask" => {
            let a: CompleteSubtask = args(tool, raw)?;
            set_state(
                s,
                a.subtask_id,
                SubtaskState::Done,
                Some(a.outcome),
                a.start_next,
            )
        }
        "fail_subtask" => {
            let a: FailSubtask = args(tool, raw)?;
            set_state(s, a.subtask_id, SubtaskState::Failed, Some(a.error), false)
        }
        "skip_subtask" => {
            let a: SkipSubtask = args(tool, raw)?;
            set_state(
                s,
                a.subtask_id,
                SubtaskState::Skipped,
                Some(a.reason),
                false,
            )
        }
        "block_subtask" => {
            let a: BlockSubtask = args(tool, raw)?;
            set_state(
                s,
                a.subtask_id,
                SubtaskState::Blocked,
                Some(a.reason),
                false,
            )
        }
        "reset_subtask" => {
            let a: ResetSubtask = args(tool, raw)?;
            set_state(s, a.subtask_id, SubtaskState::Todo, a.reason, false)
        }
        "set_notes" => {
            let a: SetNotes = args(tool, raw)?;
            let id = subtask_id(a.subtask_id.0);
            mutate(s, Op::SetNotes { id, notes: a.notes }, |_| {
                format!("Notes of subtask {id} saved.")
            })
        }
        "view_subtasks" => {
            let a: ViewSubtasks = args(tool, raw)?;
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
        "get_subtask_count" => {
            let plan = s.current()?;
            let mut out = format!("{} subtasks:", plan.subtasks.len());
            for st in SubtaskState::ALL {
                let _ = write!(out, " {} {st},", plan.count(st));
            }
            out.pop();
            Ok(Reply::text(out))
        }
        "submit_plan" => mutate(s, Op::Submit, |plan| {
            format!("The plan is now {}.", plan.state)
        }),
        "finish_plan" => {
            let a: FinishPlan = args(tool, raw)?;
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
        "view_historical_plans" => {
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
        "recover_plan" => {
            let a: RecoverPlan = args(tool, raw)?;
            let id = s.resolve(Some(&a.plan_id))?;
            let events = s.exec(id, vec![Op::Recover])?;
            s.book.set_active(&s.ctx.session, Some(id));
            let plan = s.plan(id)?;
            Ok(Reply::text(format!(
                "Recovered; the plan is {} and current.",
                plan.state
            ))
            .on(id, events))
        }
        "comment" => {
            let a: CommentArgs = args(tool, raw)?;
            let op = Op::Comment {
                subtask: a.subtask_id.map(|i| subtask_id(i.0)),
                body: a.body,
            };
            mutate(s, op, |_| "Comment added.".into())
        }
        _ => Err(unknown_tool(tool, specs())),
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
