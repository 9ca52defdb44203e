//! Storage that does not only grow: what planboard removes on its own, and
//! the storage view that shows what it holds.
//!
//! Hourly (and at start), [`Runs::upkeep_storage`]:
//! - removes the workspaces of runs that ended more than
//!   `PLANBOARD_WORKSPACE_RETENTION_DAYS` ago ([`Runs::purge_workspaces`]);
//!   the run's row, plan, answer and memories stay, and its record notes
//!   when its files went (`files_removed_at`), which the run page says;
//! - deletes the logs of runs that ended more than
//!   `PLANBOARD_RUN_LOG_RETENTION_HOURS` ago;
//! - removes staging folders (uploads checked before a run exists) older
//!   than [`STAGING_KEPT`]: a request that died halfway left them;
//! - deletes the approval records of runs that ended more than
//!   `PLANBOARD_APPROVAL_RETENTION_DAYS` ago (365 by default: an audit
//!   looks further back than a review), and of no run made before that.
//!
//! A run that goes on (running, paused, waiting for a person) is never
//! touched, nor one a person keeps ([`Runs::keep_run`]). Workspaces are
//! removed through [`Workspace::remove`], which removes a link the code
//! planted and never what it points at.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent::workspace::Workspace;
use agent::RunId;
use plan_engine::Timestamp;

use super::{RunError, RunView, Runs};
use crate::workspace::blocking;

/// How long a staging folder may stay: one request's lifetime is seconds;
/// one this old is a leftover (seed 002's shortest TTL, its batch
/// results', 6 hours).
pub const STAGING_KEPT: Duration = Duration::from_secs(6 * 3600);

/// How often the upkeep runs.
const EVERY: Duration = Duration::from_secs(3600);

/// What one pass of the workspace retention removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    pub workspaces: usize,
    pub bytes: u64,
}

/// `now - keep`, or `None` when the retention reaches past the calendar
/// (everything is kept).
fn cutoff(now: Timestamp, keep: Duration) -> Option<Timestamp> {
    chrono::Duration::from_std(keep)
        .ok()
        .and_then(|d| now.checked_sub_signed(d))
}

/// The run folders under `root`: real folders named by a run's id (links,
/// files, the staging folder and other names are left alone).
async fn run_folders(root: &Path) -> Vec<RunId> {
    let mut ids = Vec::new();
    let Ok(mut entries) = tokio::fs::read_dir(root).await else {
        return ids;
    };
    while let Ok(Some(entry)) = entries.next_entry().await {
        let is_dir = entry.file_type().await.is_ok_and(|t| t.is_dir());
        let id = entry.file_name().to_str().and_then(|n| n.parse().ok());
        if let (true, Some(id)) = (is_dir, id) {
            if id != RunId::nil() {
                ids.push(id);
            }
        }
    }
    ids
}

impl Runs {
    /// Starts the hourly upkeep (see the module comment).
    pub fn spawn_retention(self: &Arc<Self>) {
        let runs = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let Some(live) = runs.upgrade() else { return };
                live.upkeep_storage(chrono::Utc::now()).await;
                drop(live);
                tokio::time::sleep(EVERY).await;
            }
        });
    }

    /// One pass of every retention, as of `now`; failures are logged.
    pub async fn upkeep_storage(&self, now: Timestamp) {
        if let Some(before) = self.run_log_keep.and_then(|k| cutoff(now, k)) {
            match self.store.purge_run_logs(before).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(
                    "retention: deleted {n} run-log entries of runs that ended before {before}"
                ),
                Err(e) => tracing::error!("purging old run logs failed: {e}"),
            }
        }
        if let Some(before) = self.workspace_keep.and_then(|k| cutoff(now, k)) {
            match self.purge_workspaces(before, now).await {
                Ok(p) if p.workspaces == 0 => {}
                Ok(p) => tracing::info!(
                    "retention: removed the files of {} runs that ended before {before} ({} bytes)",
                    p.workspaces,
                    p.bytes
                ),
                Err(e) => tracing::error!("removing old workspaces failed: {e}"),
            }
        }
        if let Some(before) = cutoff(now, STAGING_KEPT) {
            self.purge_staging(before).await;
        }
        if let Some(before) = self.approval_keep.and_then(|k| cutoff(now, k)) {
            match self.approvals.purge(before).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(
                    "retention: deleted {n} approval records of runs that ended before {before}"
                ),
                Err(e) => tracing::error!("purging old approval records failed: {e}"),
            }
        }
    }

    /// Removes the workspaces of the finished runs that ended before
    /// `before` and that no person keeps; notes `now` on each record.
    pub async fn purge_workspaces(
        &self,
        before: Timestamp,
        now: Timestamp,
    ) -> Result<Purged, RunError> {
        let folders = run_folders(self.workspaces.root()).await;
        let mut purged = Purged::default();
        for record in self.store.finished_before(&folders, before).await? {
            let id = record.id;
            if record.kept || self.driving.lock().expect("driving").contains(&id) {
                continue;
            }
            // Read again just before: a person may have kept it, or
            // started it again, since the list was read.
            let Some(mut record) = self.store.load_run(id).await? else {
                continue;
            };
            if record.kept || !record.state.is_finished() {
                continue;
            }
            let root = self.workspace(id);
            let bytes = blocking(move || {
                let ws =
                    Workspace::open(&root).map_err(|e| agent::workspace::WorkspaceError::Io {
                        name: root.display().to_string(),
                        error: e,
                    })?;
                let bytes = ws.usage().unwrap_or(0);
                ws.remove()?;
                Ok(bytes)
            })
            .await;
            match bytes {
                Ok(bytes) => {
                    purged.workspaces += 1;
                    purged.bytes = purged.bytes.saturating_add(bytes);
                }
                Err(e) => {
                    tracing::error!("removing run {id}'s workspace failed: {e}");
                    continue;
                }
            }
            record.files_removed_at = Some(now);
            self.store.amend_finished_run(&record).await?;
        }
        Ok(purged)
    }

    /// Removes staging folders last changed before `before`.
    async fn purge_staging(&self, before: Timestamp) {
        let staging = self.workspaces.root().join(".incoming");
        let Ok(mut entries) = tokio::fs::read_dir(&staging).await else {
            return;
        };
        let mut old: Vec<PathBuf> = Vec::new();
        while let Ok(Some(entry)) = entries.next_entry().await {
            let Ok(meta) = tokio::fs::symlink_metadata(entry.path()).await else {
                continue;
            };
            let changed = meta.modified().ok().map(Timestamp::from);
            if meta.is_dir() && changed.is_some_and(|t| t < before) {
                old.push(entry.path());
            }
        }
        for dir in old {
            let shown = dir.display().to_string();
            let removed = blocking(move || {
                Workspace::open(&dir)
                    .map_err(|e| agent::workspace::WorkspaceError::Io {
                        name: dir.display().to_string(),
                        error: e,
                    })?
                    .remove()
            })
            .await;
            if let Err(e) = removed {
                tracing::warn!("removing the staging folder {shown} failed: {e}");
            }
        }
    }

    /// Keeps a finished run (`kept`) from the retentions, or lets them
    /// have it again. A run that goes on is never removed; it is kept
    /// once it has ended.
    pub async fn keep_run(&self, id: RunId, kept: bool) -> Result<RunView, RunError> {
        let mut record = self.record(id).await?;
        if !record.state.is_finished() {
            return Err(RunError::Invalid(format!(
                "the run is {}: a run that goes on is never removed; keep it once it has ended",
                record.state
            )));
        }
        record.kept = kept;
        if !self.store.amend_finished_run(&record).await? {
            return Err(RunError::Invalid(
                "the run started again meanwhile; keep it once it has ended".into(),
            ));
        }
        self.view(record).await
    }

    /// What planboard stores and how much, with the retentions in effect.
    pub async fn storage(&self) -> Result<run_model::StorageReport, RunError> {
        let mut report = self.store.storage_counts().await?;
        let folders = run_folders(self.workspaces.root()).await;
        report.workspaces.count = folders.len() as u64;
        let root = self.workspaces.root().to_path_buf();
        let (bytes, unmeasured) = tokio::task::spawn_blocking(move || {
            let (mut bytes, mut unmeasured) = (0u64, 0u64);
            for id in &folders {
                match Workspace::open(root.join(id.to_string())).map(|ws| ws.usage()) {
                    Ok(Ok(used)) => bytes = bytes.saturating_add(used),
                    _ => unmeasured += 1,
                }
            }
            (bytes, unmeasured)
        })
        .await
        .unwrap_or_default();
        report.workspaces.bytes = bytes;
        report.workspaces.unmeasured = unmeasured;
        report.retention = self.retention.clone();
        Ok(report)
    }
}
