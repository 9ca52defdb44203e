//! The ACP agents runs can be given to: coding agents that speak the
//! Agent Client Protocol, which admins add (a command, its arguments, the
//! environment it needs, secrets named explicitly), as they add MCP
//! servers. planboard starts one as its client for each run given to it
//! (`agent::acp`), in the run's workspace, with a cleared environment:
//! `PATH`, `HOME`, `LANG` and the agent's own `env`, nothing of
//! planboard's. An agent is checked when it is added or changed, and on
//! request: started in an empty folder, asked `initialize`, stopped.
//!
//! # Layout
//! - this file: [`AcpAgents`], the registry and the one service the API
//!   and the Tools page call (add, change, test, remove);
//!   [`AcpAgentSpec`], what a person sends; [`AcpAgentError`];
//! - `store.rs`: [`AcpAgentStore`] and its row; `sql.rs`: it on the SQL
//!   store.

mod sql;
mod store;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use run_model::{valid_agent_name, AcpAgentView, AGENT_NAME_CHARS};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::store::StoreError;
use crate::tool_servers::{
    ARG_CHARS, COMMAND_CHARS, ENV_NAME_CHARS, ENV_VALUE_CHARS, MAX_ARGS, MAX_ENV,
};

pub use store::{AcpAgentStore, StoredAcpAgent};

/// How long a check may take (an agent run through `npx` may download
/// itself first).
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// An agent and what its last check said.
struct Entry {
    stored: StoredAcpAgent,
    agent_info: Option<String>,
    error: Option<String>,
    checked_at: Option<plan_engine::Timestamp>,
}

pub struct AcpAgents {
    agents: RwLock<BTreeMap<String, Entry>>,
    store: Arc<dyn AcpAgentStore>,
    /// The empty folder checks start agents in.
    check_dir: PathBuf,
}

/// An ACP agent to add, or what to change of one.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcpAgentSpec {
    /// Letters, digits, `-` and `_`; 1 to 40 (on a change, it must match
    /// the route's). Runs name the agent by it: `POST /api/runs {"task":
    /// …, "agent": name}`.
    #[schemars(length(min = 1, max = AGENT_NAME_CHARS))]
    pub name: String,
    /// The program (`npx`, `codex-acp`, `/usr/local/bin/gemini`).
    #[schemars(length(min = 1, max = COMMAND_CHARS))]
    pub command: String,
    /// At most 32, each at most 1,000 characters; shown to admins only.
    #[serde(default)]
    #[schemars(length(max = MAX_ARGS), inner(length(max = ARG_CHARS)))]
    pub args: Vec<String>,
    /// The variables the program gets besides `PATH`, `HOME` and `LANG`
    /// (an API key, a config folder): at most 32; their values are never
    /// shown again. Left out on a change: the stored ones are kept.
    pub env: Option<BTreeMap<String, String>>,
}

impl AcpAgentSpec {
    /// The agent to store, or why not; `old` is the stored one a change
    /// keeps the env of.
    pub fn check(
        self,
        who: &str,
        old: Option<&StoredAcpAgent>,
    ) -> Result<StoredAcpAgent, AcpAgentError> {
        let bad = AcpAgentError::Invalid;
        let name = self.name.trim().to_string();
        if !valid_agent_name(&name) {
            return Err(bad(format!(
                "name has 1 to {AGENT_NAME_CHARS} letters, digits, '-' or '_', not '{}'",
                plan_engine::text::prefix(&name, 60)
            )));
        }
        let command = self.command.trim().to_string();
        if command.is_empty() || command.chars().count() > COMMAND_CHARS {
            return Err(bad(format!("command has 1 to {COMMAND_CHARS} characters")));
        }
        if self.args.len() > MAX_ARGS || self.args.iter().any(|a| a.chars().count() > ARG_CHARS) {
            return Err(bad(format!(
                "at most {MAX_ARGS} args, each at most {ARG_CHARS} characters"
            )));
        }
        let env = match self.env {
            Some(env) => env,
            None => old.map(|o| o.env.clone()).unwrap_or_default(),
        };
        if env.len() > MAX_ENV
            || env.iter().any(|(k, v)| {
                k.is_empty()
                    || k.len() > ENV_NAME_CHARS
                    || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    || v.chars().count() > ENV_VALUE_CHARS
            })
        {
            return Err(bad(format!(
                "env has at most {MAX_ENV} variables, named with letters, digits and '_', values of at most {ENV_VALUE_CHARS} characters"
            )));
        }
        Ok(StoredAcpAgent {
            name,
            command,
            args: self.args,
            env,
            created_by: who.to_string(),
            created_at: chrono::Utc::now(),
        })
    }
}

/// Why a change to the ACP agents was refused.
#[derive(Debug, thiserror::Error)]
pub enum AcpAgentError {
    #[error("{0}")]
    Invalid(String),
    #[error("an ACP agent is named {0} already")]
    Taken(String),
    #[error("no ACP agent is named '{0}'")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn view_of(e: &Entry) -> AcpAgentView {
    AcpAgentView {
        name: e.stored.name.clone(),
        command: e.stored.command.clone(),
        args: e.stored.args.clone(),
        hidden_args: None,
        env: e.stored.env.keys().cloned().collect(),
        agent_info: e.agent_info.clone(),
        error: e.error.clone(),
        checked_at: e.checked_at,
        created_by: e.stored.created_by.clone(),
        created_at: e.stored.created_at,
    }
}

impl AcpAgents {
    /// The stored agents (not started: a check starts a program, which
    /// start-up does not do for every agent).
    pub async fn open(store: Arc<dyn AcpAgentStore>) -> Result<Arc<AcpAgents>, StoreError> {
        let agents = store
            .acp_agents()
            .await?
            .into_iter()
            .map(|stored| {
                (
                    stored.name.clone(),
                    Entry {
                        stored,
                        agent_info: None,
                        error: None,
                        checked_at: None,
                    },
                )
            })
            .collect();
        Ok(Arc::new(AcpAgents {
            agents: RwLock::new(agents),
            store,
            check_dir: std::env::temp_dir().join("planboard-acp-check"),
        }))
    }

    /// The program of the agent `name`, for a run.
    pub fn command(&self, name: &str) -> Option<agent::acp::AcpCommand> {
        self.agents
            .read()
            .expect("agents lock")
            .get(name)
            .map(|e| e.stored.command())
    }

    pub fn views(&self) -> Vec<AcpAgentView> {
        self.agents
            .read()
            .expect("agents lock")
            .values()
            .map(view_of)
            .collect()
    }

    pub fn view(&self, name: &str) -> Option<AcpAgentView> {
        self.agents
            .read()
            .expect("agents lock")
            .get(name)
            .map(view_of)
    }

    /// The names runs can be given to, for the task box.
    pub fn names(&self) -> Vec<String> {
        self.agents
            .read()
            .expect("agents lock")
            .keys()
            .cloned()
            .collect()
    }

    /// Starts the agent in an empty folder and asks `initialize`: what it
    /// said it is, or why not. Kept with the agent.
    async fn checked(&self, name: &str, command: agent::acp::AcpCommand) -> AcpAgentView {
        let dir = self.check_dir.join(uuid::Uuid::new_v4().to_string());
        let outcome = match tokio::fs::create_dir_all(&dir).await {
            Err(e) => Err(format!("no folder to start it in: {e}")),
            Ok(()) => {
                match tokio::time::timeout(CHECK_TIMEOUT, agent::acp::check(&command, &dir)).await {
                    Ok(Ok(info)) => Ok(info),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err(format!(
                        "it did not answer initialize within {} s",
                        CHECK_TIMEOUT.as_secs()
                    )),
                }
            }
        };
        let _ = tokio::fs::remove_dir_all(&dir).await;
        let mut agents = self.agents.write().expect("agents lock");
        match agents.get_mut(name) {
            Some(e) => {
                match outcome {
                    Ok(info) => {
                        e.agent_info = Some(info);
                        e.error = None;
                    }
                    Err(why) => e.error = Some(plan_engine::text::fit(&why, 2_000)),
                }
                e.checked_at = Some(chrono::Utc::now());
                view_of(e)
            }
            // Removed while it was checked.
            None => AcpAgentView {
                name: name.to_string(),
                command: command.command,
                args: command.args,
                hidden_args: None,
                env: command.env.into_keys().collect(),
                agent_info: None,
                error: Some("removed while it was checked".into()),
                checked_at: None,
                created_by: String::new(),
                created_at: chrono::Utc::now(),
            },
        }
    }

    fn keep(&self, stored: StoredAcpAgent) {
        let name = stored.name.clone();
        self.agents.write().expect("agents lock").insert(
            name,
            Entry {
                stored,
                agent_info: None,
                error: None,
                checked_at: None,
            },
        );
    }

    /// Adds an agent and checks it; it is kept even when the check fails
    /// (its error is shown; fix it with a change, or test it again).
    pub async fn add(&self, spec: AcpAgentSpec, who: &str) -> Result<AcpAgentView, AcpAgentError> {
        let stored = spec.check(who, None)?;
        if !self.store.put_acp_agent(&stored, false).await? {
            return Err(AcpAgentError::Taken(stored.name));
        }
        let (name, command) = (stored.name.clone(), stored.command());
        self.keep(stored);
        Ok(self.checked(&name, command).await)
    }

    pub async fn change(
        &self,
        name: &str,
        spec: AcpAgentSpec,
        who: &str,
    ) -> Result<AcpAgentView, AcpAgentError> {
        let old = self
            .agents
            .read()
            .expect("agents lock")
            .get(name)
            .map(|e| e.stored.clone())
            .ok_or_else(|| AcpAgentError::NotFound(name.to_string()))?;
        if spec.name.trim() != name {
            return Err(AcpAgentError::Invalid(format!(
                "the name cannot change ({name} here)"
            )));
        }
        let stored = spec.check(who, Some(&old))?;
        if !self.store.put_acp_agent(&stored, true).await? {
            return Err(AcpAgentError::NotFound(name.to_string()));
        }
        let command = stored.command();
        self.keep(stored);
        Ok(self.checked(name, command).await)
    }

    pub async fn test(&self, name: &str) -> Result<AcpAgentView, AcpAgentError> {
        let command = self
            .command(name)
            .ok_or_else(|| AcpAgentError::NotFound(name.to_string()))?;
        Ok(self.checked(name, command).await)
    }

    /// Removes an agent: no new run can be given to it (runs it works on
    /// go on with the program they started).
    pub async fn delete(&self, name: &str) -> Result<(), AcpAgentError> {
        let removed = self.store.remove_acp_agent(name).await?;
        self.agents.write().expect("agents lock").remove(name);
        if removed {
            Ok(())
        } else {
            Err(AcpAgentError::NotFound(name.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: serde_json::Value) -> AcpAgentSpec {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn an_agent_needs_a_good_name_and_a_command_and_keeps_its_env_on_a_change() {
        let ok = spec(serde_json::json!({"name": "codex", "command": "npx",
            "args": ["@zed-industries/codex-acp"], "env": {"OPENAI_API_KEY": "sk-1"}}))
        .check("alice", None)
        .unwrap();
        assert_eq!(ok.command, "npx");
        for bad in [
            serde_json::json!({"name": "no spaces", "command": "x"}),
            serde_json::json!({"name": "x", "command": "  "}),
            serde_json::json!({"name": "x", "command": "y", "env": {"BAD-NAME": "v"}}),
            serde_json::json!({"name": "x", "command": "y", "args": vec!["a"; 33]}),
        ] {
            assert!(spec(bad.clone()).check("alice", None).is_err(), "{bad}");
        }
        assert!(
            serde_json::from_value::<AcpAgentSpec>(
                serde_json::json!({"name": "x", "command": "y", "url": "http://h"})
            )
            .is_err(),
            "an agent has no url"
        );
        let changed = spec(serde_json::json!({"name": "codex", "command": "codex-acp"}))
            .check("bob", Some(&ok))
            .unwrap();
        assert_eq!(changed.env["OPENAI_API_KEY"], "sk-1");
        // Its env's values stay out of logs.
        assert!(!format!("{changed:?}").contains("sk-1"));
    }
}
