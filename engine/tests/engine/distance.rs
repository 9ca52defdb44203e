//! The graph distance between plans ([`plan_engine::graph_match`]) over
//! random plans: identical plans are 1.0, plans with no word in common
//! 0.0, and it is symmetric.

use plan_engine::{graph_match, NewPlan, NewSubtask, Plan};
use proptest::prelude::*;

use crate::common::at;

/// Words steps are named with; `OTHER` shares none with `WORDS`.
const WORDS: [&str; 8] = [
    "fetch", "parse", "store", "check", "report", "ship", "sum", "draw",
];
const OTHER: [&str; 8] = [
    "weather", "prices", "census", "tides", "flights", "rents", "polls", "quakes",
];

/// A plan's steps: each one to three words of `vocabulary`, depending on
/// some earlier steps (by 1-based number).
fn steps(
    vocabulary: &'static [&'static str],
    min: usize,
) -> impl Strategy<Value = Vec<(String, Vec<u32>)>> {
    prop::collection::vec(
        (
            prop::collection::vec(prop::sample::select(vocabulary), 1..4),
            prop::collection::vec(0u32..12, 0..3),
        ),
        min..12,
    )
    .prop_map(|raw| {
        raw.into_iter()
            .enumerate()
            .map(|(i, (words, deps))| {
                let mut deps: Vec<u32> = deps
                    .into_iter()
                    .filter(|d| (*d as usize) < i)
                    .map(|d| d + 1)
                    .collect();
                deps.sort_unstable();
                deps.dedup();
                (words.join(" "), deps)
            })
            .collect()
    })
}

fn plan(steps: &[(String, Vec<u32>)]) -> Plan {
    let spec = NewPlan {
        title: "random".into(),
        subtasks: steps
            .iter()
            .map(|(name, deps)| NewSubtask::named(name.as_str()).after(deps))
            .collect(),
        ..NewPlan::default()
    };
    Plan::create(&spec, "p", at(0)).expect("a valid plan").0
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_plan_compared_with_itself_is_one(a in steps(&WORDS, 0)) {
        let (a, same) = (plan(&a), plan(&a));
        let m = graph_match(&a, &same);
        prop_assert_eq!(m.similarity(), 1.0);
        prop_assert_eq!((m.node_f1, m.edge_f1), (1.0, 1.0));
        prop_assert!(m.only_a.is_empty() && m.only_b.is_empty());
        prop_assert_eq!(m.matched.len(), a.subtasks().len());
        prop_assert!(m.matched.iter().all(|(x, y)| x == y));
    }

    #[test]
    fn plans_with_no_word_in_common_are_zero(a in steps(&WORDS, 1), b in steps(&OTHER, 1)) {
        let m = graph_match(&plan(&a), &plan(&b));
        prop_assert_eq!(m.similarity(), 0.0);
        prop_assert_eq!(m.node_f1, 0.0);
        prop_assert!(m.matched.is_empty());
        prop_assert_eq!((m.only_a.len(), m.only_b.len()), (a.len(), b.len()));
    }

    #[test]
    fn the_distance_is_symmetric_and_between_zero_and_one(
        a in steps(&WORDS, 0),
        b in steps(&WORDS, 0),
    ) {
        let (a, b) = (plan(&a), plan(&b));
        let (ab, ba) = (graph_match(&a, &b), graph_match(&b, &a));
        prop_assert_eq!(ab.similarity(), ba.similarity());
        prop_assert_eq!((ab.node_f1, ab.edge_f1), (ba.node_f1, ba.edge_f1));
        let mut mirrored: Vec<_> = ab.matched.iter().map(|(x, y)| (*y, *x)).collect();
        mirrored.sort();
        let mut back = ba.matched.clone();
        back.sort();
        prop_assert_eq!(mirrored, back);
        prop_assert_eq!(&ab.only_a, &ba.only_b);
        prop_assert_eq!(&ab.only_b, &ba.only_a);
        prop_assert!((0.0..=1.0).contains(&ab.similarity()));
        prop_assert_eq!(ab.matched.len() + ab.only_a.len(), a.subtasks().len());
        prop_assert_eq!(ab.matched.len() + ab.only_b.len(), b.subtasks().len());
    }
}
