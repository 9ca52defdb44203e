//! An in-memory [`PlanBook`]: the reference implementation the tests and
//! the benchmark use, and what an embedding program can use directly.

use std::collections::HashMap;

use serde_json::Value;

use super::{call, check_new_plan, CallContext, PlanBook, SessionDefaults, Shelf, ToolResult};
use crate::command::Op;
use crate::dialect::Dialect;
use crate::error::PlanError;
use crate::event::Event;
use crate::hint::{hint, HintOptions};
use crate::model::{Plan, PlanId, Timestamp};

#[derive(Default)]
pub struct Workspace {
    shelf: Shelf,
    /// Each plan's whole event log, so it can be rebuilt from the log.
    logs: HashMap<PlanId, Vec<Event>>,
}

impl Workspace {
    pub fn new() -> Workspace {
        Workspace::default()
    }

    /// Runs one tool call against this workspace.
    pub fn call(
        &mut self,
        dialect: Dialect,
        tool: &str,
        args: &Value,
        ctx: &CallContext,
    ) -> ToolResult {
        call(self, dialect, tool, args, ctx)
    }

    /// The hint for a session's next step, on its active plan.
    pub fn hint(&self, session: &str, opts: &HintOptions) -> String {
        hint(self.active_plan(session), opts)
    }

    pub fn events(&self, id: PlanId) -> &[Event] {
        self.logs.get(&id).map_or(&[], Vec::as_slice)
    }

    pub fn active_plan(&self, session: &str) -> Option<&Plan> {
        self.active(session).and_then(|id| self.plan(id))
    }
}

impl PlanBook for Workspace {
    fn plan(&self, id: PlanId) -> Option<&Plan> {
        self.shelf.get(id)
    }

    fn plan_by_key(&self, key: &str) -> Option<&Plan> {
        self.shelf.by_key(key)
    }

    fn plans(&self) -> Vec<&Plan> {
        self.shelf.all().collect()
    }

    fn active(&self, session: &str) -> Option<PlanId> {
        self.shelf.active(session)
    }

    fn set_active(&mut self, session: &str, id: Option<PlanId>) {
        self.shelf.set_active(session, id);
    }

    fn insert(&mut self, plan: Plan, events: Vec<Event>) -> Result<(), PlanError> {
        check_new_plan(self, &plan)?;
        self.logs.insert(plan.id, events);
        self.shelf.put(plan);
        Ok(())
    }

    fn execute(
        &mut self,
        id: PlanId,
        ops: Vec<Op>,
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Event>, PlanError> {
        let plan = self
            .shelf
            .get_mut(id)
            .ok_or(PlanError::UnknownPlan { id })?;
        let events = plan.execute_all(ops, actor, now)?;
        self.logs
            .entry(id)
            .or_default()
            .extend(events.iter().cloned());
        Ok(events)
    }

    fn remove(&mut self, id: PlanId) -> Result<(), PlanError> {
        self.shelf.take(id).ok_or(PlanError::UnknownPlan { id })?;
        self.logs.remove(&id);
        Ok(())
    }
}

/// Convenience for tests and examples: a context with a fixed session and actor.
impl CallContext {
    pub fn new(session: &str, actor: &str, now: Timestamp, new_plan_id: PlanId) -> CallContext {
        CallContext {
            session: session.to_string(),
            actor: actor.to_string(),
            now,
            new_plan_id,
            defaults: SessionDefaults::default(),
        }
    }
}
