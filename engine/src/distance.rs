//! How far two plans are apart as graphs: their steps matched by their
//! words, and the share of steps and dependencies the two have in
//! common. What a run measures to tell when its plan has drifted from the
//! version a person approved (and what issue 56's comparisons read).
//!
//! Unlike [`crate::compare`], which matches the subtasks of one plan's
//! history by id, this matches by what the steps say, so it compares any
//! two plans: two versions of one, a plan and its re-plan (whose new
//! subtasks have new ids), or the plans of two runs.
//!
//! # Algorithm
//! 1. **A step's words**: the lowercase words of its name and description
//!    ([`words`]: letters and digits; each CJK character a word of its
//!    own), without a few English words that name nothing ([`STOP_WORDS`]),
//!    as a set.
//! 2. **Steps alike**: the Jaccard similarity of two steps' word sets
//!    (shared words over the words of both); two steps are the same step
//!    when it is at least [`STEP_MATCH`] (half of the words of both
//!    together are shared). Two steps without words are alike.
//! 3. **One-to-one, greedy**: steps with exactly the same words are
//!    matched first, in plan order; then, among the rest, the pairs at or
//!    above the threshold are taken best first (ties by position in the
//!    first plan, then in the second) while both steps are free. Only
//!    steps sharing a word are compared (an index of the second plan's
//!    words), so a plan whose steps mostly stayed costs about its size.
//! 4. **F1**: `node_f1` is the F1 of the matching, `2·matched / (steps of
//!    a + steps of b)`; `edge_f1` the same over the dependencies, a
//!    dependency `x → y` of `a` counting as found when `b` has the
//!    dependency between the steps matched to `x` and `y`. Two plans with
//!    no steps (or no dependencies) agree: 1.0.
//! 5. **Similarity** ([`GraphMatch::similarity`]): one F1 over both
//!    kinds of element, each step weighing 1 and each dependency ½:
//!    `(2·matched + found) / (steps of both + ½·dependencies of both)`,
//!    that is `node_f1` and `edge_f1` averaged with weights `steps of
//!    both` and `½·dependencies of both`. Identical plans are 1.0; plans
//!    with no step in common 0.0 (no dependency can be found between
//!    steps that do not match); rewriting half of a plan of ten gives at
//!    most 0.5 unless its kept steps depend on each other densely. A
//!    dependency weighs half a step so that one step added with many
//!    dependencies (a summary of ten independent steps) moves a plan less
//!    than rewriting steps does.
//!
//! The two plans are always compared in one order (the one whose steps'
//! words and dependencies sort first goes first), so `graph_match(a, b)`
//! is `graph_match(b, a)` mirrored, ties included: the distance is
//! symmetric.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::model::{Plan, SubtaskId};

/// Two steps are the same step when the Jaccard similarity of their word
/// sets is at least this: half of the words of both together are shared
/// ("Fetch the weather for Paris" and "fetch weather in Paris, France";
/// not "Fetch the weather" and "Write the report").
pub const STEP_MATCH: f64 = 0.5;

/// A run pauses for re-approval when its plan's [`GraphMatch::similarity`]
/// to the approved version falls below this (a run's `drift_threshold`
/// unless it sets its own). With the similarity's formula, adding one step
/// to a plan of ten scores 0.77 to 0.95 (0.77 when the new step depends on
/// ten independent ones, 0.92 inserted in a chain, 0.95 appended to it),
/// and rewriting half of its steps 0.48 to 0.5 (a chain, ten independent
/// steps): the threshold sits between them.
pub const DRIFT_THRESHOLD: f64 = 0.7;

/// Words that name nothing in a step ("the", "of", …), left out of its
/// word set.
pub const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "and", "or", "in", "on", "at", "for", "with", "from", "by",
    "into", "as", "is", "are", "be", "it", "its", "this", "that", "then",
];

/// How two plans' graphs match.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphMatch {
    /// F1 of the steps matched: `2·matched / (steps of a + steps of b)`
    /// (1.0 when neither has a step).
    pub node_f1: f64,
    /// F1 of the dependencies found on both sides through the matching
    /// (1.0 when neither has a dependency).
    pub edge_f1: f64,
    /// `(step of a, step of b)` matched, in `a`'s order.
    pub matched: Vec<(SubtaskId, SubtaskId)>,
    /// Steps of `a` with no match in `b`, in `a`'s order.
    pub only_a: Vec<SubtaskId>,
    /// Steps of `b` with no match in `a`, in `b`'s order.
    pub only_b: Vec<SubtaskId>,
    /// Dependencies of `a`, of `b`, and found on both sides.
    pub edges_a: usize,
    pub edges_b: usize,
    pub edges_matched: usize,
}

impl GraphMatch {
    /// How alike the two plans are, 0.0 to 1.0: one F1 over steps
    /// (weighing 1 each) and dependencies (½ each), `(2·matched +
    /// edges_matched) / (steps of both + ½·(edges_a + edges_b))`; 1.0 for
    /// two empty plans. No step in common is 0.0 whatever the
    /// dependencies.
    pub fn similarity(&self) -> f64 {
        let steps = 2 * self.matched.len() + self.only_a.len() + self.only_b.len();
        // Doubled to stay in whole numbers: 2·steps + edges.
        let all = 2 * steps + self.edges_a + self.edges_b;
        if all == 0 {
            return 1.0;
        }
        (2 * (2 * self.matched.len() + self.edges_matched)) as f64 / all as f64
    }

    /// `1 − similarity`.
    pub fn distance(&self) -> f64 {
        1.0 - self.similarity()
    }
}

/// The lowercase words of a text (letters and digits; CJK characters one
/// word each), without repeats, in order.
pub fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut word = String::new();
    let push = |w: &mut String, out: &mut Vec<String>| {
        if !w.is_empty() && !out.contains(w) {
            out.push(std::mem::take(w));
        }
        w.clear();
    };
    for c in text.chars() {
        if is_cjk(c) {
            push(&mut word, &mut out);
            word.push(c);
            push(&mut word, &mut out);
        } else if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else {
            push(&mut word, &mut out);
        }
    }
    push(&mut word, &mut out);
    out
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xac00..=0xd7af)
}

/// A step's word set ([`words`] of its name and description, without
/// [`STOP_WORDS`]), sorted.
pub fn step_words(name: &str, description: &str) -> Vec<String> {
    let mut set: Vec<String> = words(&format!("{name} {description}"))
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect();
    set.sort_unstable();
    set.dedup();
    set
}

/// A plan as the matching reads it: each step's id and word set, and its
/// dependencies as positions, in plan order.
struct Graph {
    ids: Vec<SubtaskId>,
    words: Vec<Vec<String>>,
    /// Per step, the positions of the steps it depends on, sorted.
    deps: Vec<Vec<usize>>,
}

impl Graph {
    fn of(plan: &Plan) -> Graph {
        let steps = plan.subtasks();
        let position: HashMap<SubtaskId, usize> =
            steps.iter().enumerate().map(|(i, s)| (s.id(), i)).collect();
        Graph {
            ids: steps.iter().map(|s| s.id()).collect(),
            words: steps
                .iter()
                .map(|s| step_words(s.name(), s.description()))
                .collect(),
            deps: steps
                .iter()
                .map(|s| {
                    let mut d: Vec<usize> = s
                        .dependencies()
                        .iter()
                        .filter_map(|d| position.get(d).copied())
                        .collect();
                    d.sort_unstable();
                    d.dedup();
                    d
                })
                .collect(),
        }
    }

    fn edges(&self) -> usize {
        self.deps.iter().map(Vec::len).sum()
    }

    /// The order the two plans are compared in: by their steps' words and
    /// dependencies, position by position.
    fn order(&self, other: &Graph) -> std::cmp::Ordering {
        self.words
            .iter()
            .zip(&self.deps)
            .cmp(other.words.iter().zip(&other.deps))
    }
}

/// A candidate pair: `shared` words of `union`, steps `i` of a and `j` of b.
struct Pair {
    shared: usize,
    union: usize,
    i: usize,
    j: usize,
}

/// The one-to-one matching of `a`'s steps to `b`'s, as `b`'s position for
/// each of `a`'s steps.
fn matching(a: &Graph, b: &Graph) -> Vec<Option<usize>> {
    let mut to_b: Vec<Option<usize>> = vec![None; a.ids.len()];
    let mut taken = vec![false; b.ids.len()];
    // Exactly the same words, in plan order.
    let mut same: HashMap<&[String], VecDeque<usize>> = HashMap::new();
    for (j, w) in b.words.iter().enumerate() {
        same.entry(w.as_slice()).or_default().push_back(j);
    }
    for (i, w) in a.words.iter().enumerate() {
        if let Some(j) = same.get_mut(w.as_slice()).and_then(VecDeque::pop_front) {
            to_b[i] = Some(j);
            taken[j] = true;
        }
    }
    // The rest, best first, among steps that share a word.
    let mut index: HashMap<&str, Vec<usize>> = HashMap::new();
    for (j, w) in b.words.iter().enumerate().filter(|(j, _)| !taken[*j]) {
        for word in w {
            index.entry(word.as_str()).or_default().push(j);
        }
    }
    let mut pairs: Vec<Pair> = Vec::new();
    let mut counts: HashMap<usize, usize> = HashMap::new();
    for (i, w) in a
        .words
        .iter()
        .enumerate()
        .filter(|(i, _)| to_b[*i].is_none())
    {
        counts.clear();
        for word in w {
            for &j in index.get(word.as_str()).into_iter().flatten() {
                *counts.entry(j).or_default() += 1;
            }
        }
        for (&j, &n) in &counts {
            let union = w.len() + b.words[j].len() - n;
            // Jaccard ≥ STEP_MATCH (one half), in whole numbers.
            if 2 * n >= union {
                pairs.push(Pair {
                    shared: n,
                    union,
                    i,
                    j,
                });
            }
        }
    }
    pairs.sort_by(|x, y| {
        // x.shared / x.union > y.shared / y.union first.
        (y.shared * x.union)
            .cmp(&(x.shared * y.union))
            .then(x.i.cmp(&y.i))
            .then(x.j.cmp(&y.j))
    });
    for p in pairs {
        if to_b[p.i].is_none() && !taken[p.j] {
            to_b[p.i] = Some(p.j);
            taken[p.j] = true;
        }
    }
    to_b
}

fn f1(found: usize, left: usize, right: usize) -> f64 {
    if left + right == 0 {
        1.0
    } else {
        (2 * found) as f64 / (left + right) as f64
    }
}

/// How `a` and `b` match as graphs: steps matched by their words, node and
/// edge F1 (see the module's *Algorithm*). Symmetric: `graph_match(b, a)`
/// is this with the sides swapped.
pub fn graph_match(a: &Plan, b: &Plan) -> GraphMatch {
    let (ga, gb) = (Graph::of(a), Graph::of(b));
    if ga.order(&gb) == std::cmp::Ordering::Greater {
        let m = matched(&gb, &ga);
        return GraphMatch {
            matched: m.matched.into_iter().map(|(x, y)| (y, x)).collect(),
            only_a: m.only_b,
            only_b: m.only_a,
            edges_a: m.edges_b,
            edges_b: m.edges_a,
            ..m
        }
        .in_order_of(&ga);
    }
    matched(&ga, &gb)
}

impl GraphMatch {
    /// `matched` in the order of `a`'s steps.
    fn in_order_of(mut self, a: &Graph) -> GraphMatch {
        let position: HashMap<SubtaskId, usize> =
            a.ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        self.matched
            .sort_by_key(|(x, _)| position.get(x).copied().unwrap_or(usize::MAX));
        self
    }
}

fn matched(a: &Graph, b: &Graph) -> GraphMatch {
    let to_b = matching(a, b);
    let mut in_a = vec![false; b.ids.len()];
    let mut matched = Vec::new();
    let mut only_a = Vec::new();
    for (i, j) in to_b.iter().enumerate() {
        match j {
            Some(j) => {
                in_a[*j] = true;
                matched.push((a.ids[i], b.ids[*j]));
            }
            None => only_a.push(a.ids[i]),
        }
    }
    let only_b: Vec<SubtaskId> = (0..b.ids.len())
        .filter(|j| !in_a[*j])
        .map(|j| b.ids[j])
        .collect();
    let b_edges: HashSet<(usize, usize)> = b
        .deps
        .iter()
        .enumerate()
        .flat_map(|(y, ds)| ds.iter().map(move |x| (*x, y)))
        .collect();
    let edges_matched = a
        .deps
        .iter()
        .enumerate()
        .flat_map(|(y, ds)| ds.iter().map(move |x| (*x, y)))
        .filter(|(x, y)| match (to_b[*x], to_b[*y]) {
            (Some(bx), Some(by)) => b_edges.contains(&(bx, by)),
            _ => false,
        })
        .count();
    let (edges_a, edges_b) = (a.edges(), b.edges());
    GraphMatch {
        node_f1: f1(matched.len(), a.ids.len(), b.ids.len()),
        edge_f1: f1(edges_matched, edges_a, edges_b),
        matched,
        only_a,
        only_b,
        edges_a,
        edges_b,
        edges_matched,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NewPlan, NewSubtask};

    fn at() -> crate::model::Timestamp {
        chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    /// A plan of these steps, each `(name, dependencies by 1-based number)`.
    fn plan(steps: &[(&str, &[u32])]) -> Plan {
        let spec = NewPlan {
            title: "p".into(),
            subtasks: steps
                .iter()
                .map(|(name, deps)| NewSubtask::named(*name).after(deps))
                .collect(),
            ..NewPlan::default()
        };
        Plan::create(&spec, "ana", at()).unwrap().0
    }

    const TOPICS: [&str; 15] = [
        "weather", "prices", "census", "tides", "flights", "rainfall", "harvest", "traffic",
        "tickets", "salaries", "imports", "vaccines", "rents", "polls", "quakes",
    ];

    /// Ten steps `Collect the <topic> figures`, a chain when `chain`.
    fn ten(chain: bool) -> Vec<(String, Vec<u32>)> {
        (0..10)
            .map(|i| {
                let deps = if chain && i > 0 {
                    vec![i as u32]
                } else {
                    vec![]
                };
                (format!("Collect the {} figures", TOPICS[i]), deps)
            })
            .collect()
    }

    /// The last five of [`ten`] rewritten in other words.
    fn half_rewritten(chain: bool) -> Vec<(String, Vec<u32>)> {
        let mut steps = ten(chain);
        for (i, step) in steps.iter_mut().enumerate().skip(5) {
            step.0 = format!("Summarise the {} trends", TOPICS[i + 5]);
        }
        steps
    }

    fn of(steps: &[(String, Vec<u32>)]) -> Plan {
        let refs: Vec<(&str, &[u32])> = steps
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_slice()))
            .collect();
        plan(&refs)
    }

    #[test]
    fn steps_match_by_their_words_not_their_ids_or_word_order() {
        let a = plan(&[
            ("Fetch the weather for Paris", &[]),
            ("Write the report", &[1]),
        ]);
        let b = plan(&[
            ("Write a report", &[]),
            ("fetch weather in Paris", &[]),
            ("Send it", &[2, 1]),
        ]);
        let m = graph_match(&a, &b);
        assert_eq!(
            m.matched,
            vec![(SubtaskId(1), SubtaskId(2)), (SubtaskId(2), SubtaskId(1))]
        );
        assert_eq!(m.only_a, Vec::<SubtaskId>::new());
        assert_eq!(m.only_b, vec![SubtaskId(3)]);
        assert!((m.node_f1 - 0.8).abs() < 1e-9, "{}", m.node_f1);
        // a: 1 → 2; b: 2 → 3, 1 → 3: nothing in common.
        assert_eq!((m.edges_a, m.edges_b, m.edges_matched), (1, 2, 0));
        assert_eq!(m.edge_f1, 0.0);
        // (2·2 + 0) / (5 + ½·3)
        assert!((m.similarity() - 8.0 / 13.0).abs() < 1e-9);
    }

    #[test]
    fn a_step_shares_half_of_the_words_of_both_to_match() {
        assert_eq!(
            step_words("Fetch the Weather, for Paris!", ""),
            vec!["fetch", "paris", "weather"]
        );
        // {fetch, weather, paris} and {fetch, weather, tokyo}: 2 of 4.
        let a = plan(&[("Fetch the weather for Paris", &[])]);
        let b = plan(&[("Fetch the weather for Tokyo", &[])]);
        assert_eq!(graph_match(&a, &b).matched.len(), 1);
        // {fetch, weather} and {write, weather, report}: 1 of 4.
        let c = plan(&[("Write the weather report", &[])]);
        let d = plan(&[("Fetch the weather", &[])]);
        assert!(graph_match(&c, &d).matched.is_empty());
        // A Chinese step's words are its characters: 4 of 8.
        let e = plan(&[("下载天气数据", &[])]);
        let f = plan(&[("下载天气资料", &[])]);
        assert_eq!(graph_match(&e, &f).matched.len(), 1);
    }

    #[test]
    fn the_best_pair_is_matched_first_and_each_step_once() {
        let a = plan(&[("parse csv rows", &[]), ("parse csv rows quickly", &[])]);
        let b = plan(&[("parse csv rows quickly now", &[])]);
        let m = graph_match(&a, &b);
        // 4 of 5 beats 3 of 5: the second step takes it.
        assert_eq!(m.matched, vec![(SubtaskId(2), SubtaskId(1))]);
        assert_eq!(m.only_a, vec![SubtaskId(1)]);
    }

    #[test]
    fn adding_one_step_to_a_plan_of_ten_stays_above_the_drift_threshold() {
        for chain in [false, true] {
            let before = ten(chain);
            // Appended after the last.
            let mut appended = before.clone();
            appended.push(("Check the totals twice".into(), vec![10]));
            // Depending on all ten.
            let mut fan_in = before.clone();
            fan_in.push(("Compile every figure".into(), (1..=10).collect()));
            // Inserted in the middle, the next step rewired to it.
            let mut inserted = before.clone();
            inserted.push(("Check the census".into(), vec![5]));
            if chain {
                inserted[5].1 = vec![11];
            }
            for after in [appended, fan_in, inserted] {
                let s = graph_match(&of(&before), &of(&after)).similarity();
                assert!(s >= DRIFT_THRESHOLD, "chain {chain}: {s} for {after:?}");
                assert!(s >= 0.76, "{s}");
            }
        }
    }

    #[test]
    fn rewriting_half_of_a_plan_of_ten_falls_below_the_drift_threshold() {
        for chain in [false, true] {
            let m = graph_match(&of(&ten(chain)), &of(&half_rewritten(chain)));
            assert_eq!(m.matched.len(), 5);
            assert!((m.node_f1 - 0.5).abs() < 1e-9);
            assert!(m.similarity() < DRIFT_THRESHOLD, "{}", m.similarity());
            assert!(m.similarity() <= 0.5);
        }
        // The chain: 5 steps and 4 of 9 dependencies on each side kept,
        // (2·5 + 4) / (20 + ½·18).
        let s = graph_match(&of(&ten(true)), &of(&half_rewritten(true))).similarity();
        assert!((s - 14.0 / 29.0).abs() < 1e-9, "{s}");
    }

    #[test]
    fn plans_without_steps_or_dependencies_agree() {
        let empty = plan(&[]);
        let m = graph_match(&empty, &empty);
        assert_eq!((m.node_f1, m.edge_f1, m.similarity()), (1.0, 1.0, 1.0));
        let one = plan(&[("Collect the weather figures", &[])]);
        let m = graph_match(&empty, &one);
        assert_eq!(m.similarity(), 0.0);
        assert_eq!(m.only_b, vec![SubtaskId(1)]);
    }
}
