//! How far a run may change its own plan after a person approved it.
//!
//! Seed 004 adapts a complex plan between super-steps, updates an emergent
//! TODO list after every TODO, and seed 002 replaces a failed step with a
//! workaround. Each is a model asking for more work, and a small model asks
//! for more every time it is asked (measured before this: 44 adapt rounds
//! and 135 subtasks, the same three names over and over, until the call
//! budget stopped the run). So the growth is bounded by design, not by the
//! model's judgement:
//!
//! - **A budget per plan** ([`Adaptation::limits`]): at most `n`
//!   subtasks added, `n` being the approved plan's size (at least
//!   [`MIN_ADDED`]; at least the list's cap of 20 for an emergent list,
//!   which is meant to grow), in at most `2 + n / 2` rounds that added
//!   something. Past it the run goes on without adapting and says so
//!   once ([`Adaptation::exhausted`]).
//! - **No step twice** ([`same_step`]): a subtask the plan already holds
//!   (the same name and description, or the name of one done) is refused
//!   to the model with the reason.
//! - **A gap buys one round** ([`Adaptation::gap`]): a result's `short_of`
//!   must name what is missing (a few words, not "more"); the same gap
//!   again (the same words, or fewer of them) does not pay for another
//!   round.
//!
//! It is pure and lives on the run's row, so a restart keeps what was
//! spent.
//!
//! # Layout
//! - [`Adaptation`]: what was spent, the limits, the gap check.
//! - [`AdaptLimits`], [`Gap`].
//! - [`same_step`], [`words`]: how two steps or two gaps are compared.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The fewest subtasks a plan may add by adapting, however small it was.
pub const MIN_ADDED: u32 = 3;
/// The fewest words a `short_of` needs to count as naming a gap.
pub const GAP_MIN_WORDS: usize = 2;
/// Gaps remembered (the oldest go first).
pub const GAPS_KEPT: usize = 50;

/// What adaptation spent on one run's plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Adaptation {
    /// Subtasks the plan had when it first adapted (the approved plan).
    pub base: u32,
    /// The fewest subtasks it may add whatever its size ([`MIN_ADDED`];
    /// an emergent list, meant to grow, gets its cap).
    #[serde(default)]
    pub floor: u32,
    /// Rounds that added subtasks.
    pub rounds: u32,
    /// Subtasks added by adapting, updating and working around.
    pub added: u32,
    /// The gaps that bought a round, as their words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<String>,
    /// Whether the run said that the budget is used up.
    #[serde(default)]
    pub told: bool,
}

/// The most a plan may grow by adapting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdaptLimits {
    pub rounds: u32,
    pub added: u32,
}

/// What a `short_of` is worth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gap {
    /// It names something missing that no earlier result named.
    New,
    /// Too vague to act on ("more", "incomplete"): no round for it.
    Vague,
    /// The same gap as an earlier one: no second round.
    Repeated,
}

impl Adaptation {
    pub fn is_untouched(&self) -> bool {
        *self == Adaptation::default()
    }

    /// Takes the approved plan's size the first time the plan adapts, and
    /// the fewest subtasks it may add (`floor`, at least [`MIN_ADDED`]).
    pub fn start(&mut self, plan_len: usize, floor: u32) {
        if self.base == 0 {
            self.base = plan_len.min(u32::MAX as usize) as u32;
            self.floor = floor.max(MIN_ADDED);
        }
    }

    /// At most as many subtasks added as the approved plan had (at least
    /// the floor), in at most 2 + half as many rounds that added some.
    pub fn limits(&self) -> AdaptLimits {
        let added = self.base.max(self.floor).max(MIN_ADDED);
        AdaptLimits {
            rounds: 2 + added / 2,
            added,
        }
    }

    /// The most subtasks the plan may hold by adapting: the approved size
    /// and what it may add (0 before [`Adaptation::start`]).
    pub fn most_subtasks(&self) -> usize {
        if self.base == 0 {
            return 0;
        }
        self.base as usize + self.limits().added as usize
    }

    /// How many subtasks may still be added.
    pub fn room(&self) -> u32 {
        self.limits().added.saturating_sub(self.added)
    }

    /// Why no more adapting is allowed, if it is not.
    pub fn exhausted(&self) -> Option<String> {
        let limits = self.limits();
        if self.rounds >= limits.rounds {
            Some(format!(
                "the plan adapted {} times, the most allowed for a plan of {} subtasks; the run goes on without adapting",
                self.rounds, self.base
            ))
        } else if self.added >= limits.added {
            Some(format!(
                "the plan added {} subtasks, the most allowed for a plan of {} subtasks; the run goes on without adding more",
                self.added, self.base
            ))
        } else {
            None
        }
    }

    /// Records a round that added `count` subtasks.
    pub fn spent(&mut self, count: u32) {
        if count > 0 {
            self.rounds += 1;
            self.added = self.added.saturating_add(count);
        }
    }

    /// Judges a result's `short_of` and remembers a new gap.
    pub fn gap(&mut self, short_of: &str) -> Gap {
        let said = words(short_of);
        if said.len() < GAP_MIN_WORDS || said.iter().all(|w| VAGUE.contains(&w.as_str())) {
            return Gap::Vague;
        }
        let repeated = self.gaps.iter().any(|earlier| {
            let earlier: Vec<&str> = earlier.split(' ').collect();
            said.iter().all(|w| earlier.contains(&w.as_str()))
        });
        if repeated {
            return Gap::Repeated;
        }
        if self.gaps.len() >= GAPS_KEPT {
            self.gaps.remove(0);
        }
        self.gaps.push(said.join(" "));
        Gap::New
    }
}

/// Words that name nothing in particular.
const VAGUE: &[&str] = &[
    "more",
    "details",
    "detail",
    "information",
    "info",
    "data",
    "work",
    "steps",
    "step",
    "incomplete",
    "missing",
    "needed",
    "additional",
    "further",
    "the",
    "a",
    "an",
    "some",
    "of",
    "and",
    "to",
    "is",
    "are",
    "not",
    "yet",
    "done",
    "complete",
    "completed",
    "results",
    "result",
    "output",
    "outputs",
    "everything",
    "all",
    "rest",
    "remaining",
    "other",
    "things",
    "stuff",
];

/// The lowercase words of a text (letters and digits; CJK characters one
/// word each), without repeats, in order: the engine's, which matches
/// steps by them too.
pub use plan_engine::distance::words;

/// Whether a proposed step is one the plan holds already: the same name
/// and description (as words), or the name of a step already done
/// (`held_done`: settled for good, which the agent also says of a step
/// that failed every attempt).
pub fn same_step(
    name: &str,
    description: &str,
    held_name: &str,
    held_description: &str,
    held_done: bool,
) -> bool {
    let same_name = words(name) == words(held_name) && !words(name).is_empty();
    same_name && (held_done || words(description) == words(held_description))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_grows_with_the_approved_plan_and_is_spent_by_rounds_that_add() {
        let mut a = Adaptation::default();
        assert_eq!(a.most_subtasks(), 0, "no budget before the plan runs");
        a.start(6, MIN_ADDED);
        a.start(40, MIN_ADDED); // the approved plan counts, not what it grew to
        assert_eq!(a.most_subtasks(), 12);
        assert_eq!(
            a.limits(),
            AdaptLimits {
                rounds: 5,
                added: 6
            }
        );
        a.spent(0);
        assert_eq!(a.rounds, 0, "a round that added nothing is free");
        a.spent(4);
        assert_eq!(a.room(), 2);
        assert_eq!(a.exhausted(), None);
        a.spent(2);
        assert!(a.exhausted().unwrap().contains("added 6 subtasks"));
        let mut small = Adaptation::default();
        small.start(1, 0);
        assert_eq!(
            small.limits(),
            AdaptLimits {
                rounds: 3,
                added: 3
            }
        );
        small.spent(1);
        small.spent(1);
        assert_eq!(small.exhausted(), None);
        small.spent(1);
        assert!(small.exhausted().unwrap().contains("adapted 3 times"));
        let mut emergent = Adaptation::default();
        emergent.start(2, 20);
        assert_eq!(
            emergent.limits(),
            AdaptLimits {
                rounds: 12,
                added: 20
            }
        );
    }

    #[test]
    fn a_gap_buys_one_round_once_and_a_vague_one_none() {
        let mut a = Adaptation::default();
        assert_eq!(a.gap("more"), Gap::Vague);
        assert_eq!(a.gap("Missing more details."), Gap::Vague);
        assert_eq!(a.gap(""), Gap::Vague);
        assert_eq!(a.gap("the revenue for March"), Gap::New);
        assert_eq!(a.gap("Revenue for March!"), Gap::Repeated);
        assert_eq!(
            a.gap("march revenue"),
            Gap::Repeated,
            "fewer of the same words"
        );
        assert_eq!(a.gap("the revenue for April"), Gap::New);
        assert_eq!(a.gap("缺少 三月 收入"), Gap::New);
        assert_eq!(a.gap("三月收入"), Gap::Repeated);
    }

    #[test]
    fn a_step_is_the_same_by_its_words_or_by_the_name_of_one_done() {
        assert!(same_step(
            "Check results",
            "look again",
            "check  RESULTS",
            "Look again.",
            false
        ));
        assert!(!same_step(
            "Check results",
            "look at B",
            "Check results",
            "look at A",
            false
        ));
        assert!(same_step(
            "Check results",
            "anything",
            "Check results",
            "else",
            true
        ));
        assert!(!same_step("", "", "", "", true));
    }
}
