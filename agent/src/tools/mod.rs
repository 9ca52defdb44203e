//! Work tools: what the executor can do besides answering. [`ToolBox`] is
//! one source of tools and [`Toolset`] offers several as one, each tool
//! under its policy. The sources live beside this file, one a file:
//! - [`files`]: `list_files`, `read_file` and `write_file` on the run's
//!   [`crate::workspace`];
//! - [`html`]: pages read with the tokenizer only (no tree: bounded
//!   memory whatever the markup);
//! - [`web`]: `fetch_url` (private addresses refused, redirects checked
//!   again) and `web_search`, through the same guard;
//! - [`mcp`]: MCP servers (streamable HTTP or stdio) as work tools;
//! - [`sandbox`]: `run_python` and `run_shell` under bubblewrap.

pub mod files;
pub mod html;
pub mod mcp;
pub mod sandbox;
pub mod web;

use std::sync::Arc;

use serde_json::Value;

use crate::protocol::ToolSpec;
use crate::run::ToolPolicy;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    pub message: String,
    /// A transient failure (a server down for a moment), worth repeating.
    pub retryable: bool,
}

impl ToolError {
    pub fn refused(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            retryable: false,
        }
    }
}

/// A question a tool's server puts to a person in the middle of a call
/// (an MCP elicitation). Every field is the server's words: shown to a
/// person, never obeyed.
#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    /// The server that asks.
    pub server: String,
    /// The tool whose call it asks in.
    pub tool: String,
    pub message: String,
    /// The answer's fields, as a JSON schema of an object (a form).
    pub schema: Option<Value>,
    /// Where the person goes to answer (the server's page, not ours).
    pub url: Option<String>,
}

/// A person's reply to a [`Question`], as MCP's elicitation carries it.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// Answered: the form's fields, or `None` for a page visited.
    Accept(Option<Value>),
    /// Not answered, and the call may go on without it.
    Decline,
    /// Nobody answered (the call ended, the run was stopped).
    Cancel,
}

/// The people a call's questions go to: those of the run it is made for.
#[async_trait::async_trait]
pub trait People: Send + Sync {
    /// Whose people these are (the run's id): a question is never put to
    /// the people of another run than the call's.
    fn whose(&self) -> String;

    /// Puts the question and waits for the reply, or until `gone`
    /// resolves (nobody waits for the reply any more): then the question
    /// is withdrawn and the reply is [`Reply::Cancel`].
    async fn ask(
        &self,
        question: Question,
        gone: futures_util::future::BoxFuture<'static, ()>,
    ) -> Reply;
}

#[async_trait::async_trait]
pub trait ToolBox: Send + Sync {
    fn specs(&self) -> Vec<ToolSpec>;
    async fn call(&self, name: &str, arguments: &Value) -> Result<String, ToolError>;

    /// [`ToolBox::call`] for a run whose people can be asked: a tool that
    /// asks in the middle of its call (an MCP server's elicitation) asks
    /// them. Tools that never ask are called plainly.
    async fn call_asking(
        &self,
        name: &str,
        arguments: &Value,
        people: Arc<dyn People>,
    ) -> Result<String, ToolError> {
        let _ = people;
        self.call(name, arguments).await
    }

    /// The policy a tool has unless the operator or the run says
    /// otherwise: `ask` for what acts beyond the workspace or cannot be
    /// undone.
    fn default_policy(&self, _name: &str) -> ToolPolicy {
        ToolPolicy::Auto
    }
}

/// The tools that run code in the sandbox.
pub const CODE_TOOLS: [&str; 2] = ["run_python", "run_shell"];

/// Whether a file named `path` is something Python imports or runs at
/// start (a module, compiled or not, or a `.pth` path file).
pub fn writes_python(path: &str) -> bool {
    let lower = path.trim().to_ascii_lowercase();
    [".py", ".pyc", ".pyw", ".pth", ".pyi"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// Several tool sources offered as one; the first that knows a name runs it.
#[derive(Clone, Default)]
pub struct Toolset {
    sources: Vec<Arc<dyn ToolBox>>,
    /// The names a run may use; `None`: all.
    allowed: Option<Arc<std::collections::HashSet<String>>>,
    /// Each tool's policy where it is not `auto`.
    policies: Arc<std::collections::HashMap<String, ToolPolicy>>,
    /// A replay's recording: calls it holds are answered from it
    /// ([`Toolset::replayed`]), the rest made live or stopped.
    replay: Option<Arc<crate::replay::Recording>>,
}

impl Toolset {
    /// The sources' tools, with their default policies.
    pub fn new(sources: Vec<Arc<dyn ToolBox>>) -> Toolset {
        let policies = sources
            .iter()
            .flat_map(|source| {
                source
                    .specs()
                    .into_iter()
                    .map(|spec| {
                        let policy = source.default_policy(&spec.name);
                        (spec.name, policy)
                    })
                    .collect::<Vec<_>>()
            })
            .filter(|(_, policy)| *policy != ToolPolicy::Auto)
            .collect();
        Toolset {
            sources,
            allowed: None,
            policies: Arc::new(policies),
            replay: None,
        }
    }

    /// The same tools in a replay: a call `recording` holds is answered
    /// from it.
    pub fn replaying(mut self, recording: Arc<crate::replay::Recording>) -> Toolset {
        self.replay = Some(recording);
        self
    }

    /// The replay's recording, when the run replays another.
    pub fn recording(&self) -> Option<&Arc<crate::replay::Recording>> {
        self.replay.as_ref()
    }

    /// What the run's replay makes of this call (answered from the
    /// recording, or stopped); `None`: the call is made, as in any run
    /// (and in any run that replays none).
    pub fn replayed(
        &self,
        subtask: plan_engine::SubtaskId,
        name: &str,
        arguments: &Value,
    ) -> Option<crate::replay::Replayed> {
        // A tool this run may not use is refused as in any run, recorded
        // or not.
        if !self.allows(name) {
            return None;
        }
        self.replay.as_ref()?.answer(subtask, name, arguments)
    }

    /// The operator's policies over the defaults (`never` ones are not
    /// offered).
    pub fn with_policies(
        mut self,
        policies: impl IntoIterator<Item = (String, ToolPolicy)>,
    ) -> Toolset {
        let mut merged = (*self.policies).clone();
        merged.extend(policies);
        self.policies = Arc::new(merged);
        self
    }

    /// A run's own policies over the operator's: a run may tighten a
    /// tool's policy (`auto` → `ask` → `never`), never loosen it, since
    /// whoever starts a run (any operator, an agent over the API) is not
    /// whoever configured the server.
    pub fn overridden<'a>(
        mut self,
        run: impl IntoIterator<Item = (&'a String, &'a ToolPolicy)>,
    ) -> Toolset {
        let mut merged = (*self.policies).clone();
        for (name, policy) in run {
            let current = merged.get(name).copied().unwrap_or_default();
            merged.insert(name.clone(), current.stricter(*policy));
        }
        self.policies = Arc::new(merged);
        self
    }

    /// What calling `name` needs.
    pub fn policy(&self, name: &str) -> ToolPolicy {
        self.policies.get(name).copied().unwrap_or_default()
    }

    /// What this call of `name` needs: its tool's policy, and for a
    /// `write_file` of Python code (`.py`, `.pth` …) the code tools' too,
    /// since Python may import what it writes: a person who reads each
    /// snippet before it runs also reads the code written to be imported
    /// (a planted `ast.py` ran inside an approved `print`).
    pub fn policy_for(&self, name: &str, arguments: &Value) -> ToolPolicy {
        let own = self.policy(name);
        let path = arguments.get("path").and_then(Value::as_str).unwrap_or("");
        let code_asks = CODE_TOOLS
            .iter()
            .any(|tool| self.policy(tool) == ToolPolicy::Ask);
        if name == "write_file" && writes_python(path) && code_asks {
            own.stricter(ToolPolicy::Ask)
        } else {
            own
        }
    }

    /// Only the tools named (a run's choice); `None` keeps them all.
    pub fn only(mut self, names: Option<&[String]>) -> Toolset {
        self.allowed = names.map(|n| Arc::new(n.iter().cloned().collect()));
        self
    }

    fn allows(&self, name: &str) -> bool {
        self.allowed.as_ref().is_none_or(|a| a.contains(name))
            && self.policy(name) != ToolPolicy::Never
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut seen = std::collections::HashSet::new();
        self.sources
            .iter()
            .flat_map(|s| s.specs())
            .filter(|spec| self.allows(&spec.name))
            .filter(|spec| seen.insert(spec.name.clone()))
            .collect()
    }

    pub async fn call(&self, name: &str, arguments: &Value) -> Result<String, ToolError> {
        self.call_for(name, arguments, None).await
    }

    /// A call whose tool may ask `people` (the run's) in the middle of it.
    pub async fn call_for(
        &self,
        name: &str,
        arguments: &Value,
        people: Option<Arc<dyn People>>,
    ) -> Result<String, ToolError> {
        if !self.allows(name) {
            return Err(ToolError::refused(format!(
                "{name} is not among the tools this run may use"
            )));
        }
        for source in &self.sources {
            if source.specs().iter().any(|s| s.name == name) {
                return match people {
                    Some(people) => source.call_asking(name, arguments, people).await,
                    None => source.call(name, arguments).await,
                };
            }
        }
        Err(ToolError::refused(format!("there is no tool named {name}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::files::FileTools;
    use serde_json::json;

    #[test]
    fn writing_python_asks_whenever_running_code_asks() {
        let dir = tempfile::tempdir().unwrap();
        let files: Arc<dyn ToolBox> = Arc::new(FileTools::new(dir.path()).unwrap());
        let set =
            Toolset::new(vec![files]).with_policies([("run_python".to_string(), ToolPolicy::Ask)]);
        for path in ["ast.py", "lib/evil.pth", "x.PYC"] {
            assert_eq!(
                set.policy_for("write_file", &json!({"path": path, "content": "x"})),
                ToolPolicy::Ask,
                "{path}"
            );
        }
        assert_eq!(
            set.policy_for("write_file", &json!({"path": "notes.txt", "content": "x"})),
            ToolPolicy::Auto
        );
        let relaxed = Toolset::new(vec![]);
        assert_eq!(
            relaxed.policy_for("write_file", &json!({"path": "ast.py"})),
            ToolPolicy::Auto,
            "code that runs unasked makes a module written unasked no worse"
        );
    }

    #[tokio::test]
    async fn a_run_sees_and_calls_only_the_tools_it_chose() {
        let dir = tempfile::tempdir().unwrap();
        let files: Arc<dyn ToolBox> = Arc::new(FileTools::new(dir.path()).unwrap());
        let all = Toolset::new(vec![files.clone()]);
        assert_eq!(all.specs().len(), 3);
        let some = Toolset::new(vec![files]).only(Some(&["read_file".to_string()]));
        let names: Vec<String> = some.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["read_file"]);
        let e = some
            .call("write_file", &json!({"path": "a", "content": "b"}))
            .await
            .unwrap_err();
        assert!(e.message.contains("not among the tools"), "{e}");
        assert!(!dir.path().join("a").exists());
    }

    #[tokio::test]
    async fn a_never_tool_is_neither_offered_nor_run_and_a_run_cannot_lift_it() {
        let dir = tempfile::tempdir().unwrap();
        let files: Arc<dyn ToolBox> = Arc::new(FileTools::new(dir.path()).unwrap());
        let set = Toolset::new(vec![files])
            .with_policies([
                ("write_file".to_string(), ToolPolicy::Never),
                ("list_files".to_string(), ToolPolicy::Ask),
            ])
            .overridden(&std::collections::BTreeMap::from([
                ("write_file".to_string(), ToolPolicy::Auto),
                ("read_file".to_string(), ToolPolicy::Ask),
            ]));
        let names: Vec<String> = set.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["list_files", "read_file"]);
        assert_eq!(set.policy("read_file"), ToolPolicy::Ask, "the run's own");
        assert_eq!(set.policy("list_files"), ToolPolicy::Ask, "the operator's");
        let e = set
            .call("write_file", &json!({"path": "a", "content": "b"}))
            .await
            .unwrap_err();
        assert!(e.message.contains("not among the tools"), "{e}");
        assert!(!dir.path().join("a").exists());
    }

    #[tokio::test]
    async fn a_run_may_tighten_the_operators_policies_but_never_loosen_them() {
        let dir = tempfile::tempdir().unwrap();
        let files: Arc<dyn ToolBox> = Arc::new(FileTools::new(dir.path()).unwrap());
        let set = Toolset::new(vec![files])
            .with_policies([("write_file".to_string(), ToolPolicy::Ask)])
            .overridden(&std::collections::BTreeMap::from([
                ("write_file".to_string(), ToolPolicy::Auto),
                ("read_file".to_string(), ToolPolicy::Never),
                ("list_files".to_string(), ToolPolicy::Ask),
            ]));
        assert_eq!(set.policy("write_file"), ToolPolicy::Ask, "not loosened");
        assert_eq!(set.policy("list_files"), ToolPolicy::Ask, "tightened");
        let names: Vec<String> = set.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["list_files", "write_file"], "read_file is never");
    }
}
