//! Memories' embeddings (hybrid recall): one vector per memory and model,
//! as base64 of little-endian `f32`s in a text column, so both dialects
//! hold it the same way.

use base64::Engine;
use run_model::memory::MemoryId;

use crate::store::{SqlStore, StoreError};

/// Rows per statement (PostgreSQL and SQLite both take this many binds).
pub(super) const CHUNK: usize = 300;

pub(super) fn encode(vector: &[f32]) -> String {
    let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub(super) fn decode(text: &str) -> Option<Vec<f32>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .ok()?;
    if bytes.len() % 4 != 0 {
        return None;
    }
    Some(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

impl SqlStore {
    /// Drops a memory's vector (its text changed, or it was forgotten).
    pub(super) async fn drop_memory_embedding(&self, id: MemoryId) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM memory_embeddings WHERE memory_id = $1")
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_reads_back_exactly_and_a_damaged_one_not_at_all() {
        let v = vec![0.25, -1.5, f32::MIN_POSITIVE, 3.0e7];
        assert_eq!(decode(&encode(&v)), Some(v));
        assert_eq!(decode("AAA"), None);
        assert_eq!(decode("AAAAAAA="), None, "5 bytes");
    }
}
