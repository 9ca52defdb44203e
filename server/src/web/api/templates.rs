//! Plans saved as templates over HTTP: save a plan's shape under a name
//! (operators), list and read templates (anyone), delete one (admins). A
//! run starts from one with `POST /api/runs {"task": …, "template": id}`.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::{Extension, Json};
use run_model::{NewTemplate, Template};
use serde::Deserialize;
use utoipa::IntoParams;

use super::docs::{ListErrors, ReadErrors, WriteErrors};
use super::error::{ApiError, Body};
use super::extract::{path_param, Params, PlanRef};
use super::ApiState;
use crate::auth::{Identity, Role};

/// The `{id}` of a template route: a malformed id is a 404.
pub struct TemplateRef(pub run_model::TemplateId);

impl<S: Send + Sync> FromRequestParts<S> for TemplateRef {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let text = path_param(parts, "id").await?;
        text.parse()
            .map(TemplateRef)
            .map_err(|_| ApiError::NotFound(format!("'{text}' is not a template id (a UUID)")))
    }
}

#[utoipa::path(post, path = "/plans/{id}/template", tag = "templates",
    params(("id" = uuid::Uuid, Path, description = "plan UUID")),
    request_body = super::schema::NewTemplateDoc,
    description = "saves the plan's shape (mode, what was asked, subtasks with their dependencies; \
        not their results) as a template under a name",
    responses((status = 201, body = super::schema::TemplateDoc), WriteErrors))]
pub async fn save_template(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    PlanRef(id): PlanRef,
    Body(body): Body<NewTemplate>,
) -> Result<impl IntoResponse, ApiError> {
    let template = state.templates.save(id, &body.name, &who.actor()).await?;
    let location = format!("/api/templates/{}", template.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(template),
    ))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TemplatesQuery {
    #[param(minimum = 0, maximum = 100000)]
    offset: Option<u32>,
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

#[utoipa::path(get, path = "/templates", tag = "templates", params(TemplatesQuery),
    description = "the saved templates, newest first",
    responses((status = 200, body = Vec<super::schema::TemplateDoc>), ListErrors))]
pub async fn list_templates(
    State(state): State<ApiState>,
    Params(q): Params<TemplatesQuery>,
) -> Result<Json<Vec<Template>>, ApiError> {
    let (offset, limit) = super::extract::page(q.offset, q.limit)?;
    Ok(Json(state.templates.list(offset, limit).await?))
}

#[utoipa::path(get, path = "/templates/{id}", tag = "templates",
    params(("id" = uuid::Uuid, Path, description = "template UUID")),
    responses((status = 200, body = super::schema::TemplateDoc), ReadErrors))]
pub async fn get_template(
    State(state): State<ApiState>,
    TemplateRef(id): TemplateRef,
) -> Result<Json<Template>, ApiError> {
    Ok(Json(state.templates.get(id).await?))
}

#[utoipa::path(delete, path = "/templates/{id}", tag = "templates",
    params(("id" = uuid::Uuid, Path, description = "template UUID")),
    description = "deletes the template (admins only); runs started from it keep their copy",
    responses((status = 204, description = "deleted"), WriteErrors))]
pub async fn delete_template(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    TemplateRef(id): TemplateRef,
) -> Result<StatusCode, ApiError> {
    who.require(Role::Admin)?;
    state.templates.delete(id).await?;
    Ok(StatusCode::NO_CONTENT)
}
