//! [`TemplateStore`] on the server's SQL store (SQLite or PostgreSQL), on
//! the same database as the plans.

use run_model::{Template, TemplateId, TemplateStep};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::TemplateStore;
use crate::store::sql::{corrupt, read_ts, ts};
use crate::store::{SqlStore, StoreError};

const COLUMNS: &str = "id, name, mode, task, steps, plan_id, created_by, created_at";

fn template_of(row: &AnyRow) -> Result<Template, StoreError> {
    let id: String = row.try_get("id")?;
    let mode: String = row.try_get("mode")?;
    let steps: String = row.try_get("steps")?;
    let plan: Option<String> = row.try_get("plan_id")?;
    Ok(Template {
        id: id.parse().map_err(corrupt)?,
        name: row.try_get("name")?,
        mode: plan_engine::Mode::from_wire(&mode).ok_or_else(|| corrupt(format!("mode {mode}")))?,
        task: row.try_get("task")?,
        steps: serde_json::from_str::<Vec<TemplateStep>>(&steps).map_err(corrupt)?,
        plan_id: plan.map(|p| p.parse()).transpose().map_err(corrupt)?,
        created_by: row.try_get("created_by")?,
        created_at: read_ts(row, "created_at")?,
    })
}

#[async_trait::async_trait]
impl TemplateStore for SqlStore {
    async fn insert_template(&self, template: &Template) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "INSERT INTO templates ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .bind(template.id.to_string())
        .bind(template.name.clone())
        .bind(template.mode.as_str().to_string())
        .bind(template.task.clone())
        .bind(serde_json::to_string(&template.steps).map_err(corrupt)?)
        .bind(template.plan_id.map(|p| p.to_string()))
        .bind(template.created_by.clone())
        .bind(ts(template.created_at))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn template(&self, id: TemplateId) -> Result<Option<Template>, StoreError> {
        sqlx::query(&format!("SELECT {COLUMNS} FROM templates WHERE id = $1"))
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(template_of)
            .transpose()
    }

    async fn list_templates(&self, offset: u32, limit: u32) -> Result<Vec<Template>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM templates ORDER BY created_at DESC, id LIMIT $1 OFFSET $2"
        ))
        .bind(i64::from(limit))
        .bind(i64::from(offset))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(template_of).collect()
    }

    async fn delete_template(&self, id: TemplateId) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM templates WHERE id = $1")
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }
}
