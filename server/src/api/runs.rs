//! planboard's own agent over HTTP: start a run, follow it, steer it.
//! Approval stays on the plan's own routes (`/api/plans/{plan_id}/approve`,
//! `/reject`), shared with the board and other agents.

use agent::run::{Budget, ModeChoice, RunConfig, RunState};
use agent::RunId;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::{Extension, Json};
use plan_engine::SubtaskId;
use schemars::JsonSchema;
use serde::Deserialize;
use utoipa::IntoParams;

use super::docs::{ListErrors, ReadErrors, RunStartErrors, WriteErrors};
use super::error::{ApiError, Body};
use super::extract::{path_param, OptionalBody, Params};
use super::ApiState;
use crate::auth::Identity;
use crate::runs::{Artifact, RunError, RunView};
use crate::store::StoredRunEntry;

impl From<RunError> for ApiError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::NoModel(m) => ApiError::State {
                code: "no_model",
                message: m,
            },
            RunError::NotFound(id) => ApiError::NotFound(format!("no run has id {id}")),
            RunError::Invalid(m) => ApiError::Refused {
                code: "invalid",
                message: m,
            },
            RunError::Plan(e) => e.into(),
            RunError::Store(e) => {
                tracing::error!("run store failure: {e}");
                ApiError::Internal
            }
        }
    }
}

/// The `{id}` of a run route.
pub struct RunRef(pub RunId);

impl<S: Send + Sync> FromRequestParts<S> for RunRef {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let text = path_param(parts, "id").await?;
        text.parse()
            .map(RunRef)
            .map_err(|_| ApiError::NotFound(format!("'{text}' is not a run id (a UUID)")))
    }
}

/// Limits for one run; absent fields keep their defaults (200 LLM calls,
/// 1,000,000 tokens, 1,800 s, 8 turns per subtask).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetBody {
    #[schemars(range(min = 1))]
    pub max_llm_calls: Option<u32>,
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u64>,
    #[schemars(range(min = 1, max = 604800))]
    pub max_wall_secs: Option<u64>,
    #[schemars(range(min = 1, max = 50))]
    pub max_turns: Option<u32>,
}

impl BudgetBody {
    fn onto(self, base: Budget) -> Result<Budget, ApiError> {
        let positive = |name: &str, v: u64| {
            if v == 0 {
                Err(ApiError::Refused {
                    code: "invalid",
                    message: format!("budget.{name} must be at least 1"),
                })
            } else {
                Ok(v)
            }
        };
        let budget = Budget {
            max_llm_calls: positive(
                "max_llm_calls",
                self.max_llm_calls
                    .map_or(base.max_llm_calls.into(), u64::from),
            )? as u32,
            max_tokens: positive("max_tokens", self.max_tokens.unwrap_or(base.max_tokens))?,
            max_wall_secs: positive(
                "max_wall_secs",
                self.max_wall_secs.unwrap_or(base.max_wall_secs),
            )?,
            max_turns: positive(
                "max_turns",
                self.max_turns.map_or(base.max_turns.into(), u64::from),
            )? as u32,
        };
        if budget.max_wall_secs > 604_800 || budget.max_turns > 50 {
            return Err(ApiError::Refused {
                code: "invalid",
                message: "budget.max_wall_secs is at most 604800 (a week) and budget.max_turns at most 50".into(),
            });
        }
        Ok(budget)
    }
}

/// A task for planboard's own agent.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRun {
    /// What to do, in words (any language).
    #[schemars(length(min = 1, max = 8000))]
    pub task: String,
    /// `auto` (the classifier decides), `simple`, `complex` or `emergent`.
    #[serde(default)]
    pub mode: ModeChoice,
    /// Wait for a person to approve the plan before running it (default true).
    #[serde(default)]
    pub approval_required: Option<bool>,
    /// Subtasks in progress at once for a complex plan (default 4).
    #[serde(default)]
    #[schemars(range(min = 1, max = 32))]
    pub max_parallel: Option<u32>,
    #[serde(default)]
    pub budget: Option<BudgetBody>,
}

impl StartRun {
    /// The task and parallelism are checked where every run starts
    /// ([`crate::runs::Runs::start`]); the budget's bounds are the API's.
    pub(crate) fn into_config(self) -> Result<RunConfig, ApiError> {
        Ok(RunConfig {
            task: self.task,
            mode: self.mode,
            approval_required: self.approval_required.unwrap_or(true),
            max_parallel: self.max_parallel.unwrap_or(4),
            budget: self.budget.unwrap_or_default().onto(Budget::default())?,
        })
    }
}

#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeRun {
    /// Replaces the run's budget before resuming (for a run its budget paused).
    #[serde(default)]
    pub budget: Option<BudgetBody>,
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRun {
    /// The subtask whose question this answers (blocked, waiting).
    #[schemars(range(min = 1))]
    pub subtask: u32,
    #[schemars(length(min = 1, max = 4000))]
    pub answer: String,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunsQuery {
    /// Only runs in this state.
    #[param(inline, value_type = Option<String>, pattern = "^(classifying|planning|awaiting_approval|running|paused|done|failed|cancelled)$")]
    state: Option<RunState>,
    /// Only the run of this plan.
    plan: Option<uuid::Uuid>,
    #[param(minimum = 0, maximum = 100000)]
    offset: Option<u32>,
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunEventsQuery {
    /// Entries after this seq.
    #[param(minimum = 0)]
    after: Option<i64>,
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[utoipa::path(post, path = "/api/runs", tag = "runs",
    description = "starts a run: the classifier picks the mode (unless forced), the planner fills the run's plan, which then waits for approval (unless approval_required is false); 409 `no_model` when no model is configured",
    request_body(content = StartRun),
    responses((status = 201, body = RunView), RunStartErrors))]
pub async fn start_run(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Body(body): Body<StartRun>,
) -> Result<impl IntoResponse, ApiError> {
    let config = body.into_config()?;
    let view = state.runs.start(config, &who.actor()).await?;
    let location = format!("/api/runs/{}", view.record.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(view),
    ))
}

#[utoipa::path(get, path = "/api/runs", tag = "runs", params(RunsQuery),
    responses((status = 200, body = Vec<RunView>), ListErrors))]
pub async fn list_runs(
    State(state): State<ApiState>,
    Params(q): Params<RunsQuery>,
) -> Result<Json<Vec<RunView>>, ApiError> {
    let run_state = q.state;
    let limit = q.limit.unwrap_or(50);
    let offset = q.offset.unwrap_or(0);
    if !(1..=200).contains(&limit) || offset > 100_000 {
        return Err(ApiError::BadRequest(format!(
            "limit must be 1 to 200 and offset at most 100000 (got limit {limit}, offset {offset})"
        )));
    }
    Ok(Json(
        state.runs.list(run_state, q.plan, offset, limit).await?,
    ))
}

#[utoipa::path(get, path = "/api/runs/{id}", tag = "runs",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    responses((status = 200, body = RunView), ReadErrors))]
pub async fn get_run(
    State(state): State<ApiState>,
    RunRef(id): RunRef,
) -> Result<Json<RunView>, ApiError> {
    Ok(Json(state.runs.get(id).await?))
}

#[utoipa::path(get, path = "/api/runs/{id}/events", tag = "runs",
    params(("id" = uuid::Uuid, Path, description = "run UUID"), RunEventsQuery),
    responses((status = 200, body = Vec<StoredRunEntry>), ReadErrors))]
pub async fn run_events(
    State(state): State<ApiState>,
    RunRef(id): RunRef,
    Params(q): Params<RunEventsQuery>,
) -> Result<Json<Vec<StoredRunEntry>>, ApiError> {
    let limit = q.limit.unwrap_or(500).clamp(1, 1000);
    Ok(Json(
        state.runs.events(id, q.after.unwrap_or(0), limit).await?,
    ))
}

macro_rules! control {
    ($fn:ident, $path:literal, $about:literal, |$runs:ident, $id:ident, $who:ident| $call:expr) => {
        #[utoipa::path(post, path = $path, tag = "runs", description = $about,
                                    params(("id" = uuid::Uuid, Path, description = "run UUID")),
                                    responses((status = 200, body = RunView), WriteErrors))]
        pub async fn $fn(
            State(state): State<ApiState>,
            Extension(who): Extension<Identity>,
            RunRef($id): RunRef,
        ) -> Result<Json<RunView>, ApiError> {
            let $runs = &state.runs;
            let $who = who.actor();
            Ok(Json($call.await?))
        }
    };
}

control!(
    pause_run,
    "/api/runs/{id}/pause",
    "pauses the run's plan: nothing new starts, work in flight finishes",
    |runs, id, who| runs.pause(id, &who)
);
control!(cancel_run, "/api/runs/{id}/cancel",
    "abandons the run's plan: model calls in flight are dropped, subtasks in progress go back to todo",
    |runs, id, who| runs.cancel(id, &who));

#[utoipa::path(post, path = "/api/runs/{id}/resume", tag = "runs",
    description = "resumes the run's plan; a budget in the body replaces the run's budget first",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    request_body(content = Option<ResumeRun>),
    responses((status = 200, body = RunView), WriteErrors))]
pub async fn resume_run(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    RunRef(id): RunRef,
    OptionalBody(body): OptionalBody<ResumeRun>,
) -> Result<Json<RunView>, ApiError> {
    let budget = match body.budget {
        Some(b) => {
            let base = state.runs.record(id).await?.config.budget;
            Some(b.onto(base)?)
        }
        None => None,
    };
    Ok(Json(state.runs.resume(id, budget, &who.actor()).await?))
}

#[utoipa::path(post, path = "/api/runs/{id}/answer", tag = "runs",
    description = "answers the agent's question on a blocked subtask: the answer is a comment on it and the subtask is unblocked",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    request_body(content = AnswerRun),
    responses((status = 200, body = RunView), WriteErrors))]
pub async fn answer_run(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    RunRef(id): RunRef,
    Body(body): Body<AnswerRun>,
) -> Result<Json<RunView>, ApiError> {
    let answer = body.answer.trim();
    if answer.is_empty() || answer.chars().count() > 4000 {
        return Err(ApiError::Refused {
            code: "invalid",
            message: "the answer must have 1 to 4000 characters".into(),
        });
    }
    Ok(Json(
        state
            .runs
            .answer(id, SubtaskId(body.subtask), answer, &who.actor())
            .await?,
    ))
}

#[utoipa::path(get, path = "/api/runs/{id}/artifacts", tag = "runs",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    responses((status = 200, body = Vec<Artifact>), ReadErrors))]
pub async fn list_artifacts(
    State(state): State<ApiState>,
    RunRef(id): RunRef,
) -> Result<Json<Vec<Artifact>>, ApiError> {
    Ok(Json(state.runs.artifacts(id).await?))
}

#[utoipa::path(get, path = "/api/runs/{id}/artifacts/{path}", tag = "runs",
    params(("id" = uuid::Uuid, Path, description = "run UUID"),
           ("path" = String, Path, description = "the file's path in the run's workspace")),
    responses((status = 200, content_type = "application/octet-stream", description = "the file"), ReadErrors))]
pub async fn get_artifact(
    State(state): State<ApiState>,
    RunRef(id): RunRef,
    parts: axum::extract::Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    let path = &parts.1;
    let bytes = state.runs.artifact(id, path).await.map_err(|e| match e {
        RunError::Invalid(m) => ApiError::NotFound(m),
        other => other.into(),
    })?;
    let content_type = if std::str::from_utf8(&bytes).is_ok() {
        "text/plain; charset=utf-8"
    } else {
        "application/octet-stream"
    };
    Ok(([(header::CONTENT_TYPE, content_type)], bytes))
}
