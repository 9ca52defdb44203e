//! [`ApprovalStore`] on the server's SQL store, on the same database as
//! the plans and the runs (the retention reads the runs' rows).

use run_model::ApprovalRecord;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::{ApprovalFilter, ApprovalStore};
use crate::store::sql::{corrupt, read_ts, ts};
use crate::store::{SqlStore, StoreError};

const COLUMNS: &str = "id, kind, decision, by_actor, person, at, run_id, plan_id, plan_version, \
    digest, tool, call_id, note, waited_ms, detail";

fn record_of(row: &AnyRow) -> Result<ApprovalRecord, StoreError> {
    let id: String = row.try_get("id")?;
    let kind: String = row.try_get("kind")?;
    let decision: String = row.try_get("decision")?;
    let run: Option<String> = row.try_get("run_id")?;
    let plan: Option<String> = row.try_get("plan_id")?;
    let version: Option<i64> = row.try_get("plan_version")?;
    let waited: Option<i64> = row.try_get("waited_ms")?;
    let detail: Option<String> = row.try_get("detail")?;
    Ok(ApprovalRecord {
        id: id.parse().map_err(corrupt)?,
        kind: kind.parse().map_err(corrupt)?,
        decision: decision.parse().map_err(corrupt)?,
        by: row.try_get("by_actor")?,
        person: row.try_get("person")?,
        at: read_ts(row, "at")?,
        run_id: run.map(|r| r.parse()).transpose().map_err(corrupt)?,
        plan_id: plan.map(|p| p.parse()).transpose().map_err(corrupt)?,
        plan_version: version.map(u64::try_from).transpose().map_err(corrupt)?,
        digest: row.try_get("digest")?,
        tool: row.try_get("tool")?,
        call: row.try_get("call_id")?,
        note: row.try_get("note")?,
        waited_ms: waited.map(u64::try_from).transpose().map_err(corrupt)?,
        detail: detail
            .map(|d| serde_json::from_str(&d))
            .transpose()
            .map_err(corrupt)?,
    })
}

/// A run that has ended, in the runs' table (see the runs' retention).
const ENDED: &str = "state IN ('done', 'failed', 'cancelled')";
/// A run a person keeps, matched in its record's JSON (as the run log's
/// retention matches it).
const KEPT: &str = "%\"kept\":true%";

#[async_trait::async_trait]
impl ApprovalStore for SqlStore {
    async fn insert_approval(&self, record: &ApprovalRecord) -> Result<(), StoreError> {
        let version = record
            .plan_version
            .map(i64::try_from)
            .transpose()
            .map_err(corrupt)?;
        let waited = record
            .waited_ms
            .map(|ms| i64::try_from(ms).unwrap_or(i64::MAX));
        let detail = record
            .detail
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(corrupt)?;
        sqlx::query(&format!(
            "INSERT INTO approvals ({COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
        ))
        .bind(record.id.to_string())
        .bind(record.kind.as_str())
        .bind(record.decision.as_str())
        .bind(record.by.clone())
        .bind(record.person.clone())
        .bind(ts(record.at))
        .bind(record.run_id.map(|r| r.to_string()))
        .bind(record.plan_id.map(|p| p.to_string()))
        .bind(version)
        .bind(record.digest.clone())
        .bind(record.tool.clone())
        .bind(record.call.clone())
        .bind(record.note.clone())
        .bind(waited)
        .bind(detail)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn list_approvals(
        &self,
        filter: &ApprovalFilter,
    ) -> Result<Vec<ApprovalRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM approvals \
             WHERE ($1 IS NULL OR run_id = $1) AND ($2 IS NULL OR plan_id = $2) \
             AND ($3 IS NULL OR person = $3) AND ($4 IS NULL OR tool = $4) \
             AND ($5 IS NULL OR kind = $5) AND ($6 IS NULL OR at >= $6) \
             AND ($7 IS NULL OR at <= $7) \
             ORDER BY at DESC, id LIMIT $8 OFFSET $9"
        ))
        .bind(filter.run.map(|r| r.to_string()))
        .bind(filter.plan.map(|p| p.to_string()))
        .bind(filter.person.clone())
        .bind(filter.tool.clone())
        .bind(filter.kind.map(|k| k.as_str().to_string()))
        .bind(filter.from.map(ts))
        .bind(filter.to.map(ts))
        .bind(i64::from(filter.limit))
        .bind(i64::from(filter.offset))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(record_of).collect()
    }

    async fn purge_approvals(&self, before: plan_engine::Timestamp) -> Result<u64, StoreError> {
        // A run's `updated_at` is its last save: a finished run saves no more.
        let done = sqlx::query(&format!(
            "DELETE FROM approvals WHERE (run_id IS NULL AND at < $1) OR run_id IN \
             (SELECT id FROM runs WHERE {ENDED} AND updated_at < $1 AND record NOT LIKE $2)"
        ))
        .bind(ts(before))
        .bind(KEPT)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }
}
