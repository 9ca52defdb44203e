//! [`Host`]: how the agent reaches plans and the run log. The server
//! implements it over its one write path (`PlanService`), so the agent's
//! changes are ordinary plan commands with ordinary events; tests use
//! [`MemoryHost`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use plan_engine::{NewPlan, Op, Plan, PlanError, PlanId};
use tokio::sync::watch;

use crate::run::{ReplyDelta, RunEntry, RunId, RunRecord, Verdict};
use run_model::{Memory, NewMemory};

#[derive(Clone, Debug, thiserror::Error)]
pub enum HostError {
    /// The engine refused the change; the text is the engine's.
    #[error(transparent)]
    Refused(#[from] PlanError),
    #[error("no plan has id {0}")]
    NotFound(PlanId),
    /// The plan cannot be given to the agent (finished, or empty).
    #[error("{0}")]
    NotWorkable(String),
    /// The store failed; worth trying again later.
    #[error("the plan store is unavailable: {0}")]
    Unavailable(String),
}

#[async_trait::async_trait]
pub trait Host: Send + Sync {
    async fn create_plan(&self, spec: NewPlan, actor: &str) -> Result<Plan, HostError>;

    /// Runs the ops as one change, all or none; returns the plan after it.
    async fn execute(&self, plan: PlanId, ops: Vec<Op>, actor: &str) -> Result<Plan, HostError>;

    async fn plan(&self, plan: PlanId) -> Result<Plan, HostError>;

    /// The plan's version: lets the agent keep the copy it has when the
    /// plan has not moved (a copy costs as much as the plan).
    async fn version(&self, plan: PlanId) -> Result<u64, HostError> {
        Ok(self.plan(plan).await?.version())
    }

    /// Resolves with the plan once its version is past `version`. Waiting
    /// costs a subscription, not a poll.
    async fn changed(&self, plan: PlanId, version: u64) -> Result<Plan, HostError>;

    /// Appends to the run log (never a plan event).
    async fn log(&self, run: RunId, entry: RunEntry) -> Result<(), HostError>;

    /// Stores the run's row (state, mode, plan, budget use, answer).
    async fn save_run(&self, run: &RunRecord) -> Result<(), HostError>;

    /// Passes on a piece of a reply being written, to whoever watches the
    /// run live. Best effort and never stored: it must not wait.
    fn delta(&self, _run: RunId, _delta: ReplyDelta) {}

    /// Whether anyone could see the run's replies being written now; when
    /// nobody can, calls are made without streaming, which costs less.
    fn watched(&self, _run: RunId) -> bool {
        true
    }

    /// Resolves with a person's decision on the guarded tool call `call`
    /// once it is on the run's log (written by whoever decided, in any
    /// process). Waiting costs a subscription, not a poll or a thread.
    async fn tool_verdict(&self, run: RunId, call: &str) -> Result<ToolVerdict, HostError>;

    /// The guarded calls on the run's log that nobody has decided.
    async fn open_tool_calls(&self, run: RunId) -> Result<Vec<String>, HostError>;

    /// The run's grant that covers this call of an `ask` tool, if one does
    /// (a person granted the tool, or calls like this one, when approving
    /// the plan): the call then runs without asking. Read afresh for each
    /// call, so a grant revoked a moment ago asks again. A host without
    /// grants answers `None`.
    async fn grant(
        &self,
        _run: RunId,
        _name: &str,
        _arguments: &serde_json::Value,
    ) -> Result<Option<run_model::Grant>, HostError> {
        Ok(None)
    }

    /// Appends to the run log and returns once the entry is stored, not
    /// only queued: what a crash right after must still find.
    async fn log_stored(&self, run: RunId, entry: RunEntry) -> Result<(), HostError> {
        self.log(run, entry).await
    }

    /// The regular files in the run's workspace now (relative path and
    /// size), for checking that a file the task asked for was written;
    /// `None` when this host cannot tell (then no file is checked).
    async fn workspace_files(&self, _run: RunId) -> Result<Option<Vec<(String, u64)>>, HostError> {
        Ok(None)
    }

    /// The first `max` bytes of the regular file `path` in the run's
    /// workspace (a path as `workspace_files` lists it), read without
    /// following a link out; `None` when this host cannot tell (then the
    /// file's kind is not checked).
    async fn workspace_head(
        &self,
        _run: RunId,
        _path: &str,
        _max: u64,
    ) -> Result<Option<Vec<u8>>, HostError> {
        Ok(None)
    }

    /// The run's work tool calls as its log holds them, in order: their
    /// starts ([`RunEntry::ToolStarted`]), ends ([`RunEntry::ToolCall`])
    /// and interruptions found before ([`RunEntry::ToolInterrupted`]).
    async fn tool_history(&self, run: RunId) -> Result<Vec<RunEntry>, HostError>;

    /// The stored memories most like `query` (by [`run_model::memory::terms`]),
    /// best first, at most `limit`; pinned ones before the rest; what
    /// people taught keeps its slots ([`run_model::memory::choose`]).
    async fn recall(&self, query: &str, limit: usize) -> Result<Vec<Memory>, HostError>;

    /// Stores what a finished run leaves behind.
    async fn remember(&self, memories: Vec<NewMemory>) -> Result<(), HostError>;

    /// The bytes of one of the run's input files (`path` as in
    /// `RunConfig::inputs`): a run in batches reads its items from it.
    async fn input(&self, run: RunId, path: &str) -> Result<Vec<u8>, HostError>;

    /// The tool results `replay.run` recorded, in log order (each its
    /// call's digest, result and whether it worked): what a replay
    /// answers its calls from ([`crate::replay::Recording`] keys them by
    /// digest). By default read from the run's tool history.
    async fn recording(
        &self,
        replay: &run_model::ReplayOf,
    ) -> Result<Vec<run_model::RecordedCall>, HostError> {
        Ok(self
            .tool_history(replay.run)
            .await?
            .iter()
            .filter_map(run_model::RecordedCall::of)
            .collect())
    }
}

/// A person's decision on a guarded tool call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolVerdict {
    pub verdict: Verdict,
    pub by: String,
    pub reason: Option<String>,
    pub arguments: Option<serde_json::Value>,
}

impl ToolVerdict {
    /// The decision on `call` in a run log entry, if it is one.
    pub fn of(entry: &RunEntry, call: &str) -> Option<ToolVerdict> {
        match entry {
            RunEntry::ToolDecision {
                call: decided,
                verdict,
                by,
                reason,
                arguments,
            } if decided == call => Some(ToolVerdict {
                verdict: *verdict,
                by: by.clone(),
                reason: reason.clone(),
                arguments: arguments.clone(),
            }),
            _ => None,
        }
    }
}

/// The guarded calls among `entries` (one run's log, in order) that no
/// decision answers.
pub fn open_calls<'a>(entries: impl IntoIterator<Item = &'a RunEntry>) -> Vec<String> {
    let mut open: Vec<String> = Vec::new();
    for entry in entries {
        match entry {
            RunEntry::ToolApproval { call, .. } => open.push(call.clone()),
            RunEntry::ToolDecision { call, .. } => open.retain(|c| c != call),
            _ => {}
        }
    }
    open
}

/// A work tool call that was running when the process stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interrupted {
    pub subtask: plan_engine::SubtaskId,
    pub name: String,
    pub arguments: serde_json::Value,
    pub digest: String,
    /// How often this same call of this subtask has been interrupted, this
    /// time included.
    pub times: u32,
}

/// The calls in `history` (a run's [`Host::tool_history`], in order) that
/// were started and neither ended nor already found interrupted: running
/// when the process stopped. A subtask runs one tool at a time, so the
/// next start or end of the same subtask closes a start.
pub fn interrupted<'a>(history: impl IntoIterator<Item = &'a RunEntry>) -> Vec<Interrupted> {
    let mut open: Vec<Interrupted> = Vec::new();
    let mut found: Vec<Interrupted> = Vec::new();
    let mut before: HashMap<(plan_engine::SubtaskId, String), u32> = HashMap::new();
    for entry in history {
        match entry {
            RunEntry::ToolStarted {
                subtask,
                name,
                arguments,
                digest,
            } => {
                // An earlier start of the subtask that nothing ended.
                if let Some(at) = open.iter().position(|o| o.subtask == *subtask) {
                    found.push(open.remove(at));
                }
                open.push(Interrupted {
                    subtask: *subtask,
                    name: name.clone(),
                    arguments: arguments.clone(),
                    digest: digest.clone(),
                    times: 0,
                });
            }
            RunEntry::ToolCall { subtask, .. } => open.retain(|o| o.subtask != *subtask),
            RunEntry::ToolInterrupted {
                subtask,
                digest,
                times,
                ..
            } => {
                open.retain(|o| o.subtask != *subtask);
                found.retain(|o| o.subtask != *subtask || o.digest != *digest);
                let seen = before.entry((*subtask, digest.clone())).or_default();
                *seen = (*seen).max(*times);
            }
            _ => {}
        }
    }
    found.extend(open);
    for call in &mut found {
        let seen = before
            .entry((call.subtask, call.digest.clone()))
            .or_default();
        *seen += 1;
        call.times = *seen;
    }
    found
}

/// Plans and run logs in memory, with change notification.
#[derive(Default)]
pub struct MemoryHost {
    plans: Mutex<HashMap<PlanId, Plan>>,
    versions: Mutex<HashMap<PlanId, watch::Sender<u64>>>,
    logs: Mutex<HashMap<RunId, Vec<RunEntry>>>,
    runs: Mutex<HashMap<RunId, RunRecord>>,
    deltas: Mutex<HashMap<RunId, Vec<ReplyDelta>>>,
    /// Every (plan, actor, op) applied, in order.
    applied: Mutex<Vec<(PlanId, String, Op)>>,
    /// Woken by every log entry.
    logged: tokio::sync::Notify,
    memories: Mutex<Vec<Memory>>,
    /// Input files by path, the same for every run.
    inputs: Mutex<HashMap<String, Vec<u8>>>,
    /// How many of the next `remember` calls fail as a busy store would.
    remember_failures: std::sync::atomic::AtomicU32,
    /// The files every run's workspace holds, as `workspace_files` says
    /// (`None`: it cannot tell, until a file is put).
    files: Mutex<Option<Vec<(String, u64)>>>,
    /// The runs' grants (people's, given as a story needs them).
    grants: Mutex<Vec<run_model::Grant>>,
    /// The content of files put with [`MemoryHost::put_file_holding`].
    contents: Mutex<HashMap<String, Vec<u8>>>,
}

impl MemoryHost {
    pub fn new() -> Arc<MemoryHost> {
        Arc::new(MemoryHost::default())
    }

    /// Puts a file of `bytes` in every run's workspace (as its listing says).
    pub fn put_file(&self, path: &str, bytes: u64) {
        self.files
            .lock()
            .expect("files lock")
            .get_or_insert_with(Vec::new)
            .push((path.to_string(), bytes));
    }

    /// Puts a file holding `content` in every run's workspace.
    pub fn put_file_holding(&self, path: &str, content: &[u8]) {
        self.put_file(path, content.len() as u64);
        self.contents
            .lock()
            .expect("contents lock")
            .insert(path.to_string(), content.to_vec());
    }

    /// The next `times` calls to `remember` fail (the store unavailable).
    pub fn fail_remembering(&self, times: u32) {
        self.remember_failures
            .store(times, std::sync::atomic::Ordering::SeqCst);
    }

    /// Grants `tool` (calls whose main argument matches `pattern`, or all)
    /// for `run`, as `by`; answers the grant.
    pub fn grant_tool(
        &self,
        run: RunId,
        tool: &str,
        pattern: Option<&str>,
        by: &str,
    ) -> run_model::Grant {
        let grant = run_model::Grant {
            id: uuid::Uuid::new_v4(),
            run_id: run,
            tool: tool.to_string(),
            pattern: pattern.map(str::to_string),
            by: by.to_string(),
            at: chrono::Utc::now(),
            revoked_by: None,
            revoked_at: None,
        };
        self.grants.lock().expect("grants lock").push(grant.clone());
        grant
    }

    /// Revokes a grant, as `by`.
    pub fn revoke(&self, grant: run_model::GrantId, by: &str) {
        for g in self.grants.lock().expect("grants lock").iter_mut() {
            if g.id == grant {
                g.revoked_by = Some(by.to_string());
                g.revoked_at = Some(chrono::Utc::now());
            }
        }
    }

    /// Gives every run an input file at `path`.
    pub fn put_input(&self, path: &str, bytes: Vec<u8>) {
        self.inputs
            .lock()
            .expect("inputs lock")
            .insert(path.to_string(), bytes);
    }

    /// Every memory stored, oldest first.
    pub fn memories(&self) -> Vec<Memory> {
        self.memories.lock().expect("memory lock").clone()
    }

    /// Forgets a memory (the Memory page's button, for the stories).
    pub fn forget(&self, id: run_model::MemoryId) {
        self.memories
            .lock()
            .expect("memory lock")
            .retain(|m| m.id != id);
    }

    /// The pieces of replies passed on live for a run, in order.
    pub fn deltas(&self, run: RunId) -> Vec<ReplyDelta> {
        self.deltas
            .lock()
            .expect("delta lock")
            .get(&run)
            .cloned()
            .unwrap_or_default()
    }

    pub fn entries(&self, run: RunId) -> Vec<RunEntry> {
        self.logs
            .lock()
            .expect("log lock")
            .get(&run)
            .cloned()
            .unwrap_or_default()
    }

    pub fn run(&self, id: RunId) -> Option<RunRecord> {
        self.runs.lock().expect("runs lock").get(&id).cloned()
    }

    pub fn applied(&self) -> Vec<(PlanId, String, Op)> {
        self.applied.lock().expect("applied lock").clone()
    }

    pub fn only_plan(&self) -> Option<Plan> {
        self.plans
            .lock()
            .expect("plans lock")
            .values()
            .next()
            .cloned()
    }

    fn publish(&self, plan: &Plan) {
        let mut versions = self.versions.lock().expect("versions lock");
        let sender = versions
            .entry(plan.id())
            .or_insert_with(|| watch::channel(plan.version()).0);
        sender.send_replace(plan.version());
    }
}

#[async_trait::async_trait]
impl Host for MemoryHost {
    async fn create_plan(&self, mut spec: NewPlan, actor: &str) -> Result<Plan, HostError> {
        if spec.id.is_nil() {
            spec.id = uuid::Uuid::new_v4();
        }
        let (plan, _) = Plan::create(&spec, actor, chrono::Utc::now())?;
        self.plans
            .lock()
            .expect("plans lock")
            .insert(plan.id(), plan.clone());
        self.publish(&plan);
        Ok(plan)
    }

    async fn execute(&self, id: PlanId, ops: Vec<Op>, actor: &str) -> Result<Plan, HostError> {
        let record = ops.clone();
        let plan = {
            let mut plans = self.plans.lock().expect("plans lock");
            let plan = plans.get_mut(&id).ok_or(HostError::NotFound(id))?;
            plan.execute_all(ops, actor, chrono::Utc::now())?;
            plan.clone()
        };
        self.applied
            .lock()
            .expect("applied lock")
            .extend(record.into_iter().map(|op| (id, actor.to_string(), op)));
        self.publish(&plan);
        Ok(plan)
    }

    async fn plan(&self, id: PlanId) -> Result<Plan, HostError> {
        self.plans
            .lock()
            .expect("plans lock")
            .get(&id)
            .cloned()
            .ok_or(HostError::NotFound(id))
    }

    async fn changed(&self, id: PlanId, version: u64) -> Result<Plan, HostError> {
        let mut receiver = {
            let mut versions = self.versions.lock().expect("versions lock");
            versions
                .entry(id)
                .or_insert_with(|| watch::channel(0).0)
                .subscribe()
        };
        receiver
            .wait_for(|v| *v > version)
            .await
            .map_err(|_| HostError::Unavailable("the plan store closed".into()))?;
        self.plan(id).await
    }

    async fn log(&self, run: RunId, entry: RunEntry) -> Result<(), HostError> {
        self.logs
            .lock()
            .expect("log lock")
            .entry(run)
            .or_default()
            .push(entry);
        self.logged.notify_waiters();
        Ok(())
    }

    async fn tool_verdict(&self, run: RunId, call: &str) -> Result<ToolVerdict, HostError> {
        loop {
            // Registered before looking, so an entry in between wakes it.
            let woken = self.logged.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if let Some(verdict) = self
                .entries(run)
                .iter()
                .find_map(|e| ToolVerdict::of(e, call))
            {
                return Ok(verdict);
            }
            woken.await;
        }
    }

    async fn open_tool_calls(&self, run: RunId) -> Result<Vec<String>, HostError> {
        Ok(open_calls(&self.entries(run)))
    }

    async fn workspace_files(&self, _run: RunId) -> Result<Option<Vec<(String, u64)>>, HostError> {
        Ok(self.files.lock().expect("files lock").clone())
    }

    async fn workspace_head(
        &self,
        _run: RunId,
        path: &str,
        max: u64,
    ) -> Result<Option<Vec<u8>>, HostError> {
        Ok(self
            .contents
            .lock()
            .expect("contents lock")
            .get(path)
            .map(|c| c[..c.len().min(max as usize)].to_vec()))
    }

    async fn grant(
        &self,
        run: RunId,
        name: &str,
        arguments: &serde_json::Value,
    ) -> Result<Option<run_model::Grant>, HostError> {
        Ok(self
            .grants
            .lock()
            .expect("grants lock")
            .iter()
            .find(|g| g.run_id == run && g.covers(name, arguments))
            .cloned())
    }

    async fn tool_history(&self, run: RunId) -> Result<Vec<RunEntry>, HostError> {
        Ok(self
            .entries(run)
            .into_iter()
            .filter(|e| {
                matches!(
                    e,
                    RunEntry::ToolStarted { .. }
                        | RunEntry::ToolCall { .. }
                        | RunEntry::ToolInterrupted { .. }
                )
            })
            .collect())
    }

    /// Ranks by the number of shared terms (the stores use their
    /// full-text search over the same terms).
    async fn recall(&self, query: &str, limit: usize) -> Result<Vec<Memory>, HostError> {
        // As the server's full-text recall: the rule `recall_relevance_bar`.
        let bar = crate::rules::on(&crate::rules::RECALL_RELEVANCE_BAR);
        let wanted = run_model::memory::terms(query);
        let memories = self.memories.lock().expect("memory lock");
        let mut scored: Vec<(bool, usize, &Memory)> = memories
            .iter()
            .map(|m| {
                let have = run_model::memory::terms(&format!("{} {}", m.task, m.text));
                let shared = wanted.iter().filter(|t| have.contains(t)).count();
                (m.pinned, shared, m)
            })
            .filter(|(_, shared, _)| *shared > 0)
            .filter(|(_, _, m)| !bar || run_model::memory::relevant(query, m))
            .collect();
        scored.sort_by_key(|s| std::cmp::Reverse((s.0, s.1)));
        let ranked = scored.into_iter().map(|(_, _, m)| m.clone()).collect();
        Ok(run_model::memory::choose(ranked, limit))
    }

    async fn remember(&self, new: Vec<NewMemory>) -> Result<(), HostError> {
        use std::sync::atomic::Ordering;
        let failing =
            self.remember_failures
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if failing.is_ok() {
            return Err(HostError::Unavailable("the store is busy".into()));
        }
        let mut memories = self.memories.lock().expect("memory lock");
        for m in new {
            memories.push(Memory {
                id: uuid::Uuid::new_v4(),
                kind: m.kind,
                task: m.task,
                text: m.text,
                run_id: m.run_id,
                plan_id: m.plan_id,
                pinned: false,
                created_at: chrono::Utc::now(),
            });
        }
        Ok(())
    }

    async fn input(&self, _run: RunId, path: &str) -> Result<Vec<u8>, HostError> {
        self.inputs
            .lock()
            .expect("inputs lock")
            .get(path)
            .cloned()
            .ok_or_else(|| HostError::Unavailable(format!("no input file {path}")))
    }

    async fn save_run(&self, run: &RunRecord) -> Result<(), HostError> {
        self.runs
            .lock()
            .expect("runs lock")
            .insert(run.id, run.clone());
        Ok(())
    }

    fn delta(&self, run: RunId, delta: ReplyDelta) {
        self.deltas
            .lock()
            .expect("delta lock")
            .entry(run)
            .or_default()
            .push(delta);
    }
}
