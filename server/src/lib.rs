//! planboard's HTTP server: the Leptos app rendered on the server, its
//! static assets, and the health check. Later issues add the API, the live
//! stream and MCP here.
//!
//! # Layout
//! - [`router`]: every route, as one `Router` that tests can drive directly.
//! - `main.rs`: configuration, logging and the listener.

use app::{shell, App};
use axum::routing::get;
use axum::Router;
use leptos::config::LeptosOptions;
use leptos_axum::{generate_route_list, LeptosRoutes};

/// The whole application. Takes the Leptos options so tests can point it
/// at any site root.
pub fn router(options: LeptosOptions) -> Router {
    let routes = generate_route_list(App);
    Router::new()
        .route("/healthz", get(healthz))
        .leptos_routes(&options, routes, {
            let options = options.clone();
            move || shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler(shell))
        .with_state(options)
}

async fn healthz() -> &'static str {
    "ok"
}
