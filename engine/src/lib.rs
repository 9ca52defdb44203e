//! The plan engine of planboard: a pure, deterministic core that every other
//! part of the product (HTTP API, MCP server, live board, built-in agents)
//! drives through one function.
//!
//! ```text
//! apply(plan, command, actor, now) -> Result<Vec<Event>, PlanError>
//! ```
//!
//! Commands go in, events come out, and [`Plan::fold`] records events, so the
//! database log, the live stream and the board's history replay all share
//! one event type. The crate has no I/O, no clock and no randomness: time
//! and ids come in as arguments, so the same inputs always give the same
//! plan. Invariants (acyclic dependencies, unique never-reused subtask ids,
//! a monotone version, the state tables, approval before execution, subtask
//! limits) are enforced by fallible operations whose error messages tell an
//! LLM what to do instead.
//!
//! # Layout
//! - [`model`]: `Plan`, `Subtask`, states, approval, comments, input limits.
//! - [`transitions`]: the subtask and plan state tables, one exhaustive `match` each.
//! - [`command`] and [`event`]: what can be asked, what happened, and the fold.
//! - [`apply`](mod@apply): the decisions; `Plan::create` and `Plan::execute`.
//! - [`dag`]: cycle checks with the offending path, topological order, critical path.
//! - `model`'s child `index`: derived lookups (positions, ready set, counts) that keep per-step
//!   queries off the O(n) path.
//! - [`progress`] and [`render`]: counts and percent; Markdown, Mermaid, JSON;
//!   [`gantt`]: the plan's timing as an SVG Gantt chart.
//! - [`compare`]: two versions of a plan field by field, and who changed what;
//! - [`distance`]: how far two plans are apart as graphs ([`graph_match`]:
//!   steps matched by their words, node and edge F1, one similarity);
//! - [`revision`]: what a revised plan added, changed and dropped since a
//!   person rejected it.
//! - [`text`]: cutting text to a number of characters, for every crate.
//! - [`wire`]: `wire_enum!`, every crate's one way to name enum variants on the wire.
//! - [`layout`]: the layered drawing of the dependency graph for the board.
//! - [`describe`](mod@describe): one readable line per event, for timelines;
//!   `words`: state and mode labels in English and Chinese.
//! - [`hint`]: the per-step hint texts, English and Chinese, in a bounded window.
//! - [`dialect`] and [`tools`]: the operations as LLM tools in four dialects
//!   (canonical, PlanManager, OpenManus, AgentScope) with schemars-generated
//!   OpenAI function schemas, plus the in-memory [`tools::Workspace`].

pub mod apply;
pub mod command;
pub mod compare;
pub mod dag;
pub mod describe;
pub mod dialect;
pub mod distance;
pub mod error;
pub mod event;
pub mod gantt;
pub mod hint;
pub mod layout;
pub mod lod;
pub mod model;
pub mod progress;
pub mod query;
pub mod render;
pub mod revision;
pub mod text;
pub mod tools;
pub mod transitions;
pub mod wire;
mod words;

pub use apply::{apply, create};
pub use command::{Command, InfoPatch, Op, Position, SubtaskPatch};
pub use describe::describe;
pub use dialect::Dialect;
pub use distance::{graph_match, GraphMatch};
pub use error::PlanError;
pub use event::{Event, EventKind, SubtaskFields};
pub use hint::{hint, HintCase, HintOptions, Lang};
pub use model::{
    Approval, ApprovalStatus, Comment, Mode, NewPlan, NewSubtask, Plan, PlanId, PlanInfo,
    PlanState, Subtask, SubtaskId, SubtaskState, Timestamp, DEFAULT_BATCH,
};
pub use progress::Progress;
pub use query::{PlanQuery, StateFilter};
pub use tools::{
    call, check_new_plan, tool_specs, tools, CallContext, PlanBook, SessionDefaults, Shelf,
    ToolResult, ToolSpec, Workspace,
};
pub use wire::UnknownName;
