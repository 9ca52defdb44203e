-- ACP agents an admin added (the Tools page, POST /api/agents): programs
-- planboard starts as their client to give them a task. The name is
-- unique: runs name their agent by it (RunConfig.agent). `args` and `env`
-- are JSON; the env's values are secrets, never shown back, and the args
-- are shown to admins only.
CREATE TABLE acp_agents (
    name       TEXT PRIMARY KEY,
    command    TEXT NOT NULL,
    args       TEXT NOT NULL,
    env        TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
);
