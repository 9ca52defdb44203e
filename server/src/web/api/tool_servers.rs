//! MCP servers over HTTP: anyone may see them and their state (never a
//! token or an environment value, and a command's arguments, which may
//! hold a password, only when an admin looks); admins add, change, test and remove
//! the ones added here (those of `PLANBOARD_MCP_SERVERS` change with the
//! file). Adding a stdio server lets an admin start a program on the
//! server's machine: that is what the admin role is for.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::{Extension, Json};
use run_model::ToolServerView;

use super::docs::{ListErrors, WriteErrors};
use super::error::{ApiError, Body};
use super::extract::path_param;
use super::ApiState;
use crate::auth::{Identity, Role};
use crate::tool_servers::{valid_name, ToolServerSpec};

/// The `{name}` of a server route.
pub struct ServerName(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ServerName {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let name = path_param(parts, "name").await?;
        if valid_name(&name) {
            Ok(ServerName(name))
        } else {
            Err(ApiError::NotFound(format!(
                "no MCP server is named '{name}'"
            )))
        }
    }
}

/// Every MCP server, the file's and the added ones, with its state; a
/// command's arguments only for admins (others get their count).
#[utoipa::path(get, path = "/tool-servers", tag = "tools",
    responses((status = 200, body = Vec<super::schema::ToolServerDoc>), ListErrors))]
pub async fn list_servers(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
) -> Json<Vec<ToolServerView>> {
    let views = state.tool_servers.views();
    if who.role >= Role::Admin {
        return Json(views);
    }
    Json(
        views
            .into_iter()
            .map(ToolServerView::without_args)
            .collect(),
    )
}

/// Adds a server, connects it and offers its tools to runs started from
/// now on. It is kept even when it does not connect (its error is shown;
/// fix it with a change, or test it again later).
#[utoipa::path(post, path = "/tool-servers", tag = "tools", request_body = ToolServerSpec,
    responses((status = 201, body = super::schema::ToolServerDoc), WriteErrors))]
pub async fn add_server(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Body(spec): Body<ToolServerSpec>,
) -> Result<(StatusCode, Json<ToolServerView>), ApiError> {
    who.require(Role::Admin)?;
    let view = state.tool_servers.add(spec, &who.actor()).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Changes an added server (a token or env left out keeps the stored
/// one) and connects it again.
#[utoipa::path(put, path = "/tool-servers/{name}", tag = "tools", request_body = ToolServerSpec,
    params(("name" = String, Path, description = "the server's name")),
    responses((status = 200, body = super::schema::ToolServerDoc), WriteErrors))]
pub async fn change_server(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    ServerName(name): ServerName,
    Body(spec): Body<ToolServerSpec>,
) -> Result<Json<ToolServerView>, ApiError> {
    who.require(Role::Admin)?;
    Ok(Json(
        state.tool_servers.change(&name, spec, &who.actor()).await?,
    ))
}

/// Connects a server again (after its program or service was fixed):
/// its state now.
#[utoipa::path(post, path = "/tool-servers/{name}/test", tag = "tools",
    params(("name" = String, Path, description = "the server's name")),
    responses((status = 200, body = super::schema::ToolServerDoc), WriteErrors))]
pub async fn test_server(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    ServerName(name): ServerName,
) -> Result<Json<ToolServerView>, ApiError> {
    who.require(Role::Admin)?;
    Ok(Json(state.tool_servers.test(&name).await?))
}

/// Removes an added server: its tools are offered to no new run.
#[utoipa::path(delete, path = "/tool-servers/{name}", tag = "tools",
    params(("name" = String, Path, description = "the server's name")),
    responses((status = 204, description = "removed"), WriteErrors))]
pub async fn remove_server(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    ServerName(name): ServerName,
) -> Result<StatusCode, ApiError> {
    who.require(Role::Admin)?;
    state.tool_servers.delete(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}
