//! Derived lookups that keep every per-step query off the O(n) path.
//!
//! A walk through a plan of n subtasks asks, at every step, "where is subtask
//! 7?", "which subtasks are ready?", "how many are in progress?". Answering by
//! scanning the plan makes the walk quadratic (AgentScope's `finish_subtask`
//! does exactly that). Instead the plan carries this index:
//!
//! - built lazily on first use, in O(n + e), so a deserialized plan needs no
//!   extra step and can never be used with a stale index;
//! - updated in O(dependents · log n) by state changes, which are the hot path;
//! - dropped and rebuilt on structural changes (add, delete, move, dependency
//!   edits), which are rare and O(n) anyway because positions shift.
//!
//! It is never serialized and compares equal to any other index, so plans
//! compare by their data alone.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

use super::{Plan, Subtask, SubtaskId, SubtaskState};

#[derive(Default)]
pub(crate) struct DerivedIndex(OnceLock<Index>);

impl Clone for DerivedIndex {
    fn clone(&self) -> Self {
        let cell = OnceLock::new();
        if let Some(index) = self.0.get() {
            let _ = cell.set(index.clone());
        }
        DerivedIndex(cell)
    }
}

impl PartialEq for DerivedIndex {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for DerivedIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DerivedIndex")
    }
}

/// Per-subtask tables are vectors indexed by a slot: the subtask id while
/// ids are dense (they are never reused, so this beats hashing on every
/// lookup), the position when they are sparse — an imported plan may number
/// its subtasks up to 2³², and a table as long as the largest id would take
/// gigabytes (the API fuzzer found it: 25 GB for one id of 2³⁰).
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct Index {
    /// Dense: `positions[id]` is the display position, or `NONE` for
    /// deleted ids. Sparse: unused.
    positions: Vec<usize>,
    /// Sparse ids: id → position (which is then the slot).
    sparse: Option<HashMap<u32, usize>>,
    /// Changes only with the plan's structure, when the index is rebuilt,
    /// so copies of a plan share it.
    dependents: Arc<Vec<Vec<SubtaskId>>>,
    /// Dependencies not yet done or skipped, per subtask.
    unmet: Vec<usize>,
    /// Positions of todo subtasks with no unmet dependency.
    ready: BTreeSet<usize>,
    in_progress: BTreeSet<usize>,
    counts: [usize; 6],
}

const NONE: usize = usize::MAX;

impl Index {
    pub(crate) fn build(subtasks: &[Arc<Subtask>]) -> Index {
        let largest = subtasks
            .iter()
            .map(|s| s.id.0 as usize + 1)
            .max()
            .unwrap_or(0);
        // Dense while the tables stay within a few times the plan.
        let dense = largest <= 4 * subtasks.len() + 1024;
        let slots = if dense { largest } else { subtasks.len() };
        let mut index = Index {
            positions: if dense { vec![NONE; slots] } else { Vec::new() },
            sparse: (!dense).then(|| {
                subtasks
                    .iter()
                    .enumerate()
                    .map(|(p, s)| (s.id.0, p))
                    .collect()
            }),
            unmet: vec![0; slots],
            ..Index::default()
        };
        for (p, s) in subtasks.iter().enumerate() {
            if dense {
                index.positions[s.id.0 as usize] = p;
            }
            index.counts[s.state.slot()] += 1;
            if s.state == SubtaskState::InProgress {
                index.in_progress.insert(p);
            }
        }
        let mut dependents = vec![Vec::new(); slots];
        for (p, s) in subtasks.iter().enumerate() {
            let mut unmet = 0;
            for dep in &s.dependencies {
                if let Some(list) = index.slot(*dep).and_then(|k| dependents.get_mut(k)) {
                    list.push(s.id);
                }
                let settled = index
                    .position(*dep)
                    .is_some_and(|q| subtasks[q].state.is_settled());
                if !settled {
                    unmet += 1;
                }
            }
            if let Some(k) = index.slot(s.id) {
                index.unmet[k] = unmet;
            }
            if s.state == SubtaskState::Todo && unmet == 0 {
                index.ready.insert(p);
            }
        }
        index.dependents = Arc::new(dependents);
        index
    }

    /// Where `id`'s entries are in the per-subtask tables.
    fn slot(&self, id: SubtaskId) -> Option<usize> {
        match &self.sparse {
            None => Some(id.0 as usize),
            Some(ids) => ids.get(&id.0).copied(),
        }
    }

    pub(crate) fn position(&self, id: SubtaskId) -> Option<usize> {
        match &self.sparse {
            None => self
                .positions
                .get(id.0 as usize)
                .copied()
                .filter(|&p| p != NONE),
            Some(ids) => ids.get(&id.0).copied(),
        }
    }

    pub(crate) fn count(&self, state: SubtaskState) -> usize {
        self.counts[state.slot()]
    }

    pub(crate) fn unmet(&self, id: SubtaskId) -> usize {
        self.slot(id)
            .and_then(|k| self.unmet.get(k))
            .copied()
            .unwrap_or(0)
    }

    pub(crate) fn dependents(&self, id: SubtaskId) -> &[SubtaskId] {
        self.slot(id)
            .and_then(|k| self.dependents.get(k))
            .map_or(&[], Vec::as_slice)
    }

    pub(crate) fn ready_positions(&self) -> impl Iterator<Item = usize> + '_ {
        self.ready.iter().copied()
    }

    pub(crate) fn in_progress_positions(&self) -> impl Iterator<Item = usize> + '_ {
        self.in_progress.iter().copied()
    }

    /// Keeps counts, the ready set and the in-progress set current after
    /// `id` moved from `from` to `to` (its new state already written).
    fn state_changed(
        &mut self,
        subtasks: &[Arc<Subtask>],
        id: SubtaskId,
        from: SubtaskState,
        to: SubtaskState,
    ) {
        let Some(p) = self.position(id) else { return };
        self.counts[from.slot()] -= 1;
        self.counts[to.slot()] += 1;
        if from == SubtaskState::Todo {
            self.ready.remove(&p);
        }
        if to == SubtaskState::Todo && self.unmet(id) == 0 {
            self.ready.insert(p);
        }
        if from == SubtaskState::InProgress {
            self.in_progress.remove(&p);
        }
        if to == SubtaskState::InProgress {
            self.in_progress.insert(p);
        }
        if from.is_settled() == to.is_settled() {
            return;
        }
        let all = self.dependents.clone();
        let Some(dependents) = self.slot(id).and_then(|k| all.get(k)) else {
            return;
        };
        for d in dependents {
            let Some(q) = self.position(*d) else {
                continue;
            };
            let Some(unmet) = self.slot(*d).and_then(|k| self.unmet.get_mut(k)) else {
                continue;
            };
            let is_todo = subtasks[q].state == SubtaskState::Todo;
            if to.is_settled() {
                *unmet -= 1;
                if *unmet == 0 && is_todo {
                    self.ready.insert(q);
                }
            } else {
                *unmet += 1;
                if *unmet == 1 {
                    self.ready.remove(&q);
                }
            }
        }
    }
}

impl Plan {
    pub(crate) fn index(&self) -> &Index {
        self.index.0.get_or_init(|| Index::build(&self.subtasks))
    }

    /// Called by the event fold after a subtask's state was written.
    pub(crate) fn index_state_changed(
        &mut self,
        id: SubtaskId,
        from: SubtaskState,
        to: SubtaskState,
    ) {
        if let Some(index) = self.index.0.get_mut() {
            index.state_changed(&self.subtasks, id, from, to);
        }
    }

    /// Called by the event fold after a structural change.
    pub(crate) fn index_invalidate(&mut self) {
        self.index = DerivedIndex::default();
    }

    /// True when the incrementally maintained index equals a fresh build;
    /// the property tests assert this after every command.
    pub fn index_is_consistent(&self) -> bool {
        *self.index() == Index::build(&self.subtasks)
    }
}
