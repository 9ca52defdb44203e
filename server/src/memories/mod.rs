//! What the agent remembers: finished runs' summaries, people's
//! corrections and reviews, and the standing rules a team writes by hand;
//! recalled before a run classifies and plans, listed, searched, edited,
//! pinned and forgotten on the Memory page, the API and MCP.
//!
//! # Layout
//! - this file: [`Memories`], the one service the API, the board and MCP
//!   call; [`MemoryStore`], what memories need stored; [`MemoryError`];
//! - `rules.rs`: standing rules written by hand, and the text checks;
//! - `recall.rs`: [`Recall`], what a run recalls (full-text, or hybrid
//!   with an embedding model);
//! - `sql.rs`: [`MemoryStore`] over the server's SQL store, ranked by
//!   each dialect's full-text search;
//! - `embeddings.rs`: memories' vectors, as the SQL store keeps them.

mod embeddings;
pub mod recall;
mod rules;
mod sql;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use run_model::memory::{Memory, MemoryId, NewMemory};

use crate::store::StoreError;

pub use recall::Recall;
pub use rules::APPLIES_TO;

/// The memories' table, its search terms and its vectors.
#[async_trait]
pub trait MemoryStore: Send + Sync {
    async fn remember(&self, memories: &[NewMemory]) -> Result<Vec<Memory>, StoreError>;
    /// Memories matching `query`, pinned first, then best ranked; with no
    /// query, newest first.
    async fn memories(
        &self,
        query: Option<&str>,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<Memory>, StoreError>;
    /// What people taught matching `query`: corrections, rules and pinned
    /// memories (pinned first, with the pinned rules that name no task),
    /// best ranked; recall's second search, so summaries and good reviews
    /// cannot crowd them out of the candidates.
    async fn taught_memories(&self, query: &str, limit: u32) -> Result<Vec<Memory>, StoreError>;
    /// Whether there was such a memory.
    async fn forget(&self, id: MemoryId) -> Result<bool, StoreError>;
    async fn pin(&self, id: MemoryId, pinned: bool) -> Result<Option<Memory>, StoreError>;
    /// Rewrites a memory's text; `None` when there is no such memory.
    async fn edit_memory(&self, id: MemoryId, text: &str) -> Result<Option<Memory>, StoreError>;
    /// The vectors `model` made of these memories (missing: not made yet).
    async fn memory_embeddings(
        &self,
        ids: &[MemoryId],
        model: &str,
    ) -> Result<HashMap<MemoryId, Vec<f32>>, StoreError>;
    /// Keeps the vectors `model` made of these memories.
    async fn put_memory_embeddings(
        &self,
        model: &str,
        vectors: &[(MemoryId, Vec<f32>)],
    ) -> Result<(), StoreError>;
}

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// A text or a field out of its bounds; nothing was stored.
    #[error("{0}")]
    Invalid(String),
    #[error("no memory has id {0}")]
    NotFound(MemoryId),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Reading and changing what the agent remembers.
pub struct Memories {
    store: Arc<dyn MemoryStore>,
}

impl Memories {
    pub fn new(store: Arc<dyn MemoryStore>) -> Memories {
        Memories { store }
    }

    /// The store itself, for tests and tools that plant memories.
    pub fn store(&self) -> Arc<dyn MemoryStore> {
        self.store.clone()
    }

    /// Memories matching `query` (pinned first, then best ranked), or the
    /// newest with no query.
    pub async fn list(
        &self,
        query: Option<&str>,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<Memory>, MemoryError> {
        Ok(self.store.memories(query, offset, limit).await?)
    }

    /// Forgets a memory: no later run recalls it.
    pub async fn forget(&self, id: MemoryId) -> Result<(), MemoryError> {
        match self.store.forget(id).await? {
            true => Ok(()),
            false => Err(MemoryError::NotFound(id)),
        }
    }

    /// Rewrites a memory's text (a person correcting what the agent will
    /// read); 1 to [`run_model::memory::MEMORY_TEXT`] characters.
    pub async fn edit(&self, id: MemoryId, text: &str) -> Result<Memory, MemoryError> {
        let text = rules::checked_text(text)?;
        self.store
            .edit_memory(id, text)
            .await?
            .ok_or(MemoryError::NotFound(id))
    }

    pub async fn pin(&self, id: MemoryId, pinned: bool) -> Result<Memory, MemoryError> {
        self.store
            .pin(id, pinned)
            .await?
            .ok_or(MemoryError::NotFound(id))
    }
}
