//! The four tool dialects and how each one names its tools in hints.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{Plan, SubtaskId};

crate::wire_enum! {
    /// A family of LLM tools over the same commands.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum Dialect: "dialect (canonical, planmanager, openmanus or agentscope)" {
        /// planboard's own snake_case tools, addressing subtasks by id.
        Canonical = "canonical",
        /// Seed 000's camelCase `PlanManager` tools (startNextTask, addTask, …).
        PlanManager = "planmanager",
        /// OpenManus' single `planning` tool with a `command` argument.
        OpenManus = "openmanus",
        /// AgentScope's PlanNotebook tools, addressing subtasks by 0-based index.
        AgentScope = "agentscope",
    }
}

impl Dialect {
    /// A wire name as people write it: any case, with `-` or `_`
    /// (`plan-manager`, `Open_Manus`).
    pub fn parse(text: &str) -> Option<Dialect> {
        Dialect::from_wire(&text.trim().to_ascii_lowercase().replace(['-', '_'], ""))
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
