//! The engine's operations as LLM tools, in four dialects over one set of
//! commands.
//!
//! `tools(dialect)` lists OpenAI function-calling schemas generated with
//! schemars from the argument types; `call(book, dialect, tool, args, ctx)`
//! parses the model's JSON, runs the commands and answers with a
//! [`ToolResult`] the model can act on. Nothing here panics on bad input: an
//! unknown tool, malformed arguments or a refused command all come back as
//! a result with `ok: false` and a sentence saying what to do.
//!
//! Plans live behind [`PlanBook`], so the same dialect code runs on the
//! in-memory [`Workspace`] here and on the server's store.

/// One dialect's tools from one list: the enum its `call` matches on (a
/// tool without a handler does not compile), `specs()` offered to models and
/// MCP clients, and the parser from a tool name and raw arguments.
macro_rules! toolset {
    ($(#[$meta:meta])* $name:ident { $($tool:literal => $variant:ident($args:ty),)+ }) => {
        $(#[$meta])*
        enum $name {
            $($variant($args),)+
        }

        /// The dialect's tools, in the order they are offered.
        pub(super) fn specs() -> Vec<$crate::tools::ToolSpec> {
            vec![$($crate::tools::ToolSpec::of::<$args>($tool),)+]
        }

        impl $name {
            const NAMES: &'static [&'static str] = &[$($tool),+];

            fn parse(
                tool: &str,
                raw: &serde_json::Value,
            ) -> Result<Self, $crate::tools::ToolError> {
                match tool {
                    $($tool => Ok(Self::$variant($crate::tools::args(tool, raw)?)),)+
                    _ => Err($crate::tools::ToolError::UnknownTool {
                        tool: tool.to_string(),
                        known: Self::NAMES.iter().map(|n| n.to_string()).collect(),
                    }),
                }
            }
        }
    };
}

mod agentscope;
mod canonical;
pub mod lenient;
mod openmanus;
mod planmanager;
mod shelf;
mod workspace;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::command::Op;
use crate::dialect::Dialect;
use crate::error::PlanError;
use crate::event::Event;
use crate::model::{NewPlan, Plan, PlanId, SubtaskId, SubtaskState, Timestamp};

pub use shelf::Shelf;
pub use workspace::Workspace;

/// Where plans live and which plan each agent session is working on.
pub trait PlanBook {
    fn plan(&self, id: PlanId) -> Option<&Plan>;
    fn plan_by_key(&self, key: &str) -> Option<&Plan>;
    /// All plans, oldest first.
    fn plans(&self) -> Vec<&Plan>;
    fn active(&self, session: &str) -> Option<PlanId>;
    fn set_active(&mut self, session: &str, id: Option<PlanId>);
    /// Stores a plan made by [`Plan::create`] with its creation events.
    fn insert(&mut self, plan: Plan, events: Vec<Event>) -> Result<(), PlanError>;
    /// Applies the ops in order, all or none: a failing op leaves the plan as it was.
    fn execute(
        &mut self,
        id: PlanId,
        ops: Vec<Op>,
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Event>, PlanError>;
    fn remove(&mut self, id: PlanId) -> Result<(), PlanError>;
}

/// What every [`PlanBook::insert`] must refuse: a plan id or a key that is
/// already taken.
pub fn check_new_plan(book: &dyn PlanBook, plan: &Plan) -> Result<(), PlanError> {
    if book.plan(plan.id).is_some() {
        return Err(PlanError::invalid(
            "id",
            format!("plan {} already exists", plan.id),
        ));
    }
    if let Some(key) = plan
        .key
        .as_deref()
        .filter(|k| book.plan_by_key(k).is_some())
    {
        return Err(PlanError::invalid(
            "plan_id",
            format!("a plan with ID '{key}' already exists; choose another id or update that plan"),
        ));
    }
    Ok(())
}

/// Who is calling, when, and the id a `create` would use.
#[derive(Clone, Debug)]
pub struct CallContext {
    /// The agent session key: each session has its own active plan.
    pub session: String,
    pub actor: String,
    pub now: Timestamp,
    pub new_plan_id: PlanId,
    /// The session's settings for the plans it creates.
    pub defaults: SessionDefaults,
}

/// A session's settings for the plans it creates (seed 003's PlanNotebook
/// `maxSubtasks` and `needUserConfirm`). A create call that does not set
/// them takes them, so the plan carries them: the engine then enforces the
/// limit like any plan's, and the hint states both rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionDefaults {
    pub max_subtasks: Option<u32>,
    pub need_user_confirm: Option<bool>,
}

/// What a tool call returns to the model (`text`) and to the caller.
#[derive(Clone, Debug, Serialize)]
pub struct ToolResult {
    pub ok: bool,
    pub text: String,
    /// `PlanError::code()`, `unknown_tool`, `invalid_arguments` or `no_plan`.
    pub error: Option<&'static str>,
    pub plan_id: Option<PlanId>,
    pub version: Option<u64>,
    #[serde(skip)]
    pub events: Vec<Event>,
}

#[derive(Debug)]
pub(crate) enum ToolError {
    Plan(PlanError),
    UnknownTool { tool: String, known: Vec<String> },
    BadArgs { tool: String, message: String },
    NoPlan { create: &'static str },
    UnknownPlan { reference: String },
}

impl From<PlanError> for ToolError {
    fn from(e: PlanError) -> Self {
        ToolError::Plan(e)
    }
}

impl ToolError {
    fn code(&self) -> &'static str {
        match self {
            ToolError::Plan(e) => e.code(),
            ToolError::UnknownTool { .. } => "unknown_tool",
            ToolError::BadArgs { .. } => "invalid_arguments",
            ToolError::NoPlan { .. } => "no_plan",
            ToolError::UnknownPlan { .. } => "not_found",
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolError::Plan(e) => write!(f, "{e}"),
            ToolError::UnknownTool { tool, known } => write!(
                f,
                "there is no tool named '{tool}'; the tools are: {}",
                known.join(", ")
            ),
            ToolError::BadArgs { tool, message } => {
                write!(f, "invalid arguments for '{tool}': {message}")
            }
            ToolError::NoPlan { create } => write!(
                f,
                "there is no current plan; create one first by calling {create}"
            ),
            ToolError::UnknownPlan { reference } => {
                write!(
                    f,
                    "no plan is known as '{reference}'; list the plans to see their ids"
                )
            }
        }
    }
}

/// A successful call: the text for the model and the events it caused.
pub(crate) struct Reply {
    pub text: String,
    pub plan_id: Option<PlanId>,
    pub events: Vec<Event>,
}

impl Reply {
    pub fn text(text: impl Into<String>) -> Reply {
        Reply {
            text: text.into(),
            plan_id: None,
            events: Vec::new(),
        }
    }

    pub fn on(mut self, plan_id: PlanId, events: Vec<Event>) -> Reply {
        self.plan_id = Some(plan_id);
        self.events = events;
        self
    }
}

/// A tool as a model or an MCP client sees it: its name, what it does
/// (the argument type's doc comment) and the JSON schema of its arguments.
#[derive(Clone, Debug, Serialize)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: String,
    pub parameters: serde_json::Map<String, Value>,
}

impl ToolSpec {
    pub(crate) fn of<T: JsonSchema>(name: &'static str) -> ToolSpec {
        let generator = SchemaSettings::draft07()
            .with(|s| {
                s.inline_subschemas = true;
                s.meta_schema = None;
            })
            .into_generator();
        let mut parameters = match generator.into_root_schema_for::<T>().to_value() {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        parameters.remove("title");
        let description = match parameters.remove("description") {
            Some(Value::String(text)) => text,
            _ => String::new(),
        };
        parameters.entry("properties").or_insert_with(|| json!({}));
        parameters.insert("type".into(), json!("object"));
        ToolSpec {
            name,
            description,
            parameters,
        }
    }

    /// The spec in OpenAI's function-calling form.
    pub fn openai(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }
}

/// A dialect's tools.
pub fn tool_specs(dialect: Dialect) -> Vec<ToolSpec> {
    match dialect {
        Dialect::Canonical => canonical::specs(),
        Dialect::PlanManager => planmanager::specs(),
        Dialect::OpenManus => openmanus::specs(),
        Dialect::AgentScope => agentscope::specs(),
    }
}

/// The OpenAI function-calling schemas of a dialect's tools.
pub fn tools(dialect: Dialect) -> Vec<Value> {
    tool_specs(dialect).iter().map(ToolSpec::openai).collect()
}

/// Runs one tool call. `args` is the model's JSON arguments (an object, or a
/// string holding one, as some clients send).
pub fn call(
    book: &mut dyn PlanBook,
    dialect: Dialect,
    tool: &str,
    args: &Value,
    ctx: &CallContext,
) -> ToolResult {
    let mut session = Session { book, ctx, dialect };
    let outcome = match dialect {
        Dialect::Canonical => canonical::call(&mut session, tool, args),
        Dialect::PlanManager => planmanager::call(&mut session, tool, args),
        Dialect::OpenManus => openmanus::call(&mut session, tool, args),
        Dialect::AgentScope => agentscope::call(&mut session, tool, args),
    };
    match outcome {
        Ok(reply) => {
            let version = match reply.events.last() {
                Some(event) => Some(event.version),
                None => reply
                    .plan_id
                    .and_then(|id| session.book.plan(id))
                    .map(|p| p.version),
            };
            ToolResult {
                ok: true,
                text: reply.text,
                error: None,
                plan_id: reply.plan_id,
                version,
                events: reply.events,
            }
        }
        Err(err) => ToolResult {
            ok: false,
            text: match dialect {
                Dialect::PlanManager => {
                    json!({ "success": false, "error": err.to_string() }).to_string()
                }
                _ => format!("Error: {err}"),
            },
            error: Some(err.code()),
            plan_id: None,
            version: None,
            events: Vec::new(),
        },
    }
}

/// One call's view of the book: the caller, and its session's active plan.
pub(crate) struct Session<'a> {
    pub book: &'a mut dyn PlanBook,
    pub ctx: &'a CallContext,
    pub dialect: Dialect,
}

impl Session<'_> {
    pub fn current_id(&self) -> Result<PlanId, ToolError> {
        self.current().map(|p| p.id)
    }

    pub fn current(&self) -> Result<&Plan, ToolError> {
        self.book
            .active(&self.ctx.session)
            .and_then(|id| self.book.plan(id))
            .ok_or(ToolError::NoPlan {
                create: self.dialect.names().create,
            })
    }

    pub fn plan(&self, id: PlanId) -> Result<&Plan, ToolError> {
        self.book.plan(id).ok_or(ToolError::UnknownPlan {
            reference: id.to_string(),
        })
    }

    /// A plan named by UUID or by key; none named means the active plan.
    pub fn resolve(&self, reference: Option<&str>) -> Result<PlanId, ToolError> {
        let Some(r) = reference.map(str::trim).filter(|r| !r.is_empty()) else {
            return self.current_id();
        };
        let by_uuid = uuid::Uuid::parse_str(r)
            .ok()
            .and_then(|id| self.book.plan(id));
        by_uuid
            .or_else(|| self.book.plan_by_key(r))
            .map(|p| p.id)
            .ok_or(ToolError::UnknownPlan {
                reference: r.to_string(),
            })
    }

    /// Whether a subtask already is in `state`. A tool asked to move it
    /// there answers that nothing changed instead of refusing: the model's
    /// goal is met, and a refusal would send it looking for a mistake it
    /// did not make. An unknown id is `false`, so the engine reports it.
    pub fn already_in(&self, plan: PlanId, id: SubtaskId, state: SubtaskState) -> bool {
        self.book
            .plan(plan)
            .and_then(|p| p.subtask(id))
            .is_some_and(|sub| sub.state == state)
    }

    pub fn exec(&mut self, id: PlanId, ops: Vec<Op>) -> Result<Vec<Event>, ToolError> {
        Ok(self.book.execute(id, ops, &self.ctx.actor, self.ctx.now)?)
    }

    /// The plan a create call asks for, with the session's settings where
    /// the call leaves them out.
    pub fn with_defaults(&self, mut spec: NewPlan) -> NewPlan {
        let defaults = self.ctx.defaults;
        spec.max_subtasks = spec.max_subtasks.or(defaults.max_subtasks);
        spec.need_user_confirm = spec.need_user_confirm.or(defaults.need_user_confirm);
        spec
    }

    /// Creates a plan (with the session's settings, see
    /// [`Session::with_defaults`]) and makes it the session's active plan.
    pub fn create(&mut self, spec: NewPlan) -> Result<(PlanId, Vec<Event>), ToolError> {
        let spec = self.with_defaults(spec);
        let (plan, events) = Plan::create(&spec, &self.ctx.actor, self.ctx.now)?;
        let id = plan.id;
        self.book.insert(plan, events.clone())?;
        self.book.set_active(&self.ctx.session, Some(id));
        Ok((id, events))
    }

    /// Archives the session's unfinished active plan before another takes
    /// its place (AgentScope replaces it; here it is abandoned, never lost).
    pub fn archive_current(&mut self, why: String) -> Result<Vec<Event>, ToolError> {
        let Ok(current) = self.current() else {
            return Ok(Vec::new());
        };
        if current.state.is_finished() {
            return Ok(Vec::new());
        }
        let id = current.id;
        self.exec(
            id,
            vec![Op::Finish {
                state: crate::model::PlanState::Abandoned,
                outcome: why,
            }],
        )
    }
}

/// Parses a tool's arguments: an object, a string holding one (parsed
/// straight into `T`, with no intermediate map), or nothing.
pub(crate) fn args<T: DeserializeOwned>(tool: &str, value: &Value) -> Result<T, ToolError> {
    let bad = |message: String| ToolError::BadArgs {
        tool: tool.to_string(),
        message,
    };
    match value {
        Value::String(s) => serde_json::from_str::<T>(s).map_err(|e| {
            if serde_json::from_str::<Value>(s).is_err() {
                bad(format!("the arguments are not JSON: {e}"))
            } else {
                bad(e.to_string())
            }
        }),
        Value::Null => {
            T::deserialize(&Value::Object(Default::default())).map_err(|e| bad(e.to_string()))
        }
        other => T::deserialize(other).map_err(|e| bad(e.to_string())),
    }
}

/// Converts a model-supplied id to a subtask id, refusing ones that cannot exist.
pub(crate) fn subtask_id(n: u64) -> crate::model::SubtaskId {
    crate::model::SubtaskId(u32::try_from(n).unwrap_or(u32::MAX))
}

/// The subtask at a 0-based display index (AgentScope, OpenManus).
pub(crate) fn at_index(plan: &Plan, index: u64) -> Result<crate::model::SubtaskId, ToolError> {
    usize::try_from(index)
        .ok()
        .and_then(|i| plan.subtasks.get(i))
        .map(|s| s.id)
        .ok_or(ToolError::Plan(PlanError::UnknownIndex {
            index: usize::try_from(index).unwrap_or(usize::MAX),
            len: plan.subtasks.len(),
        }))
}
