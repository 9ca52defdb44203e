//! The task box: a task for planboard's own agent, the first thing on `/`
//! and on `/plans/new`. A plain form, rendered on the server and posted to
//! `/plans/new/task`, which starts the run and opens its plan's board (the
//! run shows there from its first moment); it works without the wasm.
//! It is posted as `multipart/form-data`: files chosen in it land in the
//! run's workspace before planning.
//!
//! Every setting of the API's `StartRun` has a control here; all but the
//! task, the files, the mode and approval fold away under *Advanced
//! settings*. Numbers are checked by the browser as they are typed (their
//! `min`, `max` and `step`), the batch file by a small island against the
//! files chosen; the server checks everything again. A refusal comes back
//! to the page the form was on with the reason (`?task_error=`) and every
//! field as it was typed ([`TaskDraft`]); only the files must be chosen
//! again, since no page may fill in a file input.

use leptos::prelude::*;

use crate::i18n::{use_lang, Lang};

/// Where the form posts.
pub const TASK_ROUTE: &str = "/plans/new/task";

use run_model::{MAX_FILES, MAX_FILES_BYTES, MAX_FILE_BYTES};

/// The task box's fields as typed, by their form names: what the server
/// reads from the post, and what a refusal carries back to the form so
/// nothing typed is lost. Numbers stay text, so a bad one comes back as
/// it was typed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskDraft {
    pub task: String,
    pub mode: String,
    pub max_parallel: String,
    /// Empty: the default budget.
    pub max_tokens: String,
    pub max_minutes: String,
    /// US dollars; empty: no limit.
    pub max_cost: String,
    pub max_llm_calls: String,
    /// Turns per subtask attempt.
    pub max_turns: String,
    pub max_attempts: String,
    /// Seconds (the API's `retry_delay_ms` / 1000).
    pub retry_delay: String,
    /// Checkboxes: present when ticked.
    pub approval: bool,
    /// The memory opt-out: the run neither recalls nor leaves memories.
    pub no_memory: bool,
    pub adapt_every_step: bool,
    pub include_secret_files: bool,
    /// The tools ticked; `tools_chosen` says the form had the choice (so
    /// none ticked means none, not all).
    pub tools: Vec<String>,
    pub tools_chosen: bool,
    /// The tools whose every call waits for a person in this run.
    pub ask: Vec<String>,
    /// An allowed folder to start from.
    pub source: String,
    /// A template's id; empty: none.
    pub template: String,
    /// The file to go through in batches; empty: none.
    pub batch_input: String,
    pub batch_size: String,
    /// The page the form was on (`/` or `/plans/new`), where a refusal
    /// goes back to.
    pub from: String,
    /// Who does the task: empty, planboard's own agent; else an ACP
    /// agent's name.
    pub agent: String,
}

/// The key of a field in the address a refusal goes back to: `task` and
/// `template` as they are (a template link is `/plans/new?template=`),
/// the rest with `task_` before it, so none meets the plans list's own
/// filters on `/` (`mode`, `q`, …).
fn back_key(name: &str) -> String {
    match name {
        "task" | "template" => name.to_string(),
        _ => format!("task_{name}"),
    }
}

impl TaskDraft {
    /// What an untouched form shows: the API's defaults.
    pub fn fresh() -> TaskDraft {
        let config = run_model::RunConfig::default();
        let budget = &config.budget;
        TaskDraft {
            mode: "auto".into(),
            max_parallel: config.max_parallel.to_string(),
            max_tokens: budget.max_tokens.to_string(),
            max_minutes: (budget.max_wall_secs / 60).to_string(),
            max_llm_calls: budget.max_llm_calls.to_string(),
            max_turns: budget.max_turns.to_string(),
            max_attempts: config.max_attempts.to_string(),
            retry_delay: seconds(config.retry_delay_ms),
            approval: config.approval_required,
            no_memory: !config.memory,
            adapt_every_step: config.adapt_every_step,
            ..TaskDraft::default()
        }
    }

    /// One posted field, by its form name; unknown names are ignored.
    pub fn set(&mut self, name: &str, text: String) {
        match name {
            "task" => self.task = text,
            "mode" => self.mode = text,
            "max_parallel" => self.max_parallel = text,
            "max_tokens" => self.max_tokens = text,
            "max_minutes" => self.max_minutes = text,
            "max_cost" => self.max_cost = text,
            "max_llm_calls" => self.max_llm_calls = text,
            "max_turns" => self.max_turns = text,
            "max_attempts" => self.max_attempts = text,
            "retry_delay" => self.retry_delay = text,
            "approval" => self.approval = true,
            "no_memory" => self.no_memory = true,
            "adapt_every_step" => self.adapt_every_step = true,
            "include_secret_files" => self.include_secret_files = true,
            "tool" => self.tools.push(text),
            "tools_chosen" => self.tools_chosen = true,
            "ask" => self.ask.push(text),
            "source" => self.source = text,
            "template" => self.template = text,
            "batch_input" => self.batch_input = text,
            "batch_size" => self.batch_size = text,
            "from" => self.from = text,
            "agent" => self.agent = text,
            _ => {}
        }
    }

    /// The fields as a form posts them (a ticked box is present, an
    /// unticked one absent).
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![
            ("task", self.task.clone()),
            ("mode", self.mode.clone()),
            ("max_parallel", self.max_parallel.clone()),
            ("max_tokens", self.max_tokens.clone()),
            ("max_minutes", self.max_minutes.clone()),
            ("max_cost", self.max_cost.clone()),
            ("max_llm_calls", self.max_llm_calls.clone()),
            ("max_turns", self.max_turns.clone()),
            ("max_attempts", self.max_attempts.clone()),
            ("retry_delay", self.retry_delay.clone()),
            ("source", self.source.clone()),
            ("template", self.template.clone()),
            ("batch_input", self.batch_input.clone()),
            ("batch_size", self.batch_size.clone()),
            ("agent", self.agent.clone()),
        ];
        for (name, on) in [
            ("approval", self.approval),
            ("no_memory", self.no_memory),
            ("adapt_every_step", self.adapt_every_step),
            ("include_secret_files", self.include_secret_files),
            ("tools_chosen", self.tools_chosen),
        ] {
            if on {
                pairs.push((name, "on".into()));
            }
        }
        pairs.extend(self.tools.iter().map(|t| ("tool", t.clone())));
        pairs.extend(self.ask.iter().map(|t| ("ask", t.clone())));
        pairs
    }

    /// The address a refusal goes back to: the page the form was on, the
    /// reason, and every field as it was typed.
    pub fn back_to(&self, error: &str) -> String {
        let mut query = vec![
            ("task_error".to_string(), error.to_string()),
            ("task_back".to_string(), "1".to_string()),
        ];
        query.extend(
            self.pairs()
                .into_iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (back_key(k), v)),
        );
        let page = if self.from == "/" { "/" } else { "/plans/new" };
        let text = query
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    crate::words::urlencode(k),
                    crate::words::urlencode(v)
                )
            })
            .collect::<Vec<_>>()
            .join("&");
        format!("{page}?{text}")
    }

    /// The draft an address carries back (see [`TaskDraft::back_to`]), or
    /// `None` when it carries none.
    pub fn from_address(search: &str) -> Option<TaskDraft> {
        let pairs: Vec<(String, String)> = crate::api::search_pairs(search).collect();
        if !pairs.iter().any(|(k, _)| k == "task_back") {
            return None;
        }
        let mut draft = TaskDraft::default();
        for (key, value) in pairs {
            let name = match key.as_str() {
                "task" | "template" => key.as_str(),
                other => match other.strip_prefix("task_") {
                    Some(name) => name,
                    None => continue,
                },
            };
            draft.set(name, value);
        }
        Some(draft)
    }
}

/// Milliseconds as seconds, without a trailing `.0`.
fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        (ms / 1000).to_string()
    } else {
        format!("{}", ms as f64 / 1000.0)
    }
}

/// The short line of what the agent can use: the model and whether it
/// answers, the tools on, and the files it can start from.
fn agent_line(agent: &crate::api::AgentInfo, lang: Lang) -> impl IntoView {
    use run_model::ModelStatus;
    let state = match &agent.model_status {
        ModelStatus::Ready => Some(("ready", lang.pick("answers", "可响应"))),
        ModelStatus::Waiting { .. } => {
            Some(("waiting", lang.pick("does not answer yet", "尚未响应")))
        }
        ModelStatus::Died { .. } => Some(("died", lang.pick("stopped", "已停止"))),
        ModelStatus::None => None,
    };
    let model = agent.model.clone().map(|m| {
        view! {
            <span data-testid="agent-model">{lang.pick("Model: ", "模型：")}<code>{m}</code></span>
            {state.map(|(class, words)| view! {
                " "<span class=format!("badge model-{class}") data-testid="agent-model-state">{words}</span>
            })}
        }
    });
    let no_model = agent
        .model
        .is_none()
        .then(|| view! { <span>{lang.pick("No model", "没有模型")}</span> });
    // Runs share the model: what a new task waits behind.
    let queue = (agent.model.is_some() && agent.model_waiting > 0).then(|| {
        let n = agent.model_waiting;
        view! {
            " "<span class="badge model-busy" data-testid="agent-model-queue">{lang.pick(
                format!("busy: {n} calls waiting for the model"),
                format!("忙碌：{n} 个调用在等待模型"),
            )}</span>
        }
    });
    let tools = agent.tools.len();
    let folders = agent.workspace_roots.len();
    let files = if folders == 0 {
        lang.pick(
            format!("Files: up to {MAX_FILES} of yours"),
            format!("文件：你的最多 {MAX_FILES} 个"),
        )
    } else {
        lang.pick(
            format!("Files: up to {MAX_FILES} of yours, or an allowed folder ({folders})"),
            format!("文件：你的最多 {MAX_FILES} 个，或一个允许的文件夹（{folders} 个）"),
        )
    };
    view! {
        <p class="agent-line" data-testid="agent-line">
            {model}{no_model}{queue}
            " · "
            <span data-testid="agent-tools">{lang.pick(
                format!("Tools: {tools} on"),
                format!("工具：已开启 {tools} 个"),
            )}</span>
            " · "
            <span data-testid="agent-files">{files}</span>
        </p>
    }
}

/// `agent` is read on the server while rendering; `from` is the page the
/// box is on (a refusal comes back there); `advanced_open` unfolds the
/// advanced settings (a refusal unfolds them too, to show what was typed).
#[component]
pub fn TaskBox(
    agent: crate::api::AgentInfo,
    #[prop(into)] from: String,
    advanced_open: bool,
) -> impl IntoView {
    let lang = use_lang();
    let search = leptos_router::hooks::use_location().search.get_untracked();
    let error = crate::api::search_pairs(&search)
        .find(|(k, _)| k == "task_error")
        .map(|(_, v)| v);
    let back = TaskDraft::from_address(&search);
    let came_back = back.is_some();
    let draft = back.unwrap_or_else(TaskDraft::fresh);
    let line = agent_line(&agent, lang);
    let model = agent.model;
    // Without a model, the box still gives tasks to ACP agents.
    let acp = agent.acp_agents.clone();
    let no_model = model.is_none() && acp.is_empty();
    let (waiting, doing, died) = match agent.model_status {
        run_model::ModelStatus::Waiting { doing } => (true, doing, None),
        run_model::ModelStatus::Died { reason, log } => (false, None, Some((reason, log))),
        run_model::ModelStatus::None | run_model::ModelStatus::Ready => (false, None, None),
    };
    let ask_hint = lang.pick(
        "Ask me first: each call waits for a person to approve, edit or deny it (tools the operator guards ask anyway)",
        "先问我：每次调用都等人批准、修改或拒绝（运营方设了防护的工具无论如何都会先问）",
    );
    let tools = agent
        .tools
        .into_iter()
        .map(|(name, description)| {
            let on = !draft.tools_chosen || draft.tools.contains(&name);
            let ask = draft.ask.contains(&name);
            view! {
                <div class="tool-row">
                    <label class="check tool-choice" title=description>
                        <input name="tool" type="checkbox" value=name.clone() checked=on data-testid=format!("task-tool-{name}")/>
                        " "<code>{name.clone()}</code>
                    </label>
                    <label class="check tool-ask" title=ask_hint>
                        <input name="ask" type="checkbox" value=name.clone() checked=ask data-testid=format!("task-ask-{name}")/>
                        {lang.pick(" ask me first", " 先问我")}
                    </label>
                </div>
            }
        })
        .collect_view();
    let code_off = agent.code_runner_off.map(|why| {
        view! {
            <p class="hint" data-testid="code-runner-off">
                {lang.pick("No code runner: ", "没有代码运行器：")}{why}
            </p>
        }
    });
    let roots = agent.workspace_roots;
    let no_roots = roots.is_empty();
    let root_options = roots
        .iter()
        .map(|r| view! { <option value=r.clone()></option> })
        .collect_view();
    let roots_hint = if no_roots {
        lang.pick(
            "The operator allowed no folders (PLANBOARD_WORKSPACE_ROOTS is not set).".to_string(),
            "运营方没有允许任何文件夹（未设置 PLANBOARD_WORKSPACE_ROOTS）。".to_string(),
        )
    } else {
        lang.pick(
            format!("A folder or git repository inside one of: {}. It is copied into the run's workspace, never written in place; instead of files, not with them.", roots.join(", ")),
            format!("以下文件夹之一中的文件夹或 git 仓库：{}。它会被复制到本次运行的工作区，不会原地修改；与上传文件二选一。", roots.join(", ")),
        )
    };
    let mode_option = |value: &'static str, en: &'static str, zh: &'static str| {
        view! { <option value=value selected=draft.mode == value>{lang.pick(en, zh)}</option> }
    };
    let from_value = from;
    view! {
        <section class="task-box" data-testid="task-box">
            <h2>{lang.pick("Give planboard's agent a task", "把任务交给 planboard 的智能体")}</h2>
            {line}
            {no_model.then(|| view! {
                    <div class="note" data-testid="no-model">
                        <p>{lang.pick(
                            "No model is configured, so the agent cannot run. Start planboard with a model, for example:",
                            "没有配置模型，智能体无法运行。启动 planboard 时指定一个模型，例如：",
                        )}</p>
                        <pre>"PLANBOARD_LLM_BASE_URL=http://127.0.0.1:8080/v1\nPLANBOARD_LLM_MODEL=qwen2.5-coder-1.5b-instruct"</pre>
                    </div>
                })}
            {waiting.then(|| view! {
                <div class="note" data-testid="model-waiting">
                    <p>{lang.pick(
                        "The model does not answer yet. A local model may still be starting: its first start builds it (10–30 minutes; scripts/run writes data/local-model.log). Reload this page to see when it is up; a task started before then fails with the reason.",
                        "模型还没有响应。本地模型可能仍在启动：第一次启动需要构建（10–30 分钟；scripts/run 会写 data/local-model.log）。重新加载本页即可看到它是否就绪；在此之前开始的任务会失败并说明原因。",
                    )}</p>
                    {doing.map(|d| view! {
                        <p class="hint" data-testid="model-doing">{lang.pick("Now: ", "现在：")}<code>{d}</code></p>
                    })}
                </div>
            })}
            {died.map(|(reason, log)| view! {
                <div class="note error" data-testid="model-died">
                    <p>{lang.pick(
                        "The local model stopped, so the agent cannot run: ",
                        "本地模型已停止，智能体无法运行：",
                    )}{reason}</p>
                    <p>{lang.pick(
                        "Start it again with bash scripts/local-model.sh (its output says why it stops; data/local-model.log has the first start's), point planboard at another model with PLANBOARD_LLM_BASE_URL and PLANBOARD_LLM_MODEL, or turn the agent off with PLANBOARD_LLM=none. The last lines of its log:",
                        "用 bash scripts/local-model.sh 重新启动它（它的输出会说明停止的原因；data/local-model.log 记录了第一次启动），或用 PLANBOARD_LLM_BASE_URL 和 PLANBOARD_LLM_MODEL 指向另一个模型，或用 PLANBOARD_LLM=none 关闭智能体。它日志的最后几行：",
                    )}</p>
                    <pre data-testid="model-log">{log}</pre>
                </div>
            })}
            <form method="post" action=TASK_ROUTE enctype="multipart/form-data">
                <input type="hidden" name="from" value=from_value/>
                <fieldset class="plain" disabled=no_model>
                    <label class="field">
                        {lang.pick("Task", "任务")}
                        <textarea name="task" required maxlength=run_model::MAX_TASK_CHARS data-testid="task-input"
                            placeholder=lang.pick("What should be done? In any language.", "要做什么？任何语言都可以。")>{crate::words::textarea_text(&draft.task)}</textarea>
                    </label>
                    <label class="field">
                        {lang.pick("Files for the agent (optional)", "给智能体的文件（可选）")}
                        <input id="task-files" name="files" type="file" multiple data-testid="task-files"/>
                        <span class="hint">{lang.pick(
                            format!("Up to {MAX_FILES} files, {} MB each, {} MB in all; they are copied into the run's workspace.", MAX_FILE_BYTES / (1024 * 1024), MAX_FILES_BYTES / (1024 * 1024)),
                            format!("最多 {MAX_FILES} 个文件，每个 {} MB，共 {} MB；会复制到本次运行的工作区。", MAX_FILE_BYTES / (1024 * 1024), MAX_FILES_BYTES / (1024 * 1024)),
                        )}{came_back.then(|| lang.pick(
                            " Choose the files again: a page cannot fill them in for you.",
                            " 请重新选择文件：网页无法替你填入。",
                        ))}</span>
                    </label>
                    <super::templates::TemplateChoice/>
                    {(!acp.is_empty()).then(|| {
                        let own = model.is_some();
                        let options = acp
                            .iter()
                            .map(|name| {
                                view! {
                                    <option value=name.clone() selected=draft.agent == *name>{format!("{name} (ACP)")}</option>
                                }
                            })
                            .collect_view();
                        view! {
                            <label class="field">
                                {lang.pick("Who does this task", "由谁来做这个任务")}
                                <select name="agent" data-testid="task-agent"
                                    title=lang.pick("An ACP agent works with its own tools and plan; mode, tools and batches are planboard's agent's", "ACP 智能体用它自己的工具和计划；模式、工具和分批属于 planboard 的智能体")>
                                    {own.then(|| view! {
                                        <option value="" selected=draft.agent.is_empty()>{lang.pick("planboard's own agent", "planboard 自己的智能体")}</option>
                                    })}
                                    {options}
                                </select>
                            </label>
                        }
                    })}
                    <div class="task-options">
                        <label class="field">
                            {lang.pick("Mode", "模式")}
                            <select name="mode" data-testid="task-mode">
                                {mode_option("auto", "Auto (the classifier decides)", "自动（由分类器决定）")}
                                {mode_option("simple", "Simple", "简单")}
                                {mode_option("complex", "Complex", "复杂")}
                                {mode_option("emergent", "Emergent", "涌现")}
                            </select>
                        </label>
                        <label class="check">
                            <input name="approval" type="checkbox" value="on" checked=draft.approval data-testid="task-approval"/>
                            {lang.pick(" I approve the plan before it runs", " 计划运行前由我批准")}
                        </label>
                    </div>
                    <details class="advanced" open={advanced_open || came_back} data-testid="task-advanced">
                        <summary data-testid="task-advanced-toggle">{lang.pick(
                            "Advanced settings: budget, tools, a folder, batches, retries, memory",
                            "高级设置：预算、工具、文件夹、分批、重试、记忆",
                        )}</summary>
                        <fieldset class="task-group">
                            <legend>{lang.pick("Budget: the run pauses at the first limit reached", "预算：达到任一上限时运行暂停")}</legend>
                            <div class="task-options">
                                <label class="field">
                                    {lang.pick("Token budget", "令牌预算")}
                                    <input name="max_tokens" type="number" min="1000" max="1000000000" step="1000" value=draft.max_tokens.clone() data-testid="task-tokens"/>
                                </label>
                                <label class="field narrow">
                                    {lang.pick("Model calls", "模型调用次数")}
                                    <input name="max_llm_calls" type="number" min="1" max="1000000" step="1" value=draft.max_llm_calls.clone() data-testid="task-calls"/>
                                </label>
                                <label class="field narrow">
                                    {lang.pick("Turns per attempt", "每次尝试的轮数")}
                                    <input name="max_turns" type="number" min="1" max="50" step="1" value=draft.max_turns.clone() data-testid="task-turns"
                                        title=lang.pick("Model turns (a call and its tools) one attempt at a subtask may take", "一次子任务尝试可用的模型轮数（一次调用及其工具）")/>
                                </label>
                                <label class="field narrow">
                                    {lang.pick("Minutes", "分钟")}
                                    <input name="max_minutes" type="number" min="1" max="1440" step="1" value=draft.max_minutes.clone() data-testid="task-minutes"
                                        title=lang.pick("Time budget: minutes of running, pauses not counted", "时间预算：运行的分钟数，不含暂停")/>
                                </label>
                                <label class="field narrow">
                                    {lang.pick("Cost budget (USD)", "费用预算（美元）")}
                                    <input name="max_cost" type="number" min="0.000001" max="1000000" step="any" value=draft.max_cost.clone() placeholder=lang.pick("no limit", "不限") data-testid="task-cost"
                                        title=lang.pick("The run pauses when its model calls have cost this much (priced models only)", "模型调用费用达到此金额时运行暂停（仅计价模型）")/>
                                </label>
                            </div>
                        </fieldset>
                        <fieldset class="task-group">
                            <legend>{lang.pick("Running", "运行")}</legend>
                            <div class="task-options">
                                <label class="field narrow">
                                    {lang.pick("At once", "并行数")}
                                    <input name="max_parallel" type="number" min="1" max=run_model::MAX_PARALLEL step="1" value=draft.max_parallel.clone() data-testid="task-parallel"
                                        title=lang.pick("Subtasks in progress at once (a simple plan runs one at a time)", "同时进行的子任务数（简单计划一次一个）")/>
                                </label>
                                <label class="field narrow">
                                    {lang.pick("Attempts per subtask", "每个子任务的尝试次数")}
                                    <input name="max_attempts" type="number" min="1" max=run_model::config::MAX_ATTEMPTS step="1" value=draft.max_attempts.clone() data-testid="task-attempts"
                                        title=lang.pick("Tries at a failing subtask before the planner revises it, replaces it or gives it to a person", "子任务失败时，在规划器修订、替换或交给人之前的尝试次数")/>
                                </label>
                                <label class="field narrow">
                                    {lang.pick("Retry delay (seconds)", "重试间隔（秒）")}
                                    <input name="retry_delay" type="number" min="0" max={run_model::config::MAX_RETRY_DELAY_MS / 1000} step="any" value=draft.retry_delay.clone() data-testid="task-retry-delay"
                                        title=lang.pick("The wait after failed attempt n is this times 2ⁿ", "第 n 次尝试失败后等待此值乘以 2ⁿ")/>
                                </label>
                            </div>
                            <label class="check">
                                <input name="adapt_every_step" type="checkbox" value="on" checked=draft.adapt_every_step data-testid="task-adapt-every-step"/>
                                {lang.pick(
                                    " Review a complex plan after every super-step, not only after one that fell short",
                                    " 复杂计划每个超步之后都复查，而不只是在未达预期之后",
                                )}
                            </label>
                            <label class="check">
                                <input name="no_memory" type="checkbox" value="on" checked=draft.no_memory data-testid="task-no-memory"/>
                                {lang.pick(
                                    " No memory: this run neither recalls earlier runs nor is remembered",
                                    " 不用记忆：本次运行既不回忆以前的运行，也不被记住",
                                )}
                            </label>
                        </fieldset>
                        <fieldset class="task-group">
                            <legend>{lang.pick("Start from an allowed folder", "从允许的文件夹开始")}</legend>
                            <label class="field">
                                <span class="sr-only">{lang.pick("Folder", "文件夹")}</span>
                                <input id="task-source" name="source" type="text" maxlength="1000" list="task-roots" disabled=no_roots value=draft.source.clone()
                                    placeholder=lang.pick("a folder's full path", "文件夹的完整路径") data-testid="task-source"/>
                                <datalist id="task-roots">{root_options}</datalist>
                                <span class="hint" data-testid="task-roots-hint">{roots_hint}</span>
                            </label>
                            <label class="check">
                                <input name="include_secret_files" type="checkbox" value="on" checked=draft.include_secret_files disabled=no_roots data-testid="task-secret-files"/>
                                {lang.pick(
                                    " Copy the files that usually hold secrets too (.env, private keys, .netrc); what the model reads may leave the machine",
                                    " 也复制通常含有机密的文件（.env、私钥、.netrc）；模型读到的内容可能离开本机",
                                )}
                            </label>
                        </fieldset>
                        <fieldset class="task-group">
                            <legend>{lang.pick("Go through a file in batches (optional)", "分批处理一个文件（可选）")}</legend>
                            <BatchChoice input=draft.batch_input.clone() size=draft.batch_size.clone()/>
                        </fieldset>
                        <input type="hidden" name="tools_chosen" value="1"/>
                        <fieldset class="tools task-group" data-testid="task-tools">
                            <legend>{lang.pick("Tools the agent may use", "智能体可用的工具")}</legend>
                            {tools}
                            {code_off}
                        </fieldset>
                    </details>
                    {error.map(|e| view! { <p class="error" role="alert" data-testid="task-error">{e}</p> })}
                    <button type="submit" class="primary" data-testid="start-task">
                        {lang.pick("Start", "开始")}
                    </button>
                </fieldset>
            </form>
        </section>
    }
}

/// Why `typed` cannot be the batch file, given the files chosen and
/// whether a folder was named instead (its files are checked by the
/// server, which sees them).
pub fn batch_problem(typed: &str, files: &[String], folder: bool, lang: Lang) -> Option<String> {
    let typed = typed.trim();
    if typed.is_empty() || folder || files.iter().any(|f| f == typed) {
        return None;
    }
    Some(if files.is_empty() {
        lang.pick(
            "Choose the file above first: batches go through one of the run's files.".to_string(),
            "请先在上面选择文件：分批处理的是本次运行的文件之一。".to_string(),
        )
    } else {
        lang.pick(
            format!(
                "“{typed}” is not one of the files chosen: {}.",
                files.join(", ")
            ),
            format!("“{typed}”不是所选的文件之一：{}。", files.join("、")),
        )
    })
}

/// The batch file and size. The file is offered from the files chosen
/// above (a list under the field) and checked as the person types or
/// chooses files: a name that is not one of them is marked and stops the
/// form (the browser's own check), with the reason beside it. An island,
/// since only the browser knows the files chosen; without the wasm the
/// field is plain text and the server checks it. The island draws nothing
/// reactive: [`check_batch`] reads the form and writes the few marks
/// itself, which costs the wasm far less than signals and views would.
#[island]
pub fn BatchChoice(input: String, size: String) -> impl IntoView {
    let lang = use_lang();
    // As the server draws it: no files can be chosen yet.
    let first = batch_problem(&input, &[], false, lang);
    #[cfg(feature = "hydrate")]
    {
        // The files may have been chosen, and the name typed, before the
        // island hydrated: check once it has.
        Effect::new(move |_| check_batch(lang));
        let changed = window_event_listener(leptos::ev::change, move |_| check_batch(lang));
        let typed = window_event_listener(leptos::ev::input, move |_| check_batch(lang));
        on_cleanup(move || {
            changed.remove();
            typed.remove();
        });
    }
    view! {
        <div class="task-options">
            <label class="field">
                {lang.pick("File", "文件")}
                <input id="task-batch-input" name="batch_input" type="text" maxlength="200" list="task-batch-files" value=input
                    placeholder=lang.pick("one of the files chosen above", "上面所选文件之一") data-testid="task-batch-input"
                    aria-invalid=first.is_some().then_some("true")
                    title=lang.pick("One of the files above: a JSON array, JSON Lines, CSV rows or one item per line. The agent plans and works a batch of items at a time, the failed ones again first, until every item is covered.", "上面的文件之一：JSON 数组、JSON Lines、CSV 行或每行一项。智能体每次规划并处理一批项目，先重试失败的，直到覆盖每一项。")/>
                <datalist id="task-batch-files"></datalist>
            </label>
            <label class="field narrow">
                {lang.pick("Items per batch", "每批项目数")}
                <input name="batch_size" type="number" min="1" max=run_model::batch::MAX_BATCH_SIZE step="1" value=size placeholder=run_model::batch::DEFAULT_BATCH_SIZE.to_string() data-testid="task-batch-size"/>
            </label>
        </div>
        <p class="error" role="status" id="task-batch-check" data-testid="task-batch-check">{first}</p>
    }
}

/// Checks the batch file against the files chosen (and a folder named):
/// offers the files under the field, marks the field invalid with the
/// reason (which stops the form) and says it beside the field.
#[cfg(feature = "hydrate")]
fn check_batch(lang: Lang) {
    use wasm_bindgen::JsCast;
    let doc = document();
    let Some(field) = doc
        .get_element_by_id("task-batch-input")
        .and_then(|e| e.dyn_into::<web_sys::HtmlInputElement>().ok())
    else {
        return;
    };
    let files = chosen_files();
    let why = batch_problem(&field.value(), &files, source_named(), lang);
    field.set_custom_validity(why.as_deref().unwrap_or(""));
    _ = match &why {
        Some(_) => field.set_attribute("aria-invalid", "true"),
        None => field.remove_attribute("aria-invalid"),
    };
    if let Some(status) = doc.get_element_by_id("task-batch-check") {
        status.set_text_content(why.as_deref());
    }
    if let Some(list) = doc.get_element_by_id("task-batch-files") {
        list.set_text_content(None);
        for file in &files {
            if let Ok(option) = doc.create_element("option") {
                _ = option.set_attribute("value", file);
                _ = list.append_child(&option);
            }
        }
    }
}

/// The names of the files chosen in the task box's file field.
#[cfg(feature = "hydrate")]
fn chosen_files() -> Vec<String> {
    use wasm_bindgen::JsCast;
    let Some(list) = document()
        .get_element_by_id("task-files")
        .and_then(|e| e.dyn_into::<web_sys::HtmlInputElement>().ok())
        .and_then(|input| input.files())
    else {
        return Vec::new();
    };
    (0..list.length())
        .filter_map(|i| list.item(i))
        .map(|f| f.name())
        .collect()
}

/// Whether a folder to start from is named (its files replace uploads).
#[cfg(feature = "hydrate")]
fn source_named() -> bool {
    use wasm_bindgen::JsCast;
    document()
        .get_element_by_id("task-source")
        .and_then(|e| e.dyn_into::<web_sys::HtmlInputElement>().ok())
        .is_some_and(|input| !input.disabled() && !input.value().trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_goes_back_through_the_address_with_every_field_as_typed() {
        let mut draft = TaskDraft {
            task: "Sum the sales & report".into(),
            mode: "complex".into(),
            max_parallel: "many".into(),
            max_tokens: "50,000".into(),
            max_minutes: "5".into(),
            max_cost: "2.5".into(),
            max_llm_calls: "40".into(),
            max_turns: "6".into(),
            max_attempts: "2".into(),
            retry_delay: "0.5".into(),
            approval: false,
            no_memory: true,
            adapt_every_step: true,
            include_secret_files: true,
            tools: vec!["read_file".into(), "run_python".into()],
            tools_chosen: true,
            ask: vec!["run_python".into()],
            source: "/srv/repos/app".into(),
            template: "0190aaaa-0000-7000-8000-000000000000".into(),
            batch_input: "items.csv".into(),
            batch_size: "3".into(),
            from: "/".into(),
            agent: "codex".into(),
        };
        let address = draft.back_to("'At once' must be a whole number");
        let (page, search) = address.split_once('?').unwrap();
        assert_eq!(page, "/");
        // The plans list's own filter (`mode`) is not touched on `/`.
        let filter = crate::api::ListFilter::from_address(search);
        assert_eq!(filter.query.mode, None);
        let back = TaskDraft::from_address(search).expect("a draft came back");
        // `from` is the page itself, not carried.
        draft.from = String::new();
        assert_eq!(back, draft);
        assert!(TaskDraft::from_address("show=finished&mode=simple").is_none());
    }

    #[test]
    fn a_refusal_from_the_new_plan_page_goes_back_there() {
        let draft = TaskDraft {
            task: "x".into(),
            ..TaskDraft::default()
        };
        assert!(draft.back_to("no").starts_with("/plans/new?"));
        let elsewhere = TaskDraft {
            from: "https://evil.example/".into(),
            ..draft
        };
        assert!(elsewhere.back_to("no").starts_with("/plans/new?"));
    }

    #[test]
    fn the_batch_file_must_be_one_of_the_files_chosen_unless_a_folder_is_named() {
        let files = vec!["catalog.txt".to_string(), "notes.md".to_string()];
        let lang = Lang::En;
        assert_eq!(batch_problem("", &files, false, lang), None);
        assert_eq!(batch_problem("catalog.txt", &files, false, lang), None);
        let wrong = batch_problem("catalog.csv", &files, false, lang).unwrap();
        assert!(wrong.contains("catalog.csv") && wrong.contains("catalog.txt, notes.md"));
        assert!(batch_problem("a.csv", &[], false, lang)
            .unwrap()
            .contains("Choose the file"));
        assert_eq!(batch_problem("src/items.csv", &[], true, lang), None);
    }
}
