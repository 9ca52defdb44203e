//! Hints: the text an agent reads before each step, telling it where the
//! plan stands and what it may do next (seed 003's DefaultPlanToHint).
//!
//! One hint per situation: no plan, at the beginning, subtasks in progress,
//! none in progress, stuck on blocked or failed subtasks, at the end, plus
//! awaiting approval, draft (or rejected) and paused; English and Chinese.
//!
//! # Why the hint stays small
//! AgentScope embeds the whole plan and all the rules in every hint, so a
//! 1000-subtask walk re-reads the plan 2000 times. Here the plan is shown as
//! a bounded window: the subtasks in progress, the next ready ones, their
//! immediate neighbours and the counts per state, with `… n more` for the
//! rest; its size does not grow with the plan. The full rules are given in
//! the hints where the agent decides how to proceed (no plan, beginning,
//! approval, stuck) and shrink to a one-line reminder on routine steps.
//! `HintOptions::full_plan` restores the whole plan for callers that want it.

mod texts;

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::dialect::Dialect;
use crate::model::{ApprovalStatus, Plan, PlanState, Subtask, SubtaskId, SubtaskState};
use texts::{Texts, EN, ZH};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    #[default]
    En,
    Zh,
}

impl Lang {
    pub fn parse(text: &str) -> Option<Lang> {
        match text.trim().to_ascii_lowercase().as_str() {
            "en" | "en-us" | "en-gb" | "english" => Some(Lang::En),
            "zh" | "zh-cn" | "zh-hans" | "cn" | "chinese" => Some(Lang::Zh),
            _ => None,
        }
    }

    fn texts(self) -> &'static Texts {
        match self {
            Lang::En => &EN,
            Lang::Zh => &ZH,
        }
    }
}

#[derive(Clone, Debug)]
pub struct HintOptions {
    pub lang: Lang,
    pub dialect: Dialect,
    /// Show every subtask instead of the bounded window.
    pub full_plan: bool,
    /// Add the wait-for-confirmation rule (for agents whose plans are not
    /// gated by an approval on the board).
    pub needs_confirmation: bool,
    /// The subtask limit to announce when there is no plan yet.
    pub max_subtasks: Option<u32>,
    /// The plan version of the last hint the agent was shown. When the plan
    /// is still at that version the previous hint still holds, and the hint
    /// shrinks to one line instead of repeating the window.
    pub since_version: Option<u64>,
}

impl Default for HintOptions {
    fn default() -> Self {
        HintOptions {
            lang: Lang::En,
            dialect: Dialect::Canonical,
            full_plan: false,
            needs_confirmation: false,
            max_subtasks: None,
            since_version: None,
        }
    }
}

/// Which situation a hint is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HintCase {
    NoPlan,
    Draft,
    AwaitingApproval,
    Paused,
    AtTheBeginning,
    InProgress,
    NoneInProgress,
    Stuck,
    AtTheEnd,
}

impl HintCase {
    /// In O(1): the counts and ready set come from the plan's index.
    pub fn of(plan: Option<&Plan>) -> HintCase {
        let Some(plan) = plan.filter(|p| !p.state.is_finished()) else {
            return HintCase::NoPlan;
        };
        match plan.state {
            PlanState::Draft => return HintCase::Draft,
            PlanState::AwaitingApproval => return HintCase::AwaitingApproval,
            PlanState::Paused => return HintCase::Paused,
            _ => {}
        }
        let total = plan.subtasks.len();
        let settled = plan.count(SubtaskState::Done) + plan.count(SubtaskState::Skipped);
        if plan.count(SubtaskState::InProgress) > 0 {
            HintCase::InProgress
        } else if settled == total {
            HintCase::AtTheEnd
        } else if plan.count(SubtaskState::Todo) == total {
            HintCase::AtTheBeginning
        } else if !plan.next_ready(1).is_empty() {
            HintCase::NoneInProgress
        } else {
            HintCase::Stuck
        }
    }
}

/// The hint for the agent's next step.
pub fn hint(plan: Option<&Plan>, opts: &HintOptions) -> String {
    let t = opts.lang.texts();
    let names = opts.dialect.names();
    let case = HintCase::of(plan);
    let Some(plan) = plan.filter(|_| case != HintCase::NoPlan) else {
        let mut out = fill(t.no_plan, &[("create", names.create)]);
        let mut rules = String::new();
        if opts.needs_confirmation {
            rules.push_str(t.confirmation);
        }
        if let Some(max) = opts.max_subtasks {
            rules.push_str(&fill(
                t.subtask_limit,
                &[("max_subtasks", &max.to_string())],
            ));
        }
        if !rules.is_empty() {
            out.push_str(t.rules_separator);
            out.push_str(&rules);
        }
        return out;
    };

    let ctx = Ctx { plan, opts, t };
    if opts.since_version == Some(plan.version) {
        return ctx.unchanged(case);
    }
    let first_ready = plan.next_ready(1).first().copied();
    let next_label = first_ready.map_or_else(|| "—".to_string(), |id| ctx.label(id));
    let reference = |id: Option<SubtaskId>| {
        id.map(|id| opts.dialect.subtask_ref(plan, id))
            .unwrap_or_default()
    };
    let in_progress = plan.in_progress();
    let current = in_progress.first().copied();
    let action_ref = match case {
        HintCase::InProgress => reference(current),
        HintCase::Stuck => reference(ctx.stuck_ids().first().copied()),
        _ => reference(first_ready),
    };
    let start = fill(names.start, &[("ref", &action_ref)]);
    let finish = fill(names.finish, &[("ref", &action_ref)]);
    let fail = fill(names.fail, &[("ref", &action_ref)]);
    let window = ctx.window(case);
    let settled = plan.count(SubtaskState::Done) + plan.count(SubtaskState::Skipped);
    let mut vars: Vec<(&str, String)> = vec![
        ("plan", window),
        ("start", start),
        ("finish", finish),
        ("fail", fail),
        ("skip", names.skip.to_string()),
        ("revise", names.revise.to_string()),
        ("finish_plan", names.finish_plan.to_string()),
        ("next", next_label),
        ("settled", settled.to_string()),
        ("total", plan.subtasks.len().to_string()),
    ];
    let (template, rules) = match case {
        HintCase::NoPlan | HintCase::AtTheBeginning => {
            let mut rules = String::from(t.rules_separator);
            if opts.needs_confirmation && !plan.approval.required {
                rules.push_str(t.confirmation);
            }
            rules.push_str(&ctx.common_rules());
            (t.at_the_beginning, rules)
        }
        HintCase::InProgress => {
            let labels: Vec<String> = in_progress
                .iter()
                .take(FOCUS)
                .map(|id| ctx.label(*id))
                .collect();
            let template = if in_progress.len() == 1 {
                t.one_in_progress
            } else {
                t.many_in_progress
            };
            vars.push((
                "subtasks",
                fill(template, &[("labels", &labels.join(", "))]),
            ));
            (t.in_progress, t.reminder.to_string())
        }
        HintCase::NoneInProgress => (t.none_in_progress, t.reminder.to_string()),
        HintCase::Stuck => {
            vars.push(("stuck", ctx.stuck_list()));
            (
                t.stuck,
                format!("{}{}", t.rules_separator, ctx.common_rules()),
            )
        }
        HintCase::AwaitingApproval => (
            t.awaiting_approval,
            format!("{}{}", t.rules_separator, ctx.common_rules()),
        ),
        HintCase::Draft => {
            let rejected = match (&plan.approval.status, &plan.approval.comment) {
                (ApprovalStatus::Rejected, Some(comment)) => fill(
                    t.rejected,
                    &[
                        ("by", plan.approval.by.as_deref().unwrap_or("?")),
                        ("comment", comment),
                    ],
                ),
                _ => String::new(),
            };
            vars.push(("rejected", rejected));
            (
                t.draft,
                format!("{}{}", t.rules_separator, ctx.common_rules()),
            )
        }
        HintCase::Paused => (t.paused, t.reminder.to_string()),
        HintCase::AtTheEnd => (t.at_the_end, String::new()),
    };
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut out = fill(template, &pairs);
    out.push_str(&rules);
    out
}

/// The full common rules, for a system prompt that states them once.
pub fn rules(opts: &HintOptions) -> String {
    let t = opts.lang.texts();
    let names = opts.dialect.names();
    let mut out = String::from(t.rules_separator);
    if opts.needs_confirmation {
        out.push_str(t.confirmation);
    }
    if let Some(max) = opts.max_subtasks {
        out.push_str(&fill(
            t.subtask_limit,
            &[("max_subtasks", &max.to_string())],
        ));
    }
    out.push_str(&fill(
        t.common,
        &[("count", names.count), ("view", names.view)],
    ));
    out
}

struct Ctx<'a> {
    plan: &'a Plan,
    opts: &'a HintOptions,
    t: &'static Texts,
}

/// Lines of context shown around each subtask of interest.
const NEIGHBOURS: usize = 1;
/// At most this many in-progress or ready subtasks are singled out.
const FOCUS: usize = 3;
const SNIPPET: usize = 160;

impl Ctx<'_> {
    fn label(&self, id: SubtaskId) -> String {
        self.opts.dialect.label(self.plan, id)
    }

    fn unchanged(&self, case: HintCase) -> String {
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

    fn common_rules(&self) -> String {
        let names = self.opts.dialect.names();
        fill(
            self.t.common,
            &[("count", names.count), ("view", names.view)],
        )
    }

    fn window(&self, case: HintCase) -> String {
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
    fn focus(&self, case: HintCase) -> BTreeSet<usize> {
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

    fn stuck_ids(&self) -> Vec<SubtaskId> {
        self.stuck_positions()
            .into_iter()
            .map(|p| self.plan.subtasks[p].id)
            .collect()
    }

    fn stuck_positions(&self) -> Vec<usize> {
        self.plan
            .subtasks
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s.state, SubtaskState::Blocked | SubtaskState::Failed))
            .map(|(p, _)| p)
            .take(FOCUS)
            .collect()
    }

    fn stuck_list(&self) -> String {
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

    fn line(&self, position: usize, s: &Subtask) -> String {
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
    fn details(&self, s: &Subtask) -> String {
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

    fn snippet(&self, text: &str, max: usize) -> String {
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if self.opts.full_plan || flat.chars().count() <= max {
            return flat;
        }
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// Replaces `{key}` placeholders in one pass, so text from the plan that
/// happens to contain braces is never expanded.
fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let replaced = after.find('}').and_then(|close| {
            let key = &after[..close];
            vars.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (close, *v))
        });
        match replaced {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_never_expands_placeholders_that_arrive_inside_values() {
        let out = fill("a {x} b {y}", &[("x", "{y}"), ("y", "2")]);
        assert_eq!(out, "a {y} b 2");
    }

    #[test]
    fn fill_leaves_unknown_placeholders_alone() {
        assert_eq!(fill("{nope} {x}", &[("x", "1")]), "{nope} 1");
    }
}
