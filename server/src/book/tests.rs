//! The working set's bookkeeping: group commits, undo, absorbing stored plans.
use super::*;
use chrono::TimeZone;
use plan_engine::{NewPlan, NewSubtask, SubtaskId, SubtaskState};

fn now() -> Timestamp {
    chrono::Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
}

fn book_with_plan() -> (Book, PlanId) {
    let spec = NewPlan {
        subtasks: vec![NewSubtask::named("a"), NewSubtask::named("b").after(&[1])],
        id: uuid::Uuid::from_u128(7),
        title: "p".into(),
        ..NewPlan::default()
    };
    let (plan, _) = Plan::create(&spec, "t", now()).unwrap();
    let id = plan.id();
    (Book::new(vec![plan]), id)
}

fn start(id: u32) -> Op {
    Op::SetSubtaskState {
        id: SubtaskId(id),
        state: SubtaskState::InProgress,
        note: None,
        start_next: false,
    }
}

fn outcome(ticket: &Ticket) -> Option<Outcome> {
    ticket.borrow().clone()
}

#[test]
fn a_failed_commit_undoes_every_queued_call_and_tells_each_why() {
    let (mut book, id) = book_with_plan();
    let before = book.get(id).unwrap().clone();
    book.begin("first");
    book.execute(id, vec![start(1)], "first", now()).unwrap();
    let first = book.end().unwrap();
    let (batch, calls) = book.take_group();
    assert_eq!((batch.plans.len(), calls), (1, 1));
    assert_eq!(batch.plans[0].base_version, Some(before.version()));
    // A second call queues while the first one's commit is in flight.
    book.begin("second");
    book.set_active("s", Some(id));
    let second = book.end().unwrap();
    book.rollback(
        calls,
        Failure::Commit(Arc::new(StoreError::Corrupt("disk".into()))),
    );
    assert_eq!(book.get(id), Some(&before));
    assert_eq!(PlanBook::active(&book, "s"), None);
    assert!(matches!(outcome(&first), Some(Err(Failure::Commit(_)))));
    assert!(matches!(outcome(&second), Some(Err(Failure::Undone))));
    assert!(book.take_group().0.is_empty());
}

#[test]
fn a_group_commits_each_plan_once_from_its_first_version_with_all_events() {
    let (mut book, id) = book_with_plan();
    book.begin("a");
    let mut expected = book.execute(id, vec![start(1)], "a", now()).unwrap();
    let first = book.end().unwrap();
    book.begin("b");
    let done = Op::SetSubtaskState {
        id: SubtaskId(1),
        state: SubtaskState::Done,
        note: None,
        start_next: false,
    };
    expected.extend(book.execute(id, vec![done], "b", now()).unwrap());
    let second = book.end().unwrap();
    let (batch, calls) = book.take_group();
    assert_eq!(calls, 2);
    assert_eq!(batch.plans.len(), 1);
    let write = &batch.plans[0];
    assert_eq!(write.base_version, Some(1));
    assert_eq!(write.row.version, 3);
    assert_eq!(write.events, expected);
    assert_eq!(
        book.committed(id).unwrap().version(),
        1,
        "readers see the database"
    );
    book.settle(calls);
    assert!(matches!(outcome(&first), Some(Ok(()))));
    assert!(matches!(outcome(&second), Some(Ok(()))));
    assert_eq!(book.committed(id).unwrap().version(), 3);
}

#[test]
fn a_refused_op_in_a_call_changes_nothing_and_waits_for_what_it_was_judged_on() {
    let (mut book, id) = book_with_plan();
    book.begin("a");
    assert!(book
        .execute(id, vec![start(1), start(2)], "a", now())
        .is_err());
    assert_eq!(book.get(id).unwrap().version(), 1);
    assert!(book.end().is_none(), "nothing queued: the refusal is final");
    book.begin("b");
    book.execute(id, vec![start(1)], "b", now()).unwrap();
    let queued = book.end().unwrap();
    book.begin("c");
    assert!(book.execute(id, vec![start(2)], "c", now()).is_err());
    let barrier = book.end().expect("judged after an uncommitted call");
    assert!(barrier.same_channel(&queued));
}

#[test]
fn a_stored_plan_does_not_replace_one_with_queued_calls() {
    let (mut book, id) = book_with_plan();
    let stored = book.get(id).unwrap().clone();
    // Another process committed eight calls to the plan.
    let mut newer = stored.clone();
    for n in 0..8 {
        let note = Op::Comment {
            subtask: None,
            body: format!("elsewhere {n}"),
        };
        newer.execute_all(vec![note], "other", now()).unwrap();
    }
    assert_eq!(newer.version(), 9);
    book.begin("a");
    book.execute(id, vec![start(1)], "a", now()).unwrap();
    book.end();
    book.absorb(id, Some(newer.clone()));
    assert_eq!(
        book.get(id).unwrap().version(),
        2,
        "the queued call is kept"
    );
    let (_, calls) = book.take_group();
    book.settle(calls);
    book.absorb(id, Some(newer));
    assert_eq!(book.get(id).unwrap().version(), 9);
    book.absorb(id, Some(stored));
    assert_eq!(
        book.get(id).unwrap().version(),
        9,
        "an older copy is ignored"
    );
}
