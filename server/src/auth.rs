//! Who is calling: local mode (one user, no login) or bearer tokens with
//! roles. The middleware puts an [`Identity`] in the request's extensions;
//! handlers ask for the role they need.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api::error::ApiError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Viewer,
    Operator,
    Admin,
}

impl Role {
    pub fn parse(text: &str) -> Option<Role> {
        match text.trim().to_ascii_lowercase().as_str() {
            "viewer" => Some(Role::Viewer),
            "operator" => Some(Role::Operator),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub role: Role,
    /// The agent acting with this identity's rights (the `X-Planboard-Agent`
    /// header, an agent session, an MCP client), so a reviewer can tell an
    /// agent's change from a person's.
    pub agent: Option<String>,
}

/// Who may do what: the configuration's access mode, read on every request.
#[derive(Clone)]
pub enum Access {
    /// No login: every request is this user, with every right.
    Local { user: String },
    /// Bearer tokens: token → who and what they may do.
    Tokens(std::collections::HashMap<String, Identity>),
}

/// Tokens never print: only who holds one and their role.
impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Access::Local { user } => f.debug_struct("Local").field("user", user).finish(),
            Access::Tokens(tokens) => {
                let mut names: Vec<String> = tokens
                    .values()
                    .map(|who| format!("{}:{}:<redacted>", who.name, who.role.as_str()))
                    .collect();
                names.sort();
                f.debug_tuple("Tokens").field(&names).finish()
            }
        }
    }
}

/// The header an HTTP agent names itself with.
pub const AGENT_HEADER: &str = "x-planboard-agent";

/// The longest agent name kept.
const AGENT_MAX: usize = 64;

impl Identity {
    pub fn new(name: impl Into<String>, role: Role) -> Identity {
        Identity {
            name: name.into(),
            role,
            agent: None,
        }
    }

    /// The same identity, acting as `agent` (unless an agent is already
    /// named). Control characters are dropped and the name is cut at 64
    /// characters: it is a label on the timeline, not an identity proof.
    pub fn acting_as(mut self, agent: &str) -> Identity {
        if self.agent.is_none() {
            let clean: String = agent
                .chars()
                .filter(|c| !c.is_control())
                .take(AGENT_MAX)
                .collect();
            let clean = clean.trim();
            if !clean.is_empty() {
                self.agent = Some(clean.to_string());
            }
        }
        self
    }

    /// Who the events of this request are recorded as: `alice`, or
    /// `alice · agent-7` for an agent acting with alice's rights.
    /// The agent's part is shortened to keep within the engine's limit on
    /// actor names.
    pub fn actor(&self) -> String {
        let room = plan_engine::model::limits::ACTOR.saturating_sub(self.name.chars().count() + 3);
        match &self.agent {
            Some(agent) if room > 0 => {
                let agent: String = agent.chars().take(room).collect();
                format!("{} · {agent}", self.name)
            }
            _ => self.name.clone(),
        }
    }

    pub fn require(&self, role: Role) -> Result<(), ApiError> {
        if self.role >= role {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!(
                "'{}' is a {} and this needs the {} role",
                self.name,
                self.role.as_str(),
                role.as_str()
            )))
        }
    }
}

/// The board's session cookie: holds the token the person signed in with
/// (HttpOnly, SameSite=Strict).
pub const SESSION_COOKIE: &str = "planboard_session";

/// How a request proved who it is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Proof {
    Local,
    Bearer,
    Cookie,
}

fn session_token(headers: &HeaderMap) -> Option<String> {
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

/// Who the request is from; `Err` says why it is nobody.
fn identity_of(access: &Access, headers: &HeaderMap) -> Result<(Identity, Proof), &'static str> {
    let tokens = match access {
        Access::Local { user } => {
            let me = Identity::new(user.clone(), Role::Admin);
            return Ok((me, Proof::Local));
        }
        Access::Tokens(tokens) => tokens,
    };
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let cookie = session_token(headers);
    let (presented, proof) = match (bearer, cookie.as_deref()) {
        (Some(t), _) => (t, Proof::Bearer),
        (None, Some(t)) => (t, Proof::Cookie),
        (None, None) => {
            return Err("this server is in token mode: send Authorization: Bearer <token>")
        }
    };
    match tokens.get(presented) {
        Some(identity) => Ok((identity.clone(), proof)),
        None if proof == Proof::Cookie => {
            Err("the session has expired or its token was revoked; sign in again")
        }
        None => Err("the bearer token is not valid"),
    }
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

/// Identifies the caller; a missing or unknown token is a 401. Writes (any
/// method but GET/HEAD/OPTIONS) need at least the operator role, and, when
/// carried by the session cookie, must come from this site.
pub async fn identify(
    State(access): State<Arc<Access>>,
    mut request: Request,
    next: Next,
) -> Response {
    let (identity, proof) = match identity_of(&access, request.headers()) {
        Ok(found) => found,
        Err(why) => return ApiError::Unauthorized(why.into()).into_response(),
    };
    if !is_reading(request.method()) {
        if let Err(e) = identity.require(Role::Operator) {
            return e.into_response();
        }
        if proof == Proof::Cookie && !same_origin(request.headers()) {
            return ApiError::Forbidden(
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
    let (identity, proof) = match identity_of(&access, request.headers()) {
        Ok(found) => found,
        Err(_) if is_reading(request.method()) && !path.starts_with("/_board/") => {
            return axum::response::Redirect::to("/login").into_response();
        }
        Err(why) => return ApiError::Unauthorized(why.into()).into_response(),
    };
    if !is_reading(request.method()) && proof == Proof::Cookie && !same_origin(request.headers()) {
        return ApiError::Forbidden(
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
