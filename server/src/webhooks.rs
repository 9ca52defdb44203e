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
//! - [`WebhookConfig`] and [`Endpoint`]: where to send, from the
//!   environment (`PLANBOARD_WEBHOOK_URL`, `PLANBOARD_WEBHOOK_SECRET`,
//!   `PLANBOARD_WEBHOOK_FORMAT`, `PLANBOARD_PUBLIC_URL`).
//! - [`WebhookEvent`], [`event_of`]: which run-log entries notify.
//! - [`Payload`], [`signature`]: the JSON body and its HMAC-SHA256.
//! - [`spawn`]: the deliverer.
//!
//! # Verifying a delivery
//! `X-Planboard-Signature: t=<unix seconds>,v1=<hex>` where `<hex>` is
//! HMAC-SHA256, keyed with the secret, of `<t>.<body>` (the raw body
//! bytes). Recompute it, compare in constant time, and refuse a `t` more
//! than a few minutes old (a replay).

use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, Mac};
use plan_engine::{PlanId, Timestamp};
use run_model::{RecoveryDecision, RunEntry, RunId, RunState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::pages::Pages;
use crate::store::{NewDelivery, RunStore, StoreError, StoredRunEntry};

/// Defined with the store (whose rows hide their URLs with it too); used
/// here and by the API, the board and the config.
pub use crate::store::shown_url;

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

impl WebhookConfig {
    /// Adds a checked endpoint, unless its URL is configured or added
    /// already (the API and the board's settings form both call this).
    pub async fn add_endpoint(
        &self,
        store: &dyn RunStore,
        endpoint: &crate::store::StoredEndpoint,
    ) -> Result<(), EndpointError> {
        let configured = self
            .endpoints
            .iter()
            .any(|e| e.url.as_str() == endpoint.url);
        if configured || !store.add_webhook_endpoint(endpoint).await? {
            return Err(EndpointError::Taken(shown_url(&endpoint.url)));
        }
        Ok(())
    }

    /// Removes an added endpoint.
    pub async fn remove_endpoint(
        &self,
        store: &dyn RunStore,
        id: uuid::Uuid,
    ) -> Result<(), EndpointError> {
        match store.remove_webhook_endpoint(id).await? {
            true => Ok(()),
            false => Err(EndpointError::NotFound(id)),
        }
    }
}

/// What a notification is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebhookEvent {
    /// A plan waits for a person's approval before it runs.
    ApprovalNeeded,
    /// The agent asked a question and waits for the answer.
    QuestionAsked,
    /// A run ended done or cancelled (`state` says which).
    RunFinished,
    RunFailed,
    /// A run paused, or a subtask the planner gave up on waits for a person.
    RunStuck,
    /// A run's budget is used up; it paused.
    BudgetReached,
}

impl WebhookEvent {
    pub fn name(self) -> String {
        run_model::wire_name(&self)
    }
}

/// The notification a run-log entry makes, and its sentence; `None` for
/// the entries nobody is called for.
pub fn event_of(entry: &RunEntry) -> Option<(WebhookEvent, Option<RunState>, String)> {
    match entry {
        RunEntry::StateChanged { to, reason, .. } => {
            let event = match to {
                RunState::AwaitingApproval => WebhookEvent::ApprovalNeeded,
                RunState::Done | RunState::Cancelled => WebhookEvent::RunFinished,
                RunState::Failed => WebhookEvent::RunFailed,
                // A budget's pause is told once, as budget_reached.
                RunState::Paused if reason.starts_with("budget reached") => return None,
                RunState::Paused => WebhookEvent::RunStuck,
                _ => return None,
            };
            let text = if reason.is_empty() {
                format!("the run is {to}")
            } else {
                reason.clone()
            };
            Some((event, Some(*to), text))
        }
        RunEntry::Asked { subtask, question } => Some((
            WebhookEvent::QuestionAsked,
            None,
            format!("#{}: {question}", subtask.0),
        )),
        RunEntry::BudgetReached { what } => Some((WebhookEvent::BudgetReached, None, what.clone())),
        RunEntry::Recovery {
            subtask,
            decision: RecoveryDecision::GiveUp,
            reason,
            ..
        } => Some((
            WebhookEvent::RunStuck,
            None,
            format!("the planner gave up on #{}: {reason}", subtask.0),
        )),
        _ => None,
    }
}

/// The JSON body of a notification.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Payload {
    pub event: WebhookEvent,
    pub plan_id: Option<PlanId>,
    pub run_id: RunId,
    /// The run's state, when the event is a change of it.
    pub state: Option<RunState>,
    /// What happened, in a sentence (at most 1,000 characters).
    pub text: String,
    /// The plan on the board.
    pub link: Option<String>,
    pub at: Timestamp,
    /// The run log entry's seq: the same notification always has it.
    pub seq: i64,
}

/// The body one endpoint gets for `entry`, if any.
fn body_for(
    endpoint: &Endpoint,
    entry: &StoredRunEntry,
    board_url: &str,
) -> Option<(WebhookEvent, String)> {
    let read: RunEntry = serde_json::from_value(entry.entry.clone()).ok()?;
    let (event, state, text) = event_of(&read)?;
    let text: String = text.chars().take(1000).collect();
    let link = entry
        .plan_id
        .map(|id| format!("{}/plans/{id}", board_url.trim_end_matches('/')));
    let body = if endpoint.slack {
        let words = event.name().replace('_', " ");
        let link = link
            .map(|l| format!(" <{l}|open the plan>"))
            .unwrap_or_default();
        let text = slack_escaped(&text);
        serde_json::json!({ "text": format!("planboard · {words}: {text}{link}") }).to_string()
    } else {
        serde_json::to_string(&Payload {
            event,
            plan_id: entry.plan_id,
            run_id: entry.run_id,
            state,
            text,
            link,
            at: entry.at,
            seq: entry.seq,
        })
        .ok()?
    };
    Some((event, body))
}

/// Text for Slack's mrkdwn with `&`, `<` and `>` as Slack asks them
/// escaped: the words of a plan, a task or a model are shown as written,
/// so a title `<!channel>` pings nobody and `<https://evil|click>` links
/// nowhere. Only planboard's own link is written as Slack's `<url|label>`.
pub fn slack_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `X-Planboard-Signature`'s value for `body` sent at `t` (unix seconds).
pub fn signature(secret: &str, t: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length works");
    mac.update(format!("{t}.{body}").as_bytes());
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// Every endpoint: the configured one, then those admins added (read on
/// each round, so an endpoint added or removed counts at once).
async fn endpoints(
    store: &dyn RunStore,
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

/// Starts the deliverer. It runs with no endpoint too (an admin may add
/// one at any time); with none, it only keeps its cursor at the log's end.
/// With tracing on, each notification carries the `traceparent` of its
/// run's span, so a receiver's own spans join the run's trace.
pub fn spawn(store: Arc<dyn RunStore>, config: WebhookConfig, traced: bool) {
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
            if let Err(e) = tick(store.as_ref(), &config, &client, traced, &mut ends).await {
                tracing::warn!("webhooks: {e}");
            }
            // Once an hour (and at start), what is over and old goes.
            if purged_at.is_none_or(|at| at.elapsed() >= Duration::from_secs(3600)) {
                purged_at = Some(std::time::Instant::now());
                match purge(store.as_ref(), &config).await {
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
pub async fn purge(store: &dyn RunStore, config: &WebhookConfig) -> Result<u64, StoreError> {
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
pub async fn open_cursor(store: &dyn RunStore) -> Result<i64, StoreError> {
    match store.webhook_cursor().await? {
        Some(seq) => Ok(seq),
        None => {
            let seq = store.last_run_log_seq().await?;
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
    store: &dyn RunStore,
    config: &WebhookConfig,
    client: &reqwest::Client,
    traced: bool,
    ends: &mut LogEnds,
) -> Result<(), StoreError> {
    const PAGE: u32 = 500;
    let endpoints = endpoints(store, config).await?;
    let mut cursor = open_cursor(store).await?;
    if endpoints.is_empty() {
        // Nothing to notify, so nothing to read: reading every entry of
        // the last `settle` (transcripts and all) twice a second was the
        // busiest reader of the run log while agents ran (issue 36).
        let end = store.last_run_log_seq().await?;
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
    let mut pages = Pages::after(cursor, PAGE, |after, n| store.run_log_since(after, n));
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
                        event: event.name(),
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
                let parent = store
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
            Ok(status) => crate::store::Attempt::Delivered { status, at: now },
            Err((status, error)) if attempts >= config.max_attempts => {
                crate::store::Attempt::GaveUp { status, error }
            }
            Err((status, error)) => {
                let wait = config
                    .retry_base
                    .saturating_mul(2u32.saturating_pow(attempts - 1))
                    .min(Duration::from_secs(3600));
                crate::store::Attempt::Retry {
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
    d: &crate::store::Delivery,
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
    fn the_signature_is_an_hmac_of_the_time_and_the_body() {
        // RFC 4231-style check against an independent computation.
        let sig = signature("key", 1_700_000_000, "{}");
        let mut mac = Hmac::<Sha256>::new_from_slice(b"key").unwrap();
        mac.update(b"1700000000.{}");
        let expected = hex::encode(mac.finalize().into_bytes());
        assert_eq!(sig, format!("t=1700000000,v1={expected}"));
        assert_ne!(signature("other", 1_700_000_000, "{}"), sig);
    }

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

    #[test]
    fn only_the_entries_people_are_called_for_notify() {
        let changed = |to, reason: &str| RunEntry::StateChanged {
            from: None,
            to,
            reason: reason.into(),
        };
        let event = |e: &RunEntry| event_of(e).map(|(event, _, _)| event);
        assert_eq!(
            event(&changed(RunState::AwaitingApproval, "")),
            Some(WebhookEvent::ApprovalNeeded)
        );
        assert_eq!(
            event(&changed(RunState::Done, "")),
            Some(WebhookEvent::RunFinished)
        );
        assert_eq!(
            event(&changed(RunState::Failed, "x")),
            Some(WebhookEvent::RunFailed)
        );
        assert_eq!(
            event(&changed(RunState::Paused, "paused by ada")),
            Some(WebhookEvent::RunStuck)
        );
        assert_eq!(
            event(&changed(RunState::Paused, "budget reached: the run …")),
            None
        );
        assert_eq!(event(&changed(RunState::Running, "")), None);
        assert_eq!(
            event(&RunEntry::BudgetReached { what: "x".into() }),
            Some(WebhookEvent::BudgetReached)
        );
    }

    #[test]
    fn a_slack_endpoint_gets_one_line_of_text_with_the_link() {
        let plan = uuid::Uuid::new_v4();
        let entry = StoredRunEntry {
            seq: 7,
            run_id: uuid::Uuid::new_v4(),
            plan_id: Some(plan),
            kind: run_model::EntryKind::Asked,
            at: chrono::Utc::now(),
            entry: serde_json::to_value(RunEntry::Asked {
                subtask: plan_engine::SubtaskId(2),
                question: "Which region?".into(),
            })
            .unwrap(),
        };
        let mut endpoint = Endpoint {
            url: "https://hooks.slack.com/services/x".parse().unwrap(),
            secret: None,
            slack: true,
        };
        let (event, body) = body_for(&endpoint, &entry, "https://board.example/").unwrap();
        assert_eq!(event, WebhookEvent::QuestionAsked);
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"text": format!(
                "planboard · question asked: #2: Which region? <https://board.example/plans/{plan}|open the plan>"
            )})
        );
        endpoint.slack = false;
        let (_, body) = body_for(&endpoint, &entry, "https://board.example").unwrap();
        let payload: Payload = serde_json::from_str(&body).unwrap();
        assert_eq!(payload.seq, 7);
        assert_eq!(payload.text, "#2: Which region?");
    }

    #[test]
    fn a_slack_message_shows_what_a_plan_or_model_wrote_and_never_pings_or_links() {
        let plan = uuid::Uuid::new_v4();
        let entry = StoredRunEntry {
            seq: 8,
            run_id: uuid::Uuid::new_v4(),
            plan_id: Some(plan),
            kind: run_model::EntryKind::Asked,
            at: chrono::Utc::now(),
            entry: serde_json::to_value(RunEntry::Asked {
                subtask: plan_engine::SubtaskId(3),
                question: "<!channel> see <https://evil.example|click> & <@U123>".into(),
            })
            .unwrap(),
        };
        let endpoint = Endpoint {
            url: "https://hooks.slack.com/services/x".parse().unwrap(),
            secret: None,
            slack: true,
        };
        let (_, body) = body_for(&endpoint, &entry, "https://board.example").unwrap();
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body["text"],
            format!(
                "planboard · question asked: #3: &lt;!channel&gt; see \
                 &lt;https://evil.example|click&gt; &amp; &lt;@U123&gt; \
                 <https://board.example/plans/{plan}|open the plan>"
            )
        );
        // The JSON payload carries the text as written: it is not mrkdwn.
        let endpoint = Endpoint {
            slack: false,
            ..endpoint
        };
        let (_, body) = body_for(&endpoint, &entry, "https://board.example").unwrap();
        let payload: Payload = serde_json::from_str(&body).unwrap();
        assert!(
            payload.text.starts_with("#3: <!channel>"),
            "{}",
            payload.text
        );
    }

    #[test]
    fn an_endpoint_never_shows_its_path_or_secret() {
        let e = Endpoint {
            url: "https://hooks.slack.com/services/T0/B0/secretpath"
                .parse()
                .unwrap(),
            secret: Some("whsec".into()),
            slack: true,
        };
        let shown = format!("{e:?}");
        assert!(
            !shown.contains("secretpath") && !shown.contains("whsec"),
            "{shown}"
        );
        assert!(shown.contains("https://hooks.slack.com/…"), "{shown}");
    }
}
