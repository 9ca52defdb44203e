//! `/mcp`: the Model Context Protocol over streamable HTTP (rmcp), exposing
//! the canonical plan tools. rmcp makes one [`PlanMcp`] per MCP session, so
//! each session gets its own key and with it its own active plan.

use std::sync::Arc;

use plan_engine::Dialect;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, Content, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerInfo, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ErrorData as McpError;
use serde_json::Value;

use crate::auth::Identity;
use crate::service::PlanService;

#[derive(Clone)]
pub struct PlanMcp {
    service: Arc<PlanService>,
    session: String,
}

/// The `/mcp` service, to nest in the router behind the identity middleware.
pub fn service(plans: Arc<PlanService>) -> StreamableHttpService<PlanMcp, LocalSessionManager> {
    StreamableHttpService::new(
        move || {
            Ok(PlanMcp {
                service: plans.clone(),
                session: format!("mcp:{}", uuid::Uuid::new_v4()),
            })
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    )
}

fn tool_list() -> Vec<Tool> {
    plan_engine::tools(Dialect::Canonical)
        .into_iter()
        .filter_map(|spec| {
            let f = spec.get("function")?;
            let name = f.get("name")?.as_str()?.to_string();
            let description = f
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let Value::Object(schema) = f.get("parameters")?.clone() else {
                return None;
            };
            Some(Tool::new(name, description, schema))
        })
        .collect()
}

impl ServerHandler for PlanMcp {
    fn get_info(&self) -> ServerInfo {
        ServerInfo {
            capabilities: ServerCapabilities::builder().enable_tools().build(),
            server_info: Implementation {
                name: "planboard".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                ..Implementation::default()
            },
            instructions: Some(
                "planboard keeps your plan: create_plan first, then start_subtask / complete_subtask as you work. \
                 Every tool works on this session's active plan unless you pass plan_id. \
                 People watch and may edit the plan on the board; call get_plan when unsure."
                    .into(),
            ),
            ..ServerInfo::default()
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        // The identity middleware ran on the HTTP request that carried this call.
        let actor = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Identity>())
            .map_or_else(|| "mcp".to_string(), |who| who.name.clone());
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let result = self
            .service
            .tool(
                Dialect::Canonical,
                &request.name,
                &args,
                &self.session,
                &actor,
            )
            .await
            .map_err(|e| {
                tracing::error!("MCP tool call failed: {e}");
                McpError::internal_error("internal error; the server log has the details", None)
            })?;
        let content = vec![Content::text(result.text)];
        Ok(if result.ok {
            CallToolResult::success(content)
        } else {
            CallToolResult::error(content)
        })
    }
}
