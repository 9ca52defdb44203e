//! The DAG view: the engine's layered layout drawn as SVG. Arrows run from
//! a dependency to its dependent; colour is the state, ready subtasks are
//! outlined, the critical path is drawn heavier. It opens fitted to its
//! box (the whole graph at a glance); zooming in, it scrolls, so 200
//! subtasks stay readable; a node opens its details. Above [`BUDGET`]
//! units, long chains and crowded layers are folded into one node each
//! (`plan_engine::lod`), which a click opens.
//!
//! The server draws it ([`dag_html`]), like the Gantt chart, and the
//! island sets the drawing it is given and reads clicks off the nodes'
//! `data-subtask` and `data-unit`: the layout, the folding and the drawing
//! cost the wasm nothing, and a plan of 5,000 subtasks is laid out by the
//! server, not by the browser.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;
#[cfg(feature = "ssr")]
use plan_engine::lod::{condense, tally, Unit, UnitKind};
use plan_engine::PlanId;
#[cfg(feature = "ssr")]
use plan_engine::{Plan, PlanState, SubtaskId, SubtaskState};
#[cfg(feature = "ssr")]
use std::collections::{BTreeSet, HashMap, HashSet};

use super::Board;
use crate::api::BoardError;
#[cfg(feature = "ssr")]
use crate::api::{answered, backend, viewer};

// Whole pixels, in the SVG's own units.
#[cfg(feature = "ssr")]
const NODE_W: usize = 180;
#[cfg(feature = "ssr")]
const NODE_H: usize = 44;
#[cfg(feature = "ssr")]
const GAP_X: usize = 70;
#[cfg(feature = "ssr")]
const GAP_Y: usize = 20;
#[cfg(feature = "ssr")]
const MARGIN: usize = 12;
/// Plans up to this many subtasks open fitted to the box.
const FIT_UP_TO: usize = 50;
/// Zoom in percent, and its bounds.
const ZOOMS: [usize; 9] = [25, 33, 50, 67, 80, 100, 125, 160, 200];

#[cfg(feature = "ssr")]
fn short(name: &str) -> String {
    plan_engine::text::ellipsis(name, 22)
}

/// Units drawn before chains and then groups fold (see
/// `plan_engine::lod`): about what a screen shows readably, and what the
/// browser draws well within a view switch.
#[cfg(feature = "ssr")]
pub const BUDGET: usize = 200;

/// A folded unit's label: "#4–#9 · 6 in a row" for a chain, "312
/// subtasks · 200 done, 112 to do" for a group.
#[cfg(feature = "ssr")]
fn unit_label(plan: &plan_engine::Plan, unit: &Unit, lang: plan_engine::Lang) -> (String, String) {
    let n = unit.members.len();
    let first = unit.members[0].0;
    let last = unit.members[n - 1].0;
    let head = match unit.kind {
        UnitKind::Chain => lang.pick(
            format!("#{first}–#{last} · {n} in a row"),
            format!("#{first}–#{last} · 连续 {n} 个"),
        ),
        _ => lang.pick(format!("{n} subtasks"), format!("{n} 个子任务")),
    };
    let counts = tally(plan, &unit.members)
        .into_iter()
        .map(|(state, k)| format!("{k} {}", state.label(lang)))
        .collect::<Vec<_>>()
        .join(", ");
    (head, counts)
}

/// The state a folded unit is coloured by: the one that most needs a look.
#[cfg(feature = "ssr")]
fn unit_state(plan: &plan_engine::Plan, unit: &Unit) -> SubtaskState {
    let t = tally(plan, &unit.members);
    [
        SubtaskState::Failed,
        SubtaskState::Blocked,
        SubtaskState::InProgress,
        SubtaskState::Todo,
        SubtaskState::Skipped,
    ]
    .into_iter()
    .find(|s| t.contains_key(s))
    .unwrap_or(SubtaskState::Done)
}

/// The drawing of `plan` with the folded units in `open` opened, at
/// `scaled` percent (`None`: fitted to its box), as HTML: the folded
/// count, then the SVG.
#[cfg(feature = "ssr")]
pub fn drawing(
    plan: &Plan,
    open: &BTreeSet<SubtaskId>,
    scaled: Option<usize>,
    lang: plan_engine::Lang,
) -> String {
    let drawn = &condense(plan, open, BUDGET);
    let folded = drawn
        .units
        .iter()
        .filter(|u| u.kind != UnitKind::Subtask)
        .count();
    let folded = (folded > 0).then(|| {
        lang.pick(
            format!("{folded} chains and groups folded; click one to open it"),
            format!("已折叠 {folded} 个链和组；点击展开"),
        )
    });
    let svg = {
        let runnable = matches!(plan.state(), PlanState::Approved | PlanState::Running);
        let ready: HashSet<SubtaskId> = if runnable {
            plan.ready().into_iter().collect()
        } else {
            HashSet::new()
        };
        let critical = plan_engine::dag::critical_path(plan);
        let unit_of: HashMap<SubtaskId, usize> = drawn
            .units
            .iter()
            .enumerate()
            .flat_map(|(u, unit)| unit.members.iter().map(move |id| (*id, u)))
            .collect();
        let critical_units: HashSet<usize> = critical
            .iter()
            .filter_map(|id| unit_of.get(id).copied())
            .collect();
        let critical_edges: HashSet<(usize, usize)> = critical
            .windows(2)
            .filter_map(|w| Some((*unit_of.get(&w[0])?, *unit_of.get(&w[1])?)))
            .collect();
        let at = |u: usize| {
            let unit = &drawn.units[u];
            (
                MARGIN + unit.layer * (NODE_W + GAP_X),
                MARGIN + unit.slot * (NODE_H + GAP_Y),
            )
        };
        let width = (MARGIN * 2 + drawn.layers * (NODE_W + GAP_X)).saturating_sub(GAP_X);
        let height = (MARGIN * 2 + drawn.widest * (NODE_H + GAP_Y)).saturating_sub(GAP_Y);
        let edges = drawn
            .edges
            .iter()
            .map(|&(from, to)| {
                let ((x1, y1), (x2, y2)) = (at(from), at(to));
                let (sx, sy) = (x1 + NODE_W, y1 + NODE_H / 2);
                let (ex, ey) = (x2, y2 + NODE_H / 2);
                let mid = (sx + ex) / 2;
                let path = format!("M{sx},{sy} C{mid},{sy} {mid},{ey} {ex},{ey}");
                let class = if critical_edges.contains(&(from, to)) {
                    "edge critical"
                } else {
                    "edge"
                };
                view! { <path d=path class=class marker-end="url(#arrow)"></path> }
            })
            .collect_view();
        let nodes = drawn
            .units
            .iter()
            .enumerate()
            .map(|(u, unit)| {
                let (x, y) = at(u);
                let on_path = if critical_units.contains(&u) { " critical" } else { "" };
                if unit.kind == UnitKind::Subtask {
                    let id = unit.key();
                    let Some(s) = plan.subtask(id) else {
                        return ().into_any();
                    };
                    let class = format!(
                        "node state-{}{}{on_path}",
                        s.state().as_str(),
                        if ready.contains(&id) { " ready" } else { "" },
                    );
                    let title = format!("#{} {} ({})", id.0, s.name(), s.state().label(lang));
                    let label = title.clone();
                    return view! {
                        <g
                            class=class
                            transform=format!("translate({x},{y})")
                            tabindex="0"
                            role="button"
                            aria-label=label
                            data-testid=format!("node-{}", id.0)
                            data-subtask=id.0
                        >
                            <title>{title}</title>
                            <rect width=NODE_W height=NODE_H rx="6"></rect>
                            <text x="10" y="18" class="node-id">"#"{id.0}" · "{s.state().label(lang)}</text>
                            <text x="10" y="35" class="node-name">{short(s.name())}</text>
                        </g>
                    }
                    .into_any();
                }
                // A folded chain or group: a click opens it.
                let key = unit.key();
                let kind = if unit.kind == UnitKind::Chain { "chain" } else { "group" };
                let (head, counts) = unit_label(plan, unit, lang);
                let label = lang.pick(
                    format!("{head}: {counts}. Open to show each subtask"),
                    format!("{head}：{counts}。展开以显示每个子任务"),
                );
                let class = format!("node unit {kind} state-{}{on_path}", unit_state(plan, unit).as_str());
                let title = label.clone();
                view! {
                    <g
                        class=class
                        transform=format!("translate({x},{y})")
                        tabindex="0"
                        role="button"
                        aria-label=label
                        data-testid=format!("unit-{}", key.0)
                        data-unit=key.0
                    >
                        <title>{title}</title>
                        <rect class="stack" x="4" y="4" width=NODE_W height=NODE_H rx="6"></rect>
                        <rect width=NODE_W height=NODE_H rx="6"></rect>
                        <text x="10" y="18" class="node-id">{head}</text>
                        <text x="10" y="35" class="node-name">{short(&counts)}</text>
                    </g>
                }
                .into_any()
            })
            .collect_view();
        view! {
            <svg
                class="dag"
                class:fit=scaled.is_none()
                viewBox=format!("0 0 {} {}", width + 4, height + 4)
                width=scaled.map(|p| (width + 4) * p / 100)
                height=scaled.map(|p| (height + 4) * p / 100)
                // Fitted, it shrinks to the box but never grows past 100 %.
                style=scaled.is_none().then(|| format!("max-width: {}px", width + 4))
                role="img"
                aria-label=lang.pick(
                    format!("Dependency graph: {} subtasks in {} layers", plan.subtasks().len(), drawn.layers),
                    format!("依赖图：{} 个子任务，{} 层", plan.subtasks().len(), drawn.layers),
                )
                data-testid="dag"
            >
                <defs>
                    <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse">
                        <path d="M0,0 L10,5 L0,10 z"></path>
                    </marker>
                </defs>
                {edges}
                {nodes}
            </svg>
        }
    };
    view! {
        <p class="folded" data-testid="dag-folded">{folded}</p>
        {svg}
    }
    .to_html()
}

/// The plan's DAG as the server draws it, for the island to set.
#[server(prefix = "/_board", input = Json)]
pub async fn dag_html(
    plan: PlanId,
    open: Vec<u32>,
    zoom: Option<usize>,
) -> Result<String, BoardError> {
    answered(
        async {
            viewer().await?;
            let found = backend()?.plan(plan).await?;
            let open = open.into_iter().map(SubtaskId).collect();
            let scaled = zoom.and_then(|z| ZOOMS.get(z).copied());
            Ok(drawing(&found, &open, scaled, crate::i18n::detect()))
        }
        .await,
    )
}

#[component]
pub fn Dag(board: Board) -> impl IntoView {
    let lang = board.lang;
    // `None`: the whole drawing fitted to its box. A plan opens so, up to
    // 50 subtasks; a bigger graph fitted is a smear of unreadable nodes,
    // so it opens at 100 % and scrolls (Fit is a click away).
    let hundred = ZOOMS.iter().position(|z| *z == 100).unwrap_or(0);
    let opening = board
        .plan
        .with_untracked(|p| (p.subtasks().len() > FIT_UP_TO).then_some(hundred));
    let zoom = RwSignal::new(opening);
    // The folded chains and groups a person opened, by their first
    // subtask's id (kept sorted).
    let open = RwSignal::new(Vec::<u32>::new());
    let id = board.id;
    // The last drawing stays on screen while the next one loads.
    let shown = super::server_html(Box::new(move || -> super::HtmlFuture {
        let open = open.get();
        let zoom = zoom.get();
        board.plan.with(|p| p.version());
        Box::pin(async move { dag_html(id, open, zoom).await.ok() })
    }));
    // A node selects its subtask; a folded unit opens.
    let pick = move |target: Option<Target>| match target {
        Some(Target::Subtask(s)) => board.selected.set(Some(plan_engine::SubtaskId(s))),
        Some(Target::Unit(u)) => open.update(|o| {
            if let Err(at) = o.binary_search(&u) {
                o.insert(at, u);
            }
        }),
        None => {}
    };
    view! {
        <div class="dag-tools">
            <button on:click=move |_| zoom.set(None) aria-pressed=move || zoom.get().is_none().to_string() data-testid="dag-fit">{lang.pick("Fit", "适应")}</button>
            <button on:click=move |_| zoom.update(|z| *z = Some(z.unwrap_or(hundred).saturating_sub(1))) aria-label=lang.pick("Zoom out", "缩小")>"−"</button>
            <span data-testid="dag-zoom">{move || match zoom.get() {
                Some(z) => format!("{}%", ZOOMS[z]),
                None => lang.pick("fitted", "适应窗口").to_string(),
            }}</span>
            <button on:click=move |_| zoom.update(|z| *z = Some((z.unwrap_or(hundred) + 1).min(ZOOMS.len() - 1))) aria-label=lang.pick("Zoom in", "放大")>"+"</button>
            <button
                on:click=move |_| open.set(Vec::new())
                disabled=move || open.with(Vec::is_empty)
                data-testid="dag-fold"
            >{lang.pick("Fold again", "重新折叠")}</button>
            <span class="legend">
                <span class="key ready">{lang.pick("ready", "就绪")}</span>
                <span class="key critical">{lang.pick("critical path", "关键路径")}</span>
            </span>
        </div>
        <div
            class="dag-scroll"
            inner_html=move || shown.get()
            on:click=move |ev| pick(target_of(&ev))
            on:keydown=move |ev| {
                if ev.key() == "Enter" || ev.key() == " " {
                    pick(target_of(&ev));
                }
            }
        ></div>
    }
}

/// What a click or a key on the drawing landed on, read off the `data-`
/// attributes the server wrote (only the browser reads them).
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
enum Target {
    Subtask(u32),
    Unit(u32),
}

#[cfg(feature = "hydrate")]
fn target_of(ev: &leptos::ev::Event) -> Option<Target> {
    use wasm_bindgen::JsCast;
    let element = ev.target()?.dyn_into::<web_sys::Element>().ok()?;
    let node = element.closest("[data-subtask],[data-unit]").ok()??;
    if let Some(s) = node.get_attribute("data-subtask") {
        return s.parse().ok().map(Target::Subtask);
    }
    node.get_attribute("data-unit")?
        .parse()
        .ok()
        .map(Target::Unit)
}

#[cfg(not(feature = "hydrate"))]
fn target_of(_: &leptos::ev::Event) -> Option<Target> {
    None
}
