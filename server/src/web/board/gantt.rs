//! `GET /plans/{id}/gantt.svg?from=N`: a window of the plan's Gantt chart
//! with the tokens its run's model calls spent per subtask.

use super::*;

/// The Gantt chart's window: `?from=` is the first row (0 by default).
#[derive(serde::Deserialize)]
pub struct GanttWindow {
    #[serde(default)]
    from: usize,
}

/// `GET /plans/{id}/gantt.svg?from=N`: a window of the plan's Gantt chart
/// (`plan_engine::gantt::WINDOW` rows from row N), with the tokens its
/// run's model calls spent per subtask; the board shows it as an image.
pub async fn gantt(
    axum::extract::State(board): axum::extract::State<Arc<Board>>,
    axum::extract::Path(id): axum::extract::Path<String>,
    axum::extract::Query(window): axum::extract::Query<GanttWindow>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let lang = app::i18n::from_headers(&headers);
    let Some(plan) = id.parse::<PlanId>().ok() else {
        return (axum::http::StatusCode::NOT_FOUND, "no such plan").into_response();
    };
    let Some(found) = board.plans.get(plan).await else {
        return (axum::http::StatusCode::NOT_FOUND, "no such plan").into_response();
    };
    let used = board.use_by_subtask(plan).await;
    let svg =
        plan_engine::gantt::gantt_window(&found, chrono::Utc::now(), &used, lang, window.from);
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
        let Ok(report) = self.runs.cost(run.record.id).await else {
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
}
