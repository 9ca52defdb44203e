//! planboard's user interface: Leptos components and routes, rendered on the
//! server and hydrated in the browser. The same crate is the wasm package
//! (`hydrate` feature) and the server-side renderer (`ssr` feature).
//!
//! The plan engine is pure, so it runs in the browser too: the sample board
//! applies commands with the same `Plan::execute` the server uses.
//!
//! # Layout
//! - [`shell`] and [`App`]: the HTML document and the router.
//! - [`sample`]: a deterministic sample plan built with the engine.
//! - `components/`: the plan header, subtask list and controls.

pub mod components;
pub mod sample;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::path;

use components::sample_board::SampleBoard;

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
    view! {
        <Stylesheet id="leptos" href="/pkg/planboard.css"/>
        <Title text="planboard"/>
        <Router>
            <header class="topbar">
                <a class="brand" href="/">"planboard"</a>
                <span class="tagline">"plans for LLM agents, live"</span>
            </header>
            <main>
                <Routes fallback=|| view! { <p class="not-found">"Page not found."</p> }>
                    <Route path=path!("/") view=SampleBoard/>
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
