-- People's reviews of finished plans: one per reviewer and plan, changed
-- only by that reviewer (the API writes the caller's own). `subtasks` is
-- JSON ([{subtask, note}]); `memory_id` is the memory the review left for
-- the agent, forgotten and made again when the review changes.
CREATE TABLE reviews (
    id           TEXT PRIMARY KEY,
    plan_id      TEXT NOT NULL,
    reviewer     TEXT NOT NULL,
    verdict      TEXT NOT NULL,
    note         TEXT NOT NULL,
    subtasks     TEXT NOT NULL,
    plan_version INTEGER NOT NULL,
    memory_id    TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (plan_id, reviewer)
);
CREATE INDEX reviews_updated ON reviews (updated_at);
