//! What the MCP servers admins add need stored.

use std::collections::BTreeMap;

use async_trait::async_trait;
use plan_engine::Timestamp;

use crate::store::StoreError;

/// The MCP servers admins added, by name.
#[async_trait]
pub trait ToolServerStore: Send + Sync {
    /// The MCP servers admins added, by name.
    async fn mcp_servers(&self) -> Result<Vec<StoredMcpServer>, StoreError>;
    /// Adds a server (`replace: false`; `false` when the name is taken) or
    /// replaces one (`false` when there is none of that name).
    async fn put_mcp_server(
        &self,
        server: &StoredMcpServer,
        replace: bool,
    ) -> Result<bool, StoreError>;
    /// Whether there was such a server.
    async fn remove_mcp_server(&self, name: &str) -> Result<bool, StoreError>;
}

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
            .field("url", &self.url.as_deref().map(crate::store::shown_url))
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
