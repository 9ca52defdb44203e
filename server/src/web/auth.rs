//! Who is calling, per request: the middleware that reads a bearer token
//! or the board's session cookie (or takes the local user) and puts an
//! [`Identity`] in the request's extensions, refusing a cookie's write
//! from another site. Wrong bearer tokens count against their client
//! ([`crate::auth::FailureLimiter`]), as wrong sign-ins do.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::connect_info::{ConnectInfo, MockConnectInfo};
use axum::extract::{Request, State};
use axum::http::{header, Extensions, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::{
    seconds_to_wait, Access, AuthError, Client, Identity, Role, Tokens, AGENT_HEADER,
};

/// The board's session cookie: holds the id of a session in
/// [`Sessions`], never the token the person signed in with, so signing
/// out ends it (HttpOnly, SameSite=Strict).
pub const SESSION_COOKIE: &str = "planboard_session";

/// How a request proved who it is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Proof {
    Local,
    Bearer,
    Cookie,
}

/// The session id the request's cookie carries.
pub fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == SESSION_COOKIE)
        .map(|c| c.value().trim().to_string())
}

/// Whether the client reached this server over HTTPS (directly, or through
/// a proxy that says so), so cookies can be `Secure`.
pub fn over_https(headers: &HeaderMap) -> bool {
    let forwarded_proto = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"));
    let forwarded = headers
        .get(header::FORWARDED)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("proto=https"));
    forwarded_proto || forwarded
}

/// Whom a request's wrong tokens count against: the connection's address
/// (when the server was started with
/// `into_make_service_with_connect_info::<SocketAddr>()`, as `main` and
/// the tests do), or the client a trusted proxy names in
/// `X-Forwarded-For`; without the connection's address, one key for all.
pub fn client(tokens: &Tokens, extensions: &Extensions, headers: &HeaderMap) -> Client {
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
        .or_else(|| {
            extensions
                .get::<MockConnectInfo<SocketAddr>>()
                .map(|MockConnectInfo(addr)| addr.ip())
        });
    // Bytes that are not UTF-8 are kept (replaced), not dropped with
    // their line: the entry a trusted proxy appended stays readable.
    let forwarded: Vec<std::borrow::Cow<'_, str>> = headers
        .get_all("x-forwarded-for")
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()))
        .collect();
    tokens.client(peer, &forwarded)
}

/// A client's wait as the API's refusal (429, with `Retry-After`).
pub fn too_many(wait: std::time::Duration) -> AuthError {
    AuthError::TooManyFailures {
        retry_after: seconds_to_wait(wait),
    }
}

/// Who the request is from; `Err` says why it is nobody (401), or that
/// its client sent too many wrong tokens (429).
fn identity_of(access: &Access, request: &Request) -> Result<(Identity, Proof), AuthError> {
    let tokens = match access {
        Access::Local { user } => {
            let me = Identity::new(user.clone(), Role::Admin);
            return Ok((me, Proof::Local));
        }
        Access::Tokens(tokens) => tokens,
    };
    let headers = request.headers();
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    if let Some(token) = bearer {
        let who = client(tokens, request.extensions(), headers);
        return match tokens.failures.attempt(who, || tokens.get(token).cloned()) {
            Ok(Some(identity)) => Ok((identity, Proof::Bearer)),
            Ok(None) => Err(AuthError::Unauthorized(
                "the bearer token is not valid".into(),
            )),
            Err(wait) => Err(too_many(wait)),
        };
    }
    let why = match session_id(headers) {
        Some(id) => match tokens.sessions.identity(&id) {
            Some(identity) => return Ok((identity, Proof::Cookie)),
            None => "the session has expired or was signed out; sign in again",
        },
        None => "this server is in token mode: send Authorization: Bearer <token>",
    };
    Err(AuthError::Unauthorized(why.into()))
}

/// A write carried by the session cookie must come from a page of this
/// site: its `Origin` names this host (CSRF protection on top of
/// SameSite=Strict).
pub fn same_origin(headers: &HeaderMap) -> bool {
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    match (host, origin) {
        (Some(host), Some(origin)) => origin
            .split_once("://")
            .is_some_and(|(_, rest)| rest.trim_end_matches('/') == host),
        _ => false,
    }
}

fn is_reading(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Identifies the caller; a missing or unknown token is a 401, and a
/// bearer token from a client that sent too many wrong ones lately a 429
/// (a right one too). Writes (any method but GET/HEAD/OPTIONS) need at
/// least the operator role, and, when carried by the session cookie, must
/// come from this site.
pub async fn identify(
    State(access): State<Arc<Access>>,
    mut request: Request,
    next: Next,
) -> Response {
    let (identity, proof) = match identity_of(&access, &request) {
        Ok(found) => found,
        Err(refused) => return refused.into_response(),
    };
    if !is_reading(request.method()) {
        if let Err(e) = identity.require(Role::Operator) {
            return e.into_response();
        }
        if proof == Proof::Cookie && !same_origin(request.headers()) {
            return AuthError::Forbidden(
                "a change sent with the session cookie must come from a planboard page".into(),
            )
            .into_response();
        }
    }
    let agent = request
        .headers()
        .get(AGENT_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let identity = match agent {
        Some(agent) => identity.acting_as(&agent),
        None => identity,
    };
    request.extensions_mut().insert(identity);
    next.run(request).await
}

/// The same for the board's pages and server functions: puts the board's
/// [`app::api::Viewer`] on the request; in token mode, a page without a
/// session goes to the sign-in form.
pub async fn identify_viewer(
    State(access): State<Arc<Access>>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    let public = path.starts_with("/pkg/")
        || path.starts_with("/login")
        || matches!(path, "/favicon.svg" | "/robots.txt");
    if public {
        return next.run(request).await;
    }
    let (identity, proof) = match identity_of(&access, &request) {
        Ok(found) => found,
        Err(AuthError::Unauthorized(_))
            if is_reading(request.method()) && !path.starts_with("/_board/") =>
        {
            return axum::response::Redirect::to("/login").into_response();
        }
        Err(refused) => return refused.into_response(),
    };
    if !is_reading(request.method()) && proof == Proof::Cookie && !same_origin(request.headers()) {
        return AuthError::Forbidden(
            "a change sent with the session cookie must come from a planboard page".into(),
        )
        .into_response();
    }
    request.extensions_mut().insert(app::api::Viewer {
        name: identity.name.clone(),
        can_edit: identity.role >= Role::Operator,
        signed_in: proof == Proof::Cookie,
        is_admin: identity.role >= Role::Admin,
    });
    next.run(request).await
}
