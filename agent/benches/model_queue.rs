//! Many runs on one slow model (issue 53): ten runs start at once on a
//! fake llama.cpp server with two slots that takes 100 ms a call (more
//! requests wait in its own queue, as llama.cpp's do), through the real
//! path (`Caller`, `ModelQueue`, async-openai over HTTP, streamed replies)
//! with a 1 s timeout per call. Each run makes the calls a complex run
//! makes: a classification, a plan, three subtasks at once, the answer.
//!
//! Measured: calls cancelled (their client gave up: a timeout), runs
//! failed for time, and the wall time against the same calls made one
//! after another (and against that divided by the slots, the best two
//! slots can do). With the queue (slots read from `/props`): 0 cancelled,
//! 0 failed, within 1.2× of the best. For contrast, the same runs with 64
//! calls let through at once (a limit above what the server serves), which
//! is what the queue prevents: calls wait at the server with their
//! timeouts running.
//!
//! Run: `cargo bench -p agent --bench model_queue`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent::call::{CallError, Caller};
use agent::llm::{CallRole, ErrorClass, Llm, LlmConfig, Message, ModelQueue, OpenAiLlm, Protocol};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const RUNS: usize = 10;
const SLOTS: usize = 2;
const DELAY: Duration = Duration::from_millis(100);
/// `PLANBOARD_LLM_TIMEOUT_SECS` for the bench: far less than the whole
/// bench takes, far more than one call.
const TIMEOUT_SECS: u64 = 1;

/// A run's calls in order; the three executor calls go at once.
const CALLS: [(CallRole, &str); 6] = [
    (CallRole::Classifier, "Which mode fits this task?"),
    (CallRole::Planner, "Plan the task."),
    (CallRole::Executor, "Do the first step."),
    (CallRole::Executor, "Do the second step."),
    (CallRole::Executor, "Do the third step."),
    (CallRole::Compiler, "Write the answer."),
];

/// What the fake server saw.
#[derive(Default)]
struct Counts {
    served: AtomicUsize,
    cancelled: AtomicUsize,
}

struct Script {
    slots: tokio::sync::Semaphore,
    counts: Arc<Counts>,
}

const PROPS: &str = r#"{"default_generation_settings":{"id":0,"n_ctx":16384,"is_processing":false},"total_slots":2,"model_path":"model.gguf","chat_template":"","build_info":"b1-bench"}"#;
const COMPLETION: &str = r#"{"id":"c1","object":"chat.completion","created":0,"model":"fake","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}"#;
const FIRST_PIECE: &str = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"o\"},\"finish_reason\":null}]}\n\n";
const LAST_PIECES: &str = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"k\"},\"finish_reason\":\"stop\"}]}\n\ndata: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"fake\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2,\"total_tokens\":11}}\n\ndata: [DONE]\n\n";

/// A llama.cpp-like server on a free port; its base URL (with `/v1`).
async fn fake_llama(counts: Arc<Counts>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let url = format!("http://{}/v1", listener.local_addr().expect("its address"));
    let script = Arc::new(Script {
        slots: tokio::sync::Semaphore::new(SLOTS),
        counts,
    });
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, script.clone()));
        }
    });
    url
}

/// The request's head and body, or `None` when the client went away.
async fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            if name.trim().eq_ignore_ascii_case("content-length") {
                value.trim().parse().ok()
            } else {
                None
            }
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((head, buf[head_end..].to_vec()))
}

async fn serve(mut stream: TcpStream, script: Arc<Script>) {
    let Some((head, body)) = read_request(&mut stream).await else {
        return;
    };
    let path = head.split_whitespace().nth(1).unwrap_or_default();
    if path == "/props" {
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{PROPS}",
            PROPS.len()
        );
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
        return;
    }
    if path != "/v1/chat/completions" {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await;
        return;
    }
    let streamed = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|request| request.get("stream").and_then(serde_json::Value::as_bool))
        .unwrap_or(false);
    let (mut reader, mut writer) = stream.split();
    let work = async {
        // Waits for a slot, as llama.cpp's server queues what it cannot
        // take yet; the client's timeout runs meanwhile.
        let _slot = script.slots.acquire().await.expect("never closed");
        if streamed {
            writer
                .write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
                )
                .await?;
            writer.write_all(FIRST_PIECE.as_bytes()).await?;
            tokio::time::sleep(DELAY).await;
            writer.write_all(LAST_PIECES.as_bytes()).await?;
        } else {
            tokio::time::sleep(DELAY).await;
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{COMPLETION}",
                COMPLETION.len()
            );
            writer.write_all(reply.as_bytes()).await?;
        }
        writer.shutdown().await?;
        Ok::<(), std::io::Error>(())
    };
    let mut probe = [0u8; 1];
    let answered = tokio::select! {
        done = work => done.is_ok(),
        // The client sends nothing more: a read ends only when it hangs up.
        _ = reader.read(&mut probe) => false,
    };
    let counter = if answered {
        &script.counts.served
    } else {
        &script.counts.cancelled
    };
    counter.fetch_add(1, Ordering::SeqCst);
}

fn model(url: &str) -> Arc<dyn Llm> {
    let config = LlmConfig::from_vars(|name: &str| match name {
        "PLANBOARD_LLM_MODEL" => Some("fake".to_string()),
        "PLANBOARD_LLM_BASE_URL" => Some(url.to_string()),
        "PLANBOARD_LLM_TIMEOUT_SECS" => Some(TIMEOUT_SECS.to_string()),
        "PLANBOARD_LLM_STREAM" => Some("true".to_string()),
        _ => None,
    })
    .expect("a good configuration")
    .expect("a model");
    Arc::new(OpenAiLlm::new(config).expect("an HTTP client"))
}

/// A caller of a run of its own on `queue`.
fn caller(llm: Arc<dyn Llm>, queue: &ModelQueue) -> Caller {
    let mut caller = Caller::standalone(llm, 1, Protocol::JsonSchema);
    caller.queue = queue.clone();
    caller.run = uuid::Uuid::new_v4();
    caller
}

async fn call(caller: &Caller, (role, what): (CallRole, &str)) -> Result<String, CallError> {
    caller
        .text(role, vec![Message::user(what)], 400, None)
        .await
}

/// One run's calls: two in turn, three at once, one more.
async fn one_run(caller: Caller) -> Result<(), CallError> {
    call(&caller, CALLS[0]).await?;
    call(&caller, CALLS[1]).await?;
    let steps = CALLS[2..5].iter().map(|c| call(&caller, *c));
    for step in futures_util::future::join_all(steps).await {
        step?;
    }
    call(&caller, CALLS[5]).await?;
    Ok(())
}

struct Measured {
    wall: Duration,
    limit: usize,
    served: usize,
    cancelled: usize,
    failed_for_time: usize,
    failed_otherwise: usize,
}

/// `RUNS` runs at once with `concurrency` as `PLANBOARD_LLM_CONCURRENCY`
/// has it (0: ask the endpoint).
async fn runs_at_once(concurrency: usize) -> Measured {
    let counts = Arc::new(Counts::default());
    let llm = model(&fake_llama(counts.clone()).await);
    let queue = ModelQueue::for_setting(llm.clone(), concurrency);
    // What the first call does anyway; asked before the clock starts.
    queue.ask_endpoint().await;
    let started = Instant::now();
    let runs = (0..RUNS).map(|_| one_run(caller(llm.clone(), &queue)));
    let ended = futures_util::future::join_all(runs).await;
    let wall = started.elapsed();
    let for_time = |e: &CallError| matches!(e, CallError::Llm(e) if e.class == ErrorClass::Timeout);
    Measured {
        wall,
        limit: queue.limit(),
        served: counts.served.load(Ordering::SeqCst),
        cancelled: counts.cancelled.load(Ordering::SeqCst),
        failed_for_time: ended
            .iter()
            .filter(|r| matches!(r, Err(e) if for_time(e)))
            .count(),
        failed_otherwise: ended
            .iter()
            .filter(|r| matches!(r, Err(e) if !for_time(e)))
            .count(),
    }
}

/// The same calls, one after another.
async fn one_after_another() -> Duration {
    let counts = Arc::new(Counts::default());
    let llm = model(&fake_llama(counts).await);
    let caller = caller(llm, &ModelQueue::fixed(1));
    let started = Instant::now();
    for _ in 0..RUNS {
        for c in CALLS {
            call(&caller, c)
                .await
                .expect("one call at a time is answered");
        }
    }
    started.elapsed()
}

fn show(name: &str, m: &Measured) {
    println!(
        "{name:<44} wall {:>5.2} s  limit {:>2}  served {:>3}  cancelled {:>3}  runs failed for time {:>2} (otherwise {})",
        m.wall.as_secs_f64(),
        m.limit,
        m.served,
        m.cancelled,
        m.failed_for_time,
        m.failed_otherwise
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let calls = RUNS * CALLS.len();
    println!(
        "{RUNS} runs x {} calls started at once; a fake llama.cpp server with {SLOTS} slots, {} ms a call; timeout {TIMEOUT_SECS} s a call",
        CALLS.len(),
        DELAY.as_millis()
    );
    let queued = runs_at_once(0).await;
    show("queue (slots read from /props)", &queued);
    let serial = one_after_another().await;
    let best = serial / SLOTS as u32;
    let against_best = queued.wall.as_secs_f64() / best.as_secs_f64();
    let against_serial = queued.wall.as_secs_f64() / serial.as_secs_f64();
    println!(
        "{:<44} wall {:>5.2} s  ({calls} calls; the best {SLOTS} slots can do: {:.2} s)",
        "the same calls one after another",
        serial.as_secs_f64(),
        best.as_secs_f64()
    );
    println!(
        "queue: {against_best:.2}x the best with {SLOTS} slots (must be <= 1.2), {against_serial:.2}x one after another"
    );
    let unqueued = runs_at_once(64).await;
    show("for contrast: 64 let through at once", &unqueued);

    assert_eq!(queued.limit, SLOTS, "the slots are read from /props");
    assert_eq!(queued.cancelled, 0, "no call cancelled");
    assert_eq!(queued.failed_for_time, 0, "no run failed for time");
    assert_eq!(queued.failed_otherwise, 0, "no run failed");
    assert_eq!(queued.served, calls, "every call served once");
    assert!(
        against_best <= 1.2,
        "the queue's wall time is {against_best:.2}x the best two slots can do"
    );
}
