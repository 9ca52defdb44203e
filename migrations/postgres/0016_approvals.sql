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
