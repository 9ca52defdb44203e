//! Commands: every change a person or an agent can ask of a plan.
//!
//! A command is only a request; [`crate::apply`] decides whether it is legal
//! and answers with the events that record what happened.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{limits, Mode, NewSubtask, PlanState, SubtaskId, SubtaskState};

/// One request against one plan. Read by hand (see its `Deserialize`),
/// written and described by serde's and schemars' derives.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = closed_variants)]
pub struct Command {
    #[serde(flatten)]
    pub op: Op,
    /// When set and the plan has moved on, the command fails with a conflict
    /// instead of overwriting a change its sender never saw.
    #[serde(default)]
    pub expected_version: Option<u64>,
}

impl From<Op> for Command {
    fn from(op: Op) -> Command {
        Command {
            op,
            expected_version: None,
        }
    }
}

impl Command {
    pub fn at_version(op: Op, version: u64) -> Command {
        Command {
            op,
            expected_version: Some(version),
        }
    }
}

/// serde's derive would take `"op": 0` for the first operation (a tag may
/// be a variant's index) and cannot refuse unknown fields beside a
/// flattened enum; a command is an edge's input, so it is read here: an
/// object whose `op` is a name, `expected_version` taken out, the rest
/// read as the [`Op`], which refuses fields it does not know.
impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        use serde_json::Value;
        let mut map: serde_json::Map<String, Value> = crate::wire::object(deserializer)?;
        if !map.get("op").is_some_and(Value::is_string) {
            return Err(D::Error::custom(
                "`op` must name the operation as a string (update_info, add_subtask, …)",
            ));
        }
        let expected_version = match map.remove("expected_version") {
            None | Some(Value::Null) => None,
            Some(v) => Some(serde_json::from_value::<u64>(v).map_err(D::Error::custom)?),
        };
        let op = serde_json::from_value(Value::Object(map)).map_err(D::Error::custom)?;
        Ok(Command {
            op,
            expected_version,
        })
    }
}

/// The schema serde reads: every [`Op`] refuses fields it does not know,
/// but schemars puts the flattened `expected_version` beside the variants
/// and leaves them open. Each variant gets `expected_version` and is
/// closed, so the schema and the server agree on what is an unknown field.
fn closed_variants(schema: &mut schemars::Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let shared = object.remove("properties");
    let Some(variants) = object.get_mut("oneOf").and_then(|v| v.as_array_mut()) else {
        return;
    };
    for variant in variants.iter_mut().filter_map(|v| v.as_object_mut()) {
        if let Some(serde_json::Value::Object(shared)) = &shared {
            let properties = variant
                .entry("properties")
                .or_insert_with(|| serde_json::json!({}));
            if let Some(properties) = properties.as_object_mut() {
                for (name, property) in shared {
                    properties.insert(name.clone(), property.clone());
                }
            }
        }
        variant.insert("additionalProperties".into(), false.into());
    }
}

/// Where a new subtask goes in the display order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Position {
    #[default]
    End,
    /// Before the subtask now at this 0-based index (AgentScope's `add`).
    Index(usize),
    After(SubtaskId),
    Before(SubtaskId),
}

/// Plan-level fields to change; absent fields stay as they are.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InfoPatch {
    #[serde(default)]
    #[schemars(length(max = limits::TITLE))]
    pub title: Option<String>,
    #[serde(default)]
    #[schemars(length(max = limits::TEXT))]
    pub goal: Option<String>,
    #[serde(default)]
    #[schemars(length(max = limits::TEXT))]
    pub description: Option<String>,
    #[serde(default)]
    #[schemars(length(max = limits::TEXT))]
    pub expected_outcome: Option<String>,
    #[serde(default)]
    pub mode: Option<Mode>,
    /// 0 removes the limit.
    #[serde(default)]
    pub max_subtasks: Option<u32>,
    /// 0 removes the limit.
    #[serde(default)]
    pub max_parallel: Option<u32>,
    /// Whether the agent must wait for the user's go-ahead before
    /// executing the plan (seed 003's `needUserConfirm`, carried by the hint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub need_user_confirm: Option<bool>,
}

/// Subtask fields to change; absent fields stay as they are.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubtaskPatch {
    #[serde(default)]
    #[schemars(length(max = limits::NAME))]
    pub name: Option<String>,
    #[serde(default)]
    #[schemars(length(max = limits::TEXT))]
    pub description: Option<String>,
    #[serde(default)]
    #[schemars(length(max = limits::TEXT))]
    pub expected_outcome: Option<String>,
    #[serde(default)]
    #[schemars(length(max = limits::TEXT))]
    pub reasoning: Option<String>,
    /// An empty string clears the assignee.
    #[serde(default)]
    #[schemars(length(max = limits::ACTOR))]
    pub assignee: Option<String>,
    /// The work tool the subtask is meant to use; an empty string clears it.
    /// Like the description, it changes only before the subtask starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = limits::TOOL))]
    pub tool: Option<String>,
}

impl SubtaskPatch {
    /// Only the assignee changes: allowed on started subtasks too.
    pub(crate) fn only_assignee(&self) -> bool {
        self.name.is_none()
            && self.description.is_none()
            && self.expected_outcome.is_none()
            && self.reasoning.is_none()
            && self.tool.is_none()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    UpdateInfo {
        #[serde(deserialize_with = "crate::wire::object")]
        patch: InfoPatch,
    },
    /// Inserts a subtask. `rewire_after` is seed 000's smart rewiring: the
    /// not-yet-started subtasks that depended on that subtask now depend on
    /// the new one instead. `required_by` adds the new subtask to those
    /// (not-yet-started) subtasks' dependencies.
    AddSubtask {
        #[serde(deserialize_with = "crate::wire::object")]
        subtask: NewSubtask,
        #[serde(default)]
        position: Position,
        #[serde(default)]
        rewire_after: Option<SubtaskId>,
        #[serde(default)]
        required_by: Vec<SubtaskId>,
    },
    EditSubtask {
        id: SubtaskId,
        #[serde(deserialize_with = "crate::wire::object")]
        patch: SubtaskPatch,
    },
    SetDependencies {
        id: SubtaskId,
        dependencies: Vec<SubtaskId>,
    },
    /// Removes a subtask; its not-yet-started dependents inherit its dependencies.
    DeleteSubtask {
        id: SubtaskId,
    },
    MoveSubtask {
        id: SubtaskId,
        to_index: usize,
    },
    /// Moves a subtask through the state table. `note` becomes the outcome
    /// (result, error, skip or block reason). With `start_next`, finishing a
    /// subtask also starts the first subtask that is ready afterwards, if
    /// the plan's limits allow: never one whose dependencies are not met.
    SetSubtaskState {
        id: SubtaskId,
        state: SubtaskState,
        #[serde(default)]
        note: Option<String>,
        #[serde(default)]
        start_next: bool,
    },
    /// Starts up to `count` ready subtasks in display order (seed 000
    /// `startNextTask`, seed 002 `next_batch`).
    StartNext {
        count: usize,
    },
    SetNotes {
        id: SubtaskId,
        notes: String,
    },
    /// Replaces the subtask list by names (OpenManus `update`): a subtask whose
    /// name is unchanged keeps its id, state, outcome and notes wherever it
    /// moves; the list runs as a chain, each depending on the one before.
    ReplaceSubtasks {
        #[serde(deserialize_with = "crate::wire::objects")]
        subtasks: Vec<NewSubtask>,
    },
    // The variants without fields are written `{}` so that serde refuses
    // unknown fields for them too (a unit variant of a tagged enum ignores
    // them).
    Submit {},
    Approve {
        #[serde(default)]
        comment: Option<String>,
    },
    Reject {
        comment: String,
    },
    Pause {},
    Resume {},
    /// `state` is done, failed or abandoned.
    Finish {
        state: PlanState,
        outcome: String,
    },
    Recover {},
    Comment {
        #[serde(default)]
        subtask: Option<SubtaskId>,
        body: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NewPlan;

    #[test]
    fn a_plan_with_a_misspelt_subtask_field_is_refused_not_created_without_it() {
        let body = r#"{"title":"t","subtasks":[{"name":"a"},{"name":"b","depends_on":[1]}]}"#;
        let error = serde_json::from_str::<NewPlan>(body).unwrap_err();
        assert!(error.to_string().contains("depends_on"), "{error}");
        let body = r#"{"title":"t","bogus":true}"#;
        let error = serde_json::from_str::<NewPlan>(body).unwrap_err();
        assert!(error.to_string().contains("bogus"), "{error}");
    }

    #[test]
    fn a_command_with_an_unknown_field_is_refused_and_a_known_one_still_reads() {
        let body = r#"{"op":"set_subtask_state","id":1,"state":"done","outcome":"x"}"#;
        let error = serde_json::from_str::<Command>(body).unwrap_err();
        assert!(error.to_string().contains("outcome"), "{error}");
        let body = r#"{"op":"update_info","patch":{"titel":"x"}}"#;
        assert!(serde_json::from_str::<Command>(body).is_err());
        // The operation is named, not numbered.
        let body = r#"{"op":0,"patch":{}}"#;
        assert!(serde_json::from_str::<Command>(body).is_err());
        // A variant without fields refuses one too.
        let body = r#"{"op":"pause","x":42}"#;
        assert!(serde_json::from_str::<Command>(body).is_err());
        let body = r#"{"op":"pause","expected_version":2}"#;
        assert!(serde_json::from_str::<Command>(body).is_ok());
        let body =
            r#"{"op":"set_subtask_state","id":1,"state":"done","note":"x","expected_version":3}"#;
        let command: Command = serde_json::from_str(body).unwrap();
        assert_eq!(command.expected_version, Some(3));
        assert!(matches!(
            command.op,
            Op::SetSubtaskState {
                start_next: false,
                ..
            }
        ));
    }

    #[test]
    fn the_command_schema_is_closed_like_serde_and_every_variant_takes_expected_version() {
        let schema = serde_json::to_value(schemars::schema_for!(Command)).unwrap();
        let variants = schema["oneOf"].as_array().unwrap();
        assert!(variants.len() > 10);
        for variant in variants {
            assert_eq!(variant["additionalProperties"], false, "{variant}");
            assert!(
                variant["properties"]["expected_version"].is_object(),
                "{variant}"
            );
        }
        assert!(
            schema.get("properties").is_none(),
            "no open top level: {schema}"
        );
    }
}
