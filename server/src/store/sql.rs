//! [`SqlStore`]: the store on SQLite (embedded default) or PostgreSQL, through
//! sqlx's `Any` driver so both dialects share one set of queries.
//!
//! Every value crosses as text or integer (the types `Any` carries on both):
//! ids as UUID text, timestamps as RFC 3339 text, plans and events as JSON.
//! The dialects differ only in their migrations, in how a commit keeps the
//! log's order (SQLite has one writer; PostgreSQL locks the log table) and in
//! LISTEN/NOTIFY.
//!
//! A plan's row holds its indexed columns at the current version; its
//! snapshot, in `plan_snapshots`, is rewritten only every
//! [`SNAPSHOT_EVERY`] versions or the plan's size (the snapshot carries
//! its own version); loading folds the events after it. So an agent's
//! step writes a few hundred bytes whatever the plan's size.

use async_trait::async_trait;
use plan_engine::{EventKind, Plan, PlanId, Timestamp};
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Executor, Row};
use tokio::sync::mpsc;

use super::rows::{
    deleted_event, snapshot_text, statements, stored_events, stored_now, version_i64,
};
// Every concept's SQL reads and writes its values through these.
pub(crate) use super::rows::{corrupt, in_values_order, name_of, ts, values_sql};
use super::{Batch, PlanStore, SessionSettings, StoreError, StoredComment, StoredEvent};

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

/// Wakes other processes' live streams after a commit (PostgreSQL only).
const CHANNEL: &str = "planboard_events";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    fn of(url: &str) -> Option<Backend> {
        if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Some(Backend::Postgres)
        } else if url.starts_with("sqlite:") {
            Some(Backend::Sqlite)
        } else {
            None
        }
    }
}

pub struct SqlStore {
    pub(crate) pool: AnyPool,
    backend: Backend,
    url: String,
    /// The background checkpointer stops when this goes.
    _alive: std::sync::Arc<()>,
    /// SQLite's writing transactions take turns here (see [`SqlStore::write_turn`]).
    writes: tokio::sync::Mutex<()>,
    /// A SQLite file's plan commits, on the calling thread (`direct.rs`).
    pub(crate) direct: Option<super::direct::Direct>,
}

/// How often a SQLite file's log is copied back into the database.
/// Commits never checkpoint themselves: a checkpoint syncs the file (1–6 ms
/// measured here), which inside a commit became the agent's slowest steps.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// Checkpoints the WAL in the background until the store is dropped.
/// `PASSIVE` never waits for readers or writers.
fn spawn_checkpointer(pool: AnyPool, alive: std::sync::Weak<()>) {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(CHECKPOINT_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            if alive.upgrade().is_none() {
                return;
            }
            if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&pool)
                .await
            {
                tracing::warn!("SQLite checkpoint failed: {e}");
            }
        }
    });
}

impl SqlStore {
    /// Connects, creating a SQLite file (and its folder) when missing, and
    /// applies the dialect's migrations.
    pub async fn connect(url: &str) -> Result<SqlStore, StoreError> {
        sqlx::any::install_default_drivers();
        let Some(backend) = Backend::of(url) else {
            return Err(StoreError::Config(format!(
                "DATABASE_URL must start with sqlite: or postgres:, not '{}'",
                super::redact_url(url)
            )));
        };
        let mut options = AnyPoolOptions::new();
        let memory = url.contains(":memory:") || url.contains("mode=memory");
        if backend == Backend::Sqlite {
            if !memory {
                ensure_sqlite_folder(url);
            }
            // An in-memory database lives in one connection. A connection
            // to a file in this process has no other end to lose, and
            // sqlx's ping before each acquire is one more round trip to its
            // worker thread on every query (about three per agent step).
            options = options
                .max_connections(if memory { 1 } else { 4 })
                .test_before_acquire(false)
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        // Checkpoints run in the background (see
                        // CHECKPOINT_EVERY); a commit checkpoints only if the
                        // log ever passes 40 MB.
                        conn.execute(
                            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                             PRAGMA busy_timeout = 5000; PRAGMA wal_autocheckpoint = 10000;",
                        )
                        .await?;
                        Ok(())
                    })
                });
        } else {
            options = options.max_connections(8);
        }
        let url_with_create = match backend {
            Backend::Sqlite if !url.contains("mode=") && !url.contains(":memory:") => {
                let sep = if url.contains('?') { '&' } else { '?' };
                format!("{url}{sep}mode=rwc")
            }
            _ => url.to_string(),
        };
        let pool = options.connect(&url_with_create).await?;
        match backend {
            Backend::Sqlite => SQLITE_MIGRATIONS.run(&pool).await?,
            Backend::Postgres => POSTGRES_MIGRATIONS.run(&pool).await?,
        }
        let alive = std::sync::Arc::new(());
        let mut direct = None;
        if backend == Backend::Sqlite && !memory {
            spawn_checkpointer(pool.clone(), std::sync::Arc::downgrade(&alive));
            direct = Some(super::direct::Direct::open(sqlite_path(url))?);
        }
        Ok(SqlStore {
            pool,
            backend,
            url: url.to_string(),
            _alive: alive,
            writes: tokio::sync::Mutex::new(()),
            direct,
        })
    }

    /// A turn to write, on SQLite: the plan commits and the run log's
    /// appends are the store's two writing transactions, and one begun
    /// while the other held the file waited in SQLite's busy handler,
    /// which sleeps a millisecond and more (the agent's slowest steps, on
    /// the profile); a turn here costs a wake-up. PostgreSQL writers do
    /// not block each other so: no turn.
    pub(crate) async fn write_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        match self.backend {
            Backend::Sqlite => Some(self.writes.lock().await),
            Backend::Postgres => None,
        }
    }

    /// Whether `url` names a database this store speaks.
    pub fn supports(url: &str) -> bool {
        Backend::of(url).is_some()
    }

    pub fn is_postgres(&self) -> bool {
        self.backend == Backend::Postgres
    }
}

/// The file a `sqlite:` URL names.
fn sqlite_path(url: &str) -> &str {
    url.trim_start_matches("sqlite://")
        .trim_start_matches("sqlite:")
        .split('?')
        .next()
        .unwrap_or_default()
}

fn ensure_sqlite_folder(url: &str) {
    let path = sqlite_path(url);
    if let Some(parent) = std::path::Path::new(path).parent() {
        if !parent.as_os_str().is_empty() {
            // A failure shows up as a clear connect error right after.
            let _ = std::fs::create_dir_all(parent);
        }
    }
}

/// A stored timestamp read back.
pub(crate) fn read_ts(row: &AnyRow, column: &str) -> Result<Timestamp, StoreError> {
    let text: String = row.try_get(column)?;
    chrono::DateTime::parse_from_rfc3339(&text)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| corrupt(format!("{column} '{text}': {e}")))
}

/// A commit rewrites the plan's snapshot when its version crosses a
/// multiple of this, or of the plan's size when that is larger (rounded up
/// to a power of two); otherwise only the plan's small row and the events
/// are written. So a step's write does not grow with the plan: a snapshot
/// of n subtasks is written once per n versions or more, a constant share
/// of each. A load folds at most about that many events onto the snapshot,
/// as much work as reading the snapshot itself.
pub const SNAPSHOT_EVERY: u64 = 32;

pub(super) fn snapshot_due(base: u64, version: u64, subtasks: usize) -> bool {
    let every = SNAPSHOT_EVERY.max((subtasks as u64).next_power_of_two());
    base / every != version / every
}

/// The plan as of its `version`: the snapshot, with the events after it
/// folded on when the snapshot is older.
async fn plan_from_row(pool: &AnyPool, row: &AnyRow) -> Result<Plan, StoreError> {
    let snapshot: String = row.try_get("snapshot")?;
    let mut plan: Plan = serde_json::from_str(&snapshot).map_err(corrupt)?;
    let version: i64 = row.try_get("version")?;
    if version_i64(plan.version()) < version {
        let payloads: Vec<String> = sqlx::query_scalar(
            "SELECT payload FROM plan_events WHERE plan_id = $1 AND version > $2 \
             AND version <= $3 ORDER BY seq",
        )
        .bind(plan.id().to_string())
        .bind(version_i64(plan.version()))
        .bind(version)
        .fetch_all(pool)
        .await?;
        for payload in payloads {
            let event: plan_engine::Event = serde_json::from_str(&payload).map_err(corrupt)?;
            plan.fold(&event);
        }
        if version_i64(plan.version()) != version {
            return Err(StoreError::Corrupt(format!(
                "plan {}: its events reach version {}, the row says {version}",
                plan.id(),
                plan.version()
            )));
        }
    }
    plan.reindex();
    Ok(plan)
}

fn event_from_row(row: &AnyRow) -> Result<StoredEvent, StoreError> {
    let plan_id: String = row.try_get("plan_id")?;
    let payload: String = row.try_get("payload")?;
    Ok(StoredEvent {
        seq: row.try_get("seq")?,
        plan_id: plan_id.parse().map_err(corrupt)?,
        version: u64::try_from(row.try_get::<i64, _>("version")?).unwrap_or_default(),
        actor: row.try_get("actor")?,
        kind: row.try_get("kind")?,
        at: read_ts(row, "at")?,
        event: serde_json::from_str(&payload).map_err(corrupt)?,
    })
}

#[async_trait]
impl PlanStore for SqlStore {
    async fn load_all(&self) -> Result<Vec<Plan>, StoreError> {
        let rows = sqlx::query(statements::LOAD_PLANS)
            .fetch_all(&self.pool)
            .await?;
        let mut plans = Vec::with_capacity(rows.len());
        for row in &rows {
            plans.push(plan_from_row(&self.pool, row).await?);
        }
        Ok(plans)
    }

    async fn load(&self, id: PlanId) -> Result<Option<Plan>, StoreError> {
        let row = sqlx::query(statements::LOAD_PLAN)
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(row) => Ok(Some(plan_from_row(&self.pool, &row).await?)),
            None => Ok(None),
        }
    }

    async fn version(&self, id: PlanId) -> Result<Option<u64>, StoreError> {
        let version: Option<i64> =
            sqlx::query_scalar("SELECT version FROM plans WHERE id = $1 AND deleted_at IS NULL")
                .bind(id.to_string())
                .fetch_optional(&self.pool)
                .await?;
        Ok(version.and_then(|v| u64::try_from(v).ok()))
    }

    async fn commit(&self, batch: &Batch) -> Result<Vec<StoredEvent>, StoreError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let _turn = self.write_turn().await;
        if let Some(direct) = &self.direct {
            return direct.commit(batch);
        }
        let mut tx = self.pool.begin().await?;
        let mut stored = Vec::new();
        if self.backend == Backend::Postgres {
            // Readers go on; writers queue, so seq order is commit order and
            // a live stream resuming "after seq n" can never skip a row.
            tx.execute("LOCK TABLE plan_events IN EXCLUSIVE MODE")
                .await?;
        }
        for write in &batch.plans {
            let row = &write.row;
            let id = row.id.to_string();
            // PlanWrite carries the plan only when its snapshot is due.
            let snapshot = snapshot_text(write)?;
            let changed = match write.base_version {
                None => bind_row(sqlx::query(statements::INSERT_PLAN), row)
                    .bind(&id)
                    .bind(ts(row.created_at))
                    .execute(&mut *tx)
                    .await?
                    .rows_affected(),
                Some(base) => bind_row(sqlx::query(statements::UPDATE_PLAN), row)
                    .bind(&id)
                    .bind(version_i64(base))
                    .execute(&mut *tx)
                    .await?
                    .rows_affected(),
            };
            if changed != 1 {
                let current: Option<i64> = sqlx::query_scalar(statements::PLAN_VERSION)
                    .bind(&id)
                    .fetch_optional(&mut *tx)
                    .await?;
                return Err(StoreError::Conflict {
                    plan_id: row.id,
                    current: current.and_then(|v| u64::try_from(v).ok()).unwrap_or(0),
                });
            }
            if let Some(snapshot) = snapshot {
                sqlx::query(statements::PUT_SNAPSHOT)
                    .bind(&id)
                    .bind(snapshot)
                    .execute(&mut *tx)
                    .await?;
            }
            for events in write.events.chunks(statements::EVENTS_PER_INSERT) {
                let sql = statements::insert_events(events.len());
                let mut insert = sqlx::query_scalar::<_, i64>(&sql);
                for event in events {
                    insert = insert
                        .bind(&id)
                        .bind(version_i64(event.version))
                        .bind(event.actor.to_string())
                        .bind(event.kind.name())
                        .bind(serde_json::to_string(event).map_err(corrupt)?)
                        .bind(ts(event.at));
                }
                let seqs = insert.fetch_all(&mut *tx).await?;
                stored.extend(stored_events(row.id, events, seqs)?);
            }
            for event in &write.events {
                if let EventKind::CommentAdded { comment } = &event.kind {
                    sqlx::query(statements::INSERT_COMMENT)
                        .bind(&id)
                        .bind(i64::from(comment.id))
                        .bind(comment.subtask.map(|s| i64::from(s.0)))
                        .bind(&comment.author)
                        .bind(&comment.body)
                        .bind(ts(comment.at))
                        .execute(&mut *tx)
                        .await?;
                }
            }
        }
        let at = stored_now();
        let now = ts(at);
        for (plan_id, actor) in &batch.deleted {
            let id = plan_id.to_string();
            let version: Option<i64> = sqlx::query_scalar(statements::DELETE_PLAN)
                .bind(&now)
                .bind(&id)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some(version) = version {
                let seq: i64 = sqlx::query_scalar(statements::INSERT_DELETED_EVENT)
                    .bind(&id)
                    .bind(version)
                    .bind(actor)
                    .bind(&now)
                    .fetch_one(&mut *tx)
                    .await?;
                stored.push(deleted_event(seq, *plan_id, version, actor, at));
            }
            sqlx::query(statements::CLEAR_ACTIVE_PLAN)
                .bind(&id)
                .execute(&mut *tx)
                .await?;
        }
        for (session, plan) in &batch.active {
            match plan {
                Some(plan) => {
                    sqlx::query(statements::SET_ACTIVE)
                        .bind(session)
                        .bind(plan.to_string())
                        .bind(&now)
                        .execute(&mut *tx)
                        .await?;
                }
                None => {
                    sqlx::query(statements::CLEAR_ACTIVE_SESSION)
                        .bind(session)
                        .execute(&mut *tx)
                        .await?;
                }
            }
        }
        if self.backend == Backend::Postgres {
            // Delivered when (and only if) the transaction commits.
            tx.execute(format!("NOTIFY {CHANNEL}").as_str()).await?;
        }
        tx.commit().await?;
        stored.sort_unstable_by_key(|e| e.seq);
        Ok(stored)
    }

    async fn events(
        &self,
        plan: Option<PlanId>,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let columns = "seq, plan_id, version, actor, kind, payload, at";
        let rows = match plan {
            Some(plan) => {
                sqlx::query(&format!(
                    "SELECT {columns} FROM plan_events WHERE plan_id = $1 AND seq > $2 \
                     ORDER BY seq LIMIT {limit}"
                ))
                .bind(plan.to_string())
                .bind(after_seq)
                .fetch_all(&self.pool)
                .await?
            }
            None => {
                sqlx::query(&format!(
                    "SELECT {columns} FROM plan_events WHERE seq > $1 ORDER BY seq LIMIT {limit}"
                ))
                .bind(after_seq)
                .fetch_all(&self.pool)
                .await?
            }
        };
        rows.iter().map(event_from_row).collect()
    }

    async fn last_seq(&self) -> Result<i64, StoreError> {
        self.max_seq("plan_events").await
    }

    async fn active(&self, session: &str) -> Result<Option<PlanId>, StoreError> {
        let id: Option<String> =
            sqlx::query_scalar("SELECT plan_id FROM active_plans WHERE session = $1")
                .bind(session)
                .fetch_optional(&self.pool)
                .await?;
        id.map(|id| id.parse().map_err(corrupt)).transpose()
    }

    async fn session_settings(&self, session: &str) -> Result<SessionSettings, StoreError> {
        let row = sqlx::query(
            "SELECT need_user_confirm, max_subtasks FROM session_settings WHERE session = $1",
        )
        .bind(session)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            return Ok(SessionSettings::default());
        };
        let confirm: Option<i64> = row.try_get("need_user_confirm")?;
        let max: Option<i64> = row.try_get("max_subtasks")?;
        Ok(SessionSettings {
            need_user_confirm: confirm.map(|c| c != 0),
            max_subtasks: max
                .map(u32::try_from)
                .transpose()
                .map_err(|e| StoreError::Corrupt(format!("max_subtasks: {e}")))?,
        })
    }

    /// Replaces the session's settings; all unset removes its row.
    async fn set_session_settings(
        &self,
        session: &str,
        settings: &SessionSettings,
    ) -> Result<(), StoreError> {
        if *settings == SessionSettings::default() {
            sqlx::query("DELETE FROM session_settings WHERE session = $1")
                .bind(session)
                .execute(&self.pool)
                .await?;
            return Ok(());
        }
        sqlx::query(
            "INSERT INTO session_settings (session, need_user_confirm, max_subtasks, updated_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (session) DO UPDATE SET \
             need_user_confirm = excluded.need_user_confirm, \
             max_subtasks = excluded.max_subtasks, updated_at = excluded.updated_at",
        )
        .bind(session)
        .bind(settings.need_user_confirm.map(i64::from))
        .bind(settings.max_subtasks.map(i64::from))
        .bind(ts(chrono::Utc::now()))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn comments(&self, plan: PlanId) -> Result<Vec<StoredComment>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, subtask, author, body, at FROM comments WHERE plan_id = $1 ORDER BY id",
        )
        .bind(plan.to_string())
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(StoredComment {
                    id: u32::try_from(row.try_get::<i64, _>("id")?).map_err(corrupt)?,
                    subtask: row
                        .try_get::<Option<i64>, _>("subtask")?
                        .and_then(|s| u32::try_from(s).ok()),
                    author: row.try_get("author")?,
                    body: row.try_get("body")?,
                    at: read_ts(row, "at")?,
                })
            })
            .collect()
    }

    async fn listen(&self) -> Result<Option<mpsc::Receiver<()>>, StoreError> {
        self.listen_on(CHANNEL).await
    }
}

impl SqlStore {
    /// The newest seq of a log table (`plan_events`, `run_log`); 0 when empty.
    pub(crate) async fn max_seq(&self, table: &str) -> Result<i64, StoreError> {
        let seq: Option<i64> = sqlx::query_scalar(&format!("SELECT MAX(seq) FROM {table}"))
            .fetch_one(&self.pool)
            .await?;
        Ok(seq.unwrap_or(0))
    }

    /// A wake-up after every NOTIFY on `channel` (PostgreSQL); `None` on
    /// SQLite, where one process owns the file.
    pub(crate) async fn listen_on(
        &self,
        channel: &str,
    ) -> Result<Option<mpsc::Receiver<()>>, StoreError> {
        // A dropped connection wakes the reader too: it reads the log from
        // its last seq, so a missed notification loses nothing.
        self.listen_with(channel, 1, |_| Some(())).await
    }

    /// Every notification on `channel` that `keep` maps to a message, with
    /// at most `capacity` waiting (more are dropped); `keep` gets `None`
    /// when the connection dropped (PgListener reconnects on the next
    /// receive). `None` on SQLite, where one process owns the file.
    pub(crate) async fn listen_with<T: Send + 'static>(
        &self,
        channel: &str,
        capacity: usize,
        keep: fn(Option<&sqlx::postgres::PgNotification>) -> Option<T>,
    ) -> Result<Option<mpsc::Receiver<T>>, StoreError> {
        if self.backend != Backend::Postgres {
            return Ok(None);
        }
        let mut listener = sqlx::postgres::PgListener::connect(&self.url).await?;
        listener.listen(channel).await?;
        let (tx, rx) = mpsc::channel(capacity);
        tokio::spawn(async move {
            loop {
                let result = listener.recv().await;
                if tx.is_closed() {
                    break;
                }
                if let Some(message) = keep(result.as_ref().ok()) {
                    let _ = tx.try_send(message);
                }
                if result.is_err() {
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                }
            }
        });
        Ok(Some(rx))
    }
}

/// Binds a plan row's columns as `$1`–`$8` (key, title, state, mode,
/// approval, version, updated_at, finished_at): the INSERT of a new plan
/// and the UPDATE of a changed one share them.
fn bind_row<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    row: &'q super::PlanColumns,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    query
        .bind(&row.key)
        .bind(&row.title)
        .bind(name_of(&row.state))
        .bind(name_of(&row.mode))
        .bind(name_of(&row.approval))
        .bind(version_i64(row.version))
        .bind(ts(row.updated_at))
        .bind(row.finished_at.map(ts))
}

#[cfg(test)]
mod tests {
    use super::{snapshot_due, SNAPSHOT_EVERY};

    #[test]
    fn a_snapshot_is_due_only_when_a_commit_crosses_an_interval() {
        assert!(snapshot_due(SNAPSHOT_EVERY - 1, SNAPSHOT_EVERY, 10));
        assert!(snapshot_due(SNAPSHOT_EVERY - 2, SNAPSHOT_EVERY + 3, 10));
        assert!(!snapshot_due(SNAPSHOT_EVERY, SNAPSHOT_EVERY + 1, 10));
        assert!(!snapshot_due(1, 2, 10));
    }

    #[test]
    fn a_larger_plan_writes_its_snapshot_as_seldom_as_it_has_subtasks() {
        let due = |subtasks| {
            (0..4096u64)
                .filter(|v| snapshot_due(*v, v + 1, subtasks))
                .count()
        };
        assert_eq!(due(10), 4096 / 32);
        assert_eq!(due(100), 4096 / 128);
        assert_eq!(due(1000), 4096 / 1024);
    }
}
