//! The run log: every run's entries (the agent's decisions, tool calls,
//! replies, people's answers) in one ordered table, the outbox the
//! streams, the board, the webhooks' deliverer and the needs count read.
//!
//! # Layout
//! - `store.rs`: [`RunLogStore`] and its rows ([`NewRunEntry`],
//!   [`StoredRunEntry`]); `sql.rs`: it on the SQL store (and, on
//!   PostgreSQL, the NOTIFY channels);
//! - `writer.rs`: [`LogQueue`], which batches what the agents log so that
//!   no step waits for it, and the shared log's reader;
//! - `relay.rs`: [`DeltaRelay`], reply deltas between replicas.

mod relay;
mod sql;
mod store;
mod writer;

pub use relay::DeltaRelay;
pub use store::{NewRunEntry, RunLogStore, StoredRunEntry};
pub use writer::{read_shared_log, LogQueue, Streaming};
