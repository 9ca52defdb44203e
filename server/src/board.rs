//! The board's backend: the app's [`BoardBackend`] over the plan service,
//! so the board's reads and changes take the same path as the agents'.

use std::sync::Arc;

use std::collections::{HashMap, HashSet};

use app::api::{
    Activity, ActivityLog, ActivityTail, AgentInfo, BoardBackend, BoardError, HistoryList,
    HistoryRow, ListFilter, LogEntry, PlanList, PlanRow, RunPanel, TaskSpec, PAGE_SIZE,
};
use plan_engine::{ApprovalStatus, Command, NewPlan, Plan, PlanError, PlanId, SubtaskState};

use crate::service::{PlanService, ServiceError};
use crate::store::StoreError;

/// Log rows read per query.
const PAGE: u32 = 1000;

pub struct Board(
    pub Arc<PlanService>,
    pub Arc<crate::runs::Runs>,
    /// The configured webhook endpoint (the settings page shows it).
    pub Arc<crate::webhooks::WebhookConfig>,
);

/// The board's words for an error: the API's one mapping of errors
/// ([`ApiError`](crate::api::error::ApiError), which logs what the server
/// did wrong), read as the board's kinds, so the board and the API agree
/// on what is a refusal, a conflict, a missing thing or the server's fault.
fn board_error(e: crate::api::error::ApiError) -> BoardError {
    use crate::api::error::ApiError as A;
    match e {
        A::NotFound(m) => BoardError::NotFound(m),
        A::Unauthorized(m) | A::Forbidden(m) => BoardError::Forbidden(m),
        A::Conflict {
            message,
            current_version,
        } => BoardError::Stale {
            message,
            current_version,
        },
        A::State {
            code: "no_model",
            message,
        } => BoardError::Unavailable(message),
        A::Internal => {
            BoardError::Unavailable("the server could not do it; nothing was changed".into())
        }
        other => BoardError::Refused(other.message()),
    }
}

fn to_board_error(e: ServiceError) -> BoardError {
    board_error(e.into())
}

fn row(plan: &Plan) -> PlanRow {
    PlanRow {
        id: plan.id(),
        title: plan.title().to_string(),
        state: plan.state(),
        mode: plan.mode(),
        approval: plan.approval().status,
        approval_required: plan.approval().required,
        approved_by: (plan.approval().status == ApprovalStatus::Approved)
            .then(|| plan.approval().by.clone())
            .flatten(),
        percent: plan.percent(),
        subtasks: plan.subtasks().len(),
        comments: plan.comments().len(),
        created_at: plan.created_at(),
        updated_at: plan.updated_at(),
        finished_at: plan.finished_at(),
        outcome: plan.outcome().map(str::to_string),
        run: None,
        working_on: {
            let names: Vec<&str> = plan
                .subtasks()
                .iter()
                .filter(|s| s.state() == SubtaskState::InProgress)
                .map(|s| s.name())
                .collect();
            (!names.is_empty()).then(|| names.join(", "))
        },
    }
}

impl Board {
    /// A page of the plans `filter` admits, each with its agent run (the
    /// newest, when a plan had several).
    async fn rows(
        &self,
        filter: &ListFilter,
    ) -> Result<(Vec<(PlanRow, Option<agent::RunRecord>)>, bool), BoardError> {
        let store = self.1.store();
        let store_error = |e| run_error(crate::runs::RunError::Store(e));
        let made_by_agent: HashSet<PlanId> = match filter.agent {
            Some(_) => store.agent_plans().await.map_err(store_error)?,
            None => HashSet::new(),
        };
        let verdicts = match filter.review {
            Some(_) => store.verdicts().await.map_err(store_error)?,
            None => HashMap::new(),
        };
        let keep = |plan: &Plan| {
            filter
                .agent
                .is_none_or(|agent| made_by_agent.contains(&plan.id()) == agent)
                && filter.review.is_none_or(|review| {
                    review.admits(verdicts.get(&plan.id()).map_or(&[], Vec::as_slice))
                })
        };
        let offset = filter.page as usize * PAGE_SIZE;
        // Newest first is the service's order, a page read at a time; an
        // order by what the runs spent needs every matching plan's run.
        let sorted = filter.sort != app::api::HistorySort::Newest;
        let (rows, more) = if sorted {
            self.0
                .list_where(&filter.query, keep, 0, usize::MAX, row)
                .await
        } else {
            self.0
                .list_where(&filter.query, keep, offset, PAGE_SIZE, row)
                .await
        };
        let ids: Vec<PlanId> = rows.iter().map(|r| r.id).collect();
        let mut runs: HashMap<PlanId, agent::RunRecord> = store
            .runs_on(&ids)
            .await
            .map_err(store_error)?
            .into_iter()
            .filter_map(|r| Some((r.plan_id?, r)))
            .collect();
        let mut rows: Vec<(PlanRow, Option<agent::RunRecord>)> = rows
            .into_iter()
            .map(|mut r| {
                let run = runs.remove(&r.id);
                r.run = run.as_ref().map(|run| run.state);
                (r, run)
            })
            .collect();
        if !sorted {
            return Ok((rows, more));
        }
        let took = |r: &PlanRow| r.finished_at.map(|end| end - r.created_at);
        // Biggest first; plans without a run (or not finished) last.
        match filter.sort {
            app::api::HistorySort::Cost => rows.sort_by_key(|(_, run)| {
                std::cmp::Reverse(run.as_ref().map(|r| (r.spent.cost, r.spent.tokens())))
            }),
            app::api::HistorySort::Tokens => rows
                .sort_by_key(|(_, run)| std::cmp::Reverse(run.as_ref().map(|r| r.spent.tokens()))),
            app::api::HistorySort::Took => {
                rows.sort_by_key(|(plan, _)| std::cmp::Reverse(took(plan)))
            }
            app::api::HistorySort::Newest => {}
        }
        let more = rows.len() > offset + PAGE_SIZE;
        let rows = rows.into_iter().skip(offset).take(PAGE_SIZE).collect();
        Ok((rows, more))
    }
}

#[async_trait::async_trait]
impl BoardBackend for Board {
    async fn list(&self, filter: &ListFilter) -> Result<PlanList, BoardError> {
        let (rows, more) = self.rows(filter).await?;
        let rows = rows.into_iter().map(|(row, _)| row).collect();
        Ok(PlanList { rows, more })
    }

    async fn history(&self, filter: &ListFilter) -> Result<HistoryList, BoardError> {
        let (rows, more) = self.rows(filter).await?;
        let mut verdicts = self.1.verdicts().await.map_err(run_error)?;
        let rows = rows
            .into_iter()
            .map(|(plan, run)| HistoryRow {
                verdicts: verdicts.remove(&plan.id).unwrap_or_default(),
                plan,
                tokens: run.as_ref().map(|run| run.spent.tokens()),
                cost: run.as_ref().map(|run| run.spent.cost),
                task: run.map(|run| run.config.task),
            })
            .collect();
        Ok(HistoryList { rows, more })
    }

    async fn review_panel(&self, plan: PlanId) -> Result<app::api::ReviewPanel, BoardError> {
        let (finished, subtasks) = self
            .0
            .read(plan, |p| {
                (
                    p.state().is_finished(),
                    p.subtasks()
                        .iter()
                        .map(|s| (s.id().0, s.name().to_string()))
                        .collect(),
                )
            })
            .await
            .ok_or_else(|| BoardError::NotFound(PlanError::UnknownPlan { id: plan }.to_string()))?;
        let run = self.run_on(plan).await?.map(|v| v.record);
        let again = self
            .1
            .store()
            .runs_again_of(plan)
            .await
            .map_err(|e| run_error(crate::runs::RunError::Store(e)))?
            .into_iter()
            .filter_map(|r| Some((r.plan_id?, r.again_of?.from.0)))
            .collect();
        Ok(app::api::ReviewPanel {
            finished,
            reviews: self.1.reviews_of(plan).await.map_err(run_error)?,
            subtasks,
            me: String::new(),
            can_review: false,
            run: run.as_ref().map(|r| r.id),
            again_of: run.and_then(|r| r.again_of),
            again,
        })
    }

    async fn review_queue(
        &self,
        filter: &ListFilter,
    ) -> Result<app::api::ReviewQueueList, BoardError> {
        let made_by_agent: HashSet<PlanId> = match filter.agent {
            Some(_) => self
                .1
                .store()
                .agent_plans()
                .await
                .map_err(|e| run_error(crate::runs::RunError::Store(e)))?,
            None => HashSet::new(),
        };
        let keep = |plan: &Plan| {
            filter.query.mode.is_none_or(|m| plan.mode() == m)
                && filter
                    .agent
                    .is_none_or(|agent| made_by_agent.contains(&plan.id()) == agent)
        };
        let offset = filter.page as usize * PAGE_SIZE;
        let (rows, total) = self
            .1
            .review_queue(offset, PAGE_SIZE, keep)
            .await
            .map_err(run_error)?;
        Ok(app::api::ReviewQueueList {
            more: total > offset + rows.len(),
            rows,
            total,
        })
    }

    async fn log(&self, id: PlanId) -> Result<Vec<LogEntry>, BoardError> {
        if self.0.read(id, |_| ()).await.is_none() {
            return Err(BoardError::NotFound(
                PlanError::UnknownPlan { id }.to_string(),
            ));
        }
        let mut log = Vec::new();
        let mut after = 0;
        loop {
            let rows = self
                .0
                .events(id, after, PAGE)
                .await
                .map_err(to_board_error)?;
            let full = rows.len() == PAGE as usize;
            for r in rows {
                after = r.seq;
                log.push(LogEntry {
                    seq: r.seq,
                    event: serde_json::from_value(r.event).ok(),
                });
            }
            if !full {
                return Ok(log);
            }
        }
    }

    async fn command(&self, id: PlanId, command: Command, actor: &str) -> Result<u64, BoardError> {
        self.0
            .command(id, &command, actor)
            .await
            .map(|(plan, _)| plan.version())
            .map_err(to_board_error)
    }

    async fn create(&self, mut spec: NewPlan, actor: &str) -> Result<PlanId, BoardError> {
        spec.id = uuid::Uuid::new_v4();
        self.0
            .create(spec, actor)
            .await
            .map(|plan| plan.id())
            .map_err(to_board_error)
    }

    fn agent(&self) -> AgentInfo {
        AgentInfo {
            model: self.1.model_name(),
            tools: self
                .1
                .tools()
                .iter()
                .map(|t| (t.name.clone(), t.description.clone()))
                .collect(),
            code_runner_off: self.1.sandbox_unavailable().map(|e| e.reason().to_string()),
            model_waiting: self.1.model_name().is_some() && !self.1.model_answers(),
        }
    }

    async fn activity(
        &self,
        plan: PlanId,
        subtask: Option<u32>,
    ) -> Result<ActivityLog, BoardError> {
        let plan_title = self
            .0
            .read(plan, |p| p.title().to_string())
            .await
            .ok_or_else(|| BoardError::NotFound(PlanError::UnknownPlan { id: plan }.to_string()))?;
        let Some(run) = self.run_on(plan).await?.map(|r| r.record.id) else {
            return Ok(ActivityLog {
                plan_title,
                run_id: None,
                rows: Vec::new(),
                cost: None,
                artifacts: Vec::new(),
            });
        };
        // The panel's reader with no limit: one place turns entries into
        // lines and picks a subtask's.
        let rows = read_tail(&*self.1.store(), run, subtask, usize::MAX, 500)
            .await
            .map_err(|e| run_error(e.into()))?
            .rows;
        let artifacts = self
            .1
            .artifacts(run)
            .await
            .map_err(run_error)?
            .into_iter()
            .map(|a| app::api::FileRow {
                path: a.path,
                bytes: a.bytes,
                preview: a.preview,
            })
            .collect();
        let cost = self.1.cost(run).await.map_err(run_error)?;
        Ok(ActivityLog {
            plan_title,
            run_id: Some(run),
            rows,
            cost: Some(cost),
            artifacts,
        })
    }

    async fn tools_overview(
        &self,
    ) -> Result<(Vec<(String, String)>, Vec<run_model::ToolServerView>), BoardError> {
        let builtin = self
            .1
            .builtin_tools()
            .iter()
            .map(|t| (t.name.clone(), t.description.clone()))
            .collect();
        Ok((builtin, self.1.tool_servers().views()))
    }

    async fn webhook_settings(&self) -> Result<app::api::WebhookSettings, BoardError> {
        let store = self.1.store();
        let store_error = |e| run_error(crate::runs::RunError::Store(e));
        let shown = crate::webhooks::shown_url;
        let mut endpoints: Vec<app::api::EndpointRow> = self
            .2
            .endpoints
            .iter()
            .map(|e| app::api::EndpointRow {
                id: None,
                url: shown(e.url.as_str()),
                signed: e.secret.is_some(),
                slack: e.slack,
            })
            .collect();
        for e in store.webhook_endpoints().await.map_err(store_error)? {
            endpoints.push(app::api::EndpointRow {
                id: Some(e.id),
                url: shown(&e.url),
                signed: e.secret.is_some(),
                slack: e.slack,
            });
        }
        let deliveries = store
            .deliveries(20)
            .await
            .map_err(store_error)?
            .into_iter()
            .map(|d| app::api::DeliveryRow {
                event: d.event,
                endpoint: shown(&d.endpoint),
                plan_id: d.plan_id,
                status: d.status,
                attempts: d.attempts,
                last_status: d.last_status,
                last_error: d.last_error,
                created_at: d.created_at,
            })
            .collect();
        Ok(app::api::WebhookSettings {
            endpoints,
            deliveries,
        })
    }

    async fn needs(&self) -> Result<Vec<run_model::Need>, BoardError> {
        self.1.needs().await.map_err(run_error)
    }

    async fn templates(&self) -> Result<Vec<run_model::Template>, BoardError> {
        self.1.templates(0, 200).await.map_err(run_error)
    }

    async fn memories(&self, query: &str, page: u32) -> Result<app::api::MemoryList, BoardError> {
        let per = app::api::MEMORIES_PER_PAGE;
        let query = query.trim();
        // One more than a page: whether there is a next one.
        let mut rows = self
            .1
            .memories(
                (!query.is_empty()).then_some(query),
                page.saturating_mul(per),
                per + 1,
            )
            .await
            .map_err(run_error)?;
        let more = rows.len() > per as usize;
        rows.truncate(per as usize);
        Ok(app::api::MemoryList { rows, more })
    }

    async fn activity_tail(
        &self,
        plan: PlanId,
        subtask: Option<u32>,
        limit: usize,
    ) -> Result<ActivityTail, BoardError> {
        let Some(run) = self.run_on(plan).await?.map(|r| r.record.id) else {
            return Ok(ActivityTail {
                rows: Vec::new(),
                total: Some(0),
            });
        };
        read_tail(&*self.1.store(), run, subtask, limit, 200)
            .await
            .map_err(|e| run_error(e.into()))
    }

    async fn run_of(&self, plan: PlanId) -> Result<Option<RunPanel>, BoardError> {
        let Some(view) = self.run_on(plan).await? else {
            return Ok(None);
        };
        let pending = self
            .1
            .pending_calls(view.record.id)
            .await
            .map_err(run_error)?
            .into_iter()
            .map(|p| app::api::PendingTool {
                shown: ["code", "command", "url"]
                    .iter()
                    .find_map(|k| p.arguments.get(*k).and_then(|v| v.as_str()))
                    .map(str::to_string),
                arguments: serde_json::to_string_pretty(&p.arguments).unwrap_or_default(),
                call: p.call,
                subtask: p.subtask.0,
                name: p.name,
            })
            .collect();
        Ok(Some(view).map(|view| {
            let r = view.record;
            let progress = view.progress;
            // A run in batches counts its input's items: the plan holds
            // only the batches planned so far.
            let (settled, total, eta_ms) = match &view.batch_view {
                Some(b) => (b.covered, b.total_items, b.eta_ms),
                None => (
                    progress.done + progress.skipped,
                    progress.total,
                    progress.eta_ms,
                ),
            };
            RunPanel {
                percent: (settled * 100)
                    .checked_div(total)
                    .map_or(0, |p| p.min(100) as u8),
                wall_secs: r.spent.wall_ms / 1000,
                max_wall_secs: r.config.budget.max_wall_secs,
                eta_secs: eta_ms.map(|ms| ms.div_ceil(1000)),
                batches: view.batch_view,
                run_id: r.id,
                state: r.state,
                reason: r.reason,
                mode: r.classification.as_ref().map(|c| c.mode),
                mode_reason: r.classification.as_ref().map(|c| c.reason.clone()),
                decided_by: r.classification.as_ref().map(|c| c.by),
                llm_calls: r.spent.llm_calls,
                tokens: r.spent.tokens(),
                max_tokens: r.config.budget.max_tokens,
                cost: r.spent.cost,
                max_cost: r.config.budget.max_cost,
                unpriced_calls: r.spent.unpriced_calls,
                answer: r.answer,
                pending,
            }
        }))
    }
}

impl Board {
    /// Starts a run from the task box, with the files staged for it;
    /// returns its plan.
    async fn start_task(
        &self,
        spec: TaskSpec,
        files: Option<crate::runs::inputs::Staged>,
        actor: &str,
        trace: Option<run_model::TraceParent>,
    ) -> Result<PlanId, BoardError> {
        // The task itself is checked where every run starts (`Runs::start_with`).
        let config = agent::RunConfig {
            task: spec.task,
            mode: spec.mode,
            approval_required: spec.approval_required,
            max_parallel: spec.max_parallel.clamp(1, agent::run::MAX_PARALLEL),
            budget: agent::Budget {
                max_tokens: spec.max_tokens,
                max_wall_secs: spec.max_wall_secs,
                max_cost: spec.max_cost,
                ..agent::Budget::default()
            },
            tools: spec.tools,
            inputs: Vec::new(),
            policies: Default::default(),
            batches: spec.batches,
            ..agent::RunConfig::default()
        };
        let view = self
            .1
            .start_with(config, spec.template, files, actor, trace)
            .await
            .map_err(run_error)?;
        view.record
            .plan_id
            .ok_or_else(|| BoardError::Unavailable("the run has no plan".into()))
    }
}

fn run_error(e: crate::runs::RunError) -> BoardError {
    board_error(e.into())
}

/// The task box's form as posted (every field as text, so a bad one is a
/// refusal with a sentence rather than a bare 422).
#[derive(Debug, Default)]
pub struct TaskForm {
    task: String,
    mode: String,
    max_parallel: String,
    /// Empty: the default budget.
    max_tokens: String,
    max_minutes: String,
    /// US dollars; empty: no limit.
    max_cost: String,
    /// A checkbox: present when ticked.
    approval: Option<String>,
    /// The tools ticked; `tools_chosen` says the form had the choice (so
    /// none ticked means none, not all).
    tools: Vec<String>,
    tools_chosen: bool,
    /// An allowed folder to start from (when the operator set roots).
    source: String,
    /// A template's id; empty: none.
    template: String,
    /// The file to go through in batches; empty: none.
    batch_input: String,
    batch_size: String,
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
            form.set(&name, value);
        }
        Ok(form)
    }

    /// One text field.
    fn set(&mut self, name: &str, text: String) {
        match name {
            "task" => self.task = text,
            "mode" => self.mode = text,
            "max_parallel" => self.max_parallel = text,
            "max_tokens" => self.max_tokens = text,
            "max_minutes" => self.max_minutes = text,
            "max_cost" => self.max_cost = text,
            "approval" => self.approval = Some(text),
            "tool" => self.tools.push(text),
            "tools_chosen" => self.tools_chosen = true,
            "source" => self.source = text,
            "template" => self.template = text,
            "batch_input" => self.batch_input = text,
            "batch_size" => self.batch_size = text,
            _ => {}
        }
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
            form.set(&name, text);
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

/// The task box's form as a task, its empty numbers the run's defaults.
fn task_spec(form: &TaskForm, lang: plan_engine::Lang) -> Result<TaskSpec, BoardError> {
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
    let max_minutes = form_number(
        &form.max_minutes,
        defaults.budget.max_wall_secs / 60,
        1..=24 * 60,
        lang.pick("Time budget (minutes)", "时间预算（分钟）"),
        lang,
    )?;
    let max_cost = match form.max_cost.trim().trim_start_matches('$') {
        "" => None,
        text => Some(
            text.parse::<f64>()
                .ok()
                .filter(|d| *d > 0.0 && *d <= 1e6)
                .and_then(run_model::Usd::from_dollars)
                .ok_or_else(|| {
                    BoardError::Refused(lang.pick(
                        format!("'Cost budget (USD)' must be an amount of dollars above 0 and up to 1000000, not '{text}'"),
                        format!("“费用预算（美元）”必须是大于 0、不超过 1000000 的美元金额，而不是“{text}”"),
                    ))
                })?,
        ),
    };
    let mode = form.mode.parse::<agent::ModeChoice>().map_err(|_| {
        BoardError::Refused(lang.pick(
            format!("no mode is called {}", form.mode),
            format!("没有名为 {} 的模式", form.mode),
        ))
    })?;
    let template = match form.template.trim() {
        "" => None,
        id => Some(id.parse::<run_model::TemplateId>().map_err(|_| {
            BoardError::Refused(lang.pick(
                format!("'{id}' is not a template id"),
                format!("“{id}”不是模板编号"),
            ))
        })?),
    };
    let batches = match form.batch_input.trim() {
        "" => None,
        input => Some(run_model::Batching {
            input: input.to_string(),
            size: form_number(
                &form.batch_size,
                u64::from(run_model::batch::DEFAULT_BATCH_SIZE),
                1..=u64::from(run_model::batch::MAX_BATCH_SIZE),
                lang.pick("Items per batch", "每批项目数"),
                lang,
            )? as u32,
        }),
    };
    Ok(TaskSpec {
        task: form.task.clone(),
        template,
        batches,
        mode,
        approval_required: form.approval.is_some(),
        // Within MAX_PARALLEL, a u32, by the range above.
        max_parallel: max_parallel as u32,
        max_tokens,
        max_wall_secs: max_minutes * 60,
        max_cost,
        tools: form.tools_chosen.then(|| form.tools.clone()),
    })
}

/// `POST /plans/new/task`: starts a run from the task box and opens its
/// plan's board. A refusal goes back to the form with the reason in the
/// person's language and the task as they typed it.
pub async fn start_task_form(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
    axum::Extension(viewer): axum::Extension<app::api::Viewer>,
    headers: axum::http::HeaderMap,
    request: axum::extract::Request,
) -> axum::response::Redirect {
    let lang = app::i18n::from_headers(&headers);
    let back = |e: &BoardError, task: &str| {
        let query = serde_urlencoded::to_string([
            ("task_error", app::board::explain(e, lang)),
            ("task", task.to_string()),
        ])
        .unwrap_or_default();
        axum::response::Redirect::to(&format!("/plans/new?{query}"))
    };
    let trace = request
        .extensions()
        .get::<crate::telemetry::RequestTrace>()
        .map(|t| t.0);
    let mut form = match TaskForm::from_request(request).await {
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
            return back(&e, "");
        }
    };
    let result = if let Err(refused) = viewer.may_change(("plans", "计划"), lang) {
        Err(refused)
    } else {
        match task_spec(&form, lang) {
            Ok(spec) => match board.stage(&mut form).await {
                Ok(files) => board.start_task(spec, files, &viewer.name, trace).await,
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        }
    };
    match result {
        Ok(plan) => axum::response::Redirect::to(&format!("/plans/{plan}")),
        Err(e) => back(&e, &form.task),
    }
}

impl Board {
    /// The task box's files and folder, staged for the run.
    async fn stage(
        &self,
        form: &mut TaskForm,
    ) -> Result<Option<crate::runs::inputs::Staged>, BoardError> {
        let files = std::mem::take(&mut form.files);
        let source = form.source.trim();
        match (files.is_empty(), source.is_empty()) {
            (true, true) => Ok(None),
            (false, true) => self
                .1
                .stage_uploads(files)
                .await
                .map(Some)
                .map_err(run_error),
            (true, false) => self
                .1
                .stage_folder(source)
                .await
                .map(Some)
                .map_err(run_error),
            (false, false) => Err(BoardError::Refused(
                "give files or a folder to start from, not both".into(),
            )),
        }
    }
}

/// `GET /plans/{id}/gantt.svg`: the plan's Gantt chart, with the tokens its
/// run's model calls spent per subtask; the board shows it as an image.
pub async fn gantt(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
    axum::extract::Path(id): axum::extract::Path<String>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let lang = app::i18n::from_headers(&headers);
    let Some(plan) = id.parse::<PlanId>().ok() else {
        return (axum::http::StatusCode::NOT_FOUND, "no such plan").into_response();
    };
    let Some(found) = board.0.get(plan).await else {
        return (axum::http::StatusCode::NOT_FOUND, "no such plan").into_response();
    };
    let used = board.use_by_subtask(plan).await;
    let svg = plan_engine::gantt::gantt_svg(&found, chrono::Utc::now(), &used, lang);
    (
        [
            (
                axum::http::header::CONTENT_TYPE,
                "image/svg+xml; charset=utf-8",
            ),
            (axum::http::header::CACHE_CONTROL, "no-store"),
        ],
        svg,
    )
        .into_response()
}

impl Board {
    /// Tokens and money the plan's run spent per subtask, from its
    /// `llm_call` entries (none when it has no run or its log cannot be
    /// read: the chart then shows the bars alone).
    async fn use_by_subtask(&self, plan: PlanId) -> Vec<plan_engine::gantt::SubtaskUse> {
        let Ok(Some(run)) = self.run_on(plan).await else {
            return Vec::new();
        };
        let Ok(report) = self.1.cost(run.record.id).await else {
            return Vec::new();
        };
        report
            .by_subtask
            .into_iter()
            .filter_map(|s| {
                Some(plan_engine::gantt::SubtaskUse {
                    subtask: s.subtask?,
                    tokens: s.used.tokens(),
                    // Only a priced call has a cost to show.
                    cost: (s.used.unpriced_calls < s.used.calls).then(|| s.used.cost.to_string()),
                })
            })
            .collect()
    }

    /// The run working on `plan` (the newest, if there were several).
    async fn run_on(&self, plan: PlanId) -> Result<Option<crate::runs::RunView>, BoardError> {
        let runs = self
            .1
            .list(None, Some(plan), 0, 1)
            .await
            .map_err(run_error)?;
        Ok(runs.into_iter().next())
    }
}

/// The newest `limit` activity lines of `run` (about `subtask` if given),
/// read back from the log's end `page` entries at a time, so a panel on a
/// long run reads what it shows, not the whole log.
async fn read_tail(
    store: &dyn crate::store::RunStore,
    run: agent::RunId,
    subtask: Option<u32>,
    limit: usize,
    page: u32,
) -> Result<ActivityTail, StoreError> {
    let mut rows = Vec::new();
    let mut before = i64::MAX;
    let mut read_all = false;
    'pages: while rows.len() < limit {
        let entries = store.run_log_before(run, before, page).await?;
        let last = entries.len() < page as usize;
        let mut entries = entries.into_iter().peekable();
        while let Some(stored) = entries.next() {
            before = stored.seq;
            let Ok(entry) = serde_json::from_value(stored.entry) else {
                continue;
            };
            let line = activity_of(stored.at, entry);
            if subtask.is_none() || line.subtask == subtask {
                rows.push(line);
                if rows.len() == limit {
                    read_all = last && entries.peek().is_none();
                    break 'pages;
                }
            }
        }
        if last {
            read_all = true;
            break;
        }
    }
    rows.reverse();
    let total = match (read_all, subtask) {
        (true, _) => Some(rows.len()),
        (false, None) => Some(store.run_log_len(run).await? as usize),
        (false, Some(_)) => None,
    };
    Ok(ActivityTail { rows, total })
}

/// One run-log entry as a line of the activity page.
fn activity_of(at: plan_engine::Timestamp, entry: agent::RunEntry) -> Activity {
    use agent::RunEntry as E;
    let kind = entry.kind();
    let line = |subtask: Option<u32>, summary: String, detail: Option<String>, ok: bool| Activity {
        at,
        kind,
        subtask,
        summary,
        detail,
        ok,
        retry_in_secs: None,
    };
    // Whole seconds still to wait for a retry, rounded up, from now.
    let countdown = |delay_ms: u64| {
        let waited = (chrono::Utc::now() - at).num_milliseconds().max(0) as u64;
        delay_ms.saturating_sub(waited).div_ceil(1000)
    };
    match entry {
        E::LlmCall(c) => {
            let mut summary = format!(
                "{} · {} · attempt {} · {} → {} tokens · {} ms",
                c.role, c.model, c.attempt, c.prompt_tokens, c.completion_tokens, c.latency_ms
            );
            if let Some(cost) = c.cost {
                summary.push_str(&format!(" · {cost}"));
            }
            if let Some(finish) = &c.finish_reason {
                summary.push_str(&format!(" · {finish}"));
            }
            if let Some(error) = &c.error {
                summary.push_str(&format!(" · {error}"));
            }
            let ok = c.error.is_none();
            line(c.subtask.map(|s| s.0), summary, Some(c.transcript), ok)
        }
        E::ToolCall {
            subtask,
            name,
            arguments,
            result,
            ok,
            duration_ms,
        } => line(
            Some(subtask.0),
            format!(
                "{name} · {} · {duration_ms} ms",
                if ok { "ok" } else { "error" }
            ),
            Some(format!("arguments: {arguments}\n\nresult:\n{result}")),
            ok,
        ),
        E::RetryScheduled {
            role,
            attempt,
            delay_ms,
            class,
            error,
        } => Activity {
            retry_in_secs: Some(countdown(delay_ms)),
            ..line(
                None,
                format!(
                    "{role} attempt {attempt} failed ({class}: {error}); again in {delay_ms} ms"
                ),
                None,
                false,
            )
        },
        E::ToolRetryScheduled {
            subtask,
            name,
            attempt,
            delay_ms,
            error,
        } => Activity {
            retry_in_secs: Some(countdown(delay_ms)),
            ..line(
                Some(subtask.0),
                format!("{name} attempt {attempt} failed ({error}); again in {delay_ms} ms"),
                None,
                false,
            )
        },
        E::SubtaskRetry {
            subtask,
            attempt,
            of,
            delay_ms,
            reason,
        } => Activity {
            retry_in_secs: Some(countdown(delay_ms)),
            ..line(
                Some(subtask.0),
                format!("attempt {attempt} of {of} failed ({reason}); again in {delay_ms} ms"),
                None,
                false,
            )
        },
        E::Recovery {
            subtask,
            decision,
            reason,
            replacement,
        } => line(
            Some(subtask.0),
            match replacement {
                Some(new) => format!("{decision}: replaced by #{} · {reason}", new.0),
                None => format!("{decision} · {reason}"),
            },
            None,
            decision != agent::run::RecoveryDecision::GiveUp,
        ),
        E::Recalled { memories } => line(
            None,
            format!("{} memories of earlier runs", memories.len()),
            Some(
                memories
                    .iter()
                    .map(|m| format!("- [{}] {}", m.kind, m.excerpt))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            true,
        ),
        E::Remembered { count } => line(None, format!("{count} memories kept"), None, true),
        E::ToolApproval {
            subtask,
            name,
            arguments,
            ..
        } => line(
            Some(subtask.0),
            format!("{name} waits for a person's approval"),
            Some(format!("arguments: {arguments}")),
            true,
        ),
        E::ToolDecision {
            verdict,
            by,
            reason,
            arguments,
            ..
        } => line(
            None,
            format!(
                "{verdict} by {by}{}",
                reason.map(|r| format!(": {r}")).unwrap_or_default()
            ),
            arguments.map(|a| format!("arguments: {a}")),
            !matches!(verdict, agent::run::Verdict::Denied),
        ),
        E::SubtaskResult {
            subtask,
            ok,
            text,
            duration_ms,
        } => line(
            Some(subtask.0),
            format!("{text} · {duration_ms} ms"),
            None,
            ok,
        ),
        E::Overridden { subtask, now } => line(
            Some(subtask.0),
            format!(
                "a person moved it to {}; the agent's late result was dropped",
                now.map_or("deleted".to_string(), |s| s.to_string())
            ),
            None,
            true,
        ),
        E::Asked { subtask, question } => line(Some(subtask.0), question, None, true),
        E::StateChanged { to, reason, .. } => line(None, format!("{to} · {reason}"), None, true),
        E::Classified(c) => line(
            None,
            format!("{} · {}", c.mode.as_str(), c.reason),
            None,
            true,
        ),
        E::PlanProposed {
            round, subtasks, ..
        } => line(
            None,
            format!("round {round}: {subtasks} subtasks"),
            None,
            true,
        ),
        E::PlanRepaired { repairs } => line(None, repairs.join("; "), None, true),
        E::Rejected { comment, round } => {
            line(None, format!("round {round}: {comment}"), None, true)
        }
        E::PlanAdjusted { reason, changes } => {
            line(None, format!("{changes} changes: {reason}"), None, true)
        }
        E::BudgetReached { what } => line(None, what, None, false),
        E::PeopleChanged { summary } => line(None, summary, None, true),
        E::BatchPlanned {
            batch,
            retried,
            new,
            subtasks,
        } => line(
            None,
            format!("batch {batch}: {new} new items, {retried} planned again, {subtasks} subtasks"),
            None,
            true,
        ),
        E::BatchFinished(b) => line(
            None,
            format!(
                "batch {}: {} of {} items succeeded, {} failed, {:.1} s{}",
                b.batch,
                b.succeeded,
                b.items,
                b.failed,
                b.ms as f64 / 1000.0,
                if b.failures.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", b.failures.join("; "))
                }
            ),
            None,
            b.failed == 0,
        ),
        E::Answer { text } => line(None, text, None, true),
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
            .1
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
        let run = board
            .run_on(plan)
            .await?
            .ok_or_else(|| BoardError::NotFound("no agent run works on this plan".into()))?;
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
            .1
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
                .1
                .pin(id, form.pinned == "true")
                .await
                .map(|_| ())
                .map_err(run_error),
            "forget" => board.1.forget(id).await.map_err(run_error),
            "edit" => board
                .1
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
                .1
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
            .1
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
            .1
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
            .1
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
        board.1.delete_template(id).await.map_err(run_error)?;
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
        Ok(ops) => match board.0.execute(on.plan, ops, &on.viewer.name).await {
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
            (status, app::board::explain(&e, lang)).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NewRunEntry, RunStore, SqlStore};

    #[tokio::test]
    async fn the_panels_tail_is_the_newest_lines_read_back_page_by_page() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("tail.db").display());
        let store = SqlStore::connect(&url).await.unwrap();
        let run = uuid::Uuid::new_v4();
        // Seven lines: on subtask 1 at 0, 2, 4, 6; about the plan between.
        let entries: Vec<NewRunEntry> = (0..7u32)
            .map(|i| {
                let entry = if i % 2 == 0 {
                    agent::RunEntry::Asked {
                        subtask: plan_engine::SubtaskId(1),
                        question: format!("todo {i}"),
                    }
                } else {
                    agent::RunEntry::PeopleChanged {
                        summary: format!("change {i}"),
                    }
                };
                let kind = entry.kind();
                let entry = serde_json::to_value(&entry).unwrap();
                NewRunEntry {
                    run,
                    plan: None,
                    kind,
                    at: chrono::Utc::now(),
                    entry,
                }
            })
            .collect();
        store.append_run_log(&entries).await.unwrap();
        let said = |tail: &ActivityTail| -> Vec<String> {
            tail.rows.iter().map(|a| a.summary.clone()).collect()
        };
        let newest = read_tail(&store, run, None, 3, 2).await.unwrap();
        assert!(said(&newest)[0].contains("todo 4"), "{:?}", said(&newest));
        assert_eq!(said(&newest)[1..], ["change 5", "todo 6"]);
        assert_eq!(newest.total, Some(7), "counted, not read");
        let on_one = read_tail(&store, run, Some(1), 2, 2).await.unwrap();
        assert_eq!(on_one.rows.len(), 2);
        assert!(said(&on_one)[0].contains("todo 4") && said(&on_one)[1].contains("todo 6"));
        assert_eq!(
            on_one.total, None,
            "a subtask's count would need the whole log"
        );
        let all_of_one = read_tail(&store, run, Some(1), 10, 2).await.unwrap();
        assert_eq!(all_of_one.rows.len(), 4);
        assert!(said(&all_of_one)[0].contains("todo 0"));
        assert_eq!(all_of_one.total, Some(4), "read to the start");
        let exact = read_tail(&store, run, None, 7, 7).await.unwrap();
        assert_eq!(exact.total, Some(7));
        assert_eq!(
            read_tail(&store, run, None, 40, 200)
                .await
                .unwrap()
                .rows
                .len(),
            7
        );
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
    let store = board.1.store();
    let result = async {
        viewer.may_manage(("webhooks", "Webhook"), lang)?;
        let store_error = |e| run_error(crate::runs::RunError::Store(e));
        match change {
            WebhookChange::Remove(id) => {
                let id: uuid::Uuid = id
                    .parse()
                    .map_err(|_| BoardError::NotFound(format!("'{id}' is not an endpoint id")))?;
                match store
                    .remove_webhook_endpoint(id)
                    .await
                    .map_err(store_error)?
                {
                    true => Ok(()),
                    false => Err(BoardError::NotFound(format!(
                        "no webhook endpoint has id {id}"
                    ))),
                }
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
                .map_err(|e| BoardError::Refused(e.message()))?;
                let configured = board
                    .2
                    .endpoints
                    .iter()
                    .any(|e| e.url.as_str() == endpoint.url);
                if configured
                    || !store
                        .add_webhook_endpoint(&endpoint)
                        .await
                        .map_err(store_error)?
                {
                    return Err(BoardError::Refused(lang.pick(
                        "an endpoint with this URL exists already".to_string(),
                        "已有相同 URL 的端点".to_string(),
                    )));
                }
                Ok(())
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

fn tool_server_error(e: crate::runs::tool_servers::ToolServerError) -> BoardError {
    use crate::runs::tool_servers::ToolServerError as E;
    match e {
        E::NotFound(_) => BoardError::NotFound(e.to_string()),
        E::Store(e) => run_error(crate::runs::RunError::Store(e)),
        other => BoardError::Refused(other.to_string()),
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
    let store = board.1.store();
    let servers = board.1.tool_servers();
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
        .map_err(tool_server_error)
    }
    .await;
    form_answer(result.map(|()| "/tools".to_string()), lang)
}
