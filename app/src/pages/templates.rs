//! Templates (`/templates`): plans a team saved under a name so the next
//! task starts from their shape. The page lists them (mode, steps, what
//! was asked, where from) with "Start a task from it" (the task box with
//! the template chosen) and Delete; the board's "Save as template" form
//! and the task box's template choice are here too.
//! Rendered on the server only; the buttons are plain forms.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use run_model::{Template, TemplateId};

use crate::api::list_templates;
use crate::i18n::{use_lang, Lang};
use crate::words::short_time;

fn mode_label(mode: plan_engine::Mode, lang: Lang) -> &'static str {
    match mode {
        plan_engine::Mode::Simple => lang.pick("simple", "简单"),
        plan_engine::Mode::Complex => lang.pick("complex", "复杂"),
        plan_engine::Mode::Emergent => lang.pick("emergent", "涌现"),
        plan_engine::Mode::Manual => lang.pick("by hand", "手工"),
    }
}

fn card(t: Template, lang: Lang) -> impl IntoView {
    let id = t.id;
    let steps = t
        .steps
        .iter()
        .map(|s| {
            let after = (!s.depends_on.is_empty()).then(|| {
                let list: Vec<String> = s.depends_on.iter().map(u32::to_string).collect();
                view! { <span class="hint">{lang.pick(" after ", " 依赖 ")}{list.join(", ")}</span> }
            });
            view! { <li><strong>{s.name.clone()}</strong>{after}</li> }
        })
        .collect_view();
    view! {
        <article class="template" data-testid="template">
            <h2 data-testid="template-name">{t.name.clone()}</h2>
            <p class="hint">
                <span class="badge">{mode_label(t.mode, lang)}</span>" "
                {lang.pick("saved by ", "保存者 ")}{t.created_by.clone()}" · "<time>{short_time(&t.created_at)}</time>
                {t.plan_id.map(|p| view! { " · "<a href=format!("/plans/{p}")>{lang.pick("the plan it came from", "来源计划")}</a> })}
            </p>
            <p class="template-task">{lang.pick("Asked: ", "原任务：")}{t.task.clone()}</p>
            <ol class="template-steps">{steps}</ol>
            <div class="actions">
                <a class="button primary" href=format!("/plans/new?template={id}") data-testid="template-use">
                    {lang.pick("Start a task from it", "用它开始一个任务")}
                </a>
                <form method="post" action=format!("/templates/{id}/delete")>
                    <button type="submit" class="danger" data-testid="template-delete">{lang.pick("Delete", "删除")}</button>
                </form>
            </div>
        </article>
    }
}

#[component]
pub fn TemplatesPage() -> impl IntoView {
    let lang = use_lang();
    let loaded = crate::codec::load(|| (), |()| list_templates());
    view! {
        <section class="templates-page">
            <h1>{lang.pick("Templates", "模板")}</h1>
            <p class="hint">{lang.pick(
                "Plans your team saved to start from. A task started from a template takes its mode, and the planner adapts its steps to the task. Save one from any plan's board.",
                "团队保存下来、可作为起点的计划。从模板开始的任务沿用它的模式，规划器会把它的步骤改编到新任务上。可在任何计划的看板上保存模板。",
            )}</p>
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || loaded.get().map(|r| match r {
                    Ok(list) if list.is_empty() => view! {
                        <p class="empty" data-testid="templates-empty">{lang.pick("No templates yet.", "还没有模板。")}</p>
                    }.into_any(),
                    Ok(list) => list.into_iter().map(|t| card(t, lang)).collect_view().into_any(),
                    Err(e) => view! { <p class="error" role="alert">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}

/// The task box's choice of a template (`?template=` preselects one).
#[component]
pub fn TemplateChoice() -> impl IntoView {
    let lang = use_lang();
    let chosen: Option<TemplateId> = use_query_map()
        .read_untracked()
        .get("template")
        .and_then(|t| t.parse().ok());
    let loaded = crate::codec::load(|| (), |()| list_templates());
    view! {
        <Transition fallback=|| ()>
            {move || loaded.get().and_then(Result::ok).filter(|l| !l.is_empty()).map(|list| {
                let options = list
                    .into_iter()
                    .map(|t| {
                        let label = format!("{} ({}, {})", t.name, mode_label(t.mode, lang), lang.pick(
                            format!("{} steps", t.steps.len()),
                            format!("{} 步", t.steps.len()),
                        ));
                        view! { <option value=t.id.to_string() selected=chosen == Some(t.id)>{label}</option> }
                    })
                    .collect_view();
                view! {
                    <label class="field">
                        {lang.pick("Start from a template", "从模板开始")}
                        <select name="template" data-testid="task-template">
                            <option value="">{lang.pick("None", "不使用")}</option>
                            {options}
                        </select>
                    </label>
                }
            })}
        </Transition>
    }
}

/// The board's "Save as template" form.
#[component]
pub fn SaveTemplate(id: plan_engine::PlanId) -> impl IntoView {
    let lang = use_lang();
    view! {
        <details class="save-template" data-testid="save-template">
            <summary>{lang.pick("Save as template", "保存为模板")}</summary>
            <form method="post" action=format!("/plans/{id}/template")>
                <label class="field">
                    {lang.pick("Name", "名称")}
                    <input name="name" required maxlength="120" data-testid="template-name-input"/>
                </label>
                <button type="submit" data-testid="template-save">{lang.pick("Save", "保存")}</button>
            </form>
        </details>
    }
}
