-- MCP servers an admin added on the Tools page (those of
-- PLANBOARD_MCP_SERVERS are configuration, not rows). The name is unique:
-- the board and the API name a server by it. `args` and `env` are JSON;
-- `token` and the env's values are secrets, never shown back.
CREATE TABLE mcp_servers (
    name       TEXT PRIMARY KEY,
    url        TEXT,
    token      TEXT,
    command    TEXT,
    args       TEXT NOT NULL,
    env        TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
);
