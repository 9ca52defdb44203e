//! The agent's [`Host`] over the server: plan changes through
//! [`PlanService`] (the one write path, so the board and the plan stream
//! see the agent's work like anyone's), the run log in the store, and a
//! broadcast for the run streams.

use std::sync::Arc;

use agent::host::{Host, HostError, ToolVerdict};
use agent::run::{EntryKind, ReplyDelta, RunEntry, RunId, RunRecord};
use plan_engine::{NewPlan, Op, Plan, PlanError, PlanId};
use tokio::sync::broadcast;

use super::RunStore;
use crate::live::{LiveDelta, RunNews};
use crate::runlog::NewRunEntry;
use crate::runlog::{DeltaRelay, LogQueue, Streaming};
use crate::service::{PlanService, ServiceError};

pub struct ServerHost {
    plans: Arc<PlanService>,
    store: Arc<dyn RunStore>,
    entries: broadcast::Sender<RunNews>,
    log: LogQueue,
    /// The runs' log as stored (its guarded calls).
    log_store: Arc<dyn crate::runlog::RunLogStore>,
    /// Sends reply deltas to the other replicas (PostgreSQL).
    relay: Option<DeltaRelay>,
    /// Each run's plan, learnt when the run is saved.
    plan_of: std::sync::Mutex<std::collections::HashMap<RunId, PlanId>>,
    /// Makes spans of the log (OpenTelemetry).
    telemetry: Option<Arc<crate::telemetry::Telemetry>>,
    /// Full-text or hybrid recall of memories.
    recall: crate::memories::Recall,
    /// Where a finished run's memories go.
    memories: Arc<dyn crate::memories::MemoryStore>,
    /// The runs' workspaces (a folder per run), where their inputs are.
    workspaces: std::path::PathBuf,
    /// The runs' grants (people's, at approval).
    approvals: Arc<crate::approvals::Approvals>,
}

/// What a host is set up with beside the plans, the run store and the
/// run-log channel.
pub struct HostSetup {
    pub streaming: Streaming,
    /// Sends reply deltas to the other replicas (PostgreSQL).
    pub relay: Option<DeltaRelay>,
    pub telemetry: Option<Arc<crate::telemetry::Telemetry>>,
    /// The runs' log.
    pub log: Arc<dyn crate::runlog::RunLogStore>,
    /// The agent's memories.
    pub memories: Arc<dyn crate::memories::MemoryStore>,
    /// The embedding model of hybrid recall, if configured.
    pub embedder: Option<Arc<dyn agent::Embedder>>,
    /// The runs' workspaces (a folder per run).
    pub workspaces: std::path::PathBuf,
    /// The runs' grants.
    pub approvals: Arc<crate::approvals::Approvals>,
}

impl ServerHost {
    /// Also starts the run log's writer, so call it on the runtime.
    pub fn new(
        plans: Arc<PlanService>,
        store: Arc<dyn RunStore>,
        entries: broadcast::Sender<RunNews>,
        setup: HostSetup,
    ) -> ServerHost {
        ServerHost {
            workspaces: setup.workspaces,
            recall: crate::memories::Recall::new(setup.memories.clone(), setup.embedder),
            memories: setup.memories,
            log: LogQueue::spawn(setup.log.clone(), entries.clone(), setup.streaming),
            log_store: setup.log,
            relay: setup.relay,
            plans,
            store,
            entries,
            plan_of: Default::default(),
            telemetry: setup.telemetry,
            approvals: setup.approvals,
        }
    }
}

/// The workspace at `root`, its opening error said as the workspace's.
fn open_workspace(
    root: &std::path::Path,
) -> Result<agent::workspace::Workspace, agent::workspace::WorkspaceError> {
    agent::workspace::Workspace::open(root).map_err(|e| agent::workspace::WorkspaceError::Io {
        name: ".".into(),
        error: e,
    })
}

/// The first `max` bytes of the file `name` in the workspace at `root`.
/// The name is one the workspace listing gave, but the run's code can
/// have swapped a link in since: read through the module that never
/// follows one out, off the runtime's threads and within its time bound.
async fn head_of(
    root: std::path::PathBuf,
    name: String,
    max: u64,
) -> Result<Vec<u8>, agent::workspace::WorkspaceError> {
    agent::workspace::off_thread(move || open_workspace(&root)?.read_head(&name, max)).await
}

fn host_error(e: ServiceError) -> HostError {
    match e {
        ServiceError::Plan(PlanError::UnknownPlan { id }) => HostError::NotFound(id),
        ServiceError::Plan(e) => HostError::Refused(e),
        other => HostError::Unavailable(other.to_string()),
    }
}

impl ServerHost {
    /// Appends `entry` and returns once it is stored (a person's decision
    /// must be readable by the next request).
    pub async fn log_now(&self, run: RunId, entry: RunEntry) -> Result<(), HostError> {
        self.log(run, entry).await?;
        self.log.flush().await;
        Ok(())
    }
}

#[async_trait::async_trait]
impl Host for ServerHost {
    async fn create_plan(&self, mut spec: NewPlan, actor: &str) -> Result<Plan, HostError> {
        // The server, never its caller, chooses a plan's id.
        spec.id = uuid::Uuid::new_v4();
        self.plans.create(spec, actor).await.map_err(host_error)
    }

    async fn execute(&self, plan: PlanId, ops: Vec<Op>, actor: &str) -> Result<Plan, HostError> {
        self.plans
            .execute(plan, ops, actor)
            .await
            .map_err(host_error)
    }

    async fn plan(&self, plan: PlanId) -> Result<Plan, HostError> {
        self.plans.get(plan).await.ok_or(HostError::NotFound(plan))
    }

    async fn version(&self, plan: PlanId) -> Result<u64, HostError> {
        self.plans
            .read(plan, |p| p.version())
            .await
            .ok_or(HostError::NotFound(plan))
    }

    async fn changed(&self, plan: PlanId, version: u64) -> Result<Plan, HostError> {
        // Subscribe first, then look: a change in between is caught either way.
        let mut live = self.plans.hub().subscribe();
        loop {
            match self.plans.read(plan, |p| p.version()).await {
                None => return Err(HostError::NotFound(plan)),
                Some(v) if v > version => return self.plan(plan).await,
                Some(_) => {}
            }
            loop {
                match live.recv().await {
                    Ok(row) if row.plan_id == plan => break,
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Lagged(_)) => break,
                    Err(broadcast::error::RecvError::Closed) => {
                        return Err(HostError::Unavailable("the server is shutting down".into()))
                    }
                }
            }
        }
    }

    /// Queued for the run log's writer: the agent does not wait for it.
    async fn log(&self, run: RunId, entry: RunEntry) -> Result<(), HostError> {
        self.plans.metrics().agent_entry(&entry);
        if let Some(telemetry) = &self.telemetry {
            telemetry.entry(run, &entry);
        }
        let kind = entry.kind();
        let entry =
            serde_json::to_value(&entry).map_err(|e| HostError::Unavailable(e.to_string()))?;
        let plan = self
            .plan_of
            .lock()
            .expect("plan_of lock")
            .get(&run)
            .copied();
        self.log
            .append(NewRunEntry {
                run,
                plan,
                kind,
                at: chrono::Utc::now(),
                entry,
            })
            .await;
        Ok(())
    }

    async fn tool_verdict(&self, run: RunId, call: &str) -> Result<ToolVerdict, HostError> {
        // Subscribed before reading the log: a decision stored in between
        // is heard either way. Decisions written by other replicas reach
        // this broadcast through the shared log's reader. (While it
        // waits, the broadcast has a receiver, so replies stream.)
        let mut news = self.entries.subscribe();
        loop {
            // The decisions only, from their index: not the whole log.
            let entries = super::needs::calls_of(self.log_store.as_ref(), &[run])
                .await
                .map_err(|e| HostError::Unavailable(e.to_string()))?
                .remove(&run)
                .unwrap_or_default();
            if let Some(verdict) = entries.iter().find_map(|e| ToolVerdict::of(e, call)) {
                return Ok(verdict);
            }
            loop {
                match news.recv().await {
                    Ok(RunNews::Entry(e))
                        if e.run_id == run && e.kind == EntryKind::ToolDecision =>
                    {
                        let verdict = serde_json::from_value::<RunEntry>(e.entry.clone())
                            .ok()
                            .and_then(|entry| ToolVerdict::of(&entry, call));
                        if let Some(verdict) = verdict {
                            return Ok(verdict);
                        }
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => break,
                    Err(broadcast::error::RecvError::Closed) => {
                        return Err(HostError::Unavailable("the server is shutting down".into()))
                    }
                }
            }
        }
    }

    /// Queued like any entry, then waited for: the writer's next batch.
    async fn log_stored(&self, run: RunId, entry: RunEntry) -> Result<(), HostError> {
        self.log(run, entry).await?;
        self.log.flush().await;
        Ok(())
    }

    async fn tool_history(&self, run: RunId) -> Result<Vec<RunEntry>, HostError> {
        let stored = self
            .log_store
            .run_log_of_kinds(
                run,
                &[
                    EntryKind::ToolStarted,
                    EntryKind::ToolCall,
                    EntryKind::ToolInterrupted,
                ],
            )
            .await
            .map_err(|e| HostError::Unavailable(e.to_string()))?;
        // A line an older version wrote and this one cannot read is
        // skipped, as the whole log's reader skips it.
        Ok(stored
            .into_iter()
            .filter_map(|e| serde_json::from_value(e.entry).ok())
            .collect())
    }

    async fn grant(
        &self,
        run: RunId,
        name: &str,
        arguments: &serde_json::Value,
    ) -> Result<Option<run_model::Grant>, HostError> {
        self.approvals
            .grant_for(run, name, arguments)
            .await
            .map_err(|e| HostError::Unavailable(e.to_string()))
    }

    async fn open_tool_calls(&self, run: RunId) -> Result<Vec<String>, HostError> {
        let entries = super::needs::calls_of(self.log_store.as_ref(), &[run])
            .await
            .map_err(|e| HostError::Unavailable(e.to_string()))?
            .remove(&run)
            .unwrap_or_default();
        Ok(agent::host::open_calls(&entries))
    }

    /// Someone follows a run or plan stream (they share one broadcast), or
    /// may, through another replica.
    fn watched(&self, _run: RunId) -> bool {
        self.relay.is_some() || self.entries.receiver_count() > 0
    }

    fn delta(&self, run: RunId, delta: ReplyDelta) {
        if self.relay.is_none() && self.entries.receiver_count() == 0 {
            return;
        }
        let plan_id = self
            .plan_of
            .lock()
            .expect("plan_of lock")
            .get(&run)
            .copied();
        let delta = LiveDelta {
            run_id: run,
            plan_id,
            delta,
        };
        if let Some(relay) = &self.relay {
            relay.send(delta.clone());
        }
        let _ = self.entries.send(RunNews::Delta(Arc::new(delta)));
    }

    async fn recall(&self, query: &str, limit: usize) -> Result<Vec<run_model::Memory>, HostError> {
        self.recall
            .recall(query, limit)
            .await
            .map_err(|e| HostError::Unavailable(e.to_string()))
    }

    async fn remember(&self, memories: Vec<run_model::NewMemory>) -> Result<(), HostError> {
        self.memories
            .remember(&memories)
            .await
            .map(|_| ())
            .map_err(|e| HostError::Unavailable(e.to_string()))
    }

    async fn input(&self, run: RunId, path: &str) -> Result<Vec<u8>, HostError> {
        // The path comes from the run's own config, but the file is in the
        // workspace the run's code can change: read through the one
        // module that never follows a link out.
        let root = self.workspaces.join(run.to_string());
        let name = path.to_string();
        tokio::task::spawn_blocking(move || {
            let ws = agent::workspace::Workspace::open(&root)
                .map_err(|e| format!("the workspace could not be opened: {e}"))?;
            ws.read(&name, run_model::MAX_FILE_BYTES as u64)
                .map(|(bytes, _)| bytes)
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| HostError::Unavailable(e.to_string()))?
        .map_err(|e| HostError::Unavailable(format!("the input {path} could not be read: {e}")))
    }

    async fn workspace_files(&self, run: RunId) -> Result<Option<Vec<(String, u64)>>, HostError> {
        let root = self.workspaces.join(run.to_string());
        if !root.is_dir() {
            return Ok(Some(Vec::new()));
        }
        agent::workspace::off_thread(move || {
            Ok(Some(
                open_workspace(&root)?
                    .files_within(20_000)?
                    .files
                    .into_iter()
                    .map(|f| (f.path, f.bytes))
                    .collect(),
            ))
        })
        .await
        .map_err(|e| HostError::Unavailable(format!("the workspace could not be listed: {e}")))
    }

    async fn workspace_head(
        &self,
        run: RunId,
        path: &str,
        max: u64,
    ) -> Result<Option<Vec<u8>>, HostError> {
        let root = self.workspaces.join(run.to_string());
        head_of(root, path.to_string(), max)
            .await
            .map(Some)
            .map_err(|e| HostError::Unavailable(format!("the file {path} could not be read: {e}")))
    }

    async fn save_run(&self, run: &RunRecord) -> Result<(), HostError> {
        if let Some(telemetry) = &self.telemetry {
            telemetry.saw_run(run);
        }
        if let Some(plan) = run.plan_id {
            self.plan_of
                .lock()
                .expect("plan_of lock")
                .insert(run.id, plan);
        }
        // A run read back in a new state has the log that led there.
        self.log.flush().await;
        self.store
            .save_run(run)
            .await
            .map_err(|e| HostError::Unavailable(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::head_of;

    #[tokio::test]
    async fn a_written_files_head_is_read_within_its_bound_and_never_through_a_link_or_a_pipe() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), b"the host's secret").unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("chart.png"), b"\x89PNG\r\n\x1a\nmore").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            ws.path().join("report.txt"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("out")).unwrap();
        let root = ws.path().to_path_buf();
        assert_eq!(
            head_of(root.clone(), "chart.png".into(), 8).await.unwrap(),
            b"\x89PNG\r\n\x1a\n"
        );
        // A named pipe where a given text stood (the rule
        // given_texts_written_about reads given texts through here): no
        // writer ever opens it, so a read that waited would never end.
        let status = std::process::Command::new("mkfifo")
            .arg(ws.path().join("notes.txt"))
            .status()
            .unwrap();
        assert!(status.success());
        for name in ["report.txt", "out/secret.txt", "notes.txt"] {
            let read = tokio::time::timeout(
                std::time::Duration::from_secs(5),
                head_of(root.clone(), name.into(), 1024),
            )
            .await
            .unwrap_or_else(|_| {
                // Let the stuck reader go, or the runtime would wait for
                // it and the test hang instead of failing.
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .open(ws.path().join(name));
                panic!("{name}: the read waited")
            });
            assert!(
                read.is_err(),
                "{name} read through a link or a pipe: {:?}",
                read.map(|b| String::from_utf8_lossy(&b).into_owned())
            );
        }
    }
}
