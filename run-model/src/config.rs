//! What a run is started with: the task, the mode, approval, parallelism
//! and the budget, and why a config is refused.

use plan_engine::Mode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub type RunId = uuid::Uuid;

/// `auto` lets the classifier decide.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModeChoice {
    #[default]
    Auto,
    Simple,
    Complex,
    Emergent,
}

impl ModeChoice {
    pub const ALL: [ModeChoice; 4] = [
        ModeChoice::Auto,
        ModeChoice::Simple,
        ModeChoice::Complex,
        ModeChoice::Emergent,
    ];

    pub fn forced(self) -> Option<Mode> {
        match self {
            ModeChoice::Auto => None,
            ModeChoice::Simple => Some(Mode::Simple),
            ModeChoice::Complex => Some(Mode::Complex),
            ModeChoice::Emergent => Some(Mode::Emergent),
        }
    }
}

/// Limits per run; reaching one pauses the run with the reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Budget {
    pub max_llm_calls: u32,
    pub max_tokens: u64,
    /// Seconds of wall time, counted while the run is running (seed 002: 30 min).
    pub max_wall_secs: u64,
    /// ReAct turns per subtask attempt.
    pub max_turns: u32,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_llm_calls: 200,
            max_tokens: 1_000_000,
            max_wall_secs: 30 * 60,
            max_turns: 8,
        }
    }
}

/// Everything a run is started with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunConfig {
    pub task: String,
    pub mode: ModeChoice,
    pub approval_required: bool,
    /// Subtasks in progress at once (complex mode; simple and emergent run one at a time).
    pub max_parallel: u32,
    pub budget: Budget,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            task: String::new(),
            mode: ModeChoice::Auto,
            approval_required: true,
            max_parallel: 4,
            budget: Budget::default(),
        }
    }
}

/// The longest task, in characters.
pub const MAX_TASK_CHARS: usize = 8000;
/// The most subtasks a run may have in progress at once.
pub const MAX_PARALLEL: u32 = 32;

/// Why a config cannot start a run, in words for whoever sent it (the
/// API, the board, MCP).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("the task must have 1 to {MAX_TASK_CHARS} characters, not {chars}")]
    TaskLength { chars: usize },
    #[error("max_parallel must be 1 to {MAX_PARALLEL}, not {given}")]
    MaxParallel { given: u32 },
}

impl ConfigError {
    /// The field the error is about, for forms that mark it.
    pub fn field(&self) -> &'static str {
        match self {
            ConfigError::TaskLength { .. } => "task",
            ConfigError::MaxParallel { .. } => "max_parallel",
        }
    }
}

impl RunConfig {
    /// The config with its task trimmed, or why it cannot start a run.
    pub fn checked(mut self) -> Result<RunConfig, ConfigError> {
        self.task = self.task.trim().to_string();
        let chars = self.task.chars().count();
        if chars == 0 || chars > MAX_TASK_CHARS {
            return Err(ConfigError::TaskLength { chars });
        }
        if !(1..=MAX_PARALLEL).contains(&self.max_parallel) {
            return Err(ConfigError::MaxParallel {
                given: self.max_parallel,
            });
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_is_checked_and_its_task_trimmed() {
        let config = |task: &str, max_parallel| RunConfig {
            task: task.into(),
            max_parallel,
            ..RunConfig::default()
        };
        assert_eq!(config("  do it \n", 4).checked().unwrap().task, "do it");
        let e = config("   ", 4).checked().unwrap_err();
        assert_eq!(e, ConfigError::TaskLength { chars: 0 });
        assert!(e.to_string().contains("1 to 8000"));
        assert!(config(&"x".repeat(8001), 4).checked().is_err());
        let e = config("do it", 0).checked().unwrap_err();
        assert_eq!(e.field(), "max_parallel");
        assert!(e.to_string().contains("max_parallel"));
        assert!(config("do it", 33).checked().is_err());
    }

    #[test]
    fn a_mode_choice_reads_its_wire_name() {
        for m in ModeChoice::ALL {
            assert_eq!(m.to_string().parse::<ModeChoice>(), Ok(m));
        }
        assert_eq!(ModeChoice::Auto.forced(), None);
        assert_eq!(ModeChoice::Emergent.forced(), Some(Mode::Emergent));
    }
}
