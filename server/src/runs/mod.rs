//! planboard's own agent inside the server: [`Runs`] starts runs, drives
//! them under a lease, answers what the API asks about them, and turns
//! people's requests (pause, resume, cancel, answer) into plan changes, so
//! the board and the agent share one path. A run given to an ACP agent
//! (`RunConfig::agent`) is the same resource, driven by `agent::acp`
//! instead of planboard's own agent: it needs no model.
//!
//! # Durability
//! A run is a row (its [`RunRecord`]) plus its plan. Whoever drives a run
//! holds its lease and renews it every third of the lease; on start, and
//! on every renewal, a process claims the unfinished runs whose lease ran
//! out (a crashed replica's) or that it held itself before a restart, and
//! drives them from the plan's state: finished subtasks stay finished, the
//! model call that was in flight is made again.
//!
//! # Layout
//! - this file: [`Runs`], the service the API calls;
//! - `host.rs`: the agent's `Host` over [`PlanService`] and the run store;
//! - `again.rs`: "Run again from here"; `replay.rs`: a run replayed on its
//!   recording ([`ReplayRequest`]); `compare.rs`: two runs side by side;
//! - `local_model.rs`: the local model `scripts/run` started: building,
//!   starting or died;
//! - `retention.rs`: the retentions of finished runs' files and logs, and
//!   the storage view;
//! - `store.rs`: [`RunStore`], the runs' rows, and its SQL;
//! - `stream.rs`: a run's log as server-sent events.

mod again;
mod compare;
mod host;
pub mod local_model;
mod needs;
mod replay;
pub mod retention;
mod stream;

use crate::acp_agents::AcpAgents;
pub use crate::tool_servers::ToolServers;

use crate::telemetry::Telemetry;
use run_model::TraceParent;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::workspace::inputs::{InputError, Staged, Upload};
use crate::workspace::{Artifact, ArtifactError, Workspaces};
use agent::protocol::ToolSpec;
use agent::run::{Budget, RunConfig, RunEntry, RunProgress, RunRecord, RunState, Verdict};
use agent::tools::files::FileTools;
use agent::tools::sandbox::code::CodeTools;
use agent::tools::sandbox::{Sandbox, SandboxLimits, SandboxUnavailable};
use agent::tools::web::WebTools;
use agent::tools::{ToolBox, Toolset};
use agent::workspace::Workspace;
use agent::{Agent, Llm, OpenAiLlm, RunId};
use plan_engine::{Command, Op, PlanState, SubtaskId, SubtaskState};
use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::broadcast;

pub use crate::live::{LiveDelta, RunNews};
pub use host::ServerHost;
pub use replay::ReplayRequest;
pub use stream::run_stream;

use crate::approvals::Approvals;
use crate::config::Config;
use crate::memories::MemoryStore;
pub use crate::runlog::RunStore;
use crate::runlog::{DeltaRelay, RunLogStore, StoredRunEntry, Streaming};
use crate::service::{PlanService, ServiceError};
use crate::store::StoreError;
use crate::templates::TemplateStore;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    NoModel(String),
    #[error("no run has id {0}")]
    NotFound(RunId),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Plan(#[from] ServiceError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The plan store failed under the agent's host, in the host's words
    /// (which hold the store's): for the server log, never for a client.
    #[error("the plan store failed: {0}")]
    StoreFailed(String),
    /// No guarded call of the run has this id.
    #[error("the run has no guarded call {0}")]
    NoCall(String),
    /// The guarded call was decided already (or expired).
    #[error("the call {0} was decided already")]
    Decided(String),
    /// The decision was made on something other than what waits now:
    /// another call's digest (an approval is never replayed onto another
    /// call).
    #[error("{0}")]
    Stale(String),
    /// The run's files were refused (or could not be written).
    #[error(transparent)]
    Input(#[from] InputError),
    /// The plan cannot be run again from that subtask.
    #[error(transparent)]
    Again(agent::coordinator::again::AgainError),
    /// The run has not finished, and what is asked needs it finished (a
    /// replay reads its whole recording).
    #[error("{0}")]
    NotFinished(String),
}

/// An artifact refused (not a file of the workspace, too big) is the
/// request's fault; the workspace's own errors keep their kind.
impl From<ArtifactError> for RunError {
    fn from(e: ArtifactError) -> RunError {
        match e {
            ArtifactError::Input(e) => RunError::Input(e),
            ArtifactError::Refused(m) => RunError::Invalid(m),
        }
    }
}

/// What the agent's host refused, as the runs' error: the engine's
/// refusal and a plan that cannot be worked are the caller's (422), a
/// failed store is the server's.
impl From<agent::host::HostError> for RunError {
    fn from(e: agent::host::HostError) -> Self {
        use agent::host::HostError;
        match e {
            HostError::Refused(e) => RunError::Plan(ServiceError::Plan(e)),
            e @ HostError::NotFound(_) => RunError::Invalid(e.to_string()),
            HostError::NotWorkable(why) => RunError::Invalid(why),
            HostError::Unavailable(why) => RunError::StoreFailed(why),
        }
    }
}

/// A run as the API shows it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RunView {
    #[serde(flatten)]
    pub record: RunRecord,
    /// The plan's state (`null` if its plan was deleted).
    pub plan_state: Option<PlanState>,
    pub progress: RunProgress,
    /// A run in batches: items covered, the batch now and the batches it
    /// will likely take, the success rate and seed 002's ETA.
    /// (`batches` is the record's own: where the iteration stands.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_view: Option<run_model::BatchView>,
    /// The tools granted for the run when its plan was approved (the
    /// revoked ones too, with who revoked them); one run's view only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<run_model::Grant>,
    /// The run was approved and held: it starts on a click (`POST
    /// /api/runs/{id}/start`) or at `start_at`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold: Option<run_model::Hold>,
    /// While the plan awaits approval: the tools that ask a person before
    /// each call and the steps that will call them (a person may grant
    /// them with the approval).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guarded_tools: Vec<run_model::GuardedTool>,
    /// While the plan awaits approval: what is wrong with it, each a
    /// sentence (`text`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan_checks: Vec<run_model::PlanCheck>,
    /// While the plan awaits approval, what it will likely cost (calls,
    /// tokens, minutes, cost, each `{low, high}`) and whether it fits the
    /// budget; once approved, the forecast it was approved with, to read
    /// beside `spent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forecast: Option<run_model::Forecast>,
}

const NO_MODEL: &str = "planboard's agent has no model: set PLANBOARD_LLM_MODEL and \
    PLANBOARD_LLM_BASE_URL (and PLANBOARD_LLM_API_KEY if the endpoint needs one), then \
    restart; see the README's table of variables";

pub struct Runs {
    plans: Arc<PlanService>,
    store: Arc<dyn RunStore>,
    /// The runs' log.
    log: Arc<dyn RunLogStore>,
    /// Where a run started from a template finds it.
    templates: Arc<dyn TemplateStore>,
    agent: Option<Arc<Agent>>,
    entries: broadcast::Sender<RunNews>,
    owner: String,
    lease: Duration,
    workspaces: Arc<Workspaces>,
    /// The retentions in effect (see `retention.rs`), as the storage
    /// view shows them, and as durations.
    retention: run_model::Retention,
    run_log_keep: Option<Duration>,
    workspace_keep: Option<Duration>,
    approval_keep: Option<Duration>,
    /// A plan waiting for approval this long is marked overdue in Needs
    /// you (the agent tells the webhooks).
    approval_remind: Option<Duration>,
    /// The decisions people make on runs (guarded calls, budgets), kept.
    approvals: Arc<Approvals>,
    driving: Mutex<HashSet<RunId>>,
    /// The agent's host, for what people add to a run's log.
    host: Arc<ServerHost>,
    /// One decision on a guarded call at a time, so a second one is refused.
    deciding: tokio::sync::Mutex<()>,
    /// The code runner, or why it is not offered.
    sandbox: Result<Arc<Sandbox>, SandboxUnavailable>,
    /// Every work tool a run can be given, for the task box and for
    /// checking a run's choice.
    builtin_tools: Vec<ToolSpec>,
    /// The MCP servers (the file's and the board's).
    tool_servers: Arc<ToolServers>,
    /// The ACP agents runs can be given to.
    acp: Arc<AcpAgents>,
    /// The keeper runs (see [`Runs::spawn_keeper`]).
    keeping: std::sync::atomic::AtomicBool,
    /// No login: one local user (a two-person rule cannot be met).
    local_mode: bool,
    /// The operator's tool policies (`PLANBOARD_TOOL_POLICY`, then those
    /// set on the board, which win), read when a run starts.
    policies: Arc<std::sync::RwLock<Vec<(String, agent::run::ToolPolicy)>>>,
    /// `PLANBOARD_TOOL_POLICY` alone, under the stored ones.
    env_policies: Vec<(String, agent::run::ToolPolicy)>,
    model_answers: Arc<std::sync::atomic::AtomicBool>,
    /// The local model's folder (`PLANBOARD_LOCAL_MODEL_HOME`).
    local_model_home: Option<PathBuf>,
    /// Spans of the runs (OpenTelemetry), when an endpoint is set.
    telemetry: Option<Arc<Telemetry>>,
}

/// Asks the model endpoint every 3 s until it answers once.
fn watch_model(llm: agent::LlmConfig, answers: Arc<std::sync::atomic::AtomicBool>) {
    answers.store(false, std::sync::atomic::Ordering::Relaxed);
    tokio::spawn(async move {
        let mut waited = false;
        loop {
            if llm.answers().await {
                answers.store(true, std::sync::atomic::Ordering::Relaxed);
                if waited {
                    tracing::info!("the model endpoint answers now");
                }
                return;
            }
            if !waited {
                tracing::info!("the model endpoint does not answer yet; asking every 3 s");
                waited = true;
            }
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
    });
}

/// The code runner as configured: probed once at start-up.
fn sandbox_of(config: &Config) -> Result<Arc<Sandbox>, SandboxUnavailable> {
    if !config.sandbox {
        return Err(SandboxUnavailable {
            reason: "PLANBOARD_SANDBOX is off".into(),
        });
    }
    let sandbox = Sandbox::detect(SandboxLimits::default()).map(Arc::new);
    match &sandbox {
        Ok(s) => tracing::info!(
            "code runner: bubblewrap at {} (python: {})",
            s.bwrap().display(),
            s.python()
                .map_or("none".into(), |p| p.display().to_string())
        ),
        Err(e) => tracing::warn!("code runner off: {e}"),
    }
    sandbox
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The name this process's leases carry: the instance name, else the host's.
fn owner_name(config: &Config) -> String {
    config
        .instance
        .clone()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "planboard".into())
}

/// The stores a run reads and writes besides the plans'.
pub struct RunStores {
    pub runs: Arc<dyn RunStore>,
    /// Where a run started from a template finds it.
    pub templates: Arc<dyn TemplateStore>,
    /// What runs recall and leave.
    pub memories: Arc<dyn MemoryStore>,
    /// The runs' log.
    pub log: Arc<dyn RunLogStore>,
    /// Where the decisions people make on runs are recorded.
    pub approvals: Arc<Approvals>,
}

/// Who works for a run besides planboard's own agent: the MCP servers
/// whose tools it may call, and the ACP agents a task may be given to.
pub struct RunWorkers {
    pub tool_servers: Arc<ToolServers>,
    pub acp: Arc<AcpAgents>,
}

/// A run log that other processes write too (PostgreSQL): the entries
/// reach this process's streams through a reader of the log.
pub struct SharedLog {
    /// Woken by the other processes' appends.
    pub remote: tokio::sync::mpsc::Receiver<()>,
    /// The newest entry when this process started.
    pub after: i64,
    /// The reply deltas the other processes send.
    pub deltas: tokio::sync::mpsc::Receiver<String>,
}

impl Runs {
    /// Builds the service; with a model configured, also the agent.
    pub fn new(
        config: &Config,
        plans: Arc<PlanService>,
        stores: RunStores,
        workers: RunWorkers,
        model: Option<Arc<dyn Llm>>,
        shared_log: Option<SharedLog>,
        telemetry: Option<Arc<Telemetry>>,
    ) -> Result<Arc<Runs>, agent::llm::ClientError> {
        let RunStores {
            runs: store,
            templates,
            memories,
            log,
            approvals,
        } = stores;
        let RunWorkers { tool_servers, acp } = workers;
        let (entries, _) = broadcast::channel(4096);
        let (streaming, relay) = match shared_log {
            None => (Streaming::Direct, None),
            Some(shared) => {
                let local = Arc::new(tokio::sync::Notify::new());
                tokio::spawn(crate::runlog::read_shared_log(
                    log.clone(),
                    entries.downgrade(),
                    local.clone(),
                    shared.remote,
                    shared.after,
                ));
                let relay = DeltaRelay::spawn(log.clone(), entries.downgrade(), shared.deltas);
                (Streaming::Shared(local), Some(relay))
            }
        };
        let embedder = match &config.llm {
            Some(llm) => agent::OpenAiEmbedder::new(llm.clone())?
                .map(|e| Arc::new(e) as Arc<dyn agent::Embedder>),
            None => None,
        };
        let host = Arc::new(ServerHost::new(
            plans.clone(),
            store.clone(),
            entries.clone(),
            host::HostSetup {
                streaming,
                relay,
                telemetry: telemetry.clone(),
                embedder,
                memories,
                log: log.clone(),
                workspaces: config.workspaces.clone(),
                approvals: approvals.clone(),
            },
        ));
        let host_for_people = host.clone();
        let workspaces = config.workspaces.clone();
        let sandbox = sandbox_of(config);
        let web = Arc::new(WebTools::new(config.fetch.clone(), config.search.clone()))
            as Arc<dyn ToolBox>;
        // The built-in tools every run gets, built for one workspace.
        let builtin = {
            let (root, sandbox, web) = (workspaces.clone(), sandbox.clone(), web.clone());
            let quota = config.workspace_quota;
            move |run: RunId| {
                let dir = root.join(run.to_string());
                let mut sources = Vec::new();
                match Workspace::create(&dir) {
                    Ok(ws) => {
                        let ws = ws.with_quota(quota);
                        sources.push(Arc::new(FileTools::on(ws.clone())) as Arc<dyn ToolBox>);
                        if let Ok(sandbox) = &sandbox {
                            sources
                                .push(Arc::new(CodeTools::on(sandbox.clone(), ws))
                                    as Arc<dyn ToolBox>);
                        }
                    }
                    Err(e) => tracing::error!("run {run}: no workspace folder: {e}"),
                }
                sources.push(web.clone());
                sources
            }
        };
        let policies = Arc::new(std::sync::RwLock::new(config.tool_policies.clone()));
        // Asked of the built-in tools for no run, whose empty folder then
        // goes again; the MCP servers' tools are asked of them each time.
        let builtin_tools = Toolset::new(builtin(RunId::nil()))
            .with_policies(config.tool_policies.iter().cloned())
            .specs();
        // A run's tools: the built-in ones and the servers connected now,
        // under the operator's policies as they are when it starts.
        let toolset = {
            let servers = tool_servers.clone();
            let policies = policies.clone();
            move |run: RunId| {
                let mut sources = builtin(run);
                sources.extend(servers.boxes());
                let operator = policies.read().expect("policies lock").clone();
                Toolset::new(sources).with_policies(operator)
            }
        };
        let _ = std::fs::remove_dir(workspaces.join(RunId::nil().to_string()));
        let model_answers = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let agent = match &config.llm {
            None => None,
            Some(llm) => {
                let concurrency = llm.concurrency;
                let protocol = llm.protocol;
                let model = match model {
                    Some(model) => model,
                    None => {
                        watch_model(llm.clone(), model_answers.clone());
                        Arc::new(OpenAiLlm::new(llm.clone())?) as Arc<dyn Llm>
                    }
                };
                let mut agent = Agent::new(host, model, concurrency)
                    .with_tools(toolset)
                    .with_prices(config.prices.clone());
                agent.protocol = protocol;
                agent.approval_remind = config.approval_remind;
                Some(Arc::new(agent))
            }
        };
        Ok(Arc::new(Runs {
            plans,
            store,
            log,
            templates,
            agent,
            entries,
            owner: owner_name(config),
            lease: config.run_lease,
            workspaces: Arc::new(Workspaces::new(
                workspaces,
                config.workspace_quota,
                config.workspace_roots.clone(),
            )),
            retention: run_model::Retention {
                workspace_days: config
                    .workspace_retention
                    .map(|d| d.as_secs() / (24 * 3600)),
                run_log_hours: config.run_log_retention.map(|d| d.as_secs() / 3600),
                webhook_days: config.webhooks.retention.as_secs() / (24 * 3600),
                workspace_quota_bytes: config.workspace_quota,
                staging_hours: retention::STAGING_KEPT.as_secs() / 3600,
                approval_days: config.approval_retention.map(|d| d.as_secs() / (24 * 3600)),
            },
            run_log_keep: config.run_log_retention,
            workspace_keep: config.workspace_retention,
            approval_keep: config.approval_retention,
            approval_remind: config.approval_remind,
            approvals,
            driving: Mutex::new(HashSet::new()),
            host: host_for_people,
            deciding: tokio::sync::Mutex::new(()),
            sandbox,
            builtin_tools,
            tool_servers,
            acp,
            keeping: std::sync::atomic::AtomicBool::new(false),
            local_mode: matches!(config.access, crate::config::Access::Local { .. }),
            policies,
            env_policies: config.tool_policies.clone(),
            model_answers,
            local_model_home: config.local_model_home.clone(),
            telemetry,
        }))
    }

    /// Whether the configured model endpoint has answered since start-up
    /// (an in-process model always has): a local model started beside
    /// planboard may take minutes, and the task box says so meanwhile.
    pub fn model_answers(&self) -> bool {
        self.model_answers
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many model calls go before `run`'s next one in the model's
    /// queue (`Some(0)`: it goes next); `None` when none of its calls
    /// waits.
    pub fn model_position(&self, run: RunId) -> Option<usize> {
        self.agent.as_ref()?.queue.position(run)
    }

    /// Model calls waiting in the queue, across all runs.
    pub fn model_waiting(&self) -> usize {
        self.agent.as_ref().map_or(0, |a| a.queue.waiting())
    }

    /// Whether the model answers, is still building or starting, or died
    /// (read afresh on every call: a few small files and `/proc`).
    pub fn model_status(&self) -> run_model::ModelStatus {
        let local = self.local_model_home.as_deref().map(local_model::observe);
        local_model::status(
            self.model_name().is_some(),
            self.model_answers(),
            local.as_ref(),
        )
    }

    /// The work tools a run can be given.
    pub fn tools(&self) -> Vec<ToolSpec> {
        let mut tools = self.builtin_tools.clone();
        tools.extend(self.tool_servers.specs());
        tools
    }

    /// The built-in work tools (files, code, web).
    pub fn builtin_tools(&self) -> &[ToolSpec] {
        &self.builtin_tools
    }

    /// Why `run_python` and `run_shell` are not offered, if they are not.
    pub fn sandbox_unavailable(&self) -> Option<&SandboxUnavailable> {
        self.sandbox.as_ref().err()
    }

    /// The configured model's name, for the board.
    pub fn model_name(&self) -> Option<String> {
        self.agent
            .as_ref()
            .map(|a| a.llm.model(agent::llm::CallRole::Executor))
    }

    /// The name this process's leases carry (`PLANBOARD_INSTANCE`, else
    /// the host's): what else it drives (suite runs) is held under it too.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub fn subscribe(&self) -> broadcast::Receiver<RunNews> {
        self.entries.subscribe()
    }

    pub fn store(&self) -> Arc<dyn RunStore> {
        self.store.clone()
    }

    /// The host the agent writes through (its runs' rows, their logs):
    /// for the live loop's benchmark, which writes as many agents would.
    #[doc(hidden)]
    /// The runs' log, for the board's pages that read a run's entries.
    pub fn log(&self) -> Arc<dyn RunLogStore> {
        self.log.clone()
    }

    /// The runs' workspaces (the services built at start share them).
    pub fn workspaces(&self) -> Arc<Workspaces> {
        self.workspaces.clone()
    }

    pub fn agent_host(&self) -> Arc<dyn agent::host::Host> {
        self.host.clone()
    }

    pub fn workspace(&self, run: RunId) -> PathBuf {
        self.workspaces.dir(run)
    }

    /// Claims what is claimable and drives it; then keeps the leases
    /// alive (and picks up runs whose driver died) until the service goes.
    /// Without a model only when there are ACP agents (their runs need
    /// none): at start if any is added, else when the first run is given
    /// to one. Started once.
    pub fn spawn_keeper(self: &Arc<Self>) {
        if self.agent.is_none() && self.acp.names().is_empty() {
            return;
        }
        if self.keeping.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let weak: Weak<Runs> = Arc::downgrade(self);
        let every = (self.lease / 3).max(Duration::from_secs(1));
        tokio::spawn(async move {
            loop {
                let Some(runs) = weak.upgrade() else { return };
                runs.keep().await;
                drop(runs);
                tokio::time::sleep(every).await;
            }
        });
    }

    async fn keep(self: &Arc<Self>) {
        self.start_due_holds().await;
        self.refresh_policies().await;
        let until = now_ms() + self.lease.as_millis() as i64;
        if let Err(e) = self.store.renew_runs(&self.owner, until).await {
            tracing::error!("renewing run leases failed: {e}");
        }
        match self.store.claim_runs(&self.owner, now_ms(), until).await {
            Ok(claimed) => {
                for run in claimed {
                    self.drive(run);
                }
            }
            Err(e) => tracing::error!("claiming runs failed: {e}"),
        }
    }

    fn drive(self: &Arc<Self>, run: RunRecord) {
        if run.config.agent.is_some() {
            self.drive_acp(run);
            return;
        }
        let Some(agent) = self.agent.clone() else {
            // A run of planboard's own agent, here without a model: left
            // for a process that has one.
            let (store, id) = (self.store.clone(), run.id);
            tokio::spawn(async move {
                if let Err(e) = store.release_run(id).await {
                    tracing::warn!("run {id}: releasing its lease failed: {e}");
                }
            });
            return;
        };
        if !self.driving.lock().expect("driving lock").insert(run.id) {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            let id = run.id;
            let finished = agent.drive(run).await;
            tracing::info!("run {id} ended as {}", finished.state);
            if let Err(e) = me.store.release_run(id).await {
                tracing::warn!("run {id}: releasing its lease failed: {e}");
            }
            me.driving.lock().expect("driving lock").remove(&id);
        });
    }

    /// Drives a run given to an ACP agent: the agent's program, started
    /// in the run's workspace, until the run ends.
    fn drive_acp(self: &Arc<Self>, run: RunRecord) {
        if !self.driving.lock().expect("driving lock").insert(run.id) {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            let id = run.id;
            let host = me.agent_host();
            let name = run.config.agent.clone().unwrap_or_default();
            let workspace = me.workspace(id);
            if let Err(e) = tokio::fs::create_dir_all(&workspace).await {
                tracing::warn!("run {id}: its workspace could not be made: {e}");
            }
            let finished = match me.acp.command(&name) {
                Some(command) => agent::acp::drive(host, command, workspace, run).await,
                None => {
                    let why = format!("no ACP agent is named {name} any more; it was removed");
                    agent::acp::give_up(host.as_ref(), run, why).await
                }
            };
            tracing::info!("run {id} ({name}, ACP) ended as {}", finished.state);
            if let Err(e) = me.store.release_run(id).await {
                tracing::warn!("run {id}: releasing its lease failed: {e}");
            }
            me.driving.lock().expect("driving lock").remove(&id);
        });
    }

    /// The ACP agents runs can be given to.
    pub fn acp_agents(&self) -> Arc<AcpAgents> {
        self.acp.clone()
    }

    pub async fn start(
        self: &Arc<Self>,
        config: RunConfig,
        who: &str,
    ) -> Result<RunView, RunError> {
        self.start_with(config, None, None, who, None).await
    }

    /// Starts a run whose workspace begins with `files` (already staged):
    /// they are in place, and listed in the run's config, before the agent
    /// plans; from the stored `template` if one is named (a copy of it goes
    /// into the run's config). A refused start keeps none of the files.
    pub async fn start_with(
        self: &Arc<Self>,
        mut config: RunConfig,
        template: Option<run_model::TemplateId>,
        files: Option<Staged>,
        who: &str,
        trace: Option<TraceParent>,
    ) -> Result<RunView, RunError> {
        if let Some(plan) = config.plan {
            if let Err(e) = self.check_given_plan(plan, &mut config).await {
                if let Some(files) = files {
                    files.discard().await;
                }
                return Err(e);
            }
        }
        if let Some(id) = template {
            match self.templates.template(id).await {
                Ok(Some(template)) => config.template = Some(template),
                found => {
                    if let Some(files) = files {
                        files.discard().await;
                    }
                    return Err(match found {
                        Err(e) => RunError::Store(e),
                        _ => RunError::Invalid(format!("no template has id {id}")),
                    });
                }
            }
        }
        let checked = self.check_start(config);
        let (mut config, agent) = match checked {
            Ok(ok) => ok,
            Err(e) => {
                if let Some(files) = files {
                    files.discard().await;
                }
                return Err(e);
            }
        };
        let id = uuid::Uuid::new_v4();
        let workspace = self.workspace(id);
        if let Some(files) = files {
            config.inputs = files.settle(&workspace).await.map_err(RunError::Input)?;
        }
        if let Some(batches) = &config.batches {
            // Refused before the run exists, with the reason: an input
            // that is not among the files, or has no usable items.
            if let Err(why) = check_batch_input(&workspace, &config.inputs, &batches.input).await {
                let _ = tokio::fs::remove_dir_all(&workspace).await;
                return Err(RunError::Invalid(why.to_string()));
            }
        }
        if let Some(telemetry) = &self.telemetry {
            telemetry.adopt(id, trace);
        }
        if agent.is_none() {
            // An ACP agent starts in the workspace, files or none.
            if let Err(e) = tokio::fs::create_dir_all(&workspace).await {
                return Err(RunError::StoreFailed(format!(
                    "the run's workspace could not be made: {e}"
                )));
            }
        }
        let started = match agent {
            Some(agent) => agent.start_traced(id, config, who, trace).await,
            None => agent::acp::start(self.host.as_ref(), id, config, who, trace).await,
        };
        let record = match started {
            Ok(record) => record,
            Err(e) => {
                let _ = tokio::fs::remove_dir_all(&workspace).await;
                return Err(e.into());
            }
        };
        // A server without a model keeps leases once it has ACP runs.
        self.spawn_keeper();
        self.keep().await;
        self.view(record).await
    }

    /// A plan given to the agent: it exists, no unfinished run works it
    /// already, and an empty task becomes the plan's title and goal.
    async fn check_given_plan(
        &self,
        plan: plan_engine::PlanId,
        config: &mut RunConfig,
    ) -> Result<(), RunError> {
        let (title, goal) = self
            .plans
            .read(plan, |p| (p.title().to_string(), p.goal().to_string()))
            .await
            .ok_or_else(|| RunError::Invalid(format!("no plan has id {plan}")))?;
        let busy = self
            .store
            .runs_on(&[plan])
            .await?
            .into_iter()
            .find(|r| !r.state.is_finished());
        if let Some(run) = busy {
            return Err(RunError::Invalid(format!(
                "run {} already works plan {plan} ({})",
                run.id, run.state
            )));
        }
        if config.task.trim().is_empty() {
            config.task = if goal.trim().is_empty() || goal == title {
                title
            } else {
                format!("{title}\n\n{goal}")
            };
        }
        Ok(())
    }

    /// The config as a run may start with it, and the agent to run it:
    /// planboard's own, or `None` for an ACP agent (which needs no model,
    /// and uses its own tools).
    fn check_start(&self, config: RunConfig) -> Result<(RunConfig, Option<Arc<Agent>>), RunError> {
        let config = config
            .checked()
            .map_err(|e| RunError::Invalid(e.to_string()))?;
        if let Some(rule) = config.approval_rule.as_ref().filter(|r| !r.is_plain()) {
            if self.local_mode {
                return Err(RunError::Invalid(
                    "approval_rule needs token mode: in local mode everyone is the one local \
                     user, so no other person could ever approve this run"
                        .into(),
                ));
            }
            if !rule.approvers.is_empty() && rule.approvers.len() < rule.needed() as usize {
                return Err(RunError::Invalid(format!(
                    "approval_rule asks for {} approvals of {} approvers",
                    rule.needed(),
                    rule.approvers.len()
                )));
            }
        }
        if let Some(name) = &config.agent {
            if self.acp.command(name).is_none() {
                let names = self.acp.names();
                return Err(RunError::Invalid(if names.is_empty() {
                    format!(
                        "there is no ACP agent named {name}; an admin adds them (POST /api/agents)"
                    )
                } else {
                    format!(
                        "there is no ACP agent named {name}; the agents are {}",
                        names.join(", ")
                    )
                }));
            }
            return Ok((config, None));
        }
        let tools = self.tools();
        if let Some(unknown) = config
            .tools
            .iter()
            .flatten()
            .find(|name| !tools.iter().any(|t| &t.name == *name))
        {
            let known: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            return Err(RunError::Invalid(format!(
                "there is no tool named {unknown}; the tools are {}",
                known.join(", ")
            )));
        }
        let agent = self
            .agent
            .clone()
            .ok_or_else(|| RunError::NoModel(NO_MODEL.into()))?;
        Ok((config, Some(agent)))
    }

    async fn view(&self, record: RunRecord) -> Result<RunView, RunError> {
        let (plan_state, progress) = match record.plan_id {
            Some(id) => {
                let parallel = record.config.max_parallel;
                self.plans
                    .read(id, |p| (Some(p.state()), RunProgress::of(p, parallel)))
                    .await
                    .unwrap_or_default()
            }
            None => (None, RunProgress::default()),
        };
        let batch_view = record.batches.as_ref().map(|p| {
            let size = record.config.batches.as_ref().map_or(1, |b| b.size);
            p.view(size)
        });
        Ok(RunView {
            record,
            plan_state,
            progress,
            batch_view,
            grants: Vec::new(),
            hold: None,
            guarded_tools: Vec::new(),
            plan_checks: Vec::new(),
            forecast: None,
        })
    }

    /// One run's view with what people decided on it (its grants and its
    /// hold) and, while its plan awaits approval, the card's guarded
    /// tools.
    async fn full_view(&self, record: RunRecord) -> Result<RunView, RunError> {
        let id = record.id;
        let mut view = self.view(record).await?;
        // Grants, a hold and an approved forecast come only with a
        // person's approval, so a plan approved at its creation has none,
        // and its view reads no approval rows: three SQLite reads less for
        // each look at such a run (the agent bench polls every 2 ms, a
        // client every 500 ms), on the same worker as the run's steps.
        let approved_by_people = match view.record.plan_id {
            Some(plan) => self
                .plans
                .read(plan, |p| p.approval().required)
                .await
                .unwrap_or(true),
            None => false,
        };
        if !approved_by_people {
            return Ok(view);
        }
        view.grants = self.approvals.grants_of(id).await?;
        view.hold = self.approvals.hold_of(id).await?;
        let awaiting = view.plan_state == Some(PlanState::AwaitingApproval);
        match view.record.plan_id {
            Some(plan) if awaiting => {
                if let Some(plan) = self.plans.get(plan).await {
                    let config = &view.record.config;
                    let offered: Vec<String> = self.tools().into_iter().map(|t| t.name).collect();
                    view.guarded_tools = run_model::card::guarded_tools(&plan, &offered, |tool| {
                        self.policy_for_run(config, tool)
                    });
                    // The tools this run may use: its own choice, less the
                    // `never` ones.
                    let usable: Vec<String> = offered
                        .into_iter()
                        .filter(|t| config.tools.as_ref().is_none_or(|only| only.contains(t)))
                        .filter(|t| self.policy_for_run(config, t) != agent::run::ToolPolicy::Never)
                        .collect();
                    let given: Vec<String> = config.inputs.iter().map(|f| f.path.clone()).collect();
                    view.plan_checks = run_model::card::plan_checks(&plan, &given, &usable);
                    view.forecast = Some(self.approvals.forecast(&view.record, &plan).await?);
                }
            }
            Some(_) => view.forecast = self.approvals.approved_forecast(id).await?,
            None => {}
        }
        Ok(view)
    }

    /// What a call of `tool` needs in a run started with `config`: the
    /// tool's default (`ask` for an MCP tool that may write), the
    /// operator's policy over it, the run's own stricter one.
    pub fn policy_for_run(&self, config: &RunConfig, tool: &str) -> agent::run::ToolPolicy {
        let operator: Vec<(String, agent::run::ToolPolicy)> =
            self.policies.read().expect("policies lock").clone();
        Toolset::new(self.tool_servers.boxes())
            .with_policies(operator)
            .overridden(&config.policies)
            .policy(tool)
    }

    pub async fn record(&self, id: RunId) -> Result<RunRecord, RunError> {
        self.store.load_run(id).await?.ok_or(RunError::NotFound(id))
    }

    pub async fn get(&self, id: RunId) -> Result<RunView, RunError> {
        let record = self.record(id).await?;
        self.full_view(record).await
    }

    pub async fn list(
        &self,
        state: Option<RunState>,
        plan: Option<plan_engine::PlanId>,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<RunView>, RunError> {
        let mut out = Vec::new();
        for record in self.store.list_runs(state, plan, offset, limit).await? {
            out.push(self.view(record).await?);
        }
        Ok(out)
    }

    pub async fn events(
        &self,
        id: RunId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredRunEntry>, RunError> {
        self.record(id).await?;
        Ok(self.log.run_log(id, after, limit).await?)
    }

    /// What the run's model calls used and cost, in all, per subtask and
    /// per model, from its `llm_call` entries (read a page at a time).
    pub async fn cost(&self, id: RunId) -> Result<run_model::CostReport, RunError> {
        const PAGE: u32 = 1000;
        self.record(id).await?;
        let mut calls = Vec::new();
        let mut pages =
            crate::pages::Pages::after(0, PAGE, |after, n| self.log.run_log(id, after, n));
        while let Some(page) = pages.next().await {
            for stored in page? {
                if stored.kind != run_model::EntryKind::LlmCall {
                    continue;
                }
                if let Ok(RunEntry::LlmCall(call)) = serde_json::from_value(stored.entry) {
                    calls.push(call);
                }
            }
        }
        Ok(run_model::CostReport::of(&calls))
    }

    async fn on_plan(&self, id: RunId, ops: Vec<Op>, who: &str) -> Result<RunView, RunError> {
        let record = self.record(id).await?;
        let plan = record
            .plan_id
            .ok_or_else(|| RunError::Invalid("the run has no plan yet".into()))?;
        if ops.len() == 1 {
            let op = ops.into_iter().next().expect("one op");
            self.plans.command(plan, &Command::from(op), who).await?;
        } else {
            self.plans.execute(plan, ops, who).await?;
        }
        self.view(record).await
    }

    /// Reads the operators' stored tool policies again (another replica
    /// may have set one): `PLANBOARD_TOOL_POLICY` under them.
    pub async fn refresh_policies(&self) {
        match self.approvals.stored_policies().await {
            Ok(stored) => {
                let mut all = self.env_policies.clone();
                all.extend(stored);
                *self.policies.write().expect("policies lock") = all;
            }
            Err(e) => tracing::warn!("reading the stored tool policies failed: {e}"),
        }
    }

    /// An operator sets `tool`'s policy for the runs started from now on
    /// (applying an approvals insight): stored, so every replica and a
    /// restart keep it, over `PLANBOARD_TOOL_POLICY`.
    pub async fn set_tool_policy(
        &self,
        tool: &str,
        policy: agent::run::ToolPolicy,
        who: &str,
    ) -> Result<(), RunError> {
        if !self.tools().iter().any(|t| t.name == tool) {
            return Err(RunError::Invalid(format!("there is no tool named {tool}")));
        }
        self.approvals.put_policy(tool, policy, who).await?;
        self.refresh_policies().await;
        Ok(())
    }

    /// The operator's policy of `tool` now (its default, the operator's
    /// over it), without a run's own.
    pub fn operator_policy(&self, tool: &str) -> agent::run::ToolPolicy {
        self.policy_for_run(&RunConfig::default(), tool)
    }

    /// Approval fatigue over the last `days` days: per person and per
    /// tool, with the suggested policy moves, and how often the forecasts
    /// held.
    pub async fn insights(&self, days: u32) -> Result<InsightsView, RunError> {
        let records = self.approvals.recent(days).await?;
        let operator: Vec<(String, agent::run::ToolPolicy)> =
            self.policies.read().expect("policies lock").clone();
        let toolset = Toolset::new(self.tool_servers.boxes()).with_policies(operator);
        let insights = run_model::insights::insights(&records, |tool| toolset.policy(tool));
        Ok(InsightsView {
            days,
            insights,
            forecasts: self.approvals.forecast_accuracy().await?,
        })
    }

    /// Starts a run that was approved and held (`POST
    /// /api/runs/{id}/start`, the board's Start): its hold is released and
    /// its plan resumed. Refused for a run that is not held.
    pub async fn start_held(&self, id: RunId, who: &str) -> Result<RunView, RunError> {
        let record = self.record(id).await?;
        let held = self
            .approvals
            .hold_of(id)
            .await?
            .is_some_and(|h| h.released_at.is_none());
        if !held || !self.approvals.release_hold(id).await? {
            return Err(RunError::Invalid(format!(
                "run {id} is not held: it was not approved with hold, or it has started"
            )));
        }
        self.on_plan(id, vec![Op::Resume {}], who).await?;
        self.get(record.id).await
    }

    /// Starts the held runs whose time has come (at most one process
    /// starts each: releasing the hold is the claim). A run someone
    /// started and paused again since is left paused.
    async fn start_due_holds(&self) {
        let due = match self.approvals.due_holds().await {
            Ok(due) => due,
            Err(e) => {
                tracing::error!("reading the held runs failed: {e}");
                return;
            }
        };
        for hold in due {
            let untouched = self
                .plans
                .read(hold.plan_id, |p| {
                    p.state() == PlanState::Paused
                        && p.subtasks().iter().all(|s| s.started_at().is_none())
                })
                .await
                .unwrap_or(false);
            match self.approvals.release_hold(hold.run_id).await {
                Ok(true) if untouched => {
                    let who = format!("planboard (held by {} until its time)", hold.by);
                    let resumed = self
                        .plans
                        .command(hold.plan_id, &Command::from(Op::Resume {}), &who)
                        .await;
                    if let Err(e) = resumed {
                        tracing::warn!("run {}: starting it at its time failed: {e}", hold.run_id);
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::error!("releasing run {}'s hold failed: {e}", hold.run_id),
            }
        }
    }

    /// Nothing new starts; work in flight finishes.
    pub async fn pause(&self, id: RunId, who: &str) -> Result<RunView, RunError> {
        self.on_plan(id, vec![Op::Pause {}], who).await
    }

    /// With a budget, the run's budget is replaced first (a run paused by
    /// its budget goes on after a person raised it).
    pub async fn resume(
        &self,
        id: RunId,
        budget: Option<Budget>,
        who: &str,
    ) -> Result<RunView, RunError> {
        let raised = match budget {
            Some(budget) => {
                let mut record = self.record(id).await?;
                let before = record.config.budget.clone();
                let live = self
                    .agent
                    .as_ref()
                    .is_some_and(|a| a.raise_budget(id, budget.clone()));
                if !live {
                    record.config.budget = budget.clone();
                    self.store.save_run(&record).await?;
                }
                Some((record, before, budget))
            }
            None => None,
        };
        let view = self.on_plan(id, vec![Op::Resume {}], who).await?;
        // A held run resumed by hand has started: its time no longer
        // starts it.
        if let Err(e) = self.approvals.release_hold(id).await {
            tracing::warn!("run {id}: releasing its hold failed: {e}");
        }
        if let Some((record, before, budget)) = raised {
            self.record_budget(&record, &before, &budget, who).await;
        }
        Ok(view)
    }

    /// The approval record of a budget raised: the new limits' digest, the
    /// old and new limits beside it.
    async fn record_budget(&self, run: &RunRecord, before: &Budget, after: &Budget, who: &str) {
        use run_model::{ApprovalDecision, ApprovalKind, ApprovalRecord};
        let limits = serde_json::json!({"before": before, "after": after});
        let digest = run_model::digest::value_digest(&serde_json::json!(after));
        let mut record = ApprovalRecord::new(
            uuid::Uuid::new_v4(),
            ApprovalKind::Budget,
            ApprovalDecision::Approved,
            who,
            chrono::Utc::now(),
            digest,
        )
        .with_note(run.reason.as_deref());
        record.run_id = Some(run.id);
        record.plan_id = run.plan_id;
        if let Some(plan) = run.plan_id {
            record.plan_version = self.plans.read(plan, |p| p.version()).await;
        }
        record.detail = Some(limits);
        let _ = self.approvals.record(&record).await;
    }

    /// Ends the plan as abandoned: work in flight is dropped, subtasks in
    /// progress go back to todo.
    pub async fn cancel(&self, id: RunId, who: &str) -> Result<RunView, RunError> {
        let outcome = format!("run cancelled by {who}");
        self.on_plan(
            id,
            vec![Op::Finish {
                state: PlanState::Abandoned,
                outcome,
            }],
            who,
        )
        .await
    }

    /// Answers the agent's question on `subtask` of run `id` (see
    /// [`Runs::answer_question`]).
    pub async fn answer(
        &self,
        id: RunId,
        subtask: SubtaskId,
        answer: &str,
        who: &str,
    ) -> Result<RunView, RunError> {
        let record = self.record(id).await?;
        let plan = record
            .plan_id
            .ok_or_else(|| RunError::Invalid("the run has no plan yet".into()))?;
        self.answer_question(plan, subtask, answer, who, &format!("answered by {who}"))
            .await?;
        self.view(record).await
    }

    /// The one way a question is answered (the API, MCP and the board's
    /// answer box): only a subtask that waits (blocked) takes an answer;
    /// the answer becomes a comment on it and it goes back to todo for
    /// the agent, in one change. `note` is the subtask's note (the
    /// board's is in the person's language).
    pub async fn answer_question(
        &self,
        plan: plan_engine::PlanId,
        subtask: SubtaskId,
        answer: &str,
        who: &str,
        note: &str,
    ) -> Result<(), RunError> {
        let state = self
            .plans
            .read(plan, |p| p.subtask(subtask).map(|s| s.state()))
            .await
            .ok_or(RunError::Plan(crate::service::ServiceError::Plan(
                plan_engine::PlanError::UnknownPlan { id: plan },
            )))?;
        match state {
            Some(SubtaskState::Blocked) => {}
            Some(state) => {
                return Err(RunError::Invalid(format!(
                    "subtask {} is {}, not waiting for an answer",
                    subtask.0,
                    state.as_str()
                )))
            }
            None => {
                return Err(RunError::Invalid(format!(
                    "the run's plan has no subtask {}",
                    subtask.0
                )))
            }
        }
        let ops = vec![
            Op::Comment {
                subtask: Some(subtask),
                body: answer.to_string(),
            },
            Op::SetSubtaskState {
                id: subtask,
                state: SubtaskState::Todo,
                note: Some(note.to_string()),
                start_next: false,
            },
        ];
        self.plans.execute(plan, ops, who).await?;
        Ok(())
    }

    /// Adds files to a run's workspace while it runs: they land next to
    /// what is there, and a comment on the plan (which the agent reads
    /// among what people changed) says which.
    pub async fn add_files(
        &self,
        id: RunId,
        uploads: Vec<Upload>,
        who: &str,
    ) -> Result<Vec<run_model::InputFile>, RunError> {
        let record = self.record(id).await?;
        if record.state.is_finished() {
            return Err(RunError::Invalid(format!(
                "the run is {}; files are added to a run that goes on",
                record.state
            )));
        }
        let plan = record
            .plan_id
            .ok_or_else(|| RunError::Invalid("the run has no plan yet".into()))?;
        let staged = self.workspaces.stage_uploads(uploads).await?;
        let placed = staged
            .add_to(&self.workspace(id), self.workspaces.quota())
            .await
            .map_err(RunError::Input)?;
        let list: Vec<String> = placed
            .iter()
            .map(|f| format!("{} ({} bytes)", f.path, f.bytes))
            .collect();
        let body = format!("added files to the workspace: {}", list.join(", "));
        self.plans
            .execute(
                plan,
                vec![Op::Comment {
                    subtask: None,
                    body,
                }],
                who,
            )
            .await?;
        Ok(placed)
    }

    /// The run's guarded tool calls that wait for a person, oldest first.
    pub async fn pending_calls(&self, id: RunId) -> Result<Vec<PendingCall>, RunError> {
        self.record(id).await?;
        let calls = needs::timed_calls_of(self.log.as_ref(), id).await?;
        Ok(needs::pending_of(calls))
    }

    /// A person's decision on a guarded call: approved, edited (with the
    /// arguments to use) or denied (with a reason for the model). With a
    /// `digest`, the decision is of that call as the person saw it: a
    /// call with other arguments (another call) is refused, so an
    /// approval is never replayed onto what it was not given for. Each
    /// decision is an approval record.
    pub async fn decide(
        &self,
        id: RunId,
        call: &str,
        decision: Decision,
        who: &str,
    ) -> Result<RunView, RunError> {
        let _one = self.deciding.lock().await;
        let record = self.record(id).await?;
        let calls = needs::timed_calls_of(self.log.as_ref(), id).await?;
        let asked = calls
            .iter()
            .any(|(e, _)| matches!(e, RunEntry::ToolApproval { call: c, .. } if c == call));
        let Some(pending) = needs::pending_of(calls)
            .into_iter()
            .find(|p| p.call == call)
        else {
            return Err(if asked {
                RunError::Decided(call.to_string())
            } else {
                RunError::NoCall(call.to_string())
            });
        };
        if let Some(seen) = decision.digest.as_deref() {
            if !seen.trim().eq_ignore_ascii_case(&pending.digest) {
                return Err(RunError::Stale(format!(
                    "the call {call} is {} with the digest {}, not the one decided on ({}): \
                     read it again and decide on what it asks now",
                    pending.name,
                    pending.digest,
                    plan_engine::text::prefix(seen.trim(), 64)
                )));
            }
        }
        // Two people for what is risky: an approval (or an edit) of the
        // call meets the run's rule for its tool; a denial never waits.
        if decision.verdict != DecisionKind::Deny {
            if let Some(plan_id) = record.plan_id {
                if let Some(plan) = self.plans.get(plan_id).await {
                    let rule =
                        self.approvals
                            .rule_for(&record, Some(plan.mode()), Some(&pending.name));
                    let ran = match (&decision.verdict, &decision.arguments) {
                        (DecisionKind::Edit, Some(args)) => args.clone(),
                        _ => pending.arguments.clone(),
                    };
                    let digest = run_model::call_digest(&pending.name, &ran);
                    self.approvals
                        .meet(
                            &rule,
                            &record,
                            &plan,
                            run_model::ApprovalKind::ToolCall,
                            &digest,
                            Some((call, pending.name.as_str())),
                            who,
                        )
                        .await?;
                }
            }
        }
        let (verdict, arguments) = match decision.verdict {
            DecisionKind::Approve => (Verdict::Approved, None),
            DecisionKind::Deny => (Verdict::Denied, None),
            DecisionKind::Edit => match decision.arguments {
                Some(args @ serde_json::Value::Object(_)) => (Verdict::Edited, Some(args)),
                _ => {
                    return Err(RunError::Invalid(
                        "an edit gives the call's arguments as a JSON object".into(),
                    ))
                }
            },
        };
        let reason = decision
            .reason
            .map(|r| plan_engine::text::prefix(r.trim(), REASON_CHARS).to_string())
            .filter(|r| !r.is_empty());
        // What will run, and so what the decision is bound to.
        let ran = arguments
            .clone()
            .unwrap_or_else(|| pending.arguments.clone());
        self.host
            .log_now(
                id,
                RunEntry::ToolDecision {
                    call: call.to_string(),
                    verdict,
                    by: who.to_string(),
                    reason: reason.clone(),
                    arguments,
                },
            )
            .await?;
        self.record_call(&record, &pending, verdict, &ran, reason.as_deref(), who)
            .await;
        self.view(record).await
    }

    /// The approval record of a decision on a guarded call: its tool and
    /// the digest of what runs (the person's arguments for an edit).
    async fn record_call(
        &self,
        run: &RunRecord,
        call: &PendingCall,
        verdict: Verdict,
        ran: &serde_json::Value,
        reason: Option<&str>,
        who: &str,
    ) {
        use run_model::{ApprovalDecision, ApprovalKind, ApprovalRecord};
        let decision = match verdict {
            Verdict::Approved => ApprovalDecision::Approved,
            Verdict::Edited => ApprovalDecision::Edited,
            Verdict::Denied | Verdict::Expired => ApprovalDecision::Denied,
        };
        let now = chrono::Utc::now();
        let mut record = ApprovalRecord::new(
            uuid::Uuid::new_v4(),
            ApprovalKind::ToolCall,
            decision,
            who,
            now,
            run_model::call_digest(&call.name, ran),
        )
        .with_note(reason);
        record.run_id = Some(run.id);
        record.plan_id = run.plan_id;
        if let Some(plan) = run.plan_id {
            record.plan_version = self.plans.read(plan, |p| p.version()).await;
        }
        record.tool = Some(call.name.clone());
        record.call = Some(call.call.clone());
        record.waited_ms = call
            .asked_at
            .map(|asked| crate::approvals::waited(asked, now));
        if verdict == Verdict::Edited {
            record.detail = Some(serde_json::json!({"asked": call.digest}));
        }
        let _ = self.approvals.record(&record).await;
    }

    /// The approvals service (the records of this server's decisions).
    pub fn approvals(&self) -> &Arc<Approvals> {
        &self.approvals
    }

    /// The files the run wrote ([`Workspaces::artifacts`]).
    pub async fn artifacts(&self, id: RunId) -> Result<Vec<Artifact>, RunError> {
        self.record(id).await?;
        Ok(self.workspaces.artifacts(id).await?)
    }

    /// The whole workspace as a zip archive ([`Workspaces::zip`]).
    pub async fn workspace_zip(&self, id: RunId) -> Result<Vec<u8>, RunError> {
        self.record(id).await?;
        Ok(self.workspaces.zip(id).await?)
    }

    /// One artifact's bytes ([`Workspaces::artifact`]).
    pub async fn artifact(&self, id: RunId, relative: &str) -> Result<Vec<u8>, RunError> {
        self.record(id).await?;
        Ok(self.workspaces.artifact(id, relative).await?)
    }
}

/// The approvals insights page: approval fatigue per person and per tool,
/// the suggested policy moves, and how often forecasts held.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct InsightsView {
    /// The days looked back.
    pub days: u32,
    #[serde(flatten)]
    pub insights: run_model::Insights,
    pub forecasts: run_model::ForecastAccuracy,
}

/// A guarded tool call that waits for a person.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PendingCall {
    pub call: String,
    pub subtask: SubtaskId,
    pub name: String,
    /// The arguments the agent gave (the code, the URL, …).
    pub arguments: serde_json::Value,
    /// The call's SHA-256 (its tool and canonical arguments): send it with
    /// the decision to bind the decision to what was read.
    pub digest: String,
    /// When the agent asked, when known.
    pub asked_at: Option<plan_engine::Timestamp>,
    /// The MCP server that asks a person this, mid-call (an elicitation),
    /// when it is a server's question rather than a call waiting to run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asker: Option<String>,
}

/// The longest reason given with a decision, in characters.
pub const REASON_CHARS: usize = 2000;

plan_engine::wire_enum! {
    /// What a person decides about a guarded call.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, JsonSchema)]
    pub enum DecisionKind: "decision (approve, edit or deny)" {
        Approve = "approve",
        Edit = "edit",
        Deny = "deny",
    }
}

/// A person's decision, as the API and the board send it.
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    pub verdict: DecisionKind,
    /// The call's `digest` as the person read it (`GET
    /// /api/runs/{id}/tool-calls`): when given, a call with another digest
    /// is refused (409 `stale`).
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub digest: Option<String>,
    /// For the model: why it was denied (or edited).
    #[serde(default)]
    #[schemars(length(max = REASON_CHARS))]
    pub reason: Option<String>,
    /// With `edit`: the arguments to run the call with instead.
    #[serde(default)]
    pub arguments: Option<serde_json::Value>,
}

/// A batch input must be one of the run's files and read as items.
async fn check_batch_input(
    workspace: &std::path::Path,
    inputs: &[run_model::InputFile],
    path: &str,
) -> Result<(), run_model::BatchInputError> {
    if !inputs.iter().any(|f| f.path == path) {
        return Err(run_model::BatchInputError::Missing(path.into()));
    }
    let (root, name) = (workspace.to_path_buf(), path.to_string());
    let bytes = tokio::task::spawn_blocking(move || {
        Workspace::open(&root)
            .ok()
            .and_then(|ws| ws.read(&name, run_model::MAX_FILE_BYTES as u64).ok())
    })
    .await
    .ok()
    .flatten()
    .ok_or_else(|| run_model::BatchInputError::Missing(path.into()))?
    .0;
    run_model::BatchInput::parse(path, &bytes).map(|_| ())
}
