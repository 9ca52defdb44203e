//! Two versions of one plan side by side, field by field: what a review
//! reads to see how a plan moved (people's edits, the agent's revisions,
//! the work's results), and who made each change.
//!
//! Subtasks are matched by id: within one plan's history an id names one
//! subtask for good (a re-plan that replaces the subtasks gives new ids,
//! and shows as removed and added, which is what happened). Unlike
//! [`crate::revision`], which matches a planner's revision by name.

use crate::describe::describe;
use crate::event::Event;
use crate::hint::Lang;
use crate::model::{Plan, Subtask, SubtaskId};

/// One field that differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldChange {
    pub field: &'static str,
    pub before: String,
    pub after: String,
}

/// A subtask present in both versions with fields that differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubtaskChange {
    pub id: SubtaskId,
    /// Its name in the later version.
    pub name: String,
    pub fields: Vec<FieldChange>,
}

/// One change between the versions: the version it made, by whom, what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub version: u64,
    pub actor: String,
    pub at: crate::model::Timestamp,
    pub what: String,
}

/// How the later version differs from the earlier.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// The plan's own fields (title, goal, state, mode, approval, outcome).
    pub plan: Vec<FieldChange>,
    /// `(id, name)` of the subtasks only the later version has.
    pub added: Vec<(SubtaskId, String)>,
    /// `(id, name)` of the subtasks only the earlier version has.
    pub removed: Vec<(SubtaskId, String)>,
    pub changed: Vec<SubtaskChange>,
    /// The events from the earlier version to the later, oldest first.
    pub steps: Vec<Step>,
}

impl Comparison {
    pub fn is_empty(&self) -> bool {
        self.plan.is_empty()
            && self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
    }
}

fn change(field: &'static str, before: String, after: String, out: &mut Vec<FieldChange>) {
    if before != after {
        out.push(FieldChange {
            field,
            before,
            after,
        });
    }
}

fn deps(s: &Subtask) -> String {
    s.dependencies()
        .iter()
        .map(|d| format!("#{}", d.0))
        .collect::<Vec<_>>()
        .join(", ")
}

fn subtask_fields(a: &Subtask, b: &Subtask) -> Vec<FieldChange> {
    let mut out = Vec::new();
    change("name", a.name().into(), b.name().into(), &mut out);
    change(
        "description",
        a.description().into(),
        b.description().into(),
        &mut out,
    );
    change(
        "expected outcome",
        a.expected_outcome().into(),
        b.expected_outcome().into(),
        &mut out,
    );
    change("dependencies", deps(a), deps(b), &mut out);
    change(
        "state",
        a.state().as_str().into(),
        b.state().as_str().into(),
        &mut out,
    );
    change(
        "outcome",
        a.outcome().unwrap_or_default().into(),
        b.outcome().unwrap_or_default().into(),
        &mut out,
    );
    change("notes", a.notes().into(), b.notes().into(), &mut out);
    change(
        "assignee",
        a.assignee().unwrap_or_default().into(),
        b.assignee().unwrap_or_default().into(),
        &mut out,
    );
    change(
        "tool",
        a.tool().unwrap_or_default().into(),
        b.tool().unwrap_or_default().into(),
        &mut out,
    );
    out
}

fn approval_name(status: crate::model::ApprovalStatus) -> &'static str {
    use crate::model::ApprovalStatus as A;
    match status {
        A::Pending => "pending",
        A::Approved => "approved",
        A::Rejected => "rejected",
    }
}

/// The plan after the events up to and including `version` (`None` if the
/// log does not reach it or cannot be replayed).
pub fn at_version<'a>(events: impl IntoIterator<Item = &'a Event>, version: u64) -> Option<Plan> {
    let upto: Vec<&Event> = events
        .into_iter()
        .take_while(|e| e.version <= version)
        .collect();
    if upto.last()?.version != version {
        return None;
    }
    let mut plan = Plan::replay(upto).ok()?;
    plan.reindex();
    Some(plan)
}

/// How `after` differs from `before` (two versions of one plan), with the
/// steps of `events` (the plan's whole log) between them described in `lang`.
pub fn compare(before: &Plan, after: &Plan, events: &[Event], lang: Lang) -> Comparison {
    let mut c = Comparison::default();
    change(
        "title",
        before.title().into(),
        after.title().into(),
        &mut c.plan,
    );
    change(
        "goal",
        before.goal().into(),
        after.goal().into(),
        &mut c.plan,
    );
    change(
        "state",
        before.state().as_str().into(),
        after.state().as_str().into(),
        &mut c.plan,
    );
    change(
        "mode",
        before.mode().as_str().into(),
        after.mode().as_str().into(),
        &mut c.plan,
    );
    change(
        "approval",
        approval_name(before.approval().status).into(),
        approval_name(after.approval().status).into(),
        &mut c.plan,
    );
    change(
        "outcome",
        before.outcome().unwrap_or_default().into(),
        after.outcome().unwrap_or_default().into(),
        &mut c.plan,
    );
    for s in after.subtasks() {
        match before.subtask(s.id()) {
            None => c.added.push((s.id(), s.name().to_string())),
            Some(old) => {
                let fields = subtask_fields(old, s);
                if !fields.is_empty() {
                    c.changed.push(SubtaskChange {
                        id: s.id(),
                        name: s.name().to_string(),
                        fields,
                    });
                }
            }
        }
    }
    c.removed = before
        .subtasks()
        .iter()
        .filter(|s| after.subtask(s.id()).is_none())
        .map(|s| (s.id(), s.name().to_string()))
        .collect();
    // Each step described against the plan just before it.
    let (from, to) = (before.version(), after.version());
    let mut plan = before.clone();
    for e in events
        .iter()
        .filter(|e| e.version > from && e.version <= to)
    {
        c.steps.push(Step {
            version: e.version,
            actor: e.actor.to_string(),
            at: e.at,
            what: describe(e, &plan, lang),
        });
        plan.fold(e);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Op, SubtaskPatch};
    use crate::model::{NewPlan, NewSubtask, SubtaskState};

    fn at() -> crate::model::Timestamp {
        chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    #[test]
    fn two_versions_differ_field_by_field_and_the_steps_say_who_did_what() {
        let spec = NewPlan {
            title: "Release".into(),
            subtasks: vec![
                NewSubtask::named("build"),
                NewSubtask::named("test").after(&[1]),
                NewSubtask::named("tag"),
            ],
            ..NewPlan::default()
        };
        let (mut plan, mut log) = Plan::create(&spec, "ana", at()).unwrap();
        let mut run = |op: Op, who: &str, plan: &mut Plan| {
            log.extend(plan.execute(&op.into(), who, at()).unwrap());
        };
        run(
            Op::EditSubtask {
                id: SubtaskId(2),
                patch: SubtaskPatch {
                    description: Some("run the whole suite".into()),
                    ..Default::default()
                },
            },
            "bo",
            &mut plan,
        );
        run(Op::DeleteSubtask { id: SubtaskId(3) }, "bo", &mut plan);
        run(
            Op::AddSubtask {
                subtask: NewSubtask::named("announce").after(&[2]),
                position: Default::default(),
                rewire_after: None,
                required_by: Vec::new(),
            },
            "agent",
            &mut plan,
        );
        run(
            Op::SetSubtaskState {
                id: SubtaskId(1),
                state: SubtaskState::InProgress,
                note: None,
                start_next: false,
            },
            "agent",
            &mut plan,
        );
        let first = at_version(&log, 1).unwrap();
        let now = at_version(&log, plan.version()).unwrap();
        assert_eq!(now, plan);
        let c = compare(&first, &now, &log, Lang::En);
        assert_eq!(c.added, vec![(SubtaskId(4), "announce".to_string())]);
        assert_eq!(c.removed, vec![(SubtaskId(3), "tag".to_string())]);
        let fields: Vec<(u32, &str, &str, &str)> = c
            .changed
            .iter()
            .flat_map(|s| {
                s.fields
                    .iter()
                    .map(move |f| (s.id.0, f.field, f.before.as_str(), f.after.as_str()))
            })
            .collect();
        assert_eq!(
            fields,
            vec![
                (1, "state", "todo", "in_progress"),
                (2, "description", "", "run the whole suite")
            ]
        );
        let who: Vec<(u64, &str)> = c
            .steps
            .iter()
            .map(|s| (s.version, s.actor.as_str()))
            .collect();
        // One command may record several events (starting a subtask
        // starts the plan): each is a step of its version.
        assert_eq!(
            who,
            vec![
                (2, "bo"),
                (3, "bo"),
                (4, "agent"),
                (5, "agent"),
                (5, "agent")
            ]
        );
        assert!(c.steps[1].what.contains("'tag'"), "{}", c.steps[1].what);
        assert!(compare(&now, &now, &log, Lang::En).is_empty());
        assert!(at_version(&log, 99).is_none());
    }

    #[test]
    fn a_changed_tool_is_compared_as_a_field_of_its_own() {
        let spec = NewPlan {
            title: "Revenue".into(),
            subtasks: vec![NewSubtask::named("Sum March revenue from sales.csv")],
            ..NewPlan::default()
        };
        let (mut plan, mut log) = Plan::create(&spec, "ana", at()).unwrap();
        let op = Op::EditSubtask {
            id: SubtaskId(1),
            patch: SubtaskPatch {
                tool: Some("run_python".into()),
                ..Default::default()
            },
        };
        log.extend(plan.execute(&op.into(), "bo", at()).unwrap());
        let first = at_version(&log, 1).unwrap();
        let c = compare(&first, &plan, &log, Lang::En);
        let fields: Vec<(&str, &str, &str)> = c
            .changed
            .iter()
            .flat_map(|s| s.fields.iter())
            .map(|f| (f.field, f.before.as_str(), f.after.as_str()))
            .collect();
        assert_eq!(fields, vec![("tool", "", "run_python")]);
    }
}
