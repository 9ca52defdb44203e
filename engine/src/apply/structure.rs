//! Structure edits: add, edit, re-wire, delete and replace subtasks.

use std::collections::HashMap;

use super::validate::{check_capacity, required_text, text, tool_name};
use crate::command::{Position, SubtaskPatch};
use crate::dag::{check_new_edges, require_known};
use crate::error::PlanError;
use crate::event::{EventKind, SubtaskFields};
use crate::model::{limits, NewSubtask, Plan, Subtask, SubtaskId, SubtaskState, Timestamp};

pub(super) fn add_subtask(
    plan: &Plan,
    new: &NewSubtask,
    position: Position,
    rewire_after: Option<SubtaskId>,
    required_by: &[SubtaskId],
    now: Timestamp,
) -> Result<Vec<EventKind>, PlanError> {
    check_capacity(plan.max_subtasks, plan.subtasks.len(), 1)?;
    let id = SubtaskId(super::fresh_id(plan.next_subtask_id, "subtasks")?);
    let subtask = new_subtask(new, id, now)?;
    let len = plan.subtasks.len();
    let index = match position {
        Position::End => len,
        Position::Index(i) if i <= len => i,
        Position::Index(i) => return Err(PlanError::UnknownIndex { index: i, len }),
        Position::After(x) => require_known(plan, x)? + 1,
        Position::Before(x) => require_known(plan, x)?,
    };
    let mut rewired = Vec::new();
    if let Some(x) = rewire_after {
        require_known(plan, x)?;
        rewired = plan
            .index()
            .dependents(x)
            .iter()
            .copied()
            .filter(|d| is_unstarted(plan, *d))
            .collect();
    }
    for r in required_by {
        let p = require_known(plan, *r)?;
        if !plan.subtasks[p].state.is_unstarted() {
            return Err(PlanError::NotEditable {
                id: *r,
                state: plan.subtasks[p].state,
                what: "given a new dependency",
            });
        }
    }
    let mut dependents = rewired.clone();
    dependents.extend_from_slice(required_by);
    check_new_edges(plan, id, &subtask.dependencies, &dependents)?;
    Ok(vec![EventKind::SubtaskAdded {
        subtask: Box::new(subtask),
        index,
        rewired_from: rewire_after.filter(|_| !rewired.is_empty()),
        rewired,
        required_by: required_by.to_vec(),
    }])
}

pub(super) fn edit_subtask(
    plan: &Plan,
    id: SubtaskId,
    patch: &SubtaskPatch,
) -> Result<Vec<EventKind>, PlanError> {
    let s = &plan.subtasks[require_known(plan, id)?];
    let allowed = if patch.only_assignee() {
        !s.state.is_settled()
    } else {
        s.state.is_unstarted()
    };
    if !allowed {
        return Err(PlanError::NotEditable {
            id,
            state: s.state,
            what: "edited",
        });
    }
    let mut edited = Subtask::clone(s);
    if let Some(name) = &patch.name {
        required_text("name", name, limits::NAME)?;
        edited.name = name.trim().to_string();
    }
    for (field, value, target) in [
        ("description", &patch.description, &mut edited.description),
        (
            "expected_outcome",
            &patch.expected_outcome,
            &mut edited.expected_outcome,
        ),
        ("reasoning", &patch.reasoning, &mut edited.reasoning),
    ] {
        if let Some(v) = value {
            text(field, v, limits::TEXT)?;
            target.clone_from(v);
        }
    }
    if let Some(a) = &patch.assignee {
        text("assignee", a, limits::ACTOR)?;
        edited.assignee = (!a.trim().is_empty()).then(|| a.trim().to_string());
    }
    if let Some(t) = &patch.tool {
        edited.tool = tool_name(t)?;
    }
    Ok(vec![EventKind::SubtaskEdited {
        id,
        fields: Box::new(SubtaskFields {
            name: edited.name,
            description: edited.description,
            expected_outcome: edited.expected_outcome,
            reasoning: edited.reasoning,
            assignee: edited.assignee,
            tool: edited.tool,
        }),
    }])
}

pub(super) fn set_dependencies(
    plan: &Plan,
    id: SubtaskId,
    dependencies: &[SubtaskId],
) -> Result<Vec<EventKind>, PlanError> {
    let s = &plan.subtasks[require_known(plan, id)?];
    if !s.state.is_unstarted() {
        return Err(PlanError::NotEditable {
            id,
            state: s.state,
            what: "given new dependencies",
        });
    }
    let deps = dedup(dependencies);
    if deps.len() > limits::DEPENDENCIES {
        return Err(PlanError::TooLong {
            field: "dependencies",
            len: deps.len(),
            max: limits::DEPENDENCIES,
        });
    }
    // Only edges that are new can close a cycle.
    let added: Vec<SubtaskId> = deps
        .iter()
        .copied()
        .filter(|d| !s.dependencies.contains(d))
        .collect();
    check_new_edges(plan, id, &added, &[])?;
    Ok(vec![EventKind::DependenciesSet {
        id,
        dependencies: deps,
    }])
}

pub(super) fn delete_subtask(plan: &Plan, id: SubtaskId) -> Result<Vec<EventKind>, PlanError> {
    let s = &plan.subtasks[require_known(plan, id)?];
    if s.state == SubtaskState::InProgress {
        return Err(PlanError::DeleteInProgress { id });
    }
    let inherited_by = plan
        .index()
        .dependents(id)
        .iter()
        .copied()
        .filter(|d| is_unstarted(plan, *d))
        .collect();
    Ok(vec![EventKind::SubtaskDeleted { id, inherited_by }])
}

pub(super) fn replace_subtasks(
    plan: &Plan,
    list: &[NewSubtask],
    now: Timestamp,
) -> Result<Vec<EventKind>, PlanError> {
    check_capacity(plan.max_subtasks, 0, list.len())?;
    let mut by_name: HashMap<&str, std::collections::VecDeque<&Subtask>> = HashMap::new();
    for s in &plan.subtasks {
        by_name.entry(s.name.as_str()).or_default().push_back(s);
    }
    let mut next_id = plan.next_subtask_id;
    let mut subtasks: Vec<Subtask> = Vec::with_capacity(list.len());
    for new in list {
        let kept = by_name
            .get_mut(new.name.trim())
            .and_then(|queue| queue.pop_front());
        let mut s = match kept {
            Some(old) => old.clone(),
            None => {
                let id = SubtaskId(super::fresh_id(next_id, "subtasks")?);
                next_id += 1;
                new_subtask(new, id, now)?
            }
        };
        let previous = subtasks.last();
        s.dependencies = match previous {
            Some(prev) if s.state.is_unstarted() || prev.state.is_settled() => vec![prev.id],
            _ => Vec::new(),
        };
        subtasks.push(s);
    }
    if let Some(running) = by_name
        .values()
        .flatten()
        .find(|s| s.state == SubtaskState::InProgress)
    {
        return Err(PlanError::DeleteInProgress { id: running.id });
    }
    Ok(vec![EventKind::SubtasksReplaced {
        subtasks,
        next_subtask_id: next_id,
    }])
}

pub(super) fn new_subtask(
    new: &NewSubtask,
    id: SubtaskId,
    now: Timestamp,
) -> Result<Subtask, PlanError> {
    required_text("name", &new.name, limits::NAME)?;
    text("description", &new.description, limits::TEXT)?;
    text("expected_outcome", &new.expected_outcome, limits::TEXT)?;
    text("reasoning", &new.reasoning, limits::TEXT)?;
    if let Some(a) = &new.assignee {
        text("assignee", a, limits::ACTOR)?;
    }
    let tool = match &new.tool {
        Some(t) => tool_name(t)?,
        None => None,
    };
    let dependencies = dedup(&new.dependencies);
    if dependencies.len() > limits::DEPENDENCIES {
        return Err(PlanError::TooLong {
            field: "dependencies",
            len: dependencies.len(),
            max: limits::DEPENDENCIES,
        });
    }
    Ok(Subtask {
        id,
        name: new.name.trim().to_string(),
        description: new.description.clone(),
        expected_outcome: new.expected_outcome.clone(),
        reasoning: new.reasoning.clone(),
        state: SubtaskState::Todo,
        dependencies,
        outcome: None,
        notes: String::new(),
        attempts: 0,
        assignee: new
            .assignee
            .as_ref()
            .filter(|a| !a.trim().is_empty())
            .map(|a| a.trim().to_string()),
        tool,
        created_at: now,
        started_at: None,
        finished_at: None,
    })
}

fn is_unstarted(plan: &Plan, id: SubtaskId) -> bool {
    plan.subtask(id).is_some_and(|s| s.state.is_unstarted())
}

fn dedup(ids: &[SubtaskId]) -> Vec<SubtaskId> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if !out.contains(id) {
            out.push(*id);
        }
    }
    out
}
