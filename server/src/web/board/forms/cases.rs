//! The Cases page's forms (run the suite, cancel one, edit, retire or
//! delete a case) and the check rows the review form's "Keep as a
//! regression case" shares with them; each through the service its API
//! route calls, then back to the page.

use app::api::BoardError;
use run_model::{CasePatch, Check, NewSuiteRun, SuiteBudget, SuiteTools};

use super::shared::{form_amount, form_answer, form_number, BoardState};
use crate::web::board::api_error;

/// The fields of a posted form, in the order posted (check rows carry
/// their number in their names, which no field list can name).
type Fields = Vec<(String, String)>;

fn field(fields: &Fields, name: &str) -> String {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default()
}

/// `42`, `1,234.5`, `42 ± 0.5` or `42 +- 0.5`: a number and its tolerance.
fn number_and_tolerance(text: &str) -> Option<(f64, f64)> {
    let text = text.replace([',', ' '], "");
    let (number, tolerance) = match text.split_once('±').or_else(|| text.split_once("+-")) {
        Some((n, t)) => (n.to_string(), t.to_string()),
        None => (text.clone(), "0".to_string()),
    };
    let number = number.parse::<f64>().ok().filter(|n| n.is_finite())?;
    let tolerance = tolerance
        .parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t >= 0.0)?;
    Some((number, tolerance))
}

/// The checks a form's rows write: row `n` is `check-kind-n` (a check's
/// kind, or empty for none), `check-text-n` (the text, or the number with
/// an optional `± tolerance`), `check-path-n` (a file's path) and
/// `check-step-n` (a subtask of the case's plan). Checked further when
/// the case is kept (`run_model::case::checked_checks`).
pub fn checks_from(fields: &Fields, lang: plan_engine::Lang) -> Result<Vec<Check>, BoardError> {
    let mut rows: Vec<u32> = fields
        .iter()
        .filter_map(|(k, _)| k.strip_prefix("check-kind-")?.parse().ok())
        .collect();
    rows.sort_unstable();
    rows.dedup();
    let mut checks = Vec::new();
    for n in rows {
        let kind = field(fields, &format!("check-kind-{n}"));
        let text = field(fields, &format!("check-text-{n}"));
        let path = field(fields, &format!("check-path-{n}"));
        let step = field(fields, &format!("check-step-{n}"));
        let refuse = |en: &str, zh: &str| {
            BoardError::Refused(lang.pick(format!("check {n}: {en}"), format!("检查 {n}：{zh}")))
        };
        let subtask = || {
            step.parse::<u32>()
                .map_err(|_| refuse("choose the step of the plan", "请选择计划中的步骤"))
        };
        let check = match kind.as_str() {
            "" => continue,
            "answer_text" => Check::AnswerText { text },
            "answer_number" => {
                let (number, tolerance) = number_and_tolerance(&text).ok_or_else(|| {
                    refuse(
                        "give a number, with ± and a tolerance if the answer may differ",
                        "请给出一个数字（可用 ± 加上允许的误差）",
                    )
                })?;
                Check::AnswerNumber { number, tolerance }
            }
            "file_exists" => Check::FileExists { path },
            "file_text" => Check::FileText { path, text },
            "step_done" => Check::StepDone {
                subtask: subtask()?,
                name: String::new(),
            },
            "step_not_done" => Check::StepNotDone {
                subtask: subtask()?,
                name: String::new(),
            },
            _ => return Err(refuse("choose what to check", "请选择检查内容")),
        };
        checks.push(check);
    }
    Ok(checks)
}

/// Tags as a form writes them: separated by commas or spaces.
pub fn tags_from(text: &str) -> Vec<String> {
    text.split([',', ' '])
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// `POST /cases/run`: the Cases page's "Run the suite".
pub async fn run_suite(
    axum::extract::State(board): BoardState,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
    axum::Form(fields): axum::Form<Fields>,
) -> axum::response::Response {
    let lang = app::i18n::from_headers(&headers);
    let result = async {
        viewer.may_change(("cases", "回归用例"), lang)?;
        let unmatched = match field(&fields, "unmatched").as_str() {
            "live" => SuiteTools::Live,
            _ => SuiteTools::Replay,
        };
        let calls = form_number(
            &field(&fields, "max_llm_calls"),
            0,
            0..=1_000_000,
            lang.pick("most model calls", "最多模型调用次数"),
            lang,
        )?;
        let cost = form_amount(
            &field(&fields, "max_cost"),
            0.000_001..=1_000_000.0,
            lang.pick("most cost", "最多费用"),
            lang,
        )?;
        let nonempty = |name: &str| Some(field(&fields, name)).filter(|v| !v.is_empty());
        let new = NewSuiteRun {
            tag: nonempty("tag"),
            model: nonempty("model"),
            unmatched,
            budget: SuiteBudget {
                max_cost: cost.and_then(run_model::Usd::from_dollars),
                max_llm_calls: (calls > 0).then_some(calls as u32),
            },
        };
        board
            .cases
            .start_suite(new, &viewer.name, None)
            .await
            .map_err(api_error)
    }
    .await;
    form_answer(result.map(|run| format!("/cases/runs/{}", run.id)), lang)
}

/// `POST /cases/runs/{id}/cancel`: a suite run's Cancel button.
pub async fn cancel_suite(
    axum::extract::State(board): BoardState,
    axum::extract::Path(id): axum::extract::Path<String>,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    let lang = app::i18n::from_headers(&headers);
    let result = async {
        viewer.may_change(("cases", "回归用例"), lang)?;
        let id: run_model::SuiteRunId = id
            .parse()
            .map_err(|_| BoardError::NotFound(format!("'{id}' is not a suite run id")))?;
        board
            .cases
            .cancel(id, &viewer.name)
            .await
            .map_err(api_error)
    }
    .await;
    form_answer(result.map(|run| format!("/cases/runs/{}", run.id)), lang)
}

/// What a button or form on a case does: the `{action}` of its path.
enum CaseAction {
    Edit,
    Retire,
    Delete,
}

/// `POST /cases/{id}/edit`, `/retire` and `/delete`: a case's forms on
/// the Cases page (the edit form's name, tags and check rows; `retired`
/// `1` or `0`).
pub async fn change(
    axum::extract::State(board): BoardState,
    axum::extract::Path((id, action)): axum::extract::Path<(String, String)>,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
    axum::Form(fields): axum::Form<Fields>,
) -> axum::response::Response {
    let lang = app::i18n::from_headers(&headers);
    let result = async {
        viewer.may_change(("cases", "回归用例"), lang)?;
        let id: run_model::CaseId = id
            .parse()
            .map_err(|_| BoardError::NotFound(format!("'{id}' is not a case id")))?;
        let action = match action.as_str() {
            "edit" => CaseAction::Edit,
            "retire" => CaseAction::Retire,
            "delete" => CaseAction::Delete,
            other => return Err(BoardError::NotFound(format!("no case action '{other}'"))),
        };
        match action {
            CaseAction::Edit => {
                let patch = CasePatch {
                    name: Some(field(&fields, "name")),
                    tags: Some(tags_from(&field(&fields, "tags"))),
                    checks: Some(checks_from(&fields, lang)?),
                    retired: None,
                };
                board.cases.edit(id, patch).await.map_err(api_error)?;
                Ok(format!("/cases#case-{id}"))
            }
            CaseAction::Retire => {
                let patch = CasePatch {
                    retired: Some(field(&fields, "retired") != "0"),
                    ..CasePatch::default()
                };
                board.cases.edit(id, patch).await.map_err(api_error)?;
                Ok(format!("/cases#case-{id}"))
            }
            CaseAction::Delete => {
                board.cases.delete(id).await.map_err(api_error)?;
                Ok("/cases".to_string())
            }
        }
    }
    .await;
    form_answer(result, lang)
}

/// Reads a form's fields (a posted body's pairs) for the tests.
#[cfg(test)]
fn fields_of(body: &str) -> Fields {
    serde_urlencoded::from_str(body).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_rows_read_as_checks_and_an_empty_row_is_none() {
        let fields = fields_of(
            "check-kind-1=answer_number&check-text-1=1%2C234.5+%C2%B1+0.5\
             &check-kind-2=&check-text-2=ignored\
             &check-kind-3=file_text&check-path-3=out%2Fr.md&check-text-3=total\
             &check-kind-4=step_not_done&check-step-4=2",
        );
        let checks = checks_from(&fields, plan_engine::Lang::En).unwrap();
        assert_eq!(
            checks,
            vec![
                Check::AnswerNumber {
                    number: 1234.5,
                    tolerance: 0.5
                },
                Check::FileText {
                    path: "out/r.md".into(),
                    text: "total".into()
                },
                Check::StepNotDone {
                    subtask: 2,
                    name: String::new()
                },
            ]
        );
        let bad = fields_of("check-kind-1=answer_number&check-text-1=many");
        let e = checks_from(&bad, plan_engine::Lang::En).unwrap_err();
        assert!(e.to_string().starts_with("check 1:"), "{e}");
        let no_step = fields_of("check-kind-1=step_done");
        assert!(checks_from(&no_step, plan_engine::Lang::Zh).is_err());
        assert_eq!(
            tags_from(" weekly, csv  sales "),
            ["weekly", "csv", "sales"]
        );
    }
}
