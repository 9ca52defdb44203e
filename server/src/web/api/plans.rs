//! The plan routes: each handler extracts typed input, calls the service
//! once and maps the error. Subtask routes are in `subtasks.rs`, the plan
//! actions (approve, pause, …) in `actions.rs`; all of them build the same
//! engine [`Command`] that `/commands` takes whole.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{extract::State, Extension, Json};
use plan_engine::{
    Command, Dialect, Event, HintOptions, Lang, NewPlan, Plan, PlanError, PlanId, PlanQuery,
    Progress, StateFilter, SubtaskId,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use super::bodies::{IntoOp, UpdatePlan};
use super::docs::{CreateErrors, ListErrors, ReadErrors, WriteErrors};
use super::error::{ApiError, Body};
use super::extract::{if_match, Params, PlanRef};
use super::schema::{CommandDoc, NewPlanDoc, PlanDoc};
use super::ApiState;
use crate::auth::{Identity, Role};
use crate::service::ServiceError;
use crate::store::{PlanSummary, StoredComment, StoredEvent};

/// A plan with its progress (counts per state, percent, ready, critical path).
#[derive(Serialize, JsonSchema)]
pub struct PlanView {
    pub plan: Plan,
    pub progress: Progress,
    /// The hex SHA-256 of what the plan says (title, goal, description,
    /// expected outcome, mode, each subtask's name, description, expected
    /// outcome, dependencies and tool): send it with an approval to
    /// approve exactly this.
    pub digest: String,
}

impl PlanView {
    pub fn of(plan: Plan) -> PlanView {
        let progress = plan.progress();
        let digest = run_model::plan_digest(&plan);
        PlanView {
            plan,
            progress,
            digest,
        }
    }
}

/// The plan after a change, and the events that recorded it.
#[derive(Serialize, JsonSchema)]
pub struct Changed {
    pub plan: Plan,
    pub progress: Progress,
    pub events: Vec<Event>,
}

/// Runs one command on one plan and answers the plan after it. `subject`
/// is the subtask the route's path names, if any: only that one missing is
/// a 404; an unknown subtask named in the body (a dependency, say) is a 422
/// like any other fault of the body.
pub(super) async fn run(
    state: &ApiState,
    id: PlanId,
    command: Command,
    who: &Identity,
    subject: Option<SubtaskId>,
) -> Result<Json<Changed>, ApiError> {
    let (plan, events) = match state.plans.command(id, &command, &who.actor()).await {
        Ok(done) => done,
        Err(ServiceError::Plan(e @ PlanError::UnknownSubtask { id: missing, .. }))
            if Some(missing) != subject =>
        {
            return Err(body_fault(e.into()));
        }
        Err(ServiceError::Plan(e @ PlanError::UnknownIndex { .. })) => {
            return Err(body_fault(e.into()));
        }
        Err(e) => return Err(e.into()),
    };
    let progress = plan.progress();
    Ok(Json(Changed {
        plan,
        progress,
        events,
    }))
}

/// An unknown subtask that the URL does not name (a dependency in the
/// body, or any id in a new plan) is a fault of the body: a 422, not a 404.
fn body_fault(e: ApiError) -> ApiError {
    match e {
        ApiError::NotFound(message) => ApiError::Refused {
            code: super::error::ErrorCode::NotFound,
            message,
        },
        e => e,
    }
}

pub(super) fn no_plan(id: PlanId) -> ApiError {
    PlanError::UnknownPlan { id }.into()
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// A plan state, or `active` (approved, running or paused: what people
    /// call running) or `finished` (done, failed or abandoned).
    #[param(value_type = Option<String>, pattern = "^(draft|awaiting_approval|approved|running|paused|done|failed|abandoned|active|finished)$")]
    state: Option<StateFilter>,
    /// manual, simple, complex or emergent.
    #[param(value_type = Option<String>, pattern = "^(manual|simple|complex|emergent)$")]
    mode: Option<plan_engine::Mode>,
    /// Text the title contains (case-insensitive).
    q: Option<String>,
    /// 1 to 200; 50 by default.
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
    #[param(minimum = 0)]
    offset: Option<i32>,
}

#[derive(Serialize, JsonSchema)]
pub struct PlanPage {
    pub plans: Vec<PlanSummary>,
    /// Pass as `offset` for the next page; absent on the last page.
    pub next_offset: Option<u32>,
}

#[utoipa::path(get, path = "/plans", params(ListQuery), tag = "plans",
    responses((status = 200, body = PlanPage), ListErrors))]
pub async fn list_plans(
    State(state): State<ApiState>,
    Params(q): Params<ListQuery>,
) -> Result<Json<PlanPage>, ApiError> {
    let limit = q.limit.unwrap_or(super::extract::PAGE_DEFAULT);
    if !(1..=super::extract::PAGE_LIMIT).contains(&limit) {
        return Err(ApiError::BadRequest(format!(
            "limit must be between 1 and {}, not {limit}",
            super::extract::PAGE_LIMIT
        )));
    }
    let offset = u32::try_from(q.offset.unwrap_or(0))
        .map_err(|_| ApiError::BadRequest("offset must be 0 or more".into()))?;
    let query = PlanQuery {
        state: q.state,
        mode: q.mode,
        text: q.q.unwrap_or_default(),
    };
    let (plans, more) = state
        .plans
        .list(&query, offset as usize, limit as usize, PlanSummary::of)
        .await;
    Ok(Json(PlanPage {
        plans,
        next_offset: more.then(|| offset.saturating_add(limit)),
    }))
}

#[utoipa::path(post, path = "/plans", tag = "plans",
    request_body = NewPlanDoc,
    responses((status = 201, body = PlanView), CreateErrors))]
pub async fn create_plan(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Body(mut spec): Body<NewPlan>,
) -> Result<Response, ApiError> {
    // The server chooses plan ids.
    spec.id = uuid::Uuid::new_v4();
    let plan = state
        .plans
        .create(spec, &who.actor())
        .await
        .map_err(|e| body_fault(e.into()))?;
    Ok((StatusCode::CREATED, Json(PlanView::of(plan))).into_response())
}

#[utoipa::path(get, path = "/plans/{id}", tag = "plans",
    params(("id" = uuid::Uuid, Path, description = "plan UUID")),
    responses((status = 200, body = PlanView), ReadErrors))]
pub async fn get_plan(
    State(state): State<ApiState>,
    PlanRef(id): PlanRef,
) -> Result<Json<PlanView>, ApiError> {
    // Copied under the lock (a pointer per subtask), measured outside it.
    let view = state.plans.get(id).await.map(PlanView::of);
    view.map(Json).ok_or_else(|| no_plan(id))
}

#[utoipa::path(patch, path = "/plans/{id}", tag = "plans",
    params(("id" = uuid::Uuid, Path, description = "plan UUID")),
    request_body = UpdatePlan,
    responses((status = 200, body = Changed), WriteErrors))]
pub async fn update_plan(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    PlanRef(id): PlanRef,
    headers: HeaderMap,
    Body(body): Body<UpdatePlan>,
) -> Result<Json<Changed>, ApiError> {
    let command = body.into_command(None, if_match(&headers)?)?;
    run(&state, id, command, &who, None).await
}

#[utoipa::path(delete, path = "/plans/{id}", tag = "plans",
    params(("id" = uuid::Uuid, Path, description = "plan UUID")),
    responses((status = 204, description = "deleted from listings; its event log is kept and stays readable"), WriteErrors))]
pub async fn delete_plan(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    PlanRef(id): PlanRef,
) -> Result<StatusCode, ApiError> {
    who.require(Role::Admin)?;
    state.plans.delete(id, &who.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/plans/{id}/commands", tag = "plans",
    params(("id" = uuid::Uuid, Path, description = "plan UUID")),
    request_body(content = CommandDoc, description = "any engine command whole: {\"op\": \"set_subtask_state\", \"id\": 2, \"state\": \"done\", \"note\": \"…\", \"expected_version\": 7}"),
    responses((status = 200, body = Changed), WriteErrors))]
pub async fn run_command(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    PlanRef(id): PlanRef,
    headers: HeaderMap,
    Body(mut command): Body<Command>,
) -> Result<Json<Changed>, ApiError> {
    if let Some(version) = if_match(&headers)? {
        command.expected_version = Some(version);
    }
    run(&state, id, command, &who, None).await
}

#[utoipa::path(get, path = "/plans/{id}/comments", tag = "comments",
    params(("id" = uuid::Uuid, Path, description = "plan UUID")),
    responses((status = 200, body = Vec<StoredComment>), ReadErrors))]
pub async fn list_comments(
    State(state): State<ApiState>,
    PlanRef(id): PlanRef,
) -> Result<Json<Vec<StoredComment>>, ApiError> {
    if state.plans.read(id, |_| ()).await.is_none() {
        return Err(no_plan(id));
    }
    Ok(Json(state.plans.comments(id).await?))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Rows after this seq (0 for the start).
    #[param(minimum = 0)]
    after: Option<i64>,
    /// 1 to 1000; 200 by default.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
pub struct EventPage {
    pub events: Vec<StoredEvent>,
    /// Pass as `after` for the next page; absent on the last page.
    pub next_after: Option<i64>,
}

#[utoipa::path(get, path = "/plans/{id}/events", tag = "plans",
    params(("id" = uuid::Uuid, Path, description = "plan UUID"), EventsQuery),
    responses((status = 200, body = EventPage, description = "the plan's log, also after the plan was deleted (its last row is then `plan_deleted`)"), ReadErrors))]
pub async fn list_events(
    State(state): State<ApiState>,
    PlanRef(id): PlanRef,
    Params(q): Params<EventsQuery>,
) -> Result<Json<EventPage>, ApiError> {
    let limit = q.limit.unwrap_or(200);
    if !(1..=super::extract::LOG_PAGE_LIMIT).contains(&limit) {
        return Err(ApiError::BadRequest(format!(
            "limit must be between 1 and {}, not {limit}",
            super::extract::LOG_PAGE_LIMIT
        )));
    }
    let after = q.after.unwrap_or(0);
    if after < 0 {
        return Err(ApiError::BadRequest(format!(
            "after must be a log seq (0 or more), not {after}"
        )));
    }
    let events = state.plans.events(id, after, limit).await?;
    if events.is_empty() && !state.plans.ever_existed(id).await? {
        return Err(no_plan(id));
    }
    let next_after = (events.len() == limit as usize)
        .then(|| events.last().map(|e| e.seq))
        .flatten();
    Ok(Json(EventPage { events, next_after }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HintQuery {
    /// en (default) or zh.
    #[param(value_type = Option<String>, pattern = "^(en|zh)$")]
    lang: Option<Lang>,
    /// Whose tool names the hint uses: canonical (default), planmanager,
    /// openmanus or agentscope.
    #[param(value_type = Option<String>, pattern = "^(canonical|planmanager|openmanus|agentscope)$")]
    dialect: Option<Dialect>,
    /// true: list every subtask instead of the bounded window.
    full: Option<bool>,
}

#[utoipa::path(get, path = "/plans/{id}/hint", tag = "plans",
    params(("id" = uuid::Uuid, Path, description = "plan UUID"), HintQuery),
    responses((status = 200, description = "the hint text", content_type = "text/plain"), ReadErrors))]
pub async fn hint(
    State(state): State<ApiState>,
    PlanRef(id): PlanRef,
    Params(q): Params<HintQuery>,
) -> Result<String, ApiError> {
    let opts = HintOptions {
        lang: q.lang.unwrap_or_default(),
        dialect: q.dialect.unwrap_or(Dialect::Canonical),
        full_plan: q.full.unwrap_or(false),
        ..HintOptions::default()
    };
    state
        .plans
        .read(id, |p| plan_engine::hint(Some(p), &opts))
        .await
        .ok_or_else(|| no_plan(id))
}

plan_engine::wire_enum! {
    /// The renderings of a plan.
    #[derive(Clone, Copy, Deserialize, utoipa::ToSchema)]
    pub enum ExportFormat: "export format (json, markdown or mermaid)" {
        /// Round-trips through `POST /api/plans/import`.
        Json = "json",
        Markdown = "markdown",
        /// A flowchart of the dependency graph.
        Mermaid = "mermaid",
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// json by default.
    #[param(inline)]
    format: Option<ExportFormat>,
}

#[utoipa::path(get, path = "/plans/{id}/export", tag = "plans",
    params(("id" = uuid::Uuid, Path, description = "plan UUID"), ExportQuery),
    responses((status = 200, description = "the plan as JSON, Markdown or a Mermaid flowchart",
        content((Object = "application/json"), (String = "text/markdown"), (String = "text/plain"))), ReadErrors))]
pub async fn export(
    State(state): State<ApiState>,
    PlanRef(id): PlanRef,
    Params(q): Params<ExportQuery>,
) -> Result<Response, ApiError> {
    let (content_type, render): (&str, fn(&Plan) -> String) =
        match q.format.unwrap_or(ExportFormat::Json) {
            ExportFormat::Json => ("application/json", plan_engine::render::export_json),
            ExportFormat::Markdown => (
                "text/markdown; charset=utf-8",
                plan_engine::render::markdown,
            ),
            ExportFormat::Mermaid => ("text/plain; charset=utf-8", plan_engine::render::mermaid),
        };
    let text = state
        .plans
        .read(id, render)
        .await
        .ok_or_else(|| no_plan(id))?;
    Ok(([(axum::http::header::CONTENT_TYPE, content_type)], text).into_response())
}

#[utoipa::path(post, path = "/plans/import", tag = "plans",
    request_body(content = PlanDoc, description = "a plan as GET /api/plans/{id}/export?format=json gives it"),
    responses((status = 201, body = PlanView), CreateErrors))]
pub async fn import(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Body(body): Body<serde_json::Value>,
) -> Result<Response, ApiError> {
    // A body that is JSON but not a plan is a 422 `invalid` saying which
    // field is wrong, like every other way an import can fail its checks.
    let plan =
        plan_engine::render::import_json(&body.to_string()).map_err(|e| body_fault(e.into()))?;
    let plan = state
        .plans
        .import(plan, &who.actor())
        .await
        .map_err(|e| body_fault(e.into()))?;
    Ok((StatusCode::CREATED, Json(PlanView::of(plan))).into_response())
}
