//! A SQLite file's writes on the calling thread: [`Direct`], a rusqlite
//! connection to the same file the sqlx pool reads.
//!
//! sqlx runs each SQLite statement on a worker thread of the connection's
//! own and hands it there and back; a plan commit (`BEGIN`, the plan's row,
//! its events, `COMMIT`, and a ping when the connection left the pool) was
//! five such hand-offs, and on the profile the hand-offs and the kernel's
//! task switches, not SQLite, were most of an agent step's cost. Here the
//! whole commit runs as plain calls into SQLite on the task that commits,
//! a few tens of microseconds in WAL mode, under the store's write turn, so
//! the plan commits and the run log's appends (which run here too) still
//! take turns.
//!
//! What it trades: the commit blocks its tokio worker while SQLite works,
//! and while SQLite's busy handler waits for a writer outside the write
//! turn (another process on the file); such a wait is bounded by the same
//! 5 s `busy_timeout` as the pool's. PostgreSQL and in-memory SQLite (one
//! connection, which another cannot open) commit through sqlx as before.
//!
//! # Layout
//! - [`Direct::open`]: the connection, with the pool's settings;
//! - [`Direct::write`]: one `BEGIN IMMEDIATE` transaction on the calling
//!   thread, for the plan commits and the run log's appends;
//! - [`Direct::commit`]: one [`Batch`], the same statements as
//!   `sql.rs`'s commit.

use std::sync::Mutex;

use plan_engine::EventKind;
use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection, OpenFlags, Transaction, TransactionBehavior};

use super::rows::{
    corrupt, deleted_event, name_of, snapshot_text, statements, stored_events, stored_now, ts,
    version_i64,
};
use super::{Batch, PlanColumns, StoreError, StoredEvent};

/// How long a commit waits for another writer of the file, as the pool.
const BUSY: std::time::Duration = std::time::Duration::from_secs(5);

pub struct Direct {
    /// Held only while a transaction runs, never across an `.await`, and
    /// never waited for: every caller holds the store's write turn.
    conn: Mutex<Connection>,
}

impl Direct {
    /// Opens the database file the pool has created and migrated.
    pub fn open(path: &str) -> Result<Direct, StoreError> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )?;
        conn.busy_timeout(BUSY)?;
        // The pool's settings (sqlx turns foreign keys on by default).
        conn.execute_batch(
            "PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 10000; \
             PRAGMA foreign_keys = ON;",
        )?;
        Ok(Direct {
            conn: Mutex::new(conn),
        })
    }

    /// Runs `work` in one `BEGIN IMMEDIATE` transaction on the calling
    /// thread and commits it; nothing is written when `work` fails. The
    /// caller holds the store's write turn.
    pub fn write<T>(
        &self,
        work: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        // A panic mid-transaction rolled it back (rusqlite's `Transaction`
        // does on drop): the connection is usable.
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = work(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Writes `batch` in one transaction, every changed plan guarded by its
    /// base version; nothing is written when any part fails.
    pub fn commit(&self, batch: &Batch) -> Result<Vec<StoredEvent>, StoreError> {
        self.write(|tx| commit_plans(tx, batch))
    }
}

/// The statements of one [`Batch`] (see [`Direct::commit`]).
fn commit_plans(tx: &Transaction<'_>, batch: &Batch) -> Result<Vec<StoredEvent>, StoreError> {
    let mut stored = Vec::new();
    for write in &batch.plans {
        let row = &write.row;
        let id = row.id.to_string();
        let snapshot = snapshot_text(write)?;
        let changed = match write.base_version {
            None => {
                let mut values = columns(row);
                values.push(Value::Text(id.clone()));
                values.push(Value::Text(ts(row.created_at)));
                tx.prepare_cached(statements::INSERT_PLAN)?
                    .execute(params_from_iter(values))?
            }
            Some(base) => {
                let mut values = columns(row);
                values.push(Value::Text(id.clone()));
                values.push(Value::Integer(version_i64(base)));
                tx.prepare_cached(statements::UPDATE_PLAN)?
                    .execute(params_from_iter(values))?
            }
        };
        if changed != 1 {
            let current: Option<i64> = tx
                .prepare_cached(statements::PLAN_VERSION)?
                .query_row([&id], |r| r.get(0))
                .map(Some)
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(e),
                })?;
            return Err(StoreError::Conflict {
                plan_id: row.id,
                current: current.and_then(|v| u64::try_from(v).ok()).unwrap_or(0),
            });
        }
        if let Some(snapshot) = snapshot {
            tx.prepare_cached(statements::PUT_SNAPSHOT)?
                .execute([&id, &snapshot])?;
        }
        for events in write.events.chunks(statements::EVENTS_PER_INSERT) {
            let sql = statements::insert_events(events.len());
            let mut values = Vec::with_capacity(events.len() * 6);
            for event in events {
                values.push(Value::Text(id.clone()));
                values.push(Value::Integer(version_i64(event.version)));
                values.push(Value::Text(event.actor.to_string()));
                values.push(Value::Text(event.kind.name().to_string()));
                values.push(Value::Text(serde_json::to_string(event).map_err(corrupt)?));
                values.push(Value::Text(ts(event.at)));
            }
            let seqs = tx
                .prepare_cached(&sql)?
                .query_map(params_from_iter(values), |r| r.get(0))?
                .collect::<Result<Vec<i64>, _>>()?;
            stored.extend(stored_events(row.id, events, seqs)?);
        }
        for event in &write.events {
            if let EventKind::CommentAdded { comment } = &event.kind {
                tx.prepare_cached(statements::INSERT_COMMENT)?
                    .execute(params_from_iter([
                        Value::Text(id.clone()),
                        Value::Integer(i64::from(comment.id)),
                        comment
                            .subtask
                            .map_or(Value::Null, |s| Value::Integer(i64::from(s.0))),
                        Value::Text(comment.author.clone()),
                        Value::Text(comment.body.clone()),
                        Value::Text(ts(comment.at)),
                    ]))?;
            }
        }
    }
    let at = stored_now();
    let now = ts(at);
    for (plan_id, actor) in &batch.deleted {
        let id = plan_id.to_string();
        let version: Option<i64> = tx
            .prepare_cached(statements::DELETE_PLAN)?
            .query_row([&now, &id], |r| r.get(0))
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })?;
        if let Some(version) = version {
            let seq: i64 = tx
                .prepare_cached(statements::INSERT_DELETED_EVENT)?
                .query_row(
                    params_from_iter([
                        Value::Text(id.clone()),
                        Value::Integer(version),
                        Value::Text(actor.clone()),
                        Value::Text(now.clone()),
                    ]),
                    |r| r.get(0),
                )?;
            stored.push(deleted_event(seq, *plan_id, version, actor, at));
        }
        tx.prepare_cached(statements::CLEAR_ACTIVE_PLAN)?
            .execute([&id])?;
    }
    for (session, plan) in &batch.active {
        match plan {
            Some(plan) => {
                tx.prepare_cached(statements::SET_ACTIVE)?.execute([
                    session.as_str(),
                    plan.to_string().as_str(),
                    now.as_str(),
                ])?;
            }
            None => {
                tx.prepare_cached(statements::CLEAR_ACTIVE_SESSION)?
                    .execute([session])?;
            }
        }
    }
    stored.sort_unstable_by_key(|e| e.seq);
    Ok(stored)
}

/// A plan row's columns in the order of [`statements::INSERT_PLAN`] and
/// [`statements::UPDATE_PLAN`] (`$1`–`$8`), as `bind_row` binds them.
fn columns(row: &PlanColumns) -> Vec<Value> {
    let text = |s: Option<String>| s.map_or(Value::Null, Value::Text);
    vec![
        text(row.key.clone()),
        Value::Text(row.title.clone()),
        Value::Text(name_of(&row.state)),
        Value::Text(name_of(&row.mode)),
        Value::Text(name_of(&row.approval)),
        Value::Integer(version_i64(row.version)),
        Value::Text(ts(row.updated_at)),
        text(row.finished_at.map(ts)),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::{Batch, PlanStore, PlanWrite, SqlStore, StoreError};
    use plan_engine::{NewPlan, NewSubtask, Op, Plan, SubtaskId, SubtaskState};

    fn now() -> plan_engine::Timestamp {
        chrono::Utc::now()
    }

    fn new_plan(key: &str) -> (Plan, Vec<plan_engine::Event>) {
        let spec = NewPlan {
            key: Some(key.into()),
            title: "p".into(),
            subtasks: vec![NewSubtask::named("a"), NewSubtask::named("b").after(&[1])],
            id: uuid::Uuid::new_v4(),
            ..NewPlan::default()
        };
        Plan::create(&spec, "t", now()).unwrap()
    }

    fn start_first() -> Op {
        Op::SetSubtaskState {
            id: SubtaskId(1),
            state: SubtaskState::InProgress,
            note: None,
            start_next: false,
        }
    }

    fn batch(write: PlanWrite) -> Batch {
        Batch {
            plans: vec![write],
            ..Batch::default()
        }
    }

    /// A new plan with the key `key`, committed.
    async fn stored_plan(store: &SqlStore, key: &str) -> Plan {
        let (plan, created) = new_plan(key);
        store
            .commit(&batch(PlanWrite::of(&plan, None, created)))
            .await
            .unwrap();
        plan
    }

    async fn file_store(dir: &tempfile::TempDir) -> SqlStore {
        let url = format!("sqlite://{}", dir.path().join("plans.db").display());
        let store = SqlStore::connect(&url).await.unwrap();
        assert!(store.direct.is_some(), "a file's plan commits go direct");
        store
    }

    /// The rows commits return are the rows the log reads back: a new
    /// plan, a change and a deletion.
    async fn committed_rows_are_the_logs(store: &SqlStore) {
        let (mut plan, created) = new_plan(&format!("k-{}", uuid::Uuid::new_v4()));
        let mut returned = store
            .commit(&batch(PlanWrite::of(&plan, None, created.clone())))
            .await
            .unwrap();
        let base = plan.version();
        let started = plan.execute(&start_first().into(), "t", now()).unwrap();
        returned.extend(
            store
                .commit(&batch(PlanWrite::of(&plan, Some(base), started.clone())))
                .await
                .unwrap(),
        );
        assert_eq!(store.load(plan.id()).await.unwrap().as_ref(), Some(&plan));
        returned.extend(
            store
                .commit(&Batch {
                    deleted: vec![(plan.id(), "t".into())],
                    ..Batch::default()
                })
                .await
                .unwrap(),
        );
        let read = store.events(Some(plan.id()), 0, 100).await.unwrap();
        assert_eq!(read.len(), created.len() + started.len() + 1);
        assert_eq!(
            serde_json::to_value(&returned).unwrap(),
            serde_json::to_value(&read).unwrap()
        );
        assert!(read.windows(2).all(|w| w[0].seq < w[1].seq));
    }

    #[tokio::test]
    async fn the_rows_a_direct_commit_returns_are_the_rows_the_pool_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        committed_rows_are_the_logs(&file_store(&dir).await).await;
    }

    #[tokio::test]
    async fn the_rows_a_commit_through_sqlx_returns_are_the_rows_it_reads_back() {
        let memory = SqlStore::connect("sqlite::memory:").await.unwrap();
        assert!(
            memory.direct.is_none(),
            "one connection holds a memory database"
        );
        committed_rows_are_the_logs(&memory).await;
        // PostgreSQL too, where `scripts/test` gives one.
        if let Some(url) = std::env::var("PLANBOARD_TEST_DATABASE_URL")
            .ok()
            .filter(|u| !u.is_empty())
        {
            committed_rows_are_the_logs(&SqlStore::connect(&url).await.unwrap()).await;
        }
    }

    #[tokio::test]
    async fn a_direct_commit_from_a_stale_version_is_a_conflict_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = file_store(&dir).await;
        let plan = stored_plan(&store, "k2").await;
        let base = plan.version();
        let mut first = plan.clone();
        let events = first.execute(&start_first().into(), "a", now()).unwrap();
        store
            .commit(&batch(PlanWrite::of(&first, Some(base), events)))
            .await
            .unwrap();
        let logged = store.events(Some(plan.id()), 0, 100).await.unwrap().len();
        // A second writer that also started from `base`.
        let mut second = plan.clone();
        let events = second.execute(&start_first().into(), "b", now()).unwrap();
        let refused = store
            .commit(&batch(PlanWrite::of(&second, Some(base), events)))
            .await;
        assert!(
            matches!(refused, Err(StoreError::Conflict { current, .. }) if current == first.version()),
            "{refused:?}"
        );
        assert_eq!(
            store.events(Some(plan.id()), 0, 100).await.unwrap().len(),
            logged,
            "nothing of the refused commit is stored"
        );
        assert_eq!(
            store.version(plan.id()).await.unwrap(),
            Some(first.version())
        );
    }

    #[tokio::test]
    async fn a_plan_key_taken_is_the_same_sentence_as_through_sqlx() {
        let dir = tempfile::tempdir().unwrap();
        let store = file_store(&dir).await;
        stored_plan(&store, "same").await;
        let (two, events) = new_plan("same");
        let refused = store
            .commit(&batch(PlanWrite::of(&two, None, events)))
            .await;
        match refused {
            Err(StoreError::Constraint(sentence)) => {
                assert!(sentence.contains("plan key"), "{sentence}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(store.load(two.id()).await.unwrap(), None);
    }

    /// A new plan is loaded from its snapshot: a write without one is
    /// refused whole, on either write path.
    #[tokio::test]
    async fn a_new_plan_without_its_snapshot_is_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_store(&dir).await;
        let memory = SqlStore::connect("sqlite::memory:").await.unwrap();
        for store in [&file, &memory] {
            let (plan, created) = new_plan(&format!("k-{}", uuid::Uuid::new_v4()));
            let write = PlanWrite {
                snapshot: None,
                ..PlanWrite::of(&plan, None, created)
            };
            match store.commit(&batch(write)).await {
                Err(StoreError::Corrupt(why)) => assert!(why.contains("snapshot"), "{why}"),
                other => panic!("{other:?}"),
            }
            assert_eq!(store.load(plan.id()).await.unwrap(), None);
        }
    }

    /// A database written before plans' snapshots had their own table
    /// (migrations 1 to 14) opens with its plans whole: the snapshot moved,
    /// and a step's commit no longer rewrites it.
    #[tokio::test]
    async fn a_database_from_before_the_snapshot_table_keeps_its_plans() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("migrations");
        std::fs::create_dir(&old).unwrap();
        let all = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations/sqlite");
        for entry in std::fs::read_dir(&all).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if name.as_str() < "0015" {
                std::fs::copy(&path, old.join(&name)).unwrap();
            }
        }
        let url = format!(
            "sqlite://{}?mode=rwc",
            dir.path().join("plans.db").display()
        );
        let (mut plan, _) = new_plan("old");
        plan.execute(&start_first().into(), "t", now()).unwrap();
        {
            sqlx::any::install_default_drivers();
            let pool = sqlx::any::AnyPoolOptions::new()
                .max_connections(1)
                .connect(&url)
                .await
                .unwrap();
            let before = sqlx::migrate::Migrator::new(old.as_path()).await.unwrap();
            assert_eq!(before.iter().count(), 14);
            before.run(&pool).await.unwrap();
            sqlx::query(
                "INSERT INTO plans (id, plan_key, title, state, mode, approval, version, \
                 created_at, updated_at, snapshot) \
                 VALUES ($1, 'old', 'p', 'running', 'simple', 'none', $2, $3, $3, $4)",
            )
            .bind(plan.id().to_string())
            .bind(i64::try_from(plan.version()).unwrap())
            .bind(super::ts(now()))
            .bind(serde_json::to_string(&plan).unwrap())
            .execute(&pool)
            .await
            .unwrap();
            pool.close().await;
        }
        let store = SqlStore::connect(&url).await.unwrap();
        assert_eq!(store.load_all().await.unwrap(), vec![plan.clone()]);
        // And it goes on from there.
        let base = plan.version();
        let done = plan
            .execute(
                &Op::SetSubtaskState {
                    id: SubtaskId(1),
                    state: SubtaskState::Done,
                    note: None,
                    start_next: false,
                }
                .into(),
                "t",
                now(),
            )
            .unwrap();
        store
            .commit(&batch(PlanWrite::of(&plan, Some(base), done)))
            .await
            .unwrap();
        assert_eq!(store.load(plan.id()).await.unwrap(), Some(plan));
    }
}
