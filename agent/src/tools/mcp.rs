//! MCP servers as work tools (rmcp's client): each configured server's
//! tools are offered to the model by name. Servers are described the way
//! MCP clients usually are (`mcpServers`), in a JSON file:
//!
//! ```json
//! {"mcpServers": {
//!   "search": {"url": "http://127.0.0.1:9000/mcp", "token": "…"},
//!   "git":    {"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_DIR": "…"}}
//! }}
//! ```
//!
//! A stdio server's program starts with a cleared environment: `PATH`,
//! `HOME` and `LANG` of planboard's own, and the server's `env`
//! ([`child_env`]). planboard's environment holds its secrets (the model's
//! API key, the access tokens, the database URL), which a third-party
//! program must not be handed.
//!
//! A server may ask a person something in the middle of a call (an
//! elicitation, form or page): planboard declares it can be asked, and
//! [`Asking`] takes the question to the people of the run whose call was
//! open on the connection, as a guarded call in "Needs you". A
//! connection is shared by every run, and a question does not say which
//! call it belongs to: while calls of more than one run are open on it,
//! a question is cancelled rather than shown to the wrong run's people.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, ErrorData, FormElicitationCapability, Implementation,
    UrlElicitationCapability,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde::Deserialize;
use serde_json::Value;

use crate::protocol::ToolSpec;
use crate::run::ToolPolicy;
use crate::tools::{People, Question, Reply, ToolBox, ToolError};

/// One server, by URL (streamable HTTP) or by command (stdio).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    #[serde(default)]
    pub url: Option<String>,
    /// Sent as `Authorization: Bearer …`.
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct McpFile {
    #[serde(rename = "mcpServers")]
    servers: BTreeMap<String, McpServer>,
}

/// Why MCP servers could not be read or reached; names the file or server.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot read the MCP servers file {}: {error}", path.display())]
    ReadFile {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
    #[error("the MCP servers file {} is not valid: {error}", path.display())]
    BadFile {
        path: std::path::PathBuf,
        error: serde_json::Error,
    },
    #[error("MCP server {name:?} in {} needs either url or command", path.display())]
    UrlOrCommand {
        name: String,
        path: std::path::PathBuf,
    },
    #[error("MCP server {name:?} needs either url or command")]
    Neither { name: String },
    #[error("connecting to MCP server {name}: {error}")]
    Connect { name: String, error: String },
    #[error("listing the tools of MCP server {name}: {error}")]
    ListTools { name: String, error: String },
}

/// Reads an `mcpServers` file; the error names the file and the problem.
pub fn read_servers(path: &Path) -> Result<BTreeMap<String, McpServer>, McpError> {
    let text = std::fs::read_to_string(path).map_err(|error| McpError::ReadFile {
        path: path.to_path_buf(),
        error,
    })?;
    let file: McpFile = serde_json::from_str(&text).map_err(|error| McpError::BadFile {
        path: path.to_path_buf(),
        error,
    })?;
    for (name, server) in &file.servers {
        if server.url.is_some() == server.command.is_some() {
            return Err(McpError::UrlOrCommand {
                name: name.clone(),
                path: path.to_path_buf(),
            });
        }
    }
    Ok(file.servers)
}

/// The variables of planboard's own environment a stdio server gets:
/// enough to find programs, a home for their caches, and the language.
pub const PASSED_ON: [&str; 3] = ["PATH", "HOME", "LANG"];

/// `PATH` when planboard itself has none.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The whole environment of a stdio server's program: [`PASSED_ON`] from
/// `parent` (planboard's, which holds the model's key, the access tokens,
/// the database URL and webhook secrets, none of them the program's
/// business), `PATH` defaulting to [`DEFAULT_PATH`], then the server's
/// configured `env`, which wins. The caller clears the rest.
pub fn child_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    configured: &BTreeMap<String, String>,
) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<OsString, OsString> = parent
        .into_iter()
        .filter(|(name, _)| PASSED_ON.iter().any(|kept| name == kept))
        .collect();
    env.entry("PATH".into())
        .or_insert_with(|| DEFAULT_PATH.into());
    for (name, value) in configured {
        env.insert(name.into(), value.into());
    }
    env.into_iter().collect()
}

/// The longest question a server's message may put to a person; the rest
/// is cut (the board shows it, and a server is not trusted with its size).
pub const QUESTION_CHARS: usize = 2_000;

/// The most fields a server's form may ask for, and the most bytes its
/// schema may take: a bigger form is declined, not drawn.
pub const FORM_FIELDS: usize = 32;
pub const FORM_BYTES: usize = 16 * 1024;

/// The calls open on one connection, each with the people it may ask.
#[derive(Default)]
struct OpenCalls {
    next: u64,
    open: BTreeMap<u64, OpenCall>,
}

struct OpenCall {
    tool: String,
    people: Arc<dyn People>,
    /// Dropped when the call ends: a question still waiting is withdrawn.
    ended: tokio::sync::watch::Sender<()>,
}

/// Whom a question is for: the tool whose call was open, the people to
/// ask, and what tells that each of that run's open calls ended.
type Whose = (
    String,
    Arc<dyn People>,
    Vec<tokio::sync::watch::Receiver<()>>,
);

/// planboard's side of an MCP connection: it says it can be asked
/// (elicitation, form and page), and takes each question to the people of
/// the call open on the connection.
#[derive(Clone)]
pub struct Asking {
    server: String,
    calls: Arc<std::sync::Mutex<OpenCalls>>,
}

/// A call open on a connection, for as long as this lives.
struct Open {
    calls: Arc<std::sync::Mutex<OpenCalls>>,
    id: u64,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.calls
            .lock()
            .expect("open calls lock")
            .open
            .remove(&self.id);
    }
}

impl Asking {
    fn new(server: &str) -> Asking {
        Asking {
            server: server.to_string(),
            calls: Arc::default(),
        }
    }

    fn open(&self, tool: &str, people: Arc<dyn People>) -> Open {
        let mut calls = self.calls.lock().expect("open calls lock");
        calls.next += 1;
        let id = calls.next;
        let (ended, _) = tokio::sync::watch::channel(());
        calls.open.insert(
            id,
            OpenCall {
                tool: tool.to_string(),
                people,
                ended,
            },
        );
        Open {
            calls: self.calls.clone(),
            id,
        }
    }

    /// Whom a question arriving now is for: the people of the open calls,
    /// if they are all one run's; and, one for each of those calls, what
    /// tells that it ended (the question is withdrawn once all have).
    fn whose(&self) -> Option<Whose> {
        let calls = self.calls.lock().expect("open calls lock");
        let first = calls.open.values().next()?;
        let run = first.people.whose();
        if calls.open.values().any(|call| call.people.whose() != run) {
            return None;
        }
        let ended = calls.open.values().map(|c| c.ended.subscribe()).collect();
        Some((first.tool.clone(), first.people.clone(), ended))
    }
}

/// The server's request as a question to a person, or why it is declined.
fn question_of(
    server: &str,
    tool: String,
    request: ElicitRequestParams,
) -> Result<Question, String> {
    let fit = |text: &str| plan_engine::text::fit(text.trim(), QUESTION_CHARS);
    match request {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => {
            if requested_schema.properties.len() > FORM_FIELDS {
                return Err(format!(
                    "a form of {} fields (at most {FORM_FIELDS})",
                    requested_schema.properties.len()
                ));
            }
            let schema = serde_json::to_value(&requested_schema).map_err(|e| e.to_string())?;
            let bytes = schema.to_string().len();
            if bytes > FORM_BYTES {
                return Err(format!("a form of {bytes} bytes (at most {FORM_BYTES})"));
            }
            Ok(Question {
                server: server.to_string(),
                tool,
                message: fit(&message),
                schema: Some(schema),
                url: None,
            })
        }
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => Ok(Question {
            server: server.to_string(),
            tool,
            message: fit(&message),
            schema: None,
            url: Some(plan_engine::text::fit(url.trim(), QUESTION_CHARS)),
        }),
        _ => Err("a kind of question planboard does not know".into()),
    }
}

impl ClientHandler for Asking {
    fn get_info(&self) -> ClientConfig {
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::new());
        elicitation.url = Some(UrlElicitationCapability::new());
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(elicitation);
        ClientConfig::new(
            capabilities,
            Implementation::new("planboard", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some((tool, people, ended)) = self.whose() else {
            tracing::warn!(
                "MCP server {} asked a question while no call, or calls of several runs, \
                 were open on its connection: cancelled, since whose it is cannot be told",
                self.server
            );
            return Ok(ElicitResult::new(ElicitationAction::Cancel));
        };
        let question = match question_of(&self.server, tool, request) {
            Ok(question) => question,
            Err(why) => {
                tracing::warn!("MCP server {} asked {why}: declined", self.server);
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        let all_ended = futures_util::future::join_all(ended.into_iter().map(|mut e| async move {
            let _ = e.changed().await;
        }));
        let gone = Box::pin(async move {
            tokio::select! {
                _ = all_ended => {}
                _ = context.ct.cancelled() => {}
            }
        });
        Ok(match people.ask(question, gone).await {
            Reply::Accept(Some(content)) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(content)
            }
            Reply::Accept(None) => ElicitResult::new(ElicitationAction::Accept),
            Reply::Decline => ElicitResult::new(ElicitationAction::Decline),
            Reply::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }
}

/// One connected MCP server and the tools it offered when connected.
pub struct McpTools {
    name: String,
    client: RunningService<RoleClient, Asking>,
    asking: Asking,
    specs: Vec<ToolSpec>,
    /// The tools the server marks read-only (`readOnlyHint`): the others
    /// may change things outside planboard, so they ask a person first.
    read_only: std::collections::HashSet<String>,
}

impl McpTools {
    pub async fn connect(name: &str, server: &McpServer) -> Result<Arc<McpTools>, McpError> {
        let failed = |error: String| McpError::Connect {
            name: name.to_string(),
            error,
        };
        let asking = Asking::new(name);
        let client = match (&server.url, &server.command) {
            (Some(url), _) => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = &server.token {
                    config = config.auth_header(token.as_str());
                }
                let transport =
                    StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
                asking
                    .clone()
                    .serve(transport)
                    .await
                    .map_err(|e| failed(e.to_string()))?
            }
            (None, Some(command)) => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(&server.args)
                    .env_clear()
                    .envs(child_env(std::env::vars_os(), &server.env));
                let transport = TokioChildProcess::new(cmd).map_err(|e| failed(e.to_string()))?;
                asking
                    .clone()
                    .serve(transport)
                    .await
                    .map_err(|e| failed(e.to_string()))?
            }
            (None, None) => {
                return Err(McpError::Neither {
                    name: name.to_string(),
                })
            }
        };
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| McpError::ListTools {
                name: name.to_string(),
                error: e.to_string(),
            })?;
        let read_only = tools
            .iter()
            .filter(|t| {
                t.annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    .unwrap_or(false)
            })
            .map(|t| t.name.to_string())
            .collect();
        let specs = tools
            .into_iter()
            .map(|t| ToolSpec {
                name: t.name.to_string(),
                description: t
                    .description
                    .map(|d| d.to_string())
                    .unwrap_or_else(|| format!("a tool of the MCP server {name}")),
                parameters: Value::Object((*t.input_schema).clone()),
            })
            .collect();
        Ok(Arc::new(McpTools {
            name: name.to_string(),
            client,
            asking,
            specs,
            read_only,
        }))
    }
}

#[async_trait::async_trait]
impl ToolBox for McpTools {
    fn specs(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }

    fn default_policy(&self, name: &str) -> ToolPolicy {
        if self.read_only.contains(name) {
            ToolPolicy::Auto
        } else {
            ToolPolicy::Ask
        }
    }

    async fn call(&self, name: &str, arguments: &Value) -> Result<String, ToolError> {
        answered(&self.name, self.send(name, arguments).await)
    }

    async fn call_asking(
        &self,
        name: &str,
        arguments: &Value,
        people: Arc<dyn People>,
    ) -> Result<String, ToolError> {
        let _open = self.asking.open(name, people.clone());
        let first = self.send(name, arguments).await;
        // The tool answered that a person must first open pages (MCP's
        // "URL elicitation required", -32042): each is put to the run's
        // people, and the call is made again once, if they all did.
        let Some(pages) = pages_required(&self.name, name, &first) else {
            return answered(&self.name, first);
        };
        for page in pages {
            match people.ask(page, Box::pin(std::future::pending())).await {
                Reply::Accept(_) => {}
                Reply::Decline | Reply::Cancel => {
                    return Err(ToolError::refused(format!(
                        "{name} needs a person to open a page first, and they did not: \
                         do not call it again in this subtask"
                    )))
                }
            }
        }
        answered(&self.name, self.send(name, arguments).await)
    }
}

/// MCP's error code for "a person must open these pages first".
pub const URL_ELICITATION_REQUIRED: i32 = -32042;

/// The most pages one such error may ask a person to open.
pub const PAGES_REQUIRED: usize = 4;

type Sent = Result<rmcp::model::CallToolResult, rmcp::ServiceError>;

impl McpTools {
    async fn send(&self, name: &str, arguments: &Value) -> Sent {
        let mut params = CallToolRequestParams::new(name.to_string());
        params.arguments = arguments.as_object().cloned();
        self.client.call_tool(params).await
    }
}

/// The pages a call's error asks a person to open, as questions; `None`
/// when the error is another (or names no page, or too many).
fn pages_required(server: &str, tool: &str, sent: &Sent) -> Option<Vec<Question>> {
    let Err(rmcp::ServiceError::McpError(error)) = sent else {
        return None;
    };
    if error.code.0 != URL_ELICITATION_REQUIRED {
        return None;
    }
    let pages = error.data.as_ref()?.get("elicitations")?.as_array()?;
    if pages.is_empty() || pages.len() > PAGES_REQUIRED {
        return None;
    }
    pages
        .iter()
        .map(|page| {
            let request: ElicitRequestParams = serde_json::from_value(page.clone()).ok()?;
            match request {
                ElicitRequestParams::UrlElicitationParams { .. } => {
                    question_of(server, tool.to_string(), request).ok()
                }
                _ => None,
            }
        })
        .collect()
}

/// What a call sent to the server comes to for the model.
fn answered(server: &str, sent: Sent) -> Result<String, ToolError> {
    let result = sent
        // The server or the connection failed, not the call: worth repeating.
        .map_err(|e| ToolError {
            message: format!("MCP server {server} failed: {e}"),
            retryable: true,
        })?;
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    let text = text.join("\n");
    if result.is_error == Some(true) {
        return Err(ToolError::refused(text));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's form request as the wire carries it.
    fn form(fields: usize, description: &str) -> ElicitRequestParams {
        let properties: serde_json::Map<String, Value> = (0..fields)
            .map(|i| {
                (
                    format!("f{i}"),
                    serde_json::json!({"type": "string", "description": description}),
                )
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "mode": "form",
            "message": "Tell me",
            "requestedSchema": {"type": "object", "properties": properties},
        }))
        .unwrap()
    }

    #[test]
    fn a_form_of_more_fields_than_the_limit_is_declined_and_one_at_the_limit_is_asked() {
        assert!(question_of("s", "t".into(), form(FORM_FIELDS, "x")).is_ok());
        let refused = question_of("s", "t".into(), form(FORM_FIELDS + 1, "x")).unwrap_err();
        assert!(refused.contains("33 fields"), "{refused}");
    }

    #[test]
    fn a_form_whose_schema_outgrows_its_bytes_is_declined_though_its_fields_are_few() {
        let long = "d".repeat(FORM_BYTES);
        let refused = question_of("s", "t".into(), form(1, &long)).unwrap_err();
        assert!(refused.contains("bytes"), "{refused}");
        assert!(question_of("s", "t".into(), form(1, &"d".repeat(FORM_BYTES / 2))).is_ok());
    }

    #[test]
    fn a_servers_long_message_and_page_are_cut_to_the_question_limit() {
        let request: ElicitRequestParams = serde_json::from_value(serde_json::json!({
            "mode": "url",
            "message": "m".repeat(QUESTION_CHARS * 50),
            "url": format!("https://example.com/{}", "u".repeat(QUESTION_CHARS * 50)),
            "elicitationId": "e1",
        }))
        .unwrap();
        let question = question_of("s", "t".into(), request).unwrap();
        assert!(question.message.chars().count() <= QUESTION_CHARS + 1);
        assert!(question.url.unwrap().chars().count() <= QUESTION_CHARS + 1);
    }

    #[test]
    fn an_error_asking_for_more_pages_than_the_limit_asks_for_none() {
        let sent = |pages: usize| -> Sent {
            let elicitations: Vec<Value> = (0..pages)
                .map(|i| {
                    serde_json::json!({
                        "mode": "url",
                        "message": "Open it",
                        "url": format!("https://example.com/{i}"),
                        "elicitationId": format!("e{i}"),
                    })
                })
                .collect();
            Err(rmcp::ServiceError::McpError(rmcp::ErrorData::new(
                rmcp::model::ErrorCode(URL_ELICITATION_REQUIRED),
                "open these",
                Some(serde_json::json!({ "elicitations": elicitations })),
            )))
        };
        assert_eq!(
            pages_required("s", "t", &sent(PAGES_REQUIRED)).map(|p| p.len()),
            Some(PAGES_REQUIRED)
        );
        assert!(pages_required("s", "t", &sent(PAGES_REQUIRED + 1)).is_none());
        assert!(pages_required("s", "t", &sent(0)).is_none());
    }

    #[test]
    fn a_servers_file_needs_a_url_or_a_command_for_each_server() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(
            &path,
            r#"{"mcpServers": {"a": {"url": "http://x/mcp"}, "b": {"command": "true"}}}"#,
        )
        .unwrap();
        assert_eq!(read_servers(&path).unwrap().len(), 2);
        std::fs::write(&path, r#"{"mcpServers": {"a": {}}}"#).unwrap();
        assert!(read_servers(&path)
            .unwrap_err()
            .to_string()
            .contains("either url or command"));
        std::fs::write(&path, r#"{"servers": {}}"#).unwrap();
        assert!(read_servers(&path)
            .unwrap_err()
            .to_string()
            .contains("not valid"));
    }

    fn stdio(command: &str, args: &[&str]) -> McpServer {
        McpServer {
            url: None,
            token: None,
            command: Some(command.to_string()),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
        }
    }

    /// The npm package `@modelcontextprotocol/server-everything`, which
    /// `scripts/test` installs and names in `PLANBOARD_TEST_MCP_EVERYTHING`.
    fn everything() -> Option<String> {
        match std::env::var("PLANBOARD_TEST_MCP_EVERYTHING") {
            Ok(path) => {
                assert!(
                    Path::new(&path).is_file(),
                    "PLANBOARD_TEST_MCP_EVERYTHING names no file: {path}"
                );
                Some(path)
            }
            Err(_) => {
                eprintln!(
                    "skipped: PLANBOARD_TEST_MCP_EVERYTHING is not set (scripts/test sets it)"
                );
                None
            }
        }
    }

    fn text_of(result: Result<String, ToolError>) -> String {
        match result {
            Ok(text) => text,
            Err(e) => panic!("the call failed: {}", e.message),
        }
    }

    #[tokio::test]
    async fn a_real_third_party_server_over_stdio_offers_its_tools_and_answers() {
        let Some(path) = everything() else { return };
        let mut server = stdio("node", &[&path, "stdio"]);
        server
            .env
            .insert("PLANBOARD_MCP_PROBE".into(), "handed-over".into());
        let tools = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            McpTools::connect("everything", &server),
        )
        .await
        .expect("connects in time")
        .expect("connects");
        let names: Vec<String> = tools.specs().into_iter().map(|s| s.name).collect();
        for expected in ["echo", "get-sum", "get-env"] {
            assert!(
                names.iter().any(|n| n == expected),
                "{expected} in {names:?}"
            );
        }
        let echo = tools
            .specs()
            .into_iter()
            .find(|s| s.name == "echo")
            .unwrap();
        assert_eq!(echo.parameters["type"], "object", "{}", echo.parameters);
        let said = text_of(
            tools
                .call("echo", &serde_json::json!({"message": "hello planboard"}))
                .await,
        );
        assert!(said.contains("hello planboard"), "{said}");
        let sum = text_of(
            tools
                .call("get-sum", &serde_json::json!({"a": 2, "b": 3}))
                .await,
        );
        assert!(sum.contains('5'), "{sum}");
        // The server's environment is the one the operator gave it.
        let env = text_of(tools.call("get-env", &serde_json::json!({})).await);
        assert!(env.contains("handed-over"), "the env reached the server");
        // A call the server refuses is the model's to fix, not a retry.
        let refused = tools
            .call("get-sum", &serde_json::json!({"a": "two"}))
            .await
            .expect_err("refused");
        assert!(!refused.retryable, "{}", refused.message);
    }

    #[tokio::test]
    async fn an_unreachable_or_missing_server_is_a_connect_error_that_names_it() {
        let http = McpServer {
            url: Some("http://127.0.0.1:9/mcp".into()),
            ..stdio("unused", &[])
        };
        let http = McpServer {
            command: None,
            ..http
        };
        let error = match McpTools::connect("gone", &http).await {
            Ok(_) => panic!("connected to nothing"),
            Err(e) => e,
        };
        assert!(
            matches!(&error, McpError::Connect { name, .. } if name == "gone"),
            "{error}"
        );
        let missing = stdio("/nonexistent/mcp-server", &[]);
        let error = match McpTools::connect("missing", &missing).await {
            Ok(_) => panic!("started a missing program"),
            Err(e) => e,
        };
        assert!(error.to_string().contains("missing"), "{error}");
    }

    fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn a_stdio_server_gets_path_home_lang_and_its_own_env_never_planboards_secrets() {
        let parent = os(&[
            ("OPENAI_API_KEY", "sk-secret"),
            ("PLANBOARD_TOKENS", "alice:admin:0123456789abcdef"),
            ("DATABASE_URL", "postgres://u:pw@db/planboard"),
            ("PLANBOARD_WEBHOOK_SECRET", "whsec"),
            ("PLANBOARD_LLM_API_KEY", "sk-other"),
            ("PATH", "/opt/bin:/usr/bin"),
            ("HOME", "/home/planboard"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
        ]);
        let mut configured = BTreeMap::new();
        configured.insert("GIT_DIR".to_string(), "/srv/repo".to_string());
        configured.insert("LANG".to_string(), "zh_CN.UTF-8".to_string());
        let env = child_env(parent, &configured);
        assert_eq!(
            env,
            os(&[
                ("GIT_DIR", "/srv/repo"),
                ("HOME", "/home/planboard"),
                ("LANG", "zh_CN.UTF-8"),
                ("PATH", "/opt/bin:/usr/bin"),
            ]),
            "the configured env wins; nothing else of planboard's passes"
        );
        // Without a PATH of planboard's, programs are still found.
        let env = child_env(os(&[("OPENAI_API_KEY", "sk")]), &BTreeMap::new());
        assert_eq!(env, os(&[("PATH", DEFAULT_PATH)]));
    }

    /// A stdio "server" that writes the environment it was started with to
    /// the file named by its argument, then exits without a handshake. The
    /// shell itself is the program started, and `/proc/$$/environ` is its
    /// environment as the kernel handed it over, before the shell adds
    /// `PWD` or `SHLVL` (a wrapper such as pyenv's `python3` shim would add
    /// more).
    const ENV_DUMP: &str = r#"cat "/proc/$$/environ" > "$0""#;

    #[tokio::test]
    async fn a_stdio_servers_program_sees_none_of_planboards_environment() {
        let dir = tempfile::tempdir().unwrap();
        let dump = dir.path().join("env");
        let mut server = stdio("/bin/sh", &["-c", ENV_DUMP, dump.to_str().unwrap()]);
        server
            .env
            .insert("PLANBOARD_MCP_PROBE".into(), "handed-over".into());
        let allowed = |name: &str| PASSED_ON.contains(&name) || name == "PLANBOARD_MCP_PROBE";
        // The test process has more (cargo's CARGO_* at least), or this
        // test would prove nothing.
        let ours: Vec<String> = std::env::vars_os()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .filter(|k| !allowed(k))
            .collect();
        assert!(!ours.is_empty(), "the test process has other variables");
        let outcome = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            McpTools::connect("env-dump", &server),
        )
        .await
        .expect("ends in time");
        assert!(outcome.is_err(), "the dump answers no handshake");
        let raw = std::fs::read(&dump).expect("the program wrote its environment");
        let seen: BTreeMap<String, String> = raw
            .split(|b| *b == 0)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                let entry = String::from_utf8_lossy(entry);
                let (k, v) = entry.split_once('=').unwrap_or((&entry, ""));
                (k.to_string(), v.to_string())
            })
            .collect();
        let leaked: Vec<&String> = seen.keys().filter(|k| !allowed(k)).collect();
        assert!(leaked.is_empty(), "leaked to the program: {leaked:?}");
        assert_eq!(seen["PLANBOARD_MCP_PROBE"], "handed-over");
        assert!(seen.contains_key("PATH"), "{seen:?}");
    }

    /// A stdio MCP server that answers `initialize` and `tools/list`, then
    /// exits in the middle of the first call.
    const DYING_SERVER: &str = r#"
import sys, json
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "dying", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "crash", "description": "dies",
                             "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        sys.exit(3)
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;

    #[tokio::test]
    async fn a_server_that_dies_mid_call_gives_a_retryable_error_and_no_hang() {
        let server = stdio("python3", &["-c", DYING_SERVER]);
        let tools = McpTools::connect("dying", &server).await.expect("connects");
        assert_eq!(tools.specs()[0].name, "crash");
        for _ in 0..2 {
            let failed = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                tools.call("crash", &serde_json::json!({})),
            )
            .await
            .expect("the call ends when the server dies")
            .expect_err("the server died");
            assert!(failed.retryable, "{}", failed.message);
            assert!(
                failed.message.contains("MCP server dying failed"),
                "{}",
                failed.message
            );
        }
    }

    /// People who reply as scripted, and remember what they were asked.
    struct Scripted {
        run: &'static str,
        replies: std::sync::Mutex<Vec<Reply>>,
        asked: std::sync::Mutex<Vec<Question>>,
        /// Wait for the call to end instead of replying.
        wait: bool,
        withdrawn: std::sync::atomic::AtomicBool,
    }

    impl Scripted {
        fn new(run: &'static str, replies: Vec<Reply>) -> Arc<Scripted> {
            Arc::new(Scripted {
                run,
                replies: std::sync::Mutex::new(replies),
                asked: std::sync::Mutex::default(),
                wait: false,
                withdrawn: Default::default(),
            })
        }

        fn asked(&self) -> Vec<Question> {
            self.asked.lock().unwrap().clone()
        }
    }

    #[async_trait::async_trait]
    impl People for Scripted {
        fn whose(&self) -> String {
            self.run.to_string()
        }

        async fn ask(
            &self,
            question: Question,
            gone: futures_util::future::BoxFuture<'static, ()>,
        ) -> Reply {
            self.asked.lock().unwrap().push(question);
            if self.wait {
                gone.await;
                self.withdrawn
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                return Reply::Cancel;
            }
            self.replies.lock().unwrap().remove(0)
        }
    }

    async fn connected_everything() -> Option<Arc<McpTools>> {
        let path = everything()?;
        let server = stdio("node", &[&path, "stdio"]);
        let tools = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            McpTools::connect("everything", &server),
        )
        .await
        .expect("connects in time")
        .expect("connects");
        Some(tools)
    }

    #[tokio::test]
    async fn a_servers_question_mid_call_goes_to_the_calls_people_and_their_reply_back() {
        let Some(tools) = connected_everything().await else {
            return;
        };
        let names: Vec<String> = tools.specs().into_iter().map(|s| s.name).collect();
        for asking in ["trigger-elicitation-request", "trigger-url-elicitation"] {
            assert!(
                names.iter().any(|n| n == asking),
                "planboard says it can be asked, so {asking} is offered: {names:?}"
            );
        }
        let people = Scripted::new(
            "run-1",
            vec![
                Reply::Accept(Some(
                    serde_json::json!({"name": "Ada Lovelace", "integer": 7}),
                )),
                Reply::Decline,
            ],
        );
        let said = text_of(
            tools
                .call_asking(
                    "trigger-elicitation-request",
                    &serde_json::json!({}),
                    people.clone(),
                )
                .await,
        );
        assert!(said.contains("Name: Ada Lovelace"), "{said}");
        assert!(said.contains("Favorite Integer: 7"), "{said}");
        let asked = people.asked();
        assert_eq!(asked.len(), 1);
        assert_eq!(
            (asked[0].server.as_str(), asked[0].tool.as_str()),
            ("everything", "trigger-elicitation-request")
        );
        assert!(
            asked[0].message.contains("Please provide inputs"),
            "{:?}",
            asked[0]
        );
        let schema = asked[0].schema.as_ref().expect("a form");
        assert_eq!(schema["properties"]["name"]["type"], "string", "{schema}");
        let said = text_of(
            tools
                .call_asking(
                    "trigger-elicitation-request",
                    &serde_json::json!({}),
                    people.clone(),
                )
                .await,
        );
        assert!(said.contains("declined"), "{said}");
        // A call made for no run's people: the question is cancelled.
        let said = text_of(
            tools
                .call("trigger-elicitation-request", &serde_json::json!({}))
                .await,
        );
        assert!(said.contains("cancelled"), "{said}");
        // A page to open, asked and done.
        let page = Scripted::new("run-1", vec![Reply::Accept(None)]);
        let said = text_of(
            tools
                .call_asking(
                    "trigger-url-elicitation",
                    &serde_json::json!({"url": "https://example.com/confirm"}),
                    page.clone(),
                )
                .await,
        );
        assert!(said.contains("completed the URL elicitation"), "{said}");
        assert_eq!(
            page.asked()[0].url.as_deref(),
            Some("https://example.com/confirm")
        );
    }

    #[tokio::test]
    async fn a_question_while_two_runs_calls_are_open_is_cancelled_and_shown_to_neither() {
        let Some(tools) = connected_everything().await else {
            return;
        };
        let other = Scripted::new(
            "run-2",
            vec![Reply::Accept(Some(serde_json::json!({"name": "Mallory"})))],
        );
        let _elsewhere = tools.asking.open("echo", other.clone());
        let mine = Scripted::new(
            "run-1",
            vec![Reply::Accept(Some(serde_json::json!({"name": "Ada"})))],
        );
        let said = text_of(
            tools
                .call_asking(
                    "trigger-elicitation-request",
                    &serde_json::json!({}),
                    mine.clone(),
                )
                .await,
        );
        assert!(said.contains("cancelled"), "{said}");
        assert!(mine.asked().is_empty() && other.asked().is_empty());
        // The same run's calls may be open together: its people are asked.
        let same = Scripted::new(
            "run-2",
            vec![Reply::Accept(Some(serde_json::json!({"name": "Grace"})))],
        );
        let said = text_of(
            tools
                .call_asking(
                    "trigger-elicitation-request",
                    &serde_json::json!({}),
                    same.clone(),
                )
                .await,
        );
        assert!(said.contains("Name: "), "{said}");
    }

    #[tokio::test]
    async fn a_question_is_withdrawn_when_its_call_is_given_up() {
        let Some(tools) = connected_everything().await else {
            return;
        };
        let people = Arc::new(Scripted {
            wait: true,
            ..Arc::into_inner(Scripted::new("run-1", vec![])).unwrap()
        });
        let given_up = tokio::time::timeout(
            std::time::Duration::from_millis(1_500),
            tools.call_asking(
                "trigger-elicitation-request",
                &serde_json::json!({}),
                people.clone(),
            ),
        )
        .await;
        assert!(given_up.is_err(), "the question waits for a person");
        assert_eq!(people.asked().len(), 1);
        // Two calls of one run open: the question stays while either does.
        let waiting = Arc::new(Scripted {
            wait: true,
            ..Arc::into_inner(Scripted::new("run-3", vec![])).unwrap()
        });
        let earlier = tools.asking.open("echo", waiting.clone());
        let later = Scripted::new("run-3", vec![]);
        let none = serde_json::json!({});
        // A boxed future (async_trait): dropping it gives the call up.
        let mut call = tools.call_asking("trigger-elicitation-request", &none, later);
        let asked = tokio::time::timeout(std::time::Duration::from_millis(1_000), &mut call).await;
        assert!(
            asked.is_err() && waiting.asked().len() == 1,
            "asked, and waiting"
        );
        drop(earlier);
        let still = tokio::time::timeout(std::time::Duration::from_millis(500), &mut call).await;
        assert!(still.is_err(), "the later call still waits for the reply");
        assert!(
            !waiting.withdrawn.load(std::sync::atomic::Ordering::SeqCst),
            "not withdrawn while a call of the run is open"
        );
        drop(call);
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while !people.withdrawn.load(std::sync::atomic::Ordering::SeqCst) {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the question is withdrawn once nobody waits for the reply");
    }

    #[tokio::test]
    async fn a_tool_that_needs_a_page_opened_first_asks_and_is_called_again() {
        let Some(tools) = connected_everything().await else {
            return;
        };
        let args = serde_json::json!({"url": "https://example.com/later", "errorPath": true});
        let people = Scripted::new("run-1", vec![Reply::Accept(None), Reply::Accept(None)]);
        let said = text_of(
            tools
                .call_asking("trigger-url-elicitation", &args, people.clone())
                .await,
        );
        assert!(said.contains("completed the URL elicitation"), "{said}");
        let asked = people.asked();
        assert_eq!(
            asked.len(),
            2,
            "the page required first, then the call's own: {asked:?}"
        );
        assert_eq!(
            asked[0].url.as_deref(),
            Some("https://modelcontextprotocol.io")
        );
        // Declined: the call is not made again, and the model is told why.
        let args = serde_json::json!({"url": "https://example.com/other", "errorPath": true});
        let no = Scripted::new("run-1", vec![Reply::Decline]);
        let refused = tools
            .call_asking("trigger-url-elicitation", &args, no.clone())
            .await
            .expect_err("not made again");
        assert!(
            !refused.retryable && refused.message.contains("did not"),
            "{}",
            refused.message
        );
        assert_eq!(no.asked().len(), 1);
    }
}
