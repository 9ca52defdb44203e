//! Configuration from the environment, checked before anything starts.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `DATABASE_URL` | `sqlite://data/planboard.db` | `sqlite:…` (embedded) or `postgres://…` |
//! | `PLANBOARD_USER` | `$USER`, else `local` | the one user of local mode |
//! | `PLANBOARD_TOKENS` | — | token mode: `name:role:token` entries separated by `,` |
//! | `PLANBOARD_TOKENS_FILE` | — | token mode: one `name role token` per line |
//! | `PLANBOARD_LEASE_SECS` | `1800` | idle time after which in-progress subtasks go back to todo |
//! | `LEPTOS_SITE_ADDR` | `127.0.0.1:3000` | where to listen |

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use crate::auth::{Identity, Role};

#[derive(Clone, Debug)]
pub struct Config {
    pub database_url: String,
    pub access: Access,
    pub lease: Duration,
}

#[derive(Clone, Debug)]
pub enum Access {
    /// No login: every request is this user, with every right.
    Local { user: String },
    /// Bearer tokens: token → who and what they may do.
    Tokens(HashMap<String, Identity>),
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Invalid(String),
}

impl Config {
    pub fn from_env() -> Result<Config, ConfigError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let database_url =
            var("DATABASE_URL").unwrap_or_else(|| "sqlite://data/planboard.db".into());
        let mut tokens = HashMap::new();
        if let Some(list) = var("PLANBOARD_TOKENS") {
            for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                let parts: Vec<&str> = entry.splitn(3, ':').collect();
                add_token(&mut tokens, &parts, entry)?;
            }
        }
        if let Some(path) = var("PLANBOARD_TOKENS_FILE") {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                ConfigError::Invalid(format!("cannot read PLANBOARD_TOKENS_FILE {path}: {e}"))
            })?;
            for line in text.lines().map(str::trim) {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let parts: Vec<&str> = line.split_whitespace().collect();
                add_token(&mut tokens, &parts, line)?;
            }
        }
        let access = if tokens.is_empty() {
            let user = var("PLANBOARD_USER")
                .or_else(|| var("USER"))
                .unwrap_or_else(|| "local".into());
            Access::Local { user }
        } else {
            Access::Tokens(tokens)
        };
        let lease = match var("PLANBOARD_LEASE_SECS") {
            None => Duration::from_secs(1800),
            Some(v) => Duration::from_secs(v.parse().map_err(|_| {
                ConfigError::Invalid(format!(
                    "PLANBOARD_LEASE_SECS must be a number of seconds, not '{v}'"
                ))
            })?),
        };
        Ok(Config {
            database_url,
            access,
            lease,
        })
    }

    /// Local mode trusts everyone who can connect, so it only listens on loopback.
    pub fn check_bind(&self, addr: SocketAddr) -> Result<(), ConfigError> {
        if matches!(self.access, Access::Local { .. }) && !addr.ip().is_loopback() {
            return Err(ConfigError::Invalid(format!(
                "refusing to listen on {addr} without token mode: local mode has no login, so \
                 anyone who can reach the port could change every plan. Set PLANBOARD_TOKENS \
                 (name:role:token,…) or listen on 127.0.0.1."
            )));
        }
        Ok(())
    }
}

fn add_token(
    tokens: &mut HashMap<String, Identity>,
    parts: &[&str],
    entry: &str,
) -> Result<(), ConfigError> {
    let [name, role, token] = parts else {
        return Err(ConfigError::Invalid(format!(
            "a token entry must be name, role and token; got '{}'",
            entry.split(':').next().unwrap_or_default()
        )));
    };
    let role = Role::parse(role).ok_or_else(|| {
        ConfigError::Invalid(format!(
            "token '{name}' has role '{role}'; the roles are viewer, operator and admin"
        ))
    })?;
    if token.len() < 16 {
        return Err(ConfigError::Invalid(format!(
            "the token of '{name}' is shorter than 16 characters; use a long random one"
        )));
    }
    tokens.insert(
        token.to_string(),
        Identity {
            name: name.to_string(),
            role,
        },
    );
    Ok(())
}
