//! The names of the server-sent events on the plan and run streams, so the
//! server that writes them and the board that listens agree by type.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

plan_engine::wire_enum! {
    /// The `event:` field of an SSE message. A plan-log row has none (the
    /// default `message`); every other message names one of these.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum StreamEvent: "stream event" {
        /// A fresh stream: whatever the page shows must be loaded again.
        Ready = "ready",
        /// This client fell too far behind: load again.
        Resync = "resync",
        /// The plan's run wrote to its log (the board reloads the run).
        Run = "run",
        /// A piece of a reply the agent's model is writing.
        Delta = "delta",
        /// The server is going down.
        Shutdown = "shutdown",
    }
}
