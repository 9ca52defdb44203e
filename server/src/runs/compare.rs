//! Two runs side by side (issue 56): both plans as graphs, scored by the
//! engine's graph matching (node and edge F1, the matched subtasks), the
//! first model reply or tool call where their logs part, their answers,
//! and what each spent. Read from the runs' rows, their plans and their
//! logs' model and tool calls (not the rest of the logs).

use agent::RunId;
use run_model::{
    first_divergence, CostReport, EntryKind, GraphNode, LogStep, RunComparison, RunEntry, RunSide,
    RunTotals,
};

use super::{RunError, Runs};

impl Runs {
    /// Runs `a` and `b` side by side (either may be any run, finished or
    /// not; a plan that was deleted is an empty graph).
    pub async fn compare(&self, a: RunId, b: RunId) -> Result<RunComparison, RunError> {
        let (side_a, plan_a, steps_a) = self.side(a).await?;
        let (side_b, plan_b, steps_b) = self.side(b).await?;
        let (node_f1, edge_f1, matched) = match (&plan_a, &plan_b) {
            (Some(x), Some(y)) => {
                let found = plan_engine::graph_match(x, y);
                (found.node_f1, found.edge_f1, found.matched)
            }
            _ => (0.0, 0.0, Vec::new()),
        };
        Ok(RunComparison {
            same_task: side_a.task.trim() == side_b.task.trim(),
            a: side_a,
            b: side_b,
            node_f1,
            edge_f1,
            matched,
            divergence: first_divergence(&steps_a, &steps_b),
        })
    }

    /// One run's side, its plan and its log's steps.
    async fn side(
        &self,
        id: RunId,
    ) -> Result<(RunSide, Option<plan_engine::Plan>, Vec<LogStep>), RunError> {
        let record = self.record(id).await?;
        let plan = match record.plan_id {
            Some(plan) => self.plans.get(plan).await,
            None => None,
        };
        let (steps, totals, models) = self.steps_of(id).await?;
        let side = RunSide {
            run: id,
            plan_id: record.plan_id,
            title: plan
                .as_ref()
                .map(|p| p.title().to_string())
                .unwrap_or_default(),
            task: record.config.task.clone(),
            state: record.state,
            models,
            replay_of: record.config.replay.as_ref().map(|r| r.run),
            graph: plan.as_ref().map(GraphNode::of_plan).unwrap_or_default(),
            answer: record.answer.clone(),
            totals: RunTotals {
                wall_ms: record.spent.wall_ms,
                ..totals
            },
            steps: steps.len(),
        };
        Ok((side, plan, steps))
    }

    /// A run's log as the steps a comparison reads (its model calls and
    /// tool calls, in order), what they spent, and the models called.
    pub(crate) async fn steps_of(
        &self,
        id: RunId,
    ) -> Result<(Vec<LogStep>, RunTotals, Vec<String>), RunError> {
        let stored = self
            .log
            .run_log_of_kinds(id, &[EntryKind::LlmCall, EntryKind::ToolCall])
            .await?;
        let mut steps = Vec::new();
        let mut calls = Vec::new();
        let mut totals = RunTotals::default();
        for row in stored {
            // A line an older version wrote and this one cannot read is
            // left out, as the whole log's reader leaves it out.
            let Ok(entry) = serde_json::from_value::<RunEntry>(row.entry) else {
                continue;
            };
            if let Some(step) = LogStep::of(&entry) {
                steps.push(step);
            }
            match entry {
                RunEntry::LlmCall(call) => calls.push(call),
                RunEntry::ToolCall { replayed, .. } => {
                    totals.tool_calls += 1;
                    totals.replayed_calls += u32::from(replayed);
                }
                _ => {}
            }
        }
        let cost = CostReport::of(&calls);
        totals.llm_calls = cost.total.calls;
        totals.prompt_tokens = cost.total.prompt_tokens;
        totals.completion_tokens = cost.total.completion_tokens;
        totals.cost = cost.total.cost;
        totals.unpriced_calls = cost.total.unpriced_calls;
        let models = cost.by_model.into_iter().map(|m| m.model).collect();
        Ok((steps, totals, models))
    }
}
