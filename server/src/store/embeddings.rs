//! Memories' embeddings (hybrid recall): one vector per memory and model,
//! as base64 of little-endian `f32`s in a text column, so both dialects
//! hold it the same way.

use std::collections::HashMap;

use base64::Engine;
use run_model::memory::MemoryId;
use sqlx::Row;

use super::sql::values_sql;
use super::{SqlStore, StoreError};

/// Rows per statement (PostgreSQL and SQLite both take this many binds).
const CHUNK: usize = 300;

fn encode(vector: &[f32]) -> String {
    let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn decode(text: &str) -> Option<Vec<f32>> {
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
    /// The vectors `model` made of these memories (those it has not made,
    /// or that do not read back, are missing from the map).
    pub(super) async fn memory_embeddings(
        &self,
        ids: &[MemoryId],
        model: &str,
    ) -> Result<HashMap<MemoryId, Vec<f32>>, StoreError> {
        let mut out = HashMap::new();
        for chunk in ids.chunks(CHUNK) {
            let placeholders: Vec<String> =
                (0..chunk.len()).map(|i| format!("${}", i + 2)).collect();
            let sql = format!(
                "SELECT memory_id, vector FROM memory_embeddings WHERE model = $1 AND memory_id IN ({})",
                placeholders.join(", ")
            );
            let mut query = sqlx::query(&sql).bind(model.to_string());
            for id in chunk {
                query = query.bind(id.to_string());
            }
            for row in query.fetch_all(&self.pool).await? {
                let id: String = row.try_get("memory_id")?;
                let vector: String = row.try_get("vector")?;
                if let (Ok(id), Some(vector)) = (id.parse(), decode(&vector)) {
                    out.insert(id, vector);
                }
            }
        }
        Ok(out)
    }

    /// Keeps `model`'s vectors of these memories (replacing another
    /// model's). A memory forgotten meanwhile keeps none: the rows are
    /// written only for memories that still exist.
    pub(super) async fn put_memory_embeddings(
        &self,
        model: &str,
        vectors: &[(MemoryId, Vec<f32>)],
    ) -> Result<(), StoreError> {
        for chunk in vectors.chunks(CHUNK / 3) {
            let sql = values_sql(
                "INSERT INTO memory_embeddings (memory_id, model, vector) VALUES ",
                3,
                chunk.len(),
            ) + " ON CONFLICT (memory_id) DO UPDATE SET model = excluded.model, vector = excluded.vector";
            let mut query = sqlx::query(&sql);
            for (id, vector) in chunk {
                query = query
                    .bind(id.to_string())
                    .bind(model.to_string())
                    .bind(encode(vector));
            }
            query.execute(&self.pool).await?;
            // A memory forgotten while its vector was being made leaves
            // none. Only the rows just written are looked at: the whole
            // table's anti-join cost grew with every memory ever embedded.
            let ids: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!(
                "DELETE FROM memory_embeddings WHERE memory_id IN ({}) AND NOT EXISTS \
                 (SELECT 1 FROM memories m WHERE m.id = memory_embeddings.memory_id)",
                ids.join(", ")
            );
            let mut query = sqlx::query(&sql);
            for (id, _) in chunk {
                query = query.bind(id.to_string());
            }
            query.execute(&self.pool).await?;
        }
        Ok(())
    }

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
