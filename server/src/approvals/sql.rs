//! [`ApprovalStore`] on the server's SQL store, on the same database as
//! the plans and the runs (the retention reads the runs' rows).

use run_model::{ApprovalRecord, Grant, GrantId, Hold, RunId};
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

const GRANT_COLUMNS: &str = "id, run_id, tool, pattern, by_actor, at, revoked_by, revoked_at";
const HOLD_COLUMNS: &str = "run_id, plan_id, start_at, by_actor, at, released_at";

/// An optional stored timestamp read back.
fn read_optional_ts(
    row: &AnyRow,
    column: &str,
) -> Result<Option<plan_engine::Timestamp>, StoreError> {
    let text: Option<String> = row.try_get(column)?;
    text.map(|text| {
        chrono::DateTime::parse_from_rfc3339(&text)
            .map(|t| t.with_timezone(&chrono::Utc))
            .map_err(|e| corrupt(format!("{column} '{text}': {e}")))
    })
    .transpose()
}

fn grant_of(row: &AnyRow) -> Result<Grant, StoreError> {
    let id: String = row.try_get("id")?;
    let run: String = row.try_get("run_id")?;
    Ok(Grant {
        id: id.parse().map_err(corrupt)?,
        run_id: run.parse().map_err(corrupt)?,
        tool: row.try_get("tool")?,
        pattern: row.try_get("pattern")?,
        by: row.try_get("by_actor")?,
        at: read_ts(row, "at")?,
        revoked_by: row.try_get("revoked_by")?,
        revoked_at: read_optional_ts(row, "revoked_at")?,
    })
}

fn hold_of(row: &AnyRow) -> Result<Hold, StoreError> {
    let run: String = row.try_get("run_id")?;
    let plan: String = row.try_get("plan_id")?;
    Ok(Hold {
        run_id: run.parse().map_err(corrupt)?,
        plan_id: plan.parse().map_err(corrupt)?,
        start_at: read_optional_ts(row, "start_at")?,
        by: row.try_get("by_actor")?,
        at: read_ts(row, "at")?,
        released_at: read_optional_ts(row, "released_at")?,
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
        let ended =
            format!("SELECT id FROM runs WHERE {ENDED} AND updated_at < $1 AND record NOT LIKE $2");
        let done = sqlx::query(&format!(
            "DELETE FROM approvals WHERE (run_id IS NULL AND at < $1) OR run_id IN ({ended})"
        ))
        .bind(ts(before))
        .bind(KEPT)
        .execute(&self.pool)
        .await?;
        for table in ["grants", "holds"] {
            sqlx::query(&format!("DELETE FROM {table} WHERE run_id IN ({ended})"))
                .bind(ts(before))
                .bind(KEPT)
                .execute(&self.pool)
                .await?;
        }
        Ok(done.rows_affected())
    }

    async fn insert_grants(&self, grants: &[Grant]) -> Result<(), StoreError> {
        for grant in grants {
            sqlx::query(&format!(
                "INSERT INTO grants ({GRANT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
            ))
            .bind(grant.id.to_string())
            .bind(grant.run_id.to_string())
            .bind(grant.tool.clone())
            .bind(grant.pattern.clone())
            .bind(grant.by.clone())
            .bind(ts(grant.at))
            .bind(grant.revoked_by.clone())
            .bind(grant.revoked_at.map(ts))
            .execute(&self.pool)
            .await?;
        }
        Ok(())
    }

    async fn delete_grants(&self, ids: &[GrantId]) -> Result<(), StoreError> {
        for id in ids {
            sqlx::query("DELETE FROM grants WHERE id = $1")
                .bind(id.to_string())
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }

    async fn run_grants(&self, run: RunId) -> Result<Vec<Grant>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {GRANT_COLUMNS} FROM grants WHERE run_id = $1 ORDER BY at, id"
        ))
        .bind(run.to_string())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(grant_of).collect()
    }

    async fn revoke_grant(
        &self,
        run: RunId,
        grant: GrantId,
        by: &str,
        at: plan_engine::Timestamp,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE grants SET revoked_by = $1, revoked_at = $2 \
             WHERE id = $3 AND run_id = $4 AND revoked_at IS NULL",
        )
        .bind(by.to_string())
        .bind(ts(at))
        .bind(grant.to_string())
        .bind(run.to_string())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn put_hold(&self, hold: &Hold) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "INSERT INTO holds ({HOLD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (run_id) DO UPDATE SET plan_id = excluded.plan_id, \
             start_at = excluded.start_at, by_actor = excluded.by_actor, at = excluded.at, \
             released_at = excluded.released_at"
        ))
        .bind(hold.run_id.to_string())
        .bind(hold.plan_id.to_string())
        .bind(hold.start_at.map(ts))
        .bind(hold.by.clone())
        .bind(ts(hold.at))
        .bind(hold.released_at.map(ts))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn hold_of(&self, run: RunId) -> Result<Option<Hold>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {HOLD_COLUMNS} FROM holds WHERE run_id = $1"
        ))
        .bind(run.to_string())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(hold_of).transpose()
    }

    async fn release_hold(
        &self,
        run: RunId,
        at: plan_engine::Timestamp,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE holds SET released_at = $1 WHERE run_id = $2 AND released_at IS NULL",
        )
        .bind(ts(at))
        .bind(run.to_string())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn due_holds(&self, now: plan_engine::Timestamp) -> Result<Vec<Hold>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {HOLD_COLUMNS} FROM holds WHERE released_at IS NULL \
             AND start_at IS NOT NULL AND start_at <= $1 ORDER BY start_at"
        ))
        .bind(ts(now))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(hold_of).collect()
    }

    async fn stored_policies(&self) -> Result<Vec<(String, run_model::ToolPolicy)>, StoreError> {
        let rows = sqlx::query("SELECT tool, policy FROM tool_policies ORDER BY tool")
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(
                |row| -> Result<(String, run_model::ToolPolicy), StoreError> {
                    let tool: String = row.try_get("tool")?;
                    let policy: String = row.try_get("policy")?;
                    Ok((tool, policy.parse().map_err(corrupt)?))
                },
            )
            .collect()
    }

    async fn put_policy(
        &self,
        tool: &str,
        policy: run_model::ToolPolicy,
        by: &str,
        at: plan_engine::Timestamp,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO tool_policies (tool, policy, by_actor, at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (tool) DO UPDATE SET policy = excluded.policy, \
             by_actor = excluded.by_actor, at = excluded.at",
        )
        .bind(tool.to_string())
        .bind(policy.as_str())
        .bind(by.to_string())
        .bind(ts(at))
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
