//! Two runs side by side (`/runs/compare?a=&b=`, issue 56): a recorded
//! run and its replay, or any two runs. The two plans as graphs (drawn
//! with the engine's layered layout), the subtasks the engine's graph
//! matching paired marked on both and the others dashed, the subtask where
//! the logs first part outlined; the node and edge F1; the first model
//! reply or tool call that differs, both sides of it; each step's result;
//! the answers; and the calls, tokens, time and cost of each. Rendered on
//! the server only (linked from a replay's run header and from History).

use std::collections::HashMap;

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use run_model::{GraphNode, LogStep, RunComparison, RunSide};

use crate::api::load_run_comparison;
use crate::i18n::{use_lang, Lang};

// The drawing's units (SVG pixels).
const NODE_W: usize = 170;
const NODE_H: usize = 40;
const GAP_X: usize = 46;
const GAP_Y: usize = 14;
const MARGIN: usize = 8;

/// Each node's layer: the longest chain of dependencies before it (the
/// engine's plans are acyclic; a dependency that is not in the graph is
/// left out).
fn layers(nodes: &[GraphNode]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let at: HashMap<u32, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id.0, i)).collect();
    let deps: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            n.depends_on
                .iter()
                .filter_map(|d| at.get(&d.0).copied())
                .collect()
        })
        .collect();
    let mut layer = vec![0usize; nodes.len()];
    // At most n rounds settle an acyclic graph of n nodes.
    for _ in 0..nodes.len() {
        let mut moved = false;
        for (i, ds) in deps.iter().enumerate() {
            let want = ds.iter().map(|&d| layer[d] + 1).max().unwrap_or(0);
            if want > layer[i] {
                layer[i] = want;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    (deps, layer)
}

/// One plan's graph: `partner` pairs each matched subtask with its match
/// on the other side; `diverged` is the subtask of the first divergence.
pub fn graph_view(
    nodes: &[GraphNode],
    partner: &HashMap<u32, u32>,
    diverged: Option<u32>,
    side: &'static str,
    lang: Lang,
) -> impl IntoView {
    if nodes.is_empty() {
        return view! { <p class="empty">{lang.pick("No plan (it was deleted, or the run made none).", "没有计划（已删除，或运行未制定）。")}</p> }.into_any();
    }
    let (deps, layer) = layers(nodes);
    let drawn = plan_engine::layout::layout_graph(&deps, layer);
    let at = |i: usize| {
        let (l, s) = drawn.at[i];
        (MARGIN + l * (NODE_W + GAP_X), MARGIN + s * (NODE_H + GAP_Y))
    };
    let width = (MARGIN * 2 + drawn.layers * (NODE_W + GAP_X)).saturating_sub(GAP_X);
    let height = (MARGIN * 2 + drawn.widest * (NODE_H + GAP_Y)).saturating_sub(GAP_Y);
    let edges = deps
        .iter()
        .enumerate()
        .flat_map(|(to, ds)| ds.iter().map(move |&from| (from, to)))
        .map(|(from, to)| {
            let ((x1, y1), (x2, y2)) = (at(from), at(to));
            let (sx, sy, ex, ey) = (x1 + NODE_W, y1 + NODE_H / 2, x2, y2 + NODE_H / 2);
            let mid = (sx + ex) / 2;
            let path = format!("M{sx},{sy} C{mid},{sy} {mid},{ey} {ex},{ey}");
            view! { <path d=path class="edge" marker-end=format!("url(#arrow-{side})")></path> }
        })
        .collect_view();
    let shapes = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let (x, y) = at(i);
            let matched = partner.get(&n.id.0).copied();
            let class = format!(
                "node state-{}{}{}",
                n.state.as_str(),
                if matched.is_some() { " matched" } else { " unmatched" },
                if diverged == Some(n.id.0) { " diverged" } else { "" },
            );
            let pair = matched.map_or_else(
                || lang.pick(" · unmatched", " · 未匹配").to_string(),
                |m| format!(" ↔ #{m}"),
            );
            let title = format!(
                "#{} {} ({}){pair}\n{}",
                n.id.0,
                n.name,
                n.state.label(lang),
                n.result.clone().unwrap_or_default()
            );
            view! {
                <g class=class transform=format!("translate({x},{y})") data-testid=format!("{side}-node-{}", n.id.0) data-matched=matched.map(|m| m.to_string())>
                    <title>{title}</title>
                    <rect width=NODE_W height=NODE_H rx="6"></rect>
                    <text x="8" y="16" class="node-id">{format!("#{} · {}{pair}", n.id.0, n.state.label(lang))}</text>
                    <text x="8" y="32" class="node-name">{plan_engine::text::ellipsis(&n.name, 22)}</text>
                </g>
            }
        })
        .collect_view();
    view! {
        <svg class="dag compare-dag fit" viewBox=format!("0 0 {} {}", width + 4, height + 4) style=format!("max-width: {}px", width + 4) role="img" data-testid=format!("{side}-graph")
            aria-label=lang.pick(format!("The plan's graph: {} subtasks", nodes.len()), format!("计划的依赖图：{} 个子任务", nodes.len()))>
            <defs>
                <marker id=format!("arrow-{side}") viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse">
                    <path d="M0,0 L10,5 L0,10 z"></path>
                </marker>
            </defs>
            {edges}
            {shapes}
        </svg>
    }
    .into_any()
}

/// A step of a log, as the divergence shows it.
fn step_view(step: Option<&LogStep>, lang: Lang) -> AnyView {
    match step {
        None => view! { <p class="hint">{lang.pick("(the log ends here)", "（日志到此结束）")}</p> }.into_any(),
        Some(LogStep::Model { role, subtask, model, reply, .. }) => view! {
            <p><strong>{lang.pick("Model reply", "模型回复")}</strong>{format!(" · {role} · {model}")}{subtask.map(|s| format!(" · #{}", s.0))}</p>
            <pre class="step-text" data-testid="divergence-reply">{reply.clone()}</pre>
        }
        .into_any(),
        Some(LogStep::Tool { subtask, name, arguments, result, ok, replayed, .. }) => view! {
            <p>
                <strong>{lang.pick("Tool call ", "工具调用 ")}</strong>{format!("{name} · #{}", subtask.0)}
                {(!ok).then(|| lang.pick(" · error", " · 出错"))}
                {replayed.then(|| lang.pick(" · replayed", " · 回放"))}
            </p>
            <pre class="step-text" data-testid="divergence-tool">{format!("{arguments}\n→ {result}")}</pre>
        }
        .into_any(),
    }
}

/// The subtask a step is about.
fn step_subtask(step: Option<&LogStep>) -> Option<u32> {
    match step? {
        LogStep::Model { subtask, .. } => subtask.map(|s| s.0),
        LogStep::Tool { subtask, .. } => Some(subtask.0),
    }
}

fn percent(f1: f64) -> String {
    format!("{:.0} %", f1 * 100.0)
}

/// The totals and answers of both runs, a row each.
fn totals(a: &RunSide, b: &RunSide, lang: Lang) -> impl IntoView {
    let secs = |ms: u64| format!("{:.1} s", ms as f64 / 1000.0);
    let rows: Vec<(&str, String, String)> = vec![
        (
            lang.pick("State", "状态"),
            crate::words::run_state_label(a.state, lang).to_string(),
            crate::words::run_state_label(b.state, lang).to_string(),
        ),
        (
            lang.pick("Models", "模型"),
            a.models.join(", "),
            b.models.join(", "),
        ),
        (
            lang.pick("Model calls", "模型调用"),
            a.totals.llm_calls.to_string(),
            b.totals.llm_calls.to_string(),
        ),
        (
            lang.pick("Tokens", "令牌"),
            (a.totals.prompt_tokens + a.totals.completion_tokens).to_string(),
            (b.totals.prompt_tokens + b.totals.completion_tokens).to_string(),
        ),
        (
            lang.pick("Cost", "费用"),
            a.totals.cost.to_string(),
            b.totals.cost.to_string(),
        ),
        (
            lang.pick("Tool calls (replayed)", "工具调用（回放）"),
            format!("{} ({})", a.totals.tool_calls, a.totals.replayed_calls),
            format!("{} ({})", b.totals.tool_calls, b.totals.replayed_calls),
        ),
        (
            lang.pick("Time", "用时"),
            secs(a.totals.wall_ms),
            secs(b.totals.wall_ms),
        ),
        (
            lang.pick("Steps on the log", "日志步骤"),
            a.steps.to_string(),
            b.steps.to_string(),
        ),
        (
            lang.pick("Answer", "答案"),
            a.answer.clone().unwrap_or_else(|| "—".into()),
            b.answer.clone().unwrap_or_else(|| "—".into()),
        ),
    ];
    let body = rows
        .into_iter()
        .map(|(name, x, y)| {
            let differ = x != y;
            view! {
                <tr class:differ=differ data-testid="compare-total">
                    <th scope="row">{name}</th>
                    <td class="side-a">{x}</td>
                    <td class="side-b">{y}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="plans compare compare-totals" data-testid="compare-totals">
            <thead><tr><th></th><th>"A"</th><th>"B"</th></tr></thead>
            <tbody>{body}</tbody>
        </table>
    }
}

/// Each subtask of a side with its state and result.
fn results(side: &RunSide, partner: &HashMap<u32, u32>, lang: Lang) -> impl IntoView {
    side.graph
        .iter()
        .map(|n| {
            let pair = partner.get(&n.id.0).map(|m| format!(" ↔ #{m}"));
            view! {
                <li data-testid="compare-step-result">
                    <strong>{format!("#{} {}", n.id.0, n.name)}</strong>{pair}" "
                    <span class=format!("badge state-{}", n.state.as_str())>{n.state.label(lang)}</span>
                    {n.result.clone().map(|r| view! { <div class="step-result">{r}</div> })}
                </li>
            }
        })
        .collect_view()
}

fn comparison(c: RunComparison, lang: Lang) -> impl IntoView {
    let to_b: HashMap<u32, u32> = c.matched.iter().map(|(x, y)| (x.0, y.0)).collect();
    let to_a: HashMap<u32, u32> = c.matched.iter().map(|(x, y)| (y.0, x.0)).collect();
    let (diverged_a, diverged_b) = match &c.divergence {
        Some(d) => (step_subtask(d.a.as_ref()), step_subtask(d.b.as_ref())),
        None => (None, None),
    };
    let side_head = |label: &'static str, s: &RunSide| {
        let plan = s.plan_id.map(|p| view! { " · "<a href=format!("/plans/{p}")>{lang.pick("its plan", "它的计划")}</a> });
        let replay = s.replay_of.map(
            |of| view! { " · "{lang.pick("a replay of ", "回放自 ")}<code>{of.to_string()}</code> },
        );
        view! {
            <h2>{format!("{label}: ")}{if s.title.is_empty() { s.run.to_string() } else { s.title.clone() }}</h2>
            <p class="hint"><code>{s.run.to_string()}</code>{plan}{replay}</p>
        }
    };
    let divergence = match &c.divergence {
        None => view! {
            <p class="empty" data-testid="compare-no-divergence">{lang.pick("The two logs hold the same model replies and tool calls.", "两个日志的模型回复和工具调用相同。")}</p>
        }
        .into_any(),
        Some(d) => view! {
            <section class="divergence" data-testid="divergence" data-index=d.index>
                <h2>{lang.pick(format!("The runs part at step {}", d.index + 1), format!("两个运行在第 {} 步分开", d.index + 1))}</h2>
                <div class="compare-sides">
                    <div data-testid="divergence-a"><h3>"A"</h3>{step_view(d.a.as_ref(), lang)}</div>
                    <div data-testid="divergence-b"><h3>"B"</h3>{step_view(d.b.as_ref(), lang)}</div>
                </div>
            </section>
        }
        .into_any(),
    };
    view! {
        {(!c.same_task).then(|| view! { <p class="hint" data-testid="compare-other-task">{lang.pick("The two runs were asked different tasks.", "这两个运行的任务不同。")}</p> })}
        <p class="compare-scores" data-testid="compare-scores">
            {lang.pick("Plans: node F1 ", "计划：节点 F1 ")}<strong data-testid="node-f1">{percent(c.node_f1)}</strong>
            {lang.pick(" · edge F1 ", " · 边 F1 ")}<strong data-testid="edge-f1">{percent(c.edge_f1)}</strong>
            {lang.pick(format!(" · {} subtasks matched", c.matched.len()), format!(" · 匹配 {} 个子任务", c.matched.len()))}
        </p>
        {divergence}
        {totals(&c.a, &c.b, lang)}
        <div class="compare-sides compare-graphs">
            <div data-testid="compare-a">
                {side_head("A", &c.a)}
                {graph_view(&c.a.graph, &to_b, diverged_a, "a", lang)}
                <ol class="compare-results">{results(&c.a, &to_b, lang)}</ol>
            </div>
            <div data-testid="compare-b">
                {side_head("B", &c.b)}
                {graph_view(&c.b.graph, &to_a, diverged_b, "b", lang)}
                <ol class="compare-results">{results(&c.b, &to_a, lang)}</ol>
            </div>
        </div>
        <p class="legend hint">
            <span class="key matched">{lang.pick("matched", "已匹配")}</span>" "
            <span class="key unmatched">{lang.pick("unmatched", "未匹配")}</span>" "
            <span class="key diverged">{lang.pick("where the logs part", "日志分开处")}</span>
        </p>
    }
}

#[component]
pub fn RunComparePage() -> impl IntoView {
    let lang = use_lang();
    let query = use_query_map().read_untracked();
    let id = |k: &str| {
        query
            .get_str(k)
            .and_then(|v| uuid::Uuid::parse_str(v.trim()).ok())
    };
    let (Some(a), Some(b)) = (id("a"), id("b")) else {
        return view! {
            <section class="compare-page">
                <h1>{lang.pick("Compare two runs", "比较两个运行")}</h1>
                <p class="error" role="alert">{lang.pick("Give two run ids: /runs/compare?a=…&b=…", "请给出两个运行 id：/runs/compare?a=…&b=…")}</p>
            </section>
        }
        .into_any();
    };
    let loaded = crate::codec::load(move || (a, b), |(a, b)| load_run_comparison(a, b));
    view! {
        <section class="compare-page runs-compare" data-testid="runs-compare">
            <h1>{lang.pick("Two runs side by side", "两个运行并排比较")}</h1>
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || loaded.get().map(|r| match r {
                    Ok(c) => comparison(c, lang).into_any(),
                    Err(e) => view! { <p class="error" role="alert">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan_engine::{SubtaskId, SubtaskState};

    fn node(id: u32, after: &[u32]) -> GraphNode {
        GraphNode {
            id: SubtaskId(id),
            name: format!("step <{id}>"),
            depends_on: after.iter().map(|d| SubtaskId(*d)).collect(),
            state: SubtaskState::Done,
            result: Some("ok".into()),
        }
    }

    #[test]
    fn each_node_sits_after_the_longest_chain_of_its_dependencies() {
        let (_, layer) = layers(&[node(1, &[]), node(2, &[1]), node(3, &[1, 2]), node(4, &[9])]);
        assert_eq!(layer, vec![0, 1, 2, 0]);
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn a_graph_marks_its_matched_nodes_and_where_the_logs_part_and_escapes_names() {
        let nodes = [node(1, &[]), node(2, &[1])];
        let partner = HashMap::from([(1, 5)]);
        let html = graph_view(&nodes, &partner, Some(2), "a", Lang::En)
            .into_view()
            .to_html();
        assert!(html.contains("node state-done matched"), "{html}");
        assert!(
            html.contains("node state-done unmatched diverged"),
            "{html}"
        );
        assert!(html.contains("↔ #5"), "{html}");
        assert!(!html.contains("step <1>"), "the name is escaped: {html}");
    }
}
