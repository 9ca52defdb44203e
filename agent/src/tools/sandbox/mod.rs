//! Sandboxed code: the `run_python` and `run_shell` work tools run the
//! model's code in the run's workspace under bubblewrap.
//!
//! Why bubblewrap: `bwrap` (Debian package `bubblewrap`) builds fresh
//! mount, pid, network, ipc and uts namespaces from plain command-line
//! flags, with no daemon and no image, and starts in about 10 ms. Nothing
//! here needs `unsafe` (the workspace forbids it): the namespaces are
//! bwrap's, the switch to an unprivileged user is util-linux's `setpriv`,
//! the resource limits are util-linux's `prlimit`, each run inside the jail
//! in front of the code.
//!
//! What the code sees: a read-only tmpfs as `/`; read-only binds of the
//! system (`/usr`, `/bin`, `/lib*`, `/sbin` and a handful of entries of
//! `/etc`: alternatives, ssl, ld.so.cache, localtime; not `/etc` itself,
//! so `/etc/shadow` and friends do not exist inside); a fresh `/proc` of its
//! own pid namespace; a minimal `/dev`; private, size-limited `/tmp` and
//! `/dev/shm`; and the workspace, bound read-write at `/workspace`, which
//! is also the current directory and `$HOME`. Nothing else of the host
//! (`/root`, `/home`, `/work`, the host's `/tmp`) is mounted. The network
//! namespace is empty, so there is no network, not even the host's
//! loopback. The environment is cleared and set anew.
//!
//! Who the code runs as: uid and gid 65534 (nobody) *on the host*, with no
//! capabilities and `no_new_privs`. The process-count limit
//! (`RLIMIT_NPROC`) is the fork-bomb guard, and the kernel does not apply
//! it to processes whose real uid is host root, even inside a user
//! namespace that maps them to 65534 (`bwrap --unshare-user --uid 65534`
//! run by root maps 65534 to host uid 0; checked on bwrap 0.8: 20
//! processes started under `--nproc=5`). So the jail has no user
//! namespace: bwrap, run by root, keeps only the capabilities needed to
//! switch users, and `setpriv` drops to host uid 65534 (clearing every
//! capability set) before `prlimit` sets the limits and executes the code.
//! Because of that, the workspace must belong to uid 65534: before each
//! run a second, smaller jail (root with only `CAP_CHOWN` and
//! `CAP_DAC_READ_SEARCH`, the same read-only system, the workspace as its
//! only writable mount) runs `chown -R -h 65534:65534 /workspace`. It is
//! done inside a jail so that a symlink planted in the workspace can never
//! lead the chown to a host file: everything a link could reach there is
//! read-only or private. The file tools and the server run as root and
//! reach the workspace only through [`crate::workspace`], which resolves
//! every name beneath one directory handle, so a link the code planted
//! never leads them out.
//!
//! The limits ([`SandboxLimits`]): CPU seconds (`SIGXCPU`, then `SIGKILL` a
//! second later), address space, processes (counted over every process of
//! uid 65534 on the host, so concurrent runs share them), file size
//! (`SIGXFSZ`; also the size of `/tmp` and `/dev/shm`), no core dumps, wall
//! time (bwrap is killed; the jail's pid 1 dies with it by
//! `--die-with-parent`, and with pid 1 every process of the pid
//! namespace), and output kept per stream (head and tail; the middle is
//! drained and counted, never stored). Disk use in the workspace has a
//! quota ([`crate::workspace::DEFAULT_QUOTA`]): code does not run while the
//! workspace is past it, so one call can pass it by at most what the
//! file-size and wall-time limits let it write. Not limited: the memory of
//! all processes together (there is no cgroup); the process and wall-time
//! limits bound it.
//!
//! A non-zero exit is a result the model must see, not a tool error; only
//! a sandbox that cannot start is a [`ToolError`].
//!
//!
//! # Layout
//! - here: [`SandboxLimits`] with their defaults, [`SandboxUnavailable`],
//!   and [`Sandbox`], which runs a program in a workspace
//!   ([`Sandbox::run`]): the jail started, both streams drained, the
//!   wall-time limit kept.
//! - `detect`: what the machine offers: bubblewrap and its helpers, root,
//!   python3 and the well-known packages, each proved by a probe jail once
//!   at start-up ([`Sandbox::detect`]).
//! - `jail`: bubblewrap's command line: namespaces, mounts, the cleared
//!   environment, capabilities, the user switch and the limits; and the
//!   smaller jail that hands the workspace to uid 65534.
//! - [`capture`]: the output kept per stream (head and tail), the
//!   [`capture::RunOutcome`] and its report, and the workspace's quota
//!   reckoned around a run.
//! - [`code`]: [`code::CodeTools`], the [`crate::tools::ToolBox`] offering
//!   `run_python` (when python3 runs here) and `run_shell`.

pub mod capture;
pub mod code;
mod detect;
mod jail;
#[cfg(test)]
mod tests;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::tools::ToolError;
use capture::{drain, Capture, RunOutcome};

/// The host uid (and gid) the sandboxed code runs as: `nobody`.
pub const SANDBOX_UID: u32 = 65534;

/// The shell `run_shell` uses.
pub const SHELL: &str = "/bin/sh";

/// Where the workspace appears inside the jail.
const WORKSPACE: &str = "/workspace";

const PRLIMIT: &str = "/usr/bin/prlimit";
const SETPRIV: &str = "/usr/bin/setpriv";
const CHOWN: &str = "/bin/chown";
/// Only a python under the bound system directories runs inside.
const PYTHON: &str = "/usr/bin/python3";
/// Where the data stack (`PLANBOARD_PYTHON_PACKAGES`) appears inside,
/// read-only, on python's path.
const PACKAGES: &str = "/opt/python-packages";
/// The variable naming a folder of python packages (a venv's
/// `site-packages`, built for the system's python3) that the jail mounts
/// read-only: `scripts/run` and `scripts/test` install pandas, numpy,
/// scipy, matplotlib and openpyxl there.
pub const PACKAGES_VAR: &str = "PLANBOARD_PYTHON_PACKAGES";

const MIB: u64 = 1024 * 1024;

/// The limits of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SandboxLimits {
    /// CPU time of each process.
    pub cpu_secs: u64,
    /// Address space of each process (`RLIMIT_AS`).
    pub memory_bytes: u64,
    /// Processes and threads of uid 65534 on the whole host.
    pub processes: u64,
    /// Largest file a process may write; also the size of `/tmp` and
    /// `/dev/shm` inside.
    pub file_bytes: u64,
    /// The whole run, from start to exit.
    pub wall: Duration,
    /// Bytes kept of stdout and of stderr each (first half and last half).
    pub output_bytes: usize,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        SandboxLimits {
            cpu_secs: 30,
            memory_bytes: 512 * MIB,
            processes: 64,
            file_bytes: 64 * MIB,
            wall: Duration::from_secs(60),
            output_bytes: 16 * 1024,
        }
    }
}

/// Why code cannot be run in a sandbox on this host.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the code sandbox is unavailable: {reason}")]
pub struct SandboxUnavailable {
    pub reason: String,
}

impl SandboxUnavailable {
    fn new(reason: impl Into<String>) -> SandboxUnavailable {
        SandboxUnavailable {
            reason: reason.into(),
        }
    }

    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// A working bubblewrap, the helpers it runs and the limits of every run.
#[derive(Clone, Debug)]
pub struct Sandbox {
    bwrap: PathBuf,
    python: Option<PathBuf>,
    /// Well-known packages python can import here, beyond the standard
    /// library (the model is told, so it does not reach for pandas where
    /// there is none).
    python_packages: Vec<String>,
    /// A folder of python packages mounted read-only at [`PACKAGES`].
    packages_dir: Option<PathBuf>,
    limits: SandboxLimits,
}

impl Sandbox {
    pub fn bwrap(&self) -> &Path {
        &self.bwrap
    }

    /// python3 when it is installed and runs in the jail.
    pub fn python(&self) -> Option<&Path> {
        self.python.as_deref()
    }

    pub fn limits(&self) -> &SandboxLimits {
        &self.limits
    }

    /// Runs `program` (an argv) in `workspace` under the limits. A program
    /// that fails, is killed or times out is an `Ok` outcome; only a
    /// sandbox that cannot start is an error.
    pub async fn run(
        &self,
        workspace: &Path,
        program: Vec<String>,
    ) -> Result<RunOutcome, ToolError> {
        self.run_within(workspace, program, self.limits.file_bytes, None)
            .await
    }

    /// [`Sandbox::run`], no file growing past `file_bytes` (at most the
    /// limit's): what the workspace's quota has left, so a write that
    /// would pass it fails inside the code (`EFBIG`, or `SIGXFSZ`).
    ///
    /// `stop`, when it resolves, stops the code there (a watchdog: the
    /// workspace passed its quota); its sentence is the outcome's
    /// `stopped`.
    pub async fn run_within(
        &self,
        workspace: &Path,
        program: Vec<String>,
        file_bytes: u64,
        stop: Option<futures_util::future::BoxFuture<'static, String>>,
    ) -> Result<RunOutcome, ToolError> {
        let file_bytes = file_bytes.min(self.limits.file_bytes);
        if program.is_empty() {
            return Err(ToolError::refused("there is no program to run"));
        }
        if program.iter().any(|arg| arg.contains('\0')) {
            return Err(ToolError::refused(
                "the code contains a NUL character, which a program's arguments cannot carry",
            ));
        }
        let workspace = tokio::fs::canonicalize(workspace).await.map_err(|e| {
            ToolError::refused(format!(
                "the workspace {} cannot be used: {e}",
                workspace.display()
            ))
        })?;
        if !tokio::fs::metadata(&workspace)
            .await
            .is_ok_and(|m| m.is_dir())
        {
            return Err(ToolError::refused(format!(
                "the workspace {} is not a directory",
                workspace.display()
            )));
        }
        self.adopt(&workspace).await;

        let mut command = tokio::process::Command::new(&self.bwrap);
        command
            .args(self.jail_args_with(Some(&workspace), &program, file_bytes))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let started = Instant::now();
        let mut child = command.spawn().map_err(|e| {
            ToolError::refused(format!(
                "the sandbox did not start ({}): {e}",
                self.bwrap.display()
            ))
        })?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(ToolError::refused(
                "the sandbox started without its output pipes",
            ));
        };
        // Both streams are drained to the end while the child runs, so a
        // full pipe never blocks it; the captures live out here so that a
        // run stopped at the wall-time limit still shows what it printed.
        let mut out = Capture::new(self.limits.output_bytes);
        let mut err = Capture::new(self.limits.output_bytes);
        let mut stopped = None;
        let finished = tokio::time::timeout(self.limits.wall, async {
            let run = async {
                let (_, _, status) = tokio::join!(
                    drain(stdout, &mut out),
                    drain(stderr, &mut err),
                    child.wait()
                );
                status
            };
            let watch = async {
                match stop {
                    Some(stop) => stop.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                status = run => Some(status),
                why = watch => {
                    stopped = Some(why);
                    None
                }
            }
        })
        .await;
        let timed_out = finished.is_err();
        let status = match finished {
            Ok(Some(status)) => status,
            _ => {
                // SIGKILL to bwrap; the jail's pid 1 has bwrap as parent
                // and `--die-with-parent`, and the kernel kills every
                // process of a pid namespace whose pid 1 dies.
                if let Err(e) = child.start_kill() {
                    tracing::warn!("the sandbox could not be killed: {e}");
                }
                child.wait().await
            }
        }
        .map_err(|e| ToolError::refused(format!("waiting for the sandbox failed: {e}")))?;
        let duration = started.elapsed();

        let exit_code = status.code();
        // bwrap exits with 128 + n when the code was killed by signal n.
        let signal = status.signal().or_else(|| {
            exit_code
                .filter(|code| (129..=159).contains(code))
                .map(|code| code - 128)
        });
        let (stdout, stdout_cut) = out.finish();
        let (stderr, stderr_cut) = err.finish();
        if !timed_out && exit_code == Some(1) && stderr.starts_with("bwrap: ") {
            return Err(ToolError::refused(format!(
                "the sandbox did not start: {}",
                stderr.trim()
            )));
        }
        Ok(RunOutcome {
            exit_code,
            signal,
            timed_out,
            stopped,
            duration,
            stdout,
            stderr,
            stdout_cut,
            stderr_cut,
            limits: self.limits,
        })
    }
}
