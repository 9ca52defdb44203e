//! Random command sequences never break the engine's invariants.

use std::collections::HashSet;

use plan_engine::dag::critical_path;
use plan_engine::render::{export_json, import_json};
use plan_engine::transitions::subtask_transition;
use plan_engine::{
    Command, EventKind, NewPlan, NewSubtask, Op, Plan, PlanError, PlanState, Position, SubtaskId,
    SubtaskState,
};
use proptest::prelude::*;

use crate::common::at;

fn id() -> impl Strategy<Value = SubtaskId> {
    (0u32..12).prop_map(SubtaskId)
}

fn state() -> impl Strategy<Value = SubtaskState> {
    proptest::sample::select(SubtaskState::ALL.to_vec())
}

fn name() -> impl Strategy<Value = String> {
    proptest::sample::select(vec!["fetch", "parse", "store", "check", "report", "ship"])
        .prop_map(str::to_string)
}

/// Tool names a planner writes.
fn valid_tool() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,10}(\\.[a-z][a-z0-9_-]{0,8})?"
}

/// Tool names as a planner writes them, valid or not: blank ones clear the
/// tool, the others are refused.
fn tool() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => valid_tool(),
        1 => proptest::sample::select(vec!["", "  ", "run python", "read_file()", "fetch/url"])
            .prop_map(str::to_string),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (id(), tool()).prop_map(|(id, tool)| Op::EditSubtask {
            id, patch: plan_engine::SubtaskPatch { tool: Some(tool), ..Default::default() }
        }),
        6 => (id(), state(), any::<bool>()).prop_map(|(id, state, start_next)| Op::SetSubtaskState {
            id, state, note: Some("n".into()), start_next
        }),
        2 => (1usize..4).prop_map(|count| Op::StartNext { count }),
        3 => (name(), prop::collection::vec(id(), 0..3), 0u8..4, id(), any::<bool>(), prop::collection::vec(id(), 0..2))
            .prop_map(|(name, deps, pos, anchor, rewire, required_by)| Op::AddSubtask {
                subtask: NewSubtask { name, dependencies: deps, ..NewSubtask::default() },
                position: match pos { 0 => Position::End, 1 => Position::After(anchor), 2 => Position::Before(anchor), _ => Position::Index(anchor.0 as usize) },
                rewire_after: rewire.then_some(anchor),
                required_by,
            }),
        2 => (id(), prop::collection::vec(id(), 0..3)).prop_map(|(id, dependencies)| Op::SetDependencies { id, dependencies }),
        2 => id().prop_map(|id| Op::DeleteSubtask { id }),
        1 => (id(), 0usize..8).prop_map(|(id, to_index)| Op::MoveSubtask { id, to_index }),
        1 => prop::collection::vec(name(), 0..6).prop_map(|names| Op::ReplaceSubtasks {
            subtasks: names.into_iter().map(NewSubtask::named).collect()
        }),
        1 => (0u32..3).prop_map(|m| Op::UpdateInfo { patch: plan_engine::InfoPatch { max_parallel: Some(m), ..Default::default() } }),
        1 => Just(Op::Approve { comment: None }),
        1 => Just(Op::Reject { comment: "no".into() }),
        1 => Just(Op::Submit {}),
        1 => Just(Op::Pause {}),
        1 => Just(Op::Resume {}),
        1 => proptest::sample::select(vec![PlanState::Done, PlanState::Failed, PlanState::Abandoned])
            .prop_map(|state| Op::Finish { state, outcome: "end".into() }),
        1 => Just(Op::Recover {}),
        1 => proptest::option::of(id()).prop_map(|subtask| Op::Comment { subtask, body: "c".into() }),
    ]
}

fn initial() -> impl Strategy<Value = NewPlan> {
    (
        prop::collection::vec((name(), prop::collection::vec(0u32..6, 0..3)), 0..7),
        any::<bool>(),
        proptest::option::of(1u32..3),
    )
        .prop_map(|(subtasks, approval_required, max_parallel)| NewPlan {
            id: uuid::Uuid::from_u128(42),
            title: "prop".into(),
            approval_required,
            max_parallel,
            subtasks: subtasks
                .into_iter()
                .enumerate()
                // Only earlier subtasks as dependencies, so the start is a DAG.
                .map(|(i, (name, deps))| NewSubtask {
                    name,
                    dependencies: deps
                        .into_iter()
                        .filter(|d| (*d as usize) < i)
                        .map(|d| SubtaskId(d + 1))
                        .collect(),
                    ..NewSubtask::default()
                })
                .collect(),
            ..NewPlan::default()
        })
}

/// Points generated ids at subtasks that exist (id 11 stays unknown on
/// purpose), so most commands are meaningful instead of "not found".
fn aim(op: Op, plan: &Plan) -> Op {
    let ids: Vec<SubtaskId> = plan.subtasks().iter().map(|s| s.id()).collect();
    let map = |id: SubtaskId| match (id.0, ids.len()) {
        (11, _) | (_, 0) => SubtaskId(999),
        (k, n) => ids[k as usize % n],
    };
    let many = |v: Vec<SubtaskId>| v.into_iter().map(map).collect::<Vec<_>>();
    match op {
        Op::SetSubtaskState {
            id,
            state,
            note,
            start_next,
        } => Op::SetSubtaskState {
            id: map(id),
            state,
            note,
            start_next,
        },
        Op::AddSubtask {
            mut subtask,
            position,
            rewire_after,
            required_by,
        } => {
            subtask.dependencies = many(subtask.dependencies);
            let position = match position {
                Position::After(x) => Position::After(map(x)),
                Position::Before(x) => Position::Before(map(x)),
                other => other,
            };
            Op::AddSubtask {
                subtask,
                position,
                rewire_after: rewire_after.map(map),
                required_by: many(required_by),
            }
        }
        Op::SetDependencies { id, dependencies } => Op::SetDependencies {
            id: map(id),
            dependencies: many(dependencies),
        },
        Op::DeleteSubtask { id } => Op::DeleteSubtask { id: map(id) },
        Op::EditSubtask { id, patch } => Op::EditSubtask { id: map(id), patch },
        Op::MoveSubtask { id, to_index } => Op::MoveSubtask {
            id: map(id),
            to_index,
        },
        Op::Comment { subtask, body } => Op::Comment {
            subtask: subtask.map(map),
            body,
        },
        other => other,
    }
}

fn check_invariants(plan: &Plan) -> Result<(), TestCaseError> {
    let ids: HashSet<SubtaskId> = plan.subtasks().iter().map(|s| s.id()).collect();
    prop_assert_eq!(ids.len(), plan.subtasks().len(), "ids are unique");
    for s in plan.subtasks() {
        prop_assert!(s.id().0 >= 1 && s.id().0 < plan.next_subtask_id());
        prop_assert!(!s.dependencies().contains(&s.id()), "no self edge");
        for d in s.dependencies() {
            prop_assert!(ids.contains(d), "dependency {} of {} exists", d, s.id());
        }
        if matches!(s.state(), SubtaskState::InProgress | SubtaskState::Done) {
            for d in s.dependencies() {
                let dep = plan.subtask(*d).unwrap();
                prop_assert!(
                    dep.state().is_settled(),
                    "{} is {} but its dependency {} is {}",
                    s.id(),
                    s.state(),
                    d,
                    dep.state()
                );
            }
        }
    }
    // Acyclic: import validation runs the full graph check.
    prop_assert!(
        import_json(&export_json(plan)).is_ok(),
        "the graph stays a DAG"
    );
    if !plan.state().is_finished()
        && plan.state() != PlanState::Approved
        && plan.state() != PlanState::Running
    {
        prop_assert!(
            plan.next_batch(10).is_empty(),
            "nothing is startable while {}",
            plan.state()
        );
    }
    if let Some(max) = plan.max_parallel() {
        prop_assert!(
            plan.next_batch(10).len() <= (max as usize).saturating_sub(plan.in_progress().len())
        );
    }
    prop_assert!(
        plan.index_is_consistent(),
        "the incremental index matches a rebuild"
    );
    let path = critical_path(plan);
    prop_assert!(path
        .iter()
        .all(|id| !plan.subtask(*id).unwrap().state().is_settled()));
    check_layout(plan)
}

/// The board's drawing: one node per subtask, every arrow to a later layer,
/// one subtask per (layer, slot), slots packed from 0.
fn check_layout(plan: &Plan) -> Result<(), TestCaseError> {
    let drawn = plan_engine::layout::layout(plan);
    prop_assert_eq!(drawn.nodes.len(), plan.subtasks().len());
    let at = |id: SubtaskId| drawn.nodes.iter().find(|n| n.id == id).unwrap();
    for s in plan.subtasks() {
        for d in s.dependencies() {
            prop_assert!(
                at(*d).layer < at(s.id()).layer,
                "{} → {} points back",
                d,
                s.id()
            );
        }
    }
    for layer in 0..drawn.layers {
        let mut slots: Vec<usize> = drawn
            .nodes
            .iter()
            .filter(|n| n.layer == layer)
            .map(|n| n.slot)
            .collect();
        slots.sort_unstable();
        let packed: Vec<usize> = (0..slots.len()).collect();
        prop_assert_eq!(slots, packed);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_command_sequences_never_break_the_invariants(spec in initial(), ops in prop::collection::vec(op(), 1..40)) {
        let Ok((mut plan, mut log)) = Plan::create(&spec, "p", at(0)) else { return Ok(()) };
        let mut ever_seen: HashSet<SubtaskId> = plan.subtasks().iter().map(|s| s.id()).collect();
        for (i, op) in ops.into_iter().enumerate() {
            let before_version = plan.version();
            let before = plan.clone();
            let existing: HashSet<SubtaskId> = plan.subtasks().iter().map(|s| s.id()).collect();
            let op = aim(op, &plan);
            match plan.execute(&Command::from(op), "p", at(i as u32 + 1)) {
                Ok(events) => {
                    prop_assert_eq!(plan.version(), before_version + 1, "one version per accepted command");
                    for e in &events {
                        prop_assert_eq!(e.version, plan.version());
                        if let EventKind::SubtaskStateChanged { from, to, .. } = &e.kind {
                            prop_assert!(subtask_transition(*from, *to).is_ok(), "{} -> {} is in the table", from, to);
                        }
                    }
                    for s in plan.subtasks() {
                        if !existing.contains(&s.id()) {
                            prop_assert!(!ever_seen.contains(&s.id()), "id {} was reused", s.id());
                            ever_seen.insert(s.id());
                        }
                    }
                    log.extend(events);
                }
                Err(e) => {
                    prop_assert_eq!(&plan, &before, "a refused command ({}) changes nothing", e);
                    let _: &PlanError = &e;
                }
            }
            check_invariants(&plan)?;
        }
        let replayed = Plan::replay(&log).expect("the log replays");
        prop_assert_eq!(&replayed, &plan, "folding the events from empty gives the plan");
        prop_assert!(replayed.index_is_consistent());
        let round_trip = import_json(&export_json(&plan)).expect("export imports");
        prop_assert_eq!(&round_trip, &plan, "JSON export round-trips");
    }

    #[test]
    fn a_tool_set_on_create_survives_an_event_replay(
        spec in initial(),
        tools in prop::collection::vec(proptest::option::of(valid_tool()), 7),
        ops in prop::collection::vec(op(), 0..30),
    ) {
        let mut spec = spec;
        for (s, tool) in spec.subtasks.iter_mut().zip(tools) {
            s.tool = tool;
        }
        let Ok((mut plan, mut log)) = Plan::create(&spec, "p", at(0)) else { return Ok(()) };
        // What each subtask's tool should be, kept beside the engine: the
        // one it was created with until an accepted edit changes it.
        let mut expected: std::collections::HashMap<SubtaskId, Option<String>> = plan
            .subtasks()
            .iter()
            .zip(&spec.subtasks)
            .map(|(s, new)| (s.id(), new.tool.clone()))
            .collect();
        for (i, op) in ops.into_iter().enumerate() {
            let op = aim(op, &plan);
            if let Ok(events) = plan.execute(&Command::from(op.clone()), "p", at(i as u32 + 1)) {
                log.extend(events);
                if let Op::EditSubtask { id, patch } = &op {
                    let t = patch.tool.as_deref().unwrap_or_default().trim();
                    expected.insert(*id, (!t.is_empty()).then(|| t.to_string()));
                }
                for s in plan.subtasks() {
                    expected.entry(s.id()).or_insert(None);
                }
            }
        }
        // Replayed from the log as a store keeps it: JSON.
        let stored: Vec<plan_engine::Event> =
            serde_json::from_str(&serde_json::to_string(&log).unwrap()).unwrap();
        let replayed = Plan::replay(&stored).expect("the log replays");
        for s in replayed.subtasks() {
            prop_assert_eq!(s.tool(), expected[&s.id()].as_deref(), "the tool of {}", s.id());
        }
        prop_assert_eq!(&replayed, &plan);
    }

    #[test]
    fn the_ready_set_is_exactly_the_todo_subtasks_with_settled_dependencies(spec in initial(), ops in prop::collection::vec(op(), 1..30)) {
        let Ok((mut plan, _)) = Plan::create(&spec, "p", at(0)) else { return Ok(()) };
        for op in ops {
            let op = aim(op, &plan);
            let _ = plan.execute(&Command::from(op), "p", at(1));
            let scanned: Vec<SubtaskId> = plan.subtasks().iter()
                .filter(|s| s.state() == SubtaskState::Todo)
                .filter(|s| s.dependencies().iter().all(|d| plan.subtask(*d).unwrap().state().is_settled()))
                .map(|s| s.id())
                .collect();
            prop_assert_eq!(plan.ready(), scanned);
        }
    }
}
