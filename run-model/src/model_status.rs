//! Whether the agent's model can answer, as the task box and
//! `GET /api/agent/tools` say it: a person who waits for a local model
//! must be able to tell "still building" from "died" (a build for the
//! wrong CPU dies at its first matrix product, and the task box used to
//! say "starting" for ever).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The model's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ModelStatus {
    /// No model is configured.
    #[default]
    None,
    /// Its endpoint answers.
    Ready,
    /// It does not answer yet; for the local model planboard started,
    /// what it is doing (`building`, `fetching`, `starting`).
    Waiting { doing: Option<String> },
    /// The local model's process is gone: why, and the last lines of its
    /// log.
    Died { reason: String, log: String },
}
