//! Server-sent events: resuming with Last-Event-ID misses nothing and
//! repeats nothing.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::support::{chain, TestServer};

/// One SSE message, as the `eventsource-stream` parser read it.
#[derive(Debug)]
pub struct Message {
    pub event: String,
    pub id: Option<i64>,
    pub data: Value,
}

type Events = futures_util::stream::BoxStream<
    'static,
    Result<eventsource_stream::Event, eventsource_stream::EventStreamError<reqwest::Error>>,
>;

/// Reads SSE messages from a response with a maintained parser (comments,
/// such as keep-alives, are skipped; UTF-8 split across chunks is joined).
pub struct Reader {
    events: Events,
}

impl Reader {
    pub async fn open(server: &TestServer, path: &str, last_event_id: Option<i64>) -> Reader {
        Reader::open_url(&server.client, &server.url(path), last_event_id).await
    }

    pub async fn open_url(
        client: &reqwest::Client,
        url: &str,
        last_event_id: Option<i64>,
    ) -> Reader {
        let mut request = client.get(url);
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = request.send().await.expect("stream");
        assert_eq!(response.status(), 200);
        Reader::of(response.bytes_stream())
    }

    /// A reader over any byte stream (a test may cut the bytes itself).
    pub fn of(
        bytes: impl futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send + 'static,
    ) -> Reader {
        Reader {
            events: bytes.eventsource().boxed(),
        }
    }

    pub async fn next(&mut self) -> Message {
        let event = tokio::time::timeout(Duration::from_secs(10), self.events.next())
            .await
            .expect("an event within 10 s")
            .expect("stream open")
            .expect("a well-formed event");
        Message {
            event: event.event,
            id: event.id.parse().ok(),
            data: serde_json::from_str(&event.data).expect("JSON data"),
        }
    }
}

#[tokio::test]
async fn a_stream_resumed_with_last_event_id_misses_and_repeats_nothing() {
    let server = TestServer::start().await;
    let id = server.create(chain("live")).await;
    let path = format!("/api/plans/{id}/subtasks/1/state");
    server.post(&path, json!({"state": "in_progress"})).await;
    server
        .post(&path, json!({"state": "done", "note": "ok"}))
        .await;
    let (_, page) = server.get(&format!("/api/plans/{id}/events")).await;
    let seqs: Vec<i64> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert!(seqs.len() >= 4, "{seqs:?}");

    // Resume after the first row: the rest of the log, in order, once.
    let mut reader = Reader::open(&server, &format!("/api/plans/{id}/stream"), Some(seqs[0])).await;
    for want in &seqs[1..] {
        let m = reader.next().await;
        assert_eq!(m.id, Some(*want));
        assert_eq!(m.data["seq"], *want);
    }
    // Then live rows, with nothing repeated.
    server
        .post(
            &format!("/api/plans/{id}/comments"),
            json!({"body": "live one"}),
        )
        .await;
    let m = reader.next().await;
    assert_eq!(m.data["kind"], "comment_added");
    assert!(m.id.unwrap() > *seqs.last().unwrap());
}

#[tokio::test]
async fn a_fresh_stream_starts_with_ready_and_then_follows_every_plan() {
    let server = TestServer::start().await;
    let mut reader = Reader::open(&server, "/api/stream", None).await;
    let ready = reader.next().await;
    assert_eq!(ready.event, "ready");
    let id = server.create(chain("watched")).await;
    let m = reader.next().await;
    assert_eq!(m.data["kind"], "plan_created");
    assert_eq!(m.data["plan_id"], id.as_str());
    assert_eq!(m.data["actor"], "tester");
    assert_eq!(m.id, Some(ready.data["seq"].as_i64().unwrap() + 1));
}

#[tokio::test]
async fn a_client_leaving_a_quiet_plan_stream_frees_its_subscription_at_once() {
    let server = TestServer::start().await;
    let id = server.create(chain("quiet")).await;
    let hub = server.services.plans.hub();
    let before = hub.subscribers();
    let mut readers = Vec::new();
    for _ in 0..20 {
        let mut reader = Reader::open(&server, &format!("/api/plans/{id}/stream"), None).await;
        assert_eq!(reader.next().await.event, "ready");
        readers.push(reader);
    }
    assert_eq!(hub.subscribers(), before + 20);
    drop(readers);
    // No event is written to the plan: only the disconnects can free them.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while hub.subscribers() > before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} subscriptions still held 5 s after their clients left",
            hub.subscribers() - before
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_chinese_character_split_across_network_chunks_arrives_whole() {
    let server = TestServer::start().await;
    let id = server.create(chain("分块")).await;
    let mut reader = Reader::open(&server, &format!("/api/plans/{id}/stream"), Some(0)).await;
    let created = reader.next().await;
    assert_eq!(created.data["event"]["plan"]["title"], "分块");

    // The same bytes, cut one byte at a time: every character of "分块"
    // (three bytes each) is split across chunks.
    let raw = server
        .client
        .get(server.url(&format!("/api/plans/{id}/stream")))
        .header("Last-Event-ID", "0")
        .send()
        .await
        .unwrap();
    let bytes = raw.bytes_stream().flat_map(|chunk| {
        let chunk = chunk.expect("chunk");
        futures_util::stream::iter(
            (0..chunk.len())
                .map(move |i| Ok(chunk.slice(i..i + 1)))
                .collect::<Vec<_>>(),
        )
    });
    let mut split = Reader::of(bytes);
    let again = split.next().await;
    assert_eq!(again.data["event"]["plan"]["title"], "分块");
    assert_eq!(again.id, created.id);
}

/// Follows `path` while another client writes `total` comments, dropping
/// the connection every few events and resuming from the last id seen
/// (header or `?after=`); answers the seqs received, in order.
async fn follow_with_drops(
    server: &TestServer,
    path: &str,
    by_query: bool,
    wanted: usize,
) -> Vec<i64> {
    let mut seen: Vec<i64> = Vec::new();
    while seen.len() < wanted {
        let last = seen.last().copied().unwrap_or(0);
        let mut reader = if by_query {
            let sep = if path.contains('?') { '&' } else { '?' };
            Reader::open(server, &format!("{path}{sep}after={last}"), None).await
        } else {
            Reader::open(server, path, Some(last)).await
        };
        // A few events, then the connection drops.
        for _ in 0..7 {
            if seen.len() == wanted {
                break;
            }
            let m = reader.next().await;
            seen.push(m.id.expect("every row has an id"));
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_while_another_client_writes_delivers_every_row_once_on_both_streams() {
    let server = TestServer::start().await;
    let id = server.create(chain("busy")).await;
    let total = 60;
    let writer = {
        let client = server.client.clone();
        let url = server.url(&format!("/api/plans/{id}/comments"));
        tokio::spawn(async move {
            for i in 0..total {
                let r = client
                    .post(&url)
                    .json(&json!({"body": format!("c{i}")}))
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success());
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    // The plan's log: created + 60 comments; the whole log: the same rows.
    let plan_path = format!("/api/plans/{id}/stream");
    let plan_stream = follow_with_drops(&server, &plan_path, false, total + 1);
    let all_stream = follow_with_drops(&server, "/api/stream", true, total + 1);
    let (plan_seqs, all_seqs) = tokio::join!(plan_stream, all_stream);
    writer.await.unwrap();
    let (_, page) = server
        .get(&format!("/api/plans/{id}/events?limit=1000"))
        .await;
    let logged: Vec<i64> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(logged.len(), total + 1);
    assert_eq!(plan_seqs, logged, "Last-Event-ID: every row once, in order");
    assert_eq!(
        all_seqs, logged,
        "?after= on /api/stream: every row once, in order"
    );
}

#[tokio::test]
async fn an_idle_stream_gets_keep_alive_comments() {
    let config = server::config::Config {
        lease: Duration::from_secs(3600),
        ..server::config::Config::defaults("sqlite::memory:", crate::support::local())
    };
    let server = TestServer::with_config(&config, |s| {
        s.keep_alive = Duration::from_millis(100);
    })
    .await;
    let mut response = server
        .client
        .get(server.url("/api/stream"))
        .send()
        .await
        .unwrap();
    let mut raw = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !raw.lines().any(|l| l.starts_with(':')) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no keep-alive in 5 s: {raw:?}"
        );
        let chunk = tokio::time::timeout(Duration::from_secs(5), response.chunk())
            .await
            .expect("a chunk")
            .unwrap()
            .expect("open");
        raw.push_str(&String::from_utf8_lossy(&chunk));
    }
}
