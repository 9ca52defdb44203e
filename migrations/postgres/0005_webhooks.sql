-- Webhook deliveries. The run log is the outbox: a deliverer reads the
-- entries after `webhook_cursor.seq`, records a delivery per endpoint for
-- each entry worth a notification (at most once: the unique index), then
-- moves the cursor. A crash between the two re-reads the same entries and
-- adds nothing twice; a delivery is retried with backoff until it is
-- answered 2xx or out of attempts.
CREATE TABLE webhook_cursor (
    id  BIGINT PRIMARY KEY,
    seq BIGINT NOT NULL
);

CREATE TABLE webhook_deliveries (
    id           TEXT PRIMARY KEY,
    endpoint     TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    event        TEXT NOT NULL,
    plan_id      TEXT,
    run_id       TEXT NOT NULL,
    body         TEXT NOT NULL,
    status       TEXT NOT NULL,
    attempts     BIGINT NOT NULL DEFAULT 0,
    next_at      BIGINT NOT NULL,
    last_status  BIGINT,
    last_error   TEXT,
    created_at   TEXT NOT NULL,
    delivered_at TEXT
);
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (endpoint, seq);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_at);
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
