-- What planboard's agent remembers of finished runs: run summaries and
-- people's corrections. `terms` holds the search terms the agent makes
-- (words, and pairs of CJK characters), the same on both dialects;
-- PostgreSQL's text search indexes them ('simple': no stemming, the terms
-- are already words) and ranks with ts_rank.
CREATE TABLE memories (
    id         TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    task       TEXT NOT NULL,
    body       TEXT NOT NULL,
    terms      TEXT NOT NULL,
    run_id     TEXT,
    plan_id    TEXT,
    pinned     BIGINT NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    search     tsvector GENERATED ALWAYS AS (to_tsvector('simple', terms)) STORED
);
CREATE INDEX memories_created ON memories (created_at);
CREATE INDEX memories_search ON memories USING GIN (search);
