//! What each agent session was last shown, so `POST /api/tools/{dialect}/hint`
//! can answer "unchanged" in one line when the plan has not moved since.
//!
//! Session keys are chosen by clients, so the memory is bounded: past
//! [`CAPACITY`] sessions the one unused longest is forgotten (its next hint
//! is simply a whole one again).

use std::collections::{BTreeMap, HashMap};

use plan_engine::PlanId;

/// Sessions remembered at most.
pub const CAPACITY: usize = 10_000;

#[derive(Default)]
pub struct HintsShown {
    shown: HashMap<String, Seen>,
    /// Use order: tick → session, oldest first.
    order: BTreeMap<u64, String>,
    tick: u64,
    capacity: usize,
}

struct Seen {
    plan: PlanId,
    version: u64,
    tick: u64,
}

impl HintsShown {
    pub fn new() -> HintsShown {
        HintsShown::with_capacity(CAPACITY)
    }

    pub fn with_capacity(capacity: usize) -> HintsShown {
        HintsShown {
            capacity: capacity.max(1),
            ..HintsShown::default()
        }
    }

    /// The version of `plan` this session was last shown, if it was shown that plan.
    pub fn version_shown(&self, session: &str, plan: PlanId) -> Option<u64> {
        self.shown
            .get(session)
            .filter(|seen| seen.plan == plan)
            .map(|seen| seen.version)
    }

    /// Records that `session` was shown `plan` at `version` (or no plan).
    pub fn record(&mut self, session: &str, shown: Option<(PlanId, u64)>) {
        if let Some(old) = self.shown.remove(session) {
            self.order.remove(&old.tick);
        }
        let Some((plan, version)) = shown else { return };
        while self.shown.len() >= self.capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.shown.remove(&oldest);
        }
        self.tick += 1;
        self.order.insert(self.tick, session.to_string());
        self.shown.insert(
            session.to_string(),
            Seen {
                plan,
                version,
                tick: self.tick,
            },
        );
    }

    pub fn len(&self) -> usize {
        self.shown.len()
    }

    pub fn is_empty(&self) -> bool {
        self.shown.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_its_capacity_the_memory_forgets_the_session_unused_longest() {
        let plan = uuid::Uuid::from_u128(7);
        let mut hints = HintsShown::with_capacity(3);
        for session in ["a", "b", "c"] {
            hints.record(session, Some((plan, 1)));
        }
        // "a" is used again, so "b" is now the oldest.
        hints.record("a", Some((plan, 2)));
        hints.record("d", Some((plan, 1)));
        assert_eq!(hints.len(), 3);
        assert_eq!(hints.version_shown("a", plan), Some(2));
        assert_eq!(hints.version_shown("b", plan), None);
        assert_eq!(hints.version_shown("d", plan), Some(1));
    }

    #[test]
    fn a_version_shown_counts_only_for_the_same_plan() {
        let mut hints = HintsShown::new();
        hints.record("a", Some((uuid::Uuid::from_u128(1), 4)));
        assert_eq!(hints.version_shown("a", uuid::Uuid::from_u128(2)), None);
        hints.record("a", None);
        assert!(hints.is_empty());
    }
}
