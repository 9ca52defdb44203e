//! What a run log keeps: one row per entry, in the order of all runs.

use agent::run::EntryKind;
use agent::RunId;
use async_trait::async_trait;
use plan_engine::{PlanId, Timestamp};

use crate::store::StoreError;
pub use crate::store::StoredRunEntry;

/// A run-log entry to append; `at` is when the agent logged it.
#[derive(Clone, Debug)]
pub struct NewRunEntry {
    pub run: RunId,
    pub plan: Option<PlanId>,
    pub kind: EntryKind,
    pub at: Timestamp,
    pub entry: serde_json::Value,
}

/// The run log: appended by the agents' hosts, read by the streams, the
/// board, the webhooks' deliverer and the needs count.
#[async_trait]
pub trait RunLogStore: Send + Sync {
    /// Appends entries in one statement, in order; returns them stored.
    async fn append_run_log(
        &self,
        entries: &[NewRunEntry],
    ) -> Result<Vec<StoredRunEntry>, StoreError>;
    async fn run_log(
        &self,
        run: RunId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredRunEntry>, StoreError>;
    /// The run's entries before `before`, newest first: the tail of a
    /// long log without reading all of it.
    async fn run_log_before(
        &self,
        run: RunId,
        before: i64,
        limit: u32,
    ) -> Result<Vec<StoredRunEntry>, StoreError>;
    /// How many entries the run's log holds.
    async fn run_log_len(&self, run: RunId) -> Result<u64, StoreError>;
    /// The guarded tool calls (`tool_approval`) of these runs and the
    /// decisions on them (`tool_decision`), in log order: what waits for a
    /// person, read from an index instead of the whole logs.
    async fn run_log_calls(&self, runs: &[RunId]) -> Result<Vec<StoredRunEntry>, StoreError>;
    /// The entries of one run's log of the given kinds, in log order.
    async fn run_log_of_kinds(
        &self,
        run: RunId,
        kinds: &[run_model::EntryKind],
    ) -> Result<Vec<StoredRunEntry>, StoreError>;
    /// Every run's entries after `after`, in log order: what a process
    /// reads to stream the entries other processes wrote.
    async fn run_log_since(
        &self,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredRunEntry>, StoreError>;
    /// The seq of the newest entry (0 for none).
    async fn last_run_log_seq(&self) -> Result<i64, StoreError>;
    /// Wakes after another process may have appended entries (PostgreSQL
    /// LISTEN/NOTIFY); `None` when one process owns the store (SQLite).
    async fn listen_run_log(&self) -> Result<Option<tokio::sync::mpsc::Receiver<()>>, StoreError>;
    /// Sends reply deltas (never stored) to the other processes; nothing
    /// to do when one process owns the store.
    async fn send_run_deltas(&self, payload: &str) -> Result<(), StoreError>;
    /// What other processes sent with [`RunStore::send_run_deltas`];
    /// `None` when one process owns the store.
    async fn listen_run_deltas(
        &self,
    ) -> Result<Option<tokio::sync::mpsc::Receiver<String>>, StoreError>;
}
