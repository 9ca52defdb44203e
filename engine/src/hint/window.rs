//! The bounded window of the plan that a hint shows: the subtasks of
//! interest, their neighbours and counts per state, so a hint's size does
//! not grow with the plan.

use std::collections::BTreeSet;

use super::fill::fill;
use super::texts::Texts;
use super::{HintCase, HintOptions};
use crate::model::{Plan, Subtask, SubtaskId, SubtaskState};

pub(super) struct Ctx<'a> {
    pub(super) plan: &'a Plan,
    pub(super) opts: &'a HintOptions,
    pub(super) t: &'static Texts,
}

/// Lines of context shown around each subtask of interest.
const NEIGHBOURS: usize = 1;
/// At most this many in-progress or ready subtasks are singled out.
pub(super) const FOCUS: usize = 3;
const SNIPPET: usize = 160;

impl Ctx<'_> {
    pub(super) fn label(&self, id: SubtaskId) -> String {
        self.opts.dialect.label(self.plan, id)
    }

    pub(super) fn unchanged(&self, case: HintCase) -> String {
        let in_progress = self.plan.in_progress();
        let focus = match (case, in_progress.first()) {
            (HintCase::InProgress, Some(first)) => {
                let labels: Vec<String> = in_progress
                    .iter()
                    .take(FOCUS)
                    .map(|id| self.label(*id))
                    .collect();
                let reference = self.opts.dialect.subtask_ref(self.plan, *first);
                let finish = fill(self.opts.dialect.names().finish, &[("ref", &reference)]);
                fill(
                    self.t.unchanged_in_progress,
                    &[("labels", &labels.join(", ")), ("finish", &finish)],
                )
            }
            _ => String::new(),
        };
        fill(
            self.t.unchanged,
            &[
                ("version", &self.plan.version.to_string()),
                ("focus", &focus),
            ],
        )
    }

    /// The plan's subtask limit, if it has one (seed 003 states it with the
    /// rules), then the common rules.
    pub(super) fn common_rules(&self) -> String {
        let names = self.opts.dialect.names();
        let mut out = String::new();
        if let Some(max) = self.plan.max_subtasks {
            out.push_str(&fill(
                self.t.subtask_limit,
                &[("max_subtasks", &max.to_string())],
            ));
        }
        out.push_str(&fill(
            self.t.common,
            &[("count", names.count), ("view", names.view)],
        ));
        out
    }

    pub(super) fn window(&self, case: HintCase) -> String {
        let plan = self.plan;
        let mut out = fill(
            self.t.header,
            &[
                ("title", &plan.title),
                ("state", plan.state.as_str()),
                (
                    "settled",
                    &(plan.count(SubtaskState::Done) + plan.count(SubtaskState::Skipped))
                        .to_string(),
                ),
                ("total", &plan.subtasks.len().to_string()),
                ("percent", &plan.percent().to_string()),
            ],
        );
        let counts = [
            SubtaskState::InProgress,
            SubtaskState::Blocked,
            SubtaskState::Failed,
            SubtaskState::Todo,
        ];
        let mut separator = ": ";
        for (state, template) in counts.into_iter().zip(self.t.counts) {
            let n = plan.count(state);
            if n > 0 {
                out.push_str(separator);
                out.push_str(&fill(template, &[("n", &n.to_string())]));
                separator = self.t.count_separator;
            }
        }
        if !plan.goal.trim().is_empty() {
            out.push('\n');
            out.push_str(&fill(
                self.t.goal,
                &[("goal", &self.snippet(&plan.goal, SNIPPET * 2))],
            ));
        }
        let shown: Vec<usize> = if self.opts.full_plan {
            (0..plan.subtasks.len()).collect()
        } else {
            self.focus(case).into_iter().collect()
        };
        let mut next = 0;
        for p in shown {
            if p > next {
                out.push('\n');
                out.push_str(&fill(self.t.more, &[("n", &(p - next).to_string())]));
            }
            out.push('\n');
            let s = &plan.subtasks[p];
            out.push_str(&self.line(p, s));
            if s.state == SubtaskState::InProgress {
                out.push_str(&self.details(s));
            }
            next = p + 1;
        }
        if next < plan.subtasks.len() {
            out.push('\n');
            out.push_str(&fill(
                self.t.more,
                &[("n", &(plan.subtasks.len() - next).to_string())],
            ));
        }
        out
    }

    /// The positions worth showing, without scanning the plan (except when stuck).
    pub(super) fn focus(&self, case: HintCase) -> BTreeSet<usize> {
        let plan = self.plan;
        let index = plan.index();
        let len = plan.subtasks.len();
        let mut focus: Vec<usize> = index.in_progress_positions().take(FOCUS).collect();
        focus.extend(index.ready_positions().take(FOCUS));
        match case {
            HintCase::Stuck => focus.extend(self.stuck_positions()),
            HintCase::AtTheEnd => focus.extend(len.saturating_sub(FOCUS)..len),
            _ => {}
        }
        if focus.is_empty() {
            focus.extend(0..len.min(FOCUS));
        }
        let mut shown = BTreeSet::new();
        for p in focus {
            let from = p.saturating_sub(NEIGHBOURS);
            let to = (p + NEIGHBOURS).min(len.saturating_sub(1));
            shown.extend(from..=to);
        }
        shown
    }

    pub(super) fn stuck_ids(&self) -> Vec<SubtaskId> {
        self.stuck_positions()
            .into_iter()
            .map(|p| self.plan.subtasks[p].id)
            .collect()
    }

    pub(super) fn stuck_positions(&self) -> Vec<usize> {
        self.plan
            .subtasks
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s.state, SubtaskState::Blocked | SubtaskState::Failed))
            .map(|(p, _)| p)
            .take(FOCUS)
            .collect()
    }

    pub(super) fn stuck_list(&self) -> String {
        let parts: Vec<String> = self
            .stuck_positions()
            .into_iter()
            .map(|p| {
                let s = &self.plan.subtasks[p];
                format!("{} ({})", self.label(s.id), s.state)
            })
            .collect();
        parts.join(", ")
    }

    pub(super) fn line(&self, position: usize, s: &Subtask) -> String {
        let check = if s.state == SubtaskState::Done {
            "x"
        } else {
            " "
        };
        let mut line = format!("- [{check}] {} {}", self.label(s.id), s.name);
        if !matches!(s.state, SubtaskState::Todo | SubtaskState::Done) {
            line.push_str(&format!(" ({})", s.state));
        }
        // In a chain each subtask waits on the line above; only say so when it is not that.
        let waits_on_line_above =
            position > 0 && s.dependencies.as_slice() == [self.plan.subtasks[position - 1].id];
        if !s.dependencies.is_empty() && s.state.is_unstarted() && !waits_on_line_above {
            let deps: Vec<String> = s.dependencies.iter().map(|d| self.label(*d)).collect();
            line.push_str(&format!(" ← {}", deps.join(" ")));
        }
        if let Some(outcome) = &s.outcome {
            line.push_str(&format!(": {}", self.snippet(outcome, SNIPPET / 2)));
        }
        line
    }

    /// Description, expected outcome, notes and attempts of a subtask in
    /// progress, as indented lines under its window line.
    pub(super) fn details(&self, s: &Subtask) -> String {
        let mut out = String::new();
        for (label, value) in [
            (self.t.description, &s.description),
            (self.t.expected_outcome, &s.expected_outcome),
            (self.t.notes, &s.notes),
        ] {
            if !value.trim().is_empty() {
                out.push_str(&format!("\n\t- {label}: {}", self.snippet(value, SNIPPET)));
            }
        }
        if s.attempts > 1 {
            out.push_str(&format!("\n\t- {}: {}", self.t.attempts, s.attempts));
        }
        out
    }

    pub(super) fn snippet(&self, text: &str, max: usize) -> String {
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if self.opts.full_plan {
            return flat;
        }
        crate::text::ellipsis(&flat, max)
    }
}
