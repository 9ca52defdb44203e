//! The agents' door: a dialect's tool schemas, and tool calls with the
//! model's JSON arguments. A call without a plan id works on the session's
//! active plan, as the seeds' tools do.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use plan_engine::{Dialect, HintOptions, Lang};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::IntoParams;

use super::error::{ApiError, MaybeBody};
use super::plans::parse_or;
use super::ApiState;
use crate::auth::Identity;

/// The header that names the agent session (its own active plan).
pub const SESSION_HEADER: &str = "x-planboard-session";

fn dialect(text: &str) -> Result<Dialect, ApiError> {
    Dialect::parse(text).ok_or_else(|| {
        ApiError::NotFound(format!(
            "no dialect '{text}'; the dialects are canonical, planmanager, openmanus, agentscope"
        ))
    })
}

#[derive(Deserialize, IntoParams)]
pub struct ToolsQuery {
    /// canonical (default), planmanager, openmanus or agentscope.
    dialect: Option<String>,
}

#[utoipa::path(get, path = "/api/tools", tag = "tools", params(ToolsQuery),
    responses((status = 200, description = "OpenAI function-calling tool specs: [{type: function, function: {name, description, parameters}}]")))]
pub async fn list_tools(Query(q): Query<ToolsQuery>) -> Result<Json<Vec<Value>>, ApiError> {
    let dialect = dialect(q.dialect.as_deref().unwrap_or("canonical"))?;
    Ok(Json(plan_engine::tools(dialect)))
}

#[derive(Deserialize, IntoParams)]
pub struct SessionQuery {
    /// The agent session key; the `X-Planboard-Session` header works too.
    /// Without either, the caller's name is the session.
    session: Option<String>,
    /// For the hint route: en (default) or zh.
    lang: Option<String>,
    /// For the hint route: true repeats the whole hint even when the plan is
    /// unchanged since this session's previous hint.
    fresh: Option<bool>,
}

fn session(q: &SessionQuery, headers: &HeaderMap, who: &Identity) -> Result<String, ApiError> {
    let given = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| q.session.clone())
        .filter(|s| !s.trim().is_empty());
    let session = given.unwrap_or_else(|| format!("user:{}", who.name));
    if session.len() > 200 {
        return Err(ApiError::BadRequest(
            "the session key is longer than 200 characters".into(),
        ));
    }
    Ok(session)
}

#[utoipa::path(post, path = "/api/tools/{dialect}/{tool}", tag = "tools",
    params(("dialect" = String, Path), ("tool" = String, Path), SessionQuery),
    request_body(content = Object, description = "the model's arguments for the tool, as an object or as a JSON string"),
    responses(
        (status = 200, description = "{ok: true, text, plan_id, version}: give `text` to the model"),
        (status = 422, description = "{ok: false, text, error}: the call was refused; give `text` to the model, it says what to do")))]
pub async fn call_tool(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path((dialect_name, tool)): Path<(String, String)>,
    Query(q): Query<SessionQuery>,
    headers: HeaderMap,
    MaybeBody(args): MaybeBody,
) -> Result<Response, ApiError> {
    let dialect = dialect(&dialect_name)?;
    let session = session(&q, &headers, &who)?;
    let result = state
        .service
        .tool(dialect, &tool, &args, &session, &who.name)
        .await?;
    let status = if result.ok {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    let body = json!({
        "ok": result.ok,
        "text": result.text,
        "error": result.error,
        "plan_id": result.plan_id,
        "version": result.version,
        "session": session,
    });
    Ok((status, Json(body)).into_response())
}

#[utoipa::path(get, path = "/api/tools/{dialect}/hint", tag = "tools",
    params(("dialect" = String, Path), SessionQuery),
    responses((status = 200, description = "the hint for the session's next step, in the dialect's tool names; one line when the plan is unchanged since this session's previous hint (unless fresh=true)", content_type = "text/plain")))]
pub async fn session_hint(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Path(dialect_name): Path<String>,
    Query(q): Query<SessionQuery>,
    headers: HeaderMap,
) -> Result<String, ApiError> {
    let dialect = dialect(&dialect_name)?;
    let session = session(&q, &headers, &who)?;
    let opts = HintOptions {
        lang: parse_or(q.lang.as_deref(), Lang::parse, "lang", "en or zh")?.unwrap_or_default(),
        dialect,
        ..HintOptions::default()
    };
    Ok(state
        .service
        .session_hint(&session, &opts, q.fresh.unwrap_or(false))
        .await)
}
