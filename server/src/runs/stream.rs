//! A run's log as server-sent events, on the live module's follower (the
//! plan streams' too): the same spawn, shutdown and paging.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event as SseEvent, Sse};
use futures_util::Stream;
use tokio::sync::{broadcast, mpsc};

use crate::live::{delta_event, follower, row_event, send_pages, Hub, RunNews};

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
    follower(hub, keep_alive, move |tx| async move {
        follow_run(&runs, run, after, &tx).await
    })
}

async fn follow_run(
    runs: &super::Runs,
    run: agent::RunId,
    after: i64,
    tx: &mpsc::Sender<SseEvent>,
) {
    let mut live = runs.subscribe();
    let mut last = after;
    let log = runs.log();
    // Catch up from the store; again whenever the broadcast lost entries.
    let mut catch_up = true;
    loop {
        if catch_up && !send_pages(&mut last, tx, |after, n| log.run_log(run, after, n)).await {
            return;
        }
        catch_up = false;
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
                if tx.send(row_event(row.seq, row.json())).await.is_err() {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Lagged(_)) => catch_up = true,
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
