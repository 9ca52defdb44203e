//! Starting a real server for a test, and small HTTP helpers.

use std::sync::OnceLock;
use std::time::Duration;

use leptos::config::LeptosOptions;
use reqwest::{Client, Method, StatusCode};
use serde_json::Value;
use server::config::{Access, Config};

pub struct TestServer {
    pub base: String,
    pub client: Client,
    pub services: server::Services,
    /// Keeps the SQLite file alive for the test.
    pub _dir: Option<tempfile::TempDir>,
    token: Option<String>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// The site scripts/build.sh makes, by its absolute path (the tests run
/// in `server/`, where a relative `target/site` holds nothing).
pub const SITE_ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/site");

pub fn options() -> LeptosOptions {
    LeptosOptions::builder()
        .output_name(server::SITE_NAME)
        .site_root(SITE_ROOT)
        .build()
}

/// The page routes, computed once for the whole test binary: computing them
/// stalls any page another test renders at that moment (see
/// `server::page_routes`), and `OnceLock` makes every other test wait for
/// the one computation before it can start a server.
fn page_routes() -> Vec<leptos_axum::AxumRouteListing> {
    static ROUTES: OnceLock<Vec<leptos_axum::AxumRouteListing>> = OnceLock::new();
    ROUTES.get_or_init(server::page_routes).clone()
}

impl TestServer {
    /// A server on a fresh SQLite file, in local mode as user `tester`.
    pub async fn start() -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("plans.db").display());
        let mut server = TestServer::on(&url, local()).await;
        server._dir = Some(dir);
        server
    }

    pub async fn on(url: &str, access: Access) -> TestServer {
        let config = Config {
            lease: Duration::from_secs(3600),
            ..Config::defaults(url, access)
        };
        TestServer::with_config(&config, |_| {}).await
    }

    /// A server on `config`; `adjust` may change the services (say, the
    /// keep-alive interval) before the router is built.
    pub async fn with_config(
        config: &Config,
        adjust: impl FnOnce(&mut server::Services),
    ) -> TestServer {
        let mut services = server::start(config).await.expect("server starts");
        adjust(&mut services);
        let app = server::router_with_pages(options(), services.clone(), page_routes());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            // With each connection's address, as the binary serves.
            let app = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
                .expect("serve");
        });
        TestServer {
            base: format!("http://{addr}"),
            client: Client::new(),
            services,
            _dir: None,
            token: None,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Shuts the server down as the binary does (streams get `shutdown`,
    /// requests in flight finish) and waits until it no longer listens;
    /// its store closes with it.
    pub async fn stop(mut self) {
        self.services.shutdown();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(10), task)
                .await
                .expect("the server stops within 10 s")
                .expect("the server task ends cleanly");
        }
    }

    pub fn with_token(mut self, token: &str) -> TestServer {
        self.token = Some(token.to_string());
        self
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = self.client.request(method, self.url(path));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request");
        let status = response.status();
        let text = response.text().await.expect("body");
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(Method::POST, path, Some(body)).await
    }

    /// Creates a plan and returns its id.
    pub async fn create(&self, body: Value) -> String {
        let (status, plan) = self.post("/api/plans", body).await;
        assert_eq!(status, StatusCode::CREATED, "{plan}");
        plan["plan"]["id"].as_str().expect("id").to_string()
    }

    pub async fn plan(&self, id: &str) -> Value {
        let (status, view) = self.get(&format!("/api/plans/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{view}");
        view["plan"].clone()
    }
}

/// A file of the test environment that `scripts/test` names in `var` (a
/// test agent, an SDK's client): it must be there when named; unnamed (a
/// bare `cargo test`), the test that needs it says so and is skipped.
pub fn test_file(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(path) => {
            assert!(
                std::path::Path::new(&path).is_file(),
                "{var} names no file: {path}"
            );
            Some(path)
        }
        Err(_) => {
            eprintln!("skipped: {var} is not set (scripts/test sets it)");
            None
        }
    }
}

pub fn local() -> Access {
    Access::Local {
        user: "tester".into(),
    }
}

/// A plan of three subtasks: 1, 2 after 1, 3 after 2.
pub fn chain(title: &str) -> Value {
    serde_json::json!({
        "title": title,
        "goal": "test the API",
        "subtasks": [
            {"name": "gather"},
            {"name": "analyse", "dependencies": [1]},
            {"name": "report", "dependencies": [2]}
        ]
    })
}

pub fn state_of(plan: &Value, subtask: u64) -> String {
    plan["subtasks"]
        .as_array()
        .expect("subtasks")
        .iter()
        .find(|s| s["id"] == subtask)
        .map(|s| s["state"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

/// The `planboard` binary as a child process (for tests that need a real
/// process: several on one database, or one killed with SIGKILL).
pub struct Process {
    pub child: std::process::Child,
    pub base: String,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `planboard` on `port` with `vars` (besides the site's) and waits
/// until `/healthz` answers.
pub async fn spawn_planboard(port: u16, vars: &[(&str, String)]) -> Process {
    use std::process::{Command, Stdio};
    let mut command = Command::new(env!("CARGO_BIN_EXE_planboard"));
    command
        .env("LEPTOS_OUTPUT_NAME", "planboard")
        .env("LEPTOS_SITE_ROOT", SITE_ROOT)
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (name, value) in vars {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("planboard starts");
    let base = format!("http://127.0.0.1:{port}");
    for _ in 0..150 {
        if reqwest::get(format!("{base}/healthz")).await.is_ok() {
            return Process { child, base };
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("planboard did not come up on port {port}");
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
