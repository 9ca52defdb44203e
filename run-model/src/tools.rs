//! The MCP servers whose tools the agent offers, as the Tools page and
//! `GET /api/tool-servers` show them ([`ToolServerView`]): never a token
//! or an environment value, and a command's arguments to admins only.

use plan_engine::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

plan_engine::wire_enum! {
    /// Where a server's description comes from.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum ToolSource: "tool source (file or board)" {
        /// `PLANBOARD_MCP_SERVERS`: changed by editing the file and restarting.
        File = "file",
        /// Added by an admin on the Tools page or over the API.
        Board = "board",
    }
}

plan_engine::wire_enum! {
    /// How planboard talks to it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum ToolTransport: "tool transport (http or stdio)" {
        /// Streamable HTTP, by URL.
        Http = "http",
        /// A program started by planboard, over its stdin and stdout.
        Stdio = "stdio",
    }
}

/// One MCP server and its state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolServerView {
    pub name: String,
    pub source: ToolSource,
    pub transport: ToolTransport,
    /// The URL's scheme and host (its path may hold a secret), or the
    /// command.
    pub target: String,
    /// The command's arguments (stdio), shown to admins only: an argument
    /// may hold a password. Empty for others, who get [`Self::hidden_args`].
    #[serde(default)]
    pub args: Vec<String>,
    /// How many arguments were left out of `args` because the viewer is
    /// not an admin; `None` when they are all shown.
    #[serde(default)]
    pub hidden_args: Option<usize>,
    /// Whether a bearer token is set (it is never shown).
    pub has_token: bool,
    /// The names of the environment variables given (never the values).
    #[serde(default)]
    pub env: Vec<String>,
    /// Connected, and its tools offered to the agent.
    pub connected: bool,
    /// The tools it offers, by name.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Why the last connection failed.
    pub error: Option<String>,
    /// When it was last connected or tried.
    pub checked_at: Timestamp,
}

impl ToolServerView {
    /// The view for someone who is not an admin: the command, never its
    /// arguments (only how many there are).
    pub fn without_args(mut self) -> ToolServerView {
        self.hidden_args = Some(self.args.len());
        self.args = Vec::new();
        self
    }
}

/// One ACP agent an admin added (`GET /api/agents`, the Tools page): a
/// program planboard starts as the agent's client over stdio, in a run's
/// workspace, to give it a task. Never an environment value; its
/// arguments to admins only, like an MCP server's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AcpAgentView {
    pub name: String,
    /// The program started.
    pub command: String,
    /// Its arguments, shown to admins only ([`Self::hidden_args`] for
    /// others).
    #[serde(default)]
    pub args: Vec<String>,
    /// How many arguments were left out of `args`; `None` when all shown.
    #[serde(default)]
    pub hidden_args: Option<usize>,
    /// The names of the environment variables given (never the values).
    #[serde(default)]
    pub env: Vec<String>,
    /// What the agent said it is at its last check (`initialize`'s
    /// `agentInfo`: name and version), when it answered.
    #[serde(default)]
    pub agent_info: Option<String>,
    /// Why the last check failed.
    #[serde(default)]
    pub error: Option<String>,
    /// When it was last checked; `None` before any check.
    #[serde(default)]
    pub checked_at: Option<Timestamp>,
    pub created_by: String,
    pub created_at: Timestamp,
}

impl AcpAgentView {
    /// The view for someone who is not an admin: the command, never its
    /// arguments (only how many there are).
    pub fn without_args(mut self) -> AcpAgentView {
        self.hidden_args = Some(self.args.len());
        self.args = Vec::new();
        self
    }
}
