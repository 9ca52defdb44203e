//! The site's static files: the board's wasm, script and stylesheet under
//! `/pkg`, and the files `public/` put at the site's top (`favicon.svg`,
//! `robots.txt`). They are answered here, before any viewer is looked up
//! and before the pages' fallback: a file that is not there is a plain
//! 404, never a rendered page (whose viewer lookup, with no session on a
//! static path, said 403 "sign in first" for a missing wasm file).
//!
//! Which files exist is the build's to say (`scripts/build.sh`); the name
//! the pages ask for is [`crate::SITE_NAME`], compiled in from the same
//! `LEPTOS_OUTPUT_NAME` (`.cargo/config.toml` sets it for every cargo
//! command), so a page never asks for a file the build did not make.

use std::path::{Path, PathBuf};

use axum::handler::HandlerWithoutStateExt;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use leptos::config::LeptosOptions;
use tower_http::services::{ServeDir, ServeFile};

/// Names browsers ask for on their own at a site's top.
const ASKED_BY_BROWSERS: [&str; 3] = ["favicon.ico", "apple-touch-icon.png", "robots.txt"];

async fn not_found() -> impl IntoResponse {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "not found\n",
    )
}

/// The files under `/{site_pkg_dir}` and the regular files at the site
/// root's top, as the site root holds them when the server starts.
pub fn routes(options: &LeptosOptions) -> Router {
    let root = PathBuf::from(&*options.site_root);
    let pkg_dir = options.site_pkg_dir.trim_matches('/').to_string();
    let files = ServeDir::new(root.join(&pkg_dir))
        .append_index_html_on_directories(false)
        .not_found_service(not_found.into_service());
    let mut router = Router::new().nest_service(&format!("/{pkg_dir}"), files);
    let mut served = Vec::new();
    for (name, path) in top_files(&root, &pkg_dir) {
        router = router.route_service(&format!("/{name}"), ServeFile::new(path));
        served.push(name);
    }
    for name in ASKED_BY_BROWSERS {
        if !served.iter().any(|s| s == name) {
            router = router.route(&format!("/{name}"), get(not_found));
        }
    }
    super::bounded_responses(router)
}

/// The regular files at `root`'s top (not the package folder), by name.
fn top_files(root: &Path, pkg_dir: &str) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let plain = !name.is_empty()
                && name != pkg_dir
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
            plain.then(|| (name, e.path()))
        })
        .collect()
}

/// Whether the site root holds the files the pages ask for; the names of
/// those it lacks (the server serves pages without them, which never come
/// alive, so `main` says so at start).
pub fn missing(options: &LeptosOptions) -> Vec<PathBuf> {
    let pkg = Path::new(&*options.site_root).join(&*options.site_pkg_dir);
    ["js", "wasm", "css"]
        .iter()
        .map(|ext| pkg.join(format!("{}.{ext}", options.output_name)))
        .filter(|path| !path.is_file())
        .collect()
}
