//! The Memory page's forms: pin, forget and edit a memory, write a
//! standing rule; each through the service its API route calls, then
//! back to the page (with its search).

use app::api::BoardError;
use serde::Deserialize;

use super::shared::{form_answer, BoardState};
use crate::web::board::api_error;

/// The Memory page's buttons, as posted.
#[derive(Deserialize)]
pub struct MemoryForm {
    /// `true` or `false` (the pin button).
    #[serde(default)]
    pinned: String,
    /// The new text (the edit form).
    #[serde(default)]
    text: String,
    /// The page to go back to (the Memory page with its search).
    #[serde(default)]
    back: String,
}

/// What a button on a memory does: the `{action}` of its path.
enum MemoryAction {
    Pin,
    Forget,
    Edit,
}

impl MemoryAction {
    fn parse(action: &str) -> Result<MemoryAction, BoardError> {
        match action {
            "pin" => Ok(MemoryAction::Pin),
            "forget" => Ok(MemoryAction::Forget),
            "edit" => Ok(MemoryAction::Edit),
            other => Err(BoardError::NotFound(format!("no memory action '{other}'"))),
        }
    }
}

/// `POST /memories/{id}/pin`, `/forget` and `/edit`: the Memory page's
/// buttons, through the same service as the API's; back to the page, or
/// a page in the person's language saying why not.
pub async fn change(
    axum::extract::State(board): BoardState,
    axum::extract::Path((id, action)): axum::extract::Path<(String, String)>,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<MemoryForm>,
) -> axum::response::Response {
    let lang = app::i18n::from_headers(&headers);
    let result = async {
        viewer.may_change(("memories", "记忆"), lang)?;
        let id: run_model::MemoryId = id
            .parse()
            .map_err(|_| BoardError::NotFound(format!("'{id}' is not a memory id")))?;
        match MemoryAction::parse(&action)? {
            MemoryAction::Pin => board
                .memories
                .pin(id, form.pinned == "true")
                .await
                .map(|_| ())
                .map_err(api_error),
            MemoryAction::Forget => board.memories.forget(id).await.map_err(api_error),
            MemoryAction::Edit => board
                .memories
                .edit(id, &form.text)
                .await
                .map(|_| ())
                .map_err(api_error),
        }
    }
    .await;
    form_answer(result.map(|()| back_to_memories(&form.back)), lang)
}

/// The Memory page's "Write a standing rule" form, as posted.
#[derive(Deserialize)]
pub struct RuleForm {
    #[serde(default)]
    text: String,
    #[serde(default)]
    applies_to: String,
    #[serde(default)]
    back: String,
}

/// `POST /memories/rule`: a standing rule written on the Memory page,
/// through the same service as `POST /api/memories`; back to the page,
/// or a page in the person's language saying why not.
pub async fn rule(
    axum::extract::State(board): BoardState,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<RuleForm>,
) -> axum::response::Response {
    let lang = app::i18n::from_headers(&headers);
    let result = async {
        viewer.may_change(("memories", "记忆"), lang)?;
        board
            .memories
            .write_rule(&form.text, &form.applies_to)
            .await
            .map(|_| ())
            .map_err(api_error)
    }
    .await;
    form_answer(result.map(|()| back_to_memories(&form.back)), lang)
}

/// Where a Memory page form goes back to: the page with its search, as
/// the form says, but only ever the Memory page (the field is the
/// client's, and a redirect must not leave the board).
fn back_to_memories(back: &str) -> String {
    if (back == "/memories" || back.starts_with("/memories?")) && !back.contains("//") {
        back.to_string()
    } else {
        "/memories".to_string()
    }
}

#[cfg(test)]
mod tests {
    /// A Memory page form goes back to the page with its search, and
    /// nowhere else, whatever its `back` field says.
    #[test]
    fn a_memory_form_goes_back_only_to_the_memory_page() {
        for (back, to) in [
            ("/memories?q=tests&page=2", "/memories?q=tests&page=2"),
            ("/memories", "/memories"),
            ("", "/memories"),
            ("https://elsewhere.example/", "/memories"),
            ("//elsewhere.example/memories", "/memories"),
            ("/memories?next=//elsewhere.example", "/memories"),
            ("/memoriesx", "/memories"),
            ("/plans", "/memories"),
        ] {
            assert_eq!(super::back_to_memories(back), to, "back = {back}");
        }
    }
}
