//! [`OpenAiLlm`]: async-openai against any OpenAI-compatible endpoint
//! (OpenAI, DeepSeek, Qwen/DashScope, Ollama, vLLM, llama.cpp's server).
//!
//! Requests and replies go through async-openai's `byot` methods as raw
//! JSON, because local servers deviate from the typed schema (`finish_reason:
//! ""`, no `usage`, `content: null` next to tool calls). Replies stream
//! (`stream: true`, unless `PLANBOARD_LLM_STREAM=false`) and each piece goes
//! to the caller's delta sink as it arrives. The HTTP transport
//! is our own tower service: it has no retry layer (retries live in
//! [`crate::retry`] only) and it turns an error status into an error that
//! keeps the status and `Retry-After`, which async-openai would drop.

use std::fmt;
use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use async_openai::Client;
use serde_json::{json, Value};

use futures_util::StreamExt;

use super::{
    CallRole, Capacity, ChatReply, ChatRequest, ErrorClass, FunctionCall, Llm, LlmError, OnDelta,
    Protocol, Shape, Usage,
};

/// Where the model is and how to talk to it. Read from the environment by
/// [`LlmConfig::from_vars`]; the key is never printed.
#[derive(Clone)]
pub struct LlmConfig {
    pub base_url: String,
    pub api_key: String,
    pub model: String,
    /// A cheaper model for the classifier, if set.
    pub classifier_model: Option<String>,
    /// The endpoint's embedding model (`PLANBOARD_EMBEDDING_MODEL`): when
    /// set, recall ranks memories by their embeddings too (hybrid).
    pub embedding_model: Option<String>,
    /// Per attempt.
    pub timeout: Duration,
    /// Most LLM calls in flight at once, across all runs
    /// (`PLANBOARD_LLM_CONCURRENCY`). `0` (`auto`, the default): as many
    /// as the endpoint says it serves at once (llama.cpp's server: its
    /// slots, [`LlmConfig::capacity`]), else
    /// [`super::queue::DEFAULT_CONCURRENCY`]. See [`super::ModelQueue`].
    pub concurrency: usize,
    pub protocol: Protocol,
    /// Ask for the reply as a stream of pieces (`stream: true`), so people
    /// see it being written; off for servers that cannot stream.
    pub stream: bool,
}

impl fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmConfig")
            .field("base_url", &self.base_url)
            .field(
                "api_key",
                &if self.api_key.is_empty() { "" } else { "<set>" },
            )
            .field("model", &self.model)
            .field("classifier_model", &self.classifier_model)
            .field("embedding_model", &self.embedding_model)
            .field("timeout", &self.timeout)
            .field("concurrency", &self.concurrency)
            .field("protocol", &self.protocol)
            .field("stream", &self.stream)
            .finish()
    }
}

const OPENAI: &str = "https://api.openai.com/v1";

/// A configuration variable with a value that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{name} must be {expected}, not {given:?}")]
pub struct BadVar {
    pub name: &'static str,
    pub expected: &'static str,
    pub given: String,
}

/// Why the model client could not be made.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the HTTP client: {0}")]
pub struct ClientError(#[from] reqwest::Error);

impl LlmConfig {
    /// `Ok(None)` when no model is configured: everything but runs works.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<LlmConfig>, BadVar> {
        let get = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| var(n).filter(|v| !v.trim().is_empty()))
        };
        let Some(model) = get(&["PLANBOARD_LLM_MODEL"]) else {
            return Ok(None);
        };
        let number = |name: &'static str, default: u64| -> Result<u64, BadVar> {
            match var(name) {
                None => Ok(default),
                Some(v) => v
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or(BadVar {
                        name,
                        expected: "a positive whole number",
                        given: v,
                    }),
            }
        };
        let protocol = match var("PLANBOARD_LLM_PROTOCOL").as_deref().map(str::trim) {
            None | Some("" | "auto") => Protocol::Auto,
            Some("json_schema") => Protocol::JsonSchema,
            Some("tool_calls") => Protocol::ToolCalls,
            Some(other) => {
                return Err(BadVar {
                    name: "PLANBOARD_LLM_PROTOCOL",
                    expected: "auto, json_schema or tool_calls",
                    given: other.to_string(),
                })
            }
        };
        let stream = match var("PLANBOARD_LLM_STREAM").as_deref().map(str::trim) {
            None | Some("" | "true" | "1" | "on") => true,
            Some("false" | "0" | "off") => false,
            Some(other) => {
                return Err(BadVar {
                    name: "PLANBOARD_LLM_STREAM",
                    expected: "true or false",
                    given: other.to_string(),
                })
            }
        };
        let base_url = get(&["PLANBOARD_LLM_BASE_URL", "OPENAI_BASE_URL"])
            .unwrap_or_else(|| OPENAI.to_string())
            .trim_end_matches('/')
            .to_string();
        Ok(Some(LlmConfig {
            base_url,
            api_key: get(&["PLANBOARD_LLM_API_KEY", "OPENAI_API_KEY"]).unwrap_or_default(),
            model,
            classifier_model: get(&["PLANBOARD_LLM_CLASSIFIER_MODEL"]),
            embedding_model: get(&["PLANBOARD_EMBEDDING_MODEL"]),
            timeout: Duration::from_secs(number("PLANBOARD_LLM_TIMEOUT_SECS", 120)?),
            concurrency: concurrency(var("PLANBOARD_LLM_CONCURRENCY"))?,
            protocol,
            stream,
        }))
    }
}

/// `PLANBOARD_LLM_CONCURRENCY`: unset, empty or `auto` is `0` (ask the
/// endpoint); else a positive whole number.
fn concurrency(value: Option<String>) -> Result<usize, BadVar> {
    let Some(given) = value else {
        return Ok(0);
    };
    let number = given.trim();
    if number.is_empty() || number == "auto" {
        return Ok(0);
    }
    if let Some(n) = number.parse::<usize>().ok().filter(|n| *n > 0) {
        return Ok(n);
    }
    Err(BadVar {
        name: "PLANBOARD_LLM_CONCURRENCY",
        expected: "auto or a positive whole number",
        given,
    })
}

/// The server's own root for a base URL with `/v1`: llama.cpp's server
/// answers `/props` and `/slots` beside `/v1`, not under it.
fn server_root(base_url: &str) -> &str {
    let base = base_url.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base)
}

/// How many requests at once a llama.cpp-style answer says the server
/// serves: `GET /props` answers an object with `total_slots` (its
/// `--parallel`), `GET /slots` an array with one object per slot (some
/// versions and proxies wrap it as `{"slots": [...]}`). `None` when the
/// answer says nothing usable.
pub(crate) fn slots_in(answer: &Value) -> Option<usize> {
    let count = match answer {
        Value::Array(slots) => slots.len() as u64,
        Value::Object(fields) => match (fields.get("total_slots"), fields.get("slots")) {
            (Some(total), _) => total.as_u64()?,
            (None, Some(Value::Array(slots))) => slots.len() as u64,
            _ => return None,
        },
        _ => return None,
    };
    usize::try_from(count)
        .ok()
        .filter(|n| *n > 0)
        .map(|n| n.min(super::queue::MAX_SLOTS))
}

/// A body of at most `cap` bytes, or `None`.
async fn body_within(mut response: reqwest::Response, cap: usize) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.len() + chunk.len() > cap {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    Some(body)
}

/// An error status as our transport saw it, before async-openai parses it.
#[derive(Debug)]
struct HttpFailure {
    status: u16,
    retry_after: Option<Duration>,
    body: String,
}

impl fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "status {}", self.status)
    }
}

impl std::error::Error for HttpFailure {}

pub struct OpenAiLlm {
    client: Client<OpenAIConfig>,
    config: LlmConfig,
}

impl LlmConfig {
    /// Whether the endpoint is on this machine or the local network
    /// (loopback, private or link-local address, `localhost`, `*.local`):
    /// a model served there costs nothing per token.
    pub fn runs_locally(&self) -> bool {
        let Ok(url) = reqwest::Url::parse(&self.base_url) else {
            return false;
        };
        let Some(host) = url.host_str() else {
            return false;
        };
        match host.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(ip)) => {
                ip.is_loopback() || ip.is_private() || ip.is_link_local()
            }
            Ok(std::net::IpAddr::V6(ip)) => {
                ip.is_loopback() || (ip.segments()[0] & 0xfe00) == 0xfc00
            }
            Err(_) => {
                host == "localhost" || host.ends_with(".localhost") || host.ends_with(".local")
            }
        }
    }

    /// Whether the endpoint answers at all (any HTTP status counts: a
    /// provider that wants a key for `/models` is up); a local model
    /// server that is still starting refuses the connection.
    pub async fn answers(&self) -> bool {
        let Ok(http) = reqwest::Client::builder()
            .timeout(Duration::from_secs(3))
            .build()
        else {
            return false;
        };
        let mut request = http.get(format!("{}/models", self.base_url.trim_end_matches('/')));
        if !self.api_key.is_empty() {
            request = request.bearer_auth(&self.api_key);
        }
        request.send().await.is_ok()
    }

    /// How many requests the endpoint serves at once, asked of the server
    /// itself: llama.cpp's server answers `GET /props` with `total_slots`
    /// and `GET /slots` with one entry per slot (both beside `/v1`); other
    /// servers answer neither ([`Capacity::Unknown`]); one that answers
    /// nothing at all is [`Capacity::Unreachable`].
    pub async fn capacity(&self) -> Capacity {
        let Ok(http) = reqwest::Client::builder()
            .timeout(Duration::from_secs(3))
            .build()
        else {
            return Capacity::Unknown;
        };
        let root = server_root(&self.base_url);
        let mut answered = false;
        for path in ["props", "slots"] {
            let mut request = http.get(format!("{root}/{path}"));
            if !self.api_key.is_empty() {
                request = request.bearer_auth(&self.api_key);
            }
            let Ok(response) = request.send().await else {
                continue;
            };
            answered = true;
            if !response.status().is_success() {
                continue;
            }
            let slots = body_within(response, 1 << 20)
                .await
                .and_then(|body| serde_json::from_slice::<Value>(&body).ok())
                .and_then(|answer| slots_in(&answer));
            if let Some(slots) = slots {
                return Capacity::Slots(slots);
            }
        }
        if answered {
            Capacity::Unknown
        } else {
            Capacity::Unreachable
        }
    }
}

impl OpenAiLlm {
    pub fn new(config: LlmConfig) -> Result<OpenAiLlm, ClientError> {
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()?;
        let transport = http.clone();
        let service = tower::service_fn(move |factory: HttpRequestFactory| {
            let http = transport.clone();
            async move {
                let request = factory.build().await?;
                let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
                let status = response.status();
                if status.is_success() {
                    return Ok(response);
                }
                let retry_after = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map(Duration::from_secs_f64);
                let body = response.text().await.unwrap_or_default();
                Err(OpenAIError::Boxed(Box::new(HttpFailure {
                    status: status.as_u16(),
                    retry_after,
                    body,
                })))
            }
        });
        let openai = OpenAIConfig::new()
            .with_api_base(config.base_url.clone())
            .with_api_key(config.api_key.clone());
        let client = Client::with_config(openai)
            .with_http_client(http)
            .with_http_service(service);
        Ok(OpenAiLlm { client, config })
    }

    fn body(&self, request: &ChatRequest) -> Value {
        let mut body = json!({
            "model": self.model(request.role),
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "temperature": 0.2,
            "stream": false,
        });
        match &request.shape {
            Shape::Text => {}
            Shape::Json { name, schema } => {
                body["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": schema.as_ref(), "strict": true},
                });
            }
            Shape::Tools { functions } => {
                body["tools"] = functions
                    .iter()
                    .map(|f| json!({"type": "function", "function": f}))
                    .collect();
                body["tool_choice"] = json!("required");
            }
        }
        body
    }
}

/// Reads a chat completion leniently: what matters is the first choice.
pub(crate) fn parse_completion(value: &Value, fallback_model: &str) -> Result<ChatReply, LlmError> {
    let choice = value
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| LlmError::new(ErrorClass::Server, "the model server sent no choices"))?;
    let message = choice.get("message").cloned().unwrap_or(Value::Null);
    let content = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| {
                    let f = c.get("function")?;
                    let arguments = match f.get("arguments") {
                        Some(Value::String(s)) => s.clone(),
                        Some(other) => other.to_string(),
                        None => String::new(),
                    };
                    Some(FunctionCall {
                        name: f.get("name")?.as_str()?.to_string(),
                        arguments,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let usage = value.get("usage").and_then(read_usage);
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(fallback_model)
        .to_string();
    Ok(ChatReply {
        content,
        calls,
        finish_reason,
        usage,
        model,
    })
}

/// A streamed reply put together chunk by chunk, as leniently as
/// [`parse_completion`] reads a whole one.
#[derive(Default)]
struct Streamed {
    content: String,
    /// By the index the server gives each call.
    calls: Vec<(u64, FunctionCall)>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    model: Option<String>,
    choices: bool,
}

impl Streamed {
    fn add(&mut self, chunk: &Value, delta: &OnDelta) {
        if let Some(model) = chunk.get("model").and_then(Value::as_str) {
            self.model.get_or_insert_with(|| model.to_string());
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = read_usage(usage);
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return;
        };
        self.choices = true;
        let piece = &choice["delta"];
        if let Some(text) = piece.get("content").and_then(Value::as_str) {
            if !text.is_empty() {
                self.content.push_str(text);
                delta(text);
            }
        }
        for call in piece
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            let at = match self.calls.iter().position(|(i, _)| *i == index) {
                Some(at) => at,
                None => {
                    self.calls.push((
                        index,
                        FunctionCall {
                            name: String::new(),
                            arguments: String::new(),
                        },
                    ));
                    self.calls.len() - 1
                }
            };
            let f = &call["function"];
            if let Some(name) = f.get("name").and_then(Value::as_str) {
                self.calls[at].1.name.push_str(name);
            }
            if let Some(arguments) = f.get("arguments").and_then(Value::as_str) {
                self.calls[at].1.arguments.push_str(arguments);
                delta(arguments);
            }
        }
        if let Some(reason) = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            self.finish_reason = Some(reason.to_string());
        }
    }

    fn finish(self, fallback_model: &str) -> Result<ChatReply, LlmError> {
        if !self.choices {
            return Err(LlmError::new(
                ErrorClass::Dropped,
                "the model server's stream ended before any reply",
            ));
        }
        Ok(ChatReply {
            content: self.content,
            calls: self.calls.into_iter().map(|(_, c)| c).collect(),
            finish_reason: self.finish_reason,
            usage: self.usage,
            model: self.model.unwrap_or_else(|| fallback_model.to_string()),
        })
    }
}

fn read_usage(u: &Value) -> Option<Usage> {
    Some(Usage {
        prompt_tokens: u.get("prompt_tokens")?.as_u64()? as u32,
        completion_tokens: u
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0) as u32,
    })
}

/// An embeddings answer as OpenAI-compatible servers send it (they differ
/// in the other fields, so only these are read).
#[derive(serde::Deserialize)]
struct EmbeddingsReply {
    data: Vec<EmbeddingItem>,
}

#[derive(serde::Deserialize)]
struct EmbeddingItem {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

/// The endpoint's `/v1/embeddings` with the configured embedding model.
pub struct OpenAiEmbedder {
    llm: OpenAiLlm,
    model: String,
}

impl OpenAiEmbedder {
    /// `None` when no embedding model is configured.
    pub fn new(config: LlmConfig) -> Result<Option<OpenAiEmbedder>, ClientError> {
        let Some(model) = config.embedding_model.clone() else {
            return Ok(None);
        };
        Ok(Some(OpenAiEmbedder {
            llm: OpenAiLlm::new(config)?,
            model,
        }))
    }
}

#[async_trait::async_trait]
impl super::Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let body = json!({"model": self.model, "input": texts, "encoding_format": "float"});
        let reply: EmbeddingsReply = self
            .llm
            .client
            .embeddings()
            .create_byot(&body)
            .await
            .map_err(classify)?;
        super::checked_embeddings(
            reply
                .data
                .into_iter()
                .enumerate()
                .map(|(i, e)| (e.index.unwrap_or(i), e.embedding))
                .collect(),
            texts.len(),
        )
    }
}

fn classify(error: OpenAIError) -> LlmError {
    match error {
        OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpFailure>() {
            Ok(f) => LlmError::from_status(f.status, &f.body, f.retry_after),
            Err(other) => LlmError::new(ErrorClass::Dropped, other.to_string()),
        },
        OpenAIError::Reqwest(e) if e.is_timeout() => LlmError::new(
            ErrorClass::Timeout,
            "the model server did not answer in time",
        ),
        OpenAIError::Reqwest(e) if e.is_connect() => LlmError::new(
            ErrorClass::Dropped,
            format!("cannot connect to the model server: {}", e.without_url()),
        ),
        OpenAIError::Reqwest(e) => LlmError::new(
            ErrorClass::Dropped,
            format!(
                "the connection to the model server broke: {}",
                e.without_url()
            ),
        ),
        OpenAIError::JSONDeserialize(e, _) => LlmError::new(
            ErrorClass::Server,
            format!("the model server sent a body that is not JSON: {e}"),
        ),
        OpenAIError::ApiError(api) => {
            LlmError::from_status(api.status_code.as_u16(), &api.api_error.message, None)
        }
        OpenAIError::StreamError(e) => LlmError::new(ErrorClass::Dropped, e.to_string()),
        other => LlmError::new(ErrorClass::BadRequest, other.to_string()),
    }
}

#[async_trait::async_trait]
impl Llm for OpenAiLlm {
    async fn chat_streaming(
        &self,
        request: &ChatRequest,
        delta: &OnDelta,
    ) -> Result<ChatReply, LlmError> {
        if !self.config.stream {
            return Ok(super::in_one_piece(self.chat(request).await?, delta));
        }
        let mut body = self.body(request);
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        let mut chunks = self
            .client
            .chat()
            .create_stream_byot::<_, Value>(&body)
            .await
            .map_err(classify)?;
        let mut reply = Streamed::default();
        while let Some(chunk) = chunks.next().await {
            reply.add(&chunk.map_err(classify)?, delta);
        }
        reply.finish(&self.model(request.role))
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatReply, LlmError> {
        let body = self.body(request);
        let value: Value = self
            .client
            .chat()
            .create_byot(&body)
            .await
            .map_err(classify)?;
        parse_completion(&value, &self.model(request.role))
    }

    fn model(&self, role: CallRole) -> String {
        match (role, &self.config.classifier_model) {
            (CallRole::Classifier, Some(m)) => m.clone(),
            _ => self.config.model.clone(),
        }
    }

    fn tool_calls_reliable(&self) -> bool {
        self.config.protocol == Protocol::ToolCalls
    }

    /// The same client (its connections and transport) asking for `model`
    /// in every role.
    fn with_model(&self, model: &str) -> Option<std::sync::Arc<dyn Llm>> {
        Some(std::sync::Arc::new(OpenAiLlm {
            client: self.client.clone(),
            config: LlmConfig {
                model: model.to_string(),
                classifier_model: None,
                ..self.config.clone()
            },
        }))
    }

    async fn capacity(&self) -> Capacity {
        self.config.capacity().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_model_means_no_configuration_and_the_key_never_prints() {
        assert!(LlmConfig::from_vars(|_| None).unwrap().is_none());
        let vars = |n: &str| match n {
            "PLANBOARD_LLM_MODEL" => Some("qwen".to_string()),
            "OPENAI_API_KEY" => Some("sk-secret".to_string()),
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:8080/v1/".to_string()),
            _ => None,
        };
        let config = LlmConfig::from_vars(vars).unwrap().unwrap();
        assert_eq!(config.base_url, "http://127.0.0.1:8080/v1");
        assert!(config.runs_locally());
        assert_eq!(config.api_key, "sk-secret");
        assert!(!format!("{config:?}").contains("sk-secret"));
    }

    #[test]
    fn only_an_endpoint_on_this_machine_or_the_local_network_runs_locally() {
        let at = |url: &str| {
            LlmConfig::from_vars(|n| match n {
                "PLANBOARD_LLM_MODEL" => Some("m".to_string()),
                "PLANBOARD_LLM_BASE_URL" => Some(url.to_string()),
                _ => None,
            })
            .unwrap()
            .unwrap()
            .runs_locally()
        };
        for local in [
            "http://localhost:11434/v1",
            "http://192.168.1.20:8000/v1",
            "http://10.0.0.5/v1",
            "http://[::1]:8080/v1",
            "http://gpu-box.local:8080/v1",
        ] {
            assert!(at(local), "{local}");
        }
        for remote in [
            "https://api.openai.com/v1",
            "https://api.deepseek.com/v1",
            "http://8.8.8.8/v1",
            "http://localhost.example.com/v1",
        ] {
            assert!(!at(remote), "{remote}");
        }
    }

    #[test]
    fn a_bad_number_is_an_error_that_names_the_variable() {
        let vars = |n: &str| match n {
            "PLANBOARD_LLM_MODEL" => Some("m".to_string()),
            "PLANBOARD_LLM_TIMEOUT_SECS" => Some("soon".to_string()),
            _ => None,
        };
        let e = LlmConfig::from_vars(vars).unwrap_err();
        assert_eq!(e.name, "PLANBOARD_LLM_TIMEOUT_SECS");
        assert!(e.to_string().contains("positive whole number"), "{e}");
    }

    #[test]
    fn a_streamed_tool_call_is_put_together_from_its_pieces() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let into = seen.clone();
        let delta = move |t: &str| into.lock().unwrap().push_str(t);
        let mut reply = Streamed::default();
        for chunk in [
            json!({"model": "qwen", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null,
                "tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                "function": {"name": "complete", "arguments": "{\"res"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
                "function": {"arguments": "ult\":\"x\"}"}}]}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}),
        ] {
            reply.add(&chunk, &delta);
        }
        let reply = reply.finish("m").unwrap();
        assert_eq!(reply.calls.len(), 1);
        assert_eq!(reply.calls[0].name, "complete");
        assert_eq!(reply.calls[0].arguments, r#"{"result":"x"}"#);
        assert_eq!(*seen.lock().unwrap(), r#"{"result":"x"}"#);
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(reply.usage.unwrap().completion_tokens, 3);
        assert_eq!(reply.model, "qwen");
        let empty = Streamed::default().finish("m").unwrap_err();
        assert_eq!(
            empty.class,
            ErrorClass::Dropped,
            "a stream with no reply is retried"
        );
    }

    #[test]
    fn the_concurrency_is_asked_of_the_endpoint_unless_a_number_is_set() {
        let with = |value: Option<&'static str>| {
            LlmConfig::from_vars(move |n: &str| match n {
                "PLANBOARD_LLM_MODEL" => Some("m".to_string()),
                "PLANBOARD_LLM_CONCURRENCY" => value.map(str::to_string),
                _ => None,
            })
        };
        assert_eq!(with(None).unwrap().unwrap().concurrency, 0, "auto");
        assert_eq!(with(Some("auto")).unwrap().unwrap().concurrency, 0);
        assert_eq!(with(Some(" 6 ")).unwrap().unwrap().concurrency, 6);
        for bad in ["0", "many", "-1"] {
            let e = with(Some(bad)).unwrap_err();
            assert_eq!(e.name, "PLANBOARD_LLM_CONCURRENCY", "{bad}");
            assert!(e.to_string().contains("auto or a positive"), "{e}");
        }
    }

    #[test]
    fn llama_cpp_answers_say_how_many_slots_it_serves_and_other_answers_say_nothing() {
        // GET /props, as llama.cpp's server README shows it (in part).
        let props = json!({
            "default_generation_settings": {"id": 0, "n_ctx": 1024, "is_processing": false},
            "total_slots": 2,
            "model_path": "../models/model.gguf",
            "chat_template": "...",
            "build_info": "b1-abc"
        });
        assert_eq!(slots_in(&props), Some(2));
        // GET /slots: one object per slot.
        let slots = json!([
            {"id": 0, "id_task": 135, "n_ctx": 65536, "is_processing": true},
            {"id": 1, "id_task": 0, "n_ctx": 65536, "is_processing": true},
            {"id": 2, "id_task": -1, "n_ctx": 65536, "is_processing": false}
        ]);
        assert_eq!(slots_in(&slots), Some(3));
        assert_eq!(slots_in(&json!({"slots": [{"id": 0}]})), Some(1));
        for nothing in [
            json!({"total_slots": 0}),
            json!({"total_slots": "two"}),
            json!([]),
            json!({"object": "list", "data": []}),
            json!({"error": {"message": "not found"}}),
            json!("2"),
        ] {
            assert_eq!(slots_in(&nothing), None, "{nothing}");
        }
        assert_eq!(
            slots_in(&json!({"total_slots": 1_000_000})),
            Some(crate::llm::queue::MAX_SLOTS)
        );
        assert_eq!(
            server_root("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            server_root("http://127.0.0.1:8080/v1/"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(server_root("http://gpu:8080"), "http://gpu:8080");
    }

    #[test]
    fn streaming_is_on_unless_switched_off() {
        let with = |value: Option<&'static str>| {
            LlmConfig::from_vars(move |n: &str| match n {
                "PLANBOARD_LLM_MODEL" => Some("m".to_string()),
                "PLANBOARD_LLM_STREAM" => value.map(str::to_string),
                _ => None,
            })
        };
        assert!(with(None).unwrap().unwrap().stream);
        assert!(!with(Some("false")).unwrap().unwrap().stream);
        assert_eq!(
            with(Some("sometimes")).unwrap_err().name,
            "PLANBOARD_LLM_STREAM"
        );
    }

    #[test]
    fn quirky_completions_still_read() {
        let reply = parse_completion(
            &json!({"choices": [{"message": {"content": "{}"}, "finish_reason": ""}]}),
            "m",
        )
        .unwrap();
        assert_eq!(reply.finish_reason, None);
        assert_eq!(reply.usage, None);
        assert_eq!(reply.model, "m");
        let reply = parse_completion(
            &json!({"choices": [{"message": {"content": null, "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "complete", "arguments": "{\"result\":\"x\"}"}}
            ]}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}),
            "m",
        )
        .unwrap();
        assert_eq!(reply.calls[0].name, "complete");
        assert_eq!(reply.usage.unwrap().prompt_tokens, 7);
    }
}
