//! The plan board (`/plans/{id}`): one plan, live, in three views.
//!
//! The page loads the plan as the server folded its log; every row that
//! arrives on the plan's SSE stream is folded into it with the engine, so
//! the board, the timeline and the replay are one history. A gap in the
//! rows, a `resync` or a reconnect loads the plan again, so nothing is
//! missed.
//!
//! # Layout
//! - this file: [`Board`] (the live state and the one way to send a
//!   change) and [`BoardIsland`], the hydrated board with its header,
//!   approval banner and view tabs (the page around it, which reads the
//!   address, is `crate::pages::plan`);
//! - `activity.rs`: the run's activity lines (the live panel's, the
//!   activity page's);
//! - `header.rs`: the plan's header (title, state, counts, exports) and the
//!   approval banner;
//! - `kanban.rs`, `dag.rs`, `timeline.rs`: the three views;
//! - `details.rs`: the selected subtask, its edit form, the add form;
//! - `comments.rs`: the plan's discussion.

pub mod activity;
mod comments;
mod dag;
pub(crate) mod details;
mod header;
mod kanban;
pub(crate) mod run;
mod timeline;

use leptos::prelude::*;
use leptos::task::spawn_local;
use plan_engine::{ApprovalStatus, Command, EventKind, Op, Plan, PlanId, PlanState, SubtaskId};

use crate::api::{load_board, run_command, BoardData, BoardError, LogEntry, Viewer};
use crate::i18n::{use_lang, Lang};
use crate::live::{use_live, Heard};
use crate::words::{connection_text, explain};
use header::{ApprovalBanner, Header};
use run_model::ReplyDelta;

/// The board's live state, shared by its views.
#[derive(Clone, Copy)]
pub struct Board {
    pub id: PlanId,
    pub plan: RwSignal<Plan>,
    /// The log's entries heard on the stream since the board loaded (the
    /// log before that stayed on the server, folded into `plan`).
    pub heard: RwSignal<Vec<LogEntry>>,
    /// The log's length and last `seq` when the board loaded.
    loaded: StoredValue<(usize, i64)>,
    /// The plan as a person last rejected it, if one did.
    rejected: RwSignal<Option<Plan>>,
    pub viewer: StoredValue<Viewer>,
    pub selected: RwSignal<Option<SubtaskId>>,
    /// The UI's language (the plan's own text is shown as written).
    pub lang: Lang,
    /// Set when the stream skipped rows: the page loads the log again.
    pub stale: RwSignal<bool>,
    /// Counts the run entries heard, so the run's header loads again.
    pub run_tick: RwSignal<u64>,
    /// Replies the agent's model is writing now, as heard so far.
    pub writing: RwSignal<Vec<ReplyDelta>>,
    /// While a revised plan awaits approval: what changed since a person
    /// rejected it (empty otherwise).
    pub revision: Memo<plan_engine::revision::Revision>,
    /// Whether a person has reached for a list that names every subtask
    /// (focused it, by keyboard or by the press that opens it): their
    /// options are drawn from then on. At 5,000 subtasks the side panel's
    /// two such lists were 10,000 options for the page to carry and for the
    /// island to hydrate before it could answer a tab click. The browser
    /// focuses a select before it opens its list, so the list is whole
    /// when it shows.
    pub lists: RwSignal<bool>,
}

impl Board {
    fn new(id: PlanId, data: BoardData, lang: Lang) -> Option<Board> {
        let plan = RwSignal::new(data.plan?.into_plan()?);
        let rejected = RwSignal::new(data.rejected.and_then(|r| r.into_plan()));
        let revision = Memo::new(move |_| {
            if !plan.with(|p| p.state() == PlanState::AwaitingApproval) {
                return Default::default();
            }
            rejected
                .with(|r| r.as_ref().map(|r| plan.with(|p| p.revision_of(r))))
                .unwrap_or_default()
        });
        Some(Board {
            id,
            plan,
            heard: RwSignal::new(Vec::new()),
            loaded: StoredValue::new((data.entries, data.last_seq)),
            rejected,
            revision,
            lists: RwSignal::new(false),
            viewer: StoredValue::new(data.viewer),
            selected: RwSignal::new(None),
            lang,
            stale: RwSignal::new(false),
            run_tick: RwSignal::new(0),
            writing: RwSignal::new(Vec::new()),
        })
    }

    pub fn can_edit(&self) -> bool {
        self.viewer.with_value(|v| v.can_edit)
    }

    fn last_seq(&self) -> i64 {
        self.heard
            .with_untracked(|l| l.last().map(|e| e.seq))
            .unwrap_or_else(|| self.loaded.with_value(|(_, seq)| *seq))
    }

    /// How many entries the plan's log holds now (tracked).
    pub fn entries(&self) -> usize {
        self.loaded.with_value(|(n, _)| *n) + self.heard.with(Vec::len)
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
        let version = self.plan.with_untracked(|p| p.version());
        if event.version != version && event.version != version + 1 {
            self.stale.set(true);
            return;
        }
        self.plan.update(|p| p.fold(&event));
        // The plan as rejected is the log folded up to the rejection.
        if matches!(
            event.kind,
            EventKind::ApprovalDecided {
                status: ApprovalStatus::Rejected,
                ..
            }
        ) {
            self.rejected.set(Some(self.plan.get_untracked()));
        }
        self.heard.update(|l| {
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
        let version = guarded.then(|| self.plan.with_untracked(|p| p.version()));
        self.send_at(op, version).await
    }

    pub async fn send_at(self, op: Op, version: Option<u64>) -> Result<u64, BoardError> {
        let command = Command {
            op,
            expected_version: version,
        };
        run_command(self.id, command).await
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

plan_engine::wire_enum! {
    /// The board's four views; `?view=` in the address.
    #[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
    pub enum View: "view (kanban, dag, timeline or gantt)" {
        Kanban = "kanban",
        Dag = "dag",
        Timeline = "timeline",
        Gantt = "gantt",
    }
}

impl View {
    /// The view `?view=` asks for: the server reads it from the router's
    /// query, the browser from the address it went back or forward to.
    /// Absent or unknown: the kanban.
    pub fn parse(value: Option<&str>) -> View {
        value.and_then(View::from_wire).unwrap_or(View::Kanban)
    }
}

/// What [`server_html`] loads: the server's drawing, `None` if it could
/// not be had (the last one then stays).
pub(crate) type HtmlFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Option<String>>>>;

/// HTML the server draws for a view (the DAG, the timeline), loaded again
/// whenever `load` reads a changed signal; the last drawing stays on screen
/// while the next one loads. Not generic on purpose: each `LocalResource`
/// and `Effect` over its own closure type is its own copy of their code in
/// the wasm, so the views share this one.
pub(crate) fn server_html(load: Box<dyn Fn() -> HtmlFuture>) -> RwSignal<String> {
    let html = LocalResource::new(load);
    let shown = RwSignal::new(String::new());
    Effect::new(move |_| {
        if let Some(Some(fresh)) = html.get() {
            shown.set(fresh);
        }
    });
    shown
}

/// Whether `ev` is a select of the side panel taking focus: the lists
/// there that name every subtask (the add form's place, the comment's
/// subtask) are drawn from then on ([`Board::lists`]).
#[cfg(feature = "hydrate")]
fn focus_on_a_list(ev: &leptos::ev::FocusEvent) -> bool {
    use wasm_bindgen::JsCast;
    ev.target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|e| e.tag_name().eq_ignore_ascii_case("select"))
}

#[cfg(not(feature = "hydrate"))]
fn focus_on_a_list(_: &leptos::ev::FocusEvent) -> bool {
    false
}

pub fn not_found(lang: Lang) -> impl IntoView {
    view! { <p class="error" role="alert">{lang.pick("No plan has this id.", "没有这个 id 的计划。")}</p> }
}

/// The board: hydrated in the browser, live from the plan's stream.
#[island]
pub fn BoardIsland(id: PlanId, view: View) -> impl IntoView {
    let lang = use_lang();
    let view = RwSignal::new(view);
    follow_back_and_forward(view);
    let loaded = crate::codec::load(move || id, load_board);
    view! {
        <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading the plan…", "正在加载计划…")}</p> }>
            {move || {
                loaded.get()
                    .map(|result| match result {
                        Ok(data) => match Board::new(id, data, lang) {
                            Some(board) => view! { <LiveBoard board reload=loaded view/> }.into_any(),
                            None => view! { <p class="error">{lang.pick("This plan's history cannot be read.", "无法读取这个计划的历史。")}</p> }.into_any(),
                        },
                        Err(BoardError::NotFound(_)) => not_found(lang).into_any(),
                        Err(e) => view! { <p class="error" role="alert">{explain(&e, lang)}</p> }.into_any(),
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

/// Until the island has hydrated the tabs are plain links, and a click on
/// one loaded the whole board again: at 5,000 subtasks a person who
/// clicked as soon as the board showed waited 0.7 s (measured here) to
/// 1.6 s (issue 36) for the view. This
/// handler, written into the page, keeps such a click instead and names
/// its view on the tabs (`data-pending`); the island switches to it once it
/// is live and marks the tabs `data-live`, after which clicks pass to it.
/// Modified clicks still open a new tab, as links do.
const EARLY_TABS: &str = "if(!this.dataset.live){var a=event.target.closest('a[data-view]');\
if(a&&event.button===0&&!(event.ctrlKey||event.metaKey||event.shiftKey||event.altKey)){\
event.preventDefault();this.dataset.pending=a.dataset.view}}";

#[component]
fn LiveBoard(
    board: Board,
    reload: crate::codec::Loaded<Result<BoardData, BoardError>>,
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
        Some(Heard::Run) => board.run_tick.update(|n| *n += 1),
        Some(Heard::Delta(piece)) if piece.done => board
            .writing
            .update(|w| w.retain(|p| p.role != piece.role || p.subtask != piece.subtask)),
        Some(Heard::Delta(piece)) => board.writing.update(|w| {
            match w
                .iter_mut()
                .find(|p| p.role == piece.role && p.subtask == piece.subtask)
            {
                // A retried call starts its text over.
                Some(p) if p.attempt == piece.attempt => p.text.push_str(&piece.text),
                Some(p) => *p = *piece,
                None => w.push(*piece),
            }
        }),
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
        let href = format!("/plans/{}?view={}", board.id, kind.as_str());
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
                data-testid=format!("tab-{}", kind.as_str())
                data-view=kind.as_str()
                on:click=switch
            >
                {label}
            </a>
        }
    };
    // A tab clicked before the island was live (see EARLY_TABS).
    let tabs = NodeRef::<leptos::html::Nav>::new();
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let Some(nav) = tabs.get() else { return };
        _ = nav.set_attribute("data-live", "1");
        if let Some(pending) = nav.get_attribute("data-pending") {
            _ = nav.remove_attribute("data-pending");
            let kind = View::parse(Some(&pending));
            if view.get_untracked() != kind {
                view.set(kind);
                push_address(&format!("/plans/{}?view={}", board.id, kind.as_str()));
            }
        }
    });
    view! {
        <div class="board" data-testid="board">
            <p class="connection" class:offline=move || !live.connected.get() role="status" data-testid="connection">
                {move || connection_text(lang, live.connected.get())}
            </p>
            <Header board/>
            <run::RunHeader board/>
            <ApprovalBanner board/>
            <nav class="tabs" aria-label=lang.pick("Board views", "看板视图") node_ref=tabs onclick=EARLY_TABS>
                {tab(View::Kanban, lang.pick("Kanban", "看板"))}
                {tab(View::Dag, lang.pick("DAG", "依赖图"))}
                {tab(View::Timeline, lang.pick("Timeline", "时间线"))}
                {tab(View::Gantt, lang.pick("Gantt", "甘特图"))}
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
                        // Drawn by the server (`/plans/{id}/gantt.svg`), so
                        // it costs the wasm nothing; loaded again with
                        // every version of the plan.
                        View::Gantt => view! { <Gantt board/> }.into_any(),
                    }}
                </section>
                <aside class="side" id="board-side" on:focusin=move |ev| {
                    if focus_on_a_list(&ev) && !board.lists.get_untracked() {
                        board.lists.set(true);
                    }
                }>
                    <details::Details board/>
                    <comments::Comments board/>
                </aside>
            </div>
        </div>
    }
}

/// The Gantt chart, drawn by the server (`/plans/{id}/gantt.svg`), so it
/// costs the wasm nothing; loaded again with every version of the plan. A
/// plan longer than one window (`plan_engine::gantt::WINDOW` rows) pages
/// through windows on the same time axis.
#[component]
fn Gantt(board: Board) -> impl IntoView {
    use plan_engine::gantt::WINDOW;
    let lang = board.lang;
    let from = RwSignal::new(0usize);
    let total = move || board.plan.with(|p| p.subtasks().len());
    let pager = move || {
        (total() > WINDOW).then(|| {
            let range = move || {
                let n = total();
                let first = from.get().min(n.saturating_sub(1));
                let last = (first + WINDOW).min(n);
                lang.pick(
                    format!("Rows {}–{last} of {n}", first + 1),
                    format!("第 {}–{last} 行，共 {n} 行", first + 1),
                )
            };
            // Named outside the view: a `>=` inside it would end the tag.
            let at_end = move || from.get() + WINDOW >= total();
            view! {
                <div class="gantt-pager">
                    <button data-testid="gantt-earlier" disabled=move || from.get() == 0
                        on:click=move |_| from.update(|f| *f = f.saturating_sub(WINDOW))>
                        {lang.pick("← Earlier rows", "← 前面的行")}
                    </button>
                    <span data-testid="gantt-rows">{range}</span>
                    <button data-testid="gantt-later" disabled=at_end
                        on:click=move |_| from.update(|f| *f += WINDOW)>
                        {lang.pick("Later rows →", "后面的行 →")}
                    </button>
                </div>
            }
        })
    };
    view! {
        {pager}
        <img class="gantt" data-testid="gantt"
            alt=lang.pick("Gantt chart: one bar per subtask from its start to its finish", "甘特图：每个子任务从开始到结束一条")
            src=move || format!(
                "/plans/{}/gantt.svg?v={}&from={}",
                board.id,
                board.plan.with(|p| p.version()),
                from.get()
            )/>
    }
}

#[cfg(test)]
mod tests {
    use super::{Board, View};
    use crate::api::{BoardData, LogEntry, Viewer};
    use leptos::prelude::*;
    use plan_engine::revision::RevisionMark;
    use plan_engine::{Lang, NewPlan, NewSubtask, Op, Plan, SubtaskId};

    #[test]
    fn a_rejection_heard_live_is_what_the_resubmitted_plan_is_marked_against() {
        // Signals live in an owner's arena (the server's build sandboxes them).
        Owner::new_root(None).with(rejection_heard_live);
    }

    fn rejection_heard_live() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let spec = NewPlan {
            title: "T".into(),
            approval_required: true,
            subtasks: vec![NewSubtask::named("a")],
            ..NewPlan::default()
        };
        let (mut plan, events) = Plan::create(&spec, "ana", at).unwrap();
        let log: Vec<LogEntry> = events
            .into_iter()
            .enumerate()
            .map(|(i, e)| LogEntry {
                seq: i as i64 + 1,
                event: Some(e),
            })
            .collect();
        let viewer = Viewer {
            name: "bo".into(),
            can_edit: true,
            signed_in: false,
            is_admin: false,
        };
        let board = Board::new(plan.id(), BoardData::from_log(&log, viewer), Lang::En).unwrap();
        let mut seq = log.len() as i64;
        let add = Op::AddSubtask {
            subtask: NewSubtask::named("b"),
            position: Default::default(),
            rewire_after: None,
            required_by: Vec::new(),
        };
        let ops = [
            Op::Reject {
                comment: "one more step".into(),
            },
            add,
            Op::Submit {},
        ];
        for op in ops {
            for event in plan.execute(&op.into(), "ana", at).unwrap() {
                seq += 1;
                board.take(seq, Some(event));
            }
        }
        assert_eq!(board.plan.with_untracked(|p| p.version()), plan.version());
        assert_eq!(board.entries(), seq as usize);
        assert_eq!(board.last_seq(), seq);
        assert_eq!(
            board.revision.get_untracked().mark(SubtaskId(2)),
            Some(RevisionMark::Added)
        );
        assert_eq!(board.revision.get_untracked().mark(SubtaskId(1)), None);
    }

    #[test]
    fn the_view_comes_from_the_query_and_defaults_to_kanban() {
        assert_eq!(View::parse(Some("dag")), View::Dag);
        assert_eq!(View::parse(Some("timeline")), View::Timeline);
        assert_eq!(View::parse(Some("gantt")), View::Gantt);
        assert_eq!(View::parse(Some("kanban")), View::Kanban);
        assert_eq!(View::parse(Some("nonsense")), View::Kanban);
        assert_eq!(View::parse(None), View::Kanban);
        for view in [View::Kanban, View::Dag, View::Timeline] {
            assert_eq!(
                View::parse(Some(view.as_str())),
                view,
                "tabs link to what they show"
            );
        }
    }
}
