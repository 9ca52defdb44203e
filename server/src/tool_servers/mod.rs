//! The MCP servers whose tools the agent offers: those of
//! `PLANBOARD_MCP_SERVERS` (fixed at start) and those admins add, change
//! and remove while the server runs (stored; connected at start and when
//! saved), each with its state. A run's toolset takes the servers
//! connected when it is built.
//!
//! # Layout
//! - this file: [`ToolServers`], the registry and the one service the API
//!   and the board's Tools page call (add, change, test, remove);
//!   [`ToolServerSpec`], what a person sends; [`ToolServerError`];
//! - `store.rs`: [`ToolServerStore`] and its row; `sql.rs`: it on the SQL
//!   store.

mod sql;
mod store;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use agent::protocol::ToolSpec;
use agent::tools::mcp::{McpServer, McpTools};
use agent::tools::ToolBox;
use run_model::{ToolServerView, ToolSource, ToolTransport};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::config::Config;
use crate::store::StoreError;

pub use store::{StoredMcpServer, ToolServerStore};

/// How long connecting (starting a program, the MCP handshake, listing
/// its tools) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

struct Entry {
    source: ToolSource,
    server: McpServer,
    tools: Option<Arc<McpTools>>,
    error: Option<String>,
    checked_at: plan_engine::Timestamp,
}

pub struct ToolServers {
    servers: RwLock<BTreeMap<String, Entry>>,
    /// Where the servers people add are kept.
    store: Arc<dyn ToolServerStore>,
}

async fn connect(name: &str, server: &McpServer) -> Result<Arc<McpTools>, String> {
    match tokio::time::timeout(CONNECT_TIMEOUT, McpTools::connect(name, server)).await {
        Ok(Ok(tools)) => Ok(tools),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "MCP server {name} did not answer within {} s",
            CONNECT_TIMEOUT.as_secs()
        )),
    }
}

impl ToolServers {
    /// Connects to the configured MCP servers; one that cannot be reached is
    /// logged and left out (runs go on with the other tools).
    pub async fn open(
        config: &Config,
        store: Arc<dyn ToolServerStore>,
    ) -> Result<Arc<ToolServers>, StoreError> {
        let mut servers: Vec<(String, run_model::ToolSource, agent::tools::mcp::McpServer)> =
            config
                .mcp_servers
                .iter()
                .map(|(name, server)| (name.clone(), run_model::ToolSource::File, server.clone()))
                .collect();
        for stored in store.mcp_servers().await? {
            // The file's server keeps its name.
            if config.mcp_servers.contains_key(&stored.name) {
                tracing::warn!(
                    "MCP server {} is in PLANBOARD_MCP_SERVERS and on the board; the file's is used",
                    stored.name
                );
                continue;
            }
            let server = stored.server();
            servers.push((stored.name, run_model::ToolSource::Board, server));
        }
        Ok(ToolServers::start(servers, store).await)
    }

    /// Connects every server (at once, each within [`CONNECT_TIMEOUT`]);
    /// one that fails is kept with its error, offering nothing.
    async fn start(
        servers: Vec<(String, ToolSource, McpServer)>,
        store: Arc<dyn ToolServerStore>,
    ) -> Arc<ToolServers> {
        let registry = Arc::new(ToolServers {
            servers: RwLock::default(),
            store,
        });
        let connected = futures_util::future::join_all(servers.into_iter().map(
            |(name, source, server)| async move {
                let outcome = connect(&name, &server).await;
                (name, source, server, outcome)
            },
        ))
        .await;
        for (name, source, server, outcome) in connected {
            registry.keep(&name, source, server, outcome);
        }
        registry
    }

    fn keep(
        &self,
        name: &str,
        source: ToolSource,
        server: McpServer,
        outcome: Result<Arc<McpTools>, String>,
    ) {
        match &outcome {
            Ok(tools) => tracing::info!(
                "MCP server {name}: {} tool(s) for the agent",
                tools.specs().len()
            ),
            Err(e) => tracing::error!("MCP server {name} offers nothing: {e}"),
        }
        let (tools, error) = match outcome {
            Ok(tools) => (Some(tools), None),
            Err(e) => (None, Some(e)),
        };
        self.servers.write().expect("servers lock").insert(
            name.to_string(),
            Entry {
                source,
                server,
                tools,
                error,
                checked_at: chrono::Utc::now(),
            },
        );
    }

    /// Connects `server` under `name` (again) and keeps it, replacing what
    /// was there; its state.
    pub async fn connect(
        &self,
        name: &str,
        source: ToolSource,
        server: McpServer,
    ) -> ToolServerView {
        let outcome = connect(name, &server).await;
        self.keep(name, source, server, outcome);
        self.view(name).expect("just kept")
    }

    /// Stops offering `name`'s tools.
    pub fn remove(&self, name: &str) -> bool {
        self.servers
            .write()
            .expect("servers lock")
            .remove(name)
            .is_some()
    }

    pub fn source(&self, name: &str) -> Option<ToolSource> {
        self.servers
            .read()
            .expect("servers lock")
            .get(name)
            .map(|e| e.source)
    }

    /// The description `name` was connected with.
    pub fn server(&self, name: &str) -> Option<McpServer> {
        self.servers
            .read()
            .expect("servers lock")
            .get(name)
            .map(|e| e.server.clone())
    }

    /// The connected servers, for a run's toolset.
    pub fn boxes(&self) -> Vec<Arc<dyn ToolBox>> {
        self.servers
            .read()
            .expect("servers lock")
            .values()
            .filter_map(|e| e.tools.clone())
            .map(|t| t as Arc<dyn ToolBox>)
            .collect()
    }

    /// The tools the connected servers offer.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.boxes().iter().flat_map(|b| b.specs()).collect()
    }

    pub fn views(&self) -> Vec<ToolServerView> {
        let servers = self.servers.read().expect("servers lock");
        servers.iter().map(|(name, e)| view_of(name, e)).collect()
    }

    pub fn view(&self, name: &str) -> Option<ToolServerView> {
        let servers = self.servers.read().expect("servers lock");
        servers.get(name).map(|e| view_of(name, e))
    }
}

/// The longest server name, URL, token and command, in characters; the
/// most args and env variables and the longest of each. The schema below
/// and [`ToolServerSpec::check`] read the same numbers.
pub const NAME_CHARS: usize = 40;
pub const URL_CHARS: usize = 2000;
pub const TOKEN_CHARS: usize = 2000;
pub const COMMAND_CHARS: usize = 500;
pub const MAX_ARGS: usize = 32;
pub const ARG_CHARS: usize = 1000;
pub const MAX_ENV: usize = 32;
pub const ENV_NAME_CHARS: usize = 100;
pub const ENV_VALUE_CHARS: usize = 4000;

/// An MCP server to add, or what to change of one: a URL (streamable
/// HTTP) or a command (stdio), not both.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolServerSpec {
    /// Letters, digits, `-` and `_`; 1 to 40 (on a change, it must match the
    /// route's).
    #[schemars(length(min = 1, max = NAME_CHARS))]
    pub name: String,
    #[schemars(length(min = 1, max = URL_CHARS))]
    pub url: Option<String>,
    /// Sent as `Authorization: Bearer …`; never shown again. Left out on a
    /// change: the stored one is kept.
    #[schemars(length(min = 1, max = TOKEN_CHARS))]
    pub token: Option<String>,
    #[schemars(length(min = 1, max = COMMAND_CHARS))]
    pub command: Option<String>,
    /// At most 32, each at most 1,000 characters.
    #[serde(default)]
    #[schemars(length(max = MAX_ARGS), inner(length(max = ARG_CHARS)))]
    pub args: Vec<String>,
    /// At most 32 variables; their values are never shown again. Left out
    /// on a change: the stored ones are kept.
    pub env: Option<BTreeMap<String, String>>,
}

pub fn valid_name(name: &str) -> bool {
    (1..=NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl ToolServerSpec {
    /// The server to store, or why not; `old` is the stored one a change
    /// keeps the token and env of.
    pub fn check(
        self,
        who: &str,
        old: Option<&StoredMcpServer>,
    ) -> Result<StoredMcpServer, ToolServerError> {
        let bad = ToolServerError::Invalid;
        let name = self.name.trim().to_string();
        if !valid_name(&name) {
            return Err(bad(format!(
                "name has 1 to {NAME_CHARS} letters, digits, '-' or '_', not '{}'",
                plan_engine::text::prefix(&name, 60)
            )));
        }
        let url = self
            .url
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty());
        let command = self
            .command
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty());
        match (&url, &command) {
            (Some(url), None) => {
                let ok = url.chars().count() <= URL_CHARS
                    && reqwest::Url::parse(url).is_ok_and(|u| {
                        matches!(u.scheme(), "http" | "https") && u.host_str().is_some()
                    });
                if !ok {
                    return Err(bad(format!(
                        "url must be an http(s) URL of at most {URL_CHARS} characters"
                    )));
                }
                if !self.args.is_empty() {
                    return Err(bad("args go with a command, not a url".into()));
                }
            }
            (None, Some(command)) => {
                if command.chars().count() > COMMAND_CHARS {
                    return Err(bad(format!(
                        "command has at most {COMMAND_CHARS} characters"
                    )));
                }
            }
            _ => {
                return Err(bad(
                    "give a url (streamable HTTP) or a command (stdio), one of them".into(),
                ))
            }
        }
        if self.args.len() > MAX_ARGS || self.args.iter().any(|a| a.chars().count() > ARG_CHARS) {
            return Err(bad(format!(
                "at most {MAX_ARGS} args, each at most {ARG_CHARS} characters"
            )));
        }
        let token = match self.token.map(|t| t.trim().to_string()) {
            Some(t) if t.is_empty() || t.chars().count() > TOKEN_CHARS => {
                return Err(bad(format!("token has 1 to {TOKEN_CHARS} characters")))
            }
            Some(t) => Some(t),
            None => old.and_then(|o| o.token.clone()),
        };
        let env = match self.env {
            Some(env) => env,
            None => old.map(|o| o.env.clone()).unwrap_or_default(),
        };
        if env.len() > MAX_ENV
            || env.iter().any(|(k, v)| {
                k.is_empty()
                    || k.len() > ENV_NAME_CHARS
                    || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    || v.chars().count() > ENV_VALUE_CHARS
            })
        {
            return Err(bad(format!(
                "env has at most {MAX_ENV} variables, named with letters, digits and '_', values of at most {ENV_VALUE_CHARS} characters"
            )));
        }
        if token.is_some() && url.is_none() {
            return Err(bad("a token goes with a url, not a command".into()));
        }
        Ok(StoredMcpServer {
            name,
            url,
            token,
            command,
            args: self.args,
            env,
            created_by: who.to_string(),
            created_at: chrono::Utc::now(),
        })
    }
}

/// Why a change to the MCP servers was refused.
#[derive(Debug, thiserror::Error)]
pub enum ToolServerError {
    #[error("{0}")]
    Invalid(String),
    #[error("an MCP server is named {0} already")]
    Taken(String),
    #[error("MCP server {0} comes from PLANBOARD_MCP_SERVERS: change the file and restart")]
    FromFile(String),
    #[error("no MCP server is named '{0}'")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Adding, changing, testing and removing servers: the store and the
/// registry together (the API and the board's forms both call these).
impl ToolServers {
    pub async fn add(
        &self,
        spec: ToolServerSpec,
        who: &str,
    ) -> Result<ToolServerView, ToolServerError> {
        let server = spec.check(who, None)?;
        if self.source(&server.name).is_some() || !self.store.put_mcp_server(&server, false).await?
        {
            return Err(ToolServerError::Taken(server.name));
        }
        Ok(self
            .connect(&server.name, ToolSource::Board, server.server())
            .await)
    }

    pub async fn change(
        &self,
        name: &str,
        spec: ToolServerSpec,
        who: &str,
    ) -> Result<ToolServerView, ToolServerError> {
        if self.source(name) == Some(ToolSource::File) {
            return Err(ToolServerError::FromFile(name.to_string()));
        }
        let stored = self.store.mcp_servers().await?;
        let old = stored
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| ToolServerError::NotFound(name.to_string()))?;
        if spec.name.trim() != name {
            return Err(ToolServerError::Invalid(format!(
                "the name cannot change ({name} here)"
            )));
        }
        let server = spec.check(who, Some(old))?;
        self.store.put_mcp_server(&server, true).await?;
        Ok(self.connect(name, ToolSource::Board, server.server()).await)
    }

    pub async fn test(&self, name: &str) -> Result<ToolServerView, ToolServerError> {
        let (Some(source), Some(server)) = (self.source(name), self.server(name)) else {
            return Err(ToolServerError::NotFound(name.to_string()));
        };
        Ok(self.connect(name, source, server).await)
    }

    pub async fn delete(&self, name: &str) -> Result<(), ToolServerError> {
        if self.source(name) == Some(ToolSource::File) {
            return Err(ToolServerError::FromFile(name.to_string()));
        }
        let removed = self.store.remove_mcp_server(name).await?;
        self.remove(name);
        if removed {
            Ok(())
        } else {
            Err(ToolServerError::NotFound(name.to_string()))
        }
    }
}

/// A URL without its path and query (they may hold a secret).
fn shown(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => format!(
            "{}://{}{}/…",
            u.scheme(),
            u.host_str().unwrap_or_default(),
            u.port().map(|p| format!(":{p}")).unwrap_or_default()
        ),
        Err(_) => "<unreadable URL>".into(),
    }
}

fn view_of(name: &str, e: &Entry) -> ToolServerView {
    let (transport, target) = match (&e.server.url, &e.server.command) {
        (Some(url), _) => (ToolTransport::Http, shown(url)),
        (None, command) => (ToolTransport::Stdio, command.clone().unwrap_or_default()),
    };
    ToolServerView {
        name: name.to_string(),
        source: e.source,
        transport,
        target,
        args: e.server.args.clone(),
        hidden_args: None,
        has_token: e.server.token.is_some(),
        env: e.server.env.keys().cloned().collect(),
        connected: e.tools.is_some(),
        tools: e
            .tools
            .as_ref()
            .map(|t| t.specs().into_iter().map(|s| s.name).collect())
            .unwrap_or_default(),
        error: e.error.clone(),
        checked_at: e.checked_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: serde_json::Value) -> ToolServerSpec {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_server_needs_a_good_name_and_one_of_url_or_command() {
        let ok =
            spec(serde_json::json!({"name": "git", "command": "uvx", "args": ["mcp-server-git"]}));
        assert_eq!(
            ok.check("alice", None).unwrap().command.as_deref(),
            Some("uvx")
        );
        for bad in [
            serde_json::json!({"name": "no spaces", "command": "x"}),
            serde_json::json!({"name": "", "command": "x"}),
            serde_json::json!({"name": "both", "command": "x", "url": "http://h/mcp"}),
            serde_json::json!({"name": "neither"}),
            serde_json::json!({"name": "ftp", "url": "ftp://h/mcp"}),
            serde_json::json!({"name": "argsurl", "url": "http://h/mcp", "args": ["a"]}),
            serde_json::json!({"name": "tok", "command": "x", "token": "t"}),
            serde_json::json!({"name": "env", "command": "x", "env": {"BAD-NAME": "v"}}),
        ] {
            assert!(spec(bad.clone()).check("alice", None).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_change_keeps_the_stored_token_and_env_unless_given() {
        let old =
            spec(serde_json::json!({"name": "s", "url": "http://h/mcp", "token": "secret-1"}))
                .check("alice", None)
                .unwrap();
        let kept = spec(serde_json::json!({"name": "s", "url": "http://h2/mcp"}))
            .check("bob", Some(&old))
            .unwrap();
        assert_eq!(kept.token.as_deref(), Some("secret-1"));
        assert_eq!(kept.url.as_deref(), Some("http://h2/mcp"));
        let replaced =
            spec(serde_json::json!({"name": "s", "url": "http://h/mcp", "token": "secret-2"}))
                .check("bob", Some(&old))
                .unwrap();
        assert_eq!(replaced.token.as_deref(), Some("secret-2"));
    }
}
