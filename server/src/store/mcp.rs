//! MCP servers admins added on the Tools page, beside the plans.

use std::collections::BTreeMap;

use plan_engine::Timestamp;
use sqlx::Row;

use super::sql::{read_ts, ts};
use super::{SqlStore, StoreError};

/// A stored MCP server: by URL (streamable HTTP, with an optional bearer
/// token) or by command (stdio, with arguments and environment).
#[derive(Clone, PartialEq)]
pub struct StoredMcpServer {
    pub name: String,
    pub url: Option<String>,
    pub token: Option<String>,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub created_by: String,
    pub created_at: Timestamp,
}

/// Debug output ends up in logs: the token and the env's values are not
/// in it.
impl std::fmt::Debug for StoredMcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredMcpServer")
            .field("name", &self.name)
            .field("url", &self.url.as_deref().map(super::shown_url))
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl StoredMcpServer {
    /// The agent's description of it.
    pub fn server(&self) -> agent::tools::mcp::McpServer {
        agent::tools::mcp::McpServer {
            url: self.url.clone(),
            token: self.token.clone(),
            command: self.command.clone(),
            args: self.args.clone(),
            env: self.env.clone(),
        }
    }
}

fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(e.to_string())
}

impl SqlStore {
    pub(super) async fn select_mcp_servers(&self) -> Result<Vec<StoredMcpServer>, StoreError> {
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
    pub(super) async fn write_mcp_server(
        &self,
        s: &StoredMcpServer,
        replace: bool,
    ) -> Result<bool, StoreError> {
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

    pub(super) async fn delete_mcp_server(&self, name: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM mcp_servers WHERE name = $1")
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}
