//! Many writers on one plan: every accepted change is kept.

use serde_json::json;

use crate::support::{chain, TestServer};

pub async fn writers(server: &TestServer, writers: usize, each: usize) {
    let id = server.create(chain("contended")).await;
    let start = server.plan(&id).await["version"].as_u64().unwrap();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let client = server.client.clone();
        let url = server.url(&format!("/api/plans/{id}/comments"));
        tasks.push(tokio::spawn(async move {
            for i in 0..each {
                let response = client
                    .post(&url)
                    .json(&json!({"body": format!("writer {w} note {i}")}))
                    .send()
                    .await
                    .unwrap();
                assert!(
                    response.status().is_success(),
                    "{}",
                    response.text().await.unwrap()
                );
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let plan = server.plan(&id).await;
    let total = writers * each;
    assert_eq!(plan["comments"].as_array().map(Vec::len), Some(total));
    assert_eq!(plan["version"].as_u64().unwrap(), start + total as u64);
    let (_, comments) = server.get(&format!("/api/plans/{id}/comments")).await;
    assert_eq!(
        comments.as_array().map(Vec::len),
        Some(total),
        "every comment reached the database"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_concurrent_writers_lose_no_update() {
    let server = TestServer::start().await;
    writers(&server, 32, 10).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_writers_racing_to_start_one_subtask_let_exactly_one_win() {
    let server = TestServer::start().await;
    let id = server.create(chain("raced")).await;
    let before = server.plan(&id).await["version"].as_u64().unwrap();
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let client = server.client.clone();
        let url = server.url(&format!("/api/plans/{id}/subtasks/1/state"));
        tasks.push(tokio::spawn(async move {
            let response = client
                .post(&url)
                .json(&json!({"state": "in_progress"}))
                .send()
                .await
                .unwrap();
            response.status().as_u16()
        }));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 422),
        "the others are refused by the state table: {statuses:?}"
    );
    let plan = server.plan(&id).await;
    assert_eq!(plan["version"].as_u64().unwrap(), before + 1);
    assert_eq!(plan["subtasks"][0]["attempts"], 1, "started once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_and_set_writers_get_409s_and_retry_until_every_change_is_in() {
    let server = TestServer::start().await;
    let subtasks: Vec<_> = (1..=32).map(|i| json!({"name": format!("s{i}")})).collect();
    let id = server
        .create(json!({"title": "cas", "subtasks": subtasks}))
        .await;
    let before = server.plan(&id).await["version"].as_u64().unwrap();
    let mut tasks = Vec::new();
    for sid in 1..=32u32 {
        let client = server.client.clone();
        let plan_url = server.url(&format!("/api/plans/{id}"));
        let url = server.url(&format!("/api/plans/{id}/subtasks/{sid}/notes"));
        tasks.push(tokio::spawn(async move {
            let mut conflicts = 0;
            let mut version = client
                .get(&plan_url)
                .send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
                .unwrap()["plan"]["version"]
                .as_u64()
                .unwrap();
            loop {
                let response = client
                    .post(&url)
                    .json(
                        &json!({"notes": format!("by writer {sid}"), "expected_version": version}),
                    )
                    .send()
                    .await
                    .unwrap();
                match response.status().as_u16() {
                    200 => return conflicts,
                    409 => {
                        conflicts += 1;
                        let body: serde_json::Value = response.json().await.unwrap();
                        let current = body["current_version"].as_u64().unwrap();
                        assert!(current > version, "409 names a newer version: {body}");
                        version = current;
                    }
                    other => panic!("unexpected {other}: {}", response.text().await.unwrap()),
                }
            }
        }));
    }
    let mut conflicts = 0;
    for task in tasks {
        conflicts += task.await.unwrap();
    }
    let plan = server.plan(&id).await;
    // Every writer's change is in, each exactly once, and nothing else.
    assert_eq!(plan["version"].as_u64().unwrap(), before + 32);
    for (i, subtask) in plan["subtasks"].as_array().unwrap().iter().enumerate() {
        assert_eq!(subtask["notes"], format!("by writer {}", i + 1));
    }
    println!("{conflicts} conflicts (409) among 32 compare-and-set writers");
}
