//! `/mcp`: the Model Context Protocol over streamable HTTP (rmcp), exposing
//! the canonical plan tools, `get_hint` (the next step on the session's
//! plan), `search_memory` (the team's memory), `set_session_settings`
//! (seed 003's confirmation and subtask-limit rules for the session),
//! planboard's own agent (runs, replays, two runs compared) and the
//! regression cases and their suite runs. rmcp makes one [`PlanMcp`] per MCP session, so
//! each session gets its own key and with it its own active plan and
//! settings.
//!
//! The plan hint is a resource too, for clients that read rather than
//! call (seed 003's hints for every agent): `planboard://session/hint` is
//! this session's active plan's hint, `planboard://plans/{id}/hint` any
//! plan's. A client may subscribe to either (`resources/subscribe`): it
//! hears `notifications/resources/updated` whenever the plan changes (a
//! burst of changes is told once), and reads the new hint.
//!
//! rmcp 3.11 speaks it, at every revision it knows (see [`REVISIONS`]):
//! 2024-11-05 to 2025-11-25 with a session each (a client gets the
//! revision it asks for at `initialize`, or 2025-11-25), and 2026-07-28,
//! where each request stands alone (SEP-2567) and rmcp makes a
//! [`PlanMcp`] per request: its agent session is the one the
//! `X-Planboard-Session` header names, else the caller's own, as for the
//! REST tool calls ([`PlanMcp::session`]). rmcp's own Host
//! allow-list and 4 MiB body limit give way to planboard's (the identity
//! middleware's Host and Origin check, [`MCP_BODY_LIMIT`]), and a session
//! is not closed for being idle. Two HTTP details rmcp leaves open are
//! settled in [`router`]: ending a session answers 204 (the Python SDK
//! reports rmcp's 202 as a failed termination), and an unknown
//! `MCP-Protocol-Version` header is a 400, as the specification asks.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use plan_engine::{Dialect, HintOptions, Timestamp};
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, DetailedTask, ElicitRequest, ElicitRequestParams, ErrorCode, GetTaskParams,
    GetTaskResult, Implementation, InputRequest, InputRequests, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
    ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    Task, TaskPayload, TaskStatus, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ErrorData as McpError;
use serde_json::Value;

use crate::auth::Identity;
use crate::cases::Cases;
use crate::memories::Memories;
use crate::reviews::Reviews;
use crate::runs::Runs;
use crate::service::{PlanService, ToolRights};
use crate::store::SessionSettings;
use crate::web::api::error::ApiError;
use crate::web::api::extract::PAGE_LIMIT;
use crate::web::api::memories::QUERY_CHARS;
use crate::web::api::runs::StartRun;
use crate::workspace::Workspaces;
use run_model::{Need, RunState};

#[derive(Clone)]
pub struct PlanMcp {
    service: Arc<PlanService>,
    runs: Arc<Runs>,
    reviews: Arc<Reviews>,
    memories: Arc<Memories>,
    workspaces: Arc<Workspaces>,
    cases: Arc<Cases>,
    session: String,
    /// The resources this session subscribed to, each followed by a task
    /// that tells the client when it changes.
    subscriptions:
        Arc<std::sync::Mutex<std::collections::HashMap<String, tokio::task::AbortHandle>>>,
}

/// This session's active plan's hint, as a resource.
pub const SESSION_HINT_URI: &str = "planboard://session/hint";

/// The plan a hint resource is about: this session's active one, or one
/// named by its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HintOf {
    Session,
    Plan(plan_engine::PlanId),
}

impl HintOf {
    fn of(uri: &str) -> Option<HintOf> {
        if uri == SESSION_HINT_URI {
            return Some(HintOf::Session);
        }
        let id = uri
            .strip_prefix("planboard://plans/")?
            .strip_suffix("/hint")?;
        id.parse().ok().map(HintOf::Plan)
    }
}

fn unknown_resource(uri: &str) -> McpError {
    McpError::resource_not_found(
        format!(
            "no resource {}; planboard has {SESSION_HINT_URI} and planboard://plans/{{id}}/hint",
            plan_engine::text::fit(uri, 200)
        ),
        None,
    )
}

/// `list_cases`' arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListCases {
    /// Only the cases with this tag.
    #[serde(default)]
    #[schemars(length(max = run_model::case::TAG_CHARS))]
    tag: Option<String>,
    /// Only retired cases (true) or only those in use (false).
    #[serde(default)]
    retired: Option<bool>,
}

/// `edit_case`'s arguments: the case and the API's `CasePatch`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditCase {
    case_id: uuid::Uuid,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    tags: Option<Vec<String>>,
    /// Replaces every check.
    #[serde(default)]
    checks: Option<Vec<run_model::Check>>,
    #[serde(default)]
    retired: Option<bool>,
}

/// The case or suite run a tool is about.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ById {
    id: uuid::Uuid,
}

/// The tools about regression cases (answered by [`PlanMcp::case_tool`]).
const CASE_TOOLS: [&str; 7] = [
    "list_cases",
    "make_case",
    "edit_case",
    "delete_case",
    "run_suite",
    "suite_report",
    "cancel_suite",
];

/// `get_run`'s argument.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct GetRun {
    /// The `run_id` that `start_run` answered with.
    run_id: uuid::Uuid,
}

/// `replay_run`'s arguments: the API's `ReplayRun` and the run.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReplayArgs {
    /// The finished run to replay.
    run_id: uuid::Uuid,
    /// The model to replay on (default: the run's, else the configured one).
    #[serde(default)]
    #[schemars(length(min = 1, max = run_model::replay::MODEL_NAME_CHARS))]
    model: Option<String>,
    /// Redo from this subtask, keeping the recorded results before it
    /// (default: plan the task anew).
    #[serde(default)]
    #[schemars(range(min = 1))]
    from_subtask: Option<u32>,
    /// A call the recording does not hold: live (default) or stop.
    #[serde(default)]
    unmatched: run_model::Unmatched,
    /// Recall memories and be remembered (default false).
    #[serde(default)]
    memory: bool,
}

/// `compare_runs`' arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct CompareArgs {
    a: uuid::Uuid,
    b: uuid::Uuid,
}

/// `review_plan`'s arguments: the plan and the caller's review of it.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReviewPlan {
    plan_id: uuid::Uuid,
    verdict: run_model::ReviewVerdict,
    /// What you say of the whole plan (needed unless the verdict is good).
    #[serde(default)]
    note: String,
    /// Notes on single subtasks, by id.
    #[serde(default)]
    subtasks: Vec<run_model::SubtaskNote>,
}

/// `plan_reviews`' arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct PlanReviews {
    plan_id: uuid::Uuid,
}

/// `review_queue`'s arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct QueuePage {
    /// Plans to skip (default 0).
    #[serde(default)]
    offset: u32,
    /// Plans to list, 1 to 200 (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = PAGE_LIMIT))]
    limit: Option<u32>,
}

/// The tools with which a person decides over MCP what the board's cards
/// decide (answered by [`PlanMcp::approval_tool`]): each decision is an
/// approval record, under the rules the REST routes keep (the digest a
/// person read, the two-person rule, single use).
const APPROVAL_TOOLS: [&str; 4] = [
    "approve_plan",
    "pending_calls",
    "decide_call",
    "revoke_grant",
];

/// `approve_plan`'s arguments: the plan, and the body of `POST
/// /api/plans/{id}/approve`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ApprovePlan {
    plan_id: uuid::Uuid,
    /// A note with the approval.
    #[serde(default)]
    #[schemars(length(max = 2000))]
    comment: Option<String>,
    /// The plan's `digest` as you read it (get_plan): a plan that says
    /// something else now is refused, so the approval is of what was read.
    #[serde(default)]
    #[schemars(length(max = 64))]
    digest: Option<String>,
    /// Guarded tools granted for the plan's run: `{"tool": "run_shell"}`,
    /// or `{"tool": "write_file", "pattern": "out/*"}` for the calls whose
    /// main argument matches the glob.
    #[serde(default)]
    #[schemars(length(max = run_model::grant::MAX_GRANTS))]
    grants: Vec<run_model::NewGrant>,
    /// Approve without starting: `true` holds the run until it is started
    /// on the board or with `POST /api/runs/{id}/start`; an RFC 3339 time
    /// starts it then.
    #[serde(default)]
    hold: Option<crate::web::api::bodies::HoldBody>,
    /// The plan version you decided on; a newer plan is refused.
    #[serde(default)]
    expected_version: Option<u64>,
}

/// `decide_call`'s arguments: the run, the call, and the body of `POST
/// /api/runs/{id}/tool-calls/{call}`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct DecideCall {
    run_id: uuid::Uuid,
    /// The call's id, from pending_calls.
    #[schemars(length(max = 200))]
    call: String,
    verdict: crate::runs::DecisionKind,
    /// The call's `digest` as you read it (pending_calls): a call with
    /// other arguments is refused.
    #[serde(default)]
    #[schemars(length(max = 64))]
    digest: Option<String>,
    /// For the model: why it was denied or edited.
    #[serde(default)]
    #[schemars(length(max = 2000))]
    reason: Option<String>,
    /// With `edit`: the arguments to run the call with instead.
    #[serde(default)]
    arguments: Option<Value>,
}

/// `revoke_grant`'s arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RevokeGrant {
    run_id: uuid::Uuid,
    /// The grant's id (get_run's grants, `GET /api/runs/{id}/grants`).
    grant_id: uuid::Uuid,
}

/// `list_approvals`' arguments: the filters of `GET /api/approvals`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListApprovals {
    /// Only the records of this run.
    #[serde(default)]
    run_id: Option<uuid::Uuid>,
    /// Only this person's decisions.
    #[serde(default)]
    #[schemars(length(max = 200))]
    person: Option<String>,
    /// Only decisions on this tool (guarded calls, grants).
    #[serde(default)]
    #[schemars(length(max = 200))]
    tool: Option<String>,
    /// Records to list, 1 to 200 (default 50), newest first.
    #[serde(default)]
    #[schemars(range(min = 1, max = PAGE_LIMIT))]
    limit: Option<u32>,
}

/// The tools about reviews and approvals (answered by
/// [`PlanMcp::review_tool`]).
const REVIEW_TOOLS: [&str; 4] = [
    "review_plan",
    "plan_reviews",
    "review_queue",
    "list_approvals",
];

/// `get_hint`'s arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetHint {
    /// en or zh. Default: the language of this session's plan (zh when its
    /// title, goal or description has Chinese characters), else en.
    #[serde(default)]
    lang: Option<plan_engine::Lang>,
    /// true repeats the whole hint even when the plan is unchanged since
    /// this session's previous get_hint (which then answers in one line).
    #[serde(default)]
    fresh: bool,
    /// true lists every subtask instead of the bounded window.
    #[serde(default)]
    full: bool,
}

/// The most memories one `search_memory` answers.
const MEMORIES_AT_MOST: u32 = 20;
/// A memory's task as `search_memory` shows it, in characters (its text
/// is at most [`run_model::memory::MEMORY_TEXT`] already).
const MEMORY_TASK_SHOWN: usize = 300;

/// `search_memory`'s arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchMemory {
    /// Words to search for, in any language (1 to 500 characters).
    #[schemars(length(min = 1, max = QUERY_CHARS))]
    query: String,
    /// How many memories to answer, best first: 1 to 20 (default 5).
    #[serde(default)]
    #[schemars(range(min = 1, max = MEMORIES_AT_MOST))]
    limit: Option<u32>,
}

/// The tools about this MCP session and the team's memory (answered by
/// [`PlanMcp::session_tool`]).
const SESSION_TOOLS: [&str; 3] = ["get_hint", "search_memory", "set_session_settings"];

/// A file for `start_run`: its name and its content, as text or base64.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct McpFile {
    #[schemars(length(min = 1, max = run_model::FILE_NAME_BYTES))]
    name: String,
    /// The content as UTF-8 text.
    #[serde(default)]
    text: Option<String>,
    /// The content as base64 (for binary files).
    #[serde(default)]
    base64: Option<String>,
}

impl McpFile {
    /// How many bytes the file has, known without decoding: the text's
    /// length, or what valid base64 of this length decodes to (three bytes
    /// for every four characters, less the padding).
    fn size(&self) -> usize {
        match (&self.text, &self.base64) {
            (Some(text), _) => text.len(),
            (None, Some(encoded)) => {
                let encoded = encoded.trim();
                let padding = encoded.bytes().rev().take_while(|b| *b == b'=').count();
                (encoded.len() / 4 * 3 + encoded.len() % 4 * 3 / 4).saturating_sub(padding)
            }
            (None, None) => 0,
        }
    }

    /// The run's limits on files, checked on their sizes before any is
    /// decoded, so a huge base64 string is refused without its decoded copy
    /// being made (the workspace checks the decoded files again).
    fn check_sizes(files: &[McpFile]) -> Result<(), String> {
        use run_model::{MAX_FILES, MAX_FILES_BYTES, MAX_FILE_BYTES};
        if files.len() > MAX_FILES {
            return Err(format!(
                "a run starts with at most {MAX_FILES} files, not {}",
                files.len()
            ));
        }
        let mut total = 0usize;
        for file in files {
            let size = file.size();
            if size > MAX_FILE_BYTES {
                return Err(format!(
                    "{} has {size} bytes; a file may have at most {MAX_FILE_BYTES}",
                    file.name
                ));
            }
            total = total.saturating_add(size);
        }
        if total > MAX_FILES_BYTES {
            return Err(format!(
                "the files have {total} bytes in all; at most {MAX_FILES_BYTES} are taken"
            ));
        }
        Ok(())
    }

    fn upload(self) -> Result<crate::workspace::inputs::Upload, String> {
        use base64::Engine;
        let bytes = match (self.text, self.base64) {
            (Some(text), None) => text.into_bytes(),
            (None, Some(encoded)) => base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .map_err(|e| format!("{}: the base64 content is invalid: {e}", self.name))?,
            _ => return Err(format!("{}: give either text or base64", self.name)),
        };
        Ok(crate::workspace::inputs::Upload {
            name: self.name,
            bytes,
        })
    }
}

/// `start_run`'s arguments: the API's `StartRun` and `files`.
fn start_run_schema() -> Value {
    let mut schema = agent::protocol::schema_of::<StartRun>();
    let files = agent::protocol::schema_of::<Vec<McpFile>>();
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.insert("files".into(), files);
    }
    schema
}

/// The revisions this server speaks, oldest first: every revision rmcp
/// knows. 2026-07-28 has no sessions (SEP-2567: each request stands
/// alone, and `server/discover` replaces `initialize`); its requests work
/// in the agent session their caller names ([`PlanMcp::session`]).
const REVISIONS: [ProtocolVersion; 5] = [
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// The newest revision with sessions: what `initialize` answers a client
/// that asks for one this server does not know (or for 2026-07-28, which
/// has no handshake).
const NEWEST_WITH_SESSIONS: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The largest `/mcp` request body: `start_run`'s files at their limit,
/// as base64 (four characters for three bytes), and room for the rest of
/// the call.
pub const MCP_BODY_LIMIT: usize = run_model::MAX_FILES_BYTES.div_ceil(3) * 4 + 1024 * 1024;

/// `/mcp` with the HTTP details of the module docs, to nest behind the
/// identity middleware. rmcp reads a request's body whole, without a
/// limit of its own, so the body is bounded first ([`MCP_BODY_LIMIT`]).
/// The timeout, as for pages and API calls, covers reading the body and
/// waiting for the response's head, never the response's body: rmcp
/// answers each call as an event stream whose head goes out at once, and a
/// client's standing event stream (`GET /mcp`) may stay open for hours.
pub fn router(
    plans: Arc<PlanService>,
    runs: Arc<Runs>,
    reviews: Arc<Reviews>,
    memories: Arc<Memories>,
    workspaces: Arc<Workspaces>,
    cases: Arc<Cases>,
) -> axum::Router {
    axum::Router::new()
        .fallback_service(service(plans, runs, reviews, memories, workspaces, cases))
        .layer(axum::middleware::from_fn(http_details))
        .layer(axum::middleware::from_fn_with_state(
            MCP_BODY_LIMIT,
            crate::web::api::extract::bounded_body,
        ))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            crate::REQUEST_TIMEOUT,
        ))
}

async fn http_details(request: Request, next: Next) -> Response {
    if let Some(version) = request.headers().get("mcp-protocol-version") {
        let known = version
            .to_str()
            .is_ok_and(|v| REVISIONS.iter().any(|r| r.to_string() == v));
        if !known {
            let supported: Vec<String> = REVISIONS.iter().map(ToString::to_string).collect();
            return (
                StatusCode::BAD_REQUEST,
                format!(
                    "unsupported MCP-Protocol-Version; this server speaks {}",
                    supported.join(", ")
                ),
            )
                .into_response();
        }
    }
    let ending = request.method() == Method::DELETE;
    let mut response = next.run(request).await;
    if ending && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

/// The `/mcp` service itself.
pub fn service(
    plans: Arc<PlanService>,
    runs: Arc<Runs>,
    reviews: Arc<Reviews>,
    memories: Arc<Memories>,
    workspaces: Arc<Workspaces>,
    cases: Arc<Cases>,
) -> StreamableHttpService<PlanMcp, LocalSessionManager> {
    // A session lives until its client ends it (DELETE) or the server
    // stops, as it did before rmcp closed idle ones after five minutes: an
    // agent's session is its active plan, and an agent may think for longer.
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = None;
    StreamableHttpService::new(
        move || {
            Ok(PlanMcp {
                service: plans.clone(),
                runs: runs.clone(),
                reviews: reviews.clone(),
                memories: memories.clone(),
                workspaces: workspaces.clone(),
                cases: cases.clone(),
                session: format!("mcp:{}", uuid::Uuid::new_v4()),
                subscriptions: Arc::default(),
            })
        },
        Arc::new(sessions),
        // planboard's own guards come first: the identity middleware checks
        // Host and Origin for /mcp (web/mod.rs), and [`router`] bounds the
        // body at [`MCP_BODY_LIMIT`], above rmcp's 4 MiB (start_run's files).
        StreamableHttpServerConfig::default()
            .with_max_request_body_bytes(MCP_BODY_LIMIT)
            .disable_allowed_hosts(),
    )
}

/// A tool's input schema as MCP takes it: the object, or an empty one.
fn object(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

fn tool_list() -> Vec<Tool> {
    plan_engine::tool_specs(Dialect::Canonical)
        .into_iter()
        .map(|spec| Tool::new(spec.name, spec.description, spec.parameters))
        .chain(run_tools())
        .chain(approval_tools())
        .chain(case_tools())
        .chain(session_tools())
        .collect()
}

/// A person's decisions: a plan's approval, a guarded call, a grant.
fn approval_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "approve_plan",
            "Approves a plan that waits for approval, as the board's card does: with digest (the plan's, \
             from get_plan) only that content; with grants, guarded tools of the run that no longer ask \
             (per tool, optionally an argument pattern); with hold, approved without starting. Refused \
             under the two-person rule when you started the run. Every approval and grant is an \
             approval record (list_approvals).",
            object(agent::protocol::schema_of::<ApprovePlan>()),
        ),
        Tool::new(
            "pending_calls",
            "A run's guarded tool calls that wait for a person, oldest first: each with its id, tool, \
             arguments and digest.",
            object(agent::protocol::schema_of::<GetRun>()),
        ),
        Tool::new(
            "decide_call",
            "Decides a guarded tool call: approve runs it, edit runs it with `arguments`, deny sends \
             `reason` back to the model. With digest, a call whose arguments changed is refused. The \
             decision is an approval record; a call decided already is refused.",
            object(agent::protocol::schema_of::<DecideCall>()),
        ),
        Tool::new(
            "revoke_grant",
            "Revokes a grant of a run while it goes on: the tool's calls ask a person again from the \
             next one on. The revocation is an approval record.",
            object(agent::protocol::schema_of::<RevokeGrant>()),
        ),
    ]
}

/// The regression cases and their suite runs.
fn case_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "list_cases",
            "The regression cases (runs reviewed good, kept with their task, files, plan, answer and \
             checks), newest first; by tag, retired or not.",
            object(agent::protocol::schema_of::<ListCases>()),
        ),
        Tool::new(
            "make_case",
            "Makes a regression case of a finished run whose plan a reviewer judged good, with checks: \
             answer_text {text}, answer_number {number, tolerance}, file_exists {path}, file_text {path, \
             text}, step_done / step_not_done {subtask}. A suite's run of a case is a finding, not a case.",
            object(agent::protocol::schema_of::<run_model::NewCase>()),
        ),
        Tool::new(
            "edit_case",
            "Changes a case's name, tags or checks (replaced whole), or retires it (retired=true) or \
             brings it back.",
            object(agent::protocol::schema_of::<EditCase>()),
        ),
        Tool::new(
            "delete_case",
            "Deletes a case (its suite results stay).",
            object(agent::protocol::schema_of::<ById>()),
        ),
        Tool::new(
            "run_suite",
            "Starts a suite run: every case not retired (or a tag) planned and run again on a model \
             (default: the configured one), tool calls answered from each case's recording where they \
             match (unmatched=replay, default) or all live; bounded by budget {max_cost, max_llm_calls}. \
             Answers the suite run; follow it with suite_report.",
            object(agent::protocol::schema_of::<run_model::NewSuiteRun>()),
        ),
        Tool::new(
            "suite_report",
            "A suite run's report: state, score, and per case its outcome, graph F1 against the reviewed \
             plan, checks, time, cost and first divergence from the recording.",
            object(agent::protocol::schema_of::<ById>()),
        ),
        Tool::new(
            "cancel_suite",
            "Cancels a suite run: its case's run going on is cancelled, the rest skipped.",
            object(agent::protocol::schema_of::<ById>()),
        ),
    ]
}

/// What to do next on this session's plan, the team's memory, and this
/// session's settings (seed 003's PlanNotebook options).
fn session_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "get_hint",
            "What to do next on this session's current plan: where it stands and your options, with              the rules (wait for the user's confirmation, the subtask limit) when they apply. Call it              before each step. Unchanged since your previous get_hint: one line (fresh=true repeats it              whole).",
            object(agent::protocol::schema_of::<GetHint>()),
        ),
        Tool::new(
            "search_memory",
            "Searches the team's memory: what planboard remembers of finished runs and people's              corrections, reviews and rules, best match first. Use it before planning a task like              one done before.",
            object(agent::protocol::schema_of::<SearchMemory>()),
        ),
        Tool::new(
            "set_session_settings",
            "Sets this session's rules, replacing earlier ones (left out or null: unset).              need_user_confirm: hints tell you to present a plan and wait for the user's go-ahead              before executing it. max_subtasks: plans this session creates may hold at most that              many subtasks (1 to 5000). A plan's own setting (create_plan, update_plan_info) wins.              Answers the settings.",
            object(agent::protocol::schema_of::<SessionSettings>()),
        ),
    ]
}

/// Delegating a whole task to planboard's own agent.
fn run_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "start_run",
            "Hands a whole task to planboard's own agent: it classifies and plans the task, waits for a \
             person to approve the plan (unless approval_required is false), then does the work. Files \
             given in `files` are put in the run's workspace before planning. Answers with run_id and \
             plan_id; follow it with get_run.",
            object(start_run_schema()),
        ),
        Tool::new(
            "get_run",
            "Where a run started with start_run stands: state, mode, progress, and the answer once done.",
            object(agent::protocol::schema_of::<GetRun>()),
        ),
        Tool::new(
            "replay_run",
            "Replays a finished run on a model (default: its own): a new run of its task and files whose \
             tool calls are answered from the run's recording when they are the same call; any other call \
             is made live, or (unmatched=stop) pauses the replay with the call named. From from_subtask the \
             recorded results before it are kept; without, the task is planned anew. Answers like start_run.",
            object(agent::protocol::schema_of::<ReplayArgs>()),
        ),
        Tool::new(
            "compare_runs",
            "Two runs side by side: both plans as graphs with their node and edge F1 and matched subtasks, \
             the first model reply or tool call where their logs part, the answers, and each run's calls, \
             tokens, time and cost.",
            object(agent::protocol::schema_of::<CompareArgs>()),
        ),
        Tool::new(
            "review_plan",
            "Writes your review of a finished plan: verdict good, needs_changes or wrong, a note (needed \
             unless good), and notes on single subtasks by id. Replaces your earlier review of it; other \
             reviewers' stay. planboard's agent remembers it when it plans a similar task.",
            object(agent::protocol::schema_of::<ReviewPlan>()),
        ),
        Tool::new(
            "plan_reviews",
            "Every reviewer's review of a plan, oldest first.",
            object(agent::protocol::schema_of::<PlanReviews>()),
        ),
        Tool::new(
            "review_queue",
            "Finished plans nobody has reviewed yet, the latest finished first, with the task that was asked.",
            object(agent::protocol::schema_of::<QueuePage>()),
        ),
        Tool::new(
            "list_approvals",
            "The approval records, newest first: every decision a person made for planboard's agent (a \
             plan version approved or rejected, a guarded call approved, edited or denied, a budget \
             raised, a drifted plan approved again, a grant), with who, when, the plan's version or the \
             call's tool, the note and the SHA-256 digest of what was decided.",
            object(agent::protocol::schema_of::<ListApprovals>()),
        ),
    ]
}

impl PlanMcp {
    /// The hint a resource holds now (the plan's language, its bounded
    /// window; `None` when it names no plan there is).
    async fn hint(&self, of: HintOf, session: &str) -> Option<String> {
        let opts = |plan: &plan_engine::Plan| HintOptions {
            lang: plan_engine::Lang::of_plan(plan),
            dialect: Dialect::Canonical,
            ..HintOptions::default()
        };
        match of {
            HintOf::Plan(id) => {
                self.service
                    .read(id, |p| plan_engine::hint(Some(p), &opts(p)))
                    .await
            }
            HintOf::Session => {
                let lang = self
                    .service
                    .read_active(session, plan_engine::Lang::of_plan)
                    .await
                    .unwrap_or_default();
                let opts = HintOptions {
                    lang,
                    dialect: Dialect::Canonical,
                    ..HintOptions::default()
                };
                // Read only: a resource read does not count as a hint shown.
                self.service
                    .session_hint(session, &opts)
                    .await
                    .ok()
                    .map(|(text, _)| text)
            }
        }
    }

    async fn session_tool(
        &self,
        name: &str,
        args: Value,
        session: &str,
    ) -> Result<String, ApiError> {
        // A call without arguments arrives as null.
        let args = if args.is_null() {
            Value::Object(serde_json::Map::new())
        } else {
            args
        };
        match name {
            "get_hint" => {
                let body: GetHint = serde_json::from_value(args).map_err(bad_arguments)?;
                let lang = match body.lang {
                    Some(lang) => lang,
                    None => self
                        .service
                        .read_active(session, plan_engine::Lang::of_plan)
                        .await
                        .unwrap_or_default(),
                };
                let opts = HintOptions {
                    lang,
                    dialect: Dialect::Canonical,
                    full_plan: body.full,
                    ..HintOptions::default()
                };
                let (text, _) = self
                    .service
                    .session_hint_remembered(session, &opts, body.fresh)
                    .await?;
                Ok(text)
            }
            "search_memory" => {
                let body: SearchMemory = serde_json::from_value(args).map_err(bad_arguments)?;
                let limit = body.limit.unwrap_or(5);
                if !(1..=MEMORIES_AT_MOST).contains(&limit) {
                    return Err(ApiError::BadRequest(format!(
                        "limit must be 1 to {MEMORIES_AT_MOST} (got {limit})"
                    )));
                }
                let chars = body.query.chars().count();
                if chars > QUERY_CHARS || body.query.trim().is_empty() {
                    return Err(ApiError::BadRequest(format!(
                        "query must have 1 to {QUERY_CHARS} characters and a word to search for (got {chars} characters)"
                    )));
                }
                let found = self.memories.list(Some(&body.query), 0, limit).await?;
                let memories: Vec<Value> = found
                    .into_iter()
                    .map(|m| {
                        serde_json::json!({
                            "kind": m.kind,
                            "task": plan_engine::text::fit(&m.task, MEMORY_TASK_SHOWN),
                            "text": m.text,
                            "pinned": m.pinned,
                            "plan_id": m.plan_id,
                            "created_at": m.created_at,
                        })
                    })
                    .collect();
                Ok(serde_json::json!({ "memories": memories }).to_string())
            }
            _ => {
                let settings: SessionSettings =
                    serde_json::from_value(args).map_err(bad_arguments)?;
                settings.check().map_err(ApiError::BadRequest)?;
                let stored = self.service.set_session_settings(session, settings).await?;
                serde_json::to_value(stored)
                    .map(|v| v.to_string())
                    .map_err(|_| ApiError::Internal)
            }
        }
    }

    async fn review_tool(&self, name: &str, args: Value, actor: &str) -> Result<String, ApiError> {
        let answer = match name {
            "review_plan" => {
                let body: ReviewPlan = serde_json::from_value(args).map_err(bad_arguments)?;
                serde_json::to_value(
                    self.reviews
                        .write(
                            body.plan_id,
                            actor,
                            run_model::NewReview {
                                verdict: body.verdict,
                                note: body.note,
                                subtasks: body.subtasks,
                            },
                        )
                        .await?,
                )
            }
            "plan_reviews" => {
                let body: PlanReviews = serde_json::from_value(args).map_err(bad_arguments)?;
                serde_json::to_value(self.reviews.of_plan(body.plan_id).await?)
            }
            "list_approvals" => {
                let args = if args.is_null() {
                    Value::Object(serde_json::Map::new())
                } else {
                    args
                };
                let body: ListApprovals = serde_json::from_value(args).map_err(bad_arguments)?;
                let limit = body.limit.unwrap_or(50);
                if !(1..=PAGE_LIMIT).contains(&limit) {
                    return Err(ApiError::BadRequest(format!(
                        "limit must be 1 to {PAGE_LIMIT} (got {limit})"
                    )));
                }
                let filter = crate::approvals::ApprovalFilter {
                    run: body.run_id,
                    person: body.person,
                    tool: body.tool,
                    limit,
                    ..Default::default()
                };
                serde_json::to_value(self.runs.approvals().list(&filter).await?)
            }
            _ => {
                let body: QueuePage = serde_json::from_value(args).map_err(bad_arguments)?;
                let limit = body.limit.unwrap_or(20);
                if !(1..=PAGE_LIMIT).contains(&limit) {
                    return Err(ApiError::BadRequest(format!(
                        "limit must be 1 to {PAGE_LIMIT} (got {limit})"
                    )));
                }
                let (plans, total) = self
                    .reviews
                    .queue(body.offset as usize, limit as usize, |_| true)
                    .await?;
                Ok(serde_json::json!({ "total": total, "plans": plans }))
            }
        };
        answer.map(|v| v.to_string()).map_err(|e| {
            tracing::error!("an MCP answer could not be written: {e}");
            ApiError::Internal
        })
    }

    async fn approval_tool(
        &self,
        name: &str,
        args: Value,
        actor: &str,
    ) -> Result<String, ApiError> {
        let answer = match name {
            "approve_plan" => {
                let body: ApprovePlan = serde_json::from_value(args).map_err(bad_arguments)?;
                let approval = crate::approvals::PlanApproval {
                    comment: body.comment,
                    digest: body.digest,
                    expected_version: body.expected_version,
                    grants: body.grants,
                    hold: crate::web::api::bodies::HoldBody::hold(body.hold),
                };
                let approved = self
                    .runs
                    .approvals()
                    .approve_plan(body.plan_id, approval, actor)
                    .await?;
                Ok(serde_json::json!({
                    "plan_id": approved.plan.id(),
                    "version": approved.plan.version(),
                    "state": approved.plan.state(),
                    "grants": approved.grants,
                    "hold": approved.hold,
                }))
            }
            "pending_calls" => {
                let body: GetRun = serde_json::from_value(args).map_err(bad_arguments)?;
                serde_json::to_value(self.runs.pending_calls(body.run_id).await?)
            }
            "decide_call" => {
                let body: DecideCall = serde_json::from_value(args).map_err(bad_arguments)?;
                let decision = crate::runs::Decision {
                    verdict: body.verdict,
                    digest: body.digest,
                    reason: body.reason,
                    arguments: body.arguments,
                };
                let view = self
                    .runs
                    .decide(body.run_id, &body.call, decision, actor)
                    .await?;
                Ok(serde_json::json!({
                    "run_id": view.record.id,
                    "state": view.record.state,
                    "reason": view.record.reason,
                }))
            }
            _ => {
                let body: RevokeGrant = serde_json::from_value(args).map_err(bad_arguments)?;
                serde_json::to_value(
                    self.runs
                        .approvals()
                        .revoke_grant(body.run_id, body.grant_id, actor)
                        .await?,
                )
            }
        };
        answer.map(|v| v.to_string()).map_err(|e| {
            tracing::error!("an MCP answer could not be written: {e}");
            ApiError::Internal
        })
    }

    async fn case_tool(&self, name: &str, args: Value, actor: &str) -> Result<String, ApiError> {
        // A call without arguments arrives as null.
        let args = if args.is_null() {
            Value::Object(serde_json::Map::new())
        } else {
            args
        };
        let answer = match name {
            "list_cases" => {
                let body: ListCases = serde_json::from_value(args).map_err(bad_arguments)?;
                serde_json::to_value(self.cases.list(body.tag.as_deref(), body.retired).await?)
            }
            "make_case" => {
                let body: run_model::NewCase =
                    serde_json::from_value(args).map_err(bad_arguments)?;
                serde_json::to_value(self.cases.make(body, actor).await?)
            }
            "edit_case" => {
                let body: EditCase = serde_json::from_value(args).map_err(bad_arguments)?;
                let patch = run_model::CasePatch {
                    name: body.name,
                    tags: body.tags,
                    checks: body.checks,
                    retired: body.retired,
                };
                serde_json::to_value(self.cases.edit(body.case_id, patch).await?)
            }
            "delete_case" => {
                let body: ById = serde_json::from_value(args).map_err(bad_arguments)?;
                self.cases.delete(body.id).await?;
                Ok(serde_json::json!({ "deleted": body.id }))
            }
            "run_suite" => {
                let body: run_model::NewSuiteRun =
                    serde_json::from_value(args).map_err(bad_arguments)?;
                serde_json::to_value(self.cases.start_suite(body, actor, None).await?)
            }
            "suite_report" => {
                let body: ById = serde_json::from_value(args).map_err(bad_arguments)?;
                serde_json::to_value(self.cases.report(body.id).await?)
            }
            _ => {
                let body: ById = serde_json::from_value(args).map_err(bad_arguments)?;
                serde_json::to_value(self.cases.cancel(body.id, actor).await?)
            }
        };
        answer.map(|v| v.to_string()).map_err(|e| {
            tracing::error!("an MCP answer could not be written: {e}");
            ApiError::Internal
        })
    }

    async fn run_tool(&self, name: &str, args: Value, actor: &str) -> Result<String, ApiError> {
        let view = match name {
            "start_run" => self.start_run(args, actor).await?,
            "replay_run" => {
                let body: ReplayArgs = serde_json::from_value(args).map_err(bad_arguments)?;
                let request = crate::runs::ReplayRequest {
                    model: body.model,
                    from: body.from_subtask.map(plan_engine::SubtaskId),
                    unmatched: body.unmatched,
                    memory: body.memory,
                };
                self.runs.replay(body.run_id, request, actor).await?
            }
            "compare_runs" => {
                let body: CompareArgs = serde_json::from_value(args).map_err(bad_arguments)?;
                let compared = self.runs.compare(body.a, body.b).await?;
                return serde_json::to_string(&compared).map_err(|e| {
                    tracing::error!("an MCP answer could not be written: {e}");
                    ApiError::Internal
                });
            }
            _ => {
                let body: GetRun = serde_json::from_value(args).map_err(bad_arguments)?;
                self.runs.get(body.run_id).await?
            }
        };
        Ok(run_summary(&view).to_string())
    }

    /// `start_run`: the run, started with the files given.
    async fn start_run(&self, args: Value, actor: &str) -> Result<crate::runs::RunView, ApiError> {
        let mut args = args;
        let files: Vec<McpFile> = match args.as_object_mut().and_then(|a| a.remove("files")) {
            None | Some(Value::Null) => Vec::new(),
            Some(files) => serde_json::from_value(files)
                .map_err(|e| ApiError::BadRequest(format!("files: {e}")))?,
        };
        let body: StartRun = serde_json::from_value(args).map_err(bad_arguments)?;
        let source = body.source.clone();
        let template = body.template;
        let config = body.into_config()?;
        McpFile::check_sizes(&files).map_err(ApiError::TooLarge)?;
        let uploads = files
            .into_iter()
            .map(McpFile::upload)
            .collect::<Result<Vec<_>, _>>()
            .map_err(ApiError::BadRequest)?;
        let staged = match (uploads.is_empty(), source) {
            (true, None) => None,
            (false, None) => Some(self.workspaces.stage_uploads(uploads).await?),
            (true, Some(source)) => Some(self.workspaces.stage_folder(&source, false).await?),
            (false, Some(_)) => {
                return Err(ApiError::BadRequest(
                    "give files or a source folder, not both".into(),
                ))
            }
        };
        Ok(self
            .runs
            .start_with(config, template, staged, actor, None)
            .await?)
    }

    /// The run a task id names: a task that is no run is not found; the
    /// store's own failure stays the server's.
    async fn task_run(&self, task_id: &str) -> Result<crate::runs::RunView, ApiError> {
        let unknown =
            || ApiError::NotFound(format!("no task {}", plan_engine::text::fit(task_id, 60)));
        let id: run_model::RunId = task_id.parse().map_err(|_| unknown())?;
        match self.runs.get(id).await {
            Err(crate::runs::RunError::NotFound(_)) => Err(unknown()),
            found => Ok(found?),
        }
    }

    /// The task of a run (`tasks/get`): see [`task_of`].
    /// A run's task's times: when the run was first and last saved (the
    /// same at `tools/call` as at every `tasks/get`).
    async fn task_times(&self, id: run_model::RunId) -> Result<(Timestamp, Timestamp), ApiError> {
        let now = chrono::Utc::now();
        Ok(self
            .runs
            .store()
            .run_times(id)
            .await
            .map_err(crate::runs::RunError::from)?
            .unwrap_or((now, now)))
    }

    async fn run_task(&self, task_id: &str, origin: &str) -> Result<DetailedTask, ApiError> {
        let view = self.task_run(task_id).await?;
        let needs = self.runs.needs_of(&view.record).await?;
        let (created, updated) = self.task_times(view.record.id).await?;
        Ok(task_of(&view, &needs, origin, created, updated))
    }
}

/// How often a client should ask after a run's task (`pollIntervalMs`): a
/// run's steps take seconds to minutes.
const TASK_POLL_MS: u64 = 2_000;

/// A run as an MCP task (the Tasks extension, SEP-2663; the task's id is
/// the run's). Classifying, planning and running are `working`. A run that
/// waits for a person (its plan's approval, the agent's question, a
/// guarded call, a pause) is `input_required`, each thing it waits for a
/// URL elicitation whose address is where a person acts on it on the
/// board: the decision is a person's, not the calling agent's (which may
/// still act through planboard's tools, `approve_plan` and
/// `decide_call`, as any client may). Done is `completed` with
/// `get_run`'s answer as the tool's result; failed is `failed` with the
/// run's reason; cancelled is `cancelled`.
fn task_of(
    view: &crate::runs::RunView,
    needs: &[Need],
    origin: &str,
    created: chrono::DateTime<chrono::Utc>,
    updated: chrono::DateTime<chrono::Utc>,
) -> DetailedTask {
    let record = &view.record;
    let reason = record.reason.clone().unwrap_or_default();
    let plan_href = record
        .plan_id
        .map_or_else(|| "/inbox".to_string(), |p| format!("/plans/{p}"));
    let elicit = |key: String, message: String, href: &str| {
        let request = ElicitRequest::new(ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message,
            url: format!("{origin}{href}"),
            elicitation_id: key.clone(),
        });
        (key, InputRequest::Elicitation(request))
    };
    let waiting = match record.state {
        RunState::AwaitingApproval | RunState::Paused => true,
        RunState::Running => !needs.is_empty(),
        _ => false,
    };
    let (payload, message) = match record.state {
        RunState::Done => {
            let answer =
                CallToolResult::success(vec![ContentBlock::text(run_summary(view).to_string())]);
            let result =
                serde_json::to_value(answer).map_or_else(|_| serde_json::Map::new(), object);
            (TaskPayload::Completed { result }, "done".to_string())
        }
        RunState::Failed => {
            let error = serde_json::json!({
                "code": ErrorCode::INTERNAL_ERROR.0,
                "message": format!("the run failed: {reason}"),
                "data": run_summary(view),
            });
            let error = object(error);
            (TaskPayload::Failed { error }, format!("failed: {reason}"))
        }
        RunState::Cancelled => (TaskPayload::Cancelled, format!("cancelled: {reason}")),
        _ if waiting => {
            let mut input_requests: InputRequests = needs
                .iter()
                .enumerate()
                .map(|(i, need)| elicit(format!("need-{i}"), need.text.clone(), &need.href))
                .collect();
            if input_requests.is_empty() {
                let why = if record.state == RunState::AwaitingApproval {
                    "the plan waits for a person's approval".to_string()
                } else {
                    format!("the run is paused: {reason}")
                };
                input_requests.extend([elicit("run".into(), why, &plan_href)]);
            }
            let message = needs
                .first()
                .map_or_else(|| format!("{}: {reason}", record.state), |n| n.text.clone());
            (TaskPayload::InputRequired { input_requests }, message)
        }
        _ => (
            TaskPayload::Working,
            format!(
                "{}: {} of {} subtasks done",
                record.state, view.progress.done, view.progress.total
            ),
        ),
    };
    let task = Task::new(
        record.id.to_string(),
        TaskStatus::Working,
        created.to_rfc3339(),
        updated.to_rfc3339(),
    )
    .with_poll_interval_ms(TASK_POLL_MS)
    .with_status_message(plan_engine::text::fit(&message, Need::TEXT_CHARS));
    DetailedTask::new(task, payload)
}

/// What `get_run` answers about a run.
fn run_summary(view: &crate::runs::RunView) -> Value {
    serde_json::json!({
        "run_id": view.record.id,
        "plan_id": view.record.plan_id,
        "state": view.record.state,
        "reason": view.record.reason,
        "mode": view.record.classification.as_ref().map(|c| c.mode),
        "progress": view.progress,
        "answer": view.record.answer,
    })
}

impl ServerHandler for PlanMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_tasks()
                .build(),
        )
        .with_protocol_version(NEWEST_WITH_SESSIONS)
        .with_server_info(Implementation::new("planboard", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "planboard keeps your plan: create_plan first, then start_subtask / complete_subtask as you work; \
             get_hint says what to do next, search_memory what the team learned before. \
             Every tool works on this session's active plan unless you pass plan_id. \
             People watch and may edit the plan on the board; call get_plan when unsure.",
        )
    }

    /// rmcp's negotiation over these: a client gets the revision it asks
    /// for, or the newest of them.
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&REVISIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tool_list()))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let hint = Resource::new(SESSION_HINT_URI, "hint")
            .with_title("The hint for this session's plan")
            .with_description(
                "What to do next on this session's active plan, as get_hint answers it (the \
                 plan's language, its bounded window). Subscribe to hear when the plan changes. \
                 Any plan's hint is planboard://plans/{id}/hint.",
            )
            .with_mime_type("text/plain");
        Ok(ListResourcesResult::with_all_items(vec![hint]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let of = HintOf::of(&request.uri).ok_or_else(|| unknown_resource(&request.uri))?;
        let session = self
            .session(&context)
            .map_err(|e| McpError::invalid_params(e.message(), None))?;
        let text = self
            .hint(of, &session)
            .await
            .ok_or_else(|| unknown_resource(&request.uri))?;
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri)]).into())
    }

    /// Follows the plan the resource is about: each change (a burst told
    /// once) is a `notifications/resources/updated`, until the client
    /// unsubscribes or goes.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let uri = request.uri;
        let of = HintOf::of(&uri).ok_or_else(|| unknown_resource(&uri))?;
        let peer = context.peer.clone();
        let (service, session) = (self.service.clone(), self.session.clone());
        let mut changes = self.service.hub().subscribe();
        let told = uri.clone();
        let task = tokio::spawn(async move {
            use tokio::sync::broadcast::error::{RecvError, TryRecvError};
            loop {
                match changes.recv().await {
                    Ok(change) => {
                        let watched = match of {
                            HintOf::Plan(id) => Some(id),
                            HintOf::Session => service.read_active(&session, |p| p.id()).await,
                        };
                        if watched != Some(change.plan_id) {
                            continue;
                        }
                    }
                    // Fell behind: something may have changed; say so.
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                }
                // The rest of a burst (a step's several events) is the
                // same news.
                while let Ok(_) | Err(TryRecvError::Lagged(_)) = changes.try_recv() {}
                let note = ResourceUpdatedNotificationParam::new(told.clone());
                if peer.notify_resource_updated(note).await.is_err() {
                    return;
                }
            }
        });
        let mut subscriptions = self.subscriptions.lock().expect("subscriptions lock");
        if let Some(old) = subscriptions.insert(uri, task.abort_handle()) {
            old.abort();
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let removed = self
            .subscriptions
            .lock()
            .expect("subscriptions lock")
            .remove(&request.uri);
        if let Some(task) = removed {
            task.abort();
        }
        Ok(())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let (actor, who) = acting(&context);
        // Without an identity (the middleware always puts one), the least.
        let rights = who
            .as_ref()
            .map_or(ToolRights::Operator, crate::web::api::tools::rights);
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let session = match self.session(&context) {
            Ok(session) => session,
            Err(refused) => return answered(Err(refused)),
        };
        // A client that speaks the Tasks extension gets the run as a task
        // at once, and follows it with tasks/get.
        let tasks = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        if tasks && request.name == "start_run" {
            let view = match self.start_run(args, &actor).await {
                Ok(view) => view,
                Err(refused) => return answered(Err(refused)),
            };
            let now = chrono::Utc::now();
            let (created, updated) = self.task_times(view.record.id).await.unwrap_or((now, now));
            let task = task_of(&view, &[], "", created, updated).task;
            return Ok(CallToolResponse::Task(CreateTaskResult::new(task)));
        }
        if REVIEW_TOOLS.contains(&request.name.as_ref()) {
            let answer = self.review_tool(&request.name, args, &actor).await;
            return answered(answer.map(|text| (text, true)));
        }
        if APPROVAL_TOOLS.contains(&request.name.as_ref()) {
            let answer = self.approval_tool(&request.name, args, &actor).await;
            return answered(answer.map(|text| (text, true)));
        }
        if CASE_TOOLS.contains(&request.name.as_ref()) {
            let answer = self.case_tool(&request.name, args, &actor).await;
            return answered(answer.map(|text| (text, true)));
        }
        if SESSION_TOOLS.contains(&request.name.as_ref()) {
            let answer = self.session_tool(&request.name, args, &session).await;
            return answered(answer.map(|text| (text, true)));
        }
        if matches!(
            request.name.as_ref(),
            "start_run" | "get_run" | "replay_run" | "compare_runs"
        ) {
            let answer = self.run_tool(&request.name, args, &actor).await;
            return answered(answer.map(|text| (text, true)));
        }
        let result = self
            .service
            .tool(
                Dialect::Canonical,
                &request.name,
                &args,
                &session,
                &actor,
                rights,
                // MCP's create_plan takes them as arguments.
                SessionSettings::default(),
            )
            .await;
        answered(
            result
                .map(|result| (result.text, result.ok))
                .map_err(ApiError::from),
        )
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        match self.run_task(&request.task_id, &origin(&context)).await {
            Ok(task) => Ok(GetTaskResult::new(task)),
            Err(e) => Err(task_error(e)),
        }
    }

    /// The answers to a task's elicitations: each asked a person to act on
    /// the board, so there is nothing to take in; a known task is
    /// acknowledged.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task_run(&request.task_id)
            .await
            .map(|_| ())
            .map_err(task_error)
    }

    /// Cancels the run, as its Cancel button does.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let (actor, _) = acting(&context);
        let id = self
            .task_run(&request.task_id)
            .await
            .map_err(task_error)?
            .record
            .id;
        self.runs
            .cancel(id, &actor)
            .await
            .map(|_| ())
            .map_err(|e| task_error(e.into()))
    }
}

/// Whether the request came without an MCP session: a 2026-07-28 request,
/// each standing alone (SEP-2567). An HTTP request of a session names it.
fn sessionless(context: &RequestContext<RoleServer>) -> bool {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .is_some_and(|parts| !parts.headers.contains_key("mcp-session-id"))
}

impl PlanMcp {
    /// The agent session a request works in (its active plan, its
    /// settings, what its hints remember): the MCP session's own; for a
    /// request without one (2026-07-28), the one the `X-Planboard-Session`
    /// header names, else the caller's, as for the REST tools.
    fn session(&self, context: &RequestContext<RoleServer>) -> Result<String, ApiError> {
        if !sessionless(context) {
            return Ok(self.session.clone());
        }
        let parts = context.extensions.get::<axum::http::request::Parts>();
        // The identity middleware always names the caller; without it,
        // this request's own key (nothing to share).
        let Some((headers, who)) =
            parts.and_then(|p| Some((&p.headers, p.extensions.get::<Identity>()?)))
        else {
            return Ok(self.session.clone());
        };
        crate::web::api::tools::session_key(None, headers, who).map(|(session, _)| session)
    }
}

/// Who acts in a call: the identity the middleware put on the HTTP request
/// that carried it, recorded as acting through its MCP client (`alice ·
/// claude-code`) so the timeline tells agents from people.
fn acting(context: &RequestContext<RoleServer>) -> (String, Option<Identity>) {
    let client = context
        .client_info()
        .map_or_else(|| "mcp".to_string(), |info| info.name);
    let who = context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Identity>())
        .cloned();
    let actor = who.as_ref().map_or_else(
        || format!("mcp · {client}"),
        |who| who.clone().acting_as(&client).actor(),
    );
    (actor, who)
}

/// The board's origin as the client reached it, for the addresses a task
/// sends a person to (the Host the identity middleware already checked).
fn origin(context: &RequestContext<RoleServer>) -> String {
    let parts = context.extensions.get::<axum::http::request::Parts>();
    let header = |name: &str| {
        parts
            .and_then(|p| p.headers.get(name))
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let scheme = header("x-forwarded-proto")
        .filter(|s| s == "https")
        .unwrap_or_else(|| "http".into());
    header("host").map_or_else(String::new, |host| format!("{scheme}://{host}"))
}

/// A task method's failure through the API's mapping: an unknown task is
/// invalid params (-32602, as the Tasks extension asks), the server's own
/// failure an internal error without the store's words.
fn task_error(e: ApiError) -> McpError {
    match e {
        ApiError::NotFound(message) => McpError::invalid_params(message, None),
        e => server_failed(&e),
    }
}

/// The server's own failure as a protocol error: the API's generic
/// sentence and code, never the store's words.
fn server_failed(e: &ApiError) -> McpError {
    McpError::internal_error(e.message(), Some(serde_json::json!({"error": e.code()})))
}

/// Arguments that do not fit the tool's schema.
fn bad_arguments(e: serde_json::Error) -> ApiError {
    ApiError::BadRequest(e.to_string())
}

/// Every tool's answer through the API's one mapping of errors: a refusal
/// (a bad argument, a viewer's or an operator's deletion, a conflict) is
/// the tool's error with the API's sentence; the server's own failure (a
/// 5xx: the store, anything else) is a protocol error with the API's
/// generic sentence, never the store's words.
fn answered(answer: Result<(String, bool), ApiError>) -> Result<CallToolResponse, McpError> {
    match answer {
        Ok((text, true)) => Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into()),
        Ok((text, false)) => Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into()),
        Err(e) if e.status().is_server_error() => Err(server_failed(&e)),
        Err(refused) => {
            Ok(CallToolResult::error(vec![ContentBlock::text(refused.message())]).into())
        }
    }
}
