//! planboard's own agent over HTTP: start a run, follow it, steer it.
//! Approval stays on the plan's own routes (`/api/plans/{plan_id}/approve`,
//! `/reject`), shared with the board and other agents.

use agent::run::{Budget, ModeChoice, RunConfig, RunState};
use agent::RunId;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use axum::{Extension, Json};
use plan_engine::SubtaskId;
use run_model::Usd;
use schemars::JsonSchema;
use serde::Deserialize;
use utoipa::IntoParams;

use super::docs::{ListErrors, ReadErrors, RunStartErrors, WriteErrors};
use super::error::{ApiError, Body, ErrorCode};
use super::extract::{path_param, OptionalBody, Params};
use super::ApiState;
use crate::auth::Identity;
use crate::runlog::StoredRunEntry;
use crate::runs::{Decision, PendingCall, RunError, RunView};
use crate::workspace::inputs::Upload;
use crate::workspace::Artifact;

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
/// 1,000,000 tokens, 1,800 s, 8 turns per subtask, no limit on money).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetBody {
    #[schemars(range(min = 1))]
    pub max_llm_calls: Option<u32>,
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u64>,
    #[schemars(range(min = 1, max = MAX_WALL_SECS))]
    pub max_wall_secs: Option<u64>,
    #[schemars(range(min = 1, max = MAX_TURNS))]
    pub max_turns: Option<u32>,
    /// US dollars the run's model calls may cost (priced models only).
    #[schemars(range(min = MIN_COST_USD, max = MAX_COST_USD))]
    pub max_cost: Option<f64>,
}

/// The most ReAct turns per subtask attempt a run's budget allows (the
/// API's check below and the board's task box read it).
pub const MAX_TURNS: u32 = 50;
/// The longest wall time a run's budget allows, in seconds: a week.
pub const MAX_WALL_SECS: u64 = 7 * 24 * 60 * 60;
/// The smallest and the largest cost limit a run's budget takes, in US
/// dollars (the API's check below and the board's task box read them).
pub const MIN_COST_USD: f64 = 0.000_001;
pub const MAX_COST_USD: f64 = 1_000_000.0;

impl BudgetBody {
    /// The limits given over `base`, checked against the API's bounds (the
    /// board's "Raise and resume" form goes through the same check).
    pub fn onto(self, base: Budget) -> Result<Budget, ApiError> {
        let positive = |name: &str, v: u64| {
            if v == 0 {
                Err(ApiError::Refused {
                    code: ErrorCode::Invalid,
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
            max_cost: match self.max_cost {
                None => base.max_cost,
                Some(dollars) => Some(
                    Usd::from_dollars(dollars)
                        .filter(|_| (MIN_COST_USD..=MAX_COST_USD).contains(&dollars))
                        .ok_or_else(|| ApiError::Refused {
                            code: ErrorCode::Invalid,
                            message: format!(
                                "budget.max_cost must be from {MIN_COST_USD} to {MAX_COST_USD} US dollars, not {dollars}"
                            ),
                        })?,
                ),
            },
        };
        if budget.max_wall_secs > MAX_WALL_SECS || budget.max_turns > MAX_TURNS {
            return Err(ApiError::Refused {
                code: ErrorCode::Invalid,
                message: format!("budget.max_wall_secs is at most {MAX_WALL_SECS} (a week) and budget.max_turns at most {MAX_TURNS}"),
            });
        }
        Ok(budget)
    }
}

/// A task for planboard's own agent.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRun {
    /// What to do, in words (any language); may be empty with `plan`.
    #[serde(default)]
    #[schemars(length(max = run_model::MAX_TASK_CHARS))]
    pub task: String,
    /// `auto` (the classifier decides), `simple`, `complex` or `emergent`.
    #[serde(default)]
    pub mode: ModeChoice,
    /// Wait for a person to approve the plan before running it (default true).
    #[serde(default)]
    pub approval_required: Option<bool>,
    /// Subtasks in progress at once (default 4): a complex plan's
    /// super-step and an emergent plan's ready TODOs; a simple plan runs one
    /// at a time.
    #[serde(default)]
    #[schemars(range(min = 1, max = run_model::MAX_PARALLEL))]
    pub max_parallel: Option<u32>,
    #[serde(default)]
    pub budget: Option<BudgetBody>,
    /// The work tools the run may use, by name (`GET /api/agent/tools` lists
    /// them); absent: every tool.
    #[serde(default)]
    #[schemars(length(max = run_model::MAX_TOOLS))]
    pub tools: Option<Vec<ToolName>>,
    /// A folder (or a git repository's working tree) inside one of the
    /// operator's `PLANBOARD_WORKSPACE_ROOTS`, copied into the run's
    /// workspace before planning; never written in place.
    #[serde(default)]
    #[schemars(length(min = 1, max = SOURCE_CHARS))]
    pub source: Option<String>,
    /// With `source`: copy also the files that usually hold secrets
    /// (`.env`, `.env.*`, private keys, `.netrc`, …), which are left out
    /// by default since what the model reads may leave the machine.
    #[serde(default)]
    pub include_secret_files: bool,
    /// Per-tool policies for this run (`auto`, `ask`: each call waits for
    /// a person, `never`), over the operator's; the operator's `never`
    /// stays.
    #[serde(default)]
    pub policies: Option<std::collections::BTreeMap<String, agent::run::ToolPolicy>>,
    /// Attempts the agent makes at a failing subtask before the planner
    /// revises it, replaces it or gives it to a person (default 3).
    #[serde(default)]
    #[schemars(range(min = 1, max = run_model::MAX_ATTEMPTS))]
    pub max_attempts: Option<u32>,
    /// The wait after failed attempt n is this times 2^n (default 1000).
    #[serde(default)]
    #[schemars(range(max = run_model::MAX_RETRY_DELAY_MS))]
    pub retry_delay_ms: Option<u64>,
    /// Recall memories of earlier runs before planning and remember this
    /// one (default true); false: the run neither reads nor leaves any.
    #[serde(default)]
    pub memory: Option<bool>,
    /// Start from a saved template (`GET /api/templates`): the run takes
    /// the template's mode unless `mode` chooses one, and the planner
    /// adapts the template's steps to the task.
    #[serde(default)]
    pub template: Option<uuid::Uuid>,
    /// Go through one of the run's files a batch of items at a time (seed
    /// 002's iterative batches): the planner plans `size` items, the agent
    /// works them, the planner reads how the batch went and plans the
    /// next, the failed items first, until every item is covered. The
    /// file must be one of the uploaded `files` (a JSON array, JSON Lines,
    /// CSV rows or one item per line); the run plans in the complex mode.
    #[serde(default)]
    pub batches: Option<run_model::Batching>,
    /// A plan that has not finished, made by hand, imported or built by
    /// another agent, for planboard's agent to work as it is (no
    /// classifier, no planner; the plan's own approval, then the usual
    /// steering, retries and memory). `task` may then be left empty: the
    /// plan's title and goal are the task.
    #[serde(default)]
    pub plan: Option<plan_engine::PlanId>,
    /// Complex plans: review the plan after every super-step (seed 004),
    /// not only after one that fell short or failed (default false).
    #[serde(default)]
    pub adapt_every_step: bool,
    /// Who does the task: absent, planboard's own agent; the name of an
    /// ACP agent (`GET /api/agents`), that agent, started by planboard in
    /// the run's workspace. Its plan updates are the run's plan, its
    /// permission requests guarded calls (`/tool-calls`); `mode`, `tools`,
    /// `policies`, `batches`, `plan` and `template` are planboard's
    /// agent's and not given to it.
    #[serde(default)]
    #[schemars(length(min = 1, max = run_model::AGENT_NAME_CHARS))]
    pub agent: Option<String>,
    /// When the plan's graph similarity to the version a person approved
    /// falls below this (the agent's adaptations, people's edits), the run
    /// pauses until a person approves it again: 0.0 (never) to 1.0
    /// (default 0.7: adding a step to a plan of ten passes, rewriting half
    /// of it does not). Simple and complex plans a person approved.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub drift_threshold: Option<f64>,
    /// Two people for this run (token mode only), over the operator's
    /// `PLANBOARD_APPROVAL_RULES`, which it may only make stricter:
    /// `not_starter` (whoever started the run may not approve its plan or
    /// its guarded calls), `at_least` (that many approvals by different
    /// people), `approvers` (only these people, by name).
    #[serde(default)]
    pub approval_rule: Option<run_model::ApprovalRule>,
}

impl StartRun {
    /// Starts the run with its files or its folder: the one path of the
    /// API's `POST /api/runs` and the board's task box. The config is
    /// checked before anything is staged, so a refused run copies nothing.
    pub(crate) async fn start(
        self,
        runs: &std::sync::Arc<crate::runs::Runs>,
        workspaces: &crate::workspace::Workspaces,
        files: Vec<Upload>,
        who: &str,
        trace: Option<run_model::TraceParent>,
    ) -> Result<RunView, ApiError> {
        let source = self.source.clone();
        let secrets = self.include_secret_files;
        let template = self.template;
        let config = self.into_config()?;
        let staged = match (files.is_empty(), source) {
            (true, None) => None,
            (false, None) => Some(workspaces.stage_uploads(files).await?),
            (true, Some(source)) => Some(workspaces.stage_folder(&source, secrets).await?),
            (false, Some(_)) => {
                return Err(ApiError::BadRequest(
                    "give files or a source folder, not both".into(),
                ))
            }
        };
        Ok(runs
            .start_with(config, template, staged, who, trace)
            .await?)
    }
}

/// `POST /api/runs` as `multipart/form-data`: the run and its files.
#[derive(Clone, Debug, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct StartRunUpload {
    /// The run: a `StartRun` as JSON text.
    pub run: String,
    /// Files for the run's workspace, each a part named `files` with its
    /// file name ([`run_model::MAX_FILES`] files, 20 MiB each, 50 MiB in
    /// all). Optional, but not `null`: a part holds a file.
    #[schemars(default)]
    pub files: Vec<BinaryFile>,
}

/// A file's bytes in a multipart body.
#[derive(Clone, Debug, JsonSchema)]
#[schemars(transform = binary_file)]
pub struct BinaryFile;

fn binary_file(schema: &mut schemars::Schema) {
    *schema = schemars::json_schema!({"type": "string", "format": "binary"});
}

/// A run to start, as JSON or as multipart with its files.
pub struct StartRequest {
    pub run: StartRun,
    pub files: Vec<Upload>,
}

impl<S: Send + Sync> axum::extract::FromRequest<S> for StartRequest {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let multipart = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("multipart/form-data"));
        if !multipart {
            // The route allows uploads' size; a JSON body keeps the API's.
            let (parts, body) = req.into_parts();
            let bytes = axum::body::to_bytes(body, super::BODY_LIMIT)
                .await
                .map_err(|_| {
                    ApiError::TooLarge(format!(
                        "the request body is larger than the limit of {} bytes",
                        super::BODY_LIMIT
                    ))
                })?;
            let req = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
            let Body(run) = Body::<StartRun>::from_request(req, state).await?;
            return Ok(StartRequest {
                run,
                files: Vec::new(),
            });
        }
        let mut form = axum::extract::Multipart::from_request(req, state)
            .await
            .map_err(|e| ApiError::BadRequest(e.body_text()))?;
        let too_large = multipart_error;
        let mut run = None;
        let mut files = Vec::new();
        while let Some(field) = form.next_field().await.map_err(too_large)? {
            match field.name().unwrap_or_default() {
                "run" => {
                    // The body is well-formed; a `run` part that is not a
                    // StartRun is refused as content (422), like a bad field.
                    let text = field.bytes().await.map_err(too_large)?;
                    let refused = |message: String| ApiError::Refused {
                        code: ErrorCode::Invalid,
                        message,
                    };
                    let value: serde_json::Value = serde_json::from_slice(&text)
                        .map_err(|e| refused(format!("the part `run` is not valid JSON: {e}")))?;
                    run = Some(
                        super::error::typed_body::<StartRun>(value)
                            .map_err(|e| refused(format!("the part `run`: {}", e.message())))?,
                    );
                }
                "files" => {
                    let name = file_name(&field)?;
                    let bytes = field.bytes().await.map_err(too_large)?;
                    if files.len() == run_model::MAX_FILES {
                        return Err(ApiError::TooLarge(format!(
                            "a run starts with at most {} files",
                            run_model::MAX_FILES
                        )));
                    }
                    files.push(Upload {
                        name,
                        bytes: bytes.to_vec(),
                    });
                }
                other => {
                    return Err(ApiError::BadRequest(format!(
                        "unknown part `{other}`; the parts are `run` and `files`"
                    )))
                }
            }
        }
        let run = run.ok_or_else(|| {
            ApiError::BadRequest("the part `run` (the run as JSON) is missing".into())
        })?;
        Ok(StartRequest { run, files })
    }
}

/// A work tool's name.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct ToolName(#[schemars(length(min = 1, max = run_model::TOOL_NAME_CHARS))] pub String);

/// The longest `source` folder path, in characters.
pub const SOURCE_CHARS: usize = 1000;
/// The longest answer to a run's question, in characters.
pub const ANSWER_CHARS: usize = 4000;

impl StartRun {
    /// The task and parallelism are checked where every run starts
    /// ([`crate::runs::Runs::start`]); the budget's bounds are the API's.
    pub(crate) fn into_config(self) -> Result<RunConfig, ApiError> {
        if self
            .source
            .as_ref()
            .is_some_and(|s| s.chars().count() > SOURCE_CHARS)
        {
            return Err(ApiError::BadRequest(format!(
                "source has at most {SOURCE_CHARS} characters"
            )));
        }
        Ok(RunConfig {
            task: self.task,
            mode: self.mode,
            approval_required: self.approval_required.unwrap_or(true),
            max_parallel: self.max_parallel.unwrap_or(run_model::DEFAULT_PARALLEL),
            budget: self.budget.unwrap_or_default().onto(Budget::default())?,
            tools: self
                .tools
                .map(|names| names.into_iter().map(|n| n.0).collect()),
            inputs: Vec::new(),
            policies: self.policies.unwrap_or_default(),
            max_attempts: self.max_attempts.unwrap_or(3),
            retry_delay_ms: self.retry_delay_ms.unwrap_or(1_000),
            memory: self.memory.unwrap_or(true),
            // `template` names a stored one; `Runs::start_with` reads it.
            template: None,
            batches: self.batches,
            plan: self.plan,
            adapt_every_step: self.adapt_every_step,
            // A replay's and a suite's (their own routes set them).
            model: None,
            replay: None,
            case: None,
            agent: self.agent,
            drift_threshold: self
                .drift_threshold
                .unwrap_or(plan_engine::distance::DRIFT_THRESHOLD),
            approval_rule: self.approval_rule,
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
    #[schemars(length(min = 1, max = ANSWER_CHARS))]
    pub answer: String,
}

/// `POST /api/runs/{id}/again`: the subtask to redo from.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunAgain {
    /// The first subtask done again; the results of the subtasks before
    /// it (done or skipped) are kept.
    #[schemars(range(min = 1))]
    pub from: u32,
}

#[utoipa::path(post, path = "/runs/{id}/again", tag = "runs",
    description = "runs a finished (done, failed or abandoned) plan of this run again as a new run: the \
        results of the subtasks before `from` are kept, `from` and everything after it (or depending on \
        it) is done again, in a copy of the run's workspace. The new run starts working at once (its plan \
        is the approved one); the earlier plan gets a comment linking the new one",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    request_body(content = RunAgain),
    responses((status = 201, body = RunView), WriteErrors))]
pub async fn run_again(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    RunRef(id): RunRef,
    Body(body): Body<RunAgain>,
) -> Result<impl IntoResponse, ApiError> {
    let view = state
        .runs
        .run_again(id, SubtaskId(body.from), &who.actor())
        .await?;
    let location = format!("/api/runs/{}", view.record.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(view),
    ))
}

/// `POST /api/runs/{id}/replay`: what to replay the run on, from where,
/// and what a call its recording does not hold does.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayRun {
    /// The model to replay on, on the configured endpoint (default: the
    /// recorded run's, else the configured one).
    #[serde(default)]
    #[schemars(length(min = 1, max = run_model::replay::MODEL_NAME_CHARS))]
    pub model: Option<String>,
    /// Redo the work from this subtask of the recorded plan, keeping the
    /// results before it, in a copy of the run's workspace; absent: plan
    /// the task anew, in a workspace holding the run's input files.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub from_subtask: Option<u32>,
    /// A tool call the recording does not hold: `live` (default) makes
    /// it; `stop` pauses the replay there with the call named.
    #[serde(default)]
    pub unmatched: run_model::Unmatched,
    /// Recall memories and be remembered, as an ordinary run (default
    /// false: a replay is a measurement).
    #[serde(default)]
    pub memory: bool,
}

impl ReplayRun {
    pub(crate) fn into_request(self) -> crate::runs::ReplayRequest {
        crate::runs::ReplayRequest {
            model: self.model,
            from: self.from_subtask.map(SubtaskId),
            unmatched: self.unmatched,
            memory: self.memory,
        }
    }
}

#[utoipa::path(post, path = "/runs/{id}/replay", tag = "runs",
    description = "replays a finished run: a new run of its task and files, on `model`, whose tool calls         are answered from the run's recording (its log) when they are the same call (the same tool, the         same arguments written canonically), each recorded result once, in order; a call the recording does         not hold is made live, or (`unmatched: stop`) pauses the replay with the call named. Planned anew,         or from `from_subtask` with the recorded results before it kept. An ordinary run otherwise         (approval, guards, budget), not remembered unless `memory`; 409 `not_finished` for a run that goes on",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    request_body(content = Option<ReplayRun>),
    responses((status = 201, body = RunView), WriteErrors))]
pub async fn replay_run(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    RunRef(id): RunRef,
    OptionalBody(body): OptionalBody<ReplayRun>,
) -> Result<impl IntoResponse, ApiError> {
    let view = state
        .runs
        .replay(id, body.into_request(), &who.actor())
        .await?;
    let location = format!("/api/runs/{}", view.record.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(view),
    ))
}

/// The two runs `GET /api/runs/compare` sets side by side.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CompareQuery {
    /// The first run (a recorded run, say).
    a: uuid::Uuid,
    /// The second run (its replay, say).
    b: uuid::Uuid,
}

#[utoipa::path(get, path = "/runs/compare", tag = "runs", params(CompareQuery),
    description = "two runs side by side: both plans' graphs (subtasks with their dependencies, states and         results), their node and edge F1 and matched subtasks (the engine's graph matching), the first model         reply or tool call where their logs part (`divergence`, with both sides), the answers, and the calls,         tokens, time and cost of each",
    responses((status = 200, body = super::schema::RunComparisonDoc), ReadErrors))]
pub async fn compare_runs(
    State(state): State<ApiState>,
    Params(q): Params<CompareQuery>,
) -> Result<Json<run_model::RunComparison>, ApiError> {
    Ok(Json(state.runs.compare(q.a, q.b).await?))
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

#[utoipa::path(post, path = "/runs", tag = "runs",
    description = "starts a run: the classifier picks the mode (unless forced), the planner fills the run's plan, which then waits for approval (unless approval_required is false); 409 `no_model` when no model is configured",
    request_body(content(
        (StartRun = "application/json"),
        (StartRunUpload = "multipart/form-data"),
    )),
    responses((status = 201, body = RunView), RunStartErrors))]
pub async fn start_run(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    trace: Option<Extension<crate::telemetry::RequestTrace>>,
    StartRequest { run, files }: StartRequest,
) -> Result<impl IntoResponse, ApiError> {
    let trace = trace.map(|Extension(t)| t.0);
    let view = run
        .start(&state.runs, &state.workspaces, files, &who.actor(), trace)
        .await?;
    let location = format!("/api/runs/{}", view.record.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(view),
    ))
}

#[utoipa::path(get, path = "/runs", tag = "runs", params(RunsQuery),
    responses((status = 200, body = Vec<RunView>), ListErrors))]
pub async fn list_runs(
    State(state): State<ApiState>,
    Params(q): Params<RunsQuery>,
) -> Result<Json<Vec<RunView>>, ApiError> {
    let run_state = q.state;
    let (offset, limit) = super::extract::page(q.offset, q.limit)?;
    Ok(Json(
        state.runs.list(run_state, q.plan, offset, limit).await?,
    ))
}

#[utoipa::path(get, path = "/runs/{id}", tag = "runs",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    responses((status = 200, body = RunView), ReadErrors))]
pub async fn get_run(
    State(state): State<ApiState>,
    RunRef(id): RunRef,
) -> Result<Json<RunView>, ApiError> {
    Ok(Json(state.runs.get(id).await?))
}

/// Everything across plans and runs that waits for a person: plans to
/// approve, the agent's questions, guarded tool calls, paused runs;
/// approvals first, then oldest first, each with the board address where a
/// person acts on it (`href`).
#[utoipa::path(get, path = "/inbox", tag = "runs",
    responses((status = 200, body = Vec<super::schema::NeedDoc>), ListErrors))]
pub async fn inbox(State(state): State<ApiState>) -> Result<Json<Vec<run_model::Need>>, ApiError> {
    Ok(Json(state.runs.needs().await?))
}

/// What the run's model calls cost: in all, per subtask (`subtask: null`
/// for classifying, planning and recovering) and per model. Calls to a
/// model without a price are counted in `unpriced_calls`, not in `cost`.
#[utoipa::path(get, path = "/runs/{id}/cost", tag = "runs",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    responses((status = 200, body = super::schema::CostReportDoc), ReadErrors))]
pub async fn run_cost(
    State(state): State<ApiState>,
    RunRef(id): RunRef,
) -> Result<Json<run_model::CostReport>, ApiError> {
    Ok(Json(state.runs.cost(id).await?))
}

#[utoipa::path(get, path = "/runs/{id}/events", tag = "runs",
    params(("id" = uuid::Uuid, Path, description = "run UUID"), RunEventsQuery),
    responses((status = 200, body = Vec<StoredRunEntry>), ReadErrors))]
pub async fn run_events(
    State(state): State<ApiState>,
    RunRef(id): RunRef,
    Params(q): Params<RunEventsQuery>,
) -> Result<Json<Vec<StoredRunEntry>>, ApiError> {
    // As the document says: a bound outside it is refused, not clamped.
    let (after, limit) = (q.after.unwrap_or(0), q.limit.unwrap_or(500));
    if !(1..=super::extract::LOG_PAGE_LIMIT).contains(&limit) || after < 0 {
        return Err(ApiError::BadRequest(format!(
            "limit must be 1 to {} and after at least 0 (got limit {limit}, after {after})",
            super::extract::LOG_PAGE_LIMIT
        )));
    }
    Ok(Json(state.runs.events(id, after, limit).await?))
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
    "/runs/{id}/pause",
    "pauses the run's plan: nothing new starts, work in flight finishes",
    |runs, id, who| runs.pause(id, &who)
);
control!(
    start_held_run,
    "/runs/{id}/start",
    "starts a run whose plan was approved and held (`hold` in POST /api/plans/{id}/approve): its plan resumes; a run that is not held is refused",
    |runs, id, who| runs.start_held(id, &who)
);
control!(cancel_run, "/runs/{id}/cancel",
    "abandons the run's plan: model calls in flight are dropped, subtasks in progress go back to todo",
    |runs, id, who| runs.cancel(id, &who));

#[utoipa::path(post, path = "/runs/{id}/resume", tag = "runs",
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

/// Whether a person keeps a finished run from the retentions.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeepRun {
    /// `true`: its files and its log stay for good; `false`: the
    /// retentions have them again when their time is up.
    pub kept: bool,
}

#[utoipa::path(put, path = "/runs/{id}/kept", tag = "runs",
    description = "keeps a finished run's files and log from the retentions (PLANBOARD_WORKSPACE_RETENTION_DAYS, PLANBOARD_RUN_LOG_RETENTION_HOURS), or lets them go again; a run that goes on is never removed, and is refused here",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    request_body = KeepRun,
    responses((status = 200, body = RunView), WriteErrors))]
pub async fn keep_run(
    State(state): State<ApiState>,
    RunRef(id): RunRef,
    Body(body): Body<KeepRun>,
) -> Result<Json<RunView>, ApiError> {
    Ok(Json(state.runs.keep_run(id, body.kept).await?))
}

/// `POST /api/runs/{id}/files`: files to add, each a part named `files`.
#[derive(Clone, Debug, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AddFiles {
    #[schemars(with = "Vec<BinaryFile>", length(min = 1))]
    pub files: (),
}

#[utoipa::path(post, path = "/runs/{id}/files", tag = "runs",
    description = "adds files to a run that goes on (multipart, parts named `files`; the upload limits of POST /api/runs): they land in its workspace next to what is there, and a comment on the plan tells the agent",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    request_body(content((AddFiles = "multipart/form-data"))),
    responses((status = 200, body = Vec<super::schema::InputFileDoc>), WriteErrors))]
pub async fn add_files(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    RunRef(id): RunRef,
    request: axum::extract::Request,
) -> Result<Json<Vec<run_model::InputFile>>, ApiError> {
    let files = read_files(request, &state).await?;
    if files.is_empty() {
        return Err(ApiError::BadRequest(
            "no files: send parts named `files`".into(),
        ));
    }
    Ok(Json(state.runs.add_files(id, files, &who.actor()).await?))
}

/// A `files` part's file name: a part without one is a form field, not a
/// file (what a client sends by mistake), and is refused.
fn file_name(field: &axum::extract::multipart::Field<'_>) -> Result<String, ApiError> {
    match field.file_name() {
        Some(name) if !name.trim().is_empty() => Ok(name.to_string()),
        _ => Err(ApiError::BadRequest(
            "a part `files` must be a file with its name (Content-Disposition: form-data; \
             name=\"files\"; filename=\"…\")"
                .into(),
        )),
    }
}

/// The `files` parts of a multipart body.
async fn read_files<S: Send + Sync>(
    request: axum::extract::Request,
    state: &S,
) -> Result<Vec<Upload>, ApiError> {
    use axum::extract::FromRequest;
    let mut form = axum::extract::Multipart::from_request(request, state)
        .await
        .map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let mut files = Vec::new();
    while let Some(field) = form.next_field().await.map_err(multipart_error)? {
        if field.name() != Some("files") {
            return Err(ApiError::BadRequest(format!(
                "unknown part `{}`; the files are parts named `files`",
                field.name().unwrap_or_default()
            )));
        }
        if files.len() == run_model::MAX_FILES {
            return Err(ApiError::TooLarge(format!(
                "at most {} files at once",
                run_model::MAX_FILES
            )));
        }
        let name = file_name(&field)?;
        let bytes = field.bytes().await.map_err(multipart_error)?;
        files.push(Upload {
            name,
            bytes: bytes.to_vec(),
        });
    }
    Ok(files)
}

/// A multipart body that could not be read: too large (413) or malformed.
fn multipart_error(e: axum::extract::multipart::MultipartError) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::TooLarge(format!(
            "the files are larger than the limit of {} bytes in all",
            run_model::MAX_FILES_BYTES
        ))
    } else {
        ApiError::BadRequest(format!("the multipart body could not be read: {e}"))
    }
}

#[utoipa::path(get, path = "/runs/{id}/tool-calls", tag = "runs",
    description = "the run's guarded tool calls (policy `ask`) that wait for a person, oldest first",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    responses((status = 200, body = Vec<PendingCall>), ReadErrors))]
pub async fn pending_calls(
    State(state): State<ApiState>,
    RunRef(id): RunRef,
) -> Result<Json<Vec<PendingCall>>, ApiError> {
    Ok(Json(state.runs.pending_calls(id).await?))
}

#[utoipa::path(post, path = "/runs/{id}/tool-calls/{call}", tag = "runs",
    description = "a person's decision on a guarded tool call: `approve` runs it, `edit` runs it with `arguments`, `deny` sends `reason` back to the model; 409 `decided` if it was decided (or expired) already",
    params(("id" = uuid::Uuid, Path, description = "run UUID"),
           ("call" = String, Path, description = "the call's id, from GET /api/runs/{id}/tool-calls")),
    request_body(content = Decision),
    responses((status = 200, body = RunView), WriteErrors))]
pub async fn decide_call(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    RunRef(id): RunRef,
    parts: axum::extract::Path<(String, String)>,
    Body(body): Body<Decision>,
) -> Result<Json<RunView>, ApiError> {
    Ok(Json(
        state.runs.decide(id, &parts.1, body, &who.actor()).await?,
    ))
}

#[utoipa::path(get, path = "/runs/{id}/grants", tag = "runs",
    description = "the tools granted for the run when its plan was approved, oldest first, the revoked ones with who revoked them and when",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    responses((status = 200, body = Vec<super::schema::GrantDoc>), ReadErrors))]
pub async fn list_grants(
    State(state): State<ApiState>,
    RunRef(id): RunRef,
) -> Result<Json<Vec<run_model::Grant>>, ApiError> {
    Ok(Json(state.approvals.run_grants(id).await?))
}

#[utoipa::path(delete, path = "/runs/{id}/grants/{grant}", tag = "runs",
    description = "revokes a grant of the run while it goes on: the tool's calls ask a person again from the next one on; the revocation is an approval record. Answers the grant as revoked (revoking it again changes nothing)",
    params(("id" = uuid::Uuid, Path, description = "run UUID"),
           ("grant" = uuid::Uuid, Path, description = "the grant's id, from GET /api/runs/{id}/grants")),
    responses((status = 200, body = super::schema::GrantDoc), WriteErrors))]
pub async fn revoke_grant(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    RunRef(id): RunRef,
    parts: axum::extract::Path<(String, String)>,
) -> Result<Json<run_model::Grant>, ApiError> {
    let grant = parts
        .1
        .parse()
        .map_err(|_| ApiError::NotFound(format!("'{}' is not a grant id (a UUID)", parts.1)))?;
    Ok(Json(
        state
            .approvals
            .revoke_grant(id, grant, &who.actor())
            .await?,
    ))
}

#[utoipa::path(post, path = "/runs/{id}/answer", tag = "runs",
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
    if answer.is_empty() || answer.chars().count() > ANSWER_CHARS {
        return Err(ApiError::Refused {
            code: ErrorCode::Invalid,
            message: format!("the answer must have 1 to {ANSWER_CHARS} characters"),
        });
    }
    Ok(Json(
        state
            .runs
            .answer(id, SubtaskId(body.subtask), answer, &who.actor())
            .await?,
    ))
}

#[utoipa::path(get, path = "/runs/{id}/artifacts", tag = "runs",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    responses((status = 200, body = Vec<Artifact>), ReadErrors))]
pub async fn list_artifacts(
    State(state): State<ApiState>,
    RunRef(id): RunRef,
) -> Result<Json<Vec<Artifact>>, ApiError> {
    Ok(Json(state.runs.artifacts(id).await?))
}

/// The work tools planboard's agent can give a run.
#[derive(Clone, Debug, serde::Serialize, JsonSchema)]
pub struct AgentTools {
    pub tools: Vec<AgentTool>,
    /// Why `run_python` and `run_shell` are not among them, when they are not.
    pub code_runner_off: Option<String>,
    /// Whether the model answers, is still building or starting, or died
    /// (with the last lines of its log).
    pub model: run_model::ModelStatus,
    /// The folders a run's `source` may lie in (the operator's
    /// `PLANBOARD_WORKSPACE_ROOTS`; empty: none).
    pub workspace_roots: Vec<String>,
}

#[derive(Clone, Debug, serde::Serialize, JsonSchema)]
pub struct AgentTool {
    pub name: String,
    pub description: String,
    /// The JSON schema of its arguments.
    pub parameters: serde_json::Value,
}

#[utoipa::path(get, path = "/agent/tools", tag = "runs",
    description = "the work tools a run can be given (`StartRun.tools` names them): the files, the code runner when its sandbox works, the web, and the configured MCP servers' tools",
    responses((status = 200, body = AgentTools), ListErrors))]
pub async fn agent_tools(State(state): State<ApiState>) -> Json<AgentTools> {
    Json(AgentTools {
        tools: state
            .runs
            .tools()
            .iter()
            .map(|t| AgentTool {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters: t.parameters.clone(),
            })
            .collect(),
        code_runner_off: state
            .runs
            .sandbox_unavailable()
            .map(|e| e.reason().to_string()),
        model: state.runs.model_status(),
        workspace_roots: state
            .workspaces
            .roots()
            .iter()
            .map(|r| r.display().to_string())
            .collect(),
    })
}

#[utoipa::path(get, path = "/runs/{id}/workspace.zip", tag = "runs",
    params(("id" = uuid::Uuid, Path, description = "run UUID")),
    responses((status = 200, content_type = "application/zip", description = "every file of the run's workspace (the files it started with and the files it wrote), deflated"), ReadErrors))]
pub async fn workspace_zip(
    State(state): State<ApiState>,
    RunRef(id): RunRef,
) -> Result<impl IntoResponse, ApiError> {
    let bytes = state.runs.workspace_zip(id).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/zip".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"run-{id}.zip\""),
            ),
        ],
        bytes,
    ))
}

#[utoipa::path(get, path = "/api/runs/{id}/artifacts/{path}", tag = "runs",
    params(("id" = uuid::Uuid, Path, description = "run UUID"),
           ("path" = String, Path, description = "the file's path in the run's workspace")),
    responses((status = 200, description = "the file: a png, jpeg, gif or webp image (by its extension, and only when its bytes start as that format does) with its image type; an svg as image/svg+xml with `Content-Security-Policy: sandbox; default-src 'none'` and `Content-Disposition: attachment` (never an active page of this site); else text/plain (UTF-8) when it is text, application/octet-stream when not",
        content((String = "text/plain"), (String = "application/octet-stream"), (String = "image/png"),
            (String = "image/jpeg"), (String = "image/gif"), (String = "image/webp"), (String = "image/svg+xml"))), ReadErrors))]
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
    // The type from the name's extension (images) or the bytes (text or
    // not); an SVG never as an active page of this origin.
    let served = crate::workspace::images::served_as(path, &bytes);
    let mut headers = axum::http::HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(served.content_type),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if let Some(policy) = served.policy {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(policy),
        );
    }
    if let Some(disposition) = served
        .disposition
        .and_then(|d| HeaderValue::from_str(&d).ok())
    {
        headers.insert(header::CONTENT_DISPOSITION, disposition);
    }
    Ok((headers, bytes))
}
