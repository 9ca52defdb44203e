//! `GET /metrics`: what an operator scrapes, in the Prometheus text format
//! (OpenMetrics, via the `prometheus-client` crate).
//!
//! - `planboard_http_requests_total{method, route, status}` and
//!   `planboard_http_request_duration_seconds{method, route}`: the route is
//!   the API's route template (`/api/plans/{id}`), `/mcp`, or `page` for
//!   the board and static files, so ids never become labels;
//! - `planboard_commits_total`, `planboard_commit_batch_calls` (calls
//!   written by one group commit) and `planboard_commit_duration_seconds`;
//! - `planboard_sse_subscribers` and `planboard_plans{state}`, read when
//!   scraped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::service::PlanService;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 0.25 ms … 8 s.
    Histogram::new(exponential_buckets(0.000_25, 2.0, 16))
}

pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: HistogramFamily<RouteLabels>,
    commits: Counter,
    batch_calls: Histogram,
    commit_seconds: Histogram,
    subscribers: Gauge,
    plans: Family<StateLabels, Gauge>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("planboard");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency: HistogramFamily<RouteLabels> = Family::new_with_constructor(latency_histogram);
        let commits = Counter::default();
        let batch_calls = Histogram::new(exponential_buckets(1.0, 2.0, 10));
        let commit_seconds = Histogram::new(exponential_buckets(0.000_1, 2.0, 16));
        let subscribers = Gauge::default();
        let plans = Family::<StateLabels, Gauge>::default();
        registry.register("http_requests", "HTTP requests answered", requests.clone());
        registry.register(
            "http_request_duration_seconds",
            "Time to the response head",
            latency.clone(),
        );
        registry.register("commits", "Group commits written", commits.clone());
        registry.register(
            "commit_batch_calls",
            "Calls written together by one group commit",
            batch_calls.clone(),
        );
        registry.register(
            "commit_duration_seconds",
            "Time one group commit took in the store",
            commit_seconds.clone(),
        );
        registry.register(
            "sse_subscribers",
            "Live event streams open",
            subscribers.clone(),
        );
        registry.register("plans", "Plans (not deleted) by state", plans.clone());
        Metrics {
            registry,
            requests,
            latency,
            commits,
            batch_calls,
            commit_seconds,
            subscribers,
            plans,
        }
    }

    /// One group commit of `calls` calls that took `took`.
    pub fn commit(&self, calls: usize, took: Duration) {
        self.commits.inc();
        self.batch_calls.observe(calls as f64);
        self.commit_seconds.observe(took.as_secs_f64());
    }

    fn request(&self, method: &str, route: &str, status: u16, took: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_string(),
                route: route.to_string(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                method: method.to_string(),
                route: route.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    fn render(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

/// The route template of an API request, carried on its response so the
/// outer [`record`] can label it (routing happens inside, after it).
#[derive(Clone)]
struct Route(String);

/// On the API's routes: puts the matched route template on the response.
pub async fn tag_route(matched: MatchedPath, request: Request, next: Next) -> Response {
    let route = Route(matched.as_str().to_string());
    let mut response = next.run(request).await;
    response.extensions_mut().insert(route);
    response
}

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
pub async fn scrape(State(service): State<Arc<PlanService>>) -> impl IntoResponse {
    let metrics = service.metrics();
    metrics
        .subscribers
        .set(i64::try_from(service.hub().subscribers()).unwrap_or(i64::MAX));
    let states = service.scan(|plan| Some(plan.state())).await;
    metrics.plans.clear();
    for state in states {
        metrics
            .plans
            .get_or_create(&StateLabels {
                state: state.as_str().to_string(),
            })
            .inc();
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics.render(),
    )
}
