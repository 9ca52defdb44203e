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
