//! The plan's discussion: comments on the plan or on one subtask, with
//! author and time, live for everyone viewing (they are plan events).

use leptos::prelude::*;
use plan_engine::{Op, SubtaskId};

use super::Board;

#[component]
pub fn Comments(board: Board) -> impl IntoView {
    let body = RwSignal::new(String::new());
    let on_subtask = RwSignal::new(None::<SubtaskId>);
    let error = RwSignal::new(None::<String>);
    let list = move || {
        board.plan.with(|p| {
            p.comments
                .iter()
                .rev()
                .map(|c| {
                    let on = c.subtask.map(|s| format!(" on #{}", s.0));
                    view! {
                        <li class="comment" data-testid="comment">
                            <p class="comment-head">
                                <strong>{c.author.clone()}</strong>{on}" · "
                                <time>{c.at.format("%Y-%m-%d %H:%M").to_string()}</time>
                            </p>
                            <p class="comment-body">{c.body.clone()}</p>
                        </li>
                    }
                })
                .collect_view()
        })
    };
    let subtask_options = move || {
        board.plan.with(|p| {
            p.subtasks
                .iter()
                .map(|s| view! { <option value=s.id.0.to_string()>"#"{s.id.0}" "{s.name.clone()}</option> })
                .collect_view()
        })
    };
    let send = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let text = body.get_untracked();
        if text.trim().is_empty() {
            error.set(Some("Write something first.".into()));
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
                Err(e) => error.set(Some(super::explain(&e))),
            }
        });
    };
    view! {
        <section class="comments" aria-label="Comments">
            <h2>"Comments"</h2>
            <Show when=move || board.can_edit()>
                <form on:submit=send class="comment-form">
                    <label class="field">
                        "On"
                        <select on:change=move |ev| on_subtask.set(event_target_value(&ev).parse().ok().map(SubtaskId))>
                            <option value="">"the whole plan"</option>
                            {subtask_options}
                        </select>
                    </label>
                    <label class="field">
                        "Comment"
                        <textarea prop:value=move || body.get() on:input=move |ev| body.set(event_target_value(&ev)) data-testid="comment-body"></textarea>
                    </label>
                    <button type="submit" data-testid="comment-send">"Comment"</button>
                    <Show when=move || error.get().is_some()>
                        <p class="error" role="alert">{move || error.get()}</p>
                    </Show>
                </form>
            </Show>
            <ul class="comment-list">{list}</ul>
        </section>
    }
}
