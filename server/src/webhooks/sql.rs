//! [`WebhookStore`] on the server's SQL store, on the same database as
//! the plans: the cursor into the run log, one row per delivery, and the
//! endpoints admins added.

use agent::RunId;
use plan_engine::{PlanId, Timestamp};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::store::{Attempt, Delivery, NewDelivery, StoredEndpoint, WebhookStore};
use crate::store::sql::{corrupt, read_ts, ts};
use crate::store::{SqlStore, StoreError};

const COLUMNS: &str =
    "id, endpoint, seq, event, plan_id, run_id, body, status, attempts, next_at, \
     last_status, last_error, created_at, delivered_at";

fn delivery_of(row: &AnyRow) -> Result<Delivery, StoreError> {
    let id: String = row.try_get("id")?;
    let plan: Option<String> = row.try_get("plan_id")?;
    let run: String = row.try_get("run_id")?;
    let delivered: Option<String> = row.try_get("delivered_at")?;
    Ok(Delivery {
        id: id.parse().map_err(corrupt)?,
        endpoint: row.try_get("endpoint")?,
        seq: row.try_get("seq")?,
        event: row.try_get("event")?,
        plan_id: plan
            .map(|p| p.parse::<PlanId>())
            .transpose()
            .map_err(corrupt)?,
        run_id: run.parse::<RunId>().map_err(corrupt)?,
        body: row.try_get("body")?,
        status: row.try_get("status")?,
        attempts: row
            .try_get::<i64, _>("attempts")?
            .clamp(0, i64::from(u32::MAX)) as u32,
        next_at: row.try_get("next_at")?,
        last_status: row
            .try_get::<Option<i64>, _>("last_status")?
            .and_then(|s| u16::try_from(s).ok()),
        last_error: row.try_get("last_error")?,
        created_at: read_ts(row, "created_at")?,
        delivered_at: delivered
            .map(|t| chrono::DateTime::parse_from_rfc3339(&t).map(|t| t.to_utc()))
            .transpose()
            .map_err(corrupt)?,
    })
}

#[async_trait::async_trait]
impl WebhookStore for SqlStore {
    async fn webhook_cursor(&self) -> Result<Option<i64>, StoreError> {
        Ok(
            sqlx::query_scalar::<_, i64>("SELECT seq FROM webhook_cursor WHERE id = 1")
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    async fn set_webhook_cursor(&self, seq: i64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO webhook_cursor (id, seq) VALUES (1, $1) \
             ON CONFLICT (id) DO UPDATE SET seq = $1",
        )
        .bind(seq)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records deliveries; one already recorded (same endpoint and entry)
    /// is left as it is.
    async fn enqueue_deliveries(&self, new: &[NewDelivery]) -> Result<(), StoreError> {
        for d in new {
            sqlx::query(
                "INSERT INTO webhook_deliveries (id, endpoint, seq, event, plan_id, run_id, body, \
                 status, attempts, next_at, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', 0, 0, $8) \
                 ON CONFLICT (endpoint, seq) DO NOTHING",
            )
            .bind(d.id.to_string())
            .bind(&d.endpoint)
            .bind(d.seq)
            .bind(&d.event)
            .bind(d.plan_id.map(|p| p.to_string()))
            .bind(d.run_id.to_string())
            .bind(&d.body)
            .bind(ts(d.created_at))
            .execute(&self.pool)
            .await?;
        }
        Ok(())
    }

    /// Claims the pending deliveries to `endpoints` whose time has come,
    /// the most overdue first: their `next_at` moves to `lease_ms`, so
    /// another deliverer (a second process on PostgreSQL) does not take
    /// them meanwhile. The outer `next_at <= now` is checked again on the
    /// locked row, so of two concurrent claims only one gets a row. Only
    /// the caller's endpoints: a process that does not know an endpoint
    /// (another process's `PLANBOARD_WEBHOOK_URL`) leaves its deliveries.
    async fn claim_deliveries(
        &self,
        now_ms: i64,
        lease_ms: i64,
        endpoints: &[String],
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        if endpoints.is_empty() {
            return Ok(Vec::new());
        }
        let marks: Vec<String> = (4..4 + endpoints.len()).map(|i| format!("${i}")).collect();
        let marks = marks.join(", ");
        let sql = format!(
            "UPDATE webhook_deliveries SET next_at = $2 \
             WHERE status = 'pending' AND next_at <= $1 AND id IN ( \
               SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_at <= $1 \
               AND endpoint IN ({marks}) ORDER BY next_at, seq LIMIT $3) \
             RETURNING {COLUMNS}"
        );
        let mut query = sqlx::query(&sql)
            .bind(now_ms)
            .bind(lease_ms)
            .bind(i64::from(limit));
        for endpoint in endpoints {
            query = query.bind(endpoint);
        }
        let rows = query.fetch_all(&self.pool).await?;
        let mut claimed: Vec<Delivery> = rows.iter().map(delivery_of).collect::<Result<_, _>>()?;
        claimed.sort_by_key(|d| d.seq);
        Ok(claimed)
    }

    async fn record_attempt(
        &self,
        id: uuid::Uuid,
        attempts: u32,
        attempt: Attempt,
    ) -> Result<(), StoreError> {
        let (status, next_at, last_status, last_error, delivered_at) = match attempt {
            Attempt::Delivered { status, at } => ("delivered", 0, Some(status), None, Some(ts(at))),
            Attempt::Retry {
                status,
                error,
                next_at,
            } => ("pending", next_at, status, Some(error), None),
            Attempt::GaveUp { status, error } => ("failed", 0, status, Some(error), None),
        };
        sqlx::query(
            "UPDATE webhook_deliveries SET status = $1, attempts = $2, next_at = $3, \
             last_status = $4, last_error = $5, delivered_at = $6 WHERE id = $7",
        )
        .bind(status)
        .bind(i64::from(attempts))
        .bind(next_at)
        .bind(last_status.map(i64::from))
        .bind(last_error)
        .bind(delivered_at)
        .bind(id.to_string())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Deletes the deliveries that are over (delivered or given up)
    /// recorded before `before`; pending ones stay whatever their age.
    async fn purge_deliveries(&self, before: Timestamp) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM webhook_deliveries \
             WHERE status IN ('delivered', 'failed') AND created_at < $1",
        )
        .bind(ts(before))
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    async fn deliveries(&self, limit: u32) -> Result<Vec<Delivery>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM webhook_deliveries ORDER BY seq DESC, endpoint LIMIT $1"
        ))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(delivery_of).collect()
    }

    async fn webhook_endpoints(&self) -> Result<Vec<StoredEndpoint>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, url, secret, slack, created_by, created_at FROM webhook_endpoints \
             ORDER BY created_at, id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let id: String = row.try_get("id")?;
                Ok(StoredEndpoint {
                    id: id.parse().map_err(corrupt)?,
                    url: row.try_get("url")?,
                    secret: row.try_get("secret")?,
                    slack: row.try_get::<i64, _>("slack")? != 0,
                    created_by: row.try_get("created_by")?,
                    created_at: read_ts(row, "created_at")?,
                })
            })
            .collect()
    }

    /// `false` when an endpoint with this URL exists already.
    async fn add_webhook_endpoint(&self, e: &StoredEndpoint) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "INSERT INTO webhook_endpoints (id, url, secret, slack, created_by, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (url) DO NOTHING",
        )
        .bind(e.id.to_string())
        .bind(&e.url)
        .bind(e.secret.as_deref())
        .bind(i64::from(e.slack))
        .bind(&e.created_by)
        .bind(ts(e.created_at))
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn remove_webhook_endpoint(&self, id: uuid::Uuid) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM webhook_endpoints WHERE id = $1")
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}
