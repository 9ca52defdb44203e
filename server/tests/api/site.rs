//! The Leptos pages and the health check, through the real server.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::TestServer;

pub async fn page(server: &TestServer, path: &str) -> (StatusCode, String) {
    let response = server
        .client
        .get(server.url(path))
        .send()
        .await
        .expect("get");
    (response.status(), response.text().await.expect("body"))
}

#[tokio::test]
async fn the_health_check_answers_ok() {
    let server = TestServer::start().await;
    assert_eq!(
        page(&server, "/healthz").await,
        (StatusCode::OK, "ok".to_string())
    );
}

#[tokio::test]
async fn the_plans_list_and_the_board_are_rendered_on_the_server() {
    let server = TestServer::start().await;
    let id = server
        .create(json!({
            "title": "Ship the board",
            "subtasks": [{"name": "design"}, {"name": "build", "dependencies": [1]}]
        }))
        .await;
    let (status, html) = page(&server, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("Ship the board"), "{html}");
    assert!(
        html.contains(&format!("/plans/{id}")),
        "the row links to the board"
    );
    assert!(
        html.contains("/pkg/planboard.wasm"),
        "the page loads the hydration bundle"
    );

    let (status, html) = page(&server, &format!("/plans/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(r#"data-testid="card-1""#), "{html}");
    assert!(html.contains(r#"data-testid="column-ready""#));
    // Leptos separates text nodes with comment markers.
    let text = html.replace("<!>", "").replace("<!-- -->", "");
    assert!(
        text.contains("after #1"),
        "the waiting card names its dependency: {text}"
    );
}

#[tokio::test]
async fn text_from_agents_is_rendered_as_text_not_markup() {
    let server = TestServer::start().await;
    let evil = "<img src=x onerror=alert(1)>";
    let id = server
        .create(json!({"title": evil, "subtasks": [{"name": evil}]}))
        .await;
    for path in ["/".to_string(), format!("/plans/{id}")] {
        let (_, html) = page(&server, &path).await;
        assert!(!html.contains(evil), "{path} carries the raw markup");
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{path}: {html}"
        );
    }
}

#[tokio::test]
async fn in_token_mode_pages_ask_for_a_token_and_the_cookie_session_is_strict() {
    let server = crate::auth::token_mode().await;
    let plain = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = plain.get(server.url("/")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()["location"], "/login");

    let origin = server.url("");
    let origin = origin.trim_end_matches('/');
    let bad = plain
        .post(server.url("/login"))
        .header("origin", origin)
        .form(&[("token", "not-a-token-at-all")])
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::UNAUTHORIZED);
    let good = plain
        .post(server.url("/login"))
        .header("origin", origin)
        .form(&[("token", crate::auth::OPERATOR)])
        .send()
        .await
        .unwrap();
    assert_eq!(good.status(), StatusCode::SEE_OTHER);
    let cookie = good.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let session = cookie.split(';').next().unwrap().to_string();

    let home = plain
        .get(server.url("/"))
        .header("cookie", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(home.status(), StatusCode::OK);
    // The cookie also opens the API (for the board's streams and exports) …
    let api = plain
        .get(server.url("/api/plans"))
        .header("cookie", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(api.status(), StatusCode::OK);
    // … but a change it carries must come from this site.
    let body = json!({"title": "forged"});
    let forged = plain
        .post(server.url("/api/plans"))
        .header("cookie", &session)
        .header("origin", "http://evil.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let own = plain
        .post(server.url("/api/plans"))
        .header("cookie", &session)
        .header("origin", origin)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), StatusCode::CREATED);
    // A cookie-carried change with no Origin at all is refused too.
    let bare = plain
        .post(server.url("/api/plans"))
        .header("cookie", &session)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status(), StatusCode::FORBIDDEN);
    // Over plain HTTP the cookie cannot be Secure; behind HTTPS it is.
    assert!(!cookie.contains("Secure"), "{cookie}");
    let behind_tls = plain
        .post(server.url("/login"))
        .header("origin", origin)
        .header("x-forwarded-proto", "https")
        .form(&[("token", crate::auth::OPERATOR)])
        .send()
        .await
        .unwrap();
    let secure = behind_tls.headers()["set-cookie"].to_str().unwrap();
    assert!(
        secure.contains("Secure") && secure.contains("HttpOnly"),
        "{secure}"
    );
    // Signing out clears the cookie.
    let out = plain
        .post(server.url("/logout"))
        .header("cookie", &session)
        .header("origin", origin)
        .send()
        .await
        .unwrap();
    assert_eq!(out.headers()["location"], "/login");
    let cleared = out.headers()["set-cookie"].to_str().unwrap();
    assert!(
        cleared.starts_with("planboard_session=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
}

#[tokio::test]
async fn only_the_interactive_parts_are_islands_and_static_parts_carry_their_state_in_html() {
    let server = TestServer::start().await;
    let id = server
        .create(json!({"title": "Ship the board", "subtasks": [{"name": "design"}]}))
        .await;
    // The top bar's "Needs you" count is an island on every page; the
    // page's own islands are the others.
    let top_bar = |html: &str| html.matches(r#"data-component="NeedsCount"#).count();
    let islands = |html: &str| html.matches("<leptos-island").count() - top_bar(html);

    let (_, board) = page(&server, &format!("/plans/{id}?view=dag")).await;
    assert_eq!(islands(&board), 1, "the board is one island: {board}");
    assert_eq!(top_bar(&board), 1, "the top bar's count: {board}");
    assert!(
        board.contains(&id.to_string()) && board.contains("&quot;view&quot;:&quot;dag&quot;"),
        "the island gets the plan and the view as props: {board}"
    );
    let (_, timeline) = page(&server, &format!("/plans/{id}?x=1&view=timeline")).await;
    assert!(
        timeline.contains("&quot;view&quot;:&quot;timeline&quot;"),
        "the view is read among other parameters: {timeline}"
    );

    // The filters are plain HTML now: what was filtered by must be in it.
    // The first screen's task box checks its batch file as the person
    // types (its one interactive field); the rest of it is plain HTML.
    let (_, list) = page(&server, "/?q=Ship&mode=simple").await;
    let batch_choice = list.matches(r#"data-component="BatchChoice"#).count();
    assert_eq!(batch_choice, 1, "the task box's batch check: {list}");
    assert_eq!(
        islands(&list) - batch_choice,
        1,
        "only the table is an island besides it"
    );
    assert!(
        list.contains(r#"value="Ship""#),
        "the search keeps its text"
    );
    assert!(
        list.contains(r#"<option value="simple" selected"#),
        "the mode stays chosen"
    );

    let (_, history) = page(&server, "/history").await;
    assert_eq!(islands(&history), 0, "history is static");

    // Typing into the form before its island hydrates would be lost.
    let (_, new_plan) = page(&server, "/plans/new").await;
    let outer = new_plan
        .split("<fieldset")
        .nth(1)
        .and_then(|rest| rest.split('>').next())
        .unwrap_or_default();
    assert!(
        outer.contains("plain") && outer.contains("disabled"),
        "the new-plan form waits for the wasm: {new_plan}"
    );
}

#[tokio::test]
async fn an_unknown_page_is_a_404() {
    let server = TestServer::start().await;
    let (status, _) = page(&server, "/no/such/page").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_openapi_document_lists_the_api_routes() {
    let server = TestServer::start().await;
    let (status, doc) = server.get("/api/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let paths = doc["paths"].as_object().expect("paths");
    for path in [
        "/api/plans",
        "/api/plans/{id}",
        "/api/plans/{id}/stream",
        "/api/tools/{dialect}/{tool}",
        "/api/plans/import",
    ] {
        assert!(paths.contains_key(path), "{path} is documented");
    }
}

#[tokio::test]
async fn viewers_see_the_board_without_edit_controls() {
    let server = crate::auth::token_mode()
        .await
        .with_token(crate::auth::OPERATOR);
    let id = server
        .create(json!({"title": "look only", "subtasks": [{"name": "a"}]}))
        .await;
    let cookies = crate::auth::session_cookies(&server).await;
    let board = |token: &'static str| {
        let url = server.url(&format!("/plans/{id}"));
        let client = server.client.clone();
        let cookie = cookies[token].clone();
        async move {
            let response = client
                .get(url)
                .header("cookie", cookie)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            response.text().await.unwrap()
        }
    };
    let operator = board(crate::auth::OPERATOR).await;
    assert!(operator.contains(r#"data-testid="move-1""#), "{operator}");
    assert!(operator.contains(r#"data-testid="add-submit""#));
    let viewer = board(crate::auth::VIEWER).await;
    assert!(
        viewer.contains(r#"data-testid="card-1""#),
        "the viewer sees the card"
    );
    assert!(
        !viewer.contains(r#"data-testid="move-1""#),
        "but cannot move it"
    );
    assert!(
        !viewer.contains(r#"data-testid="add-submit""#),
        "or add subtasks"
    );
    assert!(
        !viewer.contains(r#"data-testid="comment-send""#),
        "or comment"
    );
}

async fn page_with(server: &TestServer, path: &str, header: (&str, &str)) -> String {
    let response = server
        .client
        .get(server.url(path))
        .header(header.0, header.1)
        .send()
        .await
        .expect("get");
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    // Leptos separates text nodes with comment markers.
    let html = response.text().await.expect("body");
    html.replace("<!>", "").replace("<!-- -->", "")
}

#[tokio::test]
async fn the_board_speaks_chinese_when_asked_and_plans_keep_their_own_words() {
    let server = TestServer::start().await;
    let id = server
        .create(json!({"title": "Ship the board", "subtasks": [{"name": "design"}]}))
        .await;
    let board = format!("/plans/{id}");
    let chinese = page_with(&server, &board, ("accept-language", "zh-CN,zh;q=0.9")).await;
    assert!(chinese.contains(r#"<html lang="zh""#), "{chinese}");
    assert!(
        chinese.contains("就绪") && chinese.contains("时间线"),
        "{chinese}"
    );
    assert!(chinese.contains("Ship the board") && chinese.contains("design"));
    assert!(!chinese.contains("Waiting on dependencies"));

    // The switch's cookie beats the browser's language, both ways.
    let english = page_with(&server, &board, ("cookie", "planboard_lang=en")).await;
    assert!(english.contains(r#"<html lang="en""#));
    assert!(english.contains("Waiting on dependencies") && !english.contains("就绪"));
    let list = page_with(&server, "/", ("cookie", "planboard_lang=zh")).await;
    assert!(
        list.contains("最近活动") && list.contains("Ship the board"),
        "{list}"
    );
}

#[tokio::test]
async fn the_language_switch_sets_a_cookie_and_only_returns_to_this_site() {
    let server = TestServer::start().await;
    let plain = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let switch = |path: &str| plain.get(server.url(path)).send();
    let response = switch("/lang/zh?back=%2Fhistory%3Fx%3D1").await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()["location"], "/history?x=1");
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with("planboard_lang=zh;"), "{cookie}");
    for away in [
        "//evil.example/",
        "https://evil.example/",
        "/\\evil.example",
        "/\t/evil.example",
        "/\n/evil.example",
    ] {
        let url = format!("/lang/en?back={}", urlencode(away));
        let response = switch(&url).await.unwrap();
        assert_eq!(response.headers()["location"], "/", "{away}");
    }
    let unknown = switch("/lang/fr").await.unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
}

fn urlencode(text: &str) -> String {
    text.bytes().map(|b| format!("%{b:02X}")).collect()
}

#[tokio::test]
async fn the_boards_write_function_refuses_foreign_or_missing_origins_and_viewers() {
    use leptos::server_fn::ServerFn;
    let server = crate::auth::token_mode()
        .await
        .with_token(crate::auth::OPERATOR);
    let id = server
        .create(json!({"title": "guarded board", "subtasks": [{"name": "a"}]}))
        .await;
    let path = <app::api::RunCommand as ServerFn>::PATH;
    let origin = server.url("");
    let origin = origin.trim_end_matches('/').to_string();
    let cookies = crate::auth::session_cookies(&server).await;
    let send = |token: &'static str, origin: Option<String>| {
        let mut request = server
            .client
            .post(server.url(path))
            .header("cookie", cookies[token].clone())
            .json(&json!({"id": id, "command": {"op": "pause"}}));
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        async move {
            let response = request.send().await.unwrap();
            (response.status(), response.text().await.unwrap())
        }
    };
    let version = server.plan(&id).await["version"].clone();
    let (status, _) = send(crate::auth::OPERATOR, Some("http://evil.example".into())).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a foreign Origin");
    let (status, _) = send(crate::auth::OPERATOR, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "no Origin");
    let (status, body) = send(crate::auth::VIEWER, Some(origin.clone())).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a viewer is refused: {body}");
    assert!(body.contains("viewer"), "the refusal says why: {body}");
    assert_eq!(
        server.plan(&id).await["version"],
        version,
        "nothing changed"
    );
    // The same call from the board's own page, as an operator, goes through.
    let (status, body) = send(crate::auth::OPERATOR, Some(origin)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(server.plan(&id).await["state"], "paused");
}

#[tokio::test]
async fn a_finished_plan_is_reviewed_on_its_board_and_history_and_the_queue_show_it() {
    let server = TestServer::start().await;
    let id = server
        .create(
            json!({"title": "Nightly report", "subtasks": [{"name": "collect"}, {"name": "send"}]}),
        )
        .await;
    let running = server
        .create(json!({"title": "Still going", "subtasks": [{"name": "a"}]}))
        .await;
    let (status, _) = server
        .post(
            &format!("/api/plans/{id}/finish"),
            json!({"state": "failed", "outcome": "the mail server was down"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let text = |html: String| html.replace("<!>", "").replace("<!-- -->", "");
    // Queued, and counted in the top bar.
    let (_, queue) = page(&server, "/reviews").await;
    assert!(queue.contains("Nightly report"), "{queue}");
    assert!(!queue.contains("Still going"), "only finished plans wait");
    let queue = text(queue);
    let count = queue
        .find(r#"data-testid="review-count""#)
        .map(|at| &queue[at..at + 60]);
    assert!(count.is_some_and(|c| c.contains(">1<")), "{count:?}");
    // An unfinished plan's board has no review form.
    let (_, board) = page(&server, &format!("/plans/{running}")).await;
    assert!(!board.contains(r#"data-testid="review-form""#));
    // A verdict other than good without a note is refused with the reason.
    let post = |fields: Vec<(&'static str, &'static str)>| {
        server
            .client
            .post(server.url(&format!("/plans/{id}/review")))
            .form(&fields)
            .send()
    };
    let refused = post(vec![("verdict", "wrong"), ("note", " "), ("subtask-1", "")])
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.text().await.unwrap().contains("needs a note"));
    let no_verdict = post(vec![("note", "hm")]).await.unwrap();
    assert_eq!(no_verdict.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let saved = post(vec![
        ("verdict", "needs_changes"),
        ("note", "retry the mail server before failing"),
        ("subtask-1", ""),
        ("subtask-2", "send through the backup relay"),
    ])
    .await
    .unwrap();
    assert_eq!(saved.status(), StatusCode::OK, "followed back to the board");
    let board = text(saved.text().await.unwrap());
    assert!(board.contains(r#"data-testid="review""#), "{board}");
    assert!(board.contains("retry the mail server before failing"));
    assert!(board.contains("send through the backup relay"));
    assert!(board.contains(r#"data-verdict="needs_changes""#));
    assert!(
        board.contains("Save my review"),
        "the form is the viewer's own now"
    );
    // History shows the verdict and filters by it; the queue is empty.
    let (_, history) = page(&server, "/history?verdict=needs_changes").await;
    assert!(history.contains("Nightly report"), "{history}");
    assert!(history.contains(r#"data-verdict="needs_changes""#));
    let (_, history) = page(&server, "/history?verdict=good").await;
    assert!(!history.contains("Nightly report"));
    let (_, history) = page(&server, "/history?verdict=none").await;
    assert!(!history.contains("Nightly report"));
    let (_, queue) = page(&server, "/reviews").await;
    assert!(queue.contains(r#"data-testid="reviews-empty""#), "{queue}");
    // Removing it queues the plan again.
    let removed = post(vec![("remove", "1")]).await.unwrap();
    assert_eq!(removed.status(), StatusCode::OK);
    let (_, reviews) = server.get(&format!("/api/plans/{id}/reviews")).await;
    assert_eq!(reviews, json!([]));
    let (_, queue) = page(&server, "/reviews").await;
    assert!(queue.contains("Nightly report"));
}

#[tokio::test]
async fn a_viewer_reads_reviews_but_neither_reviews_nor_runs_a_plan_again_from_the_board() {
    let server = crate::auth::token_mode()
        .await
        .with_token(crate::auth::OPERATOR);
    let id = server
        .create(json!({"title": "read only review", "subtasks": [{"name": "a"}]}))
        .await;
    let (status, _) = server
        .post(
            &format!("/api/plans/{id}/finish"),
            json!({"state": "abandoned", "outcome": "dropped"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let origin = server.url("").trim_end_matches('/').to_string();
    let cookies = crate::auth::session_cookies(&server).await;
    let post = |token: &'static str, path: String, fields: Vec<(&'static str, &'static str)>| {
        server
            .client
            .post(server.url(&path))
            .header("cookie", cookies[token].clone())
            .header("origin", origin.clone())
            .form(&fields)
            .send()
    };
    let review = vec![("verdict", "good"), ("note", "fine")];
    let refused = post(
        crate::auth::VIEWER,
        format!("/plans/{id}/review"),
        review.clone(),
    )
    .await
    .unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert!(refused.text().await.unwrap().contains("viewer"));
    let again = post(
        crate::auth::VIEWER,
        format!("/plans/{id}/again"),
        vec![("from", "1")],
    )
    .await
    .unwrap();
    assert_eq!(again.status(), StatusCode::FORBIDDEN);
    let (_, reviews) = server.get(&format!("/api/plans/{id}/reviews")).await;
    assert_eq!(reviews, json!([]), "nothing stored");
    // The viewer's board shows the reviews but no form.
    let saved = post(crate::auth::OPERATOR, format!("/plans/{id}/review"), review)
        .await
        .unwrap();
    assert_eq!(saved.status(), StatusCode::OK);
    let board = server
        .client
        .get(server.url(&format!("/plans/{id}")))
        .header("cookie", cookies[crate::auth::VIEWER].clone())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(board.contains(r#"data-testid="review""#), "{board}");
    assert!(!board.contains(r#"data-testid="review-form""#));
}

/// Leptos reads a server function's body whole: past the board's limit it
/// is a 413 before that, and the board answers the next call as before.
#[tokio::test]
async fn a_server_function_body_over_the_limit_is_a_413() {
    use leptos::server_fn::ServerFn;
    let server = TestServer::start().await;
    let id = server
        .create(json!({"title": "bounded", "subtasks": [{"name": "a"}]}))
        .await;
    let path = <app::api::RunCommand as ServerFn>::PATH;
    assert!(
        path.starts_with(server::web::board::SERVER_FN_PREFIX),
        "{path}"
    );
    let call = |body: Vec<u8>| {
        let request = server
            .client
            .post(server.url(path))
            .header("content-type", "application/json")
            .body(body);
        async move { request.send().await.unwrap().status() }
    };
    let head = format!(r#"{{"id": "{id}", "command": {{"op": "pause", "pad": ""#);
    let mut huge = head.into_bytes();
    let tail = br#""}}"#;
    huge.resize(
        server::web::board::SERVER_FN_BODY_LIMIT + 1 - tail.len(),
        b'x',
    );
    huge.extend_from_slice(tail);
    assert_eq!(huge.len(), server::web::board::SERVER_FN_BODY_LIMIT + 1);
    assert_eq!(call(huge).await, StatusCode::PAYLOAD_TOO_LARGE);
    let whoami = server
        .client
        .post(server.url(<app::api::Whoami as ServerFn>::PATH))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(whoami.status(), StatusCode::OK);
}

/// Status, content type and body of `path` on `server`, no redirects.
async fn raw(server: &TestServer, path: &str) -> (StatusCode, String, String) {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = client.get(server.url(path)).send().await.unwrap();
    let status = response.status();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (status, kind, response.text().await.unwrap())
}

#[tokio::test]
async fn a_missing_static_file_is_a_plain_404_in_both_modes_and_a_present_one_needs_no_session() {
    let local = TestServer::start().await;
    let tokens = crate::auth::token_mode().await;
    for server in [&local, &tokens] {
        for path in [
            "/pkg/planboard_bg.wasm",
            "/pkg/",
            "/pkg",
            "/pkg/nested/x.js",
            "/favicon.ico",
        ] {
            let (status, kind, body) = raw(server, path).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
            assert!(kind.starts_with("text/plain"), "{path}: {kind}");
            assert_eq!(body, "not found\n", "{path}");
        }
        // What the build made is served, without a session in token mode.
        let site = std::path::Path::new(crate::support::SITE_ROOT);
        for (path, file) in [
            ("/pkg/planboard.wasm", "pkg/planboard.wasm"),
            ("/pkg/planboard.css", "pkg/planboard.css"),
            ("/favicon.svg", "favicon.svg"),
        ] {
            if !site.join(file).is_file() {
                eprintln!("skipped {path}: scripts/build.sh has not built the site");
                continue;
            }
            let (status, _, _) = raw(server, path).await;
            assert_eq!(status, StatusCode::OK, "{path}");
        }
    }
}
