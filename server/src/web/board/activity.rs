//! A run's log read back as activity lines: the newest ones for the
//! board's panel (read from the end, a page at a time), and every one for
//! the activity page.

use super::*;
use app::board::activity::activity_of;

/// The newest `limit` activity lines of `run` (about `subtask` if given),
/// read back from the log's end `page` entries at a time, so a panel on a
/// long run reads what it shows, not the whole log. The lines are the
/// app's ([`activity_of`]), in the person's language.
pub(super) async fn read_tail(
    store: &dyn crate::runlog::RunLogStore,
    run: agent::RunId,
    subtask: Option<u32>,
    limit: usize,
    page: u32,
    lang: plan_engine::Lang,
) -> Result<ActivityTail, StoreError> {
    let now = chrono::Utc::now();
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
            let line = activity_of(stored.at, entry, now, lang);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runlog::{NewRunEntry, RunLogStore};
    use crate::store::SqlStore;

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
        let newest = read_tail(&store, run, None, 3, 2, plan_engine::Lang::En)
            .await
            .unwrap();
        assert!(said(&newest)[0].contains("todo 4"), "{:?}", said(&newest));
        assert_eq!(said(&newest)[1..], ["change 5", "todo 6"]);
        assert_eq!(newest.total, Some(7), "counted, not read");
        let on_one = read_tail(&store, run, Some(1), 2, 2, plan_engine::Lang::En)
            .await
            .unwrap();
        assert_eq!(on_one.rows.len(), 2);
        assert!(said(&on_one)[0].contains("todo 4") && said(&on_one)[1].contains("todo 6"));
        assert_eq!(
            on_one.total, None,
            "a subtask's count would need the whole log"
        );
        let all_of_one = read_tail(&store, run, Some(1), 10, 2, plan_engine::Lang::En)
            .await
            .unwrap();
        assert_eq!(all_of_one.rows.len(), 4);
        assert!(said(&all_of_one)[0].contains("todo 0"));
        assert_eq!(all_of_one.total, Some(4), "read to the start");
        let exact = read_tail(&store, run, None, 7, 7, plan_engine::Lang::En)
            .await
            .unwrap();
        assert_eq!(exact.total, Some(7));
        assert_eq!(
            read_tail(&store, run, None, 40, 200, plan_engine::Lang::En)
                .await
                .unwrap()
                .rows
                .len(),
            7
        );
    }
}
