//! [`Shelf`]: the bookkeeping every [`super::PlanBook`] needs: plans by id,
//! in creation order and by key, and which plan each session is working on.

use std::collections::HashMap;

use crate::model::{Plan, PlanId};

#[derive(Clone, Default)]
pub struct Shelf {
    plans: HashMap<PlanId, Plan>,
    /// Creation order, for the dialects' listings.
    order: Vec<PlanId>,
    keys: HashMap<String, PlanId>,
    active: HashMap<String, PlanId>,
}

impl Shelf {
    pub fn get(&self, id: PlanId) -> Option<&Plan> {
        self.plans.get(&id)
    }

    /// The plan to change in place. Its key is fixed at creation, so the
    /// key index cannot go stale through this.
    pub fn get_mut(&mut self, id: PlanId) -> Option<&mut Plan> {
        self.plans.get_mut(&id)
    }

    pub fn contains(&self, id: PlanId) -> bool {
        self.plans.contains_key(&id)
    }

    pub fn by_key(&self, key: &str) -> Option<&Plan> {
        self.keys.get(key).and_then(|id| self.plans.get(id))
    }

    /// All plans, oldest first.
    pub fn all(&self) -> impl Iterator<Item = &Plan> {
        self.order.iter().filter_map(|id| self.plans.get(id))
    }

    /// Adds a plan, or replaces the one with its id (keeping its place).
    pub fn put(&mut self, plan: Plan) {
        if let Some(key) = &plan.key {
            self.keys.insert(key.clone(), plan.id);
        }
        if !self.plans.contains_key(&plan.id) {
            self.order.push(plan.id);
        }
        self.plans.insert(plan.id, plan);
    }

    /// Removes a plan with its key and every session's pointer to it.
    pub fn take(&mut self, id: PlanId) -> Option<Plan> {
        let plan = self.plans.remove(&id)?;
        if let Some(key) = &plan.key {
            self.keys.remove(key);
        }
        self.order.retain(|p| *p != id);
        self.active.retain(|_, p| *p != id);
        Some(plan)
    }

    pub fn active(&self, session: &str) -> Option<PlanId> {
        self.active.get(session).copied()
    }

    /// Points a session at a plan (`None`: at no plan); returns where it
    /// pointed before.
    pub fn set_active(&mut self, session: &str, id: Option<PlanId>) -> Option<PlanId> {
        match id {
            Some(id) => self.active.insert(session.to_string(), id),
            None => self.active.remove(session),
        }
    }

    /// The sessions working on a plan.
    pub fn sessions_on(&self, id: PlanId) -> Vec<String> {
        self.active
            .iter()
            .filter(|(_, p)| **p == id)
            .map(|(s, _)| s.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NewPlan, Timestamp};

    fn plan(n: u128, key: Option<&str>) -> Plan {
        let spec = NewPlan {
            id: uuid_of(n),
            title: format!("plan {n}"),
            key: key.map(str::to_string),
            ..NewPlan::default()
        };
        Plan::create(&spec, "t", Timestamp::default())
            .expect("a valid plan")
            .0
    }

    fn uuid_of(n: u128) -> PlanId {
        PlanId::from_u128(n)
    }

    #[test]
    fn taking_a_plan_frees_its_key_and_clears_the_sessions_on_it() {
        let mut shelf = Shelf::default();
        shelf.put(plan(1, Some("k")));
        shelf.put(plan(2, None));
        shelf.set_active("a", Some(uuid_of(1)));
        shelf.set_active("b", Some(uuid_of(2)));
        assert!(shelf.take(uuid_of(1)).is_some());
        assert!(shelf.by_key("k").is_none());
        assert_eq!(shelf.active("a"), None);
        assert_eq!(shelf.active("b"), Some(uuid_of(2)));
        assert_eq!(shelf.all().count(), 1);
    }

    #[test]
    fn replacing_a_plan_keeps_its_place_in_the_order() {
        let mut shelf = Shelf::default();
        shelf.put(plan(1, None));
        shelf.put(plan(2, None));
        shelf.put(plan(1, None));
        let order: Vec<PlanId> = shelf.all().map(|p| p.id).collect();
        assert_eq!(order, vec![uuid_of(1), uuid_of(2)]);
    }
}
