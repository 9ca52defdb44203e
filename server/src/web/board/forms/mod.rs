//! The plain forms the board posts, one file per page they are on: each
//! form is a typed struct, each handler extracts it, calls the one service
//! the API's route calls and redirects back to where the person was (or
//! answers the refusal in their language, through the one mapping of
//! errors). [`super::routes`] registers them.
//!
//! # Layout
//! - `shared.rs`: what every form shares: the plan a form is on
//!   ([`shared::PlanForm`]), the answer (a redirect or the refusal), the
//!   task box's number fields;
//! - `task.rs`: the task box (`POST /plans/new/task`), the API's `StartRun`;
//! - `run.rs`: a plan's board and its run header: re-plan, answer a
//!   question, let the agent work the plan, raise the budget, decide a
//!   guarded tool call;
//! - `reviews.rs`: the review of a finished plan (keeping the run as a
//!   regression case), "Run again from" and "Replay";
//! - `cases.rs`: the Cases page: run the suite, cancel one, edit, retire
//!   or delete a case; the check rows both forms post;
//! - `templates.rs`: save a plan as a template, delete one;
//! - `memories.rs`: the Memory page: pin, forget, edit, write a rule;
//! - `settings.rs`: the settings page's webhook endpoints;
//! - `tools.rs`: the Tools page's MCP servers.

pub mod cases;
pub mod memories;
pub mod reviews;
pub mod run;
pub mod settings;
pub mod shared;
pub mod task;
pub mod templates;
pub mod tools;
