//! Templates: "Save as template" on a plan's board (operators) and the
//! Templates page's Delete (admins), through the service the API's
//! template routes call.

use app::api::BoardError;
use serde::Deserialize;

use super::shared::{form_answer, BoardState, PlanForm};
use crate::web::board::api_error;

/// The board's "Save as template" form.
#[derive(Deserialize)]
pub struct TemplateForm {
    #[serde(default)]
    name: String,
}

/// `POST /plans/{id}/template`: saves the plan as a template and opens
/// the Templates page; the same service as the API's.
pub async fn save(
    axum::extract::State(board): BoardState,
    on: PlanForm,
    axum::Form(form): axum::Form<TemplateForm>,
) -> axum::response::Response {
    let PlanForm { plan, viewer, lang } = on;
    let result = async {
        board
            .templates
            .save(plan, &form.name, &viewer.name)
            .await
            .map_err(api_error)?;
        Ok("/templates".to_string())
    }
    .await;
    form_answer(result, lang)
}

/// `POST /templates/{id}/delete`: the Templates page's Delete, for
/// admins only, as `DELETE /api/templates/{id}`.
pub async fn delete(
    axum::extract::State(board): BoardState,
    axum::extract::Path(id): axum::extract::Path<String>,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    let lang = app::i18n::from_headers(&headers);
    let result = async {
        let id: run_model::TemplateId = id
            .parse()
            .map_err(|_| BoardError::NotFound(format!("'{id}' is not a template id")))?;
        viewer.may_manage(("templates", "模板"), lang)?;
        board.templates.delete(id).await.map_err(api_error)?;
        Ok("/templates".to_string())
    }
    .await;
    form_answer(result, lang)
}
