//! Images a run's code wrote, over HTTP: listed with the address that
//! serves them, served as images (the raster types from the name's
//! extension, checked against their first bytes, with `nosniff`), an SVG
//! never as an active page of this origin, a link named like an image
//! never followed, and the activity page showing them as `<img>`.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::fake_openai::{Fake, FakeOpenAi};
use crate::inputs::{server, workspaces};
use crate::site::page;

/// A one-pixel PNG.
const PNG: &[u8] = &[
    0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n', 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0,
    0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 13, b'I', b'D', b'A', b'T',
    0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0, 0x05, 0, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d,
    0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xae, 0x42, 0x60, 0x82,
];

/// What an attacker's page could have the model's code write: an SVG
/// whose script would run in planboard's origin if it were opened as a
/// page of it.
const SVG: &str = r#"<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><script>fetch('/api/plans',{method:'POST'})</script><rect width="40" height="20" style="fill: #1565c0"/></svg>"#;

async fn get(url: String) -> reqwest::Response {
    reqwest::get(url).await.unwrap()
}

#[tokio::test]
async fn images_a_run_wrote_are_served_as_images_an_svg_never_as_an_active_page_and_a_link_never_followed(
) {
    // A host file the link points at: an image with a secret in it.
    let host = tempfile::tempdir().unwrap();
    let secret = host.path().join("secret.png");
    std::fs::write(&secret, [PNG, b"HOST-SECRET-IMAGE"].concat()).unwrap();
    let fake = FakeOpenAi::start().await;
    fake.content(json!({"title": "chart", "subtasks": [
        {"name": "draw", "description": "draw the sales", "expected_outcome": "a chart", "depends_on": []}
    ]}));
    fake.content(json!({"action": "complete", "result": "drawn"}));
    fake.push(Fake::Content(
        "The trend is in trend.svg; the totals in sales chart.png.".into(),
    ));
    let server = server(&fake, Vec::new()).await;
    let (status, view) = server
        .post(
            "/api/runs",
            json!({"task": "Draw the sales", "mode": "simple", "approval_required": false}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    let run = view["id"].as_str().unwrap().to_string();
    let plan = view["plan_id"].as_str().unwrap().to_string();
    let mut done = Value::Null;
    for _ in 0..400 {
        let (_, view) = server.get(&format!("/api/runs/{run}")).await;
        if view["state"] == "done" {
            done = view;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(done["state"], "done", "{done}");
    // What the run's code wrote (the jail writes the workspace the host
    // sees): a chart, an SVG with a script, a page named like an image,
    // and a link named chart.png to the host's file.
    let ws = workspaces(&server).join(&run);
    std::fs::write(ws.join("sales chart.png"), PNG).unwrap();
    std::fs::write(ws.join("trend.svg"), SVG).unwrap();
    std::fs::write(ws.join("page.png"), "<html><script>alert(1)</script>").unwrap();
    std::os::unix::fs::symlink(&secret, ws.join("chart.png")).unwrap();

    // Listed with their addresses; the link is not listed.
    let (status, files) = server.get(&format!("/api/runs/{run}/artifacts")).await;
    assert_eq!(status, StatusCode::OK, "{files}");
    let listed: Vec<(&str, bool, &str)> = files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap(),
                f["image"].as_bool().unwrap(),
                f["url"].as_str().unwrap(),
            )
        })
        .collect();
    let chart_url = format!("/api/runs/{run}/artifacts/sales%20chart.png");
    let svg_url = format!("/api/runs/{run}/artifacts/trend.svg");
    assert_eq!(
        listed,
        [
            (
                "page.png",
                true,
                &*format!("/api/runs/{run}/artifacts/page.png")
            ),
            ("sales chart.png", true, &*chart_url),
            ("trend.svg", true, &*svg_url),
        ],
        "{files}"
    );

    // The chart: its bytes, as a PNG, never sniffed.
    let response = get(server.url(&chart_url)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "image/png");
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    assert_eq!(response.bytes().await.unwrap().as_ref(), PNG);

    // A page named like an image is not served as one (nor as a page).
    let response = get(server.url(&format!("/api/runs/{run}/artifacts/page.png"))).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");

    // The SVG: an image for <img>, but opened on its own a download, in a
    // sandbox with no script and no loads: never an active page here.
    let response = get(server.url(&svg_url)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "image/svg+xml");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let policy = headers["content-security-policy"].to_str().unwrap();
    assert!(
        policy.starts_with("sandbox; default-src 'none'"),
        "{policy}"
    );
    assert!(!policy.contains("allow-scripts"), "{policy}");
    let disposition = headers["content-disposition"].to_str().unwrap();
    assert!(disposition.starts_with("attachment"), "{disposition}");
    assert_eq!(response.text().await.unwrap(), SVG);

    // The link named chart.png is not followed: no file, no secret.
    let response = get(server.url(&format!("/api/runs/{run}/artifacts/chart.png"))).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body = response.text().await.unwrap();
    assert!(!body.contains("HOST-SECRET"), "{body}");

    // The activity page shows the images as <img>, the link not at all.
    let (status, html) = page(&server, &format!("/plans/{plan}/activity")).await;
    assert_eq!(status, StatusCode::OK);
    for url in [&chart_url, &svg_url] {
        assert!(
            html.contains(&format!(r#"<img src="{url}""#)),
            "{url} is not shown: {html}"
        );
    }
    assert!(
        !html.contains(&format!("/api/runs/{run}/artifacts/chart.png")),
        "{html}"
    );
    assert!(!html.contains("<script>fetch"), "{html}");
}
