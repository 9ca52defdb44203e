//! What the model answers with: the typed answers of the classifier and
//! planners, the executor's actions, their JSON schemas (from schemars),
//! and lenient parsing whose errors are shown to the model for repair.
//!
//! # Why the schemas look the way they do
//! Small local models follow a grammar built from the schema, in the order
//! the properties are listed. The properties arrive sorted by name (serde
//! JSON objects are ordered maps), so decision fields have names that sort
//! first (`action`, `confidence`, `needs_update`), free text comes last,
//! and every string has a `maxLength`: a 1.5B model rambled for 1,900
//! tokens inside one unbounded string.

use schemars::{JsonSchema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::llm::FunctionCall;

/// The classifier's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModeAnswer {
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f32,
    pub mode: ModeWord,
    /// One short sentence.
    #[schemars(length(max = 200))]
    pub reason: String,
}

plan_engine::wire_enum! {
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    pub enum ModeWord: "mode (simple, complex or emergent)" {
        Simple = "simple",
        Complex = "complex",
        Emergent = "emergent",
    }
}

/// The router's second answer: where the task's answer comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceAnswer {
    pub source: SourceWord,
    /// One short sentence.
    #[schemars(length(max = 160))]
    pub why: String,
}

plan_engine::wire_enum! {
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    pub enum SourceWord: "source (words, computation, files or web)" {
        Words = "words",
        Computation = "computation",
        Files = "files",
        Web = "web",
    }
}

/// One subtask proposed by a planner.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Proposed {
    /// 1-based positions of the subtasks this one needs first (complex
    /// plans, emergent TODOs; a simple plan is a chain).
    #[serde(default)]
    #[schemars(length(max = 10))]
    pub depends_on: Vec<u32>,
    #[schemars(length(max = 400))]
    pub description: String,
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub expected_outcome: String,
    #[schemars(length(min = 1, max = 80))]
    pub name: String,
    /// The work tool the subtask uses, by name; empty for none.
    #[serde(default)]
    #[schemars(length(max = 100))]
    pub tool: String,
}

/// A plan as a planner proposes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanAnswer {
    #[schemars(length(min = 1, max = 100))]
    pub subtasks: Vec<Proposed>,
    #[schemars(length(min = 1, max = 80))]
    pub title: String,
}

/// The next batch of a large input, as the batch planner proposes it
/// (seed 002). The schema sent narrows `items` to the batch's numbers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchAnswer {
    #[schemars(length(min = 1, max = 50))]
    pub subtasks: Vec<BatchStep>,
}

/// One subtask of a batch and the items it covers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchStep {
    #[serde(default)]
    #[schemars(length(max = 400))]
    pub description: String,
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub expected_outcome: String,
    /// The item numbers this subtask covers.
    #[schemars(length(min = 1, max = 50))]
    pub items: Vec<u32>,
    #[schemars(length(min = 1, max = 80))]
    pub name: String,
}

/// After an emergent TODO finished (seed 004 `_update_todo_list`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UpdateAnswer {
    /// Unstarted TODOs that cannot go on without a person (by 1-based
    /// position), each with what is missing: they wait like a question.
    #[serde(default)]
    #[schemars(length(max = 3))]
    pub blocked: Vec<Blocked>,
    /// 1-based positions of unstarted TODOs to drop as merged or no longer needed.
    #[serde(default)]
    #[schemars(length(max = 10))]
    pub drop: Vec<u32>,
    pub needs_update: bool,
    #[serde(default)]
    #[schemars(length(max = 3))]
    pub new_todos: Vec<Proposed>,
    #[schemars(length(max = 200))]
    pub reason: String,
    /// New descriptions for unstarted TODOs the result changed.
    #[serde(default)]
    #[schemars(length(max = 3))]
    pub revise: Vec<Revision>,
}

/// A TODO the update marks blocked, and what it needs from a person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Blocked {
    pub position: u32,
    #[schemars(length(min = 1, max = 300))]
    pub reason: String,
}

/// Between super-steps of a complex plan (seed 004 超步间自适应).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AdaptAnswer {
    /// 1-based positions of unstarted subtasks to skip.
    #[serde(default)]
    #[schemars(length(max = 10))]
    pub drop: Vec<u32>,
    pub needs_change: bool,
    #[schemars(length(max = 200))]
    pub reason: String,
    #[serde(default)]
    #[schemars(length(max = 10))]
    pub revise: Vec<Revision>,
    /// New subtasks the results call for; `depends_on` holds 1-based
    /// positions (past the plan's end: the new subtasks, in order).
    #[serde(default)]
    #[schemars(length(max = 5))]
    pub add: Vec<NewStep>,
    /// New dependencies for unstarted subtasks.
    #[serde(default)]
    #[schemars(length(max = 10))]
    pub depends: Vec<Rewire>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NewStep {
    #[schemars(length(min = 1, max = 80))]
    pub name: String,
    #[serde(default)]
    #[schemars(length(max = 400))]
    pub description: String,
    #[serde(default)]
    #[schemars(length(max = 10))]
    pub depends_on: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rewire {
    pub position: u32,
    #[schemars(length(max = 10))]
    pub depends_on: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Revision {
    #[schemars(length(max = 400))]
    pub description: String,
    pub position: u32,
}

/// Seed 002's failure analysis, for a subtask that failed every attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecoverAnswer {
    pub decision: crate::run::RecoveryDecision,
    #[schemars(length(max = 200))]
    pub reason: String,
    /// `workaround`: the new subtask's name.
    #[serde(default)]
    #[schemars(length(max = 80))]
    pub name: String,
    /// `revise`: the subtask's new description; `workaround`: the new
    /// subtask's.
    #[serde(default)]
    #[schemars(length(max = 600))]
    pub description: String,
}

/// What the executor does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// `short_of`: what the result lacks against the subtask's expected
    /// outcome, when the executor says it falls short.
    Complete {
        result: String,
        short_of: Option<String>,
    },
    Fail {
        reason: String,
    },
    Ask {
        question: String,
    },
    AddSubtask {
        name: String,
        description: String,
    },
    Tool {
        name: String,
        arguments: Value,
    },
}

/// The fixed actions, as schemars sees them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
enum FixedAction {
    /// The subtask is done; `result` is what it produced.
    Complete {
        #[schemars(length(min = 1, max = 2000))]
        result: String,
        /// What the result lacks against the expected outcome; absent or
        /// empty when it meets it.
        #[serde(default)]
        #[schemars(length(max = 300))]
        short_of: String,
    },
    /// The subtask cannot be done; say why.
    Fail {
        #[schemars(length(min = 1, max = 400))]
        reason: String,
    },
    /// Only a person can unblock this subtask; ask them.
    Ask {
        #[schemars(length(min = 1, max = 400))]
        question: String,
    },
    /// Work discovered while doing this subtask, added to the plan.
    AddSubtask {
        #[schemars(length(max = 400))]
        description: String,
        #[schemars(length(min = 1, max = 80))]
        name: String,
    },
}

/// A work tool as the model sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

fn generator() -> SchemaGenerator {
    schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
}

/// The JSON schema of an answer type, inlined (small models and some
/// servers do not follow `$ref`).
pub fn schema_of<T: JsonSchema>() -> Value {
    let mut value = generator().into_root_schema_for::<T>().to_value();
    if let Some(map) = value.as_object_mut() {
        map.remove("title");
        map.remove("description");
    }
    value
}

/// [`FixedAction`]'s schema, generated once: every executor call needs
/// it, and generating it was a fifth of the action shape's cost per step.
fn fixed_actions() -> &'static Value {
    static FIXED: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    FIXED.get_or_init(schema_of::<FixedAction>)
}

/// Which of the optional fixed actions an executor is offered: adding a
/// subtask (not in a simple plan) and asking a person (not in a run over
/// a long list in batches, where a question per item would stop the list
/// at every step: an item that cannot be done fails and is rescheduled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Actions {
    pub add_subtask: bool,
    pub ask: bool,
}

impl Actions {
    fn offers(self, name: &str) -> bool {
        match name {
            "add_subtask" => self.add_subtask,
            "ask" => self.ask,
            _ => true,
        }
    }
}

/// The executor's action schema: the fixed actions plus one variant per
/// work tool, whose `arguments` are that tool's own schema, so the grammar
/// enforces the arguments too.
pub fn action_schema(tools: &[ToolSpec], offered: Actions) -> Value {
    let fixed = fixed_actions();
    let mut variants: Vec<Value> = fixed
        .get("oneOf")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    variants.retain(|v| offered.offers(v["properties"]["action"]["const"].as_str().unwrap_or("")));
    for tool in tools {
        variants.push(json!({
            "type": "object",
            "description": tool.description,
            "properties": {
                "action": {"type": "string", "const": tool.name},
                "arguments": tool.parameters,
            },
            "required": ["action", "arguments"],
        }));
    }
    json!({"oneOf": variants})
}

/// The same actions as native functions (the tool-call protocol).
pub fn action_functions(tools: &[ToolSpec], offered: Actions) -> Vec<Value> {
    let fixed = fixed_actions();
    let mut out = Vec::new();
    for variant in fixed
        .get("oneOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = variant["properties"]["action"]["const"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if !offered.offers(&name) {
            continue;
        }
        let mut parameters = variant.clone();
        if let Some(props) = parameters["properties"].as_object_mut() {
            props.remove("action");
        }
        if let Some(required) = parameters["required"].as_array_mut() {
            required.retain(|r| r != "action");
        }
        parameters.as_object_mut().map(|m| m.remove("description"));
        out.push(json!({
            "name": name,
            "description": variant.get("description").cloned().unwrap_or_default(),
            "parameters": parameters,
        }));
    }
    for tool in tools {
        out.push(json!({
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }));
    }
    out
}

/// Why a model's answer cannot be used, in words for the model (the
/// repair round shows it the message).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    #[error("the answer was empty; answer with one JSON object")]
    Empty,
    #[error("the answer holds no JSON object; answer with one JSON object only")]
    NoJson,
    #[error("the JSON could not be read: {0}")]
    BadJson(String),
    #[error("the JSON does not match the schema: {0}")]
    Schema(String),
    #[error("the arguments of {tool} are not JSON: {error}")]
    ArgumentsNotJson { tool: String, error: String },
    #[error("the arguments of {0} must be a JSON object")]
    ArgumentsNotObject(String),
    #[error("the answer has no \"action\" field")]
    NoAction,
    #[error("\"{name}\" could not be read as an action ({error}); the actions are: {known}")]
    UnknownAction {
        name: String,
        error: String,
        known: String,
    },
    #[error("the plan has {given} subtasks; a {mode} plan has {min} to {max}")]
    PlanSize {
        given: usize,
        mode: &'static str,
        min: usize,
        max: usize,
    },
    /// The engine refused the plan (a cycle, an unknown dependency, …).
    #[error("{0}")]
    PlanRefused(plan_engine::PlanError),
    /// An emergent TODO names itself or a position the answer lacks.
    #[error("{0}")]
    BadDependency(String),
}

/// Finds the JSON object in a reply: models wrap it in code fences or
/// prose even when told not to.
fn json_in(text: &str) -> Result<Value, Unreadable> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(Unreadable::Empty);
    }
    if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
        return Ok(v);
    }
    let (Some(start), Some(end)) = (trimmed.find('{'), trimmed.rfind('}')) else {
        return Err(Unreadable::NoJson);
    };
    if end < start {
        return Err(Unreadable::NoJson);
    }
    serde_json::from_str(&trimmed[start..=end]).map_err(|e| Unreadable::BadJson(e.to_string()))
}

/// Parses a typed answer; the error is written for the model.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<T, Unreadable> {
    let value = json_in(text)?;
    serde_json::from_value(value).map_err(|e| Unreadable::Schema(e.to_string()))
}

/// Whether a `short_of` says nothing is missing: small models fill the
/// field they must write with "nothing", "none" or "N/A" (Qwen2.5-1.5B
/// did on every complete), which is no gap to adapt for or to show.
fn says_nothing(short_of: &str) -> bool {
    let text = short_of.trim().trim_end_matches('.').to_ascii_lowercase();
    matches!(
        text.as_str(),
        "" | "nothing"
            | "none"
            | "n/a"
            | "na"
            | "-"
            | "null"
            | "no"
            | "nothing is missing"
            | "nothing missing"
            | "not applicable"
    )
}

/// A text as compared with another: no surrounding blanks, no closing
/// full stop, any case.
fn plain(text: &str) -> String {
    text.trim().trim_end_matches('.').to_lowercase()
}

/// Reads the executor's action from a json-schema reply or a tool call.
pub fn parse_action(
    content: &str,
    calls: &[FunctionCall],
    tools: &[ToolSpec],
) -> Result<Action, Unreadable> {
    let value = match calls.first() {
        Some(call) => {
            let arguments: Value = if call.arguments.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&call.arguments).map_err(|e| Unreadable::ArgumentsNotJson {
                    tool: call.name.clone(),
                    error: e.to_string(),
                })?
            };
            if tools.iter().any(|t| t.name == call.name) {
                json!({"action": call.name, "arguments": arguments})
            } else {
                let mut object = arguments;
                if let Some(map) = object.as_object_mut() {
                    map.insert("action".into(), json!(call.name));
                }
                object
            }
        }
        None => json_in(content)?,
    };
    let name = value
        .get("action")
        .and_then(Value::as_str)
        .ok_or(Unreadable::NoAction)?
        .to_string();
    if let Some(tool) = tools.iter().find(|t| t.name == name) {
        let arguments = value.get("arguments").cloned().unwrap_or_else(|| json!({}));
        if !arguments.is_object() {
            return Err(Unreadable::ArgumentsNotObject(tool.name.clone()));
        }
        return Ok(Action::Tool { name, arguments });
    }
    let fixed: FixedAction = serde_json::from_value(value).map_err(|e| {
        let mut known = vec!["complete", "fail", "ask", "add_subtask"];
        known.extend(tools.iter().map(|t| t.name.as_str()));
        Unreadable::UnknownAction {
            name: name.clone(),
            error: e.to_string(),
            known: known.join(", "),
        }
    })?;
    Ok(match fixed {
        FixedAction::Complete { result, short_of } => {
            // Qwen2.5-1.5B also copies its result into `short_of`, which
            // then read "Short of the expected outcome: <the result>" in
            // the answer and bought an adapt round for no gap.
            let gap = !says_nothing(&short_of) && plain(&short_of) != plain(&result);
            Action::Complete {
                short_of: gap.then(|| short_of.trim().to_string()),
                result,
            }
        }
        FixedAction::Fail { reason } => Action::Fail { reason },
        FixedAction::Ask { question } => Action::Ask { question },
        FixedAction::AddSubtask { name, description } => Action::AddSubtask { name, description },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_file() -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: "Reads a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }
    }

    #[test]
    fn an_answer_wrapped_in_fences_and_prose_still_parses() {
        let text = "Sure!\n```json\n{\"confidence\": 0.9, \"mode\": \"simple\", \"reason\": \"one step\"}\n```";
        let answer: ModeAnswer = parse(text).unwrap();
        assert_eq!(answer.mode, ModeWord::Simple);
    }

    #[test]
    fn a_wrong_answer_gets_an_error_the_model_can_act_on() {
        let e = parse::<ModeAnswer>("{\"mode\": \"hard\"}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not match the schema"), "{e}");
        let e = parse::<ModeAnswer>("I think it is simple").unwrap_err();
        assert_eq!(e, Unreadable::NoJson);
        let e = e.to_string();
        assert!(e.contains("no JSON object"), "{e}");
    }

    #[test]
    fn schemas_list_decision_fields_first_and_bound_every_string() {
        let schema = schema_of::<ModeAnswer>();
        let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["confidence", "mode", "reason"]);
        assert_eq!(schema["properties"]["reason"]["maxLength"], 200);
        let plan = schema_of::<PlanAnswer>();
        assert_eq!(plan["properties"]["subtasks"]["maxItems"], 100);
        assert_eq!(
            plan["properties"]["subtasks"]["items"]["properties"]["name"]["maxLength"],
            80
        );
    }

    #[test]
    fn a_short_of_that_says_nothing_is_missing_or_repeats_the_result_is_no_gap() {
        for nothing in ["nothing", "None.", "N/A", " ", "Nothing is missing"] {
            let text = json!({"action": "complete", "result": "42", "short_of": nothing});
            let a = parse_action(&text.to_string(), &[], &[]).unwrap();
            assert_eq!(
                a,
                Action::Complete {
                    result: "42".into(),
                    short_of: None,
                },
                "{nothing:?}"
            );
        }
        let copied = json!({"action": "complete", "result": "The total is 1526.00",
            "short_of": " the total is 1526.00. "});
        assert!(matches!(
            parse_action(&copied.to_string(), &[], &[]).unwrap(),
            Action::Complete { short_of: None, .. }
        ));
        let gap = json!({"action": "complete", "result": "42", "short_of": "the March rows"});
        assert!(matches!(
            parse_action(&gap.to_string(), &[], &[]).unwrap(),
            Action::Complete { short_of: Some(s), .. } if s == "the March rows"
        ));
    }

    #[test]
    fn actions_parse_from_json_and_from_tool_calls() {
        let tools = [read_file()];
        let a = parse_action(r#"{"action":"complete","result":"42"}"#, &[], &tools).unwrap();
        assert_eq!(
            a,
            Action::Complete {
                result: "42".into(),
                short_of: None,
            }
        );
        let a = parse_action(
            r#"{"action":"read_file","arguments":{"path":"a.txt"}}"#,
            &[],
            &tools,
        )
        .unwrap();
        assert_eq!(
            a,
            Action::Tool {
                name: "read_file".into(),
                arguments: json!({"path": "a.txt"})
            }
        );
        let call = FunctionCall {
            name: "ask".into(),
            arguments: r#"{"question":"which city?"}"#.into(),
        };
        let a = parse_action("", &[call], &tools).unwrap();
        assert_eq!(
            a,
            Action::Ask {
                question: "which city?".into()
            }
        );
        let e = parse_action(r#"{"action":"fly"}"#, &[], &tools)
            .unwrap_err()
            .to_string();
        assert!(e.contains("read_file"), "the error lists the actions: {e}");
    }

    #[test]
    fn the_action_schema_has_one_variant_per_tool_and_can_forbid_adding() {
        let schema = action_schema(
            &[read_file()],
            Actions {
                add_subtask: false,
                ask: true,
            },
        );
        let actions: Vec<String> = schema["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                v["properties"]["action"]["const"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(actions, ["complete", "fail", "ask", "read_file"]);
        let functions = action_functions(
            &[read_file()],
            Actions {
                add_subtask: true,
                ask: true,
            },
        );
        assert_eq!(functions.len(), 5);
        assert!(functions[0]["parameters"]["properties"]
            .get("action")
            .is_none());
    }
}
