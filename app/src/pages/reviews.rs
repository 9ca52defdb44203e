//! Team review: the review queue ("To review", `/reviews`: finished plans
//! nobody has reviewed, the latest finished first, with what was asked),
//! the top bar's count of it, and the reviews part of a plan's board,
//! where each person writes, changes or removes their own review.
//! Rendered on the server only; the forms are plain forms (the server's
//! `/plans/{id}/review` takes them), so none of this is in the wasm.

use leptos::prelude::*;
use plan_engine::{Mode, PlanId};
use run_model::{Review, ReviewVerdict, ToReview};

use super::plans::{address, by_name, by_select, mode_select, page_href, Pager};
use crate::api::{load_review_queue, load_reviews, review_count, ListFilter, ReviewPanel};
use crate::i18n::{use_lang, Lang};
use crate::words::short_time;
use crate::words::table_head;

const COLUMNS: [(&str, &str); 5] = [
    ("Plan, and what was asked", "计划与任务"),
    ("State", "状态"),
    ("Mode", "模式"),
    ("Finished", "结束于"),
    ("", ""),
];

pub fn verdict_label(verdict: ReviewVerdict, lang: Lang) -> &'static str {
    verdict.label(lang == Lang::Zh)
}

/// A verdict as a badge (History's column, the board's reviews).
pub fn verdict_badge(verdict: ReviewVerdict, lang: Lang) -> impl IntoView {
    view! {
        <span class=format!("badge verdict verdict-{verdict}") data-testid="verdict" data-verdict=verdict.to_string()>
            {verdict_label(verdict, lang)}
        </span>
    }
}

fn row(t: ToReview, lang: Lang) -> impl IntoView {
    let href = format!("/plans/{}#reviews", t.plan_id);
    view! {
        <tr data-testid="review-queue-row">
            <td class="title">
                <a href=href.clone()>{t.title.clone()}</a>
                {t.task.clone().map(|task| view! { <div class="asked" data-testid="asked">{task}</div> })}
            </td>
            <td><span class=format!("badge plan-state state-{}", t.state.as_str())>{t.state.label(lang)}</span></td>
            <td><span class="badge mode">{t.mode.label(lang)}</span></td>
            <td><time>{t.finished_at.as_ref().map(short_time).unwrap_or_default()}</time></td>
            <td><a class="button" href=href data-testid="review-link">{lang.pick("Review", "评审")}</a></td>
        </tr>
    }
}

#[component]
pub fn ReviewsPage() -> impl IntoView {
    let lang = use_lang();
    let filter = ListFilter::from_address(&address());
    let (page, mode, agent) = (filter.page, filter.query.mode, filter.agent);
    let params = [
        ("mode", mode.map(Mode::as_str).unwrap_or_default()),
        ("by", by_name(agent)),
    ];
    let queue = crate::codec::load(move || filter.clone(), load_review_queue);
    view! {
        <section class="reviews-page">
            <h1>{lang.pick("To review", "待评审")}</h1>
            <p class="hint">{lang.pick(
                "Finished, failed and abandoned plans nobody has reviewed yet, the latest finished first. A review (good, needs changes or wrong, with notes) is remembered: the agent reads it before it plans a similar task.",
                "还没有人评审的已完成、失败和已放弃的计划，最近结束的在前。评审（好、需要修改或错误，附说明）会被记住：智能体规划类似任务前会读到它。",
            )}</p>
            <form class="filters" method="get" action="/reviews" role="search">
                {mode_select(lang, mode, "reviews-mode")}
                {by_select(lang, agent)}
                <button type="submit">{lang.pick("Filter", "筛选")}</button>
            </form>
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || queue.get().map(|r| match r {
                    Ok(list) if list.rows.is_empty() && page == 0 => view! {
                        <p class="empty" data-testid="reviews-empty">{lang.pick("Every finished plan has a review.", "每个结束的计划都已评审。")}</p>
                    }.into_any(),
                    Ok(list) => {
                        let more = list.more;
                        let total = list.total;
                        let lines = list.rows.into_iter().map(|t| row(t, lang)).collect_view();
                        view! {
                            <p class="count" data-testid="reviews-total">{lang.pick(format!("{total} waiting"), format!("{total} 个待评审"))}</p>
                            <table class="plans review-queue">
                                {table_head(lang, &COLUMNS)}
                                <tbody>{lines}</tbody>
                            </table>
                            <Pager lang page more href=move |p| page_href("/reviews", &params, p)/>
                        }.into_any()
                    }
                    Err(e) => view! { <p class="error" role="alert">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}

/// The top bar's count of plans waiting for a review (as of the page's load).
#[component]
pub fn ReviewCount() -> impl IntoView {
    let count = crate::codec::load(|| (), |_| review_count());
    view! {
        <Transition fallback=|| ()>
            {move || count.get().and_then(Result::ok).map(|n| view! {
                <span class="needs-count" class:none=n == 0 data-testid="review-count">{n}</span>
            })}
        </Transition>
    }
}

fn review_card(r: &Review, names: &[(u32, String)], lang: Lang, mine: bool) -> impl IntoView {
    let notes = r
        .subtasks
        .iter()
        .map(|n| {
            let name = names
                .iter()
                .find(|(id, _)| *id == n.subtask)
                .map_or(String::new(), |(_, name)| name.clone());
            view! { <li><strong>{format!("#{} {name}", n.subtask)}</strong>": "{n.note.clone()}</li> }
        })
        .collect_view();
    let edited = r.updated_at != r.created_at;
    view! {
        <article class="review" class:mine=mine data-testid="review">
            <header>
                {verdict_badge(r.verdict, lang)}
                " "<strong data-testid="reviewer">{r.reviewer.clone()}</strong>
                " "<time>{short_time(&r.updated_at)}</time>
                {edited.then(|| lang.pick(" (edited)", "（已修改）"))}
                <span class="hint">{lang.pick(format!(" · on version {}", r.plan_version), format!(" · 针对第 {} 版", r.plan_version))}</span>
            </header>
            {(!r.note.is_empty()).then(|| view! { <p class="review-note" data-testid="review-note">{r.note.clone()}</p> })}
            {(!r.subtasks.is_empty()).then(|| view! { <ul class="review-subtasks">{notes}</ul> })}
        </article>
    }
}

fn review_form(plan: PlanId, panel: &ReviewPanel, lang: Lang) -> impl IntoView {
    let mine = panel
        .reviews
        .iter()
        .find(|r| r.reviewer == panel.me)
        .cloned();
    let chosen = mine.as_ref().map(|r| r.verdict);
    let verdicts = ReviewVerdict::ALL
        .into_iter()
        .map(|v| {
            view! {
                <label class="choice">
                    <input type="radio" name="verdict" value=v.to_string() checked=chosen == Some(v) required=true data-testid=format!("verdict-{v}")/>
                    {verdict_label(v, lang)}
                </label>
            }
        })
        .collect_view();
    let subtask_fields = panel
        .subtasks
        .iter()
        .map(|(id, name)| {
            let note = mine
                .as_ref()
                .and_then(|r| r.subtasks.iter().find(|n| n.subtask == *id))
                .map(|n| n.note.clone())
                .unwrap_or_default();
            view! {
                <label class="field">
                    {format!("#{id} {name}")}
                    <textarea name=format!("subtask-{id}") rows="2" maxlength="2000" data-testid=format!("review-subtask-{id}")>{crate::words::textarea_text(&note)}</textarea>
                </label>
            }
        })
        .collect_view();
    let has_notes = mine.as_ref().is_some_and(|r| !r.subtasks.is_empty());
    let action = format!("/plans/{plan}/review");
    // A run of planboard's agent reviewed good may be kept as a
    // regression case with the reviewer's checks; a suite's run of a case
    // is a finding about it instead, and a case is kept once.
    let keep = match (panel.run, panel.case, panel.finding_of) {
        (_, Some(case), _) => Some(view! {
            <p class="hint" data-testid="review-case">
                {lang.pick("This run is a regression case. ", "这个运行是一个回归用例。")}
                <a href=format!("/cases#case-{case}")>{lang.pick("See it on the Cases page", "在回归用例页查看")}</a>
            </p>
        }.into_any()),
        (_, None, Some(case)) => Some(view! {
            <p class="hint" data-testid="review-finding">
                {lang.pick("This run is a suite's run of a regression case: a verdict other than good is a finding about ", "这个运行是回归套件对某个用例的运行：非“好”的评审结论是关于")}
                <a href=format!("/cases#case-{case}")>{lang.pick("that case", "该用例")}</a>
                {lang.pick(", not a new case.", "的发现，而不是新用例。")}
            </p>
        }.into_any()),
        (Some(_), None, None) => Some(view! {
            <details class="keep-case" data-testid="keep-case">
                <summary>{lang.pick("Keep as a regression case (with a good verdict)", "保留为回归用例（需评审为“好”）")}</summary>
                <label class="choice"><input type="checkbox" name="case" value="1" data-testid="keep-case-check"/>{lang.pick("Keep this run as a case: its task, files, plan and answer, and these checks", "将此运行保留为用例：任务、文件、计划和答案，以及以下检查")}</label>
                <label class="field">{lang.pick("Name (default: the plan's title)", "名称（默认：计划标题）")}<input name="case-name" maxlength="200" data-testid="keep-case-name"/></label>
                <label class="field">{lang.pick("Tags (separated by commas)", "标签（用逗号分隔）")}<input name="case-tags" data-testid="keep-case-tags"/></label>
                <fieldset class="checks">
                    <legend>{lang.pick("Checks a later run must pass", "之后的运行必须通过的检查")}</legend>
                    {super::cases::check_rows(&[], &panel.subtasks, 3, lang)}
                </fieldset>
            </details>
        }.into_any()),
        (None, None, None) => None,
    };
    view! {
        <form class="review-form" method="post" action=action.clone() data-testid="review-form">
            <fieldset>
                <legend>{if mine.is_some() { lang.pick("Your review", "你的评审") } else { lang.pick("Review this plan", "评审这个计划") }}</legend>
                <div class="choices">{verdicts}</div>
                <label class="field">
                    {lang.pick("Note (needed unless good: what should the next plan do differently?)", "说明（除“好”以外必填：下一个计划应该怎样做？）")}
                    <textarea name="note" rows="3" maxlength="4000" data-testid="review-note-input">{mine.as_ref().map(|r| crate::words::textarea_text(&r.note)).unwrap_or_default()}</textarea>
                </label>
                <details open=has_notes>
                    <summary>{lang.pick("Notes on single subtasks", "对单个子任务的说明")}</summary>
                    {subtask_fields}
                </details>
                {keep}
                <button type="submit" class="primary" data-testid="review-save">{if mine.is_some() { lang.pick("Save my review", "保存我的评审") } else { lang.pick("Save review", "保存评审") }}</button>
            </fieldset>
        </form>
        {mine.is_some().then(|| view! {
            <form method="post" action=action class="inline">
                <input type="hidden" name="remove" value="1"/>
                <button type="submit" class="danger" data-testid="review-remove">{lang.pick("Remove my review", "删除我的评审")}</button>
            </form>
        })}
    }
}

/// Links between a plan and the runs started again from it, and the
/// form that starts one ("Run again from here").
fn again_part(plan: PlanId, panel: &ReviewPanel, lang: Lang) -> impl IntoView {
    let from = panel.again_of.as_ref().map(|a| {
        view! {
            <p class="again-of" data-testid="again-of">
                {lang.pick(format!("Run again from #{} of ", a.from.0), format!("从以下计划的 #{} 重新运行：", a.from.0))}
                <a href=format!("/plans/{}", a.plan)>{lang.pick("the earlier plan", "先前的计划")}</a>
                {lang.pick(" (the results before it were kept).", "（之前的结果已保留）。")}
            </p>
        }
    });
    let made = (!panel.again.is_empty()).then(|| {
        let links = panel
            .again
            .iter()
            .map(|(p, from)| view! { <li><a href=format!("/plans/{p}") data-testid="again-link">{lang.pick(format!("run again from #{from}"), format!("从 #{from} 重新运行"))}</a></li> })
            .collect_view();
        view! {
            <div class="again-made"><strong>{lang.pick("Run again as:", "已重新运行：")}</strong><ul>{links}</ul></div>
        }
    });
    let form = (panel.finished && panel.can_review && panel.run.is_some() && !panel.subtasks.is_empty()).then(|| {
        let options = panel
            .subtasks
            .iter()
            .map(|(id, name)| view! { <option value=id.to_string()>{format!("#{id} {name}")}</option> })
            .collect_view();
        view! {
            <form class="again-form filters" method="post" action=format!("/plans/{plan}/again") data-testid="again-form">
                <label>
                    {lang.pick("Run again from ", "从此处重新运行：")}
                    <select name="from" data-testid="again-from">{options}</select>
                </label>
                <button type="submit" data-testid="again-submit">{lang.pick("Run again", "重新运行")}</button>
                <span class="hint">{lang.pick(
                    " The results before it are kept; it and what follows are done again by the agent, as a new run linked to this one.",
                    " 之前的结果会保留；从它开始的部分由智能体重新完成，作为与本计划相互链接的新运行。",
                )}</span>
            </form>
        }
    });
    // A replay: the run planned and worked again on a model, its tool
    // calls answered from this run's recording where they are the same.
    let replay = (panel.finished && panel.can_review && panel.run.is_some()).then(|| {
        let options = panel
            .subtasks
            .iter()
            .map(|(id, name)| view! { <option value=id.to_string()>{format!("#{id} {name}")}</option> })
            .collect_view();
        view! {
            <form class="replay-form filters" method="post" action=format!("/plans/{plan}/replay") data-testid="replay-form">
                <label>
                    {lang.pick("Replay on the model ", "在模型上回放：")}
                    <input name="model" maxlength="200" placeholder=lang.pick("the same one", "同一个模型") data-testid="replay-model"/>
                </label>
                <label>
                    {lang.pick(" from ", " 从 ")}
                    <select name="from" data-testid="replay-from">
                        <option value="">{lang.pick("the start (planned anew)", "开头（重新规划）")}</option>
                        {options}
                    </select>
                </label>
                <label>
                    {lang.pick(" a call it did not make: ", " 记录中没有的调用：")}
                    <select name="unmatched" data-testid="replay-unmatched">
                        <option value="live">{lang.pick("make it", "实际调用")}</option>
                        <option value="stop">{lang.pick("stop the replay there", "在此停止回放")}</option>
                    </select>
                </label>
                <label class="choice"><input type="checkbox" name="memory" value="1" data-testid="replay-memory"/>{lang.pick("remember it", "记住它")}</label>
                <button type="submit" data-testid="replay-submit">{lang.pick("Replay", "回放")}</button>
                <span class="hint">{lang.pick(
                    " A new run of the same task and files whose tool calls are answered from this run's recording when they are the same call; compare the two when it is done.",
                    " 以相同任务和文件开始的新运行：与本次记录相同的工具调用由记录作答；完成后可比较两者。",
                )}</span>
            </form>
        }
    });
    view! { {from}{made}{form}{replay} }
}

/// The reviews of a plan, under its board: everyone's, and the form for
/// the viewer's own once the plan is finished.
#[component]
pub fn ReviewSection(id: PlanId) -> impl IntoView {
    let lang = use_lang();
    let panel = crate::codec::load(move || id, load_reviews);
    view! {
        <Transition fallback=|| ()>
            {move || panel.get().and_then(Result::ok).filter(|p| p.finished || !p.reviews.is_empty() || p.again_of.is_some()).map(|panel| {
                let cards = panel
                    .reviews
                    .iter()
                    .map(|r| review_card(r, &panel.subtasks, lang, r.reviewer == panel.me))
                    .collect_view();
                let form = (panel.finished && panel.can_review).then(|| review_form(id, &panel, lang));
                view! {
                    <section class="reviews" id="reviews" data-testid="reviews">
                        <h2>{lang.pick("Reviews", "评审")}</h2>
                        {if panel.finished {
                            (panel.reviews.is_empty()).then(|| view! {
                                <p class="empty">{lang.pick("Nobody has reviewed this plan yet.", "还没有人评审这个计划。")}</p>
                            }).into_any()
                        } else {
                            view! { <p class="hint">{lang.pick("The plan is reviewed once it is finished.", "计划结束后即可评审。")}</p> }.into_any()
                        }}
                        {cards}
                        {form}
                        {again_part(id, &panel, lang)}
                    </section>
                }
            })}
        </Transition>
    }
}
