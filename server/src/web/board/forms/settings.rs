//! The settings page's webhook forms: add an endpoint, remove an added
//! one; admins only, through the checks and the service the API's
//! `/api/webhooks` routes use.

use app::api::BoardError;
use serde::Deserialize;

use super::shared::{form_answer, BoardState};
use crate::web::board::{api_error, board_error, Board};

/// The settings page's add form, as posted.
#[derive(Deserialize)]
pub struct EndpointForm {
    #[serde(default)]
    url: String,
    #[serde(default)]
    secret: String,
    #[serde(default)]
    format: String,
}

/// What a settings form asks for.
enum WebhookChange {
    Add(EndpointForm),
    Remove(String),
}

/// `POST /settings/webhooks`: adds an endpoint.
pub async fn add_webhook(
    axum::extract::State(board): BoardState,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<EndpointForm>,
) -> axum::response::Response {
    webhook_change(&board, &viewer, &headers, WebhookChange::Add(form)).await
}

/// `POST /settings/webhooks/{id}/remove`: removes an added endpoint.
pub async fn remove_webhook(
    axum::extract::State(board): BoardState,
    axum::extract::Path(id): axum::extract::Path<String>,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    webhook_change(&board, &viewer, &headers, WebhookChange::Remove(id)).await
}

/// Admins only, through the same checks as the API, then back to the
/// settings page, or a page in the person's language saying why not.
async fn webhook_change(
    board: &Board,
    viewer: &app::api::Viewer,
    headers: &axum::http::HeaderMap,
    change: WebhookChange,
) -> axum::response::Response {
    let lang = app::i18n::from_headers(headers);
    let result = async {
        viewer.may_manage(("webhooks", "Webhook"), lang)?;
        match change {
            WebhookChange::Remove(id) => {
                let id: uuid::Uuid = id
                    .parse()
                    .map_err(|_| BoardError::NotFound(format!("'{id}' is not an endpoint id")))?;
                board.webhooks.remove_endpoint(id).await.map_err(api_error)
            }
            WebhookChange::Add(form) => {
                let format = match form.format.as_str() {
                    "" | "json" => crate::web::api::webhooks::WebhookFormat::Json,
                    "slack" => crate::web::api::webhooks::WebhookFormat::Slack,
                    other => {
                        return Err(BoardError::Refused(format!("no shape is called {other}")))
                    }
                };
                let endpoint = crate::web::api::webhooks::NewEndpoint {
                    url: form.url,
                    secret: Some(form.secret).filter(|s| !s.trim().is_empty()),
                    format,
                }
                .check(&viewer.name)
                .map_err(board_error)?;
                board
                    .webhooks
                    .add_endpoint(&endpoint)
                    .await
                    .map_err(api_error)
            }
        }
    }
    .await;
    form_answer(result.map(|()| "/settings".to_string()), lang)
}
