//! Signing in to the board in token mode: a form that takes a token once
//! and opens a session ([`crate::auth::Sessions`]) whose opaque id, never
//! the token, goes in an HttpOnly, SameSite=Strict cookie for 12 hours;
//! signing out closes the session, so the old cookie opens nothing.
//! Failed sign-ins are limited per client, counted with its wrong bearer
//! tokens (10 a minute; past that, a 429 for that client until its oldest
//! failure is a minute old: see [`crate::auth::FailureLimiter`]). In local
//! mode there is nothing to sign in to. Also the language switch, which
//! needs no sign-in: it only sets a cookie.

use std::sync::Arc;

use app::i18n::{self, Lang, LANG_COOKIE};
use axum::extract::{Path, Query, State};
use axum::http::{header, Extensions, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use cookie::{Cookie, SameSite};

use super::auth::{client, over_https, same_origin, session_id, SESSION_COOKIE};
use crate::auth::{seconds_to_wait, SESSION_TTL};
use crate::config::Access;

#[derive(Deserialize)]
pub struct SignIn {
    token: String,
}

fn page(lang: Lang, message: Option<&str>) -> Html<String> {
    let message = message
        .map(|m| format!(r#"<p class="error" role="alert">{}</p>"#, escape(m)))
        .unwrap_or_default();
    let code = lang.code();
    let title = lang.pick("Sign in", "登录");
    let label = lang.pick("Access token", "访问令牌");
    let hint = lang.pick(
        "Ask the server's administrator for a token (PLANBOARD_TOKENS).",
        "请向服务器管理员索取令牌（PLANBOARD_TOKENS）。",
    );
    let (other, other_name) = lang.pick((Lang::Zh, "中文"), (Lang::En, "English"));
    let other = other.code();
    Html(format!(
        r#"<!DOCTYPE html><html lang="{code}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>{title} · planboard</title>
<link rel="stylesheet" href="/pkg/planboard.css"></head><body>
<main class="sign-in"><h1>planboard</h1>
<form method="post" action="/login">
<label class="field">{label}<input type="password" name="token" autocomplete="current-password" required autofocus></label>
{message}<button type="submit" class="primary">{title}</button></form>
<p class="hint">{hint}</p>
<p><a class="lang-switch" href="/lang/{other}?back=/login" lang="{other}" hreflang="{other}">{other_name}</a></p></main></body></html>"#
    ))
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub async fn form(headers: HeaderMap) -> Html<String> {
    page(i18n::from_headers(&headers), None)
}

pub async fn sign_in(
    State(access): State<Arc<Access>>,
    extensions: Extensions,
    headers: HeaderMap,
    Form(input): Form<SignIn>,
) -> Response {
    let Access::Tokens(tokens) = access.as_ref() else {
        return Redirect::to("/").into_response();
    };
    let lang = i18n::from_headers(&headers);
    if !same_origin(&headers) {
        let why = lang.pick(
            "Sign in from planboard's own page.",
            "请从 planboard 自己的页面登录。",
        );
        return (StatusCode::FORBIDDEN, page(lang, Some(why))).into_response();
    }
    let who = client(tokens, &extensions, &headers);
    let found = tokens
        .failures
        .attempt(who, || tokens.get(input.token.trim()).cloned());
    let identity = match found {
        Ok(Some(identity)) => identity,
        Ok(None) => {
            let why = lang.pick("That token is not valid.", "这个令牌无效。");
            return (StatusCode::UNAUTHORIZED, page(lang, Some(why))).into_response();
        }
        Err(wait) => {
            let seconds = seconds_to_wait(wait);
            let why = lang.pick(
                format!("Too many failed sign-ins; try again in {seconds} seconds."),
                format!("登录失败次数过多，请 {seconds} 秒后再试。"),
            );
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, seconds.to_string())],
                page(lang, Some(why.as_str())),
            )
                .into_response();
        }
    };
    let cookie = session_cookie(tokens.sessions.open(identity), &headers);
    (
        [(header::SET_COOKIE, cookie.to_string())],
        Redirect::to("/"),
    )
        .into_response()
}

/// The session cookie: HttpOnly, SameSite=Strict, for the whole site, as
/// long as the session lasts, and Secure when the board is served over
/// HTTPS.
fn session_cookie(value: String, headers: &HeaderMap) -> Cookie<'static> {
    let ttl = cookie::time::Duration::seconds(SESSION_TTL.as_secs() as i64);
    Cookie::build((SESSION_COOKIE, value))
        .http_only(true)
        .same_site(SameSite::Strict)
        .path("/")
        .max_age(ttl)
        .secure(over_https(headers))
        .build()
}

/// Closes the cookie's session (server-side: a copy of the cookie kept
/// elsewhere opens nothing either) and clears the cookie.
pub async fn sign_out(State(access): State<Arc<Access>>, headers: HeaderMap) -> Response {
    if let (Access::Tokens(tokens), Some(id)) = (access.as_ref(), session_id(&headers)) {
        tokens.sessions.close(&id);
    }
    let mut cookie = session_cookie(String::new(), &headers);
    cookie.make_removal();
    (
        [(header::SET_COOKIE, cookie.to_string())],
        Redirect::to("/login"),
    )
        .into_response()
}

#[derive(Deserialize)]
pub struct Back {
    back: Option<String>,
}

/// `GET /lang/{en|zh}?back=/path`: remembers the UI language for a year
/// and returns to the page, which the server then renders in it. Only a
/// path on this site is followed back, so the link cannot send anyone away.
pub async fn switch_language(
    Path(code): Path<String>,
    Query(back): Query<Back>,
    headers: HeaderMap,
) -> Response {
    let Some(lang) = Lang::parse(&code) else {
        return (
            StatusCode::NOT_FOUND,
            "unknown language: use /lang/en or /lang/zh",
        )
            .into_response();
    };
    let back = back
        .back
        // Browsers drop tabs and newlines from a URL, so "/\t/x" would
        // become "//x": only visible ASCII (the switch sends it encoded).
        .filter(|b| b.bytes().all(|c| c.is_ascii_graphic()))
        .filter(|b| b.starts_with('/') && !b.starts_with("//") && !b.contains('\\'))
        .unwrap_or_else(|| "/".into());
    let cookie = Cookie::build((LANG_COOKIE, lang.code()))
        .path("/")
        .max_age(cookie::time::Duration::days(365))
        .same_site(SameSite::Lax)
        .secure(over_https(&headers))
        .build();
    (
        [(header::SET_COOKIE, cookie.to_string())],
        Redirect::to(&back),
    )
        .into_response()
}
