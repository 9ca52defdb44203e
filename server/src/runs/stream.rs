//! A run's log as server-sent events.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use run_model::StreamEvent;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use crate::live::{row_event, Hub, PAGE};
use crate::store::StoredRunEntry;

/// What a run's followers hear live.
#[derive(Clone, Debug)]
pub enum RunNews {
    /// A run-log entry, just stored.
    Entry(Arc<StoredRunEntry>),
    /// A piece of a reply being written (never stored).
    Delta(Arc<LiveDelta>),
}

impl RunNews {
    pub fn plan_id(&self) -> Option<plan_engine::PlanId> {
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
                .event(StreamEvent::Run.name())
                .data(serde_json::to_string(&**e).unwrap_or_default()),
            RunNews::Delta(d) => delta_event(d),
        }
    }
}

/// A piece of a reply as the streams send it: `event: delta`, no id.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LiveDelta {
    pub run_id: agent::RunId,
    pub plan_id: Option<plan_engine::PlanId>,
    #[serde(flatten)]
    pub delta: agent::run::ReplyDelta,
}

fn delta_event(delta: &LiveDelta) -> SseEvent {
    SseEvent::default()
        .event(StreamEvent::Delta.name())
        .data(serde_json::to_string(delta).unwrap_or_default())
}

/// A run's log as SSE: the entries after `after` from the store, then live
/// ones, each with its seq as the SSE id. A subscriber that falls behind
/// reads the missed entries from the store (the log is durable), so
/// nothing is skipped. The stream ends with `shutdown` when the server stops.
pub fn run_stream(
    hub: Arc<Hub>,
    runs: Arc<super::Runs>,
    run: agent::RunId,
    after: i64,
    keep_alive: Duration,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let (tx, rx) = mpsc::channel::<SseEvent>(64);
    tokio::spawn(async move {
        tokio::select! {
            () = follow_run(&runs, run, after, &tx) => {}
            () = hub.closing() => {
                let bye = SseEvent::default()
                    .event(StreamEvent::Shutdown.name())
                    .data(r#"{"reason":"the server is shutting down; reconnect to resume"}"#);
                let _ = tx.send(bye).await;
            }
        }
    });
    Sse::new(futures_util::StreamExt::map(ReceiverStream::new(rx), Ok))
        .keep_alive(KeepAlive::new().interval(keep_alive))
}

async fn follow_run(
    runs: &super::Runs,
    run: agent::RunId,
    after: i64,
    tx: &mpsc::Sender<SseEvent>,
) {
    let mut live = runs.subscribe();
    let mut last = after;
    let store = runs.store();
    // Catch up from the store; again whenever the broadcast lost entries.
    let mut catch_up = true;
    loop {
        while catch_up {
            let rows = match store.run_log(run, last, PAGE).await {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::error!("reading a run log for a stream failed: {e}");
                    return;
                }
            };
            catch_up = rows.len() == PAGE as usize;
            for row in rows {
                last = row.seq;
                let json = serde_json::to_string(&row).unwrap_or_default();
                if tx.send(row_event(row.seq, json)).await.is_err() {
                    return;
                }
            }
        }
        let received = tokio::select! {
            received = live.recv() => received,
            () = tx.closed() => return,
        };
        match received {
            Ok(RunNews::Delta(delta)) => {
                if delta.run_id == run && tx.send(delta_event(&delta)).await.is_err() {
                    return;
                }
            }
            Ok(RunNews::Entry(row)) => {
                if row.run_id != run || row.seq <= last {
                    continue;
                }
                last = row.seq;
                let json = serde_json::to_string(&*row).unwrap_or_default();
                if tx.send(row_event(row.seq, json)).await.is_err() {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Lagged(_)) => catch_up = true,
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
