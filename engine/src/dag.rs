//! Dependency-graph checks and queries.
//!
//! An edge `a → b` means "a depends on b". Every mutator that adds edges asks
//! [`check_new_edges`] first, so the graph is a DAG at all times; a rejected
//! change reports the whole cycle it would have closed.
//!
//! # Algorithm
//! Adding edges `x → d` for `d` in `deps` closes a cycle exactly when some `d`
//! already reaches `x`. One depth-first search from all of `deps` answers that
//! in O(n + e) and its parent links give the cycle's path.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::error::{summarize_ids, PlanError};
use crate::model::{Plan, Subtask, SubtaskId};

/// Checks that giving subtask `x` the dependencies `deps`, and making every
/// subtask in `dependents` depend on `x`, keeps the graph acyclic.
/// `x` need not exist yet (an insertion).
pub(crate) fn check_new_edges(
    plan: &Plan,
    x: SubtaskId,
    deps: &[SubtaskId],
    dependents: &[SubtaskId],
) -> Result<(), PlanError> {
    for d in deps {
        if *d == x {
            return Err(PlanError::SelfDependency { id: x });
        }
        require_known(plan, *d)?;
    }
    // Targets: x itself and anything that will depend on x.
    let targets: HashSet<SubtaskId> = dependents.iter().copied().chain([x]).collect();
    if let Some(mut path) = search(plan, deps, &targets) {
        // path runs d → … → target; close the loop through x.
        if path.last() != Some(&x) {
            path.push(x);
        }
        path.insert(0, x);
        return Err(PlanError::Cycle { path });
    }
    Ok(())
}

pub(crate) fn require_known(plan: &Plan, id: SubtaskId) -> Result<usize, PlanError> {
    plan.position(id).ok_or_else(|| PlanError::UnknownSubtask {
        id,
        known: summarize_ids(plan.subtasks.iter().map(|s| s.id).collect()),
    })
}

/// Depth-first search along dependency edges from `starts`; the first path
/// reaching a target, start first.
fn search(
    plan: &Plan,
    starts: &[SubtaskId],
    targets: &HashSet<SubtaskId>,
) -> Option<Vec<SubtaskId>> {
    let mut parent: HashMap<SubtaskId, Option<SubtaskId>> = HashMap::new();
    let mut stack: Vec<SubtaskId> = Vec::new();
    for s in starts {
        if parent.insert(*s, None).is_none() {
            stack.push(*s);
        }
    }
    while let Some(node) = stack.pop() {
        if targets.contains(&node) {
            let mut path = vec![node];
            let mut at = node;
            while let Some(Some(p)) = parent.get(&at) {
                path.push(*p);
                at = *p;
            }
            path.reverse();
            return Some(path);
        }
        let Some(subtask) = plan.subtask(node) else {
            continue;
        };
        for dep in &subtask.dependencies {
            if !parent.contains_key(dep) {
                parent.insert(*dep, Some(node));
                stack.push(*dep);
            }
        }
    }
    None
}

/// Validates a whole subtask list (create, import): unique ids below
/// `next_id`, known dependencies, no self-edges, no cycles.
pub(crate) fn validate_graph(subtasks: &[Arc<Subtask>], next_id: u32) -> Result<(), PlanError> {
    let mut seen = HashSet::with_capacity(subtasks.len());
    for s in subtasks {
        if !seen.insert(s.id) {
            return Err(PlanError::invalid(
                "subtasks",
                format!("subtask id {} appears twice", s.id),
            ));
        }
        if s.id.0 == 0 || s.id.0 >= next_id {
            return Err(PlanError::invalid(
                "subtasks",
                format!(
                    "subtask id {} is outside 1..{next_id} (next_subtask_id)",
                    s.id
                ),
            ));
        }
    }
    for s in subtasks {
        for d in &s.dependencies {
            if *d == s.id {
                return Err(PlanError::SelfDependency { id: s.id });
            }
            if !seen.contains(d) {
                return Err(PlanError::UnknownSubtask {
                    id: *d,
                    known: summarize_ids(subtasks.iter().map(|s| s.id).collect()),
                });
            }
        }
    }
    match topological_order(subtasks) {
        Ok(_) => Ok(()),
        Err(path) => Err(PlanError::Cycle { path }),
    }
}

/// Dependencies before dependents (Kahn), ties broken by display order.
/// On a cycle, returns one cycle's path instead.
pub(crate) fn topological_order(subtasks: &[Arc<Subtask>]) -> Result<Vec<usize>, Vec<SubtaskId>> {
    let pos: HashMap<SubtaskId, usize> = subtasks
        .iter()
        .enumerate()
        .map(|(p, s)| (s.id, p))
        .collect();
    let deps: Vec<Vec<usize>> = subtasks
        .iter()
        .map(|s| {
            s.dependencies
                .iter()
                .filter_map(|d| pos.get(d).copied())
                .collect()
        })
        .collect();
    let (order, remaining) = kahn(&deps);
    if order.len() == subtasks.len() {
        return Ok(order);
    }
    // Walk dependencies from any node left over until one repeats.
    let start = (0..subtasks.len()).find(|&p| remaining[p] > 0).unwrap_or(0);
    let mut path = vec![subtasks[start].id];
    let mut at = start;
    loop {
        let next = subtasks[at]
            .dependencies
            .iter()
            .filter_map(|d| pos.get(d).copied())
            .find(|&q| remaining[q] > 0);
        let Some(q) = next else { return Err(path) };
        let id = subtasks[q].id;
        if let Some(i) = path.iter().position(|x| *x == id) {
            let mut cycle = path.split_off(i);
            cycle.push(id);
            return Err(cycle);
        }
        path.push(id);
        at = q;
    }
}

/// Kahn's order of a graph given as each node's dependencies (positions):
/// dependencies first, ties broken by position. With a cycle the order
/// leaves out the nodes on or after it; `remaining` counts, per node, the
/// dependencies never ordered (zero for every node in the order). The
/// plan's order and the condensed drawing's ([`crate::lod`]) share it.
pub(crate) fn kahn(deps: &[Vec<usize>]) -> (Vec<usize>, Vec<usize>) {
    let n = deps.len();
    let mut remaining: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (p, ds) in deps.iter().enumerate() {
        for &q in ds {
            dependents[q].push(p);
        }
    }
    let mut queue: std::collections::VecDeque<usize> =
        (0..n).filter(|&p| remaining[p] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(p) = queue.pop_front() {
        order.push(p);
        for &q in &dependents[p] {
            remaining[q] -= 1;
            if remaining[q] == 0 {
                queue.push_back(q);
            }
        }
    }
    (order, remaining)
}

/// The longest chain of dependent subtasks that are not yet done or skipped:
/// the fewest sequential steps left even with unlimited parallelism.
pub fn critical_path(plan: &Plan) -> Vec<SubtaskId> {
    let subtasks = &plan.subtasks;
    let Ok(order) = topological_order(subtasks) else {
        return Vec::new();
    };
    let mut length = vec![0usize; subtasks.len()];
    let mut via: Vec<Option<usize>> = vec![None; subtasks.len()];
    for &p in &order {
        if subtasks[p].state.is_settled() {
            continue;
        }
        let mut best = (0, None);
        for d in &subtasks[p].dependencies {
            if let Some(q) = plan.position(*d) {
                if length[q] > best.0 {
                    best = (length[q], Some(q));
                }
            }
        }
        length[p] = best.0 + 1;
        via[p] = best.1;
    }
    let Some(mut at) = (0..subtasks.len()).max_by_key(|&p| (length[p], std::cmp::Reverse(p)))
    else {
        return Vec::new();
    };
    if length[at] == 0 {
        return Vec::new();
    }
    let mut path = vec![subtasks[at].id];
    while let Some(q) = via[at] {
        path.push(subtasks[q].id);
        at = q;
    }
    path.reverse();
    path
}
