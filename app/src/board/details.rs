//! The side panel: the selected subtask (its details and edit form) and
//! the form that adds a subtask. Forms keep what was typed when the server
//! refuses, so nothing is lost; edits are sent with the plan version the
//! person saw, so a plan that moved on meanwhile is a clear "changed" error.

use leptos::prelude::*;
use plan_engine::{Lang, NewSubtask, Op, Position, SubtaskId, SubtaskPatch};

use super::Board;
use crate::words::explain;

/// "1, 2 #3" → the ids; anything else is an error in words.
pub fn parse_ids(text: &str, lang: Lang) -> Result<Vec<SubtaskId>, String> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .map(|t| t.trim().trim_start_matches('#'))
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<u32>().map(SubtaskId).map_err(|_| {
                lang.pick(
                    format!("'{t}' is not a subtask number; write them like 1, 2"),
                    format!("'{t}' 不是子任务编号；请写成 1, 2 这样"),
                )
            })
        })
        .collect()
}

fn ids_text(ids: &[SubtaskId]) -> String {
    ids.iter()
        .map(|d| d.0.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[component]
pub fn Details(board: Board) -> impl IntoView {
    let lang = board.lang;
    // Keyed by the selection only: live changes to the plan must not reset
    // a form the person is typing in.
    let selected = Memo::new(move |_| board.selected.get());
    view! {
        <section class="details" aria-label=lang.pick("Subtask details", "子任务详情") data-testid="details">
            {move || match selected.get() {
                Some(id) => view! { <Selected board id/> }.into_any(),
                None => view! {
                    <p class="hint">{lang.pick("Select a card or a node to see and edit its subtask.", "选择一张卡片或一个节点，查看并编辑它的子任务。")}</p>
                }.into_any(),
            }}
        </section>
        <Show when=move || board.can_edit()>
            <AddSubtask board/>
        </Show>
    }
}

#[component]
fn Selected(board: Board, id: SubtaskId) -> impl IntoView {
    let lang = board.lang;
    let Some(subtask) = board.plan.with_untracked(|p| p.subtask(id).cloned()) else {
        return view! { <p class="hint">{lang.pick("This subtask was deleted.", "这个子任务已被删除。")}</p> }
            .into_any();
    };
    // The version the person started from: a save refused because the plan
    // moved on since then tells them so and keeps their text.
    let seen = StoredValue::new(board.plan.with_untracked(|p| p.version()));
    let live = move || board.plan.with(|p| p.subtask(id).cloned());
    let editable = move || board.can_edit() && live().is_some_and(|s| s.state().is_unstarted());
    let name = RwSignal::new(subtask.name().to_string());
    let description = RwSignal::new(subtask.description().to_string());
    let outcome = RwSignal::new(subtask.expected_outcome().to_string());
    let assignee = RwSignal::new(subtask.assignee().map(str::to_string).unwrap_or_default());
    let tool = RwSignal::new(subtask.tool().map(str::to_string).unwrap_or_default());
    let deps = RwSignal::new(ids_text(subtask.dependencies()));
    let error = RwSignal::new(None::<String>);
    let saved = RwSignal::new(false);
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let dependencies = match parse_ids(&deps.get_untracked(), lang) {
            Ok(d) => d,
            Err(e) => return error.set(Some(e)),
        };
        let Some(before) = board.plan.with_untracked(|p| p.subtask(id).cloned()) else {
            let gone = lang.pick(
                "This subtask was deleted meanwhile.",
                "这个子任务刚刚被删除了。",
            );
            return error.set(Some(gone.into()));
        };
        let typed_assignee = assignee.get_untracked();
        let typed_tool = tool.get_untracked();
        let patch = SubtaskPatch {
            name: Some(name.get_untracked()).filter(|n| *n != before.name()),
            description: Some(description.get_untracked()).filter(|d| *d != before.description()),
            expected_outcome: Some(outcome.get_untracked())
                .filter(|o| *o != before.expected_outcome()),
            reasoning: None,
            assignee: (typed_assignee != before.assignee().map(str::to_string).unwrap_or_default())
                .then_some(typed_assignee),
            tool: (typed_tool.trim() != before.tool().unwrap_or_default()).then_some(typed_tool),
        };
        let changed_fields = patch != SubtaskPatch::default();
        let changed_deps = dependencies != before.dependencies();
        leptos::task::spawn_local(async move {
            let mut version = Some(seen.get_value());
            let mut result = Ok(());
            if changed_fields {
                match board.send_at(Op::EditSubtask { id, patch }, version).await {
                    Ok(v) => version = Some(v),
                    Err(e) => result = Err(e),
                }
            }
            if changed_deps && result.is_ok() {
                let op = Op::SetDependencies { id, dependencies };
                match board.send_at(op, version).await {
                    Ok(v) => version = Some(v),
                    Err(e) => result = Err(e),
                }
            }
            match result {
                Ok(()) => {
                    seen.set_value(version.unwrap_or_default());
                    error.set(None);
                    saved.set(true);
                }
                Err(e) => {
                    if let crate::api::BoardError::Stale {
                        current_version, ..
                    } = &e
                    {
                        // They have been told; the next save is theirs to make.
                        seen.set_value(*current_version);
                    }
                    saved.set(false);
                    error.set(Some(explain(&e, lang)));
                }
            }
        });
    };
    let delete = move |_| {
        leptos::task::spawn_local(async move {
            match board.send(Op::DeleteSubtask { id }, false).await {
                Ok(_) => board.selected.set(None),
                Err(e) => error.set(Some(explain(&e, lang))),
            }
        });
    };
    let shift = move |by: isize| {
        let to = board.plan.with_untracked(|p| {
            p.position(id)
                .map(|i| (i as isize + by).clamp(0, p.subtasks().len() as isize - 1) as usize)
        });
        if let Some(to_index) = to {
            board.act(Op::MoveSubtask { id, to_index }, false, error);
        }
    };
    let field = move |label: &'static str, value: RwSignal<String>, key: &'static str| {
        view! {
            <label class="field">
                {label}
                <input
                    prop:value=move || value.get()
                    on:input=move |ev| value.set(event_target_value(&ev))
                    disabled=move || !editable()
                    data-testid=format!("edit-{key}")
                />
            </label>
        }
    };
    let state = move || live().map(|s| s.state());
    let state_class = move || state().map_or("deleted", |s| s.as_str());
    let state_label = move || state().map_or(lang.pick("deleted", "已删除"), |s| s.label(lang));
    view! {
        <h2>"#"{id.0}" "{move || live().map(|s| s.name().to_string()).unwrap_or_default()}</h2>
        <p class=move || format!("badge state-{}", state_class())>{state_label}</p>
        {move || live().and_then(|s| s.tool().map(str::to_string)).map(|t| view! { <span class="tool-chip" title=lang.pick("tool", "工具") data-testid="selected-tool">{t}</span> })}
        {move || live().and_then(|s| s.outcome().map(str::to_string)).map(|o| view! { <p class="result">{lang.pick("Result: ", "结果：")}{o}</p> })}
        {move || live().map(|s| s.notes().to_string()).filter(|n| !n.is_empty()).map(|n| view! { <p class="notes">{n}</p> })}
        <form class="edit" on:submit=save>
            {field(lang.pick("Name", "名称"), name, "name")}
            <label class="field">
                {lang.pick("Description", "描述")}
                <textarea prop:value=move || description.get() on:input=move |ev| description.set(event_target_value(&ev)) disabled=move || !editable()></textarea>
            </label>
            {field(lang.pick("Expected outcome", "预期结果"), outcome, "outcome")}
            {field(lang.pick("Assignee", "负责人"), assignee, "assignee")}
            {field(lang.pick("Tool (e.g. run_python)", "工具（如 run_python）"), tool, "tool")}
            {field(lang.pick("Depends on (numbers)", "依赖（编号）"), deps, "deps")}
            <Show when=editable fallback=move || board.can_edit().then(|| view! {
                <p class="hint">{lang.pick("Only subtasks that have not started can be edited.", "只有尚未开始的子任务可以编辑。")}</p>
            })>
                <div class="actions">
                    <button type="submit" class="primary" data-testid="edit-save">{lang.pick("Save", "保存")}</button>
                    <button type="button" on:click=move |_| shift(-1) aria-label=lang.pick("Move up in the plan", "在计划中上移")>"↑"</button>
                    <button type="button" on:click=move |_| shift(1) aria-label=lang.pick("Move down in the plan", "在计划中下移")>"↓"</button>
                    <button type="button" class="danger" on:click=delete data-testid="edit-delete">{lang.pick("Delete", "删除")}</button>
                </div>
            </Show>
        </form>
        <Show when=move || saved.get()>
            <p class="ok" role="status">{lang.pick("Saved.", "已保存。")}</p>
        </Show>
        <Show when=move || error.get().is_some()>
            <p class="error" role="alert" data-testid="edit-error">{move || error.get()}</p>
        </Show>
    }
    .into_any()
}

/// Where the add form puts the new subtask: "end", "start" or "after:n".
fn position_of(value: &str) -> Position {
    match value.split_once(':') {
        Some(("after", n)) => n
            .parse()
            .map_or(Position::End, |n| Position::After(SubtaskId(n))),
        _ if value == "start" => Position::Index(0),
        _ => Position::End,
    }
}

/// Adds a subtask with all a person gives it (name, description, expected
/// outcome, tool, dependencies) where they put it, in one change: the
/// engine checks it all and a refusal is the form's error, with nothing
/// written and what was typed kept.
#[component]
fn AddSubtask(board: Board) -> impl IntoView {
    let lang = board.lang;
    let name = RwSignal::new(String::new());
    let description = RwSignal::new(String::new());
    let outcome = RwSignal::new(String::new());
    let tool = RwSignal::new(String::new());
    let deps = RwSignal::new(String::new());
    let position = RwSignal::new("end".to_string());
    let error = RwSignal::new(None::<String>);
    let add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let dependencies = match parse_ids(&deps.get_untracked(), lang) {
            Ok(d) => d,
            Err(e) => return error.set(Some(e)),
        };
        let typed_tool = tool.get_untracked();
        let subtask = NewSubtask {
            description: description.get_untracked(),
            expected_outcome: outcome.get_untracked(),
            tool: (!typed_tool.trim().is_empty()).then_some(typed_tool),
            dependencies,
            ..NewSubtask::named(name.get_untracked())
        };
        let op = Op::AddSubtask {
            subtask,
            position: position_of(&position.get_untracked()),
            rewire_after: None,
            required_by: Vec::new(),
        };
        leptos::task::spawn_local(async move {
            match board.send(op, false).await {
                Ok(_) => {
                    for typed in [name, description, outcome, tool, deps] {
                        typed.set(String::new());
                    }
                    position.set("end".into());
                    error.set(None);
                }
                Err(e) => error.set(Some(explain(&e, lang))),
            }
        });
    };
    // "After #n name" for each subtask, in the plan's order, once a person
    // reaches for the list (see `Board::lists`).
    let places = move || {
        if !board.lists.get() {
            return Vec::new();
        }
        board.plan.with(|p| {
            p.subtasks()
                .iter()
                .map(|s| (s.id().0, s.name().to_string()))
                .collect::<Vec<_>>()
        })
    };
    let text = move |label: &'static str, value: RwSignal<String>, key: &'static str| {
        view! {
            <label class="field">
                {label}
                <input prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev)) data-testid=format!("add-{key}")/>
            </label>
        }
    };
    view! {
        <form class="add" on:submit=add aria-label=lang.pick("Add a subtask", "添加子任务")>
            <h2>{lang.pick("Add a subtask", "添加子任务")}</h2>
            {text(lang.pick("Name", "名称"), name, "name")}
            <label class="field">
                {lang.pick("Description (optional)", "描述（可选）")}
                <textarea prop:value=move || description.get() on:input=move |ev| description.set(event_target_value(&ev)) data-testid="add-description"></textarea>
            </label>
            {text(lang.pick("Expected outcome (optional)", "预期结果（可选）"), outcome, "outcome")}
            {text(lang.pick("Tool (optional, e.g. run_python)", "工具（可选，如 run_python）"), tool, "tool")}
            {text(lang.pick("Depends on (numbers, optional)", "依赖（编号，可选）"), deps, "deps")}
            <label class="field">
                {lang.pick("Place", "位置")}
                <select prop:value=move || position.get() on:change=move |ev| position.set(event_target_value(&ev)) data-testid="add-position">
                    <option value="end">{lang.pick("At the end", "放在最后")}</option>
                    <option value="start">{lang.pick("At the start", "放在最前")}</option>
                    <For each=places key=|place| place.clone() let((id, name))>
                        <option value=format!("after:{id}")>{lang.pick(format!("After #{id} {name}"), format!("放在 #{id} {name} 之后"))}</option>
                    </For>
                </select>
            </label>
            <button type="submit" data-testid="add-submit">{lang.pick("Add", "添加")}</button>
            <Show when=move || error.get().is_some()>
                <p class="error" role="alert" data-testid="add-error">{move || error.get()}</p>
            </Show>
        </form>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtask_numbers_are_read_with_commas_spaces_or_hashes() {
        assert_eq!(
            parse_ids("1, 2 #3", Lang::En),
            Ok(vec![SubtaskId(1), SubtaskId(2), SubtaskId(3)])
        );
        assert_eq!(parse_ids("  ", Lang::En), Ok(vec![]));
    }

    #[test]
    fn the_add_forms_place_reads_as_the_engines_position() {
        assert_eq!(position_of("end"), Position::End);
        assert_eq!(position_of("start"), Position::Index(0));
        assert_eq!(position_of("after:3"), Position::After(SubtaskId(3)));
        assert_eq!(position_of("after:x"), Position::End);
    }

    #[test]
    fn a_word_where_a_number_belongs_is_an_error_that_says_how_to_write_it() {
        for lang in [Lang::En, Lang::Zh] {
            let e = parse_ids("1, two", lang).unwrap_err();
            assert!(e.contains("'two'") && e.contains("1, 2"), "{e}");
        }
    }
}
