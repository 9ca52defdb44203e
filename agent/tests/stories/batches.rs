//! Seed 002's iterative batches: a task over a long input is planned a
//! batch at a time, each batch planned from how the last one went, the
//! failed items first, until every item is covered, also across a restart.

use std::time::Duration;

use crate::support::*;
use agent::llm::{CallRole, ChatRequest, Reply, Shape};
use agent::{RunEntry, RunState};
use plan_engine::SubtaskState;
use run_model::Batching;
use serde_json::json;

/// The item numbers a batch request may cover (its schema's enum).
fn batch_items(request: &ChatRequest) -> Option<Vec<u64>> {
    let Shape::Json {
        name: "batch",
        schema,
    } = &request.shape
    else {
        return None;
    };
    let items = schema.pointer("/properties/subtasks/items/properties/items/items/enum")?;
    Some(
        items
            .as_array()?
            .iter()
            .filter_map(|v| v.as_u64())
            .collect(),
    )
}

/// A planner answering one subtask per item ("check tool_n"), and an
/// executor that fails `tool_4` once and `tool_7` every time.
fn catalog_model() -> agent::ScriptedLlm {
    agent::ScriptedLlm::new().responder(|request| {
        if let Some(items) = batch_items(request) {
            return Reply::Json(json!({"subtasks": items.iter().map(|n| json!({
                "name": format!("check tool_{n}"), "description": "call it once",
                "expected_outcome": "it answers", "items": [n],
            })).collect::<Vec<_>>()}));
        }
        if request.role == CallRole::Executor {
            let name = subtask_name(request).unwrap_or_default();
            let brief = &request.messages[1].content;
            let again = brief.contains("an earlier attempt failed");
            if name == "check tool_7" || (name == "check tool_4" && !again) {
                return Reply::Json(
                    json!({"action": "fail", "reason": format!("{name}: HTTP 500")}),
                );
            }
            // A model that asks although asking is not offered in a run
            // over a list (a server without grammars may).
            if name == "check tool_5" && request.messages.len() <= 2 {
                return Reply::Json(json!({"action": "ask", "question": "which user?"}));
            }
        }
        answer(request)
    })
}

fn catalog(n: usize) -> Vec<u8> {
    (1..=n)
        .map(|i| format!("tool_{i}\n"))
        .collect::<String>()
        .into_bytes()
}

fn batched(size: u32) -> agent::RunConfig {
    let mut c = config("Test every tool in tools.txt");
    c.batches = Some(Batching {
        input: "tools.txt".into(),
        size,
    });
    c.max_attempts = 3;
    c
}

fn planner_prompts(world: &World) -> Vec<String> {
    world
        .llm
        .requests()
        .iter()
        .filter(|r| r.role == CallRole::Planner)
        .map(|r| r.messages[1].content.clone())
        .collect()
}

#[tokio::test]
async fn a_catalog_is_worked_a_batch_at_a_time_with_failures_planned_again_until_every_item_is_covered(
) {
    let world = World::new(catalog_model());
    world.host.put_input("tools.txt", catalog(12));
    let run = world.run(batched(5)).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        world.llm.calls(CallRole::Classifier),
        0,
        "batches plan complex"
    );
    let progress = run.batches.clone().expect("the row keeps the progress");
    // 11 done, #7 given up after its third failure; nothing left.
    assert_eq!(progress.done, vec![[1, 6], [8, 12]]);
    assert_eq!(progress.given_up, vec![7]);
    assert!(progress.retry.is_empty());
    assert_eq!(progress.failed_attempts, 4, "#4 once, #7 three times");
    let plan = world.plan();
    let done: Vec<&str> = plan
        .subtasks()
        .iter()
        .filter(|s| s.state() == SubtaskState::Done)
        .map(|s| s.name())
        .collect();
    assert_eq!(done.len(), 11);
    let tries_of_7 = plan
        .subtasks()
        .iter()
        .filter(|s| s.name() == "check tool_7")
        .count();
    assert_eq!(tries_of_7, 3, "tried in three batches, then given up");
    let notes: Vec<&str> = plan
        .subtasks()
        .iter()
        .filter(|s| s.state() == SubtaskState::Skipped)
        .filter_map(|s| s.outcome())
        .collect();
    assert_eq!(notes.len(), 4, "{notes:?}");
    assert!(notes[0].contains("HTTP 500; item 4 planned again in a later batch"));
    assert!(notes[3].ends_with("item 7 given up after 3 failed attempts"));
    assert!(run
        .answer
        .as_deref()
        .unwrap()
        .ends_with("Covered 12 of 12 items in 4 batches: 11 done, 1 given up (item 7)."));

    // The planner read each batch's outcome and planned the failures first.
    let prompts = planner_prompts(&world);
    assert_eq!(prompts.len(), 4, "one planning call per batch");
    assert!(prompts[0].contains("Last batch: none yet.") && prompts[0].contains("item 1: tool_1"));
    assert!(
        prompts[1].contains("Last batch (1): 5 items, 4 succeeded, 1 failed"),
        "{}",
        prompts[1]
    );
    // Its reason stands beside the item, not again in the summary.
    assert!(!prompts[1].contains("- item 4:"), "{}", prompts[1]);
    let batch2 = prompts[1].split("its items:\n").nth(1).unwrap();
    assert!(
        batch2.starts_with(
            "item 4: tool_4 (failed 1 times; last: check tool_4: HTTP 500)\nitem 6: tool_6"
        ),
        "the failed item comes first: {batch2}"
    );
    // The prompt does not grow with the run: counts and the last batch only.
    let (first, last) = (prompts[0].len() as f64, prompts[3].len() as f64);
    assert!(last / first <= 1.3, "{first} → {last}");

    // Asking a person is not offered to a batch's executor (its schema
    // has no `ask`); one that asks anyway is told and goes on.
    let executor_calls: Vec<_> = world
        .llm
        .requests()
        .into_iter()
        .filter(|r| r.role == CallRole::Executor)
        .collect();
    for call in &executor_calls {
        let Shape::Json { schema, .. } = &call.shape else {
            panic!("the JSON protocol");
        };
        assert!(!schema.to_string().contains(r#""const":"ask""#), "{schema}");
        assert!(!schema.to_string().contains(r#""const":"add_subtask""#));
        assert!(!call.messages[0].content.contains("- ask:"));
    }
    assert!(executor_calls.iter().any(|c| c.messages.iter().any(|m| m
        .content
        .starts_with("Asking a person is not possible in this step"))));
    assert!(!world
        .entries()
        .iter()
        .any(|e| matches!(e, RunEntry::Asked { .. })));
    let planned: Vec<(u32, usize, usize)> = world
        .entries()
        .iter()
        .filter_map(|e| match e {
            RunEntry::BatchPlanned {
                batch,
                retried,
                new,
                ..
            } => Some((*batch, *retried, *new)),
            _ => None,
        })
        .collect();
    assert_eq!(planned, vec![(1, 0, 5), (2, 1, 4), (3, 1, 3), (4, 1, 0)]);
    let finished = world
        .entries()
        .iter()
        .filter(|e| matches!(e, RunEntry::BatchFinished(_)))
        .count();
    assert_eq!(finished, 4);
    let view = progress.view(5);
    assert_eq!((view.covered, view.total_items, view.batch), (12, 12, 4));
}

#[tokio::test]
async fn a_batched_run_picked_up_after_a_crash_goes_on_where_the_last_batch_stopped() {
    let world = World::new(catalog_model().with_latency(Duration::from_millis(15)));
    world.host.put_input("tools.txt", catalog(9));
    let mut c = batched(3);
    c.max_attempts = 1;
    let driving = world.start(c).await;
    world
        .wait_run(|r| r.batches.as_ref().is_some_and(|p| p.finished >= 1))
        .await;
    driving.abort();
    let _ = driving.await;
    let stored = world.stored_run();
    assert_eq!(stored.state, RunState::Running);
    let run = tokio::time::timeout(Duration::from_secs(20), world.agent.drive(stored))
        .await
        .expect("the run finishes after the restart");
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let progress = run.batches.unwrap();
    assert_eq!(progress.done, vec![[1, 3], [5, 6], [8, 9]]);
    assert_eq!(progress.given_up, vec![4, 7], "one attempt each");
    // No batch planned twice: one BatchPlanned per batch number, in order.
    let batches: Vec<u32> = world
        .entries()
        .iter()
        .filter_map(|e| match e {
            RunEntry::BatchPlanned { batch, .. } => Some(*batch),
            _ => None,
        })
        .collect();
    // (A crash between saving a batch and logging it may leave one
    // unlogged; none is logged twice and the last is the third.)
    assert!(batches.windows(2).all(|w| w[0] < w[1]), "{batches:?}");
    assert_eq!(batches.last(), Some(&3));
    // Each item's subtask is on the plan once.
    let plan = world.plan();
    assert_eq!(plan.subtasks().len(), 9);
    assert!(planner_prompts(&world)
        .last()
        .unwrap()
        .contains("Batch 3 — its items:\nitem 7: tool_7"));
}

#[tokio::test]
async fn an_unusable_batch_answer_still_covers_the_batch_one_subtask_per_item() {
    let llm = agent::ScriptedLlm::new().responder(|request| {
        if batch_items(request).is_some() {
            // Nothing usable: no subtasks.
            return Reply::Text("I cannot plan this".into());
        }
        answer(request)
    });
    let world = World::new(llm);
    world.host.put_input("tools.txt", catalog(3));
    let run = world.run(batched(5)).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let names: Vec<String> = world
        .plan()
        .subtasks()
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    assert_eq!(
        names,
        ["Item 1: tool_1", "Item 2: tool_2", "Item 3: tool_3"]
    );
    assert!(world.entries().iter().any(|e| matches!(
        e,
        RunEntry::PlanRepaired { repairs } if repairs[0].contains("one subtask per item")
    )));
}
