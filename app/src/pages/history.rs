//! History (`/history`): finished and abandoned plans for team review —
//! outcome, duration, who approved, how much was said — each opening on
//! the board's timeline.

use leptos::prelude::*;

use plan_engine::{Mode, StateFilter};

use super::plans::{address, by_name, by_select, mode_select, page_href, Pager};
use crate::api::{list_history, HistorySort, ListFilter, PlanRow, ReviewFilter};
use crate::i18n::{use_lang, Lang};
use crate::words::short_time;

/// The history table's columns: English, Chinese, and the order a click
/// on the heading sorts by (the biggest first).
const COLUMNS: [(&str, &str, Option<HistorySort>); 12] = [
    ("Plan, and what was asked", "计划与任务", None),
    ("Reviews", "评审", None),
    ("Mode", "模式", None),
    ("State", "状态", None),
    ("Agent run", "智能体运行", None),
    ("Outcome", "结果", None),
    ("Took", "耗时", Some(HistorySort::Took)),
    ("Tokens", "令牌", Some(HistorySort::Tokens)),
    ("Cost", "费用", Some(HistorySort::Cost)),
    ("Approved by", "批准人", None),
    ("Comments", "评论", None),
    ("Finished", "结束于", Some(HistorySort::Newest)),
];

/// The headings; a sortable one links to the list in its order (the
/// filters kept), the current order marked.
fn head(lang: Lang, sort: HistorySort, params: &[(&str, &str)]) -> impl IntoView {
    let cells = COLUMNS
        .iter()
        .map(|(en, zh, by)| {
            let text = lang.pick(*en, *zh);
            match by {
                None => view! { <th>{text}</th> }.into_any(),
                Some(by) => {
                    let mut with: Vec<(&str, &str)> = params.to_vec();
                    with.push(("sort", by.as_str()));
                    let current = *by == sort;
                    view! {
                        <th aria-sort=if current { "descending" } else { "none" }>
                            <a href=page_href("/history", &with, 0) data-testid=format!("history-sort-{}", by.as_str())>
                                {text}{if current { " ↓" } else { "" }}
                            </a>
                        </th>
                    }
                    .into_any()
                }
            }
        })
        .collect_view();
    view! { <thead><tr>{cells}</tr></thead> }
}

/// The reviews select of History's filter form.
fn review_select(lang: Lang, chosen: Option<ReviewFilter>) -> impl IntoView {
    let options = [ReviewFilter::Unreviewed]
        .into_iter()
        .chain(run_model::ReviewVerdict::ALL.map(ReviewFilter::Verdict))
        .map(|f| {
            let label = match f {
                ReviewFilter::Unreviewed => lang.pick("not reviewed", "未评审"),
                ReviewFilter::Verdict(v) => super::reviews::verdict_label(v, lang),
            };
            view! { <option value=f.name() selected=chosen == Some(f)>{label}</option> }
        })
        .collect_view();
    view! {
        <label>
            {lang.pick("Review ", "评审 ")}
            <select name="verdict" data-testid="history-verdict">
                <option value="" selected=chosen.is_none()>{lang.pick("any", "任意")}</option>
                {options}
            </select>
        </label>
    }
}

fn duration(r: &PlanRow, lang: Lang) -> String {
    match r.finished_at {
        Some(end) => {
            let s = (end - r.created_at).num_seconds().max(0);
            match s {
                0..=59 => lang.pick(format!("{s} s"), format!("{s} 秒")),
                60..=3599 => lang.pick(format!("{} min", s / 60), format!("{} 分钟", s / 60)),
                3600..=86_399 => {
                    let h = tenths(s, 3600);
                    lang.pick(format!("{h} h"), format!("{h} 小时"))
                }
                _ => {
                    let d = tenths(s, 86_400);
                    lang.pick(format!("{d} days"), format!("{d} 天"))
                }
            }
        }
        None => "—".into(),
    }
}

/// `seconds / unit` with one decimal, rounded down, without float printing
/// (which would add its code to the wasm).
fn tenths(seconds: i64, unit: i64) -> String {
    let t = seconds * 10 / unit;
    format!("{}.{}", t / 10, t % 10)
}

#[component]
pub fn HistoryPage() -> impl IntoView {
    let lang = use_lang();
    // History is the finished plans; its filters are mode and who made them.
    let mut filter = ListFilter::from_address(&address());
    filter.query.state = Some(StateFilter::Finished);
    filter.query.text.clear();
    let (page, mode, agent, sort, review) = (
        filter.page,
        filter.query.mode,
        filter.agent,
        filter.sort,
        filter.review,
    );
    let params = [
        ("mode", mode.map(Mode::as_str).unwrap_or_default()),
        ("by", by_name(agent)),
        (
            "verdict",
            review.map(ReviewFilter::name).unwrap_or_default(),
        ),
    ];
    let sorted = [
        params[0],
        params[1],
        params[2],
        (
            "sort",
            if sort == HistorySort::Newest {
                ""
            } else {
                sort.as_str()
            },
        ),
    ];
    let plans = crate::codec::load(move || filter.clone(), list_history);
    view! {
        <section class="history-page">
            <h1>{lang.pick("History", "历史")}</h1>
            <p class="hint">{lang.pick(
                "Finished, failed and abandoned plans, newest first. Open one to read its timeline.",
                "已完成、失败和已放弃的计划，最新的在前。打开一个即可阅读它的时间线。",
            )}</p>
            <p><a href="/approvals" data-testid="history-approvals">{lang.pick(
                "Approval records: who approved, edited or denied what, with its digest",
                "批准记录：谁批准、修改或拒绝了什么，附摘要",
            )}</a></p>
            <form class="filters" method="get" action="/history" role="search">
                {mode_select(lang, mode, "history-mode")}
                {by_select(lang, agent)}
                {review_select(lang, review)}
                {(sort != HistorySort::Newest).then(|| view! { <input type="hidden" name="sort" value=sort.as_str()/> })}
                <button type="submit">{lang.pick("Filter", "筛选")}</button>
            </form>
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || plans.get().map(|r| match r {
                    Ok(list) if list.rows.is_empty() && page == 0 => view! { <p class="empty">{lang.pick("No finished plans yet.", "还没有结束的计划。")}</p> }.into_any(),
                    Ok(list) => {
                        let more = list.more;
                        let lines = list.rows.into_iter().map(|h| {
                            let r = h.plan;
                            let took = duration(&r, lang);
                            view! {
                                <tr data-testid="history-row">
                                    <td class="title">
                                        <a href=format!("/plans/{}?view=timeline", r.id)>{r.title.clone()}</a>
                                        {h.task.clone().map(|task| view! { <div class="asked" data-testid="asked">{task}</div> })}
                                    </td>
                                    <td class="verdicts" data-testid="history-verdicts">
                                        {if h.verdicts.is_empty() {
                                            view! { <a href=format!("/plans/{}#reviews", r.id) data-testid="history-review-link">{lang.pick("review", "评审")}</a> }.into_any()
                                        } else {
                                            h.verdicts.iter().map(|v| super::reviews::verdict_badge(*v, lang)).collect_view().into_any()
                                        }}
                                    </td>
                                    <td><span class="badge mode">{r.mode.label(lang)}</span></td>
                                    <td><span class=format!("badge plan-state state-{}", r.state.as_str())>{r.state.label(lang)}</span></td>
                                    <td data-testid="history-run">{r.run.map_or("—", |state| crate::words::run_state_label(state, lang))}</td>
                                    <td class="outcome">{r.outcome.clone().unwrap_or_default()}</td>
                                    <td>{took}</td>
                                    <td class="number" data-testid="history-tokens">{h.tokens.map_or_else(|| "—".into(), |t| t.to_string())}</td>
                                    <td class="number" data-testid="history-cost">{h.cost.map_or_else(|| "—".into(), |c| c.to_string())}</td>
                                    <td>{r.approved_by.clone().unwrap_or_else(|| "—".into())}</td>
                                    <td>{r.comments}</td>
                                    <td><time>{r.finished_at.as_ref().map(short_time).unwrap_or_default()}</time></td>
                                </tr>
                            }
                        }).collect_view();
                        view! {
                            <table class="plans">
                                {head(lang, sort, &params)}
                                <tbody>{lines}</tbody>
                            </table>
                            <Pager lang page more href=move |p| page_href("/history", &sorted, p)/>
                        }.into_any()
                    }
                                        Err(e) => view! { <p class="error" role="alert">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::tenths;

    #[test]
    fn durations_show_one_decimal_rounded_down() {
        assert_eq!(tenths(5400, 3600), "1.5");
        assert_eq!(tenths(3600, 3600), "1.0");
        assert_eq!(tenths(86_399 + 86_400, 86_400), "1.9");
    }
}
