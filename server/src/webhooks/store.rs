//! What webhooks keep: the deliverer's cursor into the run log, one row
//! per delivery, and the endpoints admins added.

use agent::RunId;
use async_trait::async_trait;
use plan_engine::{PlanId, Timestamp};
use schemars::JsonSchema;
use serde::Serialize;

use crate::store::StoreError;

/// The webhooks' tables.
#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// The webhook deliverer's place in the run log (`None`: it never ran).
    async fn webhook_cursor(&self) -> Result<Option<i64>, StoreError>;
    async fn set_webhook_cursor(&self, seq: i64) -> Result<(), StoreError>;
    /// Records deliveries; one already recorded for the same endpoint and
    /// entry is left as it is.
    async fn enqueue_deliveries(&self, new: &[NewDelivery]) -> Result<(), StoreError>;
    /// Claims the pending deliveries to `endpoints` whose time has come
    /// (until `lease_ms`, when they are due again if no attempt was
    /// recorded).
    async fn claim_deliveries(
        &self,
        now_ms: i64,
        lease_ms: i64,
        endpoints: &[String],
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError>;
    async fn record_attempt(
        &self,
        id: uuid::Uuid,
        attempts: u32,
        attempt: Attempt,
    ) -> Result<(), StoreError>;
    /// The newest deliveries first.
    async fn deliveries(&self, limit: u32) -> Result<Vec<Delivery>, StoreError>;
    /// Forgets the deliveries that are over and were recorded before
    /// `before`; how many.
    async fn purge_deliveries(&self, before: Timestamp) -> Result<u64, StoreError>;
    /// The endpoints admins added, oldest first.
    async fn webhook_endpoints(&self) -> Result<Vec<StoredEndpoint>, StoreError>;
    /// `false` when an endpoint with its URL exists already.
    async fn add_webhook_endpoint(&self, endpoint: &StoredEndpoint) -> Result<bool, StoreError>;
    async fn remove_webhook_endpoint(&self, id: uuid::Uuid) -> Result<bool, StoreError>;
}

/// A webhook delivery to record (`webhooks` makes them from the run log).
#[derive(Clone, Debug)]
pub struct NewDelivery {
    pub id: uuid::Uuid,
    pub endpoint: String,
    pub seq: i64,
    pub event: String,
    pub plan_id: Option<PlanId>,
    pub run_id: RunId,
    pub body: String,
    pub created_at: Timestamp,
}

/// A webhook delivery as stored: what was sent where, and how it went.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Delivery {
    pub id: uuid::Uuid,
    /// The endpoint's URL (the API shows its scheme and host only).
    pub endpoint: String,
    pub seq: i64,
    pub event: String,
    pub plan_id: Option<PlanId>,
    pub run_id: RunId,
    #[serde(skip)]
    pub body: String,
    /// `pending` (to be tried, or tried again at `next_at`), `delivered`
    /// or `failed` (out of attempts).
    pub status: String,
    pub attempts: u32,
    /// Unix milliseconds of the next attempt (pending only).
    pub next_at: i64,
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    pub created_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
}

/// How one attempt went.
#[derive(Clone, Debug)]
pub enum Attempt {
    Delivered {
        status: u16,
        at: Timestamp,
    },
    Retry {
        status: Option<u16>,
        error: String,
        next_at: i64,
    },
    GaveUp {
        status: Option<u16>,
        error: String,
    },
}

/// A webhook endpoint an admin added (its secret is never shown).
#[derive(Clone, PartialEq)]
pub struct StoredEndpoint {
    pub id: uuid::Uuid,
    pub url: String,
    pub secret: Option<String>,
    pub slack: bool,
    pub created_by: String,
    pub created_at: Timestamp,
}

impl std::fmt::Debug for StoredEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredEndpoint")
            .field("id", &self.id)
            .field("url", &crate::store::shown_url(&self.url))
            .field("secret", &self.secret.as_ref().map(|_| "<set>"))
            .field("slack", &self.slack)
            .finish()
    }
}
