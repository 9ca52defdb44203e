//! Deciding: `apply(plan, command, actor, now) -> Result<Vec<Event>, PlanError>`.
//!
//! `apply` reads the plan and never changes it; [`Plan::fold`] records the
//! events it returns. [`Plan::execute`] does both. A rejected command returns
//! `Err` and leaves no trace, so a plan is never half-written.

use std::collections::HashMap;

use crate::command::{Command, InfoPatch, Op, Position, SubtaskPatch};
use crate::dag::{check_new_edges, require_known, validate_graph};
use crate::error::PlanError;
use crate::event::{Event, EventKind, SubtaskFields};
use crate::model::{
    limits, Approval, ApprovalStatus, Comment, NewPlan, NewSubtask, Plan, PlanState, Subtask,
    SubtaskId, SubtaskState, Timestamp,
};
use crate::transitions::{plan_transition, subtask_transition, SubtaskMove};

impl Plan {
    /// Creates a plan: the returned plan is exactly the fold of the returned events.
    pub fn create(
        spec: &NewPlan,
        actor: &str,
        now: Timestamp,
    ) -> Result<(Plan, Vec<Event>), PlanError> {
        let events = create(spec, actor, now)?;
        let plan = Plan::replay(&events)?;
        Ok((plan, events))
    }

    /// Decides and records one command; returns the events it produced.
    pub fn execute(
        &mut self,
        command: &Command,
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Event>, PlanError> {
        let events = apply(self, command, actor, now)?;
        for event in &events {
            self.fold(event);
        }
        Ok(events)
    }
}

/// Decides a create: one `plan_created` event holding the initial plan.
pub fn create(spec: &NewPlan, actor: &str, now: Timestamp) -> Result<Vec<Event>, PlanError> {
    check_actor(actor)?;
    required_text("title", &spec.title, limits::TITLE)?;
    if let Some(key) = &spec.key {
        required_text("key", key, limits::KEY)?;
    }
    text("goal", &spec.goal, limits::TEXT)?;
    text("description", &spec.description, limits::TEXT)?;
    text("expected_outcome", &spec.expected_outcome, limits::TEXT)?;
    check_limit_setting("max_parallel", spec.max_parallel)?;
    check_limit_setting("max_subtasks", spec.max_subtasks)?;
    check_capacity(spec.max_subtasks, 0, spec.subtasks.len())?;
    let mut subtasks = Vec::with_capacity(spec.subtasks.len());
    for (i, new) in spec.subtasks.iter().enumerate() {
        subtasks.push(new_subtask(new, SubtaskId(i as u32 + 1), now)?);
    }
    let next_subtask_id = subtasks.len() as u32 + 1;
    validate_graph(&subtasks, next_subtask_id)?;
    let state = if spec.draft {
        PlanState::Draft
    } else if spec.approval_required {
        PlanState::AwaitingApproval
    } else {
        PlanState::Approved
    };
    let approval = Approval {
        required: spec.approval_required,
        status: if spec.approval_required {
            ApprovalStatus::Pending
        } else {
            ApprovalStatus::Approved
        },
        by: None,
        comment: None,
        at: None,
    };
    let plan = Plan {
        id: spec.id,
        key: spec.key.clone(),
        title: spec.title.trim().to_string(),
        goal: spec.goal.clone(),
        description: spec.description.clone(),
        expected_outcome: spec.expected_outcome.clone(),
        state,
        mode: spec.mode,
        approval,
        max_subtasks: spec.max_subtasks,
        max_parallel: spec.max_parallel,
        version: 1,
        created_by: actor.to_string(),
        created_at: now,
        updated_at: now,
        finished_at: None,
        outcome: None,
        subtasks,
        next_subtask_id,
        comments: Vec::new(),
        next_comment_id: 1,
        index: Default::default(),
    };
    Ok(vec![Event {
        plan_id: spec.id,
        version: 1,
        actor: actor.into(),
        at: now,
        kind: EventKind::PlanCreated {
            plan: Box::new(plan),
        },
    }])
}

/// Decides one command against `plan`.
pub fn apply(
    plan: &Plan,
    command: &Command,
    actor: &str,
    now: Timestamp,
) -> Result<Vec<Event>, PlanError> {
    check_actor(actor)?;
    if let Some(expected) = command.expected_version {
        if expected != plan.version {
            return Err(PlanError::StaleVersion {
                expected,
                actual: plan.version,
            });
        }
    }
    let history_only = matches!(command.op, Op::Comment { .. } | Op::Recover);
    if plan.state.is_finished() && !history_only {
        return Err(PlanError::PlanFinished { state: plan.state });
    }
    let kinds = decide(plan, &command.op, actor, now)?;
    let version = plan.version + 1;
    let actor: std::sync::Arc<str> = actor.into();
    Ok(kinds
        .into_iter()
        .map(|kind| Event {
            plan_id: plan.id,
            version,
            actor: actor.clone(),
            at: now,
            kind,
        })
        .collect())
}

fn decide(plan: &Plan, op: &Op, actor: &str, now: Timestamp) -> Result<Vec<EventKind>, PlanError> {
    match op {
        Op::UpdateInfo { patch } => update_info(plan, patch),
        Op::AddSubtask {
            subtask,
            position,
            rewire_after,
            required_by,
        } => add_subtask(plan, subtask, *position, *rewire_after, required_by, now),
        Op::EditSubtask { id, patch } => edit_subtask(plan, *id, patch),
        Op::SetDependencies { id, dependencies } => set_dependencies(plan, *id, dependencies),
        Op::DeleteSubtask { id } => delete_subtask(plan, *id),
        Op::MoveSubtask { id, to_index } => {
            require_known(plan, *id)?;
            if *to_index >= plan.subtasks.len() {
                return Err(PlanError::UnknownIndex {
                    index: *to_index,
                    len: plan.subtasks.len(),
                });
            }
            Ok(vec![EventKind::SubtaskMoved {
                id: *id,
                to_index: *to_index,
            }])
        }
        Op::SetSubtaskState {
            id,
            state,
            note,
            start_next,
        } => set_state(plan, *id, *state, note.as_deref(), *start_next),
        Op::StartNext { count } => start_next(plan, *count),
        Op::SetNotes { id, notes } => {
            require_known(plan, *id)?;
            text("notes", notes, limits::TEXT)?;
            Ok(vec![EventKind::SubtaskNotesSet {
                id: *id,
                notes: notes.clone(),
            }])
        }
        Op::ReplaceSubtasks { subtasks } => replace_subtasks(plan, subtasks, now),
        Op::Submit => {
            let to = if plan.approval.required && plan.approval.status != ApprovalStatus::Approved {
                PlanState::AwaitingApproval
            } else {
                PlanState::Approved
            };
            Ok(vec![plan_move(plan, to, None)?])
        }
        Op::Approve { comment } => {
            if let Some(c) = comment {
                text("comment", c, limits::COMMENT)?;
            }
            if !matches!(plan.state, PlanState::Draft | PlanState::AwaitingApproval) {
                return Err(PlanError::IllegalPlanTransition {
                    from: plan.state,
                    to: PlanState::Approved,
                    why: "only a draft or a plan awaiting approval can be approved".into(),
                });
            }
            Ok(vec![
                EventKind::ApprovalDecided {
                    status: ApprovalStatus::Approved,
                    comment: comment.clone(),
                },
                plan_move(plan, PlanState::Approved, comment.clone())?,
            ])
        }
        Op::Reject { comment } => {
            required_text("comment", comment, limits::COMMENT)?;
            if plan.state != PlanState::AwaitingApproval {
                return Err(PlanError::IllegalPlanTransition {
                    from: plan.state,
                    to: PlanState::Draft,
                    why: "only a plan awaiting approval can be rejected".into(),
                });
            }
            Ok(vec![
                EventKind::ApprovalDecided {
                    status: ApprovalStatus::Rejected,
                    comment: Some(comment.clone()),
                },
                plan_move(plan, PlanState::Draft, Some(comment.clone()))?,
            ])
        }
        Op::Pause => Ok(vec![plan_move(plan, PlanState::Paused, None)?]),
        Op::Resume => {
            if plan.state != PlanState::Paused {
                return Err(PlanError::IllegalPlanTransition {
                    from: plan.state,
                    to: PlanState::Running,
                    why: "only a paused plan can be resumed".into(),
                });
            }
            Ok(vec![plan_move(plan, PlanState::Running, None)?])
        }
        Op::Finish { state, outcome } => finish(plan, *state, outcome),
        Op::Recover => {
            if !plan.state.is_finished() {
                return Err(PlanError::IllegalPlanTransition {
                    from: plan.state,
                    to: PlanState::Running,
                    why: "only a done, failed or abandoned plan can be recovered".into(),
                });
            }
            let started = plan.subtasks.iter().any(|s| s.state != SubtaskState::Todo);
            let to = if started {
                PlanState::Running
            } else {
                PlanState::Approved
            };
            Ok(vec![plan_move(plan, to, None)?])
        }
        Op::Comment { subtask, body } => {
            required_text("body", body, limits::COMMENT)?;
            if let Some(id) = subtask {
                require_known(plan, *id)?;
            }
            Ok(vec![EventKind::CommentAdded {
                comment: Box::new(Comment {
                    id: plan.next_comment_id,
                    subtask: *subtask,
                    author: actor.to_string(),
                    body: body.clone(),
                    at: now,
                }),
            }])
        }
    }
}

fn update_info(plan: &Plan, patch: &InfoPatch) -> Result<Vec<EventKind>, PlanError> {
    let mut info = plan.info();
    if let Some(title) = &patch.title {
        required_text("title", title, limits::TITLE)?;
        info.title = title.trim().to_string();
    }
    if let Some(goal) = &patch.goal {
        text("goal", goal, limits::TEXT)?;
        info.goal.clone_from(goal);
    }
    if let Some(d) = &patch.description {
        text("description", d, limits::TEXT)?;
        info.description.clone_from(d);
    }
    if let Some(o) = &patch.expected_outcome {
        text("expected_outcome", o, limits::TEXT)?;
        info.expected_outcome.clone_from(o);
    }
    if let Some(mode) = patch.mode {
        info.mode = mode;
    }
    if let Some(max) = patch.max_subtasks {
        info.max_subtasks = (max > 0).then_some(max);
        check_capacity(info.max_subtasks, plan.subtasks.len(), 0)?;
    }
    if let Some(max) = patch.max_parallel {
        info.max_parallel = (max > 0).then_some(max);
    }
    Ok(vec![EventKind::InfoUpdated {
        info: Box::new(info),
    }])
}

fn add_subtask(
    plan: &Plan,
    new: &NewSubtask,
    position: Position,
    rewire_after: Option<SubtaskId>,
    required_by: &[SubtaskId],
    now: Timestamp,
) -> Result<Vec<EventKind>, PlanError> {
    check_capacity(plan.max_subtasks, plan.subtasks.len(), 1)?;
    let id = SubtaskId(plan.next_subtask_id);
    let subtask = new_subtask(new, id, now)?;
    let len = plan.subtasks.len();
    let index = match position {
        Position::End => len,
        Position::Index(i) if i <= len => i,
        Position::Index(i) => return Err(PlanError::UnknownIndex { index: i, len }),
        Position::After(x) => require_known(plan, x)? + 1,
        Position::Before(x) => require_known(plan, x)?,
    };
    let mut rewired = Vec::new();
    if let Some(x) = rewire_after {
        require_known(plan, x)?;
        rewired = plan
            .index()
            .dependents(x)
            .iter()
            .copied()
            .filter(|d| is_unstarted(plan, *d))
            .collect();
    }
    for r in required_by {
        let p = require_known(plan, *r)?;
        if !plan.subtasks[p].state.is_unstarted() {
            return Err(PlanError::NotEditable {
                id: *r,
                state: plan.subtasks[p].state,
                what: "given a new dependency",
            });
        }
    }
    let mut dependents = rewired.clone();
    dependents.extend_from_slice(required_by);
    check_new_edges(plan, id, &subtask.dependencies, &dependents)?;
    Ok(vec![EventKind::SubtaskAdded {
        subtask: Box::new(subtask),
        index,
        rewired_from: rewire_after.filter(|_| !rewired.is_empty()),
        rewired,
        required_by: required_by.to_vec(),
    }])
}

fn edit_subtask(
    plan: &Plan,
    id: SubtaskId,
    patch: &SubtaskPatch,
) -> Result<Vec<EventKind>, PlanError> {
    let s = &plan.subtasks[require_known(plan, id)?];
    let allowed = if patch.only_assignee() {
        !s.state.is_settled()
    } else {
        s.state.is_unstarted()
    };
    if !allowed {
        return Err(PlanError::NotEditable {
            id,
            state: s.state,
            what: "edited",
        });
    }
    let mut edited = s.clone();
    if let Some(name) = &patch.name {
        required_text("name", name, limits::NAME)?;
        edited.name = name.trim().to_string();
    }
    for (field, value, target) in [
        ("description", &patch.description, &mut edited.description),
        (
            "expected_outcome",
            &patch.expected_outcome,
            &mut edited.expected_outcome,
        ),
        ("reasoning", &patch.reasoning, &mut edited.reasoning),
    ] {
        if let Some(v) = value {
            text(field, v, limits::TEXT)?;
            target.clone_from(v);
        }
    }
    if let Some(a) = &patch.assignee {
        text("assignee", a, limits::ACTOR)?;
        edited.assignee = (!a.trim().is_empty()).then(|| a.trim().to_string());
    }
    Ok(vec![EventKind::SubtaskEdited {
        id,
        fields: Box::new(SubtaskFields {
            name: edited.name,
            description: edited.description,
            expected_outcome: edited.expected_outcome,
            reasoning: edited.reasoning,
            assignee: edited.assignee,
        }),
    }])
}

fn set_dependencies(
    plan: &Plan,
    id: SubtaskId,
    dependencies: &[SubtaskId],
) -> Result<Vec<EventKind>, PlanError> {
    let s = &plan.subtasks[require_known(plan, id)?];
    if !s.state.is_unstarted() {
        return Err(PlanError::NotEditable {
            id,
            state: s.state,
            what: "given new dependencies",
        });
    }
    let deps = dedup(dependencies);
    if deps.len() > limits::DEPENDENCIES {
        return Err(PlanError::TooLong {
            field: "dependencies",
            len: deps.len(),
            max: limits::DEPENDENCIES,
        });
    }
    // Only edges that are new can close a cycle.
    let added: Vec<SubtaskId> = deps
        .iter()
        .copied()
        .filter(|d| !s.dependencies.contains(d))
        .collect();
    check_new_edges(plan, id, &added, &[])?;
    Ok(vec![EventKind::DependenciesSet {
        id,
        dependencies: deps,
    }])
}

fn delete_subtask(plan: &Plan, id: SubtaskId) -> Result<Vec<EventKind>, PlanError> {
    let s = &plan.subtasks[require_known(plan, id)?];
    if s.state == SubtaskState::InProgress {
        return Err(PlanError::DeleteInProgress { id });
    }
    let inherited_by = plan
        .index()
        .dependents(id)
        .iter()
        .copied()
        .filter(|d| is_unstarted(plan, *d))
        .collect();
    Ok(vec![EventKind::SubtaskDeleted { id, inherited_by }])
}

fn set_state(
    plan: &Plan,
    id: SubtaskId,
    to: SubtaskState,
    note: Option<&str>,
    start_next: bool,
) -> Result<Vec<EventKind>, PlanError> {
    let p = require_known(plan, id)?;
    let s = &plan.subtasks[p];
    if let Some(n) = note {
        text("note", n, limits::TEXT)?;
    }
    let how = subtask_transition(s.state, to).map_err(|why| PlanError::IllegalTransition {
        id,
        from: s.state,
        to,
        why: why.to_string(),
    })?;
    let mut events = Vec::with_capacity(3);
    match how {
        SubtaskMove::Start => {
            check_can_start(plan, s)?;
            events.extend(running_if_approved(plan));
        }
        SubtaskMove::Reopen => {
            let started: Vec<SubtaskId> = plan
                .index()
                .dependents(id)
                .iter()
                .copied()
                .filter(|d| {
                    plan.subtask(*d).is_some_and(|x| {
                        matches!(x.state, SubtaskState::InProgress | SubtaskState::Done)
                    })
                })
                .collect();
            if !started.is_empty() {
                return Err(PlanError::DependentsStarted {
                    id,
                    dependents: started,
                });
            }
        }
        _ => {}
    }
    events.push(EventKind::SubtaskStateChanged {
        id,
        from: s.state,
        to,
        note: note.map(str::to_string),
    });
    if start_next && to.is_settled() && plan.state_allows_start() {
        if let Some(next) = first_ready_after_settling(plan, id) {
            let in_progress_after = plan.count(SubtaskState::InProgress)
                - usize::from(s.state == SubtaskState::InProgress);
            let has_slot = plan
                .max_parallel
                .is_none_or(|max| in_progress_after < max as usize);
            if has_slot {
                events.extend(running_if_approved(plan));
                events.push(EventKind::SubtaskStateChanged {
                    id: next,
                    from: SubtaskState::Todo,
                    to: SubtaskState::InProgress,
                    note: None,
                });
            }
        }
    }
    Ok(events)
}

/// The first subtask in display order that is ready once `settling` is done:
/// today's ready set plus dependents whose only unmet dependency it is.
fn first_ready_after_settling(plan: &Plan, settling: SubtaskId) -> Option<SubtaskId> {
    let index = plan.index();
    let unlocked = index.dependents(settling).iter().filter_map(|d| {
        let q = index.position(*d)?;
        let waits_only_on_it = index.unmet(*d) == 1 && !settled(plan, settling);
        (plan.subtasks[q].state == SubtaskState::Todo && waits_only_on_it).then_some(q)
    });
    let first_ready = index
        .ready_positions()
        .find(|&q| plan.subtasks[q].id != settling);
    unlocked
        .chain(first_ready)
        .min()
        .map(|q| plan.subtasks[q].id)
}

fn start_next(plan: &Plan, count: usize) -> Result<Vec<EventKind>, PlanError> {
    if count == 0 {
        return Err(PlanError::invalid("count", "must be at least 1"));
    }
    check_plan_can_start(plan)?;
    let batch = plan.next_batch(count);
    if batch.is_empty() {
        if let (Some(max), false) = (plan.max_parallel, plan.free_slots() > 0) {
            return Err(PlanError::ParallelLimit {
                max,
                running: plan.in_progress(),
            });
        }
        return Err(PlanError::NothingReady(nothing_ready_message(plan)));
    }
    let mut events: Vec<EventKind> = running_if_approved(plan).into_iter().collect();
    events.extend(batch.into_iter().map(|id| EventKind::SubtaskStateChanged {
        id,
        from: SubtaskState::Todo,
        to: SubtaskState::InProgress,
        note: None,
    }));
    Ok(events)
}

fn nothing_ready_message(plan: &Plan) -> String {
    let open =
        plan.subtasks.len() - plan.count(SubtaskState::Done) - plan.count(SubtaskState::Skipped);
    if open == 0 {
        return "all subtasks are done or skipped; finish the plan".into();
    }
    format!(
        "no subtask is ready: {} in progress, {} blocked, {} failed, {} waiting on dependencies",
        plan.count(SubtaskState::InProgress),
        plan.count(SubtaskState::Blocked),
        plan.count(SubtaskState::Failed),
        plan.count(SubtaskState::Todo)
    )
}

fn replace_subtasks(
    plan: &Plan,
    list: &[NewSubtask],
    now: Timestamp,
) -> Result<Vec<EventKind>, PlanError> {
    check_capacity(plan.max_subtasks, 0, list.len())?;
    let mut by_name: HashMap<&str, std::collections::VecDeque<&Subtask>> = HashMap::new();
    for s in &plan.subtasks {
        by_name.entry(s.name.as_str()).or_default().push_back(s);
    }
    let mut next_id = plan.next_subtask_id;
    let mut subtasks: Vec<Subtask> = Vec::with_capacity(list.len());
    for new in list {
        let kept = by_name
            .get_mut(new.name.trim())
            .and_then(|queue| queue.pop_front());
        let mut s = match kept {
            Some(old) => old.clone(),
            None => {
                next_id += 1;
                new_subtask(new, SubtaskId(next_id - 1), now)?
            }
        };
        let previous = subtasks.last();
        s.dependencies = match previous {
            Some(prev) if s.state.is_unstarted() || prev.state.is_settled() => vec![prev.id],
            _ => Vec::new(),
        };
        subtasks.push(s);
    }
    if let Some(running) = by_name
        .values()
        .flatten()
        .find(|s| s.state == SubtaskState::InProgress)
    {
        return Err(PlanError::DeleteInProgress { id: running.id });
    }
    Ok(vec![EventKind::SubtasksReplaced {
        subtasks,
        next_subtask_id: next_id,
    }])
}

fn finish(plan: &Plan, to: PlanState, outcome: &str) -> Result<Vec<EventKind>, PlanError> {
    text("outcome", outcome, limits::TEXT)?;
    if !to.is_finished() {
        return Err(PlanError::invalid(
            "state",
            format!("a plan finishes as done, failed or abandoned, not {to}"),
        ));
    }
    if to == PlanState::Done {
        let open: Vec<SubtaskId> = plan
            .subtasks
            .iter()
            .filter(|s| !s.state.is_settled())
            .map(|s| s.id)
            .take(20)
            .collect();
        if !open.is_empty() {
            return Err(PlanError::UnfinishedSubtasks { ids: open });
        }
    }
    // Nothing stays "in progress" in a finished plan: release what still runs.
    let mut events: Vec<EventKind> = plan
        .in_progress()
        .into_iter()
        .map(|id| EventKind::SubtaskStateChanged {
            id,
            from: SubtaskState::InProgress,
            to: SubtaskState::Todo,
            note: Some(format!("plan finished as {to}")),
        })
        .collect();
    events.push(plan_move(plan, to, Some(outcome.to_string()))?);
    Ok(events)
}

fn check_can_start(plan: &Plan, s: &Subtask) -> Result<(), PlanError> {
    check_plan_can_start(plan)?;
    let waiting_on: Vec<(SubtaskId, SubtaskState)> = s
        .dependencies
        .iter()
        .filter_map(|d| plan.subtask(*d))
        .filter(|d| !d.state.is_settled())
        .map(|d| (d.id, d.state))
        .collect();
    if !waiting_on.is_empty() {
        return Err(PlanError::NotReady {
            id: s.id,
            waiting_on,
        });
    }
    if let Some(max) = plan.max_parallel {
        if plan.free_slots() == 0 {
            return Err(PlanError::ParallelLimit {
                max,
                running: plan.in_progress(),
            });
        }
    }
    Ok(())
}

fn check_plan_can_start(plan: &Plan) -> Result<(), PlanError> {
    let why = match plan.state {
        PlanState::Approved | PlanState::Running => return Ok(()),
        PlanState::Draft => "it is a draft; submit it first",
        PlanState::AwaitingApproval => {
            "it is awaiting approval; a person must approve it before any subtask starts"
        }
        PlanState::Paused => "it is paused; resume it first",
        PlanState::Done | PlanState::Failed | PlanState::Abandoned => {
            "it is finished; recover it first"
        }
    };
    Err(PlanError::PlanNotStartable {
        state: plan.state,
        why: why.into(),
    })
}

fn running_if_approved(plan: &Plan) -> Option<EventKind> {
    (plan.state == PlanState::Approved).then_some(EventKind::PlanStateChanged {
        from: PlanState::Approved,
        to: PlanState::Running,
        reason: None,
    })
}

fn plan_move(plan: &Plan, to: PlanState, reason: Option<String>) -> Result<EventKind, PlanError> {
    plan_transition(plan.state, to).map_err(|why| PlanError::IllegalPlanTransition {
        from: plan.state,
        to,
        why: why.into(),
    })?;
    Ok(EventKind::PlanStateChanged {
        from: plan.state,
        to,
        reason,
    })
}

fn new_subtask(new: &NewSubtask, id: SubtaskId, now: Timestamp) -> Result<Subtask, PlanError> {
    required_text("name", &new.name, limits::NAME)?;
    text("description", &new.description, limits::TEXT)?;
    text("expected_outcome", &new.expected_outcome, limits::TEXT)?;
    text("reasoning", &new.reasoning, limits::TEXT)?;
    if let Some(a) = &new.assignee {
        text("assignee", a, limits::ACTOR)?;
    }
    let dependencies = dedup(&new.dependencies);
    if dependencies.len() > limits::DEPENDENCIES {
        return Err(PlanError::TooLong {
            field: "dependencies",
            len: dependencies.len(),
            max: limits::DEPENDENCIES,
        });
    }
    Ok(Subtask {
        id,
        name: new.name.trim().to_string(),
        description: new.description.clone(),
        expected_outcome: new.expected_outcome.clone(),
        reasoning: new.reasoning.clone(),
        state: SubtaskState::Todo,
        dependencies,
        outcome: None,
        notes: String::new(),
        attempts: 0,
        assignee: new
            .assignee
            .as_ref()
            .filter(|a| !a.trim().is_empty())
            .map(|a| a.trim().to_string()),
        created_at: now,
        started_at: None,
        finished_at: None,
    })
}

fn is_unstarted(plan: &Plan, id: SubtaskId) -> bool {
    plan.subtask(id).is_some_and(|s| s.state.is_unstarted())
}

fn settled(plan: &Plan, id: SubtaskId) -> bool {
    plan.subtask(id).is_some_and(|s| s.state.is_settled())
}

fn dedup(ids: &[SubtaskId]) -> Vec<SubtaskId> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if !out.contains(id) {
            out.push(*id);
        }
    }
    out
}

fn check_capacity(max: Option<u32>, have: usize, adding: usize) -> Result<(), PlanError> {
    let cap = max.map_or(limits::SUBTASKS, |m| (m as usize).min(limits::SUBTASKS));
    if have + adding > cap {
        return Err(PlanError::PlanFull { max: cap });
    }
    Ok(())
}

fn check_limit_setting(field: &'static str, value: Option<u32>) -> Result<(), PlanError> {
    if value == Some(0) {
        return Err(PlanError::invalid(
            field,
            "must be at least 1 (omit it for no limit)",
        ));
    }
    Ok(())
}

fn check_actor(actor: &str) -> Result<(), PlanError> {
    required_text("actor", actor, limits::ACTOR)
}

fn required_text(field: &'static str, value: &str, max: usize) -> Result<(), PlanError> {
    if value.trim().is_empty() {
        return Err(PlanError::invalid(field, "must not be empty"));
    }
    text(field, value, max)
}

fn text(field: &'static str, value: &str, max: usize) -> Result<(), PlanError> {
    let len = value.chars().count();
    if len > max {
        return Err(PlanError::TooLong { field, len, max });
    }
    Ok(())
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
