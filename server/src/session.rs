//! Signing in to the board in token mode: a form that takes a token once
//! and keeps it in an HttpOnly, SameSite=Strict cookie; signing out clears
//! it. In local mode there is nothing to sign in to.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use crate::auth::{same_origin, SESSION_COOKIE};
use crate::config::Access;

#[derive(Deserialize)]
pub struct SignIn {
    token: String,
}

fn page(message: Option<&str>) -> Html<String> {
    let message = message
        .map(|m| format!(r#"<p class="error" role="alert">{}</p>"#, escape(m)))
        .unwrap_or_default();
    Html(format!(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>Sign in · planboard</title>
<link rel="stylesheet" href="/pkg/planboard.css"></head><body>
<main class="sign-in"><h1>planboard</h1>
<form method="post" action="/login">
<label class="field">Access token<input type="password" name="token" autocomplete="current-password" required autofocus></label>
{message}<button type="submit" class="primary">Sign in</button></form>
<p class="hint">Ask the server's administrator for a token (PLANBOARD_TOKENS).</p></main></body></html>"#
    ))
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub async fn form() -> Html<String> {
    page(None)
}

pub async fn sign_in(
    State(access): State<Arc<Access>>,
    headers: HeaderMap,
    Form(input): Form<SignIn>,
) -> Response {
    let Access::Tokens(tokens) = access.as_ref() else {
        return Redirect::to("/").into_response();
    };
    if !same_origin(&headers) {
        return (
            StatusCode::FORBIDDEN,
            page(Some("Sign in from planboard's own page.")),
        )
            .into_response();
    }
    let token = input.token.trim();
    if !tokens.contains_key(token) {
        return (
            StatusCode::UNAUTHORIZED,
            page(Some("That token is not valid.")),
        )
            .into_response();
    }
    let cookie = format!("{SESSION_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
    ([(header::SET_COOKIE, cookie)], Redirect::to("/")).into_response()
}

pub async fn sign_out() -> Response {
    let cookie = format!("{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    ([(header::SET_COOKIE, cookie)], Redirect::to("/login")).into_response()
}
