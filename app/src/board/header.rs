//! The top of a board: the plan's title, state, counts and exports, and
//! the banner where a person approves or rejects a plan.

use leptos::prelude::*;
use plan_engine::{Op, PlanState};

use super::Board;

#[component]
pub(super) fn Header(board: Board) -> impl IntoView {
    let lang = board.lang;
    let plan = board.plan;
    let counts = move || {
        plan.with(|p| {
            plan_engine::SubtaskState::ALL
                .into_iter()
                .map(|s| {
                    let n = p.count(s);
                    view! {
                        <li class=format!("count state-{s}")>
                            <span class="count-n">{n}</span>" "{s.label(lang)}
                        </li>
                    }
                })
                .collect_view()
        })
    };
    let percent = move || plan.with(|p| p.percent());
    let export = move |format: &'static str, label: &'static str| {
        view! {
            <a class="button" href=format!("/api/plans/{}/export?format={format}", board.id) download>
                {label}
            </a>
        }
    };
    view! {
        <header class="plan-header">
            <div class="plan-title-row">
                <h1 data-testid="plan-title">{move || plan.with(|p| p.title().to_string())}</h1>
                <span class=move || plan.with(|p| format!("badge plan-state state-{}", p.state().as_str())) data-testid="plan-state">
                    {move || plan.with(|p| p.state().label(lang))}
                </span>
                <span class="badge mode">{move || plan.with(|p| p.mode().label(lang))}</span>
                <span class="version" data-testid="plan-version">"v"{move || plan.with(|p| p.version())}</span>
                <span class="exports">
                    <a class="button" href=format!("/plans/{}/compare", board.id) data-testid="compare-link">{lang.pick("Compare versions", "比较版本")}</a>
                    {export("json", "JSON")}{export("markdown", "Markdown")}{export("mermaid", "Mermaid")}
                </span>
            </div>
            <p class="goal">{move || plan.with(|p| p.goal().to_string())}</p>
            <div class="progress" role="progressbar" aria-label=lang.pick("Plan progress", "计划进度") aria-valuemin="0" aria-valuemax="100" aria-valuenow=percent>
                <div class="progress-bar" style=move || format!("width: {}%", percent())></div>
            </div>
            <p class="progress-text" data-testid="progress-text">{percent}{lang.pick("% done or skipped", "% 已完成或跳过")}</p>
            <ul class="counts">{counts}</ul>
        </header>
    }
}

#[component]
pub(super) fn ApprovalBanner(board: Board) -> impl IntoView {
    let lang = board.lang;
    let awaiting = move || {
        board
            .plan
            .with(|p| p.state() == PlanState::AwaitingApproval)
    };
    let comment = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let editing = RwSignal::new(false);
    let seen = seen_version(board);
    // What changed between the plan the person opened (or last
    // acknowledged) and the plan now; `None` while they are the same.
    let since_seen = Memo::new(move |_| {
        seen.with(|s| {
            let s = s.as_ref()?;
            board
                .plan
                .with(|p| (p.version() != s.version()).then(|| (s.version(), p.revision_of(s))))
        })
    });
    let approve = move |_| {
        // An approval is of the version the person saw: a plan that
        // changed under their eyes is not approved; they are shown what
        // changed and approve again. The server checks the same version
        // (a change the board has not heard of yet is its refusal).
        if let Some((from, revision)) = since_seen.get_untracked() {
            error.set(Some(changed_text(board, from, &revision)));
            seen.set(Some(board.plan.get_untracked()));
            return;
        }
        let text = comment.get_untracked();
        let comment = (!text.trim().is_empty()).then_some(text);
        let version = seen.with_untracked(|s| s.as_ref().map(|p| p.version()));
        leptos::task::spawn_local(async move {
            let sent = board.send_at(Op::Approve { comment }, version).await;
            error.set(sent.err().map(|e| crate::words::explain(&e, lang)));
        });
    };
    let reject = move |_| {
        let text = comment.get_untracked();
        if text.trim().is_empty() {
            error.set(Some(
                lang.pick(
                    "Say why you reject the plan: the comment is required.",
                    "请说明驳回计划的理由：驳回时必须填写评论。",
                )
                .into(),
            ));
            return;
        }
        board.act(Op::Reject { comment: text }, false, error);
    };
    let rejected = move || {
        board.plan.with(|p| {
            (p.approval().status == plan_engine::ApprovalStatus::Rejected).then(|| {
                let by = p.approval().by.clone().unwrap_or_default();
                let comment = p.approval().comment.clone().unwrap_or_default();
                lang.pick(
                    format!("Rejected by {by}: “{comment}”"),
                    format!("{by} 驳回了计划：“{comment}”"),
                )
            })
        })
    };
    view! {
        <Show when=move || rejected().is_some()>
            <p class="notice rejected" data-testid="rejected-note">{rejected}</p>
        </Show>
        <Show when=awaiting>
            <section class="approval" role="region" aria-label=lang.pick("Approval", "审批") data-testid="approval-banner">
                <p>
                    <strong>{lang.pick("This plan awaits approval.", "这个计划等待审批。")}</strong>
                    {lang.pick(" Nothing in it can start until someone approves it.", "在有人批准之前，其中任何子任务都不能开始。")}
                </p>
                {move || revised(board)}
                {move || since_seen.get().map(|(from, revision)| view! {
                    <p class="notice changed" data-testid="changed-since-seen">{changed_text(board, from, &revision)}</p>
                })}
                <Show when=move || board.can_edit() fallback=move || view! { <p>{lang.pick("You can look, but only operators can decide.", "你可以查看，但只有操作员能做决定。")}</p> }>
                    <label class="field">
                        {lang.pick("Comment (required to reject)", "评论（驳回时必填）")}
                        <textarea
                            prop:value=move || comment.get()
                            on:input=move |ev| comment.set(event_target_value(&ev))
                            data-testid="approval-comment"
                        ></textarea>
                    </label>
                    <div class="actions">
                        <button class="primary" on:click=approve data-testid="approve">{lang.pick("Approve", "批准")}</button>
                        <button class="danger" on:click=reject data-testid="reject">{lang.pick("Reject", "驳回")}</button>
                        <button on:click=move |_| editing.update(|e| *e = !*e) aria-pressed=move || editing.get().to_string() data-testid="edit-then-approve">
                            {lang.pick("Edit, then approve", "先编辑，再批准")}
                        </button>
                    </div>
                    <Show when=move || editing.get()>
                        <p class="hint">{lang.pick(
                            "Edit the subtasks on the board (select a card to edit it, or add one), then press Approve.",
                            "在看板上编辑子任务（选中卡片即可编辑，或添加新的子任务），然后点击“批准”。",
                        )}</p>
                    </Show>
                    <Show when=move || error.get().is_some()>
                        <p class="error" role="alert">{move || error.get()}</p>
                    </Show>
                </Show>
            </section>
        </Show>
    }
}

/// The plan as the person last saw it while it awaits approval: taken
/// when the banner appears, moved on by the person's own edits ("Edit,
/// then approve") and by acknowledging a change; cleared once the plan
/// no longer awaits approval.
fn seen_version(board: Board) -> RwSignal<Option<plan_engine::Plan>> {
    let seen = RwSignal::new(None::<plan_engine::Plan>);
    Effect::new(move |_| {
        let (awaiting, version) = board
            .plan
            .with(|p| (p.state() == PlanState::AwaitingApproval, p.version()));
        if !awaiting {
            seen.set(None);
            return;
        }
        let me = board.viewer.with_value(|v| v.name.clone());
        let base = seen.with_untracked(|s| s.as_ref().map(|p| p.version()));
        // `base` is a version this board showed, so every event after it
        // was heard on the stream.
        let only_mine = base.is_some_and(|base| {
            base != version
                && board.heard.with(|log| {
                    log.iter()
                        .filter_map(|e| e.event.as_ref())
                        .filter(|e| e.version > base)
                        .all(|e| *e.actor == *me)
                })
        });
        if base.is_none() || only_mine {
            seen.set(Some(board.plan.get_untracked()));
        }
    });
    seen
}

/// What changed since version `from`, in words: the subtasks added (+),
/// changed (~) and removed (−), or that only comments and notes did.
fn changed_text(board: Board, from: u64, revision: &plan_engine::revision::Revision) -> String {
    let lang = board.lang;
    let now = board.plan.with_untracked(|p| p.version());
    let name = |id| {
        board
            .plan
            .with_untracked(|p| p.subtask(id).map(|s| s.name().to_string()))
            .unwrap_or_default()
    };
    let mut parts: Vec<String> = revision
        .added
        .iter()
        .map(|id| format!("+ {}", name(*id)))
        .collect();
    parts.extend(revision.changed.iter().map(|id| format!("~ {}", name(*id))));
    parts.extend(revision.removed.iter().map(|n| format!("− {n}")));
    let what = if parts.is_empty() {
        lang.pick(
            "only comments, notes or details changed",
            "只有评论、备注或细节有变化",
        )
        .to_string()
    } else {
        parts.join(", ")
    };
    lang.pick(
        format!("The plan changed since you looked at it (v{from} → v{now}): {what}. Look it over, then approve again."),
        format!("你查看之后计划有了变化（v{from} → v{now}）：{what}。请检查后再次批准。"),
    )
}

/// The banner's line on a revised plan: what the revision added (+),
/// changed (~) and dropped (−) since the rejection; the cards carry the
/// same marks.
fn revised(board: Board) -> Option<impl IntoView> {
    let lang = board.lang;
    let revision = board.revision.get();
    if revision.is_empty() {
        return None;
    }
    let name = |id| {
        board
            .plan
            .with(|p| p.subtask(id).map(|s| s.name().to_string()))
            .unwrap_or_default()
    };
    let marks = revision
        .added
        .iter()
        .map(|id| ("rev-added", format!("+ {}", name(*id))))
        .chain(
            revision
                .changed
                .iter()
                .map(|id| ("rev-changed", format!("~ {}", name(*id)))),
        )
        .chain(
            revision
                .removed
                .iter()
                .map(|n| ("rev-removed", format!("− {n}"))),
        )
        .map(|(class, text)| view! { <span class=class>{text}</span> })
        .collect_view();
    Some(view! {
        <p class="revision" data-testid="revision">
            <strong>{lang.pick("Revised after the rejection: ", "按驳回意见修改：")}</strong>
            {marks}
        </p>
    })
}
