//! A fake OpenAI-compatible server (axum on port 0) for the agent's tests:
//! scripted replies first, then answers that do the work, with the quirks
//! of real local servers by default (`finish_reason: ""`, no `usage`).
//! A request with `stream: true` gets its reply as server-sent chunks.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

/// One scripted reply.
#[derive(Clone, Debug)]
pub enum Fake {
    /// The message content (JSON text for the schema calls).
    Content(String),
    /// An error status, with `Retry-After` if given.
    Status {
        code: u16,
        retry_after: Option<&'static str>,
        body: &'static str,
    },
    /// A 200 whose body is this text (say, malformed JSON).
    Raw(&'static str),
    /// A 200 whose body is this whole completion (not streamed).
    Body(String),
    /// A stream that breaks after the first piece of this text.
    Dropped(&'static str),
    /// The same, after a delay.
    Slow(Duration, Box<Fake>),
}

#[derive(Clone, Default)]
struct Script {
    /// The plan the diligent planner proposes (two subtasks if unset).
    plan: Arc<Mutex<Option<Value>>>,
    queue: Arc<Mutex<VecDeque<Fake>>>,
    seen: Arc<Mutex<Vec<Value>>>,
    latency: Arc<Mutex<Duration>>,
    /// Chat requests being answered now (a killed client's stay counted
    /// until the fake has answered into the void).
    in_flight: Arc<std::sync::atomic::AtomicUsize>,
    /// Each chat request's `Authorization` header.
    authorization: Arc<Mutex<Vec<String>>>,
    /// Texts sent to `/v1/embeddings`, and whether it answers 500.
    embedded: Arc<Mutex<Vec<String>>>,
    embeddings_down: Arc<Mutex<bool>>,
    /// The executor's actions per model asked for (a replay's other
    /// model), answered before the shared queue.
    actions: Arc<Mutex<std::collections::HashMap<String, VecDeque<Fake>>>>,
}

pub struct FakeOpenAi {
    /// The base URL, with `/v1`.
    pub url: String,
    script: Script,
}

/// What the request asks for: the json_schema name, or `text`.
pub fn shape(request: &Value) -> String {
    request["response_format"]["json_schema"]["name"]
        .as_str()
        .unwrap_or("text")
        .to_string()
}

/// The subtask an executor request is about (`Your subtask #n: name`).
pub fn subtask(request: &Value) -> String {
    request["messages"][1]["content"]
        .as_str()
        .and_then(|brief| brief.lines().find(|l| l.starts_with("Your subtask #")))
        .and_then(|line| line.split_once(": "))
        .map(|(_, name)| name.to_string())
        .unwrap_or_default()
}

/// The answers of a diligent model.
pub fn diligent(request: &Value) -> String {
    match shape(request).as_str() {
        "mode" => json!({"confidence": 0.9, "mode": "simple", "reason": "a clear linear task"}),
        // Where the answer comes from: the web, so every tool stays offered.
        "source" => json!({"source": "web", "why": "it may need a page"}),
        "plan" => json!({"title": "the plan", "subtasks": [
            {"name": "gather", "description": "gather the facts", "expected_outcome": "facts", "depends_on": []},
            {"name": "report", "description": "write the report", "expected_outcome": "a report", "depends_on": []}
        ]}),
        "action" => json!({"action": "complete", "result": format!("done: {}", subtask(request))}),
        "adapt" => json!({"drop": [], "needs_change": false, "reason": "fine", "revise": []}),
        "todo_update" => json!({"drop": [], "needs_update": false, "reason": "fine", "new_todos": []}),
        "recover" => json!({"decision": "give_up", "reason": "a person must look", "name": "", "description": ""}),
        // One subtask per item the batch's schema allows.
        "batch" => {
            let items = request["response_format"]["json_schema"]["schema"]
                .pointer("/properties/subtasks/items/properties/items/items/enum")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            json!({"subtasks": items.iter().map(|n| json!({
                "name": format!("check item {n}"), "description": "check it",
                "expected_outcome": "checked", "items": [n],
            })).collect::<Vec<_>>()})
        }
        _ => return "the final answer".to_string(),
    }
    .to_string()
}

fn completion(content: &str) -> Value {
    json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": ""}]
    })
}

/// The chunks of a streamed reply: the text in three pieces, then the
/// quirky `finish_reason: ""`, no usage, then `[DONE]`.
fn chunks(content: &str) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "fake",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    let mut out = Vec::new();
    let mut from = 0;
    for part in 1..=3 {
        let mut to = content.len() * part / 3;
        while !content.is_char_boundary(to) {
            to += 1;
        }
        out.push(chunk(json!({"content": &content[from..to]}), Value::Null));
        from = to;
    }
    out.push(chunk(json!({}), json!("")));
    out.push("[DONE]".to_string());
    out
}

fn sse(events: Vec<String>, then_break: bool) -> Response {
    use futures_util::StreamExt;
    let parts: Vec<Result<axum::body::Bytes, std::io::Error>> = events
        .into_iter()
        .map(|e| Ok(axum::body::Bytes::from(format!("data: {e}\n\n"))))
        .collect();
    // The break comes a moment later, so what was sent reaches the client.
    let broken = futures_util::stream::once(async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Err(std::io::Error::other("the connection broke"))
    })
    .take(usize::from(then_break));
    let body = axum::body::Body::from_stream(futures_util::stream::iter(parts).chain(broken));
    (
        StatusCode::OK,
        [("content-type", "text/event-stream")],
        body,
    )
        .into_response()
}

fn respond_streaming(fake: Fake) -> Response {
    match fake {
        Fake::Content(content) => sse(chunks(&content), false),
        Fake::Raw(body) => sse(vec![body.to_string()], false),
        Fake::Dropped(text) => sse(chunks(text).into_iter().take(1).collect(), true),
        other => respond(other),
    }
}

fn respond(fake: Fake) -> Response {
    match fake {
        Fake::Content(content) => Json(completion(&content)).into_response(),
        Fake::Status {
            code,
            retry_after,
            body,
        } => {
            let mut headers = HeaderMap::new();
            if let Some(after) = retry_after {
                headers.insert("retry-after", HeaderValue::from_static(after));
            }
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (status, headers, body.to_string()).into_response()
        }
        Fake::Raw(body) => {
            (StatusCode::OK, [("content-type", "application/json")], body).into_response()
        }
        Fake::Body(body) => {
            (StatusCode::OK, [("content-type", "application/json")], body).into_response()
        }
        Fake::Dropped(_) => (
            StatusCode::OK,
            [("content-type", "application/json")],
            "{\"choi",
        )
            .into_response(),
        Fake::Slow(..) => unreachable!("delays are taken before responding"),
    }
}

/// A completion whose message calls the function `name` with `arguments`
/// (what a model answers to a request with `tools`).
pub fn calling(name: &str, arguments: Value) -> String {
    json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}}]
        }}]
    })
    .to_string()
}

async fn chat(
    State(script): State<Script>,
    headers: HeaderMap,
    Json(request): Json<Value>,
) -> Response {
    use std::sync::atomic::Ordering;
    struct Answering(Arc<std::sync::atomic::AtomicUsize>);
    impl Drop for Answering {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    script.in_flight.fetch_add(1, Ordering::SeqCst);
    let _answering = Answering(script.in_flight.clone());
    script.seen.lock().unwrap().push(request.clone());
    script.authorization.lock().unwrap().push(
        headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
    );
    // The router's question before planning is answered by the diligent
    // model: the scripts stay in the order of the calls they are about.
    let model = request["model"].as_str().unwrap_or_default().to_string();
    let queued = match shape(&request).as_str() {
        "source" => None,
        "action" => script
            .actions
            .lock()
            .unwrap()
            .get_mut(&model)
            .and_then(VecDeque::pop_front)
            .or_else(|| script.queue.lock().unwrap().pop_front()),
        _ => script.queue.lock().unwrap().pop_front(),
    };
    let mut next = queued.unwrap_or_else(|| {
        let plan = script.plan.lock().unwrap().clone();
        match plan {
            Some(plan) if shape(&request) == "plan" => Fake::Content(plan.to_string()),
            // Offered functions: the diligent executor calls `complete`.
            _ if request.get("tools").is_some() => Fake::Body(calling(
                "complete",
                json!({"result": format!("done: {}", subtask(&request))}),
            )),
            _ => Fake::Content(diligent(&request)),
        }
    });
    let latency = *script.latency.lock().unwrap();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    while let Fake::Slow(delay, inner) = next {
        tokio::time::sleep(delay).await;
        next = *inner;
    }
    if request["stream"] == json!(true) {
        respond_streaming(next)
    } else {
        respond(next)
    }
}

/// Words that mean the same to the fake embedding model, one dimension
/// each; every text also has a small constant part (so none is all zero).
const CONCEPTS: [&[&str]; 4] = [
    &["release", "deploy", "ship", "rollout"],
    &["invoicing", "billing", "accounting", "payments"],
    &["cake", "bake", "oven"],
    &["database", "postgres", "sql"],
];

/// A bag-of-concepts vector: texts sharing a meaning, not a word, point
/// the same way.
pub fn fake_embedding(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; CONCEPTS.len() + 1];
    v[CONCEPTS.len()] = 0.1;
    for word in text.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
        if let Some(i) = CONCEPTS.iter().position(|c| c.contains(&word)) {
            v[i] += 1.0;
        }
    }
    v
}

async fn embeddings(State(script): State<Script>, Json(request): Json<Value>) -> Response {
    if *script.embeddings_down.lock().unwrap() {
        return (StatusCode::INTERNAL_SERVER_ERROR, "embeddings are down").into_response();
    }
    let texts: Vec<String> = match &request["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    script
        .embedded
        .lock()
        .unwrap()
        .extend(texts.iter().cloned());
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": fake_embedding(t)}))
        .collect();
    Json(
        json!({"object": "list", "model": request["model"], "data": data,
        "usage": {"prompt_tokens": 1, "total_tokens": 1}}),
    )
    .into_response()
}

impl FakeOpenAi {
    pub async fn start() -> FakeOpenAi {
        let script = Script::default();
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/embeddings", post(embeddings))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeOpenAi {
            url: format!("http://{addr}/v1"),
            script,
        }
    }

    pub fn push(&self, fake: Fake) -> &Self {
        self.script.queue.lock().unwrap().push_back(fake);
        self
    }

    pub fn content(&self, value: Value) -> &Self {
        self.push(Fake::Content(value.to_string()))
    }

    /// The executor's next action when `model` is asked (before the
    /// shared queue): how a second model answers differently.
    pub fn action_for(&self, model: &str, value: Value) -> &Self {
        self.script
            .actions
            .lock()
            .unwrap()
            .entry(model.to_string())
            .or_default()
            .push_back(Fake::Content(value.to_string()));
        self
    }

    /// What the planner proposes from now on, every time.
    pub fn plan(&self, plan: Value) {
        *self.script.plan.lock().unwrap() = Some(plan);
    }

    /// Every reply waits this long.
    pub fn latency(&self, latency: Duration) {
        *self.script.latency.lock().unwrap() = latency;
    }

    /// Chat requests the fake is answering now.
    pub fn in_flight(&self) -> usize {
        self.script
            .in_flight
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Every chat request's `Authorization` header, in order.
    pub fn authorization(&self) -> Vec<String> {
        self.script.authorization.lock().unwrap().clone()
    }

    /// Every text sent to `/v1/embeddings`.
    pub fn embedded(&self) -> Vec<String> {
        self.script.embedded.lock().unwrap().clone()
    }

    /// `/v1/embeddings` answers 500 from now on (or again 200).
    pub fn embeddings_down(&self, down: bool) {
        *self.script.embeddings_down.lock().unwrap() = down;
    }

    pub fn requests(&self) -> Vec<Value> {
        self.script.seen.lock().unwrap().clone()
    }

    pub fn config(&self, timeout: Duration) -> agent::LlmConfig {
        agent::LlmConfig {
            base_url: self.url.clone(),
            api_key: "sk-fake-secret".into(),
            model: "fake".into(),
            classifier_model: None,
            embedding_model: None,
            timeout,
            concurrency: 8,
            protocol: agent::llm::Protocol::Auto,
            stream: true,
        }
    }
}
