//! The board's task box (`POST /plans/new/task`) as the API's `StartRun`:
//! every setting the form posts reaches the run's recorded config, and a
//! refusal goes back to the page the form was on with every field as it
//! was typed.

use reqwest::multipart::{Form, Part};
use reqwest::StatusCode;
use serde_json::Value;

use crate::fake_openai::FakeOpenAi;
use crate::inputs::server;
use crate::support::TestServer;

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Posts the task box as a browser does (multipart) and returns where it
/// sends the person.
async fn post(server: &TestServer, fields: &[(&str, &str)], files: &[(&str, &[u8])]) -> String {
    let mut form = Form::new();
    for (name, value) in fields {
        form = form.text(name.to_string(), value.to_string());
    }
    for (name, bytes) in files {
        form = form.part(
            "files",
            Part::bytes(bytes.to_vec()).file_name(name.to_string()),
        );
    }
    let response = client()
        .post(server.url("/plans/new/task"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    response.headers()["location"].to_str().unwrap().to_string()
}

/// The config of the run on the plan `to` opens.
async fn config_of(server: &TestServer, to: &str) -> Value {
    let plan = to
        .strip_prefix("/plans/")
        .unwrap_or_else(|| panic!("the plan's board, not {to}"));
    let (_, runs) = server.get(&format!("/api/runs?plan={plan}")).await;
    runs[0]["config"].clone()
}

#[tokio::test]
async fn the_task_box_sets_every_start_run_setting_and_the_run_records_it() {
    let fake = FakeOpenAi::start().await;
    let root = tempfile::tempdir().unwrap();
    let folder = root.path().join("shop");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("items.txt"), "apples\npears\nplums\n").unwrap();
    std::fs::write(folder.join(".env"), "TOKEN=x\n").unwrap();
    let server = server(&fake, vec![root.path().to_path_buf()]).await;
    let source = folder.display().to_string();
    // The allowed folders are listed, to the API and under the task box's field.
    let root_name = root.path().display().to_string();
    let (_, tools) = server.get("/api/agent/tools").await;
    assert_eq!(tools["workspace_roots"], serde_json::json!([root_name]));
    let page = client()
        .get(server.url("/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(&format!("<option value=\"{root_name}\">")),
        "the folder field offers the root"
    );
    let to = post(
        &server,
        &[
            ("from", "/"),
            ("task", "Check every item in the shop"),
            ("mode", "complex"),
            ("approval", "on"),
            ("max_tokens", "60000"),
            ("max_llm_calls", "40"),
            ("max_turns", "6"),
            ("max_minutes", "7"),
            ("max_cost", "2.5"),
            ("max_parallel", "3"),
            ("max_attempts", "2"),
            ("retry_delay", "0.25"),
            ("adapt_every_step", "on"),
            ("no_memory", "on"),
            ("source", &source),
            ("include_secret_files", "on"),
            ("batch_input", "items.txt"),
            ("batch_size", "2"),
            ("tools_chosen", "1"),
            ("tool", "read_file"),
            ("tool", "write_file"),
            ("ask", "write_file"),
        ],
        &[],
    )
    .await;
    let config = config_of(&server, &to).await;
    assert_eq!(config["task"], "Check every item in the shop", "{config}");
    assert_eq!(config["mode"], "complex");
    assert_eq!(config["approval_required"], true);
    let budget = &config["budget"];
    assert_eq!(budget["max_tokens"], 60_000, "{budget}");
    assert_eq!(budget["max_llm_calls"], 40);
    assert_eq!(budget["max_turns"], 6);
    assert_eq!(budget["max_wall_secs"], 7 * 60);
    assert_eq!(budget["max_cost"], 2.5, "{budget}");
    assert_eq!(config["max_parallel"], 3);
    assert_eq!(config["max_attempts"], 2);
    assert_eq!(config["retry_delay_ms"], 250);
    assert_eq!(config["adapt_every_step"], true);
    assert_eq!(config["memory"], false);
    assert_eq!(
        config["tools"],
        serde_json::json!(["read_file", "write_file"])
    );
    assert_eq!(config["policies"], serde_json::json!({"write_file": "ask"}));
    assert_eq!(config["batches"]["input"], "items.txt");
    assert_eq!(config["batches"]["size"], 2);
    // The folder was copied, its secret-looking file too (ticked).
    let paths: Vec<&str> = config["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&"items.txt") && paths.contains(&".env"),
        "{paths:?}"
    );
}

#[tokio::test]
async fn the_task_box_defaults_are_the_apis_and_its_files_go_through_in_batches() {
    let fake = FakeOpenAi::start().await;
    let server = server(&fake, Vec::new()).await;
    let to = post(
        &server,
        &[
            ("task", "Look at each endpoint"),
            ("batch_input", "catalog.txt"),
        ],
        &[("catalog.txt", b"GET /a\nGET /b\n")],
    )
    .await;
    let config = config_of(&server, &to).await;
    // Unticked approval is no approval; memory stays on unless opted out.
    assert_eq!(config["approval_required"], false, "{config}");
    assert_eq!(config["memory"], true);
    assert_eq!(config["adapt_every_step"], false);
    assert_eq!(config["max_attempts"], 3);
    assert_eq!(config["retry_delay_ms"], 1000);
    assert_eq!(config["budget"]["max_llm_calls"], 200);
    assert_eq!(config["budget"]["max_turns"], 8);
    assert_eq!(
        config["tools"],
        Value::Null,
        "no choice offered: every tool"
    );
    assert_eq!(config["policies"], Value::Null);
    assert_eq!(config["batches"]["input"], "catalog.txt");
    assert_eq!(config["batches"]["size"], 5);
    assert_eq!(config["inputs"][0]["path"], "catalog.txt");
}

#[tokio::test]
async fn a_refused_task_goes_back_to_its_page_with_every_field_as_typed() {
    let fake = FakeOpenAi::start().await;
    let server = server(&fake, Vec::new()).await;
    let fields = [
        ("from", "/"),
        ("task", "Sort the <b>invoices</b></textarea><i id=pwn>"),
        ("mode", "emergent"),
        ("max_tokens", "70000"),
        ("max_llm_calls", "41"),
        ("max_turns", "5"),
        ("max_minutes", "9"),
        ("max_cost", "3"),
        ("max_parallel", "2"),
        ("max_attempts", "11"),
        ("retry_delay", "2"),
        ("no_memory", "on"),
        ("adapt_every_step", "on"),
        ("tools_chosen", "1"),
        ("tool", "read_file"),
        ("ask", "read_file"),
        ("batch_size", "4"),
    ];
    let to = post(&server, &fields, &[]).await;
    let query = to.strip_prefix("/?").expect("back to the first screen");
    let back: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap();
    let get = |k: &str| {
        back.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    assert!(
        get("task_error").unwrap().contains("Attempts per subtask"),
        "{back:?}"
    );
    assert_eq!(
        get("task"),
        Some("Sort the <b>invoices</b></textarea><i id=pwn>")
    );
    assert_eq!(get("task_max_attempts"), Some("11"));
    // The plans list's own `mode` filter is left alone.
    assert_eq!(get("mode"), None);
    let page = client()
        .get(server.url(&to))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let form = &page[page.find("data-testid=\"task-box\"").expect("the task box")..];
    // The advanced settings are open, with what was typed in them.
    let details = &form[form.find("<details").unwrap()..];
    let details = &details[..details.find('>').unwrap()];
    assert!(details.contains(" open"), "unfolded: {details}");
    for (name, value) in [
        ("max_tokens", "70000"),
        ("max_llm_calls", "41"),
        ("max_turns", "5"),
        ("max_minutes", "9"),
        ("max_cost", "3"),
        ("max_parallel", "2"),
        ("max_attempts", "11"),
        ("retry_delay", "2"),
        ("batch_size", "4"),
    ] {
        let field = &form[form.find(&format!("name=\"{name}\"")).unwrap()..];
        let tag = &field[..field.find('>').unwrap()];
        assert!(tag.contains(&format!("value=\"{value}\"")), "{name}: {tag}");
    }
    let checked = |testid: &str| {
        let at = form.find(&format!("data-testid=\"{testid}\"")).unwrap();
        let start = form[..at].rfind('<').unwrap();
        let tag = &form[start..at + form[at..].find('>').unwrap()];
        tag.contains(" checked")
    };
    assert!(checked("task-no-memory") && checked("task-adapt-every-step"));
    assert!(!checked("task-approval"), "unticked stays unticked");
    assert!(checked("task-tool-read_file") && checked("task-ask-read_file"));
    assert!(!checked("task-tool-write_file"), "left out stays out");
    assert!(form.contains("<option value=\"emergent\" selected"));
    let text = &form[form.find("<textarea").unwrap()..];
    let text = &text[text.find('>').unwrap()..text.find("</textarea>").unwrap()];
    assert_eq!(
        text, ">Sort the &lt;b>invoices&lt;/b>&lt;/textarea>&lt;i id=pwn>",
        "escaped, shown as typed"
    );
    assert!(!page.contains("<i id=pwn>"), "no markup of the task's own");
}

#[tokio::test]
async fn a_batch_file_that_is_not_among_the_files_is_refused_in_the_persons_language() {
    let fake = FakeOpenAi::start().await;
    let server = server(&fake, Vec::new()).await;
    let fields = [("task", "Go through it"), ("batch_input", "catalog.csv")];
    let to = post(&server, &fields, &[("catalog.txt", b"a\nb\n")]).await;
    let query = to.strip_prefix("/plans/new?").expect("back to the form");
    let back: std::collections::HashMap<String, String> =
        serde_urlencoded::from_str(query).unwrap();
    assert!(
        back["task_error"].contains("not one of the files chosen: catalog.txt"),
        "{back:?}"
    );
    assert_eq!(back["task_batch_input"], "catalog.csv");
    let response = client()
        .post(server.url("/plans/new/task"))
        .header("accept-language", "zh-CN")
        .multipart(
            Form::new()
                .text("task", "Go through it")
                .text("batch_input", "catalog.csv")
                .part(
                    "files",
                    Part::bytes(b"a\n".to_vec()).file_name("catalog.txt"),
                ),
        )
        .send()
        .await
        .unwrap();
    let to = response.headers()["location"].to_str().unwrap().to_string();
    let back: std::collections::HashMap<String, String> =
        serde_urlencoded::from_str(to.split_once('?').unwrap().1).unwrap();
    assert!(
        back["task_error"].contains("不是所选的文件之一"),
        "{back:?}"
    );
}
