//! The documented state tables are what the engine does: every (from, to)
//! pair of both tables is read from docs/engine.md (the README links it)
//! and checked against the transition functions, so neither can change
//! without the other.

use plan_engine::transitions::{plan_transition, subtask_transition, SubtaskMove};
use plan_engine::{PlanState, SubtaskState};

fn engine_doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/engine.md");
    std::fs::read_to_string(path).expect("docs/engine.md in the workspace")
}

/// The table rows under a `## heading`, as cells (header and rule skipped).
fn table(text: &str, heading: &str) -> Vec<Vec<String>> {
    let section = text
        .split(&format!("\n## {heading}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("docs/engine.md has no section {heading}"));
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

fn subtask_state(name: &str) -> SubtaskState {
    SubtaskState::ALL
        .into_iter()
        .find(|s| s.as_str() == name)
        .unwrap_or_else(|| panic!("no subtask state {name}"))
}

const PLAN_STATES: [PlanState; 8] = [
    PlanState::Draft,
    PlanState::AwaitingApproval,
    PlanState::Approved,
    PlanState::Running,
    PlanState::Paused,
    PlanState::Done,
    PlanState::Failed,
    PlanState::Abandoned,
];

fn plan_state(name: &str) -> Option<PlanState> {
    PLAN_STATES.into_iter().find(|s| s.as_str() == name)
}

#[test]
fn every_pair_of_the_documented_subtask_table_is_what_the_engine_does() {
    let rows = table(&engine_doc(), "Subtask states");
    assert_eq!(rows.len(), 6, "one row per state");
    let columns = SubtaskState::ALL;
    let mut checked = 0;
    for row in rows {
        let from = subtask_state(&row[0]);
        for (cell, to) in row[1..].iter().zip(columns) {
            let answer = subtask_transition(from, to);
            let word = cell.trim_end_matches(['*', '†']);
            let expected = match word {
                "–" => None,
                "✗" => None,
                "start" => Some(SubtaskMove::Start),
                "release" => Some(SubtaskMove::Release),
                "block" => Some(SubtaskMove::Block),
                "unblock" => Some(SubtaskMove::Unblock),
                "complete" => Some(SubtaskMove::Complete),
                "fail" => Some(SubtaskMove::Fail),
                "skip" => Some(SubtaskMove::Skip),
                "retry" => Some(SubtaskMove::Retry),
                "reopen" => Some(SubtaskMove::Reopen),
                other => panic!("unknown cell {other} ({from} → {to})"),
            };
            match expected {
                Some(m) => assert_eq!(answer, Ok(m), "{from} → {to}"),
                None => {
                    let why = answer.expect_err(&format!("{from} → {to} must be refused"));
                    // A refusal says why; a same-state pair says so.
                    assert_eq!(
                        why == "it already is in that state",
                        from == to,
                        "{from} → {to}: {why}"
                    );
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 36);
}

#[test]
fn every_pair_of_the_documented_plan_table_is_what_the_engine_does() {
    let rows = table(&engine_doc(), "Plan states");
    let mut covered = Vec::new();
    for row in rows {
        // "approved (approve), draft (reject, comment required), abandoned":
        // the states named outside parentheses.
        let mut outside = String::new();
        let mut depth = 0;
        for c in row[1].chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ if depth == 0 => outside.push(c),
                _ => {}
            }
        }
        let targets: Vec<PlanState> = outside
            .split([',', ' '])
            .map(|w| w.trim().trim_end_matches('‡'))
            .filter_map(plan_state)
            .collect();
        assert!(!targets.is_empty(), "{row:?}");
        for from in row[0]
            .split(", ")
            .map(|n| plan_state(n.trim()).expect("a plan state"))
        {
            covered.push(from);
            for to in PLAN_STATES {
                assert_eq!(
                    plan_transition(from, to).is_ok(),
                    targets.contains(&to),
                    "{from} → {to}"
                );
            }
        }
    }
    covered.sort_by_key(|s| s.as_str());
    covered.dedup();
    assert_eq!(covered.len(), 8, "every plan state has a row");
}
