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

use std::sync::Arc;

use tokio::sync::{broadcast, mpsc, oneshot};

use super::stream::RunNews;
use crate::store::{NewRunEntry, RunStore};

/// Entries queued at most; a full queue makes the agent wait (back
/// pressure when the database falls behind).
const QUEUE: usize = 8192;
/// Entries written per statement at most.
const BATCH: usize = 500;

enum Job {
    Append(NewRunEntry),
    Flush(oneshot::Sender<()>),
}

/// The sending side; the writer ends when every queue is dropped.
#[derive(Clone)]
pub struct LogQueue(mpsc::Sender<Job>);

impl LogQueue {
    /// Starts the writer (on the current tokio runtime).
    pub fn spawn(store: Arc<dyn RunStore>, news: broadcast::Sender<RunNews>) -> LogQueue {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(write(rx, store, news));
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
    store: Arc<dyn RunStore>,
    news: broadcast::Sender<RunNews>,
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
            match store.append_run_log(&rows).await {
                Ok(stored) => {
                    for entry in stored {
                        let _ = news.send(RunNews::Entry(Arc::new(entry)));
                    }
                }
                Err(e) => tracing::warn!("could not write {} run-log entries: {e}", rows.len()),
            }
        }
        for done in waiting {
            let _ = done.send(());
        }
    }
}
