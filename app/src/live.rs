//! Live updates from the server's SSE streams, through leptos-use's
//! EventSource (inert during server-side rendering).

use codee::string::FromToStringCodec;
use leptos::prelude::*;
use leptos_use_event_source::{
    use_event_source_with_options, ConnectionReadyState, ReconnectLimit, UseEventSourceOptions,
    UseEventSourceReturn,
};
use plan_engine::{Event, PlanId};
use run_model::{ReplyDelta, StreamEvent};
use serde::Deserialize;

/// One log row as the stream sends it.
#[derive(Clone, Debug, Deserialize)]
pub struct StreamRow {
    pub seq: i64,
    pub plan_id: PlanId,
    /// `null` for the deletion marker.
    pub event: Option<Event>,
}

/// What a stream said last.
#[derive(Clone, Debug)]
pub enum Heard {
    Row(Box<StreamRow>),
    /// `ready` (a fresh stream) or `resync` (this client fell too far
    /// behind): whatever the page shows must be loaded again.
    Reload,
    /// The plan's run wrote to its log (the agent did something).
    Run,
    /// The agent's model wrote a piece of a reply.
    Delta(Box<ReplyDelta>),
}

pub struct Live {
    pub heard: Signal<Option<Heard>>,
    pub connected: Signal<bool>,
}

/// Follows `url`, reconnecting forever (every second) after a drop.
pub fn use_live(url: String) -> Live {
    let UseEventSourceReturn {
        message,
        ready_state,
        ..
    } = use_event_source_with_options::<String, FromToStringCodec>(
        url.as_str(),
        UseEventSourceOptions::default()
            .named_events(
                [
                    StreamEvent::Ready,
                    StreamEvent::Resync,
                    StreamEvent::Run,
                    StreamEvent::Delta,
                ]
                .map(|e| e.as_str().to_string()),
            )
            .reconnect_limit(ReconnectLimit::Infinite)
            .reconnect_interval(1000),
    );
    let heard = Signal::derive(move || {
        message.with(|m| {
            m.as_ref()
                .and_then(|m| match m.event_type.parse::<StreamEvent>() {
                    Ok(StreamEvent::Ready | StreamEvent::Resync) => Some(Heard::Reload),
                    Ok(StreamEvent::Run) => Some(Heard::Run),
                    Ok(StreamEvent::Delta) => crate::codec::read::<ReplyDelta>(&m.data)
                        .ok()
                        .map(|p| Heard::Delta(Box::new(p))),
                    Ok(StreamEvent::Shutdown) => None,
                    // A plan-log row (`message`).
                    Err(_) => crate::codec::read::<StreamRow>(&m.data)
                        .ok()
                        .map(|row| Heard::Row(Box::new(row))),
                })
        })
    });
    let connected = Signal::derive(move || ready_state.get() == ConnectionReadyState::Open);
    Live { heard, connected }
}
