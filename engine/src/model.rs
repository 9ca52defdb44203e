//! The plan model: what a plan and its subtasks are, as stored and as sent.
//!
//! Every field here is data that the event log can rebuild exactly; derived
//! lookups (positions, ready set, counts) live in its child module `index`
//! (a child, so the model and its index do not import each other as
//! equals) and are never serialized.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

mod index;
use index::DerivedIndex;

/// Wall-clock time, always handed in by the caller: the engine never reads a clock.
pub type Timestamp = DateTime<Utc>;

/// Plans are addressed by UUID; the id comes in with the create command.
pub type PlanId = Uuid;

/// A subtask's short id: stable for the plan's life and never reused, so an
/// LLM can keep referring to "subtask 7" after insertions and deletions.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct SubtaskId(pub u32);

impl std::fmt::Display for SubtaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

crate::wire_enum! {
    /// The canonical subtask states. Dialects map their own names onto these.
    #[derive(
        Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
    )]
    pub enum SubtaskState: "subtask state" {
        Todo = "todo",
        InProgress = "in_progress",
        Blocked = "blocked",
        Done = "done",
        Failed = "failed",
        Skipped = "skipped",
    }
}

impl SubtaskState {
    /// A settled subtask satisfies the dependencies of the subtasks after it.
    pub fn is_settled(self) -> bool {
        matches!(self, SubtaskState::Done | SubtaskState::Skipped)
    }

    /// Not yet started: its text and dependencies may still be edited.
    pub fn is_unstarted(self) -> bool {
        matches!(self, SubtaskState::Todo | SubtaskState::Blocked)
    }

    pub(crate) fn slot(self) -> usize {
        self as usize
    }

    /// A wire name as a model or a person may write it (`Done `, `DONE`).
    pub fn parse(text: &str) -> Option<SubtaskState> {
        SubtaskState::from_wire(&text.trim().to_ascii_lowercase())
    }
}

crate::wire_enum! {
    /// The plan's life cycle; see the transition table in [`crate::transitions`].
    #[derive(
        Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
    )]
    pub enum PlanState: "plan state" {
        Draft = "draft",
        AwaitingApproval = "awaiting_approval",
        Approved = "approved",
        Running = "running",
        Paused = "paused",
        Done = "done",
        Failed = "failed",
        Abandoned = "abandoned",
    }
}

impl PlanState {
    /// Finished plans are history: only comments and `recover` touch them.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            PlanState::Done | PlanState::Failed | PlanState::Abandoned
        )
    }
}

crate::wire_enum! {
    /// How the plan came to be: by hand, or by one of the three built-in planners.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum Mode: "mode (manual, simple, complex or emergent)" {
        #[default]
        Manual = "manual",
        Simple = "simple",
        Complex = "complex",
        Emergent = "emergent",
    }
}

crate::wire_enum! {
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    pub enum ApprovalStatus: "approval status" {
        Pending = "pending",
        Approved = "approved",
        Rejected = "rejected",
    }
}

/// The human gate in front of execution.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Approval {
    /// When false the plan is approved at creation and `status` says so.
    pub required: bool,
    pub status: ApprovalStatus,
    /// The person who decided; `None` while pending or when not required.
    pub by: Option<String>,
    pub comment: Option<String>,
    pub at: Option<Timestamp>,
}

/// A review comment on the plan or on one subtask.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Comment {
    /// Per-plan sequence number, never reused.
    pub id: u32,
    pub subtask: Option<SubtaskId>,
    pub author: String,
    pub body: String,
    pub at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Subtask {
    pub(crate) id: SubtaskId,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) expected_outcome: String,
    /// Why the subtask exists (seed 000): the context an LLM needs to revise it.
    pub(crate) reasoning: String,
    pub(crate) state: SubtaskState,
    /// Subtasks that must be done or skipped before this one may start.
    pub(crate) dependencies: Vec<SubtaskId>,
    /// The result on done, the error on failed, the reason on skipped.
    pub(crate) outcome: Option<String>,
    /// Free-form working notes (OpenManus `step_notes`).
    pub(crate) notes: String,
    /// How many times the subtask was started; a retry after a failure adds one.
    pub(crate) attempts: u32,
    pub(crate) assignee: Option<String>,
    /// The work tool the subtask is meant to use (`run_python`, `read_file`,
    /// an MCP tool as `server.tool`); the name says what it achieves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool: Option<String>,
    pub(crate) created_at: Timestamp,
    pub(crate) started_at: Option<Timestamp>,
    pub(crate) finished_at: Option<Timestamp>,
}

/// A plan: the unit that agents walk and people approve and review.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    pub(crate) id: PlanId,
    /// A caller-chosen name for the plan (OpenManus `plan_id`), unique per workspace.
    pub(crate) key: Option<String>,
    pub(crate) title: String,
    /// The overall goal (seed 000 `overallGoal`).
    pub(crate) goal: String,
    pub(crate) description: String,
    pub(crate) expected_outcome: String,
    pub(crate) state: PlanState,
    pub(crate) mode: Mode,
    pub(crate) approval: Approval,
    /// Hard cap on the number of subtasks (AgentScope `max_subtasks`).
    pub(crate) max_subtasks: Option<u32>,
    /// Whether the agent must present the plan and wait for the user's
    /// go-ahead before executing it (AgentScope `needUserConfirm`); `None`
    /// leaves it to the caller's (the session's) setting. Only the hint
    /// carries it: a gate the engine enforces is `approval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) need_user_confirm: Option<bool>,
    /// Cap on subtasks in progress at once; `None` means independent subtasks may all run.
    pub(crate) max_parallel: Option<u32>,
    /// Increases by one with every accepted command; the optimistic-concurrency token.
    pub(crate) version: u64,
    pub(crate) created_by: String,
    pub(crate) created_at: Timestamp,
    pub(crate) updated_at: Timestamp,
    pub(crate) finished_at: Option<Timestamp>,
    /// The plan's outcome when done, or the reason when failed or abandoned.
    pub(crate) outcome: Option<String>,
    /// In display order; the order breaks ties between ready subtasks.
    /// Shared, so copying a plan (an undo copy, a reader's copy) costs a
    /// pointer per subtask; the fold copies only the subtasks it changes.
    pub(crate) subtasks: Vec<Arc<Subtask>>,
    pub(crate) next_subtask_id: u32,
    pub(crate) comments: Vec<Comment>,
    pub(crate) next_comment_id: u32,
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) index: DerivedIndex,
}

/// A subtask as given to `create` or `add`: the engine fills in id, state and times.
/// Unknown fields are refused, not dropped: a misspelt `depends_on` must not
/// silently create a subtask without its dependencies.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSubtask {
    #[schemars(length(max = limits::NAME))]
    pub name: String,
    #[serde(default)]
    #[schemars(length(max = limits::TEXT))]
    pub description: String,
    #[serde(default)]
    #[schemars(length(max = limits::TEXT))]
    pub expected_outcome: String,
    #[serde(default)]
    #[schemars(length(max = limits::TEXT))]
    pub reasoning: String,
    #[serde(default)]
    #[schemars(length(max = limits::DEPENDENCIES))]
    pub dependencies: Vec<SubtaskId>,
    #[serde(default)]
    #[schemars(length(max = limits::ACTOR))]
    pub assignee: Option<String>,
    /// The work tool the subtask is meant to use (`run_python`, `read_file`,
    /// an MCP tool as `server.tool`): one word of letters, digits, `_`, `-`
    /// and `.`. Empty or absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = limits::TOOL))]
    pub tool: Option<String>,
}

impl NewSubtask {
    pub fn named(name: impl Into<String>) -> NewSubtask {
        NewSubtask {
            name: name.into(),
            ..NewSubtask::default()
        }
    }

    pub fn after(mut self, dependencies: &[u32]) -> NewSubtask {
        self.dependencies = dependencies.iter().copied().map(SubtaskId).collect();
        self
    }
}

/// Everything needed to create a plan. Subtask ids are handed out 1, 2, 3…
/// in list order, so `dependencies` here refer to those numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPlan {
    /// Chosen by whoever creates the plan (the server, never its client),
    /// so it is left out of the schema.
    #[serde(default)]
    #[schemars(skip)]
    pub id: PlanId,
    #[serde(default)]
    #[schemars(length(max = limits::KEY))]
    pub key: Option<String>,
    #[schemars(length(max = limits::TITLE))]
    pub title: String,
    #[serde(default)]
    #[schemars(length(max = limits::TEXT))]
    pub goal: String,
    #[serde(default)]
    #[schemars(length(max = limits::TEXT))]
    pub description: String,
    #[serde(default)]
    #[schemars(length(max = limits::TEXT))]
    pub expected_outcome: String,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default)]
    pub approval_required: bool,
    /// Start as a draft that must be submitted before approval or execution.
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub max_subtasks: Option<u32>,
    #[serde(default)]
    pub max_parallel: Option<u32>,
    /// The agent presents the plan and waits for the user's go-ahead
    /// before executing it (seed 003's `needUserConfirm`; a hint rule, not
    /// a gate: `approval_required` is the gate). Absent: the session's
    /// setting, else off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub need_user_confirm: Option<bool>,
    #[serde(default, deserialize_with = "crate::wire::objects")]
    #[schemars(length(max = limits::SUBTASKS))]
    pub subtasks: Vec<NewSubtask>,
}

/// The editable plan-level fields, all present: an update carries the full new values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanInfo {
    pub title: String,
    pub goal: String,
    pub description: String,
    pub expected_outcome: String,
    pub mode: Mode,
    pub max_subtasks: Option<u32>,
    pub max_parallel: Option<u32>,
    /// Absent in events written before the setting existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub need_user_confirm: Option<bool>,
}

impl Plan {
    pub fn info(&self) -> PlanInfo {
        PlanInfo {
            title: self.title.clone(),
            goal: self.goal.clone(),
            description: self.description.clone(),
            expected_outcome: self.expected_outcome.clone(),
            mode: self.mode,
            max_subtasks: self.max_subtasks,
            max_parallel: self.max_parallel,
            need_user_confirm: self.need_user_confirm,
        }
    }

    /// The subtask with this id, in O(1).
    pub fn subtask(&self, id: SubtaskId) -> Option<&Subtask> {
        self.position(id).map(|p| &*self.subtasks[p])
    }

    /// The display position of a subtask, in O(1).
    pub fn position(&self, id: SubtaskId) -> Option<usize> {
        self.index().position(id)
    }

    /// How many subtasks are in each state, in O(1).
    pub fn count(&self, state: SubtaskState) -> usize {
        self.index().count(state)
    }

    /// Subtasks in progress, in display order.
    pub fn in_progress(&self) -> Vec<SubtaskId> {
        self.index()
            .in_progress_positions()
            .map(|p| self.subtasks[p].id)
            .collect()
    }

    /// Todo subtasks whose dependencies are all done or skipped, in display order.
    pub fn ready(&self) -> Vec<SubtaskId> {
        self.next_ready(usize::MAX)
    }

    /// The first `k` ready subtasks, without scanning the plan: O(k log n).
    pub fn next_ready(&self, k: usize) -> Vec<SubtaskId> {
        self.index()
            .ready_positions()
            .take(k)
            .map(|p| self.subtasks[p].id)
            .collect()
    }

    /// Seed 002's `next_batch`: up to `k` ready subtasks that may start now,
    /// honouring `max_parallel`. Default batch size is [`DEFAULT_BATCH`].
    pub fn next_batch(&self, k: usize) -> Vec<SubtaskId> {
        if !self.state_allows_start() {
            return Vec::new();
        }
        self.next_ready(k.min(self.free_slots()))
    }

    pub(crate) fn free_slots(&self) -> usize {
        match self.max_parallel {
            Some(max) => (max as usize).saturating_sub(self.count(SubtaskState::InProgress)),
            None => usize::MAX,
        }
    }

    pub(crate) fn state_allows_start(&self) -> bool {
        matches!(self.state, PlanState::Approved | PlanState::Running)
    }

    /// Rebuilds every derived lookup from the data. Needed only after
    /// mutating `subtasks` by hand; the engine keeps it current itself.
    pub fn reindex(&mut self) {
        self.index = DerivedIndex::default();
    }
}

/// Seed 002's default batch size.
pub const DEFAULT_BATCH: usize = 5;

/// How a subtask blocked on a question to a person begins its note (the
/// question follows), so a board can offer an answer box for it.
pub const QUESTION_NOTE: &str = "waiting for an answer: ";

impl Subtask {
    /// The question this subtask waits on a person to answer, if any.
    pub fn question(&self) -> Option<&str> {
        if self.state != SubtaskState::Blocked {
            return None;
        }
        self.outcome.as_deref()?.strip_prefix(QUESTION_NOTE)
    }
}

/// Input limits: large enough for real plans, small enough that a runaway
/// model cannot fill memory. Every violation is a [`crate::PlanError::TooLong`].
pub mod limits {
    pub const TITLE: usize = 200;
    pub const NAME: usize = 200;
    pub const TEXT: usize = 8_000;
    pub const COMMENT: usize = 4_000;
    pub const ACTOR: usize = 100;
    /// A subtask's tool name (`run_python`, `server.tool`).
    pub const TOOL: usize = 100;
    pub const KEY: usize = 100;
    /// Applies even when a plan sets no `max_subtasks`.
    pub const SUBTASKS: usize = 5_000;
    pub const DEPENDENCIES: usize = 100;
}

/// Read-only: a plan changes only through the engine's commands, so its
/// invariants (ids, versions, the DAG) hold for everyone who holds one.
///
/// ```compile_fail
/// fn bump(plan: &mut plan_engine::Plan) {
///     plan.version = 7; // only a command moves the version
/// }
/// ```
impl Plan {
    pub fn id(&self) -> PlanId {
        self.id
    }

    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    pub fn title(&self) -> &str {
        &self.title
    }

    pub fn goal(&self) -> &str {
        &self.goal
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    pub fn expected_outcome(&self) -> &str {
        &self.expected_outcome
    }

    pub fn state(&self) -> PlanState {
        self.state
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn approval(&self) -> &Approval {
        &self.approval
    }

    pub fn max_subtasks(&self) -> Option<u32> {
        self.max_subtasks
    }

    pub fn max_parallel(&self) -> Option<u32> {
        self.max_parallel
    }

    /// The plan's own confirmation setting; `None`: the session's decides.
    pub fn need_user_confirm(&self) -> Option<bool> {
        self.need_user_confirm
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn created_by(&self) -> &str {
        &self.created_by
    }

    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }

    pub fn updated_at(&self) -> Timestamp {
        self.updated_at
    }

    pub fn finished_at(&self) -> Option<Timestamp> {
        self.finished_at
    }

    pub fn outcome(&self) -> Option<&str> {
        self.outcome.as_deref()
    }

    pub fn subtasks(&self) -> &[Arc<Subtask>] {
        &self.subtasks
    }

    pub fn next_subtask_id(&self) -> u32 {
        self.next_subtask_id
    }

    pub fn comments(&self) -> &[Comment] {
        &self.comments
    }

    pub fn next_comment_id(&self) -> u32 {
        self.next_comment_id
    }
}

/// Read-only, like [`Plan`]: subtasks change only through the plan's commands.
impl Subtask {
    pub fn id(&self) -> SubtaskId {
        self.id
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    pub fn expected_outcome(&self) -> &str {
        &self.expected_outcome
    }

    pub fn reasoning(&self) -> &str {
        &self.reasoning
    }

    pub fn state(&self) -> SubtaskState {
        self.state
    }

    pub fn dependencies(&self) -> &[SubtaskId] {
        &self.dependencies
    }

    pub fn outcome(&self) -> Option<&str> {
        self.outcome.as_deref()
    }

    pub fn notes(&self) -> &str {
        &self.notes
    }

    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    pub fn assignee(&self) -> Option<&str> {
        self.assignee.as_deref()
    }

    /// The work tool the subtask is meant to use, if one was named.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }

    pub fn started_at(&self) -> Option<Timestamp> {
        self.started_at
    }

    pub fn finished_at(&self) -> Option<Timestamp> {
        self.finished_at
    }
}
