//! The roles a model plays in a run, one file each: what each is asked,
//! with which prompt and schema, and how its answer is read and mended.
//! The coordinator decides when each is called; these files only talk to
//! the model (through [`crate::call::Caller`]) and read plans.
//! - [`classify`]: routes a task to the simple, complex or emergent
//!   planner (seed 004), by rules first, the model when they cannot tell.
//! - [`planner`]: the three planners (simple, complex, emergent), each
//!   answer turned into engine subtasks.
//! - [`batch_planner`]: seed 002's planner for a long input, a batch of
//!   items at a time, whose answer is mended to cover exactly its items.
//! - [`executor`]: works one subtask with tools to an outcome.
//! - [`length`]: the lengths a task sets its text (words, sentences,
//!   lines), read by [`classify`] and [`executor`].
//! - [`checker`]: computes a subtask's number again, twice and without
//!   seeing it, before the executor's result is kept.
//!
//! The adapter (between super-steps) and the TODO updater are not here:
//! their model calls are woven into the coordinator's driving (they read
//! and change the run's state between prompts), so they stay in
//! `coordinator::adjust`.

pub mod batch_planner;
pub mod checker;
pub mod classify;
pub mod executor;
pub mod length;
pub mod planner;
