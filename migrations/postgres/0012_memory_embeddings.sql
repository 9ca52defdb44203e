-- Memories' embeddings for hybrid recall (`PLANBOARD_EMBEDDING_MODEL`):
-- one per memory, by the model named beside it (another model's vector is
-- made again, never compared). `vector` is base64 of little-endian f32s.
-- Made the first time recall needs one; dropped when the memory's text is
-- edited or the memory is forgotten.
CREATE TABLE memory_embeddings (
    memory_id TEXT PRIMARY KEY,
    model     TEXT NOT NULL,
    vector    TEXT NOT NULL
);
