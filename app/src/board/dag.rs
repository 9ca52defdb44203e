//! The DAG view: the engine's layered layout drawn as SVG. Arrows run from
//! a dependency to its dependent; colour is the state, ready subtasks are
//! outlined, the critical path is drawn heavier. The drawing scrolls and
//! zooms, so 200 subtasks stay readable; a node opens its details.

use leptos::prelude::*;
use plan_engine::layout::layout;
use plan_engine::{PlanState, SubtaskId};

use super::Board;

const NODE_W: f64 = 180.0;
const NODE_H: f64 = 44.0;
const GAP_X: f64 = 70.0;
const GAP_Y: f64 = 20.0;
const MARGIN: f64 = 12.0;

fn short(name: &str) -> String {
    let mut out: String = name.chars().take(22).collect();
    if name.chars().count() > 22 {
        out.push('…');
    }
    out
}

#[component]
pub fn Dag(board: Board) -> impl IntoView {
    let zoom = RwSignal::new(1.0_f64);
    let drawing = move || {
        board.plan.with(|plan| {
            let drawn = layout(plan);
            let runnable = matches!(plan.state, PlanState::Approved | PlanState::Running);
            let ready = if runnable { plan.ready() } else { Vec::new() };
            let critical = plan_engine::dag::critical_path(plan);
            let at = |id: SubtaskId| {
                drawn.nodes.iter().find(|n| n.id == id).map(|n| {
                    (
                        MARGIN + n.layer as f64 * (NODE_W + GAP_X),
                        MARGIN + n.slot as f64 * (NODE_H + GAP_Y),
                    )
                })
            };
            let width = MARGIN * 2.0 + drawn.layers as f64 * (NODE_W + GAP_X) - GAP_X;
            let height = MARGIN * 2.0 + drawn.widest as f64 * (NODE_H + GAP_Y) - GAP_Y;
            let on_path = |a: SubtaskId, b: SubtaskId| {
                critical
                    .windows(2)
                    .any(|w| w[0] == a && w[1] == b)
            };
            let mut edges = Vec::new();
            for s in &plan.subtasks {
                for d in &s.dependencies {
                    if let (Some((x1, y1)), Some((x2, y2))) = (at(*d), at(s.id)) {
                        let (sx, sy) = (x1 + NODE_W, y1 + NODE_H / 2.0);
                        let (ex, ey) = (x2, y2 + NODE_H / 2.0);
                        let mid = (sx + ex) / 2.0;
                        let path = format!("M{sx},{sy} C{mid},{sy} {mid},{ey} {ex},{ey}");
                        let class = if on_path(*d, s.id) { "edge critical" } else { "edge" };
                        edges.push(view! { <path d=path class=class marker-end="url(#arrow)"></path> });
                    }
                }
            }
            let nodes = plan
                .subtasks
                .iter()
                .filter_map(|s| {
                    let (x, y) = at(s.id)?;
                    let id = s.id;
                    let class = format!(
                        "node state-{}{}{}",
                        s.state.as_str(),
                        if ready.contains(&id) { " ready" } else { "" },
                        if critical.contains(&id) { " critical" } else { "" }
                    );
                    let title = format!("#{} {} ({})", id.0, s.name, s.state.as_str().replace('_', " "));
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
                            <text x="10" y="18" class="node-id">"#"{id.0}" · "{s.state.as_str().replace('_', " ")}</text>
                            <text x="10" y="35" class="node-name">{short(&s.name)}</text>
                        </g>
                    })
                })
                .collect_view();
            let scale = zoom.get();
            view! {
                <svg
                    class="dag"
                    viewBox=format!("0 0 {width} {height}")
                    width=width * scale
                    height=height * scale
                    role="img"
                    aria-label=format!("Dependency graph: {} subtasks in {} layers", plan.subtasks.len(), drawn.layers)
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
            <button on:click=move |_| zoom.update(|z| *z = (*z / 1.25).max(0.25)) aria-label="Zoom out">"−"</button>
            <span>{move || format!("{:.0}%", zoom.get() * 100.0)}</span>
            <button on:click=move |_| zoom.update(|z| *z = (*z * 1.25).min(3.0)) aria-label="Zoom in">"+"</button>
            <span class="legend">
                <span class="key ready">"ready"</span>
                <span class="key critical">"critical path"</span>
            </span>
        </div>
        <div class="dag-scroll">{drawing}</div>
    }
}
