//! An in-memory [`PlanBook`]: the reference implementation the tests and
//! the benchmark use, and what an embedding program can use directly.

use std::collections::HashMap;

use serde_json::Value;

use super::{call, check_new_plan, CallContext, PlanBook, ToolResult};
use crate::command::Op;
use crate::dialect::Dialect;
use crate::error::PlanError;
use crate::event::Event;
use crate::hint::{hint, HintOptions};
use crate::model::{Plan, PlanId, Timestamp};

#[derive(Default)]
pub struct Workspace {
    plans: HashMap<PlanId, Entry>,
    /// Creation order, for listings.
    order: Vec<PlanId>,
    keys: HashMap<String, PlanId>,
    active: HashMap<String, PlanId>,
}

/// A plan with its whole event log, so it can be rebuilt from the log.
struct Entry {
    plan: Plan,
    log: Vec<Event>,
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
        self.plans.get(&id).map_or(&[], |e| e.log.as_slice())
    }

    pub fn active_plan(&self, session: &str) -> Option<&Plan> {
        self.active(session).and_then(|id| self.plan(id))
    }
}

impl PlanBook for Workspace {
    fn plan(&self, id: PlanId) -> Option<&Plan> {
        self.plans.get(&id).map(|e| &e.plan)
    }

    fn plan_by_key(&self, key: &str) -> Option<&Plan> {
        self.keys.get(key).and_then(|id| self.plan(*id))
    }

    fn plans(&self) -> Vec<&Plan> {
        self.order.iter().filter_map(|id| self.plan(*id)).collect()
    }

    fn active(&self, session: &str) -> Option<PlanId> {
        self.active.get(session).copied()
    }

    fn set_active(&mut self, session: &str, id: Option<PlanId>) {
        match id {
            Some(id) => self.active.insert(session.to_string(), id),
            None => self.active.remove(session),
        };
    }

    fn insert(&mut self, plan: Plan, events: Vec<Event>) -> Result<(), PlanError> {
        check_new_plan(self, &plan)?;
        if let Some(key) = &plan.key {
            self.keys.insert(key.clone(), plan.id);
        }
        self.order.push(plan.id);
        self.plans.insert(plan.id, Entry { plan, log: events });
        Ok(())
    }

    fn execute(
        &mut self,
        id: PlanId,
        ops: Vec<Op>,
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Event>, PlanError> {
        let Entry { plan, log } = self
            .plans
            .get_mut(&id)
            .ok_or_else(|| PlanError::invalid("plan_id", format!("no plan has id {id}")))?;
        let events = plan.execute_all(ops, actor, now)?;
        log.extend(events.iter().cloned());
        Ok(events)
    }

    fn remove(&mut self, id: PlanId) -> Result<(), PlanError> {
        let entry = self
            .plans
            .remove(&id)
            .ok_or_else(|| PlanError::invalid("plan_id", format!("no plan has id {id}")))?;
        if let Some(key) = entry.plan.key {
            self.keys.remove(&key);
        }
        self.order.retain(|p| *p != id);
        self.active.retain(|_, p| *p != id);
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
        }
    }
}
