//! One run given to an ACP agent, from its start to its end: planboard
//! starts the agent as its client in the run's workspace, opens a
//! session, sends the task, and follows the turn:
//!
//! - the agent's `plan` updates become the run's plan ([`super::plan`]),
//!   one change each;
//! - its messages and thoughts stream to the board as reply pieces and
//!   land on the run log whole ([`RunEntry::AgentMessage`]); its tool calls
//!   are [`RunEntry::ToolStarted`] and [`RunEntry::ToolCall`];
//! - its permission requests are guarded calls
//!   ([`RunEntry::ToolApproval`], the executor's flow): a person approves
//!   (the agent's first "allow" option), edits (`{"option": id}` picks any
//!   option it offered) or denies (its first "reject" option) on the
//!   board, and the choice goes back as the answer;
//! - people's moves reach it as [`super::people`] says.
//!
//! The run ends when a turn ends with nobody's words waiting: `end_turn`
//! is done (the last message is the answer, entries still open are
//! skipped), `max_tokens`, `max_turn_requests` and `refusal` are failed;
//! an agent that stops or breaks the protocol fails the run with its last
//! words. A finished run is remembered like planboard's own (its summary
//! and people's words, as records).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_client_protocol_schema::v1 as acp;
use agent_client_protocol_schema::ProtocolVersion;
use futures_util::future::BoxFuture;
use plan_engine::{Mode, NewPlan, Op, Plan, PlanState, SubtaskId, SubtaskState};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use super::people::{self, Moves};
use super::plan::{self as agent_plan, Entry};
use super::transport::{AcpCommand, AcpError, Connection, Incoming};
use crate::host::{Host, HostError, ToolVerdict};
use crate::run::{CallRole, ReplyDelta, RunConfig, RunEntry, RunId, RunRecord, RunState, Verdict};
use run_model::memory::{MemoryKind, NewMemory, MEMORY_TEXT};

/// How long the agent may take to answer `initialize` and `session/new`
/// (an `npx` agent may download itself first).
pub const HANDSHAKE_SECS: u64 = 120;
/// How long a cancelled turn may take to end before the agent is stopped.
pub const CANCEL_GRACE: Duration = Duration::from_secs(15);
/// The longest message kept whole on the run log, in characters.
pub const MESSAGE_CHARS: usize = 32_000;
/// The longest tool result kept on the run log, in characters.
pub const RESULT_CHARS: usize = 4_000;

/// The name an ACP agent's changes carry on the plan.
pub fn actor_of(name: &str) -> String {
    plan_engine::text::fit(&format!("acp · {name}"), plan_engine::model::limits::ACTOR)
}

/// A new run for the ACP agent `config.agent`: its plan (empty: the
/// agent's first plan update fills it; no approval, the agent does not
/// wait for one) and its row, stored, at `running`. [`drive`] runs it.
pub async fn start(
    host: &dyn Host,
    id: RunId,
    config: RunConfig,
    who: &str,
    trace: Option<run_model::TraceParent>,
) -> Result<RunRecord, HostError> {
    let name = config.agent.clone().unwrap_or_default();
    let title = config.task.lines().next().unwrap_or_default().trim();
    let spec = NewPlan {
        title: plan_engine::text::fit(title, 80),
        goal: plan_engine::text::fit(&config.task, plan_engine::model::limits::TEXT),
        mode: Mode::Manual,
        approval_required: false,
        draft: false,
        ..NewPlan::default()
    };
    let plan = host.create_plan(spec, &actor_of(&name)).await?;
    let mut run = RunRecord::new(id, config);
    run.plan_id = Some(plan.id());
    run.started_by = who.to_string();
    run.trace_parent = trace;
    run.state = RunState::Running;
    host.save_run(&run).await?;
    host.log(
        run.id,
        RunEntry::StateChanged {
            from: None,
            to: RunState::Running,
            reason: format!("started by {who}; the ACP agent {name} does the task"),
        },
    )
    .await?;
    Ok(run)
}

/// How a turn ended.
enum TurnEnd {
    /// The agent's own stop reason.
    Stopped(acp::StopReason),
    /// The agent stopped, or broke the protocol.
    Broken(AcpError),
}

/// What waits to be said to the agent when its turn ends.
#[derive(Default)]
struct Waiting {
    said: Vec<String>,
    edits: Vec<String>,
    /// A person paused the plan: the turn was cancelled for it.
    pause: bool,
    /// A person abandoned the plan: the turn was cancelled for good.
    cancel: bool,
}

/// A tool call of the agent's, from its start to its end.
struct ToolRun {
    name: String,
    arguments: Value,
    subtask: SubtaskId,
    started: Instant,
}

/// A permission request waiting for a person.
struct Asked {
    request: acp::RequestId,
    options: Vec<acp::PermissionOption>,
    title: String,
    waiter: tokio::task::JoinHandle<()>,
}

struct Session {
    host: Arc<dyn Host>,
    conn: Arc<Connection>,
    run: RunRecord,
    plan: plan_engine::PlanId,
    name: String,
    actor: String,
    session: acp::SessionId,
    /// The subtasks of the agent's last plan update, in its order.
    known: Vec<SubtaskId>,
    /// The plan as last seen (after the agent's own change, or a look).
    seen: Plan,
    last_comment: u32,
    /// A message or a thought being written: (thought, text).
    writing: Option<(bool, String)>,
    /// The agent's last whole message: the answer when the run ends.
    last_message: String,
    /// Turns so far (the reply pieces' `attempt`).
    turns: u32,
    tools: HashMap<String, ToolRun>,
    asked: HashMap<String, Asked>,
    decisions: mpsc::UnboundedSender<(String, Result<ToolVerdict, HostError>)>,
    waiting: Waiting,
    /// When the run last started counting wall time.
    clock: Instant,
    /// Plan updates so far (the first is "proposed").
    updates: u32,
    /// A person's move asks for the turn to be cancelled (heard while
    /// handling something else).
    cancel_due: bool,
}

/// Drives `run` with the ACP agent `agent` in `workspace` until it ends;
/// the finished record.
pub async fn drive(
    host: Arc<dyn Host>,
    agent: AcpCommand,
    workspace: PathBuf,
    mut run: RunRecord,
) -> RunRecord {
    let name = run.config.agent.clone().unwrap_or_default();
    // A permission asked before a restart waits on a process that is gone.
    if let Ok(open) = host.open_tool_calls(run.id).await {
        for call in open {
            let _ = host
                .log(
                    run.id,
                    RunEntry::ToolDecision {
                        call,
                        verdict: Verdict::Expired,
                        by: "planboard".into(),
                        reason: Some("the run restarted before anyone decided".into()),
                        arguments: None,
                    },
                )
                .await;
        }
    }
    let Some(plan_id) = run.plan_id else {
        fail(&*host, &mut run, "the run has no plan".into()).await;
        return run;
    };
    let plan = match host.plan(plan_id).await {
        Ok(plan) => plan,
        Err(e) => {
            fail(&*host, &mut run, e.to_string()).await;
            return run;
        }
    };
    if plan.state() == PlanState::Abandoned {
        end(
            &*host,
            &mut run,
            RunState::Cancelled,
            "the plan was abandoned".into(),
        )
        .await;
        return run;
    }
    let workspace = std::fs::canonicalize(&workspace).unwrap_or(workspace);
    let (conn, incoming) = match Connection::spawn(&agent, &workspace) {
        Ok(started) => started,
        Err(e) => {
            fail_with_plan(&*host, &mut run, &name, e.to_string()).await;
            return run;
        }
    };
    drive_over(host, conn, incoming, workspace, plan, run).await
}

/// [`drive`] over a connection already open (an agent in a pipe, for the
/// benchmark; a spawned program otherwise), with the run's plan as read.
pub async fn drive_connected(
    host: Arc<dyn Host>,
    conn: Arc<Connection>,
    incoming: mpsc::UnboundedReceiver<Incoming>,
    workspace: PathBuf,
    run: RunRecord,
) -> RunRecord {
    let mut run = run;
    let plan = match run.plan_id {
        Some(id) => host.plan(id).await,
        None => Err(HostError::Unavailable("the run has no plan".into())),
    };
    match plan {
        Ok(plan) => drive_over(host, conn, incoming, workspace, plan, run).await,
        Err(e) => {
            fail(&*host, &mut run, e.to_string()).await;
            run
        }
    }
}

async fn drive_over(
    host: Arc<dyn Host>,
    conn: Arc<Connection>,
    mut incoming: mpsc::UnboundedReceiver<Incoming>,
    workspace: PathBuf,
    plan: Plan,
    mut run: RunRecord,
) -> RunRecord {
    let name = run.config.agent.clone().unwrap_or_default();
    let Some(plan_id) = run.plan_id else {
        fail(&*host, &mut run, "the run has no plan".into()).await;
        return run;
    };
    let session = match handshake(&conn, &workspace).await {
        Ok(session) => session,
        Err(e) => {
            fail_with_plan(&*host, &mut run, &name, e.to_string()).await;
            conn.kill().await;
            return run;
        }
    };
    let (decisions, mut decided) = mpsc::unbounded_channel();
    let restarted = plan.version() > 1;
    let mut s = Session {
        host: host.clone(),
        conn: conn.clone(),
        known: plan.subtasks().iter().map(|s| s.id()).collect(),
        last_comment: plan.next_comment_id().saturating_sub(1),
        seen: plan,
        plan: plan_id,
        actor: actor_of(&name),
        name,
        session,
        run,
        writing: None,
        last_message: String::new(),
        turns: 0,
        tools: HashMap::new(),
        asked: HashMap::new(),
        decisions,
        waiting: Waiting::default(),
        clock: Instant::now(),
        updates: 0,
        cancel_due: false,
    };
    let mut changes = watch_plan(host.clone(), plan_id, s.seen.version());
    let files: Vec<String> = s.run.config.inputs.iter().map(|f| f.path.clone()).collect();
    let mut prompt = Some(if restarted {
        people::restart_prompt(&s.run.config.task, &s.seen)
    } else {
        people::task_prompt(&s.run.config.task, &files)
    });
    if s.run.state == RunState::Paused || s.seen.state() == PlanState::Paused {
        prompt = None;
    }
    loop {
        let Some(text) = prompt.take() else {
            // Paused: wait for a person to resume or cancel.
            s.move_to(RunState::Paused, "paused by a person").await;
            match s.wait_while_paused(&mut changes).await {
                Some(text) => {
                    s.move_to(RunState::Running, "resumed by a person").await;
                    // An agent started after a restart has heard nothing
                    // yet: it gets the task and the plan.
                    prompt = Some(if s.turns == 0 {
                        people::restart_prompt(&s.run.config.task, &s.seen)
                    } else {
                        text
                    });
                    continue;
                }
                None => {
                    s.finish_cancelled().await;
                    break;
                }
            }
        };
        let end = s
            .turn(text, &mut incoming, &mut decided, &mut changes)
            .await;
        s.flush().await;
        s.expire_asked("the agent's turn ended before anyone decided")
            .await;
        // A turn cancelled for a person ends as they asked, even when the
        // agent did not end it in time (it is stopped, or prompted anew).
        let cancelled_for_edits =
            !s.waiting.edits.is_empty() && matches!(end, TurnEnd::Broken(AcpError::Timeout { .. }));
        let end = if cancelled_for_edits {
            TurnEnd::Stopped(acp::StopReason::Cancelled)
        } else {
            end
        };
        match end {
            _ if s.waiting.cancel => {
                s.finish_cancelled().await;
                break;
            }
            _ if s.waiting.pause => {
                s.waiting.pause = false;
                prompt = None;
            }
            TurnEnd::Broken(e) => {
                let e = match e {
                    // Its last words may come a moment after its output closed.
                    AcpError::Gone { .. } => {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        AcpError::Gone {
                            stderr: conn.stderr(),
                        }
                    }
                    e => e,
                };
                let why = format!("the ACP agent {} stopped: {e}", s.name);
                s.finish(PlanState::Failed, RunState::Failed, why).await;
                break;
            }
            TurnEnd::Stopped(reason) => {
                let edits = std::mem::take(&mut s.waiting.edits);
                let said = std::mem::take(&mut s.waiting.said);
                if !edits.is_empty() {
                    s.refresh().await;
                    prompt = Some(people::edited_prompt(&s.seen, &edits, &said));
                    continue;
                }
                if !said.is_empty() {
                    prompt = Some(people::said_prompt(&said));
                    continue;
                }
                s.ended(reason).await;
                break;
            }
        }
    }
    conn.kill().await;
    s.remember().await;
    s.run
}

/// `initialize` and `session/new`: the session to prompt.
async fn handshake(
    conn: &Connection,
    workspace: &std::path::Path,
) -> Result<acp::SessionId, AcpError> {
    // planboard offers no file system or terminal of its own: the agent
    // works in its working directory, the run's workspace, with its own
    // tools, and asks permission for what its policy says.
    let init = acp::InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(acp::ClientCapabilities::new())
        .client_info(acp::Implementation::new(
            "planboard",
            env!("CARGO_PKG_VERSION"),
        ));
    let answer: acp::InitializeResponse = conn
        .request_within(acp::AGENT_METHOD_NAMES.initialize, &init, HANDSHAKE_SECS)
        .await?;
    if answer.protocol_version != ProtocolVersion::V1 {
        return Err(AcpError::BadAnswer {
            method: "initialize".into(),
            error: format!(
                "the agent speaks ACP version {}; planboard speaks version 1",
                answer.protocol_version
            ),
        });
    }
    let new = acp::NewSessionRequest::new(workspace.to_path_buf());
    let session: acp::NewSessionResponse = conn
        .request_within(acp::AGENT_METHOD_NAMES.session_new, &new, HANDSHAKE_SECS)
        .await?;
    Ok(session.session_id)
}

/// Checks an agent: starts it in `dir`, asks `initialize`, stops it. Its
/// name and version when it answered (the Tools page's test).
pub async fn check(agent: &AcpCommand, dir: &std::path::Path) -> Result<String, AcpError> {
    let (conn, _incoming) = Connection::spawn(agent, dir)?;
    let init = acp::InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(acp::ClientCapabilities::new())
        .client_info(acp::Implementation::new(
            "planboard",
            env!("CARGO_PKG_VERSION"),
        ));
    let answer: Result<acp::InitializeResponse, AcpError> = conn
        .request_within(acp::AGENT_METHOD_NAMES.initialize, &init, HANDSHAKE_SECS)
        .await;
    conn.kill().await;
    let answer = answer?;
    Ok(match answer.agent_info {
        Some(info) => format!(
            "{} {} (ACP {})",
            info.name, info.version, answer.protocol_version
        ),
        None => format!("an ACP {} agent", answer.protocol_version),
    })
}

/// The plan as it changes, newest only: a task that waits on the host
/// (a subscription, not a poll) and keeps the latest.
fn watch_plan(
    host: Arc<dyn Host>,
    plan: plan_engine::PlanId,
    from: u64,
) -> watch::Receiver<Option<Plan>> {
    let (tx, rx) = watch::channel(None);
    tokio::spawn(async move {
        let mut version = from;
        loop {
            tokio::select! {
                _ = tx.closed() => return,
                changed = host.changed(plan, version) => match changed {
                    Ok(plan) => {
                        version = plan.version();
                        let finished = plan.state().is_finished();
                        if tx.send(Some(plan)).is_err() || finished {
                            return;
                        }
                    }
                    Err(HostError::NotFound(_)) => return,
                    Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
                },
            }
        }
    });
    rx
}

/// The text of a piece of content; what is not text is named.
fn text_of(content: &acp::ContentBlock) -> String {
    match content {
        acp::ContentBlock::Text(t) => t.text.clone(),
        acp::ContentBlock::Image(_) => "[an image]".into(),
        acp::ContentBlock::Audio(_) => "[audio]".into(),
        acp::ContentBlock::ResourceLink(_) => "[a link to a resource]".into(),
        acp::ContentBlock::Resource(_) => "[a resource]".into(),
        _ => String::new(),
    }
}

/// What a tool call's content and raw output say, cut for the log.
fn result_of(content: &[acp::ToolCallContent], raw: Option<&Value>) -> String {
    let mut parts: Vec<String> = content
        .iter()
        .map(|c| match c {
            acp::ToolCallContent::Content(c) => text_of(&c.content),
            acp::ToolCallContent::Diff(d) => format!("edited {}", d.path.display()),
            acp::ToolCallContent::Terminal(_) => "[a terminal]".into(),
            _ => String::new(),
        })
        .filter(|p| !p.is_empty())
        .collect();
    if let Some(raw) = raw.filter(|r| !r.is_null()) {
        parts.push(raw.to_string());
    }
    plan_engine::text::fit(&parts.join("\n"), RESULT_CHARS)
}

/// The option a person's decision picks among those the agent offered:
/// approved, its first "allow once" (else any "allow"); edited with
/// `{"option": id}`, that option; denied, its first "reject once" (else
/// any "reject"); `None`: the request is answered as cancelled.
pub fn chosen(
    options: &[acp::PermissionOption],
    verdict: &ToolVerdict,
) -> Option<acp::PermissionOptionId> {
    use acp::PermissionOptionKind as K;
    let first = |kinds: &[K]| {
        kinds.iter().find_map(|kind| {
            options
                .iter()
                .find(|o| o.kind == *kind)
                .map(|o| o.option_id.clone())
        })
    };
    match verdict.verdict {
        Verdict::Approved => first(&[K::AllowOnce, K::AllowAlways]),
        Verdict::Edited => {
            let named = verdict
                .arguments
                .as_ref()
                .and_then(|a| a.get("option"))
                .and_then(Value::as_str);
            match named {
                Some(id) => options
                    .iter()
                    .find(|o| &*o.option_id.0 == id)
                    .map(|o| o.option_id.clone()),
                None => first(&[K::AllowOnce, K::AllowAlways]),
            }
        }
        Verdict::Denied => first(&[K::RejectOnce, K::RejectAlways]),
        _ => None,
    }
}

/// A permission option as the board shows it.
fn option_json(option: &acp::PermissionOption) -> Value {
    serde_json::json!({
        "id": &*option.option_id.0,
        "name": option.name,
        "kind": serde_json::to_value(option.kind).unwrap_or(Value::Null),
    })
}

impl Session {
    /// The subtask in progress on the plan (the first one), if any.
    fn current(&self) -> Option<SubtaskId> {
        self.seen
            .subtasks()
            .iter()
            .find(|s| s.state() == SubtaskState::InProgress)
            .map(|s| s.id())
    }

    /// The subtask a tool call or a permission is logged on: the one in
    /// progress, else the last of the agent's plan, else #0 (no plan yet).
    fn on_subtask(&self) -> SubtaskId {
        self.current()
            .or_else(|| self.known.last().copied())
            .unwrap_or(SubtaskId(0))
    }

    async fn log(&self, entry: RunEntry) {
        if let Err(e) = self.host.log(self.run.id, entry).await {
            tracing::warn!("run {}: a log entry was lost: {e}", self.run.id);
        }
    }

    fn tick(&mut self) {
        let now = Instant::now();
        if self.run.state == RunState::Running {
            self.run.spent.wall_ms += now.duration_since(self.clock).as_millis() as u64;
        }
        self.clock = now;
    }

    async fn save(&mut self) {
        self.tick();
        if let Err(e) = self.host.save_run(&self.run).await {
            tracing::warn!("run {}: could not save: {e}", self.run.id);
        }
    }

    async fn move_to(&mut self, to: RunState, reason: &str) {
        let from = self.run.state;
        if from == to || !from.can_become(to) {
            return;
        }
        self.tick();
        self.run.state = to;
        self.run.reason = matches!(
            to,
            RunState::Paused | RunState::Failed | RunState::Cancelled
        )
        .then(|| reason.to_string());
        self.save().await;
        self.log(RunEntry::StateChanged {
            from: Some(from),
            to,
            reason: reason.to_string(),
        })
        .await;
    }

    /// One prompt turn: sends `text`, follows what the agent and people do
    /// until the turn ends.
    async fn turn(
        &mut self,
        text: String,
        incoming: &mut mpsc::UnboundedReceiver<Incoming>,
        decided: &mut mpsc::UnboundedReceiver<(String, Result<ToolVerdict, HostError>)>,
        changes: &mut watch::Receiver<Option<Plan>>,
    ) -> TurnEnd {
        self.turns += 1;
        self.cancel_due = false;
        let request =
            acp::PromptRequest::new(self.session.clone(), vec![acp::ContentBlock::from(text)]);
        let conn = self.conn.clone();
        let mut answer: BoxFuture<'static, Result<acp::PromptResponse, AcpError>> =
            Box::pin(async move {
                conn.request(acp::AGENT_METHOD_NAMES.session_prompt, &request)
                    .await
            });
        // Set once the turn was cancelled: an agent that does not end it
        // within the grace is stopped.
        let mut deadline: Option<tokio::time::Instant> = None;
        // The agent's output is open (once closed, only its answer, which
        // then fails, is waited for).
        let mut open = true;
        loop {
            let grace = async move {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                // What the agent sent before its answer is handled first.
                biased;
                message = incoming.recv(), if open => match message {
                    Some(message) => self.on_message(message).await,
                    // The agent closed its output: the answer fails next.
                    None => open = false,
                },
                ended = &mut answer => {
                    // The reader queued every message the agent wrote
                    // before its answer: they are the turn's too.
                    while let Ok(message) = incoming.try_recv() {
                        self.on_message(message).await;
                    }
                    return match ended {
                        Ok(response) => TurnEnd::Stopped(response.stop_reason),
                        Err(e) => TurnEnd::Broken(e),
                    };
                }
                Some((call, verdict)) = decided.recv() => self.on_decision(call, verdict).await,
                Ok(()) = changes.changed() => {
                    let plan = changes.borrow_and_update().clone();
                    if let Some(plan) = plan {
                        self.notice(plan).await;
                    }
                }
                () = grace => {
                    return TurnEnd::Broken(AcpError::Timeout {
                        method: "session/cancel".into(),
                        secs: CANCEL_GRACE.as_secs(),
                    });
                }
            }
            if self.cancel_due && deadline.is_none() {
                self.cancel_due = false;
                self.cancel().await;
                deadline = Some(tokio::time::Instant::now() + CANCEL_GRACE);
            }
        }
    }

    /// Looks at a plan people may have changed; whether the turn must be
    /// cancelled for it (a pause, a cancel, an edit).
    async fn notice(&mut self, plan: Plan) -> bool {
        if plan.version() <= self.seen.version() {
            return false;
        }
        let moves = people::moves(&self.seen, &plan, &self.actor, self.last_comment);
        self.seen = plan;
        self.take(moves).await
    }

    /// Keeps what people did for the agent; whether the turn must end.
    async fn take(&mut self, moves: Moves) -> bool {
        self.last_comment = moves.last_comment;
        if moves.is_empty() {
            return false;
        }
        let mut summary: Vec<String> = Vec::new();
        if moves.abandoned {
            summary.push("cancelled the run".into());
            self.waiting.cancel = true;
        }
        if moves.paused {
            summary.push("paused the plan".into());
            self.waiting.pause = true;
        }
        summary.extend(moves.edits.iter().cloned());
        summary.extend(moves.said.iter().map(|s| format!("said: {s}")));
        for text in &moves.edits {
            self.correction(format!("a person changed the agent's plan: {text}"));
        }
        self.waiting.said.extend(moves.said);
        let edited = !moves.edits.is_empty();
        self.waiting.edits.extend(moves.edits);
        self.log(RunEntry::PeopleChanged {
            summary: plan_engine::text::fit(&summary.join("; "), 2_000),
        })
        .await;
        let cancel = moves.abandoned || moves.paused || edited;
        if cancel {
            self.cancel_due = true;
        }
        cancel
    }

    /// Keeps a correction for the memory the run leaves.
    fn correction(&mut self, what: String) {
        let task = plan_engine::text::fit(self.run.config.task.trim(), 150);
        self.run.corrections.push(plan_engine::text::fit(
            &format!("For the task «{task}», {what}"),
            600,
        ));
        if self.run.corrections.len() > 20 {
            self.run.corrections.remove(0);
        }
    }

    /// Asks the agent to stop the turn (`session/cancel`); the permission
    /// requests still open are answered as cancelled.
    async fn cancel(&mut self) {
        let note = acp::CancelNotification::new(self.session.clone());
        if let Err(e) = self
            .conn
            .notify(acp::AGENT_METHOD_NAMES.session_cancel, &note)
        {
            tracing::info!(
                "run {}: the cancel did not reach the agent: {e}",
                self.run.id
            );
        }
        self.expire_asked("the agent's turn was cancelled").await;
    }

    /// The plan as it is now (after a turn, before a prompt that states it).
    async fn refresh(&mut self) {
        if let Ok(plan) = self.host.plan(self.plan).await {
            let moves = people::moves(&self.seen, &plan, &self.actor, self.last_comment);
            self.last_comment = moves.last_comment;
            self.seen = plan;
        }
    }

    async fn on_message(&mut self, message: Incoming) {
        match message {
            Incoming::Notification { method, params }
                if method == acp::CLIENT_METHOD_NAMES.session_update =>
            {
                match serde_json::from_value::<acp::SessionNotification>(params) {
                    Ok(note) => self.on_update(note.update).await,
                    // A kind of update this version does not know.
                    Err(e) => tracing::debug!("run {}: an update skipped: {e}", self.run.id),
                }
            }
            Incoming::Notification { .. } => {}
            Incoming::Request { id, method, params }
                if method == acp::CLIENT_METHOD_NAMES.session_request_permission =>
            {
                match serde_json::from_value::<acp::RequestPermissionRequest>(params) {
                    Ok(request) => self.ask(id, request).await,
                    Err(e) => {
                        let refused =
                            acp::Error::invalid_params().data(Value::String(e.to_string()));
                        let _ = self.conn.respond::<Value>(id, Err(refused));
                    }
                }
            }
            Incoming::Request { id, .. } => {
                // No file system, terminal or elicitation is offered.
                let _ = self
                    .conn
                    .respond::<Value>(id, Err(acp::Error::method_not_found()));
            }
        }
    }

    async fn on_update(&mut self, update: acp::SessionUpdate) {
        match update {
            acp::SessionUpdate::AgentMessageChunk(chunk) => {
                self.write(false, text_of(&chunk.content)).await
            }
            acp::SessionUpdate::AgentThoughtChunk(chunk) => {
                self.write(true, text_of(&chunk.content)).await
            }
            acp::SessionUpdate::ToolCall(call) => {
                self.flush().await;
                self.tool_started(call).await;
            }
            acp::SessionUpdate::ToolCallUpdate(update) => {
                self.flush().await;
                self.tool_updated(update).await;
            }
            acp::SessionUpdate::Plan(plan) => {
                self.flush().await;
                let entries: Vec<Entry> = plan.entries.iter().map(Entry::of).collect();
                self.plan_update(entries).await;
            }
            _ => {}
        }
    }

    /// A piece of a message (or a thought): streamed at once, kept whole.
    async fn write(&mut self, thought: bool, piece: String) {
        if piece.is_empty() {
            return;
        }
        if self.writing.as_ref().is_some_and(|(t, _)| *t != thought) {
            self.flush().await;
        }
        self.host.delta(
            self.run.id,
            ReplyDelta {
                role: CallRole::Executor,
                subtask: self.current(),
                attempt: self.turns,
                text: piece.clone(),
                done: false,
            },
        );
        let (_, text) = self.writing.get_or_insert_with(|| (thought, String::new()));
        // Bounded in bytes as it grows (a character is at most four);
        // cut to characters when it is logged.
        if text.len() < MESSAGE_CHARS * 4 {
            text.push_str(&piece);
        }
    }

    /// The message being written is over: on the log, whole.
    async fn flush(&mut self) {
        let Some((thought, text)) = self.writing.take() else {
            return;
        };
        self.host.delta(
            self.run.id,
            ReplyDelta {
                role: CallRole::Executor,
                subtask: self.current(),
                attempt: self.turns,
                text: String::new(),
                done: true,
            },
        );
        let text = plan_engine::text::fit(&text, MESSAGE_CHARS);
        if !thought {
            self.last_message = text.clone();
        }
        self.log(RunEntry::AgentMessage {
            subtask: self.current(),
            text,
            thought,
        })
        .await;
    }

    async fn tool_started(&mut self, call: acp::ToolCall) {
        let id = call.tool_call_id.0.to_string();
        let name = plan_engine::text::fit(call.title.trim(), 100);
        let arguments = call
            .raw_input
            .clone()
            .unwrap_or_else(|| serde_json::json!({ "title": call.title }));
        let subtask = self.on_subtask();
        self.log(RunEntry::ToolStarted {
            subtask,
            name: name.clone(),
            arguments: arguments.clone(),
            digest: run_model::call_digest(&name, &arguments),
        })
        .await;
        self.tools.insert(
            id.clone(),
            ToolRun {
                name,
                arguments,
                subtask,
                started: Instant::now(),
            },
        );
        if matches!(
            call.status,
            acp::ToolCallStatus::Completed | acp::ToolCallStatus::Failed
        ) {
            let ok = matches!(call.status, acp::ToolCallStatus::Completed);
            let result = result_of(&call.content, call.raw_output.as_ref());
            self.tool_ended(&id, ok, result).await;
        }
    }

    async fn tool_updated(&mut self, update: acp::ToolCallUpdate) {
        let id = update.tool_call_id.0.to_string();
        let fields = update.fields;
        if !self.tools.contains_key(&id) {
            let title = fields.title.clone().unwrap_or_else(|| "a tool".into());
            let mut call = acp::ToolCall::new(update.tool_call_id.clone(), title);
            call.raw_input = fields.raw_input.clone();
            self.tool_started(call).await;
        }
        if let (Some(input), Some(run)) = (fields.raw_input.clone(), self.tools.get_mut(&id)) {
            run.arguments = input;
        }
        let status = fields.status;
        if let Some(status) = status {
            if matches!(
                status,
                acp::ToolCallStatus::Completed | acp::ToolCallStatus::Failed
            ) {
                let ok = matches!(status, acp::ToolCallStatus::Completed);
                let content = fields.content.unwrap_or_default();
                let result = result_of(&content, fields.raw_output.as_ref());
                self.tool_ended(&id, ok, result).await;
            }
        }
    }

    async fn tool_ended(&mut self, id: &str, ok: bool, result: String) {
        let Some(run) = self.tools.remove(id) else {
            return;
        };
        self.log(RunEntry::ToolCall {
            subtask: run.subtask,
            name: run.name,
            arguments: run.arguments,
            result,
            ok,
            duration_ms: run.started.elapsed().as_millis() as u64,
            replayed: false,
        })
        .await;
    }

    /// A permission request: a guarded call in "Needs you", with the
    /// options the agent offered.
    async fn ask(&mut self, request_id: acp::RequestId, request: acp::RequestPermissionRequest) {
        self.flush().await;
        let tool_id = request.tool_call.tool_call_id.0.to_string();
        let known = self.tools.get(&tool_id);
        let title = request
            .tool_call
            .fields
            .title
            .clone()
            .or_else(|| known.map(|t| t.name.clone()))
            .unwrap_or_else(|| "a tool".into());
        let input = request
            .tool_call
            .fields
            .raw_input
            .clone()
            .or_else(|| known.map(|t| t.arguments.clone()))
            .unwrap_or(Value::Null);
        let call = uuid::Uuid::new_v4().to_string();
        let approve = chosen(
            &request.options,
            &ToolVerdict {
                verdict: Verdict::Approved,
                by: String::new(),
                reason: None,
                arguments: None,
            },
        );
        let name = plan_engine::text::fit(title.trim(), 100);
        self.log(RunEntry::ToolApproval {
            subtask: self.on_subtask(),
            call: call.clone(),
            name: name.clone(),
            arguments: serde_json::json!({
                "tool_call": tool_id,
                "title": title,
                "input": input,
                "options": request.options.iter().map(option_json).collect::<Vec<_>>(),
                "option": approve.map(|o| o.0.to_string()),
            }),
            asker: None,
        })
        .await;
        let waiter = {
            let (host, run, call, out) = (
                self.host.clone(),
                self.run.id,
                call.clone(),
                self.decisions.clone(),
            );
            tokio::spawn(async move {
                let verdict = host.tool_verdict(run, &call).await;
                let _ = out.send((call, verdict));
            })
        };
        self.asked.insert(
            call,
            Asked {
                request: request_id,
                options: request.options,
                title: name,
                waiter,
            },
        );
    }

    /// A person decided a permission request: the option goes back.
    async fn on_decision(&mut self, call: String, verdict: Result<ToolVerdict, HostError>) {
        let Some(asked) = self.asked.remove(&call) else {
            return;
        };
        let outcome = match &verdict {
            Ok(verdict) => match chosen(&asked.options, verdict) {
                Some(option) => acp::RequestPermissionOutcome::Selected(
                    acp::SelectedPermissionOutcome::new(option),
                ),
                None => acp::RequestPermissionOutcome::Cancelled,
            },
            Err(_) => acp::RequestPermissionOutcome::Cancelled,
        };
        if let Ok(ToolVerdict {
            verdict: Verdict::Denied,
            by,
            reason: Some(reason),
            ..
        }) = &verdict
        {
            // ACP's answer carries the option, not the reason: the reason
            // goes with the next prompt.
            self.waiting
                .said
                .push(format!("{by} denied «{}»: {reason}", asked.title));
        }
        let answer = acp::RequestPermissionResponse::new(outcome);
        if let Err(e) = self
            .conn
            .respond(asked.request, Ok::<_, acp::Error>(answer))
        {
            tracing::info!(
                "run {}: a decision did not reach the agent: {e}",
                self.run.id
            );
        }
    }

    /// Answers every open permission request as cancelled, and closes its
    /// guarded call on the log.
    async fn expire_asked(&mut self, why: &str) {
        let open: Vec<(String, Asked)> = self.asked.drain().collect();
        for (call, asked) in open {
            asked.waiter.abort();
            let answer =
                acp::RequestPermissionResponse::new(acp::RequestPermissionOutcome::Cancelled);
            let _ = self
                .conn
                .respond(asked.request, Ok::<_, acp::Error>(answer));
            self.log(RunEntry::ToolDecision {
                call,
                verdict: Verdict::Expired,
                by: "planboard".into(),
                reason: Some(why.to_string()),
                arguments: None,
            })
            .await;
        }
    }

    /// The agent's plan update: one change of the run's plan.
    async fn plan_update(&mut self, entries: Vec<Entry>) {
        // What people did since the last look is theirs, not the agent's.
        if let Ok(fresh) = self.host.plan(self.plan).await {
            if fresh.version() > self.seen.version() {
                let moves = people::moves(&self.seen, &fresh, &self.actor, self.last_comment);
                self.seen = fresh;
                // A move that cancels the turn is sent by the turn's loop.
                self.take(moves).await;
            }
        }
        if self.seen.state().is_finished() {
            return;
        }
        let update = agent_plan::update(&self.seen, &self.known, &entries);
        self.updates += 1;
        let count = update.ops.len();
        if count > 0 {
            match self
                .host
                .execute(self.plan, update.ops.clone(), &self.actor)
                .await
            {
                Ok(plan) => self.seen = plan,
                Err(HostError::Refused(e)) => {
                    // Someone's change made one op wrong: the rest goes in
                    // one at a time, and what is refused is said.
                    let mut refused = Vec::new();
                    for op in update.ops {
                        match self.host.execute(self.plan, vec![op], &self.actor).await {
                            Ok(plan) => self.seen = plan,
                            Err(e) => refused.push(e.to_string()),
                        }
                    }
                    tracing::info!("run {}: a plan update went in op by op: {e}", self.run.id);
                    if !refused.is_empty() {
                        self.log(RunEntry::PlanRepaired {
                            repairs: refused
                                .into_iter()
                                .map(|r| {
                                    format!(
                                        "the agent's plan update could not make this change: {r}"
                                    )
                                })
                                .collect(),
                        })
                        .await;
                    }
                }
                Err(e) => {
                    tracing::warn!("run {}: the agent's plan update was lost: {e}", self.run.id);
                    return;
                }
            }
        }
        self.known = update.ids.clone();
        if self.updates == 1 {
            self.log(RunEntry::PlanProposed {
                plan_id: self.plan,
                round: 1,
                subtasks: entries.len(),
            })
            .await;
        } else if count > 0 {
            self.log(RunEntry::PlanAdjusted {
                reason: format!(
                    "{}'s plan: {} added, {} reworded, {} dropped, {} moved",
                    self.name, update.added, update.edited, update.removed, update.moved
                ),
                changes: count,
            })
            .await;
        }
    }

    /// Waits, paused, for a person to resume (the prompt that goes on) or
    /// cancel (`None`).
    async fn wait_while_paused(
        &mut self,
        changes: &mut watch::Receiver<Option<Plan>>,
    ) -> Option<String> {
        loop {
            if self.seen.state() == PlanState::Abandoned || self.waiting.cancel {
                return None;
            }
            if matches!(self.seen.state(), PlanState::Running | PlanState::Approved) {
                let said = std::mem::take(&mut self.waiting.said);
                self.waiting.edits.clear();
                return Some(people::resume_prompt(&self.seen, &said));
            }
            if changes.changed().await.is_err() {
                return None;
            }
            let plan = changes.borrow_and_update().clone();
            if let Some(plan) = plan {
                self.notice(plan).await;
            }
        }
    }

    /// The turn ended with the agent's stop reason and nobody's words
    /// waiting: the run ends.
    async fn ended(&mut self, reason: acp::StopReason) {
        match reason {
            acp::StopReason::EndTurn => {
                let answer = if self.last_message.trim().is_empty() {
                    format!("({} ended its turn without a message)", self.name)
                } else {
                    self.last_message.clone()
                };
                self.run.answer = Some(answer.clone());
                self.log(RunEntry::Answer {
                    text: answer.clone(),
                })
                .await;
                self.finish(PlanState::Done, RunState::Done, answer).await;
            }
            acp::StopReason::Cancelled => {
                // The agent cancelled a turn nobody cancelled.
                let why = format!("{} cancelled its turn", self.name);
                self.finish(PlanState::Failed, RunState::Failed, why).await;
            }
            other => {
                let word = serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| "an unknown reason".into());
                let why = format!("{} stopped: {word}", self.name);
                self.finish(PlanState::Failed, RunState::Failed, why).await;
            }
        }
    }

    async fn finish_cancelled(&mut self) {
        let why = self
            .seen
            .outcome()
            .map(str::to_string)
            .unwrap_or_else(|| "cancelled by a person".into());
        if !self.seen.state().is_finished() {
            let _ = self
                .host
                .execute(
                    self.plan,
                    vec![Op::Finish {
                        state: PlanState::Abandoned,
                        outcome: why.clone(),
                    }],
                    &self.actor,
                )
                .await;
        }
        self.move_to(RunState::Cancelled, &why).await;
    }

    /// Ends the plan (`plan_state`, with what is left open skipped when it
    /// is done) and the run.
    async fn finish(&mut self, plan_state: PlanState, run_state: RunState, why: String) {
        self.refresh().await;
        if !self.seen.state().is_finished() {
            let mut ops = Vec::new();
            if plan_state == PlanState::Done {
                for s in self.seen.subtasks() {
                    if matches!(
                        s.state(),
                        SubtaskState::Todo
                            | SubtaskState::Blocked
                            | SubtaskState::InProgress
                            | SubtaskState::Failed
                    ) {
                        ops.push(Op::SetSubtaskState {
                            id: s.id(),
                            state: SubtaskState::Skipped,
                            note: Some(format!("{}'s turn ended without it", self.name)),
                            start_next: false,
                        });
                    }
                }
            }
            ops.push(Op::Finish {
                state: plan_state,
                outcome: plan_engine::text::fit(&why, plan_engine::model::limits::TEXT),
            });
            match self.host.execute(self.plan, ops, &self.actor).await {
                Ok(plan) => self.seen = plan,
                Err(e) => {
                    tracing::warn!("run {}: its plan could not be finished: {e}", self.run.id)
                }
            }
        }
        self.move_to(run_state, &plan_engine::text::fit(&why, 1_000))
            .await;
    }

    /// What the finished run leaves in memory, as records: its summary,
    /// and what people corrected and said on the way.
    async fn remember(&mut self) {
        if !self.run.config.memory || !self.run.state.is_finished() {
            return;
        }
        let task = plan_engine::text::fit(self.run.config.task.trim(), 1_000);
        let memory = |kind, text: String| NewMemory {
            kind,
            task: task.clone(),
            text: plan_engine::text::fit(&text, MEMORY_TEXT),
            run_id: Some(self.run.id),
            plan_id: self.run.plan_id,
        };
        let mut memories: Vec<NewMemory> = self
            .run
            .corrections
            .iter()
            .map(|c| memory(MemoryKind::Correction, c.clone()))
            .collect();
        let mut summary = format!(
            "Task: {}. Done by the ACP agent {}. Outcome: {}",
            plan_engine::text::fit(self.run.config.task.trim(), 300),
            self.name,
            self.run.state
        );
        if let Some(reason) = &self.run.reason {
            summary.push_str(&format!(" ({})", plan_engine::text::fit(reason, 200)));
        }
        summary.push('.');
        let names: Vec<&str> = self
            .seen
            .subtasks()
            .iter()
            .take(12)
            .map(|s| s.name())
            .collect();
        if !names.is_empty() && self.run.state == RunState::Done {
            summary.push_str(&format!(" Plan: {}.", names.join(" → ")));
        }
        // The agent's answer is not kept (a page it read could have
        // written it), as for planboard's own runs.
        memories.push(memory(MemoryKind::Run, summary));
        let count = memories.len();
        match self.host.remember(memories).await {
            Ok(()) => self.log(RunEntry::Remembered { count }).await,
            Err(e) => tracing::warn!("run {}: could not remember it: {e}", self.run.id),
        }
    }
}

/// Fails a run that cannot be given to its agent (the agent was removed):
/// its plan and its row, with `why`.
pub async fn give_up(host: &dyn Host, mut run: RunRecord, why: String) -> RunRecord {
    let name = run.config.agent.clone().unwrap_or_default();
    fail_with_plan(host, &mut run, &name, why).await;
    run
}

/// Fails a run before its agent started (its plan too).
async fn fail_with_plan(host: &dyn Host, run: &mut RunRecord, name: &str, why: String) {
    if let Some(plan) = run.plan_id {
        let _ = host
            .execute(
                plan,
                vec![Op::Finish {
                    state: PlanState::Failed,
                    outcome: plan_engine::text::fit(&why, plan_engine::model::limits::TEXT),
                }],
                &actor_of(name),
            )
            .await;
    }
    fail(host, run, why).await;
}

async fn fail(host: &dyn Host, run: &mut RunRecord, why: String) {
    end(host, run, RunState::Failed, why).await;
}

async fn end(host: &dyn Host, run: &mut RunRecord, to: RunState, why: String) {
    let from = run.state;
    if !from.can_become(to) {
        return;
    }
    run.state = to;
    run.reason = Some(plan_engine::text::fit(&why, 1_000));
    let _ = host.save_run(run).await;
    let _ = host
        .log(
            run.id,
            RunEntry::StateChanged {
                from: Some(from),
                to,
                reason: why,
            },
        )
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(id: &str, kind: acp::PermissionOptionKind) -> acp::PermissionOption {
        acp::PermissionOption::new(id.to_string(), id.to_string(), kind)
    }

    fn verdict(verdict: Verdict, arguments: Option<Value>) -> ToolVerdict {
        ToolVerdict {
            verdict,
            by: "alice".into(),
            reason: None,
            arguments,
        }
    }

    #[test]
    fn a_persons_decision_picks_one_of_the_options_the_agent_offered() {
        use acp::PermissionOptionKind as K;
        let options = vec![
            option("always", K::AllowAlways),
            option("once", K::AllowOnce),
            option("no", K::RejectOnce),
        ];
        let id = |o: Option<acp::PermissionOptionId>| o.map(|o| o.0.to_string());
        assert_eq!(
            id(chosen(&options, &verdict(Verdict::Approved, None))).as_deref(),
            Some("once")
        );
        assert_eq!(
            id(chosen(&options, &verdict(Verdict::Denied, None))).as_deref(),
            Some("no")
        );
        let edited = verdict(
            Verdict::Edited,
            Some(serde_json::json!({"option": "always"})),
        );
        assert_eq!(id(chosen(&options, &edited)).as_deref(), Some("always"));
        let unknown = verdict(Verdict::Edited, Some(serde_json::json!({"option": "nope"})));
        assert_eq!(chosen(&options, &unknown), None);
        assert_eq!(chosen(&options, &verdict(Verdict::Expired, None)), None);
        // Nothing to reject with: the request is answered as cancelled.
        let only_allow = vec![option("once", K::AllowOnce)];
        assert_eq!(chosen(&only_allow, &verdict(Verdict::Denied, None)), None);
    }

    #[test]
    fn a_tool_calls_result_names_what_is_not_text() {
        let content = vec![
            acp::ToolCallContent::from("3 tests passed"),
            acp::ToolCallContent::Diff(acp::Diff::new("src/lib.rs", "new")),
        ];
        let text = result_of(&content, Some(&serde_json::json!({"exit": 0})));
        assert_eq!(text, "3 tests passed\nedited src/lib.rs\n{\"exit\":0}");
    }
}
