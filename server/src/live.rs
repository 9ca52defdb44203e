//! Live events: one broadcast of the event log, in log order, per process.
//!
//! Nothing is published from the write path directly. A commit only wakes
//! the log reader (and, on PostgreSQL, NOTIFY wakes the readers of other
//! processes); the reader reads the log after the last row it published and
//! broadcasts each row once. So every process publishes the same rows in the
//! same order, whichever process wrote them, and a subscriber can resume from
//! any `seq` by reading the log and then following the broadcast.

use std::convert::Infallible;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use plan_engine::PlanId;
use run_model::StreamEvent;
use tokio::sync::{broadcast, mpsc, watch, Notify};
use tokio_stream::wrappers::ReceiverStream;

use crate::pages::{Pages, Sequenced};
use crate::store::StoredRunEntry;
use crate::store::{PlanStore, StoredEvent};

/// How many rows a slow subscriber may fall behind before it gets `resync`.
const BACKLOG: usize = 4096;
/// Rows read from the log per query when catching up.
pub(crate) const PAGE: u32 = 500;

/// The next news of `plan`'s run; pending forever without runs.
async fn next_run_news(runs: &mut Option<RunEntries>, plan: Option<PlanId>) -> RunNews {
    loop {
        let Some(receiver) = runs.as_mut() else {
            return std::future::pending().await;
        };
        match receiver.recv().await {
            Ok(news) if plan.is_some() && news.plan_id() == plan => return news,
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => *runs = None,
        }
    }
}

/// A log row as published: its JSON is rendered once for every subscriber.
pub struct Published {
    pub seq: i64,
    pub plan_id: PlanId,
    pub json: String,
}

pub struct Hub {
    sender: broadcast::Sender<Arc<Published>>,
    /// The seq of the last row broadcast by this process.
    last: AtomicI64,
    wake: Notify,
    /// Set once when the server shuts down: every stream ends with a
    /// `shutdown` event, so its client reconnects (to another replica).
    closing: watch::Sender<bool>,
}

impl Hub {
    pub fn new(last_seq: i64) -> Hub {
        Hub::with_backlog(last_seq, BACKLOG)
    }

    fn with_backlog(last_seq: i64, backlog: usize) -> Hub {
        Hub {
            sender: broadcast::channel(backlog).0,
            last: AtomicI64::new(last_seq),
            wake: Notify::new(),
            closing: watch::channel(false).0,
        }
    }

    /// Ends every stream, now and from now on, with a `shutdown` event.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Resolves once the server begins to shut down.
    pub async fn closing(&self) {
        let mut closing = self.closing.subscribe();
        let _ = closing.wait_for(|closed| *closed).await;
    }

    /// Asks the log reader to publish what was just committed.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    pub fn last_seq(&self) -> i64 {
        self.last.load(Ordering::Acquire)
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Published>> {
        self.sender.subscribe()
    }

    pub fn subscribers(&self) -> usize {
        self.sender.receiver_count()
    }

    /// Waits for a local commit, another process's NOTIFY or (as a safety
    /// net for dropped notifications) a second.
    pub async fn wait(&self, remote: Option<&mut mpsc::Receiver<()>>) {
        match remote {
            Some(rx) => {
                tokio::select! {
                    _ = self.wake.notified() => {}
                    _ = rx.recv() => {}
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
            None => self.wake.notified().await,
        }
    }

    /// Reads the log after the last published row (without publishing it).
    pub async fn read_new(&self, store: &dyn PlanStore) -> Vec<StoredEvent> {
        let mut all: Vec<StoredEvent> = Vec::new();
        let mut pages = Pages::after(self.last_seq(), PAGE, |after, n| {
            store.events(None, after, n)
        });
        while let Some(rows) = pages.next().await {
            match rows {
                Ok(rows) => all.extend(rows),
                Err(e) => {
                    tracing::error!("reading the event log failed: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
        all
    }

    /// Broadcasts rows read by [`Hub::read_new`], in order.
    pub fn publish(&self, rows: &[StoredEvent]) {
        for row in rows {
            let json = serde_json::to_string(row).unwrap_or_default();
            self.last.store(row.seq, Ordering::Release);
            // No subscribers is not an error.
            let _ = self.sender.send(Arc::new(Published {
                seq: row.seq,
                plan_id: row.plan_id,
                json,
            }));
        }
    }
}

/// The SSE response for one subscriber: the log after `after` (or, with
/// none, a `ready` event carrying the current seq), then live rows, with no
/// row missed or sent twice. `plan` limits it to one plan.
pub fn stream(
    hub: Arc<Hub>,
    store: Arc<dyn PlanStore>,
    plan: Option<PlanId>,
    after: Option<i64>,
    keep_alive: Duration,
    runs: Option<RunEntries>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let followed = hub.clone();
    follower(hub, keep_alive, move |tx| async move {
        follow(&followed, store, plan, after, &tx, runs).await
    })
}

/// One subscriber's SSE response, for plan and run streams alike: `follow`
/// runs on its own task and sends the events; once the server begins to
/// shut down, the stream ends with a `shutdown` event instead, so the
/// client reconnects (to another replica).
pub fn follower<F, Fut>(
    hub: Arc<Hub>,
    keep_alive: Duration,
    follow: F,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>>
where
    F: FnOnce(mpsc::Sender<SseEvent>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<SseEvent>(64);
    let bye = tx.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = follow(tx) => {}
            () = hub.closing() => {
                let event = SseEvent::default()
                    .event(StreamEvent::Shutdown.as_str())
                    .data(r#"{"reason":"the server is shutting down; reconnect to resume"}"#);
                let _ = bye.send(event).await;
            }
        }
    });
    Sse::new(futures_util::StreamExt::map(ReceiverStream::new(rx), Ok))
        .keep_alive(KeepAlive::new().interval(keep_alive))
}

/// Sends a log's rows after `*last` as events, page by page, moving
/// `*last` along; false when the subscriber went away or the log could not
/// be read (the stream then ends, and its client reconnects).
pub async fn send_pages<T, E, F, Fut>(last: &mut i64, tx: &mpsc::Sender<SseEvent>, read: F) -> bool
where
    T: Sequenced + serde::Serialize,
    E: std::fmt::Display,
    F: FnMut(i64, u32) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<T>, E>>,
{
    let mut pages = Pages::after(*last, PAGE, read);
    while let Some(rows) = pages.next().await {
        let rows = match rows {
            Ok(rows) => rows,
            Err(e) => {
                tracing::error!("reading a log for a stream failed: {e}");
                return false;
            }
        };
        for row in rows {
            *last = row.seq();
            let json = serde_json::to_string(&row).unwrap_or_default();
            if tx.send(row_event(row.seq(), &json)).await.is_err() {
                return false;
            }
        }
    }
    true
}

pub(crate) fn row_event(seq: i64, json: &str) -> SseEvent {
    SseEvent::default().id(seq.to_string()).data(json)
}

/// The run log's broadcast, for a plan's stream to carry its run's entries.
pub type RunEntries = broadcast::Receiver<RunNews>;

/// A run-log entry as broadcast: its JSON is rendered once, by the first
/// stream that sends it, and shared by every other (not at all when
/// nobody follows). Reads as the stored entry.
#[derive(Debug)]
pub struct LiveEntry {
    stored: StoredRunEntry,
    json: std::sync::OnceLock<String>,
}

impl LiveEntry {
    pub fn new(stored: StoredRunEntry) -> LiveEntry {
        LiveEntry {
            stored,
            json: std::sync::OnceLock::new(),
        }
    }

    /// The entry as the streams send it (as in /api/runs/{id}/events).
    pub fn json(&self) -> &str {
        self.json
            .get_or_init(|| serde_json::to_string(&self.stored).unwrap_or_default())
    }
}

impl std::ops::Deref for LiveEntry {
    type Target = StoredRunEntry;

    fn deref(&self) -> &StoredRunEntry {
        &self.stored
    }
}

/// What a run's followers hear live.
#[derive(Clone, Debug)]
pub enum RunNews {
    /// A run-log entry, just stored.
    Entry(Arc<LiveEntry>),
    /// A piece of a reply being written (never stored).
    Delta(Arc<LiveDelta>),
}

impl RunNews {
    pub fn plan_id(&self) -> Option<PlanId> {
        match self {
            RunNews::Entry(e) => e.plan_id,
            RunNews::Delta(d) => d.plan_id,
        }
    }

    /// The SSE event for a plan's stream: `run` or `delta`, without an id
    /// (the id stays the plan log's, for Last-Event-ID).
    pub fn plan_event(&self) -> SseEvent {
        match self {
            RunNews::Entry(e) => SseEvent::default()
                .event(StreamEvent::Run.as_str())
                .data(e.json()),
            RunNews::Delta(d) => delta_event(d),
        }
    }
}

/// A piece of a reply as the streams send it: `event: delta`, no id.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LiveDelta {
    pub run_id: agent::RunId,
    pub plan_id: Option<PlanId>,
    #[serde(flatten)]
    pub delta: agent::run::ReplyDelta,
}

pub fn delta_event(delta: &LiveDelta) -> SseEvent {
    SseEvent::default()
        .event(StreamEvent::Delta.as_str())
        .data(serde_json::to_string(delta).unwrap_or_default())
}

async fn follow(
    hub: &Hub,
    store: Arc<dyn PlanStore>,
    plan: Option<PlanId>,
    after: Option<i64>,
    tx: &mpsc::Sender<SseEvent>,
    mut runs: Option<RunEntries>,
) {
    // Subscribe before reading the log: a row committed meanwhile is then
    // either in the log read or in the broadcast (or both, and skipped once).
    let mut live = hub.subscribe();
    let mut last = match after {
        None => {
            let seq = hub.last_seq();
            let ready = SseEvent::default()
                .event(StreamEvent::Ready.as_str())
                .id(seq.to_string())
                .data(format!("{{\"seq\":{seq}}}"));
            if tx.send(ready).await.is_err() {
                return;
            }
            seq
        }
        Some(after) => after,
    };
    if after.is_some() && !send_pages(&mut last, tx, |after, n| store.events(plan, after, n)).await
    {
        return;
    }
    loop {
        // A client that went away on a quiet plan would otherwise keep this
        // task and its broadcast receiver until the plan's next event.
        // The plan's run entries go out as `run` events, the pieces of a
        // reply being written as `delta` events, both without an id: the
        // id stays the plan log's, for Last-Event-ID; a client catches up
        // on a run from /api/runs/{id}/events.
        let received = tokio::select! {
            received = live.recv() => received,
            news = next_run_news(&mut runs, plan) => {
                if tx.send(news.plan_event()).await.is_err() {
                    return;
                }
                continue;
            }
            () = tx.closed() => return,
        };
        match received {
            Ok(row) => {
                if row.seq <= last || plan.is_some_and(|p| p != row.plan_id) {
                    continue;
                }
                last = row.seq;
                if tx.send(row_event(row.seq, &row.json)).await.is_err() {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                // Too far behind to be served from memory: say so rather than
                // skip rows silently. The client reloads, then follows from here.
                let seq = hub.last_seq();
                last = seq;
                let resync = SseEvent::default()
                    .event(StreamEvent::Resync.as_str())
                    .id(seq.to_string())
                    .data(format!("{{\"seq\":{seq},\"missed\":{missed}}}"));
                if tx.send(resync).await.is_err() {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::IntoResponse;
    use eventsource_stream::{Event, Eventsource};
    use futures_util::stream::BoxStream;
    use futures_util::StreamExt;

    type Events =
        BoxStream<'static, Result<Event, eventsource_stream::EventStreamError<axum::Error>>>;

    fn row(seq: i64, plan_id: PlanId) -> StoredEvent {
        StoredEvent {
            seq,
            plan_id,
            version: 1,
            actor: "t".into(),
            kind: "comment_added".into(),
            at: plan_engine::Timestamp::default(),
            event: serde_json::Value::Null,
        }
    }

    async fn memory_store() -> Arc<dyn PlanStore> {
        Arc::new(
            crate::store::SqlStore::connect("sqlite::memory:")
                .await
                .unwrap(),
        )
    }

    /// The SSE events of one subscriber, parsed by `eventsource-stream`.
    fn events(hub: Arc<Hub>, store: Arc<dyn PlanStore>, after: Option<i64>) -> Events {
        let response =
            stream(hub, store, None, after, Duration::from_secs(60), None).into_response();
        response
            .into_body()
            .into_data_stream()
            .eventsource()
            .boxed()
    }

    async fn next(events: &mut Events) -> Option<Event> {
        tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("the stream went quiet")
            .map(|e| e.expect("a well-formed event"))
    }

    /// Reads events until one named `name`; returns all read, that one last.
    async fn read_until(events: &mut Events, name: &str) -> Vec<Event> {
        let mut read = Vec::new();
        loop {
            let event = next(events).await.expect("the stream ended");
            let done = event.event == name;
            read.push(event);
            if done {
                return read;
            }
        }
    }

    #[test]
    fn a_run_entry_is_rendered_once_for_every_stream_that_sends_it() {
        let entry = agent::RunEntry::PeopleChanged {
            summary: "a line".into(),
        };
        let news = RunNews::Entry(Arc::new(LiveEntry::new(StoredRunEntry {
            seq: 7,
            run_id: uuid::Uuid::from_u128(1),
            plan_id: Some(uuid::Uuid::from_u128(2)),
            kind: entry.kind(),
            at: plan_engine::Timestamp::default(),
            entry: serde_json::to_value(&entry).unwrap(),
        })));
        // What two subscribers' streams hold: clones of one broadcast.
        let (RunNews::Entry(one), RunNews::Entry(two)) = (news.clone(), news.clone()) else {
            unreachable!("an entry");
        };
        assert!(
            std::ptr::eq(one.json(), two.json()),
            "the second stream reuses the first one's rendering"
        );
        assert_eq!(one.json(), serde_json::to_string(&**one).unwrap());
    }

    #[tokio::test]
    async fn a_subscriber_that_falls_behind_gets_resync_and_then_follows_again() {
        let hub = Arc::new(Hub::with_backlog(0, 8));
        let plan = uuid::Uuid::from_u128(1);
        let mut events = events(hub.clone(), memory_store().await, None);
        read_until(&mut events, "ready").await;

        // Nobody reads while 500 rows go out one by one, each given time to
        // reach the stream: the stream's own queue (64) fills first, then
        // the broadcast (8) overflows.
        for seq in 1..=500 {
            hub.publish(&[row(seq, plan)]);
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
        }
        let read = read_until(&mut events, "resync").await;
        let resync = read.last().unwrap();
        assert_eq!(resync.id, "500");
        assert!(resync.data.contains("\"missed\":"), "{resync:?}");
        let delivered = read.len() - 1;
        assert!(
            (64..500).contains(&delivered),
            "{delivered} rows came before resync: the queue should have filled (64) and \
             the subscriber fallen behind"
        );
        let seqs: Vec<i64> = read[..delivered]
            .iter()
            .map(|e| e.id.parse().unwrap())
            .collect();
        assert_eq!(
            seqs,
            (1..=delivered as i64).collect::<Vec<_>>(),
            "in order, none skipped before resync"
        );

        hub.publish(&[row(501, plan)]);
        assert_eq!(next(&mut events).await.unwrap().id, "501");
    }

    #[tokio::test]
    async fn closing_the_hub_ends_every_stream_with_a_shutdown_event() {
        let store = memory_store().await;
        let hub = Arc::new(Hub::new(0));
        let mut open = events(hub.clone(), store.clone(), None);
        read_until(&mut open, "ready").await;
        hub.close();
        let bye = read_until(&mut open, "shutdown").await.pop().unwrap();
        assert!(bye.data.contains("reconnect"), "{bye:?}");
        assert!(
            next(&mut open).await.is_none(),
            "the stream ends after shutdown"
        );
        // A stream opened after the close ends at once, the same way.
        let mut late = events(hub, store, Some(0));
        read_until(&mut late, "shutdown").await;
        assert!(next(&mut late).await.is_none());
    }
}
