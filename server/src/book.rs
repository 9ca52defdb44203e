//! [`Book`]: the server's working set of plans, and the engine's
//! [`PlanBook`] for tool calls.
//!
//! The engine decides in memory; the database is written afterwards. So the
//! book records what one call touched (the first copy of each plan it
//! changed, its events, session pointers, deletions). The service turns that
//! record into one [`Batch`]; if the commit fails, [`Book::rollback`] puts
//! every touched plan back as it was, so memory never runs ahead of the
//! database.

use std::collections::HashMap;

use plan_engine::{
    check_new_plan, Command, Event, Op, Plan, PlanBook, PlanError, PlanId, Timestamp,
};

use crate::store::{Batch, PlanWrite};

#[derive(Default)]
pub struct Book {
    plans: HashMap<PlanId, Plan>,
    /// Creation order, for the dialects' listings.
    order: Vec<PlanId>,
    keys: HashMap<String, PlanId>,
    active: HashMap<String, PlanId>,
    pending: Pending,
}

/// What the current call changed.
#[derive(Default)]
struct Pending {
    /// Plan id → the plan before the call (`None`: created by this call).
    before: Vec<(PlanId, Option<Plan>)>,
    events: HashMap<PlanId, Vec<Event>>,
    /// Session → previous pointer, and the new one.
    active: Vec<(String, Option<PlanId>, Option<PlanId>)>,
    deleted: Vec<(PlanId, Plan)>,
}

impl Book {
    pub fn new(plans: Vec<Plan>) -> Book {
        let mut book = Book::default();
        for plan in plans {
            book.put(plan);
        }
        book
    }

    /// Replaces (or adds) a plan as another process committed it.
    pub fn put(&mut self, plan: Plan) {
        if let Some(key) = &plan.key {
            self.keys.insert(key.clone(), plan.id);
        }
        if !self.plans.contains_key(&plan.id) {
            self.order.push(plan.id);
        }
        self.plans.insert(plan.id, plan);
    }

    /// Forgets a plan deleted by another process.
    pub fn forget(&mut self, id: PlanId) {
        if let Some(plan) = self.plans.remove(&id) {
            if let Some(key) = plan.key {
                self.keys.remove(&key);
            }
        }
        self.order.retain(|p| *p != id);
        self.active.retain(|_, p| *p != id);
    }

    pub fn get(&self, id: PlanId) -> Option<&Plan> {
        self.plans.get(&id)
    }

    pub fn all(&self) -> impl Iterator<Item = &Plan> {
        self.order.iter().filter_map(|id| self.plans.get(id))
    }

    /// Sets a session's pointer as the database has it (another replica may
    /// have moved it), outside any call's record.
    pub fn sync_active(&mut self, session: &str, id: Option<PlanId>) {
        match id.filter(|id| self.plans.contains_key(id)) {
            Some(id) => self.active.insert(session.to_string(), id),
            None => self.active.remove(session),
        };
    }

    /// Runs one command on one plan, recording it like a tool call would.
    /// The engine checks `expected_version`.
    pub fn command(
        &mut self,
        id: PlanId,
        command: &Command,
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Event>, PlanError> {
        self.change(id, |plan| plan.execute(command, actor, now))
    }

    /// Changes one plan in place and records the change. The plan's copy
    /// for rollback is taken once per call; a refused or empty change
    /// leaves no record.
    fn change(
        &mut self,
        id: PlanId,
        run: impl FnOnce(&mut Plan) -> Result<Vec<Event>, PlanError>,
    ) -> Result<Vec<Event>, PlanError> {
        if !self.plans.contains_key(&id) {
            return Err(PlanError::invalid(
                "plan_id",
                format!("no plan has id {id}"),
            ));
        }
        let first_touch = self.pending.before.iter().all(|(p, _)| *p != id);
        if first_touch {
            self.pending.before.push((id, self.plans.get(&id).cloned()));
        }
        let result = match self.plans.get_mut(&id) {
            Some(plan) => run(plan),
            None => Ok(Vec::new()),
        };
        match result {
            Ok(events) if !events.is_empty() => {
                self.pending
                    .events
                    .entry(id)
                    .or_default()
                    .extend(events.iter().cloned());
                Ok(events)
            }
            other => {
                // Refused (the engine wrote nothing) or a no-op: forget the copy.
                if first_touch {
                    self.pending.before.pop();
                }
                other
            }
        }
    }

    /// The record of the current call as a batch for the store; `actor`
    /// is recorded on deletions.
    pub fn batch(&self, actor: &str) -> Batch<'_> {
        let mut batch = Batch::default();
        for (id, before) in &self.pending.before {
            if let Some(plan) = self.plans.get(id) {
                batch.plans.push(PlanWrite {
                    plan,
                    base_version: before.as_ref().map(|p| p.version),
                    events: self.pending.events.get(id).map_or(&[], Vec::as_slice),
                });
            }
        }
        batch.active = self
            .pending
            .active
            .iter()
            .map(|(session, _, now)| (session.clone(), *now))
            .collect();
        batch.deleted = self
            .pending
            .deleted
            .iter()
            .map(|(id, _)| (*id, actor.to_string()))
            .collect();
        batch
    }

    /// Keeps the call's changes: they are committed.
    pub fn settle(&mut self) {
        self.pending = Pending::default();
    }

    /// Undoes the call's changes: the commit failed.
    pub fn rollback(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for (session, before, _) in pending.active.into_iter().rev() {
            self.sync_active(&session, None);
            if let Some(id) = before {
                self.active.insert(session, id);
            }
        }
        for (_, plan) in pending.deleted {
            self.put(plan);
        }
        for (id, before) in pending.before.into_iter().rev() {
            match before {
                Some(plan) => self.put(plan),
                None => self.forget(id),
            }
        }
    }
}

impl PlanBook for Book {
    fn plan(&self, id: PlanId) -> Option<&Plan> {
        self.plans.get(&id)
    }

    fn plan_by_key(&self, key: &str) -> Option<&Plan> {
        self.keys.get(key).and_then(|id| self.plans.get(id))
    }

    fn plans(&self) -> Vec<&Plan> {
        self.all().collect()
    }

    fn active(&self, session: &str) -> Option<PlanId> {
        self.active.get(session).copied()
    }

    fn set_active(&mut self, session: &str, id: Option<PlanId>) {
        let before = self.active.get(session).copied();
        if before == id {
            return;
        }
        self.pending.active.push((session.to_string(), before, id));
        match id {
            Some(id) => self.active.insert(session.to_string(), id),
            None => self.active.remove(session),
        };
    }

    fn insert(&mut self, plan: Plan, events: Vec<Event>) -> Result<(), PlanError> {
        check_new_plan(self, &plan)?;
        self.pending.before.push((plan.id, None));
        self.pending.events.insert(plan.id, events);
        self.put(plan);
        Ok(())
    }

    fn execute(
        &mut self,
        id: PlanId,
        ops: Vec<Op>,
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Event>, PlanError> {
        self.change(id, |plan| plan.execute_all(ops, actor, now))
    }

    fn remove(&mut self, id: PlanId) -> Result<(), PlanError> {
        let plan = self
            .plans
            .get(&id)
            .cloned()
            .ok_or_else(|| PlanError::invalid("plan_id", format!("no plan has id {id}")))?;
        for (session, pid) in self.active.clone() {
            if pid == id {
                self.set_active(&session, None);
            }
        }
        self.forget(id);
        self.pending.deleted.push((id, plan));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
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
        let id = plan.id;
        (Book::new(vec![plan]), id)
    }

    #[test]
    fn a_rolled_back_call_leaves_the_plan_as_it_was() {
        let (mut book, id) = book_with_plan();
        let before = book.get(id).unwrap().clone();
        let op = Op::SetSubtaskState {
            id: SubtaskId(1),
            state: SubtaskState::InProgress,
            note: None,
            start_next: false,
        };
        book.execute(id, vec![op], "t", now()).unwrap();
        assert_eq!(book.batch("t").plans.len(), 1);
        assert_eq!(book.batch("t").plans[0].base_version, Some(before.version));
        book.rollback();
        assert_eq!(book.get(id), Some(&before));
        assert!(book.batch("t").is_empty());
    }

    #[test]
    fn a_refused_op_in_a_batch_changes_nothing_and_records_nothing() {
        let (mut book, id) = book_with_plan();
        let ok = Op::SetSubtaskState {
            id: SubtaskId(1),
            state: SubtaskState::InProgress,
            note: None,
            start_next: false,
        };
        let refused = Op::SetSubtaskState {
            id: SubtaskId(2),
            state: SubtaskState::InProgress,
            note: None,
            start_next: false,
        };
        assert!(book.execute(id, vec![ok, refused], "t", now()).is_err());
        assert_eq!(book.get(id).unwrap().version, 1);
        assert!(book.batch("t").is_empty());
    }

    #[test]
    fn a_settled_call_leaves_nothing_to_commit_again() {
        let (mut book, id) = book_with_plan();
        book.set_active("s", Some(id));
        book.execute(id, vec![Op::StartNext { count: 1 }], "t", now())
            .unwrap();
        let batch = book.batch("t");
        assert_eq!(batch.active.len(), 1);
        assert_eq!(batch.plans.len(), 1);
        assert!(!batch.plans[0].events.is_empty());
        book.settle();
        assert!(book.batch("t").is_empty());
        book.rollback();
        assert_eq!(PlanBook::active(&book, "s"), Some(id));
        assert_eq!(
            book.get(id).unwrap().count(SubtaskState::InProgress),
            1,
            "settled changes survive a later rollback"
        );
    }
}
