//! Standing rules: what a team writes into the agent's memory by hand
//! (the Memory page, `POST /api/memories`). A rule is a memory of its own
//! kind, kept pinned: recalled first whenever its words (or the words of
//! the tasks it is for) match a task, and for every task when it names
//! none; every role that decides reads it (see `run_model::memory`).

use run_model::memory::{Memory, MemoryKind, NewMemory, MEMORY_TEXT};

use super::{Memories, MemoryError};
use crate::store::StoreError;

/// The longest "for tasks about" of a rule, in characters (the Memory
/// page's search box has the same bound).
pub const APPLIES_TO: usize = 500;

/// A memory's text as sent, trimmed: 1 to [`MEMORY_TEXT`] characters.
/// The bound is on the text as sent (the API document's `maxLength`):
/// 3,000 spaces around one word are refused, not trimmed into a short
/// memory (found by the API fuzzer).
pub(super) fn checked_text(text: &str) -> Result<&str, MemoryError> {
    let sent = text.chars().count();
    let text = text.trim();
    let chars = if sent > MEMORY_TEXT {
        sent
    } else {
        text.chars().count()
    };
    if chars == 0 || chars > MEMORY_TEXT {
        return Err(MemoryError::Invalid(format!(
            "a memory's text has 1 to {MEMORY_TEXT} characters (got {chars})"
        )));
    }
    Ok(text)
}

impl Memories {
    /// Writes a standing rule, pinned. `applies_to`: words of the tasks
    /// it is for (recalled when a task shares one); empty, every task.
    pub async fn write_rule(&self, text: &str, applies_to: &str) -> Result<Memory, MemoryError> {
        let text = checked_text(text)?;
        let sent = applies_to.chars().count();
        if sent > APPLIES_TO {
            return Err(MemoryError::Invalid(format!(
                "applies_to has at most {APPLIES_TO} characters (got {sent})"
            )));
        }
        let rule = NewMemory {
            kind: MemoryKind::Rule,
            task: applies_to.trim().to_string(),
            text: text.to_string(),
            run_id: None,
            plan_id: None,
        };
        let stored = self.store.remember(&[rule]).await?;
        let id = stored
            .first()
            .map(|m| m.id)
            .ok_or_else(|| StoreError::Corrupt("the rule was not stored".into()))?;
        self.store
            .pin(id, true)
            .await?
            .ok_or(MemoryError::NotFound(id))
    }
}
