//! The HTTP side of the metrics: the middleware that counts and times each
//! request, and `GET /metrics`. It reads the plan service and the runs,
//! so it stands above them; the counters themselves (`crate::metrics`)
//! stand below, where the service counts its commits.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::metrics::Route;
use crate::service::PlanService;

/// Around everything: counts and times each request.
pub async fn record(
    State(service): State<Arc<PlanService>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_string();
    let path = request.uri().path();
    let fallback = if path.starts_with("/mcp") {
        "/mcp"
    } else if path.starts_with("/api/") {
        "/api (no route)"
    } else if matches!(path, "/healthz" | "/metrics") {
        path
    } else {
        "page"
    }
    .to_string();
    let response = next.run(request).await;
    let route = response
        .extensions()
        .get::<Route>()
        .map_or(fallback, |r| r.0.clone());
    service.metrics().request(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// `GET /metrics`.
pub async fn scrape(
    State(service): State<Arc<PlanService>>,
    runs: Arc<crate::runs::Runs>,
) -> impl IntoResponse {
    let metrics = service.metrics();
    match runs.store().run_counts().await {
        Ok(counts) => metrics.agent_runs(&counts),
        // The other metrics still answer; the gauge keeps its last value.
        Err(e) => tracing::warn!("metrics: cannot count runs: {e}"),
    }
    metrics.subscribers(service.hub().subscribers());
    let states = service.scan(|plan| Some(plan.state())).await;
    metrics.plans_by_state(states);
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics.render(),
    )
}
