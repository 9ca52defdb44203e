//! Markdown, Mermaid and JSON renderings, and progress.

use plan_engine::render::{export_json, import_json, markdown, mermaid};
use plan_engine::{Command, NewPlan, NewSubtask, Op, Plan, PlanError, SubtaskId, SubtaskState};

use crate::common::at;

fn sample() -> Plan {
    let spec = NewPlan {
        id: uuid::Uuid::from_u128(3),
        title: "Launch".into(),
        goal: "Ship it".into(),
        subtasks: vec![
            NewSubtask::named("Build \"core\""),
            NewSubtask::named("Docs"),
            NewSubtask::named("Test <all>").after(&[1]),
            NewSubtask::named("Release").after(&[2, 3]),
        ],
        ..NewPlan::default()
    };
    let (mut plan, _) = Plan::create(&spec, "agent", at(0)).unwrap();
    for (id, state) in [
        (1, SubtaskState::InProgress),
        (1, SubtaskState::Done),
        (2, SubtaskState::Skipped),
    ] {
        plan.execute(
            &Command::from(Op::SetSubtaskState {
                id: SubtaskId(id),
                state,
                note: Some("ok".into()),
                start_next: false,
            }),
            "agent",
            at(1),
        )
        .unwrap();
    }
    plan
}

#[test]
fn markdown_has_a_progress_header_and_a_checkbox_per_subtask() {
    let md = markdown(&sample());
    assert!(md.starts_with("# Launch\n**Goal**: Ship it\n"), "{md}");
    assert!(
        md.contains("**Progress**: 2/4 subtasks done or skipped (50%)"),
        "{md}"
    );
    assert!(md.contains("- [x] #1 Build \"core\" — ok"), "{md}");
    assert!(md.contains("- [ ] #2 Docs _skipped_ — ok"), "{md}");
    assert!(md.contains("- [ ] #4 Release (after #2, #3)"), "{md}");
}

#[test]
fn a_subtasks_tool_shows_on_its_markdown_line_and_in_the_json() {
    let spec = NewPlan {
        title: "Revenue".into(),
        subtasks: vec![
            NewSubtask {
                tool: Some("read_file".into()),
                ..NewSubtask::named("Read sales.csv")
            },
            NewSubtask {
                tool: Some("run_python".into()),
                ..NewSubtask::named("Sum March revenue from sales.csv").after(&[1])
            },
            NewSubtask::named("Write the summary").after(&[2]),
        ],
        ..NewPlan::default()
    };
    let (plan, _) = Plan::create(&spec, "agent", at(0)).unwrap();
    let md = markdown(&plan);
    assert!(
        md.contains("- [ ] #1 Read sales.csv · tool: read_file\n"),
        "{md}"
    );
    assert!(
        md.contains("- [ ] #2 Sum March revenue from sales.csv · tool: run_python (after #1)"),
        "{md}"
    );
    assert!(
        md.contains("- [ ] #3 Write the summary (after #2)\n"),
        "{md}"
    );
    let json: serde_json::Value = serde_json::from_str(&export_json(&plan)).unwrap();
    assert_eq!(json["subtasks"][1]["tool"], "run_python");
    assert!(
        json["subtasks"][2].get("tool").is_none(),
        "no tool, no field: {}",
        json["subtasks"][2]
    );
    assert_eq!(import_json(&export_json(&plan)).unwrap(), plan);
}

#[test]
fn mermaid_draws_each_dependency_as_an_edge_with_escaped_labels() {
    let m = mermaid(&sample());
    assert!(m.starts_with("flowchart TD\n"));
    assert!(
        m.contains("s1[\"#1 Build #quot;core#quot;\"]:::done"),
        "{m}"
    );
    assert!(m.contains("s3[\"#3 Test #lt;all#gt;\"]:::todo"), "{m}");
    for edge in ["s1 --> s3", "s2 --> s4", "s3 --> s4"] {
        assert!(m.contains(edge), "{edge} in {m}");
    }
}

#[test]
fn json_export_imports_to_the_same_plan() {
    let plan = sample();
    let back = import_json(&export_json(&plan)).unwrap();
    assert_eq!(back, plan);
    assert_eq!(
        back.ready(),
        vec![SubtaskId(3)],
        "the index is rebuilt after import"
    );
}

#[test]
fn an_import_with_a_cycle_or_garbage_is_refused() {
    let mut value: serde_json::Value = serde_json::from_str(&export_json(&sample())).unwrap();
    value["subtasks"][0]["dependencies"] = serde_json::json!([4]);
    let err = import_json(&value.to_string()).unwrap_err();
    assert!(matches!(err, PlanError::Cycle { .. }), "{err}");
    assert!(import_json("{\"title\": 1}")
        .unwrap_err()
        .to_string()
        .starts_with("json: not a planboard plan"));
}

#[test]
fn progress_counts_states_and_finds_the_critical_path() {
    let p = sample().progress();
    assert_eq!(
        (p.total, p.done, p.skipped, p.todo, p.percent),
        (4, 1, 1, 2, 50)
    );
    assert_eq!(p.ready, vec![SubtaskId(3)]);
    assert_eq!(p.critical_path, vec![SubtaskId(3), SubtaskId(4)]);
}
