//! Who may do what: local mode (one user, no login) or bearer tokens with
//! roles, and the board's sign-in sessions. The web floor's middleware
//! (`web::auth`) puts an [`Identity`] in each request's extensions;
//! handlers ask for the role they need.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a caller may not do what it asked. The API's one mapping of errors
/// (`api::error`, a layer above this one) gives it its status and body.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// Nobody: no token, an unknown one, an expired session (401).
    #[error("{0}")]
    Unauthorized(String),
    /// Someone without the right: their role, or a change carried by the
    /// session cookie from another site (403).
    #[error("{0}")]
    Forbidden(String),
}

plan_engine::wire_enum! {
    /// A caller's role; each may do what the one before it may, and more.
    #[derive(
        Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
    )]
    pub enum Role: "role (viewer, operator or admin)" {
        Viewer = "viewer",
        Operator = "operator",
        Admin = "admin",
    }
}

impl Role {
    /// A role as written in a token file or a setting, in any case.
    pub fn parse(text: &str) -> Option<Role> {
        Role::from_wire(&text.trim().to_ascii_lowercase())
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
    /// Bearer tokens: token → who and what they may do; and the board's
    /// sign-in sessions opened with them.
    Tokens(Tokens),
}

/// The bearer tokens (read as the map of token → identity) and the
/// board's sessions. Clones share the sessions: one table per server.
#[derive(Clone, Default)]
pub struct Tokens {
    tokens: HashMap<String, Identity>,
    pub sessions: Arc<Sessions>,
}

impl From<HashMap<String, Identity>> for Tokens {
    fn from(tokens: HashMap<String, Identity>) -> Tokens {
        Tokens {
            tokens,
            sessions: Arc::default(),
        }
    }
}

impl std::ops::Deref for Tokens {
    type Target = HashMap<String, Identity>;

    fn deref(&self) -> &Self::Target {
        &self.tokens
    }
}

/// How long a board session lasts after signing in (the cookie's
/// `Max-Age` too); then the person signs in again.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);

/// The most sessions kept at once; past it the one closest to expiring
/// is dropped. Only a valid token opens one, so this bounds memory, not
/// people.
pub const MAX_SESSIONS: usize = 10_000;

/// Failed sign-ins allowed in [`SIGN_IN_WINDOW`], counted for the whole
/// server (behind a proxy every client has the proxy's address, so a
/// count per address would count nobody). While that many have failed in
/// the window, every sign-in is answered 429, a right token too, or the
/// limit would not slow guessing. Signed-in sessions and bearer tokens
/// are unaffected.
pub const SIGN_IN_FAILURES: usize = 10;

/// The window of [`SIGN_IN_FAILURES`].
pub const SIGN_IN_WINDOW: Duration = Duration::from_secs(60);

/// The board's sign-in sessions: opaque random ids mapped to who signed
/// in, kept in memory (so a restart, or another replica behind a load
/// balancer without sticky sessions, asks to sign in again), and the
/// recent failed sign-ins.
#[derive(Default)]
pub struct Sessions {
    open: Mutex<HashMap<String, Session>>,
    failures: Mutex<VecDeque<Instant>>,
}

struct Session {
    identity: Identity,
    expires: Instant,
}

/// A lock whose holder panicked still holds a consistent map: every
/// change to it is one insert or remove.
fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Sessions {
    /// Opens a session for `identity`; its id, for the cookie: 64 hex
    /// digits, 244 random bits from the system's generator (two UUIDv4s).
    pub fn open(&self, identity: Identity) -> String {
        let id = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let now = Instant::now();
        let mut open = locked(&self.open);
        open.retain(|_, s| s.expires > now);
        if open.len() >= MAX_SESSIONS {
            let first = open
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(id, _)| id.clone());
            if let Some(first) = first {
                open.remove(&first);
            }
        }
        open.insert(
            id.clone(),
            Session {
                identity,
                expires: now + SESSION_TTL,
            },
        );
        id
    }

    /// Who the session `id` is, while it is open.
    pub fn identity(&self, id: &str) -> Option<Identity> {
        let open = locked(&self.open);
        open.get(id)
            .filter(|s| s.expires > Instant::now())
            .map(|s| s.identity.clone())
    }

    /// Closes the session `id` (signing out): its cookie opens nothing more.
    pub fn close(&self, id: &str) {
        locked(&self.open).remove(id);
    }

    /// Whether a sign-in may be tried now; if not, how long until one may.
    pub fn may_sign_in(&self) -> Result<(), Duration> {
        let now = Instant::now();
        let mut failures = locked(&self.failures);
        while failures
            .front()
            .is_some_and(|at| now.duration_since(*at) >= SIGN_IN_WINDOW)
        {
            failures.pop_front();
        }
        match failures.front() {
            Some(oldest) if failures.len() >= SIGN_IN_FAILURES => {
                Err(SIGN_IN_WINDOW.saturating_sub(now.duration_since(*oldest)))
            }
            _ => Ok(()),
        }
    }

    /// Counts a failed sign-in.
    pub fn failed_sign_in(&self) {
        let mut failures = locked(&self.failures);
        failures.push_back(Instant::now());
        // Only the newest SIGN_IN_FAILURES decide anything.
        while failures.len() > SIGN_IN_FAILURES {
            failures.pop_front();
        }
    }
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
                let agent = plan_engine::text::prefix(agent, room);
                format!("{} · {agent}", self.name)
            }
            _ => self.name.clone(),
        }
    }

    pub fn require(&self, role: Role) -> Result<(), AuthError> {
        if self.role >= role {
            Ok(())
        } else {
            Err(AuthError::Forbidden(format!(
                "'{}' is a {} and this needs the {} role",
                self.name,
                self.role.as_str(),
                role.as_str()
            )))
        }
    }
}
