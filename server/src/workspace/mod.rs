//! A run's files as people reach them: the uploads and folders a run
//! starts from, the files it wrote (listed, previewed, zipped, served one
//! by one), the images its answer shows. Every file is read and written
//! through [`agent::workspace::Workspace`], the one module that touches a
//! workspace's files (beneath a directory handle; no link followed, no
//! `..`): the model's code wrote them, so every name in a workspace is an
//! attacker's.
//!
//! # Layout
//! - this file: [`Workspaces`], the runs' workspaces under one folder,
//!   with their quota; [`Artifact`]; the listing, the zip and one file,
//!   each a bounded job ([`Jobs`]: so many at once overall and per run,
//!   a listing's walk within a budget of entries);
//! - `inputs.rs`: staging uploads and allowed folders, checked against the
//!   limits, and moving them into a run's workspace;
//! - `images.rs`: which files are images, how each is served, which the
//!   answer shows.

pub mod images;
pub mod inputs;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent::workspace::{FileEntry, Workspace, WorkspaceError};
use agent::RunId;
use run_model::InputFile;
use schemars::JsonSchema;
use serde::Serialize;

use inputs::{InputError, Staged, Upload};

/// The runs' workspaces: a folder per run under one root.
pub struct Workspaces {
    root: PathBuf,
    /// The most a run's workspace may hold.
    quota: u64,
    /// Folders runs may start from (`PLANBOARD_WORKSPACE_ROOTS`).
    roots: Vec<PathBuf>,
    jobs: Jobs,
}

/// Workspace jobs a request may start at once, overall: each holds one of
/// tokio's blocking threads while it runs, and any page (an `<img>` of
/// another site, in local mode) can ask for them. 560 reads of one named
/// pipe pinned all 512 threads before every open was non-blocking; this
/// bound keeps the pool for everything else whatever a job meets.
pub const JOBS_AT_ONCE: usize = 16;
/// The same for one run's workspace.
pub const JOBS_PER_RUN: usize = 4;
/// How long a request waits for a free job before it is answered 503.
pub const JOB_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
/// Entries a listing a request asked for walks at most (the workspace's
/// own quota of entries is 50,000; a listing shows the first files).
pub const LISTING_ENTRIES: usize = 20_000;

/// The bound on request-driven workspace work ([`JOBS_AT_ONCE`],
/// [`JOBS_PER_RUN`]); a job's slots are held until its blocking work has
/// really ended, also when the request stopped waiting for it.
pub struct Jobs {
    all: Arc<tokio::sync::Semaphore>,
    per_run: Arc<Mutex<HashMap<RunId, usize>>>,
}

impl Default for Jobs {
    fn default() -> Jobs {
        Jobs {
            all: Arc::new(tokio::sync::Semaphore::new(JOBS_AT_ONCE)),
            per_run: Arc::default(),
        }
    }
}

/// One run's slot, given back when dropped.
struct RunSlot {
    run: RunId,
    per_run: Arc<Mutex<HashMap<RunId, usize>>>,
}

impl Drop for RunSlot {
    fn drop(&mut self) {
        let mut per_run = self.per_run.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = per_run.get_mut(&self.run) {
            *n -= 1;
            if *n == 0 {
                per_run.remove(&self.run);
            }
        }
    }
}

impl Jobs {
    /// Jobs running now, overall.
    pub fn running(&self) -> usize {
        JOBS_AT_ONCE - self.all.available_permits()
    }

    /// Runs `f` on a blocking thread once a slot is free (overall and for
    /// `run`), or answers [`InputError::Busy`].
    async fn run<T: Send + 'static>(
        &self,
        run: RunId,
        f: impl FnOnce() -> Result<T, WorkspaceError> + Send + 'static,
    ) -> Result<T, InputError> {
        let slot = {
            let mut per_run = self.per_run.lock().unwrap_or_else(|p| p.into_inner());
            let n = per_run.entry(run).or_default();
            if *n >= JOBS_PER_RUN {
                return Err(InputError::Busy(format!(
                    "the files of run {run} are being read by {JOBS_PER_RUN} requests already; try again"
                )));
            }
            *n += 1;
            RunSlot {
                run,
                per_run: self.per_run.clone(),
            }
        };
        let permit = tokio::time::timeout(JOB_WAIT, self.all.clone().acquire_owned())
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or_else(|| {
                InputError::Busy(format!(
                    "the server is reading {JOBS_AT_ONCE} runs' files already; try again"
                ))
            })?;
        agent::workspace::off_thread(move || {
            // Held by the blocking work itself: given back when it ends.
            let _held = (permit, slot);
            f()
        })
        .await
        .map_err(InputError::Workspace)
    }
}

/// Why one artifact is not served.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error(transparent)]
    Input(#[from] InputError),
    /// Not a file of the workspace, too big, or a name planboard does not
    /// take.
    #[error("{0}")]
    Refused(String),
}

impl Workspaces {
    pub fn new(root: PathBuf, quota: u64, roots: Vec<PathBuf>) -> Workspaces {
        Workspaces {
            root,
            quota,
            roots,
            jobs: Jobs::default(),
        }
    }

    /// The bound on request-driven work (for `/healthz`).
    pub fn jobs(&self) -> &Jobs {
        &self.jobs
    }

    /// The folder every run's workspace is in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn quota(&self) -> u64 {
        self.quota
    }

    /// Run `run`'s workspace folder (it may not exist).
    pub fn dir(&self, run: RunId) -> PathBuf {
        self.root.join(run.to_string())
    }

    /// The folders a run may start from, as the operator set them (the
    /// task box lists them; a refusal names them too).
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Stages uploads for a run (see [`inputs`]).
    pub async fn stage_uploads(&self, uploads: Vec<Upload>) -> Result<Staged, InputError> {
        Staged::uploads(&self.root, uploads, self.quota).await
    }

    /// Stages a copy of an allowed folder for a run (see [`inputs`]);
    /// secret-looking files only when `secrets` is set.
    pub async fn stage_folder(&self, source: &str, secrets: bool) -> Result<Staged, InputError> {
        Staged::folder(&self.root, source, &self.roots, secrets, self.quota).await
    }

    /// The run's workspace, opened through the one module that touches a
    /// workspace's files ([`Workspace`]); `None` when the run left none.
    pub async fn open(&self, id: RunId) -> Result<Option<Workspace>, InputError> {
        let root = self.dir(id);
        let quota = self.quota;
        tokio::task::spawn_blocking(move || match Workspace::open(&root) {
            Ok(ws) => Ok(Some(ws.with_quota(quota))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(InputError::Io(e)),
        })
        .await
        .map_err(|e| InputError::Io(std::io::Error::other(e.to_string())))?
    }

    /// The files the run wrote, relative to its workspace. Links are
    /// neither listed nor followed; names planboard does not take (a
    /// backslash, a control character, not UTF-8) are left out.
    pub async fn artifacts(&self, id: RunId) -> Result<Vec<Artifact>, InputError> {
        let Some(ws) = self.open(id).await? else {
            return Ok(Vec::new());
        };
        self.jobs
            .run(id, move || {
                let listing = ws.files_within(LISTING_ENTRIES)?;
                let mut out: Vec<Artifact> = listing
                    .files
                    .into_iter()
                    .map(|f| Artifact {
                        url: images::artifact_url(id, &f.path),
                        image: images::shown_as_image(&f.path, f.bytes),
                        path: f.path,
                        bytes: f.bytes,
                        preview: None,
                    })
                    .collect();
                for artifact in out.iter_mut().take(PREVIEWED) {
                    if let Ok(head) =
                        ws.read_head(&artifact.path, (run_model::PREVIEW_CHARS * 4) as u64)
                    {
                        artifact.preview = inputs::preview(&head);
                    }
                }
                Ok(out)
            })
            .await
    }

    /// The whole workspace as a zip archive (regular files only; links are
    /// not followed), or why not.
    pub async fn zip(&self, id: RunId) -> Result<Vec<u8>, InputError> {
        let ws = self.open(id).await?;
        // One walk of the workspace: the listing (without previews) and
        // the files' bytes, each read through the workspace.
        let zipped = self
            .jobs
            .run(id, move || {
                let files = match &ws {
                    Some(ws) => ws.files_within(LISTING_ENTRIES)?,
                    None => agent::workspace::Listing::default(),
                };
                if files.truncated {
                    return Err(WorkspaceError::TooManyEntries);
                }
                let files = files.files;
                let total: u64 = files.iter().map(|f| f.bytes).sum();
                if total > ZIP_MAX_BYTES {
                    return Ok(Err(total));
                }
                zip_files(ws.as_ref(), &files).map(Ok)
            })
            .await?;
        zipped.map_err(|total| InputError::Source {
            path: format!("the workspace of run {id}"),
            error: format!(
                "it holds {total} bytes; a zip of it is made up to {ZIP_MAX_BYTES} bytes (download the files one by one)"
            ),
        })
    }

    /// One artifact's bytes; names out of the workspace, links and names
    /// planboard does not take are refused.
    pub async fn artifact(&self, id: RunId, relative: &str) -> Result<Vec<u8>, ArtifactError> {
        let missing = || ArtifactError::Refused(format!("the run has no artifact {relative}"));
        let Some(ws) = self.open(id).await? else {
            return Err(missing());
        };
        let name = relative.to_string();
        let read = match self
            .jobs
            .run(id, move || Ok(ws.read(&name, ZIP_MAX_BYTES)))
            .await
        {
            Ok(read) => read,
            Err(e) => return Err(e.into()),
        };
        match read {
            Ok((bytes, len)) if len <= ZIP_MAX_BYTES => Ok(bytes),
            Ok((_, len)) => Err(ArtifactError::Refused(format!(
                "{relative} has {len} bytes; an artifact is served up to {ZIP_MAX_BYTES}"
            ))),
            Err(WorkspaceError::NotFound { .. }) | Err(WorkspaceError::NotAFile { .. }) => {
                Err(missing())
            }
            Err(e @ WorkspaceError::Io { .. }) => Err(InputError::Workspace(e).into()),
            Err(e) => Err(ArtifactError::Refused(e.to_string())),
        }
    }

    /// The images the answer of run `id` shows ([`images::answer_images`]),
    /// read through the run's workspace; none when it left no workspace.
    pub async fn answer_images(
        &self,
        id: RunId,
        answer: &str,
        inputs: &[InputFile],
    ) -> Result<Vec<FileEntry>, InputError> {
        let Some(ws) = self.open(id).await? else {
            return Ok(Vec::new());
        };
        let files = self
            .jobs
            .run(id, move || ws.files_within(LISTING_ENTRIES))
            .await?
            .files;
        Ok(images::answer_images(answer, files, inputs))
    }
}

/// Runs blocking workspace work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, WorkspaceError> + Send + 'static,
) -> Result<T, InputError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| InputError::Io(std::io::Error::other(e.to_string())))?
        .map_err(InputError::Workspace)
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Artifact {
    pub path: String,
    pub bytes: u64,
    /// The start of the file when it is text (for the first
    /// [`PREVIEWED`] files of the listing).
    pub preview: Option<String>,
    /// Where it is served (`/api/runs/{id}/artifacts/{path}`, its path
    /// percent-encoded).
    pub url: String,
    /// Whether the board shows it as an image: a png, jpeg, gif, webp or
    /// svg file (by its extension) of at most 10 MiB.
    pub image: bool,
}

/// Files of a listing that get a preview.
pub const PREVIEWED: usize = 100;
/// The most bytes a workspace zip is made of.
pub const ZIP_MAX_BYTES: u64 = 200 * 1024 * 1024;

/// A zip of `files` (paths relative to the workspace), deflated; each is
/// read through the workspace, so a file swapped for a link since the
/// listing is left out, not followed.
fn zip_files(
    ws: Option<&Workspace>,
    files: &[agent::workspace::FileEntry],
) -> Result<Vec<u8>, WorkspaceError> {
    use std::io::Write;
    let io = |e: std::io::Error| WorkspaceError::Io {
        name: "the zip".into(),
        error: e,
    };
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(false);
    for file in files {
        let Some(ws) = ws else { break };
        let Ok((bytes, _)) = ws.read(&file.path, ZIP_MAX_BYTES) else {
            continue;
        };
        zip.start_file(file.path.as_str(), options)
            .map_err(|e| io(std::io::Error::other(e)))?;
        zip.write_all(&bytes).map_err(io)?;
    }
    let cursor = zip.finish().map_err(|e| io(std::io::Error::other(e)))?;
    Ok(cursor.into_inner())
}
