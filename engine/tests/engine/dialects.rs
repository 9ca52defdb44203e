//! Each dialect end to end through `call`, and what every dialect promises.

use plan_engine::{tool_specs, tools, Dialect, PlanState, SubtaskState};
use serde_json::json;

use crate::common::Agent;

#[test]
fn every_dialect_lists_openai_function_schemas_generated_from_its_types() {
    for dialect in Dialect::ALL {
        let specs = tools(dialect);
        assert!(!specs.is_empty());
        for spec in &specs {
            assert_eq!(spec["type"], "function");
            let f = &spec["function"];
            let name = f["name"].as_str().expect("a name");
            assert!(
                f["description"].as_str().is_some_and(|d| d.len() > 10),
                "{dialect} {name} has a description"
            );
            assert_eq!(f["parameters"]["type"], "object", "{dialect} {name}");
            assert!(
                f["parameters"]["properties"].is_object(),
                "{dialect} {name}"
            );
            let text = spec.to_string();
            assert!(
                !text.contains("$ref") && !text.contains("$schema"),
                "{dialect} {name} is self-contained: {text}"
            );
        }
    }
    let names = |d| {
        tools(d)
            .iter()
            .map(|s| s["function"]["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(Dialect::AgentScope),
        [
            "create_plan",
            "update_plan_info",
            "revise_current_plan",
            "update_subtask_state",
            "finish_subtask",
            "view_subtasks",
            "get_subtask_count",
            "finish_plan",
            "view_historical_plans",
            "recover_historical_plan",
        ]
    );
    assert_eq!(names(Dialect::OpenManus), ["planning"]);
    for seed_tool in [
        "startNextTask",
        "completeCurrentTask",
        "failCurrentTask",
        "skipTask",
        "addTask",
        "modifyTask",
    ] {
        assert!(
            names(Dialect::PlanManager).contains(&seed_tool.to_string()),
            "{seed_tool}"
        );
    }
}

#[test]
fn schemas_say_which_arguments_are_required() {
    let specs = tools(Dialect::AgentScope);
    let finish = specs
        .iter()
        .find(|s| s["function"]["name"] == "finish_subtask")
        .unwrap();
    let required = finish["function"]["parameters"]["required"]
        .as_array()
        .unwrap();
    assert!(
        required.contains(&json!("subtask_idx")) && required.contains(&json!("subtask_outcome"))
    );
    assert_eq!(
        finish["function"]["parameters"]["properties"]["subtask_idx"]["type"],
        "integer"
    );
}

#[test]
fn agentscope_walks_a_plan_through_its_ten_tools() {
    let mut a = Agent::new(Dialect::AgentScope);
    a.ok(
        "create_plan",
        json!({
            "name": "Write a report", "description": "d", "expected_outcome": "a report",
            "subtasks": [
                {"name": "Collect sources", "description": "find 5", "expected_outcome": "list"},
                {"name": "Draft", "expected_outcome": "draft"},
                {"name": "Edit", "expected_outcome": "final"}
            ]
        }),
    );
    assert!(a
        .err(
            "update_subtask_state",
            json!({"subtask_idx": 1, "state": "in_progress"})
        )
        .contains("depends on subtask 1"));
    a.ok(
        "update_subtask_state",
        json!({"subtask_idx": "0", "state": "in_progress"}),
    );
    let again = a.ok(
        "update_subtask_state",
        json!({"subtask_idx": 0, "state": "in_progress"}),
    );
    assert!(again.contains("already 'in_progress'"));
    let finished = a.ok(
        "finish_subtask",
        json!({"subtask_idx": 0, "subtask_outcome": "5 sources: ..."}),
    );
    assert!(
        finished.contains("The next subtask named 'Draft' (at index 1) is activated."),
        "{finished}"
    );
    a.ok(
        "revise_current_plan",
        json!({"subtask_idx": 2, "action": "add", "subtask": {"name": "Fact check"}}),
    );
    assert_eq!(a.plan().subtasks()[2].name(), "Fact check");
    let count = a.ok("get_subtask_count", json!({}));
    assert!(
        count.starts_with("The current plan has 4 subtasks: 1 done, 1 in_progress, 2 todo"),
        "{count}"
    );
    let view = a.ok("view_subtasks", json!({"subtask_idx": [0, 9]}));
    assert!(
        view.contains("Actual Outcome: 5 sources: ...") && view.contains("Invalid subtask_idx [9]"),
        "{view}"
    );
    assert!(a
        .err(
            "update_subtask_state",
            json!({"subtask_idx": 1, "state": "done"})
        )
        .contains("finish_subtask"));
    a.ok(
        "finish_subtask",
        json!({"subtask_idx": 1, "subtask_outcome": "draft.md"}),
    );
    a.ok(
        "update_subtask_state",
        json!({"subtask_idx": 2, "state": "abandoned"}),
    );
    a.ok(
        "finish_subtask",
        json!({"subtask_idx": 3, "subtask_outcome": "final.md"}),
    );
    a.ok("update_plan_info", json!({"name": "Write the report"}));
    let old_id = a.plan().id();
    a.ok(
        "finish_plan",
        json!({"state": "done", "outcome": "final.md"}),
    );
    assert!(a.ws.active_plan(&a.session).is_none());
    let history = a.ok("view_historical_plans", json!({}));
    assert!(
        history.contains("Write the report") && history.contains("state: done"),
        "{history}"
    );
    a.ok(
        "recover_historical_plan",
        json!({"plan_id": old_id.to_string()}),
    );
    assert_eq!(a.plan().state(), PlanState::Running);
}

#[test]
fn agentscope_create_plan_archives_the_plan_it_replaces() {
    let mut a = Agent::new(Dialect::AgentScope);
    a.ok(
        "create_plan",
        json!({"name": "First", "subtasks": [{"name": "x"}]}),
    );
    let first = a.plan().id();
    let text = a.ok(
        "create_plan",
        json!({"name": "Second", "subtasks": [{"name": "y"}]}),
    );
    assert!(
        text.contains("is replaced by the newly created plan named 'Second'"),
        "{text}"
    );
    let archived = plan_engine::PlanBook::plan(&a.ws, first).unwrap();
    assert_eq!(archived.state(), PlanState::Abandoned);
    assert_eq!(
        a.ws.events(first).len(),
        2,
        "created + archived, nothing lost"
    );
}

#[test]
fn a_bad_create_leaves_the_current_plan_alone() {
    let mut a = Agent::new(Dialect::AgentScope);
    a.ok(
        "create_plan",
        json!({"name": "Keep me", "subtasks": [{"name": "x"}]}),
    );
    a.err("create_plan", json!({"name": "   ", "subtasks": []}));
    assert_eq!(a.plan().title(), "Keep me");
    assert_eq!(a.plan().state(), PlanState::Approved);
}

#[test]
fn canonical_tools_cover_the_whole_life_of_a_plan() {
    let mut a = Agent::new(Dialect::Canonical);
    a.ok(
        "create_plan",
        json!({
            "title": "Ship v2", "goal": "release", "max_parallel": 2,
            "subtasks": [
                {"name": "build"}, {"name": "docs"}, {"name": "test", "dependencies": [1]},
                {"name": "release", "dependencies": "[2, 3]"}
            ]
        }),
    );
    let batch = a.ok("next_batch", json!({}));
    assert!(
        batch.contains("#1 build") && batch.contains("#2 docs"),
        "{batch}"
    );
    let started = a.ok("start_next", json!({"count": 5}));
    assert_eq!(
        started.lines().count(),
        3,
        "two started (max_parallel 2): {started}"
    );
    assert!(a
        .err("start_subtask", json!({"subtask_id": 3}))
        .contains("depends on subtask 1"));
    a.ok(
        "complete_subtask",
        json!({"subtask_id": "#1", "outcome": "built", "start_next": true}),
    );
    assert_eq!(a.plan().in_progress().len(), 2);
    a.ok("fail_subtask", json!({"subtask_id": 3, "error": "flaky"}));
    a.ok("start_subtask", json!({"subtask_id": 3}));
    a.ok(
        "complete_subtask",
        json!({"subtask_id": 3, "outcome": "green"}),
    );
    a.ok(
        "add_subtask",
        json!({"name": "changelog", "after_subtask_id": 2}),
    );
    // release (#4) was rewired from docs (#2) onto changelog (#5).
    let cycle = a.err(
        "set_dependencies",
        json!({"subtask_id": 5, "dependencies": [4]}),
    );
    assert!(cycle.contains("cycle 5 → 4 → 5"), "{cycle}");
    a.ok(
        "complete_subtask",
        json!({"subtask_id": 2, "outcome": "docs done"}),
    );
    a.ok(
        "skip_subtask",
        json!({"subtask_id": 5, "reason": "not needed"}),
    );
    a.ok("comment", json!({"body": "looks good", "subtask_id": 3}));
    a.ok("start_subtask", json!({"subtask_id": 4}));
    a.ok(
        "complete_subtask",
        json!({"subtask_id": 4, "outcome": "v2.0.0"}),
    );
    let overview = a.ok("get_plan", json!({}));
    assert!(
        overview.contains("5/5 subtasks done or skipped (100%)"),
        "{overview}"
    );
    a.ok(
        "finish_plan",
        json!({"state": "done", "outcome": "v2 shipped"}),
    );
    assert_eq!(a.plan().state(), PlanState::Done);
    assert_eq!(
        a.plan()
            .subtask(plan_engine::SubtaskId(3))
            .unwrap()
            .attempts(),
        2
    );
}

#[test]
fn canonical_tools_set_edit_and_clear_a_subtasks_tool() {
    let mut a = Agent::new(Dialect::Canonical);
    a.ok(
        "create_plan",
        json!({"title": "Revenue", "subtasks": [{"name": "Read sales.csv", "tool": "read_file"}]}),
    );
    let added = a.ok(
        "add_subtask",
        json!({"name": "Sum March revenue from sales.csv", "tool": "run_python"}),
    );
    assert!(added.contains("tool: run_python"), "{added}");
    let tool = |a: &Agent, id: u32| {
        a.plan()
            .subtask(plan_engine::SubtaskId(id))
            .unwrap()
            .tool()
            .map(str::to_string)
    };
    assert_eq!(tool(&a, 1).as_deref(), Some("read_file"));
    a.ok(
        "edit_subtask",
        json!({"subtask_id": 2, "tool": "docs.search"}),
    );
    assert_eq!(tool(&a, 2).as_deref(), Some("docs.search"));
    a.ok("edit_subtask", json!({"subtask_id": 2, "tool": ""}));
    assert_eq!(tool(&a, 2), None);
    let refused = a.err(
        "edit_subtask",
        json!({"subtask_id": 1, "tool": "run python"}),
    );
    assert!(refused.contains("tool"), "{refused}");
    a.ok("start_subtask", json!({"subtask_id": 1}));
    let refused = a.err(
        "edit_subtask",
        json!({"subtask_id": 1, "tool": "run_shell"}),
    );
    assert!(
        refused.contains("in_progress") || refused.contains("in progress"),
        "{refused}"
    );
    let schema = |name: &str| {
        tools(Dialect::Canonical)
            .into_iter()
            .find(|s| s["function"]["name"] == name)
            .unwrap()
    };
    for name in ["add_subtask", "edit_subtask"] {
        assert_eq!(
            schema(name)["function"]["parameters"]["properties"]["tool"]["type"],
            json!(["string", "null"]),
            "{name}"
        );
    }
}

#[test]
fn planmanager_asks_for_an_id_when_several_tasks_run() {
    let mut a = Agent::new(Dialect::PlanManager);
    a.ok(
        "createPlan",
        json!({"overallGoal": "g", "tasks": [{"name": "a"}, {"name": "b"}]}),
    );
    a.ok("startNextTask", json!({}));
    a.ok("startNextTask", json!({}));
    let err = a.err("completeCurrentTask", json!({"result_message": "x"}));
    assert!(
        err.contains("\"success\":false") && err.contains("say which one you mean"),
        "{err}"
    );
    a.ok(
        "completeCurrentTask",
        json!({"result_message": "x", "task_id": "2"}),
    );
    let none = a.call("startNextTask", json!({}));
    assert!(
        none.text.contains("All tasks are completed or blocked"),
        "{}",
        none.text
    );
    assert!(!a
        .err("modifyTask", json!({"task_id": 2, "new_name": "z"}))
        .is_empty());
}

#[test]
fn every_failure_is_a_result_the_model_can_read_never_a_panic() {
    for dialect in Dialect::ALL {
        let mut a = Agent::new(dialect);
        let unknown = a.call("fly_to_the_moon", json!({}));
        assert!(
            !unknown.ok && unknown.error == Some("unknown_tool"),
            "{dialect}: {}",
            unknown.text
        );
        for spec in tool_specs(dialect) {
            assert!(
                unknown.text.contains(spec.name),
                "{dialect}: the refusal names {}: {}",
                spec.name,
                unknown.text
            );
            let name = spec.name;
            let empty = a.call(name, json!({}));
            assert_ne!(
                empty.error,
                Some("unknown_tool"),
                "{dialect}: every listed tool has a handler: {name}"
            );
            for garbage in [
                json!(null),
                json!("not json {"),
                json!({"subtask_idx": "x", "command": 7}),
                json!([1, 2]),
            ] {
                let r = a.call(name, garbage.clone());
                assert!(!r.text.is_empty(), "{dialect} {name} {garbage}");
            }
        }
        let no_plan = match dialect {
            Dialect::Canonical => a.call("start_next", json!({})),
            Dialect::PlanManager => a.call("startNextTask", json!({})),
            Dialect::OpenManus => {
                a.call("planning", json!({"command": "mark_step", "step_index": 0}))
            }
            Dialect::AgentScope => a.call(
                "finish_subtask",
                json!({"subtask_idx": 0, "subtask_outcome": "x"}),
            ),
        };
        assert!(!no_plan.ok, "{dialect}");
    }
}

#[test]
fn an_agent_cannot_start_work_on_a_plan_awaiting_approval() {
    let mut a = Agent::new(Dialect::Canonical);
    a.ok(
        "create_plan",
        json!({"title": "t", "approval_required": true, "subtasks": [{"name": "a"}]}),
    );
    let refused = a.err("start_next", json!({}));
    assert!(refused.contains("a person must approve it"), "{refused}");
    assert_eq!(a.plan().subtasks()[0].state(), SubtaskState::Todo);
}

#[test]
fn a_state_change_to_the_state_a_subtask_already_has_succeeds_in_every_dialect_and_changes_nothing()
{
    // (dialect, create, the no-op call on the first subtask, what the reply says)
    let cases = [
        (
            Dialect::Canonical,
            (
                "create_plan",
                json!({"title": "t", "subtasks": [{"name": "a"}, {"name": "b"}]}),
            ),
            ("reset_subtask", json!({"subtask_id": 1})),
            "already was todo",
        ),
        (
            Dialect::AgentScope,
            (
                "create_plan",
                json!({"name": "t", "description": "d", "expected_outcome": "o",
                       "subtasks": [{"name": "a"}, {"name": "b"}]}),
            ),
            (
                "update_subtask_state",
                json!({"subtask_idx": 0, "state": "todo"}),
            ),
            "already 'todo'",
        ),
        (
            Dialect::OpenManus,
            (
                "planning",
                json!({"command": "create", "plan_id": "p", "title": "t", "steps": ["a", "b"]}),
            ),
            (
                "planning",
                json!({"command": "mark_step", "plan_id": "p", "step_index": 0, "step_status": "not_started"}),
            ),
            "Step 0 updated",
        ),
        (
            Dialect::PlanManager,
            (
                "createPlan",
                json!({"overallGoal": "g", "tasks": [{"name": "a"}, {"name": "b"}]}),
            ),
            ("skipTask", json!({"task_id": 1, "reason": "not needed"})),
            "already was skipped",
        ),
    ];
    for (dialect, (create, create_args), (tool, args), says) in cases {
        let mut a = Agent::new(dialect);
        a.ok(create, create_args);
        if dialect == Dialect::PlanManager {
            a.ok("skipTask", json!({"task_id": 1, "reason": "not needed"}));
        }
        let before = a.plan().version();
        let r = a.call(tool, args.clone());
        assert!(r.ok, "{dialect}: {tool}({args}) was refused: {}", r.text);
        assert!(r.text.contains(says), "{dialect}: {}", r.text);
        assert_eq!(a.plan().version(), before, "{dialect}: the plan changed");
    }
}

#[test]
fn agentscope_view_subtasks_with_only_invalid_indexes_is_a_refusal() {
    let mut a = Agent::new(Dialect::AgentScope);
    a.ok(
        "create_plan",
        json!({"name": "t", "description": "d", "expected_outcome": "o",
               "subtasks": [{"name": "a"}, {"name": "b"}]}),
    );
    let err = a.err("view_subtasks", json!({"subtask_idx": [7, 9]}));
    assert!(
        err.contains("Invalid subtask_idx [7, 9]. Must be between 0 and 1."),
        "{err}"
    );
    assert!(!a
        .err("view_subtasks", json!({"subtask_idx": []}))
        .is_empty());
    let mixed = a.ok("view_subtasks", json!({"subtask_idx": [1, 9]}));
    assert!(
        mixed.contains("Subtask at index 1") && mixed.contains("Invalid subtask_idx [9]"),
        "{mixed}"
    );
}

#[test]
fn a_sessions_settings_go_with_the_plans_it_creates_in_every_dialect_and_the_engine_holds_the_limit(
) {
    let create = |dialect: Dialect, n: usize| -> (&'static str, serde_json::Value) {
        let names: Vec<String> = (1..=n).map(|i| format!("step {i}")).collect();
        match dialect {
            Dialect::Canonical => (
                "create_plan",
                json!({"title": "t", "subtasks": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}),
            ),
            Dialect::PlanManager => (
                "createPlan",
                json!({"overallGoal": "t", "tasks": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}),
            ),
            Dialect::OpenManus => (
                "planning",
                json!({"command": "create", "plan_id": format!("p{n}"), "title": "t", "steps": names}),
            ),
            Dialect::AgentScope => (
                "create_plan",
                json!({"name": "t", "subtasks": names.iter().map(|n| json!({"name": n, "description": "", "expected_outcome": ""})).collect::<Vec<_>>()}),
            ),
        }
    };
    for dialect in Dialect::ALL {
        let mut agent = Agent::new(dialect);
        agent.defaults = plan_engine::SessionDefaults {
            max_subtasks: Some(2),
            need_user_confirm: Some(true),
        };
        let (tool, args) = create(dialect, 3);
        let refused = agent.err(tool, args);
        assert!(
            refused.contains("at most 2 subtasks"),
            "{dialect}: {refused}"
        );
        assert!(agent.ws.active_plan(&agent.session).is_none(), "{dialect}");
        let (tool, args) = create(dialect, 2);
        agent.ok(tool, args);
        assert_eq!(agent.plan().max_subtasks(), Some(2), "{dialect}");
        assert_eq!(agent.plan().need_user_confirm(), Some(true), "{dialect}");
    }
    // The call's own setting wins over the session's.
    let mut agent = Agent::new(Dialect::Canonical);
    agent.defaults.max_subtasks = Some(2);
    agent.defaults.need_user_confirm = Some(true);
    agent.ok(
        "create_plan",
        json!({"title": "t", "max_subtasks": 3, "need_user_confirm": false,
               "subtasks": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}),
    );
    assert_eq!(agent.plan().max_subtasks(), Some(3));
    assert_eq!(agent.plan().need_user_confirm(), Some(false));
    let full = agent.err("add_subtask", json!({"name": "d"}));
    assert!(full.contains("at most 3 subtasks"), "{full}");
    agent.ok("update_plan_info", json!({"need_user_confirm": true}));
    assert_eq!(agent.plan().need_user_confirm(), Some(true));
}

#[test]
fn an_agentscope_create_past_the_sessions_limit_leaves_the_current_plan_alone() {
    let mut agent = Agent::new(Dialect::AgentScope);
    agent.defaults.max_subtasks = Some(2);
    let sub = |name: &str| json!({"name": name, "description": "", "expected_outcome": ""});
    agent.ok(
        "create_plan",
        json!({"name": "first", "subtasks": [sub("a")]}),
    );
    let refused = agent.err(
        "create_plan",
        json!({"name": "second", "subtasks": [sub("a"), sub("b"), sub("c")]}),
    );
    assert!(refused.contains("at most 2 subtasks"), "{refused}");
    assert_eq!(agent.plan().title(), "first");
    assert_eq!(agent.plan().state(), PlanState::Approved);
}
