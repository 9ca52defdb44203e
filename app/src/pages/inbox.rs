//! "Needs you" (`/inbox`): one list across every plan of what waits for a
//! person — plans to approve, the agent's questions, guarded tool calls,
//! paused runs — each linking straight to the place to act. The page is
//! rendered on the server; the top bar's count ([`NeedsCount`]) is the one
//! island here, following the live stream.

use leptos::prelude::*;
use run_model::{Need, NeedKind};

use crate::api::{load_needs, needs_count};
use crate::i18n::{use_lang, Lang};
use crate::live::use_live;
use crate::words::short_time;
use crate::words::table_head;

const COLUMNS: [(&str, &str); 4] = [
    ("Waiting", "等待"),
    ("Plan", "计划"),
    ("What", "内容"),
    ("Since", "自"),
];

fn kind_label(kind: NeedKind, lang: Lang) -> &'static str {
    match kind {
        NeedKind::Approval => lang.pick("approval", "待批准"),
        NeedKind::Question => lang.pick("question", "问题"),
        NeedKind::ToolCall => lang.pick("tool call", "工具调用"),
        NeedKind::Stuck => lang.pick("run paused", "运行暂停"),
    }
}

/// What to do about it, as the link's words.
fn action(kind: NeedKind, lang: Lang) -> &'static str {
    match kind {
        NeedKind::Approval => lang.pick("Review and approve", "审阅并批准"),
        NeedKind::Question => lang.pick("Answer", "回答"),
        NeedKind::ToolCall => lang.pick("Allow or deny", "允许或拒绝"),
        NeedKind::Stuck => lang.pick("Look and resume", "查看并继续"),
    }
}

/// Who still has to approve (a two-person rule), and whether it has
/// waited past the operator's reminder time.
fn approval_notes(n: &Need, lang: Lang) -> impl IntoView {
    let overdue = n.overdue.then(|| {
        view! { <span class="badge overdue" data-testid="need-overdue">{lang.pick("waiting too long", "等待过久")}</span>" " }
    });
    let waiting = (!n.waiting_for.is_empty()).then(|| {
        let who = n.waiting_for.join(", ");
        view! {
            <span class="hint" data-testid="need-waiting-for">
                {lang.pick(format!("still to approve: {who}"), format!("尚需批准：{who}"))}
            </span>" "
        }
    });
    view! { {overdue}{waiting} }
}

fn row(n: Need, lang: Lang) -> impl IntoView {
    let what = match n.subtask {
        Some(s) => format!("#{} {}", s.0, n.text),
        None => n.text.clone(),
    };
    let notes = approval_notes(&n, lang);
    view! {
        <tr data-testid="need-row" data-kind=n.kind.to_string()>
            <td><span class=format!("badge need-{}", n.kind)>{kind_label(n.kind, lang)}</span></td>
            <td class="title"><a href=n.href.clone() data-testid="need-link">{n.plan_title.clone()}</a></td>
            <td class="need-text">{what}" "{notes}<a href=n.href.clone()>{action(n.kind, lang)}</a></td>
            <td><time>{short_time(&n.since)}</time></td>
        </tr>
    }
}

/// One need as a line of the first screen's short list: what waits, on
/// which plan, and a link named for the action.
pub(super) fn need_item(n: Need, lang: Lang) -> impl IntoView {
    let what = match n.subtask {
        Some(s) => format!("#{} {}", s.0, n.text),
        None => n.text.clone(),
    };
    view! {
        <li data-testid="home-need" data-kind=n.kind.to_string()>
            <span class=format!("badge need-{}", n.kind)>{kind_label(n.kind, lang)}</span>
            " "<strong>{n.plan_title.clone()}</strong>" "
            {(what != n.plan_title).then(|| view! { <span class="need-text">{what}</span>" " })}
            <a href=n.href.clone() data-testid="home-need-link">{action(n.kind, lang)}</a>
            " "<time>{short_time(&n.since)}</time>
        </li>
    }
}

#[component]
pub fn InboxPage() -> impl IntoView {
    let lang = use_lang();
    let needs = crate::codec::load(|| (), |_| load_needs());
    view! {
        <section class="inbox-page">
            <h1>{lang.pick("Needs you", "待处理")}</h1>
            <p class="hint">{lang.pick(
                "Plans waiting for approval, questions from the agent, tool calls it asks to make and paused runs, across every plan: approvals first, then what has waited longest.",
                "所有计划中等待人处理的事项：待批准的计划、智能体的问题、请求执行的工具调用和暂停的运行；批准在前，其余按等待时间排序。",
            )}</p>
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || needs.get().map(|r| match r {
                    Ok(list) if list.is_empty() => view! { <p class="empty" data-testid="needs-empty">{lang.pick("Nothing waits for you.", "没有等待你处理的事项。")}</p> }.into_any(),
                    Ok(list) => {
                        let lines = list.into_iter().map(|n| row(n, lang)).collect_view();
                        view! {
                            <table class="plans needs">
                                {table_head(lang, &COLUMNS)}
                                <tbody>{lines}</tbody>
                            </table>
                        }.into_any()
                    }
                    Err(e) => view! { <p class="error" role="alert">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}

/// The top bar's count of what waits for a person: loaded again whenever
/// any plan changes (approvals, questions and pauses all change a plan),
/// and every 15 s for guarded tool calls, which change only a run's log.
#[island]
pub fn NeedsCount() -> impl IntoView {
    let count = crate::codec::load(|| (), |_| needs_count());
    let live = use_live("/api/stream".into());
    Effect::new(move |first: Option<()>| {
        live.heard.track();
        if first.is_some() {
            count.refetch();
        }
    });
    #[cfg(feature = "hydrate")]
    {
        let handle =
            set_interval_with_handle(move || count.refetch(), std::time::Duration::from_secs(15));
        on_cleanup(move || {
            if let Ok(handle) = handle {
                handle.clear();
            }
        });
    }
    view! {
        <Transition fallback=|| ()>
            {move || count.get().and_then(Result::ok).map(|n| view! {
                <span class="needs-count" class:none=n == 0 data-testid="needs-count">{n}</span>
            })}
        </Transition>
    }
}
