//! Who is calling: local mode (one user, no login) or bearer tokens with
//! roles. The middleware puts an [`Identity`] in the request's extensions;
//! handlers ask for the role they need.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api::error::ApiError;
use crate::config::Access;

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
}

impl Identity {
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

/// Identifies the caller; a missing or unknown token is a 401. Writes (any
/// method but GET/HEAD/OPTIONS) need at least the operator role.
pub async fn identify(
    State(access): State<Arc<Access>>,
    mut request: Request,
    next: Next,
) -> Response {
    let identity = match access.as_ref() {
        Access::Local { user } => Identity {
            name: user.clone(),
            role: Role::Admin,
        },
        Access::Tokens(tokens) => {
            let presented = request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim);
            match presented.and_then(|t| tokens.get(t)) {
                Some(identity) => identity.clone(),
                None => {
                    let why = if presented.is_some() {
                        "the bearer token is not valid"
                    } else {
                        "this server is in token mode: send Authorization: Bearer <token>"
                    };
                    return ApiError::Unauthorized(why.into()).into_response();
                }
            }
        }
    };
    let reading = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    if !reading {
        if let Err(e) = identity.require(Role::Operator) {
            return e.into_response();
        }
    }
    request.extensions_mut().insert(identity);
    next.run(request).await
}
