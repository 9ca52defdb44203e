//! Who may do what: local mode (one user, no login) or bearer tokens with
//! roles, the board's sign-in sessions, and the limit on wrong tokens per
//! client ([`FailureLimiter`]). The web floor's middleware (`web::auth`)
//! puts an [`Identity`] in each request's extensions; handlers ask for the
//! role they need.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv6Addr};
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
    /// A client that sent too many wrong tokens lately: nothing it sends
    /// with a token is looked at for `retry_after` seconds (429).
    #[error("too many wrong tokens from this address; try again in {retry_after} seconds")]
    TooManyFailures { retry_after: u64 },
}

/// A wait in whole seconds, rounded up and at least 1: what `Retry-After`
/// and the sentences say.
pub fn seconds_to_wait(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
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

/// The bearer tokens (read as the map of token → identity), the board's
/// sessions, the wrong tokens counted per client, and the proxies trusted
/// to name the client. Clones share the sessions and the counts: one of
/// each per server.
#[derive(Clone, Default)]
pub struct Tokens {
    tokens: HashMap<String, Identity>,
    pub sessions: Arc<Sessions>,
    /// Wrong tokens per client, at sign-in and as bearer tokens alike.
    pub failures: Arc<FailureLimiter>,
    /// `PLANBOARD_TRUSTED_PROXIES`: peers whose `X-Forwarded-For` names
    /// the client.
    trusted_proxies: Vec<IpRange>,
}

impl From<HashMap<String, Identity>> for Tokens {
    fn from(tokens: HashMap<String, Identity>) -> Tokens {
        Tokens {
            tokens,
            ..Tokens::default()
        }
    }
}

impl Tokens {
    /// The same tokens, served behind `proxies`: a request from one of
    /// them counts against the client its `X-Forwarded-For` names.
    pub fn behind(mut self, proxies: Vec<IpRange>) -> Tokens {
        self.trusted_proxies = proxies;
        self
    }

    /// The proxies trusted to name the client.
    pub fn trusted_proxies(&self) -> &[IpRange] {
        &self.trusted_proxies
    }

    /// Whom a request's wrong tokens count against (see [`Client::behind`]).
    pub fn client<S: AsRef<str>>(&self, peer: Option<IpAddr>, forwarded_for: &[S]) -> Client {
        Client::behind(&self.trusted_proxies, peer, forwarded_for)
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

/// Wrong tokens (failed sign-ins and unknown bearer tokens together)
/// allowed per client in [`FAILURE_WINDOW`]. While a client has that many
/// in the window, everything it sends with a token (a sign-in, a request
/// with a bearer token) is answered 429, a right token too, or the limit
/// would not slow guessing. Other clients, and open sessions, are
/// unaffected.
pub const FAILURES_PER_CLIENT: usize = 10;

/// The window of [`FAILURES_PER_CLIENT`].
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);

/// The most clients whose wrong tokens are remembered; past it the one
/// whose last failure is oldest is forgotten. Bounds memory against a
/// guesser with many addresses.
pub const MAX_CLIENTS: usize = 10_000;

/// The board's sign-in sessions: opaque random ids mapped to who signed
/// in, kept in memory (so a restart, or another replica behind a load
/// balancer without sticky sessions, asks to sign in again).
#[derive(Default)]
pub struct Sessions {
    open: Mutex<HashMap<String, Session>>,
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
}

/// Whom wrong tokens count against: a client's address (an IPv6 address
/// by its /64, which one subscriber usually holds whole; an IPv4-mapped
/// one as IPv4), or, where the server runs without the connections'
/// addresses (a router called in process), one key shared by all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Client {
    Address(IpAddr),
    Unknown,
}

impl Client {
    /// The client at `ip`.
    pub fn of(ip: IpAddr) -> Client {
        match ip.to_canonical() {
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !(u128::from(u64::MAX));
                Client::Address(IpAddr::V6(Ipv6Addr::from(prefix)))
            }
            v4 => Client::Address(v4),
        }
    }

    /// The client of a request from `peer` (the connection's address):
    /// the peer itself, unless it is one of the `trusted` proxies; then
    /// the right-most address of `X-Forwarded-For` (its header lines in
    /// order, `forwarded_for`) that is not a trusted proxy itself: the one
    /// the last trusted proxy saw, since everything left of it is the
    /// client's to write. No such address (the header absent, or an entry
    /// that is not an address reached first): the peer. No peer: the one
    /// shared key.
    pub fn behind<S: AsRef<str>>(
        trusted: &[IpRange],
        peer: Option<IpAddr>,
        forwarded_for: &[S],
    ) -> Client {
        let Some(peer) = peer else {
            return Client::Unknown;
        };
        let is_trusted = |ip: IpAddr| trusted.iter().any(|range| range.contains(ip));
        if !is_trusted(peer) {
            return Client::of(peer);
        }
        let hops = forwarded_for
            .iter()
            .rev()
            .flat_map(|line| line.as_ref().rsplit(','));
        for hop in hops {
            match forwarded_address(hop) {
                Some(ip) if is_trusted(ip) => continue,
                Some(ip) => return Client::of(ip),
                None => break,
            }
        }
        Client::of(peer)
    }
}

/// One entry of `X-Forwarded-For`: an address, perhaps with a port
/// (`203.0.113.7:4711`, `[2001:db8::7]:443`) or in brackets.
fn forwarded_address(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    hop.parse::<IpAddr>()
        .or_else(|_| hop.parse::<std::net::SocketAddr>().map(|a| a.ip()))
        .ok()
        .or_else(|| hop.strip_prefix('[')?.strip_suffix(']')?.parse().ok())
}

/// An address or a CIDR block (`10.0.0.1`, `10.0.0.0/8`, `fd00::/8`): a
/// trusted proxy of `PLANBOARD_TRUSTED_PROXIES`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    base: IpAddr,
    bits: u8,
}

impl IpRange {
    /// `10.0.0.1` (that address alone) or `10.0.0.0/8`; `None` for
    /// anything else (a name, a prefix longer than the address).
    pub fn parse(text: &str) -> Option<IpRange> {
        let text = text.trim();
        let (address, bits) = match text.split_once('/') {
            Some((address, bits)) => (address.trim(), Some(bits.trim())),
            None => (text, None),
        };
        let base: IpAddr = address.parse().ok()?;
        let max: u8 = if base.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            None => max,
            Some(bits) => bits.parse::<u8>().ok().filter(|b| *b <= max)?,
        };
        // `::ffff:10.0.0.1` is 10.0.0.1, as a peer's address is read.
        let (base, bits) = match base.to_canonical() {
            IpAddr::V4(v4) if base.is_ipv6() && bits >= 96 => (IpAddr::V4(v4), bits - 96),
            _ => (base, bits),
        };
        Some(IpRange { base, bits })
    }

    /// Whether `ip` is in the range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let v4 = |a: std::net::Ipv4Addr| u128::from(u32::from(a)) << 96;
        match (self.base, ip.to_canonical()) {
            (IpAddr::V4(base), IpAddr::V4(ip)) => same_prefix(v4(base), v4(ip), self.bits),
            (IpAddr::V6(base), IpAddr::V6(ip)) => {
                same_prefix(u128::from(base), u128::from(ip), self.bits)
            }
            _ => false,
        }
    }
}

/// Whether `a` and `b` agree in their first `bits` bits.
fn same_prefix(a: u128, b: u128, bits: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
    ((a ^ b) & mask) == 0
}

impl std::fmt::Display for IpRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.base, self.bits)
    }
}

impl std::fmt::Debug for IpRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// Wrong tokens per [`Client`]: at most `limit` in `window` each (the
/// server's: [`FAILURES_PER_CLIENT`] in [`FAILURE_WINDOW`]); a client
/// over it may not try a token until its oldest counted failure is
/// `window` old. At most `capacity` clients ([`MAX_CLIENTS`]) are
/// remembered, the stalest forgotten first.
pub struct FailureLimiter {
    limit: usize,
    window: Duration,
    capacity: usize,
    clients: Mutex<HashMap<Client, VecDeque<Instant>>>,
}

impl Default for FailureLimiter {
    fn default() -> FailureLimiter {
        FailureLimiter::new(FAILURES_PER_CLIENT, FAILURE_WINDOW, MAX_CLIENTS)
    }
}

impl FailureLimiter {
    pub fn new(limit: usize, window: Duration, capacity: usize) -> FailureLimiter {
        FailureLimiter {
            limit: limit.max(1),
            window,
            capacity: capacity.max(1),
            clients: Mutex::default(),
        }
    }

    /// Tries a token from `client`: if it failed too often lately, `Err`
    /// with how long until it may try again, and `check` is not run;
    /// else what `check` (the token's lookup) found, a `None` counting as
    /// a failure. The lookup runs under the limiter's lock, so a burst of
    /// guesses sent at once is counted as strictly as one after another.
    pub fn attempt<T>(
        &self,
        client: Client,
        check: impl FnOnce() -> Option<T>,
    ) -> Result<Option<T>, Duration> {
        self.attempt_at(client, Instant::now(), check)
    }

    fn attempt_at<T>(
        &self,
        client: Client,
        now: Instant,
        check: impl FnOnce() -> Option<T>,
    ) -> Result<Option<T>, Duration> {
        let window = self.window;
        let mut clients = locked(&self.clients);
        let wait = clients.get_mut(&client).and_then(|failures| {
            while failures
                .front()
                .is_some_and(|at| now.saturating_duration_since(*at) >= window)
            {
                failures.pop_front();
            }
            let oldest = *failures.front()?;
            (failures.len() >= self.limit)
                .then(|| window.saturating_sub(now.saturating_duration_since(oldest)))
        });
        if let Some(wait) = wait {
            return Err(wait);
        }
        let found = check();
        if found.is_none() {
            self.count(&mut clients, client, now);
        } else if clients.get(&client).is_some_and(VecDeque::is_empty) {
            clients.remove(&client);
        }
        Ok(found)
    }

    /// Counts a failure of `client` at `now`, making room for it first
    /// when it is new and the table is full.
    fn count(
        &self,
        clients: &mut HashMap<Client, VecDeque<Instant>>,
        client: Client,
        now: Instant,
    ) {
        if !clients.contains_key(&client) && clients.len() >= self.capacity {
            let window = self.window;
            clients.retain(|_, failures| {
                failures
                    .back()
                    .is_some_and(|last| now.saturating_duration_since(*last) < window)
            });
            if clients.len() >= self.capacity {
                let stalest = clients
                    .iter()
                    .min_by_key(|(_, failures)| failures.back().copied())
                    .map(|(client, _)| *client);
                if let Some(stalest) = stalest {
                    clients.remove(&stalest);
                }
            }
        }
        let failures = clients.entry(client).or_default();
        failures.push_back(now);
        // Only the newest `limit` decide anything.
        while failures.len() > self.limit {
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
                let mut shown = f.debug_tuple("Tokens");
                shown.field(&names);
                if !tokens.trusted_proxies.is_empty() {
                    shown.field(&tokens.trusted_proxies);
                }
                shown.finish()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn client(text: &str) -> Client {
        Client::of(ip(text))
    }

    fn ranges(list: &[&str]) -> Vec<IpRange> {
        list.iter().map(|r| IpRange::parse(r).unwrap()).collect()
    }

    /// A wrong token: the lookup finds nothing.
    fn wrong() -> Option<()> {
        None
    }

    /// A right one.
    fn right() -> Option<()> {
        Some(())
    }

    #[test]
    fn ten_wrong_tokens_in_a_minute_lock_the_client_until_its_oldest_failure_is_a_minute_old() {
        let limiter = FailureLimiter::default();
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let guesser = client("203.0.113.7");
        for n in 0..FAILURES_PER_CLIENT as u64 {
            assert_eq!(limiter.attempt_at(guesser, at(n), wrong), Ok(None), "{n}");
        }
        // Ten failed between 0 s and 9 s: at 10 s the oldest is 10 s old.
        assert_eq!(
            limiter.attempt_at(guesser, at(10), right),
            Err(Duration::from_secs(50))
        );
        assert_eq!(
            limiter.attempt_at(guesser, at(59), right),
            Err(Duration::from_secs(1))
        );
        // At 60 s the first failure is out of the window: nine remain.
        assert_eq!(limiter.attempt_at(guesser, at(60), right), Ok(Some(())));
        assert_eq!(limiter.attempt_at(guesser, at(60), wrong), Ok(None));
        assert_eq!(
            limiter.attempt_at(guesser, at(60), right),
            Err(Duration::from_secs(1)),
            "ten again: the oldest, at 1 s, is 59 s old"
        );
    }

    #[test]
    fn a_locked_client_is_refused_even_a_right_token_without_a_lookup_and_other_clients_are_not() {
        let limiter = FailureLimiter::default();
        let now = Instant::now();
        let guesser = client("203.0.113.7");
        for _ in 0..FAILURES_PER_CLIENT {
            limiter.attempt_at(guesser, now, wrong).unwrap();
        }
        let mut looked = false;
        let refused = limiter.attempt_at(guesser, now, || {
            looked = true;
            right()
        });
        assert_eq!(refused, Err(FAILURE_WINDOW));
        assert!(!looked, "a locked client's token is not even looked up");
        assert_eq!(
            limiter.attempt_at(client("198.51.100.2"), now, right),
            Ok(Some(()))
        );
        assert_eq!(
            limiter.attempt_at(client("198.51.100.2"), now, wrong),
            Ok(None),
            "another client's failures are its own"
        );
        assert_eq!(
            limiter.attempt_at(Client::Unknown, now, right),
            Ok(Some(()))
        );
    }

    #[test]
    fn right_tokens_count_nothing_and_a_client_without_failures_is_not_remembered() {
        let limiter = FailureLimiter::default();
        let now = Instant::now();
        let person = client("198.51.100.2");
        for _ in 0..3 * FAILURES_PER_CLIENT {
            assert_eq!(limiter.attempt_at(person, now, right), Ok(Some(())));
        }
        assert!(locked(&limiter.clients).is_empty());
        limiter.attempt_at(person, now, wrong).unwrap();
        let later = now + FAILURE_WINDOW;
        assert_eq!(limiter.attempt_at(person, later, right), Ok(Some(())));
        assert!(
            locked(&limiter.clients).is_empty(),
            "its failure is out of the window, so it is forgotten"
        );
    }

    #[test]
    fn at_most_the_capacity_of_clients_is_remembered_and_the_stalest_is_forgotten_first() {
        let limiter = FailureLimiter::new(2, FAILURE_WINDOW, 3);
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let (a, b, c, d) = (
            client("192.0.2.1"),
            client("192.0.2.2"),
            client("192.0.2.3"),
            client("192.0.2.4"),
        );
        limiter.attempt_at(a, at(0), wrong).unwrap();
        limiter.attempt_at(b, at(1), wrong).unwrap();
        limiter.attempt_at(c, at(2), wrong).unwrap();
        // a fails again: it is the freshest now, and b the stalest.
        limiter.attempt_at(a, at(3), wrong).unwrap();
        limiter.attempt_at(d, at(4), wrong).unwrap();
        let remembered = |who: Client| locked(&limiter.clients).contains_key(&who);
        assert_eq!(locked(&limiter.clients).len(), 3);
        assert!(!remembered(b), "the stalest client is forgotten");
        assert!(remembered(a) && remembered(c) && remembered(d));
        assert!(
            limiter.attempt_at(a, at(5), right).is_err(),
            "a is still locked"
        );
        // Past the window every failure has expired: all of them go at once.
        let e = client("192.0.2.5");
        limiter.attempt_at(e, at(200), wrong).unwrap();
        assert_eq!(locked(&limiter.clients).len(), 1);
        assert!(remembered(e));
    }

    #[test]
    fn the_client_is_the_peer_unless_the_peer_is_a_trusted_proxy() {
        let peer = Some(ip("198.51.100.7"));
        assert_eq!(
            Client::behind(&[], peer, &["203.0.113.9"]),
            client("198.51.100.7"),
            "no proxy is trusted: X-Forwarded-For is ignored"
        );
        let proxies = ranges(&["198.51.100.7", "10.0.0.0/8"]);
        assert_eq!(
            Client::behind(&ranges(&["10.0.0.0/8"]), peer, &["203.0.113.9"]),
            client("198.51.100.7"),
            "an untrusted peer's X-Forwarded-For is ignored"
        );
        assert_eq!(
            Client::behind(&proxies, peer, &["203.0.113.9"]),
            client("203.0.113.9")
        );
        // The right-most untrusted entry: the left ones are the client's to
        // write, and the trusted hops behind it are skipped.
        assert_eq!(
            Client::behind(&proxies, peer, &["1.2.3.4, 203.0.113.9, 10.1.2.3"]),
            client("203.0.113.9")
        );
        assert_eq!(
            Client::behind(&proxies, peer, &["1.2.3.4", "203.0.113.9,10.1.2.3"]),
            client("203.0.113.9"),
            "several header lines read as one list"
        );
        assert_eq!(
            Client::behind(&proxies, peer, &["203.0.113.9:4711"]),
            client("203.0.113.9")
        );
        assert_eq!(
            Client::behind(&proxies, peer, &["[2001:db8::9]:443"]),
            client("2001:db8::9")
        );
        // Absent, unreadable, or only trusted hops: the peer.
        let unread: [&[&str]; 5] = [
            &[],
            &["unknown"],
            &["203.0.113.9, junk"],
            &["10.0.0.2"],
            &[""],
        ];
        for forwarded in unread {
            assert_eq!(
                Client::behind(&proxies, peer, forwarded),
                client("198.51.100.7"),
                "{forwarded:?}"
            );
        }
        assert_eq!(
            Client::behind(&proxies, None, &["203.0.113.9"]),
            Client::Unknown,
            "without the connection's address: the one shared key"
        );
    }

    #[test]
    fn ipv6_clients_count_by_their_64_bit_prefix_and_mapped_ipv4_as_ipv4() {
        assert_eq!(client("2001:db8:1:2::1"), client("2001:db8:1:2:ffff::7"));
        assert_ne!(client("2001:db8:1:2::1"), client("2001:db8:1:3::1"));
        assert_eq!(client("::ffff:192.0.2.1"), client("192.0.2.1"));
        assert_eq!(
            client("2001:db8:1:2::1"),
            Client::Address(ip("2001:db8:1:2::"))
        );
    }

    #[test]
    fn trusted_proxies_are_addresses_or_cidr_blocks() {
        let one = IpRange::parse(" 10.0.0.1 ").unwrap();
        assert!(one.contains(ip("10.0.0.1")));
        assert!(one.contains(ip("::ffff:10.0.0.1")));
        assert!(!one.contains(ip("10.0.0.2")));
        let block = IpRange::parse("10.0.0.0/8").unwrap();
        assert!(block.contains(ip("10.255.1.2")));
        assert!(!block.contains(ip("11.0.0.1")));
        assert!(!block.contains(ip("::1")));
        let v6 = IpRange::parse("fd00::/8").unwrap();
        assert!(v6.contains(ip("fd12:3456::1")));
        assert!(!v6.contains(ip("fe80::1")));
        assert!(IpRange::parse("0.0.0.0/0")
            .unwrap()
            .contains(ip("192.0.2.1")));
        assert_eq!(
            IpRange::parse("::ffff:10.0.0.0/104"),
            IpRange::parse("10.0.0.0/8")
        );
        assert_eq!(block.to_string(), "10.0.0.0/8");
        for bad in [
            "",
            "proxy.internal",
            "10.0.0.0/33",
            "10.0.0.1/",
            "10.0.0/8",
            "::1/129",
        ] {
            assert_eq!(IpRange::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_wait_is_shown_in_whole_seconds_rounded_up_and_at_least_one() {
        assert_eq!(seconds_to_wait(Duration::from_secs(50)), 50);
        assert_eq!(seconds_to_wait(Duration::from_millis(49_001)), 50);
        assert_eq!(seconds_to_wait(Duration::ZERO), 1);
    }
}
