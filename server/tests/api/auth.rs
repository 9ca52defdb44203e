//! Local mode and token mode.

use std::collections::HashMap;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use server::auth::{Identity, IpRange, Role, Tokens, FAILURES_PER_CLIENT};
use server::config::{Access, Config};

use crate::support::{chain, TestServer};

// As `openssl rand -hex 16` makes them: 128 bits each.
pub const VIEWER: &str = "20a73c9a76e4d06f6705e67be0d7ab9d";
pub const OPERATOR: &str = "674a70ee8cc1538336f4bc2ccbf03d19";
pub const ADMIN: &str = "e6a9051d6fbf543905aa9638c70da154";
/// A token nobody holds.
pub const WRONG: &str = "746674258c81f5da219402551f9121f7";

pub async fn token_mode() -> TestServer {
    token_mode_behind(&[]).await
}

/// Token mode with `proxies` trusted (`PLANBOARD_TRUSTED_PROXIES`). The
/// tests' connections all come from 127.0.0.1: trusting it, a test plays
/// a proxy and names each client in `X-Forwarded-For`.
pub async fn token_mode_behind(proxies: &[&str]) -> TestServer {
    let mut tokens = HashMap::new();
    for (token, name, role) in [
        (VIEWER, "watcher", Role::Viewer),
        (OPERATOR, "robot", Role::Operator),
        (ADMIN, "boss", Role::Admin),
    ] {
        tokens.insert(token.to_string(), Identity::new(name, role));
    }
    let proxies = proxies
        .iter()
        .map(|p| IpRange::parse(p).expect("a proxy's address"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let access = Access::Tokens(Tokens::from(tokens).behind(proxies));
    let mut server = TestServer::on(&url, access).await;
    server._dir = Some(dir);
    server
}

/// A board session for each of the three tokens: token → `cookie` header.
pub async fn session_cookies(server: &TestServer) -> HashMap<&'static str, String> {
    let mut cookies = HashMap::new();
    for token in [VIEWER, OPERATOR, ADMIN] {
        cookies.insert(token, sign_in(server, token).await.1);
    }
    cookies
}

/// A client that shows redirects instead of following them.
pub fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The page's origin, which a sign-in and a cookie-carried change need.
pub fn origin(server: &TestServer) -> String {
    server.url("").trim_end_matches('/').to_string()
}

/// Signs in on the board with `token`: the `Set-Cookie` header and the
/// `cookie` header value that carries the session.
pub async fn sign_in(server: &TestServer, token: &str) -> (String, String) {
    let response = no_redirects()
        .post(server.url("/login"))
        .header("origin", origin(server))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_redirection(),
        "signed in: {}",
        response.status()
    );
    let set = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_string();
    let cookie = set.split(';').next().unwrap().to_string();
    (set, cookie)
}

#[tokio::test]
async fn tokens_decide_who_may_read_and_write() {
    let server = token_mode().await;
    let (status, error) = server.get("/api/plans").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{error}");
    let server = server.with_token(WRONG);
    let (status, _) = server.get("/api/plans").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let server = server.with_token(OPERATOR);
    let id = server.create(chain("by a robot")).await;
    let (_, page) = server.get(&format!("/api/plans/{id}/events")).await;
    assert_eq!(
        page["events"][0]["actor"], "robot",
        "the token's name is the actor"
    );
    let (status, _) = server
        .send(Method::DELETE, &format!("/api/plans/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "deleting needs admin");

    let server = server.with_token(VIEWER);
    let (status, _) = server.get(&format!("/api/plans/{id}")).await;
    assert_eq!(status, StatusCode::OK, "viewers read");
    let (status, error) = server
        .post(&format!("/api/plans/{id}/comments"), json!({"body": "hi"}))
        .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "viewers cannot write: {error}"
    );

    let server = server.with_token(ADMIN);
    let (status, _) = server
        .send(Method::DELETE, &format!("/api/plans/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = server.get(&format!("/api/plans/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The deletion is itself in the log.
    let (_, page) = server.get(&format!("/api/plans/{id}/events")).await;
    assert_eq!(
        page["events"].as_array().unwrap().last().unwrap()["kind"],
        "plan_deleted"
    );
}

#[test]
fn local_mode_refuses_to_listen_beyond_loopback() {
    let local = Config {
        lease: std::time::Duration::ZERO,
        ..Config::defaults("", crate::support::local())
    };
    assert!(local.check_bind("127.0.0.1:3000".parse().unwrap()).is_ok());
    let err = local
        .check_bind("0.0.0.0:3000".parse().unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("PLANBOARD_TOKENS"), "{err}");
    let tokens = Config {
        access: Access::Tokens(HashMap::new().into()),
        ..local
    };
    assert!(tokens.check_bind("0.0.0.0:3000".parse().unwrap()).is_ok());
}

/// In token mode the runs follow the roles: no token reads nothing;
/// viewers read runs and their files but neither start nor steer them
/// (over HTTP or MCP); operators do; the actor is the token's name. An
/// artifact path climbing out of the workspace is refused.
#[tokio::test]
async fn in_token_mode_viewers_read_runs_and_only_operators_start_and_steer_them() {
    use std::time::Duration;
    let fake = crate::fake_openai::FakeOpenAi::start().await;
    let mut tokens = HashMap::new();
    tokens.insert(VIEWER.to_string(), Identity::new("watcher", Role::Viewer));
    tokens.insert(OPERATOR.to_string(), Identity::new("robot", Role::Operator));
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        lease: Duration::from_secs(3600),
        llm: Some(fake.config(Duration::from_secs(10))),
        workspaces: dir.path().join("workspaces"),
        ..Config::defaults(
            format!("sqlite://{}", dir.path().join("t.db").display()),
            Access::Tokens(tokens.into()),
        )
    };
    let anonymous = TestServer::with_config(&config, |_| {}).await;
    let task = json!({"task": "Summarise the week", "approval_required": true});
    let (status, _) = anonymous.post("/api/runs", task.clone()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = anonymous.get("/api/runs").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let operator = anonymous.with_token(OPERATOR);
    let (status, run) = operator.post("/api/runs", task.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{run}");
    assert_eq!(run["started_by"], "robot");
    let id = run["id"].as_str().unwrap().to_string();
    // Climbing out of the workspace: never the file.
    let (status, body) = operator
        .get(&format!("/api/runs/{id}/artifacts/..%2F..%2Ft.db"))
        .await;
    assert!(
        status == StatusCode::NOT_FOUND || status == StatusCode::BAD_REQUEST,
        "{status} {body}"
    );

    let viewer = operator.with_token(VIEWER);
    for path in [
        "/api/runs".to_string(),
        format!("/api/runs/{id}"),
        format!("/api/runs/{id}/events"),
        format!("/api/runs/{id}/artifacts"),
    ] {
        let (status, body) = viewer.get(&path).await;
        assert_eq!(status, StatusCode::OK, "viewers read {path}: {body}");
    }
    let (status, _) = viewer.post("/api/runs", task.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "viewers do not start runs");
    for action in ["pause", "cancel"] {
        let (status, _) = viewer
            .post(&format!("/api/runs/{id}/{action}"), json!({}))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "viewers do not {action}");
    }
    // Over MCP too: a viewer's start_run is refused.
    let (status, body) = viewer
        .send(
            Method::POST,
            "/mcp",
            Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "start_run", "arguments": {"task": "x"}}})),
        )
        .await;
    assert!(
        status == StatusCode::FORBIDDEN || body.to_string().contains("viewer"),
        "{status} {body}"
    );
    let operator = viewer.with_token(OPERATOR);
    let (status, _) = operator
        .post(&format!("/api/runs/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "operators steer runs");
}

/// The board's cookie is a session's opaque id, not the token: the token
/// as a cookie opens nothing, and signing out closes the session on the
/// server, so a copy of the old cookie gets the sign-in page (a 401 from
/// the API) while another session of the same person goes on.
#[tokio::test]
async fn the_session_cookie_is_an_opaque_id_and_signing_out_ends_it() {
    let server = token_mode().await;
    let plain = no_redirects();
    let (set, cookie) = sign_in(&server, OPERATOR).await;
    assert!(
        !set.contains(OPERATOR),
        "the token is not in the cookie: {set}"
    );
    let id = cookie
        .strip_prefix(&format!("{}=", server::web::auth::SESSION_COOKIE))
        .unwrap();
    assert!(
        id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );
    for part in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"] {
        assert!(set.contains(part), "{part} in {set}");
    }
    let (_, other) = sign_in(&server, OPERATOR).await;
    assert_ne!(other, cookie, "each sign-in opens its own session");
    let open = |cookie: String, path: &'static str| {
        let request = plain.get(server.url(path)).header("cookie", cookie);
        async move { request.send().await.unwrap().status() }
    };
    assert_eq!(open(cookie.clone(), "/").await, StatusCode::OK);
    assert_eq!(open(cookie.clone(), "/api/plans").await, StatusCode::OK);
    let token_as_cookie = format!("{}={OPERATOR}", server::web::auth::SESSION_COOKIE);
    assert_eq!(
        open(token_as_cookie.clone(), "/").await,
        StatusCode::SEE_OTHER,
        "the token itself is no session"
    );
    assert_eq!(
        open(token_as_cookie, "/api/plans").await,
        StatusCode::UNAUTHORIZED
    );

    let out = plain
        .post(server.url("/logout"))
        .header("cookie", &cookie)
        .header("origin", origin(&server))
        .send()
        .await
        .unwrap();
    assert_eq!(out.headers()["location"], "/login");
    let page = plain
        .get(server.url("/"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::SEE_OTHER, "signed out");
    assert_eq!(page.headers()["location"], "/login");
    assert_eq!(
        open(cookie.clone(), "/api/plans").await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(open(other, "/").await, StatusCode::OK, "the other session");
}

/// Ten failed sign-ins in a minute, and the eleventh attempt is a 429 that
/// says when to try again, even with a right token (or guessing would go
/// on); the same client's bearer tokens wait too, while a session it
/// opened before goes on.
#[tokio::test]
async fn eleven_sign_ins_after_ten_wrong_tokens_in_a_minute_are_refused_with_429() {
    let server = token_mode().await;
    let (_, cookie) = sign_in(&server, OPERATOR).await;
    let attempt = |token: &'static str| {
        let request = no_redirects()
            .post(server.url("/login"))
            .header("origin", origin(&server))
            .form(&[("token", token)]);
        async move {
            let response = request.send().await.unwrap();
            let retry = response.headers().get("retry-after").cloned();
            (response.status(), retry, response.text().await.unwrap())
        }
    };
    for n in 1..=FAILURES_PER_CLIENT {
        let (status, _, _) = attempt(WRONG).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "attempt {n}");
    }
    let (status, retry, page) = attempt(WRONG).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{page}");
    let seconds: u64 = retry.unwrap().to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&seconds), "{seconds}");
    assert!(page.contains("Too many failed sign-ins"), "{page}");
    let (status, _, _) = attempt(ADMIN).await;
    assert_eq!(
        status,
        StatusCode::TOO_MANY_REQUESTS,
        "a right token waits too"
    );
    let server = server.with_token(ADMIN);
    let (status, body) = server.get("/api/plans").await;
    assert_eq!(
        status,
        StatusCode::TOO_MANY_REQUESTS,
        "so does this client's bearer token: {body}"
    );
    let open = no_redirects()
        .get(server.url("/api/plans"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(open.status(), StatusCode::OK, "an open session goes on");
}

/// `GET /api/plans` with the bearer `token`, from the client a proxy names
/// in `X-Forwarded-For` (`forwarded`): the status, `Retry-After` and body.
async fn list_as(
    server: &TestServer,
    forwarded: &str,
    token: &str,
) -> (StatusCode, Option<u64>, Value) {
    let response = server
        .client
        .get(server.url("/api/plans"))
        .bearer_auth(token)
        .header("x-forwarded-for", forwarded)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let retry = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    (status, retry, response.json().await.unwrap_or(Value::Null))
}

/// Signs in with `token` from the client named by `forwarded`: the status
/// (a redirect when signed in) and `Retry-After`.
async fn sign_in_as(
    server: &TestServer,
    forwarded: &str,
    token: &str,
) -> (StatusCode, Option<u64>) {
    let response = no_redirects()
        .post(server.url("/login"))
        .header("origin", origin(server))
        .header("x-forwarded-for", forwarded)
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    let retry = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    (response.status(), retry)
}

/// The guesser and another person, as a proxy on 127.0.0.1 names them.
const GUESSER: &str = "203.0.113.7";
const OTHER: &str = "198.51.100.20";

/// Wrong sign-ins lock out only the client that sent them: the admin,
/// signing in from elsewhere with the right token, is not kept waiting by
/// someone else's guessing (before, ten wrong sign-ins from anyone locked
/// everyone out).
#[tokio::test]
async fn wrong_sign_ins_lock_only_their_client_and_another_signs_in_with_the_right_token() {
    let server = token_mode_behind(&["127.0.0.1"]).await;
    for n in 1..=FAILURES_PER_CLIENT {
        let (status, _) = sign_in_as(&server, GUESSER, WRONG).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "attempt {n}");
    }
    let (status, retry) = sign_in_as(&server, GUESSER, ADMIN).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(retry.is_some_and(|s| (1..=60).contains(&s)), "{retry:?}");
    let (status, _) = sign_in_as(&server, OTHER, ADMIN).await;
    assert!(status.is_redirection(), "another client signs in: {status}");
    // The proxy's own requests (no X-Forwarded-For) are another client.
    sign_in(&server, OPERATOR).await;
    let (status, _, body) = list_as(&server, OTHER, ADMIN).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// Ten wrong bearer tokens from one client: its next request is a 429 with
/// `Retry-After`, a right token too, over the REST API, MCP and sign-in
/// alike; another client's right token still works, and its wrong one is
/// its own 401.
#[tokio::test]
async fn ten_wrong_bearer_tokens_make_the_clients_next_request_429_and_others_go_on() {
    let server = token_mode_behind(&["127.0.0.1"]).await;
    for n in 1..=FAILURES_PER_CLIENT {
        let (status, _, body) = list_as(&server, GUESSER, WRONG).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "request {n}: {body}");
    }
    let (status, retry, body) = list_as(&server, GUESSER, ADMIN).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(body["error"], "too_many_requests", "{body}");
    let seconds = retry.expect("Retry-After");
    assert!((1..=60).contains(&seconds), "{seconds}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains(&format!("{seconds} seconds")),
        "{body}"
    );
    let mcp = server
        .client
        .post(server.url("/mcp"))
        .bearer_auth(ADMIN)
        .header("x-forwarded-for", GUESSER)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        mcp.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "MCP asks the same"
    );
    let (status, _) = sign_in_as(&server, GUESSER, ADMIN).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "and so does sign-in");

    let (status, _, body) = list_as(&server, OTHER, ADMIN).await;
    assert_eq!(status, StatusCode::OK, "another client goes on: {body}");
    let (status, _, _) = list_as(&server, OTHER, WRONG).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "its own first failure");
}

/// `X-Forwarded-For` names the client only when a trusted proxy sent it:
/// from any other peer a new address in it is no new client, so it cannot
/// escape the limit; and behind a trusted proxy, only the entry the proxy
/// added counts, not those the client wrote to its left.
#[tokio::test]
async fn an_x_forwarded_for_from_an_untrusted_peer_is_ignored_and_escapes_nothing() {
    for proxies in [&[][..], &["10.0.0.0/8"][..]] {
        let server = token_mode_behind(proxies).await;
        for n in 1..=FAILURES_PER_CLIENT {
            let (status, _, _) = list_as(&server, &format!("203.0.113.{n}"), WRONG).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{proxies:?}: {n}");
        }
        let (status, _, body) = list_as(&server, "198.51.100.99", ADMIN).await;
        assert_eq!(
            status,
            StatusCode::TOO_MANY_REQUESTS,
            "{proxies:?}: one client whatever it says: {body}"
        );
        let (status, _) = sign_in_as(&server, "198.51.100.98", ADMIN).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{proxies:?}");
    }

    let server = token_mode_behind(&["127.0.0.1"]).await;
    for n in 1..=FAILURES_PER_CLIENT {
        let spoofed = format!("198.51.100.{n}, {GUESSER}");
        let (status, _, _) = list_as(&server, &spoofed, WRONG).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{n}");
    }
    let (status, _, _) = list_as(&server, &format!("192.0.2.1, {GUESSER}"), ADMIN).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    let (status, _, _) = list_as(&server, &format!("{GUESSER}, {OTHER}"), ADMIN).await;
    assert_eq!(status, StatusCode::OK, "the right-most entry is the client");
}

/// `DELETE /api/plans/{id}` is the admins', and so is deleting a plan
/// through any tool: OpenManus' `planning` `delete` is refused to an
/// operator with the API's 403 and the plan stays; the other dialects and
/// MCP have no tool that deletes a plan; an admin's `delete` works.
#[tokio::test]
async fn deleting_a_plan_needs_an_admin_in_every_dialect_and_over_mcp() {
    let operator = token_mode().await.with_token(OPERATOR);
    let id = operator.create(chain("keep me")).await;
    let (status, body) = operator
        .post(
            "/api/tools/openmanus/planning",
            json!({"command": "delete", "plan_id": id}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"], "forbidden", "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("admin"),
        "{body}"
    );
    // As a string of arguments, and by its key, the same.
    let (status, _) = operator
        .post(
            "/api/tools/openmanus/planning",
            json!(format!(r#"{{"command": "delete", "plan_id": "{id}"}}"#)),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, created) = operator
        .post(
            "/api/tools/openmanus/planning",
            json!({"command": "create", "plan_id": "keyed", "title": "keyed", "steps": ["a"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let keyed = created["plan_id"].as_str().unwrap().to_string();
    let (status, _) = operator
        .post(
            "/api/tools/openmanus/planning",
            json!({"command": "delete", "plan_id": "keyed"}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    for (dialect, tool) in [
        ("canonical", "delete_plan"),
        ("planmanager", "deletePlan"),
        ("agentscope", "delete_plan"),
    ] {
        let (status, body) = operator
            .post(
                &format!("/api/tools/{dialect}/{tool}"),
                json!({"plan_id": id}),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{dialect}: {body}"
        );
        assert_eq!(body["error"], "unknown_tool", "{dialect}: {body}");
    }
    let mcp = crate::mcp::client(&operator, OPERATOR).await;
    for tool in ["delete_plan", "planning"] {
        let refused = mcp
            .call_tool(crate::mcp::params(
                tool,
                json!({"command": "delete", "plan_id": id}),
            ))
            .await
            .unwrap();
        assert_eq!(
            refused.is_error,
            Some(true),
            "{}",
            crate::mcp::text(&refused)
        );
    }
    mcp.cancel().await.ok();
    for plan in [&id, &keyed] {
        let (status, _) = operator.get(&format!("/api/plans/{plan}")).await;
        assert_eq!(status, StatusCode::OK, "the plan is still there");
    }

    let admin = operator.with_token(ADMIN);
    let (status, body) = admin
        .post(
            "/api/tools/openmanus/planning",
            json!({"command": "delete", "plan_id": id}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = admin.get(&format!("/api/plans/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "an admin deletes");
}
