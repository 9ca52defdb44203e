//! Seed 002's iterative batches: a task over a large input (its case is a
//! catalog of hundreds of API tools to test) is planned a batch at a time.
//! The planner plans the next few items, the coordinator runs them, the
//! planner reads how the batch went and plans the next one, the failed
//! items first, until every item is covered.
//!
//! This module holds what crosses the wire and the run's row: the setting
//! ([`Batching`]), the input's items ([`BatchInput`], read from the file
//! the person attached), and where the iteration stands
//! ([`BatchProgress`], kept on the run so a restart goes on where the last
//! batch stopped). It is pure: the coordinator calls the model and changes
//! the plan; this only counts.

use plan_engine::text::fit as cut;
use plan_engine::SubtaskId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Items per batch when the config does not say (seed 002: 5).
pub const DEFAULT_BATCH_SIZE: u32 = 5;
/// The largest batch: a planning call's answer stays short.
pub const MAX_BATCH_SIZE: u32 = 50;
/// The longest input file name a run in batches may give, in characters.
pub const INPUT_NAME_CHARS: usize = 200;
/// The most items an input may hold.
pub const MAX_ITEMS: usize = 10_000;
/// Characters of one item shown to the planner and the executor.
pub const ITEM_CHARS: usize = 300;
/// Failures of the last batch shown to the planner, and characters of each.
pub const FAILURES_SHOWN: usize = 5;
pub const FAILURE_CHARS: usize = 200;

/// How a run goes through its input a batch at a time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Batching {
    /// The input file (one of the run's uploaded files): a JSON array, JSON
    /// Lines, or one item per line (a `.csv` file's first line is its
    /// header, shown once beside the items).
    #[schemars(length(min = 1, max = INPUT_NAME_CHARS))]
    pub input: String,
    /// Items planned per batch (seed 002: 5), 1 to [`MAX_BATCH_SIZE`].
    #[serde(default = "default_size")]
    #[schemars(range(min = 1, max = MAX_BATCH_SIZE))]
    pub size: u32,
}

fn default_size() -> u32 {
    DEFAULT_BATCH_SIZE
}

/// Why an input cannot be gone through in batches.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("the batch input {0} is not one of the run's files")]
    Missing(String),
    #[error("the batch input {0} is not UTF-8 text")]
    NotText(String),
    #[error("the batch input {path} is a JSON array that does not parse: {why}")]
    BadJson { path: String, why: String },
    #[error("the batch input {0} has no items")]
    Empty(String),
    #[error("the batch input {path} has {count} items; at most {MAX_ITEMS}")]
    TooMany { path: String, count: usize },
    #[error("the batch size must be 1 to {MAX_BATCH_SIZE}, not {0}")]
    Size(u32),
}

/// The items of an input file, in order; item `n` (1-based, as the model
/// and the board name it) is `items[n - 1]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchInput {
    /// A CSV file's header line.
    pub header: Option<String>,
    pub items: Vec<String>,
}

impl BatchInput {
    /// Reads `bytes` (the file at `path`): a JSON array (each element an
    /// item; a string as itself, anything else as compact JSON), else one
    /// item per non-empty line (JSON Lines, plain lists, CSV rows after
    /// the header of a `.csv` file).
    pub fn parse(path: &str, bytes: &[u8]) -> Result<BatchInput, InputError> {
        let text = std::str::from_utf8(bytes).map_err(|_| InputError::NotText(path.into()))?;
        let trimmed = text.trim_start_matches('\u{feff}').trim();
        let (header, items) = if trimmed.starts_with('[') {
            let values: Vec<serde_json::Value> =
                serde_json::from_str(trimmed).map_err(|e| InputError::BadJson {
                    path: path.into(),
                    why: e.to_string(),
                })?;
            let items = values
                .into_iter()
                .map(|v| match v {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                })
                .filter(|s| !s.trim().is_empty())
                .collect();
            (None, items)
        } else {
            let mut lines = trimmed
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string);
            let header = if path.to_ascii_lowercase().ends_with(".csv") {
                lines.next()
            } else {
                None
            };
            (header, lines.collect::<Vec<_>>())
        };
        if items.is_empty() {
            return Err(InputError::Empty(path.into()));
        }
        if items.len() > MAX_ITEMS {
            return Err(InputError::TooMany {
                path: path.into(),
                count: items.len(),
            });
        }
        Ok(BatchInput { header, items })
    }

    /// Item `n` as the model reads it (cut to [`ITEM_CHARS`]).
    pub fn shown(&self, n: u32) -> String {
        let item = self
            .items
            .get((n as usize).wrapping_sub(1))
            .map_or("", String::as_str);
        cut(item, ITEM_CHARS)
    }
}

/// One subtask of the current batch and the items it covers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BatchSlot {
    pub subtask: SubtaskId,
    pub items: Vec<u32>,
    /// Its attempt failed (the subtask is skipped; the items wait).
    #[serde(default)]
    pub failed: bool,
}

/// An item that failed an attempt, and why its last attempt failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ItemRetry {
    pub item: u32,
    /// Failed attempts so far.
    pub failed: u32,
    pub reason: String,
    /// Waiting for a later batch (not on the plan now).
    pub waiting: bool,
}

/// How one batch went: what the planner reads of it (bounded: counts, the
/// time, at most [`FAILURES_SHOWN`] failures).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BatchSummary {
    /// 1-based.
    pub batch: u32,
    pub items: usize,
    pub succeeded: usize,
    /// Failed this batch (planned again later, or given up).
    pub failed: usize,
    /// From the batch's first start to its last finish.
    pub ms: u64,
    /// `item n: reason` (older runs wrote `#n: reason`), at most
    /// [`FAILURES_SHOWN`]; [`failure_item`] reads the number back.
    pub failures: Vec<String>,
}

/// A batch whose subtasks are being added to the plan: written before the
/// plan changes, so a restart in between finds them (by name, after
/// `from`) instead of adding them twice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Opening {
    /// The plan's next subtask id before the change.
    pub from: u32,
    pub names: Vec<String>,
    pub items: Vec<Vec<u32>>,
}

/// Where a batched run stands, on its row.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BatchProgress {
    /// Items in the input.
    pub total: usize,
    /// The next item never planned (1-based); past `total` when every
    /// item was planned once.
    pub next: u32,
    /// Batches planned so far (the current one included).
    pub batch: u32,
    /// The current batch.
    pub current: Vec<BatchSlot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening: Option<Opening>,
    /// Items that failed an attempt and are neither done nor given up,
    /// oldest first; those `waiting` go into the next batch first.
    pub retry: Vec<ItemRetry>,
    /// Items done, as inclusive ranges.
    pub done: Vec<[u32; 2]>,
    /// Items that failed every attempt, or that a person skipped.
    pub given_up: Vec<u32>,
    /// Failed attempts over the whole run.
    pub failed_attempts: usize,
    /// Batches finished, and their summed time.
    pub finished: u32,
    pub finished_ms: u64,
    /// The current batch's failures so far (at most [`FAILURES_SHOWN`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<String>,
    /// The last finished batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<BatchSummary>,
}

/// What a batched run's progress shows (the board, the API).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchView {
    pub total_items: usize,
    pub covered: usize,
    pub done: usize,
    pub given_up: usize,
    /// The batch running now, and the batches the run will likely take.
    pub batch: u32,
    pub batches: u32,
    /// Items done out of attempts settled; `None` before any settled.
    pub success_rate: Option<f32>,
    /// Mean batch time × batches left.
    pub eta_ms: Option<u64>,
}

impl BatchProgress {
    pub fn new(total: usize) -> BatchProgress {
        BatchProgress {
            total,
            next: 1,
            ..BatchProgress::default()
        }
    }

    pub fn done_count(&self) -> usize {
        self.done.iter().map(|[a, b]| (b - a + 1) as usize).sum()
    }

    pub fn is_done(&self, item: u32) -> bool {
        self.done.iter().any(|[a, b]| (*a..=*b).contains(&item))
    }

    /// Counts `item` done (once: a second time changes nothing).
    pub fn mark_done(&mut self, item: u32) {
        self.retry.retain(|r| r.item != item);
        if self.is_done(item) {
            return;
        }
        let at = self.done.partition_point(|[a, _]| *a < item);
        self.done.insert(at, [item, item]);
        // Merge with the neighbours it touches.
        if at + 1 < self.done.len() && self.done[at][1] + 1 == self.done[at + 1][0] {
            self.done[at][1] = self.done[at + 1][1];
            self.done.remove(at + 1);
        }
        if at > 0 && self.done[at - 1][1] + 1 == self.done[at][0] {
            self.done[at - 1][1] = self.done[at][1];
            self.done.remove(at);
        }
    }

    /// Items never planned, or waiting to be planned again.
    pub fn remaining(&self) -> bool {
        (self.next as usize) <= self.total || self.retry.iter().any(|r| r.waiting)
    }

    /// The next batch's items: those to retry first (seed 002 reschedules
    /// what failed), then new ones, `size` in all. Nothing changes until
    /// [`BatchProgress::opened`].
    pub fn next_items(&self, size: u32) -> Vec<u32> {
        let size = size.max(1) as usize;
        let mut items: Vec<u32> = self
            .retry
            .iter()
            .filter(|r| r.waiting)
            .take(size)
            .map(|r| r.item)
            .collect();
        let mut n = self.next;
        while items.len() < size && (n as usize) <= self.total {
            items.push(n);
            n += 1;
        }
        items
    }

    /// The batch of `items` is on the plan as `slots`: the retried items
    /// leave the queue, the cursor moves past the new ones.
    pub fn opened(&mut self, items: &[u32], slots: Vec<BatchSlot>) {
        for r in self.retry.iter_mut() {
            if items.contains(&r.item) {
                r.waiting = false;
            }
        }
        if let Some(max) = items.iter().copied().filter(|i| *i >= self.next).max() {
            self.next = max + 1;
        }
        self.batch += 1;
        self.current = slots;
        self.opening = None;
    }

    /// The attempts an item failed so far.
    pub fn failures_of(&self, item: u32) -> Option<&ItemRetry> {
        self.retry.iter().find(|r| r.item == item)
    }

    /// An attempt at `item` failed: it waits for a later batch, or is
    /// given up after `max_attempts`. Returns whether it is given up.
    pub fn failed(&mut self, item: u32, reason: &str, max_attempts: u32) -> bool {
        self.failed_attempts += 1;
        let before = self.retry.iter().position(|r| r.item == item);
        let failed = before.map_or(0, |i| self.retry[i].failed) + 1;
        if let Some(i) = before {
            // To the end of the queue: the oldest failures go first.
            self.retry.remove(i);
        }
        if failed >= max_attempts.max(1) {
            if !self.given_up.contains(&item) {
                self.given_up.push(item);
            }
            return true;
        }
        self.retry.push(ItemRetry {
            item,
            failed,
            reason: cut(reason, FAILURE_CHARS),
            waiting: true,
        });
        false
    }

    /// A person skipped the subtask covering `item`: it is not tried again.
    pub fn skipped(&mut self, item: u32) {
        self.retry.retain(|r| r.item != item);
        if !self.given_up.contains(&item) && !self.is_done(item) {
            self.given_up.push(item);
        }
    }

    /// The current batch is over.
    pub fn close(&mut self, summary: BatchSummary) {
        self.finished += 1;
        self.finished_ms += summary.ms;
        self.current.clear();
        self.last = Some(summary);
    }

    pub fn view(&self, size: u32) -> BatchView {
        let done = self.done_count();
        let given_up = self.given_up.len();
        let size = size.max(1) as usize;
        // Items never planned, plus those waiting again, plus the current
        // batch's, in batches of `size`.
        let unplanned = self.total.saturating_sub(self.next as usize - 1);
        let left_items = unplanned + self.retry.iter().filter(|r| r.waiting).count();
        let left = left_items.div_ceil(size) as u32;
        let batches = self.batch + left;
        let settled = done + self.failed_attempts;
        let mean = (self.finished > 0).then(|| self.finished_ms / u64::from(self.finished));
        let running = u32::from(!self.current.is_empty());
        BatchView {
            total_items: self.total,
            covered: done + given_up,
            done,
            given_up,
            batch: self.batch,
            batches,
            success_rate: (settled > 0).then(|| done as f32 / settled as f32),
            eta_ms: mean.map(|m| m * u64::from(left + running)),
        }
    }

    /// What the planner reads of the run so far: counts and the last
    /// batch, never every result (bounded whatever the batch number). The
    /// last batch's failures of items in `planned` (this batch's) are not
    /// listed: their reasons stand beside them in the batch's items, and
    /// saying them twice made the prompt after a bad batch the largest.
    pub fn prompt_section(&self, planned: &[u32]) -> String {
        let view = self.view(1);
        let rate = view
            .success_rate
            .map_or("none settled yet".to_string(), |r| {
                format!("{:.0} %", r * 100.0)
            });
        let mut out = format!(
            "Progress: {} of {} items covered ({} done, {} given up after failing every attempt); \
             success rate {rate}; {} batches finished.\n",
            view.covered, self.total, view.done, view.given_up, self.finished
        );
        match &self.last {
            None => out.push_str("Last batch: none yet.\n"),
            Some(last) => {
                out.push_str(&format!(
                    "Last batch ({}): {} items, {} succeeded, {} failed, {:.1} s.\n",
                    last.batch,
                    last.items,
                    last.succeeded,
                    last.failed,
                    last.ms as f64 / 1000.0
                ));
                let listed_below = |failure: &str| {
                    failure_item(failure).is_some_and(|(n, _)| planned.contains(&n))
                };
                for failure in last.failures.iter().filter(|f| !listed_below(f)) {
                    out.push_str(&format!("- {failure}\n"));
                }
            }
        }
        out
    }
}

/// The item a batch's failure names and its reason: `item 4: timeout`,
/// or `#4: timeout` as older runs wrote it (on the board `#4` is a
/// subtask's id, so the board names the item in the person's words).
pub fn failure_item(failure: &str) -> Option<(u32, &str)> {
    let rest = failure
        .strip_prefix("item ")
        .or_else(|| failure.strip_prefix('#'))?;
    let (n, reason) = rest.split_once(": ")?;
    Some((n.parse().ok()?, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_reads_as_a_json_array_json_lines_or_csv_rows() {
        let json = BatchInput::parse("t.json", br#"["a", {"name": "b"}, 3]"#).unwrap();
        assert_eq!(json.items, vec!["a", r#"{"name":"b"}"#, "3"]);
        let lines = BatchInput::parse("t.jsonl", b"{\"x\":1}\n\n{\"x\":2}\n").unwrap();
        assert_eq!(lines.items, vec![r#"{"x":1}"#, r#"{"x":2}"#]);
        assert_eq!(lines.header, None);
        let csv = BatchInput::parse("tools.CSV", b"name,url\nget,/a\nput,/b\n").unwrap();
        assert_eq!(csv.header.as_deref(), Some("name,url"));
        assert_eq!(csv.items, vec!["get,/a", "put,/b"]);
        assert_eq!(csv.shown(2), "put,/b");
        assert_eq!(csv.shown(9), "");
    }

    #[test]
    fn an_unusable_input_is_refused_with_its_reason() {
        assert_eq!(
            BatchInput::parse("a", b"\n \n"),
            Err(InputError::Empty("a".into()))
        );
        assert!(matches!(
            BatchInput::parse("a", b"[1, 2"),
            Err(InputError::BadJson { .. })
        ));
        assert_eq!(
            BatchInput::parse("a", &[0xff, 0xfe]),
            Err(InputError::NotText("a".into()))
        );
        let many = "x\n".repeat(MAX_ITEMS + 1);
        assert!(matches!(
            BatchInput::parse("a", many.as_bytes()),
            Err(InputError::TooMany { count, .. }) if count == MAX_ITEMS + 1
        ));
        assert!(BatchInput::parse("a", "x\n".repeat(MAX_ITEMS).as_bytes()).is_ok());
    }

    #[test]
    fn batches_take_the_failed_items_first_and_then_move_the_cursor() {
        let mut p = BatchProgress::new(12);
        assert_eq!(p.next_items(5), vec![1, 2, 3, 4, 5]);
        p.opened(&[1, 2, 3, 4, 5], vec![]);
        assert!(!p.failed(2, "timeout", 3));
        assert!(!p.failed(4, "404", 3));
        for i in [1, 3, 5] {
            p.mark_done(i);
        }
        assert_eq!(p.next_items(5), vec![2, 4, 6, 7, 8]);
        p.opened(&[2, 4, 6, 7, 8], vec![]);
        assert_eq!(p.next, 9);
        assert!(
            !p.retry.iter().any(|r| r.waiting),
            "item 2 and 4 are planned"
        );
        assert!(!p.failed(2, "timeout", 3));
        assert_eq!(p.failures_of(2).unwrap().failed, 2);
        assert!(p.failed(2, "timeout", 3), "the third failure gives it up");
        assert_eq!(p.given_up, vec![2]);
        // Item 4 is on the plan again, its one failure remembered.
        assert_eq!(p.retry.len(), 1);
        assert_eq!((p.retry[0].item, p.retry[0].failed), (4, 1));
        p.mark_done(4);
        assert!(p.retry.is_empty());
        assert_eq!(p.failed_attempts, 4);
    }

    #[test]
    fn done_items_are_kept_as_merged_ranges_and_counted_once() {
        let mut p = BatchProgress::new(10);
        for i in [5, 1, 3, 2, 4, 9, 4, 10] {
            p.mark_done(i);
        }
        assert_eq!(p.done, vec![[1, 5], [9, 10]]);
        assert_eq!(p.done_count(), 7);
        assert!(p.is_done(10) && !p.is_done(6));
    }

    #[test]
    fn the_view_counts_batches_left_success_rate_and_eta() {
        let mut p = BatchProgress::new(20);
        p.opened(&[1, 2, 3, 4, 5], vec![]);
        for i in 1..=4 {
            p.mark_done(i);
        }
        p.failed(5, "x", 3);
        p.close(BatchSummary {
            batch: 1,
            items: 5,
            succeeded: 4,
            failed: 1,
            ms: 2_000,
            failures: vec!["item 5: x".into()],
        });
        let v = p.view(5);
        // 15 never planned + 1 to retry = 16 items: 4 batches more.
        assert_eq!((v.batch, v.batches), (1, 5));
        assert_eq!(v.success_rate, Some(0.8));
        assert_eq!(v.eta_ms, Some(8_000));
        assert_eq!((v.covered, v.done, v.given_up), (4, 4, 0));
    }

    #[test]
    fn the_planners_section_lists_only_failures_not_planned_again_in_this_batch() {
        let mut p = BatchProgress::new(10);
        p.opened(&[1, 2, 3], vec![]);
        p.mark_done(1);
        p.failed(2, "timeout", 1);
        p.failed(3, "HTTP 404", 3);
        p.close(BatchSummary {
            batch: 1,
            items: 3,
            succeeded: 1,
            failed: 2,
            ms: 1_000,
            failures: vec!["item 2: timeout".into(), "item 3: HTTP 404".into()],
        });
        let section = p.prompt_section(&[3, 4, 5]);
        assert!(section.contains("Last batch (1): 3 items, 1 succeeded, 2 failed, 1.0 s."));
        assert!(section.contains("- item 2: timeout"), "given up: only here");
        assert!(
            !section.contains("item 3"),
            "planned again: beside its item"
        );
    }

    #[test]
    fn a_failure_names_its_item_as_item_n_or_as_older_runs_wrote_it() {
        assert_eq!(
            failure_item("item 4: HTTP 500: gone"),
            Some((4, "HTTP 500: gone"))
        );
        assert_eq!(failure_item("#12: timeout"), Some((12, "timeout")));
        assert_eq!(failure_item("item x: timeout"), None);
        assert_eq!(failure_item("timeout"), None);
    }

    #[test]
    fn the_planners_section_stays_the_same_size_whatever_the_batch() {
        let mut p = BatchProgress::new(10_000);
        let first = p.prompt_section(&[]).len();
        for b in 1..=1_000u32 {
            let items = p.next_items(10);
            p.opened(&items, vec![]);
            for i in &items {
                p.mark_done(*i);
            }
            p.close(BatchSummary {
                batch: b,
                items: 10,
                succeeded: 10,
                failed: 0,
                ms: 1_000,
                failures: vec![],
            });
        }
        let last = p.prompt_section(&[]).len();
        assert!(last < first * 2, "{first} → {last}");
        assert_eq!(p.done, vec![[1, 10_000]]);
    }
}
