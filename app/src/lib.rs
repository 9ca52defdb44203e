//! planboard's user interface: Leptos pages rendered on the server and
//! hydrated in the browser. The same crate is the wasm package (`hydrate`
//! feature) and the server-side renderer (`ssr` feature).
//!
//! The plan engine is pure, so it runs in the browser too: the board folds
//! the plan's events with the same `Plan::fold` the server uses, lays out
//! the graph with the engine's layout and replays history with its replay.
//!
//! # Layout
//! - [`shell`] and [`App`]: the HTML document, the top bar and the router;
//! - [`api`]: the types, the server's [`api::BoardBackend`] and the server functions;
//! - [`live`]: SSE streams through leptos-use;
//! - [`pages`]: plans list, history, new plan;
//! - [`board`]: the plan board and its views.

// The board's view types nest deeply in release builds (without
// `erase_components`).
#![recursion_limit = "256"]

pub mod api;
pub mod board;
pub mod live;
pub mod pages;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::path;

use board::BoardPage;
use pages::{history::HistoryPage, new_plan::NewPlanPage, plans::PlansPage};

/// The HTML document around the app; the server renders it for every page.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
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
    let viewer = Resource::new(|| (), |_| api::whoami());
    view! {
        <Stylesheet id="leptos" href="/pkg/planboard.css"/>
        <Title text="planboard"/>
        <Router>
            <header class="topbar">
                <a class="brand" href="/">"planboard"</a>
                <nav class="main-nav" aria-label="Main">
                    <a href="/">"Plans"</a>
                    <a href="/history">"History"</a>
                    <a href="/plans/new">"New plan"</a>
                </nav>
                <Transition fallback=|| ()>
                    {move || viewer.get().and_then(Result::ok).map(|v| view! {
                        <span class="viewer" data-testid="viewer">
                            {v.name}{(!v.can_edit).then_some(" (viewer)")}
                        </span>
                    })}
                </Transition>
            </header>
            <main>
                <Routes fallback=|| view! { <p class="not-found">"Page not found."</p> }>
                    <Route path=path!("/") view=PlansPage/>
                    <Route path=path!("/history") view=HistoryPage/>
                    <Route path=path!("/plans/new") view=NewPlanPage/>
                    <Route path=path!("/plans/:id") view=BoardPage/>
                </Routes>
            </main>
        </Router>
    }
}

/// The wasm entry point: attaches the app to the server-rendered HTML.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
