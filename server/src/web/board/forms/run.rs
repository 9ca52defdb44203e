//! The forms of a plan's board and its run header: re-plan before
//! approval, answer the agent's question, let the agent work a plan,
//! raise a paused run's budget, decide a guarded tool call, approve as
//! the approval card shows (with grants, held), revoke a grant, start a
//! held run. Each takes the service path of its API route.

use app::api::BoardError;
use serde::Deserialize;

use super::shared::{back_to_board, change_from_form, BoardState, PlanForm};
use crate::web::board::{api_error, board_error, run_error};

/// The run header's re-plan form, as posted.
#[derive(Deserialize)]
pub struct ReplanForm {
    #[serde(default)]
    mode: String,
}

/// `POST /plans/{id}/replan`: before approval, switches the plan's mode;
/// the agent sees it and plans the task again with that planner.
pub async fn replan(
    axum::extract::State(board): BoardState,
    on: PlanForm,
    axum::Form(form): axum::Form<ReplanForm>,
) -> axum::response::Response {
    let ops = match plan_engine::Mode::from_wire(&form.mode) {
        Some(mode) if mode != plan_engine::Mode::Manual => {
            let patch = plan_engine::InfoPatch {
                mode: Some(mode),
                ..plan_engine::InfoPatch::default()
            };
            Ok(vec![plan_engine::Op::UpdateInfo { patch }])
        }
        _ => Err(BoardError::Refused(format!(
            "no planner is called '{}'",
            form.mode
        ))),
    };
    change_from_form(&board, &on, ops).await
}

/// The run header's answer box, as posted.
#[derive(Deserialize)]
pub struct AnswerForm {
    #[serde(default)]
    subtask: String,
    #[serde(default)]
    answer: String,
}

/// `POST /plans/{id}/answer`: a person's answer to the agent's question
/// on a subtask, through the one path every answer takes
/// ([`crate::runs::Runs::answer_question`]: only a waiting subtask takes
/// one).
pub async fn answer(
    axum::extract::State(board): BoardState,
    on: PlanForm,
    axum::Form(form): axum::Form<AnswerForm>,
) -> axum::response::Response {
    let lang = on.lang;
    let result = match (
        form.subtask.trim().parse::<u32>(),
        form.answer.trim().is_empty(),
    ) {
        (Ok(n), false) => board
            .runs
            .answer_question(
                on.plan,
                plan_engine::SubtaskId(n),
                &form.answer,
                &on.viewer.name,
                lang.pick("answered on the board", "已在看板上回答"),
            )
            .await
            .map(|()| on.plan)
            .map_err(run_error),
        _ => Err(BoardError::Refused(
            "an answer needs a subtask number and some text".into(),
        )),
    };
    back_to_board(result, lang)
}

/// `POST /plans/{id}/agent`: planboard's agent works the plan as it is
/// (the same service as `POST /api/runs {plan}`), and the board opens.
pub async fn agent_work(
    axum::extract::State(board): BoardState,
    on: PlanForm,
) -> axum::response::Response {
    let PlanForm { plan, viewer, lang } = on;
    let config = agent::RunConfig {
        plan: Some(plan),
        ..agent::RunConfig::default()
    };
    let result = board
        .runs
        .start(config, &viewer.name)
        .await
        .map(|_| plan)
        .map_err(run_error);
    back_to_board(result, lang)
}

/// New limits for a run its budget paused, as the run header's form posts
/// them (each a number, or empty to keep it).
#[derive(Deserialize)]
pub struct BudgetForm {
    #[serde(default)]
    max_llm_calls: String,
    #[serde(default)]
    max_tokens: String,
    #[serde(default)]
    max_minutes: String,
    #[serde(default)]
    max_cost: String,
}

/// `POST /plans/{id}/budget`: raises the budget of the run on the plan and
/// resumes it, in one step; the same service and bounds as
/// `POST /api/runs/{id}/resume` with a budget.
pub async fn budget(
    axum::extract::State(board): BoardState,
    on: PlanForm,
    axum::Form(form): axum::Form<BudgetForm>,
) -> axum::response::Response {
    let PlanForm { plan, viewer, lang } = on;
    let result = async {
        let run = board.run_working(plan).await?;
        let number = |name: &str, text: &str| -> Result<Option<f64>, BoardError> {
            let text = text.trim();
            if text.is_empty() {
                return Ok(None);
            }
            text.parse::<f64>()
                .ok()
                .filter(|n| n.is_finite() && *n > 0.0)
                .map(Some)
                .ok_or_else(|| {
                    BoardError::Refused(lang.pick(
                        format!("{name} must be a positive number, not '{text}'"),
                        format!("{name} 必须是正数，而不是“{text}”"),
                    ))
                })
        };
        let whole = |n: Option<f64>| n.map(|n| n.round() as u64);
        let body = crate::web::api::runs::BudgetBody {
            max_llm_calls: whole(number("max_llm_calls", &form.max_llm_calls)?)
                .map(|n| n.min(u32::MAX as u64) as u32),
            max_tokens: whole(number("max_tokens", &form.max_tokens)?),
            max_wall_secs: whole(number("max_minutes", &form.max_minutes)?)
                .map(|m| m.saturating_mul(60)),
            max_turns: None,
            max_cost: number("max_cost", &form.max_cost)?,
        };
        let budget = body
            .onto(run.record.config.budget.clone())
            .map_err(board_error)?;
        board
            .runs
            .resume(run.record.id, Some(budget), &viewer.name)
            .await
            .map_err(run_error)?;
        Ok(plan)
    }
    .await;
    back_to_board(result, lang)
}

/// A decision on a guarded tool call, as the run header's form posts it.
#[derive(Deserialize)]
pub struct ToolCallForm {
    #[serde(default)]
    call: String,
    /// The button pressed: `approve`, `edit` or `deny`.
    #[serde(default)]
    verdict: String,
    /// The arguments as JSON (the agent's, as the person left or edited them).
    #[serde(default)]
    arguments: String,
    #[serde(default)]
    reason: String,
    /// The call's digest as the form showed it: the decision is bound to it.
    #[serde(default)]
    digest: String,
}

/// `POST /plans/{id}/tool-call`: a person approves, edits or denies a call
/// the plan's run waits on; the same service as the API's.
pub async fn tool_call(
    axum::extract::State(board): BoardState,
    on: PlanForm,
    axum::Form(form): axum::Form<ToolCallForm>,
) -> axum::response::Response {
    let PlanForm { plan, viewer, lang } = on;
    let result = async {
        let run = board.run_working(plan).await?;
        let verdict = match form.verdict.as_str() {
            "approve" => crate::runs::DecisionKind::Approve,
            "edit" => crate::runs::DecisionKind::Edit,
            "deny" => crate::runs::DecisionKind::Deny,
            other => {
                return Err(BoardError::Refused(format!(
                    "no decision is called '{other}'"
                )))
            }
        };
        let arguments = match verdict {
            crate::runs::DecisionKind::Edit => {
                Some(serde_json::from_str(&form.arguments).map_err(|e| {
                    BoardError::Refused(lang.pick(
                        format!("the arguments are not JSON: {e}"),
                        format!("参数不是合法的 JSON：{e}"),
                    ))
                })?)
            }
            _ => None,
        };
        let decision = crate::runs::Decision {
            verdict,
            digest: Some(form.digest).filter(|d| !d.trim().is_empty()),
            reason: Some(form.reason),
            arguments,
        };
        board
            .runs
            .decide(run.record.id, &form.call, decision, &viewer.name)
            .await
            .map_err(run_error)?;
        Ok(plan)
    }
    .await;
    back_to_board(result, lang)
}

/// `POST /plans/{id}/approve-card`: the approval card's form. Approves
/// the plan as the card showed it (its version and content digest), with
/// the tools ticked granted for the run (`grant_<tool>=on`, each with an
/// optional `pattern_<tool>`) and, if asked, held (`hold`: empty, `click`,
/// or `time` with `start_at`, a `datetime-local` read as UTC): the one
/// service of `POST /api/plans/{id}/approve`.
pub async fn approve_card(
    axum::extract::State(board): BoardState,
    on: PlanForm,
    axum::Form(form): axum::Form<std::collections::HashMap<String, String>>,
) -> axum::response::Response {
    let PlanForm { plan, viewer, lang } = on;
    let result = async {
        let field = |name: &str| {
            form.get(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let mut grants: Vec<run_model::NewGrant> = form
            .iter()
            .filter(|(key, value)| key.starts_with("grant_") && value.as_str() == "on")
            .map(|(key, _)| {
                let tool = key.trim_start_matches("grant_").to_string();
                let pattern = field(&format!("pattern_{tool}"));
                run_model::NewGrant { tool, pattern }
            })
            .collect();
        grants.sort_by(|a, b| a.tool.cmp(&b.tool));
        let hold = match field("hold").as_deref() {
            None => None,
            Some("click") => Some(None),
            Some("time") => {
                let text = field("start_at").unwrap_or_default();
                let at = chrono::NaiveDateTime::parse_from_str(&text, "%Y-%m-%dT%H:%M")
                    .or_else(|_| chrono::NaiveDateTime::parse_from_str(&text, "%Y-%m-%dT%H:%M:%S"))
                    .map_err(|_| {
                        BoardError::Refused(lang.pick(
                            format!("a held run starts at a date and time (UTC), not '{text}'"),
                            format!("暂缓的运行需要开始日期和时间（UTC），而不是“{text}”"),
                        ))
                    })?;
                Some(Some(at.and_utc()))
            }
            Some(other) => {
                return Err(BoardError::Refused(format!(
                    "hold is empty, click or time, not '{other}'"
                )))
            }
        };
        let approval = crate::approvals::PlanApproval {
            comment: field("comment"),
            digest: field("digest"),
            expected_version: field("version").and_then(|v| v.parse().ok()),
            grants,
            hold,
        };
        board
            .approvals
            .approve_plan(plan, approval, &viewer.name)
            .await
            .map_err(api_error)?;
        Ok(plan)
    }
    .await;
    back_to_board(result, lang)
}

/// The run header's revoke button, as posted.
#[derive(Deserialize)]
pub struct RevokeForm {
    #[serde(default)]
    grant: String,
}

/// `POST /plans/{id}/revoke-grant`: revokes a grant of the plan's run; its
/// tool's calls ask again from the next one on (the service of `DELETE
/// /api/runs/{id}/grants/{grant}`).
pub async fn revoke_grant(
    axum::extract::State(board): BoardState,
    on: PlanForm,
    axum::Form(form): axum::Form<RevokeForm>,
) -> axum::response::Response {
    let PlanForm { plan, viewer, lang } = on;
    let result = async {
        let run = board.run_working(plan).await?;
        let grant = form
            .grant
            .trim()
            .parse()
            .map_err(|_| BoardError::NotFound(format!("'{}' is not a grant id", form.grant)))?;
        board
            .approvals
            .revoke_grant(run.record.id, grant, &viewer.name)
            .await
            .map_err(api_error)?;
        Ok(plan)
    }
    .await;
    back_to_board(result, lang)
}

/// `POST /plans/{id}/start`: starts the plan's run that was approved and
/// held (the service of `POST /api/runs/{id}/start`).
pub async fn start_held(
    axum::extract::State(board): BoardState,
    on: PlanForm,
) -> axum::response::Response {
    let PlanForm { plan, viewer, lang } = on;
    let result = async {
        let run = board.run_working(plan).await?;
        board
            .runs
            .start_held(run.record.id, &viewer.name)
            .await
            .map_err(run_error)?;
        Ok(plan)
    }
    .await;
    back_to_board(result, lang)
}

/// The insights page's Apply button, as posted.
#[derive(Deserialize)]
pub struct ApplyForm {
    #[serde(default)]
    tool: String,
    #[serde(default)]
    policy: String,
}

/// `POST /approvals/insights/apply`: an operator applies a suggestion: the
/// tool's policy for the runs started from now on (the service of `POST
/// /api/approvals/insights/apply`); back to the insights page.
pub async fn apply_policy(
    axum::extract::State(board): BoardState,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<ApplyForm>,
) -> axum::response::Response {
    let lang = app::i18n::from_headers(&headers);
    let result = async {
        viewer.may_change(("tool policies", "工具策略"), lang)?;
        let policy = run_model::ToolPolicy::from_wire(form.policy.trim())
            .ok_or_else(|| BoardError::Refused(format!("no policy is called '{}'", form.policy)))?;
        board
            .runs
            .set_tool_policy(form.tool.trim(), policy, &viewer.name)
            .await
            .map_err(run_error)?;
        Ok("/approvals/insights".to_string())
    }
    .await;
    super::shared::form_answer(result, lang)
}
