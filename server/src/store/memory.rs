//! The agent's memories on the same database as the plans: stored with
//! their search terms ([`run_model::memory::terms`]) and ranked by each
//! dialect's own full-text search (SQLite FTS5 with bm25, PostgreSQL's
//! `tsvector` with ts_rank).

use agent::RunId;
use plan_engine::PlanId;
use run_model::memory::{terms, Memory, MemoryId, MemoryKind, NewMemory};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::sql::{read_ts, ts, values_sql};
use super::{SqlStore, StoreError};

const COLUMNS: &str = "m.id, m.kind, m.task, m.body, m.run_id, m.plan_id, m.pinned, m.created_at";

fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(e.to_string())
}

fn memory_of(row: &AnyRow) -> Result<Memory, StoreError> {
    let id: String = row.try_get("id")?;
    let kind: String = row.try_get("kind")?;
    let run_id: Option<String> = row.try_get("run_id")?;
    let plan_id: Option<String> = row.try_get("plan_id")?;
    let pinned: i64 = row.try_get("pinned")?;
    Ok(Memory {
        id: id.parse().map_err(corrupt)?,
        kind: kind.parse::<MemoryKind>().map_err(corrupt)?,
        task: row.try_get("task")?,
        text: row.try_get("body")?,
        run_id: run_id
            .map(|r| r.parse::<RunId>())
            .transpose()
            .map_err(corrupt)?,
        plan_id: plan_id
            .map(|p| p.parse::<PlanId>())
            .transpose()
            .map_err(corrupt)?,
        pinned: pinned != 0,
        created_at: read_ts(row, "created_at")?,
    })
}

impl SqlStore {
    /// One statement per 100 memories (a run leaves at most 26), no
    /// explicit transaction: each all or none, and on SQLite
    /// the write lock is asked for (and waited for) before anything is
    /// read, so a busy database makes it wait rather than fail (a `BEGIN`
    /// that reads first cannot wait for a writer: SQLITE_BUSY at once, as
    /// the Playwright story's run met at the end of a busy run).
    pub(super) async fn insert_memories(
        &self,
        memories: &[NewMemory],
    ) -> Result<Vec<Memory>, StoreError> {
        let stored: Vec<Memory> = memories
            .iter()
            .map(|m| Memory {
                id: uuid::Uuid::new_v4(),
                kind: m.kind,
                task: m.task.clone(),
                text: m.text.clone(),
                run_id: m.run_id,
                plan_id: m.plan_id,
                pinned: false,
                created_at: chrono::Utc::now(),
            })
            .collect();
        for chunk in stored.chunks(100) {
            let sql = values_sql(
                "INSERT INTO memories (id, kind, task, body, terms, run_id, plan_id, pinned, created_at) VALUES ",
                9,
                chunk.len(),
            );
            let mut query = sqlx::query(&sql);
            for memory in chunk {
                // The task is searched with the text: a memory is found by
                // what was asked as much as by what happened.
                let searched = terms(&format!("{} {}", memory.task, memory.text)).join(" ");
                query = query
                    .bind(memory.id.to_string())
                    .bind(memory.kind.to_string())
                    .bind(memory.task.clone())
                    .bind(memory.text.clone())
                    .bind(searched)
                    .bind(memory.run_id.map(|r| r.to_string()))
                    .bind(memory.plan_id.map(|p| p.to_string()))
                    .bind(0i64)
                    .bind(ts(memory.created_at));
            }
            query.execute(&self.pool).await?;
        }
        Ok(stored)
    }

    /// Pinned first, then by rank; nothing when the query has no terms.
    pub(super) async fn search_memories(
        &self,
        query: &str,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<Memory>, StoreError> {
        let wanted = terms(query);
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let rows = if self.is_postgres() {
            // Terms are letters, digits and CJK only: nothing to escape.
            let tsquery = wanted.join(" | ");
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM memories m \
                 WHERE m.search @@ to_tsquery('simple', $1) \
                 ORDER BY m.pinned DESC, ts_rank(m.search, to_tsquery('simple', $1)) DESC, m.created_at DESC \
                 LIMIT $2 OFFSET $3"
            ))
            .bind(tsquery)
            .bind(i64::from(limit))
            .bind(i64::from(offset))
            .fetch_all(&self.pool)
            .await?
        } else {
            let matched: Vec<String> = wanted.iter().map(|t| format!("\"{t}\"")).collect();
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid \
                 WHERE memories_fts MATCH $1 \
                 ORDER BY m.pinned DESC, bm25(memories_fts), m.created_at DESC \
                 LIMIT $2 OFFSET $3"
            ))
            .bind(matched.join(" OR "))
            .bind(i64::from(limit))
            .bind(i64::from(offset))
            .fetch_all(&self.pool)
            .await?
        };
        rows.iter().map(memory_of).collect()
    }

    /// Newest first.
    pub(super) async fn newest_memories(
        &self,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<Memory>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM memories m ORDER BY m.created_at DESC, m.id LIMIT $1 OFFSET $2"
        ))
        .bind(i64::from(limit))
        .bind(i64::from(offset))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(memory_of).collect()
    }

    pub(super) async fn delete_memory(&self, id: MemoryId) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM memories WHERE id = $1")
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(super) async fn pin_memory(
        &self,
        id: MemoryId,
        pinned: bool,
    ) -> Result<Option<Memory>, StoreError> {
        sqlx::query("UPDATE memories SET pinned = $1 WHERE id = $2")
            .bind(i64::from(pinned))
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM memories m WHERE m.id = $1"))
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(memory_of).transpose()
    }
}
