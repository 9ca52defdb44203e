//! A run's workspace as planboard's own process touches it: the only code
//! that reads, writes, lists, copies or moves a workspace's files.
//!
//! Why it exists: the model's code runs in the sandbox with the workspace
//! bound read-write, so every name in it (a file, a folder, a symbolic
//! link, a name with a backslash or a newline) may have been planted by an
//! attacker's page or file through the model. planboard itself runs as
//! root. A path joined to the workspace's folder and handed to `std::fs`
//! follows whatever links it meets, and a check made before the use can be
//! undone by a jail process between the two. So nothing here works with
//! joined paths: a [`Workspace`] holds an open directory handle, and every
//! name is resolved beneath it by cap-std (`openat2` with
//! `RESOLVE_BENEATH`, or its component-by-component fallback on kernels
//! without it). A link that leads out, an absolute link, or `..` past the
//! handle fails in the kernel, at the moment of use, whatever was swapped
//! in before. The last component of a name is never followed at all
//! (`O_NOFOLLOW`): a link in the workspace is not a file of the run.
//!
//! Names are taken as they are or refused, never rewritten: `\`, control
//! characters, `..`, absolute names and (on disk) names that are not valid
//! UTF-8 are refused with a sentence saying why ([`WorkspaceError`]). A
//! listing leaves such entries out and says how many it left out.
//!
//! The workspace has a disk quota ([`DEFAULT_QUOTA`]): a write that would
//! pass it is refused, and the code tools refuse to run while it is past
//! (the sandbox's own file-size and wall-time limits bound how far one
//! call can go over).
//!
//! All operations are blocking (each a few system calls per file); async
//! callers wrap them in `spawn_blocking`.
//!
//! # Layout
//! - [`check_name`]: a name the model or a person gave, or why not.
//! - [`Workspace`]: the handle; reading ([`Workspace::read`],
//!   [`Workspace::read_head`]), writing ([`Workspace::write`]), listing
//!   ([`Workspace::list_dir`], [`Workspace::files`]), disk use
//!   ([`Workspace::usage`]), copying a whole workspace
//!   ([`Workspace::copy_into`]) and moving a file in from another folder
//!   ([`Workspace::take_from`]).
//! - [`copy_tree`]: the same copy from any folder opened as a workspace
//!   (an allowed source folder), under [`CopyRules`] (bounds, `.git`,
//!   secret-looking files left out).

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsMaybeDirExt};
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};

/// The most a run's workspace may hold, unless configured otherwise.
pub const DEFAULT_QUOTA: u64 = 1024 * 1024 * 1024;
/// The most files and folders a run's workspace may hold: its quota of
/// entries, below [`MAX_ENTRIES`] so that a walk always sees past it.
pub const DEFAULT_MAX_ENTRIES: u64 = 50_000;
/// The longest name taken (a whole relative path), in bytes.
pub const MAX_NAME_BYTES: usize = 1024;
/// The most entries a walk of a workspace visits: a bound on work, also
/// against a tree the model grew on purpose.
pub const MAX_ENTRIES: usize = 100_000;
/// The deepest folder a walk enters (deeper ones are left out): a walk
/// holds one open folder per level, so this bounds its descriptors.
pub const MAX_DEPTH: usize = 64;
/// How long a caller waits for one workspace job ([`off_thread`]).
pub const JOB_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Why a name or an operation on a workspace was refused.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{name:?} is not a usable file name: {why}")]
    BadName { name: String, why: &'static str },
    #[error("{name} does not exist in the workspace")]
    NotFound { name: String },
    #[error("{name} is a symbolic link; planboard reads and writes only regular files and folders of the workspace, never links")]
    Link { name: String },
    #[error("{name} leads outside the workspace")]
    Outside { name: String },
    #[error("{name} is not a regular file")]
    NotAFile { name: String },
    #[error("{name} is not a folder")]
    NotADir { name: String },
    #[error("the workspace holds {used} bytes; writing {adding} more would pass its quota of {quota} bytes (remove files first)")]
    OverQuota { used: u64, adding: u64, quota: u64 },
    #[error("the workspace has more than {MAX_ENTRIES} files and folders")]
    TooManyEntries,
    #[error("the workspace has folders nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("the workspace did not answer within {} seconds", JOB_TIMEOUT.as_secs())]
    TimedOut,
    #[error("{name}: {error}")]
    Io { name: String, error: io::Error },
}

impl WorkspaceError {
    fn io(name: &str, error: io::Error) -> WorkspaceError {
        // The kernel's words for "a link was in the way" become ours.
        match error.raw_os_error() {
            Some(40) => WorkspaceError::Link { name: name.into() }, // ELOOP
            Some(20) => WorkspaceError::NotADir { name: name.into() }, // ENOTDIR
            // A named pipe opened for writing with nobody reading, a socket.
            Some(6) => WorkspaceError::NotAFile { name: name.into() }, // ENXIO
            _ => match error.kind() {
                io::ErrorKind::NotFound => WorkspaceError::NotFound { name: name.into() },
                // cap-std's "a path led outside of the filesystem".
                io::ErrorKind::PermissionDenied
                    if error.to_string().contains("outside of the filesystem") =>
                {
                    WorkspaceError::Outside { name: name.into() }
                }
                _ => WorkspaceError::Io {
                    name: name.into(),
                    error,
                },
            },
        }
    }

    /// The model's or the person's mistake, not the server's.
    pub fn is_client_error(&self) -> bool {
        !matches!(self, WorkspaceError::Io { .. } | WorkspaceError::TimedOut)
    }
}

/// Runs blocking workspace work on tokio's blocking threads and waits at
/// most [`JOB_TIMEOUT`] for it. Every open here is non-blocking, so a job
/// ends on its own; the timeout is the bound for what still could hang
/// (a stalled disk), and the caller gets a sentence instead of a wait.
pub async fn off_thread<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, WorkspaceError> + Send + 'static,
) -> Result<T, WorkspaceError> {
    match tokio::time::timeout(JOB_TIMEOUT, tokio::task::spawn_blocking(f)).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => Err(WorkspaceError::Io {
            name: ".".into(),
            error: io::Error::other(e.to_string()),
        }),
        Err(_) => Err(WorkspaceError::TimedOut),
    }
}

/// `name` as a path relative to the workspace, or why it is refused.
/// `.` (and an empty name) mean the workspace itself.
pub fn check_name(name: &str) -> Result<&Path, WorkspaceError> {
    let bad = |why| WorkspaceError::BadName {
        name: name.to_string(),
        why,
    };
    if name.len() > MAX_NAME_BYTES {
        return Err(bad("it is longer than 1024 bytes"));
    }
    if name.contains('\\') {
        // On Unix `\` is an ordinary character; a name with one means one
        // thing here and another to whoever later reads it as a separator.
        return Err(bad("it contains a backslash (use / between folders)"));
    }
    if name.chars().any(char::is_control) {
        return Err(bad("it contains a control character"));
    }
    if name.chars().any(is_deceptive) {
        return Err(bad(
            "it contains an invisible formatting character (a right-to-left override or the like) that makes a name show as another",
        ));
    }
    let path = Path::new(name);
    if path.is_absolute() {
        return Err(bad(
            "it is an absolute path; use a path relative to the workspace",
        ));
    }
    for component in path.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            _ => return Err(bad("it leaves the workspace (`..` is not allowed)")),
        }
    }
    Ok(path)
}

/// Unicode's format characters that reorder or hide text (the bidi
/// controls, zero-width ones): `invoice\u{202E}fdp.sh` shows as
/// `invoicehs.pdf`, so a name holding one lies to whoever reads it.
pub fn is_deceptive(c: char) -> bool {
    matches!(
        c,
        '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{061C}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
    )
}

/// A name found on disk, when planboard can show and take it back as it is.
fn shown_name(name: &OsStr) -> Option<&str> {
    let text = name.to_str()?;
    check_name(text).ok()?;
    Some(text)
}

/// One regular file of a workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    /// Relative to the workspace, `/` between folders.
    pub path: String,
    pub bytes: u64,
    /// When it was last written, where the file system says: two listings
    /// then differ for a file rewritten at the same size (a program that
    /// sorted a file's lines in place was told it changed no file).
    pub modified: Option<std::time::SystemTime>,
}

/// What a listing found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    pub files: Vec<FileEntry>,
    /// Entries left out: links, devices, and names planboard does not take
    /// (not UTF-8, a backslash, a control character).
    pub left_out: usize,
    /// The walk stopped at its budget ([`Workspace::files_within`]): there
    /// are more files than listed.
    pub truncated: bool,
}

fn entry_of(path: &str, file: &std::fs::File) -> io::Result<FileEntry> {
    let meta = file.metadata()?;
    Ok(FileEntry {
        path: path.to_string(),
        bytes: meta.len(),
        modified: meta.modified().ok(),
    })
}

/// A run's workspace, opened once; see the module comment.
#[derive(Clone)]
pub struct Workspace {
    dir: Arc<Dir>,
    root: PathBuf,
    quota: u64,
    max_entries: u64,
}

/// What a workspace holds: the bytes of its regular files, and how many
/// files and folders (of any kind) it has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub bytes: u64,
    pub entries: u64,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("root", &self.root)
            .field("quota", &self.quota)
            .finish()
    }
}

/// `O_NONBLOCK`: opening a named pipe the code left waits for a writer
/// for ever without it. Every open here is non-blocking and checks what
/// it opened on the handle (`fstat`) before using it; on a regular file or
/// a folder the flag changes nothing.
fn nonblocking() -> i32 {
    rustix::fs::OFlags::NONBLOCK.bits() as i32
}

fn read_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .follow(FollowSymlinks::No)
        .custom_flags(nonblocking());
    options
}

impl Workspace {
    /// Opens (creating it if needed) the workspace at `root`, a path
    /// planboard chose (never the model).
    pub fn create(root: impl Into<PathBuf>) -> io::Result<Workspace> {
        let root = root.into();
        std::fs::create_dir_all(&root)?;
        Workspace::open(root)
    }

    /// Opens the existing workspace at `root`.
    pub fn open(root: impl Into<PathBuf>) -> io::Result<Workspace> {
        let root = root.into();
        let dir = Dir::open_ambient_dir(&root, cap_std::ambient_authority())?;
        Ok(Workspace {
            dir: Arc::new(dir),
            root,
            quota: DEFAULT_QUOTA,
            max_entries: DEFAULT_MAX_ENTRIES,
        })
    }

    /// The same workspace with another quota.
    pub fn with_quota(mut self, bytes: u64) -> Workspace {
        self.quota = bytes;
        self
    }

    /// Where it is on the host (for the sandbox's bind mount and for logs;
    /// never to be joined with a name).
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn quota(&self) -> u64 {
        self.quota
    }

    /// The same workspace with another quota of files and folders.
    pub fn with_max_entries(mut self, entries: u64) -> Workspace {
        self.max_entries = entries.min(MAX_ENTRIES as u64 - 1);
        self
    }

    pub fn max_entries(&self) -> u64 {
        self.max_entries
    }

    /// Why `usage` is past either quota, as a sentence; `None` within.
    pub fn past_quota(&self, usage: Usage) -> Option<String> {
        if usage.bytes > self.quota {
            return Some(format!(
                "the workspace holds {} bytes, past its quota of {} bytes",
                usage.bytes, self.quota
            ));
        }
        (usage.entries > self.max_entries).then(|| {
            format!(
                "the workspace holds {} files and folders, past its quota of {}",
                usage.entries, self.max_entries
            )
        })
    }

    fn open_file(&self, name: &str) -> Result<std::fs::File, WorkspaceError> {
        let path = check_name(name)?;
        let file = self
            .dir
            .open_with(path, &read_options())
            .map_err(|e| WorkspaceError::io(name, e))?
            .into_std();
        let meta = file.metadata().map_err(|e| WorkspaceError::io(name, e))?;
        if !meta.is_file() {
            return Err(WorkspaceError::NotAFile { name: name.into() });
        }
        Ok(file)
    }

    /// A regular file's bytes, up to `max` of them (and its whole length).
    pub fn read(&self, name: &str, max: u64) -> Result<(Vec<u8>, u64), WorkspaceError> {
        let file = self.open_file(name)?;
        let len = file
            .metadata()
            .map_err(|e| WorkspaceError::io(name, e))?
            .len();
        let mut bytes = Vec::with_capacity(len.min(max) as usize);
        file.take(max)
            .read_to_end(&mut bytes)
            .map_err(|e| WorkspaceError::io(name, e))?;
        Ok((bytes, len))
    }

    /// The first `max` bytes of a regular file (for a preview).
    pub fn read_head(&self, name: &str, max: u64) -> Result<Vec<u8>, WorkspaceError> {
        self.read(name, max).map(|(bytes, _)| bytes)
    }

    /// Writes a regular file, creating its folders; refused past the quota
    /// and where a link stands.
    pub fn write(&self, name: &str, content: &[u8]) -> Result<(), WorkspaceError> {
        let path = check_name(name)?;
        if path.components().all(|c| c == Component::CurDir) {
            return Err(WorkspaceError::BadName {
                name: name.into(),
                why: "give a file name to write",
            });
        }
        let used = self.usage()?;
        let adding = content.len() as u64;
        if used.saturating_add(adding) > self.quota {
            return Err(WorkspaceError::OverQuota {
                used,
                adding,
                quota: self.quota,
            });
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.dir.create_dir_all(parent).map_err(|e| {
                if e.kind() != io::ErrorKind::AlreadyExists {
                    return WorkspaceError::io(name, e);
                }
                // Something that is not a folder stands in the way: say what.
                let shown = parent.to_string_lossy().into_owned();
                match self.dir.symlink_metadata(parent) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        WorkspaceError::Link { name: shown }
                    }
                    _ => WorkspaceError::NotADir { name: shown },
                }
            })?;
        }
        // Something that is not a regular file (a named pipe, a socket)
        // is refused before it is opened, and again on the handle, in case
        // one was swapped in between; it is never truncated.
        match self.dir.symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(WorkspaceError::Link { name: name.into() })
            }
            Ok(meta) if !meta.is_file() => {
                return Err(WorkspaceError::NotAFile { name: name.into() })
            }
            _ => {}
        }
        let mut options = OpenOptions::new();
        options
            .write(true)
            .create(true)
            .follow(FollowSymlinks::No)
            .custom_flags(nonblocking());
        let mut file = self
            .dir
            .open_with(path, &options)
            .map_err(|e| WorkspaceError::io(name, e))?
            .into_std();
        let meta = file.metadata().map_err(|e| WorkspaceError::io(name, e))?;
        if !meta.is_file() {
            return Err(WorkspaceError::NotAFile { name: name.into() });
        }
        file.set_len(0).map_err(|e| WorkspaceError::io(name, e))?;
        file.write_all(content)
            .map_err(|e| WorkspaceError::io(name, e))
    }

    /// Opens a folder of the workspace without following a link at its end.
    fn open_dir(&self, name: &str) -> Result<Dir, WorkspaceError> {
        let path = check_name(name)?;
        if path.components().all(|c| c == Component::CurDir) {
            return self
                .dir
                .try_clone()
                .map_err(|e| WorkspaceError::io(name, e));
        }
        open_dir_nofollow(&self.dir, path).map_err(|e| WorkspaceError::io(name, e))
    }

    /// A folder's entries: `(name, is a folder)`, sorted, and how many were
    /// left out (links, devices, names planboard does not take).
    pub fn list_dir(&self, name: &str) -> Result<(Vec<(String, bool)>, usize), WorkspaceError> {
        let dir = self.open_dir(name)?;
        let mut names = Vec::new();
        let mut left_out = 0;
        for entry in dir.entries().map_err(|e| WorkspaceError::io(name, e))? {
            let entry = entry.map_err(|e| WorkspaceError::io(name, e))?;
            let kind = entry.file_type().map_err(|e| WorkspaceError::io(name, e))?;
            match shown_name(&entry.file_name()) {
                Some(shown) if kind.is_dir() || kind.is_file() => {
                    names.push((shown.to_string(), kind.is_dir()))
                }
                _ => left_out += 1,
            }
            if names.len() + left_out > MAX_ENTRIES {
                return Err(WorkspaceError::TooManyEntries);
            }
        }
        names.sort();
        Ok((names, left_out))
    }

    /// Every regular file, sorted by path; links are neither listed nor
    /// followed. More than [`MAX_ENTRIES`] entries is an error.
    pub fn files(&self) -> Result<Listing, WorkspaceError> {
        let mut listing = Listing::default();
        walk(&self.dir, MAX_ENTRIES, &mut |path, file| {
            listing.files.push(entry_of(path, file)?);
            Ok(())
        })
        .map(|left_out| listing.left_out = left_out)?;
        listing.files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(listing)
    }

    /// The regular files found within the first `most` entries of a walk
    /// (a listing a request asked for: its work is bounded whatever the
    /// workspace holds), sorted; `truncated` when the walk stopped there.
    pub fn files_within(&self, most: usize) -> Result<Listing, WorkspaceError> {
        let mut listing = Listing::default();
        let walked = walk(&self.dir, most, &mut |path, file| {
            listing.files.push(entry_of(path, file)?);
            Ok(())
        });
        match walked {
            Ok(left_out) => listing.left_out = left_out,
            Err(WorkspaceError::TooManyEntries) => listing.truncated = true,
            Err(e) => return Err(e),
        }
        listing.files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(listing)
    }

    /// Bytes held by the workspace's regular files.
    pub fn usage(&self) -> Result<u64, WorkspaceError> {
        self.usage_counted().map(|u| u.bytes)
    }

    /// Bytes held and entries counted ([`Usage`]); more than
    /// [`MAX_ENTRIES`] entries is [`WorkspaceError::TooManyEntries`].
    pub fn usage_counted(&self) -> Result<Usage, WorkspaceError> {
        let mut used = Usage::default();
        // Sizes from the entries' own metadata: no file is opened.
        walk_meta(&self.dir, &mut |bytes| {
            used.bytes = used.bytes.saturating_add(bytes);
            used.entries += 1;
        })?;
        Ok(used)
    }

    /// Removes the entry `name` (a file, a link, or a folder with all it
    /// holds), never following a link: what a link points at stays.
    pub fn remove_entry(&self, name: &str) -> Result<(), WorkspaceError> {
        let path = check_name(name)?;
        if path.components().all(|c| c == Component::CurDir) {
            return Err(WorkspaceError::BadName {
                name: name.into(),
                why: "give the name of an entry to remove",
            });
        }
        let meta = self
            .dir
            .symlink_metadata(path)
            .map_err(|e| WorkspaceError::io(name, e))?;
        if meta.is_dir() {
            self.dir.remove_dir_all(path)
        } else {
            self.dir.remove_file(path)
        }
        .map_err(|e| WorkspaceError::io(name, e))
    }

    /// The names at the workspace's top, whatever they are (for
    /// [`Workspace::reclaim`]); `None` past [`MAX_ENTRIES`].
    pub fn top_names(&self) -> Option<std::collections::HashSet<std::ffi::OsString>> {
        let mut seen = Budget {
            used: 0,
            most: MAX_ENTRIES,
        };
        entries_of(&self.dir, ".", &mut seen)
            .ok()
            .map(|found| found.into_iter().map(|(name, _)| name).collect())
    }

    /// Brings a workspace that a run of code left past its quota back
    /// within it by removing what that run added: first the entries at
    /// the top that were not there before (`top_before`; a tree of many
    /// folders goes whole), then, newest first, the files it created
    /// (not in `files_before`), until both quotas hold. What was there
    /// before is never removed. Returns the names removed.
    pub fn reclaim(
        &self,
        top_before: &std::collections::HashSet<std::ffi::OsString>,
        files_before: &[FileEntry],
    ) -> Vec<String> {
        let mut removed = Vec::new();
        let within = |ws: &Workspace| {
            ws.usage_counted()
                .is_ok_and(|usage| ws.past_quota(usage).is_none())
        };
        if within(self) {
            return removed;
        }
        // Too many entries to walk, or files under new folders: new
        // folders at the top go first, whole.
        if let Some(now) = self.top_names() {
            let mut added: Vec<_> = now.difference(top_before).cloned().collect();
            added.sort();
            for name in added {
                let shown = name.to_string_lossy().into_owned();
                let is_dir = self.dir.symlink_metadata(&name).is_ok_and(|m| m.is_dir());
                if !is_dir {
                    continue;
                }
                if self.dir.remove_dir_all(&name).is_ok() {
                    removed.push(format!("{shown}/"));
                }
                if within(self) {
                    return removed;
                }
            }
        }
        let known: std::collections::HashSet<&str> =
            files_before.iter().map(|f| f.path.as_str()).collect();
        let Ok(listing) = self.files() else {
            return removed;
        };
        let mut added: Vec<FileEntry> = listing
            .files
            .into_iter()
            .filter(|f| !known.contains(f.path.as_str()))
            .collect();
        // Newest first: what was written last is what passed the quota.
        added.sort_by(|a, b| b.modified.cmp(&a.modified).then(b.path.cmp(&a.path)));
        let Ok(mut usage) = self.usage_counted() else {
            return removed;
        };
        for file in added {
            if self.past_quota(usage).is_none() {
                break;
            }
            if self.dir.remove_file(&file.path).is_ok() {
                usage.bytes = usage.bytes.saturating_sub(file.bytes);
                usage.entries = usage.entries.saturating_sub(1);
                removed.push(file.path);
            }
        }
        // Names planboard does not list (a backslash, not UTF-8) that the
        // run left at the top go too, when still past.
        if self.past_quota(usage).is_some() {
            if let Some(now) = self.top_names() {
                for name in now.difference(top_before) {
                    if shown_name(name).is_none() && self.dir.remove_file(name).is_ok() {
                        removed.push(name.to_string_lossy().into_owned());
                    }
                }
            }
        }
        removed
    }

    /// Copies every regular file and folder into `to` (links and names
    /// planboard does not take are left out), within `to`'s quota.
    pub fn copy_into(&self, to: &Workspace) -> Result<Vec<FileEntry>, CopyError> {
        copy_tree(self, to, &CopyRules::everything())
    }

    /// Moves the regular file `name` of the folder `from` (a staging folder
    /// of planboard's) into the workspace as `as_name`, a single name, not
    /// replacing anything that is there.
    pub fn take_from(
        &self,
        from: &Workspace,
        name: &str,
        as_name: &str,
    ) -> Result<(), WorkspaceError> {
        let from = &from.dir;
        let target = check_name(as_name)?;
        if target.components().count() != 1 || target.components().next() == Some(Component::CurDir)
        {
            return Err(WorkspaceError::BadName {
                name: as_name.into(),
                why: "a file added to a running run is placed at the workspace's top",
            });
        }
        if self.dir.symlink_metadata(target).is_ok() {
            return Err(WorkspaceError::Io {
                name: as_name.into(),
                error: io::Error::new(io::ErrorKind::AlreadyExists, "the name is taken"),
            });
        }
        let adding = from
            .symlink_metadata(name)
            .map_err(|e| WorkspaceError::io(name, e))?
            .len();
        let used = self.usage()?;
        if used.saturating_add(adding) > self.quota {
            return Err(WorkspaceError::OverQuota {
                used,
                adding,
                quota: self.quota,
            });
        }
        from.rename(name, &self.dir, target)
            .map_err(|e| WorkspaceError::io(as_name, e))
    }

    /// Whether a name is taken by anything (a file, a folder, a link).
    pub fn is_taken(&self, name: &str) -> bool {
        check_name(name).is_ok_and(|path| self.dir.symlink_metadata(path).is_ok())
    }

    /// Deletes the workspace: everything in it, then its folder (the
    /// retention of finished runs' files). Each entry is removed from its
    /// parent folder's handle (`unlinkat`) and folders are opened without
    /// following a link, so a link the code planted, to a host file or
    /// folder, goes as a link: what it pointed at is never touched.
    pub fn remove(self) -> Result<(), WorkspaceError> {
        for entry in self.dir.entries().map_err(|e| WorkspaceError::io(".", e))? {
            let entry = entry.map_err(|e| WorkspaceError::io(".", e))?;
            let name = entry.file_name();
            let shown = name.to_string_lossy().into_owned();
            let kind = entry
                .file_type()
                .map_err(|e| WorkspaceError::io(&shown, e))?;
            let removed = if kind.is_dir() {
                self.dir.remove_dir_all(&name)
            } else {
                self.dir.remove_file(&name)
            };
            removed.map_err(|e| WorkspaceError::io(&shown, e))?;
        }
        // The folder itself is planboard's (a run's id under the
        // workspaces folder); `rmdir` does not follow a link either.
        std::fs::remove_dir(&self.root).map_err(|e| WorkspaceError::io(".", e))
    }
}

/// Opens `path` beneath `dir` as a folder; a link as its last component is
/// refused (`ELOOP`), links before it are resolved beneath `dir`.
fn open_dir_nofollow(dir: &Dir, path: &Path) -> io::Result<Dir> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .maybe_dir(true)
        .follow(FollowSymlinks::No)
        .custom_flags(nonblocking());
    let file = dir.open_with(path, &options)?.into_std();
    if !file.metadata()?.is_dir() {
        return Err(io::Error::from_raw_os_error(20)); // ENOTDIR
    }
    Ok(Dir::from_std_file(file))
}

/// What one folder of a walk holds: its entries' names and kinds, read
/// whole before anything is opened beneath it, so the folder's listing
/// handle is closed before the walk goes down (a walk holds one open
/// folder per level, never one per folder: 25,000 folders side by side
/// held 25,000 descriptors and took the server's).
fn entries_of(
    dir: &Dir,
    shown: &str,
    seen: &mut Budget,
) -> Result<Vec<(std::ffi::OsString, Option<cap_std::fs::FileType>)>, WorkspaceError> {
    let mut found = Vec::new();
    for entry in dir.entries().map_err(|e| WorkspaceError::io(shown, e))? {
        seen.used += 1;
        if seen.used > seen.most {
            return Err(WorkspaceError::TooManyEntries);
        }
        if let Ok(entry) = entry {
            found.push((entry.file_name(), entry.file_type().ok()));
        }
    }
    Ok(found)
}

/// Visits every regular file beneath `root` with its `/`-joined path and an
/// open handle (opened without following a link, without blocking, and
/// checked to be a regular file on the handle); returns how many entries
/// were left out. Each folder is opened from its parent's handle, so a
/// folder swapped for a link mid-walk is refused, not followed; folders
/// deeper than [`MAX_DEPTH`] are left out.
fn walk(
    root: &Dir,
    most: usize,
    visit: &mut dyn FnMut(&str, &std::fs::File) -> io::Result<()>,
) -> Result<usize, WorkspaceError> {
    let mut left_out = 0;
    let mut seen = Budget { used: 0, most };
    walk_from(root, "", 0, &mut seen, &mut left_out, visit)?;
    Ok(left_out)
}

/// Entries a walk has visited, and the most it may.
struct Budget {
    used: usize,
    most: usize,
}

fn walk_from(
    dir: &Dir,
    prefix: &str,
    depth: usize,
    seen: &mut Budget,
    left_out: &mut usize,
    visit: &mut dyn FnMut(&str, &std::fs::File) -> io::Result<()>,
) -> Result<(), WorkspaceError> {
    let shown = if prefix.is_empty() { "." } else { prefix };
    for (file_name, kind) in entries_of(dir, shown, seen)? {
        let (Some(name), Some(kind)) = (shown_name(&file_name), kind) else {
            *left_out += 1;
            continue;
        };
        let name = name.to_string();
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if kind.is_dir() {
            if depth + 1 >= MAX_DEPTH {
                *left_out += 1;
                continue;
            }
            match open_dir_nofollow(dir, Path::new(&name)) {
                Ok(child) => walk_from(&child, &path, depth + 1, seen, left_out, visit)?,
                Err(_) => *left_out += 1,
            }
        } else if kind.is_file() {
            // Swapped for a link or a pipe since the listing: refused here.
            let Ok(file) = dir.open_with(&name, &read_options()) else {
                *left_out += 1;
                continue;
            };
            let file = file.into_std();
            if !file.metadata().is_ok_and(|m| m.is_file()) {
                *left_out += 1;
                continue;
            }
            visit(&path, &file).map_err(|e| WorkspaceError::io(&path, e))?;
        } else {
            *left_out += 1;
        }
    }
    Ok(())
}

/// Adds up the sizes of the regular files beneath `root` without opening
/// them (an entry's own `lstat`), one open folder per level as [`walk`];
/// every entry counts, whatever its name (a name planboard does not take
/// still takes disk).
fn walk_meta(root: &Dir, add: &mut dyn FnMut(u64)) -> Result<(), WorkspaceError> {
    fn from(
        dir: &Dir,
        depth: usize,
        seen: &mut Budget,
        add: &mut dyn FnMut(u64),
    ) -> Result<(), WorkspaceError> {
        for (name, kind) in entries_of(dir, ".", seen)? {
            let Some(kind) = kind else { continue };
            if !kind.is_file() {
                // A folder, a link, a pipe: an entry, of no bytes.
                add(0);
            }
            if kind.is_dir() {
                // What lies deeper cannot be counted: the workspace is not
                // measured at all rather than measured short.
                if depth + 1 >= MAX_DEPTH {
                    return Err(WorkspaceError::TooDeep);
                }
                if let Ok(child) = open_dir_nofollow(dir, Path::new(&name)) {
                    from(&child, depth + 1, seen, add)?;
                }
            } else if kind.is_file() {
                if let Ok(meta) = dir.symlink_metadata(&name) {
                    add(meta.len());
                }
            }
        }
        Ok(())
    }
    let mut seen = Budget {
        used: 0,
        most: MAX_ENTRIES,
    };
    from(root, 0, &mut seen, add)
}

/// What a copy takes.
#[derive(Clone, Debug)]
pub struct CopyRules {
    /// Leave out the top folder's `.git`.
    pub skip_git: bool,
    /// Leave out files that usually hold secrets ([`is_secret_file`]).
    pub skip_secrets: bool,
    /// The most files and bytes copied.
    pub max_files: usize,
    pub max_bytes: u64,
}

impl CopyRules {
    /// Everything, up to [`MAX_ENTRIES`] files.
    pub fn everything() -> CopyRules {
        CopyRules {
            skip_git: false,
            skip_secrets: false,
            max_files: MAX_ENTRIES,
            max_bytes: u64::MAX,
        }
    }
}

/// Names of files that usually hold credentials: `.env` and `.env.*`,
/// private keys, and the tools' credential files. A folder copied for a
/// run leaves them out unless the person asks for them, since whatever the
/// model reads may end up in a page it fetches or a tool it calls.
pub fn is_secret_file(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower == ".env"
        || lower.starts_with(".env.")
        || lower.ends_with(".pem")
        || lower.ends_with(".key")
        || lower.ends_with(".p12")
        || lower.ends_with(".pfx")
        || lower.starts_with("id_rsa")
        || lower.starts_with("id_ed25519")
        || lower.starts_with("id_ecdsa")
        || matches!(
            lower.as_str(),
            ".netrc" | ".npmrc" | ".pypirc" | ".git-credentials" | ".htpasswd" | "credentials.json"
        )
}

/// Why a copy stopped: too much, or the workspace's own error.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("more than {files} files or {bytes} bytes")]
    TooLarge { files: usize, bytes: u64 },
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
}

/// Copies the regular files and folders beneath `from` into `to` under
/// `rules`; links, devices and names planboard does not take are left out.
/// Returns the files copied, sorted.
pub fn copy_tree(
    from: &Workspace,
    to: &Workspace,
    rules: &CopyRules,
) -> Result<Vec<FileEntry>, CopyError> {
    let mut copied = Vec::new();
    let mut bytes = 0u64;
    let mut too_large = false;
    let mut over_quota = false;
    let used = to.usage()?;
    let result = walk(&from.dir, MAX_ENTRIES, &mut |path, file| {
        let base = path.rsplit('/').next().unwrap_or(path);
        if rules.skip_git && path.starts_with(".git/") {
            return Ok(());
        }
        if rules.skip_secrets && is_secret_file(base) {
            return Ok(());
        }
        let size = file.metadata()?.len();
        bytes = bytes.saturating_add(size);
        if copied.len() >= rules.max_files || bytes > rules.max_bytes {
            too_large = true;
            return Err(io::Error::other("too large"));
        }
        if used.saturating_add(bytes) > to.quota {
            over_quota = true;
            return Err(io::Error::other("over the quota"));
        }
        let target = Path::new(path);
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            to.dir.create_dir_all(parent)?;
        }
        let mut options = OpenOptions::new();
        options
            .write(true)
            .create_new(true)
            .follow(FollowSymlinks::No);
        let mut out = to.dir.open_with(target, &options)?;
        io::copy(&mut file.take(size), &mut out)?;
        copied.push(FileEntry {
            path: path.to_string(),
            bytes: size,
            modified: None,
        });
        Ok(())
    });
    match result {
        Ok(_) => {}
        Err(_) if too_large => {
            return Err(CopyError::TooLarge {
                files: rules.max_files,
                bytes: rules.max_bytes,
            })
        }
        // The person's to fix (a smaller folder, a larger quota), not the
        // server's: said as the quota's own error.
        Err(_) if over_quota => {
            return Err(WorkspaceError::OverQuota {
                used,
                adding: bytes,
                quota: to.quota,
            }
            .into())
        }
        Err(e) => return Err(e.into()),
    }
    copied.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, Workspace, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "host secret").unwrap();
        let ws = Workspace::create(dir.path().join("ws")).unwrap();
        (dir, ws, outside)
    }

    #[test]
    fn names_with_backslashes_control_characters_dots_or_a_root_are_refused_not_rewritten() {
        for name in [
            "..\\..\\planboard.db",
            "a\\b",
            "a\nb",
            "tab\there",
            "../x",
            "a/../../x",
            "/etc/passwd",
        ] {
            let e = check_name(name).unwrap_err();
            assert!(matches!(e, WorkspaceError::BadName { .. }), "{name}: {e}");
        }
        assert_eq!(check_name("out/a b.txt").unwrap(), Path::new("out/a b.txt"));
        assert!(check_name("./a.txt").is_ok());
        let (_dir, ws, _) = setup();
        let e = ws.write("..\\..\\planboard.db", b"x").unwrap_err();
        assert!(e.to_string().contains("backslash"), "{e}");
        assert!(ws.files().unwrap().files.is_empty());
    }

    #[test]
    fn a_dangling_link_planted_in_the_workspace_is_never_written_through() {
        let (_dir, ws, outside) = setup();
        let target = outside.join("cron-x");
        symlink(&target, ws.root().join("notes.md")).unwrap();
        let e = ws.write("notes.md", b"* * * * * root evil").unwrap_err();
        assert!(
            matches!(
                e,
                WorkspaceError::Link { .. } | WorkspaceError::Outside { .. }
            ),
            "{e}"
        );
        assert!(!target.exists(), "nothing was written on the host");
        // A relative link out, and a folder that is a link out.
        symlink("../outside/rel", ws.root().join("rel.md")).unwrap();
        assert!(ws.write("rel.md", b"x").is_err());
        assert!(!outside.join("rel").exists());
        symlink(&outside, ws.root().join("out")).unwrap();
        let e = ws.write("out/new.txt", b"x").unwrap_err();
        assert!(
            matches!(
                e,
                WorkspaceError::Outside { .. } | WorkspaceError::Link { .. }
            ),
            "{e}"
        );
        assert!(!outside.join("new.txt").exists());
    }

    #[test]
    fn links_out_are_neither_read_nor_listed_nor_copied() {
        let (dir, ws, outside) = setup();
        symlink(outside.join("secret.txt"), ws.root().join("leak.txt")).unwrap();
        symlink(&outside, ws.root().join("dir")).unwrap();
        std::fs::write(ws.root().join("real.txt"), "mine").unwrap();
        for name in ["leak.txt", "dir/secret.txt"] {
            let e = ws.read(name, 1000).unwrap_err();
            assert!(
                matches!(
                    e,
                    WorkspaceError::Link { .. } | WorkspaceError::Outside { .. }
                ),
                "{name}: {e}"
            );
        }
        let listing = ws.files().unwrap();
        let names: Vec<&str> = listing.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(names, ["real.txt"]);
        assert_eq!(listing.left_out, 2);
        let (entries, left_out) = ws.list_dir(".").unwrap();
        assert_eq!(entries, [("real.txt".to_string(), false)]);
        assert_eq!(left_out, 2);
        assert!(ws.list_dir("dir").is_err(), "a linked folder is not listed");
        let copy = Workspace::create(dir.path().join("copy")).unwrap();
        let copied = ws.copy_into(&copy).unwrap();
        assert_eq!(copied.len(), 1);
        assert!(!copy.root().join("leak.txt").exists());
        assert!(!copy.root().join("dir").exists());
    }

    #[test]
    fn names_on_disk_that_planboard_does_not_take_are_left_out_of_listings() {
        let (_dir, ws, _) = setup();
        std::fs::write(ws.root().join("..\\..\\planboard.db"), "x").unwrap();
        std::fs::write(ws.root().join("line\nbreak"), "x").unwrap();
        std::fs::write(ws.root().join("ok.txt"), "x").unwrap();
        let listing = ws.files().unwrap();
        assert_eq!(listing.files.len(), 1);
        assert_eq!(listing.files[0].path, "ok.txt");
        assert_eq!(listing.left_out, 2);
    }

    #[test]
    fn a_folder_swapped_for_a_link_while_files_are_written_never_lets_a_write_out() {
        // A jail process flips `d` between a folder and a link out while
        // the host writes `d/x` over and over: no write may land outside.
        let (_dir, ws, outside) = setup();
        let root = ws.root().to_path_buf();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flipper = {
            let (root, outside, stop) = (root.clone(), outside.clone(), stop.clone());
            std::thread::spawn(move || {
                let d = root.join("d");
                let mut flips = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::fs::remove_dir_all(&d);
                    let _ = std::fs::remove_file(&d);
                    let _ = std::fs::create_dir(&d);
                    let _ = std::fs::remove_dir_all(&d);
                    let _ = symlink(&outside, &d);
                    let _ = std::fs::remove_file(&d);
                    flips += 1;
                }
                flips
            })
        };
        let mut landed = 0;
        for i in 0..3_000 {
            if ws.write("d/x", format!("{i}").as_bytes()).is_ok() {
                landed += 1;
            }
            let _ = ws.read("d/x", 100);
            let _ = ws.files();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let flips = flipper.join().unwrap();
        assert!(flips > 100, "the race ran ({flips} flips)");
        assert!(
            !outside.join("x").exists(),
            "a write went through the link ({landed} landed inside)"
        );
    }

    #[test]
    fn writes_past_the_quota_are_refused_and_leave_the_workspace_as_it_was() {
        let (_dir, ws, _) = setup();
        let ws = ws.with_quota(10);
        ws.write("a.txt", b"12345678").unwrap();
        let e = ws.write("b.txt", b"123").unwrap_err();
        assert!(
            matches!(
                e,
                WorkspaceError::OverQuota {
                    used: 8,
                    adding: 3,
                    quota: 10
                }
            ),
            "{e}"
        );
        assert!(!ws.root().join("b.txt").exists());
        assert_eq!(ws.usage().unwrap(), 8);
    }

    #[test]
    fn removing_a_workspace_removes_planted_links_never_what_they_point_at() {
        let (dir, ws, outside) = setup();
        std::fs::create_dir_all(outside.join("folder")).unwrap();
        std::fs::write(outside.join("folder/kept.txt"), "host file").unwrap();
        ws.write("out/deep/result.csv", b"a,b\n").unwrap();
        symlink(outside.join("secret.txt"), ws.root().join("leak.txt")).unwrap();
        symlink(&outside, ws.root().join("out/deep/host")).unwrap();
        symlink(outside.join("folder"), ws.root().join("folder")).unwrap();
        symlink("../../outside/secret.txt", ws.root().join("rel.txt")).unwrap();
        let root = ws.root().to_path_buf();
        ws.remove().unwrap();
        assert!(!root.exists(), "the workspace is gone");
        assert_eq!(
            std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
            "host secret"
        );
        assert_eq!(
            std::fs::read_to_string(outside.join("folder/kept.txt")).unwrap(),
            "host file"
        );
        assert!(dir.path().join("outside").is_dir());
    }

    #[test]
    fn disk_use_counts_the_workspace_files_and_never_what_a_link_points_at() {
        let (_dir, ws, outside) = setup();
        std::fs::write(outside.join("big.bin"), vec![0u8; 5000]).unwrap();
        ws.write("a.txt", b"12345").unwrap();
        symlink(outside.join("big.bin"), ws.root().join("big.bin")).unwrap();
        symlink(&outside, ws.root().join("host")).unwrap();
        assert_eq!(ws.usage().unwrap(), 5);
    }

    #[test]
    fn a_copy_past_the_quota_is_refused_with_the_quota_in_its_words() {
        let (dir, ws, _) = setup();
        ws.write("a.txt", b"1234567890").unwrap();
        let small = Workspace::create(dir.path().join("small"))
            .unwrap()
            .with_quota(4);
        let e = ws.copy_into(&small).unwrap_err();
        assert!(
            matches!(
                e,
                CopyError::Workspace(WorkspaceError::OverQuota { quota: 4, .. })
            ),
            "{e}"
        );
        assert!(e.to_string().contains("quota of 4 bytes"), "{e}");
    }

    #[test]
    fn a_secret_looking_file_is_left_out_of_a_copy_that_asks_to() {
        let (dir, ws, _) = setup();
        for name in [".env", ".env.local", "key.pem", "a.txt"] {
            std::fs::write(ws.root().join(name), "x").unwrap();
        }
        let copy = Workspace::create(dir.path().join("copy")).unwrap();
        let rules = CopyRules {
            skip_secrets: true,
            ..CopyRules::everything()
        };
        let copied = copy_tree(&ws, &copy, &rules).unwrap();
        let names: Vec<&str> = copied.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(names, ["a.txt"]);
    }

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success(), "mkfifo {}", path.display());
    }

    /// Runs `f` on another thread and fails the test unless it returns
    /// within two seconds (a blocked open would never return).
    fn promptly<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(2))
            .unwrap_or_else(|_| panic!("{what} blocked"))
    }

    #[test]
    fn a_named_pipe_the_code_left_fails_fast_for_every_operation() {
        let (dir, ws, _) = setup();
        ws.write("real.txt", b"mine").unwrap();
        mkfifo(&ws.root().join("pipe.txt"));
        std::fs::create_dir(ws.root().join("sub")).unwrap();
        mkfifo(&ws.root().join("sub/inner"));
        let w = ws.clone();
        let e = promptly("read", move || w.read("pipe.txt", 100).unwrap_err());
        assert!(matches!(e, WorkspaceError::NotAFile { .. }), "{e}");
        let w = ws.clone();
        let e = promptly("read_head", move || {
            w.read_head("sub/inner", 10).unwrap_err()
        });
        assert!(matches!(e, WorkspaceError::NotAFile { .. }), "{e}");
        let w = ws.clone();
        let e = promptly("write", move || w.write("pipe.txt", b"x").unwrap_err());
        assert!(matches!(e, WorkspaceError::NotAFile { .. }), "{e}");
        // A reader waiting on the pipe (the code's own) does not make the
        // write go through it either.
        let reader = {
            let path = ws.root().join("pipe.txt");
            std::thread::spawn(move || std::fs::read(path))
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        let w = ws.clone();
        let e = promptly("write with a reader", move || {
            w.write("pipe.txt", b"x").unwrap_err()
        });
        assert!(matches!(e, WorkspaceError::NotAFile { .. }), "{e}");
        // Let the reader go.
        std::fs::OpenOptions::new()
            .write(true)
            .open(ws.root().join("pipe.txt"))
            .unwrap();
        reader.join().unwrap().unwrap();
        let w = ws.clone();
        let listing = promptly("listing", move || w.files().unwrap());
        let names: Vec<&str> = listing.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(names, ["real.txt"]);
        assert_eq!(listing.left_out, 2);
        let w = ws.clone();
        let (entries, left_out) = promptly("list_dir", move || w.list_dir(".").unwrap());
        assert_eq!(entries.len(), 2, "{entries:?}");
        assert_eq!(left_out, 1);
        let w = ws.clone();
        let e = promptly("a pipe opened as a folder", move || {
            w.list_dir("pipe.txt").unwrap_err()
        });
        assert!(matches!(e, WorkspaceError::NotADir { .. }), "{e}");
        let copy = Workspace::create(dir.path().join("copy")).unwrap();
        let w = ws.clone();
        let copied = promptly("copy", move || w.copy_into(&copy).unwrap());
        assert_eq!(copied.len(), 1);
        let w = ws.clone();
        assert_eq!(promptly("usage", move || w.usage().unwrap()), 4);
    }

    #[test]
    fn a_pipe_swapped_in_for_a_listed_file_never_blocks_a_walk_or_a_read() {
        // The code flips `f` between a file and a named pipe while the
        // host lists and reads it: the listing saw a file, the open finds
        // a pipe, and nothing waits for a writer.
        let (_dir, ws, _) = setup();
        let root = ws.root().to_path_buf();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flips = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let flipper = {
            let (root, stop, flips) = (root.clone(), stop.clone(), flips.clone());
            std::thread::spawn(move || {
                let f = root.join("f");
                let pause = std::time::Duration::from_micros(300);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::fs::remove_file(&f);
                    let _ = std::fs::write(&f, "x");
                    std::thread::sleep(pause);
                    let _ = std::fs::remove_file(&f);
                    let _ = rustix::fs::mknodat(
                        rustix::fs::CWD,
                        &f,
                        rustix::fs::FileType::Fifo,
                        rustix::fs::Mode::from_raw_mode(0o644),
                        0,
                    );
                    std::thread::sleep(pause);
                    flips.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            })
        };
        let w = ws.clone();
        let seen = flips.clone();
        // Until the race has run 50 rounds, whatever the machine's load.
        promptly("listings and reads during 50 flips", move || {
            while seen.load(std::sync::atomic::Ordering::Relaxed) < 50 {
                let _ = w.files();
                let _ = w.read("f", 10);
                let _ = w.write("f", b"y");
            }
        });
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        flipper.join().unwrap();
    }

    #[test]
    fn five_thousand_folders_are_walked_under_a_limit_of_1024_descriptors() {
        if !crate::testing::is_child() {
            return crate::testing::run_limited(
                "workspace::tests::five_thousand_folders_are_walked_under_a_limit_of_1024_descriptors",
                &["--nofile=1024"],
                std::time::Duration::from_secs(120),
            );
        }
        let (dir, ws, _) = setup();
        for i in 0..5_000 {
            let folder = ws.root().join(format!("d{i}"));
            std::fs::create_dir(&folder).unwrap();
            std::fs::write(folder.join("f"), "x").unwrap();
        }
        assert_eq!(ws.files().unwrap().files.len(), 5_000);
        assert_eq!(ws.usage().unwrap(), 5_000);
        let copy = Workspace::create(dir.path().join("copy")).unwrap();
        assert_eq!(ws.copy_into(&copy).unwrap().len(), 5_000);
        // And descriptors are left for everything else.
        let files: Vec<std::fs::File> = (0..500)
            .map(|_| std::fs::File::open(dir.path()).unwrap())
            .collect();
        assert_eq!(files.len(), 500);
    }

    #[test]
    fn a_listing_a_request_asked_for_stops_at_its_budget() {
        let (_dir, ws, _) = setup();
        for i in 0..50 {
            ws.write(&format!("d{i}/f"), b"x").unwrap();
        }
        let listing = ws.files_within(30).unwrap();
        assert!(listing.truncated);
        assert!(listing.files.len() < 30, "{}", listing.files.len());
        let whole = ws.files_within(1_000).unwrap();
        assert!(!whole.truncated);
        assert_eq!(whole.files.len(), 50);
    }

    #[test]
    fn names_that_show_as_other_names_are_refused() {
        for name in [
            "invoice\u{202E}fdp.sh",
            "a\u{200B}b.txt",
            "x\u{2066}y",
            "\u{FEFF}a",
        ] {
            let e = check_name(name).unwrap_err();
            assert!(
                e.to_string().contains("invisible formatting"),
                "{name:?}: {e}"
            );
        }
        let (_dir, ws, _) = setup();
        std::fs::write(ws.root().join("invoice\u{202E}fdp.sh"), "x").unwrap();
        let listing = ws.files().unwrap();
        assert!(listing.files.is_empty());
        assert_eq!(listing.left_out, 1);
        assert!(
            check_name("发票.pdf").is_ok(),
            "other scripts are names like any"
        );
    }
}
