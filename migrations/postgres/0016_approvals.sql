-- Every decision a person made for the agent, kept for audit (see
-- server/src/approvals): a plan version approved or rejected, a guarded
-- call approved, edited or denied, a budget raised, a drifted plan
-- approved again, a grant given or revoked. Written once, never changed;
-- removed by the runs' retention (PLANBOARD_APPROVAL_RETENTION_DAYS).
-- `digest` is the hex SHA-256 of what was decided (the plan's content, the
-- call's tool and canonical arguments); `by_actor` who decided as the
-- plan's events name them, `person` the person alone; `detail` JSON.
CREATE TABLE approvals (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    decision     TEXT NOT NULL,
    by_actor     TEXT NOT NULL,
    person       TEXT NOT NULL,
    at           TEXT NOT NULL,
    run_id       TEXT,
    plan_id      TEXT,
    plan_version BIGINT,
    digest       TEXT NOT NULL,
    tool         TEXT,
    call_id      TEXT,
    note         TEXT,
    waited_ms    BIGINT,
    detail       TEXT
);
CREATE INDEX approvals_at ON approvals (at);
CREATE INDEX approvals_run ON approvals (run_id, at);
CREATE INDEX approvals_person ON approvals (person, at);

-- Tools granted for one run when its plan was approved (a glob over the
-- call's main argument, or none: the whole tool): their calls no longer
-- ask. A revoked grant stays, with who revoked it and when.
CREATE TABLE grants (
    id         TEXT PRIMARY KEY,
    run_id     TEXT NOT NULL,
    tool       TEXT NOT NULL,
    pattern    TEXT,
    by_actor   TEXT NOT NULL,
    at         TEXT NOT NULL,
    revoked_by TEXT,
    revoked_at TEXT
);
CREATE INDEX grants_run ON grants (run_id);

-- A run approved and held: it starts on a person's click, or at
-- `start_at` (RFC 3339) when set. `released_at` is when it started.
CREATE TABLE holds (
    run_id      TEXT PRIMARY KEY,
    plan_id     TEXT NOT NULL,
    start_at    TEXT,
    by_actor    TEXT NOT NULL,
    at          TEXT NOT NULL,
    released_at TEXT
);
CREATE INDEX holds_due ON holds (released_at, start_at);

-- Tool policies an operator set on the board or over the API (applying
-- an approvals insight), over PLANBOARD_TOOL_POLICY; read when a run
-- starts (and every few seconds by each replica).
CREATE TABLE tool_policies (
    tool     TEXT PRIMARY KEY,
    policy   TEXT NOT NULL,
    by_actor TEXT NOT NULL,
    at       TEXT NOT NULL
);
