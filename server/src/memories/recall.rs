//! What a run recalls before it classifies and plans: full-text ranking
//! in the database by default; with an embedding model configured
//! (`PLANBOARD_EMBEDDING_MODEL`), hybrid ranking — the full-text ranking
//! and the vectors' cosine ranking fused by reciprocal rank.
//!
//! The vector ranking is bounded like the full-text one: it scores the
//! full-text candidates plus the [`WINDOW`] newest memories, so an old
//! memory sharing no word with the task is not found by meaning alone.
//! Vectors are made the first time recall needs them (one batch per
//! [`BATCH`] memories) and kept beside the memory; a memory edited or
//! forgotten loses its vector. If the embedding endpoint fails, recall
//! falls back to full-text ranking and says so in the server's log: a
//! run never fails for it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use agent::Embedder;
use run_model::memory::{choose, Memory, MemoryId};

use super::MemoryStore;
use crate::store::StoreError;

/// Full-text candidates fused, per memory recalled.
const PER_RECALLED: usize = 4;
/// The newest memories the vector ranking scores besides the full-text
/// candidates.
pub const WINDOW: u32 = 500;
/// Texts per embeddings request.
const BATCH: usize = 64;
/// Reciprocal-rank fusion's constant (the usual 60).
const RRF_K: f64 = 60.0;
/// Cosine similarity below which a memory found only by its vector is
/// not recalled (unrelated texts score around 0 to 0.3 with common models).
pub const MIN_SIMILARITY: f32 = 0.5;

pub struct Recall {
    store: Arc<dyn MemoryStore>,
    embedder: Option<Arc<dyn Embedder>>,
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

/// What a memory's vector is made of: what was asked and what is kept.
fn embedded_text(m: &Memory) -> String {
    format!("{}\n{}", m.task, m.text)
}

/// The fused ranking: pinned memories the full-text search found first
/// (as it ranks them), then every candidate by the sum of its reciprocal
/// ranks in the two lists.
pub fn fuse(by_text: &[Memory], by_vector: &[Memory], limit: usize) -> Vec<Memory> {
    let mut score: HashMap<MemoryId, f64> = HashMap::new();
    let mut all: Vec<&Memory> = Vec::new();
    for list in [by_text, by_vector] {
        for (rank, m) in list.iter().enumerate() {
            let s = score.entry(m.id).or_insert_with(|| {
                all.push(m);
                0.0
            });
            *s += 1.0 / (RRF_K + rank as f64 + 1.0);
        }
    }
    let pinned: Vec<Memory> = by_text.iter().filter(|m| m.pinned).cloned().collect();
    let mut rest: Vec<&Memory> = all
        .into_iter()
        .filter(|m| !pinned.iter().any(|p| p.id == m.id))
        .collect();
    rest.sort_by(|a, b| score[&b.id].total_cmp(&score[&a.id]));
    pinned
        .into_iter()
        .chain(rest.into_iter().cloned())
        .take(limit)
        .collect()
}

impl Recall {
    pub fn new(store: Arc<dyn MemoryStore>, embedder: Option<Arc<dyn Embedder>>) -> Recall {
        Recall { store, embedder }
    }

    /// The `limit` memories most like `task`: the best ranked
    /// candidates, then what people taught that matches (a second search,
    /// so a pile of summaries and good reviews ranked above them cannot
    /// push corrections out), chosen by [`choose`]: what people taught
    /// keeps all but [`run_model::memory::OTHER_SLOTS`] of the slots.
    pub async fn recall(&self, task: &str, limit: usize) -> Result<Vec<Memory>, StoreError> {
        let candidates = (limit * PER_RECALLED) as u32;
        // The agent's rule `recall_relevance_bar`: what full-text search
        // found must be about the same kind of task (one shared word is
        // not); what the vectors found passed MIN_SIMILARITY instead.
        let bar = agent::rules::on(&agent::rules::RECALL_RELEVANCE_BAR);
        let relevant = |m: &Memory| !bar || run_model::memory::relevant(task, m);
        let by_text: Vec<Memory> = self
            .store
            .memories(Some(task), 0, candidates)
            .await?
            .into_iter()
            .filter(|m| relevant(m))
            .collect();
        let ranked = match &self.embedder {
            None => by_text,
            Some(embedder) => match self.by_vector(embedder.as_ref(), task, &by_text).await {
                Ok(by_vector) => fuse(&by_text, &by_vector, limit * PER_RECALLED),
                Err(e) => {
                    tracing::warn!("recall by embeddings failed ({e}); full-text ranking only");
                    by_text
                }
            },
        };
        // Pinned first (the rules for every task among them), then the
        // ranking, then the corrections it had no room for.
        let (pinned, taught): (Vec<Memory>, Vec<Memory>) = self
            .store
            .taught_memories(task, limit as u32)
            .await?
            .into_iter()
            .filter(|m| relevant(m))
            .partition(|m| m.pinned);
        let mut all = pinned;
        for m in ranked.into_iter().chain(taught) {
            if !all.iter().any(|r| r.id == m.id) {
                all.push(m);
            }
        }
        Ok(choose(all, limit))
    }

    /// The full-text candidates and the newest memories, ranked by their
    /// vectors' similarity to the task's (those above [`MIN_SIMILARITY`]).
    async fn by_vector(
        &self,
        embedder: &dyn Embedder,
        task: &str,
        by_text: &[Memory],
    ) -> Result<Vec<Memory>, String> {
        let model = embedder.model().to_string();
        let newest = self
            .store
            .memories(None, 0, WINDOW)
            .await
            .map_err(|e| e.to_string())?;
        let mut seen = HashSet::new();
        let pool: Vec<Memory> = by_text
            .iter()
            .chain(&newest)
            .filter(|m| seen.insert(m.id))
            .cloned()
            .collect();
        let ids: Vec<MemoryId> = pool.iter().map(|m| m.id).collect();
        let mut vectors = self
            .store
            .memory_embeddings(&ids, &model)
            .await
            .map_err(|e| e.to_string())?;
        let missing: Vec<&Memory> = pool
            .iter()
            .filter(|m| !vectors.contains_key(&m.id))
            .collect();
        for batch in missing.chunks(BATCH) {
            let texts: Vec<String> = batch.iter().map(|m| embedded_text(m)).collect();
            let made = embedder.embed(&texts).await.map_err(|e| e.message)?;
            let pairs: Vec<(MemoryId, Vec<f32>)> = batch.iter().map(|m| m.id).zip(made).collect();
            self.store
                .put_memory_embeddings(&model, &pairs)
                .await
                .map_err(|e| e.to_string())?;
            vectors.extend(pairs);
        }
        let query = embedder
            .embed(&[task.to_string()])
            .await
            .map_err(|e| e.message)?
            .pop()
            .ok_or("no vector for the task")?;
        let mut scored: Vec<(f32, Memory)> = pool
            .into_iter()
            .filter_map(|m| {
                let s = cosine(&query, vectors.get(&m.id)?);
                (s >= MIN_SIMILARITY).then_some((s, m))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        Ok(scored.into_iter().map(|(_, m)| m).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(n: u128, pinned: bool) -> Memory {
        Memory {
            id: uuid::Uuid::from_u128(n),
            kind: run_model::MemoryKind::Run,
            task: String::new(),
            text: format!("m{n}"),
            run_id: None,
            plan_id: None,
            pinned,
            created_at: Default::default(),
        }
    }

    #[test]
    fn cosine_is_one_for_the_same_direction_and_zero_for_nothing_shared() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 3.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0, "other dimensions");
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }

    /// The story on `url`'s database; its words are `tag`'s own, so a
    /// shared database's other rows do not count.
    async fn crowded_recall(url: &str) {
        use run_model::memory::{MemoryKind, NewMemory, RECALLED};
        let store: Arc<dyn MemoryStore> =
            Arc::new(crate::store::SqlStore::connect(url).await.unwrap());
        let tag = format!("t{}", uuid::Uuid::new_v4().simple());
        let new = |kind, task: String, text: String| NewMemory {
            kind,
            task,
            text,
            run_id: None,
            plan_id: None,
        };
        // The correction first (oldest), sharing two words with the task.
        store
            .remember(&[new(
                MemoryKind::Correction,
                format!("Rotate the keys {tag}"),
                format!(
                    "For the task «Rotate the keys {tag}», a person said: rotate the staging ones first"
                ),
            )])
            .await
            .unwrap();
        // Then 40 good reviews holding every word of the task.
        let task = format!("Rotate the database passwords of the billing replica {tag}");
        let reviews: Vec<NewMemory> = (0..40)
            .map(|i| {
                new(
                    MemoryKind::Review,
                    task.clone(),
                    format!("A reviewer (ana) judged the finished plan \"rotate {i}\" good."),
                )
            })
            .collect();
        store.remember(&reviews).await.unwrap();
        let by_rank = store
            .memories(Some(&task), 0, (RECALLED * PER_RECALLED) as u32)
            .await
            .unwrap();
        assert!(
            by_rank.iter().all(|m| m.kind == MemoryKind::Review),
            "the reviews fill the candidates"
        );
        let recalled = Recall::new(store.clone(), None)
            .recall(&task, RECALLED)
            .await
            .unwrap();
        assert_eq!(recalled.len(), RECALLED);
        assert!(
            recalled
                .iter()
                .any(|m| m.text.contains("rotate the staging ones first")),
            "{recalled:#?}"
        );
        // A rule for every task is recalled though it shares no word.
        let rule = store
            .remember(&[new(
                MemoryKind::Rule,
                String::new(),
                format!("Say which replica you touched {tag}"),
            )])
            .await
            .unwrap();
        store.pin(rule[0].id, true).await.unwrap();
        let recalled = Recall::new(store.clone(), None)
            .recall(&format!("Write a haiku {tag}x"), RECALLED)
            .await
            .unwrap();
        assert!(recalled.iter().any(|m| m.id == rule[0].id), "{recalled:#?}");
        assert!(recalled.iter().all(|m| m.kind == MemoryKind::Rule));
        store.forget(rule[0].id).await.unwrap();
    }

    #[tokio::test]
    async fn good_reviews_ranked_above_a_correction_cannot_crowd_it_out_of_recall() {
        let dir = tempfile::tempdir().unwrap();
        crowded_recall(&format!(
            "sqlite://{}",
            dir.path().join("recall.db").display()
        ))
        .await;
        // And on PostgreSQL, when the tests are given one.
        if let Ok(url) = std::env::var("PLANBOARD_TEST_DATABASE_URL") {
            crowded_recall(&url).await;
        }
    }

    #[test]
    fn fusion_puts_pinned_first_then_what_both_rankings_agree_on() {
        let (a, b, c, p) = (
            memory(1, false),
            memory(2, false),
            memory(3, false),
            memory(4, true),
        );
        // a: 1st by text only; b: 2nd by text and 1st by vector; c: vector only.
        let fused = fuse(
            &[a.clone(), b.clone(), p.clone()],
            &[b.clone(), c.clone()],
            10,
        );
        let order: Vec<&str> = fused.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(order, ["m4", "m2", "m1", "m3"]);
        assert_eq!(fuse(&[a], &[b, c], 2).len(), 2, "within the limit");
    }
}
