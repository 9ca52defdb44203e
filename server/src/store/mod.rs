//! Durable plans: the [`PlanStore`] trait and its SQL implementation.
//!
//! The store knows nothing about commands; it saves what the engine decided.
//! A [`Batch`] (new or changed plan snapshots, their events, session
//! pointers, deletions) is written in one transaction, and every changed plan
//! is guarded by the version it had when it was loaded, so two writers can
//! never both win.
//!
//! # Layout
//! - this file: the trait and the rows it speaks in;
//! - `sql.rs`: [`SqlStore`], one implementation for SQLite and PostgreSQL;
//! - `direct.rs`: a SQLite file's writes without sqlx's worker thread;
//! - `rows.rs`: how values are stored, for both write paths;
//! - `sessions.rs`: agent sessions' settings (part of [`PlanStore`]).

pub(crate) mod direct;
mod rows;
mod sessions;
pub(crate) mod sql;

use async_trait::async_trait;
use plan_engine::{Event, Plan, PlanId, Timestamp};
use schemars::JsonSchema;
use serde::Serialize;

pub use sessions::SessionSettings;
pub use sql::{SqlStore, SNAPSHOT_EVERY};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The plan changed since it was loaded (another writer, maybe another process).
    #[error("plan {plan_id} changed meanwhile (now at version {current})")]
    Conflict { plan_id: PlanId, current: u64 },
    /// The database refused the write as breaking one of its constraints
    /// (another replica took the same plan key a moment ago, say). The
    /// text is a sentence for the client; nothing was written.
    #[error("{0}")]
    Constraint(String),
    #[error("database error: {0}")]
    Database(sqlx::Error),
    /// From the commits SQLite runs on the calling thread (`direct.rs`).
    #[error("database error: {0}")]
    Sqlite(rusqlite::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored data is unreadable: {0}")]
    Corrupt(String),
    /// `DATABASE_URL` cannot be used as given.
    #[error("{0}")]
    Config(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        if let sqlx::Error::Configuration(why) = &e {
            return StoreError::Config(format!("DATABASE_URL cannot be used: {why}"));
        }
        let Some(db) = e.as_database_error() else {
            return StoreError::Database(e);
        };
        refused(db.kind(), db.message()).unwrap_or(StoreError::Database(e))
    }
}

/// SQLite's own errors, from `direct.rs`'s commits: a constraint is the
/// same sentence as through sqlx (whose SQLite driver reads the same
/// extended codes).
impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ffi;
        use sqlx::error::ErrorKind;
        if let rusqlite::Error::SqliteFailure(failure, message) = &e {
            let kind = match failure.extended_code {
                ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                    ErrorKind::UniqueViolation
                }
                ffi::SQLITE_CONSTRAINT_FOREIGNKEY => ErrorKind::ForeignKeyViolation,
                ffi::SQLITE_CONSTRAINT_NOTNULL => ErrorKind::NotNullViolation,
                ffi::SQLITE_CONSTRAINT_CHECK => ErrorKind::CheckViolation,
                _ => ErrorKind::Other,
            };
            if let Some(refused) = refused(kind, message.as_deref().unwrap_or_default()) {
                return refused;
            }
        }
        StoreError::Sqlite(e)
    }
}

/// The sentence for a write the database refused on a constraint (the
/// client can act on it: nothing was written); `None` for other errors.
fn refused(kind: sqlx::error::ErrorKind, message: &str) -> Option<StoreError> {
    use sqlx::error::ErrorKind;
    let what = match kind {
        ErrorKind::UniqueViolation if message.contains("plan_key") => {
            "another plan already uses this plan key (OpenManus plan_id); choose another"
        }
        ErrorKind::UniqueViolation => "an entry with the same key is already stored",
        ErrorKind::ForeignKeyViolation => "it refers to something that is not stored",
        ErrorKind::NotNullViolation | ErrorKind::CheckViolation => {
            "a value is missing or out of range"
        }
        _ => return None,
    };
    Some(StoreError::Constraint(format!(
        "the change was not saved: {what}"
    )))
}

/// One plan's part of a commit.
pub struct PlanWrite {
    /// The plan's columns after the batch (as it was deleted, for a plan
    /// the batch deletes, so the events before the deletion are kept).
    pub row: PlanColumns,
    /// The whole plan, only when its snapshot is written: a new plan, or
    /// every [`SNAPSHOT_EVERY`] versions (or the plan's size). Copying a
    /// plan costs as much as the plan, so a step does not copy it for
    /// nothing.
    pub snapshot: Option<Plan>,
    /// The version the writer started from; `None` for a new plan.
    pub base_version: Option<u64>,
    pub events: Vec<Event>,
}

impl PlanWrite {
    pub fn of(plan: &Plan, base_version: Option<u64>, events: Vec<Event>) -> PlanWrite {
        let due = base_version
            .is_none_or(|base| sql::snapshot_due(base, plan.version(), plan.subtasks().len()));
        PlanWrite {
            row: PlanColumns::of(plan),
            snapshot: due.then(|| plan.clone()),
            base_version,
            events,
        }
    }
}

/// The columns of a plan's row.
pub struct PlanColumns {
    pub id: PlanId,
    pub key: Option<String>,
    pub title: String,
    pub state: plan_engine::PlanState,
    pub mode: plan_engine::Mode,
    pub approval: plan_engine::ApprovalStatus,
    pub version: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub finished_at: Option<Timestamp>,
}

impl PlanColumns {
    pub fn of(plan: &Plan) -> PlanColumns {
        PlanColumns {
            id: plan.id(),
            key: plan.key().map(str::to_string),
            title: plan.title().to_string(),
            state: plan.state(),
            mode: plan.mode(),
            approval: plan.approval().status,
            version: plan.version(),
            created_at: plan.created_at(),
            updated_at: plan.updated_at(),
            finished_at: plan.finished_at(),
        }
    }
}

/// Everything a group of service calls changed, committed all or nothing.
#[derive(Default)]
pub struct Batch {
    pub plans: Vec<PlanWrite>,
    /// Session → active plan (`None` clears it).
    pub active: Vec<(String, Option<PlanId>)>,
    /// Soft deletions: the plan leaves listings, its log stays.
    pub deleted: Vec<(PlanId, String)>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.plans.is_empty() && self.active.is_empty() && self.deleted.is_empty()
    }
}

/// One line of a run's log as stored and streamed (a row, like
/// [`StoredEvent`]: the pages and the live streams read both).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct StoredRunEntry {
    /// Its position in the log of all runs; the SSE id.
    pub seq: i64,
    pub run_id: agent::RunId,
    /// The run's plan, so the plan's stream can carry the entry too.
    pub plan_id: Option<plan_engine::PlanId>,
    pub kind: run_model::EntryKind,
    pub at: plan_engine::Timestamp,
    /// The entry itself (`kind` repeated inside). Kept as the JSON the
    /// database holds, so a line written by an older version is served as
    /// it was written rather than lost.
    #[schemars(with = "agent::RunEntry")]
    pub entry: serde_json::Value,
}

/// A row of the event log, as the API and the live stream show it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct StoredEvent {
    /// Position in the whole log; the SSE id.
    pub seq: i64,
    pub plan_id: PlanId,
    pub version: u64,
    pub actor: String,
    /// The engine's event type (`subtask_state_changed`, …) or `plan_deleted`.
    pub kind: String,
    pub at: Timestamp,
    /// The engine's event (`null` for `plan_deleted`).
    #[schemars(with = "Option<plan_engine::Event>")]
    pub event: serde_json::Value,
}

impl PlanSummary {
    pub fn of(plan: &Plan) -> PlanSummary {
        PlanSummary {
            id: plan.id(),
            key: plan.key().map(str::to_string),
            title: plan.title().to_string(),
            state: plan.state().as_str().to_string(),
            mode: plan.mode().as_str().to_string(),
            approval: sql::name_of(&plan.approval().status),
            version: plan.version(),
            created_at: plan.created_at(),
            updated_at: plan.updated_at(),
            finished_at: plan.finished_at(),
        }
    }
}

/// One line of the plan list.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PlanSummary {
    pub id: PlanId,
    pub key: Option<String>,
    pub title: String,
    pub state: String,
    pub mode: String,
    pub approval: String,
    pub version: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub finished_at: Option<Timestamp>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct StoredComment {
    pub id: u32,
    pub subtask: Option<u32>,
    pub author: String,
    pub body: String,
    pub at: Timestamp,
}

#[async_trait]
pub trait PlanStore: Send + Sync {
    /// Every plan that is not deleted, for the service's working set.
    async fn load_all(&self) -> Result<Vec<Plan>, StoreError>;
    async fn load(&self, id: PlanId) -> Result<Option<Plan>, StoreError>;
    /// The stored version of a plan that is not deleted.
    async fn version(&self, id: PlanId) -> Result<Option<u64>, StoreError>;
    /// Writes `batch` in one transaction; returns the log rows it wrote,
    /// in seq order, as [`PlanStore::events`] reads them back.
    async fn commit(&self, batch: &Batch) -> Result<Vec<StoredEvent>, StoreError>;
    /// Log rows after `after_seq`, oldest first; of one plan or of all.
    async fn events(
        &self,
        plan: Option<PlanId>,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError>;
    async fn last_seq(&self) -> Result<i64, StoreError>;
    async fn active(&self, session: &str) -> Result<Option<PlanId>, StoreError>;
    /// An agent session's settings (all unset for a session that set none).
    async fn session_settings(&self, session: &str) -> Result<SessionSettings, StoreError>;
    /// Replaces an agent session's settings.
    async fn set_session_settings(
        &self,
        session: &str,
        settings: &SessionSettings,
    ) -> Result<(), StoreError>;
    async fn comments(&self, plan: PlanId) -> Result<Vec<StoredComment>, StoreError>;
    /// Waits until another process may have committed (PostgreSQL
    /// LISTEN/NOTIFY). `None` when the store has no such signal (SQLite:
    /// one process owns the file).
    async fn listen(&self) -> Result<Option<tokio::sync::mpsc::Receiver<()>>, StoreError>;
}

/// The URL's path and query may hold a secret (Slack's URLs are one):
/// only the scheme and host are shown. Here, at the bottom, so the store's
/// rows can hide their URLs in Debug output; `crate::webhooks::shown_url`
/// re-exports it.
pub fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => format!("{}://{}/…", u.scheme(), u.host_str().unwrap_or_default()),
        Err(_) => "<unreadable URL>".into(),
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:<redacted>@host/db`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((credentials, host)) = rest.rsplit_once('@') else {
        return url.to_string();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:<redacted>@{host}"),
        None => url.to_string(),
    }
}
