//! OpenTelemetry: the agent's work as spans sent over OTLP/HTTP
//! (protobuf) to the operator's collector, and HTTP requests joined to
//! their callers' traces (W3C `traceparent` in and out).
//!
//! Spans are made from the run log as it is written (the hook that also
//! counts the Prometheus metrics queues a copy of each entry, without the
//! content the operator did not opt into, for a span-making thread that
//! takes the queue every 100 ms), not by holding span objects across a
//! run's awaits: a run may wait days for a person and outlive the process.
//! So the spans that have children get ids computed from the run instead
//! of remembered: a run's span id comes from its id (and its trace id too,
//! unless the request that started it carried a trace, kept on the run as
//! [`RunRecord::trace_parent`]); a subtask attempt's span id from the run,
//! the subtask and the attempt. A model or tool call's span is made when
//! its entry is written, dated back by its duration, and points at these
//! ids; a subtask's span when its result is written; the run's span when
//! the run ends. Backends assemble the tree from the ids, in any order.
//!
//! Names and attributes follow the GenAI semantic conventions: `chat
//! {model}` spans with `gen_ai.operation.name`, `gen_ai.system`
//! (`gen_ai.provider.name` too), request and response model, token usage
//! and finish reasons; `execute_tool {tool}`; `invoke_agent planboard` for
//! the run. Prompts, replies, tool arguments and results are put on spans
//! only when the operator opts in
//! (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`).
//!
//! # Layout
//! - [`TelemetryConfig`]: read from the standard `OTEL_*` variables.
//! - [`Telemetry`]: the tracer provider (no global one: state is passed
//!   in) and the queue to the span maker; `SpanMaker`: the spans of the
//!   runs in flight, on its own thread.
//! - [`trace_requests`]: the middleware giving each request a server span
//!   and the response a `traceparent`; [`RequestTrace`] is that span's
//!   context, for the handler that starts a run.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::trace::{
    Span as _, SpanBuilder, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags,
    TraceId, TraceState, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, IdGenerator, RandomIdGenerator, SdkTracer,
    SdkTracerProvider,
};
use plan_engine::SubtaskId;
use run_model::{LlmCallRecord, RunEntry, RunId, RunRecord, RunState, TraceParent};

/// What the spans go to, from the standard variables.
#[derive(Clone, Debug, PartialEq)]
pub struct TelemetryConfig {
    /// The full address spans are POSTed to (`…/v1/traces`).
    pub endpoint: String,
    /// How long finished spans wait to be sent together
    /// (`OTEL_BSP_SCHEDULE_DELAY`, 5 s).
    pub batch_delay: Duration,
    /// Prompts, replies, tool arguments and results on the spans.
    pub capture_content: bool,
    /// `service.name` (`OTEL_SERVICE_NAME`, `planboard`).
    pub service_name: String,
    /// `gen_ai.system`: who serves the model (`openai` unless the
    /// endpoint's host says DeepSeek, Qwen's DashScope and so on).
    pub system: String,
}

/// An `OTEL_*` setting planboard cannot follow.
#[derive(Debug, thiserror::Error)]
pub enum BadTelemetry {
    #[error(
        "OTEL_EXPORTER_OTLP_PROTOCOL={0}: planboard sends OTLP over HTTP as protobuf (http/protobuf)"
    )]
    Protocol(String),
    #[error("{name} must be an http(s) URL, not '{value}'")]
    Endpoint { name: &'static str, value: String },
    #[error("OTEL_BSP_SCHEDULE_DELAY must be milliseconds, not '{0}'")]
    Delay(String),
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(String),
}

impl TelemetryConfig {
    /// `None` when no OTLP endpoint is set, or tracing is switched off
    /// (`OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`).
    pub fn from_vars(
        var: &impl Fn(&str) -> Option<String>,
    ) -> Result<Option<TelemetryConfig>, BadTelemetry> {
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
            || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim() == "none")
        {
            return Ok(None);
        }
        let endpoint = match (
            var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            var("OTEL_EXPORTER_OTLP_ENDPOINT"),
        ) {
            (Some(traces), _) => checked_url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces)?,
            (None, Some(base)) => {
                let base = checked_url("OTEL_EXPORTER_OTLP_ENDPOINT", base)?;
                format!("{}/v1/traces", base.trim_end_matches('/'))
            }
            (None, None) => return Ok(None),
        };
        let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
        if let Some(protocol) = protocol.filter(|p| p.trim() != "http/protobuf") {
            return Err(BadTelemetry::Protocol(protocol));
        }
        let batch_delay = match var("OTEL_BSP_SCHEDULE_DELAY") {
            None => Duration::from_secs(5),
            Some(ms) => Duration::from_millis(
                ms.trim()
                    .parse()
                    .map_err(|_| BadTelemetry::Delay(ms.clone()))?,
            ),
        };
        Ok(Some(TelemetryConfig {
            endpoint,
            batch_delay,
            capture_content: var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
            service_name: var("OTEL_SERVICE_NAME").unwrap_or_else(|| "planboard".into()),
            system: "openai".into(),
        }))
    }

    /// A config sending to `endpoint` (tests, benchmarks).
    pub fn to(endpoint: impl Into<String>) -> TelemetryConfig {
        TelemetryConfig {
            endpoint: endpoint.into(),
            batch_delay: Duration::from_secs(5),
            capture_content: false,
            service_name: "planboard".into(),
            system: "openai".into(),
        }
    }
}

fn checked_url(name: &'static str, value: String) -> Result<String, BadTelemetry> {
    let value = value.trim().to_string();
    match reqwest::Url::parse(&value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(value),
        _ => Err(BadTelemetry::Endpoint { name, value }),
    }
}

/// `gen_ai.system` for a model endpoint: known providers by their host,
/// `openai` (the protocol spoken) otherwise.
pub fn system_of(base_url: &str) -> String {
    let host = reqwest::Url::parse(base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
        .unwrap_or_default();
    let known = [
        ("deepseek", "deepseek"),
        ("dashscope", "qwen"),
        ("anthropic", "anthropic"),
        ("mistral", "mistral_ai"),
        ("groq", "groq"),
        ("azure", "azure.ai.openai"),
    ];
    known
        .iter()
        .find(|(part, _)| host.contains(part))
        .map(|(_, system)| system.to_string())
        .unwrap_or_else(|| "openai".into())
}

thread_local! {
    /// The ids the next span built on this thread must have (spans are
    /// built synchronously, so nothing else can take them in between).
    static NEXT_TRACE: Cell<Option<TraceId>> = const { Cell::new(None) };
    static NEXT_SPAN: Cell<Option<SpanId>> = const { Cell::new(None) };
}

/// Ids chosen by the caller when it has chosen them, random otherwise:
/// the SDK's builder takes no ids, its id generator is the hook.
#[derive(Debug, Default)]
struct ChosenIds(RandomIdGenerator);

impl IdGenerator for ChosenIds {
    fn new_trace_id(&self) -> TraceId {
        NEXT_TRACE
            .with(Cell::take)
            .unwrap_or_else(|| self.0.new_trace_id())
    }
    fn new_span_id(&self) -> SpanId {
        NEXT_SPAN
            .with(Cell::take)
            .unwrap_or_else(|| self.0.new_span_id())
    }
}

/// What is kept of a run in flight to make its spans.
#[derive(Debug)]
struct RunSpans {
    trace_id: TraceId,
    /// The span the run's span hangs under (the starting request's).
    parent: Option<SpanId>,
    sampled: bool,
    started: SystemTime,
    /// Each subtask's current attempt (counted here, from 1).
    tries: HashMap<SubtaskId, u32>,
    plan: Option<plan_engine::PlanId>,
    task: String,
    spent: run_model::Spent,
    /// Moments worth a mark on the run's span (at most [`MAX_EVENTS`]).
    events: Vec<opentelemetry::trace::Event>,
}

const MAX_EVENTS: usize = 128;
/// Runs that ended lately: entries written after the end (what the run
/// remembered) must not start them again.
const ENDED_KEPT: usize = 1024;

impl RunSpans {
    fn new(run: RunId, parent: Option<TraceParent>, now: SystemTime) -> RunSpans {
        // The run span's own context, as its notifications carry it.
        let own = run_traceparent(run, parent);
        RunSpans {
            trace_id: TraceId::from_bytes(own.trace_id),
            parent: parent.map(|p| SpanId::from_bytes(p.span_id)),
            sampled: own.sampled,
            started: now,
            tries: HashMap::new(),
            plan: None,
            task: String::new(),
            spent: run_model::Spent::default(),
            events: Vec::new(),
        }
    }

    fn context(&self, span: SpanId) -> Context {
        remote(self.trace_id, span, self.sampled)
    }
}

/// A context whose parent is the span `span` of `trace`, made elsewhere
/// (another process, or this one earlier): what children point at.
fn remote(trace: TraceId, span: SpanId, sampled: bool) -> Context {
    let flags = if sampled {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    Context::new().with_remote_span_context(SpanContext::new(
        trace,
        span,
        flags,
        true,
        TraceState::default(),
    ))
}

/// A stable 64-bit id from some bytes (FNV-1a), never zero.
fn span_id_of(parts: &[&[u8]]) -> SpanId {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.iter().chain([&0xffu8]) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    SpanId::from_bytes(hash.max(1).to_be_bytes())
}

/// The span id of a run's span.
pub fn run_span_id(run: RunId) -> SpanId {
    span_id_of(&[run.as_bytes(), b"run"])
}

/// The `traceparent` of a run's span (whose trace is the starting
/// request's, or the run's own): what its notifications carry.
pub fn run_traceparent(run: RunId, parent: Option<TraceParent>) -> TraceParent {
    TraceParent {
        trace_id: parent.map(|p| p.trace_id).unwrap_or(*run.as_bytes()),
        span_id: run_span_id(run).to_bytes(),
        sampled: parent.is_none_or(|p| p.sampled),
    }
}

/// The span context of the server span a request got: a run started by
/// the request joins its trace under it.
#[derive(Clone, Copy, Debug)]
pub struct RequestTrace(pub TraceParent);

/// The tracer provider, and the thread that makes the runs' spans.
pub struct Telemetry {
    provider: SdkTracerProvider,
    /// For the requests' spans, made where the request is served.
    tracer: SdkTracer,
    capture_content: bool,
    /// What the span maker is to do next.
    queue: Arc<Queue>,
    maker: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Entries the span maker had no room for (it fell behind).
    dropped: AtomicU64,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("capture_content", &self.capture_content)
            .finish_non_exhaustive()
    }
}

/// What the span maker is asked to do, in the order the run did it.
enum Job {
    Adopt(RunId, Option<TraceParent>, SystemTime),
    Saw(RunSeen),
    Entry(RunId, RunEntry, SystemTime),
    /// Answer once everything sent before is made.
    Flush(SyncSender<()>),
}

/// What the spans need of a saved run.
struct RunSeen {
    id: RunId,
    trace_parent: Option<TraceParent>,
    plan: Option<plan_engine::PlanId>,
    task: String,
    spent: run_model::Spent,
}

/// Entries waiting for the span maker, at most: beyond that they are
/// dropped (and counted) rather than held or waited for.
const JOBS_QUEUED: usize = 4096;

/// How often the span maker takes what was queued. Waking it for every
/// entry cost the agent more than making the span inline (measured: the
/// run's thread and this one take turns on a 2-core machine).
const MAKE_EVERY: Duration = Duration::from_millis(100);

/// The span maker's jobs: pushed under a lock without waking it; it takes
/// them all every [`MAKE_EVERY`], or at once for a flush or the end.
#[derive(Default)]
struct Queue {
    jobs: Mutex<Vec<Job>>,
    wake: std::sync::Condvar,
    closed: std::sync::atomic::AtomicBool,
}

impl Queue {
    /// Queues `job`; false when the queue is full or closed.
    fn push(&self, job: Job, wake: bool) -> bool {
        if self.closed.load(Ordering::Relaxed) {
            return false;
        }
        let mut jobs = self.jobs.lock().expect("jobs lock");
        if jobs.len() >= JOBS_QUEUED && !matches!(job, Job::Flush(_)) {
            return false;
        }
        jobs.push(job);
        drop(jobs);
        if wake {
            self.wake.notify_one();
        }
        true
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        let _guard = self.jobs.lock().expect("jobs lock");
        self.wake.notify_one();
    }

    /// Everything queued, waiting up to [`MAKE_EVERY`] for something;
    /// `None` once closed and drained.
    fn take(&self) -> Option<Vec<Job>> {
        let mut jobs = self.jobs.lock().expect("jobs lock");
        if jobs.is_empty() && !self.closed.load(Ordering::Relaxed) {
            jobs = self
                .wake
                .wait_timeout(jobs, MAKE_EVERY)
                .expect("jobs lock")
                .0;
        }
        let taken = std::mem::take(&mut *jobs);
        if taken.is_empty() && self.closed.load(Ordering::Relaxed) {
            return None;
        }
        Some(taken)
    }
}

fn cut(text: &str, chars: usize) -> String {
    plan_engine::text::prefix(text, chars).to_string()
}

fn kv(key: &'static str, value: impl Into<Value>) -> KeyValue {
    KeyValue::new(key, value)
}

/// `tracer`'s span with the chosen ids, where chosen.
fn build(
    tracer: &SdkTracer,
    builder: SpanBuilder,
    parent: &Context,
    trace: Option<TraceId>,
    span: Option<SpanId>,
) -> opentelemetry_sdk::trace::Span {
    NEXT_TRACE.with(|c| c.set(trace));
    NEXT_SPAN.with(|c| c.set(span));
    let built = tracer.build_with_context(builder, parent);
    NEXT_TRACE.with(|c| c.set(None));
    NEXT_SPAN.with(|c| c.set(None));
    built
}

impl Telemetry {
    /// Starts the exporter (its own thread sends batches; a collector that
    /// is down costs the agent nothing but the dropped spans) and the span
    /// maker (its own thread too: the agent's path only queues a copy of
    /// each log entry).
    pub fn start(config: &TelemetryConfig) -> Result<Telemetry, BadTelemetry> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(config.endpoint.clone())
            .build()
            .map_err(|e| BadTelemetry::Exporter(e.to_string()))?;
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(
                BatchConfigBuilder::default()
                    .with_scheduled_delay(config.batch_delay)
                    .build(),
            )
            .build();
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(config.service_name.clone())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_id_generator(ChosenIds::default())
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("planboard");
        let mut maker = SpanMaker {
            tracer: tracer.clone(),
            capture_content: config.capture_content,
            system: config.system.clone(),
            runs: HashMap::new(),
            ended: VecDeque::new(),
            salt: uuid::Uuid::new_v4().as_bytes()[..8]
                .try_into()
                .unwrap_or([0; 8]),
        };
        let queue = Arc::new(Queue::default());
        let taken = queue.clone();
        let thread = std::thread::Builder::new()
            .name("planboard-spans".into())
            .spawn(move || {
                while let Some(jobs) = taken.take() {
                    for job in jobs {
                        maker.run(job);
                    }
                    // Not every round: the queue fills between them.
                    std::thread::sleep(MAKE_EVERY);
                }
            })
            .map_err(|e| BadTelemetry::Exporter(e.to_string()))?;
        Ok(Telemetry {
            provider,
            tracer,
            capture_content: config.capture_content,
            queue,
            maker: Mutex::new(Some(thread)),
            dropped: AtomicU64::new(0),
        })
    }

    fn send(&self, job: Job) {
        if !self.queue.push(job, false) && self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
            tracing::warn!("the span maker fell behind: log entries are dropped from tracing");
        }
    }

    /// Log entries dropped from tracing because the span maker fell behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Makes the spans of everything sent so far and sends every finished
    /// span now (tests; shutdown). Blocks: call it off the runtime's threads.
    pub fn flush(&self) {
        let (done, made) = std::sync::mpsc::sync_channel(1);
        if self.queue.push(Job::Flush(done), true) {
            let _ = made.recv();
        }
        if let Err(e) = self.provider.force_flush() {
            tracing::warn!("sending spans failed: {e}");
        }
    }

    /// Makes what is queued, sends what is left and stops the exporter.
    /// Blocks: call it off the runtime's threads.
    pub fn shutdown(&self) {
        self.queue.close();
        if let Some(maker) = self.maker.lock().expect("maker lock").take() {
            let _ = maker.join();
        }
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!("stopping the span exporter failed: {e}");
        }
    }

    /// A run about to start: its spans join `parent`'s trace.
    pub fn adopt(&self, run: RunId, parent: Option<TraceParent>) {
        self.send(Job::Adopt(run, parent, SystemTime::now()));
    }

    /// A run was saved: what its spans need of it (the trace it joins after
    /// a restart, its plan, task and spending).
    pub fn saw_run(&self, record: &RunRecord) {
        if record.state.is_finished() {
            return;
        }
        self.send(Job::Saw(RunSeen {
            id: record.id,
            trace_parent: record.trace_parent,
            plan: record.plan_id,
            task: if self.capture_content {
                cut(&record.config.task, 2000)
            } else {
                String::new()
            },
            spent: record.spent.clone(),
        }));
    }

    /// One entry of a run's log, just written: queued with what the spans
    /// need of it (without the content the operator did not opt into).
    pub fn entry(&self, run: RunId, entry: &RunEntry) {
        let slim = match entry {
            RunEntry::LlmCall(call) if !self.capture_content => RunEntry::LlmCall(LlmCallRecord {
                transcript: String::new(),
                error: call.error.as_deref().map(|e| cut(e, 200)),
                ..call.clone()
            }),
            RunEntry::ToolCall {
                subtask,
                name,
                ok,
                duration_ms,
                result,
                replayed,
                ..
            } if !self.capture_content => RunEntry::ToolCall {
                subtask: *subtask,
                name: name.clone(),
                arguments: serde_json::Value::Null,
                result: if *ok { String::new() } else { cut(result, 200) },
                ok: *ok,
                duration_ms: *duration_ms,
                replayed: *replayed,
            },
            other => other.clone(),
        };
        self.send(Job::Entry(run, slim, SystemTime::now()));
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        // The span maker ends with its queue.
        self.queue.close();
    }
}

/// Makes the runs' spans on its own thread, from the jobs in order.
struct SpanMaker {
    tracer: SdkTracer,
    capture_content: bool,
    system: String,
    runs: HashMap<RunId, RunSpans>,
    ended: VecDeque<RunId>,
    /// Tells this process's subtask attempts from an earlier process's
    /// (its counters start again at 1 after a restart).
    salt: [u8; 8],
}

impl SpanMaker {
    fn run(&mut self, job: Job) {
        match job {
            Job::Adopt(run, parent, at) => {
                self.runs.insert(run, RunSpans::new(run, parent, at));
            }
            Job::Saw(seen) => {
                let spans = self.runs.entry(seen.id).or_insert_with(|| {
                    RunSpans::new(seen.id, seen.trace_parent, SystemTime::now())
                });
                spans.plan = seen.plan;
                if spans.task.is_empty() {
                    spans.task = seen.task;
                }
                spans.spent = seen.spent;
            }
            Job::Entry(run, entry, at) => self.entry(run, &entry, at),
            Job::Flush(done) => {
                let _ = done.send(());
            }
        }
    }

    fn build(
        &self,
        builder: SpanBuilder,
        parent: &Context,
        trace: Option<TraceId>,
        span: Option<SpanId>,
    ) -> opentelemetry_sdk::trace::Span {
        build(&self.tracer, builder, parent, trace, span)
    }

    fn subtask_span_id(&self, run: RunId, subtask: SubtaskId, attempt: u32) -> SpanId {
        span_id_of(&[
            run.as_bytes(),
            b"subtask",
            &subtask.0.to_be_bytes(),
            &attempt.to_be_bytes(),
            &self.salt,
        ])
    }

    /// One entry of a run's log, written at `now`.
    fn entry(&mut self, run: RunId, entry: &RunEntry, now: SystemTime) {
        if self.ended.contains(&run) {
            return;
        }
        if let RunEntry::StateChanged { to, reason, .. } = entry {
            if to.is_finished() {
                let spans = self
                    .runs
                    .remove(&run)
                    .unwrap_or_else(|| RunSpans::new(run, None, now));
                self.end_run(run, spans, *to, reason, now);
                return;
            }
        }
        let mut spans = self
            .runs
            .remove(&run)
            .unwrap_or_else(|| RunSpans::new(run, None, now));
        self.entry_of(run, &mut spans, entry, now);
        self.runs.insert(run, spans);
    }

    fn entry_of(&self, run: RunId, spans: &mut RunSpans, entry: &RunEntry, now: SystemTime) {
        match entry {
            RunEntry::LlmCall(call) => self.model_call(run, spans, call, now),
            RunEntry::ToolCall {
                subtask,
                name,
                arguments,
                result,
                ok,
                duration_ms,
                replayed,
            } => {
                let attempt = *spans.tries.entry(*subtask).or_insert(1);
                let parent = spans.context(self.subtask_span_id(run, *subtask, attempt));
                let mut attributes = vec![
                    kv("gen_ai.operation.name", "execute_tool"),
                    kv("gen_ai.tool.name", name.clone()),
                    kv("gen_ai.tool.type", "function"),
                    kv("planboard.run.id", run.to_string()),
                    kv("planboard.subtask.id", i64::from(subtask.0)),
                ];
                if *replayed {
                    attributes.push(kv("planboard.tool.replayed", true));
                }
                if self.capture_content {
                    attributes.push(kv("gen_ai.tool.call.arguments", arguments.to_string()));
                    attributes.push(kv("gen_ai.tool.call.result", cut(result, 4000)));
                }
                if !ok {
                    attributes.push(kv("error.type", "tool_error"));
                }
                let builder = SpanBuilder::from_name(format!("execute_tool {name}"))
                    .with_kind(SpanKind::Internal)
                    .with_start_time(now - Duration::from_millis(*duration_ms))
                    .with_attributes(attributes);
                let mut span = self.build(builder, &parent, None, None);
                if !ok {
                    span.set_status(Status::error(cut(result, 200)));
                }
                span.end_with_timestamp(now);
            }
            RunEntry::SubtaskResult {
                subtask,
                ok,
                text,
                duration_ms,
            } => {
                let attempt = *spans.tries.entry(*subtask).or_insert(1);
                spans.tries.insert(*subtask, attempt + 1);
                let mut attributes = vec![
                    kv("planboard.run.id", run.to_string()),
                    kv("planboard.subtask.id", i64::from(subtask.0)),
                    kv("planboard.subtask.attempt", i64::from(attempt)),
                    kv("planboard.subtask.ok", *ok),
                ];
                if let Some(plan) = spans.plan {
                    attributes.push(kv("planboard.plan.id", plan.to_string()));
                }
                let builder = SpanBuilder::from_name(format!("subtask #{}", subtask.0))
                    .with_kind(SpanKind::Internal)
                    .with_start_time(now - Duration::from_millis(*duration_ms))
                    .with_attributes(attributes);
                let parent = spans.context(run_span_id(run));
                let id = self.subtask_span_id(run, *subtask, attempt);
                let mut span = self.build(builder, &parent, None, Some(id));
                if !ok {
                    span.set_status(Status::error(cut(text, 200)));
                }
                span.end_with_timestamp(now);
            }
            RunEntry::StateChanged { to, .. } => {
                self.mark(
                    spans,
                    "state_changed",
                    now,
                    vec![kv("planboard.run.state", to.to_string())],
                );
            }
            other => {
                let name = other.kind().as_str();
                let mut attributes = Vec::new();
                if let Some(subtask) = other.subtask() {
                    attributes.push(kv("planboard.subtask.id", i64::from(subtask.0)));
                }
                self.mark(spans, name, now, attributes);
            }
        }
    }

    fn mark(
        &self,
        spans: &mut RunSpans,
        name: impl Into<std::borrow::Cow<'static, str>>,
        at: SystemTime,
        attributes: Vec<KeyValue>,
    ) {
        if spans.events.len() < MAX_EVENTS {
            spans
                .events
                .push(opentelemetry::trace::Event::new(name, at, attributes, 0));
        }
    }

    fn model_call(&self, run: RunId, spans: &mut RunSpans, call: &LlmCallRecord, now: SystemTime) {
        let parent = match call.subtask {
            Some(subtask) => {
                let attempt = *spans.tries.entry(subtask).or_insert(1);
                spans.context(self.subtask_span_id(run, subtask, attempt))
            }
            None => spans.context(run_span_id(run)),
        };
        let mut attributes = vec![
            kv("gen_ai.operation.name", "chat"),
            kv("gen_ai.system", self.system.clone()),
            kv("gen_ai.provider.name", self.system.clone()),
            kv("gen_ai.request.model", call.model.clone()),
            kv("gen_ai.response.model", call.model.clone()),
            kv("gen_ai.usage.input_tokens", i64::from(call.prompt_tokens)),
            kv(
                "gen_ai.usage.output_tokens",
                i64::from(call.completion_tokens),
            ),
            kv("planboard.run.id", run.to_string()),
            kv("planboard.call.role", call.role.to_string()),
            kv("planboard.call.attempt", i64::from(call.attempt)),
        ];
        if let Some(reason) = &call.finish_reason {
            attributes.push(kv(
                "gen_ai.response.finish_reasons",
                Value::Array(Array::String(vec![StringValue::from(reason.clone())])),
            ));
        }
        if let Some(subtask) = call.subtask {
            attributes.push(kv("planboard.subtask.id", i64::from(subtask.0)));
        }
        if let Some(cost) = call.cost {
            attributes.push(kv("planboard.cost_usd", cost.dollars()));
        }
        if call.error.is_some() {
            attributes.push(kv("error.type", "model_error"));
        }
        if self.capture_content {
            attributes.push(kv("planboard.transcript", call.transcript.clone()));
        }
        let builder = SpanBuilder::from_name(format!("chat {}", call.model))
            .with_kind(SpanKind::Client)
            .with_start_time(now - Duration::from_millis(call.latency_ms))
            .with_attributes(attributes);
        let mut span = self.build(builder, &parent, None, None);
        if let Some(error) = &call.error {
            span.set_status(Status::error(cut(error, 200)));
        }
        span.end_with_timestamp(now);
    }

    fn end_run(
        &mut self,
        run: RunId,
        spans: RunSpans,
        state: RunState,
        reason: &str,
        now: SystemTime,
    ) {
        if self.ended.len() >= ENDED_KEPT {
            self.ended.pop_front();
        }
        self.ended.push_back(run);
        let mut attributes = vec![
            kv("gen_ai.operation.name", "invoke_agent"),
            kv("gen_ai.agent.name", "planboard"),
            kv("gen_ai.agent.id", run.to_string()),
            kv("gen_ai.system", self.system.clone()),
            kv(
                "gen_ai.usage.input_tokens",
                spans.spent.prompt_tokens as i64,
            ),
            kv(
                "gen_ai.usage.output_tokens",
                spans.spent.completion_tokens as i64,
            ),
            kv("planboard.run.id", run.to_string()),
            kv("planboard.run.state", state.to_string()),
            kv("planboard.model_calls", i64::from(spans.spent.llm_calls)),
            kv("planboard.cost_usd", spans.spent.cost.dollars()),
        ];
        if let Some(plan) = spans.plan {
            attributes.push(kv("planboard.plan.id", plan.to_string()));
        }
        if self.capture_content && !spans.task.is_empty() {
            attributes.push(kv("planboard.task", spans.task.clone()));
        }
        let parent = match spans.parent {
            Some(parent) => spans.context(parent),
            None => Context::new(),
        };
        let builder = SpanBuilder::from_name("invoke_agent planboard")
            .with_kind(SpanKind::Internal)
            .with_start_time(spans.started)
            .with_attributes(attributes)
            .with_events(spans.events);
        let mut span = self.build(
            builder,
            &parent,
            Some(spans.trace_id),
            Some(run_span_id(run)),
        );
        if state == RunState::Failed {
            span.set_status(Status::error(cut(reason, 200)));
        }
        span.end_with_timestamp(now);
    }
}

impl Telemetry {
    /// The server span of one request.
    fn request_span(&self, request: &Request) -> opentelemetry_sdk::trace::Span {
        let parent = request
            .headers()
            .get("traceparent")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<TraceParent>().ok());
        let context = match parent {
            Some(p) => remote(
                TraceId::from_bytes(p.trace_id),
                SpanId::from_bytes(p.span_id),
                p.sampled,
            ),
            None => Context::new(),
        };
        let method = request.method().as_str().to_string();
        let path = request.uri().path();
        let route = route_of(path);
        let mut attributes = vec![
            kv("http.request.method", method.clone()),
            kv("url.path", cut(path, 500)),
            kv("http.route", route.clone()),
            kv("url.scheme", "http"),
        ];
        if let Some(agent) = request
            .headers()
            .get(axum::http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
        {
            attributes.push(kv("user_agent.original", cut(agent, 200)));
        }
        let builder = SpanBuilder::from_name(format!("{method} {route}"))
            .with_kind(SpanKind::Server)
            .with_attributes(attributes);
        build(&self.tracer, builder, &context, None, None)
    }
}

/// A route without its ids (`/api/runs/{id}/cost`): span names must not
/// grow with every plan.
fn route_of(path: &str) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .map(|part| {
            let id = uuid::Uuid::parse_str(part).is_ok()
                || (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
            if id {
                "{id}"
            } else {
                part
            }
        })
        .collect();
    cut(&parts.join("/"), 200)
}

/// Gives each request a server span under its `traceparent` (if any), and
/// the response the `traceparent` of that span. Static files, health
/// checks and scrapes are left out.
pub async fn trace_requests(
    State(telemetry): State<Option<Arc<Telemetry>>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(telemetry) = telemetry else {
        return next.run(request).await;
    };
    let path = request.uri().path();
    if path.starts_with("/pkg/")
        || path == "/healthz"
        || path == "/metrics"
        || path.starts_with("/favicon")
    {
        return next.run(request).await;
    }
    let mut span = telemetry.request_span(&request);
    let context = span.span_context().clone();
    let here = TraceParent {
        trace_id: context.trace_id().to_bytes(),
        span_id: context.span_id().to_bytes(),
        sampled: context.is_sampled(),
    };
    request.extensions_mut().insert(RequestTrace(here));
    let mut response = next.run(request).await;
    let status = response.status();
    span.set_attribute(kv("http.response.status_code", i64::from(status.as_u16())));
    if status.is_server_error() {
        span.set_attribute(kv("error.type", status.as_u16().to_string()));
        span.set_status(Status::error(""));
    }
    span.end();
    if let Ok(value) = axum::http::HeaderValue::from_str(&here.to_string()) {
        response.headers_mut().insert("traceparent", value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_comes_from_the_traces_variable_or_the_base_one() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(TelemetryConfig::from_vars(&vars(&[])).unwrap(), None);
        let base = TelemetryConfig::from_vars(&vars(&[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://collector:4318/",
        )]))
        .unwrap()
        .unwrap();
        assert_eq!(base.endpoint, "http://collector:4318/v1/traces");
        assert!(!base.capture_content);
        let traces = TelemetryConfig::from_vars(&vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://other:4318/x"),
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
            ("OTEL_BSP_SCHEDULE_DELAY", "250"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(traces.endpoint, "http://other:4318/x");
        assert!(traces.capture_content);
        assert_eq!(traces.batch_delay, Duration::from_millis(250));
        let off = TelemetryConfig::from_vars(&vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ]))
        .unwrap();
        assert_eq!(off, None);
        for bad in [
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ][..],
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")][..],
        ] {
            let pairs: &'static [(&str, &str)] = Box::leak(bad.to_vec().into_boxed_slice());
            assert!(TelemetryConfig::from_vars(&vars(pairs)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn routes_lose_their_ids_and_providers_are_told_by_host() {
        assert_eq!(
            route_of("/api/runs/4bf92f35-77b3-4da6-a3ce-929d0e0e4736/cost"),
            "/api/runs/{id}/cost"
        );
        assert_eq!(
            route_of("/api/plans/12/subtasks/3"),
            "/api/plans/{id}/subtasks/{id}"
        );
        assert_eq!(system_of("https://api.deepseek.com/v1"), "deepseek");
        assert_eq!(
            system_of("https://dashscope.aliyuncs.com/compatible-mode/v1"),
            "qwen"
        );
        assert_eq!(system_of("http://127.0.0.1:8080/v1"), "openai");
    }

    #[test]
    fn a_full_queue_refuses_entries_but_not_a_flush_and_a_closed_one_drains_then_ends() {
        let queue = Queue::default();
        let entry = || Job::Adopt(uuid::Uuid::new_v4(), None, SystemTime::now());
        for _ in 0..JOBS_QUEUED {
            assert!(queue.push(entry(), false));
        }
        assert!(!queue.push(entry(), false), "full");
        let (done, _made) = std::sync::mpsc::sync_channel(1);
        assert!(queue.push(Job::Flush(done), true));
        assert_eq!(queue.take().map(|jobs| jobs.len()), Some(JOBS_QUEUED + 1));
        assert!(queue.push(entry(), false));
        queue.close();
        assert!(!queue.push(entry(), false), "closed");
        assert_eq!(queue.take().map(|jobs| jobs.len()), Some(1), "drained");
        assert!(queue.take().is_none());
    }

    #[test]
    fn span_ids_are_stable_per_run_and_differ_between_runs() {
        let a = uuid::Uuid::new_v4();
        let b = uuid::Uuid::new_v4();
        assert_eq!(run_span_id(a), run_span_id(a));
        assert_ne!(run_span_id(a), run_span_id(b));
        assert_ne!(run_span_id(a), SpanId::INVALID);
    }
}
