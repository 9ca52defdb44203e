//! The server's one integration-test binary: each test starts the real
//! server (router, store, log reader) on port 0 with a temporary SQLite
//! database and talks to it over HTTP. With `PLANBOARD_TEST_DATABASE_URL`
//! set to a PostgreSQL URL, the store story also runs against PostgreSQL,
//! including two server processes on one database.

mod acp;
mod approvals;
mod attacks;
mod auth;
mod bad_input;
mod cases;
mod concurrency;
mod crash;
mod errors;
mod fake_openai;
mod guard;
mod images;
mod inputs;
mod live;
mod mcp;
mod memory;
mod openai_quirks;
mod openapi;
mod plans;
mod postgres;
mod queue;
mod replay;
mod reviews;
mod runs;
mod site;
mod storage;
mod support;
mod task_box;
mod telemetry;
mod templates;
mod tool_servers;
mod tools;
