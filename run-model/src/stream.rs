//! The names of the server-sent events on the plan and run streams, so the
//! server that writes them and the board that listens agree by type.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `event:` field of an SSE message. A plan-log row has none (the
/// default `message`); every other message names one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StreamEvent {
    /// A fresh stream: whatever the page shows must be loaded again.
    Ready,
    /// This client fell too far behind: load again.
    Resync,
    /// The plan's run wrote to its log (the board reloads the run).
    Run,
    /// A piece of a reply the agent's model is writing.
    Delta,
    /// The server is going down.
    Shutdown,
}

impl StreamEvent {
    pub const ALL: [StreamEvent; 5] = [
        StreamEvent::Ready,
        StreamEvent::Resync,
        StreamEvent::Run,
        StreamEvent::Delta,
        StreamEvent::Shutdown,
    ];

    /// The name as it goes on the wire (`event: delta`).
    pub fn name(self) -> &'static str {
        match self {
            StreamEvent::Ready => "ready",
            StreamEvent::Resync => "resync",
            StreamEvent::Run => "run",
            StreamEvent::Delta => "delta",
            StreamEvent::Shutdown => "shutdown",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_name_is_serdes() {
        // `name` is a &'static str for SSE builders; serde decides it.
        for e in StreamEvent::ALL {
            assert_eq!(e.name(), crate::wire_name(&e));
            assert_eq!(e.name().parse::<StreamEvent>(), Ok(e));
        }
    }
}
