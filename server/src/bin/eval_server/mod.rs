//! What the evaluation binaries (`task-eval`, `memory-eval`) share: the
//! real server in their own process on a port of its own with a fresh
//! SQLite file and workspace folder, a stand-in model's HTTP door, and
//! reading JSON. Each binary includes it with `#[path]`; it lives in a
//! folder of its own so Cargo does not take it for a binary.

use std::path::Path;

use axum::Json;
use serde_json::{json, Value};
use server::config::{Access, Config};

/// Starts the real server (its base URL, and its database's URL) with
/// the configuration `planboard` reads from the environment, except: the
/// database and workspaces are under `dir`,
/// no tokens or webhook (local access as `eval`), and the model is
/// `model_url`'s fake when given, else `PLANBOARD_LLM_*` or the default
/// local model (`scripts/local-model.sh` on port 8091). `var` answers
/// first for the names it knows (`Some`), so a binary can pin more.
pub async fn start(
    dir: &Path,
    model_url: Option<String>,
    var: impl Fn(&str) -> Option<Option<String>>,
) -> Result<(String, String), String> {
    let db = format!("sqlite://{}", dir.join("eval.db").display());
    let workspaces = dir.join("workspaces").display().to_string();
    let config = Config::from_vars(|name| {
        if let Some(value) = var(name) {
            return value;
        }
        match name {
            "DATABASE_URL" => Some(db.clone()),
            "PLANBOARD_WORKSPACES" => Some(workspaces.clone()),
            "PLANBOARD_TOKENS" | "PLANBOARD_TOKENS_FILE" | "PLANBOARD_WEBHOOK_URL" => None,
            "PLANBOARD_LLM_STREAM" if model_url.is_some() => Some("false".into()),
            "PLANBOARD_LLM_MODEL" if model_url.is_some() => Some("fake".into()),
            "PLANBOARD_LLM_BASE_URL" if model_url.is_some() => model_url.clone(),
            "PLANBOARD_LLM_MODEL" => std::env::var(name)
                .ok()
                .or_else(|| Some("qwen2.5-coder-1.5b-instruct".into())),
            "PLANBOARD_LLM_BASE_URL" => std::env::var(name)
                .ok()
                .or_else(|| std::env::var("OPENAI_BASE_URL").ok())
                .or_else(|| Some("http://127.0.0.1:8091/v1".into())),
            _ => std::env::var(name).ok(),
        }
    })
    .map_err(|e| e.to_string())?;
    let config = Config {
        access: Access::Local {
            user: "eval".into(),
        },
        ..config
    };
    let services = server::start(&config).await.map_err(|e| e.to_string())?;
    let options = leptos::config::LeptosOptions::builder()
        .output_name("planboard")
        .site_root(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/site"))
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let url = format!(
        "http://{}",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    let router = server::router(options, services);
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok((url, db))
}

/// Serves a stand-in model's `POST /v1/chat/completions` (`complete`
/// answers the request's body with the message's content) on a port of
/// its own; its base URL.
pub async fn serve_model<F, Fut>(complete: F) -> String
where
    F: Fn(Value) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = String> + Send + 'static,
{
    use axum::routing::post;
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let complete = complete.clone();
            async move {
                let content = complete(body).await;
                Json(json!({
                    "id": "fake", "object": "chat.completion", "created": 0, "model": "fake",
                    "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
                }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// The structured-output schema a request to the model names ("" for none).
pub fn schema_name(body: &Value) -> &str {
    body.pointer("/response_format/json_schema/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub async fn get_json(http: &reqwest::Client, url: &str) -> Result<Value, String> {
    http.get(url)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?
        .json()
        .await
        .map_err(|e| format!("GET {url}: {e}"))
}
