//! The web as work tools (seed 004's `web_search`): `fetch_url` reads one
//! page as text, `web_search` asks a search provider.
//!
//! A fetch is an outgoing request the model chose, so it is guarded like
//! one: only `http` and `https`; every address the name resolves to must be
//! public (no loopback, private, link-local, CGNAT, multicast or
//! documentation ranges) unless the operator allowed private addresses; the
//! connection goes to the address that was checked (no second lookup a
//! rebinding DNS server could answer differently); redirects are followed
//! by hand, each one checked again; the body is read up to a size limit
//! within a time limit, and only text is accepted (HTML is turned into
//! readable text by html5ever's tokenizer alone, never a tree: see
//! [`super::html`]).
//!
//! A search sends the query text, and nothing else of the run, to one
//! provider: DuckDuckGo's keyless HTML page unless the operator chose
//! SearXNG, Brave or Tavily (or none). The public providers are reached
//! through the same guard as a fetch; a provider's API key goes only in
//! its own request's header, never to a host a redirect leads to. The URLs
//! in the results are text for the model: reading one is a `fetch_url`.
//!
//! # Layout
//! - [`WebPolicy`]: the limits and whether private addresses are allowed.
//! - [`is_public`]: the address check.
//! - [`SearchProvider`], [`ApiKey`]: where `web_search` asks.
//! - [`WebTools`]: the [`ToolBox`] with `fetch_url` and, unless search is
//!   off, `web_search`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

pub use reqwest::Url;
use serde_json::{json, Value};

use crate::protocol::ToolSpec;
use crate::tools::{ToolBox, ToolError};

/// How far a fetch may go.
#[derive(Clone, Debug)]
pub struct WebPolicy {
    /// Loopback, private and link-local addresses too (an operator's choice
    /// for an intranet; tests use it for their local servers).
    pub allow_private: bool,
    /// Private addresses allowed one by one (address and port), for a
    /// service on the intranet the agent may read and nothing else.
    pub allowed: Vec<SocketAddr>,
    /// Most bytes read from one response; the rest is not downloaded.
    pub max_bytes: usize,
    /// Most characters of text handed to the model.
    pub text_cap: usize,
    /// The whole fetch, redirects included.
    pub timeout: Duration,
    pub max_redirects: u32,
}

impl Default for WebPolicy {
    fn default() -> Self {
        WebPolicy {
            allow_private: false,
            allowed: Vec::new(),
            max_bytes: 2 * 1024 * 1024,
            text_cap: 16 * 1024,
            timeout: Duration::from_secs(20),
            max_redirects: 5,
        }
    }
}

/// Whether `ip` is an address on the public internet. Everything a
/// request could use to reach this machine or its network is not.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = v6.segments();
            // NAT64 (64:ff9b::/96) carries an IPv4 address in its tail.
            if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
                let [a, b] = s[6].to_be_bytes();
                let [c, d] = s[7].to_be_bytes();
                return is_public_v4(Ipv4Addr::new(a, b, c, d));
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || v6 == Ipv6Addr::from([0, 0, 0, 0, 0, 0, 0, 1]))
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || a >= 240) // reserved
}

/// A search provider's API key. It goes in its provider's request header
/// and nowhere else: its `Debug` is redacted, and no message shows it.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into().trim().to_string())
    }

    /// The key as a header value, marked sensitive (hyper keeps it out of
    /// its own debug output).
    fn header(&self, prefix: &str) -> Result<reqwest::header::HeaderValue, ToolError> {
        let mut value = reqwest::header::HeaderValue::from_str(&format!("{prefix}{}", self.0))
            .map_err(|_| {
                ToolError::refused("the search provider's API key is not a valid header value")
            })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Where `web_search` asks. The base URLs are the providers' own; they are
/// fields only so that tests can point them at a local fake (the server
/// has no setting for them).
#[derive(Clone)]
pub enum SearchProvider {
    /// No `web_search`.
    Off,
    /// DuckDuckGo's HTML results page (`…/html/?q=`), which needs no key.
    DuckDuckGo { base: Url },
    /// The operator's SearXNG-compatible endpoint (`…/search`), answering
    /// `?q=…&format=json` with `{"results": [{title, url, content}]}`.
    SearXng { url: Url },
    /// Brave's web search API (`X-Subscription-Token`).
    Brave { key: ApiKey, base: Url },
    /// Tavily's search API (`Authorization: Bearer`).
    Tavily { key: ApiKey, base: Url },
}

impl SearchProvider {
    pub const DUCKDUCKGO_URL: &'static str = "https://html.duckduckgo.com/html/";
    pub const BRAVE_URL: &'static str = "https://api.search.brave.com/res/v1/web/search";
    pub const TAVILY_URL: &'static str = "https://api.tavily.com/search";

    pub fn duckduckgo() -> SearchProvider {
        SearchProvider::DuckDuckGo {
            base: Url::parse(Self::DUCKDUCKGO_URL).expect("a URL"),
        }
    }

    pub fn brave(key: ApiKey) -> SearchProvider {
        SearchProvider::Brave {
            key,
            base: Url::parse(Self::BRAVE_URL).expect("a URL"),
        }
    }

    pub fn tavily(key: ApiKey) -> SearchProvider {
        SearchProvider::Tavily {
            key,
            base: Url::parse(Self::TAVILY_URL).expect("a URL"),
        }
    }

    /// The provider's name, as the model and the logs see it.
    pub fn name(&self) -> &'static str {
        match self {
            SearchProvider::Off => "none",
            SearchProvider::DuckDuckGo { .. } => "DuckDuckGo",
            SearchProvider::SearXng { .. } => "SearXNG",
            SearchProvider::Brave { .. } => "Brave",
            SearchProvider::Tavily { .. } => "Tavily",
        }
    }
}

/// DuckDuckGo, which needs nothing configured.
impl Default for SearchProvider {
    fn default() -> SearchProvider {
        SearchProvider::duckduckgo()
    }
}

/// Keys redacted, and a password in SearXNG's URL too.
impl std::fmt::Debug for SearchProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SearchProvider::Off => f.write_str("Off"),
            SearchProvider::DuckDuckGo { base } => f
                .debug_struct("DuckDuckGo")
                .field("base", &base.as_str())
                .finish(),
            SearchProvider::SearXng { url } => {
                let mut shown = url.clone();
                if shown.password().is_some() {
                    let _ = shown.set_password(Some("<redacted>"));
                }
                f.debug_struct("SearXng")
                    .field("url", &shown.as_str())
                    .finish()
            }
            SearchProvider::Brave { key, base } => f
                .debug_struct("Brave")
                .field("key", key)
                .field("base", &base.as_str())
                .finish(),
            SearchProvider::Tavily { key, base } => f
                .debug_struct("Tavily")
                .field("key", key)
                .field("base", &base.as_str())
                .finish(),
        }
    }
}

/// One request through the guard: the method, headers every hop gets, a
/// credential only the first origin gets, and a JSON body.
struct Outgoing {
    method: reqwest::Method,
    headers: reqwest::header::HeaderMap,
    credential: Option<(reqwest::header::HeaderName, reqwest::header::HeaderValue)>,
    body: Option<Vec<u8>>,
    user_agent: &'static str,
}

impl Outgoing {
    fn get(user_agent: &'static str) -> Outgoing {
        Outgoing {
            method: reqwest::Method::GET,
            headers: reqwest::header::HeaderMap::new(),
            credential: None,
            body: None,
            user_agent,
        }
    }
}

/// One search result.
struct Hit {
    title: String,
    url: String,
    snippet: String,
}

/// The names of the tools that reach the web.
pub const WEB_TOOLS: [&str; 2] = ["fetch_url", "web_search"];

/// `fetch_url` and `web_search`.
pub struct WebTools {
    policy: WebPolicy,
    search: SearchProvider,
}

impl WebTools {
    pub fn new(policy: WebPolicy, search: SearchProvider) -> WebTools {
        WebTools { policy, search }
    }

    /// The addresses `url` may be fetched from, or why not.
    async fn addresses(&self, url: &Url) -> Result<Vec<SocketAddr>, ToolError> {
        let host = url
            .host_str()
            .ok_or_else(|| ToolError::refused(format!("{url} has no host")))?;
        let port = url
            .port_or_known_default()
            .ok_or_else(|| ToolError::refused(format!("{url} has no port")))?;
        // `[::1]` arrives with its brackets.
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((bare, port))
                .await
                .map_err(|e| ToolError {
                    message: format!("cannot resolve {host}: {e}"),
                    retryable: true,
                })?
                .collect(),
        };
        if addrs.is_empty() {
            return Err(ToolError::refused(format!("{host} has no address")));
        }
        if !self.policy.allow_private {
            if let Some(private) = addrs
                .iter()
                .find(|a| !is_public(a.ip()) && !self.policy.allowed.contains(a))
            {
                return Err(ToolError::refused(format!(
                    "{host} resolves to {}, a private, loopback or link-local address; \
                     fetching it is not allowed",
                    private.ip()
                )));
            }
        }
        Ok(addrs)
    }

    /// One request to `url` from the addresses that were checked,
    /// redirects not followed; the credential only when `credentialed`.
    async fn send_once(
        &self,
        url: &Url,
        out: &Outgoing,
        credentialed: bool,
    ) -> Result<reqwest::Response, ToolError> {
        let addrs = self.addresses(url).await?;
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(out.user_agent)
            .connect_timeout(Duration::from_secs(10));
        if let Some(host) = url.host_str() {
            if host.parse::<IpAddr>().is_err() {
                builder = builder.resolve_to_addrs(host, &addrs);
            }
        }
        let client = builder
            .build()
            .map_err(|e| ToolError::refused(format!("cannot make an HTTP client: {e}")))?;
        let mut request = client
            .request(out.method.clone(), url.clone())
            .headers(out.headers.clone());
        if let (true, Some((name, value))) = (credentialed, &out.credential) {
            request = request.header(name.clone(), value.clone());
        }
        if let Some(body) = &out.body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
        }
        // The error without its URL: the URL is named here, once.
        request.send().await.map_err(|e| ToolError {
            retryable: e.is_timeout() || e.is_connect(),
            message: format!("fetching {url} failed: {}", e.without_url()),
        })
    }

    /// `out` sent to `url` through the guard, redirects followed by hand and
    /// each checked again; the answer and the URL that gave it.
    async fn send_guarded(
        &self,
        mut url: Url,
        mut out: Outgoing,
    ) -> Result<(Url, reqwest::Response), ToolError> {
        let origin = url.origin();
        let mut redirects = 0;
        loop {
            if !matches!(url.scheme(), "http" | "https") {
                return Err(ToolError::refused(format!(
                    "only http and https URLs can be fetched, not {}",
                    url.scheme()
                )));
            }
            // A key is for its provider: a redirect elsewhere goes without it.
            let response = self.send_once(&url, &out, url.origin() == origin).await?;
            let status = response.status();
            if !status.is_redirection() {
                return Ok((url, response));
            }
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| ToolError::refused(format!("{url} redirected nowhere")))?;
            let next = url.join(location).map_err(|e| {
                ToolError::refused(format!("{url} redirected to {location:?}: {e}"))
            })?;
            redirects += 1;
            if redirects > self.policy.max_redirects {
                return Err(ToolError::refused(format!(
                    "more than {} redirects, the last to {next}",
                    self.policy.max_redirects
                )));
            }
            // As browsers do: 303, and 301 or 302 after a POST, go on as a
            // GET without the body.
            if status == reqwest::StatusCode::SEE_OTHER
                || (out.method == reqwest::Method::POST
                    && matches!(
                        status,
                        reqwest::StatusCode::MOVED_PERMANENTLY | reqwest::StatusCode::FOUND
                    ))
            {
                out.method = reqwest::Method::GET;
                out.body = None;
            }
            url = next;
        }
    }

    async fn fetch(&self, raw: &str) -> Result<String, ToolError> {
        let url = Url::parse(raw.trim())
            .map_err(|e| ToolError::refused(format!("{raw:?} is not a URL: {e}")))?;
        let (url, response) = self
            .send_guarded(url, Outgoing::get("planboard-agent/0.1 (fetch_url)"))
            .await?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|c| c.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let kind = TextKind::of(&content_type).ok_or_else(|| {
            ToolError::refused(format!(
                "{url} is {content_type:?}, not text; only HTML, plain text, JSON, XML and CSV are read"
            ))
        })?;
        let (bytes, cut) = read_capped(response, self.policy.max_bytes).await?;
        let text = match kind {
            // The tokenizer only: bounded whatever the markup (`html`).
            TextKind::Html => super::html::to_text(
                &String::from_utf8_lossy(&bytes),
                Some(&url),
                self.policy.text_cap.saturating_add(1_000),
            ),
            TextKind::Plain => String::from_utf8_lossy(&bytes).into_owned(),
        };
        let mut out = format!("{status} {url}\n\n");
        out.push_str(&cut_chars(&text, self.policy.text_cap));
        if cut {
            out.push_str(&format!(
                "\n… (the page is larger than {} bytes; the rest was not read)",
                self.policy.max_bytes
            ));
        }
        if !status.is_success() {
            return Err(ToolError {
                message: out,
                retryable: status.is_server_error(),
            });
        }
        Ok(out)
    }

    async fn search(&self, query: &str) -> Result<String, ToolError> {
        let query = query.trim();
        if query.is_empty() {
            return Err(ToolError::refused("the query is empty"));
        }
        let name = self.search.name();
        let hits = match &self.search {
            SearchProvider::Off => {
                return Err(ToolError::refused("no search provider is configured"))
            }
            SearchProvider::DuckDuckGo { base } => {
                let mut url = base.clone();
                url.query_pairs_mut().append_pair("q", query);
                let mut out = Outgoing::get(SEARCH_AGENT);
                out.headers.insert(
                    reqwest::header::ACCEPT,
                    reqwest::header::HeaderValue::from_static("text/html"),
                );
                let (page, response) = self.send_guarded(url, out).await?;
                let status = response.status();
                let response = answered(name, response)?;
                let (bytes, _) = read_capped(response, self.policy.max_bytes).await?;
                let hits = duckduckgo_hits(&String::from_utf8_lossy(&bytes), &page);
                // 202 is its answer to a search it takes for a robot's.
                if hits.is_empty() && status != reqwest::StatusCode::OK {
                    return Err(ToolError::refused(format!(
                        "DuckDuckGo answered {status} without results: it limits automated \
                         searches; try again later, or read a page you know with fetch_url"
                    )));
                }
                hits
            }
            SearchProvider::SearXng { url: endpoint } => {
                let mut url = endpoint.clone();
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("format", "json");
                // Not through the guard: the operator chose this endpoint,
                // and it may well be on the intranet (the model chooses
                // only the query). Its results' URLs are text; reading one
                // is a fetch_url, guarded.
                let client = reqwest::Client::builder()
                    .timeout(self.policy.timeout)
                    .build()
                    .map_err(|e| ToolError::refused(format!("cannot make an HTTP client: {e}")))?;
                let response = client.get(url).send().await.map_err(|e| ToolError {
                    message: format!("SearXNG did not answer: {}", e.without_url()),
                    retryable: true,
                })?;
                let body = self.json_answer(name, response).await?;
                json_hits(&body, &["results"], "content", false)
            }
            SearchProvider::Brave { key, base } => {
                let mut url = base.clone();
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("count", &SEARCH_RESULTS.to_string());
                let mut out = Outgoing::get(SEARCH_AGENT);
                out.headers.insert(
                    reqwest::header::ACCEPT,
                    reqwest::header::HeaderValue::from_static("application/json"),
                );
                out.credential = Some((
                    reqwest::header::HeaderName::from_static("x-subscription-token"),
                    key.header("")?,
                ));
                let (_, response) = self.send_guarded(url, out).await?;
                let body = self.json_answer(name, response).await?;
                // Brave marks the query's words in its descriptions.
                json_hits(&body, &["web", "results"], "description", true)
            }
            SearchProvider::Tavily { key, base } => {
                let mut out = Outgoing::get(SEARCH_AGENT);
                out.method = reqwest::Method::POST;
                out.headers.insert(
                    reqwest::header::ACCEPT,
                    reqwest::header::HeaderValue::from_static("application/json"),
                );
                out.credential = Some((reqwest::header::AUTHORIZATION, key.header("Bearer ")?));
                out.body = Some(
                    serde_json::to_vec(&json!({"query": query, "max_results": SEARCH_RESULTS}))
                        .map_err(|e| ToolError::refused(format!("cannot write the query: {e}")))?,
                );
                let (_, response) = self.send_guarded(base.clone(), out).await?;
                let body = self.json_answer(name, response).await?;
                json_hits(&body, &["results"], "content", false)
            }
        };
        if hits.is_empty() {
            return Ok(format!("no results for {query:?} ({name})"));
        }
        let lines: Vec<String> = hits
            .iter()
            .take(SEARCH_RESULTS)
            .enumerate()
            .map(|(i, hit)| {
                let mut line = format!("{}. {}\n   {}", i + 1, cut_chars(&hit.title, 200), hit.url);
                if !hit.snippet.is_empty() {
                    line.push_str(&format!("\n   {}", cut_chars(&hit.snippet, 400)));
                }
                line
            })
            .collect();
        Ok(lines.join("\n"))
    }

    /// A provider's successful answer read as JSON.
    async fn json_answer(
        &self,
        name: &str,
        response: reqwest::Response,
    ) -> Result<Value, ToolError> {
        let response = answered(name, response)?;
        let (bytes, _) = read_capped(response, self.policy.max_bytes).await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| ToolError::refused(format!("{name}'s answer is not JSON: {e}")))
    }
}

/// Results `web_search` shows the model.
const SEARCH_RESULTS: usize = 8;

/// The user agent of a search request.
const SEARCH_AGENT: &str = "Mozilla/5.0 (compatible; planboard-agent/0.1; web_search)";

/// `response` if it succeeded, else what its status means (the body, which
/// may echo the request, is not shown).
fn answered(name: &str, response: reqwest::Response) -> Result<reqwest::Response, ToolError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let why = match status.as_u16() {
        401 | 403 => ": the operator's API key or access was refused",
        429 => ": too many searches; try again later",
        _ => "",
    };
    Err(ToolError {
        message: format!("{name} answered {status}{why}"),
        retryable: status.is_server_error() || status.as_u16() == 429,
    })
}

/// The results of a JSON answer: the list at `path`, each with a `title`,
/// a `url` and a snippet in the field `snippet` (marked up when `html`).
fn json_hits(body: &Value, path: &[&str], snippet: &str, html: bool) -> Vec<Hit> {
    let mut list = body;
    for key in path {
        list = list.get(key).unwrap_or(&Value::Null);
    }
    let field = |r: &Value, name: &str| -> String {
        let text = r.get(name).and_then(Value::as_str).unwrap_or_default();
        if html {
            plain_text(text)
        } else {
            text.trim().to_string()
        }
    };
    list.as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|r| Hit {
            title: field(r, "title"),
            url: r
                .get("url")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_string(),
            snippet: field(r, snippet),
        })
        .filter(|hit| !hit.url.is_empty())
        .collect()
}

/// The text of an HTML fragment, its white space collapsed.
fn plain_text(html: &str) -> String {
    super::html::fragment_text(html)
}

/// The results on DuckDuckGo's HTML page: each `a.result__a` is a title
/// whose link goes through DuckDuckGo (`//duckduckgo.com/l/?uddg=<target>`),
/// its snippet the `.result__snippet` in the same `.result`; ads are left
/// out.
fn duckduckgo_hits(html: &str, page: &Url) -> Vec<Hit> {
    super::html::duckduckgo_hits(html)
        .into_iter()
        .filter(|hit| !hit.ad)
        .filter_map(|hit| {
            Some(Hit {
                url: duckduckgo_target(&hit.href, page)?,
                title: hit.title,
                snippet: hit.snippet,
            })
        })
        .collect()
}

/// Where a DuckDuckGo result link leads: the `uddg` parameter of its
/// `/l/` redirect, or the link itself; `None` for an ad's link or anything
/// not http(s).
fn duckduckgo_target(href: &str, page: &Url) -> Option<String> {
    let link = page.join(href.trim()).ok()?;
    let ours = link.host_str().is_some_and(|h| {
        h == "duckduckgo.com" || h.ends_with(".duckduckgo.com") || Some(h) == page.host_str()
    });
    let target = if ours && link.path() == "/l/" {
        let (_, uddg) = link.query_pairs().find(|(k, _)| k == "uddg")?;
        Url::parse(&uddg).ok()?
    } else if ours && link.path().starts_with("/y.js") {
        return None;
    } else {
        link
    };
    matches!(target.scheme(), "http" | "https").then(|| target.to_string())
}

enum TextKind {
    Html,
    Plain,
}

impl TextKind {
    fn of(content_type: &str) -> Option<TextKind> {
        let mime = content_type.split(';').next().unwrap_or("").trim();
        match mime {
            "text/html" | "application/xhtml+xml" => Some(TextKind::Html),
            "" => Some(TextKind::Plain),
            m if m.starts_with("text/")
                || m == "application/json"
                || m.ends_with("+json")
                || m == "application/xml"
                || m.ends_with("+xml") =>
            {
                Some(TextKind::Plain)
            }
            _ => None,
        }
    }
}

/// The body up to `max` bytes, and whether there was more.
async fn read_capped(
    mut response: reqwest::Response,
    max: usize,
) -> Result<(Vec<u8>, bool), ToolError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| ToolError {
        message: format!("the body could not be read: {e}"),
        retryable: true,
    })? {
        let room = max - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok((bytes, true));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok((bytes, false))
}

fn cut_chars(text: &str, max: usize) -> String {
    let kept = plan_engine::text::prefix(text, max);
    if kept.len() == text.len() {
        return text.to_string();
    }
    format!("{kept}\n… (cut at {max} characters)")
}

#[async_trait::async_trait]
impl ToolBox for WebTools {
    fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = vec![ToolSpec {
            name: "fetch_url".into(),
            description: "Fetches a web page (http or https) and returns it as readable text."
                .into(),
            parameters: json!({"type": "object", "properties": {
                "url": {"type": "string", "maxLength": 2000},
            }, "required": ["url"]}),
        }];
        if !matches!(self.search, SearchProvider::Off) {
            specs.push(ToolSpec {
                name: "web_search".into(),
                description: format!(
                    "Searches the web through {} (only the query is sent). Returns up to \
                     {SEARCH_RESULTS} results, each a title, its URL and a short snippet; \
                     read a result with fetch_url.",
                    self.search.name()
                ),
                parameters: json!({"type": "object", "properties": {
                    "query": {"type": "string", "maxLength": 300},
                }, "required": ["query"]}),
            });
        }
        specs
    }

    async fn call(&self, name: &str, arguments: &Value) -> Result<String, ToolError> {
        let arg = |key: &str| {
            arguments.get(key).and_then(Value::as_str).ok_or_else(|| {
                ToolError::refused(format!("the argument {key} (a string) is missing"))
            })
        };
        let work = async {
            match name {
                "fetch_url" => self.fetch(arg("url")?).await,
                "web_search" => self.search(arg("query")?).await,
                other => Err(ToolError::refused(format!(
                    "there is no web tool named {other}"
                ))),
            }
        };
        tokio::time::timeout(self.policy.timeout, work)
            .await
            .unwrap_or_else(|_| {
                Err(ToolError {
                    message: format!(
                        "{name} took longer than {} s and was stopped",
                        self.policy.timeout.as_secs()
                    ),
                    retryable: true,
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// What a fake server was sent.
    struct Request {
        method: String,
        path: String,
        /// Names in lower case.
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    }

    impl Request {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        }
    }

    type Reply = (String, String, String, Vec<u8>);

    /// A one-route HTTP server on loopback answering every request with
    /// `respond(path)`: (status line, content type, extra headers, body).
    async fn serve(respond: impl Fn(&str) -> Reply + Send + Sync + 'static) -> SocketAddr {
        serve_requests(move |request| respond(&request.path)).await
    }

    /// [`serve`] with the whole request (head and body) for `respond`.
    async fn serve_requests(
        respond: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let respond = std::sync::Arc::new(respond);
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let respond = respond.clone();
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut socket).await else {
                        return;
                    };
                    let (status, content_type, headers, body) = respond(&request);
                    let head = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{headers}connection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(&body).await;
                });
            }
        });
        addr
    }

    /// One request: its head up to the blank line, then `content-length`
    /// bytes of body.
    async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Request> {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = socket.read(&mut chunk).await.ok()?;
            if n == 0 || buf.len() > 64 * 1024 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let mut lines = head.lines();
        let mut first = lines.next()?.split_whitespace();
        let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            let n = socket.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Some(Request {
            method,
            path,
            headers,
            body: buf[head_end..head_end + length].to_vec(),
        })
    }

    fn open() -> WebPolicy {
        WebPolicy {
            allow_private: true,
            ..WebPolicy::default()
        }
    }

    #[test]
    fn private_loopback_and_link_local_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "::",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "224.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip} must not be public");
        }
        for ip in ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"] {
            assert!(is_public(ip.parse().unwrap()), "{ip} is public");
        }
    }

    #[tokio::test]
    async fn a_page_is_fetched_as_readable_text() {
        let addr = serve(|_| {
            (
                "200 OK".into(),
                "text/html; charset=utf-8".into(),
                String::new(),
                b"<html><head><script>var x=1;</script></head><body><h1>Prices</h1><p>Apples cost <b>3</b> coins.</p></body></html>".to_vec(),
            )
        })
        .await;
        let tools = WebTools::new(open(), SearchProvider::Off);
        let text = tools
            .call("fetch_url", &json!({"url": format!("http://{addr}/page")}))
            .await
            .unwrap();
        assert!(text.contains("Prices"), "{text}");
        assert!(text.contains("Apples cost"), "{text}");
        assert!(!text.contains("<b>"), "markup is gone: {text}");
    }

    #[tokio::test]
    async fn loopback_is_refused_unless_the_operator_allows_it() {
        let addr = serve(|_| {
            (
                "200 OK".into(),
                "text/plain".into(),
                String::new(),
                b"secret".to_vec(),
            )
        })
        .await;
        let tools = WebTools::new(WebPolicy::default(), SearchProvider::Off);
        for url in [
            format!("http://{addr}/"),
            format!("http://localhost:{}/", addr.port()),
            "http://169.254.169.254/latest/meta-data/".to_string(),
            "http://[::1]/".to_string(),
        ] {
            let e = tools
                .call("fetch_url", &json!({ "url": url }))
                .await
                .unwrap_err();
            assert!(e.message.contains("not allowed"), "{url}: {e}");
            assert!(!e.message.contains("secret"));
        }
        let e = tools
            .call("fetch_url", &json!({"url": "file:///etc/passwd"}))
            .await
            .unwrap_err();
        assert!(e.message.contains("only http and https"), "{e}");
    }

    #[tokio::test]
    async fn a_redirect_is_checked_again() {
        // A redirect to another scheme, and a redirect loop.
        let addr = serve(|path| match path {
            "/away" => (
                "302 Found".into(),
                "text/plain".into(),
                "location: file:///etc/passwd\r\n".into(),
                Vec::new(),
            ),
            "/loop" => (
                "302 Found".into(),
                "text/plain".into(),
                "location: /loop\r\n".into(),
                Vec::new(),
            ),
            _ => (
                "302 Found".into(),
                "text/plain".into(),
                "location: /final\r\n".into(),
                Vec::new(),
            ),
        })
        .await;
        let tools = WebTools::new(open(), SearchProvider::Off);
        let e = tools
            .call("fetch_url", &json!({"url": format!("http://{addr}/away")}))
            .await
            .unwrap_err();
        assert!(e.message.contains("only http and https"), "{e}");
        let e = tools
            .call("fetch_url", &json!({"url": format!("http://{addr}/loop")}))
            .await
            .unwrap_err();
        assert!(e.message.contains("more than 5 redirects"), "{e}");
        // Only the first server is allowed: its redirect to another
        // loopback server is checked again and refused.
        let other = serve(|_| {
            (
                "200 OK".into(),
                "text/plain".into(),
                String::new(),
                b"inside".to_vec(),
            )
        })
        .await;
        let hop = serve(move |_| {
            (
                "302 Found".into(),
                "text/plain".into(),
                format!("location: http://{other}/\r\n"),
                Vec::new(),
            )
        })
        .await;
        let strict = WebTools::new(
            WebPolicy {
                allowed: vec![hop],
                ..WebPolicy::default()
            },
            SearchProvider::Off,
        );
        let e = strict
            .call("fetch_url", &json!({"url": format!("http://{hop}/start")}))
            .await
            .unwrap_err();
        assert!(e.message.contains("not allowed"), "{e}");
        assert!(!e.message.contains("inside"));
        // With both allowed, the same redirect is followed.
        let both = WebTools::new(
            WebPolicy {
                allowed: vec![hop, other],
                ..WebPolicy::default()
            },
            SearchProvider::Off,
        );
        let text = both
            .call("fetch_url", &json!({"url": format!("http://{hop}/start")}))
            .await
            .unwrap();
        assert!(text.contains("inside"), "{text}");
    }

    #[tokio::test]
    async fn binary_content_and_oversized_bodies_are_handled() {
        let addr = serve(|path| match path {
            "/image" => (
                "200 OK".into(),
                "image/png".into(),
                String::new(),
                vec![0x89, b'P', b'N', b'G'],
            ),
            _ => (
                "200 OK".into(),
                "text/plain".into(),
                String::new(),
                vec![b'a'; 300_000],
            ),
        })
        .await;
        let tools = WebTools::new(
            WebPolicy {
                max_bytes: 100_000,
                text_cap: 1_000,
                ..open()
            },
            SearchProvider::Off,
        );
        let e = tools
            .call("fetch_url", &json!({"url": format!("http://{addr}/image")}))
            .await
            .unwrap_err();
        assert!(e.message.contains("not text"), "{e}");
        let text = tools
            .call("fetch_url", &json!({"url": format!("http://{addr}/big")}))
            .await
            .unwrap();
        assert!(text.contains("cut at 1000 characters"), "{text}");
        assert!(text.contains("larger than 100000 bytes"), "{text}");
        assert!(text.len() < 2_000);
    }

    #[tokio::test]
    async fn search_is_offered_only_with_an_endpoint_and_lists_results() {
        let without = WebTools::new(WebPolicy::default(), SearchProvider::Off);
        assert!(without.specs().iter().all(|s| s.name != "web_search"));
        let addr = serve(|path| {
            assert!(
                path.contains("q=rust+async") && path.contains("format=json"),
                "{path}"
            );
            (
                "200 OK".into(),
                "application/json".into(),
                String::new(),
                serde_json::to_vec(&json!({"results": [
                    {"title": "Async Rust", "url": "https://example.org/a", "content": "A book."},
                    {"title": "Tokio", "url": "https://tokio.rs", "content": "A runtime."},
                ]}))
                .unwrap(),
            )
        })
        .await;
        let endpoint = Url::parse(&format!("http://{addr}/search")).unwrap();
        let tools = WebTools::new(
            WebPolicy::default(),
            SearchProvider::SearXng { url: endpoint },
        );
        assert!(tools.specs().iter().any(|s| s.name == "web_search"));
        let text = tools
            .call("web_search", &json!({"query": "rust async"}))
            .await
            .unwrap();
        assert!(text.starts_with("1. Async Rust"), "{text}");
        assert!(text.contains("https://tokio.rs"), "{text}");
    }

    /// A results page shaped like DuckDuckGo's HTML one: an ad, then
    /// `count` results (the first's link through DuckDuckGo, the rest
    /// direct).
    fn duckduckgo_page(count: usize) -> Vec<u8> {
        let mut page = String::from(
            r#"<html><body><div id="links" class="results">
            <div class="result results_links result--ad">
              <div class="links_main result__body">
                <h2 class="result__title"><a class="result__a" href="https://duckduckgo.com/y.js?ad_domain=shop.example&amp;u3=x">Buy Rust now</a></h2>
                <a class="result__snippet" href="https://duckduckgo.com/y.js?u3=x">An ad.</a>
              </div>
            </div>
            <div class="result results_links results_links_deep web-result">
              <div class="links_main links_deep result__body">
                <h2 class="result__title">
                  <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust%2Dlang.org%2Flearn%3Fx%3D1%26y%3D2&amp;rut=abc123">The <b>Rust</b> Programming   Language</a>
                </h2>
                <div class="result__extras"><a class="result__url" href="//duckduckgo.com/l/?uddg=x">www.rust-lang.org</a></div>
                <a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">A language empowering <b>everyone</b> to build reliable &amp; efficient software.</a>
              </div>
            </div>"#,
        );
        for i in 2..=count {
            page.push_str(&format!(
                r#"<div class="result results_links web-result"><div class="links_main result__body">
                <h2 class="result__title"><a class="result__a" href="https://example.org/page{i}">Page {i}</a></h2>
                <a class="result__snippet" href="https://example.org/page{i}">Snippet {i}.</a>
                </div></div>"#
            ));
        }
        page.push_str("</div></body></html>");
        page.into_bytes()
    }

    fn duckduckgo_at(addr: SocketAddr) -> SearchProvider {
        SearchProvider::DuckDuckGo {
            base: Url::parse(&format!("http://{addr}/html/")).unwrap(),
        }
    }

    /// Only `allowed` may be reached; everything else private is refused.
    fn only(allowed: &[SocketAddr]) -> WebPolicy {
        WebPolicy {
            allowed: allowed.to_vec(),
            ..WebPolicy::default()
        }
    }

    #[tokio::test]
    async fn duckduckgo_needs_no_key_and_its_page_is_read_into_results() {
        let addr = serve(|path| {
            assert!(path.starts_with("/html/?q=rust+%26+async"), "{path}");
            (
                "200 OK".into(),
                "text/html; charset=utf-8".into(),
                String::new(),
                duckduckgo_page(10),
            )
        })
        .await;
        let tools = WebTools::new(only(&[addr]), duckduckgo_at(addr));
        let spec = tools
            .specs()
            .into_iter()
            .find(|s| s.name == "web_search")
            .expect("web_search is offered");
        assert!(
            spec.description.contains("DuckDuckGo"),
            "{}",
            spec.description
        );
        let text = tools
            .call("web_search", &json!({"query": " rust & async "}))
            .await
            .unwrap();
        assert!(
            text.starts_with(
                "1. The Rust Programming Language\n   https://www.rust-lang.org/learn?x=1&y=2\n   \
                 A language empowering everyone to build reliable & efficient software.\n\
                 2. Page 2\n   https://example.org/page2\n   Snippet 2."
            ),
            "{text}"
        );
        assert!(!text.contains("Buy Rust"), "the ad is left out: {text}");
        assert!(!text.contains("duckduckgo.com"), "{text}");
        assert!(text.contains("\n8. Page 8\n"), "{text}");
        assert!(!text.contains("9. "), "8 results at most: {text}");
    }

    #[tokio::test]
    async fn duckduckgo_refusing_a_robot_is_said_so() {
        let addr = serve(|_| {
            (
                "202 Accepted".into(),
                "text/html".into(),
                String::new(),
                b"<html><body><form id=\"challenge-form\"></form></body></html>".to_vec(),
            )
        })
        .await;
        let tools = WebTools::new(only(&[addr]), duckduckgo_at(addr));
        let e = tools
            .call("web_search", &json!({"query": "rust"}))
            .await
            .unwrap_err();
        assert!(e.message.contains("limits automated searches"), "{e}");
    }

    #[tokio::test]
    async fn brave_gets_its_key_in_its_header_and_its_results_are_read() {
        let addr = serve_requests(|request| {
            if request.header("x-subscription-token") != Some("BSA-brave-key-123") {
                return (
                    "401 Unauthorized".into(),
                    "application/json".into(),
                    String::new(),
                    br#"{"error": "bad key"}"#.to_vec(),
                );
            }
            assert_eq!(request.method, "GET");
            assert!(
                request.path.starts_with("/res/v1/web/search?q=tokio+runtime&count=8"),
                "{}",
                request.path
            );
            (
                "200 OK".into(),
                "application/json".into(),
                String::new(),
                serde_json::to_vec(&json!({"type": "search", "web": {"results": [
                    {"title": "Tokio", "url": "https://tokio.rs/",
                     "description": "An asynchronous <strong>runtime</strong> for Rust &amp; more."},
                    {"title": "Docs", "url": "https://docs.rs/tokio", "description": "API docs."},
                ]}}))
                .unwrap(),
            )
        })
        .await;
        let base = Url::parse(&format!("http://{addr}/res/v1/web/search")).unwrap();
        let provider = |key: &str| SearchProvider::Brave {
            key: ApiKey::new(key),
            base: base.clone(),
        };
        let tools = WebTools::new(only(&[addr]), provider("BSA-brave-key-123"));
        let text = tools
            .call("web_search", &json!({"query": "tokio runtime"}))
            .await
            .unwrap();
        assert_eq!(
            text,
            "1. Tokio\n   https://tokio.rs/\n   An asynchronous runtime for Rust & more.\n\
             2. Docs\n   https://docs.rs/tokio\n   API docs."
        );
        // A refused key is named as such, and not shown.
        let wrong = WebTools::new(only(&[addr]), provider("BSA-wrong-key-456"));
        let e = wrong
            .call("web_search", &json!({"query": "tokio runtime"}))
            .await
            .unwrap_err();
        assert!(e.message.contains("Brave answered 401"), "{e}");
        assert!(!e.message.contains("BSA-wrong-key-456"), "{e}");
        let shown = format!("{:?}", provider("BSA-brave-key-123"));
        assert!(!shown.contains("BSA-brave-key-123"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[tokio::test]
    async fn tavily_gets_a_bearer_key_and_the_query_as_json() {
        let addr = serve_requests(|request| {
            assert_eq!(request.method, "POST");
            assert_eq!(request.path, "/search");
            assert_eq!(request.header("authorization"), Some("Bearer tvly-key-789"));
            assert!(
                request
                    .header("content-type")
                    .is_some_and(|c| c.starts_with("application/json")),
                "{:?}",
                request.headers
            );
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            assert_eq!(body, json!({"query": "plan managers", "max_results": 8}));
            (
                "200 OK".into(),
                "application/json".into(),
                String::new(),
                serde_json::to_vec(&json!({"query": "plan managers", "results": [
                    {"title": "Planboard", "url": "https://example.org/planboard",
                     "content": "Plans for agents.", "score": 0.9},
                ]}))
                .unwrap(),
            )
        })
        .await;
        let tools = WebTools::new(
            only(&[addr]),
            SearchProvider::Tavily {
                key: ApiKey::new("tvly-key-789"),
                base: Url::parse(&format!("http://{addr}/search")).unwrap(),
            },
        );
        let text = tools
            .call("web_search", &json!({"query": "plan managers"}))
            .await
            .unwrap();
        assert_eq!(
            text,
            "1. Planboard\n   https://example.org/planboard\n   Plans for agents."
        );
    }

    #[tokio::test]
    async fn a_public_provider_on_a_private_address_is_refused() {
        // Each fake answers like its provider would, and counts requests:
        // only the guard stands between the tool and the answer.
        let reached = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = reached.clone();
        let addr = serve(move |path| {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if path.starts_with("/html/") {
                (
                    "200 OK".into(),
                    "text/html".into(),
                    String::new(),
                    duckduckgo_page(2),
                )
            } else {
                (
                    "200 OK".into(),
                    "application/json".into(),
                    String::new(),
                    serde_json::to_vec(&json!({
                        "web": {"results": [{"title": "inside", "url": "http://inside/"}]},
                        "results": [{"title": "inside", "url": "http://inside/"}],
                    }))
                    .unwrap(),
                )
            }
        })
        .await;
        for host in [addr.to_string(), format!("localhost:{}", addr.port())] {
            let providers = [
                SearchProvider::DuckDuckGo {
                    base: Url::parse(&format!("http://{host}/html/")).unwrap(),
                },
                SearchProvider::Brave {
                    key: ApiKey::new("k"),
                    base: Url::parse(&format!("http://{host}/brave")).unwrap(),
                },
                SearchProvider::Tavily {
                    key: ApiKey::new("k"),
                    base: Url::parse(&format!("http://{host}/tavily")).unwrap(),
                },
            ];
            for provider in providers {
                let name = provider.name();
                let tools = WebTools::new(WebPolicy::default(), provider);
                let e = tools
                    .call("web_search", &json!({"query": "anything"}))
                    .await
                    .unwrap_err();
                assert!(e.message.contains("not allowed"), "{name} at {host}: {e}");
            }
        }
        assert_eq!(reached.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_providers_redirect_is_checked_again_and_its_key_stays_behind() {
        // The redirect's target answers with results and notes any key.
        let keys = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let noted = keys.clone();
        let inside = serve_requests(move |request| {
            let mut noted = noted.lock().unwrap();
            for name in ["x-subscription-token", "authorization"] {
                if let Some(key) = request.header(name) {
                    noted.push(key.to_string());
                }
            }
            let body = if request.path.starts_with("/html/") {
                duckduckgo_page(2)
            } else {
                serde_json::to_vec(&json!({"web": {"results": [
                    {"title": "inside", "url": "http://inside/", "description": "private"},
                ]}}))
                .unwrap()
            };
            ("200 OK".into(), "text/html".into(), String::new(), body)
        })
        .await;
        let provider = serve(move |path| {
            (
                "302 Found".into(),
                "text/plain".into(),
                format!("location: http://{inside}{path}\r\n"),
                Vec::new(),
            )
        })
        .await;
        let brave = || SearchProvider::Brave {
            key: ApiKey::new("BSA-secret"),
            base: Url::parse(&format!("http://{provider}/brave")).unwrap(),
        };
        // The provider is allowed, the address it redirects to is not.
        for search in [duckduckgo_at(provider), brave()] {
            let name = search.name();
            let tools = WebTools::new(only(&[provider]), search);
            let e = tools
                .call("web_search", &json!({"query": "rust"}))
                .await
                .unwrap_err();
            assert!(e.message.contains("not allowed"), "{name}: {e}");
        }
        assert!(keys.lock().unwrap().is_empty());
        // Both allowed: the redirect is followed, without the key.
        let both = WebTools::new(only(&[provider, inside]), brave());
        let text = both
            .call("web_search", &json!({"query": "rust"}))
            .await
            .unwrap();
        assert!(text.contains("1. inside"), "{text}");
        assert!(
            keys.lock().unwrap().is_empty(),
            "{:?}",
            keys.lock().unwrap()
        );
    }
}
