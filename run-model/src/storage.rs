//! What planboard stores and how much: the Settings page's storage view
//! and `GET /api/storage` ([`StorageReport`]), with the retentions and the
//! quota in effect ([`Retention`]), so a person sees both what grows and
//! what keeps it from growing for good.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What planboard stores, measured when asked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StorageReport {
    /// `sqlite` or `postgres`.
    pub database: String,
    /// The database's size: SQLite's pages (the file, its log aside),
    /// PostgreSQL's `pg_database_size`.
    pub database_bytes: u64,
    pub plans: u64,
    /// Every plan's event log (plans are kept until deleted).
    pub plan_events: u64,
    pub runs: u64,
    /// Lines of the runs' logs (model calls with their messages, tool
    /// calls, activity): the largest part of the database.
    pub run_log_entries: u64,
    pub memories: u64,
    /// Notifications recorded for the webhook endpoints.
    pub webhook_deliveries: u64,
    /// The runs' folders of files.
    pub workspaces: WorkspacesUse,
    pub retention: Retention,
}

/// The runs' workspaces on disk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspacesUse {
    /// Workspace folders (one per run that has files).
    pub count: u64,
    /// Bytes of their regular files (links are not followed or counted).
    pub bytes: u64,
    /// Runs a person keeps the files of (never removed by the retention).
    pub kept: u64,
    /// Runs whose files the retention removed.
    pub removed: u64,
    /// Folders that could not be measured (more than the walk's bound of
    /// entries, or unreadable); their bytes are not in `bytes`.
    pub unmeasured: u64,
}

/// The retentions and the quota in effect (`None`: kept for good).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Retention {
    /// `PLANBOARD_WORKSPACE_RETENTION_DAYS`: a finished run's files are
    /// removed this many days after it ended.
    pub workspace_days: Option<u64>,
    /// `PLANBOARD_RUN_LOG_RETENTION_HOURS`: a finished run's log is
    /// deleted this many hours after it ended.
    pub run_log_hours: Option<u64>,
    /// `PLANBOARD_WEBHOOK_RETENTION_DAYS`: deliveries that are over are
    /// deleted after this many days.
    pub webhook_days: u64,
    /// `PLANBOARD_WORKSPACE_QUOTA_MB`, in bytes: the most one run's
    /// workspace may hold.
    pub workspace_quota_bytes: u64,
    /// Uploads staged for a run that never started are removed after
    /// this many hours.
    pub staging_hours: u64,
    /// `PLANBOARD_APPROVAL_RETENTION_DAYS`: a finished run's approval
    /// records are deleted this many days after it ended.
    #[serde(default)]
    pub approval_days: Option<u64>,
}
