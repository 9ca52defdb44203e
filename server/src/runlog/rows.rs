//! Durable runs of planboard's own agent: [`RunStore`], the runs' rows,
//! and its SQL implementation on the same database as the plans. Below
//! the concepts that read runs (templates, webhooks, reviews) and the
//! runs' controller (`runs/`), which all use it.

use agent::run::{RunRecord, RunState};
use agent::RunId;
use async_trait::async_trait;
use plan_engine::{PlanId, Timestamp};
use sqlx::Row;

use crate::store::sql::{corrupt, read_ts, ts};
use crate::store::{SqlStore, StoreError};

/// The runs' rows: their records, leases and retention.
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Inserts or replaces the run's row (the lease is left as it is).
    async fn save_run(&self, run: &RunRecord) -> Result<(), StoreError>;
    async fn load_run(&self, id: RunId) -> Result<Option<RunRecord>, StoreError>;
    /// When the run was first saved and last saved (an MCP task's times).
    async fn run_times(&self, id: RunId) -> Result<Option<(Timestamp, Timestamp)>, StoreError>;
    /// Newest first.
    async fn list_runs(
        &self,
        state: Option<RunState>,
        plan: Option<PlanId>,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<RunRecord>, StoreError>;
    /// How many runs are in each state (for `/metrics`).
    async fn run_counts(&self) -> Result<Vec<(RunState, u64)>, StoreError>;
    /// Every plan an agent's run made (the lists' "agent" filter).
    async fn agent_plans(&self) -> Result<std::collections::HashSet<PlanId>, StoreError>;
    /// The runs on these plans, oldest first (so the newest wins in a map).
    async fn runs_on(&self, plans: &[PlanId]) -> Result<Vec<RunRecord>, StoreError>;
    /// Takes every unfinished run whose lease has expired, or that `owner`
    /// held before (a restart of the same instance), until `until_ms`.
    async fn claim_runs(
        &self,
        owner: &str,
        now_ms: i64,
        until_ms: i64,
    ) -> Result<Vec<RunRecord>, StoreError>;
    /// Extends `owner`'s leases; returns the runs it still holds.
    async fn renew_runs(&self, owner: &str, until_ms: i64) -> Result<Vec<RunId>, StoreError>;
    async fn release_run(&self, id: RunId) -> Result<(), StoreError>;
    /// Plans whose run is driven under a live lease: their subtasks are
    /// being worked on, however quiet the plan looks.
    async fn leased_plans(&self, now_ms: i64) -> Result<Vec<PlanId>, StoreError>;
    /// Deletes the logs of the runs that ended before `before` (their
    /// rows stay; runs a person keeps are left alone); how many entries
    /// went.
    async fn purge_run_logs(&self, before: Timestamp) -> Result<u64, StoreError>;
    /// Rewrites a finished run's record (a person keeping its files, the
    /// workspace retention noting it removed them) without moving its
    /// `updated_at`: the time it ended, which the retentions count from.
    /// `false` when there is no such finished run.
    async fn amend_finished_run(&self, run: &RunRecord) -> Result<bool, StoreError>;
    /// Of `ids`, the finished runs whose row last changed before `before`.
    async fn finished_before(
        &self,
        ids: &[RunId],
        before: Timestamp,
    ) -> Result<Vec<RunRecord>, StoreError>;
    /// The database's part of the storage view: its size and what it
    /// holds (the workspaces and the retentions are the caller's to fill).
    async fn storage_counts(&self) -> Result<run_model::StorageReport, StoreError>;
    /// The runs started again from `plan`'s work, oldest first.
    async fn runs_again_of(&self, plan: PlanId) -> Result<Vec<RunRecord>, StoreError>;
}

fn record_of(row: &sqlx::any::AnyRow) -> Result<RunRecord, StoreError> {
    let text: String = row.try_get("record")?;
    serde_json::from_str(&text).map_err(corrupt)
}

const UNFINISHED: &str = "state NOT IN ('done', 'failed', 'cancelled')";
/// A run a person keeps ([`RunRecord::kept`]), matched in its record's
/// JSON: a quote inside a string value is escaped there, so only the
/// field itself matches.
const KEPT: &str = "%\"kept\":true%";

#[async_trait]
impl RunStore for SqlStore {
    async fn save_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        let record = serde_json::to_string(run).map_err(corrupt)?;
        let now = ts(chrono::Utc::now());
        sqlx::query(
            "INSERT INTO runs (id, plan_id, state, record, created_at, updated_at, again_of) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (id) DO UPDATE SET plan_id = $2, state = $3, record = $4, updated_at = $6",
        )
        .bind(run.id.to_string())
        .bind(run.plan_id.map(|p| p.to_string()))
        .bind(run.state.to_string())
        .bind(record)
        .bind(&now)
        .bind(&now)
        .bind(run.again_of.as_ref().map(|a| a.plan.to_string()))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn load_run(&self, id: RunId) -> Result<Option<RunRecord>, StoreError> {
        let row = sqlx::query("SELECT record FROM runs WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(record_of).transpose()
    }

    async fn run_times(&self, id: RunId) -> Result<Option<(Timestamp, Timestamp)>, StoreError> {
        let row = sqlx::query("SELECT created_at, updated_at FROM runs WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?;
        row.map(|row| Ok((read_ts(&row, "created_at")?, read_ts(&row, "updated_at")?)))
            .transpose()
    }

    async fn list_runs(
        &self,
        state: Option<RunState>,
        plan: Option<PlanId>,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<RunRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT record FROM runs WHERE ($1 IS NULL OR state = $1) AND ($2 IS NULL OR plan_id = $2) \
             ORDER BY created_at DESC, id LIMIT $3 OFFSET $4",
        )
        .bind(state.map(|s| s.to_string()))
        .bind(plan.map(|p| p.to_string()))
        .bind(i64::from(limit))
        .bind(i64::from(offset))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(record_of).collect()
    }

    async fn agent_plans(&self) -> Result<std::collections::HashSet<PlanId>, StoreError> {
        let ids: Vec<String> =
            sqlx::query_scalar("SELECT DISTINCT plan_id FROM runs WHERE plan_id IS NOT NULL")
                .fetch_all(&self.pool)
                .await?;
        ids.iter().map(|id| id.parse().map_err(corrupt)).collect()
    }

    async fn run_counts(&self) -> Result<Vec<(RunState, u64)>, StoreError> {
        let rows = sqlx::query("SELECT state, COUNT(*) AS n FROM runs GROUP BY state")
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| {
                let state: String = row.try_get("state")?;
                let n: i64 = row.try_get("n")?;
                Ok((state.parse().map_err(corrupt)?, n.max(0) as u64))
            })
            .collect()
    }

    async fn runs_on(&self, plans: &[PlanId]) -> Result<Vec<RunRecord>, StoreError> {
        let mut records = Vec::new();
        for chunk in plans.chunks(500) {
            let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!(
                "SELECT record FROM runs WHERE plan_id IN ({}) ORDER BY created_at, id",
                marks.join(", ")
            );
            let mut query = sqlx::query(&sql);
            for id in chunk {
                query = query.bind(id.to_string());
            }
            for row in query.fetch_all(&self.pool).await? {
                records.push(record_of(&row)?);
            }
        }
        Ok(records)
    }

    async fn claim_runs(
        &self,
        owner: &str,
        now_ms: i64,
        until_ms: i64,
    ) -> Result<Vec<RunRecord>, StoreError> {
        let candidates: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT id FROM runs WHERE {UNFINISHED} AND \
             (lease_until IS NULL OR lease_until < $1 OR lease_owner = $2) ORDER BY created_at"
        ))
        .bind(now_ms)
        .bind(owner)
        .fetch_all(&self.pool)
        .await?;
        let mut claimed = Vec::new();
        for id in candidates {
            // Guarded again: another process may have claimed it meanwhile.
            let row = sqlx::query(&format!(
                "UPDATE runs SET lease_owner = $1, lease_until = $2 WHERE id = $3 AND {UNFINISHED} \
                 AND (lease_until IS NULL OR lease_until < $4 OR lease_owner = $1) RETURNING record"
            ))
            .bind(owner)
            .bind(until_ms)
            .bind(&id)
            .bind(now_ms)
            .fetch_optional(&self.pool)
            .await?;
            if let Some(row) = row {
                claimed.push(record_of(&row)?);
            }
        }
        Ok(claimed)
    }

    async fn renew_runs(&self, owner: &str, until_ms: i64) -> Result<Vec<RunId>, StoreError> {
        let ids: Vec<String> = sqlx::query_scalar(&format!(
            "UPDATE runs SET lease_until = $1 WHERE lease_owner = $2 AND {UNFINISHED} RETURNING id"
        ))
        .bind(until_ms)
        .bind(owner)
        .fetch_all(&self.pool)
        .await?;
        ids.iter().map(|id| id.parse().map_err(corrupt)).collect()
    }

    async fn release_run(&self, id: RunId) -> Result<(), StoreError> {
        sqlx::query("UPDATE runs SET lease_owner = NULL, lease_until = NULL WHERE id = $1")
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn leased_plans(&self, now_ms: i64) -> Result<Vec<PlanId>, StoreError> {
        let ids: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT plan_id FROM runs WHERE {UNFINISHED} AND plan_id IS NOT NULL AND lease_until >= $1"
        ))
        .bind(now_ms)
        .fetch_all(&self.pool)
        .await?;
        ids.iter().map(|id| id.parse().map_err(corrupt)).collect()
    }

    async fn purge_run_logs(&self, before: Timestamp) -> Result<u64, StoreError> {
        // `updated_at` is the row's last save: a finished run saves no more.
        let done = sqlx::query(&format!(
            "DELETE FROM run_log WHERE run_id IN \
             (SELECT id FROM runs WHERE NOT ({UNFINISHED}) AND updated_at < $1 \
             AND record NOT LIKE $2)"
        ))
        .bind(ts(before))
        .bind(KEPT)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    async fn amend_finished_run(&self, run: &RunRecord) -> Result<bool, StoreError> {
        let record = serde_json::to_string(run).map_err(corrupt)?;
        let done = sqlx::query(&format!(
            "UPDATE runs SET record = $1 WHERE id = $2 AND NOT ({UNFINISHED})"
        ))
        .bind(record)
        .bind(run.id.to_string())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn finished_before(
        &self,
        ids: &[RunId],
        before: Timestamp,
    ) -> Result<Vec<RunRecord>, StoreError> {
        let mut found = Vec::new();
        for chunk in ids.chunks(500) {
            let list: Vec<String> = (0..chunk.len()).map(|i| format!("${}", i + 2)).collect();
            let sql = format!(
                "SELECT record FROM runs WHERE NOT ({UNFINISHED}) AND updated_at < $1 \
                 AND id IN ({})",
                list.join(", ")
            );
            let mut query = sqlx::query(&sql).bind(ts(before));
            for id in chunk {
                query = query.bind(id.to_string());
            }
            for row in query.fetch_all(&self.pool).await? {
                found.push(record_of(&row)?);
            }
        }
        Ok(found)
    }

    async fn storage_counts(&self) -> Result<run_model::StorageReport, StoreError> {
        let count = |table: &'static str| async move {
            let n: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
                .fetch_one(&self.pool)
                .await?;
            Ok::<u64, StoreError>(n.max(0) as u64)
        };
        let (database, size_sql) = if self.is_postgres() {
            (
                "postgres",
                "SELECT CAST(pg_database_size(current_database()) AS BIGINT)",
            )
        } else {
            (
                "sqlite",
                "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
            )
        };
        let bytes: i64 = sqlx::query_scalar(size_sql).fetch_one(&self.pool).await?;
        // Flags inside the record's JSON (see KEPT).
        let flagged = |pattern: &'static str| async move {
            let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM runs WHERE record LIKE $1")
                .bind(pattern)
                .fetch_one(&self.pool)
                .await?;
            Ok::<u64, StoreError>(n.max(0) as u64)
        };
        Ok(run_model::StorageReport {
            database: database.into(),
            database_bytes: bytes.max(0) as u64,
            plans: count("plans").await?,
            plan_events: count("plan_events").await?,
            runs: count("runs").await?,
            run_log_entries: count("run_log").await?,
            memories: count("memories").await?,
            webhook_deliveries: count("webhook_deliveries").await?,
            workspaces: run_model::WorkspacesUse {
                kept: flagged(KEPT).await?,
                removed: flagged("%\"files_removed_at\":%").await?,
                ..Default::default()
            },
            retention: Default::default(),
        })
    }

    async fn runs_again_of(&self, plan: PlanId) -> Result<Vec<RunRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT record FROM runs WHERE again_of = $1 ORDER BY created_at, id LIMIT 100",
        )
        .bind(plan.to_string())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(record_of).collect()
    }
}
