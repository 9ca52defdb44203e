//! Two people for what is risky: who may approve a run's plan and its
//! guarded calls ([`ApprovalRule`]: not the person who started it, n
//! different people, only named approvers), where an operator's rule
//! applies ([`RuleScope`]), and who a person is of an actor
//! ([`person_of`]). Apart from the records (`approval`) so that a run's
//! config can name a rule without the records naming the config back.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Two people for what is risky: who may approve a plan (and its guarded
/// calls) besides the one who asked for them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRule {
    /// The person who started the run may not approve its plan or its
    /// guarded calls.
    #[serde(default)]
    pub not_starter: bool,
    /// Approvals needed, each by another person (0 or 1: one, as always).
    #[serde(default)]
    #[schemars(range(max = 20))]
    pub at_least: u32,
    /// The people who may approve, by name (the token's); empty: anyone
    /// who may change plans.
    #[serde(default)]
    #[schemars(length(max = 50))]
    pub approvers: Vec<String>,
}

/// Where an operator's rule applies (`PLANBOARD_APPROVAL_RULES`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleScope {
    /// Every run's plan and guarded calls.
    All,
    /// The plans of this mode (and their runs' guarded calls).
    Mode(plan_engine::Mode),
    /// The guarded calls of this tool (and grants of it).
    Tool(String),
    /// The runs started from the template of this name.
    Template(String),
}

impl ApprovalRule {
    /// Whether the rule asks nothing more than one approval by anyone.
    pub fn is_plain(&self) -> bool {
        !self.not_starter && self.at_least <= 1 && self.approvers.is_empty()
    }

    /// How many approvals are needed.
    pub fn needed(&self) -> u32 {
        self.at_least.max(1)
    }

    /// The stricter of two rules: either's `not_starter`, the larger
    /// count, the people both name (either's when the other names none).
    pub fn and(&self, other: &ApprovalRule) -> ApprovalRule {
        let approvers = match (self.approvers.is_empty(), other.approvers.is_empty()) {
            (true, _) => other.approvers.clone(),
            (_, true) => self.approvers.clone(),
            _ => self
                .approvers
                .iter()
                .filter(|a| other.approvers.contains(a))
                .cloned()
                .collect(),
        };
        ApprovalRule {
            not_starter: self.not_starter || other.not_starter,
            at_least: self.at_least.max(other.at_least),
            approvers,
        }
    }

    /// Why `person` may not approve under this rule, what `starter`
    /// started (a sentence), if they may not.
    pub fn refuses(&self, person: &str, starter: &str) -> Option<String> {
        if self.not_starter && person == person_of(starter) {
            return Some(format!(
                "{person} started this run and may not approve it too: another person approves \
                 (a two-person rule)"
            ));
        }
        if !self.approvers.is_empty() && !self.approvers.iter().any(|a| a == person) {
            return Some(format!(
                "{person} is not among the approvers of this run ({}): one of them approves",
                self.approvers.join(", ")
            ));
        }
        None
    }

    /// Who still has to approve after the people of `approved`: the
    /// approvers not yet among them, or, when the rule names none, that
    /// many more people (not the starter when the rule says so); empty
    /// when enough approved.
    pub fn waiting_for(&self, approved: &[String], starter: &str) -> Vec<String> {
        let more = (self.needed() as usize).saturating_sub(approved.len());
        if more == 0 {
            return Vec::new();
        }
        if self.approvers.is_empty() {
            let who = if self.not_starter {
                format!("another person than {}", person_of(starter))
            } else {
                "another person".to_string()
            };
            return vec![format!("{more} × {who}")];
        }
        self.approvers
            .iter()
            .filter(|a| !approved.contains(a))
            .filter(|a| !(self.not_starter && a.as_str() == person_of(starter)))
            .cloned()
            .collect()
    }
}

/// The person of an actor: `alice` of `alice · release-bot`.
pub fn person_of(actor: &str) -> &str {
    actor.split(" · ").next().unwrap_or(actor).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_person_rule_refuses_the_starter_and_waits_for_its_approvers() {
        let rule = ApprovalRule {
            not_starter: true,
            at_least: 2,
            approvers: vec!["ann".into(), "bob".into(), "cy".into()],
        };
        assert!(rule.refuses("ann", "ann · claude-code").is_some());
        assert!(rule.refuses("dee", "ann").unwrap().contains("ann, bob, cy"));
        assert_eq!(rule.refuses("bob", "ann"), None);
        assert_eq!(rule.waiting_for(&["bob".into()], "ann"), ["cy"]);
        assert!(rule
            .waiting_for(&["bob".into(), "cy".into()], "ann")
            .is_empty());
        let anyone = ApprovalRule {
            not_starter: true,
            ..ApprovalRule::default()
        };
        assert_eq!(
            anyone.waiting_for(&[], "ann"),
            ["1 × another person than ann"]
        );
        let stricter = rule.and(&ApprovalRule {
            at_least: 3,
            approvers: vec!["bob".into(), "cy".into(), "eve".into()],
            ..ApprovalRule::default()
        });
        assert_eq!((stricter.not_starter, stricter.at_least), (true, 3));
        assert_eq!(stricter.approvers, ["bob", "cy"]);
        assert!(ApprovalRule::default().is_plain());
    }
}
