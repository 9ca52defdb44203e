//! planboard's server: the Leptos app rendered on the server, the HTTP API
//! for agents and people, live events over SSE, and MCP — all over one
//! durable store.
//!
//! # Layout
//! Bottom up; each folder imports only those above it in this list
//! (`scripts/layers.py` checks it).
//! - [`auth`]: who may do what (local mode, bearer tokens with roles, sessions, wrong
//!   tokens limited per client);
//! - [`store`]: the plans' [`store::PlanStore`] and the SQLite/PostgreSQL [`store::SqlStore`]
//!   every concept's store trait is implemented on, and the log rows both logs share;
//! - [`book`], [`hints`]: the working set of plans; what each agent session was last shown;
//! - [`pages`], [`metrics`], [`telemetry`]: paging through logs; Prometheus metrics; OpenTelemetry;
//! - [`config`]: the environment, checked before start (webhook endpoints included);
//! - [`live`]: the plans' log reader and SSE streams;
//! - [`service`]: [`service::PlanService`], the one write path (engine → store → publish);
//! - [`runlog`]: the runs' rows and their log, its writer and the replicas' delta relay;
//! - [`templates`], [`memories`], [`tool_servers`], [`acp_agents`], [`webhooks`],
//!   [`approvals`]: one folder per concept, each with its service, its store trait and SQL
//!   (approvals: every decision a person makes for the agent, kept for audit);
//! - [`workspace`]: a run's files as people reach them: inputs, artifacts, the zip, images;
//! - [`runs`]: planboard's own agent: runs under leases, their controls and retention;
//! - [`reviews`]: people's reviews of finished plans;
//! - [`cases`]: runs reviewed good kept as regression cases, and the suite runs over them;
//! - [`services`]: [`Services`], every concept's service together;
//! - [`web`]: the edges: the REST API, the board's backend and forms, MCP, sign-in, the
//!   request guard, `/metrics`; [`router`] wires them; `main.rs` binds it;
//! - [`start`]: the services built from the config.

// The board's view types nest deeply in release builds (without
// `erase_components`).
#![recursion_limit = "256"]

/// mimalloc instead of glibc's malloc, for every binary of the server (the
/// server, its benches and tools): a step of the agent allocates and frees
/// many small values, and glibc's allocator was about a tenth of its
/// profile (`cargo bench -p server --bench agent`, chains of 10 in
/// process: p50 0.26–0.29 → 0.21–0.24 ms). Built from its C source by
/// `cc`, like SQLite; nothing is downloaded.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod acp_agents;
pub mod approvals;
pub mod auth;
pub mod book;
pub mod cases;
pub mod config;
pub mod hints;
pub mod live;
pub mod memories;
pub mod metrics;
pub mod pages;
pub mod reviews;
pub mod runlog;
pub mod runs;
pub mod service;
pub mod services;
pub mod store;
pub mod telemetry;
pub mod templates;
pub mod tool_servers;
pub mod web;
pub mod webhooks;
pub mod workspace;

pub use services::{Services, UPLOAD_BODY_LIMIT};
pub use web::{bounded_responses, page_routes, router, router_with_pages, REQUEST_TIMEOUT};

/// The site's name as this binary was compiled with it (`.cargo/config.toml`
/// sets `LEPTOS_OUTPUT_NAME` for every cargo command): the name of the
/// wasm, script and stylesheet the pages ask for, which Leptos fixes at
/// compile time. `main` serves with it whatever the environment says at
/// run time.
pub const SITE_NAME: &str = env!("LEPTOS_OUTPUT_NAME");

use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::runlog::RunLogStore;
use crate::runlog::RunStore;
use crate::service::PlanService;
use crate::store::{SqlStore, StoreError};

/// Opens the store, loads the plans, releases stale leases and starts the
/// periodic lease check.
pub async fn start(config: &Config) -> Result<Services, StoreError> {
    start_with_model(config, None).await
}

/// [`start`], with `model` answering in place of the configured
/// endpoint (which must still be configured: it names the model and sets
/// the concurrency). The agent benchmark uses it to time the orchestration
/// without an HTTP round trip per call.
pub async fn start_with_model(
    config: &Config,
    model: Option<Arc<dyn agent::Llm>>,
) -> Result<Services, StoreError> {
    let store = Arc::new(SqlStore::connect(&config.database_url).await?);
    let shared = store.is_postgres();
    let plans = PlanService::open(store.clone(), shared).await?;
    // Told of every approval the plan service commits, from here on.
    let approvals = approvals::Approvals::new(
        plans.clone(),
        store.clone(),
        store.clone(),
        config.prices.clone(),
        config.approval_rules.clone(),
    );
    let tool_servers = tool_servers::ToolServers::open(config, store.clone()).await?;
    let acp_agents = acp_agents::AcpAgents::open(store.clone()).await?;
    let telemetry = match &config.telemetry {
        None => None,
        Some(t) => Some(Arc::new(
            telemetry::Telemetry::start(t).map_err(|e| StoreError::Config(e.to_string()))?,
        )),
    };
    let shared_log = match (
        store.listen_run_log().await?,
        store.listen_run_deltas().await?,
    ) {
        (Some(remote), Some(deltas)) => Some(runs::SharedLog {
            remote,
            after: store.last_run_log_seq().await?,
            deltas,
        }),
        _ => None,
    };
    let runs = runs::Runs::new(
        config,
        plans.clone(),
        runs::RunStores {
            runs: store.clone(),
            templates: store.clone(),
            memories: store.clone(),
            log: store.clone(),
            approvals: approvals.clone(),
        },
        runs::RunWorkers {
            tool_servers: tool_servers.clone(),
            acp: acp_agents.clone(),
        },
        model,
        shared_log,
        telemetry.clone(),
    )
    .map_err(|e| StoreError::Config(e.to_string()))?;
    // A grant may name only a tool a run can be given.
    let tools_of = Arc::downgrade(&runs);
    approvals.know_tools(Arc::new(move || {
        tools_of
            .upgrade()
            .map(|runs| runs.tools().into_iter().map(|t| t.name).collect())
            .unwrap_or_default()
    }));
    webhooks::open_cursor(store.as_ref(), store.as_ref()).await?;
    runs.spawn_keeper();
    webhooks::spawn(
        webhooks::DelivererStores {
            hooks: store.clone(),
            log: store.clone(),
            runs: store.clone(),
        },
        config.webhooks.clone(),
        telemetry.is_some(),
    );
    // The retentions of finished runs' files and logs, and leftovers.
    runs.spawn_retention();
    let held = |store: Arc<SqlStore>| async move {
        store
            .leased_plans(chrono::Utc::now().timestamp_millis())
            .await
            .unwrap_or_else(|e| {
                tracing::error!("reading run leases failed: {e}");
                Vec::new()
            })
    };
    let released = plans
        .reconcile_except(config.lease, &held(store.clone()).await)
        .await
        .unwrap_or_else(|e| {
            tracing::error!("lease check failed: {e}");
            0
        });
    if released > 0 {
        tracing::info!("released {released} subtask(s) whose lease expired");
    }
    let lease = config.lease;
    let weak = Arc::downgrade(&plans);
    let run_store = store.clone();
    tokio::spawn(async move {
        // A quarter lease (450 s by default), at least a second apart.
        let every = (lease / 4).max(Duration::from_secs(1));
        loop {
            tokio::time::sleep(every).await;
            let Some(plans) = weak.upgrade() else { return };
            let held = held(run_store.clone()).await;
            if let Err(e) = plans.reconcile_except(lease, &held).await {
                tracing::error!("lease check failed: {e}");
            }
        }
    });
    let templates = Arc::new(templates::Templates::new(
        plans.clone(),
        store.clone(),
        store.clone(),
    ));
    let reviews = Arc::new(reviews::Reviews::new(
        plans.clone(),
        store.clone(),
        store.clone(),
    ));
    let memories = Arc::new(memories::Memories::new(store.clone()));
    let workspaces = runs.workspaces();
    let cases = cases::Cases::new(
        plans.clone(),
        runs.clone(),
        reviews.clone(),
        store.clone(),
        workspaces.clone(),
    );
    // The suite runs this process drove when it stopped cannot go on.
    match cases.fail_interrupted().await {
        Ok(0) => {}
        Ok(n) => tracing::info!("{n} suite run(s) this instance drove were ended as failed"),
        Err(e) => tracing::warn!("the suite runs left going could not be ended: {e}"),
    }
    if let Some(schedule) = config.suite_schedule {
        cases.spawn_schedule(schedule);
    }
    Ok(Services {
        plans,
        runs,
        approvals,
        templates,
        reviews,
        cases,
        memories,
        tool_servers,
        acp_agents,
        workspaces,
        access: Arc::new(config.access.clone()),
        instance: config.instance.as_deref().map(Arc::from),
        keep_alive: Duration::from_secs(15),
        webhooks: Arc::new(webhooks::Webhooks::new(
            config.webhooks.clone(),
            store.clone(),
        )),
        telemetry,
        public_url: config.public_url.clone(),
        allowed_hosts: config.allowed_hosts.clone(),
    })
}
