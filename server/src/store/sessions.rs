//! An agent session's settings (seed 003's PlanNotebook `needUserConfirm`
//! and `maxSubtasks`), one row per session that set any, beside the
//! session's active plan. The type and its checks live here; its two SQL
//! statements are in the store's `PlanStore` implementation (`sql.rs`),
//! beside the active plan's.

use plan_engine::SessionDefaults;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An agent session's settings; null: not set (a plan's own setting, else
/// the default, applies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionSettings {
    /// Hints tell the agent to present a plan and wait for the user's
    /// go-ahead before executing it; plans the session creates take it.
    /// Not set: off (planboard's gate is a plan's `approval_required`).
    #[serde(default)]
    pub need_user_confirm: Option<bool>,
    /// The most subtasks a plan the session creates may hold (1 to 5,000),
    /// enforced by the engine; hints state it. Not set: no limit.
    #[serde(default)]
    #[schemars(range(min = 1, max = plan_engine::model::limits::SUBTASKS))]
    pub max_subtasks: Option<u32>,
}

impl SessionSettings {
    /// The settings' bounds, as a sentence for the caller.
    pub fn check(&self) -> Result<(), String> {
        let most = plan_engine::model::limits::SUBTASKS;
        match self.max_subtasks {
            Some(max) if max == 0 || max as usize > most => Err(format!(
                "max_subtasks must be 1 to {most} (got {max}); leave it out or null for no limit"
            )),
            _ => Ok(()),
        }
    }

    /// These settings where set, else `session`'s: a call's own settings
    /// for the plan it creates win over its session's.
    pub fn over(self, session: SessionSettings) -> SessionSettings {
        SessionSettings {
            need_user_confirm: self.need_user_confirm.or(session.need_user_confirm),
            max_subtasks: self.max_subtasks.or(session.max_subtasks),
        }
    }

    /// What the plans this session creates take when a call leaves them out.
    pub fn defaults(self) -> SessionDefaults {
        SessionDefaults {
            max_subtasks: self.max_subtasks,
            need_user_confirm: self.need_user_confirm,
        }
    }
}
