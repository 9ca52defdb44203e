//! OpenTelemetry: a run's spans reach a real OTLP/HTTP receiver (the
//! test's own, decoding the protobuf the exporter sends with the OTLP
//! protobuf crate) as one tree under the request that started the run,
//! named and attributed per the GenAI conventions.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::{span::SpanKind, Span};
use prost::Message;
use reqwest::StatusCode;
use serde_json::{json, Value};
use server::config::Config;
use server::telemetry::TelemetryConfig;

use crate::fake_openai::FakeOpenAi;
use crate::runs::wait_for;
use crate::support::{local, TestServer};

/// Each notification's event and `traceparent`.
type Notified = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// An OTLP/HTTP receiver on port 0: keeps every span and the service
/// names it was sent under.
struct Collector {
    url: String,
    spans: Arc<Mutex<Vec<Span>>>,
    services: Arc<Mutex<Vec<String>>>,
    /// A webhook endpoint beside it: each notification's event and
    /// `traceparent`.
    hook: String,
    notified: Notified,
}

async fn collector() -> Collector {
    use axum::routing::post;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    let spans: Arc<Mutex<Vec<Span>>> = Default::default();
    let services: Arc<Mutex<Vec<String>>> = Default::default();
    let (kept, named) = (spans.clone(), services.clone());
    let hook = url.replace("/v1/traces", "/hook");
    let notified: Notified = Default::default();
    let told = notified.clone();
    let app = axum::Router::new()
        .route(
            "/hook",
            post(move |headers: axum::http::HeaderMap| {
                let told = told.clone();
                async move {
                    let header = |name: &str| {
                        headers
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string)
                    };
                    told.lock().unwrap().push((
                        header("x-planboard-event").unwrap_or_default(),
                        header("traceparent"),
                    ));
                    axum::http::StatusCode::NO_CONTENT
                }
            }),
        )
        .route(
            "/v1/traces",
            post(move |headers: axum::http::HeaderMap, body: bytes::Bytes| {
                let (kept, named) = (kept.clone(), named.clone());
                async move {
                    assert_eq!(headers["content-type"], "application/x-protobuf");
                    let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
                    for resource in request.resource_spans {
                        let service = resource
                            .resource
                            .iter()
                            .flat_map(|r| &r.attributes)
                            .find(|kv| kv.key == "service.name")
                            .and_then(|kv| kv.value.as_ref()?.value.as_ref())
                            .and_then(|v| match v {
                                Any::StringValue(s) => Some(s.clone()),
                                _ => None,
                            })
                            .unwrap_or_default();
                        named.lock().unwrap().push(service);
                        for scope in resource.scope_spans {
                            kept.lock().unwrap().extend(scope.spans);
                        }
                    }
                    (
                        [("content-type", "application/x-protobuf")],
                        ExportTraceServiceResponse::default().encode_to_vec(),
                    )
                }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Collector {
        url,
        spans,
        services,
        hook,
        notified,
    }
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Any> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn text(span: &Span, key: &str) -> Option<String> {
    match attr(span, key)? {
        Any::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

fn int(span: &Span, key: &str) -> Option<i64> {
    match attr(span, key)? {
        Any::IntValue(n) => Some(*n),
        _ => None,
    }
}

fn traced_config(dir: &std::path::Path, fake: &FakeOpenAi, collector: &Collector) -> Config {
    let webhooks = server::webhooks::WebhookConfig {
        endpoints: vec![server::webhooks::Endpoint {
            url: collector.hook.parse().unwrap(),
            secret: None,
            slack: false,
        }],
        poll: Duration::from_millis(20),
        ..Default::default()
    };
    Config {
        webhooks,
        llm: Some(fake.config(Duration::from_secs(10))),
        workspaces: dir.join("workspaces"),
        sandbox: false,
        telemetry: Some(TelemetryConfig {
            batch_delay: Duration::from_millis(50),
            ..TelemetryConfig::to(collector.url.clone())
        }),
        ..Config::defaults(
            format!("sqlite://{}", dir.join("runs.db").display()),
            local(),
        )
    }
}

/// A run of one subtask that writes a file, then completes.
fn script(fake: &FakeOpenAi) {
    fake.content(json!({"confidence": 0.9, "mode": "simple", "reason": "one step"}));
    fake.content(json!({"title": "note", "subtasks": [
        {"name": "write the note", "description": "write it", "expected_outcome": "a file", "depends_on": []}
    ]}));
    fake.content(
        json!({"action": "write_file", "arguments": {"path": "out.txt", "content": "hello"}}),
    );
}

/// Starts the run with `headers`; its id and the response's `traceparent`.
async fn start_traced(server: &TestServer, traceparent: Option<&str>) -> (String, String) {
    let mut request = server
        .client
        .post(server.url("/api/runs"))
        .json(&json!({"task": "A note in out.txt", "approval_required": false}));
    if let Some(parent) = traceparent {
        request = request.header("traceparent", parent);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let echoed = response
        .headers()
        .get("traceparent")
        .expect("the response names its span")
        .to_str()
        .unwrap()
        .to_string();
    let view: Value = response.json().await.unwrap();
    (view["id"].as_str().unwrap().to_string(), echoed)
}

/// Sends what is finished and waits until the run's span has arrived.
async fn spans_of_run(server: &TestServer, collector: &Collector, trace: &[u8]) -> Vec<Span> {
    let telemetry = server.services.telemetry.clone().expect("tracing is on");
    for _ in 0..200 {
        let t = telemetry.clone();
        tokio::task::spawn_blocking(move || t.flush())
            .await
            .unwrap();
        let spans: Vec<Span> = collector
            .spans
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.trace_id == trace)
            .cloned()
            .collect();
        if spans.iter().any(|s| s.name == "invoke_agent planboard") {
            return spans;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "the run's span never arrived; got {:?}",
        collector
            .spans
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.name.clone())
            .collect::<Vec<_>>()
    );
}

fn hex_bytes(text: &str) -> Vec<u8> {
    hex::decode(text).unwrap()
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one `{name}` among {:?}", names(spans));
    found[0]
}

fn names(spans: &[Span]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

#[tokio::test]
async fn a_runs_spans_reach_an_otlp_receiver_as_one_tree_under_the_request_that_started_it() {
    let fake = FakeOpenAi::start().await;
    script(&fake);
    let collector = collector().await;
    let dir = tempfile::tempdir().unwrap();
    let server =
        TestServer::with_config(&traced_config(dir.path(), &fake, &collector), |_| {}).await;
    let caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let (run, echoed) = start_traced(
        &server,
        Some(&format!("00-{caller_trace}-{caller_span}-01")),
    )
    .await;
    // The response names the server span: the caller's trace, a new span.
    let parts: Vec<&str> = echoed.split('-').collect();
    assert_eq!(parts[1], caller_trace, "{echoed}");
    assert_ne!(parts[2], caller_span);
    let view = wait_for(&server, &run, "done").await;
    // Kept on the run, so its spans join this trace after a restart too.
    assert_eq!(view["trace_parent"], echoed.as_str(), "{view}");
    let spans = spans_of_run(&server, &collector, &hex_bytes(caller_trace)).await;

    let request = one(&spans, "POST /api/runs");
    assert_eq!(request.kind, SpanKind::Server as i32);
    assert_eq!(request.parent_span_id, hex_bytes(caller_span));
    assert_eq!(request.span_id, hex_bytes(parts[2]));
    assert_eq!(int(request, "http.response.status_code"), Some(201));
    assert_eq!(text(request, "http.route").as_deref(), Some("/api/runs"));

    let agent = one(&spans, "invoke_agent planboard");
    assert_eq!(
        agent.parent_span_id, request.span_id,
        "the run hangs under the request"
    );
    assert_eq!(
        text(agent, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(
        text(agent, "planboard.run.id").as_deref(),
        Some(run.as_str())
    );
    assert_eq!(text(agent, "planboard.run.state").as_deref(), Some("done"));
    assert_eq!(
        int(agent, "gen_ai.usage.input_tokens"),
        view["spent"]["prompt_tokens"].as_i64()
    );
    assert!(
        agent.events.iter().any(|e| e.name == "plan_proposed"),
        "{:?}",
        agent.events
    );
    assert!(
        text(agent, "planboard.task").is_none(),
        "content stays off by default"
    );

    let subtask = one(&spans, "subtask #1");
    assert_eq!(subtask.parent_span_id, agent.span_id);
    assert_eq!(int(subtask, "planboard.subtask.attempt"), Some(1));

    let tool = one(&spans, "execute_tool write_file");
    assert_eq!(
        tool.parent_span_id, subtask.span_id,
        "the tool call is the subtask's"
    );
    assert_eq!(
        text(tool, "gen_ai.tool.name").as_deref(),
        Some("write_file")
    );
    assert_eq!(
        text(tool, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert!(text(tool, "gen_ai.tool.call.arguments").is_none());

    let chats: Vec<&Span> = spans.iter().filter(|s| s.name == "chat fake").collect();
    assert_eq!(
        chats.len() as u64,
        view["spent"]["llm_calls"].as_u64().unwrap(),
        "one span per model call: {:?}",
        names(&spans)
    );
    let mut tokens = 0;
    for chat in &chats {
        assert_eq!(chat.kind, SpanKind::Client as i32);
        assert_eq!(text(chat, "gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(text(chat, "gen_ai.system").as_deref(), Some("openai"));
        assert_eq!(text(chat, "gen_ai.request.model").as_deref(), Some("fake"));
        assert_eq!(text(chat, "gen_ai.response.model").as_deref(), Some("fake"));
        assert!(text(chat, "planboard.transcript").is_none());
        tokens += int(chat, "gen_ai.usage.input_tokens").unwrap();
        // The executor's calls hang under their subtask, the classifier's
        // and planner's under the run.
        let expected = match int(chat, "planboard.subtask.id") {
            Some(1) => &subtask.span_id,
            Some(other) => panic!("no subtask {other}"),
            None => &agent.span_id,
        };
        assert_eq!(
            &chat.parent_span_id,
            expected,
            "{:?}",
            text(chat, "planboard.call.role")
        );
        assert!(chat.start_time_unix_nano >= agent.start_time_unix_nano);
        assert!(chat.end_time_unix_nano <= agent.end_time_unix_nano);
    }
    assert_eq!(Some(tokens), view["spent"]["prompt_tokens"].as_i64());
    assert!(chats.iter().any(
        |c| text(c, "planboard.call.role").as_deref() == Some("executor")
            && c.parent_span_id == subtask.span_id
    ));
    assert!(collector
        .services
        .lock()
        .unwrap()
        .iter()
        .all(|s| s == "planboard"));
    // The notification that the run finished carries the run span's
    // context: the receiver's spans can join the run's trace.
    let expected = format!("00-{caller_trace}-{}-01", hex::encode(&agent.span_id));
    let mut notified = Vec::new();
    for _ in 0..200 {
        notified = collector.notified.lock().unwrap().clone();
        if notified.iter().any(|(event, _)| event == "run_finished") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let finished = notified
        .iter()
        .find(|(event, _)| event == "run_finished")
        .unwrap_or_else(|| panic!("no run_finished among {notified:?}"));
    assert_eq!(finished.1.as_deref(), Some(expected.as_str()));
}

#[tokio::test]
async fn message_content_is_on_the_spans_only_when_the_operator_opts_in() {
    let fake = FakeOpenAi::start().await;
    script(&fake);
    let collector = collector().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = traced_config(dir.path(), &fake, &collector);
    if let Some(t) = config.telemetry.as_mut() {
        t.capture_content = true;
    }
    let server = TestServer::with_config(&config, |_| {}).await;
    // No traceparent: the request starts a trace, and the run joins it.
    let (run, echoed) = start_traced(&server, None).await;
    wait_for(&server, &run, "done").await;
    let trace = echoed.split('-').nth(1).unwrap().to_string();
    let spans = spans_of_run(&server, &collector, &hex_bytes(&trace)).await;
    let request = one(&spans, "POST /api/runs");
    assert!(request.parent_span_id.is_empty(), "a root span");
    let tool = one(&spans, "execute_tool write_file");
    assert!(text(tool, "gen_ai.tool.call.arguments")
        .unwrap()
        .contains("out.txt"));
    let agent = one(&spans, "invoke_agent planboard");
    assert_eq!(
        text(agent, "planboard.task").as_deref(),
        Some("A note in out.txt")
    );
    assert!(spans.iter().filter(|s| s.name == "chat fake").all(|c| text(
        c,
        "planboard.transcript"
    )
    .is_some_and(|t| !t.is_empty())));
}

#[tokio::test]
async fn without_an_endpoint_nothing_is_traced_and_responses_carry_no_traceparent() {
    let server = TestServer::start().await;
    assert!(server.services.telemetry.is_none());
    let response = server
        .client
        .get(server.url("/api/plans"))
        .header(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().get("traceparent").is_none());
}
