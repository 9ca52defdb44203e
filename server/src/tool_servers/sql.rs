//! [`ToolServerStore`] on the server's SQL store: the MCP servers admins
//! added on the Tools page, beside the plans.

use sqlx::Row;

use super::store::{StoredMcpServer, ToolServerStore};
use crate::store::sql::{corrupt, read_ts, ts};
use crate::store::{SqlStore, StoreError};

#[async_trait::async_trait]
impl ToolServerStore for SqlStore {
    async fn mcp_servers(&self) -> Result<Vec<StoredMcpServer>, StoreError> {
        let rows = sqlx::query(
            "SELECT name, url, token, command, args, env, created_by, created_at \
             FROM mcp_servers ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let args: String = row.try_get("args")?;
                let env: String = row.try_get("env")?;
                Ok(StoredMcpServer {
                    name: row.try_get("name")?,
                    url: row.try_get("url")?,
                    token: row.try_get("token")?,
                    command: row.try_get("command")?,
                    args: serde_json::from_str(&args).map_err(corrupt)?,
                    env: serde_json::from_str(&env).map_err(corrupt)?,
                    created_by: row.try_get("created_by")?,
                    created_at: read_ts(row, "created_at")?,
                })
            })
            .collect()
    }

    /// Adds the server, or replaces the one of the same name when
    /// `replace`; `false` when the name is taken (adding) or unknown
    /// (replacing).
    async fn put_mcp_server(&self, s: &StoredMcpServer, replace: bool) -> Result<bool, StoreError> {
        let args = serde_json::to_string(&s.args).map_err(corrupt)?;
        let env = serde_json::to_string(&s.env).map_err(corrupt)?;
        let sql = if replace {
            "UPDATE mcp_servers SET url = $2, token = $3, command = $4, args = $5, env = $6, \
             created_by = $7, created_at = $8 WHERE name = $1"
        } else {
            "INSERT INTO mcp_servers (name, url, token, command, args, env, created_by, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (name) DO NOTHING"
        };
        let done = sqlx::query(sql)
            .bind(&s.name)
            .bind(s.url.as_deref())
            .bind(s.token.as_deref())
            .bind(s.command.as_deref())
            .bind(args)
            .bind(env)
            .bind(&s.created_by)
            .bind(ts(s.created_at))
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn remove_mcp_server(&self, name: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM mcp_servers WHERE name = $1")
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}
