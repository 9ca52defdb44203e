//! [`RunLogStore`] on the server's SQL store, on the same database as
//! the plans; on PostgreSQL, appends wake other processes' readers and
//! reply deltas travel between processes by `NOTIFY`.

use agent::RunId;
use async_trait::async_trait;
use sqlx::Row;

use super::store::{NewRunEntry, RunLogStore, StoredRunEntry};
use crate::store::sql::{corrupt, in_values_order, read_ts, ts, values_sql};
use crate::store::{SqlStore, StoreError};

fn entry_of(row: &sqlx::any::AnyRow) -> Result<StoredRunEntry, StoreError> {
    let run_id: String = row.try_get("run_id")?;
    let plan_id: Option<String> = row.try_get("plan_id")?;
    let entry: String = row.try_get("entry")?;
    Ok(StoredRunEntry {
        seq: row.try_get("seq")?,
        run_id: run_id.parse().map_err(corrupt)?,
        plan_id: plan_id.map(|p| p.parse()).transpose().map_err(corrupt)?,
        kind: row.try_get::<String, _>("kind")?.parse().map_err(corrupt)?,
        at: read_ts(row, "at")?,
        entry: serde_json::from_str(&entry).map_err(corrupt)?,
    })
}

/// Where a page of one run's log starts.
enum Page {
    /// The entries after this seq, oldest first.
    After(i64),
    /// The entries before this seq, newest first.
    Before(i64),
}

impl SqlStore {
    async fn run_log_page(
        &self,
        run: RunId,
        page: Page,
        limit: u32,
    ) -> Result<Vec<StoredRunEntry>, StoreError> {
        let (condition, order, seq) = match page {
            Page::After(seq) => ("seq > $2", "seq", seq),
            Page::Before(seq) => ("seq < $2", "seq DESC", seq),
        };
        let rows = sqlx::query(&format!(
            "SELECT seq, run_id, plan_id, kind, entry, at FROM run_log \
             WHERE run_id = $1 AND {condition} ORDER BY {order} LIMIT $3"
        ))
        .bind(run.to_string())
        .bind(seq)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(entry_of).collect()
    }
}

/// Run-log rows per `INSERT`.
const APPEND_ROWS: usize = 500;

/// The `INSERT` of `rows` run-log entries, returning their seqs.
fn append_sql(rows: usize) -> String {
    values_sql(
        "INSERT INTO run_log (run_id, plan_id, kind, entry, at) VALUES ",
        5,
        rows,
    ) + " RETURNING seq"
}

/// When an entry is stored: with microseconds, so the entry streamed now
/// equals the one read back.
fn stored_at(e: &NewRunEntry) -> chrono::DateTime<chrono::Utc> {
    chrono::SubsecRound::trunc_subsecs(e.at, 6)
}

/// The entries of one `INSERT` with the seqs it returned.
fn numbered(chunk: &[NewRunEntry], seqs: Vec<i64>) -> Result<Vec<StoredRunEntry>, StoreError> {
    Ok(chunk
        .iter()
        .zip(in_values_order(seqs, chunk.len(), "run-log rows")?)
        .map(|(e, seq)| StoredRunEntry {
            seq,
            run_id: e.run,
            plan_id: e.plan,
            kind: e.kind,
            at: stored_at(e),
            entry: e.entry.clone(),
        })
        .collect())
}

/// Wakes other processes' run-log readers after an append (PostgreSQL only).
const RUN_LOG_CHANNEL: &str = "planboard_run_log";
/// Carries reply deltas between processes (PostgreSQL only).
const DELTA_CHANNEL: &str = "planboard_run_delta";

#[async_trait]
impl RunLogStore for SqlStore {
    async fn append_run_log(
        &self,
        entries: &[NewRunEntry],
    ) -> Result<Vec<StoredRunEntry>, StoreError> {
        let mut stored = Vec::with_capacity(entries.len());
        let _turn = self.write_turn().await;
        // A SQLite file appends on the calling thread, as plans commit.
        if let Some(direct) = &self.direct {
            return direct.write(|tx| {
                for chunk in entries.chunks(APPEND_ROWS) {
                    let mut values = Vec::with_capacity(chunk.len() * 5);
                    for e in chunk {
                        use rusqlite::types::Value;
                        values.push(Value::Text(e.run.to_string()));
                        values.push(e.plan.map_or(Value::Null, |p| Value::Text(p.to_string())));
                        values.push(Value::Text(e.kind.to_string()));
                        values.push(Value::Text(e.entry.to_string()));
                        values.push(Value::Text(ts(stored_at(e))));
                    }
                    let seqs = tx
                        .prepare_cached(&append_sql(chunk.len()))?
                        .query_map(rusqlite::params_from_iter(values), |r| r.get(0))?
                        .collect::<Result<Vec<i64>, _>>()?;
                    stored.extend(numbered(chunk, seqs)?);
                }
                Ok(stored)
            });
        }
        let mut tx = self.pool.begin().await?;
        if self.is_postgres() {
            // Writers take turns, so seqs are handed out in commit order and
            // a reader that follows the log by seq never skips a row that
            // commits late (the plan log does the same).
            sqlx::query("LOCK TABLE run_log IN EXCLUSIVE MODE")
                .execute(&mut *tx)
                .await?;
        }
        for chunk in entries.chunks(APPEND_ROWS) {
            let sql = append_sql(chunk.len());
            let mut query = sqlx::query_scalar::<_, i64>(&sql);
            for e in chunk {
                query = query
                    .bind(e.run.to_string())
                    .bind(e.plan.map(|p| p.to_string()))
                    .bind(e.kind.to_string())
                    .bind(e.entry.to_string())
                    .bind(ts(stored_at(e)));
            }
            stored.extend(numbered(chunk, query.fetch_all(&mut *tx).await?)?);
        }
        if self.is_postgres() {
            // Delivered when (and only if) the transaction commits.
            sqlx::query(&format!("NOTIFY {RUN_LOG_CHANNEL}"))
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(stored)
    }

    async fn run_log_before(
        &self,
        run: RunId,
        before: i64,
        limit: u32,
    ) -> Result<Vec<StoredRunEntry>, StoreError> {
        self.run_log_page(run, Page::Before(before), limit).await
    }

    async fn run_log_len(&self, run: RunId) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM run_log WHERE run_id = $1")
            .bind(run.to_string())
            .fetch_one(&self.pool)
            .await?;
        Ok(n.max(0) as u64)
    }

    async fn run_log_calls(&self, runs: &[RunId]) -> Result<Vec<StoredRunEntry>, StoreError> {
        let mut out = Vec::new();
        // A few hundred runs at most (the needs inbox looks at 500), in
        // statements of 100 ids; the kinds as the partial index
        // `run_log_calls` names them, so the index answers.
        for chunk in runs.chunks(100) {
            let ids = (0..chunk.len())
                .map(|i| format!("${}", i + 1))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "SELECT seq, run_id, plan_id, kind, entry, at FROM run_log \
                 WHERE run_id IN ({ids}) AND kind IN ('tool_approval', 'tool_decision') \
                 ORDER BY seq"
            );
            let mut query = sqlx::query(&sql);
            for run in chunk {
                query = query.bind(run.to_string());
            }
            let rows = query.fetch_all(&self.pool).await?;
            out.extend(rows.iter().map(entry_of).collect::<Result<Vec<_>, _>>()?);
        }
        out.sort_by_key(|e| e.seq);
        Ok(out)
    }

    async fn run_log_of_kinds(
        &self,
        run: RunId,
        kinds: &[run_model::EntryKind],
    ) -> Result<Vec<StoredRunEntry>, StoreError> {
        if kinds.is_empty() {
            return Ok(Vec::new());
        }
        let marks = (0..kinds.len())
            .map(|i| format!("${}", i + 2))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT seq, run_id, plan_id, kind, entry, at FROM run_log \
             WHERE run_id = $1 AND kind IN ({marks}) ORDER BY seq"
        );
        let mut query = sqlx::query(&sql).bind(run.to_string());
        for kind in kinds {
            query = query.bind(kind.as_str());
        }
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter().map(entry_of).collect()
    }

    async fn run_log_since(
        &self,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredRunEntry>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, run_id, plan_id, kind, entry, at FROM run_log WHERE seq > $1 \
             ORDER BY seq LIMIT $2",
        )
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(entry_of).collect()
    }

    async fn last_run_log_seq(&self) -> Result<i64, StoreError> {
        self.max_seq("run_log").await
    }

    async fn listen_run_log(&self) -> Result<Option<tokio::sync::mpsc::Receiver<()>>, StoreError> {
        self.listen_on(RUN_LOG_CHANNEL).await
    }

    async fn send_run_deltas(&self, payload: &str) -> Result<(), StoreError> {
        if self.is_postgres() {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(DELTA_CHANNEL)
                .bind(payload)
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }

    async fn listen_run_deltas(
        &self,
    ) -> Result<Option<tokio::sync::mpsc::Receiver<String>>, StoreError> {
        // Deltas are a live view only: a burst beyond the queue is dropped.
        self.listen_with(DELTA_CHANNEL, 1024, |n| n.map(|n| n.payload().to_string()))
            .await
    }

    async fn run_log(
        &self,
        run: RunId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredRunEntry>, StoreError> {
        self.run_log_page(run, Page::After(after), limit).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use agent::run::EntryKind;

    use super::*;

    #[tokio::test]
    async fn on_sqlite_an_append_waits_for_the_writing_turn_another_write_holds() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("turns.db").display());
        let store = Arc::new(SqlStore::connect(&url).await.unwrap());
        let turn = store.write_turn().await;
        assert!(turn.is_some(), "SQLite's writers take turns");
        let writer = {
            let store = store.clone();
            tokio::spawn(async move {
                let entry = NewRunEntry {
                    run: RunId::new_v4(),
                    plan: None,
                    kind: EntryKind::StateChanged,
                    at: chrono::Utc::now(),
                    entry: serde_json::json!({"kind": "state_changed"}),
                };
                store.append_run_log(&[entry]).await
            })
        };
        // Long enough for an append that does not wait to be over many
        // times; one that waits never finishes while the turn is held.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!writer.is_finished(), "the append waited for the turn");
        drop(turn);
        let stored = writer.await.unwrap().unwrap();
        assert_eq!(stored.len(), 1, "then it wrote");
    }
}
