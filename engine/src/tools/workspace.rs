//! An in-memory [`PlanBook`]: the reference implementation the tests and
//! the benchmark use, and what an embedding program can use directly.

use std::collections::HashMap;

use serde_json::Value;

use super::{call, CallContext, PlanBook, ToolResult};
use crate::command::{Command, Op};
use crate::dialect::Dialect;
use crate::error::PlanError;
use crate::event::Event;
use crate::hint::{hint, HintOptions};
use crate::model::{Plan, PlanId, Timestamp};

#[derive(Default)]
pub struct Workspace {
    plans: HashMap<PlanId, Plan>,
    /// Creation order, for listings.
    order: Vec<PlanId>,
    keys: HashMap<String, PlanId>,
    active: HashMap<String, PlanId>,
    /// Every event of every plan, so a plan can be rebuilt from its log.
    log: HashMap<PlanId, Vec<Event>>,
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
        let plan = self.active(session).and_then(|id| self.plans.get(&id));
        hint(plan, opts)
    }

    pub fn events(&self, id: PlanId) -> &[Event] {
        self.log.get(&id).map_or(&[], Vec::as_slice)
    }

    pub fn active_plan(&self, session: &str) -> Option<&Plan> {
        self.active(session).and_then(|id| self.plans.get(&id))
    }
}

impl PlanBook for Workspace {
    fn plan(&self, id: PlanId) -> Option<&Plan> {
        self.plans.get(&id)
    }

    fn plan_by_key(&self, key: &str) -> Option<&Plan> {
        self.keys.get(key).and_then(|id| self.plans.get(id))
    }

    fn plans(&self) -> Vec<&Plan> {
        self.order.iter().filter_map(|id| self.plans.get(id)).collect()
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
        if self.plans.contains_key(&plan.id) {
            return Err(PlanError::invalid("id", format!("plan {} already exists", plan.id)));
        }
        if let Some(key) = &plan.key {
            if self.keys.contains_key(key) {
                return Err(PlanError::invalid(
                    "plan_id",
                    format!("a plan with ID '{key}' already exists; choose another id or update that plan"),
                ));
            }
            self.keys.insert(key.clone(), plan.id);
        }
        self.order.push(plan.id);
        self.log.insert(plan.id, events);
        self.plans.insert(plan.id, plan);
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
            .plans
            .get_mut(&id)
            .ok_or_else(|| PlanError::invalid("plan_id", format!("no plan has id {id}")))?;
        let events = match <[Op; 1]>::try_from(ops) {
            // The hot path: `execute` never writes on failure, so no copy is needed.
            Ok([op]) => plan.execute(&Command::from(op), actor, now)?,
            Err(ops) => {
                let mut scratch = plan.clone();
                let mut events = Vec::new();
                for op in ops {
                    events.extend(scratch.execute(&Command::from(op), actor, now)?);
                }
                *plan = scratch;
                events
            }
        };
        self.log.entry(id).or_default().extend(events.iter().cloned());
        Ok(events)
    }

    fn remove(&mut self, id: PlanId) -> Result<(), PlanError> {
        let plan = self
            .plans
            .remove(&id)
            .ok_or_else(|| PlanError::invalid("plan_id", format!("no plan has id {id}")))?;
        if let Some(key) = plan.key {
            self.keys.remove(&key);
        }
        self.order.retain(|p| *p != id);
        self.active.retain(|_, p| *p != id);
        self.log.remove(&id);
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
