//! The run log's writer. The agent hands an entry over and goes on; one
//! task writes whatever queued meanwhile in one statement, then streams
//! the stored entries in order. So a step of the agent waits for no
//! run-log write (two round trips to the database per subtask before),
//! and many runs' entries share statements.
//!
//! The price: a crash can lose the entries of the last moments, never a
//! plan event (those commit before the agent goes on). Saving a run's row
//! first waits for the entries queued before it ([`LogQueue::flush`]), so
//! a run read as done has its whole log.
//!
//! Who streams an entry depends on who else may write the log. On SQLite
//! one process owns the file, so the writer streams what it stored. On
//! PostgreSQL other replicas drive other runs, so no entry is streamed
//! from the write path: every process reads the log after the last entry
//! it streamed ([`read_shared_log`], woken by NOTIFY or by its own writer)
//! and streams what it finds, whoever wrote it, in log order.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot, Notify};

use super::{NewRunEntry, RunLogStore};
use crate::live::{LiveEntry, RunNews};

/// Entries queued at most; a full queue makes the agent wait (back
/// pressure when the database falls behind).
const QUEUE: usize = 8192;
/// Entries written per statement at most.
const BATCH: usize = 500;

enum Job {
    Append(NewRunEntry),
    Flush(oneshot::Sender<()>),
}

/// How the entries a writer stored reach the streams.
pub enum Streaming {
    /// The writer streams them itself (the store has one process).
    Direct,
    /// The writer only wakes this process's reader of the shared log.
    Shared(Arc<Notify>),
}

/// The sending side; the writer ends when every queue is dropped.
#[derive(Clone)]
pub struct LogQueue(mpsc::Sender<Job>);

impl LogQueue {
    /// Starts the writer (on the current tokio runtime).
    pub fn spawn(
        store: Arc<dyn RunLogStore>,
        news: broadcast::Sender<RunNews>,
        streaming: Streaming,
    ) -> LogQueue {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(write(rx, store, news, streaming));
        LogQueue(tx)
    }

    pub async fn append(&self, entry: NewRunEntry) {
        if self.0.send(Job::Append(entry)).await.is_err() {
            tracing::warn!("the run-log writer has stopped; an entry was dropped");
        }
    }

    /// Returns once every entry queued before this call is written (or
    /// failed to be).
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.0.send(Job::Flush(done)).await.is_ok() {
            let _ = wait.await;
        }
    }
}

async fn write(
    mut jobs: mpsc::Receiver<Job>,
    store: Arc<dyn RunLogStore>,
    news: broadcast::Sender<RunNews>,
    streaming: Streaming,
) {
    while let Some(first) = jobs.recv().await {
        let mut rows = Vec::new();
        let mut waiting = Vec::new();
        let mut next = Some(first);
        while let Some(job) = next {
            match job {
                Job::Append(row) => rows.push(row),
                Job::Flush(done) => waiting.push(done),
            }
            next = if rows.len() < BATCH {
                jobs.try_recv().ok()
            } else {
                None
            };
        }
        if !rows.is_empty() {
            match (store.append_run_log(&rows).await, &streaming) {
                (Ok(stored), Streaming::Direct) => {
                    for entry in stored {
                        let _ = news.send(RunNews::Entry(Arc::new(LiveEntry::new(entry))));
                    }
                }
                (Ok(_), Streaming::Shared(reader)) => reader.notify_one(),
                (Err(e), _) => {
                    tracing::warn!("could not write {} run-log entries: {e}", rows.len())
                }
            }
        }
        for done in waiting {
            let _ = done.send(());
        }
    }
}

/// Streams the shared log's new entries, whoever wrote them: woken by this
/// process's writer, another process's NOTIFY or, as a safety net for a
/// dropped notification, a second. `after` is the newest entry when the
/// process started. Ends when the run streams' channel is gone.
pub async fn read_shared_log(
    store: Arc<dyn RunLogStore>,
    news: broadcast::WeakSender<RunNews>,
    local: Arc<Notify>,
    mut remote: mpsc::Receiver<()>,
    mut after: i64,
) {
    let mut listening = true;
    loop {
        if news.upgrade().is_none() {
            return;
        }
        tokio::select! {
            () = local.notified() => {}
            woken = remote.recv(), if listening => listening = woken.is_some(),
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        loop {
            let rows = match store.run_log_since(after, BATCH as u32).await {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::error!("reading the run log failed: {e}");
                    break;
                }
            };
            let Some(news) = news.upgrade() else { return };
            let full = rows.len() == BATCH;
            for entry in rows {
                after = entry.seq;
                let _ = news.send(RunNews::Entry(Arc::new(LiveEntry::new(entry))));
            }
            if !full {
                break;
            }
        }
    }
}
