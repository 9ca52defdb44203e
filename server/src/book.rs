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

use plan_engine::{Command, Event, Op, Plan, PlanBook, PlanError, PlanId, Timestamp};

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
    pub fn command(
        &mut self,
        id: PlanId,
        command: &Command,
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Event>, PlanError> {
        let plan = self
            .plans
            .get(&id)
            .ok_or_else(|| PlanError::invalid("plan_id", format!("no plan has id {id}")))?;
        if let Some(expected) = command.expected_version {
            if expected != plan.version {
                return Err(PlanError::StaleVersion {
                    expected,
                    actual: plan.version,
                });
            }
        }
        self.execute(id, vec![command.op.clone()], actor, now)
    }

    /// The record of the current call as a batch for the store.
    pub fn batch(&self) -> Batch<'_> {
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
        batch
    }

    pub fn deleted(&self) -> Vec<PlanId> {
        self.pending.deleted.iter().map(|(id, _)| *id).collect()
    }

    /// Keeps the call's changes: they are committed.
    pub fn settle(&mut self) -> Vec<Event> {
        let pending = std::mem::take(&mut self.pending);
        let mut events: Vec<Event> = Vec::new();
        for (id, _) in &pending.before {
            if let Some(list) = pending.events.get(id) {
                events.extend(list.iter().cloned());
            }
        }
        events
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

    fn remember(&mut self, id: PlanId) {
        if self.pending.before.iter().all(|(p, _)| *p != id) {
            let before = self.plans.get(&id).cloned();
            self.pending.before.push((id, before));
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
        if self.plans.contains_key(&plan.id) {
            return Err(PlanError::invalid(
                "id",
                format!("plan {} already exists", plan.id),
            ));
        }
        if let Some(key) = &plan.key {
            if self.keys.contains_key(key) {
                return Err(PlanError::invalid(
                    "plan_id",
                    format!("a plan with ID '{key}' already exists; choose another id or update that plan"),
                ));
            }
        }
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
        if !self.plans.contains_key(&id) {
            return Err(PlanError::invalid(
                "plan_id",
                format!("no plan has id {id}"),
            ));
        }
        // All or none: run on a copy, keep it only if every op is accepted.
        let mut scratch = self.plans[&id].clone();
        let mut events = Vec::new();
        for op in ops {
            events.extend(scratch.execute(&Command::from(op), actor, now)?);
        }
        if events.is_empty() {
            return Ok(events);
        }
        self.remember(id);
        self.pending
            .events
            .entry(id)
            .or_default()
            .extend(events.iter().cloned());
        self.put(scratch);
        Ok(events)
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
        assert_eq!(book.batch().plans.len(), 1);
        assert_eq!(book.batch().plans[0].base_version, Some(before.version));
        book.rollback();
        assert_eq!(book.get(id), Some(&before));
        assert!(book.batch().is_empty());
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
        assert!(book.batch().is_empty());
    }

    #[test]
    fn a_settled_call_hands_over_its_events_once() {
        let (mut book, id) = book_with_plan();
        book.set_active("s", Some(id));
        book.execute(id, vec![Op::StartNext { count: 1 }], "t", now())
            .unwrap();
        assert_eq!(book.batch().active.len(), 1);
        let events = book.settle();
        assert!(!events.is_empty());
        assert!(book.settle().is_empty());
        assert_eq!(PlanBook::active(&book, "s"), Some(id));
    }
}
