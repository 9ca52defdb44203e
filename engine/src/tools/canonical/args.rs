//! The canonical tools' arguments: one type per tool, whose schemars
//! schema is the OpenAI function's `parameters`.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::model::NewSubtask;
use crate::tools::lenient::{Int, Ints, List};
use crate::tools::subtask_id;

/// A subtask to create.
#[derive(Deserialize, JsonSchema)]
pub(super) struct SubtaskSpec {
    /// Short, specific name of the subtask.
    pub(super) name: String,
    #[serde(default)]
    pub(super) description: String,
    /// What done looks like, concretely.
    #[serde(default)]
    pub(super) expected_outcome: String,
    /// Why this subtask is needed.
    #[serde(default)]
    pub(super) reasoning: String,
    /// Ids of subtasks that must be done first. In create_plan, subtasks are numbered 1, 2, 3… in list order.
    #[serde(default)]
    pub(super) dependencies: Ints,
    #[serde(default)]
    pub(super) assignee: Option<String>,
    /// The one work tool this subtask is meant to use, e.g. run_python, read_file or an MCP tool as server.tool.
    #[serde(default)]
    pub(super) tool: Option<String>,
}

impl SubtaskSpec {
    pub(super) fn into_new(self) -> NewSubtask {
        NewSubtask {
            name: self.name,
            description: self.description,
            expected_outcome: self.expected_outcome,
            reasoning: self.reasoning,
            dependencies: self.dependencies.0.into_iter().map(subtask_id).collect(),
            assignee: self.assignee,
            tool: self.tool,
        }
    }
}

/// Create a plan and make it this session's current plan. Subtasks get ids 1, 2, 3… that never change.
#[derive(Deserialize, JsonSchema)]
pub(super) struct CreatePlan {
    pub(super) title: String,
    /// The overall goal the plan serves.
    #[serde(default)]
    pub(super) goal: String,
    #[serde(default)]
    pub(super) description: String,
    #[serde(default)]
    pub(super) expected_outcome: String,
    pub(super) subtasks: List<SubtaskSpec>,
    /// Require a person's approval before any subtask may start.
    #[serde(default)]
    pub(super) approval_required: bool,
    /// The most subtasks the plan may ever hold (default: this session's setting, else no limit).
    #[serde(default)]
    pub(super) max_subtasks: Option<Int>,
    /// How many subtasks may be in progress at once (default: no limit).
    #[serde(default)]
    pub(super) max_parallel: Option<Int>,
    /// Present the plan to the user and wait for their go-ahead before executing it (default: this session's setting, else false).
    #[serde(default)]
    pub(super) need_user_confirm: Option<bool>,
}

/// Show a plan (default: the current one) with every subtask, progress, ready subtasks and critical path.
#[derive(Deserialize, JsonSchema)]
pub(super) struct GetPlan {
    /// A plan id or key; omit for the current plan.
    #[serde(default)]
    pub(super) plan_id: Option<String>,
}

/// List all plans with their state and progress.
#[derive(Deserialize, JsonSchema)]
pub(super) struct ListPlans {}

/// Make another plan this session's current plan.
#[derive(Deserialize, JsonSchema)]
pub(super) struct SetActivePlan {
    pub(super) plan_id: String,
}

/// Change the current plan's title, goal, description, expected outcome or limits; omitted fields are kept.
#[derive(Deserialize, JsonSchema)]
pub(super) struct UpdatePlanInfo {
    #[serde(default)]
    pub(super) title: Option<String>,
    #[serde(default)]
    pub(super) goal: Option<String>,
    #[serde(default)]
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) expected_outcome: Option<String>,
    /// 0 removes the limit.
    #[serde(default)]
    pub(super) max_subtasks: Option<Int>,
    /// 0 removes the limit.
    #[serde(default)]
    pub(super) max_parallel: Option<Int>,
    /// Whether to wait for the user's go-ahead before executing the plan.
    #[serde(default)]
    pub(super) need_user_confirm: Option<bool>,
}

/// Add a subtask. With after_subtask_id, subtasks that depended on that one (and have not started) will depend on the new subtask instead, unless rewire is false.
#[derive(Deserialize, JsonSchema)]
pub(super) struct AddSubtask {
    #[serde(flatten)]
    pub(super) subtask: SubtaskSpec,
    /// Insert after this subtask (default: at the end).
    #[serde(default)]
    pub(super) after_subtask_id: Option<Int>,
    /// Insert before this subtask.
    #[serde(default)]
    pub(super) before_subtask_id: Option<Int>,
    /// Move the dependents of after_subtask_id onto the new subtask (default true).
    #[serde(default)]
    pub(super) rewire: Option<bool>,
}

/// Edit a subtask that has not started; the assignee can also change while it runs.
#[derive(Deserialize, JsonSchema)]
pub(super) struct EditSubtask {
    pub(super) subtask_id: Int,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) expected_outcome: Option<String>,
    #[serde(default)]
    pub(super) reasoning: Option<String>,
    /// An empty string clears it.
    #[serde(default)]
    pub(super) assignee: Option<String>,
    /// The work tool to use, e.g. run_python; an empty string clears it.
    #[serde(default)]
    pub(super) tool: Option<String>,
}

/// Replace the dependencies of a subtask that has not started. Cycles are refused.
#[derive(Deserialize, JsonSchema)]
pub(super) struct SetDependencies {
    pub(super) subtask_id: Int,
    pub(super) dependencies: Ints,
}

/// Delete a subtask that is not in progress; subtasks waiting on it inherit its dependencies.
#[derive(Deserialize, JsonSchema)]
pub(super) struct DeleteSubtask {
    pub(super) subtask_id: Int,
}

/// Move a subtask to another position in the display order (0-based).
#[derive(Deserialize, JsonSchema)]
pub(super) struct MoveSubtask {
    pub(super) subtask_id: Int,
    pub(super) to_index: Int,
}

/// Start a subtask whose dependencies are all done or skipped.
#[derive(Deserialize, JsonSchema)]
pub(super) struct StartSubtask {
    pub(super) subtask_id: Int,
}

/// Start the next ready subtasks in plan order (default 1), within the plan's parallel limit.
#[derive(Deserialize, JsonSchema)]
pub(super) struct StartNext {
    #[serde(default)]
    pub(super) count: Option<Int>,
}

/// List up to k subtasks that could start now, without starting them (default 5).
#[derive(Deserialize, JsonSchema)]
pub(super) struct NextBatch {
    #[serde(default)]
    pub(super) k: Option<Int>,
}

/// Mark an in-progress subtask done with its specific outcome (data, findings, file paths).
#[derive(Deserialize, JsonSchema)]
pub(super) struct CompleteSubtask {
    pub(super) subtask_id: Int,
    pub(super) outcome: String,
    /// Also start the first subtask that is ready afterwards.
    #[serde(default)]
    pub(super) start_next: bool,
}

/// Mark an in-progress subtask failed with the error; it can be retried later.
#[derive(Deserialize, JsonSchema)]
pub(super) struct FailSubtask {
    pub(super) subtask_id: Int,
    pub(super) error: String,
}

/// Skip a subtask that is no longer needed; subtasks depending on it may then start.
#[derive(Deserialize, JsonSchema)]
pub(super) struct SkipSubtask {
    pub(super) subtask_id: Int,
    pub(super) reason: String,
}

/// Mark a subtask blocked with what blocks it.
#[derive(Deserialize, JsonSchema)]
pub(super) struct BlockSubtask {
    pub(super) subtask_id: Int,
    pub(super) reason: String,
}

/// Put a subtask back to todo: stop it, unblock it, retry it after a failure, or reopen it.
#[derive(Deserialize, JsonSchema)]
pub(super) struct ResetSubtask {
    pub(super) subtask_id: Int,
    #[serde(default)]
    pub(super) reason: Option<String>,
}

/// Replace a subtask's working notes.
#[derive(Deserialize, JsonSchema)]
pub(super) struct SetNotes {
    pub(super) subtask_id: Int,
    pub(super) notes: String,
}

/// Show the full details of some subtasks.
#[derive(Deserialize, JsonSchema)]
pub(super) struct ViewSubtasks {
    pub(super) subtask_ids: Ints,
}

/// Count the current plan's subtasks per state.
#[derive(Deserialize, JsonSchema)]
pub(super) struct GetSubtaskCount {}

/// Submit a draft plan for approval (or straight to approved when no approval is required).
#[derive(Deserialize, JsonSchema)]
pub(super) struct SubmitPlan {}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum FinishState {
    Done,
    Failed,
    Abandoned,
}

/// Finish the current plan: done (every subtask done or skipped), failed, or abandoned. Confirm with the user before abandoning.
#[derive(Deserialize, JsonSchema)]
pub(super) struct FinishPlan {
    pub(super) state: FinishState,
    /// The plan's specific outcome, or the reason it failed or was abandoned.
    pub(super) outcome: String,
}

/// List finished plans (done, failed, abandoned).
#[derive(Deserialize, JsonSchema)]
pub(super) struct ViewHistoricalPlans {}

/// Reopen a finished plan and make it the current plan.
#[derive(Deserialize, JsonSchema)]
pub(super) struct RecoverPlan {
    pub(super) plan_id: String,
}

/// Comment on the current plan or one of its subtasks, for the people reviewing it.
#[derive(Deserialize, JsonSchema)]
pub(super) struct CommentArgs {
    pub(super) body: String,
    #[serde(default)]
    pub(super) subtask_id: Option<Int>,
}
