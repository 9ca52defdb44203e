//! Regression cases (`/cases`, issue 56): runs reviewed good, kept to be
//! run again when the model, a prompt or a policy changes. The page leads
//! with each model's latest suite score and the cases whose result
//! changed since its previous run (each with where its run first parted
//! from the recording), then the score over time per model and planboard
//! version as a small chart, the form that runs the suite, the runs going
//! on, the findings (reviews of a case's run that were not good), and the
//! cases, each edited, retired or deleted in place. A suite run's report
//! is `/cases/runs/{id}`. Rendered on the server only; the buttons are
//! plain forms (`server/src/web/board/forms/cases.rs`); the check rows
//! are the review form's too.

use std::collections::BTreeMap;

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;
use run_model::{
    Case, CaseOutcome, CaseResult, CasesOverview, Check, Divergence, LogStep, SuiteRun, SuiteState,
};

use crate::api::{load_cases, load_suite_report};
use crate::i18n::{use_lang, Lang};
use crate::words::short_time;

/// The kinds of check a row offers: (wire name, English, Chinese).
const KINDS: [(&str, &str, &str); 6] = [
    ("answer_text", "the answer holds the text", "答案包含文本"),
    (
        "answer_number",
        "the answer states the number",
        "答案给出数字",
    ),
    ("file_exists", "the file exists", "文件存在"),
    ("file_text", "the file holds the text", "文件包含文本"),
    ("step_done", "the step was done", "步骤已完成"),
    ("step_not_done", "the step was not done", "步骤未完成"),
];

/// A check's row values: (kind, text, path, step).
fn row_values(check: Option<&Check>) -> (&'static str, String, String, Option<u32>) {
    match check {
        None => ("", String::new(), String::new(), None),
        Some(Check::AnswerText { text }) => ("answer_text", text.clone(), String::new(), None),
        Some(Check::AnswerNumber { number, tolerance }) => (
            "answer_number",
            if *tolerance > 0.0 {
                format!("{number} ± {tolerance}")
            } else {
                number.to_string()
            },
            String::new(),
            None,
        ),
        Some(Check::FileExists { path }) => ("file_exists", String::new(), path.clone(), None),
        Some(Check::FileText { path, text }) => ("file_text", text.clone(), path.clone(), None),
        Some(Check::StepDone { subtask, .. }) => {
            ("step_done", String::new(), String::new(), Some(*subtask))
        }
        Some(Check::StepNotDone { subtask, .. }) => (
            "step_not_done",
            String::new(),
            String::new(),
            Some(*subtask),
        ),
    }
}

/// The check rows of a form: one per check in `checks`, then `blank`
/// empty ones. Row `n` posts `check-kind-n`, `check-text-n`,
/// `check-path-n` and `check-step-n` (`steps`: the plan's subtasks).
pub fn check_rows(
    checks: &[Check],
    steps: &[(u32, String)],
    blank: usize,
    lang: Lang,
) -> impl IntoView {
    (0..checks.len() + blank)
        .map(|i| {
            let n = i + 1;
            let (kind, text, path, step) = row_values(checks.get(i));
            let kinds = KINDS
                .iter()
                .map(|(value, en, zh)| view! { <option value=*value selected=kind == *value>{lang.pick(*en, *zh)}</option> })
                .collect_view();
            let step_options = steps
                .iter()
                .map(|(id, name)| view! { <option value=id.to_string() selected=step == Some(*id)>{format!("#{id} {name}")}</option> })
                .collect_view();
            view! {
                <div class="check-row" data-testid=format!("check-row-{n}")>
                    <select name=format!("check-kind-{n}") aria-label=lang.pick("What to check", "检查什么") data-testid=format!("check-kind-{n}")>
                        <option value="" selected=kind.is_empty()>{lang.pick("— no check —", "— 不检查 —")}</option>
                        {kinds}
                    </select>
                    <input name=format!("check-text-{n}") value=text maxlength="1000" placeholder=lang.pick("text, or number (± tolerance)", "文本，或数字（± 误差）") data-testid=format!("check-text-{n}")/>
                    <input name=format!("check-path-{n}") value=path maxlength="500" placeholder=lang.pick("file path", "文件路径") data-testid=format!("check-path-{n}")/>
                    <select name=format!("check-step-{n}") aria-label=lang.pick("Step", "步骤") data-testid=format!("check-step-{n}")>
                        <option value="" selected=step.is_none()>{lang.pick("step", "步骤")}</option>
                        {step_options}
                    </select>
                </div>
            }
        })
        .collect_view()
}

/// A case outcome's words and badge.
pub fn outcome_badge(outcome: CaseOutcome, lang: Lang) -> impl IntoView {
    let label = match outcome {
        CaseOutcome::Pending => lang.pick("pending", "等待中"),
        CaseOutcome::Running => lang.pick("running", "运行中"),
        CaseOutcome::Passed => lang.pick("passed", "通过"),
        CaseOutcome::Failed => lang.pick("failed", "失败"),
        CaseOutcome::Skipped => lang.pick("skipped", "跳过"),
    };
    view! { <span class=format!("badge outcome outcome-{outcome}") data-testid="case-outcome" data-outcome=outcome.as_str()>{label}</span> }
}

fn suite_state(state: SuiteState, lang: Lang) -> &'static str {
    match state {
        SuiteState::Running => lang.pick("running", "运行中"),
        SuiteState::Done => lang.pick("done", "完成"),
        SuiteState::Cancelled => lang.pick("cancelled", "已取消"),
        SuiteState::Failed => lang.pick("failed", "失败"),
    }
}

fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "—".into(), |v| format!("{:.0} %", v * 100.0))
}

/// Where a run first parted from its case's recording, in a line.
fn divergence_line(d: &Divergence, lang: Lang) -> String {
    let side = |step: Option<&LogStep>| match step {
        None => lang.pick("(its log ends)", "（日志结束）").to_string(),
        Some(LogStep::Model { role, reply, .. }) => {
            format!("{role}: {}", plan_engine::text::ellipsis(reply.trim(), 120))
        }
        Some(LogStep::Tool {
            name, arguments, ..
        }) => {
            format!(
                "{name} {}",
                plan_engine::text::ellipsis(&arguments.to_string(), 120)
            )
        }
    };
    lang.pick(
        format!(
            "step {}: recorded {} · now {}",
            d.index + 1,
            side(d.a.as_ref()),
            side(d.b.as_ref())
        ),
        format!(
            "第 {} 步：记录为 {} · 现在为 {}",
            d.index + 1,
            side(d.a.as_ref()),
            side(d.b.as_ref())
        ),
    )
}

// The chart's units (SVG pixels).
const CHART_W: usize = 560;
const CHART_H: usize = 160;
const CHART_PAD: usize = 30;

/// The suite's score over time, a line per model and planboard version
/// (`history` oldest first): x is the run's place in time, y its score.
pub fn score_chart(history: &[SuiteRun], lang: Lang) -> impl IntoView {
    if history.is_empty() {
        return view! { <p class="empty" data-testid="score-chart-empty">{lang.pick("No suite run has ended yet.", "还没有结束的套件运行。")}</p> }.into_any();
    }
    let mut series: BTreeMap<(String, String), Vec<(usize, f64)>> = BTreeMap::new();
    for (i, run) in history.iter().enumerate() {
        if let Some(score) = run.score {
            series
                .entry((run.model.clone(), run.version.clone()))
                .or_default()
                .push((i, score));
        }
    }
    let span = history.len().saturating_sub(1).max(1);
    let x = |i: usize| CHART_PAD + i * (CHART_W - 2 * CHART_PAD) / span;
    let y = |score: f64| {
        let inner = (CHART_H - 2 * CHART_PAD) as f64;
        CHART_PAD + ((1.0 - score.clamp(0.0, 1.0)) * inner).round() as usize
    };
    let lines = series
        .iter()
        .enumerate()
        .map(|(k, ((model, version), points))| {
            let path = points
                .iter()
                .map(|(i, s)| format!("{},{}", x(*i), y(*s)))
                .collect::<Vec<_>>()
                .join(" ");
            let dots = points
                .iter()
                .map(|(i, s)| view! { <circle cx=x(*i) cy=y(*s) r="3"><title>{format!("{model} · planboard {version}: {:.0} %", s * 100.0)}</title></circle> })
                .collect_view();
            view! {
                <g class=format!("series series-{}", k % 6) data-testid="score-series" data-model=model.clone() data-version=version.clone()>
                    <polyline points=path fill="none"></polyline>
                    {dots}
                </g>
            }
        })
        .collect_view();
    let legend = series
        .keys()
        .enumerate()
        .map(|(k, (model, version))| view! { <li class=format!("series-{}", k % 6)>{format!("{model} · planboard {version}")}</li> })
        .collect_view();
    let first = short_time(&history[0].started_at);
    let last = short_time(&history[history.len() - 1].started_at);
    let (top, bottom, right, foot) = (y(1.0), y(0.0), CHART_W - CHART_PAD, CHART_H - 6);
    let (top_label, bottom_label) = (top + 4, bottom + 4);
    view! {
        <figure class="score-chart">
            <svg viewBox=format!("0 0 {CHART_W} {CHART_H}") role="img" data-testid="score-chart"
                aria-label=lang.pick("The suite's score over time, per model and planboard version", "套件得分随时间的变化（按模型与 planboard 版本）")>
                <line class="axis" x1=CHART_PAD y1=top x2=right y2=top></line>
                <line class="axis" x1=CHART_PAD y1=bottom x2=right y2=bottom></line>
                <text x="2" y=top_label>"100%"</text>
                <text x="2" y=bottom_label>"0%"</text>
                <text x=CHART_PAD y=foot>{first}</text>
                <text x=right y=foot text-anchor="end">{last}</text>
                {lines}
            </svg>
            <figcaption><ul class="chart-legend">{legend}</ul></figcaption>
        </figure>
    }
    .into_any()
}

/// A case as the page lists it, with its forms.
fn case_card(case: Case, can_edit: bool, lang: Lang) -> impl IntoView {
    let id = case.id;
    let steps: Vec<(u32, String)> = case
        .graph
        .iter()
        .map(|n| (n.id.0, n.name.clone()))
        .collect();
    let checks = case
        .checks
        .iter()
        .map(|c| view! { <li data-testid="case-check">{c.label(lang == Lang::Zh)}</li> })
        .collect_view();
    let tags = case
        .tags
        .iter()
        .map(|t| view! { <span class="badge tag">{t.clone()}</span>" " })
        .collect_view();
    let forms = can_edit.then(|| {
        view! {
            <details class="case-edit">
                <summary data-testid="case-edit">{lang.pick("Edit", "编辑")}</summary>
                <form method="post" action=format!("/cases/{id}/edit") data-testid="case-edit-form">
                    <label class="field">{lang.pick("Name", "名称")}<input name="name" value=case.name.clone() required maxlength="200" data-testid="case-name-input"/></label>
                    <label class="field">{lang.pick("Tags (separated by commas)", "标签（用逗号分隔）")}<input name="tags" value=case.tags.join(", ") data-testid="case-tags-input"/></label>
                    <fieldset class="checks">
                        <legend>{lang.pick("Checks", "检查")}</legend>
                        {check_rows(&case.checks, &steps, 2, lang)}
                    </fieldset>
                    <button type="submit" class="primary" data-testid="case-save">{lang.pick("Save", "保存")}</button>
                </form>
            </details>
            <div class="actions">
                <form method="post" action=format!("/cases/{id}/retire") class="inline">
                    <input type="hidden" name="retired" value=if case.retired { "0" } else { "1" }/>
                    <button type="submit" data-testid="case-retire">{if case.retired { lang.pick("Bring back", "恢复使用") } else { lang.pick("Retire", "停用") }}</button>
                </form>
                <form method="post" action=format!("/cases/{id}/delete") class="inline">
                    <button type="submit" class="danger" data-testid="case-delete">{lang.pick("Delete", "删除")}</button>
                </form>
            </div>
        }
    });
    view! {
        <article class="case" class:retired=case.retired id=format!("case-{id}") data-testid="case">
            <h3 data-testid="case-name">{case.name.clone()}{case.retired.then(|| view! { " "<span class="badge" data-testid="case-retired">{lang.pick("retired", "已停用")}</span> })}</h3>
            <p class="hint">
                {tags}
                {lang.pick("made by ", "创建者 ")}{case.created_by.clone()}" · "<time>{short_time(&case.created_at)}</time>" · "
                <a href=format!("/plans/{}", case.plan_id)>{lang.pick("the reviewed plan", "评审过的计划")}</a>
                {lang.pick(format!(" · {} steps · {} files", case.graph.len(), case.inputs.len()), format!(" · {} 个步骤 · {} 个文件", case.graph.len(), case.inputs.len()))}
            </p>
            <p class="case-task">{lang.pick("Asked: ", "任务：")}{case.task.clone()}</p>
            {case.checks.is_empty().then(|| view! { <p class="hint">{lang.pick("No checks: the case passes when its run ends done.", "没有检查：运行完成即通过。")}</p> })}
            <ul class="case-checks">{checks}</ul>
            {forms}
        </article>
    }
}

/// The form that starts a suite run.
fn run_form(cases: &[Case], lang: Lang) -> impl IntoView {
    let mut tags: Vec<String> = cases
        .iter()
        .filter(|c| !c.retired)
        .flat_map(|c| c.tags.iter().cloned())
        .collect();
    tags.sort();
    tags.dedup();
    let tag_options = tags
        .into_iter()
        .map(|t| view! { <option value=t.clone()>{t.clone()}</option> })
        .collect_view();
    view! {
        <form class="run-suite filters" method="post" action="/cases/run" data-testid="run-suite-form">
            <label>{lang.pick("Cases ", "用例 ")}
                <select name="tag" data-testid="suite-tag">
                    <option value="">{lang.pick("every case in use", "所有在用的用例")}</option>
                    {tag_options}
                </select>
            </label>
            <label>{lang.pick(" on the model ", " 模型 ")}<input name="model" maxlength="200" placeholder=lang.pick("the configured one", "已配置的模型") data-testid="suite-model"/></label>
            <label>{lang.pick(" tool calls ", " 工具调用 ")}
                <select name="unmatched" data-testid="suite-unmatched">
                    <option value="replay">{lang.pick("from each recording where they match", "与记录相同的由记录作答")}</option>
                    <option value="live">{lang.pick("all live", "全部实际调用")}</option>
                </select>
            </label>
            <label>{lang.pick(" at most US$ ", " 最多费用（美元）")}<input name="max_cost" type="number" min="0.000001" step="any" size="6" data-testid="suite-max-cost"/></label>
            <label>{lang.pick(" or model calls ", " 或模型调用次数 ")}<input name="max_llm_calls" type="number" min="1" size="6" data-testid="suite-max-calls"/></label>
            <button type="submit" class="primary" data-testid="run-suite">{lang.pick("Run the suite", "运行回归套件")}</button>
        </form>
    }
}

fn overview(o: CasesOverview, can_edit: bool, lang: Lang) -> impl IntoView {
    let run_of = |case: run_model::CaseId| o.cases.iter().find(|c| c.id == case).map(|c| c.run_id);
    let latest = o
        .latest
        .iter()
        .map(|m| {
            let r = &m.run;
            let changed = m
                .changed
                .iter()
                .map(|c| {
                    let compare = run_of(c.case_id)
                        .zip(c.run_id)
                        .map(|(a, b)| view! { " · "<a href=format!("/runs/compare?a={a}&b={b}") data-testid="changed-compare">{lang.pick("compare", "比较")}</a> });
                    view! {
                        <li data-testid="changed-case">
                            <strong>{c.case_name.clone()}</strong>": "{outcome_badge(c.before, lang)}" → "{outcome_badge(c.now, lang)}
                            {compare}
                            {c.divergence.as_ref().map(|d| view! { <div class="divergence-line" data-testid="changed-divergence">{divergence_line(d, lang)}</div> })}
                        </li>
                    }
                })
                .collect_view();
            view! {
                <tr data-testid="latest-score">
                    <td><strong>{r.model.clone()}</strong><div class="hint">{format!("planboard {}", r.version)}</div></td>
                    <td class="number score" data-testid="score">{percent(r.score)}</td>
                    <td>{lang.pick(format!("{} passed, {} failed, {} skipped", r.passed, r.failed, r.skipped), format!("通过 {}，失败 {}，跳过 {}", r.passed, r.failed, r.skipped))}</td>
                    <td class="number">{percent(r.node_f1)}" / "{percent(r.edge_f1)}</td>
                    <td><time>{short_time(&r.started_at)}</time>" · "<a href=format!("/cases/runs/{}", r.id)>{lang.pick("report", "报告")}</a></td>
                    <td>
                        {if m.changed.is_empty() {
                            view! { <span class="hint">{lang.pick("no case changed", "没有用例变化")}</span> }.into_any()
                        } else {
                            view! { <ul class="changed-cases">{changed}</ul> }.into_any()
                        }}
                    </td>
                </tr>
            }
        })
        .collect_view();
    let running = o
        .running
        .iter()
        .map(|r| view! {
            <li data-testid="suite-running">
                <a href=format!("/cases/runs/{}", r.id)>{format!("{} · {}", r.model, short_time(&r.started_at))}</a>
                {lang.pick(format!(" · {} of {} cases judged", r.passed + r.failed, r.cases), format!(" · 已评判 {}/{} 个用例", r.passed + r.failed, r.cases))}
            </li>
        })
        .collect_view();
    let findings = o
        .findings
        .iter()
        .map(|f| {
            let name = o.cases.iter().find(|c| c.id == f.case_id).map_or_else(|| f.case_id.to_string(), |c| c.name.clone());
            view! {
                <li data-testid="finding">
                    <span class=format!("badge verdict verdict-{}", f.verdict) data-verdict=f.verdict.as_str()>{f.verdict.label(lang == Lang::Zh)}</span>" "
                    <strong>{name}</strong>" · "{f.reviewer.clone()}": "{f.note.clone()}" · "
                    <a href=format!("/plans/{}", f.plan_id)>{lang.pick("the run's plan", "该运行的计划")}</a>
                </li>
            }
        })
        .collect_view();
    let has_findings = !o.findings.is_empty();
    let has_running = !o.running.is_empty();
    let no_latest = o.latest.is_empty();
    let head = [
        lang.pick("Model", "模型"),
        lang.pick("Score", "得分"),
        lang.pick("Cases", "用例"),
        lang.pick("Node / edge F1", "节点 / 边 F1"),
        lang.pick("When", "时间"),
        lang.pick("Changed since its previous run", "与上一次相比的变化"),
    ];
    let cases_empty = o.cases.is_empty();
    view! {
        <h2>{lang.pick("Latest score per model", "各模型的最新得分")}</h2>
        {if no_latest {
            view! { <p class="empty" data-testid="no-score">{lang.pick("No suite run has ended yet.", "还没有结束的套件运行。")}</p> }.into_any()
        } else {
            view! {
                <table class="plans latest-scores" data-testid="latest-scores">
                    <thead><tr>{head.map(|h| view! { <th>{h}</th> })}</tr></thead>
                    <tbody>{latest}</tbody>
                </table>
            }.into_any()
        }}
        <h2>{lang.pick("Score over time", "得分随时间的变化")}</h2>
        {score_chart(&o.history, lang)}
        {can_edit.then(|| view! { <h2>{lang.pick("Run the suite", "运行回归套件")}</h2>{run_form(&o.cases, lang)} })}
        {has_running.then(|| view! { <h2>{lang.pick("Going on", "进行中")}</h2><ul>{running}</ul> })}
        {has_findings.then(|| view! {
            <h2>{lang.pick("Findings", "发现的问题")}</h2>
            <p class="hint">{lang.pick("Reviews of a case's run in a suite that were not good: findings about the model, prompt or policy under test, not new cases.", "对套件中用例运行的非“好”评审：针对被测模型、提示或策略的问题，而非新用例。")}</p>
            <ul class="findings">{findings}</ul>
        })}
        <h2>{lang.pick("Cases", "用例")}</h2>
        {cases_empty.then(|| view! { <p class="empty" data-testid="cases-empty">{lang.pick("No cases yet: review a run good on its board and keep it as a case.", "还没有用例：在运行的看板上将其评审为“好”并保留为用例。")}</p> })}
        {o.cases.into_iter().map(|c| case_card(c, can_edit, lang)).collect_view()}
    }
}

#[component]
pub fn CasesPage() -> impl IntoView {
    let lang = use_lang();
    let loaded = crate::codec::load(|| (), |()| load_cases());
    view! {
        <section class="cases-page">
            <h1>{lang.pick("Regression cases", "回归用例")}</h1>
            <p class="hint">{lang.pick(
                "Runs a reviewer judged good, kept with their task, files, plan, answer and checks. A suite run plans and runs every case again on a model, its tool calls answered from each case's recording where they match, and judges each by its checks and its plan against the reviewed one.",
                "评审为“好”的运行，连同任务、文件、计划、答案和检查一起保留。套件运行会在某个模型上重新规划并运行每个用例，与记录相同的工具调用由记录作答，并按检查和与评审计划的比较来评判每个用例。",
            )}</p>
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || loaded.get().map(|r| match r {
                    Ok((o, can_edit)) => overview(o, can_edit, lang).into_any(),
                    Err(e) => view! { <p class="error" role="alert">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}

/// One case's line of a suite run's report.
fn result_row(r: CaseResult, lang: Lang) -> impl IntoView {
    let checks = r
        .checks
        .iter()
        .map(|c| {
            let mark = if c.passed { "✓" } else { "✗" };
            view! {
                <li class:failed=!c.passed data-testid="result-check" data-passed=c.passed.to_string()>
                    {format!("{mark} {}", c.check.label(lang == Lang::Zh))}<span class="hint">{format!(" — {}", c.detail)}</span>
                </li>
            }
        })
        .collect_view();
    let secs = format!("{:.1} s", r.wall_ms as f64 / 1000.0);
    let compare = r.case_run.zip(r.run_id).map(|(a, b)| {
        view! { <a href=format!("/runs/compare?a={a}&b={b}") data-testid="result-compare">{lang.pick("compare with the recording", "与记录比较")}</a> }
    });
    view! {
        <tr data-testid="suite-result">
            <td><strong>{r.case_name.clone()}</strong>{r.reason.clone().map(|why| view! { <div class="hint" data-testid="result-reason">{why}</div> })}</td>
            <td>{outcome_badge(r.outcome, lang)}</td>
            <td class="number">{percent(r.node_f1)}" / "{percent(r.edge_f1)}</td>
            <td><ul class="result-checks">{checks}</ul></td>
            <td class="number">{secs}</td>
            <td class="number">{r.llm_calls}</td>
            <td class="number">{r.cost.to_string()}</td>
            <td>
                {r.divergence.as_ref().map(|d| view! { <div class="divergence-line" data-testid="result-divergence">{divergence_line(d, lang)}</div> })}
                {compare}
            </td>
        </tr>
    }
}

#[component]
pub fn SuiteReportPage() -> impl IntoView {
    let lang = use_lang();
    let id = use_params_map()
        .read_untracked()
        .get("id")
        .and_then(|s| uuid::Uuid::parse_str(&s).ok());
    let Some(id) = id else {
        return view! { <p class="error" role="alert">{lang.pick("No suite run has this id.", "没有这个 id 的套件运行。")}</p> }.into_any();
    };
    let loaded = crate::codec::load(move || id, load_suite_report);
    let head = [
        lang.pick("Case", "用例"),
        lang.pick("Outcome", "结果"),
        lang.pick("Node / edge F1", "节点 / 边 F1"),
        lang.pick("Checks", "检查"),
        lang.pick("Time", "用时"),
        lang.pick("Calls", "调用"),
        lang.pick("Cost", "费用"),
        lang.pick("Where it parted from the recording", "与记录分开处"),
    ];
    view! {
        <section class="cases-page suite-report" data-testid="suite-report">
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || loaded.get().map(|r| match r {
                    Ok((report, can_edit)) => {
                        let run = report.run;
                        let going = !run.state.is_finished();
                        let rows = report.results.into_iter().map(|r| result_row(r, lang)).collect_view();
                        view! {
                            <h1>{lang.pick("Suite run on ", "套件运行：")}{run.model.clone()}</h1>
                            <p data-testid="suite-summary" data-state=run.state.as_str()>
                                <span class=format!("badge suite-{}", run.state)>{suite_state(run.state, lang)}</span>" "
                                {lang.pick(format!("score {} · {} passed, {} failed, {} skipped of {} · ", percent(run.score), run.passed, run.failed, run.skipped, run.cases), format!("得分 {} · 共 {} 个：通过 {}，失败 {}，跳过 {} · ", percent(run.score), run.cases, run.passed, run.failed, run.skipped))}
                                {format!("planboard {} · ", run.version)}
                                {lang.pick(format!("{} model calls, {} · started by {} ", run.spent.llm_calls, run.spent.cost, run.started_by), format!("{} 次模型调用，{} · 由 {} 启动于 ", run.spent.llm_calls, run.spent.cost, run.started_by))}
                                <time>{short_time(&run.started_at)}</time>
                            </p>
                            {run.reason.clone().map(|why| view! { <p class="hint" data-testid="suite-reason">{why}</p> })}
                            {(going && can_edit).then(|| view! {
                                <form method="post" action=format!("/cases/runs/{}/cancel", run.id) class="inline">
                                    <button type="submit" class="danger" data-testid="suite-cancel">{lang.pick("Cancel", "取消")}</button>
                                </form>
                                " "<a href=format!("/cases/runs/{}", run.id) data-testid="suite-reload">{lang.pick("Reload to see it go on", "刷新以查看进度")}</a>
                            })}
                            <table class="plans suite-results">
                                <thead><tr>{head.map(|h| view! { <th>{h}</th> })}</tr></thead>
                                <tbody>{rows}</tbody>
                            </table>
                            <p><a href="/cases">{lang.pick("All cases and scores", "所有用例与得分")}</a></p>
                        }.into_any()
                    }
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

    #[test]
    fn a_checks_row_values_read_back_as_the_form_writes_them() {
        assert_eq!(
            row_values(Some(&Check::AnswerNumber {
                number: 42.0,
                tolerance: 0.5
            })),
            ("answer_number", "42 ± 0.5".to_string(), String::new(), None)
        );
        assert_eq!(
            row_values(Some(&Check::StepNotDone {
                subtask: 3,
                name: "x".into()
            }))
            .3,
            Some(3)
        );
        assert_eq!(row_values(None).0, "");
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn the_score_chart_draws_a_line_per_model_and_version() {
        let run = |model: &str, version: &str, score: f64, at: i64| SuiteRun {
            id: uuid::Uuid::from_u128(1),
            state: SuiteState::Done,
            reason: None,
            tag: None,
            model: model.into(),
            version: version.into(),
            unmatched: run_model::SuiteTools::Replay,
            budget: Default::default(),
            started_by: "ada".into(),
            started_at: chrono::DateTime::from_timestamp(at, 0).unwrap(),
            finished_at: None,
            cases: 2,
            passed: 1,
            failed: 1,
            skipped: 0,
            score: Some(score),
            node_f1: None,
            edge_f1: None,
            spent: Default::default(),
        };
        let history = [
            run("a", "0.1.0", 0.5, 1_800_000_000),
            run("b", "0.1.0", 1.0, 1_800_000_100),
            run("a", "0.2.0", 0.75, 1_800_000_200),
        ];
        let html = score_chart(&history, Lang::En).into_view().to_html();
        assert_eq!(
            html.matches("data-testid=\"score-series\"").count(),
            3,
            "{html}"
        );
        assert!(html.contains("a · planboard 0.2.0"), "{html}");
        let empty = score_chart(&[], Lang::Zh).into_view().to_html();
        assert!(empty.contains("还没有结束的套件运行"), "{empty}");
    }
}
