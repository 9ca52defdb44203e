//! "Needs you": everything across plans and runs that waits for a person,
//! gathered from where it already lives (the plans' states and questions,
//! the runs' rows and their guarded calls), so it cannot disagree with the
//! board.

use std::collections::HashMap;

use agent::{RunEntry, RunId};
use plan_engine::{PlanId, PlanState, SubtaskState, Timestamp};
use run_model::{Need, NeedKind, RunState};

use super::{PendingCall, RunError, Runs};
use crate::runlog::RunLogStore;
use crate::store::StoreError;

/// The guarded calls and the decisions of `runs`, by run, in log order:
/// read from the calls' index (a few rows a run), never the whole logs.
pub(crate) async fn calls_of(
    store: &dyn RunLogStore,
    runs: &[RunId],
) -> Result<HashMap<RunId, Vec<RunEntry>>, StoreError> {
    let mut by_run: HashMap<RunId, Vec<RunEntry>> = HashMap::new();
    for stored in store.run_log_calls(runs).await? {
        // A line an older version wrote and this one cannot read is
        // skipped, as the whole log's reader skips it.
        if let Ok(entry) = serde_json::from_value(stored.entry) {
            by_run.entry(stored.run_id).or_default().push(entry);
        }
    }
    Ok(by_run)
}

/// One run's guarded calls and decisions, in log order, each with when it
/// was logged (how long a call waited for its decision).
pub(crate) async fn timed_calls_of(
    store: &dyn RunLogStore,
    run: RunId,
) -> Result<Vec<(RunEntry, Option<Timestamp>)>, StoreError> {
    Ok(store
        .run_log_calls(&[run])
        .await?
        .into_iter()
        .filter_map(|stored| {
            let entry = serde_json::from_value(stored.entry).ok()?;
            Some((entry, Some(stored.at)))
        })
        .collect())
}

/// The calls among `entries` (one run's, each with when it was asked if
/// known) that wait for a decision, oldest first.
pub(crate) fn pending_of(entries: Vec<(RunEntry, Option<Timestamp>)>) -> Vec<PendingCall> {
    let open = agent::host::open_calls(entries.iter().map(|(e, _)| e));
    entries
        .into_iter()
        .filter_map(|(e, at)| match e {
            RunEntry::ToolApproval {
                subtask,
                call,
                name,
                arguments,
                asker,
            } if open.contains(&call) => Some(PendingCall {
                digest: run_model::call_digest(&name, &arguments),
                asked_at: at,
                call,
                subtask,
                name,
                arguments,
                asker,
            }),
            _ => None,
        })
        .collect()
}

/// Most runs of one state looked at: an inbox is for people, not a report.
const RUNS_LOOKED_AT: u32 = 500;

/// What one plan waits for a person on: its approval (overdue once
/// `remind` has passed since it was asked), its subtasks' questions.
fn plan_needs(
    plan: &plan_engine::Plan,
    now: Timestamp,
    remind: Option<chrono::Duration>,
) -> Vec<Need> {
    let mut needs = Vec::new();
    let base = |kind, subtask, text: &str| {
        Need::new(
            kind,
            (plan.id(), plan.title()),
            None,
            subtask,
            text,
            plan.updated_at(),
        )
    };
    if plan.state() == PlanState::AwaitingApproval {
        let mut need = base(NeedKind::Approval, None, plan.goal());
        // Told, never approved by a timer.
        need.overdue = remind.is_some_and(|r| now - plan.updated_at() > r);
        needs.push(need);
    }
    // A question blocks its subtask: the engine counts blocked subtasks in
    // O(1), so a plan with none (nearly every plan on every call) is not
    // walked subtask by subtask.
    if !plan.state().is_finished() && plan.count(SubtaskState::Blocked) > 0 {
        for s in plan.subtasks() {
            if let Some(question) = s.question() {
                needs.push(base(NeedKind::Question, Some(s.id()), question));
            }
        }
    }
    needs
}

impl Runs {
    fn remind(&self) -> Option<chrono::Duration> {
        self.approval_remind
            .and_then(|r| chrono::Duration::from_std(r).ok())
    }

    /// What a paused run waits for: its Start (approved and held), or a
    /// person to resume it.
    async fn paused_text(&self, run: &run_model::RunRecord) -> Result<String, RunError> {
        // A run approved and held waits for its click or its time.
        let held = self
            .approvals
            .hold_of(run.id)
            .await?
            .filter(|h| h.released_at.is_none());
        Ok(match &held {
            Some(hold) => match hold.start_at {
                Some(at) => format!(
                    "approved by {} and held: starts at {} (or on Start)",
                    hold.by,
                    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                ),
                None => format!("approved by {} and held: starts on Start", hold.by),
            },
            None => run.reason.clone().unwrap_or_else(|| "paused".into()),
        })
    }

    /// A running run's guarded calls that wait for a decision, as needs.
    fn call_needs(
        run: RunId,
        (plan_id, plan_title, since): (PlanId, &str, Timestamp),
        entries: Vec<RunEntry>,
    ) -> Vec<Need> {
        let untimed = entries.into_iter().map(|e| (e, None)).collect();
        pending_of(untimed)
            .into_iter()
            .map(|call| {
                Need::new(
                    NeedKind::ToolCall,
                    (plan_id, plan_title),
                    Some(run),
                    Some(call.subtask),
                    &format!("{} {}", call.name, call.arguments),
                    since,
                )
            })
            .collect()
    }

    /// What one run waits for a person on, as [`Runs::needs`] lists it
    /// (every need named with the run): its plan's approval and
    /// questions, its pause, its guarded calls. Reads its plan and its
    /// calls only, for a client that follows one run (an MCP task).
    pub async fn needs_of(&self, run: &run_model::RunRecord) -> Result<Vec<Need>, RunError> {
        if run.state.is_finished() {
            return Ok(Vec::new());
        }
        let Some(plan) = (match run.plan_id {
            Some(id) => self.plans.get(id).await,
            None => None,
        }) else {
            return Ok(Vec::new());
        };
        let mut needs = plan_needs(&plan, chrono::Utc::now(), self.remind());
        for need in &mut needs {
            need.run_id = Some(run.id);
            if need.kind == NeedKind::Approval {
                need.waiting_for = self.approvals.waiting_for(run, &plan).await?;
            }
        }
        let on = (plan.id(), plan.title(), plan.updated_at());
        match run.state {
            RunState::Paused => {
                let text = self.paused_text(run).await?;
                needs.push(Need::new(
                    NeedKind::Stuck,
                    (on.0, on.1),
                    Some(run.id),
                    None,
                    &text,
                    on.2,
                ));
            }
            RunState::Running => {
                let mut calls = calls_of(self.log.as_ref(), &[run.id]).await?;
                let entries = calls.remove(&run.id).unwrap_or_default();
                needs.extend(Self::call_needs(run.id, on, entries));
            }
            _ => {}
        }
        Need::sort(&mut needs);
        Ok(needs)
    }

    /// Everything waiting for a person, approvals first, oldest first.
    pub async fn needs(&self) -> Result<Vec<Need>, RunError> {
        let now = chrono::Utc::now();
        let remind = self.remind();
        // Plans: waiting for approval, or holding a question from the agent.
        let plans: Vec<(PlanId, String, plan_engine::Timestamp, Vec<Need>)> = self
            .plans
            .scan(|plan| {
                Some((
                    plan.id(),
                    plan.title().to_string(),
                    plan.updated_at(),
                    plan_needs(plan, now, remind),
                ))
            })
            .await;
        let mut titles: HashMap<PlanId, (String, plan_engine::Timestamp)> = HashMap::new();
        let mut needs = Vec::new();
        for (id, title, at, found) in plans {
            titles.insert(id, (title, at));
            needs.extend(found);
        }
        // Who still has to approve a plan under a two-person rule.
        let awaiting: Vec<PlanId> = needs
            .iter()
            .filter(|n: &&Need| n.kind == NeedKind::Approval)
            .map(|n| n.plan_id)
            .collect();
        if !awaiting.is_empty() {
            let working = self.store.runs_on(&awaiting).await?;
            for need in needs.iter_mut().filter(|n| n.kind == NeedKind::Approval) {
                let run = working
                    .iter()
                    .rev()
                    .find(|r| r.plan_id == Some(need.plan_id) && !r.state.is_finished());
                let Some(run) = run else { continue };
                let Some(plan) = self.plans.get(need.plan_id).await else {
                    continue;
                };
                need.run_id = Some(run.id);
                need.waiting_for = self.approvals.waiting_for(run, &plan).await?;
            }
        }
        // Runs: paused ones wait for a person to resume them; running
        // ones may wait for a decision on a guarded tool call.
        let on_plan = |run: &run_model::RunRecord| {
            let id = run.plan_id?;
            let (title, at) = titles.get(&id)?;
            Some((id, title.clone(), *at))
        };
        for run in self
            .store
            .list_runs(Some(RunState::Paused), None, 0, RUNS_LOOKED_AT)
            .await?
        {
            let Some((plan_id, plan_title, since)) = on_plan(&run) else {
                continue;
            };
            let text = self.paused_text(&run).await?;
            needs.push(Need::new(
                NeedKind::Stuck,
                (plan_id, &plan_title),
                Some(run.id),
                None,
                &text,
                since,
            ));
        }
        let running = self
            .store
            .list_runs(Some(RunState::Running), None, 0, RUNS_LOOKED_AT)
            .await?;
        // Their guarded calls in one indexed read, not a log per run.
        let ids: Vec<RunId> = running.iter().map(|r| r.id).collect();
        let mut calls = calls_of(self.log.as_ref(), &ids).await?;
        for run in running {
            let Some((plan_id, plan_title, since)) = on_plan(&run) else {
                continue;
            };
            let entries = calls.remove(&run.id).unwrap_or_default();
            needs.extend(Self::call_needs(
                run.id,
                (plan_id, &plan_title, since),
                entries,
            ));
        }
        Need::sort(&mut needs);
        Ok(needs)
    }
}
