//! "Run again from here": a finished or failed plan of a run becomes a new
//! run that keeps the results before a chosen subtask and redoes the rest,
//! in a copy of the earlier run's workspace (the kept subtasks' files are
//! there). The agent builds the plan (`agent::coordinator::again`). A
//! replay from a subtask takes the same path (`replay.rs`).

use agent::coordinator::again::AgainFailure;
use agent::RunId;
use plan_engine::SubtaskId;

use super::{RunError, RunView, Runs};

impl Runs {
    /// Starts a run again from subtask `from` of run `earlier`'s plan.
    pub async fn run_again(
        self: &std::sync::Arc<Self>,
        earlier: RunId,
        from: SubtaskId,
        who: &str,
    ) -> Result<RunView, RunError> {
        let config = self.record(earlier).await?.config;
        self.again_with(earlier, from, who, config).await
    }

    /// [`Runs::run_again`] with the new run's `config` (a replay's names
    /// the recording and its model).
    pub(super) async fn again_with(
        self: &std::sync::Arc<Self>,
        earlier: RunId,
        from: SubtaskId,
        who: &str,
        config: run_model::RunConfig,
    ) -> Result<RunView, RunError> {
        let record = self
            .store
            .load_run(earlier)
            .await?
            .ok_or(RunError::NotFound(earlier))?;
        // The kept subtasks' files are gone: a run from here would build
        // on results that are no longer there.
        if let Some(at) = record.files_removed_at {
            return Err(RunError::Invalid(format!(
                "run {earlier}'s files were removed on {} (PLANBOARD_WORKSPACE_RETENTION_DAYS), \
                 so the results kept before the chosen subtask are gone; start a new run instead",
                at.format("%Y-%m-%d %H:%M UTC")
            )));
        }
        let plan_id = record
            .plan_id
            .ok_or_else(|| RunError::Invalid(format!("run {earlier} has no plan to run again")))?;
        let source = self
            .plans
            .read(plan_id, |p| p.clone())
            .await
            .ok_or_else(|| RunError::Invalid(format!("run {earlier}'s plan was deleted")))?;
        let (config, agent) = self.check_start(config)?;
        // An ACP agent keeps its own plan: it cannot be handed one to
        // redo from a subtask.
        let agent = agent.ok_or_else(|| {
            RunError::Invalid(format!(
                "run {earlier} was an ACP agent's; start a new run with the agent instead"
            ))
        })?;
        let id = uuid::Uuid::new_v4();
        let workspace = self.workspace(id);
        crate::workspace::inputs::copy_workspace(
            self.workspace(earlier),
            workspace.clone(),
            self.workspaces.quota(),
        )
        .await?;
        let started = agent
            .start_again(id, config, who, earlier, &source, from)
            .await;
        let record = match started {
            Ok(record) => record,
            Err(e) => {
                let _ = tokio::fs::remove_dir_all(&workspace).await;
                return Err(e.into());
            }
        };
        self.keep().await;
        self.view(record).await
    }
}

/// The plan refused to be run again from there (the caller's), or the
/// agent's host failed (a failed store: the server's).
impl From<AgainFailure> for RunError {
    fn from(e: AgainFailure) -> Self {
        match e {
            AgainFailure::Again(e) => RunError::Again(e),
            AgainFailure::Host(e) => e.into(),
        }
    }
}
