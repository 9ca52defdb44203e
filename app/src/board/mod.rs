//! The plan board (`/plans/{id}`): one plan, live, in three views.
//!
//! The page loads the plan's log and folds it with the engine; every row
//! that arrives on the plan's SSE stream is folded the same way, so the
//! board, the timeline and the replay are one history. A gap in the rows, a
//! `resync` or a reconnect loads the log again, so nothing is missed.
//!
//! # Layout
//! - this file: [`Board`] (the live state and the one way to send a
//!   change); [`BoardPage`], the server-rendered page that reads the address,
//!   and [`BoardIsland`], the hydrated board with its header, approval
//!   banner and view tabs;
//! - `kanban.rs`, `dag.rs`, `timeline.rs`: the three views;
//! - `details.rs`: the selected subtask, its edit form, the add form;
//! - `comments.rs`: the plan's discussion.

mod comments;
mod dag;
pub(crate) mod details;
mod kanban;
mod timeline;

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_params_map, use_query_map};
use plan_engine::{Command, Op, Plan, PlanId, PlanState, SubtaskId};

use crate::api::{load_board, run_command, BoardData, BoardError, LogEntry, Viewer};
use crate::i18n::{use_lang, Lang};
use crate::live::{use_live, Heard};
use crate::pages::plans::connection_text;

/// The board's live state, shared by its views.
#[derive(Clone, Copy)]
pub struct Board {
    pub id: PlanId,
    pub plan: RwSignal<Plan>,
    pub log: RwSignal<Vec<LogEntry>>,
    pub viewer: StoredValue<Viewer>,
    pub selected: RwSignal<Option<SubtaskId>>,
    /// The UI's language (the plan's own text is shown as written).
    pub lang: Lang,
    /// Set when the stream skipped rows: the page loads the log again.
    pub stale: RwSignal<bool>,
}

/// The plan a log folds to.
pub fn replay(log: &[LogEntry]) -> Option<Plan> {
    let mut plan = Plan::replay(log.iter().filter_map(|e| e.event.as_ref())).ok()?;
    plan.reindex();
    Some(plan)
}

impl Board {
    fn new(id: PlanId, data: BoardData, lang: Lang) -> Option<Board> {
        let plan = replay(&data.log)?;
        Some(Board {
            id,
            plan: RwSignal::new(plan),
            log: RwSignal::new(data.log),
            viewer: StoredValue::new(data.viewer),
            selected: RwSignal::new(None),
            lang,
            stale: RwSignal::new(false),
        })
    }

    pub fn can_edit(&self) -> bool {
        self.viewer.with_value(|v| v.can_edit)
    }

    fn last_seq(&self) -> i64 {
        self.log.with_untracked(|l| l.last().map_or(0, |e| e.seq))
    }

    /// Folds a streamed row; rows already seen are skipped, a gap in the
    /// versions marks the board stale.
    fn take(&self, seq: i64, event: Option<plan_engine::Event>) {
        if seq <= self.last_seq() {
            return;
        }
        let Some(event) = event else {
            self.stale.set(true);
            return;
        };
        let version = self.plan.with_untracked(|p| p.version);
        if event.version != version && event.version != version + 1 {
            self.stale.set(true);
            return;
        }
        self.plan.update(|p| p.fold(&event));
        self.log.update(|l| {
            l.push(LogEntry {
                seq,
                event: Some(event),
            })
        });
    }

    /// Sends one change. With `guarded`, the change is refused if the plan
    /// moved on since the person saw it (for edits of text they typed).
    /// Returns the plan's version after it.
    pub async fn send(self, op: Op, guarded: bool) -> Result<u64, BoardError> {
        let version = guarded.then(|| self.plan.with_untracked(|p| p.version));
        self.send_at(op, version).await
    }

    pub async fn send_at(self, op: Op, version: Option<u64>) -> Result<u64, BoardError> {
        let command = Command {
            op,
            expected_version: version,
        };
        match run_command(self.id, command).await {
            Ok(result) => result,
            Err(e) => Err(BoardError::Unavailable(self.lang.pick(
                format!("the server did not answer ({e}); nothing was changed"),
                format!("服务器没有响应（{e}）；没有做任何修改"),
            ))),
        }
    }

    /// [`Board::send`] from an event handler, reporting into `error`.
    pub fn act(self, op: Op, guarded: bool, error: RwSignal<Option<String>>) {
        spawn_local(async move {
            error.set(
                self.send(op, guarded)
                    .await
                    .err()
                    .map(|e| explain(&e, self.lang)),
            );
        });
    }
}

/// An error as the person should read it.
/// The engine's refusals stay as the engine wrote them (in English, the
/// language of the API and the agents); the board's own words follow `lang`.
pub fn explain(e: &BoardError, lang: Lang) -> String {
    match e {
        BoardError::Stale {
            current_version, ..
        } => lang.pick(
            format!(
                "The plan changed while you were editing (it is now at version {current_version}). \
                 The board shows the fresh plan; your text is still here — check it and send it again."
            ),
            format!(
                "你编辑期间计划已被修改（现在是第 {current_version} 版）。\
                 看板已显示最新的计划；你输入的内容仍在这里——检查后再提交一次。"
            ),
        ),
        other => other.to_string(),
    }
}

/// "2026-11-22 18:01" (with `:02` seconds if asked), in UTC. Written out
/// by hand: chrono's strftime would add its parser to the wasm.
pub fn stamp(at: &plan_engine::Timestamp, seconds: bool) -> String {
    use chrono::{Datelike, Timelike};
    let minute = format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        at.year(),
        at.month(),
        at.day(),
        at.hour(),
        at.minute()
    );
    if seconds {
        format!("{minute}:{:02}", at.second())
    } else {
        minute
    }
}

/// The board's three views; `?view=` in the address.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub enum View {
    Kanban,
    Dag,
    Timeline,
}

impl View {
    /// The view `?view=` asks for: the server reads it from the router's
    /// query, the browser from the address it went back or forward to.
    fn parse(value: Option<&str>) -> View {
        match value {
            Some("dag") => View::Dag,
            Some("timeline") => View::Timeline,
            _ => View::Kanban,
        }
    }

    fn key(self) -> &'static str {
        match self {
            View::Kanban => "kanban",
            View::Dag => "dag",
            View::Timeline => "timeline",
        }
    }
}

/// The page around the board, rendered on the server: it reads the address
/// and hands the plan's id and view to the island.
#[component]
pub fn BoardPage() -> impl IntoView {
    let lang = use_lang();
    let id = use_params_map()
        .read_untracked()
        .get("id")
        .and_then(|s| uuid::Uuid::parse_str(&s).ok());
    let view = View::parse(use_query_map().read_untracked().get_str("view"));
    match id {
        Some(id) => view! { <BoardIsland id view/> }.into_any(),
        None => not_found(lang).into_any(),
    }
}

fn not_found(lang: Lang) -> impl IntoView {
    view! { <p class="error" role="alert">{lang.pick("No plan has this id.", "没有这个 id 的计划。")}</p> }
}

/// The board: hydrated in the browser, live from the plan's stream.
#[island]
pub fn BoardIsland(id: PlanId, view: View) -> impl IntoView {
    let lang = use_lang();
    let view = RwSignal::new(view);
    follow_back_and_forward(view);
    let loaded = crate::codec::load(move || id, |id| async move { load_board(id).await.ok() });
    view! {
        <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading the plan…", "正在加载计划…")}</p> }>
            {move || {
                loaded.get()
                    .map(|result| match result {
                        Some(Ok(data)) => match Board::new(id, data, lang) {
                            Some(board) => view! { <LiveBoard board reload=loaded view/> }.into_any(),
                            None => view! { <p class="error">{lang.pick("This plan's history cannot be read.", "无法读取这个计划的历史。")}</p> }.into_any(),
                        },
                        Some(Err(e)) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                        None => not_found(lang).into_any(),
                    })
            }}
        </Transition>
    }
}

/// The tabs switch views in place and record each switch in the address
/// (`pushState`), so the browser's back and forward buttons walk the views
/// as they did when the router did it.
fn follow_back_and_forward(view: RwSignal<View>) {
    #[cfg(feature = "hydrate")]
    {
        let handle = window_event_listener(leptos::ev::popstate, move |_| {
            let value = window()
                .location()
                .search()
                .and_then(|search| web_sys::UrlSearchParams::new_with_str(&search))
                .ok()
                .and_then(|params| params.get("view"));
            view.set(View::parse(value.as_deref()));
        });
        on_cleanup(move || handle.remove());
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = view;
}

fn push_address(url: &str) {
    #[cfg(feature = "hydrate")]
    {
        if let Ok(history) = window().history() {
            _ = history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(url));
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = url;
}

#[component]
fn LiveBoard(
    board: Board,
    reload: crate::codec::Loaded<Option<Result<BoardData, BoardError>>>,
    view: RwSignal<View>,
) -> impl IntoView {
    let live = use_live(format!(
        "/api/plans/{}/stream?after={}",
        board.id,
        board.last_seq()
    ));
    Effect::new(move |_| match live.heard.get() {
        Some(Heard::Row(row)) if row.plan_id == board.id => board.take(row.seq, row.event),
        Some(Heard::Reload) => board.stale.set(true),
        _ => {}
    });
    // After a drop the stream reconnects with the same `after`: rows are
    // sent again from there and the seq check skips those already folded.
    Effect::new(move |_| {
        if board.stale.get() {
            reload.refetch();
        }
    });
    let lang = board.lang;
    // The details and comments panel: hidden, the board gets the width;
    // selecting a card or node shows it again.
    let side_open = RwSignal::new(true);
    Effect::new(move |_| {
        if board.selected.get().is_some() {
            side_open.set(true);
        }
    });
    let tab = move |kind: View, label: &'static str| {
        let href = format!("/plans/{}?view={}", board.id, kind.key());
        let switch = {
            let href = href.clone();
            move |ev: leptos::ev::MouseEvent| {
                // Modified clicks open a new tab or window, as links do.
                if ev.button() != 0
                    || ev.ctrl_key()
                    || ev.meta_key()
                    || ev.shift_key()
                    || ev.alt_key()
                {
                    return;
                }
                ev.prevent_default();
                if view.get_untracked() != kind {
                    view.set(kind);
                    push_address(&href);
                }
            }
        };
        view! {
            <a
                href=href
                class="tab"
                class:active=move || view.get() == kind
                aria-current=move || (view.get() == kind).then_some("page")
                data-testid=format!("tab-{}", kind.key())
                on:click=switch
            >
                {label}
            </a>
        }
    };
    view! {
        <div class="board" data-testid="board">
            <p class="connection" class:offline=move || !live.connected.get() role="status" data-testid="connection">
                {move || connection_text(lang, live.connected.get())}
            </p>
            <Header board/>
            <ApprovalBanner board/>
            <nav class="tabs" aria-label=lang.pick("Board views", "看板视图")>
                {tab(View::Kanban, lang.pick("Kanban", "看板"))}
                {tab(View::Dag, lang.pick("DAG", "依赖图"))}
                {tab(View::Timeline, lang.pick("Timeline", "时间线"))}
                <button
                    type="button"
                    class="toggle-side"
                    aria-expanded=move || side_open.get().to_string()
                    aria-controls="board-side"
                    data-testid="toggle-side"
                    on:click=move |_| side_open.update(|open| *open = !*open)
                >
                    {move || if side_open.get() {
                        lang.pick("Hide details", "隐藏详情")
                    } else {
                        lang.pick("Show details", "显示详情")
                    }}
                </button>
            </nav>
            <div class="board-body" class:side-hidden=move || !side_open.get()>
                <section class="view">
                    {move || match view.get() {
                        View::Kanban => view! { <kanban::Kanban board/> }.into_any(),
                        View::Dag => view! { <dag::Dag board/> }.into_any(),
                        View::Timeline => view! { <timeline::Timeline board/> }.into_any(),
                    }}
                </section>
                <aside class="side" id="board-side">
                    <details::Details board/>
                    <comments::Comments board/>
                </aside>
            </div>
        </div>
    }
}

#[component]
fn Header(board: Board) -> impl IntoView {
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
                <h1 data-testid="plan-title">{move || plan.with(|p| p.title.clone())}</h1>
                <span class=move || plan.with(|p| format!("badge plan-state state-{}", p.state.as_str())) data-testid="plan-state">
                    {move || plan.with(|p| p.state.label(lang))}
                </span>
                <span class="badge mode">{move || plan.with(|p| p.mode.label(lang))}</span>
                <span class="version" data-testid="plan-version">"v"{move || plan.with(|p| p.version)}</span>
                <span class="exports">{export("json", "JSON")}{export("markdown", "Markdown")}{export("mermaid", "Mermaid")}</span>
            </div>
            <p class="goal">{move || plan.with(|p| p.goal.clone())}</p>
            <div class="progress" role="progressbar" aria-label=lang.pick("Plan progress", "计划进度") aria-valuemin="0" aria-valuemax="100" aria-valuenow=percent>
                <div class="progress-bar" style=move || format!("width: {}%", percent())></div>
            </div>
            <p class="progress-text" data-testid="progress-text">{percent}{lang.pick("% done or skipped", "% 已完成或跳过")}</p>
            <ul class="counts">{counts}</ul>
        </header>
    }
}

#[component]
fn ApprovalBanner(board: Board) -> impl IntoView {
    let lang = board.lang;
    let awaiting = move || board.plan.with(|p| p.state == PlanState::AwaitingApproval);
    let comment = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let editing = RwSignal::new(false);
    let approve = move |_| {
        let text = comment.get_untracked();
        let comment = (!text.trim().is_empty()).then_some(text);
        board.act(Op::Approve { comment }, false, error);
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
            (p.approval.status == plan_engine::ApprovalStatus::Rejected).then(|| {
                let by = p.approval.by.clone().unwrap_or_default();
                let comment = p.approval.comment.clone().unwrap_or_default();
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

#[cfg(test)]
mod tests {
    use super::View;
    use chrono::TimeZone;

    #[test]
    fn the_view_comes_from_the_query_and_defaults_to_kanban() {
        assert_eq!(View::parse(Some("dag")), View::Dag);
        assert_eq!(View::parse(Some("timeline")), View::Timeline);
        assert_eq!(View::parse(Some("kanban")), View::Kanban);
        assert_eq!(View::parse(Some("nonsense")), View::Kanban);
        assert_eq!(View::parse(None), View::Kanban);
        for view in [View::Kanban, View::Dag, View::Timeline] {
            assert_eq!(
                View::parse(Some(view.key())),
                view,
                "tabs link to what they show"
            );
        }
    }

    #[test]
    fn a_stamp_reads_like_the_strftime_it_replaces() {
        let at = chrono::Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap();
        assert_eq!(
            super::stamp(&at, true),
            at.format("%Y-%m-%d %H:%M:%S").to_string()
        );
        assert_eq!(super::stamp(&at, false), "2026-03-04 05:06");
    }
}
