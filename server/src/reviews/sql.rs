//! [`ReviewStore`] on the server's SQL store, on the same database as the
//! plans. A review leaves a memory for the agent; changing the review
//! forgets that memory and leaves a new one.

use std::collections::HashMap;

use plan_engine::PlanId;
use run_model::{MemoryId, NewMemory, Review, ReviewVerdict, SubtaskNote};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::ReviewStore;
use crate::memories::MemoryStore;
use crate::store::sql::{corrupt, read_ts, ts};
use crate::store::{SqlStore, StoreError};

const COLUMNS: &str =
    "id, plan_id, reviewer, verdict, note, subtasks, plan_version, created_at, updated_at";

fn review_of(row: &AnyRow) -> Result<Review, StoreError> {
    let id: String = row.try_get("id")?;
    let plan_id: String = row.try_get("plan_id")?;
    let verdict: String = row.try_get("verdict")?;
    let subtasks: String = row.try_get("subtasks")?;
    let version: i64 = row.try_get("plan_version")?;
    Ok(Review {
        id: id.parse().map_err(corrupt)?,
        plan_id: plan_id.parse().map_err(corrupt)?,
        reviewer: row.try_get("reviewer")?,
        verdict: verdict.parse().map_err(corrupt)?,
        note: row.try_get("note")?,
        subtasks: serde_json::from_str::<Vec<SubtaskNote>>(&subtasks).map_err(corrupt)?,
        plan_version: u64::try_from(version).map_err(corrupt)?,
        created_at: read_ts(row, "created_at")?,
        updated_at: read_ts(row, "updated_at")?,
    })
}

#[async_trait::async_trait]
impl ReviewStore for SqlStore {
    /// Stores `review` as its reviewer's review of its plan (replacing
    /// theirs, keeping its id and first date) with `memory` as the memory
    /// it leaves. Statements, not a transaction (see `insert_memories`):
    /// the memory is made first and the old one forgotten last, so a crash
    /// in between leaves one memory too many, never a review without one.
    async fn put_review(
        &self,
        review: &Review,
        memory: Option<&NewMemory>,
    ) -> Result<Review, StoreError> {
        let old: Option<Option<String>> =
            sqlx::query("SELECT memory_id FROM reviews WHERE plan_id = $1 AND reviewer = $2")
                .bind(review.plan_id.to_string())
                .bind(review.reviewer.clone())
                .fetch_optional(&self.pool)
                .await?
                .map(|row| row.try_get("memory_id"))
                .transpose()?;
        let memory_id: Option<MemoryId> = match memory {
            Some(m) => self
                .remember(std::slice::from_ref(m))
                .await?
                .first()
                .map(|m| m.id),
            None => None,
        };
        let subtasks = serde_json::to_string(&review.subtasks).map_err(corrupt)?;
        sqlx::query(
            "INSERT INTO reviews (id, plan_id, reviewer, verdict, note, subtasks, plan_version, memory_id, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT (plan_id, reviewer) DO UPDATE SET verdict = excluded.verdict, note = excluded.note, \
             subtasks = excluded.subtasks, plan_version = excluded.plan_version, memory_id = excluded.memory_id, \
             updated_at = excluded.updated_at",
        )
        .bind(review.id.to_string())
        .bind(review.plan_id.to_string())
        .bind(review.reviewer.clone())
        .bind(review.verdict.to_string())
        .bind(review.note.clone())
        .bind(subtasks)
        .bind(i64::try_from(review.plan_version).map_err(corrupt)?)
        .bind(memory_id.map(|m| m.to_string()))
        .bind(ts(review.created_at))
        .bind(ts(review.updated_at))
        .execute(&self.pool)
        .await?;
        if let Some(Some(old)) = old {
            if let Ok(old) = old.parse::<MemoryId>() {
                self.forget(old).await?;
            }
        }
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM reviews WHERE plan_id = $1 AND reviewer = $2"
        ))
        .bind(review.plan_id.to_string())
        .bind(review.reviewer.clone())
        .fetch_one(&self.pool)
        .await?;
        review_of(&row)
    }

    /// Removes a reviewer's review and the memory it left; whether there
    /// was one.
    async fn delete_review(&self, plan: PlanId, reviewer: &str) -> Result<bool, StoreError> {
        let row = sqlx::query("SELECT memory_id FROM reviews WHERE plan_id = $1 AND reviewer = $2")
            .bind(plan.to_string())
            .bind(reviewer.to_string())
            .fetch_optional(&self.pool)
            .await?;
        let Some(row) = row else {
            return Ok(false);
        };
        let memory: Option<String> = row.try_get("memory_id")?;
        let done = sqlx::query("DELETE FROM reviews WHERE plan_id = $1 AND reviewer = $2")
            .bind(plan.to_string())
            .bind(reviewer.to_string())
            .execute(&self.pool)
            .await?;
        if let Some(memory) = memory.and_then(|m| m.parse::<MemoryId>().ok()) {
            self.forget(memory).await?;
        }
        Ok(done.rows_affected() > 0)
    }

    /// A plan's reviews, oldest first.
    async fn plan_reviews(&self, plan: PlanId) -> Result<Vec<Review>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM reviews WHERE plan_id = $1 ORDER BY created_at, reviewer"
        ))
        .bind(plan.to_string())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(review_of).collect()
    }

    /// Reviews, newest change first, of one verdict or reviewer if asked.
    async fn list_reviews(
        &self,
        verdict: Option<ReviewVerdict>,
        reviewer: Option<&str>,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<Review>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM reviews \
             WHERE ($1 IS NULL OR verdict = $1) AND ($2 IS NULL OR reviewer = $2) \
             ORDER BY updated_at DESC, id LIMIT $3 OFFSET $4"
        ))
        .bind(verdict.map(|v| v.to_string()))
        .bind(reviewer.map(str::to_string))
        .bind(i64::from(limit))
        .bind(i64::from(offset))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(review_of).collect()
    }

    /// Every reviewed plan with its verdicts (History's column and filter,
    /// the queue's exclusion): a few bytes per review.
    async fn verdicts(&self) -> Result<HashMap<PlanId, Vec<ReviewVerdict>>, StoreError> {
        let rows = sqlx::query("SELECT plan_id, verdict FROM reviews ORDER BY created_at")
            .fetch_all(&self.pool)
            .await?;
        let mut out: HashMap<PlanId, Vec<ReviewVerdict>> = HashMap::new();
        for row in rows {
            let plan: String = row.try_get("plan_id")?;
            let verdict: String = row.try_get("verdict")?;
            out.entry(plan.parse().map_err(corrupt)?)
                .or_default()
                .push(verdict.parse().map_err(corrupt)?);
        }
        Ok(out)
    }
}
