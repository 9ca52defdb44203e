//! The Tools page's forms: add an MCP server or an ACP agent, and test,
//! edit or remove one; admins only, through the registries the API's
//! `/api/tool-servers` and `/api/agents` routes use.

use app::api::BoardError;
use serde::Deserialize;

use super::shared::{form_answer, BoardState};
use crate::web::board::{api_error, Board};

/// The Tools page's add and change forms: a URL or a command, arguments
/// and `NAME=value` lines one per line; an empty token or env keeps the
/// stored one on a change.
#[derive(Deserialize)]
pub struct ToolServerForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    token: String,
    #[serde(default)]
    command: String,
    #[serde(default)]
    args: String,
    #[serde(default)]
    env: String,
}

impl ToolServerForm {
    fn spec(self, name: Option<&str>) -> Result<crate::tool_servers::ToolServerSpec, BoardError> {
        let filled = |s: String| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        let mut env = std::collections::BTreeMap::new();
        for line in self.env.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (key, value) = line.split_once('=').ok_or_else(|| {
                BoardError::Refused(format!(
                    "an env line is NAME=value, not '{}'",
                    plan_engine::text::prefix(line, 60)
                ))
            })?;
            env.insert(key.trim().to_string(), value.to_string());
        }
        Ok(crate::tool_servers::ToolServerSpec {
            name: name.map(str::to_string).unwrap_or(self.name),
            url: filled(self.url),
            token: filled(self.token),
            command: filled(self.command),
            args: self
                .args
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect(),
            env: (!env.is_empty()).then_some(env),
        })
    }
}

/// What a Tools page form does: add a server (`POST /tools/servers`), or
/// the `{action}` of `POST /tools/servers/{name}/{action}` on one.
enum ServerAction<'a> {
    Add,
    Edit(&'a str),
    Test(&'a str),
    Remove(&'a str),
}

impl<'a> ServerAction<'a> {
    fn on(name: &'a str, action: &str) -> Result<ServerAction<'a>, BoardError> {
        match action {
            "edit" => Ok(ServerAction::Edit(name)),
            "test" => Ok(ServerAction::Test(name)),
            "remove" => Ok(ServerAction::Remove(name)),
            other => Err(BoardError::NotFound(format!("no action is called {other}"))),
        }
    }
}

/// `POST /tools/servers`: adds a server.
pub async fn add_server(
    axum::extract::State(board): BoardState,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<ToolServerForm>,
) -> axum::response::Response {
    server_change(&board, &viewer, &headers, Ok(ServerAction::Add), form).await
}

/// `POST /tools/servers/{name}/{action}`: `test`, `remove` or `edit` a
/// server.
pub async fn server_action(
    axum::extract::State(board): BoardState,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    axum::extract::Path((name, action)): axum::extract::Path<(String, String)>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<ToolServerForm>,
) -> axum::response::Response {
    let action = ServerAction::on(&name, &action);
    server_change(&board, &viewer, &headers, action, form).await
}

/// Admins only (asked before an unknown action is named), through the
/// API's registry, then back to the Tools page, or a page in the
/// person's language saying why not.
async fn server_change(
    board: &Board,
    viewer: &app::api::Viewer,
    headers: &axum::http::HeaderMap,
    action: Result<ServerAction<'_>, BoardError>,
    form: ToolServerForm,
) -> axum::response::Response {
    let lang = app::i18n::from_headers(headers);
    let servers = &board.tool_servers;
    let result = async {
        viewer.may_manage(("MCP servers", "MCP 服务器"), lang)?;
        match action? {
            ServerAction::Add => servers
                .add(form.spec(None)?, &viewer.name)
                .await
                .map(|_| ()),
            ServerAction::Edit(name) => servers
                .change(name, form.spec(Some(name))?, &viewer.name)
                .await
                .map(|_| ()),
            ServerAction::Test(name) => servers.test(name).await.map(|_| ()),
            ServerAction::Remove(name) => servers.delete(name).await,
        }
        .map_err(api_error)
    }
    .await;
    form_answer(result.map(|()| "/tools".to_string()), lang)
}

/// The Tools page's forms for an ACP agent: a command, arguments and
/// `NAME=value` lines one per line; an empty env keeps the stored one on
/// a change.
#[derive(Deserialize)]
pub struct AcpAgentForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    command: String,
    #[serde(default)]
    args: String,
    #[serde(default)]
    env: String,
}

impl AcpAgentForm {
    fn spec(self, name: Option<&str>) -> Result<crate::acp_agents::AcpAgentSpec, BoardError> {
        let mut env = std::collections::BTreeMap::new();
        for line in self.env.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (key, value) = line.split_once('=').ok_or_else(|| {
                BoardError::Refused(format!(
                    "an env line is NAME=value, not '{}'",
                    plan_engine::text::prefix(line, 60)
                ))
            })?;
            env.insert(key.trim().to_string(), value.to_string());
        }
        Ok(crate::acp_agents::AcpAgentSpec {
            name: name.map(str::to_string).unwrap_or(self.name),
            command: self.command.trim().to_string(),
            args: self
                .args
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect(),
            env: (!env.is_empty()).then_some(env),
        })
    }
}

/// `POST /tools/agents`: adds an ACP agent.
pub async fn add_agent(
    axum::extract::State(board): BoardState,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<AcpAgentForm>,
) -> axum::response::Response {
    agent_change(&board, &viewer, &headers, Ok(ServerAction::Add), form).await
}

/// `POST /tools/agents/{name}/{action}`: `test`, `remove` or `edit` an
/// ACP agent.
pub async fn agent_action(
    axum::extract::State(board): BoardState,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    axum::extract::Path((name, action)): axum::extract::Path<(String, String)>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<AcpAgentForm>,
) -> axum::response::Response {
    let action = ServerAction::on(&name, &action);
    agent_change(&board, &viewer, &headers, action, form).await
}

/// Admins only, through the API's registry, then back to the Tools page.
async fn agent_change(
    board: &Board,
    viewer: &app::api::Viewer,
    headers: &axum::http::HeaderMap,
    action: Result<ServerAction<'_>, BoardError>,
    form: AcpAgentForm,
) -> axum::response::Response {
    let lang = app::i18n::from_headers(headers);
    let agents = &board.acp_agents;
    let result = async {
        viewer.may_manage(("ACP agents", "ACP 智能体"), lang)?;
        match action? {
            ServerAction::Add => agents.add(form.spec(None)?, &viewer.name).await.map(|_| ()),
            ServerAction::Edit(name) => agents
                .change(name, form.spec(Some(name))?, &viewer.name)
                .await
                .map(|_| ()),
            ServerAction::Test(name) => agents.test(name).await.map(|_| ()),
            ServerAction::Remove(name) => agents.delete(name).await,
        }
        .map_err(api_error)
    }
    .await;
    form_answer(result.map(|()| "/tools".to_string()), lang)
}
