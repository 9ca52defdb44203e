//! The DAG view: the engine's layered layout drawn as SVG. Arrows run from
//! a dependency to its dependent; colour is the state, ready subtasks are
//! outlined, the critical path is drawn heavier. It opens fitted to its
//! box (the whole graph at a glance); zooming in, it scrolls, so 200
//! subtasks stay readable; a node opens its details.

use leptos::prelude::*;
use plan_engine::layout::layout;
use plan_engine::{PlanState, SubtaskId};

use super::Board;

// Whole pixels: no float ever gets formatted, which keeps the float
// printing code out of the wasm.
const NODE_W: usize = 180;
const NODE_H: usize = 44;
const GAP_X: usize = 70;
const GAP_Y: usize = 20;
const MARGIN: usize = 12;
/// Plans up to this many subtasks open fitted to the box.
const FIT_UP_TO: usize = 50;
/// Zoom in percent, and its bounds.
const ZOOMS: [usize; 9] = [25, 33, 50, 67, 80, 100, 125, 160, 200];

fn short(name: &str) -> String {
    let mut out: String = name.chars().take(22).collect();
    if name.chars().count() > 22 {
        out.push('…');
    }
    out
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
    let drawing = move || {
        board.plan.with(|plan| {
            let drawn = layout(plan);
            let runnable = matches!(plan.state(), PlanState::Approved | PlanState::Running);
            let ready = if runnable { plan.ready() } else { Vec::new() };
            let critical = plan_engine::dag::critical_path(plan);
            let at = |id: SubtaskId| {
                drawn.nodes.iter().find(|n| n.id == id).map(|n| {
                    (
                        MARGIN + n.layer * (NODE_W + GAP_X),
                        MARGIN + n.slot * (NODE_H + GAP_Y),
                    )
                })
            };
            let width = (MARGIN * 2 + drawn.layers * (NODE_W + GAP_X)).saturating_sub(GAP_X);
            let height = (MARGIN * 2 + drawn.widest * (NODE_H + GAP_Y)).saturating_sub(GAP_Y);
            let on_path = |a: SubtaskId, b: SubtaskId| {
                critical
                    .windows(2)
                    .any(|w| w[0] == a && w[1] == b)
            };
            let mut edges = Vec::new();
            for s in plan.subtasks() {
                for d in s.dependencies() {
                    if let (Some((x1, y1)), Some((x2, y2))) = (at(*d), at(s.id())) {
                        let (sx, sy) = (x1 + NODE_W, y1 + NODE_H / 2);
                        let (ex, ey) = (x2, y2 + NODE_H / 2);
                        let mid = (sx + ex) / 2;
                        let path = format!("M{sx},{sy} C{mid},{sy} {mid},{ey} {ex},{ey}");
                        let class = if on_path(*d, s.id()) { "edge critical" } else { "edge" };
                        edges.push(view! { <path d=path class=class marker-end="url(#arrow)"></path> });
                    }
                }
            }
            let nodes = plan
                .subtasks()
                .iter()
                .filter_map(|s| {
                    let (x, y) = at(s.id())?;
                    let id = s.id();
                    let class = format!(
                        "node state-{}{}{}",
                        s.state().as_str(),
                        if ready.contains(&id) { " ready" } else { "" },
                        if critical.contains(&id) { " critical" } else { "" }
                    );
                    let title = format!("#{} {} ({})", id.0, s.name(), s.state().label(lang));
                    let label = title.clone();
                    Some(view! {
                        <g
                            class=class
                            transform=format!("translate({x},{y})")
                            tabindex="0"
                            role="button"
                            aria-label=label
                            data-testid=format!("node-{}", id.0)
                            on:click=move |_| board.selected.set(Some(id))
                            on:keydown=move |ev| {
                                if ev.key() == "Enter" || ev.key() == " " {
                                    board.selected.set(Some(id));
                                }
                            }
                        >
                            <title>{title}</title>
                            <rect width=NODE_W height=NODE_H rx="6"></rect>
                            <text x="10" y="18" class="node-id">"#"{id.0}" · "{s.state().label(lang)}</text>
                            <text x="10" y="35" class="node-name">{short(s.name())}</text>
                        </g>
                    })
                })
                .collect_view();
            let scaled = zoom.get().map(|z| ZOOMS[z]);
            view! {
                <svg
                    class="dag"
                    class:fit=scaled.is_none()
                    viewBox=format!("0 0 {width} {height}")
                    width=scaled.map(|p| width * p / 100)
                    height=scaled.map(|p| height * p / 100)
                    // Fitted, it shrinks to the box but never grows past 100 %.
                    style=scaled.is_none().then(|| format!("max-width: {width}px"))
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
        })
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
            <span class="legend">
                <span class="key ready">{lang.pick("ready", "就绪")}</span>
                <span class="key critical">{lang.pick("critical path", "关键路径")}</span>
            </span>
        </div>
        <div class="dag-scroll">{drawing}</div>
    }
}
