//! planboard's user interface: Leptos pages rendered on the server and
//! hydrated in the browser. The same crate is the wasm package (`hydrate`
//! feature) and the server-side renderer (`ssr` feature).
//!
//! The plan engine is pure, so it runs in the browser too: the board folds
//! the plan's events with the same `Plan::fold` the server uses, lays out
//! the graph with the engine's layout and replays history with its replay.
//!
//! Leptos islands: the pages, top bar and router render on the server only;
//! the interactive parts — the board, the live plans table and the new-plan
//! form — are `#[island]`s, the only code the wasm holds. Links between
//! pages are plain page loads. (Hydrating the whole app put the router and
//! every static view in the wasm: 442 KB gzipped instead of 371 KB.)
//!
//! # Layout
//! - [`shell`] and [`App`]: the HTML document, the top bar and the router;
//! - [`api`]: the types, the server's [`api::BoardBackend`] and the server functions;
//! - [`live`]: SSE streams through leptos-use;
//! - [`codec`]: the one JSON reader the wasm uses, and resources built on it;
//! - [`i18n`]: the UI's language (English or Chinese) and its switch;
//! - [`pages`]: plans list, history, review queue, memory, new plan;
//! - [`board`]: the plan board and its views.

// The board's view types nest deeply in release builds (without
// `erase_components`).
#![recursion_limit = "256"]

pub mod api;
pub mod board;
pub mod codec;
pub mod i18n;
pub mod live;
pub mod pages;
pub mod words;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::hooks::use_location;
use leptos_router::path;

use i18n::{use_lang, Lang};
use pages::plan::BoardPage;
use pages::{
    activity::ActivityPage, approvals::ApprovalInsightsPage, approvals::ApprovalsPage,
    compare::ComparePage, history::HistoryPage, inbox::InboxPage, memories::MemoriesPage,
    new_plan::NewPage, plans::PlansPage, reviews::ReviewsPage, settings::SettingsPage,
    templates::TemplatesPage, tools::ToolsPage,
};

/// The HTML document around the app; the server renders it for every page.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    let lang = i18n::detect();
    view! {
        <!DOCTYPE html>
        <html lang=lang.code()>
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options islands=true/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    provide_context(i18n::detect());
    let lang = use_lang();
    view! {
        <Stylesheet id="leptos" href="/pkg/planboard.css"/>
        <Title text="planboard"/>
        <Router>
            <TopBar/>
            <main>
                <Routes fallback=move || view! { <p class="not-found">{lang.pick("Page not found.", "页面不存在。")}</p> }>
                    <Route path=path!("/") view=PlansPage/>
                    <Route path=path!("/history") view=HistoryPage/>
                    <Route path=path!("/approvals") view=ApprovalsPage/>
                    <Route path=path!("/approvals/insights") view=ApprovalInsightsPage/>
                    <Route path=path!("/reviews") view=ReviewsPage/>
                    <Route path=path!("/memories") view=MemoriesPage/>
                    <Route path=path!("/templates") view=TemplatesPage/>
                    <Route path=path!("/inbox") view=InboxPage/>
                    <Route path=path!("/settings") view=SettingsPage/>
                    <Route path=path!("/tools") view=ToolsPage/>
                    <Route path=path!("/plans/new") view=NewPage/>
                    <Route path=path!("/plans/:id") view=BoardPage/>
                    <Route path=path!("/plans/:id/activity") view=ActivityPage/>
                    <Route path=path!("/plans/:id/compare") view=ComparePage/>
                </Routes>
            </main>
        </Router>
    }
}

#[component]
fn TopBar() -> impl IntoView {
    let lang = use_lang();
    let viewer = codec::load(|| (), |_| api::whoami());
    let location = use_location();
    // The switch is a plain link: the server sets the cookie and sends the
    // person back to the page they were on, rendered in the other language.
    let other = lang.pick(Lang::Zh, Lang::En);
    let switch_href = move || {
        let search = location.search.get();
        let here = if search.is_empty() {
            location.pathname.get()
        } else {
            format!("{}?{search}", location.pathname.get())
        };
        format!("/lang/{}?back={}", other.code(), words::urlencode(&here))
    };
    view! {
        <header class="topbar">
            <a class="brand" href="/">"planboard"</a>
            <nav class="main-nav" aria-label=lang.pick("Main", "主导航")>
                <a href="/">{lang.pick("Plans", "计划")}</a>
                <a href="/history">{lang.pick("History", "历史")}</a>
                <a href="/reviews" class="needs-you" data-testid="nav-reviews">
                    {lang.pick("To review", "待评审")}" "<pages::reviews::ReviewCount/>
                </a>
                <a href="/memories">{lang.pick("Memory", "记忆")}</a>
                <a href="/templates" data-testid="nav-templates">{lang.pick("Templates", "模板")}</a>
                <a href="/inbox" class="needs-you" data-testid="nav-inbox">
                    {lang.pick("Needs you", "待处理")}" "<pages::inbox::NeedsCount/>
                </a>
                <a href="/plans/new">{lang.pick("New plan", "新建计划")}</a>
                <a href="/tools" data-testid="nav-tools">{lang.pick("Tools", "工具")}</a>
                <a href="/settings" data-testid="nav-settings">{lang.pick("Settings", "设置")}</a>
            </nav>
            <a
                class="lang-switch"
                href=switch_href
                // A full page load: the server sets the cookie and renders
                // the page in the other language (the router would try to
                // route `/lang/…` itself).
                rel="external"
                lang=other.code()
                hreflang=other.code()
                aria-label=lang.pick("中文界面 (Chinese)", "English interface (英文)")
                data-testid="lang-switch"
            >
                {lang.pick("中文", "English")}
            </a>
            <Transition fallback=|| ()>
                {move || viewer.get().and_then(Result::ok).map(|v| view! {
                    <span class="viewer" data-testid="viewer">
                        {v.name}{(!v.can_edit).then_some(lang.pick(" (viewer)", "（只读）"))}
                    </span>
                })}
            </Transition>
        </header>
    }
}

/// The wasm entry point, called before the islands on the page hydrate.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_islands();
}
