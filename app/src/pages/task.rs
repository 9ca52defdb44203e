//! The task box on `/plans/new`: a task for planboard's own agent. It
//! opens the run's plan, whose board shows the run from its first moment.

use leptos::prelude::*;

use crate::api::{start_task, TaskSpec};
use crate::i18n::use_lang;

/// `model` is read on the server while rendering (no call from the page).
#[island]
pub fn TaskBox(model: Option<String>) -> impl IntoView {
    let lang = use_lang();
    let no_model = model.is_none();
    let task = RwSignal::new(String::new());
    let mode = RwSignal::new("auto".to_string());
    let approval = RwSignal::new(true);
    let parallel = RwSignal::new(4u32);
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let ready = RwSignal::new(false);
    Effect::new(move |_| ready.set(true));
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let spec = TaskSpec {
            task: task.get_untracked(),
            mode: mode.get_untracked(),
            approval_required: approval.get_untracked(),
            max_parallel: parallel.get_untracked(),
        };
        busy.set(true);
        leptos::task::spawn_local(async move {
            let result = start_task(spec).await;
            busy.set(false);
            match result {
                Ok(id) => super::new_plan::open_board(&format!("/plans/{id}")),
                Err(e) => error.set(Some(crate::board::explain(&e, lang))),
            }
        });
    };
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
            {model.map(|m| view! {
                <p class="hint" data-testid="agent-model">{lang.pick("Model: ", "模型：")}<code>{m}</code></p>
            })}
            <form on:submit=submit>
                <fieldset class="plain" disabled=move || !ready.get() || no_model>
                    <label class="field">
                        {lang.pick("Task", "任务")}
                        <textarea required maxlength="8000" prop:value=move || task.get()
                            on:input=move |ev| task.set(event_target_value(&ev)) data-testid="task-input"
                            placeholder=lang.pick("What should be done? In any language.", "要做什么？任何语言都可以。")></textarea>
                    </label>
                    <div class="task-options">
                        <label class="field">
                            {lang.pick("Mode", "模式")}
                            <select on:change=move |ev| mode.set(event_target_value(&ev)) data-testid="task-mode">
                                <option value="auto" selected>{lang.pick("Auto (the classifier decides)", "自动（由分类器决定）")}</option>
                                <option value="simple">{lang.pick("Simple", "简单")}</option>
                                <option value="complex">{lang.pick("Complex", "复杂")}</option>
                                <option value="emergent">{lang.pick("Emergent", "涌现")}</option>
                            </select>
                        </label>
                        <label class="field narrow">
                            {lang.pick("At once", "并行数")}
                            <input type="number" min="1" max="32" prop:value=move || parallel.get().to_string()
                                on:input=move |ev| parallel.set(event_target_value(&ev).parse().unwrap_or(4))/>
                        </label>
                        <label class="check">
                            <input type="checkbox" checked prop:checked=move || approval.get()
                                on:change=move |ev| approval.set(event_target_checked(&ev)) data-testid="task-approval"/>
                            {lang.pick(" I approve the plan before it runs", " 计划运行前由我批准")}
                        </label>
                    </div>
                    <Show when=move || error.get().is_some()>
                        <p class="error" role="alert" data-testid="task-error">{move || error.get()}</p>
                    </Show>
                    <button type="submit" class="primary" disabled=move || busy.get() data-testid="start-task">
                        {lang.pick("Start", "开始")}
                    </button>
                </fieldset>
            </form>
        </section>
    }
}
