//! Approval fatigue, measured from the records: per person and per tool,
//! how long people take to decide, how often they approve as asked, how
//! many approvals took under two seconds, the denials and the edits; and
//! suggestions to move a tool people always approve from `ask` to `auto`,
//! and one they often deny from `auto` to `ask`, each with its figures.
//! Applying one is an operator's click.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::approval::{ApprovalDecision, ApprovalKind, ApprovalRecord};
use crate::config::ToolPolicy;

/// An approval given this fast was hardly read.
pub const QUICK_MS: u64 = 2_000;
/// A tool approved as asked this many times, never denied nor edited, is
/// suggested `auto`.
pub const AUTO_AFTER: usize = 20;
/// A tool denied this many times, and at least [`ASK_DENIED_SHARE`] of
/// its decisions, is suggested `ask`.
pub const ASK_AFTER_DENIALS: usize = 3;
pub const ASK_DENIED_SHARE: f64 = 0.3;

/// The figures of one person's or one tool's decisions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DecisionStats {
    /// The person, or the tool.
    pub name: String,
    pub decisions: usize,
    /// The median milliseconds from being asked to deciding.
    pub median_ms: Option<u64>,
    /// Approved as asked.
    pub approved: usize,
    /// `approved` of `decisions`, 0.0 to 1.0.
    pub approved_share: f64,
    /// Approvals (as asked or edited) given in under [`QUICK_MS`].
    pub quick: usize,
    pub denials: usize,
    pub edits: usize,
}

/// A tool's policy worth changing, with the figures that say so.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Suggestion {
    pub tool: String,
    /// The operator's policy now, and the one suggested.
    pub from: ToolPolicy,
    pub to: ToolPolicy,
    /// Why, in a sentence with the figures.
    pub why: String,
    pub decisions: usize,
    pub approved: usize,
    pub denials: usize,
}

/// Everything the insights page shows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Insights {
    /// The records read.
    pub records: usize,
    pub people: Vec<DecisionStats>,
    pub tools: Vec<DecisionStats>,
    pub suggestions: Vec<Suggestion>,
}

fn median(mut values: Vec<u64>) -> Option<u64> {
    values.sort_unstable();
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2),
    }
}

fn stats(name: &str, records: &[&ApprovalRecord]) -> DecisionStats {
    let count = |d: ApprovalDecision| records.iter().filter(|r| r.decision == d).count();
    let approved = count(ApprovalDecision::Approved);
    let quick = records
        .iter()
        .filter(|r| {
            matches!(
                r.decision,
                ApprovalDecision::Approved | ApprovalDecision::Edited
            )
        })
        .filter(|r| r.waited_ms.is_some_and(|ms| ms < QUICK_MS))
        .count();
    DecisionStats {
        name: name.to_string(),
        decisions: records.len(),
        median_ms: median(records.iter().filter_map(|r| r.waited_ms).collect()),
        approved,
        approved_share: if records.is_empty() {
            0.0
        } else {
            approved as f64 / records.len() as f64
        },
        quick,
        denials: count(ApprovalDecision::Denied),
        edits: count(ApprovalDecision::Edited),
    }
}

/// Groups `records` by `key`, in the order first seen, most decisions
/// first.
fn grouped<'a>(
    records: impl Iterator<Item = &'a ApprovalRecord>,
    key: impl Fn(&ApprovalRecord) -> Option<String>,
) -> Vec<DecisionStats> {
    let mut groups: Vec<(String, Vec<&ApprovalRecord>)> = Vec::new();
    for r in records {
        let Some(k) = key(r) else { continue };
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, list)) => list.push(r),
            None => groups.push((k, vec![r])),
        }
    }
    let mut out: Vec<DecisionStats> = groups.iter().map(|(k, list)| stats(k, list)).collect();
    out.sort_by(|a, b| b.decisions.cmp(&a.decisions).then(a.name.cmp(&b.name)));
    out
}

/// The figures of `records` (people's decisions: plans, guarded calls,
/// budgets, re-approvals; grants and revocations are not decisions on
/// something asked) per person and per tool, and the suggestions for each
/// tool against its `policy` now (the operator's).
pub fn insights(records: &[ApprovalRecord], policy: impl Fn(&str) -> ToolPolicy) -> Insights {
    let decisions = || {
        records
            .iter()
            .filter(|r| r.kind != ApprovalKind::Grant && r.decision != ApprovalDecision::Revoked)
    };
    let people = grouped(decisions(), |r| Some(r.person.clone()));
    let tools = grouped(
        decisions().filter(|r| r.kind == ApprovalKind::ToolCall),
        |r| r.tool.clone(),
    );
    let mut suggestions = Vec::new();
    for t in &tools {
        let now = policy(&t.name);
        let always = t.approved >= AUTO_AFTER && t.denials == 0 && t.edits == 0;
        let denied = t.denials >= ASK_AFTER_DENIALS
            && t.denials as f64 >= ASK_DENIED_SHARE * t.decisions as f64;
        let (to, why) = if always && now == ToolPolicy::Ask {
            (
                ToolPolicy::Auto,
                format!(
                    "approved as asked {} of {} times, never denied nor edited ({} in under 2 s)",
                    t.approved, t.decisions, t.quick
                ),
            )
        } else if denied && now == ToolPolicy::Auto {
            (
                ToolPolicy::Ask,
                format!(
                    "denied {} of {} times where a run asked for it",
                    t.denials, t.decisions
                ),
            )
        } else {
            continue;
        };
        suggestions.push(Suggestion {
            tool: t.name.clone(),
            from: now,
            to,
            why,
            decisions: t.decisions,
            approved: t.approved,
            denials: t.denials,
        });
    }
    Insights {
        records: records.len(),
        people,
        tools,
        suggestions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(person: &str, tool: &str, decision: ApprovalDecision, ms: u64) -> ApprovalRecord {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let mut r = ApprovalRecord::new(
            uuid::Uuid::nil(),
            ApprovalKind::ToolCall,
            decision,
            person,
            at,
            "0".repeat(64),
        );
        r.tool = Some(tool.into());
        r.waited_ms = Some(ms);
        r
    }

    #[test]
    fn a_tool_always_approved_is_suggested_auto_and_one_often_denied_ask() {
        let mut records: Vec<ApprovalRecord> = (0..AUTO_AFTER)
            .map(|i| {
                record(
                    "ann",
                    "write_file",
                    ApprovalDecision::Approved,
                    500 + i as u64,
                )
            })
            .collect();
        for _ in 0..3 {
            records.push(record("bob", "run_shell", ApprovalDecision::Denied, 60_000));
        }
        records.push(record(
            "bob",
            "run_shell",
            ApprovalDecision::Approved,
            9_000,
        ));
        let policy = |tool: &str| match tool {
            "write_file" => ToolPolicy::Ask,
            _ => ToolPolicy::Auto,
        };
        let found = insights(&records, policy);
        assert_eq!(found.records, 24);
        let ann = &found.people[0];
        assert_eq!(
            (ann.name.as_str(), ann.decisions, ann.quick),
            ("ann", 20, 20)
        );
        assert_eq!(ann.approved_share, 1.0);
        let shell = found.tools.iter().find(|t| t.name == "run_shell").unwrap();
        assert_eq!((shell.denials, shell.median_ms), (3, Some(60_000)));
        let moves: Vec<(&str, ToolPolicy)> = found
            .suggestions
            .iter()
            .map(|s| (s.tool.as_str(), s.to))
            .collect();
        assert_eq!(
            moves,
            [
                ("write_file", ToolPolicy::Auto),
                ("run_shell", ToolPolicy::Ask)
            ]
        );
        assert!(found.suggestions[0].why.contains("20 of 20"));
        // Already as suggested: nothing to suggest.
        assert!(insights(&records, |_| ToolPolicy::Ask).suggestions.len() == 1);
    }
}
