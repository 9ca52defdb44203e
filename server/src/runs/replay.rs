//! Replaying a run (issue 56): a new run of a finished run's task and
//! files, on a chosen model, whose tool calls the recorded run's log
//! answers when they are the same call (the agent's `replay`). Planned
//! anew by default, in a workspace holding the recorded run's input files
//! only; or, from a subtask, on a copy of the recorded plan that keeps the
//! results before it, in a copy of the recorded run's workspace ("Run
//! again from here", whose path this shares). A replay is an ordinary run
//! (its approval, guards, budget and board); it neither recalls nor is
//! remembered unless the person asks (`memory`), since memories written
//! since the recorded run, its own among them, would change what it is
//! measured against.

use agent::RunId;
use plan_engine::SubtaskId;
use run_model::{ReplayOf, RunConfig, Unmatched};

use super::{RunError, RunView, Runs};

/// What a replay is asked for (the API's, MCP's and the board's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayRequest {
    /// The model to replay on; `None`: the recorded run's choice, else
    /// the configured model.
    pub model: Option<String>,
    /// Redo the work from this subtask of the recorded plan, keeping the
    /// results before it; `None`: plan the task anew.
    pub from: Option<SubtaskId>,
    pub unmatched: Unmatched,
    /// Recall memories and be remembered (default: neither).
    pub memory: bool,
}

impl Runs {
    /// Starts a replay of the finished run `earlier` (see the module).
    pub async fn replay(
        self: &std::sync::Arc<Self>,
        earlier: RunId,
        request: ReplayRequest,
        who: &str,
    ) -> Result<RunView, RunError> {
        let record = self.record(earlier).await?;
        if !record.state.is_finished() {
            return Err(RunError::NotFinished(format!(
                "run {earlier} is {}; a run is replayed once it has finished (done, failed or \
                 cancelled), when its recording is whole",
                record.state
            )));
        }
        let mut config = record.config.clone();
        if request.model.is_some() {
            config.model = request.model;
        }
        config.memory = request.memory;
        config.case = None;
        // A plan people wrote is not planned anew: its replay redoes it
        // from its first subtask.
        let from = match (request.from, config.plan, record.plan_id) {
            (Some(from), _, _) => Some(from),
            (None, Some(_), Some(plan)) => self
                .plans
                .read(plan, |p| p.subtasks().first().map(|s| s.id()))
                .await
                .flatten(),
            _ => None,
        };
        config.replay = Some(ReplayOf {
            run: earlier,
            unmatched: request.unmatched,
            from,
        });
        match from {
            Some(from) => self.again_with(earlier, from, who, config).await,
            None => self.replay_anew(earlier, config, who).await,
        }
    }

    /// A replay planned anew, in a workspace holding the recorded run's
    /// input files (not what it wrote).
    async fn replay_anew(
        self: &std::sync::Arc<Self>,
        earlier: RunId,
        mut config: RunConfig,
        who: &str,
    ) -> Result<RunView, RunError> {
        let record = self.record(earlier).await?;
        if let Some(at) = record
            .files_removed_at
            .filter(|_| !config.inputs.is_empty())
        {
            return Err(RunError::Invalid(format!(
                "run {earlier}'s files were removed on {} (PLANBOARD_WORKSPACE_RETENTION_DAYS), \
                 so the files its task started from are gone; start a new run with them instead",
                at.format("%Y-%m-%d %H:%M UTC")
            )));
        }
        config.plan = None;
        self.start_on_inputs(config, self.workspace(earlier), who)
            .await
    }

    /// Starts a run whose workspace begins with its config's input files,
    /// copied from the folder `from` (a recorded run's workspace, a
    /// regression case's copy of its inputs): a replay planned anew, a
    /// suite's run of a case.
    pub async fn start_on_inputs(
        self: &std::sync::Arc<Self>,
        config: RunConfig,
        from: std::path::PathBuf,
        who: &str,
    ) -> Result<RunView, RunError> {
        let (config, agent) = self.check_start(config)?;
        // An ACP agent's tools are its own: a replay answers planboard's.
        let agent = agent.ok_or_else(|| {
            RunError::Invalid(
                "an ACP agent's task is not replayed: a replay answers planboard's own agent's \
                 tool calls"
                    .into(),
            )
        })?;
        let id = uuid::Uuid::new_v4();
        let workspace = self.workspace(id);
        let inputs: Vec<String> = config.inputs.iter().map(|f| f.path.clone()).collect();
        crate::workspace::inputs::copy_files(
            from,
            workspace.clone(),
            inputs,
            self.workspaces.quota(),
        )
        .await?;
        if let Some(telemetry) = &self.telemetry {
            telemetry.adopt(id, None);
        }
        let started = match agent.start_as(id, config, who).await {
            Ok(record) => record,
            Err(e) => {
                let _ = tokio::fs::remove_dir_all(&workspace).await;
                return Err(e.into());
            }
        };
        self.keep().await;
        self.view(started).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_is_asked_for_live_from_the_start_and_forgotten_by_default() {
        let request = ReplayRequest::default();
        assert_eq!(request.unmatched, Unmatched::Live);
        assert_eq!((request.from, request.memory), (None, false));
    }
}
