//! Drift: how far a run's plan has moved from the version a person
//! approved, measured as graphs ([`plan_engine::graph_match`]). The
//! approved plan is the contract: when the agent's adaptations or
//! people's edits take the plan below the run's `drift_threshold`, the
//! run pauses until a person approves it again.

use plan_engine::{GraphMatch, NewPlan, NewSubtask, Plan};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most steps an approved plan keeps for the measure (it travels with
/// the run's row, saved about once a second): a larger plan's drift is not
/// measured.
pub const MAX_STEPS: usize = 500;

/// The fewest steps added, removed or rewritten (on the larger side) that
/// can count as drift: one edit alone never pauses a run, whatever the
/// plan's size.
pub const MIN_CHANGED: usize = 2;

/// One step of the approved plan, as the measure reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovedStep {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The steps it depends on, by 1-based position.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<u32>,
}

/// The plan as a person approved it: its version and its steps' words and
/// dependencies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovedPlan {
    pub version: u64,
    pub steps: Vec<ApprovedStep>,
}

/// A run paused because its plan drifted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Drift {
    /// The version approved, and the version that drifted from it.
    pub approved: u64,
    pub version: u64,
    /// [`GraphMatch::similarity`] of the two, and the run's threshold.
    pub similarity: f64,
    pub threshold: f64,
}

impl Drift {
    /// Why the run paused, in a sentence.
    pub fn reason(&self) -> String {
        format!(
            "the plan drifted from the version a person approved (v{} → v{}: similarity {:.2}, \
             below {:.2}): approve it again to go on",
            self.approved, self.version, self.similarity, self.threshold
        )
    }
}

impl ApprovedPlan {
    /// The approved `plan`, or `None` past [`MAX_STEPS`].
    pub fn of(plan: &Plan) -> Option<ApprovedPlan> {
        if plan.subtasks().len() > MAX_STEPS {
            return None;
        }
        let position =
            |id: plan_engine::SubtaskId| plan.position(id).and_then(|p| u32::try_from(p + 1).ok());
        Some(ApprovedPlan {
            version: plan.version(),
            steps: plan
                .subtasks()
                .iter()
                .map(|s| ApprovedStep {
                    name: s.name().to_string(),
                    description: s.description().to_string(),
                    after: s
                        .dependencies()
                        .iter()
                        .filter_map(|d| position(*d))
                        .collect(),
                })
                .collect(),
        })
    }

    /// The approved plan rebuilt, for the measure (its ids are positions).
    pub fn plan(&self) -> Option<Plan> {
        let spec = NewPlan {
            title: "approved".into(),
            subtasks: self
                .steps
                .iter()
                .map(|s| {
                    NewSubtask {
                        name: s.name.clone(),
                        description: s.description.clone(),
                        ..NewSubtask::default()
                    }
                    .after(&s.after)
                })
                .collect(),
            ..NewPlan::default()
        };
        let epoch = plan_engine::Timestamp::UNIX_EPOCH;
        Plan::create(&spec, "planboard", epoch).ok().map(|(p, _)| p)
    }

    /// How `now` compares with the approved plan; `None` when it cannot be
    /// measured.
    pub fn compare(&self, now: &Plan) -> Option<GraphMatch> {
        Some(plan_engine::graph_match(&self.plan()?, now))
    }

    /// Whether `now` has drifted from the approved plan: below `threshold`
    /// (0 never) with at least [`MIN_CHANGED`] steps added, removed or
    /// rewritten on one side.
    pub fn drift(&self, now: &Plan, threshold: f64) -> Option<Drift> {
        if threshold <= 0.0 || now.version() == self.version {
            return None;
        }
        let m = self.compare(now)?;
        let similarity = m.similarity();
        let changed = m.only_a.len().max(m.only_b.len());
        (similarity < threshold && changed >= MIN_CHANGED).then_some(Drift {
            approved: self.version,
            version: now.version(),
            similarity,
            threshold,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(names: &[&str]) -> Plan {
        let spec = NewPlan {
            title: "t".into(),
            subtasks: names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let after: Vec<u32> = (i > 0).then_some(i as u32).into_iter().collect();
                    NewSubtask::named(*n).after(&after)
                })
                .collect(),
            ..NewPlan::default()
        };
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        Plan::create(&spec, "ann", at).unwrap().0
    }

    #[test]
    fn one_edit_never_drifts_and_rewriting_half_does() {
        let mut approved = ApprovedPlan::of(&plan(&[
            "collect the weather figures",
            "collect the census figures",
            "collect the traffic figures",
            "collect the harvest figures",
        ]))
        .unwrap();
        assert_eq!(approved.steps[1].after, vec![1]);
        // The plans below stand for later versions.
        approved.version = 0;
        let threshold = plan_engine::distance::DRIFT_THRESHOLD;
        let same = plan(&[
            "collect the weather figures",
            "collect the census figures",
            "collect the traffic figures",
            "collect the harvest figures",
        ]);
        assert_eq!(approved.drift(&same, threshold), None);
        // One step rewritten: one edit, never drift.
        let one = plan(&[
            "collect the weather figures",
            "summarise the rainfall trends",
            "collect the traffic figures",
            "collect the harvest figures",
        ]);
        assert!(approved.compare(&one).unwrap().similarity() < threshold);
        assert_eq!(approved.drift(&one, threshold), None);
        // Half rewritten: drift, with the versions and the measure.
        let half = plan(&[
            "collect the weather figures",
            "collect the census figures",
            "summarise the rainfall trends",
            "summarise the salary trends",
        ]);
        let drift = approved.drift(&half, threshold).unwrap();
        assert!(drift.similarity < threshold, "{drift:?}");
        assert_eq!((drift.approved, drift.version), (0, 1));
        assert!(drift.reason().contains("approve it again"));
        assert_eq!(approved.drift(&half, 0.0), None, "0 never pauses");
    }
}
