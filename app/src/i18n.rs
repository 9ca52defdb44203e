//! The UI's language, English or Chinese. The person picks it with the
//! switch in the top bar (a cookie); until then the browser's
//! Accept-Language decides. Plans keep their own language: titles, names
//! and comments are shown as written, only the board's own words change.
//!
//! The server reads the request; the browser reads the `lang` the server
//! wrote on `<html>`, so hydration renders the same words it received.

use leptos::prelude::*;
pub use plan_engine::Lang;

/// Holds `en` or `zh`; set by the server's `/lang/{code}` route.
pub const LANG_COOKIE: &str = "planboard_lang";

/// The language of the page being rendered. An island hydrating in the
/// browser has no context from the page around it, so it reads `<html lang>`.
pub fn use_lang() -> Lang {
    use_context::<Lang>().unwrap_or_else(detect)
}

/// The language this request or page asks for.
pub fn detect() -> Lang {
    #[cfg(feature = "ssr")]
    {
        use_context::<axum::http::request::Parts>()
            .map(|parts| from_headers(&parts.headers))
            .unwrap_or_default()
    }
    #[cfg(not(feature = "ssr"))]
    {
        document()
            .document_element()
            .and_then(|html| html.get_attribute("lang"))
            .and_then(|code| Lang::parse(&code))
            .unwrap_or_default()
    }
}

/// The language a request asks for: its cookie, else its Accept-Language.
#[cfg(feature = "ssr")]
pub fn from_headers(headers: &axum::http::HeaderMap) -> Lang {
    use axum::http::header;
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    choose(text(header::COOKIE), text(header::ACCEPT_LANGUAGE))
}

/// The cookie's choice, else the best-weighted English or Chinese entry of
/// Accept-Language, else English.
pub fn choose(cookie: Option<&str>, accept_language: Option<&str>) -> Lang {
    let picked = cookie.and_then(|c| {
        c.split(';')
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == LANG_COOKIE)
            .and_then(|(_, value)| Lang::parse(value))
    });
    picked
        .or_else(|| accept_language.and_then(from_accept_language))
        .unwrap_or_default()
}

fn from_accept_language(header: &str) -> Option<Lang> {
    let mut best: Option<(f32, Lang)> = None;
    for entry in header.split(',') {
        let mut parts = entry.split(';');
        let tag = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.parse::<f32>().ok())
            .unwrap_or(1.0);
        let lang = match tag.split('-').next() {
            Some("zh") => Lang::Zh,
            Some("en") => Lang::En,
            _ => continue,
        };
        if best.is_none_or(|(b, _)| q > b) {
            best = Some((q, lang));
        }
    }
    best.map(|(_, lang)| lang)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_wins_over_the_browser_language() {
        let lang = choose(Some("a=b; planboard_lang=en"), Some("zh-CN,zh;q=0.9"));
        assert_eq!(lang, Lang::En);
    }

    #[test]
    fn without_a_cookie_the_best_weighted_known_language_is_used() {
        assert_eq!(choose(None, Some("zh-CN,zh;q=0.9,en;q=0.8")), Lang::Zh);
        assert_eq!(choose(None, Some("fr;q=1, en;q=0.5, zh;q=0.7")), Lang::Zh);
        assert_eq!(
            choose(Some("planboard_lang=xx"), Some("de, en-GB;q=0.3")),
            Lang::En
        );
        assert_eq!(choose(None, Some("de, fr")), Lang::En);
        assert_eq!(choose(None, None), Lang::En);
    }
}
