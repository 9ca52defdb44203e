//! The deliverer: reads the run log after its cursor, records one
//! delivery per endpoint for each entry worth a notification, POSTs the
//! due ones (signed, retried with backoff) and purges those that are over.

use std::sync::Arc;
use std::time::Duration;

use super::events::{body_for, signature};
use super::{Attempt, Delivery, Endpoint, NewDelivery, WebhookConfig, WebhookStore};
use crate::pages::Pages;
use crate::runlog::RunLogStore;
use crate::runlog::RunStore;
use crate::store::StoreError;

/// Every endpoint: the configured one, then those admins added (read on
/// each round, so an endpoint added or removed counts at once).
async fn endpoints(
    store: &dyn WebhookStore,
    config: &WebhookConfig,
) -> Result<Vec<Endpoint>, StoreError> {
    let mut all = config.endpoints.clone();
    for stored in store.webhook_endpoints().await? {
        let Ok(url) = reqwest::Url::parse(&stored.url) else {
            continue;
        };
        if all.iter().any(|e| e.url == url) {
            continue;
        }
        all.push(Endpoint {
            url,
            secret: stored.secret,
            slack: stored.slack,
        });
    }
    Ok(all)
}

/// What the deliverer reads and writes.
pub struct DelivererStores {
    pub hooks: Arc<dyn WebhookStore>,
    /// Read after the cursor: the outbox.
    pub log: Arc<dyn RunLogStore>,
    /// A run's trace parent, when tracing is on.
    pub runs: Arc<dyn RunStore>,
}

/// Starts the deliverer. It runs with no endpoint too (an admin may add
/// one at any time); with none, it only keeps its cursor at the log's end.
/// With tracing on, each notification carries the `traceparent` of its
/// run's span, so a receiver's own spans join the run's trace.
pub fn spawn(stores: DelivererStores, config: WebhookConfig, traced: bool) {
    tokio::spawn(async move {
        let client = match reqwest::Client::builder()
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
        {
            Ok(client) => client,
            Err(e) => {
                tracing::error!("webhooks are off: cannot build the HTTP client: {e}");
                return;
            }
        };
        let mut purged_at: Option<std::time::Instant> = None;
        let mut ends = LogEnds::default();
        loop {
            if let Err(e) = tick(&stores, &config, &client, traced, &mut ends).await {
                tracing::warn!("webhooks: {e}");
            }
            // Once an hour (and at start), what is over and old goes.
            if purged_at.is_none_or(|at| at.elapsed() >= Duration::from_secs(3600)) {
                purged_at = Some(std::time::Instant::now());
                match purge(stores.hooks.as_ref(), &config).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!("webhooks: forgot {n} old deliveries"),
                    Err(e) => tracing::warn!("webhooks: purging old deliveries: {e}"),
                }
            }
            tokio::time::sleep(config.poll).await;
        }
    });
}

/// Deletes the deliveries that are over and older than the retention.
pub async fn purge(store: &dyn WebhookStore, config: &WebhookConfig) -> Result<u64, StoreError> {
    let keep = chrono::Duration::from_std(config.retention).unwrap_or(chrono::Duration::MAX);
    let before = chrono::Utc::now()
        .checked_sub_signed(keep)
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC);
    store.purge_deliveries(before).await
}

/// The deliverer's cursor, set at the log's end on the very first start:
/// history is not replayed. The server calls it before anything can run,
/// so the entries of the first runs are never taken for history (when the
/// deliverer's first round set it, a run started just before that round
/// lost its first notifications).
pub async fn open_cursor(
    store: &dyn WebhookStore,
    log: &dyn RunLogStore,
) -> Result<i64, StoreError> {
    match store.webhook_cursor().await? {
        Some(seq) => Ok(seq),
        None => {
            let seq = log.last_run_log_seq().await?;
            store.set_webhook_cursor(seq).await?;
            Ok(seq)
        }
    }
}

/// The run log's end as seen at each round while no endpoint is
/// configured, oldest first (`settle` of them at most).
#[derive(Default)]
struct LogEnds(std::collections::VecDeque<(std::time::Instant, i64)>);

impl LogEnds {
    /// Where the cursor may move without reading an entry: the log's end
    /// as it was `settle` ago. Every entry at or below it had its `seq`,
    /// and so its time, before then: it is as settled as the rule in
    /// [`tick`] asks, and nothing lower can still commit.
    fn settled(&mut self, end: i64, settle: Duration) -> Option<i64> {
        let now = std::time::Instant::now();
        self.0.push_back((now, end));
        let mut to = None;
        while let Some(&(at, seq)) = self.0.front() {
            if now.duration_since(at) < settle {
                break;
            }
            to = Some(seq);
            self.0.pop_front();
        }
        to
    }
}

/// Records the deliveries the new entries make, then attempts the due ones.
async fn tick(
    stores: &DelivererStores,
    config: &WebhookConfig,
    client: &reqwest::Client,
    traced: bool,
    ends: &mut LogEnds,
) -> Result<(), StoreError> {
    const PAGE: u32 = 500;
    let (store, log, runs) = (
        stores.hooks.as_ref(),
        stores.log.as_ref(),
        stores.runs.as_ref(),
    );
    let endpoints = endpoints(store, config).await?;
    let mut cursor = open_cursor(store, log).await?;
    if endpoints.is_empty() {
        // Nothing to notify, so nothing to read: reading every entry of
        // the last `settle` (transcripts and all) twice a second was the
        // busiest reader of the run log while agents ran (issue 36).
        let end = log.last_run_log_seq().await?;
        if let Some(to) = ends.settled(end, config.settle).filter(|to| *to > cursor) {
            store.set_webhook_cursor(to).await?;
        }
        return Ok(());
    }
    ends.0.clear();
    let settled_before = chrono::Utc::now()
        - chrono::Duration::from_std(config.settle).unwrap_or(chrono::Duration::zero());
    // Read from the cursor; the cursor itself moves only past entries old
    // enough that no lower one can still commit.
    let mut settled = true;
    let was = cursor;
    let mut pages = Pages::after(cursor, PAGE, |after, n| log.run_log_since(after, n));
    while let Some(page) = pages.next().await {
        let page = page?;
        let now = chrono::Utc::now();
        let mut new = Vec::new();
        for entry in &page {
            for endpoint in &endpoints {
                if let Some((event, body)) = body_for(endpoint, entry, &config.board_url) {
                    new.push(NewDelivery {
                        id: uuid::Uuid::new_v4(),
                        endpoint: endpoint.url.to_string(),
                        seq: entry.seq,
                        event: event.as_str().to_string(),
                        plan_id: entry.plan_id,
                        run_id: entry.run_id,
                        body,
                        created_at: now,
                    });
                }
            }
        }
        store.enqueue_deliveries(&new).await?;
        for entry in &page {
            settled = settled && entry.at < settled_before;
            if settled {
                cursor = entry.seq;
            }
        }
        if cursor != was {
            store.set_webhook_cursor(cursor).await?;
        }
    }
    let now_ms = chrono::Utc::now().timestamp_millis();
    // Claimed for twice the attempt's timeout: a process that dies
    // mid-attempt leaves them due again soon after.
    let lease = now_ms + 2 * config.timeout.as_millis() as i64;
    let urls: Vec<String> = endpoints.iter().map(|e| e.url.to_string()).collect();
    let due = store.claim_deliveries(now_ms, lease, &urls, 50).await?;
    let endpoints = &endpoints;
    let attempts = due.into_iter().map(|d| async move {
        let endpoint = endpoints.iter().find(|e| e.url.as_str() == d.endpoint);
        let trace = match traced {
            false => None,
            true => {
                let parent = runs
                    .load_run(d.run_id)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|r| r.trace_parent);
                Some(crate::telemetry::run_traceparent(d.run_id, parent))
            }
        };
        let outcome = match endpoint {
            None => Err((None, "the endpoint is no longer configured".to_string())),
            Some(endpoint) => send(client, endpoint, &d, trace).await,
        };
        (d, outcome)
    });
    for (d, outcome) in futures_util::future::join_all(attempts).await {
        let attempts = d.attempts + 1;
        let now = chrono::Utc::now();
        let update = match outcome {
            Ok(status) => Attempt::Delivered { status, at: now },
            Err((status, error)) if attempts >= config.max_attempts => {
                Attempt::GaveUp { status, error }
            }
            Err((status, error)) => {
                let wait = config
                    .retry_base
                    .saturating_mul(2u32.saturating_pow(attempts - 1))
                    .min(Duration::from_secs(3600));
                Attempt::Retry {
                    status,
                    error,
                    next_at: now.timestamp_millis() + wait.as_millis() as i64,
                }
            }
        };
        store.record_attempt(d.id, attempts, update).await?;
    }
    Ok(())
}

/// One POST; `Ok(status)` for a 2xx, else the status (if any) and why.
async fn send(
    client: &reqwest::Client,
    endpoint: &Endpoint,
    d: &Delivery,
    trace: Option<run_model::TraceParent>,
) -> Result<u16, (Option<u16>, String)> {
    let mut request = client
        .post(endpoint.url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header("X-Planboard-Event", &d.event)
        .header("X-Planboard-Delivery", d.id.to_string())
        .body(d.body.clone());
    if let Some(trace) = trace {
        request = request.header("traceparent", trace.to_string());
    }
    if let Some(secret) = &endpoint.secret {
        let t = chrono::Utc::now().timestamp();
        request = request.header("X-Planboard-Signature", signature(secret, t, &d.body));
    }
    match request.send().await {
        Ok(response) if response.status().is_success() => Ok(response.status().as_u16()),
        Ok(response) => Err((
            Some(response.status().as_u16()),
            format!("the endpoint answered {}", response.status()),
        )),
        // Without the URL: its path may be a secret.
        Err(e) => Err((None, e.without_url().to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_no_endpoint_the_cursor_moves_to_the_log_end_seen_a_settle_ago() {
        let settle = Duration::from_millis(50);
        let mut ends = LogEnds::default();
        // Too fresh: the cursor stays.
        assert_eq!(ends.settled(5, settle), None);
        std::thread::sleep(Duration::from_millis(60));
        // The end seen 60 ms ago is settled, the one seen now is not.
        assert_eq!(ends.settled(9, settle), Some(5));
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(ends.settled(12, settle), Some(9));
        assert_eq!(ends.0.len(), 1, "only the unsettled end is kept");
    }
}
