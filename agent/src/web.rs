//! The web as work tools (seed 004's `web_search`): `fetch_url` reads one
//! page as text, `web_search` asks a configured search endpoint.
//!
//! A fetch is an outgoing request the model chose, so it is guarded like
//! one: only `http` and `https`; every address the name resolves to must be
//! public (no loopback, private, link-local, CGNAT, multicast or
//! documentation ranges) unless the operator allowed private addresses; the
//! connection goes to the address that was checked (no second lookup a
//! rebinding DNS server could answer differently); redirects are followed
//! by hand, each one checked again; the body is read up to a size limit
//! within a time limit, and only text is accepted (HTML is turned into
//! readable text by `html2text`).
//!
//! # Layout
//! - [`WebPolicy`]: the limits and whether private addresses are allowed.
//! - [`is_public`]: the address check.
//! - [`WebTools`]: the [`ToolBox`] with `fetch_url` and, when a search
//!   endpoint is configured, `web_search` (a SearXNG-compatible JSON API).

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

/// `fetch_url` and `web_search`.
pub struct WebTools {
    policy: WebPolicy,
    /// A SearXNG-compatible endpoint (`…/search`), answering
    /// `?q=…&format=json` with `{"results": [{title, url, content}]}`.
    search: Option<Url>,
}

impl WebTools {
    pub fn new(policy: WebPolicy, search: Option<Url>) -> WebTools {
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

    /// One GET of `url` from the addresses that were checked, redirects not
    /// followed.
    async fn get_once(&self, url: &Url) -> Result<reqwest::Response, ToolError> {
        let addrs = self.addresses(url).await?;
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent("planboard-agent/0.1 (fetch_url)")
            .connect_timeout(Duration::from_secs(10));
        if let Some(host) = url.host_str() {
            if host.parse::<IpAddr>().is_err() {
                builder = builder.resolve_to_addrs(host, &addrs);
            }
        }
        let client = builder
            .build()
            .map_err(|e| ToolError::refused(format!("cannot make an HTTP client: {e}")))?;
        client.get(url.clone()).send().await.map_err(|e| ToolError {
            message: format!("fetching {url} failed: {e}"),
            retryable: e.is_timeout() || e.is_connect(),
        })
    }

    async fn fetch(&self, raw: &str) -> Result<String, ToolError> {
        let mut url = Url::parse(raw.trim())
            .map_err(|e| ToolError::refused(format!("{raw:?} is not a URL: {e}")))?;
        let mut redirects = 0;
        let response = loop {
            if !matches!(url.scheme(), "http" | "https") {
                return Err(ToolError::refused(format!(
                    "only http and https URLs can be fetched, not {}",
                    url.scheme()
                )));
            }
            let response = self.get_once(&url).await?;
            if !response.status().is_redirection() {
                break response;
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
            url = next;
        };
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
            TextKind::Html => html2text::from_read(bytes.as_slice(), 100)
                .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned()),
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
        let Some(endpoint) = &self.search else {
            return Err(ToolError::refused("no search endpoint is configured"));
        };
        let query = query.trim();
        if query.is_empty() {
            return Err(ToolError::refused("the query is empty"));
        }
        let mut url = endpoint.clone();
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json");
        // The operator chose the endpoint: it may well be on the intranet.
        let client = reqwest::Client::builder()
            .timeout(self.policy.timeout)
            .build()
            .map_err(|e| ToolError::refused(format!("cannot make an HTTP client: {e}")))?;
        let response = client.get(url).send().await.map_err(|e| ToolError {
            message: format!("the search endpoint did not answer: {e}"),
            retryable: true,
        })?;
        if !response.status().is_success() {
            return Err(ToolError {
                message: format!("the search endpoint answered {}", response.status()),
                retryable: response.status().is_server_error(),
            });
        }
        let (bytes, _) = read_capped(response, self.policy.max_bytes).await?;
        let body: Value = serde_json::from_slice(&bytes).map_err(|e| {
            ToolError::refused(format!("the search endpoint's answer is not JSON: {e}"))
        })?;
        let results = body
            .get("results")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if results.is_empty() {
            return Ok(format!("no results for {query:?}"));
        }
        let field = |r: &Value, name: &str| -> String {
            r.get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        let lines: Vec<String> = results
            .iter()
            .take(SEARCH_RESULTS)
            .enumerate()
            .map(|(i, r)| {
                format!(
                    "{}. {}\n   {}\n   {}",
                    i + 1,
                    cut_chars(&field(r, "title"), 200),
                    field(r, "url"),
                    cut_chars(&field(r, "content"), 400)
                )
            })
            .collect();
        Ok(lines.join("\n"))
    }
}

/// Results `web_search` shows the model.
const SEARCH_RESULTS: usize = 8;

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
        if self.search.is_some() {
            specs.push(ToolSpec {
                name: "web_search".into(),
                description: "Searches the web; returns titles, URLs and snippets.".into(),
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

    /// A one-route HTTP server on loopback answering every request with
    /// `respond(path)`: (status line, content type, extra headers, body).
    async fn serve(
        respond: impl Fn(&str) -> (String, String, String, Vec<u8>) + Send + Sync + 'static,
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
                    let mut buf = vec![0u8; 8192];
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    let request = String::from_utf8_lossy(&buf[..n]).to_string();
                    let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let (status, content_type, headers, body) = respond(&path);
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
        let tools = WebTools::new(open(), None);
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
        let tools = WebTools::new(WebPolicy::default(), None);
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
        let tools = WebTools::new(open(), None);
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
            None,
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
            None,
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
            None,
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
        let without = WebTools::new(WebPolicy::default(), None);
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
        let tools = WebTools::new(WebPolicy::default(), Some(endpoint));
        assert!(tools.specs().iter().any(|s| s.name == "web_search"));
        let text = tools
            .call("web_search", &json!({"query": "rust async"}))
            .await
            .unwrap();
        assert!(text.starts_with("1. Async Rust"), "{text}");
        assert!(text.contains("https://tokio.rs"), "{text}");
    }
}
