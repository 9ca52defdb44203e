//! The agent's run on this plan: its state, how the mode was chosen and
//! why, what it has spent, its answer, and Pause / Resume / Cancel. Loaded
//! again whenever the plan changes or the run writes to its log.
//!
//! The server draws the header ([`run_html`]): its questions and guarded
//! tool calls are plain forms already, and its Pause / Resume / Cancel
//! buttons carry a `data-op` the island reads, sending the op through the
//! board's one write path. The island keeps only what lives in the
//! browser: the replies being written and the live activity panel.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use super::Board;
#[cfg(feature = "ssr")]
use plan_engine::{Lang, SubtaskId};
use plan_engine::{Op, PlanId, PlanState};
#[cfg(feature = "ssr")]
use run_model::{DecidedBy, RunState};

use super::activity::activity_html;
#[cfg(feature = "ssr")]
use super::activity::image_gallery;
use crate::api::BoardError;
#[cfg(feature = "ssr")]
use crate::api::{answered, backend, viewer, RunPanel};
#[cfg(feature = "ssr")]
use crate::words::{cost_line, run_state_label as state_label};

/// "m:ss" (or "h:mm:ss").
#[cfg(any(feature = "ssr", test))]
fn clock(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// A run in batches, in one line: "batch 3 of about 40 · 37 of 200 items
/// covered (35 done, 2 given up) · 92 % succeeded".
#[cfg(feature = "ssr")]
fn batch_line(b: &run_model::BatchView, lang: Lang) -> String {
    let mut line = lang.pick(
        format!(
            "Batch {} of about {} · {} of {} items covered ({} done, {} given up)",
            b.batch, b.batches, b.covered, b.total_items, b.done, b.given_up
        ),
        format!(
            "第 {} 批，约 {} 批 · 已覆盖 {} / {} 项（完成 {}，放弃 {}）",
            b.batch, b.batches, b.covered, b.total_items, b.done, b.given_up
        ),
    );
    if let Some(rate) = b.success_rate {
        let pct = (rate * 100.0).round();
        line.push_str(&lang.pick(
            format!(" · {pct} % of attempts succeeded"),
            format!(" · 尝试成功率 {pct} %"),
        ));
    }
    line
}

/// The card before approving, as a plain form bound to the version and
/// content it was drawn from: the tools that ask before each call, each
/// with the steps that call it and a box to grant it for this run (only
/// the calls a pattern matches, when given), and "Approve and hold".
#[cfg(feature = "ssr")]
fn approval_card(
    id: PlanId,
    card: crate::api::ApprovalCard,
    can_edit: bool,
    lang: Lang,
) -> impl IntoView {
    let tools = card
        .guarded
        .iter()
        .map(|g| {
            let steps = g
                .steps
                .iter()
                .map(|s| format!("#{}", s.0))
                .collect::<Vec<_>>()
                .join(", ");
            let tool = g.tool.clone();
            let pattern = run_model::grant::main_argument(&tool).filter(|_| can_edit).map(|_| {
                view! {
                    <input name=format!("pattern_{tool}") maxlength="200" data-testid=format!("grant-pattern-{tool}")
                        placeholder=lang.pick("only calls matching (reports/*, *.example.com); empty: all", "仅匹配的调用（reports/*、*.example.com）；留空：全部")/>
                }
            });
            let grant = can_edit.then(|| view! {
                <label>
                    <input type="checkbox" name=format!("grant_{tool}") value="on" data-testid=format!("grant-{tool}")/>
                    {lang.pick(" grant it for this run", " 为本次运行授权")}
                </label>
            });
            view! {
                <li data-testid=format!("card-tool-{}", g.tool)>
                    <code>{g.tool.clone()}</code>" "
                    <span class="hint">{lang.pick(
                        format!("asks a person before each call · steps {steps}"),
                        format!("每次调用前都需人工批准 · 步骤 {steps}"),
                    )}</span>" "
                    {grant}" "{pattern}
                </li>
            }
        })
        .collect_view();
    let chinese = lang.pick(false, true);
    let checks = card
        .checks
        .iter()
        .map(|c| view! { <li data-testid="plan-check" data-kind=c.kind.as_str()>{c.sentence(chinese)}</li> })
        .collect_view();
    let clean = card.checks.is_empty().then(|| view! {
        <p class="hint" data-testid="plan-checks-clean">{lang.pick("The checks found nothing wrong.", "检查没有发现问题。")}</p>
    });
    let forecast = card.forecast.as_ref().map(|f| view! {
        <p class="card-forecast" data-testid="card-forecast" class:over=!f.fits_budget>{forecast_line(f, lang)}</p>
    });
    let none = card.guarded.is_empty().then(|| {
        view! {
            <p class="hint" data-testid="card-no-guarded">{lang.pick(
                "No step calls a tool that asks a person before each call.",
                "没有步骤会调用每次都需人工批准的工具。",
            )}</p>
        }
    });
    let form = can_edit.then(|| view! {
        <input type="hidden" name="digest" value=card.digest.clone()/>
        <input type="hidden" name="version" value=card.version.to_string()/>
        <label class="field">{lang.pick("Comment", "评论")}
            <input name="comment" maxlength="2000" data-testid="card-comment"/>
        </label>
        <label class="field">{lang.pick("Start", "开始")}
            <select name="hold" data-testid="card-hold">
                <option value="">{lang.pick("at once", "立即")}</option>
                <option value="click">{lang.pick("hold: start it on a click", "暂缓：点击后开始")}</option>
                <option value="time">{lang.pick("hold: start it at (UTC)", "暂缓：在此时间开始（UTC）")}</option>
            </select>
            <input type="datetime-local" name="start_at" data-testid="card-start-at"/>
        </label>
        <button type="submit" class="primary" data-testid="card-approve">{lang.pick("Approve as shown", "按所示批准")}</button>
    });
    view! {
        <form class="approval-card" method="post" action=format!("/plans/{id}/approve-card") data-testid="approval-card">
            <h2>{lang.pick(format!("Before approving v{}", card.version), format!("批准前（第 {} 版）", card.version))}</h2>
            <h3>{lang.pick("What it will likely cost", "预计花费")}</h3>
            {forecast}
            <h3>{lang.pick("Checks", "检查")}</h3>
            {clean}
            <ul class="card-checks">{checks}</ul>
            <h3>{lang.pick("Tools that ask", "需要批准的工具")}</h3>
            {none}
            <ul class="card-tools">{tools}</ul>
            {form}
        </form>
    }
}

/// `6–14`: an interval with `decimals` decimals.
#[cfg(feature = "ssr")]
fn interval(i: run_model::Interval, decimals: usize) -> String {
    if i.low == i.high {
        format!("{:.decimals$}", i.low)
    } else {
        format!("{:.decimals$}–{:.decimals$}", i.low, i.high)
    }
}

/// A forecast in one line: calls, tokens, minutes, cost, what it was read
/// from, and whether it fits the budget.
#[cfg(feature = "ssr")]
fn forecast_line(f: &run_model::Forecast, lang: Lang) -> String {
    let cost = f
        .cost
        .map(|c| format!(", ${}", interval(c, 4)))
        .unwrap_or_default();
    let basis = match f.basis {
        run_model::ForecastBasis::SimilarRuns => lang.pick(
            format!("from {} similar finished runs", f.runs),
            format!("依据 {} 个相似的已完成运行", f.runs),
        ),
        run_model::ForecastBasis::PlanSize => lang.pick(
            "from the plan's size".to_string(),
            "依据计划的规模".to_string(),
        ),
    };
    let fits = if f.fits_budget {
        lang.pick("it fits the budget".to_string(), "在预算之内".to_string())
    } else {
        let over = f.over_budget.join(", ");
        lang.pick(
            format!("it may pass the budget ({over})"),
            format!("可能超出预算（{over}）"),
        )
    };
    lang.pick(
        format!(
            "{} model calls, {} tokens, {} min{cost} ({basis}); {fits}.",
            interval(f.calls, 0),
            interval(f.tokens, 0),
            interval(f.minutes, 1)
        ),
        format!(
            "{} 次模型调用，{} tokens，{} 分钟{cost}（{basis}）；{fits}。",
            interval(f.calls, 0),
            interval(f.tokens, 0),
            interval(f.minutes, 1)
        ),
    )
}

/// The tools granted for the run, each revocable while the run goes on.
#[cfg(feature = "ssr")]
fn grants_list(
    id: PlanId,
    grants: Vec<run_model::Grant>,
    can_revoke: bool,
    lang: Lang,
) -> impl IntoView {
    let items = grants
        .into_iter()
        .map(|g| {
            let revoked = g.revoked_at.is_some();
            let who = match &g.revoked_by {
                Some(by) if revoked => lang.pick(format!("revoked by {by}"), format!("已由 {by} 撤销")),
                _ => lang.pick(format!("granted by {}", g.by), format!("由 {} 授权", g.by)),
            };
            let revoke = (can_revoke && !revoked).then(|| view! {
                <form class="inline" method="post" action=format!("/plans/{id}/revoke-grant")>
                    <input type="hidden" name="grant" value=g.id.to_string()/>
                    <button type="submit" class="danger" data-testid="revoke-grant">{lang.pick("Revoke", "撤销")}</button>
                </form>
            });
            view! {
                <li data-testid="run-grant" class:revoked=revoked>
                    <code>{g.label()}</code>" "<span class="hint">{who}</span>" "{revoke}
                </li>
            }
        })
        .collect_view();
    view! {
        <div class="run-grants" data-testid="run-grants">
            <strong>{lang.pick("Granted for this run (these calls do not ask):", "本次运行已授权（这些调用不再询问）：")}</strong>
            <ul>{items}</ul>
        </div>
    }
}

/// A run approved and held: when it starts, and Start.
#[cfg(feature = "ssr")]
fn held_notice(id: PlanId, hold: run_model::Hold, can_start: bool, lang: Lang) -> impl IntoView {
    let when = match hold.start_at {
        Some(at) => {
            let at = crate::words::short_time(&at);
            lang.pick(
                format!("it starts at {at} UTC, or on Start."),
                format!("将于 {at} UTC 开始，或点击“开始”。"),
            )
        }
        None => lang.pick(
            "it starts on Start.".to_string(),
            "点击“开始”后开始。".to_string(),
        ),
    };
    view! {
        <form class="run-held" method="post" action=format!("/plans/{id}/start") data-testid="run-held">
            <p>{lang.pick(format!("Approved by {} and held: ", hold.by), format!("已由 {} 批准并暂缓：", hold.by))}{when}</p>
            {can_start.then(|| view! { <button type="submit" class="primary" data-testid="run-start">{lang.pick("Start", "开始")}</button> })}
        </form>
    }
}

/// A guarded tool call waiting for a person: what it would do, exactly,
/// and a plain form to approve it, run it with edited arguments, or deny it
/// with a reason the model reads.
#[cfg(feature = "ssr")]
fn tool_guard(id: PlanId, p: crate::api::PendingTool, can_edit: bool, lang: Lang) -> impl IntoView {
    let testid = format!("tool-guard-{}", p.name);
    // A server's question mid-call is told apart by what planboard's agent
    // recorded (`asker`), never by the name or the arguments, which a
    // model or another agent chooses.
    let heading = match &p.asker {
        Some(server) => view! {
            <strong data-testid="tool-guard-asker">
                {lang.pick("The MCP server ", "MCP 服务器 ")}<code>{server.clone()}</code>
                {lang.pick(" asks you, in the middle of a call", " 在调用中向你提问")}
            </strong>
            <span class="muted">
                {lang.pick(
                    " (Approve sends the answer below as it stands, Run edited your edited answer, Deny declines)",
                    "（批准：按下面的答案发送；按修改运行：发送你修改后的答案；拒绝：不回答）",
                )}
            </span>
        }
        .into_any(),
        None => view! {
            <strong>{lang.pick("The agent asks to run ", "智能体请求运行 ")}<code>{p.name.clone()}</code></strong>
        }
        .into_any(),
    };
    view! {
        <div class="run-guard" data-testid=testid>
            <p>
                {heading}
                {format!(" · #{}", p.subtask)}
            </p>
            {p.shown.map(|text| view! { <pre class="guard-shown" data-testid="tool-guard-shown">{text}</pre> })}
            {can_edit.then(|| view! {
                <form method="post" action=format!("/plans/{id}/tool-call")>
                    <input type="hidden" name="call" value=p.call.clone()/>
                    <input type="hidden" name="digest" value=p.digest.clone()/>
                    <label class="field">
                        {lang.pick("Arguments (edit them, then “Run edited”)", "参数（可修改，然后点“按修改运行”）")}
                        <textarea name="arguments" rows="4" data-testid="tool-guard-arguments">{crate::words::textarea_text(&p.arguments)}</textarea>
                    </label>
                    <label class="field">
                        {lang.pick("Reason (for a denial; the agent reads it)", "理由（拒绝时填写，智能体会读到）")}
                        <input name="reason" maxlength="2000" data-testid="tool-guard-reason"/>
                    </label>
                    <button type="submit" name="verdict" value="approve" class="primary" data-testid="tool-guard-approve">{lang.pick("Approve", "批准")}</button>
                    " "
                    <button type="submit" name="verdict" value="edit" data-testid="tool-guard-edit">{lang.pick("Run edited", "按修改运行")}</button>
                    " "
                    <button type="submit" name="verdict" value="deny" class="danger" data-testid="tool-guard-deny">{lang.pick("Deny", "拒绝")}</button>
                </form>
            })}
        </div>
    }
}

/// Rendered in the browser only: the run changes between the server's
/// render and hydration (the agent does not wait), and a header rendered
/// twice from two states would not hydrate.
#[component]
pub(super) fn RunHeader(board: Board) -> impl IntoView {
    let mounted = RwSignal::new(false);
    Effect::new(move |_| mounted.set(true));
    view! {
        <Show when=move || mounted.get()>
            <RunBody board/>
        </Show>
    }
}

/// The run header as HTML: `r` the run, `questions` the subtasks waiting
/// on a person's answer.
#[cfg(feature = "ssr")]
fn run_panel_html(
    id: PlanId,
    r: RunPanel,
    questions: Vec<(SubtaskId, String)>,
    can_edit: bool,
    lang: Lang,
) -> String {
    let state = r.state;
    // "0:35 / 30:00 · about 1:10 left": running time against its
    // budget, and seed 002's estimate while there is one. While running
    // (and under an hour) the elapsed part ticks by the second in CSS
    // alone (`.run-clock`), from the time the server last recorded; it
    // comes right at the next reload.
    let ticking = state == RunState::Running && r.wall_secs < 3600;
    let elapsed = (!ticking).then(|| clock(r.wall_secs));
    let clock_style = format!("--from: {}", r.wall_secs);
    let time = {
        let mut text = format!(" / {}", clock(r.max_wall_secs));
        if let Some(eta) = r.eta_secs.filter(|_| state == RunState::Running) {
            text.push_str(&lang.pick(
                format!(" · about {} left", clock(eta)),
                format!(" · 约剩 {}", clock(eta)),
            ));
        }
        text
    };
    let live = !state.is_finished();
    let paused = state == RunState::Paused;
    let mode = r
        .mode
        .map(|m| m.label(lang).to_string())
        .unwrap_or_else(|| "…".into());
    // Who chose the mode, in the board's language.
    let by = match r.decided_by {
        Some(DecidedBy::Person) => lang.pick(" (chosen by a person)", "（人工选择）"),
        Some(DecidedBy::Rules) => lang.pick(" (by rule)", "（按规则）"),
        Some(DecidedBy::Model) => lang.pick(" (by the model)", "（由模型判断）"),
        None => "",
    };
    // Only a running plan can be paused (the engine refuses otherwise).
    let running = state == RunState::Running;
    // Before approval a person may have the task planned in another
    // mode: a plain form (the server changes the plan's mode and the
    // agent re-plans), so the wasm carries no code for it.
    let replan = (state == RunState::AwaitingApproval && can_edit).then(|| view! {
        <form class="run-replan" method="post" action=format!("/plans/{id}/replan")>
            <select name="mode" aria-label=lang.pick("Planner", "规划方式") data-testid="replan-mode">
                <option value="simple">{lang.pick("simple", "简单")}</option>
                <option value="complex">{lang.pick("complex", "复杂")}</option>
                <option value="emergent">{lang.pick("emergent", "涌现")}</option>
            </select>
            <button type="submit" data-testid="replan">{lang.pick("Re-plan", "重新规划")}</button>
        </form>
    });
    // A run its budget paused: which budget, and new limits to resume
    // with in one step (a plain form; the suggested values double what
    // was reached). Resume alone would pause again at once, so a budget
    // pause offers no plain Resume.
    let budget_paused = paused && r.budget_reached.is_some();
    let raise = r
        .budget_reached
        .clone()
        .filter(|_| live && can_edit)
        .map(|why| {
            let minutes = r.max_wall_secs.div_ceil(60);
            let calls_hit = r.llm_calls >= r.max_llm_calls;
            let tokens_hit = r.tokens >= r.max_tokens;
            let time_hit = r.wall_secs >= r.max_wall_secs;
            let cost_hit = r.max_cost.is_some_and(|max| r.cost >= max);
            let twice = |hit: bool, n: u64| if hit { n.saturating_mul(2) } else { n };
            let cost = r
                .max_cost
                .map(|max| {
                    let dollars = max.dollars();
                    format!("{:.2}", if cost_hit { dollars * 2.0 } else { dollars })
                })
                .unwrap_or_default();
            view! {
                <form class="run-budget" method="post" action=format!("/plans/{id}/budget") data-testid="run-budget">
                    <p data-testid="budget-reached">
                        <strong>{lang.pick("Budget reached: ", "预算已用完：")}</strong>{why}
                    </p>
                    <label class="field">{lang.pick("LLM calls", "LLM 调用次数")}
                        <input name="max_llm_calls" type="number" min="1" required value=twice(calls_hit, r.max_llm_calls as u64) data-testid="budget-calls"/>
                    </label>
                    <label class="field">{lang.pick("Tokens", "tokens")}
                        <input name="max_tokens" type="number" min="1" required value=twice(tokens_hit, r.max_tokens) data-testid="budget-tokens"/>
                    </label>
                    <label class="field">{lang.pick("Minutes of running", "运行分钟数")}
                        <input name="max_minutes" type="number" min="1" max="10080" required value=twice(time_hit, minutes) data-testid="budget-minutes"/>
                    </label>
                    <label class="field">{lang.pick("Cost in US$ (empty: as it is)", "费用（美元，留空则不变）")}
                        <input name="max_cost" type="number" min="0.000001" step="any" value=cost data-testid="budget-cost"/>
                    </label>
                    <button type="submit" data-testid="raise-budget">{lang.pick("Raise and resume", "提高预算并继续")}</button>
                </form>
            }
        });
    // The budget form's heading says why its budget paused the run: the
    // reason is told once.
    let reason = r.reason.filter(|_| raise.is_none());
    let held = r.hold.filter(|h| h.released_at.is_none() && live);
    // Paused because the plan drifted from the approved version: the
    // difference as the compare page shows it, and resuming approves the
    // plan again (a record).
    let drifted = r.drift.filter(|_| paused).map(|d| {
        view! {
            <div class="run-drift notice" data-testid="run-drift">
                <p>{lang.pick(
                    format!(
                        "The plan drifted from the version approved (v{} → v{}: similarity {:.2}, below {:.2}). Look at the difference, then approve it again to go on.",
                        d.approved, d.version, d.similarity, d.threshold
                    ),
                    format!(
                        "计划偏离了已批准的版本（第 {} 版 → 第 {} 版：相似度 {:.2}，低于 {:.2}）。请查看差异，然后重新批准以继续。",
                        d.approved, d.version, d.similarity, d.threshold
                    ),
                )}</p>
                <p><a href=format!("/plans/{id}/compare?from={}&to={}", d.approved, d.version) data-testid="drift-compare">
                    {lang.pick(format!("Compare v{} with v{}", d.approved, d.version), format!("比较第 {} 版与第 {} 版", d.approved, d.version))}
                </a></p>
                {can_edit.then(|| view! { <button class="primary" data-op="resume" data-testid="run-reapprove">{lang.pick("Approve again and go on", "重新批准并继续")}</button> })}
            </div>
        }
    });
    // Once approved: the forecast it was approved with, beside the spend.
    let forecast = r.forecast.as_ref().map(|f| {
        let inside = f.calls.contains(f64::from(r.llm_calls)) && f.tokens.contains(r.tokens as f64);
        view! {
            <p class="run-forecast hint" data-testid="run-forecast" data-inside=inside.to_string()>
                {lang.pick("Forecast at approval: ", "批准时的预测：")}{forecast_line(f, lang)}
            </p>
        }
    });
    let card = r.card.map(|card| approval_card(id, card, can_edit, lang));
    let grants = (!r.grants.is_empty()).then(|| grants_list(id, r.grants, live && can_edit, lang));
    view! {
        <section class="run-header" data-testid="run-header">
            <div class="run-row">
                <span class=format!("badge run-state run-{state}") data-testid="run-state">{state_label(state, lang)}</span>
                <span class="run-mode" data-testid="run-mode">
                    {lang.pick("Agent · mode ", "智能体 · 模式 ")}<strong>{mode}</strong>
                    {by}
                </span>
                <span class="run-spent" data-testid="run-spent">
                    {format!("{} {} · {} / {} {}", r.llm_calls, lang.pick(if r.llm_calls == 1 { "call" } else { "calls" }, "次调用"), r.tokens, r.max_tokens, lang.pick("tokens", "tokens"))}
                </span>
                <span class="run-cost" data-testid="run-cost" title=lang.pick("What the model calls cost (the operator's price table)", "模型调用的费用（按运维配置的价格表）")>
                    {cost_line(r.cost, r.max_cost, r.unpriced_calls, r.llm_calls, lang)}
                </span>
                <span class="run-time" data-testid="run-time">
                    <span class="run-clock" class:ticking=ticking style=clock_style data-testid="run-clock">{elapsed}</span>
                    {time}
                </span>
                <a class="run-activity" href=format!("/plans/{id}/activity") data-testid="run-activity">{lang.pick("Activity", "活动")}</a>
                <span class="run-actions">
                    {replan}
                    {running.then(|| view! { <button data-op="pause" data-testid="run-pause">{lang.pick("Pause", "暂停")}</button> })}
                    {(live && paused && !budget_paused && held.is_none() && drifted.is_none()).then(|| view! { <button data-op="resume" data-testid="run-resume">{lang.pick("Resume", "继续")}</button> })}
                    {live.then(|| view! { <button class="danger" data-op="cancel" data-testid="run-cancel">{lang.pick("Cancel", "取消")}</button> })}
                </span>
            </div>
            <div class="progress small" role="progressbar" aria-label=lang.pick("Run progress", "运行进度") aria-valuemin="0" aria-valuemax="100" aria-valuenow=r.percent data-testid="run-progress">
                <div class="progress-bar" style=format!("width: {}%", r.percent)></div>
            </div>
            {r.batches.map(|b| view! { <p class="run-batches" data-testid="run-batches">{batch_line(&b, lang)}</p> })}
            {r.mode_reason.map(|why| view! { <p class="run-why" data-testid="run-why">{why}</p> })}
            // A replay links to itself beside the run it replays.
            {r.replay_of.map(|of| view! {
                <p class="run-replay" data-testid="run-replay">
                    {lang.pick("A replay of a recorded run: its tool calls are answered from the recording where they are the same call. ", "回放一个已记录的运行：相同的工具调用由记录作答。")}
                    <a href=format!("/runs/compare?a={of}&b={}", r.run_id) data-testid="run-compare">{lang.pick("Compare the two runs", "比较这两个运行")}</a>
                </p>
            })}
            {r.model_ahead.filter(|_| live).map(|n| view! {
                <p class="run-waiting" data-testid="run-model-queue">{if n == 0 {
                    lang.pick("waiting for the model (next)".to_string(), "等待模型（下一个）".to_string())
                } else {
                    lang.pick(format!("waiting for the model ({n} ahead)"), format!("等待模型（前面还有 {n} 个）"))
                }}</p>
            })}
            {(!r.asks.is_empty()).then(|| view! {
                <div class="run-asks" data-testid="run-asks">
                    <span>{lang.pick("The task asks: ", "任务要求：")}</span>
                    <ol>{r.asks.iter().map(|a| view! { <li>{a.clone()}</li> }).collect::<Vec<_>>()}</ol>
                </div>
            })}
            {reason.map(|why| view! { <p class="run-reason" data-testid="run-reason">{why}</p> })}
            {raise}
            {drifted}
            {forecast}
            {held.map(|hold| held_notice(id, hold, can_edit, lang))}
            {card}
            {grants}
            {questions
                .into_iter()
                .map(|(s, q)| question_form(id, s, q, can_edit, lang))
                .collect_view()}
            {r.pending.into_iter().map(|p| tool_guard(id, p, can_edit, lang)).collect_view()}
            {r.answer.map(|answer| view! {
                <div class="run-answer" data-testid="run-answer">
                    <h2>{lang.pick("Answer", "答案")}</h2>
                    <p>{answer}</p>
                    // The images the run wrote, those the answer names
                    // first.
                    {image_gallery(r.images, "answer-images")}
                </div>
            })}
            {(state.is_finished() && can_edit).then(|| if r.kept {
                view! {
                    <p class="run-kept" data-testid="run-kept">
                        {lang.pick("Kept: its files and its log stay for good. ", "已保留：它的文件和日志将一直保存。")}
                        <button data-op="unkeep" data-testid="run-unkeep">{lang.pick("Let go", "取消保留")}</button>
                    </p>
                }.into_any()
            } else {
                view! {
                    <p class="run-kept">
                        <button data-op="keep" data-testid="run-keep" title=lang.pick("Keep its files and its log past the retentions (see Settings)", "保留它的文件和日志，不受保留期限影响（见设置）")>{lang.pick("Keep its files", "保留文件")}</button>
                    </p>
                }.into_any()
            })}
            {r.files_removed_at.map(|at| {
                let at = crate::words::short_time(&at);
                view! {
                    <p class="run-files-removed hint" data-testid="run-files-removed">{lang.pick(
                        format!("Its files were removed on {at} (the workspace retention); the plan, the answer and the memories stay."),
                        format!("它的文件已于 {at} 删除（工作区保留期限已到）；计划、答案和记忆仍保留。"),
                    )}</p>
                }
            })}
        </section>
    }
    .to_html()
}

/// The agent's run on `plan`, drawn as HTML (`None` without a run).
#[server(prefix = "/_board", input = Json)]
pub async fn run_html(plan: PlanId) -> Result<Option<String>, BoardError> {
    answered(
        async {
            let viewer = viewer().await?;
            let backend = backend()?;
            let Some(run) = backend.run_of(plan).await? else {
                return Ok(None);
            };
            // The agent's open questions, each with its answer box: the
            // answer is a comment on the subtask, which then goes back to
            // todo for the agent.
            let questions = backend
                .plan(plan)
                .await?
                .subtasks()
                .iter()
                .filter_map(|s| Some((s.id(), s.question()?.to_string())))
                .collect();
            Ok(Some(run_panel_html(
                plan,
                run,
                questions,
                viewer.can_edit,
                crate::i18n::detect(),
            )))
        }
        .await,
    )
}

/// How often at most the header and the activity panel are loaded again
/// while a run's entries stream in: a busy run writes tens a second, and
/// each load draws the whole header on the server.
#[cfg(feature = "hydrate")]
const RELOAD_EVERY_MS: u64 = 250;

/// `tick`, passed on at most once every `RELOAD_EVERY_MS`: the first
/// change at once, the changes made meanwhile together when the time is
/// up, so the last one always gets through.
fn throttled(tick: RwSignal<u64>) -> Signal<u64> {
    let out = RwSignal::new(tick.get_untracked());
    #[cfg(feature = "hydrate")]
    {
        let waiting = StoredValue::new(false);
        let missed = StoredValue::new(false);
        Effect::new(move |_| {
            let now = tick.get();
            if now == out.get_untracked() {
                return;
            }
            if waiting.get_value() {
                missed.set_value(true);
                return;
            }
            out.set(now);
            waiting.set_value(true);
            settle(tick, out, waiting, missed);
        });
    }
    out.into()
}

/// When the time is up: passes on what changed meanwhile (and waits
/// again), or lets the next change through at once.
#[cfg(feature = "hydrate")]
fn settle(
    tick: RwSignal<u64>,
    out: RwSignal<u64>,
    waiting: StoredValue<bool>,
    missed: StoredValue<bool>,
) {
    set_timeout(
        move || {
            if missed.get_value() {
                missed.set_value(false);
                out.set(tick.get_untracked());
                settle(tick, out, waiting, missed);
            } else {
                waiting.set_value(false);
            }
        },
        std::time::Duration::from_millis(RELOAD_EVERY_MS),
    );
}

#[component]
fn RunBody(board: Board) -> impl IntoView {
    let lang = board.lang;
    let id = board.id;
    let tick = throttled(board.run_tick);
    // Loaded again on every plan change and on the run entries heard
    // (at most every RELOAD_EVERY_MS).
    let run = LocalResource::new(move || {
        board.plan.with(|p| p.version());
        tick.get();
        run_html(id)
    });
    // The run is steered through its plan, like everything on the board:
    // the server's buttons name their op.
    let error = RwSignal::new(None::<String>);
    let on_click = move |ev: leptos::ev::MouseEvent| {
        let op = match op_of(&ev).as_deref() {
            Some("pause") => Op::Pause {},
            Some("resume") => Op::Resume {},
            Some("cancel") => Op::Finish {
                state: PlanState::Abandoned,
                outcome: "run cancelled on the board".into(),
            },
            Some(keep @ ("keep" | "unkeep")) => {
                let kept = keep == "keep";
                leptos::task::spawn_local(async move {
                    match crate::api::keep_run(id, kept).await {
                        Ok(()) => {
                            error.set(None);
                            board.run_tick.update(|n| *n += 1);
                        }
                        Err(e) => error.set(Some(crate::words::explain(&e, lang))),
                    }
                });
                return;
            }
            _ => return,
        };
        board.act(op, false, error);
    };
    // What the model is writing now, as text (a reply is never markup).
    let writing = move || {
        board.writing.with(|w| {
            w.iter()
                .map(|p| {
                    let who = match p.subtask {
                        Some(s) => format!("{} #{}", p.role, s.0),
                        None => p.role.to_string(),
                    };
                    view! {
                        <p class="run-live" data-testid="run-live">
                            <span class="run-live-who">{lang.pick("writing · ", "正在生成 · ")}{who}</span>
                            <span class="run-live-text">{p.text.clone()}</span>
                        </p>
                    }
                })
                .collect_view()
        })
    };
    // The last answer stays on screen while the next one loads.
    let last = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        if let Some(Ok(fresh)) = run.get() {
            last.set(fresh);
        }
    });
    view! {
        {move || last.get().map(|html| view! { <div class="run-wrap" inner_html=html on:click=on_click></div> })}
        {writing}
        <Show when=move || error.get().is_some()>
            <p class="error" role="alert">{move || error.get()}</p>
        </Show>
        <Show when=move || last.with(Option::is_some)>
            <LiveActivity board tick/>
        </Show>
    }
}

/// The op a click on the server's header names (`data-op`), if any.
#[cfg(feature = "hydrate")]
fn op_of(ev: &leptos::ev::MouseEvent) -> Option<String> {
    use wasm_bindgen::JsCast;
    let element = ev.target()?.dyn_into::<web_sys::Element>().ok()?;
    element.closest("[data-op]").ok()??.get_attribute("data-op")
}

#[cfg(not(feature = "hydrate"))]
fn op_of(_: &leptos::ev::MouseEvent) -> Option<String> {
    None
}

/// What the agent did, newest first, for the selected subtask or else the
/// whole run: loaded while the panel is open, again on the run entries
/// heard (`tick`, the header's) and every plan change. The server draws the lines (the activity
/// page's own), so the wasm only sets HTML it was given.
#[component]
fn LiveActivity(board: Board, tick: Signal<u64>) -> impl IntoView {
    let lang = board.lang;
    let id = board.id;
    let open = RwSignal::new(false);
    let html = LocalResource::new(move || {
        let subtask = board.selected.get().map(|s| s.0);
        let wanted = open.get();
        tick.track();
        board.plan.with(|p| p.version());
        async move {
            match wanted {
                true => activity_html(id, subtask).await.ok(),
                false => None,
            }
        }
    });
    // The last lines stay on screen while the next ones load.
    let shown = RwSignal::new(String::new());
    Effect::new(move |_| {
        if let Some(Some(fresh)) = html.get() {
            shown.set(fresh);
        }
    });
    let title = move || match board.selected.get() {
        Some(s) => lang.pick(
            format!("Agent activity on #{} · live", s.0),
            format!("智能体在 #{} 上的活动 · 实时", s.0),
        ),
        None => lang.pick(
            "Agent activity, whole run · live".to_string(),
            "智能体活动（整个运行）· 实时".to_string(),
        ),
    };
    view! {
        <details class="run-live-activity" data-testid="live-activity">
            <summary on:click=move |_| open.update(|o| *o = !*o) data-testid="live-activity-toggle">{title}</summary>
            <div class="live-activity-lines" inner_html=move || shown.get()></div>
        </details>
    }
}

/// A question from the agent on subtask `id`, with a box to answer it: a
/// plain form (`/plans/{plan}/answer`), whose answer becomes a comment on
/// the subtask, which goes back to todo for the agent, in one change.
#[cfg(feature = "ssr")]
fn question_form(
    plan: PlanId,
    id: SubtaskId,
    question: String,
    can_edit: bool,
    lang: Lang,
) -> impl IntoView {
    view! {
        <form class="run-question" method="post" action=format!("/plans/{plan}/answer") id=format!("question-{}", id.0) data-testid=format!("question-{}", id.0)>
            <p>
                <strong>{lang.pick("The agent asks", "智能体提问")}" (#"{id.0}"): "</strong>
                <span data-testid="question-text">{question}</span>
            </p>
            {can_edit.then(|| view! {
                <input type="hidden" name="subtask" value=id.0/>
                <textarea name="answer" required maxlength="4000" data-testid="answer-input"></textarea>
                <button type="submit" class="primary" data-testid="answer-send">{lang.pick("Answer", "回答")}</button>
            })}
        </form>
    }
}

#[cfg(test)]
mod tests {
    use super::clock;

    #[test]
    fn run_times_read_as_minutes_and_seconds_or_hours() {
        assert_eq!(clock(0), "0:00");
        assert_eq!(clock(65), "1:05");
        assert_eq!(clock(1800), "30:00");
        assert_eq!(clock(3725), "1:02:05");
    }

    #[cfg(feature = "ssr")]
    fn paused_panel(reason: &str, budget_reached: Option<&str>) -> crate::api::RunPanel {
        crate::api::RunPanel {
            run_id: uuid::Uuid::nil(),
            state: run_model::RunState::Paused,
            reason: Some(reason.into()),
            mode: None,
            mode_reason: None,
            decided_by: None,
            llm_calls: 2,
            max_llm_calls: 2,
            tokens: 300,
            max_tokens: 50_000,
            budget_reached: budget_reached.map(str::to_string),
            cost: Default::default(),
            max_cost: None,
            unpriced_calls: 0,
            answer: None,
            images: Vec::new(),
            percent: 0,
            wall_secs: 5,
            max_wall_secs: 1800,
            eta_secs: None,
            pending: Vec::new(),
            batches: None,
            files_removed_at: None,
            kept: false,
            replay_of: None,
            asks: Vec::new(),
            model_ahead: None,
            card: None,
            grants: Vec::new(),
            hold: None,
            forecast: None,
            drift: None,
        }
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn a_run_whose_files_were_removed_says_so_and_when_in_both_languages() {
        use plan_engine::Lang;
        let id = uuid::Uuid::nil();
        let html = super::run_panel_html(id, paused_panel("x", None), Vec::new(), true, Lang::En);
        assert!(!html.contains("run-files-removed"), "{html}");
        let at = chrono::DateTime::parse_from_rfc3339("2026-11-20T08:30:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let removed = || crate::api::RunPanel {
            state: run_model::RunState::Done,
            files_removed_at: Some(at),
            ..paused_panel("x", None)
        };
        let html = super::run_panel_html(id, removed(), Vec::new(), true, Lang::En);
        let shown = crate::words::short_time(&at);
        assert!(
            html.contains(&format!("Its files were removed on {shown}")),
            "{html}"
        );
        let html = super::run_panel_html(id, removed(), Vec::new(), true, Lang::Zh);
        assert!(
            html.contains(&format!("它的文件已于 {shown} 删除")),
            "{html}"
        );
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn a_replay_links_itself_beside_its_recorded_run_in_both_languages() {
        use plan_engine::Lang;
        let of = uuid::Uuid::from_u128(7);
        let panel = crate::api::RunPanel {
            replay_of: Some(of),
            ..paused_panel("x", None)
        };
        let html =
            super::run_panel_html(uuid::Uuid::nil(), panel.clone(), Vec::new(), true, Lang::En);
        assert!(html.contains(&format!("/runs/compare?a={of}")), "{html}");
        assert!(html.contains("Compare the two runs"), "{html}");
        let html = super::run_panel_html(uuid::Uuid::nil(), panel, Vec::new(), true, Lang::Zh);
        assert!(html.contains("比较这两个运行"), "{html}");
        let plain = super::run_panel_html(
            uuid::Uuid::nil(),
            paused_panel("x", None),
            Vec::new(),
            true,
            Lang::En,
        );
        assert!(!plain.contains("run-replay"), "{plain}");
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn a_run_waiting_for_the_model_says_how_many_calls_are_ahead_and_lists_the_tasks_asks() {
        use plan_engine::Lang;
        let id = uuid::Uuid::nil();
        let waiting = |ahead| crate::api::RunPanel {
            state: run_model::RunState::Running,
            model_ahead: ahead,
            asks: vec!["write chart.png".into()],
            ..paused_panel("x", None)
        };
        let html = super::run_panel_html(id, waiting(Some(2)), Vec::new(), true, Lang::En);
        assert!(html.contains("waiting for the model (2 ahead)"), "{html}");
        assert!(
            html.contains("The task asks: ") && html.contains("write chart.png"),
            "{html}"
        );
        let html = super::run_panel_html(id, waiting(Some(0)), Vec::new(), true, Lang::Zh);
        assert!(html.contains("等待模型（下一个）"), "{html}");
        let html = super::run_panel_html(id, waiting(None), Vec::new(), true, Lang::En);
        assert!(!html.contains("run-model-queue"), "{html}");
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn a_servers_question_is_headed_as_one_only_when_the_agent_recorded_its_asker() {
        use plan_engine::Lang;
        let pending = |asker: Option<&str>| crate::api::PendingTool {
            call: "c1".into(),
            subtask: 1,
            // A name anyone may choose: a tool's, an ACP agent's title.
            name: "everything asks (in trigger-elicitation-request)".into(),
            arguments: "{}".into(),
            shown: Some("Please provide inputs".into()),
            digest: String::new(),
            asker: asker.map(str::to_string),
        };
        let html = |asker| {
            let panel = crate::api::RunPanel {
                state: run_model::RunState::Running,
                pending: vec![pending(asker)],
                ..paused_panel("x", None)
            };
            super::run_panel_html(uuid::Uuid::nil(), panel, Vec::new(), true, Lang::En)
        };
        let asked = html(Some("everything"));
        assert!(asked.contains("tool-guard-asker"), "{asked}");
        assert!(
            asked.contains("asks you, in the middle of a call"),
            "{asked}"
        );
        assert!(!asked.contains("The agent asks to run"), "{asked}");
        let named = html(None);
        assert!(named.contains("The agent asks to run"), "{named}");
        assert!(
            !named.contains("asks you"),
            "a name alone is no question: {named}"
        );
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn a_models_tool_arguments_that_close_the_textarea_stay_text_in_the_guard_form() {
        use plan_engine::Lang;
        // The arguments are the model's: an attacker's input.
        let attack = r#"{"code": "</textarea><img src=x onerror=alert(1)>&amp;"}"#;
        let panel = crate::api::RunPanel {
            state: run_model::RunState::Running,
            pending: vec![crate::api::PendingTool {
                call: "c1".into(),
                subtask: 1,
                name: "run_python".into(),
                arguments: attack.into(),
                shown: Some(attack.into()),
                digest: String::new(),
                asker: None,
            }],
            ..paused_panel("x", None)
        };
        let html = super::run_panel_html(uuid::Uuid::nil(), panel, Vec::new(), true, Lang::En);
        assert!(!html.contains("<img"), "{html}");
        assert_eq!(html.matches("</textarea>").count(), 1, "{html}");
        assert!(
            html.contains(r#"&lt;/textarea>&lt;img src=x onerror=alert(1)>&amp;amp;"#),
            "{html}"
        );
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn a_budget_pause_says_why_once_and_offers_only_raise_and_resume() {
        use plan_engine::Lang;
        let why = "the run made 2 LLM calls (budget 2)";
        let id = uuid::Uuid::nil();
        let panel = paused_panel(&format!("budget reached: {why}"), Some(why));
        let html = super::run_panel_html(id, panel, Vec::new(), true, Lang::En);
        assert_eq!(html.matches("(budget 2)").count(), 1, "{html}");
        assert!(html.contains("data-testid=\"raise-budget\""), "{html}");
        assert!(!html.contains("data-testid=\"run-resume\""), "{html}");
        // One who may only look is told the reason once, and offered no
        // Resume either.
        let panel = paused_panel(&format!("budget reached: {why}"), Some(why));
        let html = super::run_panel_html(id, panel, Vec::new(), false, Lang::En);
        assert_eq!(html.matches("(budget 2)").count(), 1, "{html}");
        assert!(!html.contains("data-testid=\"run-resume\""), "{html}");
        // A person's pause keeps its reason and its Resume.
        let panel = paused_panel("a person paused the plan", None);
        let html = super::run_panel_html(id, panel, Vec::new(), true, Lang::En);
        assert!(html.contains("a person paused the plan"), "{html}");
        assert!(html.contains("data-testid=\"run-resume\""), "{html}");
        assert!(!html.contains("data-testid=\"raise-budget\""), "{html}");
    }
}
