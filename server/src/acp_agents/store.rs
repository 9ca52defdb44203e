//! What the ACP agents admins add need stored.

use std::collections::BTreeMap;

use async_trait::async_trait;
use plan_engine::Timestamp;

use crate::store::StoreError;

/// The ACP agents admins added, by name.
#[async_trait]
pub trait AcpAgentStore: Send + Sync {
    /// Every added agent, by name.
    async fn acp_agents(&self) -> Result<Vec<StoredAcpAgent>, StoreError>;
    /// Adds an agent (`replace: false`; `false` when the name is taken) or
    /// replaces one (`false` when there is none of that name).
    async fn put_acp_agent(
        &self,
        agent: &StoredAcpAgent,
        replace: bool,
    ) -> Result<bool, StoreError>;
    /// Whether there was such an agent.
    async fn remove_acp_agent(&self, name: &str) -> Result<bool, StoreError>;
}

/// A stored ACP agent: the program planboard starts, its arguments and
/// its environment (whose values are secrets, never shown back).
#[derive(Clone, PartialEq)]
pub struct StoredAcpAgent {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub created_by: String,
    pub created_at: Timestamp,
}

/// Debug output ends up in logs: the arguments (which may hold a
/// password) and the env's values are not in it.
impl std::fmt::Debug for StoredAcpAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredAcpAgent")
            .field("name", &self.name)
            .field("command", &self.command)
            .field("args", &self.args.len())
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl StoredAcpAgent {
    /// The program as the agent runtime starts it.
    pub fn command(&self) -> agent::acp::AcpCommand {
        agent::acp::AcpCommand {
            command: self.command.clone(),
            args: self.args.clone(),
            env: self.env.clone(),
        }
    }
}
