//! `PLANBOARD_SUITE_SCHEDULE`: the regression suite run by itself, every
//! case not retired on the configured model, tool calls replayed where
//! they match. Each slot of the schedule (its time, in UTC) is one suite
//! run: the slot is stored with it, unique, so of several replicas the
//! first takes it and the others skip it. Its end reaches the webhooks as
//! `suite_finished`.

use std::sync::{Arc, Weak};

use run_model::NewSuiteRun;

use super::{CaseError, Cases};
use crate::config::SuiteSchedule;
use crate::store::StoreError;

/// Who starts a scheduled suite run.
pub const SCHEDULE_ACTOR: &str = "schedule";

impl Cases {
    /// Starts the schedule's task; it ends when the service goes.
    pub fn spawn_schedule(self: &Arc<Self>, schedule: SuiteSchedule) {
        let weak: Weak<Cases> = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let now = chrono::Utc::now();
                let next = schedule.next_after(now);
                let wait = (next - now).to_std().unwrap_or_default();
                tokio::time::sleep(wait).await;
                let Some(cases) = weak.upgrade() else { return };
                let slot = next.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                match cases
                    .start_suite(NewSuiteRun::default(), SCHEDULE_ACTOR, Some(&slot))
                    .await
                {
                    Ok(run) => tracing::info!("scheduled suite run {} ({slot}) started", run.id),
                    // Another replica took the slot.
                    Err(CaseError::Store(StoreError::Constraint(_))) => {}
                    Err(e) => {
                        tracing::warn!("the scheduled suite run of {slot} did not start: {e}")
                    }
                }
            }
        });
    }
}
