//! Approval records over HTTP: every decision a person made for the agent
//! (plans approved or rejected, guarded calls, budgets, re-approvals,
//! grants), filtered by run, person, tool and time, for audit and for
//! other tools.

use axum::extract::State;
use axum::{Extension, Json};
use run_model::{ApprovalKind, ApprovalRecord};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use super::docs::{ListErrors, WriteErrors};
use super::error::{ApiError, Body};
use super::extract::Params;
use super::ApiState;
use crate::approvals::ApprovalFilter;
use crate::auth::{Identity, Role};
use crate::runs::InsightsView;

/// The longest person or tool name a list is filtered by.
pub const NAME_CHARS: usize = 200;
/// The most days the insights look back.
pub const INSIGHT_DAYS: u32 = 3650;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ApprovalsQuery {
    /// Only the records of this run.
    run: Option<uuid::Uuid>,
    /// Only the records of this plan.
    plan: Option<uuid::Uuid>,
    /// Only this person's decisions (the token's name or the local user;
    /// an agent acting for them counts as them).
    #[param(max_length = 200)] // NAME_CHARS
    person: Option<String>,
    /// Only decisions on this tool (guarded calls, grants).
    #[param(max_length = 200)] // NAME_CHARS
    tool: Option<String>,
    /// Only this kind of decision.
    #[param(inline, value_type = Option<String>, pattern = "^(plan|tool_call|budget|reapproval|grant)$")]
    kind: Option<ApprovalKind>,
    /// From this time on (RFC 3339, inclusive).
    #[param(value_type = Option<String>, format = DateTime)]
    from: Option<String>,
    /// Up to this time (RFC 3339, inclusive).
    #[param(value_type = Option<String>, format = DateTime)]
    to: Option<String>,
    #[param(minimum = 0, maximum = 100000)]
    offset: Option<u32>,
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

/// An RFC 3339 time of the query, or a 400 naming the parameter.
fn time(name: &str, text: Option<&str>) -> Result<Option<plan_engine::Timestamp>, ApiError> {
    text.map(|t| {
        chrono::DateTime::parse_from_rfc3339(t.trim())
            .map(|t| t.with_timezone(&chrono::Utc))
            .map_err(|e| {
                ApiError::BadRequest(format!(
                    "{name} must be an RFC 3339 time (2026-03-14T10:00:00Z): {e}"
                ))
            })
    })
    .transpose()
}

#[utoipa::path(get, path = "/approvals", tag = "approvals", params(ApprovalsQuery),
    description = "the approval records, newest first: each decision a person made for the agent \
        (a plan version approved or rejected, a guarded call approved, edited or denied, a budget \
        raised, a drifted plan approved again, a grant given or revoked) with who (`by`, `person`), \
        when (`at`), `kind`, `decision`, the plan's version or the call's tool, the note and `digest`, \
        the hex SHA-256 of exactly what was decided (the plan's content; the call's tool and canonical \
        arguments)",
    responses((status = 200, body = Vec<super::schema::ApprovalRecordDoc>), ListErrors))]
pub async fn list_approvals(
    State(state): State<ApiState>,
    Params(q): Params<ApprovalsQuery>,
) -> Result<Json<Vec<ApprovalRecord>>, ApiError> {
    let (offset, limit) = super::extract::page(q.offset, q.limit)?;
    for (name, value) in [("person", &q.person), ("tool", &q.tool)] {
        if value
            .as_ref()
            .is_some_and(|v| v.chars().count() > NAME_CHARS)
        {
            return Err(ApiError::BadRequest(format!(
                "{name} has at most {NAME_CHARS} characters"
            )));
        }
    }
    let filter = ApprovalFilter {
        run: q.run,
        plan: q.plan,
        person: q.person.map(|p| p.trim().to_string()),
        tool: q.tool.map(|t| t.trim().to_string()),
        kind: q.kind,
        from: time("from", q.from.as_deref())?,
        to: time("to", q.to.as_deref())?,
        offset,
        limit,
    };
    Ok(Json(state.approvals.list(&filter).await?))
}

#[utoipa::path(get, path = "/approvals/forecasts", tag = "approvals",
    description = "how often finished runs spent within the forecast their plan was approved with: \
        per measure (calls, tokens, minutes, cost) the share of runs whose spend fell inside the \
        interval, over the latest 500 plan approvals",
    responses((status = 200, body = super::schema::ForecastAccuracyDoc), ListErrors))]
pub async fn forecast_accuracy(
    State(state): State<ApiState>,
) -> Result<Json<run_model::ForecastAccuracy>, ApiError> {
    Ok(Json(state.approvals.forecast_accuracy().await?))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InsightsQuery {
    /// The days looked back (default 90).
    #[param(minimum = 1, maximum = 3650)]
    days: Option<u32>,
}

#[utoipa::path(get, path = "/approvals/insights", tag = "approvals", params(InsightsQuery),
    description = "approval fatigue (operators and admins): per person and per tool, the median time \
        to decide, the share approved as asked, approvals given in under two seconds, denials and \
        edits; the suggested tool policy moves (a tool always approved as asked from ask to auto, \
        one often denied from auto to ask) with their figures; and how often forecasts held",
    responses((status = 200, body = InsightsView), ListErrors))]
pub async fn insights(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Params(q): Params<InsightsQuery>,
) -> Result<Json<InsightsView>, ApiError> {
    who.require(Role::Operator)?;
    let days = q.days.unwrap_or(90);
    if !(1..=INSIGHT_DAYS).contains(&days) {
        return Err(ApiError::BadRequest(format!(
            "days must be 1 to 3650, not {days}"
        )));
    }
    Ok(Json(state.runs.insights(days).await?))
}

/// A tool policy an operator sets (applying an approvals insight).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPolicy {
    /// The tool, as `GET /api/agent/tools` lists it.
    #[schemars(length(min = 1, max = run_model::TOOL_NAME_CHARS))]
    pub tool: String,
    /// `auto`, `ask` or `never`, for the runs started from now on.
    pub policy: run_model::ToolPolicy,
}

#[utoipa::path(post, path = "/approvals/insights/apply", tag = "approvals",
    description = "sets a tool's policy for the runs started from now on, over PLANBOARD_TOOL_POLICY \
        (stored, so every replica and a restart keep it): applying a suggestion of the insights is \
        an operator's click. A run's own policies may still tighten it",
    request_body = ApplyPolicy,
    responses((status = 200, body = ApplyPolicy), WriteErrors))]
pub async fn apply_policy(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Body(body): Body<ApplyPolicy>,
) -> Result<Json<ApplyPolicy>, ApiError> {
    let tool = body.tool.trim().to_string();
    state
        .runs
        .set_tool_policy(&tool, body.policy, &who.actor())
        .await?;
    Ok(Json(ApplyPolicy {
        tool,
        policy: body.policy,
    }))
}
