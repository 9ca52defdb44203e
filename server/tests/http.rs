//! The server's routes, driven in-process through `router()`.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use leptos::config::LeptosOptions;
use tower::ServiceExt;

fn app() -> axum::Router {
    let options = LeptosOptions::builder()
        .output_name("planboard")
        .site_root("target/site")
        .build();
    server::router(options)
}

async fn get(path: &str) -> (StatusCode, String) {
    let response = app()
        .oneshot(Request::get(path).body(Body::empty()).expect("request"))
        .await
        .expect("response");
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn the_health_check_answers_ok() {
    assert_eq!(get("/healthz").await, (StatusCode::OK, "ok".to_string()));
}

#[tokio::test]
async fn the_home_page_is_rendered_on_the_server_with_the_engine_plan() {
    let (status, html) = get("/").await;
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
    let (status, _) = get("/no/such/page").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
