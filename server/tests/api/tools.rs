//! The agents' door: dialect schemas and tool calls over HTTP, each session
//! with its own active plan.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::TestServer;

async fn call(
    server: &TestServer,
    dialect: &str,
    tool: &str,
    session: &str,
    args: Value,
) -> (StatusCode, Value) {
    server
        .post(
            &format!("/api/tools/{dialect}/{tool}?session={session}"),
            args,
        )
        .await
}

#[tokio::test]
async fn every_dialect_lists_openai_function_schemas() {
    let server = TestServer::start().await;
    for (dialect, some_tool) in [
        ("canonical", "create_plan"),
        ("planmanager", "startNextTask"),
        ("openmanus", "planning"),
        ("agentscope", "finish_subtask"),
    ] {
        let (status, tools) = server.get(&format!("/api/tools?dialect={dialect}")).await;
        assert_eq!(status, StatusCode::OK);
        let names: Vec<&str> = tools
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert!(names.contains(&some_tool), "{dialect}: {names:?}");
        assert!(tools[0]["function"]["parameters"]["type"] == "object");
    }
    let (status, error) = server.get("/api/tools?dialect=langchain").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(error["error"], "bad_request");
}

#[tokio::test]
async fn an_agentscope_agent_walks_its_plan_over_http_on_its_session() {
    let server = TestServer::start().await;
    let (status, created) = call(
        &server,
        "agentscope",
        "create_plan",
        "agent-a",
        json!({
            "name": "Write a report", "description": "d", "expected_outcome": "a report",
            "subtasks": [{"name": "research", "description": "r", "expected_outcome": "notes"},
                         {"name": "write", "description": "w", "expected_outcome": "text"}]
        }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    // Another session has no plan: the tools say how to make one.
    let (status, other) = call(
        &server,
        "agentscope",
        "view_subtasks",
        "agent-b",
        json!({"subtask_idx": [0]}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        other["text"].as_str().unwrap().contains("create_plan"),
        "{other}"
    );

    // Sloppy arguments, as a JSON string with a numeric string id.
    let (status, r) = call(
        &server,
        "agentscope",
        "update_subtask_state",
        "agent-a",
        json!("{\"subtask_idx\": \"0\", \"state\": \"in_progress\"}"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let (status, r) = call(
        &server,
        "agentscope",
        "finish_subtask",
        "agent-a",
        json!({"subtask_idx": 0, "subtask_outcome": "notes taken"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let id = r["plan_id"].as_str().unwrap().to_string();
    let plan = server.plan(&id).await;
    assert_eq!(plan["subtasks"][0]["state"], "done");
    assert_eq!(
        plan["subtasks"][1]["state"], "in_progress",
        "finish_subtask started the next ready one"
    );

    let (status, hint) = server
        .get("/api/tools/agentscope/hint?session=agent-a")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        hint.as_str()
            .unwrap()
            .contains("finish_subtask(subtask_idx=1"),
        "{hint}"
    );

    // A refused call is a 422 carrying text for the model, and changes nothing.
    let (status, r) = call(
        &server,
        "agentscope",
        "update_subtask_state",
        "agent-a",
        json!({"subtask_idx": 0, "state": "todo"}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
    assert!(r["text"].as_str().unwrap().starts_with("Error:"));
    assert_eq!(server.plan(&id).await["version"], plan["version"]);
}

#[tokio::test]
async fn openmanus_and_planmanager_dialects_share_the_store() {
    let server = TestServer::start().await;
    let (status, r) = call(
        &server,
        "openmanus",
        "planning",
        "m",
        json!({
            "command": "create", "plan_id": "trip", "title": "Trip", "steps": ["book", "pack", "go"]
        }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let (status, r) = call(&server, "openmanus", "planning", "m", json!({"command": "mark_step", "step_index": 0, "step_status": "completed", "step_notes": "booked"})).await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let (_, r) = call(
        &server,
        "openmanus",
        "planning",
        "m",
        json!({"command": "get"}),
    )
    .await;
    assert!(
        r["text"]
            .as_str()
            .unwrap()
            .contains("Progress: 1/3 steps completed (33.3%)"),
        "{r}"
    );
    let (status, r) = call(&server, "planmanager", "startNextTask", "m", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let (_, page) = server.get("/api/plans?q=trip").await;
    assert_eq!(page["plans"][0]["state"], "running");
}

#[tokio::test]
async fn a_hint_get_reads_only_and_a_hint_post_remembers_what_the_session_saw() {
    let server = TestServer::start().await;
    let (status, r) = call(
        &server,
        "agentscope",
        "create_plan",
        "agent-h",
        json!({"name": "n", "description": "d", "expected_outcome": "o",
               "subtasks": [{"name": "a", "description": "", "expected_outcome": "x"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let version = r["version"].as_u64().unwrap();
    let get = |query: String| {
        let url = server.url(&format!(
            "/api/tools/agentscope/hint?session=agent-h{query}"
        ));
        let client = server.client.clone();
        async move {
            let response = client.get(url).send().await.unwrap();
            let header = response.headers().get("x-plan-version").cloned();
            (header, response.text().await.unwrap())
        }
    };
    // GETs change nothing, however many: a viewer's look cannot shrink
    // the agent's next hint.
    for _ in 0..2 {
        let (header, text) = get(String::new()).await;
        assert_eq!(header.unwrap().to_str().unwrap(), version.to_string());
        assert!(
            !text.starts_with("No change since your last hint"),
            "{text}"
        );
    }
    let (_, short) = get(format!("&since_version={version}")).await;
    assert!(
        short.starts_with("No change since your last hint"),
        "{short}"
    );

    // POST remembers per session: the second is one line, fresh repeats it whole.
    let post = |query: &str| {
        let path = format!("/api/tools/agentscope/hint?session=agent-h{query}");
        let server = &server;
        async move { server.send(reqwest::Method::POST, &path, None).await }
    };
    let (status, first) = post("").await;
    assert_eq!(status, StatusCode::OK);
    assert!(!first.as_str().unwrap().starts_with("No change"), "{first}");
    let (_, second) = post("").await;
    assert!(
        second.as_str().unwrap().starts_with("No change"),
        "{second}"
    );
    let (_, fresh) = post("&fresh=true").await;
    assert!(!fresh.as_str().unwrap().starts_with("No change"), "{fresh}");
    // Once the plan moves, the whole hint comes back.
    let (status, r) = call(
        &server,
        "agentscope",
        "update_subtask_state",
        "agent-h",
        json!({"subtask_idx": 0, "state": "in_progress"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let (_, moved) = post("").await;
    assert!(!moved.as_str().unwrap().starts_with("No change"), "{moved}");
}

#[tokio::test]
async fn a_deleted_plans_key_is_free_again() {
    let server = TestServer::start().await;
    let create =
        json!({"command": "create", "plan_id": "trip", "title": "Trip", "steps": ["book"]});
    for delete_with_rest in [true, false] {
        let (status, r) = call(&server, "openmanus", "planning", "k", create.clone()).await;
        assert_eq!(status, StatusCode::OK, "{r}");
        if delete_with_rest {
            let id = r["plan_id"].as_str().unwrap();
            let (status, r) = server
                .send(reqwest::Method::DELETE, &format!("/api/plans/{id}"), None)
                .await;
            assert!(status.is_success(), "{r}");
        } else {
            let (status, r) = call(
                &server,
                "openmanus",
                "planning",
                "k",
                json!({"command": "delete", "plan_id": "trip"}),
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{r}");
        }
    }
    let (status, r) = call(&server, "openmanus", "planning", "k", create).await;
    assert_eq!(status, StatusCode::OK, "{r}");
}

#[tokio::test]
async fn a_key_taken_behind_this_servers_back_is_a_409_with_a_sentence_not_a_500() {
    // Two servers on one SQLite file: the second never hears of the first's
    // plan, so only the database's unique constraint can catch the clash.
    let first = TestServer::start().await;
    let dir = first._dir.as_ref().unwrap().path().join("plans.db");
    let second = TestServer::on(
        &format!("sqlite://{}", dir.display()),
        crate::support::local(),
    )
    .await;
    let create =
        json!({"command": "create", "plan_id": "shared-key", "title": "T", "steps": ["a"]});
    let (status, r) = call(&first, "openmanus", "planning", "a", create.clone()).await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let (status, r) = call(&second, "openmanus", "planning", "b", create).await;
    assert_eq!(status, StatusCode::CONFLICT, "{r}");
    assert_eq!(r["error"], "already_exists", "{r}");
    assert!(r["message"].as_str().unwrap().contains("plan key"), "{r}");
    // The refused plan left nothing behind in the second server either.
    let (_, r) = call(
        &second,
        "openmanus",
        "planning",
        "b",
        json!({"command": "list"}),
    )
    .await;
    assert!(!r["text"].as_str().unwrap().contains("shared-key"), "{r}");
}

#[tokio::test]
async fn an_agents_changes_are_recorded_as_the_agent_acting_for_the_user() {
    let server = TestServer::start().await;
    let (status, r) = call(
        &server,
        "canonical",
        "create_plan",
        "agent-7",
        json!({"title": "attributed", "subtasks": [{"name": "a"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let id = r["plan_id"].as_str().unwrap().to_string();
    // A REST call naming its agent.
    let response = server
        .client
        .post(server.url(&format!("/api/plans/{id}/comments")))
        .header("X-Planboard-Agent", "release\tbot ")
        .json(&json!({"body": "from the bot"}))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    // A person's REST call, no agent.
    server
        .post(
            &format!("/api/plans/{id}/comments"),
            json!({"body": "by hand"}),
        )
        .await;
    let (_, page) = server.get(&format!("/api/plans/{id}/events")).await;
    let actors: Vec<&str> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["actor"].as_str().unwrap())
        .collect();
    assert_eq!(
        actors,
        ["tester · agent-7", "tester · releasebot", "tester"],
        "control characters are dropped from agent names"
    );
}

#[tokio::test]
async fn the_session_header_names_the_session_like_the_query() {
    let server = TestServer::start().await;
    let create = |session: &'static str, title: &'static str| {
        server
            .client
            .post(server.url("/api/tools/canonical/create_plan"))
            .header("x-planboard-session", session)
            .json(&json!({"title": title, "subtasks": [{"name": "a"}]}))
            .send()
    };
    assert!(create("header-a", "plan A")
        .await
        .unwrap()
        .status()
        .is_success());
    assert!(create("header-b", "plan B")
        .await
        .unwrap()
        .status()
        .is_success());
    // The same session by query sees the plan the header's calls made.
    let (_, a) = call(&server, "canonical", "get_plan", "header-a", json!({})).await;
    assert!(a["text"].as_str().unwrap().contains("plan A"), "{a}");
    let (_, b) = call(&server, "canonical", "get_plan", "header-b", json!({})).await;
    assert!(b["text"].as_str().unwrap().contains("plan B"), "{b}");
    assert_eq!(b["session"], "header-b");
}

#[tokio::test]
async fn a_sessions_settings_are_set_over_rest_and_carried_by_its_hints_and_the_plans_it_creates() {
    session_settings_over_rest(&TestServer::start().await).await;
}

#[tokio::test]
async fn a_sessions_settings_are_set_over_rest_and_carried_by_its_hints_on_postgres() {
    let Some(url) = crate::postgres::fresh_database().await else {
        return;
    };
    session_settings_over_rest(&TestServer::on(&url, crate::support::local()).await).await;
}

async fn session_settings_over_rest(server: &TestServer) {
    let confirm = "WAIT FOR USER CONFIRMATION";
    let hint = |session: &'static str| {
        let server = &server;
        async move {
            let (status, text) = server
                .get(&format!("/api/tools/agentscope/hint?session={session}"))
                .await;
            assert_eq!(status, StatusCode::OK);
            text.as_str().unwrap().to_string()
        }
    };
    // Nothing set: no rules, as before.
    let (status, settings) = server.get("/api/session/settings?session=s-1").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        settings,
        json!({"need_user_confirm": null, "max_subtasks": null})
    );
    assert!(!hint("s-1").await.contains(confirm));

    let (status, settings) = server
        .send(
            reqwest::Method::PUT,
            "/api/session/settings?session=s-1",
            Some(json!({"need_user_confirm": true, "max_subtasks": 2})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{settings}");
    assert_eq!(
        settings,
        json!({"need_user_confirm": true, "max_subtasks": 2})
    );
    let (_, read) = server.get("/api/session/settings?session=s-1").await;
    assert_eq!(read, settings);
    // With no plan yet, the hint states both rules (seed 003's no-plan hint).
    let none = hint("s-1").await;
    assert!(none.contains(confirm), "{none}");
    assert!(none.contains("no more than 2 subtasks"), "{none}");
    // Another session is untouched.
    assert!(!hint("s-2").await.contains(confirm));

    // A plan the session creates takes its settings; the engine holds the limit.
    let subtasks = |n: usize| {
        (0..n)
            .map(|i| json!({"name": format!("step {i}"), "description": "", "expected_outcome": "x"}))
            .collect::<Vec<_>>()
    };
    let (status, r) = call(
        server,
        "agentscope",
        "create_plan",
        "s-1",
        json!({"name": "n", "description": "d", "expected_outcome": "o", "subtasks": subtasks(3)}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
    assert_eq!(r["error"], "plan_full", "{r}");
    let (status, r) = call(
        server,
        "agentscope",
        "create_plan",
        "s-1",
        json!({"name": "n", "description": "d", "expected_outcome": "o", "subtasks": subtasks(2)}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let id = r["plan_id"].as_str().unwrap().to_string();
    let plan = server.plan(&id).await;
    assert_eq!(plan["max_subtasks"], 2);
    assert_eq!(plan["need_user_confirm"], true);
    let at_start = hint("s-1").await;
    assert!(at_start.contains(confirm), "{at_start}");
    assert!(at_start.contains("no more than 2 subtasks"), "{at_start}");
    let (status, r) = call(
        server,
        "agentscope",
        "revise_current_plan",
        "s-1",
        json!({"subtask_idx": 2, "action": "add",
               "subtask": {"name": "three", "description": "", "expected_outcome": "x"}}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
    assert_eq!(r["error"], "plan_full", "{r}");

    // The plan's own setting wins over the session's.
    let (status, r) = server
        .send(
            reqwest::Method::PATCH,
            &format!("/api/plans/{id}"),
            Some(json!({"need_user_confirm": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    assert!(!hint("s-1").await.contains(confirm));
    // A plan created over REST carries its own, whatever the caller's session.
    let other = server
        .create(json!({"title": "asks first", "need_user_confirm": true,
                       "subtasks": [{"name": "a"}]}))
        .await;
    let (_, text) = server.get(&format!("/api/plans/{other}/hint")).await;
    assert!(text.as_str().unwrap().contains(confirm), "{text}");

    // Bad settings are refused and change nothing.
    for bad in [
        json!({"max_subtasks": 0}),
        json!({"max_subtasks": 5001}),
        json!({"need_user_confirm": "yes"}),
        json!({"max_parallel": 2}),
    ] {
        let (status, r) = server
            .send(
                reqwest::Method::PUT,
                "/api/session/settings?session=s-1",
                Some(bad.clone()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {r}");
    }
    let (_, read) = server.get("/api/session/settings?session=s-1").await;
    assert_eq!(read, json!({"need_user_confirm": true, "max_subtasks": 2}));
    // Unsetting everything takes the rules away again.
    let (status, _) = server
        .send(
            reqwest::Method::PUT,
            "/api/session/settings?session=s-1",
            Some(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, read) = server.get("/api/session/settings?session=s-1").await;
    assert_eq!(
        read,
        json!({"need_user_confirm": null, "max_subtasks": null})
    );
}

#[tokio::test]
async fn a_tool_call_sets_its_own_plans_rules_in_every_dialect_over_the_sessions_and_the_hint_states_them(
) {
    let server = TestServer::start().await;
    let confirm = "WAIT FOR USER CONFIRMATION";
    // The session asks for nothing; one call's plan asks for both rules.
    let (status, _) = server
        .send(
            reqwest::Method::PUT,
            "/api/session/settings?session=per-call",
            Some(json!({"need_user_confirm": false, "max_subtasks": 9})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let create = |dialect: &'static str, query: &'static str| {
        let server = &server;
        let (tool, args) = match dialect {
            "agentscope" => (
                "create_plan",
                json!({"name": "n", "description": "d", "expected_outcome": "o",
                       "subtasks": [{"name": "a", "description": "", "expected_outcome": "x"},
                                    {"name": "b", "description": "", "expected_outcome": "x"}]}),
            ),
            "openmanus" => (
                "planning",
                json!({"command": "create", "plan_id": format!("p-{query}"),
                       "title": "T", "steps": ["a", "b"]}),
            ),
            "planmanager" => (
                "createPlan",
                json!({"overallGoal": "G", "title": "T", "tasks": [{"name": "a"}, {"name": "b"}]}),
            ),
            _ => (
                "create_plan",
                json!({"title": "T", "subtasks": [{"name": "a"}, {"name": "b"}]}),
            ),
        };
        async move {
            server
                .post(
                    &format!("/api/tools/{dialect}/{tool}?session=per-call&{query}"),
                    args,
                )
                .await
        }
    };
    for dialect in ["canonical", "planmanager", "openmanus", "agentscope"] {
        let (status, r) = create(dialect, "need_user_confirm=true&max_subtasks=2").await;
        assert_eq!(status, StatusCode::OK, "{dialect}: {r}");
        let id = r["plan_id"].as_str().unwrap().to_string();
        let plan = server.plan(&id).await;
        assert_eq!(plan["need_user_confirm"], true, "{dialect}");
        assert_eq!(plan["max_subtasks"], 2, "{dialect}");
        let (_, hint) = server
            .get(&format!("/api/tools/{dialect}/hint?session=per-call"))
            .await;
        let hint = hint.as_str().unwrap();
        assert!(hint.contains(confirm), "{dialect}: {hint}");
        assert!(
            hint.contains("no more than 2 subtasks"),
            "{dialect}: {hint}"
        );
    }
    // A rule the call leaves out is the session's.
    let (status, r) = create("canonical", "max_subtasks=3").await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let plan = server.plan(r["plan_id"].as_str().unwrap()).await;
    assert_eq!(plan["max_subtasks"], 3);
    assert_eq!(plan["need_user_confirm"], false);
    // The engine holds the call's limit like any plan's.
    let (status, r) = call(
        &server,
        "canonical",
        "add_subtask",
        "per-call",
        json!({"name": "c"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let (status, r) = call(
        &server,
        "canonical",
        "add_subtask",
        "per-call",
        json!({"name": "d"}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
    assert_eq!(r["error"], "plan_full", "{r}");

    // Bad settings are refused, as a session's are, and create nothing.
    let (_, before) = server.get("/api/plans").await;
    for bad in [
        "max_subtasks=0",
        "max_subtasks=5001",
        "max_subtasks=-1",
        "need_user_confirm=yes",
    ] {
        let (status, r) = create("agentscope", bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {r}");
    }
    let (_, after) = server.get("/api/plans").await;
    assert_eq!(before, after);
}

#[tokio::test]
async fn a_hint_asked_with_a_plan_rule_out_of_its_range_is_refused_like_a_tool_call() {
    let server = TestServer::start().await;
    for (method, query) in [
        (Method::GET, "max_subtasks=0"),
        (Method::POST, "max_subtasks=0"),
        (Method::GET, "max_subtasks=5001"),
        (Method::POST, "max_subtasks=5001"),
    ] {
        let (status, body) = server
            .send(
                method.clone(),
                &format!("/api/tools/canonical/hint?{query}"),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{method} {query}: {body}");
    }
    let (status, _) = server
        .get("/api/tools/canonical/hint?max_subtasks=5000")
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_tool_call_whose_body_is_a_form_feed_or_vertical_tab_is_refused_not_read_as_no_arguments()
{
    let server = TestServer::start().await;
    let send = |body: &'static str| {
        let server = &server;
        async move {
            let response = server
                .client
                .post(server.url("/api/tools/canonical/create_plan?session=blank"))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            let status = response.status();
            let reply: Value = response.json().await.unwrap();
            (status, reply)
        }
    };
    // JSON's own whitespace is no body: the tool is called without
    // arguments and its refusal (a plan needs a title) is the model's.
    let (status, reply) = send(" \t\r\n").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reply}");
    assert_eq!(reply["ok"], false, "{reply}");
    // A form feed or a vertical tab is not JSON at all: the request is
    // refused before any tool runs.
    for body in ["\x0c", "\x0b", " \x0c ", "\x0c{}"] {
        let (status, reply) = send(body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body:?}: {reply}");
        assert_eq!(reply["error"], "bad_request", "{body:?}: {reply}");
        assert!(
            reply["message"]
                .as_str()
                .unwrap()
                .contains("not valid JSON"),
            "{body:?}: {reply}"
        );
    }
    let (_, plans) = server.get("/api/plans").await;
    assert_eq!(plans["plans"], json!([]), "{plans}");
}

/// A session's settings on either database: unset until set, replaced
/// whole, kept when the store is opened again, and removed when all unset.
pub async fn session_settings_story(url: &str) {
    use server::store::{PlanStore, SessionSettings, SqlStore};
    let session = format!("story-{}", uuid::Uuid::new_v4());
    let store = SqlStore::connect(url).await.unwrap();
    assert_eq!(
        store.session_settings(&session).await.unwrap(),
        SessionSettings::default()
    );
    let set = SessionSettings {
        need_user_confirm: Some(false),
        max_subtasks: Some(5000),
    };
    store.set_session_settings(&session, &set).await.unwrap();
    let only_limit = SessionSettings {
        need_user_confirm: None,
        max_subtasks: Some(7),
    };
    store
        .set_session_settings(&session, &only_limit)
        .await
        .unwrap();
    drop(store);
    let store = SqlStore::connect(url).await.unwrap();
    assert_eq!(store.session_settings(&session).await.unwrap(), only_limit);
    assert_eq!(
        store.session_settings("someone else").await.unwrap(),
        SessionSettings::default()
    );
    store
        .set_session_settings(&session, &SessionSettings::default())
        .await
        .unwrap();
    assert_eq!(
        store.session_settings(&session).await.unwrap(),
        SessionSettings::default()
    );
}

#[tokio::test]
async fn session_settings_are_kept_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    session_settings_story(&format!(
        "sqlite://{}",
        dir.path().join("sessions.db").display()
    ))
    .await;
}
