//! The door every request comes through first: the host it names, the site
//! a write comes from, the type of a write's body, and the headers every
//! answer carries.
//!
//! Local mode has no login: whoever reaches the port may change every plan
//! and add an MCP server (a command the server then starts). A browser
//! reaches the port for any page it shows, so without this a page on any
//! site could post a form to `http://127.0.0.1:3000/tools/servers`, and a
//! name whose DNS an attacker points at 127.0.0.1 (DNS rebinding) would make
//! the attacker's page the board's own origin. In token mode a signed-in
//! person's cookie rides along the same way (`auth` also checks its
//! writes' `Origin`). So, in both access modes:
//!
//! - **Host** (every route and method but `GET`/`HEAD /healthz`, which an
//!   orchestrator probes by the pod's address and which tells nothing): a
//!   request must name `localhost` (or a `*.localhost` name), an IP address
//!   (127.0.0.0/8, `[::1]`, the address the server is bound to or any
//!   other: a rebinding attack needs a name the attacker's DNS answers for,
//!   so an address cannot be one — Vite allows them by the same reasoning),
//!   the host of `PLANBOARD_PUBLIC_URL`, or a name in
//!   `PLANBOARD_ALLOWED_HOSTS` (`board.example` any port, `board.example:8443`
//!   that port, `.example.org` the domain and its subdomains). Any other is
//!   refused with a 403 that names it and says how to allow it. A request
//!   with no host at all (HTTP/1.0) passes: every browser names the host, so
//!   such a request is not a browser's and could have named any host it
//!   liked.
//! - **Writes from other sites** (every method but GET, HEAD and OPTIONS): a
//!   `Sec-Fetch-Site` of `cross-site` or `same-site` is a 403; otherwise an
//!   `Origin` other than the request's own (host and port against the
//!   `Host` header; the scheme counts through the port, since one port is
//!   one listener: a `Host` without a port is on 443 when a proxy says
//!   HTTPS, else on the origin scheme's default) or `PLANBOARD_PUBLIC_URL`'s
//!   is a 403, `Origin: null` included. A request with neither header
//!   (curl, agents, MCP clients) passes, and so does one with
//!   `Authorization: Bearer …`: a page cannot
//!   add that header to another site's request without a CORS preflight,
//!   which planboard never grants, so a request carrying it is not a
//!   forged one.
//! - **JSON bodies**: a write to `/api/…` or `/mcp` with a body must say
//!   `Content-Type: application/json` (or `application/*+json`);
//!   `POST /api/runs` and `POST /api/runs/{id}/files` also take
//!   `multipart/form-data`. Otherwise a 415. The API's JSON extractor
//!   refused other types already (a 400), but the routes that read raw
//!   bytes (tool calls, actions without fields) took any, and `text/plain`
//!   is what a page may post to another site without a preflight. The
//!   rule is applied after routing, so a method a path does not take stays
//!   the router's 405 (the API fuzzer sent `PUT` with files to a `POST`
//!   route): on `/api` by the body extractors (`api::error::json_typed`;
//!   axum's `Json` already answers 415), on `/mcp` by [`json_bodies`].
//! - **Headers** on every answer: `X-Content-Type-Options: nosniff`,
//!   `X-Frame-Options: DENY`, `Referrer-Policy: same-origin` and a
//!   `Content-Security-Policy` of `frame-ancestors 'none'; base-uri 'self';
//!   form-action 'self'; object-src 'none'` (nothing about scripts or
//!   styles: Leptos hydrates with inline scripts).
//!
//! Refusals under `/api/` and `/mcp` are the API's JSON errors; the others
//! are a plain sentence.

use std::net::IpAddr;
use std::sync::Arc;

use axum::body::HttpBody;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::web::api::error::ApiError;
use crate::web::auth::over_https;

/// Which names the server answers to besides `localhost` and IP addresses,
/// and the public origin writes may come from.
#[derive(Clone, Debug, Default)]
pub struct Guard {
    names: Vec<Allowed>,
    public: Option<Origin>,
}

/// A name of `PLANBOARD_ALLOWED_HOSTS` or `PLANBOARD_PUBLIC_URL`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Allowed {
    name: String,
    /// `.example.org`: the name and every name under it.
    subdomains: bool,
    /// Only this port; `None`: any.
    port: Option<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Host {
    Ip(IpAddr),
    /// Lower case, without a trailing dot.
    Name(String),
}

/// A `Host` header: the host and, if given, the port.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Authority {
    host: Host,
    port: Option<u16>,
}

/// An `Origin` header (or a URL's origin), its port made explicit.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Origin {
    https: bool,
    host: Host,
    port: u16,
}

impl Guard {
    /// The guard for `PLANBOARD_PUBLIC_URL` and `PLANBOARD_ALLOWED_HOSTS`
    /// (as `config` checked them).
    pub fn new(public_url: Option<&reqwest::Url>, allowed_hosts: &[String]) -> Guard {
        let mut names = Vec::new();
        for entry in allowed_hosts {
            let (subdomains, rest) = match entry.trim().strip_prefix('.') {
                Some(rest) => (true, rest),
                None => (false, entry.trim()),
            };
            match parse_authority(rest) {
                Some(Authority {
                    host: Host::Name(name),
                    port,
                }) => names.push(Allowed {
                    name,
                    subdomains,
                    port,
                }),
                // Addresses are allowed anyway.
                Some(_) => {}
                None => {
                    tracing::warn!("PLANBOARD_ALLOWED_HOSTS: '{entry}' is not a host name; ignored")
                }
            }
        }
        let public = public_url.and_then(|url| {
            let authority = parse_authority(url.host_str()?)?;
            Some(Origin {
                https: url.scheme() == "https",
                host: authority.host,
                port: url.port_or_known_default()?,
            })
        });
        if let Some(Origin {
            host: Host::Name(name),
            ..
        }) = &public
        {
            names.push(Allowed {
                name: name.clone(),
                subdomains: false,
                port: None,
            });
        }
        Guard { names, public }
    }

    /// Whether a request naming `host` is answered.
    fn answers_to(&self, authority: &Authority) -> bool {
        match &authority.host {
            Host::Ip(_) => true,
            Host::Name(name) if name == "localhost" || name.ends_with(".localhost") => true,
            Host::Name(name) => self.names.iter().any(|allowed| {
                let named = *name == allowed.name
                    || (allowed.subdomains
                        && name
                            .strip_suffix(allowed.name.as_str())
                            .is_some_and(|head| head.ends_with('.')));
                // A host without a port is on its scheme's default one.
                let port = match (allowed.port, authority.port) {
                    (None, _) => true,
                    (Some(want), Some(got)) => want == got,
                    (Some(want), None) => matches!(want, 80 | 443),
                };
                named && port
            }),
        }
    }

    /// Why a write is refused as coming from another site, if it is.
    fn foreign_write(&self, headers: &HeaderMap, host: Option<&Authority>) -> Option<String> {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.get(..7))
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("bearer "));
        if bearer {
            return None;
        }
        let site = headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_ascii_lowercase());
        if let Some(site @ ("cross-site" | "same-site")) = site.as_deref() {
            return Some(format!(
                "planboard takes changes only from its own pages, and the browser says this one \
                 comes from another site (Sec-Fetch-Site: {site}); nothing was changed"
            ));
        }
        let origin = headers.get(header::ORIGIN)?;
        let text = origin.to_str().unwrap_or("");
        let own = parse_origin(text).is_some_and(|origin| {
            self.public.as_ref() == Some(&origin)
                || host.is_some_and(|host| same_origin(&origin, host, over_https(headers)))
        });
        (!own).then(|| {
            format!(
                "planboard takes changes only from its own pages, and this one comes from '{}'; \
                 nothing was changed. Behind a proxy that changes the Host header, set \
                 PLANBOARD_PUBLIC_URL to the address people open",
                shown(text)
            )
        })
    }
}

/// The middleware: see the module's documentation.
pub async fn guard(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let api = path.starts_with("/api/") || path == "/mcp" || path.starts_with("/mcp/");
    let mut response = match check(&guard, &request) {
        Some(why) => forbidden(why, api),
        None => next.run(request).await,
    };
    secure_headers(response.headers_mut());
    response
}

/// Why `request` is refused (a 403), if it is: the first rule it breaks,
/// as a sentence.
fn check(guard: &Guard, request: &Request) -> Option<String> {
    let headers = request.headers();
    let named = match headers.get(header::HOST) {
        Some(value) => Some(value.to_str().unwrap_or("")),
        // HTTP/2 names the host in the request's authority.
        None => request.uri().authority().map(|a| a.as_str()),
    };
    let host = named.and_then(parse_authority);
    let probe = matches!(*request.method(), Method::GET | Method::HEAD)
        && request.uri().path() == "/healthz";
    if let Some(named) = named {
        if !probe && !host.as_ref().is_some_and(|host| guard.answers_to(host)) {
            return Some(format!(
                "planboard does not answer to the host '{}' (a page on another name could \
                 be using it to reach this server). If that is this server's address, add \
                 it to PLANBOARD_ALLOWED_HOSTS (names separated by commas) or set \
                 PLANBOARD_PUBLIC_URL to it",
                shown(named)
            ));
        }
    }
    if matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) {
        return None;
    }
    guard.foreign_write(headers, host.as_ref())
}

/// The JSON-bodies rule as a layer on `/mcp`, whose one service takes
/// every method (the API's routes check it in their body extractors).
pub async fn json_bodies(request: Request, next: Next) -> Response {
    if has_body(&request) {
        if let Err(refused) = crate::web::api::error::json_typed(request.headers()) {
            // The guard around every route adds the security headers.
            return refused.into_response();
        }
    }
    next.run(request).await
}

/// Whether a request carries a body: a length over 0, or a body whose
/// length is not said (chunked, or HTTP/2) and that has not ended.
fn has_body(request: &Request) -> bool {
    match request.headers().get(header::CONTENT_LENGTH) {
        Some(length) => length
            .to_str()
            .ok()
            .and_then(|l| l.trim().parse::<u64>().ok())
            .is_none_or(|l| l > 0),
        None => {
            request.headers().contains_key(header::TRANSFER_ENCODING)
                || !request.body().is_end_stream()
        }
    }
}

/// A 403: the API's JSON error under `/api` and `/mcp`, else a sentence.
fn forbidden(message: String, api: bool) -> Response {
    if api {
        return ApiError::Forbidden(message).into_response();
    }
    (
        StatusCode::FORBIDDEN,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message,
    )
        .into_response()
}

/// The headers every answer carries (a handler's own value is kept).
fn secure_headers(headers: &mut HeaderMap) {
    const HEADERS: [(HeaderName, &str); 4] = [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
        (
            header::CONTENT_SECURITY_POLICY,
            "frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'",
        ),
    ];
    for (name, value) in HEADERS {
        headers
            .entry(name)
            .or_insert(HeaderValue::from_static(value));
    }
}

/// What a client sent, shortened for a sentence.
fn shown(text: &str) -> String {
    plan_engine::text::ellipsis(text, 100)
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; `None` if it is none of them.
fn parse_authority(text: &str) -> Option<Authority> {
    let text = text.trim();
    let (host, port) = match text.strip_prefix('[') {
        Some(rest) => {
            let (inside, after) = rest.split_once(']')?;
            let port = match after {
                "" => None,
                after => Some(after.strip_prefix(':')?),
            };
            (Host::Ip(IpAddr::V6(inside.parse().ok()?)), port)
        }
        None => {
            let (name, port) = match text.split_once(':') {
                Some((name, port)) => (name, Some(port)),
                None => (text, None),
            };
            (parse_host(name)?, port)
        }
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => Some(p.parse().ok()?),
        Some(_) => return None,
    };
    Some(Authority { host, port })
}

/// A host without a port: an IPv4 address or a DNS name.
fn parse_host(text: &str) -> Option<Host> {
    let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    if let Ok(ip) = name.parse::<std::net::Ipv4Addr>() {
        return Some(Host::Ip(IpAddr::V4(ip)));
    }
    let fine = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    fine.then_some(Host::Name(name))
}

/// `http(s)://host[:port]`; `None` for anything else (`null` included).
fn parse_origin(text: &str) -> Option<Origin> {
    let (scheme, rest) = text.trim().split_once("://")?;
    let https = match scheme.to_ascii_lowercase().as_str() {
        "http" => false,
        "https" => true,
        _ => return None,
    };
    let authority = parse_authority(rest.strip_suffix('/').unwrap_or(rest))?;
    Some(Origin {
        https,
        host: authority.host,
        port: authority.port.unwrap_or(if https { 443 } else { 80 }),
    })
}

/// Whether `origin` is the origin of a request to `host`. One host and
/// port is one listener, so one scheme: the scheme counts through the
/// port. A `Host` without a port is on its scheme's default one: 443 when
/// a proxy says the request came over HTTPS, else the origin's (a proxy
/// may end TLS without saying so).
fn same_origin(origin: &Origin, host: &Authority, over_https: bool) -> bool {
    let default = if over_https || origin.https { 443 } else { 80 };
    origin.host == host.host && origin.port == host.port.unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authority(text: &str) -> Authority {
        parse_authority(text).unwrap_or_else(|| panic!("{text} parses"))
    }

    #[test]
    fn loopback_names_and_addresses_are_answered_and_other_names_only_when_configured() {
        let plain = Guard::new(None, &[]);
        for host in [
            "localhost",
            "localhost:3000",
            "LOCALHOST.:80",
            "board.localhost:3000",
            "127.0.0.1:3000",
            "127.8.9.10",
            "[::1]:3000",
            "[::1]",
            "192.168.1.20:3000",
        ] {
            assert!(plain.answers_to(&authority(host)), "{host}");
        }
        for host in [
            "evil.example:3000",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
        ] {
            assert!(!plain.answers_to(&authority(host)), "{host}");
        }
        for bad in [
            "",
            "::1",
            "a b",
            "evil.example:",
            "evil.example:99999",
            "user@host",
            "[::1]x",
        ] {
            assert!(parse_authority(bad).is_none(), "{bad}");
        }
        let public: reqwest::Url = "https://board.example/".parse().unwrap();
        let configured = Guard::new(
            Some(&public),
            &["plans.internal:8443".into(), ".corp.example".into()],
        );
        for host in [
            "board.example",
            "board.example:3000",
            "plans.internal:8443",
            "a.corp.example",
            "corp.example:1",
        ] {
            assert!(configured.answers_to(&authority(host)), "{host}");
        }
        for host in ["plans.internal:3000", "evilcorp.example", "evil.example"] {
            assert!(!configured.answers_to(&authority(host)), "{host}");
        }
    }

    #[test]
    fn an_origin_is_the_requests_own_only_with_the_same_host_and_port() {
        let host = authority("127.0.0.1:3000");
        let own = |origin: &str, https: bool| {
            parse_origin(origin).is_some_and(|o| same_origin(&o, &host, https))
        };
        assert!(own("http://127.0.0.1:3000", false));
        assert!(own("http://127.0.0.1:3000/", false));
        assert!(own("https://127.0.0.1:3000", false));
        assert!(!own("http://127.0.0.1:4000", false));
        assert!(!own("http://localhost:3000", false));
        assert!(!own("null", false));
        assert!(!own("file://", false));
        let bare = authority("board.example");
        let on_bare =
            |origin: &str| parse_origin(origin).is_some_and(|o| same_origin(&o, &bare, true));
        assert!(on_bare("https://board.example"));
        assert!(on_bare("https://board.example:443"));
        assert!(!on_bare("https://board.example:8443"));
        assert!(!on_bare("http://board.example"), "HTTPS was said: port 443");
        let unsaid =
            |origin: &str| parse_origin(origin).is_some_and(|o| same_origin(&o, &bare, false));
        assert!(unsaid("http://board.example") && unsaid("https://board.example"));
    }
}
