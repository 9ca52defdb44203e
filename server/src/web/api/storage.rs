//! `GET /api/storage`: what planboard stores and how much (the database,
//! the runs' workspaces, their logs, memories, webhook deliveries), with
//! the retentions and the quota in effect. Anyone who may read the board
//! may read it: it holds counts and sizes, no names, paths or contents.

use axum::extract::State;
use axum::Json;

use super::docs::ListErrors;
use super::error::ApiError;
use super::ApiState;

/// What planboard stores and how much, measured now (the workspaces are
/// walked: a few system calls per file, links never followed).
#[utoipa::path(get, path = "/storage", tag = "storage",
    responses((status = 200, body = super::schema::StorageReportDoc), ListErrors))]
pub async fn storage(
    State(state): State<ApiState>,
) -> Result<Json<run_model::StorageReport>, ApiError> {
    Ok(Json(state.runs.storage().await?))
}
