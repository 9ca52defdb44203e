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
//! - this file: [`Webhooks`], the one service the API and the board's
//!   settings call ([`WebhookConfig`] and [`Endpoint`], where to send, are
//!   the configuration's: `PLANBOARD_WEBHOOK_URL`, `PLANBOARD_WEBHOOK_SECRET`,
//!   `PLANBOARD_WEBHOOK_FORMAT`, `PLANBOARD_PUBLIC_URL`);
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

use crate::store::StoreError;

/// Where to deliver: read from the environment with the rest of the
/// configuration, so defined there (the configuration comes first).
pub use crate::config::{Endpoint, WebhookConfig};
/// Defined with the store (whose rows hide their URLs with it too); used
/// here and by the API, the board and the config.
pub use crate::store::shown_url;
pub use deliverer::{open_cursor, purge, spawn, DelivererStores};
pub use events::{event_of, signature, slack_escaped, Payload, WebhookEvent};
pub use store::{Attempt, Delivery, NewDelivery, StoredEndpoint, WebhookStore};

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
