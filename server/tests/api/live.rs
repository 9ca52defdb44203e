//! Server-sent events: resuming with Last-Event-ID misses nothing and
//! repeats nothing.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::support::{chain, TestServer};

/// One parsed SSE message.
#[derive(Debug)]
pub struct Message {
    pub event: String,
    pub id: Option<i64>,
    pub data: Value,
}

/// Reads SSE messages from a response, skipping keep-alive comments.
pub struct Reader {
    stream: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
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
        Reader {
            stream: response.bytes_stream().boxed(),
            buffer: String::new(),
        }
    }

    pub async fn next(&mut self) -> Message {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut message = Message {
                    event: "message".into(),
                    id: None,
                    data: Value::Null,
                };
                let mut saw_data = false;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        message.event = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("id:") {
                        message.id = v.trim().parse().ok();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        message.data = serde_json::from_str(v.trim()).expect("JSON data");
                        saw_data = true;
                    }
                }
                if saw_data {
                    return message;
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.stream.next())
                .await
                .expect("an event within 10 s")
                .expect("stream open")
                .expect("chunk");
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
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
