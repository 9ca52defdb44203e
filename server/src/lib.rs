//! planboard's server: the Leptos app rendered on the server, the HTTP API
//! for agents and people, live events over SSE, and MCP — all over one
//! durable store.
//!
//! # Layout
//! - [`config`]: the environment, checked before start;
//! - [`auth`]: local mode or bearer tokens with roles;
//! - [`store`]: the [`store::PlanStore`] trait and its SQLite/PostgreSQL implementation;
//! - [`book`]: the working set of plans the engine runs on;
//! - [`hints`]: what each agent session was last shown (bounded);
//! - [`service`]: [`service::PlanService`], the one write path (engine → store → publish);
//! - [`live`]: the log reader and SSE streams;
//! - [`api`]: the REST routes and their OpenAPI document;
//! - [`mcp`]: the MCP endpoint;
//! - [`metrics`]: `GET /metrics` for Prometheus;
//! - [`telemetry`]: OpenTelemetry spans of runs and requests, over OTLP;
//! - [`templates`]: plans saved as templates;
//! - [`reviews`]: people's reviews of finished plans;
//! - [`memories`]: what the agent remembers, and how a run recalls it;
//! - [`tool_servers`]: the MCP servers whose tools runs are offered;
//! - [`webhooks`]: notifications to the operator's endpoints, from the run log;
//! - [`runlog`]: the runs' log, its writer and the replicas' delta relay;
//! - [`runs`]: planboard's own agent: runs under leases, their log and controls;
//! - [`board`]: the board's backend (the app's server functions call it);
//! - [`session`]: signing in to the board in token mode;
//! - [`guard`]: hosts answered, writes only from planboard's own pages, JSON bodies, security headers;
//! - [`router`] / [`start`]: everything wired together; `main.rs` binds it.

// The board's view types nest deeply in release builds (without
// `erase_components`).
#![recursion_limit = "256"]

pub mod api;
pub mod auth;
pub mod board;
pub mod book;
pub mod config;
pub mod guard;
pub mod hints;
pub mod live;
pub mod mcp;
pub mod memories;
pub mod metrics;
pub mod metrics_http;
pub mod pages;
pub mod reviews;
pub mod runlog;
pub mod runs;
pub mod service;
pub mod session;
pub mod store;
pub mod telemetry;
pub mod templates;
pub mod tool_servers;
pub mod webhooks;

use std::sync::Arc;
use std::time::Duration;

use app::{shell, App};
use axum::routing::get;
use axum::Router;
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, AxumRouteListing, LeptosRoutes};

use crate::config::{Access, Config};
use crate::runlog::RunLogStore;
use crate::runs::RunStore;
use crate::service::PlanService;
use crate::store::{SqlStore, StoreError};

/// What the router needs besides the Leptos options.
#[derive(Clone)]
pub struct Services {
    pub plans: Arc<PlanService>,
    pub runs: Arc<runs::Runs>,
    pub templates: Arc<templates::Templates>,
    pub reviews: Arc<reviews::Reviews>,
    pub memories: Arc<memories::Memories>,
    pub tool_servers: Arc<tool_servers::ToolServers>,
    pub access: Arc<Access>,
    /// What `/healthz` names itself as (`PLANBOARD_INSTANCE`).
    pub instance: Option<Arc<str>>,
    /// How often an idle SSE stream sends a keep-alive comment.
    pub keep_alive: Duration,
    /// The configured webhook endpoint (those admins add are in the store).
    pub webhooks: Arc<webhooks::Webhooks>,
    /// Spans of runs and requests, when an OTLP endpoint is set.
    pub telemetry: Option<Arc<telemetry::Telemetry>>,
    /// The hosts the server answers to and the origin its pages write from.
    pub guard: Arc<guard::Guard>,
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
    let tool_servers = tool_servers::ToolServers::open(config, store.clone()).await?;
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
        },
        tool_servers.clone(),
        model,
        shared_log,
        telemetry.clone(),
    )
    .map_err(|e| StoreError::Config(e.to_string()))?;
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
    Ok(Services {
        plans,
        runs,
        templates,
        reviews,
        memories,
        tool_servers,
        access: Arc::new(config.access.clone()),
        instance: config.instance.as_deref().map(Arc::from),
        keep_alive: Duration::from_secs(15),
        webhooks: Arc::new(webhooks::Webhooks::new(
            config.webhooks.clone(),
            store.clone(),
        )),
        telemetry,
        guard: Arc::new(guard::Guard::new(
            config.public_url.as_ref(),
            &config.allowed_hosts,
        )),
    })
}

/// The whole application. Takes the Leptos options so tests can point it
/// at any site root.
pub fn router(options: LeptosOptions, services: Services) -> Router {
    router_with_pages(options, services, page_routes())
}

/// The board's page routes, found by running the app once.
///
/// While this runs, Leptos suppresses every resource in the process (a
/// process-wide flag, leptos#4773), and a page whose resource first polls
/// in that window never finishes. A server calls it once before serving;
/// a process that starts many servers (the tests) must compute it once and
/// share it through [`router_with_pages`].
pub fn page_routes() -> Vec<AxumRouteListing> {
    generate_route_list(App)
}

/// [`router`] with the page routes computed beforehand.
pub fn router_with_pages(
    options: LeptosOptions,
    services: Services,
    routes: Vec<AxumRouteListing>,
) -> Router {
    let api = api::routes(api::ApiState {
        service: services.plans.clone(),
        runs: services.runs.clone(),
        templates: services.templates.clone(),
        reviews: services.reviews.clone(),
        memories: services.memories.clone(),
        tool_servers: services.tool_servers.clone(),
        keep_alive: services.keep_alive,
        webhooks: services.webhooks.clone(),
    });
    let guarded = Router::new()
        .route("/metrics", {
            let runs = services.runs.clone();
            get(move |state| metrics_http::scrape(state, runs))
        })
        .with_state(services.plans.clone())
        .nest("/api", api)
        .nest_service(
            "/mcp",
            mcp::router(
                services.plans.clone(),
                services.runs.clone(),
                services.reviews.clone(),
                services.memories.clone(),
            )
            .layer(axum::middleware::from_fn(guard::json_bodies)),
        )
        .layer(axum::middleware::from_fn_with_state(
            services.access.clone(),
            auth::identify,
        ));
    let board = Arc::new(board::Board {
        plans: services.plans.clone(),
        runs: services.runs.clone(),
        templates: services.templates.clone(),
        reviews: services.reviews.clone(),
        memories: services.memories.clone(),
        tool_servers: services.tool_servers.clone(),
        webhooks: services.webhooks.clone(),
    });
    let backend: Arc<dyn app::api::BoardBackend> = board.clone();
    let site = Router::new()
        .merge(board::routes(board))
        .leptos_routes_with_context(
            &options,
            routes,
            move || provide_context(backend.clone()),
            {
                let options = options.clone();
                move || shell(options.clone())
            },
        )
        .fallback(leptos_axum::file_and_error_handler(shell))
        .with_state(options);
    // Leptos reads a server function's body with no limit of its own.
    let site = site.layer(axum::middleware::from_fn(board::bounded_server_fn_bodies));
    let site = bounded_responses(site).layer(axum::middleware::from_fn_with_state(
        services.access.clone(),
        auth::identify_viewer,
    ));
    let sessions = Router::new()
        .route("/login", get(session::form).post(session::sign_in))
        .route("/logout", axum::routing::post(session::sign_out))
        .route("/lang/{code}", get(session::switch_language))
        .with_state(services.access.clone());
    let app = Router::new()
        .route(
            "/healthz",
            get({
                let instance = services.instance.clone();
                move || healthz(instance)
            }),
        )
        .route("/api/openapi.json", get(api::openapi))
        .merge(guarded)
        .merge(sessions)
        .merge(site);
    let app = app.layer(axum::middleware::from_fn_with_state(
        services.telemetry.clone(),
        telemetry::trace_requests,
    ));
    // Outside every route (the API, MCP, the board's server functions and
    // forms, sign-in): nothing is handled before its host and origin are
    // checked, and every answer, a refusal too, gets the security headers.
    let app = app.layer(axum::middleware::from_fn_with_state(
        services.guard.clone(),
        guard::guard,
    ));
    with_operations(app, services.plans)
}

/// How long a request may take to produce its response head. Streams are
/// not cut: their head goes out at once and the body may run for hours.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Adds what every request with a bounded answer (pages, API calls; not
/// the live streams) goes through: gzip for HTML and JSON, and the timeout.
pub fn bounded_responses<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            REQUEST_TIMEOUT,
        ))
        .layer(tower_http::compression::CompressionLayer::new())
}

/// What every request goes through, outermost first: a request id (the
/// client's `x-request-id`, or a new UUID) that is in its log span and
/// echoed in the response; a log line per request; its metrics. Pages and
/// API calls also get [`bounded_responses`].
fn with_operations(app: Router, plans: Arc<PlanService>) -> Router {
    use axum::http::Request;
    use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
    use tower_http::trace::TraceLayer;

    let trace = TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
        let id = request
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-");
        tracing::info_span!("request", id, method = %request.method(), path = %request.uri().path())
    });
    app.layer(axum::middleware::from_fn_with_state(
        plans,
        metrics_http::record,
    ))
    .layer(PropagateRequestIdLayer::x_request_id())
    .layer(trace)
    .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}

async fn healthz(instance: Option<Arc<str>>) -> axum::response::Response {
    use axum::response::IntoResponse;
    match instance.and_then(|i| axum::http::HeaderValue::from_str(&i).ok()) {
        Some(name) => ([("x-planboard-instance", name)], "ok").into_response(),
        None => "ok".into_response(),
    }
}
