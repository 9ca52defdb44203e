-- An agent session's settings (seed 003's PlanNotebook needUserConfirm and
-- maxSubtasks): the plans the session creates take them, and its hints
-- state them. NULL: not set. Keyed like active_plans.
CREATE TABLE session_settings (
    session           TEXT PRIMARY KEY,
    need_user_confirm BIGINT,
    max_subtasks      BIGINT,
    updated_at        TEXT NOT NULL
);
