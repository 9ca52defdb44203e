//! The card a person reads before approving a run's plan: the guarded
//! tools its steps will call (which the person may grant for the run at
//! the same time), what is wrong with the plan ([`plan_checks`]), and what
//! it will likely cost ([`Forecast`]).

use plan_engine::{Plan, SubtaskId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::ToolPolicy;

/// A tool that asks a person before each call, and the steps that will
/// call it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GuardedTool {
    pub tool: String,
    pub policy: ToolPolicy,
    /// The steps that name it (their `tool`, else their words), in plan
    /// order.
    pub steps: Vec<SubtaskId>,
}

/// The offered tool a step is to use: its `tool` when offered, else the
/// first offered tool its words (name, description, expected outcome)
/// name, as the executor reads it.
pub fn step_tool<'a>(step: &plan_engine::Subtask, offered: &'a [String]) -> Option<&'a str> {
    if let Some(tool) = step.tool() {
        if let Some(name) = offered.iter().find(|name| *name == tool) {
            return Some(name.as_str());
        }
    }
    let text = format!(
        "{} {} {}",
        step.name(),
        step.description(),
        step.expected_outcome()
    );
    offered
        .iter()
        .map(String::as_str)
        .find(|name| text.contains(name))
}

/// The tools of `offered` whose `policy` asks (`ask`) and that a step of
/// `plan` names, each with those steps, in the order first named.
pub fn guarded_tools(
    plan: &Plan,
    offered: &[String],
    policy: impl Fn(&str) -> ToolPolicy,
) -> Vec<GuardedTool> {
    let mut out: Vec<GuardedTool> = Vec::new();
    for step in plan.subtasks() {
        let Some(tool) = step_tool(step, offered) else {
            continue;
        };
        let policy = policy(tool);
        if policy != ToolPolicy::Ask {
            continue;
        }
        match out.iter_mut().find(|g| g.tool == tool) {
            Some(guarded) => guarded.steps.push(step.id()),
            None => out.push(GuardedTool {
                tool: tool.to_string(),
                policy,
                steps: vec![step.id()],
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan_engine::{NewPlan, NewSubtask};

    #[test]
    fn the_card_lists_the_asking_tools_its_steps_name_with_the_steps() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let mut shell = NewSubtask::named("list the files");
        shell.tool = Some("run_shell".into());
        let spec = NewPlan {
            title: "t".into(),
            subtasks: vec![
                shell,
                NewSubtask::named("save it with write_file"),
                NewSubtask::named("read it back with read_file"),
                NewSubtask::named("then run_shell again"),
            ],
            ..NewPlan::default()
        };
        let plan = Plan::create(&spec, "ann", at).unwrap().0;
        let offered: Vec<String> = ["read_file", "write_file", "run_shell"]
            .map(String::from)
            .to_vec();
        let asks = |tool: &str| match tool {
            "run_shell" | "write_file" => ToolPolicy::Ask,
            _ => ToolPolicy::Auto,
        };
        let guarded = guarded_tools(&plan, &offered, asks);
        let listed: Vec<(&str, Vec<u32>)> = guarded
            .iter()
            .map(|g| (g.tool.as_str(), g.steps.iter().map(|s| s.0).collect()))
            .collect();
        assert_eq!(
            listed,
            vec![("run_shell", vec![1, 4]), ("write_file", vec![2])]
        );
    }
}
