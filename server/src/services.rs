//! [`Services`]: every concept's service, built once by [`crate::start`]
//! and handed to the edges (`web`), which only call them. Its own file,
//! below the edges in the crate's order: the edges import it, and it
//! imports every concept (the order is `lib.rs`'s).

use std::sync::Arc;
use std::time::Duration;

use crate::config::Access;
use crate::service::PlanService;
use crate::{
    acp_agents, approvals, cases, memories, reviews, runs, telemetry, templates, tool_servers,
    webhooks, workspace,
};

/// What the router needs besides the Leptos options.
#[derive(Clone)]
pub struct Services {
    pub plans: Arc<PlanService>,
    pub runs: Arc<runs::Runs>,
    /// Every decision a person makes for the agent, kept for audit.
    pub approvals: Arc<approvals::Approvals>,
    pub templates: Arc<templates::Templates>,
    pub reviews: Arc<reviews::Reviews>,
    /// Regression cases and suite runs.
    pub cases: Arc<cases::Cases>,
    pub memories: Arc<memories::Memories>,
    pub tool_servers: Arc<tool_servers::ToolServers>,
    /// The ACP agents runs can be given to.
    pub acp_agents: Arc<acp_agents::AcpAgents>,
    pub workspaces: Arc<workspace::Workspaces>,
    pub access: Arc<Access>,
    /// What `/healthz` names itself as (`PLANBOARD_INSTANCE`).
    pub instance: Option<Arc<str>>,
    /// How often an idle SSE stream sends a keep-alive comment.
    pub keep_alive: Duration,
    /// The configured webhook endpoint (those admins add are in the store).
    pub webhooks: Arc<webhooks::Webhooks>,
    /// Spans of runs and requests, when an OTLP endpoint is set.
    pub telemetry: Option<Arc<telemetry::Telemetry>>,
    /// The address people reach the board at (`PLANBOARD_PUBLIC_URL`) and
    /// the other names it answers to (`PLANBOARD_ALLOWED_HOSTS`): the
    /// request guard's (`web::guard`), built with the router.
    pub public_url: Option<reqwest::Url>,
    pub allowed_hosts: Vec<String>,
}

/// The body of a request that carries a run's files: the files' limit
/// and room for the form's other fields.
pub const UPLOAD_BODY_LIMIT: usize = run_model::MAX_FILES_BYTES + 1024 * 1024;

impl Services {
    /// Begins a graceful shutdown: every live stream ends with a
    /// `shutdown` event so its client reconnects elsewhere.
    pub fn shutdown(&self) {
        self.plans.hub().close();
    }
}
