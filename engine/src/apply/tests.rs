//! Unit tests of the decisions in `apply`, named as the rules they check.

use chrono::TimeZone;

use super::*;
use crate::command::{Position, SubtaskPatch};
use crate::model::{Mode, NewSubtask};

pub(crate) fn at(minute: u32) -> Timestamp {
    chrono::Utc
        .with_ymd_and_hms(2026, 1, 1, 9, minute, 0)
        .single()
        .expect("valid time")
}

fn spec(subtasks: &[(&str, &[u32])]) -> NewPlan {
    NewPlan {
        id: uuid::Uuid::from_u128(7),
        title: "Test plan".into(),
        goal: "Check the rules".into(),
        mode: Mode::Manual,
        subtasks: subtasks
            .iter()
            .map(|(name, deps)| NewSubtask::named(*name).after(deps))
            .collect(),
        ..NewPlan::default()
    }
}

fn plan(subtasks: &[(&str, &[u32])]) -> Plan {
    Plan::create(&spec(subtasks), "tester", at(0))
        .expect("valid plan")
        .0
}

fn run(plan: &mut Plan, op: Op) -> Result<Vec<Event>, PlanError> {
    plan.execute(&Command::from(op), "tester", at(1))
}

fn set(id: u32, state: SubtaskState) -> Op {
    Op::SetSubtaskState {
        id: SubtaskId(id),
        state,
        note: Some(format!("{state}")),
        start_next: false,
    }
}

fn state_of(plan: &Plan, id: u32) -> SubtaskState {
    plan.subtask(SubtaskId(id)).expect("exists").state
}

#[test]
fn a_copy_shares_untouched_subtasks_and_a_change_never_reaches_the_other_copy() {
    let original = plan(&[("a", &[]), ("b", &[1]), ("c", &[2])]);
    let mut copy = original.clone();
    run(&mut copy, set(1, SubtaskState::InProgress)).unwrap();
    run(&mut copy, Op::DeleteSubtask { id: SubtaskId(3) }).unwrap();
    assert_eq!(state_of(&original, 1), SubtaskState::Todo);
    assert_eq!(original.subtasks().len(), 3);
    assert_eq!(state_of(&copy, 1), SubtaskState::InProgress);
    let shared = |i: usize| std::sync::Arc::ptr_eq(&original.subtasks()[i], &copy.subtasks()[i]);
    assert!(!shared(0), "the changed subtask was copied");
    assert!(shared(1), "an untouched subtask is shared, not copied");
    assert_eq!(original.ready(), [SubtaskId(1)]);
    assert!(copy.ready().is_empty());
}

#[test]
fn a_subtask_both_rewired_onto_and_requiring_a_new_one_depends_on_it_once() {
    let mut p = plan(&[("a", &[]), ("b", &[1])]);
    run(
        &mut p,
        Op::AddSubtask {
            subtask: NewSubtask::named("c"),
            position: Position::End,
            rewire_after: Some(SubtaskId(1)),
            required_by: vec![SubtaskId(2)],
        },
    )
    .unwrap();
    let b = p.subtask(SubtaskId(2)).unwrap();
    assert_eq!(b.dependencies, [SubtaskId(3)]);
    // So deleting the new subtask leaves no dangling dependency behind:
    // b inherits the new subtask's own dependencies instead.
    let inherited = p.subtask(SubtaskId(3)).unwrap().dependencies.clone();
    run(&mut p, Op::DeleteSubtask { id: SubtaskId(3) }).unwrap();
    assert_eq!(p.subtask(SubtaskId(2)).unwrap().dependencies, inherited);
}

#[test]
fn a_subtask_cannot_start_before_its_dependencies_are_done() {
    let mut p = plan(&[("a", &[]), ("b", &[1])]);
    let err = run(&mut p, set(2, SubtaskState::InProgress)).unwrap_err();
    assert!(
        matches!(err, PlanError::NotReady { ref waiting_on, .. } if waiting_on == &[(SubtaskId(1), SubtaskState::Todo)])
    );
    assert!(err.to_string().contains("subtask 1 (todo)"), "{err}");
}

#[test]
fn a_skipped_dependency_counts_as_settled() {
    let mut p = plan(&[("a", &[]), ("b", &[1])]);
    run(&mut p, set(1, SubtaskState::Skipped)).unwrap();
    run(&mut p, set(2, SubtaskState::InProgress)).unwrap();
    assert_eq!(state_of(&p, 2), SubtaskState::InProgress);
}

#[test]
fn nothing_starts_before_a_required_approval() {
    let mut s = spec(&[("a", &[])]);
    s.approval_required = true;
    let (mut p, _) = Plan::create(&s, "agent", at(0)).unwrap();
    assert_eq!(p.state, PlanState::AwaitingApproval);
    let err = run(&mut p, set(1, SubtaskState::InProgress)).unwrap_err();
    assert!(err.to_string().contains("awaiting approval"), "{err}");
    assert!(p.next_batch(5).is_empty());
    p.execute(
        &Op::Approve {
            comment: Some("ok".into()),
        }
        .into(),
        "alice",
        at(2),
    )
    .unwrap();
    assert_eq!(p.approval.by.as_deref(), Some("alice"));
    run(&mut p, set(1, SubtaskState::InProgress)).unwrap();
    assert_eq!(p.state, PlanState::Running);
}

#[test]
fn a_rejection_needs_a_comment_and_returns_the_plan_to_draft() {
    let mut s = spec(&[("a", &[])]);
    s.approval_required = true;
    let (mut p, _) = Plan::create(&s, "agent", at(0)).unwrap();
    assert!(run(
        &mut p,
        Op::Reject {
            comment: "  ".into()
        }
    )
    .is_err());
    run(
        &mut p,
        Op::Reject {
            comment: "too vague".into(),
        },
    )
    .unwrap();
    assert_eq!(p.state, PlanState::Draft);
    assert_eq!(p.approval.status, ApprovalStatus::Rejected);
    run(&mut p, Op::Submit {}).unwrap();
    assert_eq!(p.state, PlanState::AwaitingApproval);
}

#[test]
fn max_parallel_caps_the_subtasks_in_progress() {
    let mut s = spec(&[("a", &[]), ("b", &[]), ("c", &[])]);
    s.max_parallel = Some(2);
    let (mut p, _) = Plan::create(&s, "agent", at(0)).unwrap();
    let events = run(&mut p, Op::StartNext { count: 5 }).unwrap();
    assert_eq!(p.in_progress(), vec![SubtaskId(1), SubtaskId(2)]);
    assert_eq!(events.len(), 3, "running + two starts");
    let err = run(&mut p, set(3, SubtaskState::InProgress)).unwrap_err();
    assert!(
        matches!(err, PlanError::ParallelLimit { max: 2, .. }),
        "{err}"
    );
}

#[test]
fn a_dependency_edit_that_closes_a_cycle_is_refused_with_the_cycle() {
    let mut p = plan(&[("a", &[]), ("b", &[1]), ("c", &[2])]);
    let before = p.clone();
    let err = run(
        &mut p,
        Op::SetDependencies {
            id: SubtaskId(1),
            dependencies: vec![SubtaskId(3)],
        },
    )
    .unwrap_err();
    assert_eq!(
        err,
        PlanError::Cycle {
            path: [1, 3, 2, 1].map(SubtaskId).to_vec()
        }
    );
    assert_eq!(p, before, "a refused command changes nothing");
}

#[test]
fn a_self_dependency_is_refused() {
    let mut p = plan(&[("a", &[])]);
    let err = run(
        &mut p,
        Op::SetDependencies {
            id: SubtaskId(1),
            dependencies: vec![SubtaskId(1)],
        },
    )
    .unwrap_err();
    assert_eq!(err, PlanError::SelfDependency { id: SubtaskId(1) });
}

#[test]
fn a_create_with_a_cycle_is_refused() {
    let err = Plan::create(&spec(&[("a", &[2]), ("b", &[1])]), "t", at(0)).unwrap_err();
    assert!(matches!(err, PlanError::Cycle { .. }), "{err}");
}

#[test]
fn an_unknown_id_error_lists_the_ids_that_exist() {
    let mut p = plan(&[("a", &[]), ("b", &[]), ("c", &[])]);
    run(&mut p, Op::DeleteSubtask { id: SubtaskId(2) }).unwrap();
    let err = run(&mut p, set(9, SubtaskState::InProgress)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no subtask has id 9; the plan's subtask ids are 1, 3"
    );
}

#[test]
fn a_stale_expected_version_is_a_conflict() {
    let mut p = plan(&[("a", &[])]);
    let stale = Command::at_version(set(1, SubtaskState::InProgress), 0);
    let err = p.execute(&stale, "t", at(1)).unwrap_err();
    assert_eq!(
        err,
        PlanError::StaleVersion {
            expected: 0,
            actual: 1
        }
    );
    let fresh = Command::at_version(set(1, SubtaskState::InProgress), 1);
    p.execute(&fresh, "t", at(1)).unwrap();
    assert_eq!(p.version, 2);
}

#[test]
fn deleting_a_subtask_keeps_the_order_and_hands_its_dependencies_on() {
    let mut p = plan(&[("a", &[]), ("b", &[1]), ("c", &[2]), ("d", &[])]);
    run(&mut p, Op::DeleteSubtask { id: SubtaskId(2) }).unwrap();
    let names: Vec<&str> = p.subtasks.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a", "c", "d"]);
    assert_eq!(
        p.subtask(SubtaskId(3)).unwrap().dependencies,
        vec![SubtaskId(1)]
    );
}

#[test]
fn a_subtask_in_progress_cannot_be_deleted() {
    let mut p = plan(&[("a", &[])]);
    run(&mut p, set(1, SubtaskState::InProgress)).unwrap();
    assert_eq!(
        run(&mut p, Op::DeleteSubtask { id: SubtaskId(1) }).unwrap_err(),
        PlanError::DeleteInProgress { id: SubtaskId(1) }
    );
}

#[test]
fn ids_are_never_reused_after_a_delete() {
    let mut p = plan(&[("a", &[]), ("b", &[])]);
    run(&mut p, Op::DeleteSubtask { id: SubtaskId(2) }).unwrap();
    run(
        &mut p,
        Op::AddSubtask {
            subtask: NewSubtask::named("c"),
            position: Position::End,
            rewire_after: None,
            required_by: vec![],
        },
    )
    .unwrap();
    assert_eq!(p.subtasks.last().unwrap().id, SubtaskId(3));
}

#[test]
fn a_started_subtask_cannot_be_edited_but_can_be_reassigned() {
    let mut p = plan(&[("a", &[])]);
    run(&mut p, set(1, SubtaskState::InProgress)).unwrap();
    let rename = SubtaskPatch {
        name: Some("x".into()),
        ..SubtaskPatch::default()
    };
    assert!(matches!(
        run(
            &mut p,
            Op::EditSubtask {
                id: SubtaskId(1),
                patch: rename
            }
        ),
        Err(PlanError::NotEditable { .. })
    ));
    let reassign = SubtaskPatch {
        assignee: Some("bob".into()),
        ..SubtaskPatch::default()
    };
    run(
        &mut p,
        Op::EditSubtask {
            id: SubtaskId(1),
            patch: reassign,
        },
    )
    .unwrap();
    assert_eq!(p.subtasks[0].assignee.as_deref(), Some("bob"));
}

fn with_tool(name: &str, tool: &str) -> NewSubtask {
    NewSubtask {
        tool: Some(tool.into()),
        ..NewSubtask::named(name)
    }
}

fn edit_tool(id: u32, tool: &str) -> Op {
    Op::EditSubtask {
        id: SubtaskId(id),
        patch: SubtaskPatch {
            tool: Some(tool.into()),
            ..SubtaskPatch::default()
        },
    }
}

#[test]
fn a_tool_is_kept_trimmed_on_create_add_and_edit_and_an_empty_one_clears_it() {
    let mut s = spec(&[]);
    s.subtasks = vec![with_tool(
        "Sum March revenue from sales.csv",
        " run_python ",
    )];
    let mut p = Plan::create(&s, "tester", at(0)).unwrap().0;
    assert_eq!(p.subtasks[0].tool(), Some("run_python"));
    let add = |tool: &str| Op::AddSubtask {
        subtask: with_tool("Ask the docs server", tool),
        position: Position::End,
        rewire_after: None,
        required_by: vec![],
    };
    run(&mut p, add("docs-server.search_v2")).unwrap();
    assert_eq!(p.subtasks[1].tool(), Some("docs-server.search_v2"));
    run(&mut p, add("  ")).unwrap();
    assert_eq!(p.subtasks[2].tool(), None, "a blank tool is no tool");
    run(&mut p, edit_tool(1, "read_file")).unwrap();
    assert_eq!(p.subtasks[0].tool(), Some("read_file"));
    run(&mut p, edit_tool(1, "")).unwrap();
    assert_eq!(p.subtasks[0].tool(), None, "an empty string clears it");
}

#[test]
fn an_invalid_tool_name_is_refused_with_the_engines_error() {
    let invalid = |e: &PlanError| matches!(e, PlanError::Invalid { field, .. } if field == "tool");
    for bad in ["run python", "read_file()", "fetch/url", "工具", "a\nb"] {
        let mut s = spec(&[]);
        s.subtasks = vec![with_tool("a", bad)];
        let e = Plan::create(&s, "tester", at(0)).unwrap_err();
        assert!(invalid(&e), "create with {bad:?}: {e}");
        assert!(
            e.to_string().contains("run_python"),
            "says what to write: {e}"
        );
        let mut p = plan(&[("a", &[])]);
        let before = p.clone();
        let add = Op::AddSubtask {
            subtask: with_tool("b", bad),
            position: Position::End,
            rewire_after: None,
            required_by: vec![],
        };
        let e = run(&mut p, add).unwrap_err();
        assert!(invalid(&e), "add with {bad:?}: {e}");
        let e = run(&mut p, edit_tool(1, bad)).unwrap_err();
        assert!(invalid(&e), "edit with {bad:?}: {e}");
        assert_eq!(p, before, "a refused tool changes nothing");
    }
    let long = "t".repeat(limits::TOOL + 1);
    assert_eq!(
        run(&mut plan(&[("a", &[])]), edit_tool(1, &long)).unwrap_err(),
        PlanError::TooLong {
            field: "tool",
            len: limits::TOOL + 1,
            max: limits::TOOL
        }
    );
}

#[test]
fn editing_a_started_subtasks_tool_is_refused() {
    let mut p = plan(&[("a", &[])]);
    run(&mut p, edit_tool(1, "run_python")).unwrap();
    run(&mut p, set(1, SubtaskState::InProgress)).unwrap();
    assert_eq!(
        run(&mut p, edit_tool(1, "run_shell")).unwrap_err(),
        PlanError::NotEditable {
            id: SubtaskId(1),
            state: SubtaskState::InProgress,
            what: "edited"
        }
    );
    assert_eq!(p.subtasks[0].tool(), Some("run_python"));
}

#[test]
fn a_plan_is_done_only_when_every_subtask_is_done_or_skipped() {
    let mut p = plan(&[("a", &[]), ("b", &[])]);
    run(&mut p, set(1, SubtaskState::Skipped)).unwrap();
    let done = |outcome: &str| Op::Finish {
        state: PlanState::Done,
        outcome: outcome.into(),
    };
    assert_eq!(
        run(&mut p, done("x")).unwrap_err(),
        PlanError::UnfinishedSubtasks {
            ids: vec![SubtaskId(2)]
        }
    );
    run(&mut p, set(2, SubtaskState::InProgress)).unwrap();
    run(&mut p, set(2, SubtaskState::Done)).unwrap();
    run(&mut p, done("shipped")).unwrap();
    assert_eq!(p.state, PlanState::Done);
    assert_eq!(p.outcome.as_deref(), Some("shipped"));
}

#[test]
fn abandoning_a_plan_releases_what_is_in_progress() {
    let mut p = plan(&[("a", &[])]);
    run(&mut p, set(1, SubtaskState::InProgress)).unwrap();
    run(
        &mut p,
        Op::Finish {
            state: PlanState::Abandoned,
            outcome: "stop".into(),
        },
    )
    .unwrap();
    assert_eq!(state_of(&p, 1), SubtaskState::Todo);
    assert!(p.in_progress().is_empty());
}

#[test]
fn a_finished_plan_refuses_changes_but_takes_comments_and_recovery() {
    let mut p = plan(&[("a", &[])]);
    run(
        &mut p,
        Op::Finish {
            state: PlanState::Failed,
            outcome: "broke".into(),
        },
    )
    .unwrap();
    assert_eq!(
        run(&mut p, set(1, SubtaskState::InProgress)).unwrap_err(),
        PlanError::PlanFinished {
            state: PlanState::Failed
        }
    );
    run(
        &mut p,
        Op::Comment {
            subtask: None,
            body: "post-mortem".into(),
        },
    )
    .unwrap();
    assert_eq!(p.comments[0].author, "tester");
    run(&mut p, Op::Recover {}).unwrap();
    assert_eq!(p.state, PlanState::Approved);
    assert_eq!(p.outcome, None);
}

#[test]
fn a_subtask_is_not_reopened_while_a_dependent_has_started() {
    let mut p = plan(&[("a", &[]), ("b", &[1])]);
    run(&mut p, set(1, SubtaskState::InProgress)).unwrap();
    run(&mut p, set(1, SubtaskState::Done)).unwrap();
    run(&mut p, set(2, SubtaskState::InProgress)).unwrap();
    assert_eq!(
        run(&mut p, set(1, SubtaskState::Todo)).unwrap_err(),
        PlanError::DependentsStarted {
            id: SubtaskId(1),
            dependents: vec![SubtaskId(2)]
        }
    );
}

#[test]
fn the_subtask_limit_is_enforced_on_create_and_add() {
    let mut s = spec(&[("a", &[]), ("b", &[])]);
    s.max_subtasks = Some(1);
    assert_eq!(
        Plan::create(&s, "t", at(0)).unwrap_err(),
        PlanError::PlanFull { max: 1 }
    );
    s.max_subtasks = Some(2);
    let (mut p, _) = Plan::create(&s, "t", at(0)).unwrap();
    let add = Op::AddSubtask {
        subtask: NewSubtask::named("c"),
        position: Position::End,
        rewire_after: None,
        required_by: vec![],
    };
    assert_eq!(
        run(&mut p, add).unwrap_err(),
        PlanError::PlanFull { max: 2 }
    );
}

#[test]
fn finishing_with_start_next_starts_only_a_ready_subtask() {
    // c waits on b, which is not done: finishing a must start b, never c.
    let mut p = plan(&[("a", &[]), ("c", &[3]), ("b", &[1])]);
    run(&mut p, set(1, SubtaskState::InProgress)).unwrap();
    run(
        &mut p,
        Op::SetSubtaskState {
            id: SubtaskId(1),
            state: SubtaskState::Done,
            note: Some("ok".into()),
            start_next: true,
        },
    )
    .unwrap();
    assert_eq!(p.in_progress(), vec![SubtaskId(3)]);
    assert_eq!(state_of(&p, 2), SubtaskState::Todo);
}

#[test]
fn next_ready_after_names_what_start_next_would_start_without_changing_the_plan() {
    let mut p = plan(&[("a", &[]), ("c", &[3]), ("b", &[1])]);
    run(&mut p, set(1, SubtaskState::InProgress)).unwrap();
    let version = p.version();
    assert_eq!(p.next_ready_after(SubtaskId(1)), Some(SubtaskId(3)));
    assert_eq!(p.version(), version);
    run(&mut p, set(1, SubtaskState::Done)).unwrap();
    run(&mut p, set(3, SubtaskState::InProgress)).unwrap();
    run(&mut p, set(3, SubtaskState::Done)).unwrap();
    run(&mut p, set(2, SubtaskState::InProgress)).unwrap();
    assert_eq!(
        p.next_ready_after(SubtaskId(2)),
        None,
        "nothing is left after the last"
    );
}

#[test]
fn a_paused_plan_starts_nothing_until_resumed() {
    let mut p = plan(&[("a", &[])]);
    run(&mut p, Op::Pause {}).unwrap();
    assert!(matches!(
        run(&mut p, Op::StartNext { count: 1 }),
        Err(PlanError::PlanNotStartable {
            state: PlanState::Paused,
            ..
        })
    ));
    run(&mut p, Op::Resume {}).unwrap();
    run(&mut p, Op::StartNext { count: 1 }).unwrap();
}

#[test]
fn replacing_steps_by_name_keeps_state_of_unchanged_steps_wherever_they_move() {
    let mut p = plan(&[("a", &[]), ("b", &[1]), ("c", &[2])]);
    run(&mut p, set(1, SubtaskState::InProgress)).unwrap();
    run(&mut p, set(1, SubtaskState::Done)).unwrap();
    let names = ["a", "new", "b", "c"].map(NewSubtask::named).to_vec();
    run(&mut p, Op::ReplaceSubtasks { subtasks: names }).unwrap();
    let view: Vec<(u32, &str, SubtaskState)> = p
        .subtasks
        .iter()
        .map(|s| (s.id.0, s.name.as_str(), s.state))
        .collect();
    assert_eq!(
        view,
        [
            (1, "a", SubtaskState::Done),
            (4, "new", SubtaskState::Todo),
            (2, "b", SubtaskState::Todo),
            (3, "c", SubtaskState::Todo),
        ]
    );
    assert_eq!(
        p.subtask(SubtaskId(2)).unwrap().dependencies,
        vec![SubtaskId(4)]
    );
}

#[test]
fn oversized_text_is_refused_with_its_length() {
    let mut p = plan(&[("a", &[])]);
    let long = "x".repeat(limits::NAME + 1);
    let err = run(
        &mut p,
        Op::AddSubtask {
            subtask: NewSubtask::named(long),
            position: Position::End,
            rewire_after: None,
            required_by: vec![],
        },
    )
    .unwrap_err();
    assert_eq!(
        err,
        PlanError::TooLong {
            field: "name",
            len: 201,
            max: 200
        }
    );
}

#[test]
fn a_retry_after_failure_counts_another_attempt() {
    let mut p = plan(&[("a", &[])]);
    run(&mut p, set(1, SubtaskState::InProgress)).unwrap();
    run(&mut p, set(1, SubtaskState::Failed)).unwrap();
    run(&mut p, set(1, SubtaskState::InProgress)).unwrap();
    let s = p.subtask(SubtaskId(1)).unwrap();
    assert_eq!((s.attempts, s.outcome.as_deref()), (2, None));
}

#[test]
fn a_plan_whose_id_counters_are_used_up_refuses_new_ids_instead_of_overflowing() {
    // Only an imported plan can start there (check_import accepts any
    // counter above the ids in use); the API fuzzer found the panic.
    let mut p = plan(&[("a", &[])]);
    p.next_subtask_id = u32::MAX;
    p.next_comment_id = u32::MAX;
    let version = p.version();
    let comment = run(
        &mut p,
        Op::Comment {
            subtask: None,
            body: "hello".into(),
        },
    );
    assert!(
        matches!(&comment, Err(PlanError::Invalid { field, .. }) if field == "comments"),
        "{comment:?}"
    );
    let add = run(
        &mut p,
        Op::AddSubtask {
            subtask: NewSubtask::named("b"),
            position: Position::End,
            rewire_after: None,
            required_by: vec![],
        },
    );
    assert!(
        matches!(&add, Err(PlanError::Invalid { field, .. }) if field == "subtasks"),
        "{add:?}"
    );
    let replace = run(
        &mut p,
        Op::ReplaceSubtasks {
            subtasks: vec![NewSubtask::named("a"), NewSubtask::named("new")],
        },
    );
    assert!(replace.is_err(), "{replace:?}");
    assert_eq!(p.version(), version, "nothing changed");
    // One id below the end is still handed out.
    p.next_comment_id = u32::MAX - 1;
    run(
        &mut p,
        Op::Comment {
            subtask: None,
            body: "the last one".into(),
        },
    )
    .unwrap();
    assert_eq!(p.next_comment_id(), u32::MAX);
}
