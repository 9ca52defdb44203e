//! The one door to a language model: [`Llm`], a chat request in and a
//! reply (or a classified error) out.
//!
//! Two implementations: [`OpenAiLlm`] (async-openai against any
//! OpenAI-compatible endpoint) and [`ScriptedLlm`] for tests. Retries are
//! not done here: the error says whether a retry can help and how long to
//! wait, and [`crate::retry`] is the one layer that acts on it.
//!
//! In front of the endpoint stands [`ModelQueue`] ([`queue`]): as many
//! calls in flight as the endpoint serves at once (it says so itself:
//! [`Llm::capacity`]), the runs served in turn, fewer after a 429.

mod openai;
pub mod queue;
mod scripted;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use openai::{BadVar, ClientError, LlmConfig, OpenAiEmbedder, OpenAiLlm};
pub use queue::{ModelQueue, Permit, QueueStatus};
pub use scripted::{Reply, ScriptedLlm};

/// Where the pieces of a reply go as the model writes them.
pub type OnDelta = dyn for<'t> Fn(&'t str) + Send + Sync;

/// Hands a reply that arrived whole to `delta` as one piece.
pub(crate) fn in_one_piece(reply: ChatReply, delta: &OnDelta) -> ChatReply {
    if !reply.content.is_empty() {
        delta(&reply.content);
    }
    reply
}

pub use run_model::{CallRole, ErrorClass};

plan_engine::wire_enum! {
    /// Who says a message in a chat.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    pub enum MessageRole: "message role" {
        System = "system",
        User = "user",
        Assistant = "assistant",
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: MessageRole,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message {
            role: MessageRole::System,
            content: content.into(),
        }
    }
    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: MessageRole::User,
            content: content.into(),
        }
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message {
            role: MessageRole::Assistant,
            content: content.into(),
        }
    }
}

plan_engine::wire_enum! {
    /// How the model is asked to answer with an action.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Protocol: "protocol (auto, json_schema or tool_calls)" {
        /// JSON-schema structured output unless the model is known to do
        /// native tool calls well; small local models answer schemas reliably.
        #[default]
        Auto = "auto",
        JsonSchema = "json_schema",
        ToolCalls = "tool_calls",
    }
}

/// The shape the answer must have. The schemas are shared, not copied:
/// the executor asks with the same action schema turn after turn (a few
/// kilobytes of JSON), and a deep copy of it per turn was 4 % of the
/// orchestration's instructions in the agent bench (serde_json keeps
/// objects as hash maps in insertion order here, see docs/agents-acp.md,
/// so a copy rebuilds every table).
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// Free text.
    Text,
    /// `response_format: json_schema` with this name and schema.
    Json {
        name: &'static str,
        schema: std::sync::Arc<Value>,
    },
    /// Native tool calls: one function per action, OpenAI function specs.
    Tools {
        functions: std::sync::Arc<Vec<Value>>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    pub role: CallRole,
    pub messages: Vec<Message>,
    pub shape: Shape,
    pub max_tokens: u32,
}

/// One function call the model asked for (native tool-call protocol).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// The arguments as the model wrote them (JSON text, maybe malformed).
    pub arguments: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ChatReply {
    pub content: String,
    pub calls: Vec<FunctionCall>,
    /// As the server sent it; some send `""` or nothing.
    pub finish_reason: Option<String>,
    /// Absent when the server does not report it.
    pub usage: Option<Usage>,
    pub model: String,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LlmError {
    pub class: ErrorClass,
    /// Readable, without the key or the prompt.
    pub message: String,
    /// The server's `Retry-After`, when it sent one.
    pub retry_after: Option<Duration>,
}

impl LlmError {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> LlmError {
        LlmError {
            class,
            message: message.into(),
            retry_after: None,
        }
    }

    /// Sorts an HTTP status and the server's error text.
    pub fn from_status(status: u16, body: &str, retry_after: Option<Duration>) -> LlmError {
        let lower = body.to_lowercase();
        let class = match status {
            429 if lower.contains("quota") || lower.contains("insufficient") => ErrorClass::Quota,
            429 => ErrorClass::RateLimited,
            401 | 403 => ErrorClass::Auth,
            402 => ErrorClass::Quota,
            408 => ErrorClass::Timeout,
            400 | 413
                if lower.contains("context")
                    || lower.contains("too long")
                    || lower.contains("maximum") && lower.contains("token") =>
            {
                ErrorClass::ContextTooLong
            }
            500..=599 => ErrorClass::Server,
            _ => ErrorClass::BadRequest,
        };
        let excerpt = plan_engine::text::prefix(body, 300);
        LlmError {
            class,
            message: format!("the model server answered {status}: {excerpt}"),
            retry_after,
        }
    }
}

/// An embedding model: texts in, one vector each out, in order.
/// Implementations do not retry; a caller that cannot embed goes on
/// without (recall falls back to full-text ranking).
#[async_trait::async_trait]
pub trait Embedder: Send + Sync {
    /// The model's name, kept beside each stored vector, so vectors of
    /// another model are made again rather than compared.
    fn model(&self) -> &str;
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError>;
}

/// The endpoint's answer as vectors in the texts' order, or why it cannot
/// be used: a vector per text, each index once, one dimension for all,
/// finite numbers, not all zero. (Model output is untrusted input.)
pub fn checked_embeddings(
    mut indexed: Vec<(usize, Vec<f32>)>,
    texts: usize,
) -> Result<Vec<Vec<f32>>, LlmError> {
    let bad = |why: String| LlmError::new(ErrorClass::Server, why);
    if indexed.len() != texts {
        return Err(bad(format!(
            "the endpoint sent {} embeddings for {texts} texts",
            indexed.len()
        )));
    }
    indexed.sort_by_key(|(i, _)| *i);
    let dimension = indexed.first().map_or(0, |(_, v)| v.len());
    for (at, (i, v)) in indexed.iter().enumerate() {
        if *i != at {
            return Err(bad("the embeddings' indexes are not 0 to n-1".into()));
        }
        if v.is_empty() || v.len() != dimension || v.len() > 16_384 {
            return Err(bad(format!(
                "embedding {i} has {} numbers, not {dimension} (1 to 16384)",
                v.len()
            )));
        }
        if v.iter().any(|x| !x.is_finite()) || v.iter().all(|x| *x == 0.0) {
            return Err(bad(format!("embedding {i} is not a usable vector")));
        }
    }
    Ok(indexed.into_iter().map(|(_, v)| v).collect())
}

/// How many requests an endpoint serves at once, as it says itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capacity {
    /// This many at once (llama.cpp's server: its slots, `--parallel`).
    Slots(usize),
    /// It answered but does not say (OpenAI, vLLM, Ollama): the setting
    /// holds (`PLANBOARD_LLM_CONCURRENCY`).
    Unknown,
    /// It did not answer (a local server still starting): ask again later.
    Unreachable,
}

/// A chat model. Implementations do not retry; see [`crate::retry`].
#[async_trait::async_trait]
pub trait Llm: Send + Sync {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatReply, LlmError>;

    /// [`Llm::chat`], handing the reply's text to `delta` piece by piece as
    /// the model writes it (for people watching; nothing relies on it). A
    /// provider that cannot stream hands the text over whole.
    async fn chat_streaming(
        &self,
        request: &ChatRequest,
        delta: &OnDelta,
    ) -> Result<ChatReply, LlmError> {
        Ok(in_one_piece(self.chat(request).await?, delta))
    }

    /// The model's name, for the run log.
    fn model(&self, role: CallRole) -> String;

    /// Whether native tool calls are trusted for `Protocol::Auto`.
    fn tool_calls_reliable(&self) -> bool {
        false
    }

    /// The same endpoint asked for `model` instead, for every role (a
    /// replay's or a suite run's choice: `RunConfig::model`); `None` when
    /// this model cannot be switched (a scripted one), and the run keeps it.
    fn with_model(&self, _model: &str) -> Option<std::sync::Arc<dyn Llm>> {
        None
    }

    /// How many requests the endpoint serves at once, asked of the
    /// endpoint itself; [`ModelQueue`] asks before the first call.
    async fn capacity(&self) -> Capacity {
        Capacity::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings_come_back_in_the_texts_order_and_bad_ones_are_refused() {
        let ok = checked_embeddings(vec![(1, vec![0.0, 1.0]), (0, vec![1.0, 0.0])], 2).unwrap();
        assert_eq!(ok, [vec![1.0, 0.0], vec![0.0, 1.0]]);
        let refused = |indexed: Vec<(usize, Vec<f32>)>, n| {
            checked_embeddings(indexed, n).unwrap_err().message
        };
        assert!(refused(vec![(0, vec![1.0])], 2).contains("1 embeddings for 2 texts"));
        assert!(refused(vec![(0, vec![1.0]), (0, vec![1.0])], 2).contains("indexes"));
        assert!(refused(vec![(0, vec![1.0]), (1, vec![1.0, 2.0])], 2).contains("has 2 numbers"));
        assert!(refused(vec![(0, vec![f32::NAN])], 1).contains("not a usable"));
        assert!(refused(vec![(0, vec![0.0, 0.0])], 1).contains("not a usable"));
    }

    #[test]
    fn statuses_sort_into_retryable_and_final_classes() {
        assert_eq!(
            LlmError::from_status(429, "slow down", None).class,
            ErrorClass::RateLimited
        );
        assert_eq!(
            LlmError::from_status(429, "You exceeded your current quota", None).class,
            ErrorClass::Quota
        );
        assert_eq!(
            LlmError::from_status(503, "", None).class,
            ErrorClass::Server
        );
        assert_eq!(
            LlmError::from_status(401, "bad key", None).class,
            ErrorClass::Auth
        );
        assert_eq!(
            LlmError::from_status(
                400,
                "This model's maximum context length is 8192 tokens",
                None
            )
            .class,
            ErrorClass::ContextTooLong
        );
        assert_eq!(
            LlmError::from_status(400, "bad field", None).class,
            ErrorClass::BadRequest
        );
        assert!(ErrorClass::Server.is_retryable());
        assert!(!ErrorClass::ContextTooLong.is_retryable());
    }
}
