//! What the agent reads or leaves, against a real server process: a page
//! built to exhaust an HTML tree builder's memory, read by a run; the
//! server must finish the run and stay small.

use std::time::Duration;

use serde_json::{json, Value};

use crate::fake_openai::FakeOpenAi;
use crate::support::{free_port, spawn_planboard};

/// 25 KiB: distinct formatting elements opened in a paragraph, then
/// thousands of paragraphs, each of which makes a tree builder re-open
/// every one of them (1.3 GB through html2text's tree).
fn amplifying_page() -> String {
    let mut page = String::from("<html><body><p>");
    for i in 0..300 {
        let tag = ["b", "i", "font", "u", "em"][i % 5];
        page.push_str(&format!("<{tag} id={i}>"));
    }
    for _ in 0..4_000 {
        page.push_str("<p>x");
    }
    page
}

/// Serves `body` as HTML to every request on a loopback port.
async fn serve_page(body: String) -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let body = body.clone();
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                let _ = socket.read(&mut buffer).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
            });
        }
    });
    addr
}

/// A process's peak resident memory (`VmHWM`), in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_built_to_exhaust_a_tree_builder_is_read_and_the_server_stays_small() {
    let page = serve_page(amplifying_page()).await;
    let fake = FakeOpenAi::start().await;
    fake.content(json!({"title": "read", "subtasks": [
        {"name": "read the page", "description": "read it", "expected_outcome": "its text", "depends_on": []}
    ]}));
    fake.content(
        json!({"action": "fetch_url", "arguments": {"url": format!("http://{page}/page")}}),
    );
    fake.content(json!({"action": "complete", "result": "the page says x"}));
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let process = spawn_planboard(
        port,
        &[
            (
                "DATABASE_URL",
                format!("sqlite://{}", dir.path().join("a.db").display()),
            ),
            (
                "PLANBOARD_WORKSPACES",
                dir.path().join("ws").display().to_string(),
            ),
            ("PLANBOARD_LLM_MODEL", "fake".into()),
            ("PLANBOARD_LLM_BASE_URL", fake.url.clone()),
            ("PLANBOARD_FETCH_ALLOW", page.to_string()),
            ("PLANBOARD_SANDBOX", "off".into()),
        ],
    )
    .await;
    let pid = process.child.id();
    let before = peak_kib(pid);
    let client = reqwest::Client::new();
    let view: Value = client
        .post(format!("{}/api/runs", process.base))
        .json(&json!({"task": "Read the page", "mode": "simple", "approval_required": false}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run = view["id"].as_str().expect("a run").to_string();
    let mut state = String::new();
    for _ in 0..600 {
        let view: Value = client
            .get(format!("{}/api/runs/{run}", process.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        state = view["state"].as_str().unwrap_or_default().to_string();
        if ["done", "failed", "paused"].contains(&state.as_str()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state, "done");
    let events: Value = client
        .get(format!("{}/api/runs/{run}/events", process.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let call = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "tool_call")
        .expect("the fetch is on the run log")
        .clone();
    assert_eq!(call["entry"]["ok"], true, "{call}");
    assert!(
        call["entry"]["result"].as_str().unwrap().contains("x\n\nx"),
        "{call}"
    );
    let grew = peak_kib(pid).saturating_sub(before);
    assert!(
        grew < 200 * 1024,
        "the server's peak memory grew by {grew} KiB reading a 25 KiB page"
    );
    // And it still answers.
    let health = client
        .get(format!("{}/healthz", process.base))
        .send()
        .await
        .unwrap();
    assert!(health.status().is_success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_named_pipe_left_in_a_workspace_fails_fast_and_600_requests_for_it_leave_the_server_working(
) {
    let fake = FakeOpenAi::start().await;
    let server = crate::inputs::server(&fake, Vec::new()).await;
    let form = reqwest::multipart::Form::new()
        .part(
            "run",
            crate::inputs::run_part(json!({"task": "Look at the notes", "mode": "simple"})),
        )
        .part(
            "files",
            reqwest::multipart::Part::bytes(b"some notes\n".to_vec()).file_name("notes.txt"),
        );
    let (status, view) = crate::inputs::upload(&server, form).await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{view}");
    let run = view["id"].as_str().unwrap().to_string();
    // The run's code leaves a named pipe, and one under a listed name.
    let ws = crate::inputs::workspaces(&server).join(&run);
    for name in ["pipe.txt", "sub/deep.txt"] {
        let path = ws.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
    }
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let (status, files) = server.get(&format!("/api/runs/{run}/artifacts")).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{files}");
    let names: Vec<&str> = files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["notes.txt"], "a pipe is not a file of the run");
    let zip = client
        .get(server.url(&format!("/api/runs/{run}/workspace.zip")))
        .send()
        .await
        .unwrap();
    assert_eq!(zip.status(), reqwest::StatusCode::OK);
    let one = client
        .get(server.url(&format!("/api/runs/{run}/artifacts/pipe.txt")))
        .send()
        .await
        .unwrap();
    assert_eq!(one.status(), reqwest::StatusCode::NOT_FOUND);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // 600 reads of it at once (any page's <img> can send them in local
    // mode): each answered, none holding a thread.
    let url = server.url(&format!("/api/runs/{run}/artifacts/sub/deep.txt"));
    let reads: Vec<_> = (0..600)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { client.get(url).send().await.map(|r| r.status()) })
        })
        .collect();
    for read in reads {
        let status = read.await.unwrap().expect("answered, not hung");
        assert!(
            [
                reqwest::StatusCode::NOT_FOUND,
                reqwest::StatusCode::SERVICE_UNAVAILABLE
            ]
            .contains(&status),
            "{status}"
        );
    }
    let (status, files) = server.get(&format!("/api/runs/{run}/artifacts")).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{files}");
    let health = client.get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), reqwest::StatusCode::OK);
}

#[test]
fn healthz_says_so_when_the_blocking_pool_takes_no_work() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = crate::support::TestServer::start().await;
        let client = reqwest::Client::new();
        let ok = client.get(server.url("/healthz")).send().await.unwrap();
        assert_eq!(ok.status(), reqwest::StatusCode::OK);
        // Every blocking thread held (as 560 reads of a pipe once held them).
        let (release, held) = std::sync::mpsc::channel::<()>();
        let held = std::sync::Arc::new(std::sync::Mutex::new(held));
        for _ in 0..4 {
            let held = held.clone();
            tokio::task::spawn_blocking(move || {
                let _ = held.lock().unwrap().recv_timeout(Duration::from_secs(30));
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let starved = client.get(server.url("/healthz")).send().await.unwrap();
        assert_eq!(starved.status(), reqwest::StatusCode::SERVICE_UNAVAILABLE);
        assert!(starved.text().await.unwrap().contains("starved"));
        for _ in 0..4 {
            let _ = release.send(());
        }
    });
}

#[tokio::test]
async fn the_server_raises_its_open_files_limit_to_the_hard_one_at_start() {
    // The hard limit stays this process's own (raising it needs root's
    // CAP_SYS_RESOURCE); the soft one starts at 1,024.
    let own = std::fs::read_to_string("/proc/self/limits").unwrap();
    let hard: u64 = own
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(4))
        .and_then(|h| h.parse().ok())
        .unwrap_or(1024);
    if hard <= 1024 {
        eprintln!("skipped: this machine's hard limit ({hard}) leaves nothing to raise");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut command = std::process::Command::new("prlimit");
    command
        .arg(format!("--nofile=1024:{hard}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_planboard"))
        .env("LEPTOS_OUTPUT_NAME", "planboard")
        .env("LEPTOS_SITE_ROOT", crate::support::SITE_ROOT)
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env(
            "DATABASE_URL",
            format!("sqlite://{}", dir.path().join("n.db").display()),
        )
        .env("PLANBOARD_LLM", "none")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = command.spawn().expect("prlimit starts planboard");
    let mut limits = String::new();
    for _ in 0..100 {
        if reqwest::get(format!("http://127.0.0.1:{port}/healthz"))
            .await
            .is_ok()
        {
            limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id())).unwrap();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap_or_default()
        .to_string();
    let numbers: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    let hard = hard.to_string();
    assert_eq!(numbers, [hard.as_str(), hard.as_str()], "{line}");
}
