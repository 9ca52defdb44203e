//! AgentScope's tool arguments, as PlanNotebook names them: one type per
//! tool, whose schemars schema is the OpenAI function's `parameters`.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::model::NewSubtask;
use crate::tools::lenient::{Int, Ints, List};

/// A subtask of a plan.
#[derive(Deserialize, JsonSchema)]
pub(super) struct SubTask {
    /// The subtask name, should be concise, descriptive and not exceed 10 words.
    pub(super) name: String,
    /// The subtask description, including the constraints, target and outcome to be achieved.
    #[serde(default)]
    pub(super) description: String,
    /// The expected outcome of the subtask, which should be specific, concrete and measurable.
    #[serde(default)]
    pub(super) expected_outcome: String,
}

impl SubTask {
    pub(super) fn to_new(&self) -> NewSubtask {
        NewSubtask {
            name: self.name.clone(),
            description: self.description.clone(),
            expected_outcome: self.expected_outcome.clone(),
            ..NewSubtask::default()
        }
    }
}

/// Create a plan by given name and sub-tasks. A current unfinished plan is archived, not lost.
#[derive(Deserialize, JsonSchema)]
pub(super) struct CreatePlan {
    /// The plan name, should be concise, descriptive and not exceed 10 words.
    pub(super) name: String,
    /// The plan description, including the constraints, target and outcome to be achieved. It should be clear, specific and concise.
    #[serde(default)]
    pub(super) description: String,
    /// The expected outcome of the plan, which should be specific, concrete and measurable.
    #[serde(default)]
    pub(super) expected_outcome: String,
    /// A list of sequential sub-tasks that make up the plan.
    pub(super) subtasks: List<SubTask>,
}

/// Update the current plan's name, description or expected outcome; omitted fields are kept.
#[derive(Deserialize, JsonSchema)]
pub(super) struct UpdatePlanInfo {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) expected_outcome: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum ReviseAction {
    Add,
    Revise,
    Delete,
}

/// Revise the current plan by adding, revising or deleting a sub-task.
#[derive(Deserialize, JsonSchema)]
pub(super) struct ReviseCurrentPlan {
    /// The index of the sub-task to be revised, starting from 0. With "add" the sub-task is inserted before this index (use the number of subtasks to append).
    pub(super) subtask_idx: Int,
    /// "add" inserts a sub-task, "revise" changes the sub-task at the index, "delete" removes it.
    pub(super) action: ReviseAction,
    /// The sub-task to be added or revised. Required if action is "add" or "revise".
    #[serde(default)]
    pub(super) subtask: Option<SubTask>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum SubtaskStateArg {
    Todo,
    InProgress,
    #[serde(alias = "deprecated", alias = "skipped")]
    Abandoned,
    Blocked,
    Failed,
    #[schemars(skip)]
    #[serde(alias = "completed", alias = "finished")]
    Done,
}

/// Update the state of a subtask by given index and state. Note if you want to mark a subtask as done, you SHOULD call `finish_subtask` instead with the specific outcome.
#[derive(Deserialize, JsonSchema)]
pub(super) struct UpdateSubtaskState {
    /// The index of the subtask to be updated, starting from 0.
    pub(super) subtask_idx: Int,
    /// The new state of the subtask.
    pub(super) state: SubtaskStateArg,
}

/// Label the subtask as done by given index and outcome.
#[derive(Deserialize, JsonSchema)]
pub(super) struct FinishSubtask {
    /// The index of the sub-task to be marked as done, starting from 0.
    pub(super) subtask_idx: Int,
    /// The specific outcome of the sub-task, e.g. the data, information or path to the file it produced, not a description of what you did.
    pub(super) subtask_outcome: String,
}

/// View the details of the sub-tasks by given indexes.
#[derive(Deserialize, JsonSchema)]
pub(super) struct ViewSubtasks {
    /// The indexes of the sub-tasks to be viewed, starting from 0.
    pub(super) subtask_idx: Ints,
}

/// Get the number of subtasks in the current plan, per state.
#[derive(Deserialize, JsonSchema)]
pub(super) struct GetSubtaskCount {}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum FinishState {
    Done,
    Abandoned,
    Failed,
}

/// Finish the current plan by given outcome, or abandon it with the given reason if the user no longer wants to perform it. Note that you SHOULD confirm with the user before abandoning the plan.
#[derive(Deserialize, JsonSchema)]
pub(super) struct FinishPlan {
    /// "done" when the plan succeeded, "abandoned" when the user no longer wants it, "failed" when it cannot succeed.
    pub(super) state: FinishState,
    /// The specific outcome of the plan if done, or the reason if abandoned or failed.
    pub(super) outcome: String,
}

/// View the historical (finished or archived) plans.
#[derive(Deserialize, JsonSchema)]
pub(super) struct ViewHistoricalPlans {}

/// Recover a historical plan by its id and make it the current plan; an unfinished current plan is archived.
#[derive(Deserialize, JsonSchema)]
pub(super) struct RecoverHistoricalPlan {
    /// The id of the historical plan, as listed by view_historical_plans.
    pub(super) plan_id: String,
}
