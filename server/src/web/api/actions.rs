//! The plan actions under `/api/plans/{id}/…`: approval, the plan's state
//! moves, starting a batch, replacing the list, and comments.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::{Extension, Json};
use plan_engine::Op;

use super::bodies::{
    Approve, Finish, IntoOp, NewComment, NoFields, Reject, ReplaceSubtasks, StartNext,
};
use super::docs::WriteErrors;
use super::error::{ApiError, Body};
use super::extract::{if_match, OptionalBody, PlanRef};
use super::plans::{run, Changed};
use super::ApiState;
use crate::auth::Identity;

/// An action whose body carries fields (`Body`, or `OptionalBody` when it
/// may be left out).
macro_rules! action {
    ($fn:ident, $path:literal, $extract:ident, $body:ty, $doc:ty, $about:literal) => {
        #[utoipa::path(post, path = $path, tag = "plans", description = $about,
                                    params(("id" = uuid::Uuid, Path, description = "plan UUID")),
                                    request_body(content = $doc, description = $about),
                                    responses((status = 200, body = Changed), WriteErrors))]
        pub async fn $fn(
            State(state): State<ApiState>,
            Extension(who): Extension<Identity>,
            PlanRef(id): PlanRef,
            headers: HeaderMap,
            $extract(body): $extract<$body>,
        ) -> Result<Json<Changed>, ApiError> {
            let command = body.into_command(None, if_match(&headers)?)?;
            run(&state, id, command, &who, None).await
        }
    };
}

#[utoipa::path(post, path = "/plans/{id}/approve", tag = "plans",
    description = "approves a plan awaiting approval (an optional comment). With `digest` (the plan's, \
        from GET /api/plans/{id}) the approval is of exactly that content: a plan that says something \
        else now is refused with 409 `stale`. Every approval is an approval record (GET /api/approvals)",
    params(("id" = uuid::Uuid, Path, description = "plan UUID")),
    request_body(content = Option<Approve>, description = "all fields optional; may be left out"),
    responses((status = 200, body = Changed), WriteErrors))]
pub async fn approve(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    PlanRef(id): PlanRef,
    headers: HeaderMap,
    OptionalBody(body): OptionalBody<Approve>,
) -> Result<Json<Changed>, ApiError> {
    let approval = body.approval(if_match(&headers)?);
    let approved = state
        .approvals
        .approve_plan(id, approval, &who.actor())
        .await?;
    Ok(Json(Changed {
        progress: approved.plan.progress(),
        plan: approved.plan,
        events: approved.events,
    }))
}
action!(
    reject,
    "/plans/{id}/reject",
    Body,
    Reject,
    Reject,
    "rejects a plan awaiting approval; the comment says what to change"
);
action!(
    finish,
    "/plans/{id}/finish",
    Body,
    Finish,
    Finish,
    "ends the plan as done, failed or abandoned"
);
action!(
    start_next,
    "/plans/{id}/start-next",
    OptionalBody,
    StartNext,
    Option<StartNext>,
    "starts up to `count` ready subtasks (5 by default), within max_parallel"
);
action!(
    replace_subtasks,
    "/plans/{id}/replace-subtasks",
    Body,
    ReplaceSubtasks,
    ReplaceSubtasks,
    "replaces the list by names (OpenManus update): kept names keep their state"
);
action!(
    add_comment,
    "/plans/{id}/comments",
    Body,
    NewComment,
    NewComment,
    "a review comment on the plan or one subtask"
);

/// An action with no fields of its own.
macro_rules! bare_action {
    ($fn:ident, $path:literal, $op:expr, $about:literal) => {
        #[utoipa::path(post, path = $path, tag = "plans", description = $about,
            params(("id" = uuid::Uuid, Path, description = "plan UUID")),
            request_body(content = Option<NoFields>, description = "only `expected_version`; may be left out"),
            responses((status = 200, body = Changed), WriteErrors))]
        pub async fn $fn(
            State(state): State<ApiState>,
            Extension(who): Extension<Identity>,
            PlanRef(id): PlanRef,
            headers: HeaderMap,
            OptionalBody(body): OptionalBody<NoFields>,
        ) -> Result<Json<Changed>, ApiError> {
            let command = body.command($op, if_match(&headers)?);
            run(&state, id, command, &who, None).await
        }
    };
}

bare_action!(
    submit,
    "/plans/{id}/submit",
    Op::Submit {},
    "submits a draft (for approval, when required)"
);
bare_action!(
    pause,
    "/plans/{id}/pause",
    Op::Pause {},
    "pauses the plan: no subtask may start until it resumes"
);
bare_action!(
    resume,
    "/plans/{id}/resume",
    Op::Resume {},
    "resumes a paused plan"
);
bare_action!(
    recover,
    "/plans/{id}/recover",
    Op::Recover {},
    "reopens a finished plan"
);
