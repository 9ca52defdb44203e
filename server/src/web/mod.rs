//! The edges: everything that speaks HTTP to people, agents and tools, on
//! top of the services. Handlers extract, call one service and map its
//! error through [`api::error::ApiError`], the one mapping the board's
//! forms and MCP read too.
//!
//! # Layout
//! - `api/`: the REST routes and their OpenAPI document;
//! - `board/`: the board's backend (the app's server functions) and its
//!   forms, one file per page;
//! - `mcp.rs`: the MCP endpoint;
//! - `session.rs`: signing in to the board in token mode;
//! - `auth.rs`: the middleware that puts an identity on each request;
//! - `guard.rs`: hosts answered, writes only from planboard's own pages,
//!   JSON bodies, security headers;
//! - `metrics.rs`: `GET /metrics` and the per-request metrics;
//! - `assets.rs`: the site's static files, a plain 404 for a missing one;
//! - this file: [`router`], all of it wired together.

pub mod api;
pub mod assets;
pub mod auth;
pub mod board;
pub mod guard;
pub mod mcp;
pub mod metrics;
pub mod session;

use std::sync::Arc;
use std::time::Duration;

use app::{shell, App};
use axum::routing::get;
use axum::Router;
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, AxumRouteListing, LeptosRoutes};

use crate::service::PlanService;
use crate::services::Services;

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
    let api = api::routes(Arc::new(services.clone()));
    let assets = assets::routes(&options);
    let guarded = Router::new()
        .route("/metrics", {
            let runs = services.runs.clone();
            get(move |state| metrics::scrape(state, runs))
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
                services.workspaces.clone(),
                services.cases.clone(),
            )
            .layer(axum::middleware::from_fn(guard::json_bodies)),
        )
        .layer(axum::middleware::from_fn_with_state(
            services.access.clone(),
            auth::identify,
        ));
    let board = Arc::new(board::Board(services.clone()));
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
        .merge(assets)
        .merge(site);
    let app = app.layer(axum::middleware::from_fn_with_state(
        services.telemetry.clone(),
        crate::telemetry::trace_requests,
    ));
    // Outside every route (the API, MCP, the board's server functions and
    // forms, sign-in): nothing is handled before its host and origin are
    // checked, and every answer, a refusal too, gets the security headers.
    let app = app.layer(axum::middleware::from_fn_with_state(
        Arc::new(guard::Guard::new(
            services.public_url.as_ref(),
            &services.allowed_hosts,
        )),
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
    app.layer(axum::middleware::from_fn_with_state(plans, metrics::record))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(trace)
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}

/// How long `/healthz` waits for one of tokio's blocking threads.
const POOL_PROBE: std::time::Duration = std::time::Duration::from_secs(2);

/// `ok`, unless the blocking thread pool (every file, workspace and
/// SQLite job runs there) takes no new work: then 503, since a server
/// whose reads all wait is not healthy though it still answers this.
async fn healthz(instance: Option<Arc<str>>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let probe = tokio::time::timeout(POOL_PROBE, tokio::task::spawn_blocking(|| ())).await;
    let (status, body) = match probe {
        Ok(Ok(())) => (axum::http::StatusCode::OK, "ok"),
        _ => (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "starved: the blocking thread pool took no work within 2 s",
        ),
    };
    match instance.and_then(|i| axum::http::HeaderValue::from_str(&i).ok()) {
        Some(name) => (status, [("x-planboard-instance", name)], body).into_response(),
        None => (status, body).into_response(),
    }
}
