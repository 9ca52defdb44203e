//! A run's material and tools over HTTP: files uploaded with the run
//! (multipart) or copied from an allowed folder land in its workspace
//! before planning and are named in the planner's prompt; the workspace
//! downloads as a zip; a run uses only the tools it chose; the code runner
//! computes from an uploaded file inside its sandbox.

use std::time::Duration;

use reqwest::multipart::{Form, Part};
use reqwest::StatusCode;
use serde_json::{json, Value};
use server::config::Config;

use crate::fake_openai::{shape, FakeOpenAi};
use crate::support::{local, TestServer};

/// A server driving runs with the fake model; `roots` are the folders
/// runs may start from.
pub(crate) async fn server(fake: &FakeOpenAi, roots: Vec<std::path::PathBuf>) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        lease: Duration::from_secs(3600),
        llm: Some(fake.config(Duration::from_secs(10))),
        workspaces: dir.path().join("workspaces"),
        run_lease: Duration::from_secs(3),
        workspace_roots: roots,
        ..Config::defaults(
            format!("sqlite://{}", dir.path().join("runs.db").display()),
            local(),
        )
    };
    let mut server = TestServer::with_config(&config, |_| {}).await;
    server._dir = Some(dir);
    server
}

pub(crate) fn workspaces(server: &TestServer) -> std::path::PathBuf {
    server._dir.as_ref().unwrap().path().join("workspaces")
}

pub(crate) async fn upload(server: &TestServer, form: Form) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .post(server.url("/api/runs"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

pub(crate) fn run_part(run: Value) -> Part {
    Part::text(run.to_string())
        .mime_str("application/json")
        .unwrap()
}

async fn wait_until(server: &TestServer, run: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..400 {
        let (_, view) = server.get(&format!("/api/runs/{run}")).await;
        if done(&view) {
            return view;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("run {run} never got there");
}

/// The user messages the fake model got for requests of `kind`.
fn prompts(fake: &FakeOpenAi, kind: &str) -> Vec<String> {
    fake.requests()
        .iter()
        .filter(|r| shape(r) == kind)
        .map(|r| r["messages"].to_string())
        .collect()
}

#[tokio::test]
async fn uploaded_files_reach_the_workspace_and_the_planners_prompt_before_planning() {
    let fake = FakeOpenAi::start().await;
    let server = server(&fake, Vec::new()).await;
    let form = Form::new()
        .part(
            "run",
            run_part(json!({"task": "Total the sales per region", "mode": "simple"})),
        )
        .part(
            "files",
            Part::bytes(b"region,amount\nnorth,3\nsouth,4\nnorth,5\n".to_vec())
                .file_name("sales.csv"),
        )
        .part(
            "files",
            Part::bytes(vec![0x89, b'P', b'N', b'G', 0]).file_name("../logo.png"),
        );
    let (status, view) = upload(&server, form).await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    let run = view["id"].as_str().unwrap().to_string();
    let inputs = &view["config"]["inputs"];
    assert_eq!(inputs[0]["path"], "sales.csv");
    assert_eq!(inputs[0]["bytes"], 38);
    assert_eq!(inputs[1]["path"], "logo.png", "only the name's last part");
    assert_eq!(inputs[1]["preview"], Value::Null, "binary");
    wait_until(&server, &run, |v| v["state"] == "awaiting_approval").await;
    let planner = prompts(&fake, "plan");
    assert!(
        planner[0].contains("sales.csv (38 bytes)") && planner[0].contains("north,3"),
        "the planner is told about the file and its start: {}",
        planner[0]
    );
    let (status, files) = server.get(&format!("/api/runs/{run}/artifacts")).await;
    assert_eq!(status, StatusCode::OK);
    let paths: Vec<&str> = files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["logo.png", "sales.csv"]);
    assert_eq!(
        files[1]["preview"],
        "region,amount\nnorth,3\nsouth,4\nnorth,5\n"
    );
    // The whole workspace as a zip holds both files, byte for byte.
    let response = reqwest::get(server.url(&format!("/api/runs/{run}/workspace.zip")))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/zip");
    let bytes = response.bytes().await.unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
    let mut sales = String::new();
    std::io::Read::read_to_string(&mut archive.by_name("sales.csv").unwrap(), &mut sales).unwrap();
    assert_eq!(sales, "region,amount\nnorth,3\nsouth,4\nnorth,5\n");
    assert_eq!(archive.len(), 2);
}

#[tokio::test]
async fn uploads_over_the_limits_are_refused_with_the_limit_and_start_nothing() {
    let fake = FakeOpenAi::start().await;
    let server = server(&fake, Vec::new()).await;
    let big = vec![b'a'; run_model::MAX_FILE_BYTES + 1];
    let form = Form::new()
        .part("run", run_part(json!({"task": "read it"})))
        .part("files", Part::bytes(big).file_name("big.txt"));
    let (status, body) = upload(&server, form).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("big.txt has"),
        "{body}"
    );
    // Over the whole body's limit: the multipart reader stops it.
    let form = Form::new()
        .part("run", run_part(json!({"task": "read it"})))
        .part(
            "files",
            Part::bytes(vec![b'a'; server::UPLOAD_BODY_LIMIT + 1]).file_name("huge.txt"),
        );
    let (status, body) = upload(&server, form).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    // A missing `run` part is a 400 that says so; one that is not a run
    // is refused as content (422), naming the part.
    let (status, body) = upload(
        &server,
        Form::new().part("files", Part::bytes(b"x".to_vec()).file_name("a.txt")),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("`run`"),
        "{body}"
    );
    let (status, body) = upload(
        &server,
        Form::new().part("run", Part::text("{\"task\": 1}")),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("the part `run`"),
        "{body}"
    );
    // A `files` part that is a form field, not a file (no file name), is
    // refused, not stored under a made-up name (the API fuzzer's find).
    let (status, body) = upload(
        &server,
        Form::new()
            .part("run", Part::text("{\"task\": \"x\"}"))
            .part("files", Part::text("{}")),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("filename"),
        "{body}"
    );
    // Nothing started, nothing staged, nothing left behind.
    let (_, runs) = server.get("/api/runs").await;
    assert_eq!(runs, json!([]));
    assert!(fake.requests().is_empty());
    let left: Vec<_> = std::fs::read_dir(workspaces(&server).join(".incoming"))
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn a_run_starts_from_a_copy_of_an_allowed_folder_and_never_from_outside() {
    let fake = FakeOpenAi::start().await;
    let outside = tempfile::tempdir().unwrap();
    let root = outside.path().join("projects");
    std::fs::create_dir_all(root.join("tool/src")).unwrap();
    std::fs::write(root.join("tool/src/lib.py"), "def f():\n    return 1\n").unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let server = server(&fake, vec![root.clone()]).await;
    let (status, view) = server
        .post(
            "/api/runs",
            json!({"task": "Review the code", "source": root.join("tool").display().to_string()}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    assert_eq!(view["config"]["inputs"][0]["path"], "src/lib.py");
    let run = view["id"].as_str().unwrap();
    let copied = workspaces(&server).join(run).join("src/lib.py");
    assert_eq!(
        std::fs::read_to_string(copied).unwrap(),
        "def f():\n    return 1\n"
    );
    for source in [
        outside.path().display().to_string(),
        format!("{}/../secret.txt", root.display()),
        "/etc".to_string(),
    ] {
        let (status, body) = server
            .post("/api/runs", json!({"task": "Review", "source": source}))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{source}: {body}");
        let message = body["message"].as_str().unwrap();
        assert!(
            message.contains("PLANBOARD_WORKSPACE_ROOTS") || message.contains("No such file"),
            "{source}: {message}"
        );
    }
    let (_, runs) = server.get("/api/runs").await;
    assert_eq!(
        runs.as_array().unwrap().len(),
        1,
        "only the allowed one started"
    );
}

#[tokio::test]
async fn a_run_offers_the_model_only_the_tools_it_chose() {
    let fake = FakeOpenAi::start().await;
    let server = server(&fake, Vec::new()).await;
    let (status, tools) = server.get("/api/agent/tools").await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for name in ["list_files", "read_file", "write_file", "fetch_url"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    assert!(
        !names.contains(&"web_search"),
        "no search endpoint configured"
    );
    let (status, body) = server
        .post("/api/runs", json!({"task": "x", "tools": ["teleport"]}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("no tool named teleport"));
    let (status, view) = server
        .post(
            "/api/runs",
            json!({"task": "Read the notes", "mode": "simple", "approval_required": false,
                   "tools": ["read_file"]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    let run = view["id"].as_str().unwrap().to_string();
    wait_until(&server, &run, |v| v["state"] == "done").await;
    let action = fake
        .requests()
        .into_iter()
        .find(|r| shape(r) == "action")
        .unwrap();
    let schema = action["response_format"]["json_schema"]["schema"].to_string();
    assert!(schema.contains("read_file"), "{schema}");
    for other in ["write_file", "fetch_url", "run_shell"] {
        assert!(!schema.contains(other), "{other} is not offered: {schema}");
    }
}

/// The sandbox is there (or CI, which requires it, fails here).
fn sandbox_works() -> bool {
    match agent::tools::sandbox::Sandbox::detect(agent::tools::sandbox::SandboxLimits::default()) {
        Ok(_) => true,
        Err(e) if std::env::var_os("PLANBOARD_REQUIRE_SANDBOX").is_some() => {
            panic!("PLANBOARD_REQUIRE_SANDBOX is set but {e}")
        }
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

#[tokio::test]
async fn the_executor_computes_from_an_uploaded_file_with_run_python_in_the_sandbox() {
    if !sandbox_works() {
        return;
    }
    let fake = FakeOpenAi::start().await;
    // The replies in the order they are asked for: the plan, then the
    // executor's two turns (the mode is forced: no classifier call).
    fake.content(json!({"title": "sales", "subtasks": [
        {"name": "total", "description": "total the amounts of sales.csv", "expected_outcome": "the total", "depends_on": []}
    ]}));
    let code = "import csv\nrows = list(csv.DictReader(open('sales.csv')))\nprint(sum(int(r['amount']) for r in rows))\nopen('total.txt', 'w').write('12')";
    fake.content(json!({"action": "run_python", "arguments": {"code": code}}));
    fake.content(json!({"action": "complete", "result": "the total is 12"}));
    let server = server(&fake, Vec::new()).await;
    let form = Form::new()
        .part(
            "run",
            run_part(
                json!({"task": "Total the sales", "mode": "simple", "approval_required": false}),
            ),
        )
        .part(
            "files",
            Part::bytes(b"region,amount\nnorth,3\nsouth,4\nnorth,5\n".to_vec())
                .file_name("sales.csv"),
        );
    let (status, view) = upload(&server, form).await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    let run = view["id"].as_str().unwrap().to_string();
    let view = wait_until(&server, &run, |v| {
        ["done", "failed", "paused"].contains(&v["state"].as_str().unwrap_or_default())
    })
    .await;
    let (_, events) = server.get(&format!("/api/runs/{run}/events")).await;
    assert_eq!(view["state"], "done", "{view}\n{events}");
    let call = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "tool_call")
        .expect("a tool call on the run log")
        .clone();
    assert_eq!(call["entry"]["name"], "run_python");
    assert_eq!(call["entry"]["ok"], true, "{call}");
    assert!(call["entry"]["arguments"]["code"]
        .as_str()
        .unwrap()
        .contains("csv"));
    let result = call["entry"]["result"].as_str().unwrap();
    assert!(result.contains("exit status 0"), "{result}");
    assert!(result.contains("12"), "{result}");
    // The model saw the output, and the file it wrote is an artifact.
    let second = fake
        .requests()
        .into_iter()
        .filter(|r| shape(r) == "action")
        .nth(1)
        .unwrap();
    assert!(
        second["messages"]
            .to_string()
            .contains("Result of run_python"),
        "{second}"
    );
    let total = workspaces(&server).join(&run).join("total.txt");
    assert_eq!(std::fs::read_to_string(total).unwrap(), "12");
}

#[tokio::test]
async fn links_and_odd_names_planted_by_run_python_never_lead_the_server_out_of_the_workspace() {
    if !sandbox_works() {
        return;
    }
    // What a page the model fetched could make it do: plant a dangling
    // link to a host path, links to a host secret and folder, and a file
    // named like a Windows path up to the server's database.
    let host = tempfile::tempdir().unwrap();
    let secret = host.path().join("secret.txt");
    std::fs::write(&secret, "HOST-SECRET-42").unwrap();
    let cron = host.path().join("cron-x");
    let fake = FakeOpenAi::start().await;
    fake.content(json!({"title": "plant", "subtasks": [
        {"name": "plant", "description": "plant links", "expected_outcome": "", "depends_on": []}
    ]}));
    let code = format!(
        "import os\nos.symlink({cron:?}, 'notes.md')\nos.symlink({secret:?}, 'leak.txt')\n\
         os.symlink({dir:?}, 'hostdir')\nopen('..\\\\..\\\\runs.db', 'w').write('x')\n\
         open('real.txt', 'w').write('mine')\nprint(sorted(os.listdir('.')))",
        cron = cron.display().to_string(),
        secret = secret.display().to_string(),
        dir = host.path().display().to_string(),
    );
    fake.content(json!({"action": "run_python", "arguments": {"code": code}}));
    fake.content(json!({"action": "write_file", "arguments": {"path": "notes.md", "content": "* * * * * root evil"}}));
    fake.content(json!({"action": "write_file", "arguments": {"path": "hostdir/new.txt", "content": "evil"}}));
    fake.content(json!({"action": "read_file", "arguments": {"path": "leak.txt"}}));
    fake.content(json!({"action": "complete", "result": "planted"}));
    let server = server(&fake, Vec::new()).await;
    let (status, view) = server
        .post(
            "/api/runs",
            json!({"task": "Plant", "mode": "simple", "approval_required": false}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    let run = view["id"].as_str().unwrap().to_string();
    let view = wait_until(&server, &run, |v| {
        ["done", "failed", "paused"].contains(&v["state"].as_str().unwrap_or_default())
    })
    .await;
    let (_, events) = server.get(&format!("/api/runs/{run}/events")).await;
    let log = events.to_string();
    assert!(log.contains("leak.txt"), "the links were planted: {log}");
    // Written through: nothing on the host; read through: no secret.
    assert!(!cron.exists(), "write_file wrote through the dangling link");
    assert!(
        !host.path().join("new.txt").exists(),
        "written through a linked folder"
    );
    assert!(
        !log.contains("HOST-SECRET-42"),
        "read_file read the host secret: {log}"
    );
    assert!(
        view["state"] == "done" || view["state"] == "failed",
        "{view}"
    );
    // Listed and previewed: only the run's own file.
    let (status, files) = server.get(&format!("/api/runs/{run}/artifacts")).await;
    assert_eq!(status, StatusCode::OK);
    let paths: Vec<&str> = files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["real.txt"], "{files}");
    assert!(!files.to_string().contains("HOST-SECRET"), "{files}");
    // One artifact: the link, the backslash name and `..` are refused.
    for path in [
        "leak.txt",
        "hostdir/secret.txt",
        "..%5C..%5Cruns.db",
        "..%2F..%2Fruns.db",
    ] {
        let response = reqwest::get(server.url(&format!("/api/runs/{run}/artifacts/{path}")))
            .await
            .unwrap();
        let status = response.status();
        let body = response.text().await.unwrap();
        assert!(status.is_client_error(), "{path}: {status} {body}");
        assert!(!body.contains("HOST-SECRET"), "{path}: {body}");
    }
    // Zipped: only the run's own file.
    let bytes = reqwest::get(server.url(&format!("/api/runs/{run}/workspace.zip")))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let archive = zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
    let names: Vec<&str> = archive.file_names().collect();
    assert_eq!(names, ["real.txt"]);
    // Copied by Run again: the links stay behind, the file comes along.
    let (status, second) = server
        .post(&format!("/api/runs/{run}/again"), json!({"from": 1}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    let copy = workspaces(&server).join(second["id"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(copy.join("real.txt")).unwrap(),
        "mine"
    );
    for name in ["leak.txt", "notes.md", "hostdir"] {
        assert!(
            std::fs::symlink_metadata(copy.join(name)).is_err(),
            "{name} was copied"
        );
    }
    assert!(!copy.join("secret.txt").exists());
}

async fn pending(server: &TestServer, run: &str) -> Value {
    for _ in 0..400 {
        let (status, calls) = server.get(&format!("/api/runs/{run}/tool-calls")).await;
        assert_eq!(status, StatusCode::OK, "{calls}");
        if !calls.as_array().unwrap().is_empty() {
            return calls[0].clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("run {run} never asked");
}

#[tokio::test]
async fn run_shell_waits_for_a_persons_decision_over_http_and_a_denial_reaches_the_model() {
    if !sandbox_works() {
        return;
    }
    let fake = FakeOpenAi::start().await;
    let server = server(&fake, Vec::new()).await;
    let one = |name: &str| {
        json!({"title": "t", "subtasks": [
            {"name": name, "description": "use the shell", "expected_outcome": "", "depends_on": []}
        ]})
    };
    let shell = |command: &str| json!({"action": "run_shell", "arguments": {"command": command}});
    // run_shell is `auto` by default (the jail is the guard); this run
    // tightens it to `ask`, which a run may do.
    let start = json!({"task": "Use the shell", "mode": "simple", "approval_required": false,
        "policies": {"run_shell": "ask"}});
    // First run: approved as edited.
    fake.content(one("write"));
    fake.content(shell("echo hi > shell.txt"));
    fake.content(json!({"action": "complete", "result": "written"}));
    let (_, view) = server.post("/api/runs", start.clone()).await;
    let run = view["id"].as_str().unwrap().to_string();
    let call = pending(&server, &run).await;
    assert_eq!(call["name"], "run_shell");
    assert_eq!(call["arguments"]["command"], "echo hi > shell.txt");
    let id = call["call"].as_str().unwrap();
    let (status, body) = server
        .post(
            &format!("/api/runs/{run}/tool-calls/nope"),
            json!({"verdict": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = server
        .post(
            &format!("/api/runs/{run}/tool-calls/{id}"),
            json!({"verdict": "edit", "arguments": {"command": "echo edited > shell.txt"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = server
        .post(
            &format!("/api/runs/{run}/tool-calls/{id}"),
            json!({"verdict": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "decided once: {body}");
    assert_eq!(body["error"], "decided");
    let view = wait_until(&server, &run, |v| v["state"] == "done").await;
    assert_eq!(view["state"], "done");
    let written = workspaces(&server).join(&run).join("shell.txt");
    assert_eq!(std::fs::read_to_string(written).unwrap(), "edited\n");
    // Second run: denied; the command never runs and the model reads why.
    fake.content(one("delete"));
    fake.content(shell("rm -rf ./*"));
    fake.content(json!({"action": "complete", "result": "not deleted"}));
    let (_, view) = server.post("/api/runs", start).await;
    let run = view["id"].as_str().unwrap().to_string();
    let call = pending(&server, &run).await;
    let id = call["call"].as_str().unwrap();
    let (status, body) = server
        .post(
            &format!("/api/runs/{run}/tool-calls/{id}"),
            json!({"verdict": "deny", "reason": "never delete the workspace"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_until(&server, &run, |v| v["state"] == "done").await;
    let last = fake
        .requests()
        .into_iter()
        .rfind(|r| shape(r) == "action")
        .unwrap();
    assert!(
        last["messages"]
            .to_string()
            .contains("never delete the workspace"),
        "{last}"
    );
    let (_, events) = server.get(&format!("/api/runs/{run}/events")).await;
    let kinds: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"tool_approval") && kinds.contains(&"tool_decision"));
    assert!(
        !kinds.contains(&"tool_call"),
        "a denied command never ran: {kinds:?}"
    );
}

#[tokio::test]
async fn files_added_to_a_running_run_land_next_to_its_own_and_the_agent_is_told() {
    let fake = FakeOpenAi::start().await;
    let server = server(&fake, Vec::new()).await;
    let form = Form::new()
        .part(
            "run",
            run_part(json!({"task": "Check the data", "mode": "simple"})),
        )
        .part("files", Part::bytes(b"a\n".to_vec()).file_name("data.csv"));
    let (status, view) = upload(&server, form).await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    let run = view["id"].as_str().unwrap().to_string();
    let plan = view["plan_id"].as_str().unwrap().to_string();
    wait_until(&server, &run, |v| v["state"] == "awaiting_approval").await;
    let response = reqwest::Client::new()
        .post(server.url(&format!("/api/runs/{run}/files")))
        .multipart(Form::new().part("files", Part::bytes(b"b\n".to_vec()).file_name("data.csv")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let placed: Value = response.json().await.unwrap();
    assert_eq!(placed[0]["path"], "data (2).csv", "the first one stays");
    let ws = workspaces(&server).join(&run);
    assert_eq!(std::fs::read_to_string(ws.join("data.csv")).unwrap(), "a\n");
    assert_eq!(
        std::fs::read_to_string(ws.join("data (2).csv")).unwrap(),
        "b\n"
    );
    let (status, _) = server
        .post(&format!("/api/plans/{plan}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    wait_until(&server, &run, |v| v["state"] == "done").await;
    let executor = prompts(&fake, "action").join("\n");
    assert!(
        executor.contains("added files to the workspace: data (2).csv (2 bytes)"),
        "{executor}"
    );
    // A finished run takes no more files.
    let response = reqwest::Client::new()
        .post(server.url(&format!("/api/runs/{run}/files")))
        .multipart(Form::new().part("files", Part::bytes(b"c".to_vec()).file_name("late.csv")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(!ws.join("late.csv").exists());
}

/// Seed 002's iterative batches over HTTP: a catalog uploaded with the run
/// is planned five items at a time; the first batch is the plan approved;
/// the run's view counts batches, items and the success rate; an input
/// that is not among the files is refused before the run exists.
#[tokio::test]
async fn a_run_goes_through_an_uploaded_catalog_a_batch_at_a_time() {
    let fake = FakeOpenAi::start().await;
    let server = server(&fake, Vec::new()).await;
    let catalog: String = (1..=12).map(|i| format!("tool_{i}\n")).collect();
    let run = json!({"task": "Check every tool in the catalog", "approval_required": true,
                     "batches": {"input": "tools.txt", "size": 5}});

    // The input must be one of the files: refused, nothing kept.
    let (status, body) = upload(
        &server,
        Form::new()
            .part("run", run_part(run.clone()))
            .part("files", Part::bytes(b"x\n".to_vec()).file_name("other.txt")),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body.to_string()
            .contains("tools.txt is not one of the run's files"),
        "{body}"
    );
    let (status, body) = server
        .post(
            "/api/runs",
            json!({"task": "t", "mode": "simple", "batches": {"input": "tools.txt"}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");

    let (status, started) = upload(
        &server,
        Form::new().part("run", run_part(run)).part(
            "files",
            Part::bytes(catalog.into_bytes()).file_name("tools.txt"),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let id = started["id"].as_str().unwrap().to_string();
    let waiting = wait_until(&server, &id, |v| v["state"] == "awaiting_approval").await;
    assert_eq!(waiting["batch_view"]["total_items"], 12);
    assert_eq!(waiting["batch_view"]["batch"], 1);
    assert_eq!(
        waiting["batch_view"]["batches"], 3,
        "12 items in batches of 5"
    );
    assert_eq!(waiting["classification"]["mode"], "complex");
    let plan_id = waiting["plan_id"].as_str().unwrap().to_string();
    let plan = server.plan(&plan_id).await;
    let names: Vec<&str> = plan["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "check item 1",
            "check item 2",
            "check item 3",
            "check item 4",
            "check item 5"
        ]
    );
    let (status, _) = server
        .post(&format!("/api/plans/{plan_id}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let done = wait_until(&server, &id, |v| v["state"] == "done").await;
    assert_eq!(done["batch_view"]["covered"], 12);
    assert_eq!(done["batch_view"]["done"], 12);
    assert_eq!(done["batch_view"]["batch"], 3);
    assert_eq!(done["batch_view"]["success_rate"], 1.0);
    assert!(done["answer"]
        .as_str()
        .unwrap()
        .ends_with("Covered 12 of 12 items in 3 batches: 12 done, 0 given up."));
    let batch_prompts = prompts(&fake, "batch");
    assert_eq!(batch_prompts.len(), 3, "one planning call per batch");
    assert!(batch_prompts[2].contains("Batch 3"), "{}", batch_prompts[2]);
    assert!(batch_prompts[2].contains("item 11: tool_11"));
    assert!(
        !batch_prompts[2].contains("item 1: tool_1\\n"),
        "earlier items are not listed again"
    );
    let plan = server.plan(&plan_id).await;
    assert_eq!(plan["subtasks"].as_array().unwrap().len(), 12);
    server.stop().await;
}
