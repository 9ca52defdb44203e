-- A plan's snapshot (the engine's plan JSON) in a table of its own: a
-- step's commit updates the plan's small row and appends its events, and
-- rewrites the snapshot only when one is due. In the plans row, the
-- snapshot made every update rewrite the whole plan (SQLite rewrites a
-- row whole), so a step's write grew with the plan.
CREATE TABLE plan_snapshots (
    plan_id  TEXT PRIMARY KEY,
    snapshot TEXT NOT NULL
);
INSERT INTO plan_snapshots (plan_id, snapshot) SELECT id, snapshot FROM plans;
ALTER TABLE plans DROP COLUMN snapshot;
