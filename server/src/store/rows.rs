//! How values are stored, for the SQL of both write paths (`sql.rs`
//! through sqlx, `direct.rs` on SQLite's calling thread) and every
//! concept's store: timestamps, enum names, versions, the plan commit's
//! statements and the log rows a commit returns.

use chrono::SecondsFormat;
use plan_engine::{PlanId, Timestamp};
use serde::Serialize;

use super::{PlanWrite, StoreError, StoredEvent};

/// The statements of a plan commit, shared by sqlx's commit (`sql.rs`) and
/// SQLite's on the calling thread (`direct.rs`): `$n` reads the same in
/// both dialects.
pub(crate) mod statements {
    pub const INSERT_PLAN: &str = "INSERT INTO plans (plan_key, title, state, mode, approval, \
        version, updated_at, finished_at, id, created_at) \
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
    pub const UPDATE_PLAN: &str = "UPDATE plans SET plan_key = $1, title = $2, state = $3, \
        mode = $4, approval = $5, version = $6, updated_at = $7, finished_at = $8 \
        WHERE id = $9 AND version = $10 AND deleted_at IS NULL";
    /// A new plan's snapshot, or a due one (its own table: see the
    /// migration `0015_plan_snapshots`).
    pub const PUT_SNAPSHOT: &str = "INSERT INTO plan_snapshots (plan_id, snapshot) \
        VALUES ($1, $2) ON CONFLICT (plan_id) DO UPDATE SET snapshot = excluded.snapshot";
    /// The plans to load: each live plan's snapshot and version.
    pub const LOAD_PLANS: &str = "SELECT s.snapshot, p.version FROM plans p \
        JOIN plan_snapshots s ON s.plan_id = p.id WHERE p.deleted_at IS NULL \
        ORDER BY p.created_at";
    pub const LOAD_PLAN: &str = "SELECT s.snapshot, p.version FROM plans p \
        JOIN plan_snapshots s ON s.plan_id = p.id WHERE p.id = $1 AND p.deleted_at IS NULL";
    pub const PLAN_VERSION: &str = "SELECT version FROM plans WHERE id = $1";
    pub const INSERT_COMMENT: &str =
        "INSERT INTO comments (plan_id, id, subtask, author, body, at) \
        VALUES ($1, $2, $3, $4, $5, $6)";
    /// A deleted plan's key is free for a new plan.
    pub const DELETE_PLAN: &str = "UPDATE plans SET deleted_at = $1, plan_key = NULL \
        WHERE id = $2 AND deleted_at IS NULL RETURNING version";
    pub const INSERT_DELETED_EVENT: &str = "INSERT INTO plan_events \
        (plan_id, version, actor, kind, payload, at) VALUES ($1, $2, $3, 'plan_deleted', 'null', $4) \
        RETURNING seq";
    pub const CLEAR_ACTIVE_PLAN: &str = "DELETE FROM active_plans WHERE plan_id = $1";
    pub const SET_ACTIVE: &str = "INSERT INTO active_plans (session, plan_id, updated_at) \
        VALUES ($1, $2, $3) ON CONFLICT (session) DO UPDATE SET plan_id = excluded.plan_id, \
        updated_at = excluded.updated_at";
    pub const CLEAR_ACTIVE_SESSION: &str = "DELETE FROM active_plans WHERE session = $1";
    /// Events per `INSERT`: each statement is a round trip to sqlx's
    /// SQLite worker thread, once the agent's main cost per step.
    pub const EVENTS_PER_INSERT: usize = 1000;

    /// The `INSERT` of `rows` events (six columns each), returning their
    /// seqs.
    pub fn insert_events(rows: usize) -> String {
        super::values_sql(
            "INSERT INTO plan_events (plan_id, version, actor, kind, payload, at) VALUES ",
            6,
            rows,
        ) + " RETURNING seq"
    }
}

/// How a timestamp is stored: RFC 3339 in UTC with microseconds, so
/// text order is time order.
pub(crate) fn ts(t: Timestamp) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// The serde name of a unit enum (`in_progress`, `awaiting_approval`, …).
pub(crate) fn name_of<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

pub(super) fn version_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The seqs one `INSERT` of `rows` rows returned, in the order of its
/// `VALUES`: its rows take their seqs in that order, but the order
/// `RETURNING` lists them in is not specified.
pub(crate) fn in_values_order(
    mut seqs: Vec<i64>,
    rows: usize,
    what: &str,
) -> Result<Vec<i64>, StoreError> {
    seqs.sort_unstable();
    if seqs.len() != rows {
        return Err(corrupt(format!(
            "{rows} {what} written, {} seqs returned",
            seqs.len()
        )));
    }
    Ok(seqs)
}

/// The log rows of one `INSERT` of `events` with the seqs it returned,
/// as `PlanStore::events` reads them back (times at microseconds).
pub(super) fn stored_events(
    plan_id: PlanId,
    events: &[plan_engine::Event],
    seqs: Vec<i64>,
) -> Result<Vec<StoredEvent>, StoreError> {
    events
        .iter()
        .zip(in_values_order(seqs, events.len(), "events")?)
        .map(|(event, seq)| {
            Ok(StoredEvent {
                seq,
                plan_id,
                version: event.version,
                actor: event.actor.to_string(),
                kind: event.kind.name().to_string(),
                at: chrono::SubsecRound::trunc_subsecs(event.at, 6),
                event: serde_json::to_value(event).map_err(corrupt)?,
            })
        })
        .collect()
}

/// The row a deletion writes.
pub(super) fn deleted_event(
    seq: i64,
    plan_id: PlanId,
    version: i64,
    actor: &str,
    at: Timestamp,
) -> StoredEvent {
    StoredEvent {
        seq,
        plan_id,
        version: u64::try_from(version).unwrap_or_default(),
        actor: actor.to_string(),
        kind: "plan_deleted".to_string(),
        at,
        event: serde_json::Value::Null,
    }
}

/// Now, as a stored time reads back (microseconds).
pub(super) fn stored_now() -> Timestamp {
    chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 6)
}

/// A plan write's snapshot as stored, when it carries one; a new plan
/// must (its snapshot is where a load starts).
pub(super) fn snapshot_text(write: &PlanWrite) -> Result<Option<String>, StoreError> {
    if write.base_version.is_none() && write.snapshot.is_none() {
        return Err(corrupt("a new plan is written without its snapshot"));
    }
    write
        .snapshot
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(corrupt)
}

/// A row that does not read back as what was written (every store's
/// SQL reads its rows through this).
pub(crate) fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(e.to_string())
}

/// `head` followed by `rows` groups of `columns` numbered placeholders:
/// `($1, $2), ($3, $4)`.
pub(crate) fn values_sql(head: &str, columns: usize, rows: usize) -> String {
    let mut sql = String::from(head);
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for column in 0..columns {
            if column > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("${}", row * columns + column + 1));
        }
        sql.push(')');
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::values_sql;

    #[test]
    fn values_sql_numbers_every_placeholder_row_by_row() {
        assert_eq!(
            values_sql("INSERT INTO t (a, b) VALUES ", 2, 3),
            "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4), ($5, $6)"
        );
    }
}
