//! What a run is started with: the task, the mode, approval, parallelism
//! and the budget, and why a config is refused.

use plan_engine::Mode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub type RunId = uuid::Uuid;
/// A regression case's id ([`crate::case`]).
pub type CaseId = uuid::Uuid;
/// A suite run's id ([`crate::suite`]).
pub type SuiteRunId = uuid::Uuid;

/// The longest model name a run, a replay or a suite may ask for.
pub const MODEL_NAME_CHARS: usize = 200;

plan_engine::wire_enum! {
    /// What a replay does with a tool call its recording does not hold
    /// ([`crate::replay`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum Unmatched: "unmatched (live or stop)" {
        /// The call is made, as in any run.
        #[default]
        Live = "live",
        /// The run pauses at the call, saying which call it is, for a
        /// person to skip or edit the subtask or to resume (the call and
        /// any later unmatched one are then made live).
        Stop = "stop",
    }
}

/// A run that replays another: the recorded run whose tool results
/// answer this run's calls, what an unmatched call does, and the subtask
/// of the recorded plan the work was redone from (the results before it
/// kept, as "Run again from here" keeps them); `None`: the task was
/// planned anew.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReplayOf {
    pub run: RunId,
    #[serde(default)]
    pub unmatched: Unmatched,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<plan_engine::SubtaskId>,
}

/// The regression case a run belongs to (a suite run's run of it): a
/// review of such a run is a finding about the case, never a new case.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CaseRun {
    pub case: CaseId,
    pub suite: SuiteRunId,
}

plan_engine::wire_enum! {
    /// `auto` lets the classifier decide.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    pub enum ModeChoice: "mode (auto, simple, complex or emergent)" {
        #[default]
        Auto = "auto",
        Simple = "simple",
        Complex = "complex",
        Emergent = "emergent",
    }
}

impl ModeChoice {
    pub fn forced(self) -> Option<Mode> {
        match self {
            ModeChoice::Auto => None,
            ModeChoice::Simple => Some(Mode::Simple),
            ModeChoice::Complex => Some(Mode::Complex),
            ModeChoice::Emergent => Some(Mode::Emergent),
        }
    }
}

plan_engine::wire_enum! {
    /// What the use of a work tool needs (Magentic-UI's action guards).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum ToolPolicy: "tool policy (auto, ask or never)" {
        /// The agent uses it freely.
        #[default]
        Auto = "auto",
        /// Each call waits for a person to approve, edit or deny it.
        Ask = "ask",
        /// Not offered at all.
        Never = "never",
    }
}

impl ToolPolicy {
    /// The stricter of two policies (`auto` < `ask` < `never`): how a
    /// run's own choice meets the operator's.
    pub fn stricter(self, other: ToolPolicy) -> ToolPolicy {
        let rank = |p: ToolPolicy| match p {
            ToolPolicy::Auto => 0,
            ToolPolicy::Ask => 1,
            ToolPolicy::Never => 2,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

/// Limits per run; reaching one pauses the run with the reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Budget {
    pub max_llm_calls: u32,
    pub max_tokens: u64,
    /// Seconds of wall time, counted while the run is running (seed 002: 30 min).
    pub max_wall_secs: u64,
    /// ReAct turns per subtask attempt.
    pub max_turns: u32,
    /// Money the run's model calls may cost; `None`: no limit. Calls to a
    /// model without a price count nothing against it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<crate::Usd>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_llm_calls: 200,
            max_tokens: 1_000_000,
            max_wall_secs: 30 * 60,
            max_turns: 8,
            max_cost: None,
        }
    }
}

/// Everything a run is started with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunConfig {
    pub task: String,
    pub mode: ModeChoice,
    pub approval_required: bool,
    /// Subtasks in progress at once ([`DEFAULT_PARALLEL`] unless set): a
    /// complex plan's super-step and an emergent list's ready TODOs start
    /// up to this many together; a simple plan runs one at a time.
    pub max_parallel: u32,
    pub budget: Budget,
    /// The work tools the run may use, by name; `None`: every tool offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The files the run started with, already in its workspace: what the
    /// planner and the executor are told about them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<InputFile>,
    /// Per-tool policies for this run, over the operator's (which keep
    /// their `never`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub policies: std::collections::BTreeMap<String, ToolPolicy>,
    /// Attempts the agent makes at a failing subtask before the planner
    /// decides what to do with it (seed 002 `maxRetries`, default 3).
    pub max_attempts: u32,
    /// The wait after a failed attempt is this, times 2 to the attempt
    /// (seed 002 `retryDelay`, default 1000 ms: 2 s, then 4 s).
    pub retry_delay_ms: u64,
    /// Recall memories of earlier runs before classifying and planning,
    /// and remember this one when it ends (default true).
    pub memory: bool,
    /// The template the run starts from (saved with the run, so a later
    /// change to the template does not change a run in flight): its mode
    /// unless the person chose one, and its steps for the planner to adapt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<crate::Template>,
    /// Go through one of the input files a batch of items at a time (seed
    /// 002's iterative batches; the complex mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<crate::Batching>,
    /// A plan people (or another agent) wrote, for the agent to work as it
    /// is: no classifier and no planner; the usual approval, steering,
    /// retries and memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<plan_engine::PlanId>,
    /// A complex plan is reviewed after every super-step (seed 004's
    /// adaptive re-planning as written), not only after one that fell
    /// short or failed (the default). What the adapter may add stays
    /// within the run's adaptation budget either way.
    pub adapt_every_step: bool,
    /// The model this run's calls ask for, on the configured endpoint,
    /// over the configured one (for every role, the classifier's too):
    /// a replay's or a suite run's choice. `None`: the configured model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A replay: the recorded run whose tool results answer this run's
    /// calls when they are the same call ([`ReplayOf`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayOf>,
    /// The regression case and suite run this run belongs to: a review of
    /// it is a finding about the case, never a new case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<CaseRun>,
    /// Who does the task: `None` (the default), planboard's own agent;
    /// `Some(name)`, the ACP agent of that name an admin added (`GET
    /// /api/agents`), which planboard starts as its client in the run's
    /// workspace. Such a run has no classifier, planner or model of
    /// planboard's: the agent's own plan updates are its plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The approved plan is the contract: when the plan's graph
    /// similarity to the version a person approved falls below this
    /// (0.0 to 1.0; 0: never), the run pauses until a person approves it
    /// again. Default [`plan_engine::distance::DRIFT_THRESHOLD`].
    pub drift_threshold: f64,
    /// The run's own two-person rule, over the operator's (which it may
    /// only make stricter): for its plan and its guarded calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_rule: Option<crate::rule::ApprovalRule>,
}

/// A file the person gave the run, as the model is told about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InputFile {
    /// Relative to the workspace.
    pub path: String,
    pub bytes: u64,
    /// The start of the file when it is text (at most [`PREVIEW_CHARS`]
    /// characters); `None` for a binary file.
    pub preview: Option<String>,
}

impl InputFile {
    /// The file's name without its folders ("q1.csv" of "data/q1.csv").
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    /// Whether a task's `name` for a file means this one: its path, or
    /// its name alone.
    pub fn is_named(&self, name: &str) -> bool {
        self.path == name || self.name() == name
    }
}

/// Most bytes of one uploaded file, and of all of a run's uploads together.
pub const MAX_FILE_BYTES: usize = 20 * 1024 * 1024;
pub const MAX_FILES_BYTES: usize = 50 * 1024 * 1024;
/// Most files one run's uploads hold.
pub const MAX_FILES: usize = 50;
/// The longest name of an uploaded file, in bytes (a file system's name
/// holds 255; room is left for the names planboard derives from it).
pub const FILE_NAME_BYTES: usize = 200;

/// Characters of each input file shown to the model.
pub const PREVIEW_CHARS: usize = 400;
/// Input files listed to the model by name; the rest are counted.
pub const INPUTS_LISTED: usize = 30;

/// Where [`RunConfig::task_for_model`] starts listing the files: what
/// comes before it is the person's own words.
pub const FILES_HEADING: &str = "Files in the workspace";

impl RunConfig {
    /// The task as the planner and the executor read it: with the files
    /// the run started from, when there are any (bounded: at most
    /// [`INPUTS_LISTED`] files, [`PREVIEW_CHARS`] characters of each).
    pub fn task_for_model(&self) -> String {
        if self.inputs.is_empty() {
            return self.task.clone();
        }
        let mut out = format!(
            "{}\n\n{FILES_HEADING} (given by the person; read them with read_file, \
             or open them in run_python by their path):",
            self.task
        );
        for file in self.inputs.iter().take(INPUTS_LISTED) {
            out.push_str(&format!("\n- {} ({} bytes)", file.path, file.bytes));
            match &file.preview {
                Some(preview) => {
                    let shown = plan_engine::text::prefix(preview, PREVIEW_CHARS);
                    out.push_str(":\n  ");
                    out.push_str(&shown.replace('\n', "\n  "));
                }
                None => out.push_str(" (binary)"),
            }
        }
        if self.inputs.len() > INPUTS_LISTED {
            out.push_str(&format!(
                "\n- … and {} more files",
                self.inputs.len() - INPUTS_LISTED
            ));
        }
        out
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            task: String::new(),
            mode: ModeChoice::Auto,
            approval_required: true,
            max_parallel: DEFAULT_PARALLEL,
            budget: Budget::default(),
            tools: None,
            inputs: Vec::new(),
            policies: Default::default(),
            max_attempts: 3,
            retry_delay_ms: 1_000,
            memory: true,
            template: None,
            batches: None,
            plan: None,
            adapt_every_step: false,
            model: None,
            replay: None,
            case: None,
            agent: None,
            drift_threshold: plan_engine::distance::DRIFT_THRESHOLD,
            approval_rule: None,
        }
    }
}

/// The longest name of an ACP agent (and of an MCP server): letters,
/// digits, `-` and `_`.
pub const AGENT_NAME_CHARS: usize = 40;

/// Whether `name` can name an ACP agent: 1 to [`AGENT_NAME_CHARS`]
/// letters, digits, `-` or `_`.
pub fn valid_agent_name(name: &str) -> bool {
    (1..=AGENT_NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The longest task, in characters.
pub const MAX_TASK_CHARS: usize = 8000;
/// The most subtasks a run may have in progress at once.
pub const MAX_PARALLEL: u32 = 32;
/// Subtasks in progress at once when a run does not say (complex and
/// emergent plans; a simple plan is a chain): enough to overlap a few
/// slow model calls without flooding a local model that serves one or
/// two at a time.
pub const DEFAULT_PARALLEL: u32 = 4;
/// The most attempts at one subtask a run may allow.
pub const MAX_ATTEMPTS: u32 = 10;
/// The longest base wait between attempts, in milliseconds.
pub const MAX_RETRY_DELAY_MS: u64 = 60_000;
/// The most tool names a run's `tools` may list.
pub const MAX_TOOLS: usize = 100;
/// The longest work tool name a run's tools and policies may give.
pub const TOOL_NAME_CHARS: usize = 64;

/// Why a config cannot start a run, in words for whoever sent it (the
/// API, the board, MCP).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("the task must have 1 to {MAX_TASK_CHARS} characters, not {chars}")]
    TaskLength { chars: usize },
    #[error("max_parallel must be 1 to {MAX_PARALLEL}, not {given}")]
    MaxParallel { given: u32 },
    #[error("tools lists at most {MAX_TOOLS} names of 1 to 64 characters")]
    Tools,
    #[error(
        "max_attempts must be 1 to {MAX_ATTEMPTS} and retry_delay_ms at most {MAX_RETRY_DELAY_MS}"
    )]
    Attempts,
    #[error("batches: {0}")]
    Batches(String),
    #[error("model must name a model of 1 to {MODEL_NAME_CHARS} characters")]
    Model,
    #[error("agent names an ACP agent: 1 to {AGENT_NAME_CHARS} letters, digits, '-' or '_'")]
    Agent,
    /// What an ACP agent's run cannot have (its agent plans and works
    /// alone): batches, a plan given to work, a template.
    #[error("a run given to an ACP agent takes no {0}")]
    NotForAgent(&'static str),
    #[error("drift_threshold is from 0.0 (never) to 1.0, not {0}")]
    Drift(String),
}

impl ConfigError {
    /// The field the error is about, for forms that mark it.
    pub fn field(&self) -> &'static str {
        match self {
            ConfigError::TaskLength { .. } => "task",
            ConfigError::MaxParallel { .. } => "max_parallel",
            ConfigError::Tools => "tools",
            ConfigError::Attempts => "max_attempts",
            ConfigError::Batches(_) => "batches",
            ConfigError::Model => "model",
            ConfigError::Agent | ConfigError::NotForAgent(_) => "agent",
            ConfigError::Drift(_) => "drift_threshold",
        }
    }
}

impl RunConfig {
    /// The config with its task trimmed, or why it cannot start a run.
    pub fn checked(mut self) -> Result<RunConfig, ConfigError> {
        self.task = self.task.trim().to_string();
        let chars = self.task.chars().count();
        if chars == 0 || chars > MAX_TASK_CHARS {
            return Err(ConfigError::TaskLength { chars });
        }
        if !(1..=MAX_PARALLEL).contains(&self.max_parallel) {
            return Err(ConfigError::MaxParallel {
                given: self.max_parallel,
            });
        }
        if let Some(tools) = &mut self.tools {
            for name in tools.iter_mut() {
                *name = name.trim().to_string();
            }
            if tools.len() > MAX_TOOLS
                || tools
                    .iter()
                    .any(|n| n.is_empty() || n.len() > TOOL_NAME_CHARS)
            {
                return Err(ConfigError::Tools);
            }
            tools.sort();
            tools.dedup();
        }
        if self.policies.len() > MAX_TOOLS
            || self
                .policies
                .keys()
                .any(|n| n.is_empty() || n.len() > TOOL_NAME_CHARS)
        {
            return Err(ConfigError::Tools);
        }
        if !(0.0..=1.0).contains(&self.drift_threshold) {
            return Err(ConfigError::Drift(self.drift_threshold.to_string()));
        }
        if !(1..=MAX_ATTEMPTS).contains(&self.max_attempts)
            || self.retry_delay_ms > MAX_RETRY_DELAY_MS
        {
            return Err(ConfigError::Attempts);
        }
        if let Some(model) = &mut self.model {
            *model = model.trim().to_string();
            let chars = model.chars().count();
            if chars == 0 || chars > MODEL_NAME_CHARS || model.contains(char::is_control) {
                return Err(ConfigError::Model);
            }
        }
        if let Some(batches) = &mut self.batches {
            batches.input = batches.input.trim().to_string();
            if !(1..=crate::batch::MAX_BATCH_SIZE).contains(&batches.size) {
                return Err(ConfigError::Batches(
                    crate::batch::InputError::Size(batches.size).to_string(),
                ));
            }
            let chars = batches.input.chars().count();
            if chars == 0 || chars > crate::batch::INPUT_NAME_CHARS {
                return Err(ConfigError::Batches(format!(
                    "name the input file (1 to {} characters)",
                    crate::batch::INPUT_NAME_CHARS
                )));
            }
            // Every batch is a super-step of independent subtasks.
            if !matches!(self.mode, ModeChoice::Auto | ModeChoice::Complex) {
                return Err(ConfigError::Batches(format!(
                    "a run in batches plans in the complex mode, not {}",
                    self.mode
                )));
            }
        }
        if let Some(agent) = &mut self.agent {
            *agent = agent.trim().to_string();
            if !valid_agent_name(agent) {
                return Err(ConfigError::Agent);
            }
            if self.batches.is_some() {
                return Err(ConfigError::NotForAgent("batches"));
            }
            if self.plan.is_some() {
                return Err(ConfigError::NotForAgent("plan"));
            }
            if self.template.is_some() {
                return Err(ConfigError::NotForAgent("template"));
            }
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_file_is_named_by_its_path_or_by_its_name_alone() {
        let file = InputFile {
            path: "data/q1.csv".into(),
            bytes: 3,
            preview: None,
        };
        assert_eq!(file.name(), "q1.csv");
        assert!(file.is_named("data/q1.csv") && file.is_named("q1.csv"));
        assert!(!file.is_named("data") && !file.is_named("1.csv") && !file.is_named("q2.csv"));
    }

    #[test]
    fn a_config_is_checked_and_its_task_trimmed() {
        let config = |task: &str, max_parallel| RunConfig {
            task: task.into(),
            max_parallel,
            ..RunConfig::default()
        };
        assert_eq!(config("  do it \n", 4).checked().unwrap().task, "do it");
        let e = config("   ", 4).checked().unwrap_err();
        assert_eq!(e, ConfigError::TaskLength { chars: 0 });
        assert!(e.to_string().contains("1 to 8000"));
        assert!(config(&"x".repeat(8001), 4).checked().is_err());
        let e = config("do it", 0).checked().unwrap_err();
        assert_eq!(e.field(), "max_parallel");
        assert!(e.to_string().contains("max_parallel"));
        assert!(config("do it", 33).checked().is_err());
    }

    #[test]
    fn the_model_reads_the_task_with_a_bounded_list_of_its_files() {
        let mut config = RunConfig {
            task: "Sum the sales".into(),
            ..RunConfig::default()
        };
        assert_eq!(config.task_for_model(), "Sum the sales");
        config.inputs = (0..40)
            .map(|i| InputFile {
                path: format!("f{i}.csv"),
                bytes: 10,
                preview: (i % 2 == 0).then(|| "a,b\n1,2\n".repeat(200)),
            })
            .collect();
        let text = config.task_for_model();
        assert!(text.starts_with("Sum the sales\n\nFiles in the workspace"));
        assert!(text.contains("- f0.csv (10 bytes):\n  a,b\n  1,2"));
        assert!(text.contains("- f1.csv (10 bytes) (binary)"));
        assert!(text.contains("… and 10 more files"));
        assert!(!text.contains("f30.csv"));
        // 30 previews of at most 400 characters, plus the lines around them.
        assert!(text.chars().count() < 30 * (PREVIEW_CHARS + 100) + 200);
    }

    #[test]
    fn a_run_for_an_acp_agent_names_it_well_and_has_no_batches_plan_or_template() {
        let config = |agent: &str| RunConfig {
            task: "fix the bug".into(),
            agent: Some(agent.into()),
            ..RunConfig::default()
        };
        assert_eq!(
            config(" codex ").checked().unwrap().agent.as_deref(),
            Some("codex")
        );
        assert_eq!(config("no spaces").checked(), Err(ConfigError::Agent));
        assert_eq!(config("").checked(), Err(ConfigError::Agent));
        let mut given = config("codex");
        given.plan = Some(uuid::Uuid::nil());
        let e = given.checked().unwrap_err();
        assert_eq!(e, ConfigError::NotForAgent("plan"));
        assert_eq!(e.field(), "agent");
        // Old rows without the field read as planboard's own agent.
        let old: RunConfig = serde_json::from_str(r#"{"task": "t"}"#).unwrap();
        assert_eq!(old.agent, None);
        assert!(!serde_json::to_string(&old).unwrap().contains("agent"));
    }

    #[test]
    fn a_mode_choice_reads_its_wire_name() {
        for m in ModeChoice::ALL {
            assert_eq!(m.to_string().parse::<ModeChoice>(), Ok(m));
        }
        assert_eq!(ModeChoice::Auto.forced(), None);
        assert_eq!(ModeChoice::Emergent.forced(), Some(Mode::Emergent));
    }
}
