//! The seeds' own worked examples, run through their dialects.

use plan_engine::{Dialect, SubtaskId, SubtaskState};
use serde_json::{json, Value};

use crate::common::Agent;

/// Seed 000: the JD.com shopping plan, the coupon popup inserted after task 2
/// and task 3 rewired onto it.
#[test]
fn seed_000_a_popup_task_is_inserted_after_task_2_and_task_3_is_rewired_onto_it() {
    let mut a = Agent::new(Dialect::PlanManager);
    a.ok("createPlan", json!({
        "overallGoal": "在京东网站上搜索'机械键盘'，并将价格低于500元的第一款产品加入购物车。",
        "tasks": [
            {"name": "Navigate to JD.com homepage", "reasoning": "The first step is to open the target website."},
            {"name": "Input 'mechanical keyboard' into search bar", "dependencies": [1]},
            {"name": "Click the search button", "dependencies": [2]},
            {"name": "Filter results by price (under 500)", "dependencies": [3]},
            {"name": "Add the first item to the shopping cart", "dependencies": [4]}
        ]
    }));
    let started: Value = serde_json::from_str(&a.ok("startNextTask", json!({}))).unwrap();
    assert_eq!(started["task"]["id"], 1);
    assert_eq!(started["task"]["status"], "in_progress");
    let done: Value = serde_json::from_str(&a.ok(
        "completeCurrentTask",
        json!({"result_message": "Successfully navigated to JD.com"}),
    ))
    .unwrap();
    assert_eq!(
        done,
        json!({"success": true, "message": "Task 1 marked as completed."})
    );
    let next: Value = serde_json::from_str(&a.ok("startNextTask", json!({}))).unwrap();
    assert_eq!(next["task"]["id"], 2);
    a.ok("completeCurrentTask", json!({"result_message": "typed"}));

    let added: Value = serde_json::from_str(&a.ok(
        "addTask",
        json!({
            "name": "Close the new user coupon popup",
            "dependencies": [2],
            "reasoning": "An unexpected popup is blocking the search button.",
            "after_task_id": 2
        }),
    ))
    .unwrap();
    assert_eq!(added["newTask"]["id"], 6);
    assert_eq!(added["newTask"]["status"], "pending");
    let plan = a.plan();
    let order: Vec<u32> = plan.subtasks().iter().map(|s| s.id().0).collect();
    assert_eq!(order, [1, 2, 6, 3, 4, 5]);
    assert_eq!(
        plan.subtask(SubtaskId(3)).unwrap().dependencies(),
        vec![SubtaskId(6)]
    );

    let next: Value = serde_json::from_str(&a.ok("startNextTask", json!({}))).unwrap();
    assert_eq!(next["task"]["id"], 6, "the popup task runs next");
    let view: Value = serde_json::from_str(&a.ok("getPlan", json!({}))).unwrap();
    assert_eq!(view["currentTaskID"], 6);
}

/// Seed 001: create → mark_step → get with OpenManus' `planning` tool.
#[test]
fn seed_001_create_mark_step_and_get_show_progress_and_markers() {
    let mut a = Agent::new(Dialect::OpenManus);
    let created = a.ok(
        "planning",
        json!({
            "command": "create",
            "plan_id": "task_123",
            "title": "实现新功能",
            "steps": ["分析需求", "设计解决方案", "编写代码", "测试功能", "部署上线"]
        }),
    );
    assert!(
        created.starts_with("Plan created successfully with ID: task_123"),
        "{created}"
    );
    a.ok("planning", json!({"command": "mark_step", "plan_id": "task_123", "step_index": 0, "step_status": "completed"}));
    a.ok(
        "planning",
        json!({
            "command": "mark_step", "plan_id": "task_123", "step_index": 1,
            "step_status": "in_progress", "step_notes": "正在进行架构设计"
        }),
    );
    let got = a.ok("planning", json!({"command": "get", "plan_id": "task_123"}));
    assert!(
        got.contains("Progress: 1/5 steps completed (20.0%)"),
        "{got}"
    );
    assert!(got.contains("0. [✓] 分析需求"), "{got}");
    assert!(
        got.contains("1. [→] 设计解决方案\n   Notes: 正在进行架构设计"),
        "{got}"
    );
    assert!(got.contains("2. [ ] 编写代码"), "{got}");
    // Step 3 cannot be completed before step 2: the chain is enforced.
    let refused = a.err(
        "planning",
        json!({"command": "mark_step", "step_index": 3, "step_status": "completed"}),
    );
    assert!(refused.contains("depends on subtask 3"), "{refused}");
    a.ok("planning", json!({"command": "mark_step", "step_index": 1, "step_status": "blocked", "step_notes": "waiting on API keys"}));
    let got = a.ok("planning", json!({"command": "get"}));
    assert!(got.contains("1. [!] 设计解决方案"), "{got}");
}

#[test]
fn seed_001_update_keeps_status_and_notes_of_steps_whose_text_is_unchanged() {
    let mut a = Agent::new(Dialect::OpenManus);
    a.ok(
        "planning",
        json!({"command": "create", "plan_id": "p", "title": "t", "steps": ["a", "b", "c"]}),
    );
    a.ok("planning", json!({"command": "mark_step", "step_index": 0, "step_status": "completed", "step_notes": "did a"}));
    // Insert a step at the front: OpenManus would give "a"'s status to "new".
    a.ok(
        "planning",
        json!({"command": "update", "plan_id": "p", "steps": ["new", "a", "b", "c"]}),
    );
    let plan = a.plan();
    let a_step = plan.subtasks().iter().find(|s| s.name() == "a").unwrap();
    assert_eq!(a_step.state(), SubtaskState::Done);
    assert_eq!(a_step.notes(), "did a");
    assert_eq!(plan.subtasks()[0].state(), SubtaskState::Todo);
}
