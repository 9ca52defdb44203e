//! How a revised plan differs from the one a person rejected, so the
//! board can mark what the planner changed in answer to the comment.
//!
//! Subtasks are matched by name: a planner's revision replaces every
//! subtask (the new ones get new ids), so ids say nothing about what
//! stayed. Dependencies are compared by their names too.

use crate::event::{Event, EventKind};
use crate::model::{ApprovalStatus, Plan, Subtask, SubtaskId};

/// What a revision added, changed and dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Revision {
    /// Subtasks of the revised plan with no namesake in the rejected one.
    pub added: Vec<SubtaskId>,
    /// Namesakes whose description, expected outcome or dependencies changed.
    pub changed: Vec<SubtaskId>,
    /// Names of the rejected plan's subtasks the revision has no longer.
    pub removed: Vec<String>,
}

impl Revision {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty()
    }

    /// What happened to subtask `id` of the revised plan, if anything.
    pub fn mark(&self, id: SubtaskId) -> Option<RevisionMark> {
        if self.added.contains(&id) {
            Some(RevisionMark::Added)
        } else if self.changed.contains(&id) {
            Some(RevisionMark::Changed)
        } else {
            None
        }
    }
}

/// How a revised plan's subtask differs from the rejected plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RevisionMark {
    Added,
    Changed,
}

/// The names of `s`'s dependencies in `plan`.
fn dependency_names<'a>(plan: &'a Plan, s: &Subtask) -> Vec<&'a str> {
    s.dependencies()
        .iter()
        .filter_map(|d| plan.subtask(*d))
        .map(Subtask::name)
        .collect()
}

/// Whether namesakes `old` (of `rejected`) and `new` (of `revised`) say
/// the same: description, expected outcome, tool, and dependencies by name
/// in any order (no sort: this runs in the board's wasm too).
fn same(rejected: &Plan, old: &Subtask, revised: &Plan, new: &Subtask) -> bool {
    let (before, after) = (
        dependency_names(rejected, old),
        dependency_names(revised, new),
    );
    old.description() == new.description()
        && old.expected_outcome() == new.expected_outcome()
        && old.tool() == new.tool()
        && before.len() == after.len()
        && before.iter().all(|n| after.contains(n))
}

impl Plan {
    /// How this plan differs from `rejected`, an earlier version of it.
    /// (A linear search per subtask: plans awaiting approval are small,
    /// and this runs in the board's wasm, where a map costs code size.)
    pub fn revision_of(&self, rejected: &Plan) -> Revision {
        let namesake = |name: &str| rejected.subtasks().iter().find(|o| o.name() == name);
        let mut revision = Revision::default();
        for s in self.subtasks() {
            match namesake(s.name()) {
                None => revision.added.push(s.id()),
                Some(old) if !same(rejected, old, self, s) => {
                    revision.changed.push(s.id());
                }
                Some(_) => {}
            }
        }
        revision.removed = rejected
            .subtasks()
            .iter()
            .filter(|old| !self.subtasks().iter().any(|s| s.name() == old.name()))
            .map(|old| old.name().to_string())
            .collect();
        revision
    }

    /// The plan as it was when a person last rejected it, replayed from its
    /// log; `None` if nobody rejected it.
    pub fn last_rejected<'a>(events: impl IntoIterator<Item = &'a Event>) -> Option<Plan> {
        let events: Vec<&Event> = events.into_iter().collect();
        let last = events.iter().rposition(|e| {
            matches!(
                e.kind,
                EventKind::ApprovalDecided {
                    status: ApprovalStatus::Rejected,
                    ..
                }
            )
        })?;
        Plan::replay(events[..=last].iter().copied()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Op;
    use crate::model::{NewPlan, NewSubtask};

    fn at() -> crate::model::Timestamp {
        chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    fn run(plan: &mut Plan, log: &mut Vec<Event>, ops: Vec<Op>) {
        for op in ops {
            log.extend(plan.execute(&op.into(), "someone", at()).unwrap());
        }
    }

    fn step(name: &str, description: &str, deps: &[u32]) -> NewSubtask {
        NewSubtask {
            description: description.into(),
            dependencies: deps.iter().map(|d| SubtaskId(*d)).collect(),
            ..NewSubtask::named(name)
        }
    }

    #[test]
    fn a_revision_is_matched_by_name_and_marks_what_was_added_changed_and_dropped() {
        let spec = NewPlan {
            approval_required: true,
            draft: true,
            subtasks: vec![
                step("read", "read it", &[]),
                step("write", "write it", &[1]),
                step("polish", "polish it", &[2]),
            ],
            title: "Essay".into(),
            ..NewPlan::default()
        };
        let (mut plan, mut log) = Plan::create(&spec, "someone", at()).unwrap();
        run(&mut plan, &mut log, vec![Op::Submit {}]);
        assert!(
            Plan::last_rejected(&log).is_none(),
            "nobody rejected it yet"
        );
        run(
            &mut plan,
            &mut log,
            vec![Op::Reject {
                comment: "cite sources".into(),
            }],
        );
        let rejected = Plan::last_rejected(&log).expect("rejected once");
        assert_eq!(rejected.subtasks().len(), 3);
        // The planner's way: every subtask replaced, under new ids.
        let mut ops: Vec<Op> = (1..=3)
            .map(|i| Op::DeleteSubtask { id: SubtaskId(i) })
            .collect();
        for s in [
            step("read", "read it", &[]),
            step("cite", "find sources", &[4]),
            step("write", "write it with citations", &[4, 5]),
        ] {
            ops.push(Op::AddSubtask {
                subtask: s,
                position: Default::default(),
                rewire_after: None,
                required_by: Vec::new(),
            });
        }
        ops.push(Op::Submit {});
        run(&mut plan, &mut log, ops);
        let revision = plan.revision_of(&rejected);
        assert_eq!(revision.added, [SubtaskId(5)], "cite is new");
        assert_eq!(
            revision.changed,
            [SubtaskId(6)],
            "write's text and dependencies changed"
        );
        assert_eq!(revision.removed, ["polish"]);
        assert_eq!(revision.mark(SubtaskId(4)), None, "read stayed as it was");
        assert_eq!(revision.mark(SubtaskId(5)), Some(RevisionMark::Added));
        assert!(plan.revision_of(&plan).is_empty());
    }

    #[test]
    fn a_subtask_revised_only_in_its_tool_is_marked_changed() {
        let spec = NewPlan {
            subtasks: vec![NewSubtask {
                tool: Some("read_file".into()),
                ..step("read", "read it", &[])
            }],
            title: "Essay".into(),
            draft: true,
            ..NewPlan::default()
        };
        let (rejected, mut log) = Plan::create(&spec, "someone", at()).unwrap();
        let mut plan = rejected.clone();
        let patch = crate::command::SubtaskPatch {
            tool: Some("fetch_url".into()),
            ..Default::default()
        };
        let ops = vec![Op::EditSubtask {
            id: SubtaskId(1),
            patch,
        }];
        run(&mut plan, &mut log, ops);
        assert_eq!(plan.revision_of(&rejected).changed, [SubtaskId(1)]);
    }
}
