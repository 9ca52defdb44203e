//! Server-sent events: one plan's log, or every plan's (for the list page).
//! Each event's SSE id is its log seq; `Last-Event-ID` (or `?after=`) resumes.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use serde::Deserialize;
use utoipa::IntoParams;

use super::docs::{ListErrors, ReadErrors};
use super::error::ApiError;
use super::extract::{Params, PlanRef};
use super::plans::no_plan;
use super::ApiState;
use crate::live;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// Resume after this seq (for clients that cannot send Last-Event-ID).
    #[param(minimum = 0)]
    after: Option<i64>,
}

fn resume_from(headers: &HeaderMap, q: &StreamQuery) -> Result<Option<i64>, ApiError> {
    match headers.get("last-event-id") {
        Some(v) => {
            let text = v.to_str().unwrap_or_default().trim();
            text.parse().map(Some).map_err(|_| {
                ApiError::BadRequest(format!("Last-Event-ID must be an event seq, not '{text}'"))
            })
        }
        None => Ok(q.after),
    }
}

#[utoipa::path(get, path = "/plans/{id}/stream", tag = "live",
    params(("id" = uuid::Uuid, Path, description = "plan UUID"), StreamQuery),
    responses((status = 200, content_type = "text/event-stream",
        description = "`ready` {seq} first when not resuming; then one unnamed event per log row (data: the row as in /events, id: its seq); `run` events (no id) carry the entries of the plan's run as they are written (as in /api/runs/{id}/events); `resync` {seq, missed} if this client fell too far behind: reload, then keep reading; `shutdown` when the server stops: reconnect"), ReadErrors))]
pub async fn plan_stream(
    State(state): State<ApiState>,
    PlanRef(id): PlanRef,
    Params(q): Params<StreamQuery>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    if state.plans.read(id, |_| ()).await.is_none() {
        return Err(no_plan(id));
    }
    let after = resume_from(&headers, &q)?;
    Ok(live::stream(
        state.plans.hub(),
        state.plans.store(),
        Some(id),
        after,
        state.keep_alive,
        Some(state.runs.subscribe()),
    ))
}

#[utoipa::path(get, path = "/stream", tag = "live", params(StreamQuery),
    responses((status = 200, content_type = "text/event-stream", description = "as the plan stream, for every plan"), ListErrors))]
pub async fn all_stream(
    State(state): State<ApiState>,
    Params(q): Params<StreamQuery>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    let after = resume_from(&headers, &q)?;
    Ok(live::stream(
        state.plans.hub(),
        state.plans.store(),
        None,
        after,
        state.keep_alive,
        None,
    ))
}

#[utoipa::path(get, path = "/runs/{id}/stream", tag = "live",
    params(("id" = uuid::Uuid, Path, description = "run UUID"), StreamQuery),
    responses((status = 200, content_type = "text/event-stream",
        description = "the run log: every entry after `after` (or Last-Event-ID; from the start when neither is given), then live ones; data: the entry as in /events, id: its seq; `shutdown` when the server stops"), ReadErrors))]
pub async fn run_stream(
    State(state): State<ApiState>,
    super::runs::RunRef(id): super::runs::RunRef,
    Params(q): Params<StreamQuery>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    state.runs.record(id).await?;
    let after = resume_from(&headers, &q)?.unwrap_or(0);
    Ok(crate::runs::run_stream(
        state.plans.hub(),
        state.runs.clone(),
        id,
        after,
        state.keep_alive,
    ))
}
