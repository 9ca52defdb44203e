//! The plain forms the board posts: each extracts, calls one service and
//! redirects back to where the person was (with the reason, on a refusal).

use super::*;
use crate::api::runs::StartRun;

/// The task box's form as posted: its fields as typed (every one as
/// text, so a bad one is a refusal with a sentence rather than a bare 422,
/// and goes back to the form as it was), and its files.
#[derive(Debug, Default)]
pub struct TaskForm {
    draft: app::pages::task::TaskDraft,
    files: Vec<crate::runs::inputs::Upload>,
}

/// Most bytes of a text field of the task box.
const FORM_FIELD_BYTES: usize = 64 * 1024;

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
                    form.files.push(crate::runs::inputs::Upload {
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

/// A number field of the task box: empty gives `default`; anything else
/// must be a whole number in `range`, or the refusal names the field.
fn form_number(
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
fn form_amount(
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
    use crate::api::runs::{BudgetBody, ToolName};
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
        1_000..=1_000_000_000,
        lang.pick("Token budget", "令牌预算"),
        lang,
    )?;
    let max_llm_calls = form_number(
        &form.max_llm_calls,
        u64::from(defaults.budget.max_llm_calls),
        1..=1_000_000,
        lang.pick("Model calls", "模型调用次数"),
        lang,
    )?;
    let max_turns = form_number(
        &form.max_turns,
        u64::from(defaults.budget.max_turns),
        1..=50,
        lang.pick("Turns per attempt", "每次尝试的轮数"),
        lang,
    )?;
    let max_minutes = form_number(
        &form.max_minutes,
        defaults.budget.max_wall_secs / 60,
        1..=24 * 60,
        lang.pick("Time budget (minutes)", "时间预算（分钟）"),
        lang,
    )?;
    let max_cost = form_amount(
        &form.max_cost,
        0.000_001..=1_000_000.0,
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
            // At most 50, by the range above.
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
    })
}

/// `POST /plans/new/task`: starts a run from the task box and opens its
/// plan's board: the same start as `POST /api/runs` ([`StartRun::start`]).
/// A refusal goes back to the page the form was on, with the reason in
/// the person's language and every field as typed.
pub async fn start_task_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
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
            .start(&board.runs, files, &viewer.name, trace)
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

/// The run header's re-plan form, as posted.
#[derive(serde::Deserialize)]
pub struct ReplanForm {
    #[serde(default)]
    mode: String,
}

/// `POST /plans/{id}/replan`: before approval, switches the plan's mode;
/// the agent sees it and plans the task again with that planner.
pub async fn replan_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
    on: PlanForm,
    axum::Form(form): axum::Form<ReplanForm>,
) -> axum::response::Response {
    let ops = match plan_engine::Mode::parse(&form.mode) {
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
#[derive(serde::Deserialize)]
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
pub async fn answer_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
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
pub async fn agent_work_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
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
#[derive(serde::Deserialize)]
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
pub async fn budget_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
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
        let body = crate::api::runs::BudgetBody {
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
            .map_err(super::board_error)?;
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
#[derive(serde::Deserialize)]
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
}

/// `POST /plans/{id}/tool-call`: a person approves, edits or denies a call
/// the plan's run waits on; the same service as the API's.
pub async fn tool_call_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
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

/// The Memory page's buttons, as posted.
#[derive(serde::Deserialize)]
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

/// `POST /memories/{id}/pin`, `/forget` and `/edit`: the Memory page's
/// buttons, through the same service as the API's; back to the page, or
/// a page in the person's language saying why not.
pub async fn memory_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
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
        match action.as_str() {
            "pin" => board
                .runs
                .pin(id, form.pinned == "true")
                .await
                .map(|_| ())
                .map_err(run_error),
            "forget" => board.runs.forget(id).await.map_err(run_error),
            "edit" => board
                .runs
                .edit_memory(id, &form.text)
                .await
                .map(|_| ())
                .map_err(run_error),
            other => Err(BoardError::NotFound(format!("no memory action '{other}'"))),
        }
    }
    .await;
    // Back only to the Memory page: the field is the client's.
    let back = if (form.back == "/memories" || form.back.starts_with("/memories?"))
        && !form.back.contains("//")
    {
        form.back.clone()
    } else {
        "/memories".to_string()
    };
    form_answer(result.map(|()| back), lang)
}

/// The Memory page's "Write a standing rule" form, as posted.
#[derive(serde::Deserialize)]
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
pub async fn memory_rule_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<RuleForm>,
) -> axum::response::Response {
    let lang = app::i18n::from_headers(&headers);
    let result = async {
        viewer.may_change(("memories", "记忆"), lang)?;
        board
            .runs
            .write_rule(&form.text, &form.applies_to)
            .await
            .map(|_| ())
            .map_err(run_error)
    }
    .await;
    let back = if (form.back == "/memories" || form.back.starts_with("/memories?"))
        && !form.back.contains("//")
    {
        form.back.clone()
    } else {
        "/memories".to_string()
    };
    form_answer(result.map(|()| back), lang)
}

/// `POST /plans/{id}/review`: the viewer's review of a finished plan as
/// the board's form posts it (`verdict`, `note`, `subtask-{n}` notes), or
/// `remove` to take theirs back; the same service as the API's.
pub async fn review_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
    on: PlanForm,
    axum::Form(fields): axum::Form<Vec<(String, String)>>,
) -> axum::response::Response {
    let PlanForm { plan, viewer, lang } = on;
    let result = async {
        let field = |name: &str| {
            fields
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        if field("remove").is_some() {
            board
                .runs
                .unreview(plan, &viewer.name)
                .await
                .map_err(run_error)?;
            return Ok(plan);
        }
        let verdict: run_model::ReviewVerdict =
            field("verdict").unwrap_or_default().parse().map_err(|_| {
                BoardError::Refused(lang.pick(
                    "choose a verdict: good, needs changes or wrong".to_string(),
                    "请选择评审结论：好、需要修改或错误".to_string(),
                ))
            })?;
        let subtasks = fields
            .iter()
            .filter_map(|(k, v)| {
                let n = k.strip_prefix("subtask-")?.parse::<u32>().ok()?;
                Some(run_model::SubtaskNote {
                    subtask: n,
                    note: v.clone(),
                })
            })
            .collect();
        let review = run_model::NewReview {
            verdict,
            note: field("note").unwrap_or_default().to_string(),
            subtasks,
        };
        board
            .runs
            .review(plan, &viewer.name, review)
            .await
            .map_err(run_error)?;
        Ok(plan)
    }
    .await;
    form_answer(result.map(|plan| format!("/plans/{plan}#reviews")), lang)
}

/// `POST /plans/{id}/again`: runs the plan's agent run again from the
/// subtask chosen on the board (`from`); on to the new plan's board.
pub async fn again_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
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

/// The board's "Save as template" form.
#[derive(serde::Deserialize)]
pub struct TemplateForm {
    #[serde(default)]
    name: String,
}

/// `POST /plans/{id}/template`: saves the plan as a template and opens
/// the Templates page; the same service as the API's.
pub async fn template_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
    on: PlanForm,
    axum::Form(form): axum::Form<TemplateForm>,
) -> axum::response::Response {
    let PlanForm { plan, viewer, lang } = on;
    let result = async {
        board
            .runs
            .save_template(plan, &form.name, &viewer.name)
            .await
            .map_err(run_error)?;
        Ok("/templates".to_string())
    }
    .await;
    form_answer(result, lang)
}

/// `POST /templates/{id}/delete`: the Templates page's Delete.
pub async fn template_delete_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
    axum::extract::Path(id): axum::extract::Path<String>,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    let lang = app::i18n::from_headers(&headers);
    let result = async {
        let id: run_model::TemplateId = id
            .parse()
            .map_err(|_| BoardError::NotFound(format!("'{id}' is not a template id")))?;
        viewer.may_change(("templates", "模板"), lang)?;
        board.runs.delete_template(id).await.map_err(run_error)?;
        Ok("/templates".to_string())
    }
    .await;
    form_answer(result, lang)
}

/// The board's "Run again from" form.
#[derive(serde::Deserialize)]
pub struct AgainForm {
    #[serde(default)]
    from: String,
}

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

/// What the board's plain forms on a plan share: the plan from the path,
/// the person's right to change it, one change through the service, then
/// back to the board, or a page in the person's language saying why not.
async fn change_from_form(
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
fn back_to_board(
    result: Result<PlanId, BoardError>,
    lang: plan_engine::Lang,
) -> axum::response::Response {
    form_answer(result.map(|plan| format!("/plans/{plan}")), lang)
}

/// What every plain form of the board answers: a redirect to the page to
/// show next, or the refusal in the reader's language with its status.
fn form_answer(
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

/// The settings page's add form, as posted.
#[derive(serde::Deserialize)]
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
pub async fn webhook_add_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<EndpointForm>,
) -> axum::response::Response {
    webhook_change(&board, &viewer, &headers, WebhookChange::Add(form)).await
}

/// `POST /settings/webhooks/{id}/remove`: removes an added endpoint.
pub async fn webhook_remove_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
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
    let store = board.runs.store();
    let result = async {
        viewer.may_manage(("webhooks", "Webhook"), lang)?;
        match change {
            WebhookChange::Remove(id) => {
                let id: uuid::Uuid = id
                    .parse()
                    .map_err(|_| BoardError::NotFound(format!("'{id}' is not an endpoint id")))?;
                board
                    .webhooks
                    .remove_endpoint(store.as_ref(), id)
                    .await
                    .map_err(api_error)
            }
            WebhookChange::Add(form) => {
                let format = match form.format.as_str() {
                    "" | "json" => crate::api::webhooks::WebhookFormat::Json,
                    "slack" => crate::api::webhooks::WebhookFormat::Slack,
                    other => {
                        return Err(BoardError::Refused(format!("no shape is called {other}")))
                    }
                };
                let endpoint = crate::api::webhooks::NewEndpoint {
                    url: form.url,
                    secret: Some(form.secret).filter(|s| !s.trim().is_empty()),
                    format,
                }
                .check(&viewer.name)
                .map_err(board_error)?;
                board
                    .webhooks
                    .add_endpoint(store.as_ref(), &endpoint)
                    .await
                    .map_err(api_error)
            }
        }
    }
    .await;
    form_answer(result.map(|()| "/settings".to_string()), lang)
}

/// The Tools page's add and change forms: a URL or a command, arguments
/// and `NAME=value` lines one per line; an empty token or env keeps the
/// stored one on a change.
#[derive(serde::Deserialize)]
pub struct ToolServerForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    token: String,
    #[serde(default)]
    command: String,
    #[serde(default)]
    args: String,
    #[serde(default)]
    env: String,
}

impl ToolServerForm {
    fn spec(
        self,
        name: Option<&str>,
    ) -> Result<crate::runs::tool_servers::ToolServerSpec, BoardError> {
        let filled = |s: String| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        let mut env = std::collections::BTreeMap::new();
        for line in self.env.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (key, value) = line.split_once('=').ok_or_else(|| {
                BoardError::Refused(format!(
                    "an env line is NAME=value, not '{}'",
                    line.chars().take(60).collect::<String>()
                ))
            })?;
            env.insert(key.trim().to_string(), value.to_string());
        }
        Ok(crate::runs::tool_servers::ToolServerSpec {
            name: name.map(str::to_string).unwrap_or(self.name),
            url: filled(self.url),
            token: filled(self.token),
            command: filled(self.command),
            args: self
                .args
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect(),
            env: (!env.is_empty()).then_some(env),
        })
    }
}

pub async fn tool_server_add_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<ToolServerForm>,
) -> axum::response::Response {
    tool_server_change(&board, &viewer, &headers, None, "add", form).await
}

/// `test`, `remove` or `edit` a server.
pub async fn tool_server_action_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    axum::extract::Path((name, action)): axum::extract::Path<(String, String)>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<ToolServerForm>,
) -> axum::response::Response {
    tool_server_change(&board, &viewer, &headers, Some(&name), &action, form).await
}

async fn tool_server_change(
    board: &Board,
    viewer: &app::api::Viewer,
    headers: &axum::http::HeaderMap,
    name: Option<&str>,
    action: &str,
    form: ToolServerForm,
) -> axum::response::Response {
    let lang = app::i18n::from_headers(headers);
    let store = board.runs.store();
    let servers = board.runs.tool_servers();
    let result = async {
        viewer.may_manage(("MCP servers", "MCP 服务器"), lang)?;
        match (action, name) {
            ("add", None) => servers
                .add(store.as_ref(), form.spec(None)?, &viewer.name)
                .await
                .map(|_| ()),
            ("edit", Some(name)) => servers
                .change(store.as_ref(), name, form.spec(Some(name))?, &viewer.name)
                .await
                .map(|_| ()),
            ("test", Some(name)) => servers.test(name).await.map(|_| ()),
            ("remove", Some(name)) => servers.delete(store.as_ref(), name).await,
            (other, _) => return Err(BoardError::NotFound(format!("no action is called {other}"))),
        }
        .map_err(api_error)
    }
    .await;
    form_answer(result.map(|()| "/tools".to_string()), lang)
}
