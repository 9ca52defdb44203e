-- Plans saved as templates (issue 27): the shape of a plan a team liked,
-- started from by later tasks. `steps` is JSON ([{name, description,
-- expected_outcome, depends_on}]); `plan_id` is the plan it was saved from
-- (which may since have been deleted).
CREATE TABLE templates (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    mode       TEXT NOT NULL,
    task       TEXT NOT NULL,
    steps      TEXT NOT NULL,
    plan_id    TEXT,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX templates_created ON templates (created_at);
