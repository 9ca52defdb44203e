//! The HTTP API under `/api`, described by the OpenAPI document at
//! `/api/openapi.json`.
//!
//! # Layout
//! - `error.rs`: [`error::ApiError`], the JSON error body, the body extractors;
//! - `extract.rs`: path ids, query strings, optional bodies, `If-Match`;
//! - `bodies.rs`: one typed request body per route, each becoming an engine op;
//! - `plans.rs`: plans, events, comments, hint, export/import, `/commands`;
//! - `subtasks.rs`: subtask routes; `actions.rs`: approve, pause, … and comments;
//! - `tools.rs`: the agents' door (tool schemas and calls per dialect);
//! - `runs.rs`: planboard's own agent: start, follow and steer runs;
//! - `memories.rs`: what the agent remembers: list, search, pin, forget;
//! - `reviews.rs`: people's reviews of finished plans and the review queue;
//! - `templates.rs`: plans saved as templates (save, list, read, delete);
//! - `stream.rs`: server-sent events;
//! - `schema.rs` / `docs.rs`: the document's schemas (from schemars) and error responses.

pub mod actions;
pub mod bodies;
pub mod docs;
pub mod error;
pub mod extract;
pub mod memories;
pub mod plans;
pub mod reviews;
pub mod runs;
pub mod schema;
pub mod stream;
pub mod subtasks;
pub mod templates;
pub mod tool_servers;
pub mod tools;
pub mod webhooks;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, OriginalUri};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, patch, post};
use axum::Router;
use utoipa::OpenApi;

use crate::service::PlanService;

/// The largest request body: room for an imported plan of 2,000 subtasks.
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;

#[derive(Clone)]
pub struct ApiState {
    pub service: Arc<PlanService>,
    pub runs: Arc<crate::runs::Runs>,
    pub keep_alive: Duration,
    pub webhooks: Arc<crate::webhooks::WebhookConfig>,
}

#[derive(OpenApi)]
#[openapi(
    info(title = "planboard", description = "Plans for LLM agents: REST, tool dialects, live events. Errors are {error, message} JSON."),
    paths(
        plans::list_plans, plans::create_plan, plans::get_plan, plans::update_plan, plans::delete_plan,
        plans::run_command, plans::list_comments, plans::list_events, plans::hint, plans::export,
        plans::import,
        subtasks::add_subtask, subtasks::edit_subtask, subtasks::delete_subtask,
        subtasks::set_state, subtasks::move_subtask, subtasks::set_dependencies, subtasks::set_notes,
        actions::approve, actions::reject, actions::finish, actions::start_next,
        actions::replace_subtasks, actions::add_comment,
        actions::submit, actions::pause, actions::resume, actions::recover,
        tools::list_tools, tools::call_tool, tools::session_hint, tools::session_hint_remembered,
        stream::plan_stream, stream::all_stream,
        runs::start_run, runs::list_runs, runs::get_run, runs::run_cost, runs::inbox,
        webhooks::list_endpoints, webhooks::add_endpoint, webhooks::remove_endpoint,
        webhooks::webhook_deliveries, tool_servers::list_servers, tool_servers::add_server,
        tool_servers::change_server, tool_servers::test_server, tool_servers::remove_server,
        runs::run_events, runs::pause_run,
        runs::resume_run, runs::cancel_run, runs::answer_run, runs::run_again, runs::list_artifacts,
        runs::get_artifact, runs::workspace_zip, runs::agent_tools,
        runs::pending_calls, runs::decide_call, runs::add_files, stream::run_stream,
        memories::list_memories, memories::forget_memory, memories::pin_memory,
        memories::edit_memory,
        reviews::plan_reviews, reviews::put_review, reviews::delete_review, reviews::list_reviews,
        reviews::review_queue,
        templates::save_template, templates::list_templates, templates::get_template,
        templates::delete_template,
    ),
    tags(
        (name = "plans"), (name = "subtasks"), (name = "comments"),
        (name = "tools", description = "OpenAI function-calling tools in four dialects"),
        (name = "live", description = "server-sent events"),
        (name = "runs", description = "planboard's own agent: a task in, a plan approved by a person, the work done by a model"),
        (name = "webhooks", description = "notifications to the operator's endpoints (admins only)"),
        (name = "memories", description = "what the agent remembers of finished runs and people's corrections, recalled before it plans"),
        (name = "reviews", description = "people's reviews of finished plans (verdict, note, notes on subtasks), remembered by the agent"),
        (name = "templates", description = "plans saved as templates; a run starts from one and its planner adapts it"),
    )
)]
pub struct ApiDoc;

// The API's own bodies and views, as OpenAPI components.
schema::schemars_bridge! {
    components: body_components,
    foreign: [],
    local: [
        webhooks::EndpointView,
        webhooks::NewEndpoint,
        crate::runs::tool_servers::ToolServerSpec,
        docs::ErrorBody,
        plans::PlanView,
        plans::Changed,
        plans::PlanPage,
        plans::EventPage,
        tools::ToolReply,
        crate::store::StoredComment,
        crate::store::StoredEvent,
        crate::store::PlanSummary,
        bodies::UpdatePlan,
        bodies::AddSubtask,
        bodies::EditSubtask,
        bodies::SetState,
        bodies::MoveSubtask,
        bodies::SetDependencies,
        bodies::SetNotes,
        bodies::Approve,
        bodies::Reject,
        bodies::Finish,
        bodies::StartNext,
        bodies::ReplaceSubtasks,
        bodies::NoFields,
        bodies::NewComment,
        runs::StartRun,
        runs::StartRunUpload,
        runs::AgentTools,
        runs::AddFiles,
        crate::runs::PendingCall,
        crate::runs::Decision,
        runs::ResumeRun,
        runs::AnswerRun,
        runs::RunAgain,
        crate::runs::RunView,
        crate::runs::Artifact,
        crate::store::StoredRunEntry,
        memories::PinMemory,
        memories::EditMemory,
        reviews::ReviewQueue,
    ]
}

pub fn routes(state: ApiState) -> Router {
    use actions::*;
    use plans::*;
    use subtasks::*;
    let bounded = Router::new()
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
            patch(edit_subtask).delete(delete_subtask),
        )
        .route("/plans/{id}/subtasks/{sid}/state", post(set_state))
        .route("/plans/{id}/subtasks/{sid}/move", post(move_subtask))
        .route(
            "/plans/{id}/subtasks/{sid}/dependencies",
            post(set_dependencies),
        )
        .route("/plans/{id}/subtasks/{sid}/notes", post(set_notes))
        .route("/plans/{id}/comments", get(list_comments).post(add_comment))
        .route("/plans/{id}/events", get(list_events))
        .route("/plans/{id}/hint", get(hint))
        .route("/plans/{id}/export", get(export))
        .route("/plans/{id}/approve", post(approve))
        .route("/plans/{id}/reject", post(reject))
        .route("/plans/{id}/submit", post(submit))
        .route("/plans/{id}/pause", post(pause))
        .route("/plans/{id}/resume", post(resume))
        .route("/plans/{id}/finish", post(finish))
        .route("/plans/{id}/recover", post(recover))
        .route("/plans/{id}/start-next", post(start_next))
        .route("/plans/{id}/replace-subtasks", post(replace_subtasks))
        .route("/tools", get(tools::list_tools))
        .route(
            "/tools/{dialect}/hint",
            get(tools::session_hint).post(tools::session_hint_remembered),
        )
        .route("/tools/{dialect}/{tool}", post(tools::call_tool))
        .route(
            "/runs",
            get(runs::list_runs)
                .post(runs::start_run)
                .layer(DefaultBodyLimit::max(crate::UPLOAD_BODY_LIMIT)),
        )
        .route("/runs/{id}", get(runs::get_run))
        .route("/runs/{id}/cost", get(runs::run_cost))
        .route("/runs/{id}/events", get(runs::run_events))
        .route("/runs/{id}/pause", post(runs::pause_run))
        .route("/runs/{id}/resume", post(runs::resume_run))
        .route("/runs/{id}/cancel", post(runs::cancel_run))
        .route("/runs/{id}/answer", post(runs::answer_run))
        .route("/runs/{id}/again", post(runs::run_again))
        .route("/runs/{id}/tool-calls", get(runs::pending_calls))
        .route(
            "/runs/{id}/files",
            post(runs::add_files).layer(DefaultBodyLimit::max(crate::UPLOAD_BODY_LIMIT)),
        )
        .route("/runs/{id}/tool-calls/{call}", post(runs::decide_call))
        .route("/runs/{id}/artifacts", get(runs::list_artifacts))
        .route("/runs/{id}/workspace.zip", get(runs::workspace_zip))
        .route("/agent/tools", get(runs::agent_tools))
        .route("/inbox", get(runs::inbox))
        .route(
            "/webhooks",
            get(webhooks::list_endpoints).post(webhooks::add_endpoint),
        )
        .route(
            "/webhooks/{id}",
            axum::routing::delete(webhooks::remove_endpoint),
        )
        .route("/webhooks/deliveries", get(webhooks::webhook_deliveries))
        .route(
            "/tool-servers",
            get(tool_servers::list_servers).post(tool_servers::add_server),
        )
        .route(
            "/tool-servers/{name}",
            axum::routing::put(tool_servers::change_server).delete(tool_servers::remove_server),
        )
        .route("/tool-servers/{name}/test", post(tool_servers::test_server))
        .route("/memories", get(memories::list_memories))
        .route(
            "/memories/{id}",
            axum::routing::delete(memories::forget_memory).patch(memories::edit_memory),
        )
        .route("/memories/{id}/pin", post(memories::pin_memory))
        .route("/plans/{id}/reviews", get(reviews::plan_reviews))
        .route(
            "/plans/{id}/review",
            axum::routing::put(reviews::put_review).delete(reviews::delete_review),
        )
        .route("/reviews", get(reviews::list_reviews))
        .route("/review-queue", get(reviews::review_queue))
        .route("/plans/{id}/template", post(templates::save_template))
        .route("/templates", get(templates::list_templates))
        .route(
            "/templates/{id}",
            get(templates::get_template).delete(templates::delete_template),
        )
        .route("/runs/{id}/artifacts/{*path}", get(runs::get_artifact));
    // Streams live for hours: the timeout (which only waits for their head)
    // and gzip (which never compresses them) would only hold memory for
    // each one, so they are added after those layers.
    crate::bounded_responses(bounded)
        .route("/plans/{id}/stream", get(stream::plan_stream))
        .route("/stream", get(stream::all_stream))
        .route("/runs/{id}/stream", get(stream::run_stream))
        .route_layer(axum::middleware::from_fn(crate::metrics::tag_route))
        .fallback(unknown_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

/// API clients get the JSON error body for a typo'd or newer route too,
/// not the board's HTML page.
async fn unknown_route(OriginalUri(uri): OriginalUri) -> error::ApiError {
    error::ApiError::NotFound(format!(
        "no API route {}; the routes are listed in /api/openapi.json",
        uri.path()
    ))
}

async fn wrong_method(
    method: axum::http::Method,
    OriginalUri(uri): OriginalUri,
) -> error::ApiError {
    error::ApiError::MethodNotAllowed(format!(
        "{method} is not a method of {}; see /api/openapi.json",
        uri.path()
    ))
}

/// The document: utoipa's paths, schemars' schemas. Built once.
pub fn document() -> &'static str {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_default();
        schema::merge_components(&mut doc, schema::foreign_components());
        schema::merge_components(&mut doc, body_components());
        schema::add_links(&mut doc);
        serde_json::to_string(&doc).unwrap_or_default()
    })
}

pub async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], document())
}
