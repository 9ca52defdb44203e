//! What the board's forms share: the plan a form is on and the person
//! posting it, the answer every form gives (a redirect, or the refusal in
//! the person's language with the one mapping's status), and the task
//! box's number fields.

use std::sync::Arc;

use app::api::BoardError;
use plan_engine::PlanId;

use crate::web::board::{to_board_error, Board};

/// What every plain form on a plan starts with: the plan its path names,
/// the person posting, who must be allowed to change plans, and their
/// language. A malformed id answers 404 and a viewer 403, each a page in
/// the person's language, before the form's body is read.
pub struct PlanForm {
    pub plan: PlanId,
    pub viewer: app::api::Viewer,
    pub lang: plan_engine::Lang,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for PlanForm {
    type Rejection = axum::response::Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        use axum::response::IntoResponse;
        let lang = app::i18n::from_headers(&parts.headers);
        let refuse = |e: BoardError| form_answer(Err(e), lang);
        let axum::extract::Path(id) =
            axum::extract::Path::<String>::from_request_parts(parts, state)
                .await
                .map_err(IntoResponse::into_response)?;
        let viewer = parts
            .extensions
            .get::<app::api::Viewer>()
            .cloned()
            .ok_or_else(|| refuse(BoardError::Forbidden("sign in first".into())))?;
        let plan = id
            .parse::<PlanId>()
            .map_err(|_| refuse(BoardError::NotFound(format!("'{id}' is not a plan id"))))?;
        viewer.may_change(("plans", "计划"), lang).map_err(refuse)?;
        Ok(PlanForm { plan, viewer, lang })
    }
}

/// The board itself, as every form's state.
pub type BoardState = axum::extract::State<Arc<Board>>;

/// What the board's plain forms on a plan share: the plan from the path,
/// the person's right to change it, one change through the service, then
/// back to the board, or a page in the person's language saying why not.
pub async fn change_from_form(
    board: &Board,
    on: &PlanForm,
    ops: Result<Vec<plan_engine::Op>, BoardError>,
) -> axum::response::Response {
    let result = match ops {
        Err(e) => Err(e),
        Ok(ops) => match board.plans.execute(on.plan, ops, &on.viewer.name).await {
            Ok(_) => Ok(on.plan),
            Err(e) => Err(to_board_error(e)),
        },
    };
    back_to_board(result, on.lang)
}

/// A plain form's answer: back to the plan's board, or a page in the
/// person's language saying why not.
pub fn back_to_board(
    result: Result<PlanId, BoardError>,
    lang: plan_engine::Lang,
) -> axum::response::Response {
    form_answer(result.map(|plan| format!("/plans/{plan}")), lang)
}

/// What every plain form of the board answers: a redirect to the page to
/// show next, or the refusal in the reader's language with its status.
pub fn form_answer(
    result: Result<String, BoardError>,
    lang: app::i18n::Lang,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    match result {
        Ok(next) => axum::response::Redirect::to(&next).into_response(),
        Err(e) => {
            let status = e.status();
            (status, app::words::explain(&e, lang)).into_response()
        }
    }
}

/// A number field of the task box: empty gives `default`; anything else
/// must be a whole number in `range`, or the refusal names the field.
pub fn form_number(
    text: &str,
    default: u64,
    range: std::ops::RangeInclusive<u64>,
    field: &str,
    lang: plan_engine::Lang,
) -> Result<u64, BoardError> {
    let text = text.trim().replace([',', '_', ' '], "");
    if text.is_empty() {
        return Ok(default);
    }
    match text.parse::<u64>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(BoardError::Refused(lang.pick(
            format!(
                "'{field}' must be a whole number from {} to {}, not '{text}'",
                range.start(),
                range.end()
            ),
            format!(
                "“{field}”必须是 {} 到 {} 之间的整数，而不是“{text}”",
                range.start(),
                range.end()
            ),
        ))),
    }
}

/// A number of the task box with a fraction (dollars, seconds): empty
/// gives `None`; anything else must be a number in `range`, or the
/// refusal names the field.
pub fn form_amount(
    text: &str,
    range: std::ops::RangeInclusive<f64>,
    field: &str,
    lang: plan_engine::Lang,
) -> Result<Option<f64>, BoardError> {
    let text = text
        .trim()
        .trim_start_matches('$')
        .replace([',', '_', ' '], "");
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<f64>() {
        Ok(n) if n.is_finite() && range.contains(&n) => Ok(Some(n)),
        _ => Err(BoardError::Refused(lang.pick(
            format!(
                "'{field}' must be a number from {} to {}, not '{text}'",
                range.start(),
                range.end()
            ),
            format!(
                "“{field}”必须是 {} 到 {} 之间的数，而不是“{text}”",
                range.start(),
                range.end()
            ),
        ))),
    }
}
