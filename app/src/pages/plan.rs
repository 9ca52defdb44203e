//! A plan's page (`/plans/{id}`): the live board, then the team's
//! reviews and "save as template", all server-rendered around the board's
//! island.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::board::View;
use crate::i18n::use_lang;

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
            <crate::board::BoardIsland id view/>
            <super::reviews::ReviewSection id/>
            <super::templates::SaveTemplate id/>
        }
        .into_any(),
        None => crate::board::not_found(lang).into_any(),
    }
}
