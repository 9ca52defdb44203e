//! Configuration from the environment, checked before anything starts.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `DATABASE_URL` | `sqlite://data/planboard.db` | `sqlite:…` (embedded) or `postgres://…` |
//! | `PLANBOARD_USER` | `$USER`, else `local` | the one user of local mode |
//! | `PLANBOARD_TOKENS` | — | token mode: `name:role:token` entries separated by `,`; each token must carry at least 128 bits (estimated from its length and characters: `openssl rand -hex 16` makes one) and 8 different characters |
//! | `PLANBOARD_TOKENS_FILE` | — | token mode: one `name role token` per line |
//! | `PLANBOARD_TRUSTED_PROXIES` | — | addresses or CIDR blocks (`10.0.0.1`, `10.0.0.0/8`, `fd00::/8`) separated by `,`: reverse proxies whose `X-Forwarded-For` names the client, so token mode's limit on wrong tokens (10 a minute) counts per client behind them |
//! | `PLANBOARD_LEASE_SECS` | `1800` | idle time after which in-progress subtasks go back to todo |
//! | `PLANBOARD_INSTANCE` | — | echoed by `/healthz` as `x-planboard-instance`; names this process's run leases (else the host name) |
//! | `PLANBOARD_LLM_MODEL` | — | the model of planboard's own agent; unset: runs are refused, all else works |
//! | `PLANBOARD_LLM_BASE_URL` | `OPENAI_BASE_URL`, else OpenAI | any OpenAI-compatible endpoint, with `/v1` |
//! | `PLANBOARD_LLM_API_KEY` | `OPENAI_API_KEY` | never logged or shown |
//! | `PLANBOARD_LLM_CLASSIFIER_MODEL` | the model | a cheaper model for the classifier |
//! | `PLANBOARD_LLM_TIMEOUT_SECS` | `120` | per model call attempt |
//! | `PLANBOARD_LLM_CONCURRENCY` | `auto` | model calls in flight at once, across all runs (more wait in planboard's queue, the runs served in turn; waiting never counts toward a call's timeout); `auto`: as many as the endpoint says it serves (llama.cpp's server: `total_slots` from `/props`, else `/slots`), else 4; a number: that many, the endpoint not asked; halved after a 429, grown back by one every 5 successes |
//! | `PLANBOARD_LLM_PROTOCOL` | `auto` | `auto`, `json_schema` or `tool_calls` |
//! | `PLANBOARD_WORKSPACES` | `data/workspaces` | one folder per run for the file tools |
//! | `PLANBOARD_RUN_LEASE_SECS` | `30` | how long a run's lease lasts without a heartbeat |
//! | `PLANBOARD_MCP_SERVERS` | — | a JSON file of MCP servers (`mcpServers`) whose tools the agent may use |
//! | `PLANBOARD_LOCAL_MODEL_HOME` | set by `scripts/run` when it starts the local model | the local model's folder (`scripts/local-model.sh`): the task box tells "building" and "starting" from "died" by it |
//! | `PLANBOARD_WORKSPACE_QUOTA_MB` | `1024` | the most a run's workspace may hold, in MiB: writes past it are refused, and code does not run while it is past |
//! | `PLANBOARD_WORKSPACE_ROOTS` | — | folders (separated by `:`) a run may start from: a folder or git repository inside one is copied into the run's workspace |
//! | `PLANBOARD_TOOL_POLICY` | — | `tool=auto\|ask\|never` entries separated by `,`, over the defaults (MCP tools not marked read-only: `ask`; every other tool, `run_python` and `run_shell` included: `auto`) |
//! | `PLANBOARD_SANDBOX` | `on` | `off`: no `run_python` / `run_shell` even where bubblewrap works |
//! | `PLANBOARD_FETCH_ALLOW_PRIVATE` | `false` | `fetch_url` may read loopback, private and link-local addresses |
//! | `PLANBOARD_FETCH_ALLOW` | — | private addresses `fetch_url` may read, as `host:port` entries separated by `,` |
//! | `PLANBOARD_SEARCH` | `duckduckgo` (`searxng` when only `PLANBOARD_SEARCH_URL` is set) | where `web_search` sends the query: `duckduckgo` (no key), `searxng`, `brave`, `tavily`, or `off` (no `web_search`) |
//! | `PLANBOARD_SEARCH_URL` | — | `searxng`: a SearXNG-compatible endpoint (`…/search`) |
//! | `PLANBOARD_BRAVE_API_KEY` | — | `brave`: its key, sent only to Brave, never logged or shown |
//! | `PLANBOARD_TAVILY_API_KEY` | — | `tavily`: its key, sent only to Tavily, never logged or shown |
//! | `PLANBOARD_PRICES` | — | model prices over the built-in list: a JSON object `{"model": {"prompt": 2.5, "completion": 10}}` (USD per million tokens), inline or the path of a file holding it; a model on a loopback or private address is free unless priced here |
//! | `PLANBOARD_WEBHOOK_URL` | — | an endpoint notified (POST, JSON) when a plan waits for approval, the agent asks, a run finishes, fails, is stuck or reaches its budget |
//! | `PLANBOARD_WEBHOOK_SECRET` | — | signs each notification: `X-Planboard-Signature: t=…,v1=HMAC-SHA256(secret, "t.body")` |
//! | `PLANBOARD_WEBHOOK_FORMAT` | `json` | `slack`: Slack's incoming-webhook shape (`{"text": …}`) |
//! | `PLANBOARD_WEBHOOK_RETENTION_DAYS` | `30` | deliveries that are over (delivered or given up) are deleted after this many days |
//! | `PLANBOARD_RUN_LOG_RETENTION_HOURS` | `720` (30 days) | a finished run's log (its model calls and their messages, tool calls, activity) is deleted this many hours after the run ended (seed 002's `memoryRetention`, 24 there); the run's row, its plan, memories and reviews stay; runs a person keeps are left alone; `off`: kept for good |
//! | `PLANBOARD_APPROVAL_RULES` | — | token mode only: two people for what is risky, `scope=rule` entries separated by `;`. A scope is `all`, `mode:<mode>`, `tool:<name>` or `template:<name>`; a rule is `,`-separated parts: `not-starter` (the person who started a run may not approve its plan or guarded calls), `<n>` (n approvals by different people) or `<n>:<name>+<name>+…` (n of these people). `mode:complex=not-starter; tool:run_shell=2:alice+bob+carol` |
//! | `PLANBOARD_APPROVAL_REMIND_MINUTES` | `60` | a plan that has waited this long for approval is reported once: marked overdue in Needs you and sent to the webhooks (`approval_overdue`); it is never approved by a timer; `off`: never reported |
//! | `PLANBOARD_APPROVAL_RETENTION_DAYS` | `365` | the approval records of a finished run (who approved, rejected, edited or denied what, with its digest) are deleted this many days after the run ended, and records of no run this many days after they were made; runs a person keeps are left alone; `off`: kept for good. Longer than the log's: an audit asks about the year |
//! | `PLANBOARD_WORKSPACE_RETENTION_DAYS` | `7` | a finished run's workspace (its uploads, copied folder, written files) is removed this many days after the run ended; the run's row, plan, answer and memories stay; runs a person keeps are left alone; `off`: kept for good |
//! | `PLANBOARD_PUBLIC_URL` | `http://` + `LEPTOS_SITE_ADDR` | the board's address in notifications' links; its host is answered and its origin may write (see `guard`) |
//! | `PLANBOARD_ALLOWED_HOSTS` | — | host names the server answers to besides `localhost` and IP addresses, separated by `,`: `board.example` (any port), `board.example:8443`, `.example.org` (and its subdomains) |
//! | `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | — | OpenTelemetry spans over OTLP/HTTP protobuf (see `telemetry`) |
//! | `LEPTOS_SITE_ADDR` | `127.0.0.1:3000` | where to listen |

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::time::Duration;

pub use crate::auth::Access;
use crate::auth::{Identity, IpRange, Role, Tokens};
pub use crate::store::redact_url;

#[derive(Clone)]
pub struct Config {
    pub database_url: String,
    pub access: Access,
    pub lease: Duration,
    /// `PLANBOARD_INSTANCE`: a name `/healthz` answers with in its
    /// `x-planboard-instance` header, so a test run can tell the server it
    /// started from any other one on the port.
    pub instance: Option<String>,
    /// planboard's own agent; `None` when no model is configured.
    pub llm: Option<agent::LlmConfig>,
    pub workspaces: std::path::PathBuf,
    /// The most bytes a run's workspace may hold.
    pub workspace_quota: u64,
    /// The local model's folder, when `scripts/run` started one.
    pub local_model_home: Option<std::path::PathBuf>,
    pub run_lease: Duration,
    /// MCP servers whose tools the agent offers the model.
    pub mcp_servers: std::collections::BTreeMap<String, agent::tools::mcp::McpServer>,
    /// Folders a run may start from (copied, never written in place).
    pub workspace_roots: Vec<std::path::PathBuf>,
    /// The operator's tool policies, over each tool's default.
    pub tool_policies: Vec<(String, agent::run::ToolPolicy)>,
    /// Whether `run_python` and `run_shell` are offered where the sandbox works.
    pub sandbox: bool,
    /// What `fetch_url` may reach.
    pub fetch: agent::tools::web::WebPolicy,
    /// Where `web_search` asks (its key, if any, redacted in `Debug`).
    pub search: agent::tools::web::SearchProvider,
    /// What the agent's model calls cost.
    pub prices: run_model::PriceTable,
    /// Where notifications go.
    pub webhooks: WebhookConfig,
    /// Where spans go (OpenTelemetry); `None`: no tracing.
    pub telemetry: Option<crate::telemetry::TelemetryConfig>,
    /// How long a finished run's log is kept; `None`: for good.
    pub run_log_retention: Option<Duration>,
    /// How long a finished run's workspace is kept; `None`: for good.
    pub workspace_retention: Option<Duration>,
    /// How long the approval records of a finished run (or of no run) are
    /// kept; `None`: for good.
    pub approval_retention: Option<Duration>,
    /// A plan waiting for approval this long is reported (Needs you, the
    /// webhooks); `None`: never.
    pub approval_remind: Option<Duration>,
    /// The operator's two-person rules, each where it applies.
    pub approval_rules: Vec<(run_model::RuleScope, run_model::ApprovalRule)>,
    /// `PLANBOARD_PUBLIC_URL`, when set: the address people open the board
    /// at, whose host the server answers to.
    pub public_url: Option<reqwest::Url>,
    /// `PLANBOARD_ALLOWED_HOSTS`: more names the server answers to (see
    /// `guard`), lower case.
    pub allowed_hosts: Vec<String>,
}

/// Debug output ends up in logs: the database password and the tokens are
/// redacted.
impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("database_url", &redact_url(&self.database_url))
            .field("access", &self.access)
            .field("lease", &self.lease)
            .field("instance", &self.instance)
            .field("llm", &self.llm)
            .field("workspaces", &self.workspaces)
            .field("run_lease", &self.run_lease)
            .field("mcp_servers", &self.mcp_servers.keys().collect::<Vec<_>>())
            .field("workspace_roots", &self.workspace_roots)
            .field("tool_policies", &self.tool_policies)
            .field("sandbox", &self.sandbox)
            .field("fetch", &self.fetch)
            .field("search", &self.search)
            .field("prices", &self.prices)
            .field("webhooks", &self.webhooks)
            .field("telemetry", &self.telemetry)
            .field(
                "public_url",
                &self.public_url.as_ref().map(|u| redact_url(u.as_str())),
            )
            .field("allowed_hosts", &self.allowed_hosts)
            .finish()
    }
}

/// The webhook endpoint of `PLANBOARD_WEBHOOK_URL` (managing several on a
/// settings page is still to come) and the board's public address.
fn webhooks(var: &impl Fn(&str) -> Option<String>) -> Result<WebhookConfig, ConfigError> {
    let site = var("LEPTOS_SITE_ADDR").unwrap_or_else(|| "127.0.0.1:3000".into());
    let board_url = var("PLANBOARD_PUBLIC_URL")
        .unwrap_or_else(|| format!("http://{}", site.trim()))
        .trim()
        .trim_end_matches('/')
        .to_string();
    let slack = match var("PLANBOARD_WEBHOOK_FORMAT").as_deref().map(str::trim) {
        None | Some("json") => false,
        Some("slack") => true,
        Some(other) => {
            return Err(ConfigError::Invalid(format!(
                "PLANBOARD_WEBHOOK_FORMAT must be json or slack, not '{other}'"
            )))
        }
    };
    let endpoints = match var("PLANBOARD_WEBHOOK_URL") {
        None => Vec::new(),
        Some(url) => {
            let parsed = reqwest::Url::parse(url.trim())
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .ok_or_else(|| {
                    ConfigError::Invalid(format!(
                        "PLANBOARD_WEBHOOK_URL must be an http(s) URL, not '{}'",
                        crate::store::shown_url(&url)
                    ))
                })?;
            vec![Endpoint {
                url: parsed,
                secret: var("PLANBOARD_WEBHOOK_SECRET").map(|s| s.trim().to_string()),
                slack,
            }]
        }
    };
    let defaults = WebhookConfig::default();
    let retention = match var("PLANBOARD_WEBHOOK_RETENTION_DAYS") {
        None => defaults.retention,
        Some(days) => match days.trim().parse::<u64>() {
            Ok(days) if days >= 1 => Duration::from_secs(days * 24 * 3600),
            _ => {
                return Err(ConfigError::Invalid(format!(
                    "PLANBOARD_WEBHOOK_RETENTION_DAYS must be a whole number of days, at least 1, not '{days}'"
                )))
            }
        },
    };
    Ok(WebhookConfig {
        endpoints,
        board_url,
        retention,
        ..defaults
    })
}

/// Where `web_search` asks: `PLANBOARD_SEARCH` (DuckDuckGo, which needs no
/// key, unless `PLANBOARD_SEARCH_URL` alone picks SearXNG as it always
/// did), with the chosen provider's URL or key. A setting the choice would
/// ignore is an error, so that the query never goes somewhere other than
/// where the operator thinks. Keys are never in a message.
fn search(
    var: &impl Fn(&str) -> Option<String>,
) -> Result<agent::tools::web::SearchProvider, ConfigError> {
    use agent::tools::web::{ApiKey, SearchProvider};
    let url = var("PLANBOARD_SEARCH_URL");
    let brave = var("PLANBOARD_BRAVE_API_KEY");
    let tavily = var("PLANBOARD_TAVILY_API_KEY");
    let chosen = var("PLANBOARD_SEARCH").map(|s| s.trim().to_ascii_lowercase());
    let chosen = match chosen.as_deref() {
        Some(name) => name,
        None if url.is_some() => "searxng",
        None => "duckduckgo",
    };
    let unused = [
        ("PLANBOARD_SEARCH_URL", url.is_some(), "searxng"),
        ("PLANBOARD_BRAVE_API_KEY", brave.is_some(), "brave"),
        ("PLANBOARD_TAVILY_API_KEY", tavily.is_some(), "tavily"),
    ]
    .into_iter()
    // `off` sends nothing anywhere: a leftover setting does no harm there.
    .find(|(_, set, user)| *set && *user != chosen && chosen != "off");
    let provider = match chosen {
        "duckduckgo" => SearchProvider::duckduckgo(),
        "off" => SearchProvider::Off,
        "searxng" => {
            let url = url.ok_or_else(|| {
                ConfigError::Invalid(
                    "PLANBOARD_SEARCH=searxng needs PLANBOARD_SEARCH_URL, the endpoint \
                     (http://searxng.internal:8080/search)"
                        .into(),
                )
            })?;
            SearchProvider::SearXng {
                url: agent::tools::web::Url::parse(url.trim())
                    .ok()
                    .filter(|u| matches!(u.scheme(), "http" | "https"))
                    .ok_or_else(|| {
                        ConfigError::Invalid(format!(
                            "PLANBOARD_SEARCH_URL must be an http(s) URL, not '{}'",
                            redact_url(&url)
                        ))
                    })?,
            }
        }
        "brave" => SearchProvider::brave(ApiKey::new(brave.ok_or_else(|| {
            ConfigError::Invalid(
                "PLANBOARD_SEARCH=brave needs PLANBOARD_BRAVE_API_KEY (a Brave Search API key)"
                    .into(),
            )
        })?)),
        "tavily" => SearchProvider::tavily(ApiKey::new(tavily.ok_or_else(|| {
            ConfigError::Invalid(
                "PLANBOARD_SEARCH=tavily needs PLANBOARD_TAVILY_API_KEY (a Tavily API key)".into(),
            )
        })?)),
        other => {
            return Err(ConfigError::Invalid(format!(
                "PLANBOARD_SEARCH must be duckduckgo, searxng, brave, tavily or off, not '{other}'"
            )))
        }
    };
    if let Some((name, _, user)) = unused {
        return Err(ConfigError::Invalid(format!(
            "{name} is set, but web_search uses {chosen} (PLANBOARD_SEARCH); \
             set PLANBOARD_SEARCH={user} or unset {name}"
        )));
    }
    Ok(provider)
}

/// The price table: the built-in list, the operator's `PLANBOARD_PRICES`
/// (inline JSON, or a file's path) over it, and every other model free when
/// the endpoint is on this machine or the local network.
fn prices(
    given: Option<String>,
    llm: Option<&agent::LlmConfig>,
) -> Result<run_model::PriceTable, ConfigError> {
    let table = run_model::PriceTable::builtin().local(llm.is_some_and(|l| l.runs_locally()));
    let Some(given) = given else {
        return Ok(table);
    };
    let json = if given.trim_start().starts_with('{') {
        given
    } else {
        std::fs::read_to_string(given.trim()).map_err(|e| {
            ConfigError::Invalid(format!("cannot read PLANBOARD_PRICES file {given}: {e}"))
        })?
    };
    table
        .with_given(&json)
        .map_err(|e| ConfigError::Invalid(format!("PLANBOARD_PRICES: {e}")))
}

/// How long a finished run's log is kept unless configured: 30 days (see
/// docs/agent.md, *Storage and retention*).
pub const DEFAULT_RUN_LOG_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);
/// How long a finished run's files are kept unless configured: 7 days.
pub const DEFAULT_WORKSPACE_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long approval records are kept unless configured: a year, past the
/// log's 30 days (an audit asks who approved what long after the
/// activity is gone).
pub const DEFAULT_APPROVAL_RETENTION: Duration = Duration::from_secs(365 * 24 * 3600);
/// How long a plan may wait for approval before people are reminded
/// unless configured: an hour.
pub const DEFAULT_APPROVAL_REMIND: Duration = Duration::from_secs(3600);

/// A retention in whole `unit`s (at least 1), or `off` (kept for good).
fn retention(
    var: &impl Fn(&str) -> Option<String>,
    name: &str,
    unit: &str,
    unit_secs: u64,
    default: Duration,
) -> Result<Option<Duration>, ConfigError> {
    let Some(value) = var(name) else {
        return Ok(Some(default));
    };
    if value.trim().eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    match value
        .trim()
        .parse::<u64>()
        .map(|n| (n, n.checked_mul(unit_secs)))
    {
        Ok((n, Some(secs))) if n >= 1 => Ok(Some(Duration::from_secs(secs))),
        _ => Err(ConfigError::Invalid(format!(
            "{name} must be a whole number of {unit}, at least 1, or off, not '{value}'"
        ))),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Invalid(String),
}

impl Config {
    /// The defaults for a database and access mode: no model, workspaces
    /// under `data/workspaces`, a 30 min idle lease and a 30 s run lease.
    pub fn defaults(database_url: impl Into<String>, access: Access) -> Config {
        Config {
            database_url: database_url.into(),
            access,
            lease: Duration::from_secs(1800),
            instance: None,
            llm: None,
            workspaces: "data/workspaces".into(),
            workspace_quota: agent::workspace::DEFAULT_QUOTA,
            local_model_home: None,
            run_lease: Duration::from_secs(30),
            mcp_servers: Default::default(),
            workspace_roots: Vec::new(),
            tool_policies: Vec::new(),
            sandbox: true,
            fetch: agent::tools::web::WebPolicy::default(),
            // No search where nothing asked for one: tests and benches
            // reach no outside service.
            search: agent::tools::web::SearchProvider::Off,
            prices: run_model::PriceTable::builtin(),
            webhooks: WebhookConfig::default(),
            telemetry: None,
            run_log_retention: Some(DEFAULT_RUN_LOG_RETENTION),
            workspace_retention: Some(DEFAULT_WORKSPACE_RETENTION),
            approval_retention: Some(DEFAULT_APPROVAL_RETENTION),
            approval_remind: Some(DEFAULT_APPROVAL_REMIND),
            approval_rules: Vec::new(),
            public_url: None,
            allowed_hosts: Vec::new(),
        }
    }

    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_vars(|name| std::env::var(name).ok())
    }

    /// The configuration from variables looked up by `lookup` (the
    /// environment, or a test's map); empty values count as unset.
    pub fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let var = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let database_url =
            var("DATABASE_URL").unwrap_or_else(|| "sqlite://data/planboard.db".into());
        check_database_url(&database_url)?;
        let mut tokens = HashMap::new();
        if let Some(list) = var("PLANBOARD_TOKENS") {
            for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                let parts: Vec<&str> = entry.splitn(3, ':').collect();
                add_token(&mut tokens, &parts, entry)?;
            }
        }
        if let Some(path) = var("PLANBOARD_TOKENS_FILE") {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                ConfigError::Invalid(format!("cannot read PLANBOARD_TOKENS_FILE {path}: {e}"))
            })?;
            for line in text.lines().map(str::trim) {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let parts: Vec<&str> = line.split_whitespace().collect();
                add_token(&mut tokens, &parts, line)?;
            }
        }
        let trusted_proxies = trusted_proxies(var("PLANBOARD_TRUSTED_PROXIES"))?;
        let names: Vec<String> = tokens.values().map(|i| i.name.clone()).collect();
        let approval_rules = approval_rules(var("PLANBOARD_APPROVAL_RULES"), &names)?;
        let access = if tokens.is_empty() {
            let user = var("PLANBOARD_USER")
                .or_else(|| var("USER"))
                .unwrap_or_else(|| "local".into());
            Access::Local { user }
        } else {
            Access::Tokens(Tokens::from(tokens).behind(trusted_proxies))
        };
        let lease = match var("PLANBOARD_LEASE_SECS") {
            None => Duration::from_secs(1800),
            Some(v) => Duration::from_secs(v.parse().map_err(|_| {
                ConfigError::Invalid(format!(
                    "PLANBOARD_LEASE_SECS must be a number of seconds, not '{v}'"
                ))
            })?),
        };
        let llm =
            agent::LlmConfig::from_vars(var).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        let prices = prices(var("PLANBOARD_PRICES"), llm.as_ref())?;
        let webhooks = webhooks(&var)?;
        let telemetry = crate::telemetry::TelemetryConfig::from_vars(&var)
            .map_err(|e| ConfigError::Invalid(e.to_string()))?
            .map(|mut t| {
                if let Some(llm) = &llm {
                    t.system = crate::telemetry::system_of(&llm.base_url);
                }
                t
            });
        let run_lease = match var("PLANBOARD_RUN_LEASE_SECS") {
            None => Duration::from_secs(30),
            Some(v) => match v.trim().parse::<u64>() {
                Ok(secs) if secs >= 3 => Duration::from_secs(secs),
                _ => {
                    return Err(ConfigError::Invalid(format!(
                    "PLANBOARD_RUN_LEASE_SECS must be a number of seconds, at least 3, not '{v}'"
                )))
                }
            },
        };
        let workspace_quota = match var("PLANBOARD_WORKSPACE_QUOTA_MB") {
            None => agent::workspace::DEFAULT_QUOTA,
            Some(v) => match v.trim().parse::<u64>() {
                Ok(mb) if mb >= 1 => mb.saturating_mul(1024 * 1024),
                _ => {
                    return Err(ConfigError::Invalid(format!(
                        "PLANBOARD_WORKSPACE_QUOTA_MB must be a whole number of MiB, at least 1, not '{v}'"
                    )))
                }
            },
        };
        Ok(Config {
            database_url,
            access,
            lease,
            instance: var("PLANBOARD_INSTANCE"),
            llm,
            workspaces: var("PLANBOARD_WORKSPACES")
                .unwrap_or_else(|| "data/workspaces".into())
                .into(),
            workspace_quota,
            local_model_home: var("PLANBOARD_LOCAL_MODEL_HOME").map(Into::into),
            run_lease,
            mcp_servers: match var("PLANBOARD_MCP_SERVERS") {
                Some(path) => agent::tools::mcp::read_servers(std::path::Path::new(&path))
                    .map_err(|e| ConfigError::Invalid(e.to_string()))?,
                None => Default::default(),
            },
            workspace_roots: var("PLANBOARD_WORKSPACE_ROOTS")
                .map(|roots| {
                    std::env::split_paths(&roots)
                        .filter(|p| !p.as_os_str().is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            tool_policies: match var("PLANBOARD_TOOL_POLICY") {
                None => Vec::new(),
                Some(list) => list
                    .split(',')
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .map(|entry| {
                        entry
                            .split_once('=')
                            .and_then(|(name, policy)| {
                                Some((name.trim().to_string(), policy.trim().parse().ok()?))
                            })
                            .filter(|(name, _)| !name.is_empty())
                            .ok_or_else(|| {
                                ConfigError::Invalid(format!(
                                    "PLANBOARD_TOOL_POLICY takes tool=auto|ask|never entries, not '{entry}'"
                                ))
                            })
                    })
                    .collect::<Result<_, _>>()?,
            },
            sandbox: switch(&var, "PLANBOARD_SANDBOX", true)?,
            fetch: agent::tools::web::WebPolicy {
                allow_private: switch(&var, "PLANBOARD_FETCH_ALLOW_PRIVATE", false)?,
                allowed: match var("PLANBOARD_FETCH_ALLOW") {
                    None => Vec::new(),
                    Some(list) => list
                        .split(',')
                        .map(str::trim)
                        .filter(|e| !e.is_empty())
                        .map(|entry| {
                            entry.parse::<SocketAddr>().map_err(|_| {
                                ConfigError::Invalid(format!(
                                    "PLANBOARD_FETCH_ALLOW takes address:port entries \
                                     (127.0.0.1:8080, [::1]:80), not '{entry}'"
                                ))
                            })
                        })
                        .collect::<Result<_, _>>()?,
                },
                ..agent::tools::web::WebPolicy::default()
            },
            prices,
            webhooks,
            telemetry,
            run_log_retention: retention(
                &var,
                "PLANBOARD_RUN_LOG_RETENTION_HOURS",
                "hours",
                3600,
                DEFAULT_RUN_LOG_RETENTION,
            )?,
            workspace_retention: retention(
                &var,
                "PLANBOARD_WORKSPACE_RETENTION_DAYS",
                "days",
                24 * 3600,
                DEFAULT_WORKSPACE_RETENTION,
            )?,
            approval_retention: retention(
                &var,
                "PLANBOARD_APPROVAL_RETENTION_DAYS",
                "days",
                24 * 3600,
                DEFAULT_APPROVAL_RETENTION,
            )?,
            approval_remind: retention(
                &var,
                "PLANBOARD_APPROVAL_REMIND_MINUTES",
                "minutes",
                60,
                DEFAULT_APPROVAL_REMIND,
            )?,
            approval_rules,
            public_url: match var("PLANBOARD_PUBLIC_URL") {
                None => None,
                Some(url) => Some(
                    reqwest::Url::parse(url.trim())
                        .ok()
                        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
                        .ok_or_else(|| {
                            ConfigError::Invalid(format!(
                                "PLANBOARD_PUBLIC_URL must be an http(s) URL, not '{}'",
                                redact_url(&url)
                            ))
                        })?,
                ),
            },
            allowed_hosts: allowed_hosts(var("PLANBOARD_ALLOWED_HOSTS"))?,
            search: search(&var)?,
        })
    }

    /// Local mode trusts everyone who can connect, so it only listens on loopback.
    pub fn check_bind(&self, addr: SocketAddr) -> Result<(), ConfigError> {
        if matches!(self.access, Access::Local { .. }) && !addr.ip().is_loopback() {
            return Err(ConfigError::Invalid(format!(
                "refusing to listen on {addr} without token mode: local mode has no login, so \
                 anyone who can reach the port could change every plan. Set PLANBOARD_TOKENS \
                 (name:role:token,…) or listen on 127.0.0.1."
            )));
        }
        Ok(())
    }
}

/// `PLANBOARD_APPROVAL_RULES`: `scope=rule` entries separated by `;` (see
/// the table above). `tokens` are the token mode's names (none in local
/// mode, where a rule is refused: everyone is the one local user, so
/// nobody else could approve).
fn approval_rules(
    list: Option<String>,
    tokens: &[String],
) -> Result<Vec<(run_model::RuleScope, run_model::ApprovalRule)>, ConfigError> {
    use run_model::{ApprovalRule, RuleScope};
    let Some(list) = list else {
        return Ok(Vec::new());
    };
    if tokens.is_empty() {
        return Err(ConfigError::Invalid(
            "PLANBOARD_APPROVAL_RULES needs token mode (PLANBOARD_TOKENS): in local mode everyone \
             is the one local user, so no other person could ever approve; set tokens for your \
             team or unset PLANBOARD_APPROVAL_RULES"
                .into(),
        ));
    }
    let bad = |entry: &str, why: &str| {
        ConfigError::Invalid(format!(
            "PLANBOARD_APPROVAL_RULES takes scope=rule entries (mode:complex=not-starter; \
             tool:run_shell=2:alice+bob): '{entry}' {why}"
        ))
    };
    let mut rules = Vec::new();
    for entry in list.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let (scope, rule) = entry
            .split_once('=')
            .ok_or_else(|| bad(entry, "has no '='"))?;
        let scope = match scope.trim().split_once(':') {
            None if scope.trim() == "all" => RuleScope::All,
            Some(("mode", mode)) => RuleScope::Mode(
                plan_engine::Mode::from_wire(mode.trim())
                    .ok_or_else(|| bad(entry, "names no mode"))?,
            ),
            Some(("tool", tool)) if !tool.trim().is_empty() => {
                RuleScope::Tool(tool.trim().to_string())
            }
            Some(("template", name)) if !name.trim().is_empty() => {
                RuleScope::Template(name.trim().to_string())
            }
            _ => return Err(bad(entry, "has no scope all, mode:, tool: or template:")),
        };
        let mut parsed = ApprovalRule::default();
        for part in rule.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part == "not-starter" {
                parsed.not_starter = true;
                continue;
            }
            let (count, names) = match part.split_once(':') {
                Some((count, names)) => (count, Some(names)),
                None => (part, None),
            };
            parsed.at_least = count
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=20).contains(n))
                .ok_or_else(|| bad(entry, "needs not-starter, a count of 1 to 20, or n:names"))?;
            if let Some(names) = names {
                parsed.approvers = names
                    .split('+')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_string)
                    .collect();
                if let Some(unknown) = parsed.approvers.iter().find(|n| !tokens.contains(n)) {
                    return Err(bad(entry, &format!("names {unknown}, who has no token")));
                }
                if parsed.approvers.len() < parsed.at_least as usize {
                    return Err(bad(
                        entry,
                        "asks for more approvals than it names approvers",
                    ));
                }
            }
        }
        if parsed.is_plain() {
            return Err(bad(entry, "asks nothing more than one approval"));
        }
        rules.push((scope, parsed));
    }
    Ok(rules)
}

/// `PLANBOARD_TRUSTED_PROXIES`: addresses or CIDR blocks; names are not
/// resolved (a proxy's address is what the connection shows).
fn trusted_proxies(list: Option<String>) -> Result<Vec<IpRange>, ConfigError> {
    let Some(list) = list else {
        return Ok(Vec::new());
    };
    list.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|entry| {
            IpRange::parse(entry).ok_or_else(|| {
                ConfigError::Invalid(format!(
                    "PLANBOARD_TRUSTED_PROXIES takes IP addresses or CIDR blocks separated by \
                     commas (10.0.0.1, 10.0.0.0/8, fd00::/8), not '{entry}'"
                ))
            })
        })
        .collect()
}

/// `PLANBOARD_ALLOWED_HOSTS`: host names (with a port, or a leading `.`
/// for subdomains), not URLs: a scheme or a path is a mistake worth naming.
fn allowed_hosts(list: Option<String>) -> Result<Vec<String>, ConfigError> {
    let Some(list) = list else {
        return Ok(Vec::new());
    };
    list.split(',')
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty())
        .map(|entry| {
            let (name, port) = match entry.trim_start_matches('.').split_once(':') {
                Some((name, port)) => (name.to_string(), Some(port.to_string())),
                None => (entry.trim_start_matches('.').to_string(), None),
            };
            let name_ok = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
            let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok());
            if name_ok && port_ok {
                Ok(entry)
            } else {
                Err(ConfigError::Invalid(format!(
                    "PLANBOARD_ALLOWED_HOSTS takes host names separated by commas \
                     (board.example, board.example:8443, .example.org), not '{entry}'"
                )))
            }
        })
        .collect()
}

/// The two kinds of database planboard speaks; anything else is a typo
/// worth naming before a connection is tried.
/// An on/off variable: `on`/`true`/`1` or `off`/`false`/`0`.
fn switch(
    var: &impl Fn(&str) -> Option<String>,
    name: &str,
    default: bool,
) -> Result<bool, ConfigError> {
    match var(name).as_deref().map(str::trim) {
        None => Ok(default),
        Some("on" | "true" | "1") => Ok(true),
        Some("off" | "false" | "0") => Ok(false),
        Some(other) => Err(ConfigError::Invalid(format!(
            "{name} must be on or off, not '{other}'"
        ))),
    }
}

fn check_database_url(url: &str) -> Result<(), ConfigError> {
    if crate::store::SqlStore::supports(url) {
        return Ok(());
    }
    Err(ConfigError::Invalid(format!(
        "DATABASE_URL must be sqlite:<path> (for example sqlite://data/planboard.db) or \
         postgres://user:password@host:5432/db, not '{}'",
        redact_url(url)
    )))
}

fn add_token(
    tokens: &mut HashMap<String, Identity>,
    parts: &[&str],
    entry: &str,
) -> Result<(), ConfigError> {
    let [name, role, token] = parts else {
        return Err(ConfigError::Invalid(format!(
            "a token entry must be name, role and token; got '{}'",
            entry.split(':').next().unwrap_or_default()
        )));
    };
    let role = Role::parse(role).ok_or_else(|| {
        ConfigError::Invalid(format!(
            "token '{name}' has role '{role}'; the roles are viewer, operator and admin"
        ))
    })?;
    let bits = token_bits(token);
    let distinct = token.chars().collect::<HashSet<char>>().len();
    if bits + 1e-9 < TOKEN_BITS || distinct < TOKEN_DISTINCT {
        return Err(ConfigError::Invalid(format!(
            "the token of '{name}' is too easy to guess: about {} bits ({} characters, {distinct} \
             different); a token needs at least {TOKEN_BITS} bits and {TOKEN_DISTINCT} different \
             characters. Make one with `openssl rand -hex 16` (128 bits) or \
             `openssl rand -hex 32` (256 bits)",
            bits.floor(),
            token.chars().count(),
        )));
    }
    tokens.insert(token.to_string(), Identity::new(*name, role));
    Ok(())
}

/// The fewest bits a token may carry ([`token_bits`]).
const TOKEN_BITS: f64 = 128.0;

/// The fewest different characters a token may have: `aaaa…` or
/// `abab…` are long, not random.
const TOKEN_DISTINCT: usize = 8;

/// What a token would carry if it were random: its length times log2 of
/// the alphabet its kinds of characters make (lower case 26, upper case
/// 26, digits 10, anything else 33, the rest of printable ASCII; a token
/// of hex digits only, in one case, 16). An estimate that trusts the
/// token to be random: it refuses the short and the narrow, not a
/// password that looks random.
fn token_bits(token: &str) -> f64 {
    let any = |kind: fn(&u8) -> bool| token.as_bytes().iter().any(kind);
    let all = |kind: fn(&u8) -> bool| token.as_bytes().iter().all(kind);
    let kinds: u32 = [
        (26u32, any(u8::is_ascii_lowercase)),
        (26, any(u8::is_ascii_uppercase)),
        (10, any(u8::is_ascii_digit)),
        (33, any(|b| !b.is_ascii_alphanumeric())),
    ]
    .iter()
    .filter(|(_, used)| *used)
    .map(|(size, _)| size)
    .sum();
    let hex = all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        || all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(b));
    let alphabet = if hex { kinds.min(16) } else { kinds };
    token.chars().count() as f64 * f64::from(alphabet.max(1)).log2()
}

/// One place notifications go.
#[derive(Clone)]
pub struct Endpoint {
    pub url: reqwest::Url,
    /// Signs each body (`X-Planboard-Signature`); `None`: unsigned.
    pub secret: Option<String>,
    /// Slack's incoming-webhook shape (`{"text": …}`) instead of the JSON
    /// payload.
    pub slack: bool,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &crate::store::shown_url(self.url.as_str()))
            .field("secret", &self.secret.as_ref().map(|_| "<set>"))
            .field("slack", &self.slack)
            .finish()
    }
}

/// Where and how to deliver.
#[derive(Clone, Debug)]
pub struct WebhookConfig {
    pub endpoints: Vec<Endpoint>,
    /// The board's address for people (links in the payloads).
    pub board_url: String,
    /// The first retry's wait; each next one doubles it (at most an hour).
    pub retry_base: Duration,
    pub max_attempts: u32,
    /// How often the deliverer looks for new entries and due deliveries.
    pub poll: Duration,
    /// Per delivery attempt.
    pub timeout: Duration,
    /// How old a log entry must be before the cursor moves past it: on
    /// PostgreSQL a lower `seq` may commit after a higher one, so the
    /// newest entries are read again each round (recording a delivery
    /// twice adds nothing) until none below them can still appear.
    pub settle: Duration,
    /// Deliveries that are over are deleted after this long
    /// (`PLANBOARD_WEBHOOK_RETENTION_DAYS`, 30 days).
    pub retention: Duration,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        WebhookConfig {
            endpoints: Vec::new(),
            board_url: "http://127.0.0.1:3000".into(),
            retry_base: Duration::from_secs(2),
            max_attempts: 10,
            poll: Duration::from_millis(500),
            timeout: Duration::from_secs(10),
            settle: Duration::from_secs(10),
            retention: Duration::from_secs(30 * 24 * 3600),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Role;

    #[test]
    fn debug_output_redacts_the_database_password_and_every_token() {
        let mut tokens = HashMap::new();
        tokens.insert(
            "s3cret-9f8e7d6c5b4a39281706f5e4d3c2b1a0".to_string(),
            Identity::new("alice", Role::Admin),
        );
        let llm = agent::LlmConfig::from_vars(|n| match n {
            "PLANBOARD_LLM_MODEL" => Some("gpt".into()),
            "PLANBOARD_LLM_API_KEY" => Some("sk-live-key".into()),
            _ => None,
        })
        .unwrap();
        let config = Config {
            lease: Duration::from_secs(60),
            llm,
            ..Config::defaults(
                "postgres://planner:hunter2@db:5432/plans",
                Access::Tokens(tokens.into()),
            )
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-live-key"), "{shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(
            shown.contains("postgres://planner:<redacted>@db:5432/plans"),
            "{shown}"
        );
        assert!(shown.contains("alice:admin:<redacted>"), "{shown}");
    }

    #[test]
    fn retentions_are_on_by_default_whole_units_or_off() {
        let defaults = config(&[]).unwrap();
        assert_eq!(
            defaults.run_log_retention,
            Some(Duration::from_secs(30 * 24 * 3600))
        );
        assert_eq!(
            defaults.workspace_retention,
            Some(Duration::from_secs(7 * 24 * 3600))
        );
        let kept = config(&[
            ("PLANBOARD_RUN_LOG_RETENTION_HOURS", "24"),
            ("PLANBOARD_WORKSPACE_RETENTION_DAYS", "2"),
        ])
        .unwrap();
        assert_eq!(kept.run_log_retention, Some(Duration::from_secs(24 * 3600)));
        assert_eq!(
            kept.workspace_retention,
            Some(Duration::from_secs(2 * 24 * 3600))
        );
        let off = config(&[
            ("PLANBOARD_RUN_LOG_RETENTION_HOURS", "off"),
            ("PLANBOARD_WORKSPACE_RETENTION_DAYS", "OFF"),
        ])
        .unwrap();
        assert_eq!(off.run_log_retention, None);
        assert_eq!(off.workspace_retention, None);
        for bad in ["0", "-1", "1.5", "day"] {
            for name in [
                "PLANBOARD_RUN_LOG_RETENTION_HOURS",
                "PLANBOARD_WORKSPACE_RETENTION_DAYS",
            ] {
                let e = config(&[(name, bad)]).unwrap_err();
                assert!(e.to_string().contains(name), "{name}={bad}: {e}");
            }
        }
    }

    #[test]
    fn webhook_retention_is_whole_days_and_tracing_names_the_models_provider() {
        let kept = config(&[("PLANBOARD_WEBHOOK_RETENTION_DAYS", "7")]).unwrap();
        assert_eq!(kept.webhooks.retention, Duration::from_secs(7 * 24 * 3600));
        for bad in ["0", "-1", "a week"] {
            assert!(
                config(&[("PLANBOARD_WEBHOOK_RETENTION_DAYS", bad)]).is_err(),
                "{bad}"
            );
        }
        assert!(config(&[]).unwrap().telemetry.is_none());
        let traced = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            ("PLANBOARD_LLM_MODEL", "deepseek-chat"),
            ("PLANBOARD_LLM_BASE_URL", "https://api.deepseek.com/v1"),
        ])
        .unwrap();
        let telemetry = traced.telemetry.unwrap();
        assert_eq!(telemetry.system, "deepseek");
        assert_eq!(telemetry.endpoint, "http://collector:4318/v1/traces");
        assert!(config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector")]).is_err());
    }

    #[test]
    fn prices_come_inline_or_from_a_file_and_a_local_model_is_free() {
        let remote = config(&[("PLANBOARD_LLM_MODEL", "gpt-4o")]).unwrap();
        assert!(remote.prices.cost("gpt-4o", 1_000_000, 0).unwrap() > run_model::Usd::ZERO);
        let local = config(&[
            ("PLANBOARD_LLM_MODEL", "qwen"),
            ("PLANBOARD_LLM_BASE_URL", "http://127.0.0.1:8091/v1"),
        ])
        .unwrap();
        assert_eq!(
            local.prices.cost("qwen", 1_000, 1_000),
            Some(run_model::Usd::ZERO)
        );
        let inline = config(&[(
            "PLANBOARD_PRICES",
            r#"{"house-model": {"prompt": 1, "completion": 3}}"#,
        )])
        .unwrap();
        assert_eq!(
            inline.prices.cost("house-model", 1_000_000, 1_000_000),
            run_model::Usd::from_dollars(4.0)
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("prices.json");
        std::fs::write(&file, r#"{"house-model": {"prompt": 2, "completion": 2}}"#).unwrap();
        let from_file = config(&[("PLANBOARD_PRICES", file.to_str().unwrap())]).unwrap();
        assert_eq!(
            from_file.prices.cost("house-model", 1_000_000, 0),
            run_model::Usd::from_dollars(2.0)
        );
        let bad = config(&[("PLANBOARD_PRICES", r#"{"m": {"prompt": "cheap"}}"#)]).unwrap_err();
        assert!(
            bad.to_string()
                .starts_with("PLANBOARD_PRICES: the price table"),
            "{bad}"
        );
        let missing = config(&[("PLANBOARD_PRICES", "/nowhere/prices.json")]).unwrap_err();
        assert!(
            missing.to_string().contains("cannot read PLANBOARD_PRICES"),
            "{missing}"
        );
    }

    #[test]
    fn search_is_duckduckgo_unless_another_provider_is_chosen_with_its_setting() {
        use agent::tools::web::SearchProvider;
        let name = |vars: &[(&str, &str)]| config(vars).unwrap().search.name();
        assert_eq!(name(&[]), "DuckDuckGo");
        assert_eq!(name(&[("PLANBOARD_SEARCH", " DuckDuckGo ")]), "DuckDuckGo");
        assert_eq!(name(&[("PLANBOARD_SEARCH", "off")]), "none");
        // The URL alone still picks SearXNG, as before there was a choice.
        let searxng = config(&[("PLANBOARD_SEARCH_URL", "http://10.0.0.5:8080/search")]).unwrap();
        assert!(
            matches!(&searxng.search, SearchProvider::SearXng { url } if url.as_str() == "http://10.0.0.5:8080/search"),
            "{:?}",
            searxng.search
        );
        assert_eq!(
            name(&[
                ("PLANBOARD_SEARCH", "searxng"),
                ("PLANBOARD_SEARCH_URL", "https://search.internal/search"),
            ]),
            "SearXNG"
        );
        let brave = config(&[
            ("PLANBOARD_SEARCH", "brave"),
            ("PLANBOARD_BRAVE_API_KEY", "BSA-brave-secret"),
        ])
        .unwrap();
        assert!(
            matches!(&brave.search, SearchProvider::Brave { base, .. } if base.as_str() == SearchProvider::BRAVE_URL)
        );
        let tavily = config(&[
            ("PLANBOARD_SEARCH", "tavily"),
            ("PLANBOARD_TAVILY_API_KEY", "tvly-secret"),
        ])
        .unwrap();
        assert!(
            matches!(&tavily.search, SearchProvider::Tavily { base, .. } if base.as_str() == SearchProvider::TAVILY_URL)
        );
        // Clear errors: a missing key or URL, an unknown provider, a
        // setting the choice would ignore; no key in any of them.
        for (vars, says) in [
            (
                &[("PLANBOARD_SEARCH", "brave")][..],
                "needs PLANBOARD_BRAVE_API_KEY",
            ),
            (
                &[("PLANBOARD_SEARCH", "tavily")][..],
                "needs PLANBOARD_TAVILY_API_KEY",
            ),
            (
                &[("PLANBOARD_SEARCH", "searxng")][..],
                "needs PLANBOARD_SEARCH_URL",
            ),
            (
                &[("PLANBOARD_SEARCH", "google")][..],
                "PLANBOARD_SEARCH must be duckduckgo, searxng, brave, tavily or off, not 'google'",
            ),
            (
                &[("PLANBOARD_SEARCH_URL", "searxng.internal/search")][..],
                "PLANBOARD_SEARCH_URL must be an http(s) URL",
            ),
            (
                &[("PLANBOARD_BRAVE_API_KEY", "BSA-brave-secret")][..],
                "set PLANBOARD_SEARCH=brave or unset PLANBOARD_BRAVE_API_KEY",
            ),
            (
                &[
                    ("PLANBOARD_SEARCH", "brave"),
                    ("PLANBOARD_BRAVE_API_KEY", "BSA-brave-secret"),
                    ("PLANBOARD_TAVILY_API_KEY", "tvly-secret"),
                ][..],
                "PLANBOARD_TAVILY_API_KEY is set, but web_search uses brave",
            ),
        ] {
            let err = config(vars).unwrap_err().to_string();
            assert!(err.contains(says), "{vars:?}: {err}");
            assert!(!err.contains("secret"), "{err}");
        }
        // Off ignores leftovers: it sends nothing anywhere.
        assert_eq!(
            name(&[
                ("PLANBOARD_SEARCH", "off"),
                ("PLANBOARD_BRAVE_API_KEY", "BSA-brave-secret"),
            ]),
            "none"
        );
    }

    #[test]
    fn debug_output_redacts_the_search_keys_and_the_search_urls_password() {
        for (provider, key) in [("brave", "BSA-brave-secret"), ("tavily", "tvly-secret")] {
            let variable = format!("PLANBOARD_{}_API_KEY", provider.to_ascii_uppercase());
            let c = config(&[("PLANBOARD_SEARCH", provider), (&variable, key)]).unwrap();
            let shown = format!("{c:?}");
            assert!(!shown.contains(key), "{shown}");
            assert!(shown.contains("key: <redacted>"), "{shown}");
        }
        let c = config(&[(
            "PLANBOARD_SEARCH_URL",
            "https://bot:pa55word@search.internal/search",
        )])
        .unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("pa55word"), "{shown}");
        assert!(shown.contains("search.internal"), "{shown}");
    }

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_vars(|name| vars.get(name).cloned())
    }

    #[test]
    fn approval_rules_need_token_mode_and_name_token_holders() {
        let rules = "mode:complex=not-starter; tool:run_shell=2:alice+bob";
        let local = config(&[("PLANBOARD_APPROVAL_RULES", rules)]).unwrap_err();
        assert!(local.to_string().contains("needs token mode"), "{local}");
        let tokens = format!("alice:operator:{ALICE},bob:admin:{BOB}");
        let parsed = config(&[
            ("PLANBOARD_TOKENS", &tokens),
            ("PLANBOARD_APPROVAL_RULES", rules),
        ])
        .unwrap()
        .approval_rules;
        assert_eq!(parsed.len(), 2);
        assert_eq!(
            parsed[0].0,
            run_model::RuleScope::Mode(plan_engine::Mode::Complex)
        );
        assert!(parsed[0].1.not_starter);
        assert_eq!(parsed[1].0, run_model::RuleScope::Tool("run_shell".into()));
        assert_eq!((parsed[1].1.at_least, parsed[1].1.approvers.len()), (2, 2));
        for (bad, why) in [
            ("tool:run_shell=2:alice+zed", "who has no token"),
            ("tool:run_shell=3:alice+bob", "more approvals than"),
            ("mode:fast=not-starter", "names no mode"),
            ("all=1", "nothing more than one approval"),
        ] {
            let e = config(&[
                ("PLANBOARD_TOKENS", &tokens),
                ("PLANBOARD_APPROVAL_RULES", bad),
            ])
            .unwrap_err();
            assert!(e.to_string().contains(why), "{bad}: {e}");
        }
    }

    const ALICE: &str = "279bb10a2541907ef5c61a58dcbfc228";
    const BOB: &str = "565c784144a28c3d54db9d538dc42cd3";
    const CAROL: &str = "7725CDC49850648B8DA247695F46DDF7";

    #[test]
    fn tokens_come_from_the_variable_or_a_file_and_must_carry_128_bits() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens");
        std::fs::write(
            &file,
            format!("# who role token\nbob viewer {BOB}\n\ncarol admin {CAROL}\n"),
        )
        .unwrap();
        let c = config(&[
            ("PLANBOARD_TOKENS", &format!("alice:operator:{ALICE}")),
            ("PLANBOARD_TOKENS_FILE", file.to_str().unwrap()),
        ])
        .unwrap();
        let Access::Tokens(tokens) = c.access else {
            panic!("token mode")
        };
        assert_eq!(tokens.len(), 3);
        assert_eq!(tokens[BOB], Identity::new("bob", Role::Viewer));
        assert_eq!(tokens[CAROL].role, Role::Admin);
        assert_eq!(tokens[ALICE].role, Role::Operator);

        let short = config(&[("PLANBOARD_TOKENS", "alice:admin:fifteen-chars-x")]).unwrap_err();
        assert!(short.to_string().contains("too easy to guess"), "{short}");
        let role = config(&[("PLANBOARD_TOKENS", &format!("alice:root:{ALICE}"))]).unwrap_err();
        assert!(
            role.to_string().contains("viewer, operator and admin"),
            "{role}"
        );
        let missing = config(&[("PLANBOARD_TOKENS_FILE", "/no/such/file")]).unwrap_err();
        assert!(
            missing.to_string().contains("PLANBOARD_TOKENS_FILE"),
            "{missing}"
        );
        // No tokens: local mode; the lease in seconds.
        let local = config(&[("PLANBOARD_USER", "dana"), ("PLANBOARD_LEASE_SECS", "90")]).unwrap();
        assert!(matches!(local.access, Access::Local { ref user } if user == "dana"));
        assert_eq!(local.lease, Duration::from_secs(90));
        let bad = config(&[("PLANBOARD_LEASE_SECS", "soon")]).unwrap_err();
        assert!(bad.to_string().contains("PLANBOARD_LEASE_SECS"), "{bad}");
    }

    #[test]
    fn a_sixteen_letter_token_of_75_bits_is_refused_and_32_hex_digits_of_128_bits_are_taken() {
        let token = |text: &str| config(&[("PLANBOARD_TOKENS", &format!("alice:admin:{text}"))]);
        // 16 × log2(26) ≈ 75.2 bits.
        let weak = token("qwertzuiopasdfgh").unwrap_err().to_string();
        assert!(weak.contains("about 75 bits"), "{weak}");
        assert!(weak.contains("at least 128 bits"), "{weak}");
        assert!(weak.contains("openssl rand -hex 16"), "{weak}");
        assert!(
            !weak.contains("qwertzuiopasdfgh"),
            "the token is not shown: {weak}"
        );
        // 32 × log2(16) = 128 bits, what `openssl rand -hex 16` prints.
        assert!(token(ALICE).is_ok());
        assert!(token(CAROL).is_ok(), "upper-case hex too");
        assert!(token("a026ef2cd8b535f3f6975da11a22278ce6a9051d6fbf543905aa9638c70da154").is_ok());
        // 31 hex digits: 124 bits.
        assert!(token(&ALICE[1..]).is_err());
        // Long but narrow: fewer than 8 different characters.
        let narrow = token(&"abcdefg".repeat(10)).unwrap_err().to_string();
        assert!(narrow.contains("7 different"), "{narrow}");
        assert!(token(&"a".repeat(64)).is_err());
        // Mixed kinds count their alphabets: 22 × log2(26 + 26 + 10) ≈ 131 bits.
        assert!(token("Xk9mQ2vR7tLp4WzB8nJc3H").is_ok());
        assert!((token_bits(ALICE) - 128.0).abs() < 1e-9);
        assert!((token_bits("0123456789") - 10.0 * 10f64.log2()).abs() < 1e-9);
    }

    #[test]
    fn trusted_proxies_are_addresses_or_cidr_blocks_and_anything_else_is_refused() {
        let c = config(&[
            ("PLANBOARD_TOKENS", &format!("alice:admin:{ALICE}")),
            (
                "PLANBOARD_TRUSTED_PROXIES",
                " 127.0.0.1, 10.0.0.0/8 ,,fd00::/8",
            ),
        ])
        .unwrap();
        let Access::Tokens(tokens) = &c.access else {
            panic!("token mode")
        };
        assert_eq!(
            tokens.trusted_proxies(),
            [
                IpRange::parse("127.0.0.1").unwrap(),
                IpRange::parse("10.0.0.0/8").unwrap(),
                IpRange::parse("fd00::/8").unwrap(),
            ]
        );
        let shown = format!("{c:?}");
        assert!(shown.contains("10.0.0.0/8"), "{shown}");
        for bad in ["proxy.internal", "10.0.0.0/40", "10.0.0.1:8080"] {
            let err = config(&[("PLANBOARD_TRUSTED_PROXIES", bad)]).unwrap_err();
            assert!(
                err.to_string().contains("PLANBOARD_TRUSTED_PROXIES"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn the_public_url_and_allowed_hosts_are_checked_names_not_urls() {
        let c = config(&[
            ("PLANBOARD_PUBLIC_URL", "https://board.example/"),
            (
                "PLANBOARD_ALLOWED_HOSTS",
                " Plans.Internal:8443, .corp.example ,,",
            ),
        ])
        .unwrap();
        assert_eq!(
            c.public_url
                .map(|u| u.host_str().unwrap_or_default().to_string()),
            Some("board.example".into())
        );
        assert_eq!(c.allowed_hosts, ["plans.internal:8443", ".corp.example"]);
        assert!(config(&[]).unwrap().public_url.is_none());
        for bad in [
            "https://board.example",
            "board.example/x",
            "board.example:http",
            "a b",
        ] {
            let err = config(&[("PLANBOARD_ALLOWED_HOSTS", bad)]).unwrap_err();
            assert!(
                err.to_string().contains("PLANBOARD_ALLOWED_HOSTS"),
                "{bad}: {err}"
            );
        }
        let err = config(&[("PLANBOARD_PUBLIC_URL", "board.example")]).unwrap_err();
        assert!(err.to_string().contains("PLANBOARD_PUBLIC_URL"), "{err}");
    }

    #[test]
    fn a_malformed_database_url_is_a_configuration_error_naming_the_variable() {
        let err = check_database_url("mysql://root:pw@x/db")
            .unwrap_err()
            .to_string();
        assert!(err.contains("DATABASE_URL"), "{err}");
        assert!(!err.contains("pw@"), "{err}");
        assert!(check_database_url("sqlite://data/planboard.db").is_ok());
        assert!(check_database_url("postgres://u:p@h/d").is_ok());
    }
}
