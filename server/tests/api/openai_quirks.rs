//! The real async-openai path against the fake server's quirks: what is
//! read, what is retried, what fails at once.

use std::sync::Arc;
use std::time::Duration;

use agent::call::Caller;
use agent::llm::{CallRole, ErrorClass, Message};
use agent::retry::RetryPolicy;
use agent::{MemoryHost, OpenAiLlm, RunEntry};

use crate::fake_openai::{Fake, FakeOpenAi};

#[tokio::test]
async fn the_openai_path_reads_quirky_replies_and_retries_only_what_can_be_retried() {
    let fake = FakeOpenAi::start().await;
    let llm = Arc::new(OpenAiLlm::new(fake.config(Duration::from_secs(1))).unwrap());
    let host = MemoryHost::new();
    let mut caller = Caller::standalone(llm, 2, agent::llm::Protocol::JsonSchema);
    caller.host = host.clone();
    caller.retry = RetryPolicy {
        base: Duration::from_millis(100),
        ..RetryPolicy::default()
    };
    let ask = || vec![Message::user("say hi")];
    // Three attempts per call: a 429 (waits the server's Retry-After), a 500, then a reply.
    fake.push(Fake::Status {
        code: 429,
        retry_after: Some("1"),
        body: r#"{"error":{"message":"slow down","type":"rate_limit"}}"#,
    });
    fake.push(Fake::Status {
        code: 500,
        retry_after: None,
        body: "upstream broke",
    });
    let started = std::time::Instant::now();
    let text = caller
        .text(CallRole::Compiler, ask(), 50, None)
        .await
        .unwrap();
    assert_eq!(text, "the final answer");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was waited for"
    );
    // A malformed body, then a reply slower than the 1 s timeout, then a reply.
    fake.push(Fake::Raw("{\"choices\": [tru"));
    fake.push(Fake::Slow(
        Duration::from_secs(3),
        Box::new(Fake::Content("late".into())),
    ));
    let text = caller
        .text(CallRole::Compiler, ask(), 50, None)
        .await
        .unwrap();
    assert_eq!(text, "the final answer");
    let retries: Vec<(String, u64)> = host
        .entries(uuid::Uuid::nil())
        .iter()
        .filter_map(|e| match e {
            RunEntry::RetryScheduled {
                class, delay_ms, ..
            } => Some((class.to_string(), *delay_ms)),
            _ => None,
        })
        .collect();
    let classes: Vec<&str> = retries.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(classes, ["rate_limited", "server", "server", "timeout"]);
    assert_eq!(retries[0].1, 1000, "the server's Retry-After");
    let calls: Vec<agent::run::LlmCallRecord> = host
        .entries(uuid::Uuid::nil())
        .into_iter()
        .filter_map(|e| match e {
            RunEntry::LlmCall(c) => Some(c),
            _ => None,
        })
        .collect();
    let last = calls.last().unwrap();
    assert_eq!(last.finish_reason, None, "finish_reason \"\" reads as none");
    assert_eq!(last.prompt_tokens, 0, "no usage reads as zero");
    // A stream that breaks mid-reply is redone. Watchers got the first
    // attempt's piece, then the second attempt's text in pieces.
    fake.push(Fake::Dropped("half of a reply"));
    let seen_before = host.deltas(uuid::Uuid::nil()).len();
    let text = caller
        .text(CallRole::Compiler, ask(), 50, None)
        .await
        .unwrap();
    assert_eq!(text, "the final answer");
    let deltas = host.deltas(uuid::Uuid::nil())[seen_before..].to_vec();
    let attempt = |n: u32| -> Vec<String> {
        deltas
            .iter()
            .filter(|d| d.attempt == n && !d.done)
            .map(|d| d.text.clone())
            .collect()
    };
    assert_eq!(attempt(1), ["half "]);
    assert_eq!(attempt(2).len(), 3, "the reply came in pieces");
    assert_eq!(attempt(2).concat(), "the final answer");
    assert!(deltas
        .iter()
        .all(|d| d.role == agent::run::CallRole::Compiler));
    let ends: Vec<u32> = deltas
        .iter()
        .filter(|d| d.done)
        .map(|d| d.attempt)
        .collect();
    assert_eq!(ends, [1, 2], "each attempt says when it is over");
    let dropped = host
        .entries(uuid::Uuid::nil())
        .into_iter()
        .filter(|e| matches!(e, RunEntry::RetryScheduled { class, .. } if *class == agent::run::ErrorClass::Dropped))
        .count();
    assert_eq!(dropped, 1, "the broken stream was retried as dropped");
    assert!(
        fake.requests().iter().all(|r| r["stream"] == true),
        "every request asked for a stream"
    );
    fake.push(Fake::Status {
        code: 401,
        retry_after: None,
        body: r#"{"error":{"message":"bad key"}}"#,
    });
    let before = fake.requests().len();
    let e = caller
        .text(CallRole::Compiler, ask(), 50, None)
        .await
        .unwrap_err();
    assert!(
        matches!(e, agent::call::CallError::Llm(ref e) if e.class == ErrorClass::Auth),
        "{e}"
    );
    assert_eq!(fake.requests().len(), before + 1, "a 401 is not retried");
    assert!(!format!("{:?}", host.entries(uuid::Uuid::nil())).contains("sk-fake-secret"));
}
