//! People's reviews of finished plans (the design card's "team review of
//! historical plans"): a verdict, a note, notes on single subtasks, by one
//! reviewer each. Several reviewers review one plan; each changes only
//! their own review. A review is remembered, so the next similar task's
//! planner reads what the team said.

use chrono::{DateTime, Utc};
use plan_engine::text::ellipsis as cut;
use plan_engine::{Mode, Plan, PlanId, PlanState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::RunId;

/// A review's id.
pub type ReviewId = uuid::Uuid;

plan_engine::wire_enum! {
    /// What a reviewer thinks of the plan and its work.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum ReviewVerdict: "review verdict (good, needs_changes or wrong)" {
        Good = "good",
        NeedsChanges = "needs_changes",
        Wrong = "wrong",
    }
}

impl ReviewVerdict {
    /// How the board and the memories say it.
    pub fn label(self, chinese: bool) -> &'static str {
        match (self, chinese) {
            (ReviewVerdict::Good, false) => "good",
            (ReviewVerdict::NeedsChanges, false) => "needs changes",
            (ReviewVerdict::Wrong, false) => "wrong",
            (ReviewVerdict::Good, true) => "好",
            (ReviewVerdict::NeedsChanges, true) => "需要修改",
            (ReviewVerdict::Wrong, true) => "错误",
        }
    }
}

/// A reviewer's note on one subtask.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubtaskNote {
    pub subtask: u32,
    pub note: String,
}

/// A review as a reviewer writes it (the body of `PUT
/// /api/plans/{id}/review`); the reviewer is whoever sends it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewReview {
    pub verdict: ReviewVerdict,
    /// What the reviewer says of the whole plan (may be empty).
    #[serde(default)]
    pub note: String,
    /// Notes on single subtasks, by id (at most one per subtask).
    #[serde(default)]
    #[schemars(length(max = SUBTASK_NOTES))]
    pub subtasks: Vec<SubtaskNote>,
}

/// A stored review.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Review {
    pub id: ReviewId,
    pub plan_id: PlanId,
    /// The token's name or the local user.
    pub reviewer: String,
    pub verdict: ReviewVerdict,
    pub note: String,
    pub subtasks: Vec<SubtaskNote>,
    /// The plan's version the reviewer judged.
    pub plan_version: u64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A finished plan nobody has reviewed yet: a line of the review queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToReview {
    pub plan_id: PlanId,
    pub title: String,
    /// What was asked, when planboard's agent made the plan.
    pub task: Option<String>,
    pub run_id: Option<RunId>,
    pub state: PlanState,
    pub mode: Mode,
    pub finished_at: Option<DateTime<Utc>>,
}

/// The longest review note, in characters.
pub const REVIEW_NOTE: usize = 4_000;
/// The longest note on one subtask, in characters.
pub const SUBTASK_NOTE: usize = 2_000;
/// Notes on subtasks in one review.
pub const SUBTASK_NOTES: usize = 200;

/// Why a review was refused; nothing was stored.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReviewError {
    #[error("only a finished plan (done, failed or abandoned) is reviewed; this one is {0}")]
    NotFinished(PlanState),
    #[error("the review's note has {0} characters; at most {REVIEW_NOTE}")]
    NoteTooLong(usize),
    #[error("the note on subtask {subtask} has {chars} characters; at most {SUBTASK_NOTE}")]
    SubtaskNoteTooLong { subtask: u32, chars: usize },
    #[error("a review has at most {SUBTASK_NOTES} notes on subtasks (got {0})")]
    TooManyNotes(usize),
    #[error("the plan has no subtask {subtask} (its subtasks are {known})")]
    UnknownSubtask { subtask: u32, known: String },
    #[error("subtask {0} has two notes; write one")]
    TwoNotes(u32),
    #[error("a verdict of {0} needs a note saying what should change")]
    NoteNeeded(&'static str),
}

impl NewReview {
    /// The review with its text trimmed and empty subtask notes dropped,
    /// checked against the plan it judges.
    pub fn checked(mut self, plan: &Plan) -> Result<NewReview, ReviewError> {
        if !plan.state().is_finished() {
            return Err(ReviewError::NotFinished(plan.state()));
        }
        self.note = self.note.trim().to_string();
        let chars = self.note.chars().count();
        if chars > REVIEW_NOTE {
            return Err(ReviewError::NoteTooLong(chars));
        }
        self.subtasks.retain_mut(|n| {
            n.note = n.note.trim().to_string();
            !n.note.is_empty()
        });
        if self.subtasks.len() > SUBTASK_NOTES {
            return Err(ReviewError::TooManyNotes(self.subtasks.len()));
        }
        for (i, n) in self.subtasks.iter().enumerate() {
            let chars = n.note.chars().count();
            if chars > SUBTASK_NOTE {
                return Err(ReviewError::SubtaskNoteTooLong {
                    subtask: n.subtask,
                    chars,
                });
            }
            if plan.subtask(plan_engine::SubtaskId(n.subtask)).is_none() {
                let ids: Vec<String> = plan
                    .subtasks()
                    .iter()
                    .map(|s| s.id().0.to_string())
                    .collect();
                return Err(ReviewError::UnknownSubtask {
                    subtask: n.subtask,
                    known: if ids.is_empty() {
                        "none".into()
                    } else {
                        ids.join(", ")
                    },
                });
            }
            if self.subtasks[..i].iter().any(|m| m.subtask == n.subtask) {
                return Err(ReviewError::TwoNotes(n.subtask));
            }
        }
        // A verdict that asks for change without saying what teaches the
        // next plan nothing.
        if self.verdict != ReviewVerdict::Good && self.note.is_empty() && self.subtasks.is_empty() {
            return Err(ReviewError::NoteNeeded(self.verdict.label(false)));
        }
        Ok(self)
    }
}

impl Review {
    /// The review as a memory's text: what the next similar task's planner
    /// reads.
    pub fn memory_text(&self, plan: &Plan) -> String {
        let mut text = format!(
            "A reviewer ({}) judged the finished plan \"{}\" {}",
            self.reviewer,
            plan.title(),
            self.verdict.label(false)
        );
        if !self.note.is_empty() {
            text.push_str(&format!(": {}", self.note.trim_end_matches('.')));
        }
        text.push('.');
        for n in &self.subtasks {
            let name = plan
                .subtask(plan_engine::SubtaskId(n.subtask))
                .map_or("", |s| s.name());
            let note = n.note.trim_end_matches('.');
            text.push_str(&format!(" On subtask {} \"{name}\": {note}.", n.subtask));
        }
        cut(&text, crate::memory::MEMORY_TEXT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan_engine::{NewPlan, NewSubtask, Op};

    fn finished_plan() -> Plan {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let spec = NewPlan {
            title: "Ship it".into(),
            subtasks: vec![NewSubtask::named("build"), NewSubtask::named("deploy")],
            ..NewPlan::default()
        };
        let (mut plan, _) = Plan::create(&spec, "someone", at).unwrap();
        plan.execute(
            &Op::Finish {
                state: PlanState::Abandoned,
                outcome: "stopped".into(),
            }
            .into(),
            "someone",
            at,
        )
        .unwrap();
        plan
    }

    fn review(verdict: ReviewVerdict, note: &str, subtasks: Vec<SubtaskNote>) -> NewReview {
        NewReview {
            verdict,
            note: note.into(),
            subtasks,
        }
    }

    #[test]
    fn a_review_of_a_finished_plan_is_trimmed_and_kept() {
        let plan = finished_plan();
        let checked = review(
            ReviewVerdict::NeedsChanges,
            "  add a rollback step ",
            vec![
                SubtaskNote {
                    subtask: 2,
                    note: " check the health first ".into(),
                },
                SubtaskNote {
                    subtask: 1,
                    note: "   ".into(),
                },
            ],
        )
        .checked(&plan)
        .unwrap();
        assert_eq!(checked.note, "add a rollback step");
        assert_eq!(
            checked.subtasks,
            vec![SubtaskNote {
                subtask: 2,
                note: "check the health first".into()
            }]
        );
    }

    #[test]
    fn a_review_is_refused_with_its_reason() {
        let plan = finished_plan();
        let long = "x".repeat(REVIEW_NOTE + 1);
        assert_eq!(
            review(ReviewVerdict::Good, &long, vec![]).checked(&plan),
            Err(ReviewError::NoteTooLong(REVIEW_NOTE + 1))
        );
        let unknown = review(
            ReviewVerdict::Good,
            "",
            vec![SubtaskNote {
                subtask: 9,
                note: "?".into(),
            }],
        );
        assert_eq!(
            unknown.checked(&plan).unwrap_err().to_string(),
            "the plan has no subtask 9 (its subtasks are 1, 2)"
        );
        let twice = review(
            ReviewVerdict::Good,
            "",
            vec![
                SubtaskNote {
                    subtask: 1,
                    note: "a".into(),
                },
                SubtaskNote {
                    subtask: 1,
                    note: "b".into(),
                },
            ],
        );
        assert_eq!(twice.checked(&plan), Err(ReviewError::TwoNotes(1)));
        assert_eq!(
            review(ReviewVerdict::Wrong, " ", vec![]).checked(&plan),
            Err(ReviewError::NoteNeeded("wrong"))
        );
        let many: Vec<SubtaskNote> = (0..=SUBTASK_NOTES as u32)
            .map(|i| SubtaskNote {
                subtask: i,
                note: "n".into(),
            })
            .collect();
        assert_eq!(
            review(ReviewVerdict::Good, "", many).checked(&plan),
            Err(ReviewError::TooManyNotes(SUBTASK_NOTES + 1))
        );
        assert!(review(ReviewVerdict::Good, "", vec![])
            .checked(&plan)
            .is_ok());
    }

    #[test]
    fn only_a_finished_plan_is_reviewed() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let (plan, _) = Plan::create(
            &NewPlan {
                title: "t".into(),
                ..NewPlan::default()
            },
            "me",
            at,
        )
        .unwrap();
        assert!(matches!(
            review(ReviewVerdict::Good, "", vec![]).checked(&plan),
            Err(ReviewError::NotFinished(_))
        ));
    }

    #[test]
    fn the_memory_says_who_judged_what_and_names_the_subtasks() {
        let plan = finished_plan();
        let r = Review {
            id: uuid::Uuid::nil(),
            plan_id: plan.id(),
            reviewer: "ana".into(),
            verdict: ReviewVerdict::NeedsChanges,
            note: "add a rollback step".into(),
            subtasks: vec![SubtaskNote {
                subtask: 2,
                note: "check health first".into(),
            }],
            plan_version: plan.version(),
            created_at: chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
            updated_at: chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
        };
        assert_eq!(
            r.memory_text(&plan),
            "A reviewer (ana) judged the finished plan \"Ship it\" needs changes: add a rollback step. \
             On subtask 2 \"deploy\": check health first."
        );
    }
}
