//! Webhooks: people are called when a plan waits for them, without
//! sitting on the board.
//!
//! The run log is the outbox. A deliverer task reads the entries after its
//! cursor (kept in the database), records one delivery per endpoint for
//! each entry worth a notification (approval needed, a question asked, a
//! run finished, failed or stuck, a budget reached), then moves the
//! cursor; a unique index makes recording twice after a crash a no-op. Due
//! deliveries are POSTed with a signature and retried with exponential
//! backoff until the endpoint answers 2xx or the attempts run out. The
//! deliverer is its own task: a dead endpoint never slows a run.
//!
//! # Layout
//! - this file: [`WebhookConfig`] and [`Endpoint`] (where to send, from
//!   the environment: `PLANBOARD_WEBHOOK_URL`, `PLANBOARD_WEBHOOK_SECRET`,
//!   `PLANBOARD_WEBHOOK_FORMAT`, `PLANBOARD_PUBLIC_URL`) and [`Webhooks`],
//!   the one service the API and the board's settings call;
//! - `events.rs`: [`WebhookEvent`], [`event_of`] (which run-log entries
//!   notify), [`Payload`] and [`signature`] (the body and its HMAC-SHA256);
//! - `deliverer.rs`: [`spawn`], the deliverer, its cursor and its purge;
//! - `store.rs`: [`WebhookStore`] and its rows; `sql.rs`: it on the SQL store.
//!
//! # Verifying a delivery
//! `X-Planboard-Signature: t=<unix seconds>,v1=<hex>` where `<hex>` is
//! HMAC-SHA256, keyed with the secret, of `<t>.<body>` (the raw body
//! bytes). Recompute it, compare in constant time, and refuse a `t` more
//! than a few minutes old (a replay).

mod deliverer;
mod events;
mod sql;
mod store;

use std::sync::Arc;
use std::time::Duration;

use crate::store::StoreError;

/// Defined with the store (whose rows hide their URLs with it too); used
/// here and by the API, the board and the config.
pub use crate::store::shown_url;
pub use deliverer::{open_cursor, purge, spawn, DelivererStores};
pub use events::{event_of, signature, slack_escaped, Payload, WebhookEvent};
pub use store::{Attempt, Delivery, NewDelivery, StoredEndpoint, WebhookStore};

/// One place notifications go.
#[derive(Clone)]
pub struct Endpoint {
    pub url: reqwest::Url,
    /// Signs each body (`X-Planboard-Signature`); `None`: unsigned.
    pub secret: Option<String>,
    /// Slack's incoming-webhook shape (`{"text": …}`) instead of the JSON
    /// payload.
    pub slack: bool,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &shown_url(self.url.as_str()))
            .field("secret", &self.secret.as_ref().map(|_| "<set>"))
            .field("slack", &self.slack)
            .finish()
    }
}

/// Where and how to deliver.
#[derive(Clone, Debug)]
pub struct WebhookConfig {
    pub endpoints: Vec<Endpoint>,
    /// The board's address for people (links in the payloads).
    pub board_url: String,
    /// The first retry's wait; each next one doubles it (at most an hour).
    pub retry_base: Duration,
    pub max_attempts: u32,
    /// How often the deliverer looks for new entries and due deliveries.
    pub poll: Duration,
    /// Per delivery attempt.
    pub timeout: Duration,
    /// How old a log entry must be before the cursor moves past it: on
    /// PostgreSQL a lower `seq` may commit after a higher one, so the
    /// newest entries are read again each round (recording a delivery
    /// twice adds nothing) until none below them can still appear.
    pub settle: Duration,
    /// Deliveries that are over are deleted after this long
    /// (`PLANBOARD_WEBHOOK_RETENTION_DAYS`, 30 days).
    pub retention: Duration,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        WebhookConfig {
            endpoints: Vec::new(),
            board_url: "http://127.0.0.1:3000".into(),
            retry_base: Duration::from_secs(2),
            max_attempts: 10,
            poll: Duration::from_millis(500),
            timeout: Duration::from_secs(10),
            settle: Duration::from_secs(10),
            retention: Duration::from_secs(30 * 24 * 3600),
        }
    }
}

/// Why an endpoint was not added or removed.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// The URL (shown by scheme and host) is configured or added already.
    #[error("an endpoint with this URL exists already ({0})")]
    Taken(String),
    #[error("no webhook endpoint has id {0}")]
    NotFound(uuid::Uuid),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The endpoints (configured and added) and the deliveries, for the API
/// and the board's settings page.
pub struct Webhooks {
    config: WebhookConfig,
    store: Arc<dyn WebhookStore>,
}

impl Webhooks {
    pub fn new(config: WebhookConfig, store: Arc<dyn WebhookStore>) -> Webhooks {
        Webhooks { config, store }
    }

    /// The store itself, for tests that look at the deliverer's cursor.
    pub fn store(&self) -> Arc<dyn WebhookStore> {
        self.store.clone()
    }

    /// Where and how notifications go, as configured.
    pub fn config(&self) -> &WebhookConfig {
        &self.config
    }

    /// The endpoints admins added, oldest first.
    pub async fn added(&self) -> Result<Vec<StoredEndpoint>, EndpointError> {
        Ok(self.store.webhook_endpoints().await?)
    }

    /// Adds a checked endpoint, unless its URL is configured or added
    /// already.
    pub async fn add_endpoint(&self, endpoint: &StoredEndpoint) -> Result<(), EndpointError> {
        let configured = self
            .config
            .endpoints
            .iter()
            .any(|e| e.url.as_str() == endpoint.url);
        if configured || !self.store.add_webhook_endpoint(endpoint).await? {
            return Err(EndpointError::Taken(shown_url(&endpoint.url)));
        }
        Ok(())
    }

    /// Removes an added endpoint.
    pub async fn remove_endpoint(&self, id: uuid::Uuid) -> Result<(), EndpointError> {
        match self.store.remove_webhook_endpoint(id).await? {
            true => Ok(()),
            false => Err(EndpointError::NotFound(id)),
        }
    }

    /// The newest deliveries, each endpoint shown by scheme and host only.
    pub async fn deliveries(&self, limit: u32) -> Result<Vec<Delivery>, EndpointError> {
        let mut list = self.store.deliveries(limit).await?;
        for d in &mut list {
            d.endpoint = shown_url(&d.endpoint);
        }
        Ok(list)
    }
}
