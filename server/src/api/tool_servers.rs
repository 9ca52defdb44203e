//! MCP servers over HTTP: anyone may see them and their state (never a
//! token or an environment value); admins add, change, test and remove
//! the ones added here (those of `PLANBOARD_MCP_SERVERS` change with the
//! file). Adding a stdio server lets an admin start a program on the
//! server's machine: that is what the admin role is for.

use std::collections::BTreeMap;

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::{Extension, Json};
use run_model::{ToolServerView, ToolSource};
use schemars::JsonSchema;
use serde::Deserialize;

use super::docs::{ListErrors, WriteErrors};
use super::error::{ApiError, Body};
use super::extract::path_param;
use super::ApiState;
use crate::auth::{Identity, Role};
use crate::store::StoredMcpServer;

/// An MCP server to add, or what to change of one: a URL (streamable
/// HTTP) or a command (stdio), not both.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolServerSpec {
    /// Letters, digits, `-` and `_`; 1 to 40 (on a change, it must match the
    /// route's).
    #[schemars(length(min = 1, max = 40))]
    pub name: String,
    #[schemars(length(min = 1, max = 2000))]
    pub url: Option<String>,
    /// Sent as `Authorization: Bearer …`; never shown again. Left out on a
    /// change: the stored one is kept.
    #[schemars(length(min = 1, max = 2000))]
    pub token: Option<String>,
    #[schemars(length(min = 1, max = 500))]
    pub command: Option<String>,
    /// At most 32, each at most 1,000 characters.
    #[serde(default)]
    pub args: Vec<String>,
    /// At most 32 variables; their values are never shown again. Left out
    /// on a change: the stored ones are kept.
    pub env: Option<BTreeMap<String, String>>,
}

fn valid_name(name: &str) -> bool {
    (1..=40).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl ToolServerSpec {
    /// The server to store, or why not; `old` is the stored one a change
    /// keeps the token and env of.
    pub fn check(
        self,
        who: &str,
        old: Option<&StoredMcpServer>,
    ) -> Result<StoredMcpServer, ApiError> {
        let bad = |message: String| ApiError::Refused {
            code: "invalid",
            message,
        };
        let name = self.name.trim().to_string();
        if !valid_name(&name) {
            return Err(bad(format!(
                "name has 1 to 40 letters, digits, '-' or '_', not '{}'",
                name.chars().take(60).collect::<String>()
            )));
        }
        let url = self
            .url
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty());
        let command = self
            .command
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty());
        match (&url, &command) {
            (Some(url), None) => {
                let ok = url.chars().count() <= 2000
                    && reqwest::Url::parse(url).is_ok_and(|u| {
                        matches!(u.scheme(), "http" | "https") && u.host_str().is_some()
                    });
                if !ok {
                    return Err(bad(
                        "url must be an http(s) URL of at most 2000 characters".into()
                    ));
                }
                if !self.args.is_empty() {
                    return Err(bad("args go with a command, not a url".into()));
                }
            }
            (None, Some(command)) => {
                if command.chars().count() > 500 {
                    return Err(bad("command has at most 500 characters".into()));
                }
            }
            _ => {
                return Err(bad(
                    "give a url (streamable HTTP) or a command (stdio), one of them".into(),
                ))
            }
        }
        if self.args.len() > 32 || self.args.iter().any(|a| a.chars().count() > 1000) {
            return Err(bad("at most 32 args, each at most 1000 characters".into()));
        }
        let token = match self.token.map(|t| t.trim().to_string()) {
            Some(t) if t.is_empty() || t.chars().count() > 2000 => {
                return Err(bad("token has 1 to 2000 characters".into()))
            }
            Some(t) => Some(t),
            None => old.and_then(|o| o.token.clone()),
        };
        let env = match self.env {
            Some(env) => env,
            None => old.map(|o| o.env.clone()).unwrap_or_default(),
        };
        if env.len() > 32
            || env.iter().any(|(k, v)| {
                k.is_empty()
                    || k.len() > 100
                    || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    || v.chars().count() > 4000
            })
        {
            return Err(bad(
                "env has at most 32 variables, named with letters, digits and '_', values of at most 4000 characters"
                    .into(),
            ));
        }
        if token.is_some() && url.is_none() {
            return Err(bad("a token goes with a url, not a command".into()));
        }
        Ok(StoredMcpServer {
            name,
            url,
            token,
            command,
            args: self.args,
            env,
            created_by: who.to_string(),
            created_at: chrono::Utc::now(),
        })
    }
}

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

fn store_error(e: crate::store::StoreError) -> ApiError {
    ApiError::from(crate::runs::RunError::from(e))
}

fn from_file(name: &str) -> ApiError {
    ApiError::State {
        code: "from_file",
        message: format!(
            "MCP server {name} comes from PLANBOARD_MCP_SERVERS: change the file and restart"
        ),
    }
}

/// Every MCP server, the file's and the added ones, with its state.
#[utoipa::path(get, path = "/api/tool-servers", tag = "tools",
    responses((status = 200, body = Vec<super::schema::ToolServerDoc>), ListErrors))]
pub async fn list_servers(State(state): State<ApiState>) -> Json<Vec<ToolServerView>> {
    Json(state.runs.tool_servers().views())
}

/// Adds a server, connects it and offers its tools to runs started from
/// now on. It is kept even when it does not connect (its error is shown;
/// fix it with a change, or test it again later).
#[utoipa::path(post, path = "/api/tool-servers", tag = "tools", request_body = ToolServerSpec,
    responses((status = 201, body = super::schema::ToolServerDoc), WriteErrors))]
pub async fn add_server(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Body(spec): Body<ToolServerSpec>,
) -> Result<(StatusCode, Json<ToolServerView>), ApiError> {
    who.require(Role::Admin)?;
    let server = spec.check(&who.actor(), None)?;
    let servers = state.runs.tool_servers();
    let taken = servers.source(&server.name).is_some()
        || !state
            .runs
            .store()
            .put_mcp_server(&server, false)
            .await
            .map_err(store_error)?;
    if taken {
        return Err(ApiError::AlreadyExists(format!(
            "an MCP server is named {} already",
            server.name
        )));
    }
    let view = servers
        .connect(&server.name, ToolSource::Board, server.server())
        .await;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Changes an added server and connects it again.
#[utoipa::path(put, path = "/api/tool-servers/{name}", tag = "tools", request_body = ToolServerSpec,
    params(("name" = String, Path, description = "the server's name")),
    responses((status = 200, body = super::schema::ToolServerDoc), WriteErrors))]
pub async fn change_server(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    ServerName(name): ServerName,
    Body(spec): Body<ToolServerSpec>,
) -> Result<Json<ToolServerView>, ApiError> {
    who.require(Role::Admin)?;
    let store = state.runs.store();
    let servers = state.runs.tool_servers();
    if servers.source(&name) == Some(ToolSource::File) {
        return Err(from_file(&name));
    }
    let stored = store.mcp_servers().await.map_err(store_error)?;
    let old = stored
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| ApiError::NotFound(format!("no MCP server is named '{name}'")))?;
    if spec.name.trim() != name {
        return Err(ApiError::Refused {
            code: "invalid",
            message: format!("the name cannot change ({name} here)"),
        });
    }
    let server = spec.check(&who.actor(), Some(old))?;
    store
        .put_mcp_server(&server, true)
        .await
        .map_err(store_error)?;
    Ok(Json(
        servers
            .connect(&name, ToolSource::Board, server.server())
            .await,
    ))
}

/// Connects a server again (after its program or service was fixed):
/// its state now.
#[utoipa::path(post, path = "/api/tool-servers/{name}/test", tag = "tools",
    params(("name" = String, Path, description = "the server's name")),
    responses((status = 200, body = super::schema::ToolServerDoc), WriteErrors))]
pub async fn test_server(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    ServerName(name): ServerName,
) -> Result<Json<ToolServerView>, ApiError> {
    who.require(Role::Admin)?;
    let servers = state.runs.tool_servers();
    let (Some(source), Some(server)) = (servers.source(&name), servers.server(&name)) else {
        return Err(ApiError::NotFound(format!(
            "no MCP server is named '{name}'"
        )));
    };
    Ok(Json(servers.connect(&name, source, server).await))
}

/// Removes an added server: its tools are offered to no new run.
#[utoipa::path(delete, path = "/api/tool-servers/{name}", tag = "tools",
    params(("name" = String, Path, description = "the server's name")),
    responses((status = 204, description = "removed"), WriteErrors))]
pub async fn remove_server(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    ServerName(name): ServerName,
) -> Result<StatusCode, ApiError> {
    who.require(Role::Admin)?;
    let servers = state.runs.tool_servers();
    if servers.source(&name) == Some(ToolSource::File) {
        return Err(from_file(&name));
    }
    let removed = state
        .runs
        .store()
        .remove_mcp_server(&name)
        .await
        .map_err(store_error)?;
    servers.remove(&name);
    if removed {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!(
            "no MCP server is named '{name}'"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: serde_json::Value) -> ToolServerSpec {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_server_needs_a_good_name_and_one_of_url_or_command() {
        let ok =
            spec(serde_json::json!({"name": "git", "command": "uvx", "args": ["mcp-server-git"]}));
        assert_eq!(
            ok.check("alice", None).unwrap().command.as_deref(),
            Some("uvx")
        );
        for bad in [
            serde_json::json!({"name": "no spaces", "command": "x"}),
            serde_json::json!({"name": "", "command": "x"}),
            serde_json::json!({"name": "both", "command": "x", "url": "http://h/mcp"}),
            serde_json::json!({"name": "neither"}),
            serde_json::json!({"name": "ftp", "url": "ftp://h/mcp"}),
            serde_json::json!({"name": "argsurl", "url": "http://h/mcp", "args": ["a"]}),
            serde_json::json!({"name": "tok", "command": "x", "token": "t"}),
            serde_json::json!({"name": "env", "command": "x", "env": {"BAD-NAME": "v"}}),
        ] {
            assert!(spec(bad.clone()).check("alice", None).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_change_keeps_the_stored_token_and_env_unless_given() {
        let old =
            spec(serde_json::json!({"name": "s", "url": "http://h/mcp", "token": "secret-1"}))
                .check("alice", None)
                .unwrap();
        let kept = spec(serde_json::json!({"name": "s", "url": "http://h2/mcp"}))
            .check("bob", Some(&old))
            .unwrap();
        assert_eq!(kept.token.as_deref(), Some("secret-1"));
        assert_eq!(kept.url.as_deref(), Some("http://h2/mcp"));
        let replaced =
            spec(serde_json::json!({"name": "s", "url": "http://h/mcp", "token": "secret-2"}))
                .check("bob", Some(&old))
                .unwrap();
        assert_eq!(replaced.token.as_deref(), Some("secret-2"));
    }
}
