//! An ACP agent's plan as the run's planboard plan. The agent sends its
//! whole plan with every `plan` update (a list of entries, each with its
//! words, a priority and a status), and each update replaces the one
//! before. [`update`] turns one into the ops that make the run's plan say
//! the same: new entries become subtasks, entries whose words changed are
//! edited while they have not started, entries that left the list are
//! deleted (or skipped, when they had started), the order follows the
//! agent's, and every subtask moves through the engine's state table to
//! the entry's status (`pending` → todo, `in_progress` → in progress,
//! `completed` → done, through in progress when it never started). The
//! priority is the subtask's notes (`priority: high`). All the ops go to
//! the engine as one change, so each update is one step in the plan's
//! History and Compare.
//!
//! Pure: the plan and the entries in, the ops out.

use agent_client_protocol_schema::v1::{PlanEntry, PlanEntryPriority, PlanEntryStatus};
use plan_engine::model::limits;
use plan_engine::{
    NewSubtask, Op, Plan, PlanState, Position, SubtaskId, SubtaskPatch, SubtaskState,
};

/// One entry of the agent's plan, as planboard keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// What the entry says, whole (the subtask's description; its name is
    /// the first line, cut to the engine's limit).
    pub content: String,
    /// `high`, `medium` or `low`.
    pub priority: &'static str,
    /// The state the entry's status means.
    pub state: SubtaskState,
}

impl Entry {
    pub fn of(entry: &PlanEntry) -> Entry {
        let priority = match entry.priority {
            PlanEntryPriority::High => "high",
            PlanEntryPriority::Low => "low",
            _ => "medium",
        };
        let state = match entry.status {
            PlanEntryStatus::InProgress => SubtaskState::InProgress,
            PlanEntryStatus::Completed => SubtaskState::Done,
            _ => SubtaskState::Todo,
        };
        Entry {
            content: plan_engine::text::prefix(entry.content.trim(), limits::TEXT).to_string(),
            priority,
            state,
        }
    }

    /// The subtask's name: the entry's first line, within the engine's
    /// limit (a name cannot be empty).
    pub fn name(&self) -> String {
        let first = self.content.lines().next().unwrap_or_default().trim();
        if first.is_empty() {
            "(an entry without words)".to_string()
        } else {
            plan_engine::text::fit(first, limits::NAME)
        }
    }

    /// The subtask's notes: its priority.
    pub fn notes(&self) -> String {
        format!("priority: {}", self.priority)
    }
}

/// What one update does to the plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Update {
    /// The ops, to be run as one change.
    pub ops: Vec<Op>,
    /// The subtask of each entry, in the agent's order (ids of new
    /// subtasks as the engine will give them): the `known` of the next
    /// update.
    pub ids: Vec<SubtaskId>,
    /// Subtasks added, edited, removed (deleted or skipped) and moved to
    /// another state: what the run log says of the update.
    pub added: usize,
    pub edited: usize,
    pub removed: usize,
    pub moved: usize,
}

/// How many of their words two texts share (of all the words either
/// has) for the second to count as the first reworded.
const REWORDED: f32 = 0.3;

/// The share of words two texts have in common (Jaccard, on lowercase
/// words of letters and digits): 1 for the same words, 0 for none.
fn similarity(a: &str, b: &str) -> f32 {
    let words = |t: &str| -> std::collections::BTreeSet<String> {
        t.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let (a, b) = (words(a), words(b));
    let all = a.union(&b).count();
    if all == 0 {
        return 0.0;
    }
    a.intersection(&b).count() as f32 / all as f32
}

/// The states a subtask goes through from `from` to `to`, by the engine's
/// state table (an entry's target is todo, in progress or done).
pub fn path(from: SubtaskState, to: SubtaskState) -> Vec<SubtaskState> {
    use SubtaskState::*;
    if from == to {
        return Vec::new();
    }
    match (from, to) {
        (Todo | Blocked | Failed, InProgress) => vec![InProgress],
        (Todo | Blocked | Failed, Done) => vec![InProgress, Done],
        (InProgress, Done) => vec![Done],
        (InProgress | Blocked | Failed | Done | Skipped, Todo) => vec![Todo],
        (Done | Skipped, InProgress) => vec![Todo, InProgress],
        (Skipped, Done) => vec![Todo, InProgress, Done],
        _ => Vec::new(),
    }
}

/// The ops that make `plan` say what `entries` say. `known`: the subtasks
/// of the previous update's entries, in its order (after a restart, the
/// plan's subtasks); `actor` is not needed: the caller runs the ops as the
/// agent.
pub fn update(plan: &Plan, known: &[SubtaskId], entries: &[Entry]) -> Update {
    let mut out = Update::default();
    let live = |id: &SubtaskId| plan.subtask(*id).is_some();
    let mut used: Vec<SubtaskId> = Vec::new();
    let mut matched: Vec<Option<SubtaskId>> = vec![None; entries.len()];
    // 1. The same words: the same subtask, wherever it is now (the
    // agent's last list first, then the rest of the plan: after a restart
    // the last list is the plan).
    let candidates: Vec<SubtaskId> = known
        .iter()
        .copied()
        .chain(plan.subtasks().iter().map(|s| s.id()))
        .collect();
    for (i, entry) in entries.iter().enumerate() {
        let same = candidates.iter().copied().find(|id| {
            !used.contains(id)
                && plan
                    .subtask(*id)
                    .is_some_and(|s| s.description() == entry.content)
        });
        if let Some(id) = same {
            used.push(id);
            matched[i] = Some(id);
        }
    }
    // 2. Other words for an entry of the last list that has not started,
    // and that shares most of its words: the agent reworded it.
    let mut edits: Vec<(SubtaskId, usize)> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        if matched[i].is_some() {
            continue;
        }
        let best = known
            .iter()
            .copied()
            .filter(|id| live(id) && !used.contains(id))
            .filter_map(|id| {
                let s = plan.subtask(id)?;
                let like = similarity(s.description(), &entry.content);
                (s.state().is_unstarted() && like >= REWORDED).then_some((id, like))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((id, _)) = best {
            used.push(id);
            matched[i] = Some(id);
            edits.push((id, i));
        }
    }
    // 3. The rest are new, with the ids the engine hands out next.
    let mut next = plan.next_subtask_id();
    let mut order: Vec<SubtaskId> = plan.subtasks().iter().map(|s| s.id()).collect();
    let mut states: Vec<(SubtaskId, SubtaskState)> = plan
        .subtasks()
        .iter()
        .map(|s| (s.id(), s.state()))
        .collect();
    for (i, entry) in entries.iter().enumerate() {
        if matched[i].is_some() {
            continue;
        }
        let id = SubtaskId(next);
        next += 1;
        matched[i] = Some(id);
        out.ops.push(Op::AddSubtask {
            subtask: NewSubtask {
                description: entry.content.clone(),
                ..NewSubtask::named(entry.name())
            },
            position: Position::End,
            rewire_after: None,
            required_by: Vec::new(),
        });
        out.ops.push(Op::SetNotes {
            id,
            notes: entry.notes(),
        });
        order.push(id);
        states.push((id, SubtaskState::Todo));
        out.added += 1;
    }
    for (id, i) in edits {
        let entry = &entries[i];
        out.ops.push(Op::EditSubtask {
            id,
            patch: SubtaskPatch {
                name: Some(entry.name()),
                description: Some(entry.content.clone()),
                ..SubtaskPatch::default()
            },
        });
        out.edited += 1;
    }
    out.ids = matched.into_iter().flatten().collect();
    // 4. What left the agent's list: gone if it never started, skipped if
    // it did; what was settled stays as history.
    for id in known
        .iter()
        .copied()
        .filter(|id| live(id) && !out.ids.contains(id))
    {
        let state = plan.subtask(id).map(|s| s.state());
        match state {
            Some(SubtaskState::Todo | SubtaskState::Blocked) => {
                out.ops.push(Op::DeleteSubtask { id });
                order.retain(|o| *o != id);
                states.retain(|(o, _)| *o != id);
                out.removed += 1;
            }
            Some(SubtaskState::InProgress | SubtaskState::Failed) => {
                out.ops.push(Op::SetSubtaskState {
                    id,
                    state: SubtaskState::Skipped,
                    note: Some("no longer in the agent's plan".into()),
                    start_next: false,
                });
                out.removed += 1;
            }
            _ => {}
        }
    }
    // 5. Priorities that changed.
    for (id, entry) in out.ids.clone().iter().zip(entries) {
        if let Some(s) = plan.subtask(*id) {
            if s.notes() != entry.notes() {
                out.ops.push(Op::SetNotes {
                    id: *id,
                    notes: entry.notes(),
                });
            }
        }
    }
    // 6. The agent's order first, the rest (history, people's own) after
    // it as they were.
    let mut wanted: Vec<SubtaskId> = out.ids.clone();
    wanted.extend(order.iter().copied().filter(|id| !out.ids.contains(id)));
    for (to_index, id) in wanted.iter().enumerate() {
        if order.get(to_index) == Some(id) {
            continue;
        }
        if let Some(at) = order.iter().position(|o| o == id) {
            let moved = order.remove(at);
            order.insert(to_index.min(order.len()), moved);
            out.ops.push(Op::MoveSubtask { id: *id, to_index });
        }
    }
    // 7. States, only while the plan may start work (a paused plan keeps
    // its subtasks where they are until it goes on).
    if matches!(plan.state(), PlanState::Approved | PlanState::Running) {
        // Finishing first frees what a start may wait for.
        let mut moves: Vec<(SubtaskId, Vec<SubtaskState>)> = Vec::new();
        for (id, entry) in out.ids.iter().zip(entries) {
            let from = states
                .iter()
                .find(|(s, _)| s == id)
                .map_or(SubtaskState::Todo, |(_, st)| *st);
            let steps = path(from, entry.state);
            if !steps.is_empty() {
                moves.push((*id, steps));
            }
        }
        moves.sort_by_key(|(_, steps)| steps.last() != Some(&SubtaskState::Done));
        for (id, steps) in moves {
            for state in steps {
                out.ops.push(Op::SetSubtaskState {
                    id,
                    state,
                    note: None,
                    start_next: false,
                });
            }
            out.moved += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan_engine::NewPlan;

    fn plan() -> Plan {
        let spec = NewPlan {
            id: uuid::Uuid::new_v4(),
            title: "Fix the bug".into(),
            ..NewPlan::default()
        };
        Plan::create(&spec, "acp · test", chrono::Utc::now())
            .unwrap()
            .0
    }

    fn entry(content: &str, state: SubtaskState) -> Entry {
        Entry {
            content: content.into(),
            priority: "medium",
            state,
        }
    }

    /// Runs `entries` through [`update`] and the engine, as the driver does.
    fn apply(plan: &mut Plan, known: &[SubtaskId], entries: &[Entry]) -> Update {
        let update = update(plan, known, entries);
        plan.execute_all(update.ops.clone(), "acp · test", chrono::Utc::now())
            .unwrap_or_else(|e| panic!("{e}: {:?}", update.ops));
        update
    }

    fn shown(plan: &Plan) -> Vec<(String, SubtaskState)> {
        plan.subtasks()
            .iter()
            .map(|s| (s.name().to_string(), s.state()))
            .collect()
    }

    #[test]
    fn a_first_plan_becomes_subtasks_in_the_agents_order_with_their_states_and_priorities() {
        use SubtaskState::*;
        let mut plan = plan();
        let entries = vec![
            Entry {
                priority: "high",
                ..entry("Read the failing test", Done)
            },
            entry("Fix the parser\nso that it reads dates", InProgress),
            entry("Run the tests", Todo),
        ];
        let update = apply(&mut plan, &[], &entries);
        assert_eq!(update.added, 3);
        assert_eq!(
            shown(&plan),
            vec![
                ("Read the failing test".to_string(), Done),
                ("Fix the parser".to_string(), InProgress),
                ("Run the tests".to_string(), Todo),
            ]
        );
        let second = plan.subtask(update.ids[1]).unwrap();
        assert_eq!(
            second.description(),
            "Fix the parser\nso that it reads dates"
        );
        assert_eq!(
            plan.subtask(update.ids[0]).unwrap().notes(),
            "priority: high"
        );
        assert_eq!(plan.state(), PlanState::Running);
    }

    #[test]
    fn a_later_update_moves_states_rewords_unstarted_entries_drops_and_reorders() {
        use SubtaskState::*;
        let mut plan = plan();
        let first = apply(
            &mut plan,
            &[],
            &[
                entry("a", InProgress),
                entry("b", Todo),
                entry("c", Todo),
                entry("d", Todo),
            ],
        );
        let version = plan.version();
        let second = apply(
            &mut plan,
            &first.ids,
            &[
                entry("a", Done),
                entry("d", InProgress),
                entry("b, said better", Todo),
            ],
        );
        assert!(plan.version() > version);
        assert_eq!(second.edited, 1, "b was reworded in place");
        assert!(similarity("b", "b, said better") >= REWORDED);
        assert_eq!(similarity("c", "b, said better"), 0.0);
        assert_eq!(second.removed, 1, "c left the list");
        assert_eq!(second.ids[2], first.ids[1], "b keeps its subtask");
        assert_eq!(
            shown(&plan),
            vec![
                ("a".to_string(), Done),
                ("d".to_string(), InProgress),
                ("b, said better".to_string(), Todo),
            ]
        );
        // The same plan again changes nothing.
        let again = update(
            &plan,
            &second.ids,
            &[
                entry("a", Done),
                entry("d", InProgress),
                entry("b, said better", Todo),
            ],
        );
        assert!(again.ops.is_empty(), "{:?}", again.ops);
    }

    #[test]
    fn a_started_entry_that_leaves_the_list_is_skipped_and_a_finished_one_stays() {
        use SubtaskState::*;
        let mut plan = plan();
        let first = apply(
            &mut plan,
            &[],
            &[entry("done one", Done), entry("working", InProgress)],
        );
        apply(&mut plan, &first.ids, &[entry("something else", Todo)]);
        let states: Vec<SubtaskState> = plan.subtasks().iter().map(|s| s.state()).collect();
        assert_eq!(states, vec![Todo, Done, Skipped]);
    }

    #[test]
    fn an_entry_the_agent_reopens_goes_back_through_the_state_table() {
        use SubtaskState::*;
        assert_eq!(path(Done, InProgress), vec![Todo, InProgress]);
        assert_eq!(path(Skipped, Done), vec![Todo, InProgress, Done]);
        assert_eq!(path(Todo, Done), vec![InProgress, Done]);
        assert!(path(Done, Done).is_empty());
        let mut plan = plan();
        let first = apply(&mut plan, &[], &[entry("x", Done)]);
        apply(&mut plan, &first.ids, &[entry("x", InProgress)]);
        assert_eq!(shown(&plan), vec![("x".to_string(), InProgress)]);
    }

    #[test]
    fn a_paused_plan_takes_the_agents_words_but_no_state_moves() {
        use SubtaskState::*;
        let mut plan = plan();
        let first = apply(&mut plan, &[], &[entry("x", InProgress)]);
        plan.execute_all(vec![Op::Pause {}], "alice", chrono::Utc::now())
            .unwrap();
        let update = apply(&mut plan, &first.ids, &[entry("x", Done), entry("y", Todo)]);
        assert_eq!(update.moved, 0);
        assert_eq!(
            shown(&plan),
            vec![("x".to_string(), InProgress), ("y".to_string(), Todo)]
        );
    }
}
