//! Plans saved as templates over HTTP: saving a finished plan's shape,
//! the refusals, and a run started from one — it takes the template's
//! mode without asking the classifier, its planner reads the template's
//! steps (and a run without one does not), and it keeps its copy when the
//! template is deleted. Operators save templates; only admins delete them.

use axum::http::StatusCode;
use serde_json::json;

use crate::fake_openai::{shape, FakeOpenAi};
use crate::runs::{server_on, start, wait_for};

#[tokio::test]
async fn a_plan_saved_as_a_template_starts_a_later_task_whose_planner_adapts_it() {
    let fake = FakeOpenAi::start().await;
    let server = server_on(&fake, None).await;
    let (run, plan) = start(
        &server,
        json!({"task": "Deploy the billing service to staging", "approval_required": false}),
    )
    .await;
    wait_for(&server, &run, "done").await;

    let path = format!("/api/plans/{plan}/template");
    // Refusals, each with its reason; nothing is stored.
    let (status, body) = server.post(&path, json!({"name": "   "})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("1 to 120"),
        "{body}"
    );
    let (status, body) = server.post(&path, json!({"name": "n".repeat(121)})).await;
    assert!(status.is_client_error(), "{status} {body}");
    let (status, _) = server
        .post(
            &format!("/api/plans/{}/template", uuid::Uuid::new_v4()),
            json!({"name": "x"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let empty = server.create(json!({"title": "nothing yet"})).await;
    let (status, body) = server
        .post(
            &format!("/api/plans/{empty}/template"),
            json!({"name": "empty"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("no subtasks"),
        "{body}"
    );
    assert_eq!(server.get("/api/templates").await.1, json!([]));

    // Saved: the plan's shape, what was asked, who saved it.
    let (status, template) = server.post(&path, json!({"name": " Staged deploy "})).await;
    assert_eq!(status, StatusCode::CREATED, "{template}");
    let id = template["id"].as_str().unwrap().to_string();
    assert_eq!(template["name"], "Staged deploy");
    assert_eq!(template["mode"], "simple");
    assert_eq!(template["task"], "Deploy the billing service to staging");
    assert_eq!(template["plan_id"], plan.as_str());
    let names: Vec<&str> = template["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gather", "report"]);
    assert_eq!(
        template["steps"][1]["depends_on"],
        json!([1]),
        "a simple plan is a chain"
    );
    let (status, listed) = server.get("/api/templates").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(
        server.get(&format!("/api/templates/{id}")).await.1,
        template
    );

    // A task started from it: the template's mode, no classifier call,
    // the template in the planner's prompt.
    let (status, body) = server
        .post(
            "/api/runs",
            json!({"task": "Deploy the search service to production", "template": uuid::Uuid::new_v4()}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("no template"),
        "{body}"
    );
    let (templated, _) = start(
        &server,
        json!({"task": "Deploy the search service to production", "template": id, "approval_required": false}),
    )
    .await;
    let view = wait_for(&server, &templated, "done").await;
    assert_eq!(view["classification"]["mode"], "simple", "{view}");
    assert_eq!(view["classification"]["by"], "person", "{view}");
    assert!(
        view["classification"]["reason"]
            .as_str()
            .unwrap()
            .contains("Staged deploy"),
        "{view}"
    );
    let requests = fake.requests();
    let about = |word: &str, kind: &str| -> Vec<String> {
        requests
            .iter()
            .filter(|r| shape(r) == kind)
            .map(|r| r["messages"].to_string())
            .filter(|m| m.contains(word))
            .collect()
    };
    assert!(
        about("search service", "mode").is_empty(),
        "the classifier was not asked"
    );
    let planned = about("search service", "plan");
    assert_eq!(planned.len(), 1, "{planned:?}");
    assert!(
        planned[0].contains("plan template «Staged deploy»"),
        "{}",
        planned[0]
    );
    assert!(
        planned[0].contains("1. gather: gather the facts"),
        "{}",
        planned[0]
    );
    assert!(planned[0].contains("(after 1)"), "{}", planned[0]);
    let plain: Vec<String> = about("billing service", "plan")
        .into_iter()
        .filter(|m| !m.contains("search service"))
        .collect();
    assert_eq!(plain.len(), 1);
    assert!(
        !plain[0].contains("plan template"),
        "a run without a template reads none"
    );

    // Deleted: gone from the list and for new runs; the run keeps its copy.
    let (status, _) = server
        .send(
            axum::http::Method::DELETE,
            &format!("/api/templates/{id}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = server.get(&format!("/api/templates/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = server
        .send(
            axum::http::Method::DELETE,
            &format!("/api/templates/{id}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, view) = server.get(&format!("/api/runs/{templated}")).await;
    assert_eq!(
        view["config"]["template"]["name"], "Staged deploy",
        "{view}"
    );
}

/// Templates are the admins' to delete (docs/security.md), as plans are:
/// an operator saves a plan as a template, but its delete, over the API
/// or with the board's Delete, is a 403 and the template stays; an
/// admin's `DELETE` is a 204.
#[tokio::test]
async fn an_operator_saves_a_template_but_only_an_admin_deletes_it() {
    use crate::auth::{no_redirects, origin, sign_in, token_mode, ADMIN, OPERATOR};
    let operator = token_mode().await.with_token(OPERATOR);
    let plan = operator
        .create(crate::support::chain("a shape worth keeping"))
        .await;
    let (status, template) = operator
        .post(
            &format!("/api/plans/{plan}/template"),
            json!({"name": "kept"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{template}");
    assert_eq!(template["created_by"], "robot");
    let id = template["id"].as_str().unwrap().to_string();
    let path = format!("/api/templates/{id}");

    let (status, body) = operator.send(axum::http::Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"], "forbidden", "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("admin"),
        "{body}"
    );
    let (_, cookie) = sign_in(&operator, OPERATOR).await;
    let board = no_redirects()
        .post(operator.url(&format!("/templates/{id}/delete")))
        .header("cookie", &cookie)
        .header("origin", origin(&operator))
        .send()
        .await
        .unwrap();
    assert_eq!(board.status(), StatusCode::FORBIDDEN, "the board's Delete");
    let (status, kept) = operator.get(&path).await;
    assert_eq!(status, StatusCode::OK, "the template stays: {kept}");

    let admin = operator.with_token(ADMIN);
    let (status, body) = admin.send(axum::http::Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, _) = admin.get(&path).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
