//! The files a run starts from: uploads (the task box, `POST /api/runs`
//! as multipart, MCP `start_run`) and folders or git repositories the
//! operator allowed (`PLANBOARD_WORKSPACE_ROOTS`). They are staged in a
//! folder of their own, checked against the limits, and moved into the
//! run's workspace before the agent starts, so the planner already sees
//! them. A refused upload leaves nothing behind.

use std::path::{Path, PathBuf};

use agent::workspace::{check_name, copy_tree, CopyError, CopyRules, Workspace, WorkspaceError};

use run_model::{InputFile, MAX_FILES, MAX_FILES_BYTES, MAX_FILE_BYTES, PREVIEW_CHARS};

/// Most files copied from an allowed folder, and their bytes.
pub const MAX_COPY_FILES: usize = 10_000;
pub const MAX_COPY_BYTES: u64 = 500 * 1024 * 1024;

/// One uploaded file.
#[derive(Clone, Debug)]
pub struct Upload {
    /// As the client named it; only its last component is kept.
    pub name: String,
    pub bytes: Vec<u8>,
}

/// Why the files cannot start a run; nothing was kept.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("a run starts with at most {MAX_FILES} files, not {given}")]
    TooMany { given: usize },
    #[error("{name} has {bytes} bytes; a file may have at most {MAX_FILE_BYTES}")]
    FileTooLarge { name: String, bytes: usize },
    #[error("the files have {bytes} bytes in all; at most {MAX_FILES_BYTES} are taken")]
    TooLarge { bytes: usize },
    #[error("the files have {bytes} bytes in all; a run's workspace holds at most {quota} bytes (PLANBOARD_WORKSPACE_QUOTA_MB)")]
    OverQuota { bytes: u64, quota: u64 },
    #[error("{0:?} is not a usable file name")]
    BadName(String),
    #[error(
        "{path} is not inside a folder the operator allowed (PLANBOARD_WORKSPACE_ROOTS{})",
        if roots.is_empty() { " is not set".to_string() } else { format!(": {}", roots.join(", ")) }
    )]
    NotAllowed { path: String, roots: Vec<String> },
    #[error("{path}: {error}")]
    Source { path: String, error: String },
    #[error("{path} holds more than {MAX_COPY_FILES} files or {MAX_COPY_BYTES} bytes")]
    SourceTooLarge { path: String },
    #[error("the workspace could not be written: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// Work on runs' files is at its limit (overall, or for this run).
    #[error("{0}")]
    Busy(String),
}

impl InputError {
    /// The person's mistake (400), or the server's (500).
    pub fn is_client_error(&self) -> bool {
        match self {
            InputError::Io(_) | InputError::Busy(_) => false,
            InputError::Workspace(e) => e.is_client_error(),
            _ => true,
        }
    }
}

/// `name (n).ext`: the name a file gets when `name` is taken.
fn numbered(name: &str, n: u32) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => format!("{stem} ({n}).{ext}"),
        _ => format!("{name} ({n})"),
    }
}

/// Files staged for a run that does not exist yet.
pub struct Staged {
    dir: PathBuf,
    pub inputs: Vec<InputFile>,
}

/// Runs blocking workspace work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, InputError> + Send + 'static,
) -> Result<T, InputError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| InputError::Io(std::io::Error::other(e.to_string())))?
}

/// The last component of a client's file name, or why it is unusable.
fn file_name(raw: &str) -> Result<String, InputError> {
    // A part without a file name is a file all the same.
    if raw.trim().is_empty() {
        return Ok("file".into());
    }
    // Browsers on Windows send `C:\fakepath\a.csv`: the file's name is
    // what follows the last separator. The rest is taken as it is or
    // refused (a control character is not dropped silently).
    let last = raw.rsplit(['/', '\\']).next().unwrap_or("").trim();
    if last.is_empty() || last == "." || last == ".." || last.len() > run_model::FILE_NAME_BYTES {
        return Err(InputError::BadName(raw.to_string()));
    }
    check_name(last).map_err(|_| InputError::BadName(raw.to_string()))?;
    Ok(last.to_string())
}

/// What the model is told of a file: its start when it is text.
pub fn preview(bytes: &[u8]) -> Option<String> {
    let head = &bytes[..bytes.len().min(PREVIEW_CHARS * 4)];
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // A character cut at the end of the head is still text.
        Err(e) if e.valid_up_to() + 4 > head.len() && e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    if text.contains('\0') {
        return None;
    }
    Some(plan_engine::text::prefix(text, PREVIEW_CHARS).to_string())
}

impl Staged {
    /// Checks the uploads against the limits and a workspace's `quota`,
    /// and writes them to a staging folder under `workspaces`.
    pub async fn uploads(
        workspaces: &Path,
        uploads: Vec<Upload>,
        quota: u64,
    ) -> Result<Staged, InputError> {
        if uploads.len() > MAX_FILES {
            return Err(InputError::TooMany {
                given: uploads.len(),
            });
        }
        let total: usize = uploads.iter().map(|u| u.bytes.len()).sum();
        if total > MAX_FILES_BYTES {
            return Err(InputError::TooLarge { bytes: total });
        }
        if total as u64 > quota {
            return Err(InputError::OverQuota {
                bytes: total as u64,
                quota,
            });
        }
        let mut names: Vec<String> = Vec::new();
        for upload in &uploads {
            let name = file_name(&upload.name)?;
            if upload.bytes.len() > MAX_FILE_BYTES {
                return Err(InputError::FileTooLarge {
                    name,
                    bytes: upload.bytes.len(),
                });
            }
            // Two files of one name: the second becomes `name (2).ext`.
            let mut unique = name.clone();
            let mut n = 2;
            while names.contains(&unique) {
                unique = numbered(&name, n);
                n += 1;
            }
            names.push(unique);
        }
        let staged = Staged::empty(workspaces).await?;
        // The bytes move to the writer; nothing is copied.
        let files: Vec<(String, Vec<u8>)> = names
            .into_iter()
            .zip(uploads.into_iter().map(|u| u.bytes))
            .collect();
        let inputs: Vec<InputFile> = files
            .iter()
            .map(|(name, bytes)| InputFile {
                path: name.clone(),
                bytes: bytes.len() as u64,
                preview: preview(bytes),
            })
            .collect();
        let dir = staged.dir.clone();
        let written = blocking(move || {
            let ws = Workspace::open(&dir)?;
            for (name, bytes) in &files {
                ws.write(name, bytes)?;
            }
            Ok(())
        })
        .await;
        if let Err(e) = written {
            staged.discard().await;
            return Err(e);
        }
        Ok(Staged { inputs, ..staged })
    }

    async fn empty(workspaces: &Path) -> Result<Staged, InputError> {
        let dir = workspaces
            .join(".incoming")
            .join(uuid::Uuid::new_v4().to_string());
        tokio::fs::create_dir_all(&dir).await?;
        Ok(Staged {
            dir,
            inputs: Vec::new(),
        })
    }

    /// Copies `source` (a folder, or a git repository's working tree; its
    /// `.git` is left out) into the staging folder, when it lies inside one
    /// of `roots`. Symlinks are not followed (a link inside the source could
    /// point anywhere); they are skipped. Files that usually hold secrets
    /// (`.env`, private keys: [`agent::workspace::is_secret_file`]) are left out unless
    /// `secrets` is set.
    pub async fn folder(
        workspaces: &Path,
        source: &str,
        roots: &[PathBuf],
        secrets: bool,
        quota: u64,
    ) -> Result<Staged, InputError> {
        let not_allowed = || InputError::NotAllowed {
            path: source.to_string(),
            roots: roots.iter().map(|r| r.display().to_string()).collect(),
        };
        let real = tokio::fs::canonicalize(source)
            .await
            .map_err(|e| InputError::Source {
                path: source.to_string(),
                error: e.to_string(),
            })?;
        let mut allowed = false;
        for root in roots {
            if let Ok(root) = tokio::fs::canonicalize(root).await {
                allowed |= real.starts_with(&root);
            }
        }
        if !allowed {
            return Err(not_allowed());
        }
        if !tokio::fs::metadata(&real).await?.is_dir() {
            return Err(InputError::Source {
                path: source.to_string(),
                error: "not a folder".into(),
            });
        }
        let staged = Staged::empty(workspaces).await?;
        let (dir, source2) = (staged.dir.clone(), source.to_string());
        let rules = CopyRules {
            skip_git: true,
            skip_secrets: !secrets,
            max_files: MAX_COPY_FILES,
            max_bytes: MAX_COPY_BYTES,
        };
        let copied = blocking(move || {
            let from = Workspace::open(&real)?;
            let to = Workspace::open(&dir)?.with_quota(quota);
            copy_with_previews(&from, &to, &rules, &source2)
        })
        .await;
        let inputs = match copied {
            Ok(inputs) => inputs,
            Err(e) => {
                staged.discard().await;
                return Err(e);
            }
        };
        Ok(Staged { inputs, ..staged })
    }

    /// Moves the files into the run's workspace (which must not exist yet).
    pub async fn settle(self, workspace: &Path) -> Result<Vec<InputFile>, InputError> {
        if let Some(parent) = workspace.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        if let Err(e) = tokio::fs::rename(&self.dir, workspace).await {
            self.discard().await;
            return Err(e.into());
        }
        Ok(self.inputs)
    }

    /// Moves the files into an existing workspace (a running run's, which
    /// its code may have filled with links) next to what is there; a name
    /// that is taken gets ` (2)` and so on. Returns where each went.
    pub async fn add_to(self, workspace: &Path, quota: u64) -> Result<Vec<InputFile>, InputError> {
        let (dir, root, inputs) = (
            self.dir.clone(),
            workspace.to_path_buf(),
            self.inputs.clone(),
        );
        let placed = blocking(move || {
            let from = Workspace::open(&dir)?;
            let to = Workspace::create(&root)?.with_quota(quota);
            let mut placed = Vec::new();
            for mut input in inputs {
                let mut name = input.path.clone();
                let mut n = 2;
                while to.is_taken(&name) {
                    name = numbered(&input.path, n);
                    n += 1;
                }
                to.take_from(&from, &input.path, &name)?;
                input.path = name;
                placed.push(input);
            }
            Ok(placed)
        })
        .await;
        let _ = tokio::fs::remove_dir_all(&self.dir).await;
        placed
    }

    /// Removes what was staged.
    pub async fn discard(self) {
        let _ = tokio::fs::remove_dir_all(&self.dir).await;
    }
}

/// Copies an earlier run's workspace into a new run's ("Run again from
/// here"): regular files and folders, links neither copied nor followed,
/// bounded like a source folder. A run that left no workspace gives an
/// empty one.
pub async fn copy_workspace(from: PathBuf, to: PathBuf, quota: u64) -> Result<(), InputError> {
    blocking(move || {
        let to = Workspace::create(&to)?.with_quota(quota);
        let from = match Workspace::open(&from) {
            Ok(from) => from,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let rules = CopyRules {
            max_files: MAX_COPY_FILES,
            max_bytes: MAX_COPY_BYTES,
            ..CopyRules::everything()
        };
        copy_with_previews(&from, &to, &rules, "the earlier run's workspace").map(|_| ())
    })
    .await
}

/// Copies the files named `paths` from an earlier run's workspace into a
/// new run's (a replay planned anew starts from its input files, not from
/// what the run wrote): each read and written through the workspaces, so
/// a link is neither followed nor copied; a file that is gone is left out,
/// one larger than [`MAX_COPY_BYTES`] refused.
pub async fn copy_files(
    from: PathBuf,
    to: PathBuf,
    paths: Vec<String>,
    quota: u64,
) -> Result<(), InputError> {
    blocking(move || {
        let to_ws = Workspace::create(&to)?.with_quota(quota);
        let from_ws = match Workspace::open(&from) {
            Ok(from) => from,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        for path in &paths {
            match from_ws.read(path, MAX_COPY_BYTES + 1) {
                Ok((_, len)) if len > MAX_COPY_BYTES => {
                    return Err(InputError::SourceTooLarge { path: path.clone() })
                }
                Ok((bytes, _)) => to_ws.write(path, &bytes)?,
                Err(WorkspaceError::NotFound { .. }) | Err(WorkspaceError::NotAFile { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    })
    .await
}

/// Copies `from` into `to` under `rules` and describes each file copied
/// (its start as a preview, read back through the workspace).
fn copy_with_previews(
    from: &Workspace,
    to: &Workspace,
    rules: &CopyRules,
    shown: &str,
) -> Result<Vec<InputFile>, InputError> {
    let copied = copy_tree(from, to, rules).map_err(|e| match e {
        CopyError::TooLarge { .. } => InputError::SourceTooLarge {
            path: shown.to_string(),
        },
        CopyError::Workspace(e) => InputError::Workspace(e),
    })?;
    Ok(copied
        .into_iter()
        .map(|file| {
            let head = to
                .read_head(&file.path, (PREVIEW_CHARS * 4) as u64)
                .unwrap_or_default();
            InputFile {
                preview: preview(&head),
                path: file.path,
                bytes: file.bytes,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(name: &str, bytes: &[u8]) -> Upload {
        Upload {
            name: name.into(),
            bytes: bytes.to_vec(),
        }
    }

    #[tokio::test]
    async fn uploads_land_in_the_workspace_with_safe_unique_names_and_previews() {
        let dir = tempfile::tempdir().unwrap();
        let staged = Staged::uploads(
            dir.path(),
            vec![
                upload("C:\\fakepath\\sales.csv", b"region,amount\nnorth,3\n"),
                upload("../../etc/sales.csv", b"second"),
                upload("logo.png", &[0x89, b'P', b'N', b'G', 0, 0]),
            ],
            u64::MAX,
        )
        .await
        .unwrap();
        let ws = dir.path().join("run");
        let inputs = staged.settle(&ws).await.unwrap();
        let names: Vec<&str> = inputs.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(names, ["sales.csv", "sales (2).csv", "logo.png"]);
        assert_eq!(
            std::fs::read_to_string(ws.join("sales (2).csv")).unwrap(),
            "second"
        );
        assert_eq!(
            inputs[0].preview.as_deref(),
            Some("region,amount\nnorth,3\n")
        );
        assert_eq!(inputs[2].preview, None, "binary");
        assert!(!dir.path().join("etc").exists());
        let incoming: Vec<_> = std::fs::read_dir(dir.path().join(".incoming"))
            .unwrap()
            .collect();
        assert!(incoming.is_empty(), "the staging folder moved");
    }

    #[tokio::test]
    async fn uploads_over_the_limits_are_refused_and_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let e = Staged::uploads(
            dir.path(),
            (0..=MAX_FILES)
                .map(|i| upload(&format!("{i}"), b"x"))
                .collect(),
            u64::MAX,
        )
        .await
        .err()
        .unwrap();
        assert!(e.to_string().contains("at most 50 files"), "{e}");
        let big = vec![b'a'; MAX_FILE_BYTES + 1];
        let e = Staged::uploads(dir.path(), vec![upload("big.txt", &big)], u64::MAX)
            .await
            .err()
            .unwrap();
        assert!(e.to_string().contains("big.txt has"), "{e}");
        let e = Staged::uploads(dir.path(), vec![upload("..", b"x")], u64::MAX)
            .await
            .err()
            .unwrap();
        assert!(matches!(e, InputError::BadName(_)));
        assert!(!dir.path().join(".incoming").exists());
    }

    #[tokio::test]
    async fn uploads_and_folders_past_the_workspace_quota_are_refused_and_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let e = Staged::uploads(
            dir.path(),
            vec![upload("a.csv", b"12345"), upload("b.csv", b"123456")],
            10,
        )
        .await
        .err()
        .unwrap();
        assert!(
            matches!(
                e,
                InputError::OverQuota {
                    bytes: 11,
                    quota: 10
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("PLANBOARD_WORKSPACE_QUOTA_MB"),
            "{e}"
        );
        let root = dir.path().join("projects");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("data.csv"), vec![b'x'; 100]).unwrap();
        let e = Staged::folder(
            dir.path(),
            root.to_str().unwrap(),
            std::slice::from_ref(&root),
            false,
            10,
        )
        .await
        .err()
        .unwrap();
        assert!(
            matches!(
                e,
                InputError::Workspace(WorkspaceError::OverQuota { quota: 10, .. })
            ),
            "{e}"
        );
        assert!(e.is_client_error());
        let staged: Vec<_> = std::fs::read_dir(dir.path().join(".incoming"))
            .unwrap()
            .collect();
        assert!(staged.is_empty(), "nothing was left behind");
    }

    #[tokio::test]
    async fn a_folder_is_copied_only_from_inside_an_allowed_root_without_links_or_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("projects");
        let repo = root.join("repo");
        std::fs::create_dir_all(repo.join("src")).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(repo.join(".git/config"), "secret").unwrap();
        std::fs::write(repo.join("src/main.py"), "print(1)\n").unwrap();
        std::fs::write(dir.path().join("outside.txt"), "outside").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside.txt"), repo.join("link.txt")).unwrap();
        let workspaces = dir.path().join("ws");
        let staged = Staged::folder(
            &workspaces,
            repo.to_str().unwrap(),
            std::slice::from_ref(&root),
            false,
            u64::MAX,
        )
        .await
        .unwrap();
        let ws = workspaces.join("run");
        let inputs = staged.settle(&ws).await.unwrap();
        let names: Vec<&str> = inputs.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(names, ["src/main.py"]);
        assert!(!ws.join(".git").exists());
        assert!(!ws.join("link.txt").exists());
        assert_eq!(
            std::fs::read_to_string(repo.join("src/main.py")).unwrap(),
            "print(1)\n",
            "the source is untouched"
        );
        // Outside the roots, directly or through `..` or a link.
        for path in [
            dir.path().to_str().unwrap().to_string(),
            format!("{}/../../", repo.display()),
        ] {
            let e = Staged::folder(
                &workspaces,
                &path,
                std::slice::from_ref(&root),
                false,
                u64::MAX,
            )
            .await
            .err()
            .unwrap();
            assert!(matches!(e, InputError::NotAllowed { .. }), "{path}: {e}");
        }
        std::os::unix::fs::symlink(dir.path(), root.join("escape")).unwrap();
        let e = Staged::folder(
            &workspaces,
            root.join("escape").to_str().unwrap(),
            &[root],
            false,
            u64::MAX,
        )
        .await
        .err()
        .unwrap();
        assert!(matches!(e, InputError::NotAllowed { .. }), "{e}");
        let e = Staged::folder(&workspaces, repo.to_str().unwrap(), &[], false, u64::MAX)
            .await
            .err()
            .unwrap();
        assert!(e.to_string().contains("is not set"), "{e}");
    }

    #[test]
    fn a_preview_is_text_only_and_bounded() {
        assert_eq!(preview(b"hello"), Some("hello".into()));
        assert_eq!(preview(&[0xff, 0xfe, 0]), None);
        let long = "é".repeat(5_000);
        let shown = preview(long.as_bytes()).unwrap();
        assert_eq!(shown.chars().count(), PREVIEW_CHARS);
    }
}
