//! What the OpenAPI document says a route can answer besides success: the
//! JSON error body and the sets of statuses each kind of route returns.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;
use utoipa::openapi::content::Content;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::{Ref, RefOr};

/// Every error: `{"error": code, "message": sentence}`; a 409 for a stale
/// `expected_version` also carries `current_version`.
#[derive(Serialize, JsonSchema)]
pub struct ErrorBody {
    /// The machine code: one mapping of errors gives each its status.
    pub error: super::error::ErrorCode,
    /// A sentence for the person or model that sent the request.
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_version: Option<u64>,
}

const BAD_REQUEST: (u16, &str) = (400, "malformed JSON, fields or parameters");
const UNAUTHORIZED: (u16, &str) = (401, "token mode: no token, or an unknown one");
const TOO_MANY: (u16, &str) = (
    429,
    "token mode: 10 wrong tokens or sign-ins from this client within a minute; every request \
     with a token from it waits (a right one too) for the seconds `Retry-After` says",
);
const FORBIDDEN: (u16, &str) = (
    403,
    "the token's role may not do this, or a cookie-carried change came from another site",
);
const NOT_FOUND: (u16, &str) = (404, "no such plan (or subtask)");
const CONFLICT: (u16, &str) = (
    409,
    "`conflict`: `expected_version` (or If-Match) is stale, `current_version` says where the \
     plan is; `already_exists`: what this would create (a name, a URL, a key) is stored \
     already; `from_file`, `not_finished`, `decided`: the state does not allow it now",
);
const NO_MODEL: (u16, &str) = (
    409,
    "`no_model`: planboard's agent has no model configured; the message says what to set",
);
const TOO_LARGE: (u16, &str) = (413, "the body is over 2 MiB");
const NOT_JSON: (u16, &str) = (
    415,
    "the body was not sent as `Content-Type: application/json` (what a page on another site \
     could post without a preflight); nothing changed",
);
const REFUSED: (u16, &str) = (
    422,
    "the engine refused: a cycle, an illegal transition, a full plan, an empty name…; \
     `message` says what to do instead. Nothing changed",
);
const FAILED: (u16, &str) = (
    500,
    "the server failed: `store` (the database) or `internal`; the message is generic and the \
     server log has the details",
);
const UNAVAILABLE: (u16, &str) = (
    503,
    "the request took longer than 30 s, or (`busy`, with `Retry-After`) the server is at its \
     limit of work on runs' files",
);

fn error_responses(codes: &[(u16, &str)]) -> BTreeMap<String, RefOr<Response>> {
    codes
        .iter()
        .map(|(code, description)| {
            let content = Content::new(Some(RefOr::Ref(Ref::from_schema_name("ErrorBody"))));
            let response = ResponseBuilder::new()
                .description(*description)
                .content("application/json", content)
                .build();
            (code.to_string(), RefOr::T(response))
        })
        .collect()
}

macro_rules! error_set {
    ($(#[$meta:meta])* $name:ident: [$($code:ident),*]) => {
        $(#[$meta])*
        pub struct $name;
        impl utoipa::IntoResponses for $name {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                error_responses(&[$($code),*])
            }
        }
    };
}

error_set!(
    /// A read of one plan.
    ReadErrors: [BAD_REQUEST, UNAUTHORIZED, TOO_MANY, NOT_FOUND, FAILED, UNAVAILABLE]
);
error_set!(
    /// A read of lists or documents not tied to one plan.
    ListErrors: [BAD_REQUEST, UNAUTHORIZED, TOO_MANY, FAILED, UNAVAILABLE]
);
error_set!(
    /// A change to an existing plan.
    WriteErrors: [BAD_REQUEST, UNAUTHORIZED, TOO_MANY, FORBIDDEN, NOT_FOUND, CONFLICT, TOO_LARGE, NOT_JSON, REFUSED, FAILED, UNAVAILABLE]
);
error_set!(
    /// A new plan (create, import).
    CreateErrors: [BAD_REQUEST, UNAUTHORIZED, TOO_MANY, FORBIDDEN, CONFLICT, TOO_LARGE, NOT_JSON, REFUSED, FAILED, UNAVAILABLE]
);
error_set!(
    /// Starting a run (409 `no_model` when no model is configured).
    RunStartErrors: [BAD_REQUEST, UNAUTHORIZED, TOO_MANY, FORBIDDEN, NO_MODEL, TOO_LARGE, NOT_JSON, REFUSED, FAILED, UNAVAILABLE]
);
error_set!(
    /// A tool call (a refusal is a 422 with the tool's own reply).
    ToolErrors: [BAD_REQUEST, UNAUTHORIZED, TOO_MANY, FORBIDDEN, NOT_FOUND, CONFLICT, TOO_LARGE, NOT_JSON, FAILED, UNAVAILABLE]
);
