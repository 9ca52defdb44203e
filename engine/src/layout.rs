//! A layered drawing of a plan's dependency graph, for the board's DAG view.
//!
//! Sugiyama-style, kept small: each subtask's layer is the length of the
//! longest dependency chain leading to it (so every arrow points to a later
//! layer), then a few barycenter sweeps reorder each layer to cut edge
//! crossings. Positions are abstract (layer, slot); the board scales them.

use crate::dag::topological_order;
use crate::model::{Plan, SubtaskId};

/// Where one subtask sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub id: SubtaskId,
    /// Column, from 0: the longest chain of dependencies before it.
    pub layer: usize,
    /// Row within the column, from 0.
    pub slot: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// In the plan's subtask order.
    pub nodes: Vec<Placed>,
    pub layers: usize,
    /// The most subtasks in one layer.
    pub widest: usize,
    /// Pairs of dependency arrows that cross, after reordering.
    pub crossings: usize,
}

/// Sweeps of barycenter reordering; more rarely helps on plans this size.
const SWEEPS: usize = 8;

/// Lays out the plan's graph. A cyclic plan cannot exist (the engine refuses
/// cycles), but should one be loaded, it falls back to one subtask per layer.
pub fn layout(plan: &Plan) -> Layout {
    let subtasks = &plan.subtasks;
    if subtasks.is_empty() {
        return Layout::default();
    }
    let deps: Vec<Vec<usize>> = subtasks
        .iter()
        .map(|s| {
            s.dependencies
                .iter()
                .filter_map(|d| plan.position(*d))
                .collect()
        })
        .collect();
    let layer = match topological_order(subtasks) {
        Ok(order) => longest_chains(&deps, &order),
        Err(_) => (0..subtasks.len()).collect(),
    };
    let drawn = layout_graph(&deps, layer);
    Layout {
        nodes: drawn
            .at
            .iter()
            .enumerate()
            .map(|(p, &(layer, slot))| Placed {
                id: subtasks[p].id,
                layer,
                slot,
            })
            .collect(),
        layers: drawn.layers,
        widest: drawn.widest,
        crossings: drawn.crossings,
    }
}

/// Any acyclic graph laid out: node `p` sits at `at[p]` = (layer, slot).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphLayout {
    pub at: Vec<(usize, usize)>,
    pub layers: usize,
    pub widest: usize,
    pub crossings: usize,
}

/// Each node's layer: the longest chain of dependencies before it, given
/// the nodes in an order that puts dependencies first.
pub fn longest_chains(deps: &[Vec<usize>], order: &[usize]) -> Vec<usize> {
    let mut layer = vec![0usize; deps.len()];
    for &p in order {
        layer[p] = deps[p].iter().map(|&q| layer[q] + 1).max().unwrap_or(0);
    }
    layer
}

/// Orders each layer of a graph whose layers are given (every dependency
/// in an earlier layer) to cut crossings: the plan's own drawing and the
/// condensed one of [`crate::lod`] share it.
pub fn layout_graph(deps: &[Vec<usize>], layer: Vec<usize>) -> GraphLayout {
    let n = deps.len();
    if n == 0 {
        return GraphLayout::default();
    }
    let layers = layer.iter().max().map_or(0, |m| m + 1);
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); layers];
    for p in 0..n {
        rows[layer[p]].push(p);
    }
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (p, ds) in deps.iter().enumerate() {
        for &q in ds {
            dependents[q].push(p);
        }
    }
    let mut slot = vec![0usize; n];
    let place = |rows: &Vec<Vec<usize>>, slot: &mut Vec<usize>| {
        for row in rows {
            for (i, &p) in row.iter().enumerate() {
                slot[p] = i;
            }
        }
    };
    place(&rows, &mut slot);
    let mut best = (count_crossings(&rows, deps, &slot), rows.clone());
    for sweep in 0..SWEEPS {
        let down = sweep % 2 == 0;
        let order: Vec<usize> = if down {
            (1..layers).collect()
        } else {
            (0..layers.saturating_sub(1)).rev().collect()
        };
        for l in order {
            let neighbours = if down { deps } else { &dependents };
            let mut keyed: Vec<(f64, usize, usize)> = rows[l]
                .iter()
                .enumerate()
                .map(|(i, &p)| {
                    let ns = &neighbours[p];
                    let key = if ns.is_empty() {
                        i as f64
                    } else {
                        ns.iter().map(|&q| slot[q] as f64).sum::<f64>() / ns.len() as f64
                    };
                    (key, i, p)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            rows[l] = keyed.into_iter().map(|(_, _, p)| p).collect();
            for (i, &p) in rows[l].iter().enumerate() {
                slot[p] = i;
            }
        }
        let crossings = count_crossings(&rows, deps, &slot);
        if crossings < best.0 {
            best = (crossings, rows.clone());
        }
    }
    let (crossings, rows) = best;
    place(&rows, &mut slot);
    GraphLayout {
        at: (0..n).map(|p| (layer[p], slot[p])).collect(),
        layers,
        widest: rows.iter().map(Vec::len).max().unwrap_or(0),
        crossings,
    }
}

/// Crossings between arrows that enter the same layer. Arrows spanning
/// several layers are compared by their end slots, a good enough proxy for
/// choosing between orders.
fn count_crossings(rows: &[Vec<usize>], deps: &[Vec<usize>], slot: &[usize]) -> usize {
    let mut total = 0;
    for row in rows.iter().skip(1) {
        let mut edges: Vec<(usize, usize)> = Vec::new();
        for &p in row {
            for &q in &deps[p] {
                edges.push((slot[q], slot[p]));
            }
        }
        edges.sort_unstable();
        for (i, a) in edges.iter().enumerate() {
            total += edges[i + 1..]
                .iter()
                .filter(|b| b.0 > a.0 && b.1 < a.1)
                .count();
        }
    }
    total
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

    #[test]
    fn every_arrow_points_to_a_later_layer_and_slots_are_unique_per_layer() {
        let p = plan(vec![
            NewSubtask::named("a"),
            NewSubtask::named("b").after(&[1]),
            NewSubtask::named("c").after(&[1]),
            NewSubtask::named("d").after(&[2, 3]),
            NewSubtask::named("e"),
        ]);
        let l = layout(&p);
        assert_eq!(l.layers, 3);
        let at = |id: u32| l.nodes.iter().find(|n| n.id == SubtaskId(id)).unwrap();
        for s in &p.subtasks {
            for d in &s.dependencies {
                assert!(at(d.0).layer < at(s.id.0).layer);
            }
        }
        let mut seen: Vec<(usize, usize)> = l.nodes.iter().map(|n| (n.layer, n.slot)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), l.nodes.len());
        assert_eq!(l.widest, 2);
    }

    #[test]
    fn reordering_removes_the_crossing_a_naive_order_has() {
        // Listed so that the second layer starts crossed: 3 depends on 2, 4 on 1.
        let p = plan(vec![
            NewSubtask::named("1"),
            NewSubtask::named("2"),
            NewSubtask::named("3").after(&[2]),
            NewSubtask::named("4").after(&[1]),
        ]);
        let l = layout(&p);
        assert_eq!(l.crossings, 0);
        let at = |id: u32| l.nodes.iter().find(|n| n.id == SubtaskId(id)).unwrap().slot;
        assert_eq!(at(1) < at(2), at(4) < at(3));
    }

    #[test]
    fn an_empty_plan_has_an_empty_layout() {
        assert_eq!(layout(&plan(Vec::new())), Layout::default());
    }
}
