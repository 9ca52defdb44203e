-- What planboard's agent remembers of finished runs: run summaries and
-- people's corrections. `terms` holds the search terms the agent makes
-- (words, and pairs of CJK characters), the same on both dialects; FTS5
-- indexes them (an external-content table kept in step by triggers) and
-- ranks with bm25.
CREATE TABLE memories (
    id         TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    task       TEXT NOT NULL,
    body       TEXT NOT NULL,
    terms      TEXT NOT NULL,
    run_id     TEXT,
    plan_id    TEXT,
    pinned     INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX memories_created ON memories (created_at);

CREATE VIRTUAL TABLE memories_fts USING fts5(terms, content='memories', content_rowid='rowid');

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, terms) VALUES (new.rowid, new.terms);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, terms) VALUES ('delete', old.rowid, old.terms);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF terms ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, terms) VALUES ('delete', old.rowid, old.terms);
    INSERT INTO memories_fts (rowid, terms) VALUES (new.rowid, new.terms);
END;
