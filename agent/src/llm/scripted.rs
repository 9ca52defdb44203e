//! A model that answers from a script: per-role queues of replies, then an
//! optional responder function that sees the request (for replies that
//! depend on which subtask asked, when several run at once).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use super::{
    CallRole, Capacity, ChatReply, ChatRequest, FunctionCall, Llm, LlmError, OnDelta, Usage,
};

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Free text (also used for malformed JSON).
    Text(String),
    /// A JSON value, sent as the content (the json-schema protocol).
    Json(Value),
    /// A native tool call.
    Call {
        name: String,
        arguments: Value,
    },
    Error(LlmError),
    /// Text the server stopped at the token limit (`finish_reason:
    /// "length"`), as a model that runs on or repeats itself leaves it.
    CutOff(String),
}

type Responder = Box<dyn Fn(&ChatRequest) -> Reply + Send + Sync>;

pub struct ScriptedLlm {
    queues: Mutex<HashMap<CallRole, VecDeque<Reply>>>,
    responder: Option<Responder>,
    latency: Duration,
    slow: HashMap<CallRole, Duration>,
    seen: Mutex<Vec<ChatRequest>>,
    tool_calls: bool,
    capacity: Capacity,
}

impl Default for ScriptedLlm {
    fn default() -> Self {
        ScriptedLlm::new()
    }
}

impl ScriptedLlm {
    pub fn new() -> ScriptedLlm {
        ScriptedLlm {
            queues: Mutex::new(HashMap::new()),
            responder: None,
            latency: Duration::ZERO,
            slow: HashMap::new(),
            seen: Mutex::new(Vec::new()),
            tool_calls: false,
            capacity: Capacity::Unknown,
        }
    }

    /// Says it serves this many calls at once, as llama.cpp's server does
    /// ([`Llm::capacity`]; by default it does not say).
    pub fn with_capacity(mut self, capacity: Capacity) -> ScriptedLlm {
        self.capacity = capacity;
        self
    }

    /// Every call takes this long (tokio time, so a paused clock skips it).
    pub fn with_latency(mut self, latency: Duration) -> ScriptedLlm {
        self.latency = latency;
        self
    }

    /// Calls of this role take this long instead.
    pub fn slow(mut self, role: CallRole, latency: Duration) -> ScriptedLlm {
        self.slow.insert(role, latency);
        self
    }

    /// Answers what the queues do not.
    pub fn responder(mut self, f: impl Fn(&ChatRequest) -> Reply + Send + Sync + 'static) -> Self {
        self.responder = Some(Box::new(f));
        self
    }

    /// Claims reliable native tool calls, so `Protocol::Auto` uses them.
    pub fn with_tool_calls(mut self) -> ScriptedLlm {
        self.tool_calls = true;
        self
    }

    pub fn push(self, role: CallRole, reply: Reply) -> ScriptedLlm {
        self.queues
            .lock()
            .expect("script lock")
            .entry(role)
            .or_default()
            .push_back(reply);
        self
    }

    pub fn push_json(self, role: CallRole, value: Value) -> ScriptedLlm {
        self.push(role, Reply::Json(value))
    }

    /// The requests seen so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.seen.lock().expect("script lock").clone()
    }

    pub fn calls(&self, role: CallRole) -> usize {
        self.requests().iter().filter(|r| r.role == role).count()
    }

    fn next(&self, request: &ChatRequest) -> Reply {
        let queued = self
            .queues
            .lock()
            .expect("script lock")
            .get_mut(&request.role)
            .and_then(VecDeque::pop_front);
        match (queued, &self.responder) {
            (Some(reply), _) => reply,
            (None, Some(f)) => f(request),
            (None, None) => Reply::Error(LlmError::new(
                super::ErrorClass::BadRequest,
                format!("the script has no reply left for a {} call", request.role),
            )),
        }
    }
}

#[async_trait::async_trait]
impl Llm for ScriptedLlm {
    /// Streams like a server would: the text in three pieces.
    async fn chat_streaming(
        &self,
        request: &ChatRequest,
        delta: &OnDelta,
    ) -> Result<ChatReply, LlmError> {
        let reply = self.chat(request).await?;
        let text = reply.content.as_str();
        let mut from = 0;
        for part in 1..=3 {
            let mut to = text.len() * part / 3;
            while !text.is_char_boundary(to) {
                to += 1;
            }
            if to > from {
                delta(&text[from..to]);
            }
            from = to;
        }
        Ok(reply)
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatReply, LlmError> {
        self.seen.lock().expect("script lock").push(request.clone());
        let reply = self.next(request);
        let latency = self
            .slow
            .get(&request.role)
            .copied()
            .unwrap_or(self.latency);
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let finish = if matches!(reply, Reply::CutOff(_)) {
            "length"
        } else {
            "stop"
        };
        let (content, calls) = match reply {
            Reply::Error(e) => return Err(e),
            Reply::Text(text) | Reply::CutOff(text) => (text, Vec::new()),
            Reply::Json(value) => (value.to_string(), Vec::new()),
            Reply::Call { name, arguments } => (
                String::new(),
                vec![FunctionCall {
                    name,
                    arguments: arguments.to_string(),
                }],
            ),
        };
        let prompt: usize = request.messages.iter().map(|m| m.content.len()).sum();
        Ok(ChatReply {
            usage: Some(Usage {
                prompt_tokens: (prompt / 4) as u32,
                completion_tokens: (content.len() / 4) as u32,
            }),
            content,
            calls,
            finish_reason: Some(finish.into()),
            model: "scripted".into(),
        })
    }

    fn model(&self, _role: CallRole) -> String {
        "scripted".into()
    }

    fn tool_calls_reliable(&self) -> bool {
        self.tool_calls
    }

    async fn capacity(&self) -> Capacity {
        self.capacity
    }
}
