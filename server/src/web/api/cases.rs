//! Regression cases and suite runs over HTTP (issue 56): a run reviewed
//! good becomes a case (`POST /api/cases`), cases are listed, read,
//! changed, retired and deleted; a suite run plans and runs them again
//! (`POST /api/cases/run`), its report is read and it can be cancelled.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::{Extension, Json};
use run_model::{Case, CasePatch, NewCase, NewSuiteRun, SuiteReport, SuiteRun};
use serde::Deserialize;
use utoipa::IntoParams;

use super::docs::{CreateErrors, ListErrors, ReadErrors, RunStartErrors, WriteErrors};
use super::error::{ApiError, Body};
use super::extract::{path_param, Params};
use super::ApiState;
use crate::auth::Identity;

/// The `{id}` of a case route: a malformed id is a 404.
pub struct CaseRef(pub run_model::CaseId);

impl<S: Send + Sync> FromRequestParts<S> for CaseRef {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let text = path_param(parts, "id").await?;
        text.parse()
            .map(CaseRef)
            .map_err(|_| ApiError::NotFound(format!("'{text}' is not a case id (a UUID)")))
    }
}

/// The `{id}` of a suite run route: a malformed id is a 404.
pub struct SuiteRef(pub run_model::SuiteRunId);

impl<S: Send + Sync> FromRequestParts<S> for SuiteRef {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let text = path_param(parts, "id").await?;
        text.parse()
            .map(SuiteRef)
            .map_err(|_| ApiError::NotFound(format!("'{text}' is not a suite run id (a UUID)")))
    }
}

/// The longest tag a list of cases is filtered by.
pub const TAG_CHARS: usize = run_model::case::TAG_CHARS;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CasesQuery {
    /// Only the cases with this tag.
    #[param(max_length = 40)]
    tag: Option<String>,
    /// Only retired cases (`true`) or only those in use (`false`).
    retired: Option<bool>,
}

#[utoipa::path(get, path = "/cases", tag = "cases", params(CasesQuery),
    description = "the regression cases, newest first, each with its task, its reviewed plan's graph, \
        its answer, its input files and its checks",
    responses((status = 200, body = Vec<super::schema::CaseDoc>), ListErrors))]
pub async fn list_cases(
    State(state): State<ApiState>,
    Params(q): Params<CasesQuery>,
) -> Result<Json<Vec<Case>>, ApiError> {
    if q.tag
        .as_ref()
        .is_some_and(|t| t.chars().count() > TAG_CHARS)
    {
        return Err(ApiError::BadRequest(format!(
            "tag has at most {TAG_CHARS} characters"
        )));
    }
    Ok(Json(state.cases.list(q.tag.as_deref(), q.retired).await?))
}

#[utoipa::path(post, path = "/cases", tag = "cases",
    request_body = super::schema::NewCaseDoc,
    description = "makes a regression case of a finished run whose plan a reviewer judged good: its task \
        and config, a copy of its input files, its plan as reviewed, its answer and the checks given \
        (the answer holds a text or a number, a file exists or holds a text, a step of the plan was or \
        was not done). The run is kept from the retentions (its log is the case's recording). A run of \
        a suite is refused: a review of it is a finding, not a new case; 409 `already_exists` for a \
        run that is a case already",
    responses((status = 201, body = super::schema::CaseDoc), CreateErrors))]
pub async fn make_case(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Body(body): Body<NewCase>,
) -> Result<impl IntoResponse, ApiError> {
    let case = state.cases.make(body, &who.actor()).await?;
    let location = format!("/api/cases/{}", case.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(case),
    ))
}

#[utoipa::path(get, path = "/cases/{id}", tag = "cases",
    params(("id" = uuid::Uuid, Path, description = "case UUID")),
    responses((status = 200, body = super::schema::CaseDoc), ReadErrors))]
pub async fn get_case(
    State(state): State<ApiState>,
    CaseRef(id): CaseRef,
) -> Result<Json<Case>, ApiError> {
    Ok(Json(state.cases.get(id).await?))
}

#[utoipa::path(patch, path = "/cases/{id}", tag = "cases",
    params(("id" = uuid::Uuid, Path, description = "case UUID")),
    request_body = super::schema::CasePatchDoc,
    description = "changes a case's name, tags or checks (all of them, replaced), or retires it (no suite \
        runs a retired case) or brings it back",
    responses((status = 200, body = super::schema::CaseDoc), WriteErrors))]
pub async fn edit_case(
    State(state): State<ApiState>,
    CaseRef(id): CaseRef,
    Body(body): Body<CasePatch>,
) -> Result<Json<Case>, ApiError> {
    Ok(Json(state.cases.edit(id, body).await?))
}

#[utoipa::path(delete, path = "/cases/{id}", tag = "cases",
    params(("id" = uuid::Uuid, Path, description = "case UUID")),
    description = "deletes a case, its checks and its copy of the input files; the suite runs' results \
        of it stay, and its run stays kept",
    responses((status = 204, description = "deleted"), WriteErrors))]
pub async fn delete_case(
    State(state): State<ApiState>,
    CaseRef(id): CaseRef,
) -> Result<StatusCode, ApiError> {
    state.cases.delete(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/cases/run", tag = "cases",
    request_body(content = Option<super::schema::NewSuiteRunDoc>),
    description = "starts a suite run: every case not retired (or those with `tag`) is planned and run \
        again on `model` (default: the configured one), one after another, its tool calls answered from \
        the case's recording where they are the same call (`unmatched: replay`, the default) or all made \
        (`live`); each judged by its checks and its plan's graph F1 against the reviewed plan, with its \
        time and cost; bounded by `budget` (money or model calls: each run gets what is left, the cases \
        after it are skipped). The cases are only read. 409 `no_model` without a model",
    responses((status = 201, body = super::schema::SuiteRunDoc), RunStartErrors))]
pub async fn run_suite(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    super::extract::OptionalBody(body): super::extract::OptionalBody<NewSuiteRun>,
) -> Result<impl IntoResponse, ApiError> {
    let run = state.cases.start_suite(body, &who.actor(), None).await?;
    let location = format!("/api/cases/runs/{}", run.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(run),
    ))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SuitesQuery {
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

#[utoipa::path(get, path = "/cases/runs", tag = "cases", params(SuitesQuery),
    description = "suite runs, newest first, with their score per model and planboard version",
    responses((status = 200, body = Vec<super::schema::SuiteRunDoc>), ListErrors))]
pub async fn list_suites(
    State(state): State<ApiState>,
    Params(q): Params<SuitesQuery>,
) -> Result<Json<Vec<SuiteRun>>, ApiError> {
    let (_, limit) = super::extract::page(None, q.limit)?;
    Ok(Json(state.cases.suites(limit).await?))
}

#[utoipa::path(get, path = "/cases/runs/{id}", tag = "cases",
    params(("id" = uuid::Uuid, Path, description = "suite run UUID")),
    description = "a suite run's report: its state, score, F1s and spending, and per case its outcome, \
        its run, its plan's node and edge F1 against the reviewed plan, each check, time, cost, answer \
        and the first divergence from the case's recorded run",
    responses((status = 200, body = super::schema::SuiteReportDoc), ReadErrors))]
pub async fn suite_report(
    State(state): State<ApiState>,
    SuiteRef(id): SuiteRef,
) -> Result<Json<SuiteReport>, ApiError> {
    Ok(Json(state.cases.report(id).await?))
}

#[utoipa::path(post, path = "/cases/runs/{id}/cancel", tag = "cases",
    params(("id" = uuid::Uuid, Path, description = "suite run UUID")),
    description = "cancels a suite run: its case's run going on is cancelled and the cases after it are \
        skipped; a suite run that ended is answered as it is",
    responses((status = 200, body = super::schema::SuiteRunDoc), WriteErrors))]
pub async fn cancel_suite(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    SuiteRef(id): SuiteRef,
) -> Result<Json<SuiteRun>, ApiError> {
    Ok(Json(state.cases.cancel(id, &who.actor()).await?))
}
