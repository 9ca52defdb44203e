//! The three planners (seed 004): one call each, turned into engine
//! subtasks. The engine validates a complex plan; its refusal (a cycle, an
//! unknown position) goes back to the model in the engine's own words.

use plan_engine::{Mode, NewPlan, NewSubtask, Plan, SubtaskId};

use crate::call::{CallError, Caller};
use crate::llm::{CallRole, Message};
use crate::prompts;
use crate::protocol::{PlanAnswer, Proposed, Unreadable};

/// Emergent plans hold at most this many TODOs (seed 004 `MAX_TODO_ITEMS`).
pub const EMERGENT_CAP: u32 = 20;
/// A complex plan's largest size from one planning call.
pub const COMPLEX_MAX: usize = 100;
/// Simple plans are short (seed 004: v1 flat plan).
pub const SIMPLE_MAX: usize = 7;
const EMERGENT_START_MAX: usize = 3;
/// Engine refusals shown back to the model before giving up.
const REPAIRS: usize = 2;

#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    pub title: String,
    pub subtasks: Vec<NewSubtask>,
}

/// What the planner is revising, if anything.
pub struct Revision<'a> {
    pub plan: &'a Plan,
    pub comment: &'a str,
}

fn system(mode: Mode) -> &'static str {
    match mode {
        Mode::Complex => prompts::COMPLEX_PLANNER,
        Mode::Emergent => prompts::EMERGENT_PLANNER,
        Mode::Simple | Mode::Manual => prompts::SIMPLE_PLANNER,
    }
}

pub fn subtask_of(p: &Proposed, dependencies: Vec<SubtaskId>) -> NewSubtask {
    NewSubtask {
        name: p.name.trim().to_string(),
        description: p.description.trim().to_string(),
        expected_outcome: p.expected_outcome.trim().to_string(),
        dependencies,
        ..NewSubtask::default()
    }
}

/// Turns an answer into subtasks for `mode`, or says what is wrong with it
/// in words for the model.
pub fn shape(mode: Mode, answer: &PlanAnswer) -> Result<Planned, Unreadable> {
    let n = answer.subtasks.len();
    let (min, max) = match mode {
        Mode::Complex => (1, COMPLEX_MAX),
        Mode::Emergent => (1, EMERGENT_START_MAX),
        Mode::Simple | Mode::Manual => (1, SIMPLE_MAX),
    };
    if n < min || n > max {
        return Err(Unreadable::PlanSize {
            given: n,
            mode: mode.as_str(),
            min,
            max,
        });
    }
    let subtasks = answer
        .subtasks
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let dependencies = match mode {
                // Positions are ids: a new plan numbers its subtasks from 1.
                Mode::Complex => {
                    let mut deps: Vec<SubtaskId> =
                        p.depends_on.iter().copied().map(SubtaskId).collect();
                    deps.sort();
                    deps.dedup();
                    deps
                }
                // A simple plan is a chain; emergent TODOs start unordered.
                Mode::Simple | Mode::Manual if i > 0 => vec![SubtaskId(i as u32)],
                _ => Vec::new(),
            };
            subtask_of(p, dependencies)
        })
        .collect();
    Ok(Planned {
        title: answer.title.trim().to_string(),
        subtasks,
    })
}

/// The engine's verdict on a planned plan, without creating it.
pub fn check(planned: &Planned, mode: Mode) -> Result<(), Unreadable> {
    let spec = NewPlan {
        title: planned.title.clone(),
        mode,
        subtasks: planned.subtasks.clone(),
        ..NewPlan::default()
    };
    Plan::create(&spec, "planner", chrono::Utc::now())
        .map(|_| ())
        .map_err(Unreadable::PlanRefused)
}

fn summary(plan: &Plan) -> String {
    plan.subtasks()
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let deps: Vec<String> = s
                .dependencies()
                .iter()
                .filter_map(|d| plan.position(*d).map(|p| (p + 1).to_string()))
                .collect();
            format!(
                "{}. {} — {}{}",
                i + 1,
                s.name(),
                s.description(),
                if deps.is_empty() {
                    String::new()
                } else {
                    format!(" (after {})", deps.join(", "))
                }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One planning call (plus repairs) for `mode`.
pub async fn plan(
    caller: &Caller,
    mode: Mode,
    task: &str,
    revision: Option<Revision<'_>>,
) -> Result<Planned, CallError> {
    let mut user = format!("Task: {task}\n{}", prompts::LANGUAGE);
    if let Some(r) = &revision {
        user.push_str(&format!(
            "\n\n{}\nThe rejected plan:\n{}\nThe person's comment: {}",
            prompts::REVISE,
            summary(r.plan),
            r.comment
        ));
    }
    let mut messages = vec![Message::system(system(mode)), Message::user(user)];
    let mut repairs = 0;
    loop {
        let answer: PlanAnswer = caller
            .json(CallRole::Planner, "plan", messages.clone(), 1500, None)
            .await?;
        let problem = match shape(mode, &answer).and_then(|p| check(&p, mode).map(|_| p)) {
            Ok(planned) => return Ok(planned),
            Err(problem) => problem,
        };
        if repairs == REPAIRS {
            return Err(CallError::Refused {
                tries: REPAIRS + 1,
                last: problem,
            });
        }
        repairs += 1;
        messages.push(Message::assistant(
            serde_json::to_string(&answer).unwrap_or_default(),
        ));
        messages.push(Message::user(format!(
            "The plan was refused: {problem}\nFix it and answer with the whole plan as JSON again."
        )));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposed(name: &str, after: &[u32]) -> Proposed {
        Proposed {
            depends_on: after.to_vec(),
            description: format!("do {name}"),
            expected_outcome: String::new(),
            name: name.into(),
        }
    }

    #[test]
    fn a_simple_plan_becomes_a_chain_and_ignores_dependencies() {
        let answer = PlanAnswer {
            title: "t".into(),
            subtasks: vec![proposed("a", &[]), proposed("b", &[]), proposed("c", &[1])],
        };
        let planned = shape(Mode::Simple, &answer).unwrap();
        let deps: Vec<Vec<SubtaskId>> = planned
            .subtasks
            .iter()
            .map(|s| s.dependencies.clone())
            .collect();
        assert_eq!(deps, vec![vec![], vec![SubtaskId(1)], vec![SubtaskId(2)]]);
    }

    #[test]
    fn a_cycle_in_a_complex_plan_is_refused_in_the_engines_words() {
        let answer = PlanAnswer {
            title: "t".into(),
            subtasks: vec![proposed("a", &[2]), proposed("b", &[1])],
        };
        let planned = shape(Mode::Complex, &answer).unwrap();
        let e = check(&planned, Mode::Complex).unwrap_err().to_string();
        assert!(e.contains("cycle"), "{e}");
    }

    #[test]
    fn too_many_subtasks_for_the_mode_is_said_with_the_limit() {
        let answer = PlanAnswer {
            title: "t".into(),
            subtasks: (0..4).map(|i| proposed(&format!("s{i}"), &[])).collect(),
        };
        let e = shape(Mode::Emergent, &answer).unwrap_err().to_string();
        assert!(e.contains("1 to 3"), "{e}");
    }
}
