//! The Leptos pages and the health check, through the real server.

use reqwest::StatusCode;

use crate::support::TestServer;

async fn page(server: &TestServer, path: &str) -> (StatusCode, String) {
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
async fn the_home_page_is_rendered_on_the_server_with_the_engine_plan() {
    let server = TestServer::start().await;
    let (status, html) = page(&server, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("Buy a mechanical keyboard on JD.com"),
        "{html}"
    );
    assert!(
        html.contains(r#"data-testid="subtask-6""#),
        "the inserted popup subtask is there"
    );
    assert!(html.contains(r#"aria-valuenow="33""#), "progress is 33%");
    assert!(
        html.contains("/pkg/planboard.wasm"),
        "the page loads the hydration bundle"
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
