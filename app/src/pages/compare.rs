//! Compare (`/plans/{id}/compare?from=&to=`): two versions of any plan side
//! by side — subtasks added, removed and changed field by field, the
//! plan's own fields — and every step between them with who made it.
//! By default, what changed since a person approved the plan. Rendered on
//! the server only (the engine replays both versions there).

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::load_compare;
use crate::i18n::{use_lang, Lang};
use crate::words::short_time;

fn field_rows(fields: Vec<(String, String, String)>, lang: Lang) -> impl IntoView {
    let none = lang.pick("(none)", "（无）");
    fields
        .into_iter()
        .map(|(field, before, after)| {
            let show = |t: String| if t.is_empty() { none.to_string() } else { t };
            let name = field.clone();
            view! {
                <tr data-testid="compare-field" data-field=name>
                    <th scope="row">{field}</th>
                    <td class="before">{show(before)}</td>
                    <td class="after">{show(after)}</td>
                </tr>
            }
        })
        .collect_view()
}

#[component]
pub fn ComparePage() -> impl IntoView {
    let lang = use_lang();
    let id = use_params_map()
        .read_untracked()
        .get("id")
        .and_then(|s| uuid::Uuid::parse_str(&s).ok());
    let query = use_query_map().read_untracked();
    let number = |k: &str| query.get_str(k).and_then(|v| v.trim().parse::<u64>().ok());
    let (from, to) = (number("from"), number("to"));
    let Some(id) = id else {
        return view! { <p class="error" role="alert">{lang.pick("No plan has this id.", "没有这个 id 的计划。")}</p> }.into_any();
    };
    let loaded = crate::codec::load(
        move || (id, from, to),
        |(id, from, to)| load_compare(id, from, to),
    );
    view! {
        <section class="compare-page">
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || loaded.get().map(|r| match r {
                    Ok(c) => {
                        let header = [lang.pick("Field", "字段"), lang.pick("Before", "之前"), lang.pick("After", "之后")];
                        let head = move || view! { <thead><tr>{header.map(|h| view! { <th>{h}</th> })}</tr></thead> };
                        let unchanged = c.plan.is_empty() && c.added.is_empty() && c.removed.is_empty() && c.changed.is_empty();
                        let steps = c.steps.iter().map(|(v, actor, at, what)| view! {
                            <li data-testid="compare-step"><span class="version">"v"{*v}</span>" "<strong>{actor.clone()}</strong>" "<time>{short_time(at)}</time>": "{what.clone()}</li>
                        }).collect_view();
                        view! {
                            <h1>{lang.pick("Compare versions: ", "比较版本：")}<a href=format!("/plans/{id}")>{c.title.clone()}</a></h1>
                            <form class="filters" method="get" action=format!("/plans/{id}/compare")>
                                <label>{lang.pick("From version ", "从第 ")}<input type="number" name="from" min="1" max=c.latest value=c.from data-testid="compare-from"/></label>
                                <label>{lang.pick(" to ", " 版到第 ")}<input type="number" name="to" min="1" max=c.latest value=c.to data-testid="compare-to"/>{lang.pick("", " 版")}</label>
                                <button type="submit" data-testid="compare-submit">{lang.pick("Compare", "比较")}</button>
                                <span class="hint">{lang.pick(format!(" (latest: v{})", c.latest), format!("（最新：第 {} 版）", c.latest))}</span>
                            </form>
                            {unchanged.then(|| view! { <p class="empty" data-testid="compare-same">{lang.pick("The two versions have the same plan and subtasks.", "两个版本的计划和子任务相同。")}</p> })}
                            {(!c.plan.is_empty()).then(|| view! {
                                <h2>{lang.pick("The plan", "计划")}</h2>
                                <table class="plans compare">{head()}<tbody>{field_rows(c.plan.clone(), lang)}</tbody></table>
                            })}
                            {(!c.added.is_empty()).then(|| view! {
                                <h2>{lang.pick("Added", "新增")}</h2>
                                <ul data-testid="compare-added">{c.added.iter().map(|(id, n)| view! { <li class="rev-added">{format!("+ #{id} {n}")}</li> }).collect_view()}</ul>
                            })}
                            {(!c.removed.is_empty()).then(|| view! {
                                <h2>{lang.pick("Removed", "删除")}</h2>
                                <ul data-testid="compare-removed">{c.removed.iter().map(|(id, n)| view! { <li class="rev-removed">{format!("− #{id} {n}")}</li> }).collect_view()}</ul>
                            })}
                            {c.changed.iter().map(|(sid, name, fields)| view! {
                                <h2 data-testid="compare-changed">{format!("~ #{sid} {name}")}</h2>
                                <table class="plans compare">{head()}<tbody>{field_rows(fields.clone(), lang)}</tbody></table>
                            }).collect_view()}
                            <h2>{lang.pick("Who changed what", "谁改了什么")}</h2>
                            <ol class="compare-steps">{steps}</ol>
                            {(c.more_steps > 0).then(|| view! { <p class="hint">{lang.pick(format!("… and {} more steps (compare a narrower range)", c.more_steps), format!("……还有 {} 步（请缩小比较范围）", c.more_steps))}</p> })}
                        }.into_any()
                    }
                    Err(e) => view! { <p class="error" role="alert">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
    .into_any()
}
