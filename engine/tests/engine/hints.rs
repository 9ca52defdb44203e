//! Golden tests for the hint texts, English and Chinese, and the window's size.
//!
//! Goldens live in `engine/tests/golden/`. After an intended text change, run
//! `UPDATE_GOLDEN=1 cargo test -p plan-engine --test engine hints` and review the diff.

use plan_engine::{
    hint, Command, Dialect, HintCase, HintOptions, Lang, NewPlan, NewSubtask, Op, Plan, PlanState,
    SubtaskId, SubtaskState,
};

use crate::common::at;

fn chain(n: u32, approval_required: bool) -> Plan {
    let spec = NewPlan {
        id: uuid::Uuid::from_u128(1),
        title: "Market research".into(),
        goal: "Compare the three biggest vendors of mechanical keyboards".into(),
        approval_required,
        subtasks: (1..=n)
            .map(|i| {
                let s = NewSubtask {
                    name: format!("Step {i}: study vendor data"),
                    description: format!("Collect and summarise source {i}."),
                    expected_outcome: format!("Summary {i}"),
                    ..NewSubtask::default()
                };
                if i == 1 {
                    s
                } else {
                    s.after(&[i - 1])
                }
            })
            .collect(),
        ..NewPlan::default()
    };
    Plan::create(&spec, "agent", at(0)).unwrap().0
}

fn run(plan: &mut Plan, op: Op) {
    plan.execute(&Command::from(op), "agent", at(5)).unwrap();
}

fn set(plan: &mut Plan, id: u32, state: SubtaskState) {
    run(
        plan,
        Op::SetSubtaskState {
            id: SubtaskId(id),
            state,
            note: Some(format!("result {id}")),
            start_next: false,
        },
    );
}

fn walk(plan: &mut Plan, done: u32) {
    for id in 1..=done {
        set(plan, id, SubtaskState::InProgress);
        set(plan, id, SubtaskState::Done);
    }
}

fn opts(lang: Lang, dialect: Dialect) -> HintOptions {
    HintOptions {
        lang,
        dialect,
        ..HintOptions::default()
    }
}

fn golden(name: &str, actual: &str) {
    let path = format!("{}/tests/golden/{name}.txt", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing golden {path}; run with UPDATE_GOLDEN=1"));
    assert_eq!(
        actual, expected,
        "hint {name} changed; review and run with UPDATE_GOLDEN=1"
    );
}

fn both(
    name: &str,
    plan: Option<&Plan>,
    dialect: Dialect,
    expected_case: HintCase,
    tweak: impl Fn(&mut HintOptions),
) {
    assert_eq!(HintCase::of(plan), expected_case, "{name}");
    for (lang, suffix) in [(Lang::En, "en"), (Lang::Zh, "zh")] {
        let mut o = opts(lang, dialect);
        tweak(&mut o);
        golden(&format!("{name}.{suffix}"), &hint(plan, &o));
    }
}

#[test]
fn the_no_plan_hint_adds_the_confirmation_and_subtask_limit_rules() {
    both(
        "no_plan",
        None,
        Dialect::AgentScope,
        HintCase::NoPlan,
        |o| {
            o.needs_confirmation = true;
            o.max_subtasks = Some(10);
        },
    );
}

#[test]
fn the_beginning_hint_points_at_the_first_ready_subtask() {
    let plan = chain(12, false);
    both(
        "at_the_beginning",
        Some(&plan),
        Dialect::AgentScope,
        HintCase::AtTheBeginning,
        |o| o.needs_confirmation = true,
    );
}

#[test]
fn the_in_progress_hint_shows_the_current_subtask_and_its_neighbours() {
    let mut plan = chain(12, false);
    walk(&mut plan, 5);
    set(&mut plan, 6, SubtaskState::InProgress);
    both(
        "in_progress",
        Some(&plan),
        Dialect::AgentScope,
        HintCase::InProgress,
        |_| {},
    );
}

#[test]
fn the_none_in_progress_hint_names_the_next_ready_subtask() {
    let mut plan = chain(12, false);
    walk(&mut plan, 4);
    both(
        "none_in_progress",
        Some(&plan),
        Dialect::Canonical,
        HintCase::NoneInProgress,
        |_| {},
    );
}

#[test]
fn the_stuck_hint_names_the_failed_and_blocked_subtasks() {
    let mut plan = chain(6, false);
    walk(&mut plan, 2);
    set(&mut plan, 3, SubtaskState::InProgress);
    set(&mut plan, 3, SubtaskState::Failed);
    both(
        "stuck",
        Some(&plan),
        Dialect::Canonical,
        HintCase::Stuck,
        |_| {},
    );
}

#[test]
fn the_approval_hint_says_nothing_may_start() {
    let plan = chain(4, true);
    both(
        "awaiting_approval",
        Some(&plan),
        Dialect::PlanManager,
        HintCase::AwaitingApproval,
        |_| {},
    );
}

#[test]
fn a_rejected_plan_hint_quotes_the_reviewer() {
    let mut plan = chain(3, true);
    plan.execute(
        &Command::from(Op::Reject {
            comment: "Add a budget step".into(),
        }),
        "alice",
        at(3),
    )
    .unwrap();
    both(
        "rejected",
        Some(&plan),
        Dialect::OpenManus,
        HintCase::Draft,
        |_| {},
    );
}

#[test]
fn the_paused_hint_asks_the_agent_to_wait() {
    let mut plan = chain(3, false);
    run(&mut plan, Op::Pause {});
    both(
        "paused",
        Some(&plan),
        Dialect::Canonical,
        HintCase::Paused,
        |_| {},
    );
}

#[test]
fn the_end_hint_asks_to_finish_the_plan() {
    let mut plan = chain(4, false);
    walk(&mut plan, 4);
    both(
        "at_the_end",
        Some(&plan),
        Dialect::AgentScope,
        HintCase::AtTheEnd,
        |_| {},
    );
}

#[test]
fn a_finished_plan_gets_the_no_plan_hint() {
    let mut plan = chain(1, false);
    run(
        &mut plan,
        Op::Finish {
            state: PlanState::Abandoned,
            outcome: "no".into(),
        },
    );
    assert_eq!(HintCase::of(Some(&plan)), HintCase::NoPlan);
}

#[test]
fn the_hint_window_stays_the_same_size_as_the_plan_grows() {
    let size_at = |n: u32| {
        let mut plan = chain(n, false);
        walk(&mut plan, n / 2);
        set(&mut plan, n / 2 + 1, SubtaskState::InProgress);
        hint(Some(&plan), &opts(Lang::En, Dialect::AgentScope)).len()
    };
    let (small, large) = (size_at(20), size_at(1000));
    assert!(
        large < small + small / 10,
        "20 subtasks: {small} bytes, 1000 subtasks: {large} bytes"
    );
    let mut plan = chain(50, false);
    walk(&mut plan, 10);
    let full = hint(
        Some(&plan),
        &HintOptions {
            full_plan: true,
            ..opts(Lang::En, Dialect::Canonical)
        },
    );
    assert!(
        full.contains("#1 Step 1") && full.contains("#50 Step 50"),
        "the full option shows every subtask"
    );
    let windowed = hint(Some(&plan), &opts(Lang::En, Dialect::Canonical));
    assert!(
        !windowed.contains("#50 Step 50") && windowed.contains("… (38 more)"),
        "{windowed}"
    );
}

#[test]
fn an_unchanged_plan_gets_a_one_line_hint_and_a_changed_one_the_full_window() {
    let mut plan = chain(8, false);
    walk(&mut plan, 2);
    set(&mut plan, 3, SubtaskState::InProgress);
    let seen = plan.version();
    let mut o = opts(Lang::En, Dialect::AgentScope);
    o.since_version = Some(seen);
    let short = hint(Some(&plan), &o);
    assert_eq!(
        short,
        format!("No change since your last hint (plan version {seen}); it still applies. [2] is 'in_progress': when it is finished, call finish_subtask(subtask_idx=2, subtask_outcome=…).\n")
    );
    set(&mut plan, 3, SubtaskState::Done);
    let fresh = hint(Some(&plan), &o);
    assert!(fresh.starts_with("# Market research"), "{fresh}");
    o.lang = Lang::Zh;
    o.since_version = Some(plan.version());
    assert!(hint(Some(&plan), &o).starts_with("自上次提示以来计划没有变化"));
}

#[test]
fn text_from_the_plan_is_never_expanded_as_a_placeholder() {
    let mut plan = chain(2, false);
    run(
        &mut plan,
        Op::UpdateInfo {
            patch: plan_engine::InfoPatch {
                title: Some("{start} {plan}".into()),
                ..Default::default()
            },
        },
    );
    let text = hint(Some(&plan), &opts(Lang::En, Dialect::Canonical));
    assert!(text.contains("# {start} {plan} [approved]"), "{text}");
}

fn set_confirm(plan: &mut Plan, on: bool) -> Vec<plan_engine::Event> {
    let op = Op::UpdateInfo {
        patch: plan_engine::InfoPatch {
            need_user_confirm: Some(on),
            ..Default::default()
        },
    };
    plan.execute(&Command::from(op), "agent", at(5)).unwrap()
}

#[test]
fn a_plans_own_confirmation_setting_wins_over_the_callers_in_both_languages() {
    let mut plan = chain(3, false);
    let (en, zh) = ("WAIT FOR USER CONFIRMATION", "等待用户确认");
    let mut o = opts(Lang::En, Dialect::Canonical);
    // Unset on the plan: the caller's (the session's) setting decides.
    o.needs_confirmation = true;
    assert!(hint(Some(&plan), &o).contains(en));
    o.needs_confirmation = false;
    assert!(!hint(Some(&plan), &o).contains(en));
    // The plan says yes: the rule is there whatever the caller says.
    set_confirm(&mut plan, true);
    assert_eq!(plan.need_user_confirm(), Some(true));
    assert!(hint(Some(&plan), &o).contains(en));
    o.lang = Lang::Zh;
    assert!(hint(Some(&plan), &o).contains(zh));
    // The plan says no: a caller's yes does not bring it back.
    set_confirm(&mut plan, false);
    o.needs_confirmation = true;
    assert!(!hint(Some(&plan), &o).contains(zh));
}

#[test]
fn a_plan_created_needing_confirmation_keeps_it_through_its_log_and_old_events_read_as_unset() {
    let spec = NewPlan {
        title: "Confirm first".into(),
        need_user_confirm: Some(true),
        subtasks: vec![NewSubtask::named("one")],
        ..NewPlan::default()
    };
    let (mut plan, mut log) = Plan::create(&spec, "agent", at(0)).unwrap();
    assert_eq!(plan.need_user_confirm(), Some(true));
    log.extend(set_confirm(&mut plan, false));
    let replayed = Plan::replay(&log).unwrap();
    assert_eq!(replayed.need_user_confirm(), Some(false));
    // An info event written before the setting existed has no such field.
    let mut old = serde_json::to_value(log.last().unwrap()).unwrap();
    let info = old
        .pointer_mut("/info")
        .expect("the event carries the plan info");
    assert_eq!(info["need_user_confirm"], serde_json::json!(false));
    info.as_object_mut().unwrap().remove("need_user_confirm");
    let old: plan_engine::Event = serde_json::from_value(old).unwrap();
    let mut again = Plan::replay(&log[..log.len() - 1]).unwrap();
    again.fold(&old);
    assert_eq!(again.need_user_confirm(), None);
}

#[test]
fn a_plans_subtask_limit_is_stated_with_the_rules_in_both_languages() {
    let mut plan = chain(3, false);
    let o = opts(Lang::En, Dialect::AgentScope);
    assert!(!hint(Some(&plan), &o).contains("Subtask Limit"));
    run(
        &mut plan,
        Op::UpdateInfo {
            patch: plan_engine::InfoPatch {
                max_subtasks: Some(4),
                ..Default::default()
            },
        },
    );
    let text = hint(Some(&plan), &o);
    assert!(
        text.contains("- Subtask Limit: Ensure the plan consists of no more than 4 subtasks\n"),
        "{text}"
    );
    let zh = hint(Some(&plan), &opts(Lang::Zh, Dialect::AgentScope));
    assert!(zh.contains("确保计划包含不超过 4 个子任务"), "{zh}");
}

#[test]
fn a_plan_written_in_chinese_is_read_as_chinese_and_any_other_as_english() {
    let mut plan = chain(1, false);
    assert_eq!(Lang::of_plan(&plan), Lang::En);
    run(
        &mut plan,
        Op::UpdateInfo {
            patch: plan_engine::InfoPatch {
                goal: Some("比较三家键盘厂商".into()),
                ..Default::default()
            },
        },
    );
    assert_eq!(Lang::of_plan(&plan), Lang::Zh);
}
