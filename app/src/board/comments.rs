//! The plan's discussion: comments on the plan or on one subtask, with
//! author and time, live for everyone viewing (they are plan events).

use leptos::prelude::*;
use plan_engine::{Op, SubtaskId};

use super::Board;

#[component]
pub fn Comments(board: Board) -> impl IntoView {
    let lang = board.lang;
    let body = RwSignal::new(String::new());
    let on_subtask = RwSignal::new(None::<SubtaskId>);
    let error = RwSignal::new(None::<String>);
    let list = move || {
        board.plan.with(|p| {
            p.comments()
                .iter()
                .rev()
                .map(|c| {
                    let on = c
                        .subtask
                        .map(|s| lang.pick(format!(" on #{}", s.0), format!("（#{}）", s.0)));
                    view! {
                        <li class="comment" data-testid="comment">
                            <p class="comment-head">
                                <strong>{c.author.clone()}</strong>{on}" · "
                                <time>{crate::words::stamp(&c.at, false)}</time>
                            </p>
                            <p class="comment-body">{c.body.clone()}</p>
                        </li>
                    }
                })
                .collect_view()
        })
    };
    // Redrawn only when a subtask is added, removed or renamed: a state
    // change on a plan of thousands must not rebuild thousands of options.
    // None until a person reaches for the list (see `Board::lists`).
    let names = Memo::new(move |_| {
        if !board.lists.get() {
            return Vec::new();
        }
        board.plan.with(|p| {
            p.subtasks()
                .iter()
                .map(|s| (s.id().0, s.name().to_string()))
                .collect::<Vec<_>>()
        })
    });
    let subtask_options = move || {
        names.with(|names| {
            names
                .iter()
                .map(|(id, name)| view! { <option value=id.to_string()>"#"{*id}" "{name.clone()}</option> })
                .collect_view()
        })
    };
    let send = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let text = body.get_untracked();
        if text.trim().is_empty() {
            error.set(Some(
                lang.pick("Write something first.", "请先写点内容。").into(),
            ));
            return;
        }
        let subtask = on_subtask.get_untracked();
        leptos::task::spawn_local(async move {
            match board
                .send(
                    Op::Comment {
                        subtask,
                        body: text,
                    },
                    false,
                )
                .await
            {
                Ok(_) => {
                    body.set(String::new());
                    error.set(None);
                }
                Err(e) => error.set(Some(crate::words::explain(&e, lang))),
            }
        });
    };
    view! {
        <section class="comments" aria-label=lang.pick("Comments", "评论")>
            <h2>{lang.pick("Comments", "评论")}</h2>
            <Show when=move || board.can_edit()>
                <form on:submit=send class="comment-form">
                    <label class="field">
                        {lang.pick("On", "针对")}
                        <select on:change=move |ev| on_subtask.set(event_target_value(&ev).parse().ok().map(SubtaskId)) data-testid="comment-on">
                            <option value="">{lang.pick("the whole plan", "整个计划")}</option>
                            {subtask_options}
                        </select>
                    </label>
                    <label class="field">
                        {lang.pick("Comment", "评论")}
                        <textarea prop:value=move || body.get() on:input=move |ev| body.set(event_target_value(&ev)) data-testid="comment-body"></textarea>
                    </label>
                    <button type="submit" data-testid="comment-send">{lang.pick("Comment", "发表评论")}</button>
                    <Show when=move || error.get().is_some()>
                        <p class="error" role="alert">{move || error.get()}</p>
                    </Show>
                </form>
            </Show>
            <ul class="comment-list">{list}</ul>
        </section>
    }
}
