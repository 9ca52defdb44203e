-- Webhook endpoints an admin added at run time (the one from
-- PLANBOARD_WEBHOOK_URL is configuration, not a row). The URL is unique:
-- deliveries name their endpoint by it.
CREATE TABLE webhook_endpoints (
    id         TEXT PRIMARY KEY,
    url        TEXT NOT NULL UNIQUE,
    secret     TEXT,
    slack      BIGINT NOT NULL DEFAULT 0,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
);
