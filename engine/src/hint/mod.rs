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

mod fill;
mod texts;
mod window;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::dialect::Dialect;
use crate::model::{ApprovalStatus, Plan, PlanState, SubtaskId, SubtaskState};
use fill::fill;
use texts::{Texts, EN, ZH};
use window::{Ctx, FOCUS};

crate::wire_enum! {
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum Lang: "language (en or zh)" {
        #[default]
        En = "en",
        Zh = "zh",
    }
}

impl Lang {
    /// A language as people and browsers name it (`en-GB`, `Chinese`).
    pub fn parse(text: &str) -> Option<Lang> {
        match text.trim().to_ascii_lowercase().as_str() {
            "en" | "en-us" | "en-gb" | "english" => Some(Lang::En),
            "zh" | "zh-cn" | "zh-hans" | "cn" | "chinese" => Some(Lang::Zh),
            _ => None,
        }
    }

    /// The language a plan is written in, for a hint that should match it
    /// (seed 003's "respond in the plan's language"): Chinese when its
    /// title, goal or description holds a Han character, else English.
    pub fn of_plan(plan: &Plan) -> Lang {
        let han = |c: char| matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF);
        let texts = [&plan.title, &plan.goal, &plan.description];
        if texts.iter().any(|t| t.chars().any(han)) {
            Lang::Zh
        } else {
            Lang::En
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
    /// gated by an approval on the board): the caller's (the session's)
    /// setting, which a plan's own `need_user_confirm` overrides.
    pub needs_confirmation: bool,
    /// The subtask limit to announce when there is no plan yet. With a
    /// plan, the plan's own limit is announced: the one the engine enforces.
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
            // A plan gated by a person's approval was confirmed on the board.
            let confirm = plan.need_user_confirm.unwrap_or(opts.needs_confirmation);
            if confirm && !plan.approval.required {
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
