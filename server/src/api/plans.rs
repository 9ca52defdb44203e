//! The plan routes: each handler extracts, calls the service once, and maps
//! the error. Convenience routes (`/subtasks/{sid}/state`, `/approve`, …)
//! build the same engine [`Command`] that `/commands` takes whole.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use plan_engine::{Command, Dialect, Event, HintOptions, Lang, NewPlan, Plan, PlanId, Progress};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, Body, MaybeBody};
use super::ApiState;
use crate::auth::{Identity, Role};
use crate::store::{PlanFilter, PlanSummary, StoredComment, StoredEvent};

/// A plan with its progress (counts per state, percent, ready, critical path).
#[derive(Serialize, ToSchema)]
pub struct PlanView {
    #[schema(value_type = Object)]
    pub plan: Plan,
    #[schema(value_type = Object)]
    pub progress: Progress,
}

impl PlanView {
    fn of(plan: Plan) -> PlanView {
        let progress = plan.progress();
        PlanView { plan, progress }
    }
}

/// The plan after a change, and the events that recorded it.
#[derive(Serialize, ToSchema)]
pub struct Changed {
    #[schema(value_type = Object)]
    pub plan: Plan,
    #[schema(value_type = Object)]
    pub progress: Progress,
    #[schema(value_type = Vec<Object>)]
    pub events: Vec<Event>,
}

pub fn parse_id(text: &str) -> Result<PlanId, ApiError> {
    text.parse()
        .map_err(|_| ApiError::NotFound(format!("'{text}' is not a plan id (a UUID)")))
}

fn parse_subtask(text: &str) -> Result<u32, ApiError> {
    text.trim_start_matches('#')
        .parse()
        .map_err(|_| ApiError::NotFound(format!("'{text}' is not a subtask id (a small integer)")))
}

/// `If-Match: 7` (or `"7"`) is the same as `"expected_version": 7`.
fn if_match(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get(axum::http::header::IF_MATCH) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or_default().trim().trim_matches('"');
    text.parse().map(Some).map_err(|_| {
        ApiError::BadRequest(format!(
            "If-Match must be a plan version number, not '{text}'"
        ))
    })
}

/// Builds a command from an op name, fields from the path, and the body.
fn command(
    op: &str,
    mut fields: Map<String, Value>,
    body: Value,
    headers: &HeaderMap,
) -> Result<Command, ApiError> {
    match body {
        Value::Object(map) => fields.extend(map),
        Value::Null => {}
        _ => {
            return Err(ApiError::BadRequest(
                "the body must be a JSON object".into(),
            ))
        }
    }
    fields.insert("op".into(), json!(op));
    if let Some(v) = if_match(headers)? {
        fields.insert("expected_version".into(), json!(v));
    }
    serde_json::from_value(Value::Object(fields))
        .map_err(|e| ApiError::BadRequest(format!("invalid {op} request: {e}")))
}

async fn run(
    state: &ApiState,
    id: PlanId,
    command: Command,
    who: &Identity,
) -> Result<Response, ApiError> {
    let (plan, events) = state.service.command(id, &command, &who.name).await?;
    let progress = plan.progress();
    Ok(Json(Changed {
        plan,
        progress,
        events,
    })
    .into_response())
}

#[derive(Deserialize, IntoParams)]
pub struct ListQuery {
    /// A plan state: draft, awaiting_approval, approved, running, paused, done, failed, abandoned.
    state: Option<String>,
    /// manual, simple, complex or emergent.
    mode: Option<String>,
    /// Text the title contains (case-insensitive).
    q: Option<String>,
    /// At most 200; 50 by default.
    limit: Option<u32>,
    offset: Option<u32>,
}

#[derive(Serialize, ToSchema)]
pub struct PlanPage {
    pub plans: Vec<PlanSummary>,
    /// Pass as `offset` for the next page; absent on the last page.
    pub next_offset: Option<u32>,
}

#[utoipa::path(get, path = "/api/plans", params(ListQuery), tag = "plans",
    responses((status = 200, body = PlanPage)))]
pub async fn list_plans(
    State(state): State<ApiState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<PlanPage>, ApiError> {
    let limit = q.limit.unwrap_or(50).clamp(1, 200);
    let offset = q.offset.unwrap_or(0);
    let filter = PlanFilter {
        state: q.state.filter(|s| !s.is_empty()),
        mode: q.mode.filter(|s| !s.is_empty()),
        text: q.q.filter(|s| !s.trim().is_empty()),
        limit: limit + 1,
        offset,
    };
    let mut plans = state.service.list(&filter).await?;
    let more = plans.len() > limit as usize;
    plans.truncate(limit as usize);
    Ok(Json(PlanPage {
        plans,
        next_offset: more.then_some(offset + limit),
    }))
}

#[utoipa::path(post, path = "/api/plans", tag = "plans",
    request_body(content = Object, description = "title, goal, description, expected_outcome, mode, approval_required, draft, max_subtasks, max_parallel, key, subtasks: [{name, description, expected_outcome, reasoning, dependencies (1-based ids), assignee}]"),
    responses((status = 201, body = PlanView), (status = 400), (status = 422)))]
pub async fn create_plan(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Body(mut body): Body<Value>,
) -> Result<Response, ApiError> {
    let Some(map) = body.as_object_mut() else {
        return Err(ApiError::BadRequest(
            "the body must be a JSON object".into(),
        ));
    };
    // The server chooses plan ids.
    map.insert("id".into(), json!(uuid::Uuid::new_v4()));
    let spec: NewPlan = serde_json::from_value(body)
        .map_err(|e| ApiError::BadRequest(format!("invalid plan: {e}")))?;
    let plan = state.service.create(spec, &who.name).await?;
    Ok((StatusCode::CREATED, Json(PlanView::of(plan))).into_response())
}

#[utoipa::path(get, path = "/api/plans/{id}", tag = "plans",
    params(("id" = String, Path, description = "plan UUID")),
    responses((status = 200, body = PlanView), (status = 404)))]
pub async fn get_plan(
    State(state): State<ApiState>,
    Path(id): Path<String>,
) -> Result<Json<PlanView>, ApiError> {
    let id = parse_id(&id)?;
    let view = state.service.read(id, |p| PlanView::of(p.clone())).await;
    view.map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no plan has id {id}")))
}

#[utoipa::path(patch, path = "/api/plans/{id}", tag = "plans",
    params(("id" = String, Path, description = "plan UUID")),
    request_body(content = Object, description = "any of title, goal, description, expected_outcome, mode, max_subtasks, max_parallel; optional expected_version"),
    responses((status = 200, body = Changed), (status = 409), (status = 422)))]
pub async fn update_plan(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Body(body): Body<Value>,
) -> Result<Response, ApiError> {
    let cmd = patch_command("update_info", Map::new(), body, &headers)?;
    run(&state, parse_id(&id)?, cmd, &who).await
}

/// A command whose body is a patch: the body's fields become `patch`,
/// except `expected_version`, which stays on the command (`If-Match` wins).
fn patch_command(
    op: &str,
    mut fields: Map<String, Value>,
    body: Value,
    headers: &HeaderMap,
) -> Result<Command, ApiError> {
    let (patch, expected) = split_version(body)?;
    fields.insert("patch".into(), patch);
    if let Some(v) = expected {
        fields.insert("expected_version".into(), json!(v));
    }
    command(op, fields, Value::Null, headers)
}

/// Separates `expected_version` from a patch body.
fn split_version(body: Value) -> Result<(Value, Option<u64>), ApiError> {
    let Value::Object(mut map) = body else {
        return Err(ApiError::BadRequest(
            "the body must be a JSON object".into(),
        ));
    };
    let expected = match map.remove("expected_version") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            ApiError::BadRequest("expected_version must be a plan version number".into())
        })?),
    };
    Ok((Value::Object(map), expected))
}

#[utoipa::path(delete, path = "/api/plans/{id}", tag = "plans",
    params(("id" = String, Path, description = "plan UUID")),
    responses((status = 204, description = "deleted from listings; its event log is kept"), (status = 403), (status = 404)))]
pub async fn delete_plan(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    who.require(Role::Admin)?;
    state.service.delete(parse_id(&id)?, &who.name).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/plans/{id}/commands", tag = "plans",
    params(("id" = String, Path, description = "plan UUID")),
    request_body(content = Object, description = "an engine command: {\"op\": \"set_subtask_state\", \"id\": 2, \"state\": \"done\", \"note\": \"…\", \"expected_version\": 7}; see the README for every op"),
    responses((status = 200, body = Changed), (status = 400), (status = 404), (status = 409), (status = 422)))]
pub async fn run_command(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Body(cmd): Body<Command>,
) -> Result<Response, ApiError> {
    run(&state, parse_id(&id)?, cmd, &who).await
}

#[utoipa::path(post, path = "/api/plans/{id}/subtasks", tag = "subtasks",
    params(("id" = String, Path, description = "plan UUID")),
    request_body(content = Object, description = "{subtask: {name, description, expected_outcome, reasoning, dependencies, assignee}, position: \"end\" | {index: n} | {after: id} | {before: id}, rewire_after, required_by, expected_version}"),
    responses((status = 200, body = Changed), (status = 422)))]
pub async fn add_subtask(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Body(body): Body<Value>,
) -> Result<Response, ApiError> {
    let cmd = command("add_subtask", Map::new(), body, &headers)?;
    run(&state, parse_id(&id)?, cmd, &who).await
}

#[utoipa::path(patch, path = "/api/plans/{id}/subtasks/{sid}", tag = "subtasks",
    params(("id" = String, Path, description = "plan UUID"), ("sid" = u32, Path, description = "subtask id")),
    request_body(content = Object, description = "any of name, description, expected_outcome, reasoning, assignee; optional expected_version"),
    responses((status = 200, body = Changed), (status = 422)))]
pub async fn edit_subtask(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path((id, sid)): Path<(String, String)>,
    headers: HeaderMap,
    Body(body): Body<Value>,
) -> Result<Response, ApiError> {
    let mut fields = Map::new();
    fields.insert("id".into(), json!(parse_subtask(&sid)?));
    let cmd = patch_command("edit_subtask", fields, body, &headers)?;
    run(&state, parse_id(&id)?, cmd, &who).await
}

#[utoipa::path(delete, path = "/api/plans/{id}/subtasks/{sid}", tag = "subtasks",
    params(("id" = String, Path, description = "plan UUID"), ("sid" = u32, Path, description = "subtask id")),
    responses((status = 200, body = Changed), (status = 404), (status = 422)))]
pub async fn delete_subtask(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path((id, sid)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let mut fields = Map::new();
    fields.insert("id".into(), json!(parse_subtask(&sid)?));
    let cmd = command("delete_subtask", fields, Value::Null, &headers)?;
    run(&state, parse_id(&id)?, cmd, &who).await
}

/// The routes under `/subtasks/{sid}/…` and the engine op each one runs.
const SUBTASK_ACTIONS: &[(&str, &str)] = &[
    ("state", "set_subtask_state"),
    ("move", "move_subtask"),
    ("dependencies", "set_dependencies"),
    ("notes", "set_notes"),
];

#[utoipa::path(post, path = "/api/plans/{id}/subtasks/{sid}/{action}", tag = "subtasks",
    params(("id" = String, Path, description = "plan UUID"), ("sid" = u32, Path, description = "subtask id"),
        ("action" = String, Path, description = "state {state, note, start_next} | move {to_index} | dependencies {dependencies} | notes {notes}")),
    request_body(content = Object, description = "the action's fields, optional expected_version"),
    responses((status = 200, body = Changed), (status = 404), (status = 409), (status = 422)))]
pub async fn subtask_action(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path((id, sid, action)): Path<(String, String, String)>,
    headers: HeaderMap,
    Body(body): Body<Value>,
) -> Result<Response, ApiError> {
    let op = SUBTASK_ACTIONS
        .iter()
        .find(|(name, _)| *name == action)
        .map(|(_, op)| *op)
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "no subtask action '{action}'; the actions are state, move, dependencies, notes"
            ))
        })?;
    let mut fields = Map::new();
    fields.insert("id".into(), json!(parse_subtask(&sid)?));
    let cmd = command(op, fields, body, &headers)?;
    run(&state, parse_id(&id)?, cmd, &who).await
}

const PLAN_ACTIONS: &[(&str, &str)] = &[
    ("approve", "approve"),
    ("reject", "reject"),
    ("submit", "submit"),
    ("pause", "pause"),
    ("resume", "resume"),
    ("finish", "finish"),
    ("recover", "recover"),
    ("start-next", "start_next"),
    ("replace-subtasks", "replace_subtasks"),
];

#[utoipa::path(post, path = "/api/plans/{id}/{action}", tag = "plans",
    params(("id" = String, Path, description = "plan UUID"),
        ("action" = String, Path, description = "approve {comment?} | reject {comment} | submit | pause | resume | finish {state: done|failed|abandoned, outcome} | recover | start-next {count} | replace-subtasks {subtasks}")),
    request_body(content = Object, description = "the action's fields, optional expected_version"),
    responses((status = 200, body = Changed), (status = 404), (status = 409), (status = 422)))]
pub async fn plan_action(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path((id, action)): Path<(String, String)>,
    headers: HeaderMap,
    MaybeBody(body): MaybeBody,
) -> Result<Response, ApiError> {
    let op = PLAN_ACTIONS
        .iter()
        .find(|(name, _)| *name == action)
        .map(|(_, op)| *op)
        .ok_or_else(|| ApiError::NotFound(format!("no plan action '{action}'")))?;
    let cmd = command(op, Map::new(), body, &headers)?;
    run(&state, parse_id(&id)?, cmd, &who).await
}

#[derive(Deserialize, ToSchema)]
pub struct NewComment {
    body: String,
    /// The subtask the comment is about, if any.
    subtask: Option<u32>,
}

#[utoipa::path(post, path = "/api/plans/{id}/comments", tag = "comments",
    params(("id" = String, Path, description = "plan UUID")), request_body = NewComment,
    responses((status = 200, body = Changed), (status = 422)))]
pub async fn add_comment(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Body(c): Body<NewComment>,
) -> Result<Response, ApiError> {
    let cmd = Command::from(plan_engine::Op::Comment {
        subtask: c.subtask.map(plan_engine::SubtaskId),
        body: c.body,
    });
    run(&state, parse_id(&id)?, cmd, &who).await
}

#[utoipa::path(get, path = "/api/plans/{id}/comments", tag = "comments",
    params(("id" = String, Path, description = "plan UUID")),
    responses((status = 200, body = Vec<StoredComment>)))]
pub async fn list_comments(
    State(state): State<ApiState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<StoredComment>>, ApiError> {
    Ok(Json(state.service.comments(parse_id(&id)?).await?))
}

#[derive(Deserialize, IntoParams)]
pub struct EventsQuery {
    /// Rows after this seq (0 for the start).
    after: Option<i64>,
    /// At most 1000; 200 by default.
    limit: Option<u32>,
}

#[derive(Serialize, ToSchema)]
pub struct EventPage {
    pub events: Vec<StoredEvent>,
    /// Pass as `after` for the next page; absent on the last page.
    pub next_after: Option<i64>,
}

#[utoipa::path(get, path = "/api/plans/{id}/events", tag = "plans",
    params(("id" = String, Path, description = "plan UUID"), EventsQuery),
    responses((status = 200, body = EventPage)))]
pub async fn list_events(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    Query(q): Query<EventsQuery>,
) -> Result<Json<EventPage>, ApiError> {
    let limit = q.limit.unwrap_or(200).clamp(1, 1000);
    let events = state
        .service
        .events(parse_id(&id)?, q.after.unwrap_or(0), limit)
        .await?;
    let next_after = (events.len() == limit as usize)
        .then(|| events.last().map(|e| e.seq))
        .flatten();
    Ok(Json(EventPage { events, next_after }))
}

#[derive(Deserialize, IntoParams)]
pub struct HintQuery {
    /// en (default) or zh.
    lang: Option<String>,
    /// Whose tool names the hint uses: canonical (default), planmanager, openmanus, agentscope.
    dialect: Option<String>,
    /// true: list every subtask instead of the bounded window.
    full: Option<bool>,
}

#[utoipa::path(get, path = "/api/plans/{id}/hint", tag = "plans",
    params(("id" = String, Path, description = "plan UUID"), HintQuery),
    responses((status = 200, description = "the hint text", content_type = "text/plain")))]
pub async fn hint(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    Query(q): Query<HintQuery>,
) -> Result<String, ApiError> {
    let opts = HintOptions {
        lang: parse_or(q.lang.as_deref(), Lang::parse, "lang", "en or zh")?.unwrap_or_default(),
        dialect: parse_or(
            q.dialect.as_deref(),
            Dialect::parse,
            "dialect",
            "canonical, planmanager, openmanus or agentscope",
        )?
        .unwrap_or(Dialect::Canonical),
        full_plan: q.full.unwrap_or(false),
        ..HintOptions::default()
    };
    let id = parse_id(&id)?;
    state
        .service
        .read(id, |p| plan_engine::hint(Some(p), &opts))
        .await
        .ok_or_else(|| ApiError::NotFound(format!("no plan has id {id}")))
}

pub fn parse_or<T>(
    text: Option<&str>,
    parse: fn(&str) -> Option<T>,
    what: &str,
    allowed: &str,
) -> Result<Option<T>, ApiError> {
    match text {
        None => Ok(None),
        Some(t) => parse(t)
            .map(Some)
            .ok_or_else(|| ApiError::BadRequest(format!("{what} must be {allowed}, not '{t}'"))),
    }
}

#[derive(Deserialize, IntoParams)]
pub struct ExportQuery {
    /// json (default, round-trips through import), markdown or mermaid.
    format: Option<String>,
}

#[utoipa::path(get, path = "/api/plans/{id}/export", tag = "plans",
    params(("id" = String, Path, description = "plan UUID"), ExportQuery),
    responses((status = 200, description = "the plan as JSON, Markdown or a Mermaid flowchart")))]
pub async fn export(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    Query(q): Query<ExportQuery>,
) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    let format = q.format.unwrap_or_else(|| "json".into());
    let (content_type, render): (&str, fn(&Plan) -> String) = match format.as_str() {
        "json" => ("application/json", plan_engine::render::export_json),
        "markdown" | "md" => (
            "text/markdown; charset=utf-8",
            plan_engine::render::markdown,
        ),
        "mermaid" => ("text/plain; charset=utf-8", plan_engine::render::mermaid),
        other => {
            return Err(ApiError::BadRequest(format!(
                "format must be json, markdown or mermaid, not '{other}'"
            )))
        }
    };
    let text = state
        .service
        .read(id, render)
        .await
        .ok_or_else(|| ApiError::NotFound(format!("no plan has id {id}")))?;
    Ok(([(axum::http::header::CONTENT_TYPE, content_type)], text).into_response())
}

#[utoipa::path(post, path = "/api/plans/import", tag = "plans",
    request_body(content = Object, description = "a plan as GET /api/plans/{id}/export?format=json gives it"),
    responses((status = 201, body = PlanView), (status = 400), (status = 422)))]
pub async fn import(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Body(body): Body<Value>,
) -> Result<Response, ApiError> {
    let plan = plan_engine::render::import_json(&body.to_string())?;
    let plan = state.service.import(plan, &who.name).await?;
    Ok((StatusCode::CREATED, Json(PlanView::of(plan))).into_response())
}
