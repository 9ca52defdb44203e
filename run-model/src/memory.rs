//! What the agent remembers of finished runs (seed 004's long-term memory):
//! the shape and outcome of each run, and every correction people made.
//! Before it classifies and plans, the agent recalls the memories most like
//! the new task.
//!
//! Ranking is the database's own full-text search (SQLite FTS5, PostgreSQL
//! text search) over [`terms`]: the same words on both, made here, so a
//! Chinese task (no spaces between words) is searchable too.

use chrono::{DateTime, Utc};
use plan_engine::PlanId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::RunId;

/// A memory's id.
pub type MemoryId = uuid::Uuid;

/// What a memory records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// A finished run: its task, mode, plan's shape, outcome and answer.
    Run,
    /// Something a person corrected: a rejection's comment, a mode chosen
    /// over the classifier, a change to the plan mid-run, an answer to a
    /// question. Recalled before run summaries.
    Correction,
}

/// A memory to store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NewMemory {
    pub kind: MemoryKind,
    /// The task of the run it comes from (what it is recalled by, with
    /// the text).
    pub task: String,
    pub text: String,
    pub run_id: Option<RunId>,
    pub plan_id: Option<PlanId>,
}

/// A stored memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Memory {
    pub id: MemoryId,
    pub kind: MemoryKind,
    pub task: String,
    pub text: String,
    pub run_id: Option<RunId>,
    pub plan_id: Option<PlanId>,
    /// Pinned memories are recalled first when they match at all.
    pub pinned: bool,
    pub created_at: DateTime<Utc>,
}

/// The longest memory text, in characters.
pub const MEMORY_TEXT: usize = 2_000;
/// Memories recalled for one run.
pub const RECALLED: usize = 8;
/// Characters of recalled memories given to one prompt.
pub const RECALL_BUDGET: usize = 1_800;
/// Search terms taken from one text.
const MAX_TERMS: usize = 64;

/// A text as search terms: lower-cased words of letters and digits (two
/// characters or more), and each pair of neighbouring CJK characters (a
/// Chinese text has no spaces; pairs find its words without a
/// dictionary). Each term once, in order, at most 64.
pub fn terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let push = |term: String, out: &mut Vec<String>| {
        if out.len() < MAX_TERMS && !out.contains(&term) {
            out.push(term);
        }
    };
    let mut word = String::new();
    let mut prev_cjk: Option<char> = None;
    for c in text.chars().chain(std::iter::once(' ')) {
        if is_cjk(c) {
            if word.chars().count() >= 2 {
                push(std::mem::take(&mut word), &mut out);
            }
            word.clear();
            if let Some(p) = prev_cjk {
                push(format!("{p}{c}"), &mut out);
            }
            prev_cjk = Some(c);
        } else if c.is_alphanumeric() {
            prev_cjk = None;
            word.extend(c.to_lowercase());
        } else {
            prev_cjk = None;
            if word.chars().count() >= 2 && !STOP.contains(&word.as_str()) {
                push(std::mem::take(&mut word), &mut out);
            }
            word.clear();
        }
    }
    out
}

/// Words too common to tell tasks apart.
const STOP: &[&str] = &[
    "the", "and", "for", "with", "from", "into", "that", "this", "then", "them", "its", "are",
    "was", "be", "to", "of", "in", "on", "an", "or", "as", "at", "by", "it", "is", "do", "we",
];

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x3040..=0x30FF | 0xAC00..=0xD7AF)
}

/// The recalled memories as a prompt section within [`RECALL_BUDGET`]
/// characters: corrections first, then earlier runs; empty when there
/// are none.
pub fn prompt_section(memories: &[Memory]) -> String {
    if memories.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "What your team taught you on similar earlier tasks (follow the corrections):\n",
    );
    let ordered = memories
        .iter()
        .filter(|m| m.kind == MemoryKind::Correction)
        .chain(memories.iter().filter(|m| m.kind == MemoryKind::Run));
    for m in ordered {
        let text: String = m.text.chars().take(400).collect();
        let line = match m.kind {
            MemoryKind::Correction => format!("- Correction: {text}\n"),
            MemoryKind::Run => format!("- Earlier run: {text}\n"),
        };
        if out.chars().count() + line.chars().count() > RECALL_BUDGET {
            break;
        }
        out.push_str(&line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_words_and_cjk_pairs_once_each() {
        assert_eq!(
            terms("Deploy the API, then deploy it again to prod-2!"),
            ["deploy", "api", "again", "prod"]
        );
        assert_eq!(
            terms("调查夜间任务"),
            ["调查", "查夜", "夜间", "间任", "任务"]
        );
        assert_eq!(terms("比较 two 仓库"), ["比较", "two", "仓库"]);
        assert!(terms(&"word ".repeat(500)).len() == 1);
        let many: String = (0..200).map(|i| format!("w{i} ")).collect();
        assert_eq!(terms(&many).len(), MAX_TERMS);
    }

    fn memory(kind: MemoryKind, text: &str) -> Memory {
        Memory {
            id: uuid::Uuid::nil(),
            kind,
            task: String::new(),
            text: text.into(),
            run_id: None,
            plan_id: None,
            pinned: false,
            created_at: DateTime::<Utc>::default(),
        }
    }

    #[test]
    fn the_prompt_section_puts_corrections_first_and_keeps_its_budget() {
        let memories = vec![
            memory(MemoryKind::Run, "a run"),
            memory(MemoryKind::Correction, "always add a rollback step"),
        ];
        let section = prompt_section(&memories);
        let correction = section
            .find("Correction: always add a rollback step")
            .unwrap();
        let run = section.find("Earlier run: a run").unwrap();
        assert!(correction < run, "{section}");
        let many: Vec<Memory> = (0..10_000)
            .map(|i| {
                memory(
                    MemoryKind::Correction,
                    &format!("correction {i} {}", "x".repeat(300)),
                )
            })
            .collect();
        assert!(prompt_section(&many).chars().count() <= RECALL_BUDGET);
        assert_eq!(prompt_section(&[]), "");
    }
}
