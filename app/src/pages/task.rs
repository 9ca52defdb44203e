//! The task box on `/plans/new`: a task for planboard's own agent. A plain
//! form, rendered on the server and posted to `/plans/new/task`, which
//! starts the run and opens its plan's board (the run shows there from its
//! first moment). Nothing of it goes to the wasm; it works without it.
//! A refusal comes back as `?task_error=` with the task kept in `?task=`.
//! It is posted as `multipart/form-data`: files chosen in it land in the
//! run's workspace before planning.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::i18n::use_lang;

/// Where the form posts.
pub const TASK_ROUTE: &str = "/plans/new/task";

use run_model::{MAX_FILES, MAX_FILES_BYTES, MAX_FILE_BYTES};

/// `agent` is read on the server while rendering.
#[component]
pub fn TaskBox(agent: crate::api::AgentInfo) -> impl IntoView {
    let lang = use_lang();
    let model = agent.model;
    let no_model = model.is_none();
    let (waiting, doing, died) = match agent.model_status {
        run_model::ModelStatus::Waiting { doing } => (true, doing, None),
        run_model::ModelStatus::Died { reason, log } => (false, None, Some((reason, log))),
        run_model::ModelStatus::None | run_model::ModelStatus::Ready => (false, None, None),
    };
    let tools = agent
        .tools
        .into_iter()
        .map(|(name, description)| {
            view! {
                <label class="check tool-choice" title=description>
                    <input name="tool" type="checkbox" value=name.clone() checked data-testid=format!("task-tool-{name}")/>
                    " "<code>{name}</code>
                </label>
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
    let query = use_query_map().read_untracked();
    let error = query.get("task_error");
    let typed = query.get("task").unwrap_or_default();
    view! {
        <section class="task-box" data-testid="task-box">
            <h2>{lang.pick("Give planboard's agent a task", "把任务交给 planboard 的智能体")}</h2>
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
            {model.map(|m| view! {
                <p class="hint" data-testid="agent-model">{lang.pick("Model: ", "模型：")}<code>{m}</code></p>
            })}
            <form method="post" action=TASK_ROUTE enctype="multipart/form-data">
                <fieldset class="plain" disabled=no_model>
                    <label class="field">
                        {lang.pick("Task", "任务")}
                        <textarea name="task" required maxlength=run_model::MAX_TASK_CHARS data-testid="task-input"
                            placeholder=lang.pick("What should be done? In any language.", "要做什么？任何语言都可以。")>{typed}</textarea>
                    </label>
                    <super::templates::TemplateChoice/>
                    <div class="task-options">
                        <label class="field">
                            {lang.pick("Mode", "模式")}
                            <select name="mode" data-testid="task-mode">
                                <option value="auto" selected>{lang.pick("Auto (the classifier decides)", "自动（由分类器决定）")}</option>
                                <option value="simple">{lang.pick("Simple", "简单")}</option>
                                <option value="complex">{lang.pick("Complex", "复杂")}</option>
                                <option value="emergent">{lang.pick("Emergent", "涌现")}</option>
                            </select>
                        </label>
                        <label class="field narrow">
                            {lang.pick("At once", "并行数")}
                            <input name="max_parallel" type="number" min="1" max="32" value="4"/>
                        </label>
                        <label class="field">
                            {lang.pick("Token budget", "令牌预算")}
                            <input name="max_tokens" type="number" min="1000" max="1000000000" step="1000" value="1000000" data-testid="task-tokens"/>
                        </label>
                        <label class="field narrow">
                            {lang.pick("Minutes", "分钟")}
                            <input name="max_minutes" type="number" min="1" max="1440" value="30" data-testid="task-minutes"
                                title=lang.pick("Time budget: minutes of running, pauses not counted", "时间预算：运行的分钟数，不含暂停")/>
                        </label>
                        <label class="field narrow">
                            {lang.pick("Cost budget (USD)", "费用预算（美元）")}
                            <input name="max_cost" type="number" min="0.0001" max="1000000" step="any" placeholder=lang.pick("no limit", "不限") data-testid="task-cost"
                                title=lang.pick("The run pauses when its model calls have cost this much (priced models only)", "模型调用费用达到此金额时运行暂停（仅计价模型）")/>
                        </label>
                        <label class="check">
                            <input name="approval" type="checkbox" value="on" checked data-testid="task-approval"/>
                            {lang.pick(" I approve the plan before it runs", " 计划运行前由我批准")}
                        </label>
                    </div>
                    <label class="field">
                        {lang.pick("Files for the agent (optional)", "给智能体的文件（可选）")}
                        <input name="files" type="file" multiple data-testid="task-files"/>
                        <span class="hint">{lang.pick(
                            format!("Up to {MAX_FILES} files, {} MB each, {} MB in all; they are copied into the run's workspace.", MAX_FILE_BYTES / (1024 * 1024), MAX_FILES_BYTES / (1024 * 1024)),
                            format!("最多 {MAX_FILES} 个文件，每个 {} MB，共 {} MB；会复制到本次运行的工作区。", MAX_FILE_BYTES / (1024 * 1024), MAX_FILES_BYTES / (1024 * 1024)),
                        )}</span>
                    </label>
                    <div class="row">
                        <label class="field">
                            {lang.pick("Go through a file in batches (optional)", "分批处理一个文件（可选）")}
                            <input name="batch_input" type="text" maxlength="200" placeholder=lang.pick("file name, e.g. tools.csv", "文件名，如 tools.csv") data-testid="task-batch-input"
                                title=lang.pick("One of the files above: a JSON array, JSON Lines, CSV rows or one item per line. The agent plans and works a batch of items at a time, the failed ones again first, until every item is covered.", "上面的文件之一：JSON 数组、JSON Lines、CSV 行或每行一项。智能体每次规划并处理一批项目，先重试失败的，直到覆盖每一项。")/>
                        </label>
                        <label class="field narrow">
                            {lang.pick("Items per batch", "每批项目数")}
                            <input name="batch_size" type="number" min="1" max="50" placeholder="5" data-testid="task-batch-size"/>
                        </label>
                    </div>
                    <input type="hidden" name="tools_chosen" value="1"/>
                    <fieldset class="tools" data-testid="task-tools">
                        <legend>{lang.pick("Tools the agent may use", "智能体可用的工具")}</legend>
                        {tools}
                        {code_off}
                    </fieldset>
                    {error.map(|e| view! { <p class="error" role="alert" data-testid="task-error">{e}</p> })}
                    <button type="submit" class="primary" data-testid="start-task">
                        {lang.pick("Start", "开始")}
                    </button>
                </fieldset>
            </form>
        </section>
    }
}
