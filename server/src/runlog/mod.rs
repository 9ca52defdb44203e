//! The runs' storage: every run's row ([`RunStore`]: its record, lease and
//! retention) and every run's entries (the agent's decisions, tool calls,
//! replies, people's answers) in one ordered table, the outbox the
//! streams, the board, the webhooks' deliverer and the needs count read.
//!
//! # Layout
//! - `rows.rs`: [`RunStore`], the runs' rows, and its SQL;
//! - `store.rs`: [`RunLogStore`] and its rows ([`NewRunEntry`],
//!   [`StoredRunEntry`]); `sql.rs`: it on the SQL store (and, on
//!   PostgreSQL, the NOTIFY channels);
//! - `writer.rs`: [`LogQueue`], which batches what the agents log so that
//!   no step waits for it, and the shared log's reader;
//! - `relay.rs`: [`DeltaRelay`], reply deltas between replicas.

mod relay;
mod rows;
mod sql;
mod store;
mod writer;

pub use relay::DeltaRelay;
pub use rows::RunStore;
pub use store::{NewRunEntry, RunLogStore, StoredRunEntry};
pub use writer::{read_shared_log, LogQueue, Streaming};
