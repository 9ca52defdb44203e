//! Extractors whose rejections are [`ApiError`]s with a JSON body: path ids
//! parsed once, query strings, optional bodies and `If-Match`.

use axum::extract::{FromRequest, FromRequestParts, Query, RawPathParams, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use plan_engine::{PlanId, SubtaskId};
use serde::de::DeserializeOwned;

use super::error::{from_rejection, typed_body, ApiError};

/// One parameter of the matched route, percent-decoded.
pub(super) async fn path_param(parts: &mut Parts, name: &str) -> Result<String, ApiError> {
    let raw = RawPathParams::from_request_parts(parts, &())
        .await
        .map_err(|e| ApiError::BadRequest(e.body_text()))?;
    raw.iter()
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_string())
        // Only routes with that parameter use the extractor.
        .ok_or(ApiError::Internal)
}

/// The `{id}` of a plan route, parsed: a malformed id is a 404 (no plan has it).
pub struct PlanRef(pub PlanId);

impl<S: Send + Sync> FromRequestParts<S> for PlanRef {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let text = path_param(parts, "id").await?;
        text.parse()
            .map(PlanRef)
            .map_err(|_| ApiError::NotFound(format!("'{text}' is not a plan id (a UUID)")))
    }
}

/// The `{sid}` of a subtask route: the subtask's id (`7` or `#7`).
pub struct SubtaskRef(pub SubtaskId);

impl<S: Send + Sync> FromRequestParts<S> for SubtaskRef {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let text = path_param(parts, "sid").await?;
        text.trim_start_matches('#')
            .parse()
            .map(|n| SubtaskRef(SubtaskId(n)))
            .map_err(|_| {
                ApiError::NotFound(format!("'{text}' is not a subtask id (a small integer)"))
            })
    }
}

/// A query string; a malformed one is a 400 with a sentence.
pub struct Params<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(q)| Params(q))
            .map_err(|e| ApiError::BadRequest(e.body_text()))
    }
}

/// A JSON body that may be left out or `null` (then `T::default()`), for
/// actions such as `/pause` that need no fields.
pub struct OptionalBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let typed = super::error::json_typed(req.headers());
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|rejection| from_rejection(rejection.status(), rejection.body_text()))?;
        if super::error::json_blank(&bytes) {
            return Ok(OptionalBody(T::default()));
        }
        typed?;
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::BadRequest(format!("the body is not valid JSON: {e}")))?;
        if value.is_null() {
            return Ok(OptionalBody(T::default()));
        }
        typed_body(value).map(OptionalBody)
    }
}

/// `If-Match: 7` (or `"7"`) is the same as `"expected_version": 7`.
pub fn if_match(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get(header::IF_MATCH) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or_default().trim().trim_matches('"');
    text.parse().map(Some).map_err(|_| {
        ApiError::BadRequest(format!(
            "If-Match must be a plan version number, not '{text}'"
        ))
    })
}

/// Middleware for services that read request bodies themselves, past
/// axum's `DefaultBodyLimit` (MCP's, the board's server functions): the
/// body is read here, at most `limit` bytes of it, and handed on whole. A
/// longer one is a 413 as soon as its `Content-Length` or its bytes say
/// so, and nothing past the limit is read or kept.
pub async fn bounded_body(
    axum::extract::State(limit): axum::extract::State<usize>,
    request: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    use futures_util::StreamExt;

    let too_large = || {
        ApiError::TooLarge(format!(
            "the request body is larger than the limit of {limit} bytes"
        ))
        .into_response()
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return too_large();
    }
    let (parts, body) = request.into_parts();
    let mut chunks = body.into_data_stream();
    // `declared` is within the limit here.
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0) as usize);
    while let Some(chunk) = chunks.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => {
                return ApiError::BadRequest(format!("the request body could not be read: {e}"))
                    .into_response()
            }
        };
        if bytes.len() + chunk.len() > limit {
            return too_large();
        }
        bytes.extend_from_slice(&chunk);
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// The most items one page of a list holds (`limit`), for every list of
/// the API and MCP. The `#[param(maximum = …)]` attributes must repeat the
/// number (utoipa takes literals only); a test checks they all do.
pub const PAGE_LIMIT: u32 = 200;
/// How far a list may be paged into (`offset`).
pub const PAGE_OFFSET: u32 = 100_000;
/// A page's size when `limit` is absent.
pub const PAGE_DEFAULT: u32 = 50;
/// The most entries one page of a plan's or a run's log holds.
pub const LOG_PAGE_LIMIT: u32 = 1000;

/// `offset` and `limit` of a list, checked against the one set of bounds.
pub fn page(offset: Option<u32>, limit: Option<u32>) -> Result<(u32, u32), ApiError> {
    let (offset, limit) = (offset.unwrap_or(0), limit.unwrap_or(PAGE_DEFAULT));
    if !(1..=PAGE_LIMIT).contains(&limit) || offset > PAGE_OFFSET {
        return Err(ApiError::BadRequest(format!(
            "limit must be 1 to {PAGE_LIMIT} and offset at most {PAGE_OFFSET} (got limit {limit}, offset {offset})"
        )));
    }
    Ok((offset, limit))
}
