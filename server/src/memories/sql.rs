//! [`MemoryStore`] on the server's SQL store: memories stored with
//! their search terms ([`run_model::memory::terms`]) and ranked by each
//! dialect's own full-text search (SQLite FTS5 with bm25, PostgreSQL's
//! `tsvector` with ts_rank).

use std::collections::HashMap;

use agent::RunId;
use plan_engine::PlanId;
use run_model::memory::{terms, Memory, MemoryId, MemoryKind, NewMemory};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::embeddings::{decode, encode, CHUNK};
use super::MemoryStore;
use crate::store::sql::values_sql;
use crate::store::sql::{corrupt, read_ts, ts};
use crate::store::{SqlStore, StoreError};

const COLUMNS: &str = "m.id, m.kind, m.task, m.body, m.run_id, m.plan_id, m.pinned, m.created_at";

/// Rows one recall ranks at most per search (see `search_memories`).
const CANDIDATES: i64 = 1_000;
/// The filter of `ranked`'s rows when only what people taught counts.
const TAUGHT_KINDS: &str = " AND k.kind IN ('correction', 'rule')";
/// Pinned memories looked at per recall, newest first.
const PINNED_LOOKED_AT: u32 = 1_000;

/// What a memory is searched by: the task with the text, so a memory is
/// found by what was asked as much as by what happened.
fn searched_terms(task: &str, text: &str) -> String {
    terms(&format!("{task} {text}")).join(" ")
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

#[async_trait::async_trait]
impl MemoryStore for SqlStore {
    /// One statement per 100 memories (a run leaves at most 26), no
    /// explicit transaction: each all or none, and on SQLite
    /// the write lock is asked for (and waited for) before anything is
    /// read, so a busy database makes it wait rather than fail (a `BEGIN`
    /// that reads first cannot wait for a writer: SQLITE_BUSY at once, as
    /// the Playwright story's run met at the end of a busy run).
    async fn remember(&self, memories: &[NewMemory]) -> Result<Vec<Memory>, StoreError> {
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
                let searched = searched_terms(&memory.task, &memory.text);
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

    async fn memories(
        &self,
        query: Option<&str>,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<Memory>, StoreError> {
        match query.map(str::trim).filter(|q| !q.is_empty()) {
            Some(q) => self.search_memories(q, offset, limit, false).await,
            None => self.newest_memories(offset, limit).await,
        }
    }

    async fn taught_memories(&self, query: &str, limit: u32) -> Result<Vec<Memory>, StoreError> {
        self.search_memories(query, 0, limit, true).await
    }

    async fn forget(&self, id: MemoryId) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM memories WHERE id = $1")
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        self.drop_memory_embedding(id).await?;
        Ok(done.rows_affected() > 0)
    }

    /// Rewrites a memory's text (and its search terms: the FTS5 table and
    /// PostgreSQL's term counts follow by their triggers).
    async fn edit_memory(&self, id: MemoryId, text: &str) -> Result<Option<Memory>, StoreError> {
        let Some(memory) = self.memory(id).await? else {
            return Ok(None);
        };
        let searched = searched_terms(&memory.task, text);
        sqlx::query("UPDATE memories SET body = $1, terms = $2 WHERE id = $3")
            .bind(text.to_string())
            .bind(searched)
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        // Its vector was of the old text.
        self.drop_memory_embedding(id).await?;
        self.memory(id).await
    }

    async fn pin(&self, id: MemoryId, pinned: bool) -> Result<Option<Memory>, StoreError> {
        sqlx::query("UPDATE memories SET pinned = $1 WHERE id = $2")
            .bind(i64::from(pinned))
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        self.memory(id).await
    }

    /// The vectors `model` made of these memories (those it has not made,
    /// or that do not read back, are missing from the map).
    async fn memory_embeddings(
        &self,
        ids: &[MemoryId],
        model: &str,
    ) -> Result<HashMap<MemoryId, Vec<f32>>, StoreError> {
        let mut out = HashMap::new();
        for chunk in ids.chunks(CHUNK) {
            let placeholders: Vec<String> =
                (0..chunk.len()).map(|i| format!("${}", i + 2)).collect();
            let sql = format!(
                "SELECT memory_id, vector FROM memory_embeddings WHERE model = $1 AND memory_id IN ({})",
                placeholders.join(", ")
            );
            let mut query = sqlx::query(&sql).bind(model.to_string());
            for id in chunk {
                query = query.bind(id.to_string());
            }
            for row in query.fetch_all(&self.pool).await? {
                let id: String = row.try_get("memory_id")?;
                let vector: String = row.try_get("vector")?;
                if let (Ok(id), Some(vector)) = (id.parse(), decode(&vector)) {
                    out.insert(id, vector);
                }
            }
        }
        Ok(out)
    }

    /// Keeps `model`'s vectors of these memories (replacing another
    /// model's). A memory forgotten meanwhile keeps none: the rows are
    /// written only for memories that still exist.
    async fn put_memory_embeddings(
        &self,
        model: &str,
        vectors: &[(MemoryId, Vec<f32>)],
    ) -> Result<(), StoreError> {
        for chunk in vectors.chunks(CHUNK / 3) {
            let sql = values_sql(
                "INSERT INTO memory_embeddings (memory_id, model, vector) VALUES ",
                3,
                chunk.len(),
            ) + " ON CONFLICT (memory_id) DO UPDATE SET model = excluded.model, vector = excluded.vector";
            let mut query = sqlx::query(&sql);
            for (id, vector) in chunk {
                query = query
                    .bind(id.to_string())
                    .bind(model.to_string())
                    .bind(encode(vector));
            }
            query.execute(&self.pool).await?;
            // A memory forgotten while its vector was being made leaves
            // none. Only the rows just written are looked at: the whole
            // table's anti-join cost grew with every memory ever embedded.
            let ids: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!(
                "DELETE FROM memory_embeddings WHERE memory_id IN ({}) AND NOT EXISTS \
                 (SELECT 1 FROM memories m WHERE m.id = memory_embeddings.memory_id)",
                ids.join(", ")
            );
            let mut query = sqlx::query(&sql);
            for (id, _) in chunk {
                query = query.bind(id.to_string());
            }
            query.execute(&self.pool).await?;
        }
        Ok(())
    }
}

/// The searches behind [`MemoryStore::memories`] and
/// [`MemoryStore::taught_memories`].
impl SqlStore {
    /// Pinned first, then by rank; nothing when the query has no terms.
    ///
    /// The ranking works on a bounded set of candidates, so its cost does
    /// not grow with the table: the rows holding the query's rare terms
    /// (whose document counts add up to at most [`CANDIDATES`]), then, if
    /// those are too few, the rows holding all its common terms (then all
    /// but the commonest, …), each set cut to its newest [`CANDIDATES`].
    /// Pinned memories that share any term come first, found by their
    /// own index.
    ///
    /// `taught`: only what people taught (corrections and rules, with the
    /// pinned memories), and the pinned rules that name no task (they
    /// hold for every task) even when they share no term: recall's
    /// second search, so summaries and reviews never crowd them out.
    async fn search_memories(
        &self,
        query: &str,
        offset: u32,
        limit: u32,
        taught: bool,
    ) -> Result<Vec<Memory>, StoreError> {
        let wanted = terms(query);
        if wanted.is_empty() && !taught {
            return Ok(Vec::new());
        }
        let need = (offset + limit) as usize;
        let mut found = self.pinned_sharing(&wanted, taught).await?;
        if wanted.is_empty() {
            found.truncate(need);
            return Ok(found.into_iter().skip(offset as usize).collect());
        }
        let counts = self.term_counts(&wanted).await?;
        let mut present: Vec<(String, i64)> = wanted
            .into_iter()
            .filter_map(|t| counts.get(&t).filter(|n| **n > 0).map(|n| (t, *n)))
            .collect();
        present.sort_by_key(|(_, n)| *n);
        let mut rare = 0;
        let mut sum = 0;
        while rare < present.len() && sum + present[rare].1 <= CANDIDATES {
            sum += present[rare].1;
            rare += 1;
        }
        let names =
            |range: &[(String, i64)]| range.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>();
        let mut searches: Vec<(Vec<String>, bool)> = Vec::new();
        if rare > 0 {
            searches.push((names(&present[..rare]), false));
        }
        // Then the rows holding all the common terms, then all but the
        // commonest, … down to the least common alone.
        for k in (rare + 1..=present.len()).rev() {
            searches.push((names(&present[rare..k]), true));
        }
        for (terms, all) in searches {
            if found.len() >= need {
                break;
            }
            for memory in self.ranked(&terms, all, need, taught).await? {
                if !found.iter().any(|m| m.id == memory.id) {
                    found.push(memory);
                }
            }
        }
        Ok(found
            .into_iter()
            .skip(offset as usize)
            .take(limit as usize)
            .collect())
    }

    /// The best `need` rows holding any (or `all`) of `terms`, out of the
    /// newest [`CANDIDATES`] that do; pinned ones left out (they come
    /// first anyway); only corrections and rules when `taught`.
    async fn ranked(
        &self,
        terms: &[String],
        all: bool,
        need: usize,
        taught: bool,
    ) -> Result<Vec<Memory>, StoreError> {
        // Kinds are serde's names: nothing to escape.
        let kinds = if taught { TAUGHT_KINDS } else { "" };
        let rows = if self.is_postgres() {
            // Terms are letters, digits and CJK only: nothing to escape.
            let tsquery = terms.join(if all { " & " } else { " | " });
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM (SELECT * FROM memories k WHERE search @@ to_tsquery('simple', $1) \
                 AND pinned = 0{kinds} ORDER BY created_at DESC LIMIT $2) m \
                 ORDER BY ts_rank(m.search, to_tsquery('simple', $1)) DESC, m.created_at DESC LIMIT $3"
            ))
            .bind(tsquery)
            .bind(CANDIDATES)
            .bind(need as i64)
            .fetch_all(&self.pool)
            .await?
        } else {
            let quoted: Vec<String> = terms.iter().map(|t| format!("\"{t}\"")).collect();
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM (SELECT memories_fts.rowid AS rowid, bm25(memories_fts) AS score \
                 FROM memories_fts JOIN memories k ON k.rowid = memories_fts.rowid \
                 WHERE memories_fts MATCH $1{kinds} ORDER BY memories_fts.rowid DESC LIMIT $2) hits \
                 JOIN memories m ON m.rowid = hits.rowid WHERE m.pinned = 0 \
                 ORDER BY hits.score, m.created_at DESC LIMIT $3"
            ))
            .bind(quoted.join(if all { " AND " } else { " OR " }))
            .bind(CANDIDATES)
            .bind(need as i64)
            .fetch_all(&self.pool)
            .await?
        };
        rows.iter().map(memory_of).collect()
    }

    /// How many memories hold each of `terms` (absent: none).
    async fn term_counts(&self, terms: &[String]) -> Result<HashMap<String, i64>, StoreError> {
        let marks: Vec<String> = (1..=terms.len()).map(|i| format!("${i}")).collect();
        let sql = if self.is_postgres() {
            format!(
                "SELECT term, docs FROM memory_terms WHERE term IN ({})",
                marks.join(", ")
            )
        } else {
            format!(
                "SELECT term, doc AS docs FROM memories_vocab WHERE term IN ({})",
                marks.join(", ")
            )
        };
        let mut query = sqlx::query(&sql);
        for t in terms {
            query = query.bind(t.clone());
        }
        let mut counts = HashMap::new();
        for row in query.fetch_all(&self.pool).await? {
            counts.insert(
                row.try_get::<String, _>("term")?,
                row.try_get::<i64, _>("docs")?,
            );
        }
        Ok(counts)
    }

    /// Pinned memories sharing any of `terms`, those sharing the most
    /// first, then the newest (pinned ones are few: people pin them);
    /// with `every_task`, the rules that name no task too, after those.
    async fn pinned_sharing(
        &self,
        wanted: &[String],
        every_task: bool,
    ) -> Result<Vec<Memory>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS}, m.terms FROM memories m WHERE m.pinned = 1 \
             ORDER BY m.created_at DESC LIMIT {PINNED_LOOKED_AT}"
        ))
        .fetch_all(&self.pool)
        .await?;
        let mut hits: Vec<(usize, Memory)> = Vec::new();
        for row in &rows {
            let held: String = row.try_get("terms")?;
            let shared = held
                .split(' ')
                .filter(|t| wanted.iter().any(|w| w == t))
                .count();
            let memory = memory_of(row)?;
            let everywhere =
                every_task && memory.kind == MemoryKind::Rule && memory.task.trim().is_empty();
            if shared > 0 || everywhere {
                hits.push((shared, memory));
            }
        }
        hits.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.created_at.cmp(&a.1.created_at)));
        Ok(hits.into_iter().map(|(_, m)| m).collect())
    }

    /// Newest first.
    async fn newest_memories(&self, offset: u32, limit: u32) -> Result<Vec<Memory>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM memories m ORDER BY m.created_at DESC, m.id LIMIT $1 OFFSET $2"
        ))
        .bind(i64::from(limit))
        .bind(i64::from(offset))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(memory_of).collect()
    }

    async fn memory(&self, id: MemoryId) -> Result<Option<Memory>, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM memories m WHERE m.id = $1"))
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(memory_of).transpose()
    }
}
