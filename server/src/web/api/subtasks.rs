//! The subtask routes: add, edit, delete, and the moves under
//! `/subtasks/{sid}/…`, each with its own typed body.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::{Extension, Json};
use plan_engine::{Command, Op};

use super::bodies::{
    AddSubtask, EditSubtask, IntoOp, MoveSubtask, SetDependencies, SetNotes, SetState,
};
use super::docs::WriteErrors;
use super::error::{ApiError, Body};
use super::extract::{if_match, PlanRef, SubtaskRef};
use super::plans::{run, Changed};
use super::ApiState;
use crate::auth::Identity;

#[utoipa::path(post, path = "/plans/{id}/subtasks", tag = "subtasks",
    params(("id" = uuid::Uuid, Path, description = "plan UUID")),
    request_body = AddSubtask,
    responses((status = 200, body = Changed), WriteErrors))]
pub async fn add_subtask(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    PlanRef(id): PlanRef,
    headers: HeaderMap,
    Body(body): Body<AddSubtask>,
) -> Result<Json<Changed>, ApiError> {
    let command = body.into_command(None, if_match(&headers)?)?;
    run(&state, id, command, &who, None).await
}

#[utoipa::path(delete, path = "/plans/{id}/subtasks/{sid}", tag = "subtasks",
    params(("id" = uuid::Uuid, Path, description = "plan UUID"), ("sid" = u32, Path, description = "subtask id")),
    responses((status = 200, body = Changed), WriteErrors))]
pub async fn delete_subtask(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    PlanRef(id): PlanRef,
    SubtaskRef(sid): SubtaskRef,
    headers: HeaderMap,
) -> Result<Json<Changed>, ApiError> {
    let command = Command {
        op: Op::DeleteSubtask { id: sid },
        expected_version: if_match(&headers)?,
    };
    run(&state, id, command, &who, Some(sid)).await
}

/// A route that turns its typed body into one command on `{sid}`.
macro_rules! subtask_route {
    ($method:ident, $fn:ident, $path:literal, $body:ty) => {
        #[utoipa::path($method, path = $path, tag = "subtasks",
            params(("id" = uuid::Uuid, Path, description = "plan UUID"), ("sid" = u32, Path, description = "subtask id")),
            request_body = $body,
            responses((status = 200, body = Changed), WriteErrors))]
        pub async fn $fn(
            State(state): State<ApiState>,
            Extension(who): Extension<Identity>,
            PlanRef(id): PlanRef,
            SubtaskRef(sid): SubtaskRef,
            headers: HeaderMap,
            Body(body): Body<$body>,
        ) -> Result<Json<Changed>, ApiError> {
            let command = body.into_command(Some(sid), if_match(&headers)?)?;
            run(&state, id, command, &who, Some(sid)).await
        }
    };
}

subtask_route!(
    patch,
    edit_subtask,
    "/plans/{id}/subtasks/{sid}",
    EditSubtask
);
subtask_route!(
    post,
    set_state,
    "/plans/{id}/subtasks/{sid}/state",
    SetState
);
subtask_route!(
    post,
    move_subtask,
    "/plans/{id}/subtasks/{sid}/move",
    MoveSubtask
);
subtask_route!(
    post,
    set_dependencies,
    "/plans/{id}/subtasks/{sid}/dependencies",
    SetDependencies
);
subtask_route!(
    post,
    set_notes,
    "/plans/{id}/subtasks/{sid}/notes",
    SetNotes
);
