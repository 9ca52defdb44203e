//! The built-in file tools: `list_files`, `read_file` and `write_file` on
//! the run's [`Workspace`], which resolves every name beneath one directory
//! handle, so nothing the model names leads out of it.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::protocol::ToolSpec;
use crate::tools::{ToolBox, ToolError};
use crate::workspace::{Workspace, WorkspaceError};

/// Most bytes `read_file` returns; the rest is cut with a note.
pub const READ_CAP: usize = 16 * 1024;

/// list_files, read_file and write_file on one [`Workspace`]: names are
/// resolved beneath its directory handle, so `..`, absolute paths and
/// links (planted by the run's own code) never lead out.
pub struct FileTools {
    workspace: Workspace,
}

impl From<WorkspaceError> for ToolError {
    fn from(e: WorkspaceError) -> ToolError {
        ToolError::refused(e.to_string())
    }
}

impl FileTools {
    /// Creates the directory if needed.
    pub fn new(root: impl Into<PathBuf>) -> std::io::Result<FileTools> {
        Ok(FileTools::on(Workspace::create(root)?))
    }

    /// The tools on an opened workspace (with its quota).
    pub fn on(workspace: Workspace) -> FileTools {
        FileTools { workspace }
    }

    pub fn root(&self) -> &Path {
        self.workspace.root()
    }

    fn string_arg<'a>(arguments: &'a Value, name: &str) -> Result<&'a str, ToolError> {
        arguments
            .get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::refused(format!("the argument {name} (a string) is missing")))
    }

    /// Runs a blocking workspace operation off the async threads, within
    /// the workspace's time limit ([`crate::workspace::off_thread`]).
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(Workspace) -> Result<T, WorkspaceError> + Send + 'static,
    ) -> Result<T, ToolError> {
        let workspace = self.workspace.clone();
        crate::workspace::off_thread(move || f(workspace))
            .await
            .map_err(ToolError::from)
    }

    async fn list(&self, arguments: &Value) -> Result<String, ToolError> {
        let shown = arguments
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or(".")
            .to_string();
        let (entries, left_out) = self.blocking(move |ws| ws.list_dir(&shown)).await?;
        let mut names: Vec<String> = entries
            .into_iter()
            .map(|(name, dir)| if dir { format!("{name}/") } else { name })
            .collect();
        if left_out > 0 {
            names.push(format!(
                "({left_out} entries left out: links, or names with a backslash, a control character or bytes that are not UTF-8)"
            ));
        }
        Ok(if names.is_empty() {
            "(empty)".into()
        } else {
            names.join("\n")
        })
    }

    async fn read(&self, arguments: &Value) -> Result<String, ToolError> {
        let shown = Self::string_arg(arguments, "path")?.to_string();
        let workspace = self.workspace.clone();
        let read = crate::workspace::off_thread(move || {
            Ok(match workspace.read(&shown, READ_CAP as u64 + 4) {
                // A name the model made up (Qwen2.5-1.5B planned to read a
                // "primes.txt" in a run given no files): say what is there.
                Err(e @ WorkspaceError::NotFound { .. }) => {
                    Err(ToolError::refused(format!("{e}. {}", holdings(&workspace))))
                }
                other => other.map_err(ToolError::from),
            })
        })
        .await?;
        let (bytes, len) = read?;
        let text = String::from_utf8_lossy(&bytes);
        if len as usize <= READ_CAP {
            return Ok(text.into_owned());
        }
        Ok(format!(
            "{}\n… (cut: the file has {len} bytes)",
            plan_engine::text::prefix(&text, READ_CAP)
        ))
    }

    async fn write(&self, arguments: &Value) -> Result<String, ToolError> {
        let shown = Self::string_arg(arguments, "path")?.to_string();
        let content = Self::string_arg(arguments, "content")?.to_string();
        let bytes = content.len();
        let name = shown.clone();
        self.blocking(move |ws| ws.write(&name, content.as_bytes()))
            .await?;
        Ok(format!("wrote {bytes} bytes to {shown}"))
    }
}

/// Most file names [`holdings`] names.
const HOLDINGS_SHOWN: usize = 20;

/// What the workspace holds, as a sentence for the model after it named a
/// file that is not there: the real names, or that there are none, so it
/// stops looking for a file nobody gave or wrote and computes instead.
pub fn holdings(workspace: &Workspace) -> String {
    let files = match workspace.files() {
        Ok(listing) => listing.files,
        Err(e) => return format!("The workspace could not be listed ({e})."),
    };
    if files.is_empty() {
        return "The workspace is empty: no file was given or written in this run. Do not \
                read a file; compute what you need in code (run_python), or write the file \
                first."
            .to_string();
    }
    let mut names: Vec<&str> = files
        .iter()
        .take(HOLDINGS_SHOWN)
        .map(|f| f.path.as_str())
        .collect();
    let more = files.len().saturating_sub(HOLDINGS_SHOWN);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    names.sort_unstable();
    format!(
        "The workspace holds only these files: {}{more}.",
        names.join(", ")
    )
}

/// The file tools' names, which the planner reads too (`run_python`
/// defines Python functions of the same names).
pub const LIST_FILES: &str = "list_files";
pub const READ_FILE: &str = "read_file";
pub const WRITE_FILE: &str = "write_file";

#[async_trait::async_trait]
impl ToolBox for FileTools {
    fn specs(&self) -> Vec<ToolSpec> {
        let path =
            json!({"type": "string", "maxLength": 200, "description": "relative to the workspace"});
        vec![
            ToolSpec {
                name: LIST_FILES.into(),
                description: "Lists the files of a directory in the run's workspace.".into(),
                parameters: json!({"type": "object", "properties": {"path": path}, "required": []}),
            },
            ToolSpec {
                name: READ_FILE.into(),
                description: "Reads a text file from the run's workspace.".into(),
                parameters: json!({"type": "object", "properties": {"path": path}, "required": ["path"]}),
            },
            ToolSpec {
                name: WRITE_FILE.into(),
                description: "Writes a text file in the run's workspace (an artifact of the run)."
                    .into(),
                parameters: json!({"type": "object", "properties": {
                    "content": {"type": "string", "maxLength": 20000},
                    "path": path,
                }, "required": ["path", "content"]}),
            },
        ]
    }

    async fn call(&self, name: &str, arguments: &Value) -> Result<String, ToolError> {
        match name {
            LIST_FILES => self.list(arguments).await,
            READ_FILE => self.read(arguments).await,
            WRITE_FILE => self.write(arguments).await,
            other => Err(ToolError::refused(format!(
                "there is no file tool named {other}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn files_are_written_read_and_listed_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let tools = FileTools::new(dir.path().join("ws")).unwrap();
        let wrote = tools
            .call(
                "write_file",
                &json!({"path": "out/a.txt", "content": "hello"}),
            )
            .await
            .unwrap();
        assert!(wrote.contains("5 bytes"));
        assert_eq!(
            tools
                .call("read_file", &json!({"path": "out/a.txt"}))
                .await
                .unwrap(),
            "hello"
        );
        assert_eq!(tools.call("list_files", &json!({})).await.unwrap(), "out/");
    }

    #[tokio::test]
    async fn reading_a_file_that_is_not_there_names_the_files_that_are_or_says_there_are_none() {
        let dir = tempfile::tempdir().unwrap();
        let tools = FileTools::new(dir.path().join("ws")).unwrap();
        let e = tools
            .call("read_file", &json!({"path": "input.txt"}))
            .await
            .unwrap_err();
        assert!(e.message.contains("input.txt does not exist"), "{e}");
        assert!(
            e.message.contains("The workspace is empty") && e.message.contains("run_python"),
            "{e}"
        );
        std::fs::write(tools.root().join("sales.csv"), "a,b\n").unwrap();
        std::fs::create_dir(tools.root().join("logs")).unwrap();
        std::fs::write(tools.root().join("logs/app.log"), "x\n").unwrap();
        let e = tools
            .call("read_file", &json!({"path": "data.csv"}))
            .await
            .unwrap_err();
        assert!(
            e.message
                .ends_with("The workspace holds only these files: logs/app.log, sales.csv."),
            "{e}"
        );
    }

    #[tokio::test]
    async fn escapes_by_dots_absolute_paths_and_symlinks_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret.txt"), "secret").unwrap();
        let tools = FileTools::new(dir.path().join("ws")).unwrap();
        for path in ["../secret.txt", "a/../../secret.txt"] {
            let e = tools
                .call("read_file", &json!({"path": path}))
                .await
                .unwrap_err();
            assert!(e.message.contains(".."), "{e}");
        }
        let absolute = dir.path().join("secret.txt");
        let e = tools
            .call("read_file", &json!({"path": absolute.to_str().unwrap()}))
            .await
            .unwrap_err();
        assert!(e.message.contains("absolute"), "{e}");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path(), tools.root().join("link")).unwrap();
            let e = tools
                .call("read_file", &json!({"path": "link/secret.txt"}))
                .await
                .unwrap_err();
            assert!(
                e.message.contains("outside") || e.message.contains("link"),
                "{e}"
            );
            let e = tools
                .call(
                    "write_file",
                    &json!({"path": "link/new.txt", "content": "x"}),
                )
                .await
                .unwrap_err();
            assert!(
                e.message.contains("outside") || e.message.contains("link"),
                "{e}"
            );
            assert!(!dir.path().join("new.txt").exists());
        }
    }

    #[tokio::test]
    async fn a_dangling_link_planted_by_the_runs_code_is_not_written_through() {
        // What `os.symlink('/etc/cron.d/x', 'notes.md')` in run_python leaves.
        let dir = tempfile::tempdir().unwrap();
        let tools = FileTools::new(dir.path().join("ws")).unwrap();
        let target = dir.path().join("cron-x");
        std::os::unix::fs::symlink(&target, tools.root().join("notes.md")).unwrap();
        let e = tools
            .call(
                "write_file",
                &json!({"path": "notes.md", "content": "evil"}),
            )
            .await
            .unwrap_err();
        assert!(
            e.message.contains("link") || e.message.contains("outside"),
            "{e}"
        );
        assert!(!target.exists(), "nothing was written on the host");
        let e = tools
            .call(
                "write_file",
                &json!({"path": "..\\..\\planboard.db", "content": "x"}),
            )
            .await
            .unwrap_err();
        assert!(e.message.contains("backslash"), "{e}");
        let listed = tools.call("list_files", &json!({})).await.unwrap();
        assert!(listed.contains("1 entries left out"), "{listed}");
    }
}
