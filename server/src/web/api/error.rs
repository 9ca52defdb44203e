//! The server's one mapping of errors: every service error (the plan
//! service's, the stores', the runs', the tool servers', the webhook
//! endpoints', auth's) becomes an [`ApiError`], which owns the answer's
//! status, its machine [`ErrorCode`] and its sentence. The API answers
//! with them as a JSON body `{"error": code, "message": sentence}`; the
//! board and MCP read the same three. Server-side failures are logged in
//! full here and shown only as a generic sentence: a store's text never
//! reaches a client.

use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use plan_engine::PlanError;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::acp_agents::AcpAgentError;
use crate::approvals::ApprovalError;
use crate::auth::AuthError;
use crate::cases::CaseError;
use crate::memories::MemoryError;
use crate::reviews::ReviewError;
use crate::runs::RunError;
use crate::service::ServiceError;
use crate::store::StoreError;
use crate::templates::TemplateError;
use crate::tool_servers::ToolServerError;
use crate::webhooks::EndpointError;
use crate::workspace::inputs::InputError;

plan_engine::wire_enum! {
    /// The machine code of an error: the `error` field of every error body,
    /// and what the board and MCP read beside the sentence.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    pub enum ErrorCode: "error code" {
        /// Malformed JSON, fields or parameters (400).
        BadRequest = "bad_request",
        /// Token mode: no token, or an unknown one (401).
        Unauthorized = "unauthorized",
        /// The caller's role may not do this, or a cookie-carried change came
        /// from another site (403).
        Forbidden = "forbidden",
        /// No such plan, subtask, run, memory, … (404; a 422 when the body,
        /// not the path, names the missing thing).
        NotFound = "not_found",
        /// The path does not take this method (405).
        MethodNotAllowed = "method_not_allowed",
        /// `expected_version` is stale, or the plan kept changing (409, with
        /// `current_version`).
        Conflict = "conflict",
        /// What this would create is stored already: a name or URL taken, a
        /// key in use (409).
        AlreadyExists = "already_exists",
        /// planboard's agent has no model configured (409).
        NoModel = "no_model",
        /// The plan or run is not finished yet (409).
        NotFinished = "not_finished",
        /// The guarded tool call was decided already (409).
        Decided = "decided",
        /// The decision was made on something other than what is asked now:
        /// another call's or another version's digest (409); read it again.
        Stale = "stale",
        /// An approval was recorded, but a two-person rule wants more
        /// approvals before it counts; the sentence names who (409).
        Waiting = "waiting",
        /// The MCP server comes from `PLANBOARD_MCP_SERVERS`: change the file (409).
        FromFile = "from_file",
        /// The body is over the limit (413).
        TooLarge = "too_large",
        /// The body was not sent as JSON (415).
        UnsupportedMediaType = "unsupported_media_type",
        /// Token mode: too many wrong tokens from this client lately
        /// (429, with `Retry-After`).
        TooManyRequests = "too_many_requests",
        /// The server is at its limit of this kind of work (a run's files
        /// being listed, read or zipped): try again (503, `Retry-After`).
        Busy = "busy",
        /// The engine refused: a cycle (422).
        Cycle = "cycle",
        /// The engine refused: a move the state does not allow (422).
        IllegalTransition = "illegal_transition",
        /// The engine refused: the subtask or plan is not ready (422).
        NotReady = "not_ready",
        /// The engine refused: the plan is full (422).
        PlanFull = "plan_full",
        /// A value refused: too long, empty, out of range, unknown (422).
        Invalid = "invalid",
        /// The database failed (500); the server log has its words.
        Store = "store",
        /// Another failure of the server (500); the server log has the details.
        Internal = "internal",
    }
}

impl ErrorCode {
    /// The engine's name for its refusal, read through the same names.
    fn of_engine(e: &PlanError) -> ErrorCode {
        ErrorCode::from_wire(e.code()).unwrap_or(ErrorCode::Invalid)
    }
}

/// The sentence a store failure is shown as, wherever it surfaces.
pub const STORE_FAILED: &str = "the database failed; see the server log";

/// The sentence any other server failure is shown as.
pub const INTERNAL: &str = "internal error; the server log has the details";

#[derive(Debug)]
pub enum ApiError {
    BadRequest(String),
    Unauthorized(String),
    Forbidden(String),
    NotFound(String),
    MethodNotAllowed(String),
    Conflict {
        message: String,
        current_version: u64,
    },
    TooLarge(String),
    /// A body in another type than JSON (415): `text/plain` is what a page
    /// may post to another site without a preflight.
    UnsupportedMediaType(String),
    /// Too many wrong tokens from this client: nothing with a token is
    /// looked at for `retry_after` seconds (429, `Retry-After`).
    TooManyRequests {
        message: String,
        retry_after: u64,
    },
    /// The server is at its limit of this work now (503, `Retry-After`).
    Busy(String),
    /// What this would create is stored already (a name, a URL, a key).
    AlreadyExists(String),
    /// The server's state does not allow it now (no model for runs, not
    /// finished, decided already): a 409.
    State {
        code: ErrorCode,
        message: String,
    },
    /// The engine refused: a cycle, an illegal transition, a full plan, …
    Refused {
        code: ErrorCode,
        message: String,
    },
    /// The store failed; what it said is in the server log only.
    Store,
    Internal,
}

impl ApiError {
    /// A store failure: its words go to the server log, the client gets
    /// [`STORE_FAILED`].
    pub fn store_failed(what: impl std::fmt::Display) -> ApiError {
        tracing::error!("store failure: {what}");
        ApiError::Store
    }

    /// The one status of each error, for the API, the board and MCP.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict { .. } | ApiError::AlreadyExists(_) | ApiError::State { .. } => {
                StatusCode::CONFLICT
            }
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Refused { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Store | ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The machine code of the error.
    pub fn code(&self) -> ErrorCode {
        match self {
            ApiError::BadRequest(_) => ErrorCode::BadRequest,
            ApiError::Unauthorized(_) => ErrorCode::Unauthorized,
            ApiError::Forbidden(_) => ErrorCode::Forbidden,
            ApiError::NotFound(_) => ErrorCode::NotFound,
            ApiError::MethodNotAllowed(_) => ErrorCode::MethodNotAllowed,
            ApiError::Conflict { .. } => ErrorCode::Conflict,
            ApiError::TooLarge(_) => ErrorCode::TooLarge,
            ApiError::UnsupportedMediaType(_) => ErrorCode::UnsupportedMediaType,
            ApiError::TooManyRequests { .. } => ErrorCode::TooManyRequests,
            ApiError::Busy(_) => ErrorCode::Busy,
            ApiError::AlreadyExists(_) => ErrorCode::AlreadyExists,
            ApiError::State { code, .. } | ApiError::Refused { code, .. } => *code,
            ApiError::Store => ErrorCode::Store,
            ApiError::Internal => ErrorCode::Internal,
        }
    }

    /// The sentence of the error.
    pub fn message(&self) -> String {
        match self {
            ApiError::BadRequest(m)
            | ApiError::Unauthorized(m)
            | ApiError::Forbidden(m)
            | ApiError::NotFound(m)
            | ApiError::MethodNotAllowed(m)
            | ApiError::TooLarge(m)
            | ApiError::UnsupportedMediaType(m)
            | ApiError::Busy(m)
            | ApiError::AlreadyExists(m) => m.clone(),
            ApiError::Conflict { message, .. }
            | ApiError::State { message, .. }
            | ApiError::TooManyRequests { message, .. }
            | ApiError::Refused { message, .. } => message.clone(),
            ApiError::Store => STORE_FAILED.into(),
            ApiError::Internal => INTERNAL.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"error": self.code(), "message": self.message()});
        if let ApiError::Conflict {
            current_version, ..
        } = self
        {
            body["current_version"] = json!(current_version);
        }
        let status = self.status();
        if let ApiError::TooManyRequests { retry_after, .. } = self {
            let wait = [(axum::http::header::RETRY_AFTER, retry_after.to_string())];
            return (status, wait, Json(body)).into_response();
        }
        if let ApiError::Busy(_) = self {
            let wait = [(axum::http::header::RETRY_AFTER, "1".to_string())];
            return (status, wait, Json(body)).into_response();
        }
        (status, Json(body)).into_response()
    }
}

/// Auth's refusals answer as the API's errors (the middleware in `auth`
/// returns them as responses without knowing this layer).
impl IntoResponse for AuthError {
    fn into_response(self) -> Response {
        ApiError::from(self).into_response()
    }
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::Unauthorized(m) => ApiError::Unauthorized(m),
            AuthError::Forbidden(m) => ApiError::Forbidden(m),
            AuthError::TooManyFailures { retry_after } => ApiError::TooManyRequests {
                message: AuthError::TooManyFailures { retry_after }.to_string(),
                retry_after,
            },
        }
    }
}

impl From<PlanError> for ApiError {
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::StaleVersion { actual, .. } => ApiError::Conflict {
                message: format!("{e}; reload the plan and try again"),
                current_version: actual,
            },
            e => match ErrorCode::of_engine(&e) {
                ErrorCode::NotFound => ApiError::NotFound(e.to_string()),
                code => ApiError::Refused {
                    code,
                    message: e.to_string(),
                },
            },
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict { plan_id, current } => kept_changing(plan_id, current),
            // A sentence made for the client (see `StoreError::Constraint`).
            StoreError::Constraint(m) => ApiError::AlreadyExists(m),
            e => ApiError::store_failed(e),
        }
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Plan(e) => e.into(),
            ServiceError::Store(e) => e.into(),
            ServiceError::Commit(e) => match &*e {
                StoreError::Conflict { plan_id, current } => kept_changing(*plan_id, *current),
                StoreError::Constraint(m) => ApiError::AlreadyExists(m.clone()),
                e => ApiError::store_failed(format_args!("commit failed: {e}")),
            },
            ServiceError::Forbidden(m) => ApiError::Forbidden(m),
            ServiceError::Waiting(message) => ApiError::State {
                code: ErrorCode::Waiting,
                message,
            },
            e @ ServiceError::Busy => ApiError::store_failed(e),
        }
    }
}

fn kept_changing(plan_id: plan_engine::PlanId, current: u64) -> ApiError {
    ApiError::Conflict {
        message: format!("plan {plan_id} kept changing under this request; try again"),
        current_version: current,
    }
}

impl From<RunError> for ApiError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::NoModel(m) => ApiError::State {
                code: ErrorCode::NoModel,
                message: m,
            },
            RunError::NotFound(id) => ApiError::NotFound(format!("no run has id {id}")),
            RunError::Invalid(m) => ApiError::Refused {
                code: ErrorCode::Invalid,
                message: m,
            },
            RunError::Plan(e) => e.into(),
            RunError::Store(e) => e.into(),
            RunError::StoreFailed(e) => ApiError::store_failed(e),
            e @ RunError::NoCall(_) => ApiError::NotFound(e.to_string()),
            RunError::Again(e @ agent::coordinator::again::AgainError::NotFinished(_)) => {
                ApiError::State {
                    code: ErrorCode::NotFinished,
                    message: e.to_string(),
                }
            }
            RunError::Again(e) => ApiError::Refused {
                code: ErrorCode::Invalid,
                message: e.to_string(),
            },
            e @ RunError::Decided(_) => ApiError::State {
                code: ErrorCode::Decided,
                message: e.to_string(),
            },
            RunError::NotFinished(message) => ApiError::State {
                code: ErrorCode::NotFinished,
                message,
            },
            RunError::Stale(message) => ApiError::State {
                code: ErrorCode::Stale,
                message,
            },
            RunError::Input(e) => e.into(),
        }
    }
}

impl From<ApprovalError> for ApiError {
    fn from(e: ApprovalError) -> Self {
        match e {
            ApprovalError::Invalid(message) => ApiError::Refused {
                code: ErrorCode::Invalid,
                message,
            },
            ApprovalError::Stale(message) => ApiError::State {
                code: ErrorCode::Stale,
                message,
            },
            ApprovalError::NotFound(message) => ApiError::NotFound(message),
            ApprovalError::Plan(e) => e.into(),
            ApprovalError::Store(e) => e.into(),
        }
    }
}

impl From<ReviewError> for ApiError {
    fn from(e: ReviewError) -> Self {
        match e {
            ReviewError::Plan(e) => e.into(),
            ReviewError::Store(e) => e.into(),
            e @ ReviewError::NotFound { .. } => ApiError::NotFound(e.to_string()),
            ReviewError::Refused(e @ run_model::ReviewError::NotFinished(_)) => ApiError::State {
                code: ErrorCode::NotFinished,
                message: e.to_string(),
            },
            ReviewError::Refused(e) => ApiError::Refused {
                code: ErrorCode::Invalid,
                message: e.to_string(),
            },
        }
    }
}

impl From<CaseError> for ApiError {
    fn from(e: CaseError) -> Self {
        match e {
            CaseError::Run(e) => e.into(),
            CaseError::Review(e) => e.into(),
            CaseError::Input(e) => e.into(),
            CaseError::Store(e) => e.into(),
            CaseError::Refused(e) => ApiError::Refused {
                code: ErrorCode::Invalid,
                message: e.to_string(),
            },
            CaseError::Invalid(message) => ApiError::Refused {
                code: ErrorCode::Invalid,
                message,
            },
            CaseError::NotFinished(message) => ApiError::State {
                code: ErrorCode::NotFinished,
                message,
            },
            CaseError::Taken(message) => ApiError::AlreadyExists(message),
            e @ (CaseError::NotFound(_) | CaseError::NoSuite(_)) => {
                ApiError::NotFound(e.to_string())
            }
        }
    }
}

impl From<MemoryError> for ApiError {
    fn from(e: MemoryError) -> Self {
        match e {
            MemoryError::Invalid(message) => ApiError::Refused {
                code: ErrorCode::Invalid,
                message,
            },
            e @ MemoryError::NotFound(_) => ApiError::NotFound(e.to_string()),
            MemoryError::Store(e) => e.into(),
        }
    }
}

impl From<TemplateError> for ApiError {
    fn from(e: TemplateError) -> Self {
        match e {
            TemplateError::Plan(e) => e.into(),
            TemplateError::Store(e) => e.into(),
            e @ TemplateError::NotFound(_) => ApiError::NotFound(e.to_string()),
            TemplateError::Refused(e) => ApiError::Refused {
                code: ErrorCode::Invalid,
                message: e.to_string(),
            },
        }
    }
}

impl From<InputError> for ApiError {
    fn from(e: InputError) -> Self {
        match e {
            InputError::TooMany { .. }
            | InputError::FileTooLarge { .. }
            | InputError::TooLarge { .. }
            | InputError::OverQuota { .. }
            | InputError::Workspace(agent::workspace::WorkspaceError::OverQuota { .. })
            | InputError::SourceTooLarge { .. } => ApiError::TooLarge(e.to_string()),
            InputError::Io(_) => {
                tracing::error!("writing a run's files failed: {e}");
                ApiError::Internal
            }
            InputError::Busy(_)
            | InputError::Workspace(agent::workspace::WorkspaceError::TimedOut) => {
                ApiError::Busy(e.to_string())
            }
            InputError::Workspace(ref w) if !w.is_client_error() => {
                tracing::error!("a run's workspace failed: {e}");
                ApiError::Internal
            }
            // A name refused, a link in the way, the quota passed.
            InputError::Workspace(_) => ApiError::Refused {
                code: ErrorCode::Invalid,
                message: e.to_string(),
            },
            // A well-formed request whose file name or folder is refused.
            InputError::BadName(_) | InputError::NotAllowed { .. } | InputError::Source { .. } => {
                ApiError::Refused {
                    code: ErrorCode::Invalid,
                    message: e.to_string(),
                }
            }
        }
    }
}

impl From<ToolServerError> for ApiError {
    fn from(e: ToolServerError) -> ApiError {
        match e {
            ToolServerError::Invalid(message) => ApiError::Refused {
                code: ErrorCode::Invalid,
                message,
            },
            ToolServerError::Taken(_) => ApiError::AlreadyExists(e.to_string()),
            ToolServerError::FromFile(_) => ApiError::State {
                code: ErrorCode::FromFile,
                message: e.to_string(),
            },
            ToolServerError::NotFound(_) => ApiError::NotFound(e.to_string()),
            ToolServerError::Store(e) => e.into(),
        }
    }
}

impl From<AcpAgentError> for ApiError {
    fn from(e: AcpAgentError) -> ApiError {
        match e {
            AcpAgentError::Invalid(message) => ApiError::Refused {
                code: ErrorCode::Invalid,
                message,
            },
            AcpAgentError::Taken(_) => ApiError::AlreadyExists(e.to_string()),
            AcpAgentError::NotFound(_) => ApiError::NotFound(e.to_string()),
            AcpAgentError::Store(e) => e.into(),
        }
    }
}

impl From<EndpointError> for ApiError {
    fn from(e: EndpointError) -> ApiError {
        match e {
            EndpointError::Taken(_) => ApiError::AlreadyExists(e.to_string()),
            EndpointError::NotFound(_) => ApiError::NotFound(e.to_string()),
            EndpointError::Store(e) => e.into(),
        }
    }
}

/// `Json<T>` whose rejections are [`ApiError`]s (400 for malformed JSON, 413
/// for a body over the limit) instead of axum's plain-text ones. Whole
/// numbers written with a fraction (`7.0`) are read as integers, as JSON
/// Schema counts them: a client in a language without integers must not get
/// a 400 for `"expected_version": 7.0`.
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let Json(value) = Json::<serde_json::Value>::from_request(req, state)
            .await
            .map_err(|rejection| from_rejection(rejection.status(), rejection.body_text()))?;
        typed_body(value).map(Body)
    }
}

/// A body's JSON as `T`: it must be an object, and whole numbers written
/// with a fraction count as integers. Every body extractor reads this way.
pub(super) fn typed_body<T: DeserializeOwned>(mut value: serde_json::Value) -> Result<T, ApiError> {
    object_body(&value)?;
    whole_numbers_as_integers(&mut value);
    serde_json::from_value(value).map_err(|e| ApiError::BadRequest(format!("invalid body: {e}")))
}

/// Every body is a JSON object: serde would also read a struct from an
/// array (`[]` as "no fields"), which no client means.
fn object_body(value: &serde_json::Value) -> Result<(), ApiError> {
    if value.is_object() {
        Ok(())
    } else {
        Err(ApiError::BadRequest(
            "the body must be a JSON object".into(),
        ))
    }
}

/// `7.0` → `7` everywhere in a JSON value (within the 64-bit range).
fn whole_numbers_as_integers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            let Some(f) = n.as_f64() else { return };
            if f.fract() != 0.0 || !f.is_finite() {
                return;
            }
            // 2^63 and 2^64 as f64: the first values outside each range.
            if (0.0..18_446_744_073_709_551_616.0).contains(&f) {
                *value = Value::from(f as u64);
            } else if (-9_223_372_036_854_775_808.0..0.0).contains(&f) {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(map) => map.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}

/// One mapping for every body rejection (JSON or raw bytes): over the limit
/// is a 413, anything else a 400 with axum's explanation.
pub(super) fn from_rejection(status: StatusCode, text: String) -> ApiError {
    if status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return ApiError::UnsupportedMediaType(format!(
            "{text}; send the body as Content-Type: application/json; nothing was changed"
        ));
    }
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::TooLarge(format!(
            "the request body is larger than the limit of {} bytes",
            super::BODY_LIMIT
        ))
    } else {
        ApiError::BadRequest(text)
    }
}

/// Whether a request says its body is JSON (`application/json` or
/// `application/*+json`). The extractors that read raw bytes ask it, after
/// routing, so a method a route does not take stays the router's 405.
pub(crate) fn json_typed(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let given = headers
        .get(axum::http::header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("?"));
    let media = given
        .and_then(|v| v.split(';').next())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let json = media == "application/json"
        || media
            .strip_prefix("application/")
            .is_some_and(|sub| sub.ends_with("+json"));
    if json {
        return Ok(());
    }
    Err(ApiError::UnsupportedMediaType(format!(
        "the body must be sent as Content-Type: application/json, not {}; nothing was changed",
        match given {
            Some(given) => format!("'{}'", plan_engine::text::ellipsis(given, 100)),
            None => "without a Content-Type".into(),
        }
    )))
}

/// A JSON body that may be absent (`null` then): for actions such as
/// Whether a body is absent: empty, or JSON's own whitespace only (not
/// Rust's ASCII whitespace, which also counts a form feed: not JSON at
/// all, and a fuzzer's body that was once read as none).
pub fn json_blank(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

/// `/pause` that need no fields.
pub struct MaybeBody(pub serde_json::Value);

impl<S: Send + Sync> FromRequest<S> for MaybeBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let typed = json_typed(req.headers());
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|rejection| from_rejection(rejection.status(), rejection.body_text()))?;
        if json_blank(&bytes) {
            return Ok(MaybeBody(serde_json::Value::Null));
        }
        typed?;
        serde_json::from_slice(&bytes)
            .map(MaybeBody)
            .map_err(|e| ApiError::BadRequest(format!("the body is not valid JSON: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_of_the_engine_keeps_its_code_and_status() {
        use plan_engine::{PlanState, SubtaskId};
        let id = SubtaskId(1);
        for (e, code, status) in [
            (
                PlanError::UnknownPlan {
                    id: uuid::Uuid::nil(),
                },
                ErrorCode::NotFound,
                404,
            ),
            (PlanError::Cycle { path: vec![id] }, ErrorCode::Cycle, 422),
            (
                PlanError::PlanFinished {
                    state: PlanState::Done,
                },
                ErrorCode::IllegalTransition,
                422,
            ),
            (
                PlanError::NotReady {
                    id,
                    waiting_on: Vec::new(),
                },
                ErrorCode::NotReady,
                422,
            ),
            (PlanError::PlanFull { max: 1 }, ErrorCode::PlanFull, 422),
            (
                PlanError::StaleVersion {
                    expected: 1,
                    actual: 2,
                },
                ErrorCode::Conflict,
                409,
            ),
            (
                PlanError::invalid("title", "empty"),
                ErrorCode::Invalid,
                422,
            ),
        ] {
            let engine = e.code();
            let api = ApiError::from(e);
            assert_eq!((api.code(), api.status().as_u16()), (code, status));
            assert_eq!(api.code().to_string(), engine, "the engine's own name");
        }
    }

    /// A store failure, however it arrives, is a 500 `store` with the
    /// generic sentence; the store's words stay in the log.
    #[test]
    fn a_store_failure_is_a_500_without_the_stores_words() {
        let words = "no such table: secret_table";
        let database = || StoreError::Corrupt(words.into());
        let host = agent::host::HostError::Unavailable(words.into());
        for e in [
            ApiError::from(database()),
            ApiError::from(ServiceError::Store(database())),
            ApiError::from(ServiceError::Commit(std::sync::Arc::new(database()))),
            ApiError::from(RunError::Store(database())),
            ApiError::from(RunError::from(host.clone())),
            ApiError::from(RunError::from(
                agent::coordinator::again::AgainFailure::Host(host),
            )),
            ApiError::from(ToolServerError::Store(database())),
            ApiError::from(AcpAgentError::Store(database())),
            ApiError::from(EndpointError::Store(database())),
            ApiError::from(ApprovalError::Store(database())),
        ] {
            assert_eq!(e.status(), StatusCode::INTERNAL_SERVER_ERROR, "{e:?}");
            assert_eq!(e.code(), ErrorCode::Store);
            assert_eq!(e.message(), STORE_FAILED);
            let body = axum::body::to_bytes(e.into_response().into_body(), 1 << 16);
            let body = futures_util::FutureExt::now_or_never(body)
                .expect("a body at hand")
                .unwrap();
            let body = String::from_utf8_lossy(&body);
            assert!(!body.contains("secret_table"), "{body}");
            assert!(body.contains(r#""error":"store""#), "{body}");
        }
    }

    /// A name or URL taken is one 409 `already_exists`, whichever service
    /// refused it.
    #[test]
    fn a_taken_name_or_url_is_a_409_already_exists() {
        for e in [
            ApiError::from(ToolServerError::Taken("twice".into())),
            ApiError::from(EndpointError::Taken("https://example.com".into())),
            ApiError::from(StoreError::Constraint("the change was not saved".into())),
        ] {
            assert_eq!(e.status(), StatusCode::CONFLICT, "{e:?}");
            assert_eq!(e.code(), ErrorCode::AlreadyExists);
        }
    }

    #[test]
    fn whole_numbers_with_a_fraction_are_read_as_integers_and_others_are_left_alone() {
        // Read as a client's text is: the last one only comes back whole
        // with exact float parsing.
        let mut value: serde_json::Value = serde_json::from_str(
            r#"{"a": 7.0, "b": [1.5, -3.0, 1e300], "c": "8.0", "d": 9, "e": 2084804358900535.0}"#,
        )
        .unwrap();
        whole_numbers_as_integers(&mut value);
        assert_eq!(
            value,
            serde_json::json!({"a": 7, "b": [1.5, -3, 1e300], "c": "8.0", "d": 9, "e": 2_084_804_358_900_535u64})
        );
        assert!(value["a"].is_u64() && value["b"][1].is_i64());
    }
}
