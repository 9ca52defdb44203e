//! planboard's own agent: a task goes in; a classifier routes it to the
//! simple, complex or emergent planner (seed 004); the plan waits for a
//! person's approval; an executor works it subtask by subtask on any
//! OpenAI-compatible model, while people watch and steer through the plan
//! itself (seeds 002 and 003).
//!
//! The crate knows plans only through the engine and the [`host::Host`]
//! trait, which the server implements over its one write path; it has no
//! database, HTTP server or UI.
//!
//! # Layout
//! - [`acp`]: coding agents that speak the Agent Client Protocol, driven
//!   as planboard's runs: started in the run's workspace, their plan
//!   updates the run's plan, their permission requests guarded calls.
//! - [`llm`]: the [`llm::Llm`] trait, async-openai's implementation and a
//!   scripted one for tests; errors sorted into retryable and final.
//! - [`retry`]: the one retry layer (backoff with jitter, `Retry-After`).
//! - [`call`]: every model call of a run: budget, global concurrency,
//!   retries, the run log, one repair round for unreadable answers.
//! - [`protocol`]: typed answers, their schemas, the executor's actions in
//!   both protocols (JSON schema and native tool calls).
//! - [`prompts`]: the words.
//! - [`roles`]: the model-facing roles, one file each: the classifier,
//!   the planners (simple, complex and emergent; seed 002's batch planner)
//!   and the executor.
//! - [`rules`]: the agent's judgement as named rules, each with the
//!   failure it guards and a switch for the evaluation.
//! - [`grounded`]: whether the numbers a model states come from what it
//!   saw (checked before a subtask completes and an answer is kept).
//! - [`coordinator`]: [`coordinator::Agent`] drives a run from its stored
//!   state: approval, super-steps, emergent updates, adaptation, pauses,
//!   the answer.
//! - [`run`]: run configuration, budget, state machine, run log entries.
//! - [`host`]: the [`host::Host`] trait and an in-memory host.
//! - [`asking`]: a tool's question to a run's people (an MCP server's
//!   elicitation), put and answered as a guarded call.
//! - [`replay`]: a replay's [`replay::Recording`]: the tool results of the
//!   run it replays, answering the same calls (issue 56).
//! - [`tools`]: work tools, one source a file: the file tools on the run's
//!   [`workspace`], `fetch_url` and `web_search`, MCP servers, and
//!   `run_python` / `run_shell` under bubblewrap (`tools::sandbox`: detect,
//!   jail, capture, code).
//! - [`workspace`]: the only code that touches a workspace's files, every
//!   name resolved beneath one directory handle (links never lead out).

pub mod acp;
pub mod asking;
pub mod call;
pub mod coordinator;
pub mod grounded;
pub mod host;
pub mod llm;
pub mod prompts;
pub mod protocol;
pub mod replay;
pub mod retry;
pub mod roles;
pub mod rules;
pub mod run;
pub mod tools;
pub mod workspace;

#[cfg(test)]
mod testing;

pub use coordinator::Agent;
pub use host::{Host, HostError, MemoryHost};
pub use llm::{Embedder, Llm, LlmConfig, OpenAiEmbedder, OpenAiLlm, ScriptedLlm};
pub use run::{Budget, ModeChoice, RunConfig, RunEntry, RunId, RunRecord, RunState};
