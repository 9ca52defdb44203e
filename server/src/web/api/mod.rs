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
//! - `agents.rs`: the ACP agents a run can be given to (admins add them);
//! - `memories.rs`: what the agent remembers: list, search, write a rule, pin, forget;
//! - `reviews.rs`: people's reviews of finished plans and the review queue;
//! - `templates.rs`: plans saved as templates (save, list, read, delete);
//! - `cases.rs`: regression cases (make, list, read, change, delete) and suite runs;
//! - `approvals.rs`: the approval records (who approved what, with its digest);
//! - `stream.rs`: server-sent events;
//! - `schema.rs` / `docs.rs`: the document's schemas (from schemars) and error responses.

pub mod actions;
pub mod agents;
pub mod approvals;
pub mod bodies;
pub mod cases;
pub mod docs;
pub mod error;
pub mod extract;
pub mod memories;
pub mod plans;
pub mod reviews;
pub mod runs;
pub mod schema;
pub mod storage;
pub mod stream;
pub mod subtasks;
pub mod templates;
pub mod tool_servers;
pub mod tools;
pub mod webhooks;

use std::sync::OnceLock;

use axum::extract::{DefaultBodyLimit, OriginalUri};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use utoipa::OpenApi;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

/// The largest request body: room for an imported plan of 2,000 subtasks.
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// What every handler reaches: the server's services, the same value the
/// board holds (no second list of them to keep in step).
pub type ApiState = std::sync::Arc<crate::services::Services>;

#[derive(OpenApi)]
#[openapi(
    info(title = "planboard", description = "Plans for LLM agents: REST, tool dialects, live events. Errors are {error, message} JSON."),
    // Every other route's path comes with its route (`api_routers`).
    paths(runs::get_artifact),
    tags(
        (name = "plans"), (name = "subtasks"), (name = "comments"),
        (name = "tools", description = "OpenAI function-calling tools in four dialects"),
        (name = "live", description = "server-sent events"),
        (name = "runs", description = "planboard's own agent: a task in, a plan approved by a person, the work done by a model"),
        (name = "webhooks", description = "notifications to the operator's endpoints (admins only)"),
        (name = "memories", description = "what the agent remembers of finished runs and people's corrections, recalled before it plans"),
        (name = "reviews", description = "people's reviews of finished plans (verdict, note, notes on subtasks), remembered by the agent"),
        (name = "templates", description = "plans saved as templates; a run starts from one and its planner adapts it"),
        (name = "storage", description = "what planboard stores and how much, and the retentions that keep it from only growing"),
        (name = "cases", description = "runs reviewed good kept as regression cases, and suite runs that plan and run them again on a model"),
        (name = "approvals", description = "every decision a person made for the agent, kept for audit with the digest of what was decided"),
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
        crate::tool_servers::ToolServerSpec,
        crate::acp_agents::AcpAgentSpec,
        docs::ErrorBody,
        plans::PlanView,
        plans::Changed,
        plans::PlanPage,
        plans::EventPage,
        tools::ToolReply,
        crate::store::SessionSettings,
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
        runs::ReplayRun,
        runs::KeepRun,
        crate::runs::RunView,
        crate::workspace::Artifact,
        crate::runlog::StoredRunEntry,
        memories::PinMemory,
        memories::EditMemory,
        memories::NewRule,
        reviews::ReviewQueue,
        crate::runs::InsightsView,
        approvals::ApplyPolicy,
    ]
}

/// The API's routes and their OpenAPI paths, from one list: each handler's
/// `#[utoipa::path]` gives both its route and its entry in the document
/// (utoipa-axum's `routes!`), so neither can drift from the other. The
/// first router's responses are bounded (a timeout, gzip); the streams,
/// which live for hours, are the second's.
fn api_routers() -> (OpenApiRouter<ApiState>, OpenApiRouter<ApiState>) {
    use actions::*;
    use plans::*;
    use subtasks::*;
    let upload = || DefaultBodyLimit::max(crate::services::UPLOAD_BODY_LIMIT);
    let bounded = OpenApiRouter::default()
        .routes(routes!(list_plans, create_plan))
        .routes(routes!(import))
        .routes(routes!(get_plan, update_plan, delete_plan))
        .routes(routes!(run_command))
        .routes(routes!(add_subtask))
        .routes(routes!(edit_subtask, delete_subtask))
        .routes(routes!(set_state))
        .routes(routes!(move_subtask))
        .routes(routes!(set_dependencies))
        .routes(routes!(set_notes))
        .routes(routes!(list_comments, add_comment))
        .routes(routes!(list_events))
        .routes(routes!(hint))
        .routes(routes!(export))
        .routes(routes!(approve))
        .routes(routes!(reject))
        .routes(routes!(submit))
        .routes(routes!(pause))
        .routes(routes!(resume))
        .routes(routes!(finish))
        .routes(routes!(recover))
        .routes(routes!(start_next))
        .routes(routes!(replace_subtasks))
        .routes(routes!(tools::list_tools))
        .routes(routes!(tools::session_hint, tools::session_hint_remembered))
        .routes(routes!(tools::call_tool))
        .routes(routes!(
            tools::session_settings,
            tools::set_session_settings
        ))
        .routes(routes!(runs::list_runs, runs::start_run).layer(upload()))
        .routes(routes!(runs::get_run))
        .routes(routes!(runs::run_cost))
        .routes(routes!(runs::run_events))
        .routes(routes!(runs::pause_run))
        .routes(routes!(runs::resume_run))
        .routes(routes!(runs::cancel_run))
        .routes(routes!(runs::start_held_run))
        .routes(routes!(runs::list_grants))
        .routes(routes!(runs::revoke_grant))
        .routes(routes!(runs::answer_run))
        .routes(routes!(runs::run_again))
        .routes(routes!(runs::replay_run))
        .routes(routes!(runs::compare_runs))
        .routes(routes!(runs::pending_calls))
        .routes(routes!(runs::add_files).layer(upload()))
        .routes(routes!(runs::decide_call))
        .routes(routes!(runs::list_artifacts))
        .routes(routes!(runs::keep_run))
        .routes(routes!(storage::storage))
        .routes(routes!(runs::workspace_zip))
        .routes(routes!(runs::agent_tools))
        .routes(routes!(runs::inbox))
        .routes(routes!(webhooks::list_endpoints, webhooks::add_endpoint))
        .routes(routes!(webhooks::remove_endpoint))
        .routes(routes!(webhooks::webhook_deliveries))
        .routes(routes!(
            tool_servers::list_servers,
            tool_servers::add_server
        ))
        .routes(routes!(
            tool_servers::change_server,
            tool_servers::remove_server
        ))
        .routes(routes!(tool_servers::test_server))
        .routes(routes!(agents::list_agents, agents::add_agent))
        .routes(routes!(agents::change_agent, agents::remove_agent))
        .routes(routes!(agents::test_agent))
        .routes(routes!(memories::list_memories, memories::write_rule))
        .routes(routes!(memories::forget_memory, memories::edit_memory))
        .routes(routes!(memories::pin_memory))
        .routes(routes!(reviews::plan_reviews))
        .routes(routes!(reviews::put_review, reviews::delete_review))
        .routes(routes!(reviews::list_reviews))
        .routes(routes!(reviews::review_queue))
        .routes(routes!(templates::save_template))
        .routes(routes!(templates::list_templates))
        .routes(routes!(templates::get_template, templates::delete_template))
        .routes(routes!(cases::list_cases, cases::make_case))
        .routes(routes!(
            cases::get_case,
            cases::edit_case,
            cases::delete_case
        ))
        .routes(routes!(cases::run_suite))
        .routes(routes!(cases::list_suites))
        .routes(routes!(cases::suite_report))
        .routes(routes!(cases::cancel_suite))
        .routes(routes!(approvals::list_approvals))
        .routes(routes!(approvals::forecast_accuracy))
        .routes(routes!(approvals::insights))
        .routes(routes!(approvals::apply_policy))
        // A path that runs to the end of the address (`{*path}`): axum's
        // wildcard, which an OpenAPI path cannot spell, so it is routed by
        // hand and documented in `ApiDoc`'s list (its only entry).
        .route("/runs/{id}/artifacts/{*path}", get(runs::get_artifact));
    let streams = OpenApiRouter::default()
        .routes(routes!(stream::plan_stream))
        .routes(routes!(stream::all_stream))
        .routes(routes!(stream::run_stream));
    (bounded, streams)
}

pub fn routes(state: ApiState) -> Router {
    let (bounded, streams) = api_routers();
    let (bounded, _) = bounded.split_for_parts();
    let (streams, _) = streams.split_for_parts();
    // Streams live for hours: the timeout (which only waits for their head)
    // and gzip (which never compresses them) would only hold memory for
    // each one, so they are added after those layers.
    crate::bounded_responses(bounded)
        .merge(streams)
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
        let (bounded, streams) = api_routers();
        let (_, paths) = OpenApiRouter::<ApiState>::default()
            .nest("/api", bounded.merge(streams))
            .split_for_parts();
        let mut doc = ApiDoc::openapi();
        doc.merge(paths);
        let mut doc = serde_json::to_value(doc).unwrap_or_default();
        schema::merge_components(&mut doc, schema::foreign_components());
        schema::merge_components(&mut doc, body_components());
        schema::add_links(&mut doc);
        serde_json::to_string(&doc).unwrap_or_default()
    })
}

pub async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], document())
}

#[cfg(test)]
mod tests {
    use super::extract::{LOG_PAGE_LIMIT, PAGE_LIMIT, PAGE_OFFSET};

    /// utoipa's `#[param(maximum = …)]` takes only literals, so each bound
    /// of a query parameter is written twice: in the attribute and in the
    /// check's constant. This reads every bound the document states and
    /// holds it to the constant the handler checks; a parameter bound that
    /// is not listed here fails too, so a new one must say which it is
    /// (`*`: on every path that takes the parameter).
    #[test]
    fn every_query_bound_the_document_states_is_the_constant_the_handler_checks() {
        let page = PAGE_LIMIT as f64;
        let offset = PAGE_OFFSET as f64;
        let expected: &[(&str, &str, &str, f64)] = &[
            ("/api/plans", "limit", "maximum", page),
            (
                "/api/plans/{id}/events",
                "limit",
                "maximum",
                LOG_PAGE_LIMIT as f64,
            ),
            ("/api/runs", "limit", "maximum", page),
            ("/api/runs", "offset", "maximum", offset),
            (
                "/api/runs/{id}/events",
                "limit",
                "maximum",
                LOG_PAGE_LIMIT as f64,
            ),
            ("/api/templates", "limit", "maximum", page),
            ("/api/templates", "offset", "maximum", offset),
            ("/api/memories", "limit", "maximum", page),
            ("/api/memories", "offset", "maximum", offset),
            (
                "/api/memories",
                "q",
                "maxLength",
                super::memories::QUERY_CHARS as f64,
            ),
            ("/api/reviews", "limit", "maximum", page),
            ("/api/reviews", "offset", "maximum", offset),
            (
                "/api/reviews",
                "reviewer",
                "maxLength",
                super::reviews::REVIEWER_CHARS as f64,
            ),
            (
                "/api/cases",
                "tag",
                "maxLength",
                super::cases::TAG_CHARS as f64,
            ),
            ("/api/cases/runs", "limit", "maximum", page),
            // Every route of an agent session takes its key.
            (
                "*",
                "session",
                "maxLength",
                super::tools::SESSION_KEY_CHARS as f64,
            ),
            ("/api/review-queue", "limit", "maximum", page),
            (
                "/api/approvals",
                "person",
                "maxLength",
                super::approvals::NAME_CHARS as f64,
            ),
            (
                "/api/approvals",
                "tool",
                "maxLength",
                super::approvals::NAME_CHARS as f64,
            ),
            ("/api/approvals", "limit", "maximum", page),
            ("/api/approvals", "offset", "maximum", offset),
            (
                "/api/approvals/insights",
                "days",
                "maximum",
                super::approvals::INSIGHT_DAYS as f64,
            ),
            ("/api/review-queue", "offset", "maximum", offset),
            (
                "/api/webhooks/deliveries",
                "limit",
                "maximum",
                super::webhooks::DELIVERIES_AT_MOST as f64,
            ),
            (
                "*",
                "max_subtasks",
                "maximum",
                plan_engine::model::limits::SUBTASKS as f64,
            ),
        ];
        let doc: serde_json::Value = serde_json::from_str(super::document()).unwrap();
        let mut seen = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (_, operation) in item.as_object().unwrap() {
                for param in operation["parameters"].as_array().into_iter().flatten() {
                    let name = param["name"].as_str().unwrap_or_default();
                    for bound in ["maximum", "maxLength"] {
                        let Some(value) = param["schema"][bound].as_f64() else {
                            continue;
                        };
                        let want = expected
                            .iter()
                            .find(|(p, n, b, _)| {
                                (p == path || *p == "*") && *n == name && *b == bound
                            })
                            .unwrap_or_else(|| {
                                panic!("{path} ?{name}: {bound} {value} is not listed here")
                            });
                        assert_eq!(value, want.3, "{path} ?{name}: {bound}");
                        seen.push((path.clone(), name.to_string(), bound));
                    }
                }
            }
        }
        for (path, name, bound, _) in expected {
            assert!(
                seen.iter()
                    .any(|(p, n, b)| (p == path || *path == "*") && n == name && b == bound),
                "{path} ?{name} states no {bound} any more"
            );
        }
    }

    /// A type utoipa documents gets the same names serde reads (a name the
    /// macro handed on as a fragment was documented as the variant's).
    #[test]
    fn the_export_formats_are_documented_by_their_wire_names() {
        let doc: serde_json::Value = serde_json::from_str(super::document()).unwrap();
        let parameters = &doc["paths"]["/api/plans/{id}/export"]["get"]["parameters"];
        let format = parameters
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "format")
            .unwrap();
        assert_eq!(
            format["schema"]["enum"],
            serde_json::json!(["json", "markdown", "mermaid"])
        );
    }
}
