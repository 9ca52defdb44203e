//! The task box (`POST /plans/new/task`): its form as the API's
//! [`StartRun`], started by the same [`StartRun::start`] as
//! `POST /api/runs`.

use app::api::BoardError;

use super::shared::{form_amount, form_number, BoardState};
use crate::web::api::runs::{StartRun, MAX_COST_USD, MAX_TURNS, MIN_COST_USD};
use crate::web::board::board_error;

/// The task box's form as posted: its fields as typed (every one as
/// text, so a bad one is a refusal with a sentence rather than a bare 422,
/// and goes back to the form as it was), and its files.
#[derive(Debug, Default)]
pub struct TaskForm {
    draft: app::pages::task::TaskDraft,
    files: Vec<crate::workspace::inputs::Upload>,
}

/// Most bytes of a text field of the task box.
const FORM_FIELD_BYTES: usize = 64 * 1024;

/// The task box's own bounds, narrower than the API's (which takes any
/// positive count of tokens and calls, and a week): what a person types
/// into a box on a page, as its inputs' `min`/`max` say. The turns, the
/// cost and the other settings are the API's bounds, read from where
/// its check is.
const TOKENS: std::ops::RangeInclusive<u64> = 1_000..=1_000_000_000;
const LLM_CALLS: std::ops::RangeInclusive<u64> = 1..=1_000_000;
const MINUTES: std::ops::RangeInclusive<u64> = 1..=24 * 60;

impl TaskForm {
    /// Reads the form as the browser sends it (`multipart/form-data`, for
    /// its files) or as a plain urlencoded post (a client without files).
    pub async fn from_request(request: axum::extract::Request) -> Result<TaskForm, String> {
        use axum::extract::FromRequest;
        let multipart = request
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("multipart/form-data"));
        if multipart {
            let multipart = axum::extract::Multipart::from_request(request, &())
                .await
                .map_err(|e| e.body_text())?;
            return TaskForm::read(multipart).await.map_err(|e| e.to_string());
        }
        let bytes = axum::body::Bytes::from_request(request, &())
            .await
            .map_err(|e| e.body_text())?;
        let pairs: Vec<(String, String)> =
            serde_urlencoded::from_bytes(&bytes).map_err(|e| e.to_string())?;
        let mut form = TaskForm::default();
        for (name, value) in pairs {
            form.draft.set(&name, value);
        }
        Ok(form)
    }

    /// Reads the multipart form, field by field; files (empty ones are
    /// what a browser sends for an unused file input) are kept whole,
    /// bounded by the route's body limit.
    async fn read(
        mut multipart: axum::extract::Multipart,
    ) -> Result<TaskForm, axum::extract::multipart::MultipartError> {
        let mut form = TaskForm::default();
        while let Some(field) = multipart.next_field().await? {
            let name = field.name().unwrap_or_default().to_string();
            if name == "files" {
                let file_name = field.file_name().unwrap_or_default().to_string();
                let bytes = field.bytes().await?;
                if !(file_name.is_empty() && bytes.is_empty()) {
                    form.files.push(crate::workspace::inputs::Upload {
                        name: file_name,
                        bytes: bytes.to_vec(),
                    });
                }
                continue;
            }
            let bytes = field.bytes().await?;
            let text: String =
                String::from_utf8_lossy(&bytes[..bytes.len().min(FORM_FIELD_BYTES)]).into_owned();
            form.draft.set(&name, text);
        }
        Ok(form)
    }
}

/// The task box's form as the API's `StartRun`: every field of the form
/// is one of its settings, checked here with a sentence in the person's
/// language that names the field; the API's own checks
/// ([`StartRun::into_config`], `Runs::start_with`) follow as for any run.
/// `files` are the names of the files posted with it.
fn start_run(
    form: &app::pages::task::TaskDraft,
    files: &[String],
    lang: plan_engine::Lang,
) -> Result<StartRun, BoardError> {
    use crate::web::api::runs::{BudgetBody, ToolName};
    let defaults = agent::RunConfig::default();
    let max_parallel = form_number(
        &form.max_parallel,
        u64::from(defaults.max_parallel),
        1..=u64::from(agent::run::MAX_PARALLEL),
        lang.pick("At once", "并行数"),
        lang,
    )?;
    let max_tokens = form_number(
        &form.max_tokens,
        defaults.budget.max_tokens,
        TOKENS,
        lang.pick("Token budget", "令牌预算"),
        lang,
    )?;
    let max_llm_calls = form_number(
        &form.max_llm_calls,
        u64::from(defaults.budget.max_llm_calls),
        LLM_CALLS,
        lang.pick("Model calls", "模型调用次数"),
        lang,
    )?;
    let max_turns = form_number(
        &form.max_turns,
        u64::from(defaults.budget.max_turns),
        1..=u64::from(MAX_TURNS),
        lang.pick("Turns per attempt", "每次尝试的轮数"),
        lang,
    )?;
    let max_minutes = form_number(
        &form.max_minutes,
        defaults.budget.max_wall_secs / 60,
        MINUTES,
        lang.pick("Time budget (minutes)", "时间预算（分钟）"),
        lang,
    )?;
    let max_cost = form_amount(
        &form.max_cost,
        MIN_COST_USD..=MAX_COST_USD,
        lang.pick("Cost budget (USD)", "费用预算（美元）"),
        lang,
    )?;
    let max_attempts = form_number(
        &form.max_attempts,
        u64::from(defaults.max_attempts),
        1..=u64::from(run_model::config::MAX_ATTEMPTS),
        lang.pick("Attempts per subtask", "每个子任务的尝试次数"),
        lang,
    )?;
    let retry_delay_ms = form_amount(
        &form.retry_delay,
        0.0..=(run_model::config::MAX_RETRY_DELAY_MS / 1000) as f64,
        lang.pick("Retry delay (seconds)", "重试间隔（秒）"),
        lang,
    )?
    .map_or(defaults.retry_delay_ms, |s| (s * 1000.0).round() as u64);
    let mode = match form.mode.trim() {
        "" => agent::ModeChoice::Auto,
        mode => mode.parse::<agent::ModeChoice>().map_err(|_| {
            BoardError::Refused(lang.pick(
                format!("no mode is called {mode}"),
                format!("没有名为 {mode} 的模式"),
            ))
        })?,
    };
    let template = match form.template.trim() {
        "" => None,
        id => Some(id.parse::<run_model::TemplateId>().map_err(|_| {
            BoardError::Refused(lang.pick(
                format!("'{id}' is not a template id"),
                format!("“{id}”不是模板编号"),
            ))
        })?),
    };
    let source = Some(form.source.trim().to_string()).filter(|s| !s.is_empty());
    if source.is_some() && !files.is_empty() {
        return Err(BoardError::Refused(lang.pick(
            "give files or a folder to start from, not both".to_string(),
            "请给文件或一个起始文件夹，不要两者都给".to_string(),
        )));
    }
    let batches = match form.batch_input.trim() {
        "" => None,
        input => {
            // Uploads are checked by name here; a folder's files by the
            // run, which sees them.
            if source.is_none() && !files.iter().any(|f| f == input) {
                return Err(BoardError::Refused(
                    app::pages::task::batch_problem(input, files, false, lang).unwrap_or_default(),
                ));
            }
            Some(run_model::Batching {
                input: input.to_string(),
                size: form_number(
                    &form.batch_size,
                    u64::from(run_model::batch::DEFAULT_BATCH_SIZE),
                    1..=u64::from(run_model::batch::MAX_BATCH_SIZE),
                    lang.pick("Items per batch", "每批项目数"),
                    lang,
                )? as u32,
            })
        }
    };
    let policies: std::collections::BTreeMap<String, agent::run::ToolPolicy> = form
        .ask
        .iter()
        .map(|name| (name.trim().to_string(), agent::run::ToolPolicy::Ask))
        .collect();
    Ok(StartRun {
        task: form.task.clone(),
        mode,
        approval_required: Some(form.approval),
        // Within MAX_PARALLEL, a u32, by the range above.
        max_parallel: Some(max_parallel as u32),
        budget: Some(BudgetBody {
            // Within a million, by the range above.
            max_llm_calls: Some(max_llm_calls as u32),
            max_tokens: Some(max_tokens),
            max_wall_secs: Some(max_minutes * 60),
            // At most MAX_TURNS, by the range above.
            max_turns: Some(max_turns as u32),
            max_cost,
        }),
        tools: form
            .tools_chosen
            .then(|| form.tools.iter().map(|t| ToolName(t.clone())).collect()),
        source,
        include_secret_files: form.include_secret_files,
        policies: (!policies.is_empty()).then_some(policies),
        // At most MAX_ATTEMPTS, by the range above.
        max_attempts: Some(max_attempts as u32),
        retry_delay_ms: Some(retry_delay_ms),
        memory: Some(!form.no_memory),
        template,
        batches,
        // A plan of its own is given to the agent on its board
        // (`/plans/{id}/agent`), not here.
        plan: None,
        adapt_every_step: form.adapt_every_step,
        agent: Some(form.agent.trim().to_string()).filter(|a| !a.is_empty()),
        // The defaults: the task box does not ask.
        drift_threshold: None,
        approval_rule: None,
    })
}

/// `POST /plans/new/task`: starts a run from the task box and opens its
/// plan's board: the same start as `POST /api/runs` ([`StartRun::start`]).
/// A refusal goes back to the page the form was on, with the reason in
/// the person's language and every field as typed.
pub async fn start_task(
    axum::extract::State(board): BoardState,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
    request: axum::extract::Request,
) -> axum::response::Redirect {
    let lang = app::i18n::from_headers(&headers);
    let trace = request
        .extensions()
        .get::<crate::telemetry::RequestTrace>()
        .map(|t| t.0);
    let form = match TaskForm::from_request(request).await {
        Ok(form) => form,
        Err(e) => {
            let e = BoardError::Refused(lang.pick(
                format!(
                    "the form could not be read ({e}); files may have at most {} MB in all",
                    run_model::MAX_FILES_BYTES / (1024 * 1024)
                ),
                format!(
                    "无法读取表单（{e}）；文件总共最多 {} MB",
                    run_model::MAX_FILES_BYTES / (1024 * 1024)
                ),
            ));
            let draft = app::pages::task::TaskDraft::default();
            return axum::response::Redirect::to(&draft.back_to(&app::words::explain(&e, lang)));
        }
    };
    let TaskForm { draft, files } = form;
    let result = async {
        viewer.may_change(("plans", "计划"), lang)?;
        let names: Vec<String> = files
            .iter()
            .map(|f| f.name.rsplit(['/', '\\']).next().unwrap_or("").to_string())
            .collect();
        let run = start_run(&draft, &names, lang)?;
        let view = run
            .start(&board.runs, &board.workspaces, files, &viewer.name, trace)
            .await
            .map_err(board_error)?;
        view.record
            .plan_id
            .ok_or_else(|| BoardError::Unavailable("the run has no plan".into()))
    }
    .await;
    match result {
        Ok(plan) => axum::response::Redirect::to(&format!("/plans/{plan}")),
        Err(e) => axum::response::Redirect::to(&draft.back_to(&app::words::explain(&e, lang))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::api::runs::BudgetBody;

    /// Whether the task box's own check takes `value` for `field`, and
    /// whether the API's budget check takes it.
    fn both(field: &str, value: String) -> (bool, bool) {
        let mut draft = app::pages::task::TaskDraft {
            task: "count the files".into(),
            ..Default::default()
        };
        draft.set(field, value);
        // The form's own check, before the API's runs after it.
        let form_takes = start_run(&draft, &[], plan_engine::Lang::En).is_ok();
        let api_takes = |body: BudgetBody| body.onto(agent::run::Budget::default()).is_ok();
        let api_takes = match field {
            "max_turns" => api_takes(BudgetBody {
                max_turns: draft.max_turns.parse().ok(),
                ..Default::default()
            }),
            _ => api_takes(BudgetBody {
                max_cost: draft.max_cost.parse().ok(),
                ..Default::default()
            }),
        };
        (form_takes, api_takes)
    }

    /// D2: the task box's turns and cost are the bounds of the API's own
    /// check (one set of constants): each side takes the most and the
    /// least the other takes, and both refuse one past them.
    #[test]
    fn the_task_box_takes_the_turns_and_cost_the_apis_budget_check_takes_and_no_more() {
        for (field, value, taken) in [
            ("max_turns", MAX_TURNS.to_string(), true),
            ("max_turns", (MAX_TURNS + 1).to_string(), false),
            ("max_turns", "1".to_string(), true),
            ("max_cost", MAX_COST_USD.to_string(), true),
            ("max_cost", (MAX_COST_USD * 1.5).to_string(), false),
            ("max_cost", MIN_COST_USD.to_string(), true),
            ("max_cost", (MIN_COST_USD / 2.0).to_string(), false),
        ] {
            assert_eq!(
                both(field, value.clone()),
                (taken, taken),
                "{field} = {value}: (the task box, the API) should both {}",
                if taken { "take it" } else { "refuse it" }
            );
        }
    }
}
