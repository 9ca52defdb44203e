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
