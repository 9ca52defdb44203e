-- Recall ranks a bounded set of candidates: the rarest of a task's terms
-- first (their document counts from FTS5's own vocabulary), then rows
-- sharing all its common terms. Pinned memories are found by their index.
CREATE VIRTUAL TABLE memories_vocab USING fts5vocab(memories_fts, 'row');
CREATE INDEX memories_pinned ON memories (created_at) WHERE pinned = 1;
