//! The four tool dialects and how each one names its tools in hints.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{Plan, SubtaskId};

/// A family of LLM tools over the same commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// planboard's own snake_case tools, addressing subtasks by id.
    Canonical,
    /// Seed 000's camelCase `PlanManager` tools (startNextTask, addTask, …).
    PlanManager,
    /// OpenManus' single `planning` tool with a `command` argument.
    OpenManus,
    /// AgentScope's PlanNotebook tools, addressing subtasks by 0-based index.
    AgentScope,
}

impl Dialect {
    pub const ALL: [Dialect; 4] = [
        Dialect::Canonical,
        Dialect::PlanManager,
        Dialect::OpenManus,
        Dialect::AgentScope,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Canonical => "canonical",
            Dialect::PlanManager => "planmanager",
            Dialect::OpenManus => "openmanus",
            Dialect::AgentScope => "agentscope",
        }
    }

    pub fn parse(text: &str) -> Option<Dialect> {
        let t = text.trim().to_ascii_lowercase().replace(['-', '_'], "");
        Dialect::ALL.into_iter().find(|d| d.as_str() == t)
    }

    pub fn names(self) -> &'static ToolNames {
        match self {
            Dialect::Canonical => &CANONICAL,
            Dialect::PlanManager => &PLAN_MANAGER,
            Dialect::OpenManus => &OPEN_MANUS,
            Dialect::AgentScope => &AGENT_SCOPE,
        }
    }

    /// How a hint refers to a subtask so the model can pass it straight back.
    pub fn subtask_ref(self, plan: &Plan, id: SubtaskId) -> String {
        let names = self.names();
        match names.addressing {
            Addressing::ById => format!("{}={id}", names.ref_arg),
            Addressing::ByIndex => format!(
                "{}={}",
                names.ref_arg,
                plan.position(id).unwrap_or_default()
            ),
        }
    }

    /// The short label a window line starts with: `#7` or `[6]`.
    pub fn label(self, plan: &Plan, id: SubtaskId) -> String {
        match self.names().addressing {
            Addressing::ById => format!("#{id}"),
            Addressing::ByIndex => format!("[{}]", plan.position(id).unwrap_or_default()),
        }
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addressing {
    ById,
    ByIndex,
}

/// How hints phrase each action, in call notation so the phrase reads the
/// same in every language; `{ref}` becomes e.g. `subtask_idx=3`.
#[derive(Debug)]
pub struct ToolNames {
    pub addressing: Addressing,
    pub ref_arg: &'static str,
    pub create: &'static str,
    pub start: &'static str,
    pub finish: &'static str,
    pub fail: &'static str,
    pub skip: &'static str,
    pub revise: &'static str,
    pub finish_plan: &'static str,
    pub count: &'static str,
    pub view: &'static str,
}

const CANONICAL: ToolNames = ToolNames {
    addressing: Addressing::ById,
    ref_arg: "subtask_id",
    create: "create_plan",
    start: "start_subtask({ref})",
    finish: "complete_subtask({ref}, outcome=…)",
    fail: "fail_subtask({ref}, error=…)",
    skip: "skip_subtask(subtask_id=…, reason=…)",
    revise: "add_subtask / edit_subtask / delete_subtask",
    finish_plan: "finish_plan",
    count: "get_subtask_count",
    view: "view_subtasks",
};

const PLAN_MANAGER: ToolNames = ToolNames {
    addressing: Addressing::ById,
    ref_arg: "task_id",
    create: "createPlan",
    start: "startNextTask()",
    finish: "completeCurrentTask(result_message=…)",
    fail: "failCurrentTask(error_message=…)",
    skip: "skipTask(task_id=…, reason=…)",
    revise: "addTask / modifyTask",
    finish_plan: "finishPlan",
    count: "getPlan",
    view: "getTask",
};

const OPEN_MANUS: ToolNames = ToolNames {
    addressing: Addressing::ByIndex,
    ref_arg: "step_index",
    create: "planning(command='create')",
    start: "planning(command='mark_step', {ref}, step_status='in_progress')",
    finish: "planning(command='mark_step', {ref}, step_status='completed', step_notes=…)",
    fail: "planning(command='mark_step', {ref}, step_status='failed', step_notes=…)",
    skip: "planning(command='mark_step', step_index=…, step_status='skipped')",
    revise: "planning(command='update')",
    finish_plan: "planning(command='finish')",
    count: "planning(command='list')",
    view: "planning(command='get')",
};

const AGENT_SCOPE: ToolNames = ToolNames {
    addressing: Addressing::ByIndex,
    ref_arg: "subtask_idx",
    create: "create_plan",
    start: "update_subtask_state({ref}, state='in_progress')",
    finish: "finish_subtask({ref}, subtask_outcome=…)",
    fail: "update_subtask_state({ref}, state='failed')",
    skip: "update_subtask_state(subtask_idx=…, state='abandoned')",
    revise: "revise_current_plan",
    finish_plan: "finish_plan",
    count: "get_subtask_count",
    view: "view_subtasks",
};
