//! What people did to an ACP agent's plan between two looks at it, and
//! the words the agent is prompted with. ACP carries a prompt, a cancel
//! and the answer to a permission request, nothing else, so every move a
//! person makes on the board becomes one of them:
//!
//! - Pause: the turn is cancelled (ACP has no pause); Resume: a prompt to
//!   go on from the plan as it stands.
//! - Cancel (the plan abandoned): the turn is cancelled and the agent
//!   stopped.
//! - A comment or an answer: a prompt with the person's words when the
//!   agent's turn ends (a turn is not interrupted for them).
//! - An edit of the plan (subtasks added, deleted, reworded, reordered,
//!   moved to another state by a person): the turn is cancelled and a
//!   prompt states the edited plan and asks the agent to follow it.
//!
//! Pure: two plans in, the moves and the words out.

use plan_engine::{Plan, PlanState, SubtaskState};

/// What people did between two versions of the plan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Moves {
    pub paused: bool,
    pub resumed: bool,
    pub abandoned: bool,
    /// Changes to the subtasks, in words.
    pub edits: Vec<String>,
    /// People's comments, each with who wrote it and on what.
    pub said: Vec<String>,
    /// The newest comment looked at (the next look starts after it).
    pub last_comment: u32,
}

impl Moves {
    pub fn is_empty(&self) -> bool {
        !self.paused
            && !self.resumed
            && !self.abandoned
            && self.edits.is_empty()
            && self.said.is_empty()
    }
}

/// What people (anyone but `actor`, the agent's name on the plan) did
/// from `before` to `after`; comments after `last_comment` are new.
pub fn moves(before: &Plan, after: &Plan, actor: &str, last_comment: u32) -> Moves {
    let mut out = Moves {
        last_comment,
        ..Moves::default()
    };
    let (was, is) = (before.state(), after.state());
    out.abandoned = is == PlanState::Abandoned && was != PlanState::Abandoned;
    out.paused = is == PlanState::Paused && was != PlanState::Paused;
    out.resumed =
        was == PlanState::Paused && matches!(is, PlanState::Running | PlanState::Approved);
    out.edits = crate::coordinator::plan_changes(before, after);
    for s in after.subtasks() {
        let Some(old) = before.subtask(s.id()) else {
            continue;
        };
        if old.state() != s.state() {
            out.edits.push(format!(
                "moved #{} {} from {} to {}",
                s.id().0,
                s.name(),
                old.state().as_str(),
                s.state().as_str()
            ));
        }
    }
    for c in after.comments() {
        if c.id <= last_comment {
            continue;
        }
        out.last_comment = out.last_comment.max(c.id);
        if c.author == actor {
            continue;
        }
        let on = c
            .subtask
            .and_then(|id| after.subtask(id))
            .map(|s| format!(" on #{} «{}»", s.id().0, s.name()))
            .unwrap_or_default();
        out.said.push(format!("{}{on}: {}", c.author, c.body));
    }
    out
}

/// The state of a subtask as the agent's plan says it.
fn status(state: SubtaskState) -> &'static str {
    match state {
        SubtaskState::Todo | SubtaskState::Blocked => "pending",
        SubtaskState::InProgress => "in_progress",
        SubtaskState::Done => "completed",
        SubtaskState::Failed => "failed",
        SubtaskState::Skipped => "skipped",
    }
}

/// The plan as a list the agent reads: each subtask's status, words and
/// priority, one a line.
pub fn plan_text(plan: &Plan) -> String {
    if plan.subtasks().is_empty() {
        return "(the plan has no entries yet)".into();
    }
    plan.subtasks()
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let words = if s.description().is_empty() {
                s.name()
            } else {
                s.description()
            };
            let priority = s
                .notes()
                .strip_prefix("priority: ")
                .map(|p| format!(" (priority {p})"))
                .unwrap_or_default();
            format!("{}. [{}] {}{priority}", i + 1, status(s.state()), words)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first prompt: the task, with the files the run started from.
pub fn task_prompt(task: &str, files: &[String]) -> String {
    let mut out = task.trim().to_string();
    if !files.is_empty() {
        out.push_str("\n\nThe files given with the task are in your working directory: ");
        out.push_str(&files.join(", "));
        out.push('.');
    }
    out.push_str(
        "\n\nKeep a plan of your work (ACP plan updates) as you go: people follow it live on \
         planboard's board, and may comment on it or edit it.",
    );
    out
}

/// The prompt after planboard restarted and started the agent again.
pub fn restart_prompt(task: &str, plan: &Plan) -> String {
    format!(
        "planboard stopped and started you again; what you knew of this session is gone. The \
         task was:\n\n{}\n\nThe plan so far:\n{}\n\nLook at the working directory to see what \
         was done, then go on from where the plan stands.",
        task.trim(),
        plan_text(plan)
    )
}

/// The prompt that goes on after a person resumed the plan.
pub fn resume_prompt(plan: &Plan, said: &[String]) -> String {
    let mut out = format!(
        "A person paused your work and has resumed it. Go on from where the plan stands:\n{}",
        plan_text(plan)
    );
    push_said(&mut out, said);
    out
}

/// The prompt that states a plan a person edited, with what they said.
pub fn edited_prompt(plan: &Plan, edits: &[String], said: &[String]) -> String {
    let mut out = format!(
        "A person edited your plan on the board ({}). Follow the plan as it is now, and send it \
         back as your plan:\n{}",
        edits.join("; "),
        plan_text(plan)
    );
    push_said(&mut out, said);
    out
}

/// The prompt with what people said while the agent worked.
pub fn said_prompt(said: &[String]) -> String {
    let mut out = "People wrote to you on the board while you worked; take it into account and go \
                   on (end your turn if there is nothing more to do)."
        .to_string();
    push_said(&mut out, said);
    out
}

fn push_said(out: &mut String, said: &[String]) {
    for line in said {
        out.push_str("\n- ");
        out.push_str(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan_engine::{NewPlan, NewSubtask, Op, SubtaskId};

    fn plan() -> Plan {
        let spec = NewPlan {
            id: uuid::Uuid::new_v4(),
            title: "t".into(),
            subtasks: vec![NewSubtask::named("read"), NewSubtask::named("fix")],
            ..NewPlan::default()
        };
        Plan::create(&spec, "acp · a", chrono::Utc::now())
            .unwrap()
            .0
    }

    fn run(plan: &mut Plan, actor: &str, ops: Vec<Op>) {
        plan.execute_all(ops, actor, chrono::Utc::now()).unwrap();
    }

    #[test]
    fn a_persons_pause_edit_and_comment_are_told_apart_from_the_agents_own_words() {
        let before = plan();
        let mut after = before.clone();
        run(
            &mut after,
            "acp · a",
            vec![Op::Comment {
                subtask: None,
                body: "my own note".into(),
            }],
        );
        run(
            &mut after,
            "alice",
            vec![
                Op::Comment {
                    subtask: Some(SubtaskId(2)),
                    body: "use the new parser".into(),
                },
                Op::AddSubtask {
                    subtask: NewSubtask::named("write a test"),
                    position: Default::default(),
                    rewire_after: None,
                    required_by: Vec::new(),
                },
                Op::Pause {},
            ],
        );
        let seen = moves(&before, &after, "acp · a", 0);
        assert!(seen.paused && !seen.resumed && !seen.abandoned);
        assert_eq!(seen.said, vec!["alice on #2 «fix»: use the new parser"]);
        assert!(
            seen.edits.iter().any(|e| e.contains("write a test")),
            "{:?}",
            seen.edits
        );
        assert_eq!(seen.last_comment, 2);
        // Looked at again from there, nothing is new.
        assert!(moves(&after, &after, "acp · a", seen.last_comment).is_empty());
        let text = plan_text(&after);
        assert!(text.starts_with("1. [pending] read"), "{text}");
        assert!(text.contains("3. [pending] write a test"), "{text}");
        let prompt = edited_prompt(&after, &seen.edits, &seen.said);
        assert!(prompt.contains("use the new parser") && prompt.contains("write a test"));
    }

    #[test]
    fn a_resume_and_an_abandon_are_moves_too() {
        let mut paused = plan();
        run(&mut paused, "alice", vec![Op::Pause {}]);
        let mut resumed = paused.clone();
        run(&mut resumed, "alice", vec![Op::Resume {}]);
        assert!(moves(&paused, &resumed, "acp · a", 0).resumed);
        let mut gone = resumed.clone();
        run(
            &mut gone,
            "alice",
            vec![Op::Finish {
                state: PlanState::Abandoned,
                outcome: "not needed".into(),
            }],
        );
        assert!(moves(&resumed, &gone, "acp · a", 0).abandoned);
    }
}
