//! ACP agents: planboard as the client of a coding agent that speaks the
//! Agent Client Protocol (Codex through its adapter, Claude Code's,
//! Gemini CLI, …). A run given to one (`RunConfig::agent`) starts the
//! agent in the run's workspace, sends it the task, and turns what it does
//! into planboard's own records: its plan updates into the run's plan, its
//! messages and tool calls into the run log, its permission requests into
//! guarded calls a person decides on the board. The wire types are the
//! protocol's own schema crate (`agent-client-protocol-schema`, ACP
//! version 1); nothing of the schema is written here by hand.
//!
//! # Layout
//! - [`transport`]: [`AcpCommand`] (the program an admin added), starting
//!   it with a cleared environment, and JSON-RPC over its stdin and stdout
//!   ([`Connection`]).
//! - [`plan`]: an ACP plan update as ops on the run's plan (pure).
//! - [`people`]: what people did to the plan, and the prompts that tell
//!   the agent (pure).
//! - [`driver`]: one run from start to end ([`start`], [`drive`]), and
//!   the Tools page's check of an agent ([`check`]).

pub mod driver;
pub mod people;
pub mod plan;
pub mod transport;

pub use driver::{actor_of, check, drive, drive_connected, give_up, start};
pub use transport::{AcpCommand, AcpError, Connection, Incoming};
