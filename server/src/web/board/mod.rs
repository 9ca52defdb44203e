//! The board's backend: the app's [`BoardBackend`] over the plan service,
//! so the board's reads and changes take the same path as the agents'.
//!
//! # Layout
//! - this file: [`Board`] (the plan service, the runs and the webhook
//!   settings), the board's reading of the API's errors, the
//!   [`BoardBackend`] the app's server functions call, and [`routes`], the
//!   board's own routes (its forms and the Gantt chart) in one list;
//! - `activity.rs`: a run's log read back as activity lines (the panel's
//!   tail, the activity page);
//! - `forms/`: the plain forms the board posts, one file per page (the
//!   task box, a plan's board and run header, reviews, templates,
//!   memories, settings, tools), each form a typed struct and each
//!   handler a route that changes one thing and redirects back;
//! - `gantt.rs`: `GET /plans/{id}/gantt.svg`, a window of the Gantt chart.

mod activity;
pub mod forms;
pub mod gantt;

use activity::read_tail;

use std::sync::Arc;

use std::collections::{HashMap, HashSet};

use app::api::{
    ActivityLog, ActivityTail, AgentInfo, BoardBackend, BoardError, HistoryList, HistoryRow,
    ListFilter, LogEntry, PlanList, PlanRow, RunPanel, PAGE_SIZE,
};
use plan_engine::{ApprovalStatus, Command, NewPlan, Plan, PlanError, PlanId, SubtaskState};

use crate::pages::Pages;
use crate::service::ServiceError;
use crate::store::StoreError;

/// Log rows read per query.
const PAGE: u32 = 1000;

/// Where the app's server functions are served (their `prefix`).
pub const SERVER_FN_PREFIX: &str = "/_board/";

/// The largest body a server function takes: a whole plan
/// (`create_plan`), as the API's `POST /api/plans` takes one. None takes
/// files (the task box is a plain form with its own limit).
pub const SERVER_FN_BODY_LIMIT: usize = crate::web::api::BODY_LIMIT;

/// Middleware for the site: Leptos reads a server function's body whole,
/// with no limit, so it is bounded here first (a 413 past
/// [`SERVER_FN_BODY_LIMIT`]). Other routes keep their own limits.
pub async fn bounded_server_fn_bodies(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if request.uri().path().starts_with(SERVER_FN_PREFIX) {
        let limit = axum::extract::State(SERVER_FN_BODY_LIMIT);
        crate::web::api::extract::bounded_body(limit, request, next).await
    } else {
        next.run(request).await
    }
}

/// The board's own routes beside its pages, from one list as
/// [`crate::web::api::routes`] lists the API's: the plain forms (their paths
/// are the pages' form actions) and the Gantt chart, each handed the
/// board. The task box alone takes files, so its body may be as large as
/// a run's uploads.
pub fn routes<S: Clone + Send + Sync + 'static>(board: Arc<Board>) -> axum::Router<S> {
    use axum::routing::{get, post};
    use forms::{cases, memories, reviews, run, settings, task, templates, tools};
    let uploads = axum::extract::DefaultBodyLimit::max(crate::services::UPLOAD_BODY_LIMIT);
    axum::Router::new()
        .route(
            app::pages::task::TASK_ROUTE,
            post(task::start_task).layer(uploads),
        )
        .route("/plans/{id}/gantt.svg", get(gantt::gantt))
        .route("/plans/{id}/replan", post(run::replan))
        .route("/plans/{id}/answer", post(run::answer))
        .route("/plans/{id}/agent", post(run::agent_work))
        .route("/plans/{id}/budget", post(run::budget))
        .route("/plans/{id}/tool-call", post(run::tool_call))
        .route("/plans/{id}/approve-card", post(run::approve_card))
        .route("/plans/{id}/revoke-grant", post(run::revoke_grant))
        .route("/plans/{id}/start", post(run::start_held))
        .route("/plans/{id}/again", post(reviews::again))
        .route("/plans/{id}/replay", post(reviews::replay))
        .route("/plans/{id}/review", post(reviews::review))
        .route("/plans/{id}/template", post(templates::save))
        .route("/templates/{id}/delete", post(templates::delete))
        .route("/cases/run", post(cases::run_suite))
        .route("/cases/runs/{id}/cancel", post(cases::cancel_suite))
        .route("/cases/{id}/{action}", post(cases::change))
        .route("/memories/rule", post(memories::rule))
        .route("/approvals/insights/apply", post(run::apply_policy))
        .route("/memories/{id}/{action}", post(memories::change))
        .route("/settings/webhooks", post(settings::add_webhook))
        .route(
            "/settings/webhooks/{id}/remove",
            post(settings::remove_webhook),
        )
        .route("/tools/servers", post(tools::add_server))
        .route("/tools/servers/{name}/{action}", post(tools::server_action))
        .route("/tools/agents", post(tools::add_agent))
        .route("/tools/agents/{name}/{action}", post(tools::agent_action))
        .with_state(board)
}

pub struct Board(pub crate::services::Services);

/// The board's forms and server functions reach the services as fields
/// (`board.runs`), like the API's handlers.
impl std::ops::Deref for Board {
    type Target = crate::services::Services;

    fn deref(&self) -> &crate::services::Services {
        &self.0
    }
}

/// The board's reading of the server's one mapping of errors
/// ([`ApiError`](crate::web::api::error::ApiError), which logs what the server
/// did wrong): a missing thing, a refusal of the person's role and a stale
/// version keep the board's kinds (its pages act on them), everything else
/// carries the API's status, code and sentence, so a form, a server
/// function and the API answer one error with one status.
fn board_error(e: crate::web::api::error::ApiError) -> BoardError {
    use crate::web::api::error::ApiError as A;
    match e {
        A::NotFound(m) => BoardError::NotFound(m),
        A::Forbidden(m) => BoardError::Forbidden(m),
        A::Conflict {
            message,
            current_version,
        } => BoardError::Stale {
            message,
            current_version,
        },
        other => BoardError::Server {
            status: other.status().as_u16(),
            code: other.code().to_string(),
            message: other.message(),
        },
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
        let store = self.runs.store();
        let store_error = api_error::<StoreError>;
        let made_by_agent: HashSet<PlanId> = match filter.agent {
            Some(_) => store.agent_plans().await.map_err(store_error)?,
            None => HashSet::new(),
        };
        let verdicts = match filter.review {
            Some(_) => self.reviews.verdicts().await.map_err(api_error)?,
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
            self.plans
                .list_where(&filter.query, keep, 0, usize::MAX, row)
                .await
        } else {
            self.plans
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
        let mut verdicts = self.reviews.verdicts().await.map_err(api_error)?;
        let rows = rows
            .into_iter()
            .map(|(plan, run)| HistoryRow {
                verdicts: verdicts.remove(&plan.id).unwrap_or_default(),
                plan,
                tokens: run.as_ref().map(|run| run.spent.tokens()),
                cost: run.as_ref().map(|run| run.spent.cost),
                run_id: run.as_ref().map(|run| run.id),
                compare_with: run.as_ref().and_then(|run| {
                    run.config
                        .replay
                        .as_ref()
                        .map(|replay| replay.run)
                        .or(run.again_of.as_ref().map(|again| again.run))
                }),
                task: run.map(|run| run.config.task),
            })
            .collect();
        Ok(HistoryList { rows, more })
    }

    async fn review_panel(&self, plan: PlanId) -> Result<app::api::ReviewPanel, BoardError> {
        let (finished, subtasks) = self
            .plans
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
            .runs
            .store()
            .runs_again_of(plan)
            .await
            .map_err(api_error::<StoreError>)?
            .into_iter()
            .filter_map(|r| Some((r.plan_id?, r.again_of?.from.0)))
            .collect();
        let case = match &run {
            Some(r) => self.cases.case_of_run(r.id).await.map_err(api_error)?,
            None => None,
        };
        Ok(app::api::ReviewPanel {
            finished,
            reviews: self.reviews.of_plan(plan).await.map_err(api_error)?,
            subtasks,
            me: String::new(),
            can_review: false,
            run: run.as_ref().map(|r| r.id),
            case,
            finding_of: run
                .as_ref()
                .and_then(|r| r.config.case.as_ref().map(|c| c.case)),
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
                .runs
                .store()
                .agent_plans()
                .await
                .map_err(api_error::<StoreError>)?,
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
            .reviews
            .queue(offset, PAGE_SIZE, keep)
            .await
            .map_err(api_error)?;
        Ok(app::api::ReviewQueueList {
            more: total > offset + rows.len(),
            rows,
            total,
        })
    }

    async fn log(&self, id: PlanId) -> Result<Vec<LogEntry>, BoardError> {
        if self.plans.read(id, |_| ()).await.is_none() {
            return Err(BoardError::NotFound(
                PlanError::UnknownPlan { id }.to_string(),
            ));
        }
        let mut log = Vec::new();
        let mut pages = Pages::after(0, PAGE, |after, n| self.plans.events(id, after, n));
        while let Some(rows) = pages.next().await {
            for r in rows.map_err(to_board_error)? {
                log.push(LogEntry {
                    seq: r.seq,
                    event: serde_json::from_value(r.event).ok(),
                });
            }
        }
        Ok(log)
    }

    async fn plan(&self, id: PlanId) -> Result<Plan, BoardError> {
        self.plans
            .get(id)
            .await
            .ok_or_else(|| BoardError::NotFound(PlanError::UnknownPlan { id }.to_string()))
    }

    async fn command(&self, id: PlanId, command: Command, actor: &str) -> Result<u64, BoardError> {
        self.plans
            .command(id, &command, actor)
            .await
            .map(|(plan, _)| plan.version())
            .map_err(to_board_error)
    }

    async fn create(&self, mut spec: NewPlan, actor: &str) -> Result<PlanId, BoardError> {
        spec.id = uuid::Uuid::new_v4();
        self.plans
            .create(spec, actor)
            .await
            .map(|plan| plan.id())
            .map_err(to_board_error)
    }

    fn agent(&self) -> AgentInfo {
        AgentInfo {
            model: self.runs.model_name(),
            tools: self
                .runs
                .tools()
                .iter()
                .map(|t| (t.name.clone(), t.description.clone()))
                .collect(),
            code_runner_off: self
                .runs
                .sandbox_unavailable()
                .map(|e| e.reason().to_string()),
            model_status: self.runs.model_status(),
            model_waiting: self.runs.model_waiting(),
            workspace_roots: self
                .workspaces
                .roots()
                .iter()
                .map(|r| r.display().to_string())
                .collect(),
            acp_agents: self.acp_agents.names(),
        }
    }

    async fn activity(
        &self,
        plan: PlanId,
        subtask: Option<u32>,
        lang: plan_engine::Lang,
    ) -> Result<ActivityLog, BoardError> {
        let plan_title = self
            .plans
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
                approvals: Vec::new(),
            });
        };
        // The panel's reader with no limit: one place turns entries into
        // lines and picks a subtask's.
        let rows = read_tail(&*self.runs.log(), run, subtask, usize::MAX, 500, lang)
            .await
            .map_err(|e| run_error(e.into()))?
            .rows;
        let artifacts = self
            .runs
            .artifacts(run)
            .await
            .map_err(run_error)?
            .into_iter()
            .map(|a| app::api::FileRow {
                path: a.path,
                bytes: a.bytes,
                preview: a.preview,
                url: a.url,
                image: a.image,
            })
            .collect();
        let cost = self.runs.cost(run).await.map_err(run_error)?;
        let approvals = self
            .approvals
            .of_run(run)
            .await
            .map_err(|e| board_error(e.into()))?;
        Ok(ActivityLog {
            plan_title,
            run_id: Some(run),
            rows,
            cost: Some(cost),
            artifacts,
            approvals,
        })
    }

    async fn insights(&self, days: u32) -> Result<app::api::InsightsPage, BoardError> {
        let view = self.runs.insights(days).await.map_err(run_error)?;
        Ok(app::api::InsightsPage {
            days: view.days,
            insights: view.insights,
            forecasts: view.forecasts,
            can_apply: false,
        })
    }

    async fn approvals(
        &self,
        filter: &app::api::ApprovalsFilter,
    ) -> Result<Vec<run_model::ApprovalRecord>, BoardError> {
        let filter = crate::approvals::ApprovalFilter {
            run: filter.run,
            person: filter.person.clone(),
            tool: filter.tool.clone(),
            limit: app::api::APPROVALS_SHOWN,
            ..Default::default()
        };
        self.approvals
            .list(&filter)
            .await
            .map_err(|e| board_error(e.into()))
    }

    async fn tools_overview(
        &self,
    ) -> Result<(Vec<(String, String)>, Vec<run_model::ToolServerView>), BoardError> {
        let builtin = self
            .runs
            .builtin_tools()
            .iter()
            .map(|t| (t.name.clone(), t.description.clone()))
            .collect();
        Ok((builtin, self.tool_servers.views()))
    }

    async fn acp_agents(&self) -> Result<Vec<run_model::AcpAgentView>, BoardError> {
        Ok(self.acp_agents.views())
    }

    async fn storage(&self) -> Result<run_model::StorageReport, BoardError> {
        self.runs.storage().await.map_err(run_error)
    }

    async fn keep_run(&self, plan: PlanId, kept: bool) -> Result<(), BoardError> {
        let Some(view) = self.run_on(plan).await? else {
            return Err(BoardError::NotFound(format!("plan {plan} has no run")));
        };
        self.runs
            .keep_run(view.record.id, kept)
            .await
            .map(|_| ())
            .map_err(run_error)
    }

    async fn webhook_settings(&self) -> Result<app::api::WebhookSettings, BoardError> {
        let shown = crate::webhooks::shown_url;
        let mut endpoints: Vec<app::api::EndpointRow> = self
            .webhooks
            .config()
            .endpoints
            .iter()
            .map(|e| app::api::EndpointRow {
                id: None,
                url: shown(e.url.as_str()),
                signed: e.secret.is_some(),
                slack: e.slack,
            })
            .collect();
        for e in self.webhooks.added().await.map_err(api_error)? {
            endpoints.push(app::api::EndpointRow {
                id: Some(e.id),
                url: shown(&e.url),
                signed: e.secret.is_some(),
                slack: e.slack,
            });
        }
        let deliveries = self
            .webhooks
            .deliveries(20)
            .await
            .map_err(api_error)?
            .into_iter()
            .map(|d| app::api::DeliveryRow {
                event: d.event,
                endpoint: d.endpoint,
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
        self.runs.needs().await.map_err(run_error)
    }

    async fn templates(&self) -> Result<Vec<run_model::Template>, BoardError> {
        self.templates.list(0, 200).await.map_err(api_error)
    }

    async fn memories(&self, query: &str, page: u32) -> Result<app::api::MemoryList, BoardError> {
        let per = app::api::MEMORIES_PER_PAGE;
        let query = query.trim();
        // One more than a page: whether there is a next one.
        let mut rows = self
            .memories
            .list(
                (!query.is_empty()).then_some(query),
                page.saturating_mul(per),
                per + 1,
            )
            .await
            .map_err(api_error)?;
        let more = rows.len() > per as usize;
        rows.truncate(per as usize);
        Ok(app::api::MemoryList { rows, more })
    }

    async fn compare_runs(
        &self,
        a: agent::RunId,
        b: agent::RunId,
    ) -> Result<run_model::RunComparison, BoardError> {
        self.runs.compare(a, b).await.map_err(run_error)
    }

    async fn cases_overview(&self) -> Result<run_model::CasesOverview, BoardError> {
        self.cases.overview().await.map_err(api_error)
    }

    async fn suite_report(
        &self,
        id: run_model::SuiteRunId,
    ) -> Result<run_model::SuiteReport, BoardError> {
        self.cases.report(id).await.map_err(api_error)
    }

    async fn activity_tail(
        &self,
        plan: PlanId,
        subtask: Option<u32>,
        limit: usize,
        lang: plan_engine::Lang,
    ) -> Result<ActivityTail, BoardError> {
        let Some(run) = self.run_on(plan).await?.map(|r| r.record.id) else {
            return Ok(ActivityTail {
                rows: Vec::new(),
                total: Some(0),
            });
        };
        read_tail(&*self.runs.log(), run, subtask, limit, 200, lang)
            .await
            .map_err(|e| run_error(e.into()))
    }

    async fn run_of(&self, plan: PlanId) -> Result<Option<RunPanel>, BoardError> {
        let Some(view) = self.run_on(plan).await? else {
            return Ok(None);
        };
        // One run's whole view: its grants, its hold, the approval card.
        let view = self.runs.get(view.record.id).await.map_err(run_error)?;
        let card = match view.plan_state {
            Some(plan_engine::PlanState::AwaitingApproval) => {
                self.plans.get(plan).await.map(|p| app::api::ApprovalCard {
                    version: p.version(),
                    digest: run_model::plan_digest(&p),
                    guarded: view.guarded_tools.clone(),
                    checks: view.plan_checks.clone(),
                    forecast: view.forecast.clone(),
                })
            }
            _ => None,
        };
        let pending = self
            .runs
            .pending_calls(view.record.id)
            .await
            .map_err(run_error)?
            .into_iter()
            .map(|p| app::api::PendingTool {
                // A server's question (agent::asking) shows its words.
                shown: ["code", "command", "url", "question"]
                    .iter()
                    .find_map(|k| p.arguments.get(*k).and_then(|v| v.as_str()))
                    .map(str::to_string)
                    .or_else(|| acp_options(&p.arguments)),
                arguments: serde_json::to_string_pretty(&p.arguments).unwrap_or_default(),
                call: p.call,
                subtask: p.subtask.0,
                name: p.name,
                digest: p.digest,
                asker: p.asker,
            })
            .collect();
        // The images the run wrote, under its answer (none before it
        // answered). A workspace that cannot be read shows none: the
        // header still shows the answer.
        let images = match &view.record.answer {
            Some(answer) => self
                .workspaces
                .answer_images(view.record.id, answer, &view.record.config.inputs)
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!(run = %view.record.id, error = %e, "the answer's images could not be listed");
                    Vec::new()
                })
                .into_iter()
                .map(|f| app::api::FileRow {
                    url: crate::workspace::images::artifact_url(view.record.id, &f.path),
                    path: f.path,
                    bytes: f.bytes,
                    preview: None,
                    image: true,
                })
                .collect(),
            None => Vec::new(),
        };
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
                max_llm_calls: r.config.budget.max_llm_calls,
                tokens: r.spent.tokens(),
                max_tokens: r.config.budget.max_tokens,
                budget_reached: (r.state == agent::RunState::Paused)
                    .then(|| r.spent.reached(&r.config.budget))
                    .flatten(),
                cost: r.spent.cost,
                max_cost: r.config.budget.max_cost,
                unpriced_calls: r.spent.unpriced_calls,
                answer: r.answer,
                images,
                pending,
                files_removed_at: r.files_removed_at,
                kept: r.kept,
                replay_of: r.config.replay.as_ref().map(|replay| replay.run),
                asks: r.asks.iter().map(run_model::Ask::describe).collect(),
                model_ahead: self.runs.model_position(r.id),
                forecast: card.is_none().then_some(view.forecast).flatten(),
                drift: r.drift,
                card,
                grants: view.grants,
                hold: view.hold,
            }
        }))
    }
}

fn run_error(e: crate::runs::RunError) -> BoardError {
    board_error(e.into())
}

/// Any service error, through the one mapping.
fn api_error<E: Into<crate::web::api::error::ApiError>>(e: E) -> BoardError {
    board_error(e.into())
}

impl Board {
    /// The run on `plan`, or the 404 a form about a run answers.
    async fn run_working(&self, plan: PlanId) -> Result<crate::runs::RunView, BoardError> {
        self.run_on(plan)
            .await?
            .ok_or_else(|| BoardError::NotFound("no agent run works on this plan".into()))
    }

    /// The run working on `plan` (the newest, if there were several).
    async fn run_on(&self, plan: PlanId) -> Result<Option<crate::runs::RunView>, BoardError> {
        let runs = self
            .runs
            .list(None, Some(plan), 0, 1)
            .await
            .map_err(run_error)?;
        Ok(runs.into_iter().next())
    }
}

/// An ACP agent's permission request as the guard form shows it: what it
/// asks to run and the options it offered (`Run edited` with `{"option":
/// id}` picks any of them; Approve its first "allow", Deny its first
/// "reject").
fn acp_options(arguments: &serde_json::Value) -> Option<String> {
    let options = arguments.get("options")?.as_array()?;
    let mut lines = Vec::with_capacity(options.len() + 1);
    if let Some(input) = arguments.get("input").filter(|i| !i.is_null()) {
        lines.push(plan_engine::text::fit(&input.to_string(), 400));
    }
    for o in options {
        let field = |k: &str| {
            o.get(k)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        lines.push(format!(
            "option {}: {} ({})",
            field("id"),
            field("name"),
            field("kind")
        ));
    }
    Some(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use crate::web::api::error::{ApiError, ErrorCode};

    /// The board answers every error of the one mapping with the API's
    /// status, and its sentence.
    #[test]
    fn the_board_answers_each_error_with_the_apis_status_and_sentence() {
        let m = || "why".to_string();
        for e in [
            ApiError::BadRequest(m()),
            ApiError::Unauthorized(m()),
            ApiError::Forbidden(m()),
            ApiError::NotFound(m()),
            ApiError::MethodNotAllowed(m()),
            ApiError::Conflict {
                message: m(),
                current_version: 3,
            },
            ApiError::TooLarge(m()),
            ApiError::UnsupportedMediaType(m()),
            ApiError::TooManyRequests {
                message: m(),
                retry_after: 30,
            },
            ApiError::AlreadyExists(m()),
            ApiError::State {
                code: ErrorCode::NoModel,
                message: m(),
            },
            ApiError::Refused {
                code: ErrorCode::Cycle,
                message: m(),
            },
            ApiError::Store,
            ApiError::Internal,
        ] {
            let (status, message) = (e.status(), e.message());
            let board = super::board_error(e);
            assert_eq!(board.status(), status, "{board:?}");
            assert_eq!(board.to_string(), message, "{board:?}");
        }
    }
}
