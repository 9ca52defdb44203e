-- "Run again from here": the plan a run started again from, so the
-- earlier plan's board lists the runs made from it.
ALTER TABLE runs ADD COLUMN again_of TEXT;
CREATE INDEX runs_again_of ON runs (again_of);
