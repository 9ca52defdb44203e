//! The review panel under a finished plan's board: the viewer's review
//! (or taking it back, or keeping the run as a regression case with its
//! checks), "Run again from" and "Replay", each through the service its
//! API route calls.

use app::api::BoardError;
use serde::Deserialize;

use super::shared::{back_to_board, form_answer, BoardState, PlanForm};
use crate::web::board::{api_error, run_error};

/// The review form as posted: `verdict`, `note` and a `subtask-{n}` note
/// per subtask, or `remove` (the "Remove my review" button). The notes'
/// names carry their subtask's number, which no field list can name, so
/// the form is read from its pairs in the order posted; the first of a
/// repeated field counts, as before.
#[derive(Deserialize)]
#[serde(from = "Vec<(String, String)>")]
pub struct ReviewForm {
    remove: bool,
    verdict: String,
    note: String,
    subtasks: Vec<run_model::SubtaskNote>,
    /// "Keep as a regression case" was ticked: `case-name`, `case-tags`
    /// and the check rows are in `fields`.
    keep: bool,
    fields: Vec<(String, String)>,
}

impl From<Vec<(String, String)>> for ReviewForm {
    fn from(fields: Vec<(String, String)>) -> ReviewForm {
        let field = |name: &str| {
            fields
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        ReviewForm {
            remove: field("remove").is_some(),
            verdict: field("verdict").unwrap_or_default(),
            note: field("note").unwrap_or_default(),
            subtasks: fields
                .iter()
                .filter_map(|(k, v)| {
                    let n = k.strip_prefix("subtask-")?.parse::<u32>().ok()?;
                    Some(run_model::SubtaskNote {
                        subtask: n,
                        note: v.clone(),
                    })
                })
                .collect(),
            keep: field("case").is_some_and(|v| v == "1"),
            fields,
        }
    }
}

/// `POST /plans/{id}/review`: the viewer's review of a finished plan as
/// the board's form posts it, or `remove` to take theirs back; the same
/// service as the API's.
pub async fn review(
    axum::extract::State(board): BoardState,
    on: PlanForm,
    axum::Form(form): axum::Form<ReviewForm>,
) -> axum::response::Response {
    let PlanForm { plan, viewer, lang } = on;
    let result = async {
        if form.remove {
            board
                .reviews
                .remove(plan, &viewer.name)
                .await
                .map_err(api_error)?;
            return Ok(format!("/plans/{plan}#reviews"));
        }
        let verdict: run_model::ReviewVerdict = form.verdict.parse().map_err(|_| {
            BoardError::Refused(lang.pick(
                "choose a verdict: good, needs changes or wrong".to_string(),
                "请选择评审结论：好、需要修改或错误".to_string(),
            ))
        })?;
        // Kept as a regression case: its checks read before anything is
        // written, so a mistake in a row leaves the review unwritten too.
        let case = match form.keep {
            false => None,
            true if verdict != run_model::ReviewVerdict::Good => {
                return Err(BoardError::Refused(lang.pick(
                    "only a run reviewed good becomes a regression case".to_string(),
                    "只有评审为“好”的运行才能成为回归用例".to_string(),
                )))
            }
            true => {
                let run = board.run_on(plan).await?.ok_or_else(|| {
                    BoardError::Refused(lang.pick(
                        "only a run of planboard's agent becomes a regression case".to_string(),
                        "只有 planboard 智能体的运行才能成为回归用例".to_string(),
                    ))
                })?;
                let new = super::cases::checks_from(&form.fields, lang).map(|checks| {
                    let field = |name: &str| {
                        form.fields
                            .iter()
                            .find(|(k, _)| k == name)
                            .map(|(_, v)| v.trim().to_string())
                            .unwrap_or_default()
                    };
                    let name = field("case-name");
                    run_model::NewCase {
                        run_id: run.record.id,
                        name: (!name.is_empty()).then_some(name),
                        tags: super::cases::tags_from(&field("case-tags")),
                        checks,
                    }
                })?;
                Some(new)
            }
        };
        let review = run_model::NewReview {
            verdict,
            note: form.note,
            subtasks: form.subtasks,
        };
        board
            .reviews
            .write(plan, &viewer.name, review)
            .await
            .map_err(api_error)?;
        if let Some(new) = case {
            let made = board
                .cases
                .make(new, &viewer.name)
                .await
                .map_err(api_error)?;
            return Ok(format!("/cases#case-{}", made.id));
        }
        Ok(format!("/plans/{plan}#reviews"))
    }
    .await;
    form_answer(result, lang)
}

/// The board's "Run again from" form.
#[derive(Deserialize)]
pub struct AgainForm {
    #[serde(default)]
    from: String,
}

/// `POST /plans/{id}/again`: runs the plan's agent run again from the
/// subtask chosen on the board (`from`); on to the new plan's board.
pub async fn again(
    axum::extract::State(board): BoardState,
    on: PlanForm,
    axum::Form(form): axum::Form<AgainForm>,
) -> axum::response::Response {
    let PlanForm { plan, viewer, lang } = on;
    let result = async {
        let from = form.from.trim().parse::<u32>().map_err(|_| {
            BoardError::Refused(lang.pick(
                "choose the subtask to run again from".to_string(),
                "请选择从哪个子任务开始重新运行".to_string(),
            ))
        })?;
        let run = board.run_on(plan).await?.ok_or_else(|| {
            BoardError::Refused(lang.pick(
                "only a plan planboard's agent made can be run again".to_string(),
                "只有 planboard 智能体制定的计划才能重新运行".to_string(),
            ))
        })?;
        let view = board
            .runs
            .run_again(run.record.id, plan_engine::SubtaskId(from), &viewer.name)
            .await
            .map_err(run_error)?;
        view.record
            .plan_id
            .ok_or_else(|| BoardError::Unavailable("the run has no plan".into()))
    }
    .await;
    back_to_board(result, lang)
}

/// The board's "Replay" form.
#[derive(Deserialize)]
pub struct ReplayForm {
    #[serde(default)]
    model: String,
    /// A subtask's number, or empty: planned anew.
    #[serde(default)]
    from: String,
    #[serde(default)]
    unmatched: String,
    /// Ticked: recall memories and be remembered.
    #[serde(default)]
    memory: Option<String>,
}

impl ReplayForm {
    /// The replay asked for, or why the form cannot be read.
    fn request(self, lang: plan_engine::Lang) -> Result<crate::runs::ReplayRequest, BoardError> {
        let from = match self.from.trim() {
            "" => None,
            n => Some(plan_engine::SubtaskId(n.parse::<u32>().map_err(|_| {
                BoardError::Refused(lang.pick(
                    "choose the subtask to replay from".to_string(),
                    "请选择从哪个子任务开始回放".to_string(),
                ))
            })?)),
        };
        let unmatched = match self.unmatched.trim() {
            "" => run_model::Unmatched::Live,
            name => name.parse().map_err(|_| {
                BoardError::Refused(lang.pick(
                    "choose what a call the recording does not hold does: live or stop".to_string(),
                    "请选择记录中没有的调用如何处理：实际调用或停止".to_string(),
                ))
            })?,
        };
        let model = self.model.trim();
        Ok(crate::runs::ReplayRequest {
            model: (!model.is_empty()).then(|| model.to_string()),
            from,
            unmatched,
            memory: self.memory.is_some(),
        })
    }
}

/// `POST /plans/{id}/replay`: replays the plan's agent run as the board's
/// form asks; on to the replay's board.
pub async fn replay(
    axum::extract::State(board): BoardState,
    on: PlanForm,
    axum::Form(form): axum::Form<ReplayForm>,
) -> axum::response::Response {
    let PlanForm { plan, viewer, lang } = on;
    let result = async {
        let request = form.request(lang)?;
        let run = board.run_on(plan).await?.ok_or_else(|| {
            BoardError::Refused(lang.pick(
                "only a run of planboard's agent can be replayed".to_string(),
                "只有 planboard 智能体的运行才能回放".to_string(),
            ))
        })?;
        let view = board
            .runs
            .replay(run.record.id, request, &viewer.name)
            .await
            .map_err(run_error)?;
        view.record
            .plan_id
            .ok_or_else(|| BoardError::Unavailable("the run has no plan".into()))
    }
    .await;
    back_to_board(result, lang)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The review form reads its notes on subtasks from their fields'
    /// names, in the order posted, and its verdict and note by name.
    #[test]
    fn a_posted_review_keeps_each_subtask_note_with_its_number() {
        let body = "verdict=needs_changes&note=redo+it&subtask-2=too+slow&other=x&subtask-x=y&subtask-1=fine";
        let form: ReviewForm = serde_urlencoded::from_str(body).unwrap();
        assert!(!form.remove);
        assert_eq!(form.verdict, "needs_changes");
        assert_eq!(form.note, "redo it");
        let notes: Vec<(u32, &str)> = form
            .subtasks
            .iter()
            .map(|n| (n.subtask, n.note.as_str()))
            .collect();
        assert_eq!(notes, [(2, "too slow"), (1, "fine")]);
        let removed: ReviewForm = serde_urlencoded::from_str("remove=1").unwrap();
        assert!(removed.remove);
        assert!(!removed.keep);
        let kept: ReviewForm = serde_urlencoded::from_str(
            "verdict=good&case=1&case-name=Sales&check-kind-1=answer_text&check-text-1=12",
        )
        .unwrap();
        assert!(kept.keep);
        let checks = super::super::cases::checks_from(&kept.fields, plan_engine::Lang::En).unwrap();
        assert_eq!(checks, [run_model::Check::AnswerText { text: "12".into() }]);
    }

    #[test]
    fn the_replay_form_reads_as_its_request_and_a_bad_field_is_refused() {
        let form: ReplayForm =
            serde_urlencoded::from_str("model=+qwen+&from=2&unmatched=stop&memory=1").unwrap();
        let request = form.request(plan_engine::Lang::En).unwrap();
        assert_eq!(request.model.as_deref(), Some("qwen"));
        assert_eq!(request.from, Some(plan_engine::SubtaskId(2)));
        assert_eq!(request.unmatched, run_model::Unmatched::Stop);
        assert!(request.memory);
        let plain: ReplayForm = serde_urlencoded::from_str("model=&from=&unmatched=live").unwrap();
        assert_eq!(
            plain.request(plan_engine::Lang::En).unwrap(),
            crate::runs::ReplayRequest::default()
        );
        let bad: ReplayForm = serde_urlencoded::from_str("unmatched=maybe").unwrap();
        assert!(bad.request(plan_engine::Lang::Zh).is_err());
    }
}
