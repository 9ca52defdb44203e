//! People's reviews of finished plans over HTTP: each caller writes (and
//! removes) only their own review of a plan; everyone reads all of them;
//! the queue lists the finished plans nobody has reviewed.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use run_model::{NewReview, Review, ReviewVerdict, ToReview};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use super::docs::{ListErrors, ReadErrors, WriteErrors};
use super::error::{ApiError, Body};
use super::extract::{Params, PlanRef};
use super::ApiState;
use crate::auth::Identity;

#[utoipa::path(get, path = "/plans/{id}/reviews", tag = "reviews",
    params(("id" = uuid::Uuid, Path, description = "plan UUID")),
    description = "every reviewer's review of the plan, oldest first",
    responses((status = 200, body = Vec<super::schema::ReviewDoc>), ReadErrors))]
pub async fn plan_reviews(
    State(state): State<ApiState>,
    PlanRef(id): PlanRef,
) -> Result<Json<Vec<Review>>, ApiError> {
    Ok(Json(state.reviews.of_plan(id).await?))
}

#[utoipa::path(put, path = "/plans/{id}/review", tag = "reviews",
    params(("id" = uuid::Uuid, Path, description = "plan UUID")),
    request_body = super::schema::NewReviewDoc,
    description = "writes the caller's review of a finished plan (replacing the caller's earlier one; \
        other reviewers' stay). A verdict other than good needs a note. The review is remembered: \
        the agent recalls it before planning a similar task",
    responses((status = 200, body = super::schema::ReviewDoc), WriteErrors))]
pub async fn put_review(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    PlanRef(id): PlanRef,
    Body(body): Body<NewReview>,
) -> Result<Json<Review>, ApiError> {
    Ok(Json(state.reviews.write(id, &who.actor(), body).await?))
}

#[utoipa::path(delete, path = "/plans/{id}/review", tag = "reviews",
    params(("id" = uuid::Uuid, Path, description = "plan UUID")),
    description = "removes the caller's review of the plan and the memory it left",
    responses((status = 204, description = "removed"), WriteErrors))]
pub async fn delete_review(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    PlanRef(id): PlanRef,
) -> Result<StatusCode, ApiError> {
    state.reviews.remove(id, &who.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The longest reviewer name a list of reviews is filtered by.
pub const REVIEWER_CHARS: usize = 200;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReviewsQuery {
    /// Only reviews with this verdict.
    #[param(inline, value_type = Option<String>, pattern = "^(good|needs_changes|wrong)$")]
    verdict: Option<ReviewVerdict>,
    /// Only this reviewer's reviews.
    #[param(max_length = 200)]
    reviewer: Option<String>,
    #[param(minimum = 0, maximum = 100000)]
    offset: Option<u32>,
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

#[utoipa::path(get, path = "/reviews", tag = "reviews", params(ReviewsQuery),
    description = "reviews of every plan, the latest written or changed first",
    responses((status = 200, body = Vec<super::schema::ReviewDoc>), ListErrors))]
pub async fn list_reviews(
    State(state): State<ApiState>,
    Params(q): Params<ReviewsQuery>,
) -> Result<Json<Vec<Review>>, ApiError> {
    let (offset, limit) = super::extract::page(q.offset, q.limit)?;
    if q.reviewer
        .as_ref()
        .is_some_and(|r| r.chars().count() > REVIEWER_CHARS)
    {
        return Err(ApiError::BadRequest(format!(
            "reviewer has at most {REVIEWER_CHARS} characters"
        )));
    }
    Ok(Json(
        state
            .reviews
            .list(q.verdict, q.reviewer.as_deref(), offset, limit)
            .await?,
    ))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct QueueQuery {
    #[param(minimum = 0, maximum = 100000)]
    offset: Option<u32>,
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

/// A page of the review queue.
#[derive(Serialize, JsonSchema)]
pub struct ReviewQueue {
    /// Finished plans without a review, in all.
    pub total: usize,
    #[schemars(with = "Vec<run_model::ToReview>")]
    pub plans: Vec<ToReview>,
}

#[utoipa::path(get, path = "/review-queue", tag = "reviews", params(QueueQuery),
    description = "finished, failed and abandoned plans nobody has reviewed, the latest finished first, \
        with the task that was asked when planboard's agent made them",
    responses((status = 200, body = ReviewQueue), ListErrors))]
pub async fn review_queue(
    State(state): State<ApiState>,
    Params(q): Params<QueueQuery>,
) -> Result<Json<ReviewQueue>, ApiError> {
    let (offset, limit) = super::extract::page(q.offset, q.limit)?;
    let (plans, total) = state
        .reviews
        .queue(offset as usize, limit as usize, |_| true)
        .await?;
    Ok(Json(ReviewQueue { total, plans }))
}
