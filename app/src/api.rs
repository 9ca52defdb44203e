//! What the board asks of the server: the types it speaks in, the
//! [`BoardBackend`] the server implements (so the app never depends on the
//! server crate), and the server functions the pages call.
//!
//! Every change goes through [`run_command`] with an engine [`Command`], the
//! same service path and the same engine checks as the agents' REST and tool
//! calls; refusals come back as [`BoardError`]s written for people.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use plan_engine::{
    ApprovalStatus, Command, Event, Mode, NewPlan, PlanId, PlanQuery, PlanState, Timestamp,
};
use run_model::{DecidedBy, EntryKind, RunId, RunState};
use serde::{Deserialize, Serialize};

/// Who is looking at the board.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Viewer {
    pub name: String,
    /// Operators and admins edit; viewers only look.
    pub can_edit: bool,
    /// Token mode: there is a session to sign out of.
    pub signed_in: bool,
    /// Admins manage the webhooks (settings page).
    #[serde(default)]
    pub is_admin: bool,
}

impl Viewer {
    /// The one "a viewer looks but does not change" check, for every
    /// place a person changes something on the board (plans, memories,
    /// templates, the task box): nothing, or the refusal in `lang` naming
    /// `what` (English, Chinese).
    pub fn may_change(
        &self,
        what: (&str, &str),
        lang: crate::i18n::Lang,
    ) -> Result<(), BoardError> {
        if self.can_edit {
            return Ok(());
        }
        Err(BoardError::Forbidden(lang.pick(
            format!(
                "{} may look but not change {} (viewer role)",
                self.name, what.0
            ),
            format!("{} 只能查看，不能修改{}（只读角色）", self.name, what.1),
        )))
    }

    /// Its twin for what only admins manage (webhooks, MCP servers).
    pub fn may_manage(
        &self,
        what: (&str, &str),
        lang: crate::i18n::Lang,
    ) -> Result<(), BoardError> {
        if self.is_admin {
            return Ok(());
        }
        Err(BoardError::Forbidden(lang.pick(
            format!(
                "{} is not an admin: only admins manage {}",
                self.name, what.0
            ),
            format!("{} 不是管理员：只有管理员可以管理 {}", self.name, what.1),
        )))
    }
}

/// The settings page's webhooks: where notifications go, and how the
/// latest deliveries went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WebhookSettings {
    pub endpoints: Vec<EndpointRow>,
    pub deliveries: Vec<DeliveryRow>,
}

/// The Tools page: the built-in work tools and the MCP servers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolsOverview {
    /// Name and description of each built-in tool.
    pub builtin: Vec<(String, String)>,
    pub servers: Vec<run_model::ToolServerView>,
    /// The ACP agents a task can be given to.
    #[serde(default)]
    pub agents: Vec<run_model::AcpAgentView>,
    /// Whether the viewer may add, change, test and remove servers.
    pub can_manage: bool,
}

/// One endpoint: its scheme and host only; `id: None` for the configured one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndpointRow {
    pub id: Option<uuid::Uuid>,
    pub url: String,
    pub signed: bool,
    pub slack: bool,
}

/// One delivery, newest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeliveryRow {
    pub event: String,
    pub endpoint: String,
    pub plan_id: Option<PlanId>,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    pub attempts: u32,
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    pub created_at: Timestamp,
}

/// One line of the plans list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanRow {
    pub id: PlanId,
    pub title: String,
    pub state: PlanState,
    pub mode: Mode,
    pub approval: ApprovalStatus,
    pub approval_required: bool,
    pub approved_by: Option<String>,
    pub percent: u8,
    pub subtasks: usize,
    pub comments: usize,
    pub created_at: Timestamp,
    /// Last activity.
    pub updated_at: Timestamp,
    pub finished_at: Option<Timestamp>,
    pub outcome: Option<String>,
    /// The state of the run of planboard's agent on this plan; `None` when
    /// no agent run made it.
    pub run: Option<RunState>,
    /// The subtasks in progress now, by name, comma-separated.
    pub working_on: Option<String>,
}

/// Which plans the list shows (the engine's filter, the same as the API's),
/// and which page of them.
///
/// The live list does not send this: it sends its address's query string
/// (`show=active&by=agent&page=2`), which the server reads with
/// [`ListFilter::from_address`]. A string costs the wasm nothing to encode.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListFilter {
    pub query: PlanQuery,
    /// `Some(true)`: only the plans planboard's agent made; `Some(false)`:
    /// only the others (API, MCP, by hand).
    pub agent: Option<bool>,
    /// 0-based; a page holds [`PAGE_SIZE`] plans.
    pub page: u32,
    /// History's order (`sort=cost|tokens|took`; newest first otherwise).
    pub sort: HistorySort,
    /// History's reviews filter (`verdict=good|needs_changes|wrong|none`).
    pub review: Option<ReviewFilter>,
}

/// Which plans History shows by their reviews.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReviewFilter {
    /// Nobody has reviewed them.
    Unreviewed,
    /// Someone gave this verdict.
    Verdict(run_model::ReviewVerdict),
}

impl ReviewFilter {
    /// The address's word for it.
    pub fn name(self) -> &'static str {
        match self {
            ReviewFilter::Unreviewed => "none",
            ReviewFilter::Verdict(verdict) => verdict.as_str(),
        }
    }

    pub fn parse(name: &str) -> Option<ReviewFilter> {
        match name {
            "none" => Some(ReviewFilter::Unreviewed),
            other => other.parse().ok().map(ReviewFilter::Verdict),
        }
    }

    /// Whether a plan with these verdicts passes.
    pub fn admits(self, verdicts: &[run_model::ReviewVerdict]) -> bool {
        match self {
            ReviewFilter::Unreviewed => verdicts.is_empty(),
            ReviewFilter::Verdict(v) => verdicts.contains(&v),
        }
    }
}

plan_engine::wire_enum! {
    /// How History orders its plans: newest first, or the most expensive,
    /// hungriest or longest first.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum HistorySort: "history order (newest, cost, tokens or took)" {
        #[default]
        Newest = "newest",
        Cost = "cost",
        Tokens = "tokens",
        Took = "took",
    }
}

impl ListFilter {
    /// The filter of a list address's query string (`show=`, `mode=`,
    /// `q=`, `by=agent|manual`, `page=` counting from 1); what is not
    /// understood is left out.
    pub fn from_address(search: &str) -> ListFilter {
        let mut filter = ListFilter::default();
        for (key, value) in search_pairs(search) {
            match key.as_str() {
                "show" => filter.query.state = plan_engine::StateFilter::from_wire(&value),
                "mode" => filter.query.mode = Mode::from_wire(&value),
                "q" => filter.query.text = value,
                "by" => {
                    filter.agent = match value.as_str() {
                        "agent" => Some(true),
                        "manual" => Some(false),
                        _ => None,
                    }
                }
                "page" => {
                    filter.page = value.parse::<u32>().map_or(0, |p| p.saturating_sub(1));
                }
                "sort" => filter.sort = HistorySort::from_wire(&value).unwrap_or_default(),
                "verdict" => filter.review = ReviewFilter::parse(&value),
                _ => {}
            }
        }
        filter
    }
}

/// The Memory page's address: its search and page (0-based).
pub fn memory_query(search: &str) -> (String, u32) {
    let (mut query, mut page) = (String::new(), 0);
    for (key, value) in search_pairs(search) {
        match key.as_str() {
            "q" => query = value,
            "page" => page = value.parse::<u32>().map_or(0, |p| p.saturating_sub(1)),
            _ => {}
        }
    }
    (query, page)
}

/// A page of the agent's memories.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryList {
    pub rows: Vec<run_model::Memory>,
    pub more: bool,
}

/// Memories shown on one page.
pub const MEMORIES_PER_PAGE: u32 = 50;

/// A query string's `key=value` pairs, decoded (`+` is a space).
pub(crate) fn search_pairs(search: &str) -> impl Iterator<Item = (String, String)> + '_ {
    use leptos_router::location::Url;
    search
        .trim_start_matches('?')
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (
                Url::unescape(&key.replace('+', " ")),
                Url::unescape(&value.replace('+', " ")),
            )
        })
}

/// One line of history: the plan's row and what its agent run spent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryRow {
    pub plan: PlanRow,
    /// Tokens the agent's run used (prompt + completion); `None` when no
    /// agent run made the plan.
    pub tokens: Option<u64>,
    /// What the run's model calls cost (priced calls only).
    pub cost: Option<run_model::Usd>,
    /// What was asked, when planboard's agent made the plan.
    pub task: Option<String>,
    /// The reviewers' verdicts, oldest review first.
    pub verdicts: Vec<run_model::ReviewVerdict>,
    /// The agent's run that made the plan.
    #[serde(default)]
    pub run_id: Option<RunId>,
    /// The run it replays or was run again from: History links the two
    /// side by side.
    #[serde(default)]
    pub compare_with: Option<RunId>,
}

/// The reviews part of a plan's board.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReviewPanel {
    /// Only finished plans are reviewed.
    pub finished: bool,
    pub reviews: Vec<run_model::Review>,
    /// The plan's subtasks (id, name), for notes on them.
    pub subtasks: Vec<(u32, String)>,
    /// The viewer's name: their review is the one they may change.
    pub me: String,
    /// Whether the viewer may write a review (operators and admins).
    pub can_review: bool,
    /// The agent's run that made the plan (it can be run again).
    pub run: Option<RunId>,
    /// Where this plan's run started again from.
    pub again_of: Option<run_model::AgainOf>,
    /// (plan, from) of the runs started again from this plan.
    pub again: Vec<(PlanId, u32)>,
    /// The regression case this plan's run is, if it is one.
    #[serde(default)]
    pub case: Option<run_model::CaseId>,
    /// The case this plan's run is a suite's run of: a review that is not
    /// good is a finding about it, and the run is no new case.
    #[serde(default)]
    pub finding_of: Option<run_model::CaseId>,
}

/// (field, before, after).
pub type FieldDiff = (String, String, String);
/// (id, name, its fields that differ).
pub type ChangedSubtask = (u32, String, Vec<FieldDiff>);

/// Two versions of a plan compared (the Compare page).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareView {
    pub title: String,
    pub from: u64,
    pub to: u64,
    /// The plan's latest version.
    pub latest: u64,
    /// The plan's own fields that differ.
    pub plan: Vec<FieldDiff>,
    pub added: Vec<(u32, String)>,
    pub removed: Vec<(u32, String)>,
    pub changed: Vec<ChangedSubtask>,
    /// (version, actor, at, what), oldest first, at most [`COMPARE_STEPS`].
    pub steps: Vec<(u64, String, Timestamp, String)>,
    /// Steps left out beyond [`COMPARE_STEPS`].
    pub more_steps: usize,
}

/// Steps the Compare page lists.
pub const COMPARE_STEPS: usize = 500;

/// A page of the review queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReviewQueueList {
    pub rows: Vec<run_model::ToReview>,
    /// Finished plans without a review, in all (this filter's).
    pub total: usize,
    pub more: bool,
}

/// One page of history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryList {
    pub rows: Vec<HistoryRow>,
    pub more: bool,
}

/// Plans per page of the list.
pub const PAGE_SIZE: usize = 50;

/// One page of the plans list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanList {
    pub rows: Vec<PlanRow>,
    /// More plans follow on the next page.
    pub more: bool,
}

/// One row of a plan's history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    pub seq: i64,
    /// The engine's event; `None` for the deletion marker.
    pub event: Option<Event>,
}

/// Everything the board starts from: the plan is the fold of its log, so
/// the board, the timeline and the replay never disagree. The server folds
/// it and sends the plan, not the log: the browser decoding a 5,000-subtask
/// log and folding it again were part of the island's hydration, which a
/// tab clicked as soon as it shows waits for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoardData {
    /// `None` when the log does not fold to a plan.
    pub plan: Option<Snapshot>,
    /// How many entries the log holds (the timeline counts them).
    pub entries: usize,
    /// The last entry's `seq`: the live stream resumes after it.
    pub last_seq: i64,
    /// The plan as it was when a person last rejected it, if one did: while
    /// a revised plan awaits approval the board marks what changed since.
    pub rejected: Option<Snapshot>,
    pub viewer: Viewer,
}

impl BoardData {
    /// What the board needs of `log`, folded once.
    pub fn from_log(log: &[LogEntry], viewer: Viewer) -> BoardData {
        let events = || log.iter().filter_map(|e| e.event.as_ref());
        BoardData {
            plan: plan_engine::Plan::replay(events()).ok().map(Snapshot::of),
            entries: log.len(),
            last_seq: log.last().map_or(0, |e| e.seq),
            rejected: plan_engine::Plan::last_rejected(events()).map(Snapshot::of),
            viewer,
        }
    }
}

/// A plan as the board is sent it: one `plan_created` event that carries
/// it, as a log compacted to its fold. The wasm reads it with the event
/// reader the live stream needs anyway; a plain `Plan` field had its own
/// copy of every plan type's reader, 32 KB more of wasm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Snapshot(Event);

impl Snapshot {
    pub fn of(plan: plan_engine::Plan) -> Snapshot {
        Snapshot(Event {
            plan_id: plan.id(),
            version: plan.version(),
            actor: plan.created_by().into(),
            at: plan.updated_at(),
            kind: plan_engine::EventKind::PlanCreated {
                plan: Box::new(plan),
            },
        })
    }

    pub fn into_plan(self) -> Option<plan_engine::Plan> {
        match self.0.kind {
            plan_engine::EventKind::PlanCreated { plan } => Some(*plan),
            _ => None,
        }
    }
}

/// One line of a run's activity, as its page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    pub at: Timestamp,
    /// The run-log entry's kind.
    pub kind: EntryKind,
    pub subtask: Option<u32>,
    /// One line: who, what, how long, how many tokens, ok or not.
    pub summary: String,
    /// The messages and the reply, or a tool's arguments and result.
    pub detail: Option<String>,
    pub ok: bool,
    /// A scheduled retry still to come: seconds left when this was read
    /// (the page counts down from it).
    pub retry_in_secs: Option<u64>,
    /// A tool call a replay answered from the recording of the run it
    /// replays (nothing ran): marked on the line.
    #[serde(default)]
    pub replayed: bool,
}

/// A plan's run as a list of what the agent did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivityLog {
    pub plan_title: String,
    /// `None`: no run has worked on this plan.
    pub run_id: Option<RunId>,
    pub rows: Vec<Activity>,
    /// What the run's model calls used and cost, per subtask and model.
    pub cost: Option<run_model::CostReport>,
    /// The files of the run's workspace (those it started with and those
    /// it wrote): path, size in bytes, and the start of a text file.
    pub artifacts: Vec<FileRow>,
    /// Every decision people made on the run (its plan's approvals, its
    /// guarded calls, budgets, grants), oldest first.
    #[serde(default)]
    pub approvals: Vec<run_model::ApprovalRecord>,
}

/// Which approval records the approvals page lists (its address's query).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalsFilter {
    pub run: Option<RunId>,
    pub person: Option<String>,
    pub tool: Option<String>,
}

/// The most approval records the approvals page lists.
pub const APPROVALS_SHOWN: u32 = 200;

/// The approvals insights page: approval fatigue per person and per
/// tool, the suggested policy moves, and how often forecasts held.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InsightsPage {
    pub days: u32,
    pub insights: run_model::Insights,
    pub forecasts: run_model::ForecastAccuracy,
    /// The viewer may apply a suggestion (an operator or an admin).
    #[serde(default)]
    pub can_apply: bool,
}

/// One file of a run's workspace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileRow {
    pub path: String,
    pub bytes: u64,
    pub preview: Option<String>,
    /// Where it is served (the server encodes the path).
    #[serde(default)]
    pub url: String,
    /// Shown as an image: a png, jpeg, gif, webp or svg file (by its
    /// extension) small enough to show.
    #[serde(default)]
    pub image: bool,
}

/// The most images one page shows: the activity page's files, the images
/// under an answer.
pub const IMAGES_SHOWN: usize = 12;

/// The newest lines of a run's activity (the board's live panel).
#[cfg(feature = "ssr")]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActivityTail {
    /// Oldest first.
    pub rows: Vec<Activity>,
    /// How many lines there are in all; `None` when finding out would
    /// mean reading the whole log (a subtask's lines in a long run).
    pub total: Option<usize>,
}

/// The agent's run on a plan, as the board shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunPanel {
    pub run_id: RunId,
    pub state: RunState,
    pub reason: Option<String>,
    pub mode: Option<Mode>,
    pub mode_reason: Option<String>,
    pub decided_by: Option<DecidedBy>,
    pub llm_calls: u32,
    pub max_llm_calls: u32,
    pub tokens: u64,
    pub max_tokens: u64,
    /// For a run its budget paused: which budget was reached, in words.
    pub budget_reached: Option<String>,
    /// What the priced calls cost, the money budget, and the calls to a
    /// model without a price.
    pub cost: run_model::Usd,
    pub max_cost: Option<run_model::Usd>,
    pub unpriced_calls: u32,
    pub answer: Option<String>,
    /// The images the run wrote, shown under its answer: those the answer
    /// names first (at most [`IMAGES_SHOWN`]).
    #[serde(default)]
    pub images: Vec<FileRow>,
    /// Subtasks settled (done or skipped), in percent.
    pub percent: u8,
    /// Seconds the run has been running (pauses not counted), and its limit.
    pub wall_secs: u64,
    pub max_wall_secs: u64,
    /// Seed 002's estimate: mean subtask time × subtasks left ÷ parallelism.
    pub eta_secs: Option<u64>,
    /// Guarded tool calls waiting for a person, oldest first.
    pub pending: Vec<PendingTool>,
    /// A run in batches (seed 002): where it stands over its input; then
    /// `percent` and `eta_secs` count the input's items, not the plan's
    /// subtasks (the plan holds only the batches planned so far).
    pub batches: Option<run_model::BatchView>,
    /// When the workspace retention removed the run's files.
    #[serde(default)]
    pub files_removed_at: Option<plan_engine::Timestamp>,
    /// A person keeps the run from the retentions.
    #[serde(default)]
    pub kept: bool,
    /// The run this one replays: the header links the two side by side.
    #[serde(default)]
    pub replay_of: Option<RunId>,
    /// What the task asks for (its questions, the files it asks to be
    /// written), in a person's words: listed with the plan, and checked
    /// before the answer is kept.
    #[serde(default)]
    pub asks: Vec<String>,
    /// The run waits for the model: this many calls go before its next
    /// one (`Some(0)`: it goes next).
    #[serde(default)]
    pub model_ahead: Option<usize>,
    /// While its plan awaits approval: the card a person reads before
    /// approving (the guarded tools its steps call, to grant with the
    /// approval).
    #[serde(default)]
    pub card: Option<ApprovalCard>,
    /// The tools granted for the run at approval (the revoked ones too).
    #[serde(default)]
    pub grants: Vec<run_model::Grant>,
    /// Approved and held: it starts on a click or at its time.
    #[serde(default)]
    pub hold: Option<run_model::Hold>,
    /// Once approved: the forecast the plan was approved with, shown
    /// beside what the run spent.
    #[serde(default)]
    pub forecast: Option<run_model::Forecast>,
    /// The run paused because its plan drifted from the approved version.
    #[serde(default)]
    pub drift: Option<run_model::Drift>,
}

/// What a person reads before approving a run's plan, drawn from one
/// version of it: the approval the card's form sends is bound to that
/// version and content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalCard {
    pub version: u64,
    /// The plan's content digest (SHA-256) at that version.
    pub digest: String,
    /// The tools that ask before each call, with the steps that call them.
    pub guarded: Vec<run_model::GuardedTool>,
    /// What is wrong with the plan, each a sentence.
    #[serde(default)]
    pub checks: Vec<run_model::PlanCheck>,
    /// What it will likely cost, and whether it fits the budget.
    #[serde(default)]
    pub forecast: Option<run_model::Forecast>,
}

/// A guarded tool call as the run header shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingTool {
    pub call: String,
    pub subtask: u32,
    pub name: String,
    /// The arguments as pretty JSON (editable).
    pub arguments: String,
    /// What the call would do, for reading: the code, the command, the URL.
    pub shown: Option<String>,
    /// The call's SHA-256 (its tool and canonical arguments), sent back
    /// with the decision so it is bound to what was shown.
    #[serde(default)]
    pub digest: String,
    /// The MCP server asking a person this mid-call (not a call to run).
    #[serde(default)]
    pub asker: Option<String>,
}

/// Whether the agent can run, on which model, and with which tools.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentInfo {
    pub model: Option<String>,
    /// Every work tool a run can be given: name and description.
    pub tools: Vec<(String, String)>,
    /// Why `run_python` and `run_shell` are not offered, when they are not.
    pub code_runner_off: Option<String>,
    /// The model's state: answers, still building or starting, or died.
    pub model_status: run_model::ModelStatus,
    /// The folders a run may start from (`PLANBOARD_WORKSPACE_ROOTS`).
    pub workspace_roots: Vec<String>,
    /// The ACP agents a task can be given to instead (`GET /api/agents`),
    /// by name.
    #[serde(default)]
    pub acp_agents: Vec<String>,
    /// Model calls waiting in planboard's queue for the model now.
    #[serde(default)]
    pub model_waiting: usize,
}

/// Why a request was not done, in words for the person who made it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum BoardError {
    /// The engine refused (a cycle, an illegal move, a full plan…).
    #[error("{0}")]
    Refused(String),
    /// The plan changed since the person last saw it.
    #[error("{message}")]
    Stale {
        message: String,
        current_version: u64,
    },
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Unavailable(String),
    /// Refused or failed as the server's one mapping of errors (the API's)
    /// decided: its HTTP status, its machine code and its sentence, the
    /// same as the API answers for the same error.
    #[error("{message}")]
    Server {
        status: u16,
        code: String,
        message: String,
    },
    /// The call never completed: the network, or the server function layer
    /// itself (what `ServerFnError` would have carried). Nothing was done.
    #[error("the server did not answer ({0}); nothing was changed")]
    Unreachable(String),
}

/// Server functions return `Result<T, BoardError>`, so a page matches one
/// error type whether the engine refused or the call never arrived.
impl FromServerFnError for BoardError {
    type Encoder = leptos::server_fn::codec::JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        BoardError::Unreachable(value.to_string())
    }
}

/// The server side of the board; the server crate implements it over its
/// plan service and provides it as `Arc<dyn BoardBackend>` context.
#[cfg(feature = "ssr")]
#[async_trait::async_trait]
pub trait BoardBackend: Send + Sync {
    async fn list(&self, filter: &ListFilter) -> Result<PlanList, BoardError>;
    async fn history(&self, filter: &ListFilter) -> Result<HistoryList, BoardError>;
    async fn log(&self, id: PlanId) -> Result<Vec<LogEntry>, BoardError>;
    /// The plan as it stands now (the DAG drawing reads it).
    async fn plan(&self, id: PlanId) -> Result<plan_engine::Plan, BoardError>;
    async fn command(&self, id: PlanId, command: Command, actor: &str) -> Result<u64, BoardError>;
    async fn create(&self, spec: NewPlan, actor: &str) -> Result<PlanId, BoardError>;
    /// Which model the agent runs on (read while rendering, no call).
    fn agent(&self) -> AgentInfo;
    async fn run_of(&self, plan: PlanId) -> Result<Option<RunPanel>, BoardError>;
    /// What the plan's run did, oldest first; only about `subtask` if given.
    /// The lines in `lang`.
    async fn activity(
        &self,
        plan: PlanId,
        subtask: Option<u32>,
        lang: plan_engine::Lang,
    ) -> Result<ActivityLog, BoardError>;
    /// The agent's memories matching `query` (all, newest first, when it
    /// is empty), page `page` of [`MEMORIES_PER_PAGE`].
    async fn memories(&self, query: &str, page: u32) -> Result<MemoryList, BoardError>;
    /// The saved templates, newest first (at most 200).
    async fn templates(&self) -> Result<Vec<run_model::Template>, BoardError>;
    /// Everything waiting for a person, approvals first, oldest first.
    async fn needs(&self) -> Result<Vec<run_model::Need>, BoardError>;
    /// A plan's reviews and subtasks (the caller fills in who is looking).
    async fn review_panel(&self, plan: PlanId) -> Result<ReviewPanel, BoardError>;
    /// Finished plans nobody reviewed that `filter` admits (its mode, who
    /// made them, its page), the latest finished first.
    async fn review_queue(&self, filter: &ListFilter) -> Result<ReviewQueueList, BoardError>;
    /// The webhooks (the caller checked the viewer is an admin).
    async fn webhook_settings(&self) -> Result<WebhookSettings, BoardError>;
    /// What planboard stores and how much, with the retentions in effect.
    async fn storage(&self) -> Result<run_model::StorageReport, BoardError>;
    /// Keeps the finished run on `plan` from the retentions, or lets it go.
    async fn keep_run(&self, plan: PlanId, kept: bool) -> Result<(), BoardError>;
    /// The built-in tools and the MCP servers with their state.
    async fn tools_overview(
        &self,
    ) -> Result<(Vec<(String, String)>, Vec<run_model::ToolServerView>), BoardError>;
    /// The Cases page: each model's latest score and what changed, the
    /// score over time, the suite runs going on, the findings, the cases.
    async fn cases_overview(&self) -> Result<run_model::CasesOverview, BoardError>;
    /// A suite run's report.
    async fn suite_report(
        &self,
        id: run_model::SuiteRunId,
    ) -> Result<run_model::SuiteReport, BoardError>;
    /// Two runs side by side (the compare page).
    async fn compare_runs(
        &self,
        a: RunId,
        b: RunId,
    ) -> Result<run_model::RunComparison, BoardError>;
    /// The ACP agents a task can be given to, with their last check.
    async fn acp_agents(&self) -> Result<Vec<run_model::AcpAgentView>, BoardError> {
        Ok(Vec::new())
    }
    /// Approval fatigue over the last `days` days (the caller checked the
    /// viewer may see it).
    async fn insights(&self, days: u32) -> Result<InsightsPage, BoardError>;
    /// The approval records `filter` admits, newest first (at most
    /// [`APPROVALS_SHOWN`]).
    async fn approvals(
        &self,
        filter: &ApprovalsFilter,
    ) -> Result<Vec<run_model::ApprovalRecord>, BoardError>;
    /// The newest `limit` lines of [`BoardBackend::activity`], read from
    /// the end of the log, oldest first.
    async fn activity_tail(
        &self,
        plan: PlanId,
        subtask: Option<u32>,
        limit: usize,
        lang: plan_engine::Lang,
    ) -> Result<ActivityTail, BoardError>;
}

#[cfg(feature = "ssr")]
impl BoardError {
    /// The one status of each kind, for server functions and the plain
    /// forms alike; [`BoardError::Server`] carries the API's status.
    pub fn status(&self) -> axum::http::StatusCode {
        use axum::http::StatusCode;
        match self {
            BoardError::Refused(_) => StatusCode::UNPROCESSABLE_ENTITY,
            BoardError::Stale { .. } => StatusCode::CONFLICT,
            BoardError::NotFound(_) => StatusCode::NOT_FOUND,
            BoardError::Forbidden(_) => StatusCode::FORBIDDEN,
            BoardError::Server { status, .. } => {
                StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
            BoardError::Unavailable(_) | BoardError::Unreachable(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }
}

/// Gives a refusal its HTTP status (a server function error is otherwise
/// a 500), so logs, metrics and proxies see a 4xx for a person's mistake.
#[cfg(feature = "ssr")]
pub(crate) fn answered<T>(result: Result<T, BoardError>) -> Result<T, BoardError> {
    if let (Err(e), Some(options)) = (&result, use_context::<leptos_axum::ResponseOptions>()) {
        options.set_status(e.status());
    }
    result
}

/// The agent's model, for pages rendered on the server.
#[cfg(feature = "ssr")]
pub fn agent_info() -> AgentInfo {
    use_context::<std::sync::Arc<dyn BoardBackend>>().map_or(AgentInfo::default(), |b| b.agent())
}

#[cfg(feature = "ssr")]
pub(crate) fn backend() -> Result<std::sync::Arc<dyn BoardBackend>, BoardError> {
    use_context::<std::sync::Arc<dyn BoardBackend>>()
        .ok_or_else(|| BoardError::Unavailable("the board backend is not configured".into()))
}

/// The viewer the server's access layer put on this request.
#[cfg(feature = "ssr")]
pub(crate) async fn viewer() -> Result<Viewer, BoardError> {
    let axum::Extension(viewer) = leptos_axum::extract::<axum::Extension<Viewer>>()
        .await
        .map_err(|_| BoardError::Forbidden("sign in first".into()))?;
    Ok(viewer)
}

#[cfg(feature = "ssr")]
async fn editor() -> Result<Viewer, BoardError> {
    let viewer = viewer().await?;
    viewer.may_change(("plans", "计划"), crate::i18n::detect())?;
    Ok(viewer)
}

#[server(prefix = "/_board", input = Json)]
pub async fn whoami() -> Result<Viewer, BoardError> {
    answered(viewer().await)
}

/// History (rendered on the server only, so its rows never reach the wasm).
#[server(prefix = "/_board", input = Json)]
pub async fn list_history(filter: ListFilter) -> Result<HistoryList, BoardError> {
    answered(
        async {
            viewer().await?;
            backend()?.history(&filter).await
        }
        .await,
    )
}

/// The "Needs you" page (rendered on the server only).
#[server(prefix = "/_board", input = Json)]
pub async fn load_needs() -> Result<Vec<run_model::Need>, BoardError> {
    answered(
        async {
            viewer().await?;
            backend()?.needs().await
        }
        .await,
    )
}

/// The settings page (admins only; rendered on the server only).
#[server(prefix = "/_board", input = Json)]
pub async fn load_webhook_settings() -> Result<WebhookSettings, BoardError> {
    answered(
        async {
            let viewer = viewer().await?;
            if !viewer.is_admin {
                return Err(BoardError::Forbidden(crate::i18n::detect().pick(
                    format!(
                        "{} is not an admin: only admins manage webhooks",
                        viewer.name
                    ),
                    format!("{} 不是管理员：只有管理员可以管理 Webhook", viewer.name),
                )));
            }
            backend()?.webhook_settings().await
        }
        .await,
    )
}

/// Keeps the finished run on `plan` (its files and log) from the
/// retentions, or lets it go (the run header's Keep button).
#[server(prefix = "/_board", input = Json)]
pub async fn keep_run(plan: PlanId, kept: bool) -> Result<(), BoardError> {
    answered(
        async {
            editor().await?;
            backend()?.keep_run(plan, kept).await
        }
        .await,
    )
}

/// The settings page's storage view: what planboard stores and how much.
#[server(prefix = "/_board", input = Json)]
pub async fn load_storage() -> Result<run_model::StorageReport, BoardError> {
    answered(async { backend()?.storage().await }.await)
}

/// The Tools page: anyone may look; only admins get the forms and a
/// command's arguments (one may hold a password; others see their count).
#[server(prefix = "/_board", input = Json)]
pub async fn load_tools() -> Result<ToolsOverview, BoardError> {
    answered(
        async {
            let viewer = viewer().await?;
            let backend = backend()?;
            let (builtin, mut servers) = backend.tools_overview().await?;
            let mut agents = backend.acp_agents().await?;
            if !viewer.is_admin {
                servers = servers
                    .into_iter()
                    .map(run_model::ToolServerView::without_args)
                    .collect();
                agents = agents
                    .into_iter()
                    .map(run_model::AcpAgentView::without_args)
                    .collect();
            }
            Ok(ToolsOverview {
                builtin,
                servers,
                agents,
                can_manage: viewer.is_admin,
            })
        }
        .await,
    )
}

/// How many things wait for a person: the top bar's count. Not through
/// [`answered`]: the count is a decoration of every page, and a page
/// without it (a 404 has no backend) keeps its own status.
#[server(prefix = "/_board", input = Json)]
pub async fn needs_count() -> Result<usize, BoardError> {
    viewer().await?;
    Ok(backend()?.needs().await?.len())
}

/// The reviews on a plan's board (rendered on the server only).
#[server(prefix = "/_board", input = Json)]
pub async fn load_reviews(plan: PlanId) -> Result<ReviewPanel, BoardError> {
    answered(
        async {
            let viewer = viewer().await?;
            let mut panel = backend()?.review_panel(plan).await?;
            panel.me = viewer.name;
            panel.can_review = viewer.can_edit;
            Ok(panel)
        }
        .await,
    )
}

/// Two versions of a plan (rendered on the server only): `from` defaults
/// to the version a person approved (else the first), `to` to the latest.
#[server(prefix = "/_board", input = Json)]
pub async fn load_compare(
    plan: PlanId,
    from: Option<u64>,
    to: Option<u64>,
) -> Result<CompareView, BoardError> {
    answered(
        async {
            viewer().await?;
            let log = backend()?.log(plan).await?;
            let lang = crate::i18n::detect();
            compare_log(&log, from, to, lang)
        }
        .await,
    )
}

/// [`load_compare`]'s work on a plan's log.
#[cfg(feature = "ssr")]
pub fn compare_log(
    log: &[LogEntry],
    from: Option<u64>,
    to: Option<u64>,
    lang: crate::i18n::Lang,
) -> Result<CompareView, BoardError> {
    use plan_engine::compare::{at_version, compare};
    let events: Vec<Event> = log.iter().filter_map(|e| e.event.clone()).collect();
    let latest = events.last().map_or(0, |e| e.version);
    let approved = events.iter().rev().find_map(|e| match &e.kind {
        plan_engine::EventKind::ApprovalDecided {
            status: ApprovalStatus::Approved,
            ..
        } => Some(e.version),
        _ => None,
    });
    let to = to.unwrap_or(latest).min(latest);
    let from = from
        .unwrap_or_else(|| approved.filter(|v| *v < to).unwrap_or(1))
        .clamp(1, to.max(1));
    let unreadable = || {
        BoardError::Refused(lang.pick(
            format!(
                "the plan's log has no version {from} or {to} to compare (versions 1 to {latest})"
            ),
            format!("计划日志中没有可比较的第 {from} 版或第 {to} 版（共 1 到 {latest} 版）"),
        ))
    };
    let before = at_version(&events, from).ok_or_else(unreadable)?;
    let after = at_version(&events, to).ok_or_else(unreadable)?;
    let c = compare(&before, &after, &events, lang);
    let fields = |f: Vec<plan_engine::compare::FieldChange>| {
        f.into_iter()
            .map(|f| (f.field.to_string(), f.before, f.after))
            .collect::<Vec<_>>()
    };
    let more_steps = c.steps.len().saturating_sub(COMPARE_STEPS);
    Ok(CompareView {
        title: after.title().to_string(),
        from,
        to,
        latest,
        plan: fields(c.plan),
        added: c.added.into_iter().map(|(id, n)| (id.0, n)).collect(),
        removed: c.removed.into_iter().map(|(id, n)| (id.0, n)).collect(),
        changed: c
            .changed
            .into_iter()
            .map(|s| (s.id.0, s.name, fields(s.fields)))
            .collect(),
        steps: c
            .steps
            .into_iter()
            .take(COMPARE_STEPS)
            .map(|s| (s.version, s.actor, s.at, s.what))
            .collect(),
        more_steps,
    })
}

/// Two runs side by side (rendered on the server only): their graphs,
/// scores, first divergence, answers and totals.
#[server(prefix = "/_board", input = Json)]
pub async fn load_run_comparison(
    a: RunId,
    b: RunId,
) -> Result<run_model::RunComparison, BoardError> {
    answered(
        async {
            viewer().await?;
            backend()?.compare_runs(a, b).await
        }
        .await,
    )
}

/// The Cases page (rendered on the server only), with whether the viewer
/// may change cases.
#[server(prefix = "/_board", input = Json)]
pub async fn load_cases() -> Result<(run_model::CasesOverview, bool), BoardError> {
    answered(
        async {
            let viewer = viewer().await?;
            Ok((backend()?.cases_overview().await?, viewer.can_edit))
        }
        .await,
    )
}

/// A suite run's report page (rendered on the server only), with whether
/// the viewer may cancel it.
#[server(prefix = "/_board", input = Json)]
pub async fn load_suite_report(
    id: run_model::SuiteRunId,
) -> Result<(run_model::SuiteReport, bool), BoardError> {
    answered(
        async {
            let viewer = viewer().await?;
            Ok((backend()?.suite_report(id).await?, viewer.can_edit))
        }
        .await,
    )
}

/// The review queue page (rendered on the server only).
#[server(prefix = "/_board", input = Json)]
pub async fn load_review_queue(filter: ListFilter) -> Result<ReviewQueueList, BoardError> {
    answered(
        async {
            viewer().await?;
            backend()?.review_queue(&filter).await
        }
        .await,
    )
}

/// How many finished plans wait for a review: the top bar's count (not
/// through [`answered`], like [`needs_count`]).
#[server(prefix = "/_board", input = Json)]
pub async fn review_count() -> Result<usize, BoardError> {
    viewer().await?;
    Ok(backend()?.review_queue(&ListFilter::default()).await?.total)
}

/// The Templates page and the task box's choice (rendered on the server only).
#[server(prefix = "/_board", input = Json)]
pub async fn list_templates() -> Result<Vec<run_model::Template>, BoardError> {
    answered(
        async {
            viewer().await?;
            backend()?.templates().await
        }
        .await,
    )
}

/// The Memory page (rendered on the server only).
#[server(prefix = "/_board", input = Json)]
pub async fn list_memories(query: String, page: u32) -> Result<MemoryList, BoardError> {
    answered(
        async {
            viewer().await?;
            backend()?.memories(&query, page).await
        }
        .await,
    )
}

#[server(prefix = "/_board", input = Json)]
pub async fn load_board(id: PlanId) -> Result<BoardData, BoardError> {
    answered(
        async {
            let viewer = viewer().await?;
            let log = backend()?.log(id).await?;
            Ok(BoardData::from_log(&log, viewer))
        }
        .await,
    )
}

/// Runs one engine command on a plan as the signed-in person; returns the
/// plan's version after it.
#[server(prefix = "/_board", input = Json)]
pub async fn run_command(id: PlanId, command: Command) -> Result<u64, BoardError> {
    answered(
        async {
            let who = editor().await?;
            backend()?.command(id, command, &who.name).await
        }
        .await,
    )
}

#[server(prefix = "/_board", input = Json)]
pub async fn create_plan(spec: NewPlan) -> Result<PlanId, BoardError> {
    answered(
        async {
            let who = editor().await?;
            backend()?.create(spec, &who.name).await
        }
        .await,
    )
}

/// The approvals insights page (operators and admins; rendered on the
/// server only).
#[server(prefix = "/_board", input = Json)]
pub async fn load_insights(days: u32) -> Result<InsightsPage, BoardError> {
    answered(
        async {
            let viewer = viewer().await?;
            viewer.may_change(("approval insights", "批准分析"), crate::i18n::detect())?;
            let mut page = backend()?.insights(days).await?;
            page.can_apply = viewer.can_edit;
            Ok(page)
        }
        .await,
    )
}

/// The approvals page (rendered on the server only).
#[server(prefix = "/_board", input = Json)]
pub async fn load_approvals(
    filter: ApprovalsFilter,
) -> Result<Vec<run_model::ApprovalRecord>, BoardError> {
    answered(
        async {
            viewer().await?;
            backend()?.approvals(&filter).await
        }
        .await,
    )
}

#[server(prefix = "/_board", input = Json)]
pub async fn load_activity(plan: PlanId, subtask: Option<u32>) -> Result<ActivityLog, BoardError> {
    answered(
        async {
            viewer().await?;
            backend()?
                .activity(plan, subtask, crate::i18n::detect())
                .await
        }
        .await,
    )
}

#[cfg(test)]
mod tests {
    use super::ListFilter;
    use plan_engine::{Mode, StateFilter};

    #[test]
    fn the_board_starts_from_the_folded_plan_with_the_logs_count_end_and_last_rejection() {
        use plan_engine::{NewPlan, NewSubtask, Op, Plan};
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let spec = NewPlan {
            title: "T".into(),
            approval_required: true,
            subtasks: vec![NewSubtask::named("a")],
            ..NewPlan::default()
        };
        let (mut plan, mut events) = Plan::create(&spec, "ana", at).unwrap();
        let viewer = super::Viewer {
            name: "bo".into(),
            can_edit: true,
            signed_in: false,
            is_admin: false,
        };
        let entries = |events: &[plan_engine::Event]| -> Vec<super::LogEntry> {
            events
                .iter()
                .enumerate()
                .map(|(i, e)| super::LogEntry {
                    seq: 10 * (i as i64 + 1),
                    event: Some(e.clone()),
                })
                .collect()
        };
        let never = super::BoardData::from_log(&entries(&events), viewer.clone());
        assert_eq!(never.rejected, None, "nobody rejected it yet");
        let reject = Op::Reject {
            comment: "split it".into(),
        };
        events.extend(plan.execute(&reject.into(), "bo", at).unwrap());
        // The plan as the rejection left it: folded up to its decision.
        let decided = events
            .iter()
            .position(|e| matches!(e.kind, plan_engine::EventKind::ApprovalDecided { .. }))
            .unwrap();
        let rejected = Plan::replay(&events[..=decided]).unwrap();
        let add = Op::AddSubtask {
            subtask: NewSubtask::named("b"),
            position: Default::default(),
            rewire_after: None,
            required_by: Vec::new(),
        };
        events.extend(plan.execute(&add.into(), "ana", at).unwrap());
        let log = entries(&events);
        let data = super::BoardData::from_log(&log, viewer.clone());
        assert_eq!(data.plan.clone().and_then(|p| p.into_plan()), Some(plan));
        assert_eq!(
            (data.entries, data.last_seq),
            (log.len(), 10 * log.len() as i64)
        );
        assert_eq!(
            data.rejected.clone().and_then(|p| p.into_plan()),
            Some(rejected)
        );
        assert_eq!(data.viewer, viewer);
        // What crosses into the page reads back the same.
        let text = serde_json::to_string(&data).unwrap();
        assert_eq!(crate::codec::read::<super::BoardData>(&text).unwrap(), data);
        // A log that does not fold is no plan, not a panic.
        let broken = super::BoardData::from_log(&log[1..], viewer);
        assert_eq!(broken.plan, None);
    }

    #[test]
    fn a_list_address_reads_as_its_filter_and_garbage_is_left_out() {
        let f = ListFilter::from_address("show=active&mode=complex&q=ship+it%21&by=agent&page=3");
        assert_eq!(f.query.state, Some(StateFilter::Active));
        assert_eq!(f.query.mode, Some(Mode::Complex));
        assert_eq!(f.query.text, "ship it!");
        assert_eq!(f.agent, Some(true));
        assert_eq!(f.page, 2);
        let junk = ListFilter::from_address("?show=nope&by=robots&page=-1&&=&x");
        assert_eq!(junk, ListFilter::default());
        assert_eq!(ListFilter::from_address("by=manual").agent, Some(false));
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn compare_starts_at_the_approved_version_and_keeps_within_the_log() {
        use plan_engine::{NewPlan, NewSubtask, Op, Plan};
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let spec = NewPlan {
            title: "T".into(),
            approval_required: true,
            subtasks: vec![NewSubtask::named("a")],
            ..NewPlan::default()
        };
        let (mut plan, mut events) = Plan::create(&spec, "ana", at).unwrap();
        for op in [
            Op::Approve { comment: None },
            Op::AddSubtask {
                subtask: NewSubtask::named("b"),
                position: Default::default(),
                rewire_after: None,
                required_by: Vec::new(),
            },
        ] {
            events.extend(plan.execute(&op.into(), "bo", at).unwrap());
        }
        let log: Vec<super::LogEntry> = events
            .into_iter()
            .enumerate()
            .map(|(i, e)| super::LogEntry {
                seq: i as i64 + 1,
                event: Some(e),
            })
            .collect();
        let approved = log
            .iter()
            .filter_map(|e| e.event.as_ref())
            .find(|e| matches!(e.kind, plan_engine::EventKind::ApprovalDecided { .. }))
            .unwrap()
            .version;
        let c = super::compare_log(&log, None, None, plan_engine::Lang::En).unwrap();
        assert_eq!((c.from, c.to), (approved, plan.version()));
        assert_eq!(c.added, vec![(2, "b".to_string())]);
        assert!(c.steps.iter().all(|s| s.1 == "bo"));
        let all = super::compare_log(&log, Some(1), Some(99), plan_engine::Lang::En).unwrap();
        assert_eq!(
            all.to,
            plan.version(),
            "a version past the latest is the latest"
        );
    }

    #[test]
    fn a_review_filter_reads_back_from_its_name_and_admits_by_verdicts() {
        use super::ReviewFilter;
        use run_model::ReviewVerdict;
        for f in [ReviewFilter::Unreviewed]
            .into_iter()
            .chain(ReviewVerdict::ALL.map(ReviewFilter::Verdict))
        {
            assert_eq!(ReviewFilter::parse(f.name()), Some(f));
        }
        assert_eq!(ReviewFilter::parse("meh"), None);
        assert_eq!(
            ListFilter::from_address("verdict=needs_changes").review,
            Some(ReviewFilter::Verdict(ReviewVerdict::NeedsChanges))
        );
        let both = [ReviewVerdict::Good, ReviewVerdict::Wrong];
        assert!(ReviewFilter::Verdict(ReviewVerdict::Wrong).admits(&both));
        assert!(!ReviewFilter::Verdict(ReviewVerdict::NeedsChanges).admits(&both));
        assert!(!ReviewFilter::Unreviewed.admits(&both));
        assert!(ReviewFilter::Unreviewed.admits(&[]));
    }
}
