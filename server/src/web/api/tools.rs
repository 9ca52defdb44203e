//! The agents' door: a dialect's tool schemas, and tool calls with the
//! model's JSON arguments. A call without a plan id works on the session's
//! active plan, as the seeds' tools do.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use plan_engine::{Dialect, HintOptions, Lang};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::IntoParams;

use super::docs::{ListErrors, ReadErrors, ToolErrors, WriteErrors};
use super::error::{ApiError, Body, MaybeBody};
use super::extract::Params;
use super::ApiState;
use crate::auth::{Identity, Role};
use crate::service::ToolRights;
use crate::store::SessionSettings;

/// The header that names the agent session (its own active plan).
pub const SESSION_HEADER: &str = "x-planboard-session";

/// The dialect of a route, by its exact name (the document lists them).
fn dialect(text: &str) -> Result<Dialect, ApiError> {
    let found = Dialect::ALL.into_iter().find(|d| d.as_str() == text);
    found.ok_or_else(|| {
        ApiError::NotFound(format!(
            "no dialect '{text}'; the dialects are canonical, planmanager, openmanus, agentscope"
        ))
    })
}

/// The `{dialect}` of a tool route, for the document.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct DialectPath {
    /// canonical, planmanager, openmanus or agentscope.
    #[param(pattern = "^(canonical|planmanager|openmanus|agentscope)$")]
    #[allow(dead_code)]
    dialect: String,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ToolsQuery {
    /// canonical (default), planmanager, openmanus or agentscope.
    #[param(value_type = Option<String>, pattern = "^(canonical|planmanager|openmanus|agentscope)$")]
    dialect: Option<Dialect>,
}

#[utoipa::path(get, path = "/tools", tag = "tools", params(ToolsQuery),
    responses((status = 200, body = Vec<Object>, description = "OpenAI function-calling tool specs: [{type: function, function: {name, description, parameters}}]"), ListErrors))]
pub async fn list_tools(Params(q): Params<ToolsQuery>) -> Json<Vec<Value>> {
    Json(plan_engine::tools(q.dialect.unwrap_or(Dialect::Canonical)))
}

/// What a tool call answers, refused or not: give `text` to the model.
#[derive(Serialize, JsonSchema)]
pub struct ToolReply {
    pub ok: bool,
    /// What happened, or what to do instead: for the model.
    pub text: String,
    /// The refusal's code when `ok` is false.
    pub error: Option<String>,
    /// The plan the call worked on, if any.
    pub plan_id: Option<plan_engine::PlanId>,
    /// That plan's version after the call.
    pub version: Option<u64>,
    /// The session whose active plan the call used.
    pub session: String,
}

/// The longest agent session key, in characters.
pub const SESSION_KEY_CHARS: usize = 200;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SessionQuery {
    /// The agent session key; the `X-Planboard-Session` header works too.
    /// Without either, the caller's name is the session.
    #[param(max_length = 200)]
    session: Option<String>,
    /// For the hint routes: en (default) or zh.
    #[param(value_type = Option<String>, pattern = "^(en|zh)$")]
    lang: Option<Lang>,
    /// For `POST …/hint`: true repeats the whole hint even when the plan is
    /// unchanged since this session's previous hint.
    fresh: Option<bool>,
    /// For `GET …/hint`: the plan version of the last hint the caller showed
    /// its model; if the plan is still there, the hint is one line.
    #[param(minimum = 0)]
    since_version: Option<i64>,
    /// For `POST …/{tool}`: a plan this call creates waits for the user's
    /// go-ahead (`need_user_confirm`), over the session's setting; the
    /// seeds' dialects have no argument for it.
    need_user_confirm: Option<bool>,
    /// For `POST …/{tool}`: the most subtasks a plan this call creates may
    /// hold (1 to 5000), over the session's setting.
    #[param(minimum = 1, maximum = 5000)]
    max_subtasks: Option<u32>,
}

impl SessionQuery {
    /// The plan settings this call names, checked as a session's are.
    fn call_settings(&self) -> Result<SessionSettings, ApiError> {
        let settings = SessionSettings {
            need_user_confirm: self.need_user_confirm,
            max_subtasks: self.max_subtasks,
        };
        settings.check().map_err(ApiError::BadRequest)?;
        Ok(settings)
    }
}

/// The plan version a hint describes, so a client can pass it back as
/// `since_version`.
pub const PLAN_VERSION_HEADER: &str = "x-plan-version";

/// The session key, and whether the caller named it (an agent session) or
/// it fell back to the caller's name.
pub fn session_key(
    query: Option<&str>,
    headers: &HeaderMap,
    who: &Identity,
) -> Result<(String, bool), ApiError> {
    let given = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .or(query)
        .map(str::to_string)
        .filter(|s| !s.trim().is_empty());
    let named = given.is_some();
    let session = given.unwrap_or_else(|| format!("user:{}", who.name));
    if session.chars().count() > SESSION_KEY_CHARS {
        return Err(ApiError::BadRequest(format!(
            "the session key is longer than {SESSION_KEY_CHARS} characters"
        )));
    }
    Ok((session, named))
}

#[utoipa::path(post, path = "/tools/{dialect}/{tool}", tag = "tools",
    params(DialectPath, ("tool" = String, Path, description = "the tool's name in that dialect (GET /api/tools lists them)"), SessionQuery),
    request_body(content = Option<serde_json::Value>, description = "the model's arguments for the tool, as an object or as a JSON string"),
    responses(
        (status = 200, body = ToolReply, description = "done: give `text` to the model"),
        (status = 422, body = ToolReply, description = "refused (`ok: false`): give `text` to the model, it says what to do"),
        ToolErrors))]
pub async fn call_tool(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path((dialect_name, tool)): Path<(String, String)>,
    Params(q): Params<SessionQuery>,
    headers: HeaderMap,
    MaybeBody(args): MaybeBody,
) -> Result<Response, ApiError> {
    let dialect = dialect(&dialect_name)?;
    let (session, named) = session_key(q.session.as_deref(), &headers, &who)?;
    let settings = q.call_settings()?;
    // An agent session that did not name its agent is recorded by its key.
    let who = if named { who.acting_as(&session) } else { who };
    let result = state
        .plans
        .tool(
            dialect,
            &tool,
            &args,
            &session,
            &who.actor(),
            rights(&who),
            settings,
        )
        .await?;
    let status = if result.ok {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    let body = ToolReply {
        ok: result.ok,
        text: result.text,
        error: result.error.map(|e| e.to_string()),
        plan_id: result.plan_id,
        version: result.version,
        session,
    };
    Ok((status, Json(body)).into_response())
}

/// What the caller's role lets a tool call do (the API's rules, for
/// every dialect and MCP alike).
pub fn rights(who: &Identity) -> ToolRights {
    if who.role >= Role::Admin {
        ToolRights::Admin
    } else {
        ToolRights::Operator
    }
}

fn hint_options(dialect_name: &str, q: &SessionQuery) -> Result<HintOptions, ApiError> {
    // The hint routes share the query: a plan rule out of its range is
    // refused here too, not silently ignored.
    q.call_settings()?;
    Ok(HintOptions {
        lang: q.lang.unwrap_or_default(),
        dialect: dialect(dialect_name)?,
        since_version: match q.since_version {
            Some(v) => Some(u64::try_from(v).map_err(|_| {
                ApiError::BadRequest(format!("since_version must be 0 or more, not {v}"))
            })?),
            None => None,
        },
        ..HintOptions::default()
    })
}

fn hint_response((text, version): (String, Option<u64>)) -> Response {
    let mut response = text.into_response();
    if let Some(version) = version {
        response
            .headers_mut()
            .insert(PLAN_VERSION_HEADER, HeaderValue::from(version));
    }
    response
}

#[utoipa::path(get, path = "/tools/{dialect}/hint", tag = "tools",
    params(DialectPath, SessionQuery),
    responses((status = 200, content_type = "text/plain",
        headers(("x-plan-version" = u64, description = "the version of the plan the hint describes (absent without a plan)")),
        description = "the hint for the session's next step, in the dialect's tool names; one line when `since_version` is the plan's current version. Reads only: nothing is remembered"), ReadErrors))]
pub async fn session_hint(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path(dialect_name): Path<String>,
    Params(q): Params<SessionQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let opts = hint_options(&dialect_name, &q)?;
    let (session, _) = session_key(q.session.as_deref(), &headers, &who)?;
    Ok(hint_response(
        state.plans.session_hint(&session, &opts).await?,
    ))
}

#[utoipa::path(post, path = "/tools/{dialect}/hint", tag = "tools",
    params(DialectPath, SessionQuery),
    responses((status = 200, content_type = "text/plain",
        headers(("x-plan-version" = u64, description = "the version of the plan the hint describes (absent without a plan)")),
        description = "the hint for the session's next step, remembered for this session: one line when the plan is unchanged since this session's previous POSTed hint (unless fresh=true)"), ReadErrors))]
pub async fn session_hint_remembered(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path(dialect_name): Path<String>,
    Params(q): Params<SessionQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let opts = hint_options(&dialect_name, &q)?;
    let (session, _) = session_key(q.session.as_deref(), &headers, &who)?;
    Ok(hint_response(
        state
            .plans
            .session_hint_remembered(&session, &opts, q.fresh.unwrap_or(false))
            .await?,
    ))
}

/// The session of a settings route.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SettingsQuery {
    /// The agent session key; the `X-Planboard-Session` header works too.
    /// Without either, the caller's name is the session.
    #[param(max_length = 200)]
    session: Option<String>,
}

impl SettingsQuery {
    fn session(&self, headers: &HeaderMap, who: &Identity) -> Result<String, ApiError> {
        Ok(session_key(self.session.as_deref(), headers, who)?.0)
    }
}

#[utoipa::path(get, path = "/session/settings", tag = "tools",
    params(SettingsQuery),
    description = "an agent session's settings: need_user_confirm and max_subtasks (null: not set)",
    responses((status = 200, body = SessionSettings), ListErrors))]
pub async fn session_settings(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Params(q): Params<SettingsQuery>,
    headers: HeaderMap,
) -> Result<Json<SessionSettings>, ApiError> {
    let session = q.session(&headers, &who)?;
    Ok(Json(state.plans.session_settings(&session).await?))
}

#[utoipa::path(put, path = "/session/settings", tag = "tools",
    params(SettingsQuery),
    request_body = SessionSettings,
    description = "replaces an agent session's settings (a field left out or null is unset): plans the session creates through the tools take them unless the call sets its own, and its hints state the confirmation and subtask-limit rules",
    responses((status = 200, body = SessionSettings), WriteErrors))]
pub async fn set_session_settings(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Params(q): Params<SettingsQuery>,
    headers: HeaderMap,
    Body(settings): Body<SessionSettings>,
) -> Result<Json<SessionSettings>, ApiError> {
    let session = q.session(&headers, &who)?;
    settings.check().map_err(ApiError::BadRequest)?;
    Ok(Json(
        state.plans.set_session_settings(&session, settings).await?,
    ))
}
