//! A run's log read back as activity lines: the newest ones for the
//! board's panel (read from the end, a page at a time), and every one for
//! the activity page.

use super::*;

/// The newest `limit` activity lines of `run` (about `subtask` if given),
/// read back from the log's end `page` entries at a time, so a panel on a
/// long run reads what it shows, not the whole log.
pub(super) async fn read_tail(
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
pub(super) fn activity_of(at: plan_engine::Timestamp, entry: agent::RunEntry) -> Activity {
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
