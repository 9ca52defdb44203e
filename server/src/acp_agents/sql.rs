//! [`AcpAgentStore`] on the server's SQL store: the ACP agents admins
//! added on the Tools page or over `POST /api/agents`.

use sqlx::Row;

use super::store::{AcpAgentStore, StoredAcpAgent};
use crate::store::sql::{corrupt, read_ts, ts};
use crate::store::{SqlStore, StoreError};

#[async_trait::async_trait]
impl AcpAgentStore for SqlStore {
    async fn acp_agents(&self) -> Result<Vec<StoredAcpAgent>, StoreError> {
        let rows = sqlx::query(
            "SELECT name, command, args, env, created_by, created_at FROM acp_agents ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let args: String = row.try_get("args")?;
                let env: String = row.try_get("env")?;
                Ok(StoredAcpAgent {
                    name: row.try_get("name")?,
                    command: row.try_get("command")?,
                    args: serde_json::from_str(&args).map_err(corrupt)?,
                    env: serde_json::from_str(&env).map_err(corrupt)?,
                    created_by: row.try_get("created_by")?,
                    created_at: read_ts(row, "created_at")?,
                })
            })
            .collect()
    }

    async fn put_acp_agent(&self, a: &StoredAcpAgent, replace: bool) -> Result<bool, StoreError> {
        let args = serde_json::to_string(&a.args).map_err(corrupt)?;
        let env = serde_json::to_string(&a.env).map_err(corrupt)?;
        let sql = if replace {
            "UPDATE acp_agents SET command = $2, args = $3, env = $4, created_by = $5, \
             created_at = $6 WHERE name = $1"
        } else {
            "INSERT INTO acp_agents (name, command, args, env, created_by, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING"
        };
        let done = sqlx::query(sql)
            .bind(&a.name)
            .bind(&a.command)
            .bind(args)
            .bind(env)
            .bind(&a.created_by)
            .bind(ts(a.created_at))
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn remove_acp_agent(&self, name: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM acp_agents WHERE name = $1")
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}
