//! Durable plans: the [`PlanStore`] trait and its SQL implementation.
//!
//! The store knows nothing about commands; it saves what the engine decided.
//! A [`Batch`] (new or changed plan snapshots, their events, session
//! pointers, deletions) is written in one transaction, and every changed plan
//! is guarded by the version it had when it was loaded, so two writers can
//! never both win.
//!
//! # Layout
//! - this file: the trait and the rows it speaks in;
//! - `sql.rs`: [`SqlStore`], one implementation for SQLite and PostgreSQL.

mod sql;

use async_trait::async_trait;
use plan_engine::{Event, Plan, PlanId};
use serde::Serialize;
use utoipa::ToSchema;

pub use sql::SqlStore;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The plan changed since it was loaded (another writer, maybe another process).
    #[error("plan {plan_id} changed meanwhile (now at version {current})")]
    Conflict { plan_id: PlanId, current: u64 },
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored data is unreadable: {0}")]
    Corrupt(String),
}

/// One plan's part of a commit.
pub struct PlanWrite {
    /// The plan after the batch (as it was deleted, for a plan the batch
    /// deletes, so the events before the deletion are kept).
    pub plan: Plan,
    /// The version the writer started from; `None` for a new plan.
    pub base_version: Option<u64>,
    pub events: Vec<Event>,
}

/// Everything a group of service calls changed, committed all or nothing.
#[derive(Default)]
pub struct Batch {
    pub plans: Vec<PlanWrite>,
    /// Session → active plan (`None` clears it).
    pub active: Vec<(String, Option<PlanId>)>,
    /// Soft deletions: the plan leaves listings, its log stays.
    pub deleted: Vec<(PlanId, String)>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.plans.is_empty() && self.active.is_empty() && self.deleted.is_empty()
    }
}

/// A row of the event log, as the API and the live stream show it.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct StoredEvent {
    /// Position in the whole log; the SSE id.
    pub seq: i64,
    #[schema(value_type = String, format = Uuid)]
    pub plan_id: PlanId,
    pub version: u64,
    pub actor: String,
    /// The engine's event type (`subtask_state_changed`, …) or `plan_deleted`.
    pub kind: String,
    pub at: String,
    /// The engine's event as JSON (`null` for `plan_deleted`).
    #[schema(value_type = Object)]
    pub event: serde_json::Value,
}

/// One line of the plan list.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PlanSummary {
    #[schema(value_type = String, format = Uuid)]
    pub id: PlanId,
    pub key: Option<String>,
    pub title: String,
    pub state: String,
    pub mode: String,
    pub approval: String,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct PlanFilter {
    pub state: Option<String>,
    pub mode: Option<String>,
    /// Case-insensitive substring of the title.
    pub text: Option<String>,
    pub limit: u32,
    pub offset: u32,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct StoredComment {
    pub id: u32,
    pub subtask: Option<u32>,
    pub author: String,
    pub body: String,
    pub at: String,
}

#[async_trait]
pub trait PlanStore: Send + Sync {
    /// Every plan that is not deleted, for the service's working set.
    async fn load_all(&self) -> Result<Vec<Plan>, StoreError>;
    async fn load(&self, id: PlanId) -> Result<Option<Plan>, StoreError>;
    /// The stored version of a plan that is not deleted.
    async fn version(&self, id: PlanId) -> Result<Option<u64>, StoreError>;
    async fn commit(&self, batch: &Batch) -> Result<(), StoreError>;
    async fn list(&self, filter: &PlanFilter) -> Result<Vec<PlanSummary>, StoreError>;
    /// Log rows after `after_seq`, oldest first; of one plan or of all.
    async fn events(
        &self,
        plan: Option<PlanId>,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError>;
    async fn last_seq(&self) -> Result<i64, StoreError>;
    async fn active(&self, session: &str) -> Result<Option<PlanId>, StoreError>;
    async fn comments(&self, plan: PlanId) -> Result<Vec<StoredComment>, StoreError>;
    /// Waits until another process may have committed (PostgreSQL
    /// LISTEN/NOTIFY). `None` when the store has no such signal (SQLite:
    /// one process owns the file).
    async fn listen(&self) -> Result<Option<tokio::sync::mpsc::Receiver<()>>, StoreError>;
}
