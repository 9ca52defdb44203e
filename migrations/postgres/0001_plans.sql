-- planboard's schema for PostgreSQL. Timestamps are RFC 3339 text in UTC with
-- microseconds, so they sort as text; the snapshot is the engine's plan JSON.
CREATE TABLE plans (
    id          TEXT PRIMARY KEY,
    plan_key    TEXT UNIQUE,
    title       TEXT NOT NULL,
    state       TEXT NOT NULL,
    mode        TEXT NOT NULL,
    approval    TEXT NOT NULL,
    version     BIGINT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    finished_at TEXT,
    deleted_at  TEXT,
    snapshot    TEXT NOT NULL
);
CREATE INDEX plans_state ON plans (state, updated_at);
CREATE INDEX plans_updated ON plans (updated_at);

-- Append-only: rows are never updated or deleted. `seq` orders the whole
-- log (it is the SSE id); a commit locks the table (EXCLUSIVE mode; reads go on), so seq order is commit order.
CREATE TABLE plan_events (
    seq     BIGSERIAL PRIMARY KEY,
    plan_id TEXT NOT NULL,
    version BIGINT NOT NULL,
    actor   TEXT NOT NULL,
    kind    TEXT NOT NULL,
    payload TEXT NOT NULL,
    at      TEXT NOT NULL
);
CREATE INDEX plan_events_plan ON plan_events (plan_id, seq);

CREATE TABLE comments (
    plan_id TEXT NOT NULL,
    id      BIGINT NOT NULL,
    subtask BIGINT,
    author  TEXT NOT NULL,
    body    TEXT NOT NULL,
    at      TEXT NOT NULL,
    PRIMARY KEY (plan_id, id)
);

-- The plan each agent session works on (OpenManus set_active, AgentScope's
-- current plan, one per MCP session).
CREATE TABLE active_plans (
    session    TEXT PRIMARY KEY,
    plan_id    TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
