//! Plan templates (issue 27): a plan a team liked, saved under a name, so
//! the next task can start from its shape. A template keeps the plan's
//! mode, what was asked, and its subtasks (name, description, expected
//! outcome, dependencies by position) — not their results. A run started
//! from one takes the template's mode unless the person chose a mode, and
//! its planner reads the template as a starting point to adapt, not a
//! plan to copy.

use chrono::{DateTime, Utc};
use plan_engine::{Mode, Plan, PlanId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A template's id.
pub type TemplateId = uuid::Uuid;

/// The longest template name, in characters.
pub const TEMPLATE_NAME: usize = 120;
/// The most steps a template keeps (a complex plan's limit).
pub const TEMPLATE_STEPS: usize = 100;
/// Characters of a step's name and of its description kept.
const STEP_NAME: usize = 200;
const STEP_TEXT: usize = 600;
/// Characters of the task a template remembers.
const TEMPLATE_TASK: usize = 1_000;
/// Characters of the planner's prompt a template may take.
pub const TEMPLATE_BUDGET: usize = 3_000;

/// One subtask of a template.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TemplateStep {
    pub name: String,
    pub description: String,
    pub expected_outcome: String,
    /// Earlier steps this one waits for, by position (1 is the first).
    pub depends_on: Vec<u32>,
}

/// A saved template.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Template {
    pub id: TemplateId,
    pub name: String,
    pub mode: Mode,
    /// What was asked when the plan was made (the run's task, or the
    /// plan's title and goal when a person or another agent made it).
    pub task: String,
    pub steps: Vec<TemplateStep>,
    /// The plan it was saved from (which may since have been deleted).
    pub plan_id: Option<PlanId>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
}

/// The body of `POST /api/plans/{id}/template`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTemplate {
    /// What the team calls it (1 to 120 characters).
    #[schemars(length(min = 1, max = TEMPLATE_NAME))]
    pub name: String,
}

/// Why a template was not saved; nothing was stored.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("a template's name has 1 to {TEMPLATE_NAME} characters, not {0}")]
    Name(usize),
    #[error("the plan has no subtasks to make a template of")]
    Empty,
    #[error("a template keeps at most {TEMPLATE_STEPS} subtasks; the plan has {0}")]
    TooLarge(usize),
}

fn cut(text: &str, chars: usize) -> String {
    plan_engine::text::prefix(text.trim(), chars).to_string()
}

impl Template {
    /// The template `name` of `plan`, asked as `task`.
    pub fn of_plan(
        plan: &Plan,
        name: &str,
        task: &str,
        id: TemplateId,
        created_by: &str,
        created_at: DateTime<Utc>,
    ) -> Result<Template, TemplateError> {
        let name = name.trim();
        let chars = name.chars().count();
        if chars == 0 || chars > TEMPLATE_NAME {
            return Err(TemplateError::Name(chars));
        }
        let subtasks = plan.subtasks();
        if subtasks.is_empty() {
            return Err(TemplateError::Empty);
        }
        if subtasks.len() > TEMPLATE_STEPS {
            return Err(TemplateError::TooLarge(subtasks.len()));
        }
        let position = |id: plan_engine::SubtaskId| {
            subtasks
                .iter()
                .position(|s| s.id() == id)
                .map(|i| i as u32 + 1)
        };
        let steps = subtasks
            .iter()
            .map(|s| TemplateStep {
                name: cut(s.name(), STEP_NAME),
                description: cut(s.description(), STEP_TEXT),
                expected_outcome: cut(s.expected_outcome(), STEP_TEXT),
                depends_on: s
                    .dependencies()
                    .iter()
                    .filter_map(|d| position(*d))
                    .collect(),
            })
            .collect();
        Ok(Template {
            id,
            name: name.to_string(),
            // A plan made by hand has no planner of its own; the complex
            // planner keeps its dependencies.
            mode: match plan.mode() {
                Mode::Manual => Mode::Complex,
                mode => mode,
            },
            task: cut(task, TEMPLATE_TASK),
            steps,
            plan_id: Some(plan.id()),
            created_by: created_by.to_string(),
            created_at,
        })
    }

    /// What the planner reads of the template: a starting point to adapt,
    /// within [`TEMPLATE_BUDGET`] characters (the steps that do not fit
    /// are counted, not listed).
    pub fn prompt_section(&self) -> String {
        let mut out = format!(
            "Start from the plan template «{}» your team saved (a {} plan made for the task «{}»). \
             Adapt it to this task: keep the steps that fit, change or drop those that do not, \
             add what is missing.\n",
            self.name,
            self.mode.as_str(),
            cut(&self.task, 300)
        );
        for (i, step) in self.steps.iter().enumerate() {
            let mut line = format!("{}. {}", i + 1, step.name);
            if !step.description.is_empty() {
                line.push_str(": ");
                line.push_str(&cut(&step.description, 200));
            }
            if !step.depends_on.is_empty() {
                let after: Vec<String> = step.depends_on.iter().map(u32::to_string).collect();
                line.push_str(&format!(" (after {})", after.join(", ")));
            }
            line.push('\n');
            if out.chars().count() + line.chars().count() > TEMPLATE_BUDGET {
                out.push_str(&format!("… and {} more steps\n", self.steps.len() - i));
                break;
            }
            out.push_str(&line);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan_engine::{NewPlan, NewSubtask, SubtaskId};

    fn plan(subtasks: u32) -> Plan {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let spec = NewPlan {
            title: "Ship".into(),
            mode: Mode::Complex,
            subtasks: (1..=subtasks)
                .map(|i| NewSubtask {
                    name: format!("step {i}"),
                    description: "x".repeat(700),
                    dependencies: if i > 1 {
                        vec![SubtaskId(i - 1)]
                    } else {
                        vec![]
                    },
                    ..NewSubtask::default()
                })
                .collect(),
            ..NewPlan::default()
        };
        Plan::create(&spec, "someone", at).unwrap().0
    }

    #[test]
    fn a_template_keeps_the_shape_of_the_plan_by_position() {
        let t = Template::of_plan(
            &plan(3),
            " Release ",
            "ship v2",
            uuid::Uuid::nil(),
            "ana",
            DateTime::<Utc>::default(),
        )
        .unwrap();
        assert_eq!(t.name, "Release");
        assert_eq!(t.steps.len(), 3);
        assert_eq!(t.steps[2].depends_on, [2]);
        assert_eq!(t.steps[0].description.chars().count(), STEP_TEXT);
        let section = t.prompt_section();
        assert!(section.contains("«Release»"), "{section}");
        assert!(section.contains("3. step 3: "), "{section}");
        assert!(section.contains("(after 2)"), "{section}");
    }

    #[test]
    fn a_template_needs_a_name_and_subtasks_and_stays_within_its_limits() {
        let now = DateTime::<Utc>::default();
        let nil = uuid::Uuid::nil();
        assert_eq!(
            Template::of_plan(&plan(1), "  ", "", nil, "ana", now),
            Err(TemplateError::Name(0))
        );
        assert_eq!(
            Template::of_plan(&plan(1), &"n".repeat(121), "", nil, "ana", now),
            Err(TemplateError::Name(121))
        );
        assert_eq!(
            Template::of_plan(&plan(0), "t", "", nil, "ana", now),
            Err(TemplateError::Empty)
        );
        assert_eq!(
            Template::of_plan(&plan(101), "t", "", nil, "ana", now),
            Err(TemplateError::TooLarge(101))
        );
    }

    #[test]
    fn the_prompt_section_keeps_its_budget_and_counts_what_it_leaves_out() {
        let t = Template::of_plan(
            &plan(100),
            "big",
            "",
            uuid::Uuid::nil(),
            "ana",
            DateTime::<Utc>::default(),
        )
        .unwrap();
        let section = t.prompt_section();
        assert!(
            section.chars().count() <= TEMPLATE_BUDGET + 40,
            "{}",
            section.len()
        );
        assert!(section.contains("more steps"), "{section}");
    }
}
