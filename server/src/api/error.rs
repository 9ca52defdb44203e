//! The web layer's one error type: every failure becomes a status and a JSON
//! body `{"error": code, "message": sentence}`. Server-side failures are
//! logged in full and shown only as "internal error".

use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use plan_engine::PlanError;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::service::ServiceError;
use crate::store::StoreError;

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
    /// The database refused the write as clashing with what is stored.
    AlreadyExists(String),
    /// The server is not set up for this (no model for runs): a 409.
    State {
        code: &'static str,
        message: String,
    },
    /// The engine refused: a cycle, an illegal transition, a full plan, …
    Refused {
        code: &'static str,
        message: String,
    },
    Internal,
}

impl ApiError {
    /// The sentence of the error, for callers that are not HTTP (MCP).
    pub fn message(&self) -> String {
        match self {
            ApiError::BadRequest(m)
            | ApiError::Unauthorized(m)
            | ApiError::Forbidden(m)
            | ApiError::NotFound(m)
            | ApiError::MethodNotAllowed(m)
            | ApiError::TooLarge(m)
            | ApiError::UnsupportedMediaType(m)
            | ApiError::AlreadyExists(m) => m.clone(),
            ApiError::Conflict { message, .. }
            | ApiError::State { message, .. }
            | ApiError::Refused { message, .. } => message.clone(),
            ApiError::Internal => "internal error".into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = match self {
            ApiError::BadRequest(m) => (
                StatusCode::BAD_REQUEST,
                json!({"error": "bad_request", "message": m}),
            ),
            ApiError::Unauthorized(m) => (
                StatusCode::UNAUTHORIZED,
                json!({"error": "unauthorized", "message": m}),
            ),
            ApiError::Forbidden(m) => (
                StatusCode::FORBIDDEN,
                json!({"error": "forbidden", "message": m}),
            ),
            ApiError::NotFound(m) => (
                StatusCode::NOT_FOUND,
                json!({"error": "not_found", "message": m}),
            ),
            ApiError::MethodNotAllowed(m) => (
                StatusCode::METHOD_NOT_ALLOWED,
                json!({"error": "method_not_allowed", "message": m}),
            ),
            ApiError::Conflict {
                message,
                current_version,
            } => (
                StatusCode::CONFLICT,
                json!({"error": "conflict", "message": message, "current_version": current_version}),
            ),
            ApiError::TooLarge(m) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({"error": "too_large", "message": m}),
            ),
            ApiError::UnsupportedMediaType(m) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                json!({"error": "unsupported_media_type", "message": m}),
            ),
            ApiError::AlreadyExists(m) => (
                StatusCode::CONFLICT,
                json!({"error": "already_exists", "message": m}),
            ),
            ApiError::State { code, message } => (
                StatusCode::CONFLICT,
                json!({"error": code, "message": message}),
            ),
            ApiError::Refused { code, message } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                json!({"error": code, "message": message}),
            ),
            ApiError::Internal => (
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"error": "internal", "message": "internal error; the server log has the details"}),
            ),
        };
        (status, Json(body)).into_response()
    }
}

impl From<PlanError> for ApiError {
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::StaleVersion { actual, .. } => ApiError::Conflict {
                message: format!("{e}; reload the plan and try again"),
                current_version: actual,
            },
            e if e.code() == "not_found" => ApiError::NotFound(e.to_string()),
            e => ApiError::Refused {
                code: e.code(),
                message: e.to_string(),
            },
        }
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Plan(e) => e.into(),
            ServiceError::Store(StoreError::Conflict { plan_id, current }) => {
                kept_changing(plan_id, current)
            }
            ServiceError::Store(StoreError::Constraint(m)) => ApiError::AlreadyExists(m),
            ServiceError::Commit(e) => match *e {
                StoreError::Conflict { plan_id, current } => kept_changing(plan_id, current),
                StoreError::Constraint(ref m) => ApiError::AlreadyExists(m.clone()),
                ref e => {
                    tracing::error!("commit failed: {e}");
                    ApiError::Internal
                }
            },
            ServiceError::Forbidden(m) => ApiError::Forbidden(m),
            e @ (ServiceError::Store(_) | ServiceError::Busy) => {
                tracing::error!("store failure: {e}");
                ApiError::Internal
            }
        }
    }
}

fn kept_changing(plan_id: plan_engine::PlanId, current: u64) -> ApiError {
    ApiError::Conflict {
        message: format!("plan {plan_id} kept changing under this request; try again"),
        current_version: current,
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
/// `/pause` that need no fields.
pub struct MaybeBody(pub serde_json::Value);

impl<S: Send + Sync> FromRequest<S> for MaybeBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let typed = json_typed(req.headers());
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|rejection| from_rejection(rejection.status(), rejection.body_text()))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
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
