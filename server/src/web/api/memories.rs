//! The agent's memories over HTTP: list and search them, write a standing
//! rule, correct one's text, pin one so it is recalled first, forget one
//! so no run recalls it again.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::Json;
use run_model::memory::MEMORY_TEXT;
use run_model::Memory;
use schemars::JsonSchema;
use serde::Deserialize;
use utoipa::IntoParams;

use super::docs::{CreateErrors, ListErrors, WriteErrors};
use super::error::{ApiError, Body};
use super::extract::{path_param, Params};
use super::ApiState;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MemoriesQuery {
    /// Words to search for (ranked by the database's full-text search);
    /// absent: newest first.
    #[param(max_length = 500)]
    q: Option<String>,
    #[param(minimum = 0, maximum = 100000)]
    offset: Option<u32>,
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PinMemory {
    pub pinned: bool,
}

/// The longest search (`q`), in characters; `#[param(max_length)]` above
/// repeats it (utoipa takes literals only; a test checks it does).
pub const QUERY_CHARS: usize = 500;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditMemory {
    /// The new text (1 to 2,000 characters); the memory is found by it from now on.
    #[schemars(length(min = 1, max = MEMORY_TEXT))]
    pub text: String,
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRule {
    /// The rule (1 to 2,000 characters), as the agent will read it.
    #[schemars(length(min = 1, max = MEMORY_TEXT))]
    pub text: String,
    /// Words of the tasks it is for: recalled when a task shares one.
    /// Absent or empty: recalled for every task.
    #[serde(default)]
    #[schemars(length(max = crate::memories::APPLIES_TO))]
    pub applies_to: String,
}

/// The `{id}` of a memory route: a malformed id is a 404 (no memory has
/// it), like a plan's or a run's.
pub struct MemoryRef(pub run_model::MemoryId);

impl<S: Send + Sync> FromRequestParts<S> for MemoryRef {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let text = path_param(parts, "id").await?;
        text.parse()
            .map(MemoryRef)
            .map_err(|_| ApiError::NotFound(format!("'{text}' is not a memory id (a UUID)")))
    }
}

#[utoipa::path(get, path = "/memories", tag = "memories", params(MemoriesQuery),
    description = "what the agent remembers of finished runs (run summaries and people's corrections)",
    responses((status = 200, body = Vec<super::schema::MemoryDoc>), ListErrors))]
pub async fn list_memories(
    State(state): State<ApiState>,
    Params(q): Params<MemoriesQuery>,
) -> Result<Json<Vec<Memory>>, ApiError> {
    let (offset, limit) = super::extract::page(q.offset, q.limit)?;
    if q.q
        .as_ref()
        .is_some_and(|q| q.chars().count() > QUERY_CHARS)
    {
        return Err(ApiError::BadRequest(format!(
            "q has at most {QUERY_CHARS} characters"
        )));
    }
    Ok(Json(
        state.memories.list(q.q.as_deref(), offset, limit).await?,
    ))
}

#[utoipa::path(post, path = "/memories", tag = "memories",
    request_body = NewRule,
    description = "writes a standing rule into the agent's memory, pinned: recalled first for \
        every task that shares a word with `applies_to` (or with the rule), or for every task \
        when `applies_to` is empty; the planner, the executor, the adapter and recovery read it",
    responses((status = 201, body = super::schema::MemoryDoc), CreateErrors))]
pub async fn write_rule(
    State(state): State<ApiState>,
    Body(body): Body<NewRule>,
) -> Result<(StatusCode, Json<Memory>), ApiError> {
    let rule = state
        .memories
        .write_rule(&body.text, &body.applies_to)
        .await?;
    Ok((StatusCode::CREATED, Json(rule)))
}

#[utoipa::path(delete, path = "/memories/{id}", tag = "memories",
    params(("id" = uuid::Uuid, Path, description = "memory UUID")),
    description = "forgets a memory: no later run recalls it",
    responses((status = 204, description = "forgotten"), WriteErrors))]
pub async fn forget_memory(
    State(state): State<ApiState>,
    MemoryRef(id): MemoryRef,
) -> Result<StatusCode, ApiError> {
    state.memories.forget(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(patch, path = "/memories/{id}", tag = "memories",
    params(("id" = uuid::Uuid, Path, description = "memory UUID")),
    request_body = EditMemory,
    description = "rewrites a memory's text: what later runs recall and read from now on",
    responses((status = 200, body = super::schema::MemoryDoc), WriteErrors))]
pub async fn edit_memory(
    State(state): State<ApiState>,
    MemoryRef(id): MemoryRef,
    Body(body): Body<EditMemory>,
) -> Result<Json<Memory>, ApiError> {
    Ok(Json(state.memories.edit(id, &body.text).await?))
}

#[utoipa::path(post, path = "/memories/{id}/pin", tag = "memories",
    params(("id" = uuid::Uuid, Path, description = "memory UUID")),
    request_body = PinMemory,
    description = "pins a memory (recalled before others whenever it matches) or unpins it",
    responses((status = 200, body = super::schema::MemoryDoc), WriteErrors))]
pub async fn pin_memory(
    State(state): State<ApiState>,
    MemoryRef(id): MemoryRef,
    Body(body): Body<PinMemory>,
) -> Result<Json<Memory>, ApiError> {
    Ok(Json(state.memories.pin(id, body.pinned).await?))
}
