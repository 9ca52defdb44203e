//! The agent's [`Host`] over the server: plan changes through
//! [`PlanService`] (the one write path, so the board and the plan stream
//! see the agent's work like anyone's), the run log in the store, and a
//! broadcast for the run streams.

use std::sync::Arc;

use agent::host::{Host, HostError};
use agent::run::{ReplyDelta, RunEntry, RunId, RunRecord};
use plan_engine::{NewPlan, Op, Plan, PlanError, PlanId};
use tokio::sync::broadcast;

use super::stream::{LiveDelta, RunNews};
use crate::service::{PlanService, ServiceError};
use crate::store::RunStore;

pub struct ServerHost {
    pub plans: Arc<PlanService>,
    pub store: Arc<dyn RunStore>,
    pub entries: broadcast::Sender<RunNews>,
    /// Each run's plan, learnt when the run is saved.
    pub plan_of: std::sync::Mutex<std::collections::HashMap<RunId, PlanId>>,
}

fn host_error(e: ServiceError) -> HostError {
    match e {
        ServiceError::Plan(PlanError::UnknownPlan { id }) => HostError::NotFound(id),
        ServiceError::Plan(e) => HostError::Refused(e),
        other => HostError::Unavailable(other.to_string()),
    }
}

#[async_trait::async_trait]
impl Host for ServerHost {
    async fn create_plan(&self, mut spec: NewPlan, actor: &str) -> Result<Plan, HostError> {
        // The server, never its caller, chooses a plan's id.
        spec.id = uuid::Uuid::new_v4();
        self.plans.create(spec, actor).await.map_err(host_error)
    }

    async fn execute(&self, plan: PlanId, ops: Vec<Op>, actor: &str) -> Result<Plan, HostError> {
        self.plans
            .execute(plan, ops, actor)
            .await
            .map_err(host_error)
    }

    async fn plan(&self, plan: PlanId) -> Result<Plan, HostError> {
        self.plans.get(plan).await.ok_or(HostError::NotFound(plan))
    }

    async fn changed(&self, plan: PlanId, version: u64) -> Result<Plan, HostError> {
        // Subscribe first, then look: a change in between is caught either way.
        let mut live = self.plans.hub().subscribe();
        loop {
            match self.plans.read(plan, |p| p.version()).await {
                None => return Err(HostError::NotFound(plan)),
                Some(v) if v > version => return self.plan(plan).await,
                Some(_) => {}
            }
            loop {
                match live.recv().await {
                    Ok(row) if row.plan_id == plan => break,
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Lagged(_)) => break,
                    Err(broadcast::error::RecvError::Closed) => {
                        return Err(HostError::Unavailable("the server is shutting down".into()))
                    }
                }
            }
        }
    }

    async fn log(&self, run: RunId, entry: RunEntry) -> Result<(), HostError> {
        let json =
            serde_json::to_string(&entry).map_err(|e| HostError::Unavailable(e.to_string()))?;
        let kind = serde_json::to_value(&entry)
            .ok()
            .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string))
            .unwrap_or_default();
        let plan = self
            .plan_of
            .lock()
            .expect("plan_of lock")
            .get(&run)
            .copied();
        let stored = self
            .store
            .append_run_log(run, plan, &kind, &json)
            .await
            .map_err(|e| HostError::Unavailable(e.to_string()))?;
        let _ = self.entries.send(RunNews::Entry(Arc::new(stored)));
        Ok(())
    }

    /// Someone follows a run or plan stream (they share one broadcast).
    fn watched(&self, _run: RunId) -> bool {
        self.entries.receiver_count() > 0
    }

    fn delta(&self, run: RunId, delta: ReplyDelta) {
        if self.entries.receiver_count() == 0 {
            return;
        }
        let plan_id = self
            .plan_of
            .lock()
            .expect("plan_of lock")
            .get(&run)
            .copied();
        let _ = self.entries.send(RunNews::Delta(Arc::new(LiveDelta {
            run_id: run,
            plan_id,
            delta,
        })));
    }

    async fn save_run(&self, run: &RunRecord) -> Result<(), HostError> {
        if let Some(plan) = run.plan_id {
            self.plan_of
                .lock()
                .expect("plan_of lock")
                .insert(run.id, plan);
        }
        self.store
            .save_run(run)
            .await
            .map_err(|e| HostError::Unavailable(e.to_string()))
    }
}
