//! The MCP servers whose tools the agent offers: those of
//! `PLANBOARD_MCP_SERVERS` (fixed at start) and those admins add, change
//! and remove while the server runs (stored; connected at start and when
//! saved), each with its state. A run's toolset takes the servers
//! connected when it is built.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use agent::mcp::{McpServer, McpTools};
use agent::protocol::ToolSpec;
use agent::tools::ToolBox;
use run_model::{ToolServerView, ToolSource, ToolTransport};

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

#[derive(Default)]
pub struct ToolServers {
    servers: RwLock<BTreeMap<String, Entry>>,
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
    /// Connects every server (at once, each within [`CONNECT_TIMEOUT`]);
    /// one that fails is kept with its error, offering nothing.
    pub async fn start(servers: Vec<(String, ToolSource, McpServer)>) -> Arc<ToolServers> {
        let registry = Arc::new(ToolServers::default());
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
