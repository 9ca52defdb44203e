//! Renderings of a plan: Markdown, a Mermaid flowchart, and JSON that round-trips.

use std::fmt::Write;

use crate::dag::validate_graph;
use crate::error::PlanError;
use crate::event::{Event, EventKind};
use crate::model::{Plan, PlanId, Subtask, SubtaskState, Timestamp};

/// A checkbox line per subtask under a progress header.
pub fn markdown(plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}", plan.title);
    if !plan.goal.is_empty() {
        let _ = writeln!(out, "**Goal**: {}", plan.goal);
    }
    if !plan.description.is_empty() {
        let _ = writeln!(out, "**Description**: {}", plan.description);
    }
    if !plan.expected_outcome.is_empty() {
        let _ = writeln!(out, "**Expected outcome**: {}", plan.expected_outcome);
    }
    let _ = writeln!(
        out,
        "**State**: {} · **Progress**: {}/{} subtasks done or skipped ({}%)",
        plan.state,
        plan.count(SubtaskState::Done) + plan.count(SubtaskState::Skipped),
        plan.subtasks.len(),
        plan.percent()
    );
    if let Some(outcome) = &plan.outcome {
        let _ = writeln!(out, "**Outcome**: {outcome}");
    }
    let _ = writeln!(out, "\n## Subtasks");
    for s in &plan.subtasks {
        out.push_str(&subtask_line(s));
        out.push('\n');
    }
    out
}

/// `- [x] #3 Name · tool: run_python (after #1, #2) — outcome`.
pub fn subtask_line(s: &Subtask) -> String {
    let check = if s.state == SubtaskState::Done {
        "x"
    } else {
        " "
    };
    let mut line = format!("- [{check}] #{} {}", s.id, s.name);
    if !matches!(s.state, SubtaskState::Todo | SubtaskState::Done) {
        let _ = write!(line, " _{}_", s.state);
    }
    if let Some(tool) = &s.tool {
        let _ = write!(line, " · tool: {tool}");
    }
    if !s.dependencies.is_empty() {
        let deps: Vec<String> = s.dependencies.iter().map(|d| format!("#{d}")).collect();
        let _ = write!(line, " (after {})", deps.join(", "));
    }
    if let Some(outcome) = &s.outcome {
        let _ = write!(line, " — {}", one_line(outcome));
    }
    line
}

/// The dependency DAG as a Mermaid flowchart, coloured by state.
pub fn mermaid(plan: &Plan) -> String {
    let mut out = String::from("flowchart TD\n");
    for s in &plan.subtasks {
        let _ = writeln!(
            out,
            "    s{}[\"#{} {}\"]:::{}",
            s.id,
            s.id,
            mermaid_label(&s.name),
            s.state
        );
    }
    for s in &plan.subtasks {
        for d in &s.dependencies {
            let _ = writeln!(out, "    s{d} --> s{}", s.id);
        }
    }
    for (state, style) in [
        ("todo", "fill:#f4f4f5,stroke:#a1a1aa"),
        ("in_progress", "fill:#dbeafe,stroke:#2563eb"),
        ("blocked", "fill:#fef3c7,stroke:#d97706"),
        ("done", "fill:#dcfce7,stroke:#16a34a"),
        ("failed", "fill:#fee2e2,stroke:#dc2626"),
        ("skipped", "fill:#e5e7eb,stroke:#6b7280,stroke-dasharray:4"),
    ] {
        let _ = writeln!(out, "    classDef {state} {style}");
    }
    out
}

fn mermaid_label(text: &str) -> String {
    one_line(text)
        .replace('"', "#quot;")
        .replace('<', "#lt;")
        .replace('>', "#gt;")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The plan as pretty JSON; [`import_json`] reads it back to an equal plan.
pub fn export_json(plan: &Plan) -> String {
    serde_json::to_string_pretty(plan).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// Reads a plan exported by [`export_json`], checking what the engine guarantees:
/// unique ids below `next_subtask_id`, known dependencies, no cycles.
pub fn import_json(text: &str) -> Result<Plan, PlanError> {
    let plan: Plan = serde_json::from_str(text)
        .map_err(|e| PlanError::invalid("json", format!("not a planboard plan: {e}")))?;
    check_import(&plan)?;
    Ok(plan)
}

/// What [`import_json`] checks of a plan already read from JSON.
pub fn check_import(plan: &Plan) -> Result<(), PlanError> {
    validate_graph(&plan.subtasks, plan.next_subtask_id)?;
    if plan.title.trim().is_empty() {
        return Err(PlanError::invalid("title", "must not be empty"));
    }
    if plan.comments.iter().any(|c| c.id >= plan.next_comment_id) {
        return Err(PlanError::invalid(
            "comments",
            "a comment id is not below next_comment_id",
        ));
    }
    Ok(())
}

/// An imported plan made new: a fresh id, no key (keys are unique and the
/// original may still hold it), version 1, and the `plan_created` event
/// that records it as `actor`'s.
pub fn adopt(mut plan: Plan, id: PlanId, actor: &str, now: Timestamp) -> (Plan, Vec<Event>) {
    plan.id = id;
    plan.key = None;
    plan.version = 1;
    plan.updated_at = now;
    let event = Event {
        plan_id: id,
        version: 1,
        actor: std::sync::Arc::from(actor),
        at: now,
        kind: EventKind::PlanCreated {
            plan: Box::new(plan.clone()),
        },
    };
    (plan, vec![event])
}
