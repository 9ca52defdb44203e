-- The guarded tool calls of a run's log and the decisions on them, so the
-- calls waiting for a person (the run header, "Needs you", a decision) are
-- found without reading the whole log. Partial: a few rows per run.
CREATE INDEX run_log_calls ON run_log (run_id, seq)
    WHERE kind IN ('tool_approval', 'tool_decision');
