//! "Needs you": everything across plans and runs that waits for a person,
//! gathered from where it already lives (the plans' states and questions,
//! the runs' rows and their guarded calls), so it cannot disagree with the
//! board.

use std::collections::HashMap;

use plan_engine::{PlanId, PlanState};
use run_model::{Need, NeedKind, RunState};

use super::{RunError, Runs};

/// Most runs of one state looked at: an inbox is for people, not a report.
const RUNS_LOOKED_AT: u32 = 500;

impl Runs {
    /// Everything waiting for a person, approvals first, oldest first.
    pub async fn needs(&self) -> Result<Vec<Need>, RunError> {
        // Plans: waiting for approval, or holding a question from the agent.
        let plans: Vec<(PlanId, String, plan_engine::Timestamp, Vec<Need>)> = self
            .plans
            .scan(|plan| {
                let mut needs = Vec::new();
                let base = |kind, subtask, text: &str| {
                    Need::new(
                        kind,
                        (plan.id(), plan.title()),
                        None,
                        subtask,
                        text,
                        plan.updated_at(),
                    )
                };
                if plan.state() == PlanState::AwaitingApproval {
                    needs.push(base(NeedKind::Approval, None, plan.goal()));
                }
                if !plan.state().is_finished() {
                    for s in plan.subtasks() {
                        if let Some(question) = s.question() {
                            needs.push(base(NeedKind::Question, Some(s.id()), question));
                        }
                    }
                }
                Some((
                    plan.id(),
                    plan.title().to_string(),
                    plan.updated_at(),
                    needs,
                ))
            })
            .await;
        let mut titles: HashMap<PlanId, (String, plan_engine::Timestamp)> = HashMap::new();
        let mut needs = Vec::new();
        for (id, title, at, found) in plans {
            titles.insert(id, (title, at));
            needs.extend(found);
        }
        // Runs: paused ones wait for a person to resume them; running
        // ones may wait for a decision on a guarded tool call.
        let on_plan = |run: &run_model::RunRecord| {
            let id = run.plan_id?;
            let (title, at) = titles.get(&id)?;
            Some((id, title.clone(), *at))
        };
        for run in self
            .store
            .list_runs(Some(RunState::Paused), None, 0, RUNS_LOOKED_AT)
            .await?
        {
            let Some((plan_id, plan_title, since)) = on_plan(&run) else {
                continue;
            };
            needs.push(Need::new(
                NeedKind::Stuck,
                (plan_id, &plan_title),
                Some(run.id),
                None,
                run.reason.as_deref().unwrap_or("paused"),
                since,
            ));
        }
        for run in self
            .store
            .list_runs(Some(RunState::Running), None, 0, RUNS_LOOKED_AT)
            .await?
        {
            let Some((plan_id, plan_title, since)) = on_plan(&run) else {
                continue;
            };
            for call in self.pending_calls(run.id).await? {
                needs.push(Need::new(
                    NeedKind::ToolCall,
                    (plan_id, &plan_title),
                    Some(run.id),
                    Some(call.subtask),
                    &format!("{} {}", call.name, call.arguments),
                    since,
                ));
            }
        }
        Need::sort(&mut needs);
        Ok(needs)
    }
}
