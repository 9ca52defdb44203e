//! A world for the stories: an in-memory host, a scripted model whose
//! default answers do the work, the agent, and a person called ada.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::llm::{CallRole, ChatRequest, Reply, Shape};
use agent::{Agent, Host, MemoryHost, RunConfig, RunEntry, RunId, RunRecord, ScriptedLlm};
use plan_engine::{Op, Plan, PlanId, SubtaskState};
use serde_json::{json, Value};
use tokio::task::JoinHandle;

pub struct World {
    pub host: Arc<MemoryHost>,
    pub llm: Arc<ScriptedLlm>,
    pub agent: Arc<Agent>,
    run: Mutex<Option<RunId>>,
}

/// The name of the subtask an executor request is about.
pub fn subtask_name(request: &ChatRequest) -> Option<String> {
    let brief = &request.messages.get(1)?.content;
    let line = brief.lines().find(|l| l.starts_with("Your subtask #"))?;
    Some(line.split_once(": ")?.1.to_string())
}

/// What a diligent model answers when the script says nothing.
pub fn answer(request: &ChatRequest) -> Reply {
    match request.role {
        CallRole::Executor => {
            let name = subtask_name(request).unwrap_or_default();
            Reply::Json(json!({"action": "complete", "result": format!("result of {name}")}))
        }
        CallRole::Compiler => Reply::Text("the final answer".into()),
        // A model that writes no check: the executor's result stands (the
        // checker's own stories script it).
        CallRole::Checker => Reply::Error(agent::llm::LlmError::new(
            agent::llm::ErrorClass::BadRequest,
            "no check is scripted",
        )),
        CallRole::Adapter => match &request.shape {
            Shape::Json { name: "adapt", .. } => Reply::Json(
                json!({"drop": [], "needs_change": false, "reason": "fine", "revise": []}),
            ),
            Shape::Json {
                name: "recover", ..
            } => Reply::Json(
                json!({"decision": "give_up", "reason": "a person must look", "name": "", "description": ""}),
            ),
            _ => Reply::Json(
                json!({"drop": [], "needs_update": false, "reason": "fine", "new_todos": []}),
            ),
        },
        // Where the answer comes from: the web, so every tool stays offered
        // (the stories of that question script it).
        CallRole::Classifier => match &request.shape {
            Shape::Json { name: "source", .. } => {
                Reply::Json(json!({"source": "web", "why": "default"}))
            }
            _ => Reply::Json(json!({"confidence": 0.5, "mode": "simple", "reason": "default"})),
        },
        CallRole::Planner => Reply::Json(plan_json(&[("only", &[])])),
    }
}

pub fn worker() -> ScriptedLlm {
    ScriptedLlm::new().responder(answer)
}

pub fn plan_json(subtasks: &[(&str, &[u32])]) -> Value {
    json!({
        "title": "the plan",
        "subtasks": subtasks.iter().map(|(name, after)| json!({
            "name": name, "description": format!("do {name}"), "expected_outcome": "", "depends_on": after,
        })).collect::<Vec<_>>(),
    })
}

pub fn config(task: &str) -> RunConfig {
    RunConfig {
        task: task.into(),
        approval_required: false,
        ..RunConfig::default()
    }
}

/// [`config`] in the simple mode.
pub fn simple(task: &str) -> RunConfig {
    let mut c = config(task);
    c.mode = agent::ModeChoice::Simple;
    c
}

pub struct Watcher(Arc<AtomicUsize>);

impl Watcher {
    pub fn max(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl World {
    pub fn new(llm: ScriptedLlm) -> World {
        World::with_agent(llm, |agent| agent)
    }

    /// A world whose agent's model is `wrap` around the scripted one (a
    /// gate that watches calls in flight), with `concurrency` model calls
    /// at once (`PLANBOARD_LLM_CONCURRENCY`).
    pub fn wrapped(
        llm: ScriptedLlm,
        wrap: impl FnOnce(Arc<ScriptedLlm>) -> Arc<dyn agent::Llm>,
        concurrency: usize,
    ) -> World {
        let host = MemoryHost::new();
        let llm = Arc::new(llm);
        let agent = Agent::new(host.clone(), wrap(llm.clone()), concurrency);
        World {
            host,
            llm,
            agent: Arc::new(agent),
            run: Mutex::new(None),
        }
    }

    /// A world whose agent is set up further by `setup` (its tools).
    pub fn with_agent(llm: ScriptedLlm, setup: impl FnOnce(Agent) -> Agent) -> World {
        let host = MemoryHost::new();
        let llm = Arc::new(llm);
        let agent = setup(Agent::new(host.clone(), llm.clone(), 8));
        World {
            host,
            llm,
            agent: Arc::new(agent),
            run: Mutex::new(None),
        }
    }

    /// A world whose agent reads files in `dir` (`list_files`,
    /// `read_file`), nothing else.
    pub fn reading(llm: ScriptedLlm, dir: &std::path::Path) -> World {
        use agent::tools::{files::FileTools, ToolBox, Toolset};
        let root = dir.to_path_buf();
        World::with_agent(llm, move |agent| {
            agent.with_tools(move |_| {
                let files: Arc<dyn ToolBox> = Arc::new(FileTools::new(&root).unwrap());
                Toolset::new(vec![files])
            })
        })
    }

    pub async fn start(&self, config: RunConfig) -> JoinHandle<RunRecord> {
        let record = self.agent.start(config, "ada").await.unwrap();
        *self.run.lock().unwrap() = Some(record.id);
        let agent = self.agent.clone();
        tokio::spawn(async move { agent.drive(record).await })
    }

    pub async fn run(&self, config: RunConfig) -> RunRecord {
        let driving = self.start(config).await;
        tokio::time::timeout(Duration::from_secs(20), driving)
            .await
            .expect("the run finishes")
            .unwrap()
    }

    pub fn plan(&self) -> Plan {
        self.host.only_plan().expect("a plan was created")
    }

    pub fn stored_run(&self) -> RunRecord {
        let id = self.run.lock().unwrap().expect("a run was started");
        self.host.run(id).expect("the run is stored")
    }

    pub fn run_state(&self) -> agent::RunState {
        self.stored_run().state
    }

    pub fn entries(&self) -> Vec<RunEntry> {
        let id = self.run.lock().unwrap().expect("a run was started");
        self.host.entries(id)
    }

    /// What the agent told the executor, beginning with `prefix`: the
    /// last message of the first executor call that ends with it.
    pub fn told(&self, prefix: &str) -> Option<String> {
        self.llm
            .requests()
            .iter()
            .filter(|r| r.role == CallRole::Executor)
            .filter_map(|r| r.messages.last())
            .find(|m| m.content.starts_with(prefix))
            .map(|m| m.content.clone())
    }

    /// The first message of the last executor call about `name`.
    pub fn executor_prompt(&self, name: &str) -> String {
        self.llm
            .requests()
            .iter()
            .rev()
            .find(|r| r.role == CallRole::Executor && subtask_name(r).as_deref() == Some(name))
            .map(|r| r.messages[1].content.clone())
            .unwrap_or_else(|| panic!("no executor call for {name}"))
    }

    pub async fn wait_plan(&self, done: impl Fn(&Plan) -> bool) -> Plan {
        for _ in 0..4000 {
            if let Some(plan) = self.host.only_plan().filter(|p| done(p)) {
                return plan;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the plan never got there: {:#?}", self.host.only_plan());
    }

    pub async fn wait_run(&self, done: impl Fn(&RunRecord) -> bool) -> RunRecord {
        for _ in 0..4000 {
            let run = self.stored_run();
            if done(&run) {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the run never got there: {:#?}", self.stored_run());
    }

    /// ada changes the plan.
    pub async fn person(&self, plan: PlanId, ops: Vec<Op>) {
        self.host.execute(plan, ops, "ada").await.unwrap();
    }

    /// Tracks the most subtasks in progress at once.
    pub fn watch_parallelism(&self) -> Watcher {
        let max = Arc::new(AtomicUsize::new(0));
        let seen = max.clone();
        let host = self.host.clone();
        tokio::spawn(async move {
            let mut plan = loop {
                if let Some(p) = host.only_plan() {
                    break p;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            };
            loop {
                seen.fetch_max(plan.count(SubtaskState::InProgress), Ordering::SeqCst);
                match host.changed(plan.id(), plan.version()).await {
                    Ok(next) => plan = next,
                    Err(_) => return,
                }
            }
        });
        Watcher(max)
    }
}
