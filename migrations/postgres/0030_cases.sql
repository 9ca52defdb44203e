-- Regression cases and suite runs (issue 56). Numbered from 0030 so the
-- migrations of issue 55, written at the same time, keep 0016 to 0029.
--
-- A case is a run a reviewer judged good, kept with what it needs to be
-- run again and judged: its task and config (JSON, the run's RunConfig),
-- the reviewed plan (the engine's JSON) and its graph for the board
-- (JSON), the answer, the input files (JSON; their copy lives under the
-- workspaces' `.cases/<id>` folder) and the reviewer's checks, one row
-- each. `run_id` is the reviewed run, whose log is the recording a
-- suite's replay answers from; one case per run.
CREATE TABLE cases (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    tags       TEXT NOT NULL,
    task       TEXT NOT NULL,
    run_id     TEXT NOT NULL UNIQUE,
    plan_id    TEXT NOT NULL,
    plan       TEXT NOT NULL,
    graph      TEXT NOT NULL,
    config     TEXT NOT NULL,
    answer     TEXT,
    inputs     TEXT NOT NULL,
    retired    BIGINT NOT NULL DEFAULT 0,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX cases_created ON cases (created_at);

-- A case's checks, in the reviewer's order: `spec` is the check as JSON
-- (its `kind` copied out).
CREATE TABLE case_checks (
    case_id  TEXT NOT NULL,
    position BIGINT NOT NULL,
    kind     TEXT NOT NULL,
    spec     TEXT NOT NULL,
    PRIMARY KEY (case_id, position)
);

-- A suite run: its record as JSON (state and model copied out), the
-- process that drives it (`owner`: a restart fails its own that were
-- going) and, for a scheduled run, its slot (one run per slot, whichever
-- replica takes it first).
CREATE TABLE suite_runs (
    id         TEXT PRIMARY KEY,
    state      TEXT NOT NULL,
    model      TEXT NOT NULL,
    owner      TEXT NOT NULL,
    slot       TEXT UNIQUE,
    record     TEXT NOT NULL,
    started_at TEXT NOT NULL
);
CREATE INDEX suite_runs_started ON suite_runs (started_at);

-- How each case went in a suite run (the CaseResult as JSON, the outcome
-- copied out). A case deleted later leaves its results.
CREATE TABLE suite_results (
    suite_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    case_id  TEXT NOT NULL,
    outcome  TEXT NOT NULL,
    record   TEXT NOT NULL,
    PRIMARY KEY (suite_id, position)
);
CREATE INDEX suite_results_case ON suite_results (case_id);
