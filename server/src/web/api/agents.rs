//! ACP agents over HTTP (`/api/agents`), as the Tools page shows them:
//! anyone may see them (never an environment value, and the arguments,
//! which may hold a password, only when an admin looks); admins add,
//! change, test and remove them. Adding one lets an admin start a program
//! on the server's machine for every run given to it: that is what the
//! admin role is for. A run goes to one with `POST /api/runs {"task": …,
//! "agent": name}`.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::{Extension, Json};
use run_model::AcpAgentView;

use super::docs::{ListErrors, WriteErrors};
use super::error::{ApiError, Body};
use super::extract::path_param;
use super::ApiState;
use crate::acp_agents::AcpAgentSpec;
use crate::auth::{Identity, Role};

/// The `{name}` of an agent route.
pub struct AgentName(pub String);

impl<S: Send + Sync> FromRequestParts<S> for AgentName {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let name = path_param(parts, "name").await?;
        if run_model::valid_agent_name(&name) {
            Ok(AgentName(name))
        } else {
            Err(ApiError::NotFound(format!(
                "no ACP agent is named '{name}'"
            )))
        }
    }
}

/// Every ACP agent with what its last check said; the arguments only for
/// admins (others get their count).
#[utoipa::path(get, path = "/agents", tag = "runs",
    responses((status = 200, body = Vec<super::schema::AcpAgentDoc>), ListErrors))]
pub async fn list_agents(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
) -> Json<Vec<AcpAgentView>> {
    let views = state.acp_agents.views();
    if who.role >= Role::Admin {
        return Json(views);
    }
    Json(views.into_iter().map(AcpAgentView::without_args).collect())
}

/// Adds an agent and checks it (started in an empty folder, asked
/// `initialize`, stopped). It is kept even when the check fails (its error
/// is shown; fix it with a change, or test it again later).
#[utoipa::path(post, path = "/agents", tag = "runs", request_body = AcpAgentSpec,
    responses((status = 201, body = super::schema::AcpAgentDoc), WriteErrors))]
pub async fn add_agent(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Body(spec): Body<AcpAgentSpec>,
) -> Result<(StatusCode, Json<AcpAgentView>), ApiError> {
    who.require(Role::Admin)?;
    let view = state.acp_agents.add(spec, &who.actor()).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Changes an agent (an env left out keeps the stored one) and checks it.
#[utoipa::path(put, path = "/agents/{name}", tag = "runs", request_body = AcpAgentSpec,
    params(("name" = String, Path, description = "the agent's name")),
    responses((status = 200, body = super::schema::AcpAgentDoc), WriteErrors))]
pub async fn change_agent(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    AgentName(name): AgentName,
    Body(spec): Body<AcpAgentSpec>,
) -> Result<Json<AcpAgentView>, ApiError> {
    who.require(Role::Admin)?;
    Ok(Json(
        state.acp_agents.change(&name, spec, &who.actor()).await?,
    ))
}

/// Checks an agent again: what it said it is, or why it did not answer.
#[utoipa::path(post, path = "/agents/{name}/test", tag = "runs",
    params(("name" = String, Path, description = "the agent's name")),
    responses((status = 200, body = super::schema::AcpAgentDoc), WriteErrors))]
pub async fn test_agent(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    AgentName(name): AgentName,
) -> Result<Json<AcpAgentView>, ApiError> {
    who.require(Role::Admin)?;
    Ok(Json(state.acp_agents.test(&name).await?))
}

/// Removes an agent: no new run can be given to it.
#[utoipa::path(delete, path = "/agents/{name}", tag = "runs",
    params(("name" = String, Path, description = "the agent's name")),
    responses((status = 204, description = "removed"), WriteErrors))]
pub async fn remove_agent(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    AgentName(name): AgentName,
) -> Result<StatusCode, ApiError> {
    who.require(Role::Admin)?;
    state.acp_agents.delete(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}
