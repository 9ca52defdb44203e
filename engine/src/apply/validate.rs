//! Input checks shared by every command: text lengths, limits, the actor.

use crate::error::PlanError;
use crate::model::limits;

pub(super) fn check_capacity(
    max: Option<u32>,
    have: usize,
    adding: usize,
) -> Result<(), PlanError> {
    let cap = max.map_or(limits::SUBTASKS, |m| (m as usize).min(limits::SUBTASKS));
    if have + adding > cap {
        return Err(PlanError::PlanFull { max: cap });
    }
    Ok(())
}

pub(super) fn check_limit_setting(
    field: &'static str,
    value: Option<u32>,
) -> Result<(), PlanError> {
    if value == Some(0) {
        return Err(PlanError::invalid(
            field,
            "must be at least 1 (omit it for no limit)",
        ));
    }
    Ok(())
}

pub(super) fn check_actor(actor: &str) -> Result<(), PlanError> {
    required_text("actor", actor, limits::ACTOR)
}

pub(super) fn required_text(field: &'static str, value: &str, max: usize) -> Result<(), PlanError> {
    if value.trim().is_empty() {
        return Err(PlanError::invalid(field, "must not be empty"));
    }
    text(field, value, max)
}

pub(super) fn text(field: &'static str, value: &str, max: usize) -> Result<(), PlanError> {
    let len = value.chars().count();
    if len > max {
        return Err(PlanError::TooLong { field, len, max });
    }
    Ok(())
}

/// A subtask's tool as given: blank means none; otherwise one word of ASCII
/// letters, digits, `_`, `-` and `.` (`run_python`, `server.tool`), trimmed.
pub(super) fn tool_name(value: &str) -> Result<Option<String>, PlanError> {
    let name = value.trim();
    text("tool", name, limits::TOOL)?;
    if name.is_empty() {
        return Ok(None);
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(PlanError::invalid(
            "tool",
            format!(
                "{bad:?} cannot be part of a tool name; name one tool in letters, digits, '_', '-' and '.', \
                 such as run_python, read_file or an MCP tool as server.tool"
            ),
        ));
    }
    Ok(Some(name.to_string()))
}
