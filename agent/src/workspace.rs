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
use cap_std::fs::{Dir, OpenOptions};

/// The most a run's workspace may hold, unless configured otherwise.
pub const DEFAULT_QUOTA: u64 = 1024 * 1024 * 1024;
/// The longest name taken (a whole relative path), in bytes.
pub const MAX_NAME_BYTES: usize = 1024;
/// The most entries a walk of a workspace visits: a bound on work, also
/// against a tree the model grew on purpose.
pub const MAX_ENTRIES: usize = 100_000;

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
    #[error("{name}: {error}")]
    Io { name: String, error: io::Error },
}

impl WorkspaceError {
    fn io(name: &str, error: io::Error) -> WorkspaceError {
        // The kernel's words for "a link was in the way" become ours.
        match error.raw_os_error() {
            Some(40) => WorkspaceError::Link { name: name.into() }, // ELOOP
            Some(20) => WorkspaceError::NotADir { name: name.into() }, // ENOTDIR
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
        !matches!(self, WorkspaceError::Io { .. })
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
}

/// A run's workspace, opened once; see the module comment.
#[derive(Clone)]
pub struct Workspace {
    dir: Arc<Dir>,
    root: PathBuf,
    quota: u64,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("root", &self.root)
            .field("quota", &self.quota)
            .finish()
    }
}

fn read_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true).follow(FollowSymlinks::No);
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
        let mut options = OpenOptions::new();
        options
            .write(true)
            .create(true)
            .truncate(true)
            .follow(FollowSymlinks::No);
        let mut file = self
            .dir
            .open_with(path, &options)
            .map_err(|e| WorkspaceError::io(name, e))?;
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
    /// followed.
    pub fn files(&self) -> Result<Listing, WorkspaceError> {
        let mut listing = Listing::default();
        walk(&self.dir, &mut |path, file| {
            let meta = file.metadata()?;
            listing.files.push(FileEntry {
                path: path.to_string(),
                bytes: meta.len(),
                modified: meta.modified().ok(),
            });
            Ok(())
        })
        .map(|left_out| listing.left_out = left_out)?;
        listing.files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(listing)
    }

    /// Bytes held by the workspace's regular files.
    pub fn usage(&self) -> Result<u64, WorkspaceError> {
        let mut used = 0u64;
        // Sizes from the entries' own metadata: no file is opened.
        walk_meta(&self.dir, &mut |bytes| used = used.saturating_add(bytes))?;
        Ok(used)
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
        .follow(FollowSymlinks::No);
    let file = dir.open_with(path, &options)?.into_std();
    if !file.metadata()?.is_dir() {
        return Err(io::Error::from_raw_os_error(20)); // ENOTDIR
    }
    Ok(Dir::from_std_file(file))
}

/// Visits every regular file beneath `root` with its `/`-joined path and an
/// open handle (opened without following a link); returns how many
/// entries were left out. Each folder is opened from its parent's handle,
/// so a folder swapped for a link mid-walk is refused, not followed.
fn walk(
    root: &Dir,
    visit: &mut dyn FnMut(&str, &std::fs::File) -> io::Result<()>,
) -> Result<usize, WorkspaceError> {
    let mut left_out = 0;
    let mut seen = 0usize;
    let mut stack: Vec<(String, Dir)> = vec![(
        String::new(),
        root.try_clone().map_err(|e| WorkspaceError::io(".", e))?,
    )];
    while let Some((prefix, dir)) = stack.pop() {
        let shown = if prefix.is_empty() {
            "."
        } else {
            prefix.as_str()
        };
        for entry in dir.entries().map_err(|e| WorkspaceError::io(shown, e))? {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(WorkspaceError::TooManyEntries);
            }
            let Ok(entry) = entry else {
                left_out += 1;
                continue;
            };
            let file_name = entry.file_name();
            let (Some(name), Ok(kind)) = (shown_name(&file_name), entry.file_type()) else {
                left_out += 1;
                continue;
            };
            let path = if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}/{name}")
            };
            if kind.is_dir() {
                match open_dir_nofollow(&dir, Path::new(name)) {
                    Ok(child) => stack.push((path, child)),
                    Err(_) => left_out += 1,
                }
            } else if kind.is_file() {
                // Swapped for a link since the listing: refused here.
                let Ok(file) = dir.open_with(name, &read_options()) else {
                    left_out += 1;
                    continue;
                };
                let file = file.into_std();
                if !file.metadata().is_ok_and(|m| m.is_file()) {
                    left_out += 1;
                    continue;
                }
                visit(&path, &file).map_err(|e| WorkspaceError::io(&path, e))?;
            } else {
                left_out += 1;
            }
        }
    }
    Ok(left_out)
}

/// Adds up the sizes of the regular files beneath `root` without opening
/// them (an entry's own `lstat`).
fn walk_meta(root: &Dir, add: &mut dyn FnMut(u64)) -> Result<(), WorkspaceError> {
    let mut seen = 0usize;
    let mut stack = vec![root.try_clone().map_err(|e| WorkspaceError::io(".", e))?];
    while let Some(dir) = stack.pop() {
        for entry in dir.entries().map_err(|e| WorkspaceError::io(".", e))? {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(WorkspaceError::TooManyEntries);
            }
            let Ok(entry) = entry else { continue };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if let Ok(child) = open_dir_nofollow(&dir, Path::new(&entry.file_name())) {
                    stack.push(child);
                }
            } else if kind.is_file() {
                if let Ok(meta) = entry.metadata() {
                    add(meta.len());
                }
            }
        }
    }
    Ok(())
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
    let result = walk(&from.dir, &mut |path, file| {
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
}
