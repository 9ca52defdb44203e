//! Upkeep: releasing subtasks of plans gone quiet, and the log reader that
//! publishes new rows and absorbs what other processes wrote.

use super::*;

impl PlanService {
    /// Puts subtasks back to todo whose plan has seen no activity for
    /// `lease`: the agent that started them is presumed gone (its process
    /// died, or it gave up). Each release is an event saying why.
    pub async fn reconcile(&self, lease: Duration) -> Result<usize, ServiceError> {
        self.reconcile_except(lease, &[]).await
    }

    /// [`PlanService::reconcile`], leaving alone the plans in `held` (their
    /// run's driver holds a live lease: quiet is not gone).
    pub async fn reconcile_except(
        &self,
        lease: Duration,
        held: &[PlanId],
    ) -> Result<usize, ServiceError> {
        let now = chrono::Utc::now();
        let cutoff = now - chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
        let minutes = lease.as_secs() / 60;
        let stale: Vec<(PlanId, Vec<plan_engine::SubtaskId>)> = {
            let book = self.book.lock().await;
            book.all()
                .filter(|p| p.updated_at() < cutoff && p.count(SubtaskState::InProgress) > 0)
                .filter(|p| !held.contains(&p.id()))
                .map(|p| (p.id(), p.in_progress()))
                .collect()
        };
        let mut released = 0;
        for (plan_id, ids) in stale {
            let ops: Vec<Op> = ids
                .iter()
                .map(|id| Op::SetSubtaskState {
                    id: *id,
                    state: SubtaskState::Todo,
                    note: Some(format!(
                        "lease expired: no activity on this plan for {minutes} min; released so it can be started again"
                    )),
                    start_next: false,
                })
                .collect();
            let count = ops.len();
            let result = self
                .write(SYSTEM_ACTOR, |book| {
                    // Someone may have touched the plan since the scan.
                    match book.get(plan_id) {
                        Some(p) if p.updated_at() < cutoff => {
                            Ok(book.execute(plan_id, ops.clone(), SYSTEM_ACTOR, now)?)
                        }
                        _ => Ok(Vec::new()),
                    }
                })
                .await;
            match result {
                Ok(events) if !events.is_empty() => released += count,
                Ok(_) => {}
                Err(e) => tracing::warn!("could not release subtasks of plan {plan_id}: {e}"),
            }
        }
        Ok(released)
    }

    /// Brings the working set up to date with rows other processes wrote.
    async fn absorb(&self, rows: &[StoredEvent]) {
        let mut stale: Vec<PlanId> = Vec::new();
        {
            let book = self.book.lock().await;
            for row in rows {
                let behind = match book.get(row.plan_id) {
                    Some(plan) => plan.version() < row.version || row.kind == "plan_deleted",
                    None => row.kind != "plan_deleted",
                };
                if behind && !stale.contains(&row.plan_id) {
                    stale.push(row.plan_id);
                }
            }
        }
        for id in stale {
            match self.store.load(id).await {
                Ok(fresh) => self.book.lock().await.absorb(id, fresh),
                Err(e) => tracing::error!("reloading plan {id} failed: {e}"),
            }
        }
    }
}

/// The log reader: publishes new rows and absorbs other processes' writes.
/// Holds the service weakly so it ends when the service is dropped.
pub(super) async fn read_log(
    service: std::sync::Weak<PlanService>,
    mut remote: Option<tokio::sync::mpsc::Receiver<()>>,
) {
    loop {
        let Some(hub) = service.upgrade().map(|s| s.hub()) else {
            return;
        };
        hub.wait(remote.as_mut()).await;
        let Some(service) = service.upgrade() else {
            return;
        };
        let rows = if service.shared {
            // This process's commit is in the database (and its NOTIFY
            // on the way) before `committed` settles it in the book. Rows
            // read in that window would be published while the book still
            // shows the version before them, and whoever heard them and
            // read the book (the agent waiting for an approval) would
            // wait for a row that was already gone. Reading between
            // commits, every row of this process is settled. (SQLite is
            // woken only after the settle.)
            let _between_commits = service.committing.lock().await;
            service.hub.read_new(service.store.as_ref()).await
        } else {
            service.hub.read_new(service.store.as_ref()).await
        };
        // Absorb first: whoever sees a row on a stream and then writes to
        // this process finds the working set already at that row.
        if service.shared && !rows.is_empty() {
            service.absorb(&rows).await;
        }
        service.hub.publish(&rows);
    }
}
