//! A plan's page (`/plans/{id}`): "Let the agent work this plan" where
//! it applies, the live board, then the team's reviews and "save as
//! template", all server-rendered around the board's island.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::board::View;
use crate::i18n::use_lang;

/// "Let the agent work this plan" on a plan no agent run works and that
/// has not finished (made by hand, imported, or by another agent): a
/// plain form; the agent takes the plan as it is. It sits above the board,
/// at the plan's header, where a person looks first.
#[component]
fn AgentWork(id: plan_engine::PlanId) -> impl IntoView {
    let lang = use_lang();
    let panel = crate::codec::load(move || id, crate::api::load_reviews);
    view! {
        <Transition fallback=|| ()>
            {move || panel.get().and_then(Result::ok).filter(|p| !p.finished && p.run.is_none() && p.can_review).map(|_| view! {
                <form class="agent-work" method="post" action=format!("/plans/{id}/agent") data-testid="agent-work">
                    <button type="submit" class="primary" data-testid="agent-work-start">{lang.pick("Let the agent work this plan", "让智能体执行这个计划")}</button>
                    <span class="hint">{lang.pick(
                        "planboard's agent can work this plan as it is: no new plan, the plan's own approval, then the usual steering, retries and memory.",
                        "planboard 的智能体可以按原样执行这个计划：不重新规划，沿用计划自身的审批，然后照常可以干预、重试并记忆。",
                    )}</span>
                </form>
            })}
        </Transition>
    }
}

/// The page around the board, rendered on the server: it reads the address
/// and hands the plan's id and view to the island.
#[component]
pub fn BoardPage() -> impl IntoView {
    let lang = use_lang();
    let id = use_params_map()
        .read_untracked()
        .get("id")
        .and_then(|s| uuid::Uuid::parse_str(&s).ok());
    let view = View::parse(use_query_map().read_untracked().get_str("view"));
    match id {
        Some(id) => view! {
            <AgentWork id/>
            <crate::board::BoardIsland id view/>
            <super::reviews::ReviewSection id/>
            <super::templates::SaveTemplate id/>
        }
        .into_any(),
        None => crate::board::not_found(lang).into_any(),
    }
}
