//! The board's backend: the app's [`BoardBackend`] over the plan service,
//! so the board's reads and changes take the same path as the agents'.

use std::sync::Arc;

use app::api::{BoardBackend, BoardError, ListFilter, LogEntry, PlanList, PlanRow, PAGE_SIZE};
use plan_engine::{ApprovalStatus, Command, NewPlan, Plan, PlanError, PlanId};

use crate::service::{PlanService, ServiceError};
use crate::store::StoreError;

/// Log rows read per query.
const PAGE: u32 = 1000;

pub struct Board(pub Arc<PlanService>);

fn to_board_error(e: ServiceError) -> BoardError {
    match e {
        ServiceError::Plan(PlanError::StaleVersion { actual, .. }) => BoardError::Stale {
            message: format!("the plan changed meanwhile; it is now at version {actual}"),
            current_version: actual,
        },
        ServiceError::Plan(e) => BoardError::Refused(e.to_string()),
        ServiceError::NotFound(id) => BoardError::NotFound(format!("no plan has id {id}")),
        ServiceError::Store(StoreError::Conflict { current, .. }) => BoardError::Stale {
            message: format!("the plan kept changing; it is now at version {current}"),
            current_version: current,
        },
        e => {
            tracing::error!("board request failed: {e}");
            BoardError::Unavailable("the plan store failed; nothing was changed".into())
        }
    }
}

fn row(plan: &Plan) -> PlanRow {
    let ts = |t: plan_engine::Timestamp| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    PlanRow {
        id: plan.id,
        title: plan.title.clone(),
        state: plan.state,
        mode: plan.mode,
        approval: plan.approval.status,
        approval_required: plan.approval.required,
        approved_by: (plan.approval.status == ApprovalStatus::Approved)
            .then(|| plan.approval.by.clone())
            .flatten(),
        percent: plan.percent(),
        subtasks: plan.subtasks.len(),
        comments: plan.comments.len(),
        created_at: ts(plan.created_at),
        updated_at: ts(plan.updated_at),
        finished_at: plan.finished_at.map(ts),
        outcome: plan.outcome.clone(),
    }
}

#[async_trait::async_trait]
impl BoardBackend for Board {
    async fn list(&self, filter: &ListFilter) -> Result<PlanList, BoardError> {
        let offset = filter.page as usize * PAGE_SIZE;
        let (rows, more) = self.0.list(&filter.query, offset, PAGE_SIZE, row).await;
        Ok(PlanList { rows, more })
    }

    async fn log(&self, id: PlanId) -> Result<Vec<LogEntry>, BoardError> {
        if self.0.read(id, |_| ()).await.is_none() {
            return Err(BoardError::NotFound(format!("no plan has id {id}")));
        }
        let mut log = Vec::new();
        let mut after = 0;
        loop {
            let rows = self
                .0
                .events(id, after, PAGE)
                .await
                .map_err(to_board_error)?;
            let full = rows.len() == PAGE as usize;
            for r in rows {
                after = r.seq;
                log.push(LogEntry {
                    seq: r.seq,
                    event: serde_json::from_value(r.event).ok(),
                });
            }
            if !full {
                return Ok(log);
            }
        }
    }

    async fn command(&self, id: PlanId, command: Command, actor: &str) -> Result<u64, BoardError> {
        self.0
            .command(id, &command, actor)
            .await
            .map(|(plan, _)| plan.version)
            .map_err(to_board_error)
    }

    async fn create(&self, mut spec: NewPlan, actor: &str) -> Result<PlanId, BoardError> {
        spec.id = uuid::Uuid::new_v4();
        self.0
            .create(spec, actor)
            .await
            .map(|plan| plan.id)
            .map_err(to_board_error)
    }
}
