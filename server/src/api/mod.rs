//! The HTTP API under `/api`, described by the OpenAPI document at
//! `/api/openapi.json`.
//!
//! # Layout
//! - `error.rs`: [`error::ApiError`], the JSON error body, the JSON extractor;
//! - `plans.rs`: plans, subtasks, approval, comments, events, hint, export/import;
//! - `tools.rs`: the agents' door (tool schemas and calls per dialect);
//! - `stream.rs`: server-sent events.

pub mod error;
pub mod plans;
pub mod stream;
pub mod tools;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::{Json, Router};
use utoipa::OpenApi;

use crate::service::PlanService;

/// The largest request body: room for an imported plan of 2,000 subtasks.
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;

#[derive(Clone)]
pub struct ApiState {
    pub service: Arc<PlanService>,
    pub keep_alive: Duration,
}

#[derive(OpenApi)]
#[openapi(
    info(title = "planboard", description = "Plans for LLM agents: REST, tool dialects, live events. Errors are {error, message} JSON."),
    paths(
        plans::list_plans, plans::create_plan, plans::get_plan, plans::update_plan, plans::delete_plan,
        plans::run_command, plans::add_subtask, plans::edit_subtask, plans::delete_subtask,
        plans::subtask_action, plans::plan_action, plans::add_comment, plans::list_comments,
        plans::list_events, plans::hint, plans::export, plans::import,
        tools::list_tools, tools::call_tool, tools::session_hint,
        stream::plan_stream, stream::all_stream,
    ),
    tags(
        (name = "plans"), (name = "subtasks"), (name = "comments"),
        (name = "tools", description = "OpenAI function-calling tools in four dialects"),
        (name = "live", description = "server-sent events"),
    )
)]
pub struct ApiDoc;

pub fn routes(state: ApiState) -> Router {
    use plans::*;
    Router::new()
        .route("/plans", get(list_plans).post(create_plan))
        .route("/plans/import", post(import))
        .route(
            "/plans/{id}",
            get(get_plan).patch(update_plan).delete(delete_plan),
        )
        .route("/plans/{id}/commands", post(run_command))
        .route("/plans/{id}/subtasks", post(add_subtask))
        .route(
            "/plans/{id}/subtasks/{sid}",
            axum::routing::patch(edit_subtask).delete(delete_subtask),
        )
        .route("/plans/{id}/subtasks/{sid}/{action}", post(subtask_action))
        .route("/plans/{id}/comments", get(list_comments).post(add_comment))
        .route("/plans/{id}/events", get(list_events))
        .route("/plans/{id}/hint", get(hint))
        .route("/plans/{id}/export", get(export))
        .route("/plans/{id}/stream", get(stream::plan_stream))
        .route("/plans/{id}/{action}", post(plan_action))
        .route("/stream", get(stream::all_stream))
        .route("/tools", get(tools::list_tools))
        .route("/tools/{dialect}/hint", get(tools::session_hint))
        .route("/tools/{dialect}/{tool}", post(tools::call_tool))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

pub async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
