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
use tokio::sync::{broadcast, mpsc, Notify};
use tokio_stream::wrappers::ReceiverStream;

use crate::store::{PlanStore, StoredEvent};

/// How many rows a slow subscriber may fall behind before it gets `resync`.
const BACKLOG: usize = 4096;
/// Rows read from the log per query when catching up.
const PAGE: u32 = 500;

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
        }
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
        loop {
            let after = all.last().map_or_else(|| self.last_seq(), |r| r.seq);
            let rows = match store.events(None, after, PAGE).await {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::error!("reading the event log failed: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    return all;
                }
            };
            let full = rows.len() == PAGE as usize;
            all.extend(rows);
            if !full {
                return all;
            }
        }
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
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let (tx, rx) = mpsc::channel::<SseEvent>(64);
    tokio::spawn(pump(hub, store, plan, after, tx));
    Sse::new(futures_util::StreamExt::map(ReceiverStream::new(rx), Ok))
        .keep_alive(KeepAlive::new().interval(keep_alive))
}

fn row_event(seq: i64, json: String) -> SseEvent {
    SseEvent::default().id(seq.to_string()).data(json)
}

async fn pump(
    hub: Arc<Hub>,
    store: Arc<dyn PlanStore>,
    plan: Option<PlanId>,
    after: Option<i64>,
    tx: mpsc::Sender<SseEvent>,
) {
    // Subscribe before reading the log: a row committed meanwhile is then
    // either in the log read or in the broadcast (or both, and skipped once).
    let mut live = hub.subscribe();
    let mut last = match after {
        None => {
            let seq = hub.last_seq();
            let ready = SseEvent::default()
                .event("ready")
                .id(seq.to_string())
                .data(format!("{{\"seq\":{seq}}}"));
            if tx.send(ready).await.is_err() {
                return;
            }
            seq
        }
        Some(after) => after,
    };
    if after.is_some() {
        loop {
            let rows = match store.events(plan, last, PAGE).await {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::error!("reading the event log for a stream failed: {e}");
                    return;
                }
            };
            let done = rows.len() < PAGE as usize;
            for row in rows {
                last = row.seq;
                let json = serde_json::to_string(&row).unwrap_or_default();
                if tx.send(row_event(row.seq, json)).await.is_err() {
                    return;
                }
            }
            if done {
                break;
            }
        }
    }
    loop {
        match live.recv().await {
            Ok(row) => {
                if row.seq <= last || plan.is_some_and(|p| p != row.plan_id) {
                    continue;
                }
                last = row.seq;
                if tx.send(row_event(row.seq, row.json.clone())).await.is_err() {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                // Too far behind to be served from memory: say so rather than
                // skip rows silently. The client reloads, then follows from here.
                let seq = hub.last_seq();
                last = seq;
                let resync = SseEvent::default()
                    .event("resync")
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
    use futures_util::StreamExt;

    fn row(seq: i64, plan_id: PlanId) -> StoredEvent {
        StoredEvent {
            seq,
            plan_id,
            version: 1,
            actor: "t".into(),
            kind: "comment_added".into(),
            at: "2026-01-01T00:00:00Z".into(),
            event: serde_json::Value::Null,
        }
    }

    /// Reads SSE blocks (`event:`, `id:`, `data:` lines) until `until` matches one.
    async fn read_until(
        body: &mut (impl futures_util::Stream<Item = Result<bytes::Bytes, axum::Error>> + Unpin),
        buffer: &mut String,
        until: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        let mut blocks = Vec::new();
        loop {
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let done = until(&block);
                blocks.push(block);
                if done {
                    return blocks;
                }
            }
            let chunk = tokio::time::timeout(Duration::from_secs(5), body.next())
                .await
                .expect("the stream went quiet")
                .expect("the stream ended")
                .expect("the stream failed");
            buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    #[tokio::test]
    async fn a_subscriber_that_falls_behind_gets_resync_and_then_follows_again() {
        let store: Arc<dyn PlanStore> = Arc::new(
            crate::store::SqlStore::connect("sqlite::memory:")
                .await
                .unwrap(),
        );
        let hub = Arc::new(Hub::with_backlog(0, 8));
        let plan = uuid::Uuid::from_u128(1);
        let response =
            stream(hub.clone(), store, None, None, Duration::from_secs(60)).into_response();
        let mut body = response.into_body().into_data_stream();
        let mut buffer = String::new();
        read_until(&mut body, &mut buffer, |b| b.contains("event: ready")).await;

        // Nobody reads while 500 rows go out: the stream's own queue (64)
        // fills, the broadcast (8) overflows.
        let rows: Vec<StoredEvent> = (1..=500).map(|seq| row(seq, plan)).collect();
        hub.publish(&rows);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let blocks = read_until(&mut body, &mut buffer, |b| b.contains("event: resync")).await;
        let resync = blocks.last().unwrap();
        assert!(resync.contains("id: 500"), "{resync}");
        assert!(resync.contains("\"missed\":"), "{resync}");
        let delivered = blocks.len() - 1;
        assert!(
            delivered < 500,
            "{delivered} rows came before resync: the subscriber never fell behind"
        );
        let seqs: Vec<i64> = blocks[..delivered]
            .iter()
            .filter_map(|b| b.lines().find_map(|l| l.strip_prefix("id: ")))
            .map(|id| id.parse().unwrap())
            .collect();
        assert_eq!(
            seqs,
            (1..=delivered as i64).collect::<Vec<_>>(),
            "in order, none skipped before resync"
        );

        hub.publish(&[row(501, plan)]);
        let next = read_until(&mut body, &mut buffer, |b| b.contains("id: ")).await;
        assert!(next.last().unwrap().contains("id: 501"), "{next:?}");
    }
}
