//! Memory (`/memories`): what the agent remembers of finished runs, in
//! people's hands. Search it, correct what it says, pin what must always
//! count, forget what is wrong, write a standing rule (kept pinned); every
//! run recalls from this list before it classifies and plans.
//! Rendered on the server only; the buttons are plain forms.

use leptos::prelude::*;
use run_model::{Memory, MemoryKind};

use super::plans::{address, page_href, Pager};
use crate::api::{list_memories, memory_query};
use crate::i18n::{use_lang, Lang};
use crate::words::short_time;
use crate::words::table_head;

const COLUMNS: [(&str, &str); 5] = [
    ("Kind", "类型"),
    ("What is remembered", "记住的内容"),
    ("From the task", "来自任务"),
    ("Kept", "记录于"),
    ("", ""),
];

fn kind_label(kind: MemoryKind, lang: Lang) -> &'static str {
    match kind {
        MemoryKind::Run => lang.pick("run", "运行"),
        MemoryKind::Correction => lang.pick("correction", "纠正"),
        MemoryKind::Review => lang.pick("review", "评审"),
        MemoryKind::Rule => lang.pick("rule", "规则"),
    }
}

fn row(m: Memory, lang: Lang, back: String) -> impl IntoView {
    let id = m.id;
    let pin_label = if m.pinned {
        lang.pick("Unpin", "取消置顶")
    } else {
        lang.pick("Pin", "置顶")
    };
    view! {
        <tr data-testid="memory-row" data-pinned=m.pinned.to_string()>
            <td><span class=format!("badge memory-{}", m.kind)>{kind_label(m.kind, lang)}</span>
                {m.pinned.then(|| view! { <span class="badge pinned" data-testid="memory-pinned">{lang.pick("pinned", "已置顶")}</span> })}
            </td>
            <td class="memory-text">
                <span data-testid="memory-text">{m.text.clone()}</span>
                <details class="memory-edit">
                    <summary data-testid="memory-edit">{lang.pick("Edit", "编辑")}</summary>
                    <form method="post" action=format!("/memories/{id}/edit")>
                        <input type="hidden" name="back" value=back.clone()/>
                        <textarea name="text" rows="4" maxlength="2000" required=true data-testid="memory-edit-text">{crate::words::textarea_text(&m.text)}</textarea>
                        <button type="submit" data-testid="memory-edit-save">{lang.pick("Save", "保存")}</button>
                    </form>
                </details>
            </td>
            <td class="memory-task">{if m.kind == MemoryKind::Rule && m.task.trim().is_empty() {
                lang.pick("every task", "所有任务").to_string()
            } else {
                m.task.clone()
            }}</td>
            <td><time>{short_time(&m.created_at)}</time></td>
            <td class="actions">
                <form method="post" action=format!("/memories/{id}/pin")>
                    <input type="hidden" name="pinned" value=(!m.pinned).to_string()/>
                    <input type="hidden" name="back" value=back.clone()/>
                    <button type="submit" data-testid="memory-pin">{pin_label}</button>
                </form>
                <form method="post" action=format!("/memories/{id}/forget")>
                    <input type="hidden" name="back" value=back/>
                    <button type="submit" class="danger" data-testid="memory-forget">{lang.pick("Forget", "忘记")}</button>
                </form>
            </td>
        </tr>
    }
}

#[component]
pub fn MemoriesPage() -> impl IntoView {
    let lang = use_lang();
    let search = address();
    let (query, page) = memory_query(&search);
    // The router's search comes without its `?`.
    let back = match search.trim_start_matches('?') {
        "" => "/memories".to_string(),
        query => format!("/memories?{query}"),
    };
    let params_query = query.clone();
    let loaded = crate::codec::load(move || (query.clone(), page), |(q, p)| list_memories(q, p));
    view! {
        <section class="memories-page">
            <h1>{lang.pick("Memory", "记忆")}</h1>
            <p class="hint">{lang.pick(
                "What the agent remembers of finished runs and of people's corrections, and the rules a team wrote. Before it classifies and plans a task, it recalls the most similar ones (pinned first); its executor, adapter and recovery read the corrections and rules too. Forget what is wrong; pin what must always count.",
                "智能体记住的已结束运行和人们的纠正，以及团队写下的规则。它在分类和规划任务之前会调取最相似的记忆（置顶的优先）；执行、调整和恢复时也会读取纠正和规则。忘记错误的，置顶必须始终考虑的。",
            )}</p>
            <details class="memory-rule" data-testid="memory-rule">
                <summary>{lang.pick("Write a standing rule", "写一条长期规则")}</summary>
                <form method="post" action="/memories/rule" class="rule-form">
                    <input type="hidden" name="back" value=back.clone()/>
                    <label class="field">
                        {lang.pick("The rule (the agent follows it when it plans and works)", "规则（智能体规划和执行时遵循）")}
                        <textarea name="text" rows="3" maxlength="2000" required=true data-testid="memory-rule-text"
                            placeholder=lang.pick("Always take a backup before changing a database.", "修改数据库之前总是先备份。")></textarea>
                    </label>
                    <label class="field">
                        {lang.pick("For tasks about (words; empty: every task)", "适用的任务（关键词；留空：所有任务）")}
                        <input type="text" name="applies_to" maxlength="500" data-testid="memory-rule-applies"
                            placeholder=lang.pick("database migration", "数据库 迁移")/>
                    </label>
                    <button type="submit" data-testid="memory-rule-save">{lang.pick("Keep the rule (pinned)", "保存规则（置顶）")}</button>
                </form>
            </details>
            <form class="filters" method="get" action="/memories" role="search">
                <input type="search" name="q" value=params_query.clone() maxlength="500"
                    placeholder=lang.pick("Search memories", "搜索记忆") data-testid="memory-search"/>
                <button type="submit">{lang.pick("Search", "搜索")}</button>
            </form>
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || loaded.get().map(|r| match r {
                    Ok(list) if list.rows.is_empty() && page == 0 => view! {
                        <p class="empty" data-testid="memory-empty">{lang.pick("Nothing remembered here yet.", "这里还没有记忆。")}</p>
                    }.into_any(),
                    Ok(list) => {
                        let more = list.more;
                        let q = params_query.clone();
                        let back = back.clone();
                        let lines = list.rows.into_iter().map(|m| row(m, lang, back.clone())).collect_view();
                        view! {
                            <table class="plans memories">
                                {table_head(lang, &COLUMNS)}
                                <tbody>{lines}</tbody>
                            </table>
                            <Pager lang page more href=move |p| page_href("/memories", &[("q", q.as_str())], p)/>
                        }.into_any()
                    }
                    Err(e) => view! { <p class="error" role="alert">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}
