//! Reply deltas between replicas (PostgreSQL).
//!
//! A delta, a piece of a reply being written, is never stored: it lives on
//! the broadcast of the process whose agent makes the call. With several
//! replicas a person may follow the run through another one, so the relay
//! also sends deltas over NOTIFY and streams what the other replicas send.
//! Deltas that queue while a notification is on its way go together, with
//! the pieces of one reply joined, so a busy server sends fewer
//! notifications than deltas. Deltas are a live view only: when the queue
//! is full or a notification is lost the reply still reaches the run log
//! whole.

use std::sync::Arc;

use tokio::sync::{broadcast, mpsc};

use super::RunLogStore;
use crate::live::{LiveDelta, RunNews};

/// PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more.
const PAYLOAD: usize = 7_000;
/// Deltas waiting to be sent at most; more are dropped.
const QUEUE: usize = 4096;

/// What one process sends: its deltas, and who it is, so it can skip its
/// own notifications.
#[derive(serde::Serialize, serde::Deserialize)]
struct Parcel {
    origin: uuid::Uuid,
    deltas: Vec<LiveDelta>,
}

/// The sending side; its tasks end with the run streams' channel.
pub struct DeltaRelay {
    outgoing: mpsc::Sender<LiveDelta>,
}

impl DeltaRelay {
    /// Starts sending this process's deltas and streaming the other
    /// processes' (`incoming`) on `news`.
    pub fn spawn(
        store: Arc<dyn RunLogStore>,
        news: broadcast::WeakSender<RunNews>,
        incoming: mpsc::Receiver<String>,
    ) -> DeltaRelay {
        let origin = uuid::Uuid::new_v4();
        let (outgoing, queue) = mpsc::channel(QUEUE);
        tokio::spawn(send(store, queue, origin));
        tokio::spawn(receive(incoming, news, origin));
        DeltaRelay { outgoing }
    }

    pub fn send(&self, delta: LiveDelta) {
        let _ = self.outgoing.try_send(delta);
    }
}

async fn send(
    store: Arc<dyn RunLogStore>,
    mut queue: mpsc::Receiver<LiveDelta>,
    origin: uuid::Uuid,
) {
    while let Some(first) = queue.recv().await {
        // What queued while the last send was on its way goes together;
        // nothing waits on purpose, so a delta keeps its place before the
        // run-log entry that follows it on the other path.
        let mut gathered = vec![first];
        while let Ok(delta) = queue.try_recv() {
            gathered.push(delta);
        }
        for payload in parcels(origin, join(gathered)) {
            if let Err(e) = store.send_run_deltas(&payload).await {
                tracing::warn!("could not send reply deltas to other replicas: {e}");
            }
        }
    }
}

/// Joins neighbouring pieces of the same reply into one delta.
fn join(deltas: Vec<LiveDelta>) -> Vec<LiveDelta> {
    let mut joined: Vec<LiveDelta> = Vec::with_capacity(deltas.len());
    for delta in deltas {
        match joined.last_mut() {
            Some(last)
                if last.run_id == delta.run_id
                    && last.delta.role == delta.delta.role
                    && last.delta.subtask == delta.delta.subtask
                    && last.delta.attempt == delta.delta.attempt
                    && !last.delta.done =>
            {
                last.delta.text.push_str(&delta.delta.text);
                last.delta.done = delta.delta.done;
            }
            _ => joined.push(delta),
        }
    }
    joined
}

/// Packs deltas into payloads under PostgreSQL's limit, cutting a long
/// text into several deltas (on character boundaries).
fn parcels(origin: uuid::Uuid, deltas: Vec<LiveDelta>) -> Vec<String> {
    let size = |p: &Parcel| serde_json::to_string(p).map_or(usize::MAX, |s| s.len());
    let mut out = Vec::new();
    let mut parcel = Parcel {
        origin,
        deltas: Vec::new(),
    };
    for delta in deltas.into_iter().flat_map(cut) {
        parcel.deltas.push(delta);
        if size(&parcel) > PAYLOAD {
            let last = parcel.deltas.pop();
            if !parcel.deltas.is_empty() {
                out.extend(serde_json::to_string(&parcel).ok());
            }
            parcel.deltas = last.into_iter().collect();
        }
    }
    if !parcel.deltas.is_empty() {
        out.extend(serde_json::to_string(&parcel).ok());
    }
    out
}

/// One delta per 1,000 characters of text at most: JSON escapes a
/// character in 6 bytes at worst, so one delta stays under the limit.
fn cut(delta: LiveDelta) -> Vec<LiveDelta> {
    const CHARS: usize = 1_000;
    if delta.delta.text.chars().count() <= CHARS {
        return vec![delta];
    }
    let chars: Vec<char> = delta.delta.text.chars().collect();
    let pieces = chars.chunks(CHARS).count();
    chars
        .chunks(CHARS)
        .enumerate()
        .map(|(i, piece)| {
            let mut part = delta.clone();
            part.delta.text = piece.iter().collect();
            part.delta.done = delta.delta.done && i + 1 == pieces;
            part
        })
        .collect()
}

async fn receive(
    mut incoming: mpsc::Receiver<String>,
    news: broadcast::WeakSender<RunNews>,
    origin: uuid::Uuid,
) {
    while let Some(payload) = incoming.recv().await {
        let Some(news) = news.upgrade() else { return };
        let parcel: Parcel = match serde_json::from_str(&payload) {
            Ok(parcel) => parcel,
            Err(e) => {
                tracing::warn!("a reply delta from another replica was unreadable: {e}");
                continue;
            }
        };
        if parcel.origin == origin || news.receiver_count() == 0 {
            continue;
        }
        for delta in parcel.deltas {
            let _ = news.send(RunNews::Delta(Arc::new(delta)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(run: u128, attempt: u32, text: &str, done: bool) -> LiveDelta {
        LiveDelta {
            run_id: uuid::Uuid::from_u128(run),
            plan_id: None,
            delta: agent::run::ReplyDelta {
                role: agent::run::CallRole::Executor,
                subtask: None,
                attempt,
                text: text.into(),
                done,
            },
        }
    }

    #[test]
    fn pieces_of_one_reply_are_joined_and_other_replies_kept_apart() {
        let joined = join(vec![
            piece(1, 1, "Hel", false),
            piece(1, 1, "lo", false),
            piece(1, 1, "", true),
            piece(1, 2, "again", false),
            piece(2, 1, "other run", false),
        ]);
        let texts: Vec<(&str, bool)> = joined
            .iter()
            .map(|d| (d.delta.text.as_str(), d.delta.done))
            .collect();
        assert_eq!(
            texts,
            [("Hello", true), ("again", false), ("other run", false)]
        );
    }

    #[test]
    fn a_long_reply_is_sent_in_payloads_postgres_accepts_and_arrives_whole() {
        let text: String = "é\"".repeat(5_000);
        let payloads = parcels(uuid::Uuid::nil(), vec![piece(1, 1, &text, true)]);
        assert!(payloads.len() > 1);
        assert!(payloads.iter().all(|p| p.len() < 8_000));
        let parts: Vec<LiveDelta> = payloads
            .iter()
            .flat_map(|p| serde_json::from_str::<Parcel>(p).unwrap().deltas)
            .collect();
        let whole: String = parts.iter().map(|d| d.delta.text.as_str()).collect();
        assert_eq!(whole, text);
        assert!(parts.last().unwrap().delta.done);
        assert!(parts[..parts.len() - 1].iter().all(|d| !d.delta.done));
    }
}
