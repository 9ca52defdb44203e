//! [`Book`]: the server's working set of plans, and the engine's
//! [`PlanBook`] for tool calls.
//!
//! The engine decides in memory; the database is written afterwards, in
//! groups. Each call's changes are kept as a [`Call`] record (the first copy
//! of each plan it changed, its events, session pointers, deletions) until
//! the group holding it commits. Calls queue while a commit is in flight, and
//! the next commit takes all of them in one transaction, so a busy server
//! pays one commit for many calls (group commit).
//!
//! Memory may run ahead of the database only by calls that are waiting for
//! their commit: readers see [`Book::committed`], a refused call waits for
//! the calls it was judged after, and if a commit fails every uncommitted
//! call is undone newest first, so memory is back to what the database has.

use std::collections::VecDeque;
use std::sync::Arc;

use plan_engine::{
    check_new_plan, Command, Event, Op, Plan, PlanBook, PlanError, PlanId, Shelf, Timestamp,
};
use tokio::sync::watch;

use crate::store::{Batch, PlanWrite, StoreError};

/// The actor recorded on changes planboard makes by itself.
pub const SYSTEM_ACTOR: &str = "planboard";

/// How a call's commit ended.
pub type Outcome = Result<(), Failure>;

/// Why a call did not commit.
#[derive(Clone, Debug)]
pub enum Failure {
    /// The group holding the call failed to commit.
    Commit(Arc<StoreError>),
    /// An earlier group failed; this call was decided on its changes and
    /// has been undone, so it must run again.
    Undone,
}

/// Resolves when the call it was issued for has committed or failed.
pub type Ticket = watch::Receiver<Option<Outcome>>;

#[derive(Default)]
pub struct Book {
    shelf: Shelf,
    /// Calls not yet committed, oldest first.
    calls: VecDeque<Call>,
    /// Whether the newest call is still being made (a writer holds the book).
    open: bool,
}

/// What one call changed.
struct Call {
    actor: String,
    /// Plan id → the plan before this call (`None`: created by it).
    before: Vec<(PlanId, Option<Plan>)>,
    events: Vec<(PlanId, Vec<Event>)>,
    /// Session → previous pointer, and the new one.
    active: Vec<(String, Option<PlanId>, Option<PlanId>)>,
    deleted: Vec<(PlanId, Plan)>,
    done: watch::Sender<Option<Outcome>>,
}

impl Call {
    fn new(actor: &str) -> Call {
        Call {
            actor: actor.to_string(),
            before: Vec::new(),
            events: Vec::new(),
            active: Vec::new(),
            deleted: Vec::new(),
            done: watch::channel(None).0,
        }
    }

    fn is_empty(&self) -> bool {
        self.before.is_empty() && self.active.is_empty() && self.deleted.is_empty()
    }
}

impl Book {
    pub fn new(plans: Vec<Plan>) -> Book {
        let mut book = Book::default();
        for plan in plans {
            book.put(plan);
        }
        book
    }

    fn put(&mut self, plan: Plan) {
        self.shelf.put(plan);
    }

    fn forget(&mut self, id: PlanId) {
        self.shelf.take(id);
    }

    /// Takes a plan as another process committed it (`None`: deleted).
    /// A plan with uncommitted calls is left alone: their commit will meet
    /// the newer version, fail, and run them again on the stored plan.
    pub fn absorb(&mut self, id: PlanId, stored: Option<Plan>) {
        if self.is_pending(id) {
            return;
        }
        match stored {
            Some(plan)
                if self
                    .shelf
                    .get(id)
                    .is_none_or(|p| p.version() < plan.version()) =>
            {
                self.put(plan)
            }
            Some(_) => {}
            None => self.forget(id),
        }
    }

    /// The plan as it is now, with the calls not yet committed.
    pub fn get(&self, id: PlanId) -> Option<&Plan> {
        self.shelf.get(id)
    }

    /// The plan as the database has it: before the oldest uncommitted call
    /// that touched it.
    pub fn committed(&self, id: PlanId) -> Option<&Plan> {
        for call in &self.calls {
            if let Some((_, before)) = call.before.iter().find(|(p, _)| *p == id) {
                return before.as_ref();
            }
            if let Some((_, plan)) = call.deleted.iter().find(|(p, _)| *p == id) {
                return Some(plan);
            }
        }
        self.shelf.get(id)
    }

    fn is_pending(&self, id: PlanId) -> bool {
        self.calls.iter().any(|c| {
            c.before.iter().any(|(p, _)| *p == id) || c.deleted.iter().any(|(p, _)| *p == id)
        })
    }

    pub fn all(&self) -> impl Iterator<Item = &Plan> {
        self.shelf.all()
    }

    /// Sets a session's pointer as the database has it (another replica may
    /// have moved it), outside any call's record.
    pub fn sync_active(&mut self, session: &str, id: Option<PlanId>) {
        self.shelf
            .set_active(session, id.filter(|id| self.shelf.contains(*id)));
    }

    /// Starts recording a call made by `actor`.
    pub fn begin(&mut self, actor: &str) {
        self.end();
        self.calls.push_back(Call::new(actor));
        self.open = true;
    }

    /// The call being made; one is started if none is (a change made
    /// outside [`Book::begin`] is still recorded).
    fn call(&mut self) -> &mut Call {
        if !self.open {
            self.begin(SYSTEM_ACTOR);
        }
        self.calls
            .back_mut()
            .expect("an open call was just ensured")
    }

    /// Ends the call being made. Returns what decides its outcome: its own
    /// commit, or, for a call that changed nothing, the commit of the newest
    /// call it was judged after (`None`: everything it saw is committed).
    pub fn end(&mut self) -> Option<Ticket> {
        if !std::mem::take(&mut self.open) {
            return None;
        }
        if self.calls.back().is_some_and(Call::is_empty) {
            self.calls.pop_back();
        }
        self.calls.back().map(|c| c.done.subscribe())
    }

    /// Whether the call being made has deleted a plan (which only admins
    /// may do, whatever tool or dialect it came through).
    pub fn deletes_a_plan(&self) -> bool {
        self.open && self.calls.back().is_some_and(|c| !c.deleted.is_empty())
    }

    /// Undoes what the call being made has changed so far; it stays open.
    pub fn undo(&mut self) {
        if self.open {
            if let Some(call) = self.calls.pop_back() {
                let actor = call.actor.clone();
                self.revert(call);
                self.calls.push_back(Call::new(&actor));
            }
        }
    }

    fn revert(&mut self, call: Call) {
        for (session, before, _) in call.active.into_iter().rev() {
            self.shelf.set_active(&session, before);
        }
        for (_, plan) in call.deleted {
            self.put(plan);
        }
        for (id, before) in call.before.into_iter().rev() {
            match before {
                Some(plan) => self.put(plan),
                None => self.forget(id),
            }
        }
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

    /// Runs several commands on one plan as one change, all or none (an
    /// approval and the pause that holds it); each command's
    /// `expected_version` is checked as it comes.
    pub fn commands(
        &mut self,
        id: PlanId,
        commands: &[Command],
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Event>, PlanError> {
        self.change(id, |plan| {
            let mut scratch = plan.clone();
            let mut events = Vec::new();
            for command in commands {
                events.extend(scratch.execute(command, actor, now)?);
            }
            *plan = scratch;
            Ok(events)
        })
    }

    /// Changes one plan in place and records the change. The plan's copy
    /// for undo is taken once per call; a refused or empty change leaves no
    /// record.
    fn change(
        &mut self,
        id: PlanId,
        run: impl FnOnce(&mut Plan) -> Result<Vec<Event>, PlanError>,
    ) -> Result<Vec<Event>, PlanError> {
        if !self.shelf.contains(id) {
            return Err(PlanError::UnknownPlan { id });
        }
        let first_touch = self.call().before.iter().all(|(p, _)| *p != id);
        let copy = if first_touch {
            self.shelf.get(id).cloned()
        } else {
            None
        };
        let result = match self.shelf.get_mut(id) {
            Some(plan) => run(plan),
            None => Ok(Vec::new()),
        };
        match result {
            Ok(events) if !events.is_empty() => {
                let call = self.call();
                if first_touch {
                    call.before.push((id, copy));
                }
                match call.events.iter_mut().find(|(p, _)| *p == id) {
                    Some((_, list)) => list.extend(events.iter().cloned()),
                    None => call.events.push((id, events.clone())),
                }
                Ok(events)
            }
            // Refused (the engine wrote nothing) or a no-op.
            other => other,
        }
    }

    /// Takes every uncommitted call as one batch; returns it and how many
    /// calls it holds. The plans stay as they are until [`Book::settle`] or
    /// [`Book::rollback`].
    pub fn take_group(&mut self) -> (Batch, usize) {
        self.end();
        let mut batch = Batch::default();
        // Plan id → (version before the group, events in order).
        let mut touched: Vec<(PlanId, Option<u64>, Vec<Event>)> = Vec::new();
        for call in &mut self.calls {
            for (id, before) in &call.before {
                if touched.iter().all(|(p, _, _)| p != id) {
                    touched.push((*id, before.as_ref().map(|p| p.version()), Vec::new()));
                }
            }
            for (id, events) in std::mem::take(&mut call.events) {
                if let Some((_, _, list)) = touched.iter_mut().find(|(p, _, _)| *p == id) {
                    list.extend(events);
                }
            }
            for (session, _, now) in &call.active {
                batch.active.push((session.clone(), *now));
            }
            for (id, _) in &call.deleted {
                batch.deleted.push((*id, call.actor.clone()));
            }
        }
        for (id, base_version, events) in touched {
            let deleted = || {
                self.calls
                    .iter()
                    .rev()
                    .find_map(|c| c.deleted.iter().find(|(p, _)| *p == id).map(|(_, p)| p))
            };
            if let Some(plan) = self.shelf.get(id).or_else(deleted) {
                batch.plans.push(PlanWrite::of(plan, base_version, events));
            }
        }
        (batch, self.calls.len())
    }

    /// The oldest `n` calls are committed.
    pub fn settle(&mut self, n: usize) {
        for call in self.calls.drain(..n.min(self.calls.len())) {
            call.done.send_replace(Some(Ok(())));
        }
    }

    /// The commit of the oldest `n` calls failed: every uncommitted call is
    /// undone, newest first; those `n` learn why, the later ones that they
    /// were undone.
    pub fn rollback(&mut self, n: usize, why: Failure) {
        self.end();
        while let Some(call) = self.calls.pop_back() {
            let outcome = if self.calls.len() < n {
                Err(why.clone())
            } else {
                Err(Failure::Undone)
            };
            call.done.send_replace(Some(outcome));
            self.revert(call);
        }
    }
}

impl PlanBook for Book {
    fn plan(&self, id: PlanId) -> Option<&Plan> {
        self.shelf.get(id)
    }

    fn plan_by_key(&self, key: &str) -> Option<&Plan> {
        self.shelf.by_key(key)
    }

    fn plans(&self) -> Vec<&Plan> {
        self.all().collect()
    }

    fn active(&self, session: &str) -> Option<PlanId> {
        self.shelf.active(session)
    }

    fn set_active(&mut self, session: &str, id: Option<PlanId>) {
        let before = self.shelf.active(session);
        if before == id {
            return;
        }
        self.call().active.push((session.to_string(), before, id));
        self.shelf.set_active(session, id);
    }

    fn insert(&mut self, plan: Plan, events: Vec<Event>) -> Result<(), PlanError> {
        check_new_plan(self, &plan)?;
        let call = self.call();
        call.before.push((plan.id(), None));
        call.events.push((plan.id(), events));
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
            .shelf
            .get(id)
            .cloned()
            .ok_or(PlanError::UnknownPlan { id })?;
        for session in self.shelf.sessions_on(id) {
            self.set_active(&session, None);
        }
        self.forget(id);
        self.call().deleted.push((id, plan));
        Ok(())
    }
}

#[cfg(test)]
mod tests;
