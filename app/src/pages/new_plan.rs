//! New plan (`/plans/new`): a plan made by hand — title, goal, mode,
//! subtasks with dependencies by number, approval required or not. The
//! engine checks it like any agent's plan; its refusal shows above the
//! form, which keeps everything typed.

use leptos::prelude::*;
use plan_engine::{Mode, NewPlan, NewSubtask};

use crate::api::create_plan;
use crate::board::details::parse_ids;
use crate::i18n::use_lang;

#[derive(Clone)]
struct Row {
    key: usize,
    name: RwSignal<String>,
    deps: RwSignal<String>,
}

/// `/plans/new`: the agent's task box, and the form for a plan by hand.
#[component]
pub fn NewPage() -> impl IntoView {
    let lang = use_lang();
    #[cfg(feature = "ssr")]
    let agent = crate::api::agent_info();
    #[cfg(not(feature = "ssr"))]
    let agent = crate::api::AgentInfo::default();
    view! {
        <div class="new-page">
            <h1>{lang.pick("New plan", "新建计划")}</h1>
            // This page shows every setting: the advanced ones open.
            <super::task::TaskBox agent from="/plans/new" advanced_open=true/>
            <NewPlanPage/>
        </div>
    }
}

/// The form is an island: it keeps what was typed in signals and sends it
/// with a server function.
#[island]
pub fn NewPlanPage() -> impl IntoView {
    let lang = use_lang();
    let title = RwSignal::new(String::new());
    let goal = RwSignal::new(String::new());
    let mode = RwSignal::new(Mode::Simple);
    let approval = RwSignal::new(true);
    let next_key = StoredValue::new(1usize);
    let new_row = move || {
        let key = next_key.get_value();
        next_key.set_value(key + 1);
        Row {
            key,
            name: RwSignal::new(String::new()),
            deps: RwSignal::new(String::new()),
        }
    };
    let rows = RwSignal::new(vec![new_row()]);
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    // Until the island has hydrated, typing would be lost and buttons would
    // do nothing: the form stays disabled (effects run only in the browser).
    let ready = RwSignal::new(false);
    Effect::new(move |_| ready.set(true));
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let mut subtasks = Vec::new();
        for (i, row) in rows.get_untracked().iter().enumerate() {
            let name = row.name.get_untracked();
            if name.trim().is_empty() {
                continue;
            }
            let dependencies = match parse_ids(&row.deps.get_untracked(), lang) {
                Ok(d) => d,
                Err(e) => {
                    let n = i + 1;
                    return error.set(Some(
                        lang.pick(format!("Subtask {n}: {e}"), format!("子任务 {n}：{e}")),
                    ));
                }
            };
            subtasks.push(NewSubtask {
                dependencies,
                ..NewSubtask::named(name)
            });
        }
        let spec = NewPlan {
            // The server gives the plan its id.
            id: uuid::Uuid::nil(),
            title: title.get_untracked(),
            goal: goal.get_untracked(),
            mode: mode.get_untracked(),
            approval_required: approval.get_untracked(),
            subtasks,
            ..NewPlan::default()
        };
        busy.set(true);
        leptos::task::spawn_local(async move {
            let result = create_plan(spec).await;
            busy.set(false);
            match result {
                Ok(id) => open_board(&format!("/plans/{id}")),
                Err(e) => error.set(Some(crate::words::explain(&e, lang))),
            }
        });
    };
    let row_views = move || {
        rows.get()
            .into_iter()
            .enumerate()
            .map(|(i, row)| {
                let key = row.key;
                let n = i + 1;
                view! {
                    <li class="new-row">
                        <span class="card-id">"#"{i + 1}</span>
                        <label class="field grow">
                            <span class="sr-only">{lang.pick(format!("Subtask {n} name"), format!("子任务 {n} 的名称"))}</span>
                            <input placeholder=lang.pick("What needs doing", "要做什么") prop:value=move || row.name.get() on:input=move |ev| row.name.set(event_target_value(&ev)) data-testid=format!("sub-name-{}", i + 1)/>
                        </label>
                        <label class="field">
                            <span class="sr-only">{lang.pick(format!("Subtask {n} depends on"), format!("子任务 {n} 的依赖"))}</span>
                            <input placeholder=lang.pick("after (e.g. 1, 2)", "依赖（如 1, 2）") prop:value=move || row.deps.get() on:input=move |ev| row.deps.set(event_target_value(&ev)) data-testid=format!("sub-deps-{}", i + 1)/>
                        </label>
                        <button type="button" aria-label=lang.pick(format!("Remove subtask {n}"), format!("移除子任务 {n}")) on:click=move |_| rows.update(|r| r.retain(|x| x.key != key))>"✕"</button>
                    </li>
                }
            })
            .collect_view()
    };
    view! {
        <section class="new-plan">
            <h2>{lang.pick("Or make a plan by hand", "或者手动制定计划")}</h2>
            <form on:submit=submit>
                <fieldset class="plain" disabled=move || !ready.get()>
                <label class="field">
                    {lang.pick("Title", "标题")}
                    <input required prop:value=move || title.get() on:input=move |ev| title.set(event_target_value(&ev)) data-testid="plan-title-input"/>
                </label>
                <label class="field">
                    {lang.pick("Goal", "目标")}
                    <textarea prop:value=move || goal.get() on:input=move |ev| goal.set(event_target_value(&ev))></textarea>
                </label>
                <label class="field">
                    {lang.pick("Mode", "模式")}
                    <select on:change=move |ev| mode.set(match event_target_value(&ev).as_str() {
                        "complex" => Mode::Complex,
                        "emergent" => Mode::Emergent,
                        _ => Mode::Simple,
                    })>
                        {[Mode::Simple, Mode::Complex, Mode::Emergent]
                            .into_iter()
                            .map(|m| view! { <option value=m.as_str()>{m.label(lang)}</option> })
                            .collect_view()}
                    </select>
                </label>
                <label class="check">
                    <input type="checkbox" checked prop:checked=move || approval.get() on:change=move |ev| approval.set(event_target_checked(&ev)) data-testid="approval-required"/>
                    {lang.pick(" A person must approve the plan before it runs", " 计划运行前必须有人批准")}
                </label>
                <fieldset>
                    <legend>{lang.pick("Subtasks", "子任务")}</legend>
                    <ol class="new-rows">{row_views}</ol>
                    <button type="button" on:click=move |_| rows.update(|r| r.push(new_row())) data-testid="add-row">{lang.pick("Add a subtask", "添加子任务")}</button>
                </fieldset>
                <Show when=move || error.get().is_some()>
                    <p class="error" role="alert" data-testid="new-plan-error">{move || error.get()}</p>
                </Show>
                <button type="submit" class="primary" disabled=move || busy.get() data-testid="create-plan">{lang.pick("Create plan", "创建计划")}</button>
                </fieldset>
            </form>
        </section>
    }
}

/// Goes to the new plan's board (a page load: the board is its own page).
pub(crate) fn open_board(url: &str) {
    #[cfg(feature = "hydrate")]
    {
        _ = window().location().set_href(url);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = url;
}
