//! The dependency graph at a level of detail a person can read: a plan of
//! thousands of subtasks drawn node by node is a smear, and costs the
//! browser seconds. Above a budget of units, two steps condense it:
//! 1. **chains**: a run of subtasks each with exactly one dependency, the
//!    one before it, which has no other dependent, becomes one unit;
//! 2. **groups**: a layer with more units than its share of the budget
//!    keeps the ones that matter now (failed, blocked, in progress, then the
//!    rest in plan order) and folds the rest into one unit.
//!
//! A unit opens when its key (its first subtask's id) is in `open`: it is
//! drawn subtask by subtask again (a group's chains stay chains until
//! opened themselves). The result is acyclic like the plan: a chain keeps
//! the order of its members, and a group only joins units of one layer, and
//! no arrow joins two units of the same layer.

use std::collections::{BTreeMap, BTreeSet};

use crate::dag::{kahn, topological_order};
use crate::layout::{layout_graph, longest_chains};
use crate::model::{Plan, SubtaskId, SubtaskState};

/// What a drawn unit stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitKind {
    Subtask,
    /// Members in order, each depending on the one before.
    Chain,
    /// Members of one layer, folded together.
    Group,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    pub kind: UnitKind,
    /// In plan order (a chain: from first to last).
    pub members: Vec<SubtaskId>,
    pub layer: usize,
    pub slot: usize,
}

impl Unit {
    /// The key that opens it: its first member.
    pub fn key(&self) -> SubtaskId {
        self.members[0]
    }
}

/// The condensed graph, laid out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Condensed {
    pub units: Vec<Unit>,
    /// (dependency, dependent), as unit indices, each pair once.
    pub edges: Vec<(usize, usize)>,
    pub layers: usize,
    pub widest: usize,
}

/// Chains shorter than this stay as they are: folding two saves one node
/// and hides a name.
const MIN_CHAIN: usize = 3;
/// A layer never folds below this many units shown.
const MIN_PER_LAYER: usize = 4;

/// The plan's graph with at most about `budget` units: every subtask its
/// own unit when the plan fits, else chains and then groups folded, except
/// those `open` names. Opening can take it past the budget: a person asked.
pub fn condense(plan: &Plan, open: &BTreeSet<SubtaskId>, budget: usize) -> Condensed {
    let subtasks = &plan.subtasks;
    let n = subtasks.len();
    let deps: Vec<Vec<usize>> = subtasks
        .iter()
        .map(|s| {
            s.dependencies
                .iter()
                .filter_map(|d| plan.position(*d))
                .collect()
        })
        .collect();
    let Ok(order) = topological_order(subtasks) else {
        // A cyclic plan cannot be made; should one be loaded, draw it whole.
        let units = (0..n).map(|p| vec![p]).collect();
        return finish(plan, &deps, units, UnitKind::Subtask, (0..n).collect());
    };
    if n <= budget {
        let units = (0..n).map(|p| vec![p]).collect();
        let layer = longest_chains(&deps, &order);
        return finish(plan, &deps, units, UnitKind::Subtask, layer);
    }
    let mut dependents = vec![0usize; n];
    for ds in &deps {
        for &q in ds {
            dependents[q] += 1;
        }
    }
    // p continues the chain of its one dependency q when q has no other
    // dependent.
    let continues = |p: usize| deps[p].len() == 1 && dependents[deps[p][0]] == 1;
    let mut next: Vec<Option<usize>> = vec![None; n];
    for p in 0..n {
        if continues(p) {
            next[deps[p][0]] = Some(p);
        }
    }
    // Units as lists of positions; `kinds` beside them.
    let mut units: Vec<Vec<usize>> = Vec::new();
    let mut kinds: Vec<UnitKind> = Vec::new();
    for &p in &order {
        if continues(p) {
            continue;
        }
        let mut chain = vec![p];
        while let Some(q) = next[*chain.last().unwrap_or(&p)] {
            chain.push(q);
        }
        if chain.len() >= MIN_CHAIN && !open.contains(&subtasks[p].id) {
            units.push(chain);
            kinds.push(UnitKind::Chain);
        } else {
            for q in chain {
                units.push(vec![q]);
                kinds.push(UnitKind::Subtask);
            }
        }
    }
    let unit_deps = unit_edges(&deps, &units, n);
    let (unit_order, _) = kahn(&unit_deps);
    let layer = longest_chains(&unit_deps, &unit_order);
    if units.len() <= budget {
        return finish_units(plan, &deps, units, kinds, layer);
    }
    // Groups: the crowded layers share what the others leave of the budget.
    let layers = layer.iter().max().map_or(0, |m| m + 1);
    let mut by_layer: Vec<Vec<usize>> = vec![Vec::new(); layers];
    for (u, &l) in layer.iter().enumerate() {
        by_layer[l].push(u);
    }
    let share = share_of(&by_layer.iter().map(Vec::len).collect::<Vec<_>>(), budget);
    let mut grouped: Vec<Vec<usize>> = Vec::new();
    let mut grouped_kinds: Vec<UnitKind> = Vec::new();
    let mut grouped_layer: Vec<usize> = Vec::new();
    for (l, mut row) in by_layer.into_iter().enumerate() {
        if row.len() > share {
            let urgency = |u: &usize| {
                let worst = units[*u]
                    .iter()
                    .map(|&p| urgency(subtasks[p].state))
                    .min()
                    .unwrap_or(usize::MAX);
                (worst, units[*u][0])
            };
            row.sort_by_key(urgency);
            let folded: Vec<usize> = row.split_off(share - 1);
            let mut members: Vec<usize> = folded.iter().flat_map(|&u| units[u].clone()).collect();
            members.sort_unstable();
            if open.contains(&subtasks[members[0]].id) {
                row.extend(folded);
            } else {
                grouped.push(members);
                grouped_kinds.push(UnitKind::Group);
                grouped_layer.push(l);
            }
            row.sort_by_key(|u| units[*u][0]);
        }
        for u in row {
            grouped.push(units[u].clone());
            grouped_kinds.push(kinds[u]);
            grouped_layer.push(l);
        }
    }
    finish_units(plan, &deps, grouped, grouped_kinds, grouped_layer)
}

/// The most units a layer shows (a folded layer: one less, and its group):
/// the largest cap that keeps the whole drawing within the budget, so a
/// crowded layer beside thin ones keeps most of what the thin ones leave.
fn share_of(sizes: &[usize], budget: usize) -> usize {
    let drawn = |cap: usize| -> usize { sizes.iter().map(|&n| n.min(cap)).sum() };
    let (mut low, mut high) = (MIN_PER_LAYER, sizes.iter().copied().max().unwrap_or(0));
    if drawn(low) > budget || high <= low {
        return MIN_PER_LAYER;
    }
    // The largest cap with drawn(cap) <= budget: drawn grows with cap.
    while low < high {
        let mid = (low + high).div_ceil(2);
        if drawn(mid) <= budget {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    low
}

/// Lower comes first when a layer keeps some units: what needs a person
/// or is moving now.
fn urgency(state: SubtaskState) -> usize {
    match state {
        SubtaskState::Failed => 0,
        SubtaskState::Blocked => 1,
        SubtaskState::InProgress => 2,
        SubtaskState::Todo => 3,
        SubtaskState::Done | SubtaskState::Skipped => 4,
    }
}

/// The dependencies between units, each pair once.
fn unit_edges(deps: &[Vec<usize>], units: &[Vec<usize>], n: usize) -> Vec<Vec<usize>> {
    let mut unit_of = vec![0usize; n];
    for (u, members) in units.iter().enumerate() {
        for &p in members {
            unit_of[p] = u;
        }
    }
    units
        .iter()
        .enumerate()
        .map(|(u, members)| {
            let set: BTreeSet<usize> = members
                .iter()
                .flat_map(|&p| deps[p].iter().map(|&q| unit_of[q]))
                .filter(|&v| v != u)
                .collect();
            set.into_iter().collect()
        })
        .collect()
}

fn finish(
    plan: &Plan,
    deps: &[Vec<usize>],
    units: Vec<Vec<usize>>,
    kind: UnitKind,
    layer: Vec<usize>,
) -> Condensed {
    let kinds = vec![kind; units.len()];
    finish_units(plan, deps, units, kinds, layer)
}

fn finish_units(
    plan: &Plan,
    deps: &[Vec<usize>],
    units: Vec<Vec<usize>>,
    kinds: Vec<UnitKind>,
    layer: Vec<usize>,
) -> Condensed {
    let unit_deps = unit_edges(deps, &units, plan.subtasks.len());
    let drawn = layout_graph(&unit_deps, layer);
    let edges = unit_deps
        .iter()
        .enumerate()
        .flat_map(|(u, ds)| ds.iter().map(move |&v| (v, u)))
        .collect();
    let units = units
        .into_iter()
        .zip(kinds)
        .zip(drawn.at)
        .map(|((members, kind), (layer, slot))| Unit {
            kind,
            members: members.iter().map(|&p| plan.subtasks[p].id).collect(),
            layer,
            slot,
        })
        .collect();
    Condensed {
        units,
        edges,
        layers: drawn.layers,
        widest: drawn.widest,
    }
}

/// How many of a unit's members are in each state, for its label.
pub fn tally(plan: &Plan, members: &[SubtaskId]) -> BTreeMap<SubtaskState, usize> {
    let mut out = BTreeMap::new();
    for id in members {
        if let Some(s) = plan.subtask(*id) {
            *out.entry(s.state).or_insert(0) += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NewPlan, NewSubtask};
    use chrono::TimeZone;

    fn plan(subtasks: Vec<NewSubtask>) -> Plan {
        let spec = NewPlan {
            title: "p".into(),
            subtasks,
            ..NewPlan::default()
        };
        let now = chrono::Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        Plan::create(&spec, "t", now).unwrap().0
    }

    /// `width` independent chains of `length` subtasks, then one that
    /// waits for every chain's end.
    fn chains(width: u32, length: u32) -> Plan {
        let mut subtasks = Vec::new();
        for c in 0..width {
            for k in 0..length {
                let id = c * length + k + 1;
                let s = NewSubtask::named(format!("s{id}"));
                subtasks.push(if k == 0 { s } else { s.after(&[id - 1]) });
            }
        }
        let ends: Vec<u32> = (0..width).map(|c| (c + 1) * length).collect();
        subtasks.push(NewSubtask::named("join").after(&ends));
        plan(subtasks)
    }

    fn every_member_once(plan: &Plan, c: &Condensed) {
        let mut seen: Vec<SubtaskId> = c.units.iter().flat_map(|u| u.members.clone()).collect();
        seen.sort_unstable();
        let all: Vec<SubtaskId> = plan.subtasks().iter().map(|s| s.id()).collect();
        assert_eq!(seen, all, "every subtask in exactly one unit");
    }

    fn arrows_point_forward(c: &Condensed) {
        for &(from, to) in &c.edges {
            assert!(c.units[from].layer < c.units[to].layer, "{from} → {to}");
        }
    }

    #[test]
    fn a_plan_within_the_budget_is_drawn_subtask_by_subtask() {
        let p = chains(3, 4);
        let c = condense(&p, &BTreeSet::new(), 100);
        assert_eq!(c.units.len(), 13);
        assert!(c.units.iter().all(|u| u.kind == UnitKind::Subtask));
        assert_eq!(c.edges.len(), 12);
        every_member_once(&p, &c);
        arrows_point_forward(&c);
    }

    #[test]
    fn chains_fold_into_one_unit_each_above_the_budget() {
        let p = chains(10, 5);
        let c = condense(&p, &BTreeSet::new(), 20);
        // Ten chains and the join.
        assert_eq!(c.units.len(), 11);
        let folded: Vec<&Unit> = c
            .units
            .iter()
            .filter(|u| u.kind == UnitKind::Chain)
            .collect();
        assert_eq!(folded.len(), 10);
        assert_eq!(
            folded[0].members,
            (1..=5).map(SubtaskId).collect::<Vec<_>>()
        );
        assert_eq!(c.edges.len(), 10);
        every_member_once(&p, &c);
        arrows_point_forward(&c);
    }

    #[test]
    fn an_opened_chain_is_drawn_subtask_by_subtask() {
        let p = chains(10, 5);
        let open = BTreeSet::from([SubtaskId(6)]);
        let c = condense(&p, &open, 20);
        assert_eq!(c.units.len(), 15);
        assert!(c
            .units
            .iter()
            .any(|u| u.kind == UnitKind::Subtask && u.members == vec![SubtaskId(8)]));
        every_member_once(&p, &c);
        arrows_point_forward(&c);
    }

    #[test]
    fn a_wide_layer_folds_into_a_group_but_keeps_what_needs_a_person() {
        // 4,999 independent subtasks and one after all of the first 100.
        let mut subtasks: Vec<NewSubtask> = (1..=4_999)
            .map(|i| NewSubtask::named(format!("s{i}")))
            .collect();
        let first: Vec<u32> = (1..=100).collect();
        subtasks.push(NewSubtask::named("after").after(&first));
        let mut p = plan(subtasks);
        let failed = SubtaskId(4_321);
        p.subtasks[4_320] = std::sync::Arc::new(crate::model::Subtask {
            state: SubtaskState::Failed,
            ..(*p.subtasks[4_320]).clone()
        });
        p.reindex();
        let c = condense(&p, &BTreeSet::new(), 150);
        assert!(c.units.len() <= 150, "{} units", c.units.len());
        every_member_once(&p, &c);
        arrows_point_forward(&c);
        let group = c
            .units
            .iter()
            .find(|u| u.kind == UnitKind::Group)
            .expect("a group");
        assert!(group.members.len() > 4_800);
        assert!(
            c.units
                .iter()
                .any(|u| u.kind == UnitKind::Subtask && u.members == vec![failed]),
            "the failed subtask stays in sight"
        );
        // Opening the group shows its members one by one.
        let open = BTreeSet::from([group.key()]);
        let all = condense(&p, &open, 150);
        assert_eq!(all.units.len(), 5_000);
        every_member_once(&p, &all);
    }

    #[test]
    fn a_crowded_layer_keeps_what_thin_layers_leave_of_the_budget() {
        // One layer of 340 beside 29 layers of one: the crowded one shows
        // 171 units (170 and its group).
        let mut sizes = vec![340];
        sizes.extend([1; 29]);
        assert_eq!(share_of(&sizes, 200), 171);
        assert!(sizes.iter().map(|&n| n.min(171)).sum::<usize>() <= 200);
        // Even layers share evenly; never fewer than four each.
        assert_eq!(share_of(&[100, 100, 100, 100], 200), 50);
        assert_eq!(share_of(&[100; 100], 200), MIN_PER_LAYER);
    }

    #[test]
    fn a_tally_counts_members_by_state() {
        let p = chains(2, 3);
        let t = tally(&p, &[SubtaskId(1), SubtaskId(2)]);
        assert_eq!(t.get(&SubtaskState::Todo), Some(&2));
    }
}
