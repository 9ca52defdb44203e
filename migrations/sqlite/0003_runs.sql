-- planboard's own agent: one row per run (the whole record as JSON, state
-- and plan copied out for filtering) and the run log. The lease says which
-- process drives a run and until when (unix milliseconds); it is renewed
-- while the run is driven, so after a crash another process (or the same
-- one restarted) takes the run over.
CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    plan_id     TEXT,
    state       TEXT NOT NULL,
    record      TEXT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX runs_state ON runs (state, created_at);
CREATE INDEX runs_plan ON runs (plan_id);

-- Append-only, like plan_events; not plan events (they never bump a
-- plan's version). `seq` is the SSE id of the run's stream.
CREATE TABLE run_log (
    seq    INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    plan_id TEXT,
    kind   TEXT NOT NULL,
    entry  TEXT NOT NULL,
    at     TEXT NOT NULL
);
CREATE INDEX run_log_run ON run_log (run_id, seq);
