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
//! # Layout
//! - [`SandboxLimits`]: the limits, with defaults.
//! - [`Sandbox`]: finds and probes bubblewrap once ([`Sandbox::detect`],
//!   or [`SandboxUnavailable`] with the reason), builds the jail's
//!   arguments and runs a program in a workspace ([`Sandbox::run`]).
//! - [`RunOutcome`]: exit status, signal, time, the kept output and the
//!   report the model reads.
//! - [`CodeTools`]: the [`ToolBox`] offering `run_python` (when python3 is
//!   installed) and `run_shell` in one workspace.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncRead, ReadBuf};

use crate::protocol::ToolSpec;
use crate::run::ToolPolicy;
use crate::tools::{ToolBox, ToolError};
use crate::workspace::Workspace;

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

/// Read-only system directories; `--ro-bind-try` skips the missing ones.
const SYSTEM_DIRS: [&str; 6] = ["/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin"];

/// The entries of `/etc` programs need; never `/etc` itself, whose other
/// files (`shadow`, keys, the host's configuration) stay invisible.
/// `/etc/fonts`: without it every matplotlib import wrote "Fontconfig
/// error: Cannot load default config file" to stderr, which the model then
/// reported as what its result lacked.
const ETC_ENTRIES: [&str; 5] = [
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/fonts",
];

/// The whole environment inside (after `--clearenv`). `USER` keeps
/// `getpass.getuser()` working without an `/etc/passwd`; unbuffered python
/// output survives a kill at the wall-time limit.
const ENV: [(&str, &str); 7] = [
    ("PATH", "/usr/bin:/bin"),
    ("HOME", WORKSPACE),
    ("LANG", "C.UTF-8"),
    ("USER", "nobody"),
    ("TMPDIR", "/tmp"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PYTHONUNBUFFERED", "1"),
];

/// What bwrap, as root, keeps until `setpriv` drops to uid 65534: the user
/// switch itself, `SETPCAP` to empty the bounding set, and
/// `DAC_READ_SEARCH` so that root can enter the workspace (mode 0700,
/// owned by 65534) for `--chdir`. All are gone once the uids are 65534.
const RUN_CAPS: [&str; 4] = [
    "CAP_SETUID",
    "CAP_SETGID",
    "CAP_SETPCAP",
    "CAP_DAC_READ_SEARCH",
];

/// Handing the workspace to uid 65534 should take milliseconds.
const ADOPT_TIMEOUT: Duration = Duration::from_secs(30);

const CODE_MAX_CHARS: usize = 20_000;
const COMMAND_MAX_CHARS: usize = 4_000;

/// Bytes read from a pipe at a time.
const READ_CHUNK: usize = 64 * 1024;

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

/// The packages a model reaches for first; each one found is named in
/// `run_python`'s description, and their absence too.
const WELL_KNOWN: [&str; 5] = ["numpy", "pandas", "scipy", "matplotlib", "openpyxl"];

impl Sandbox {
    /// Finds bubblewrap and its helpers and proves that a jail starts here
    /// and runs code as uid 65534. Blocking (three short processes); call
    /// it once at start-up.
    ///
    /// The data stack is the folder `PLANBOARD_PYTHON_PACKAGES` names, when
    /// it is a folder ([`Sandbox::detect_with`] takes it as an argument).
    pub fn detect(limits: SandboxLimits) -> Result<Sandbox, SandboxUnavailable> {
        let packages = std::env::var_os(PACKAGES_VAR)
            .map(PathBuf::from)
            .filter(|p| p.is_dir());
        Sandbox::detect_with(limits, packages)
    }

    /// [`Sandbox::detect`] with `packages` (a folder of python packages
    /// for the system's python3) mounted read-only on python's path.
    pub fn detect_with(
        limits: SandboxLimits,
        packages: Option<PathBuf>,
    ) -> Result<Sandbox, SandboxUnavailable> {
        let bwrap = find_bwrap().ok_or_else(|| {
            SandboxUnavailable::new("bubblewrap is not installed (Debian package bubblewrap)")
        })?;
        match effective_uid() {
            Some(0) => {}
            Some(uid) => {
                return Err(SandboxUnavailable::new(format!(
                    "the sandbox runs code as uid {SANDBOX_UID} and needs root to switch to it; \
                     this process runs as uid {uid}"
                )))
            }
            None => {
                return Err(SandboxUnavailable::new(
                    "this process's uid cannot be read from /proc/self/status",
                ))
            }
        }
        for (path, package) in [
            (PRLIMIT, "util-linux"),
            (SETPRIV, "util-linux"),
            (CHOWN, "coreutils"),
            (SHELL, "dash"),
        ] {
            if !Path::new(path).is_file() {
                return Err(SandboxUnavailable::new(format!(
                    "{path} is missing (Debian package {package})"
                )));
            }
        }
        let mut sandbox = Sandbox {
            bwrap,
            python: None,
            python_packages: Vec::new(),
            packages_dir: packages,
            limits,
        };
        let id = sandbox.probe(
            &sandbox.jail_args(None, &["id".to_string(), "-u".to_string()]),
            "create its namespaces",
        )?;
        if id.trim().parse::<u32>().ok() != Some(SANDBOX_UID) {
            return Err(SandboxUnavailable::new(format!(
                "the sandboxed code ran as uid {}, not {SANDBOX_UID}",
                id.trim()
            )));
        }
        sandbox.probe(&adopt_args(None), "hand the workspace to the sandbox user")?;
        if Path::new(PYTHON).is_file() {
            let program = [PYTHON.to_string(), "-c".to_string(), "pass".to_string()];
            match sandbox.probe(&sandbox.jail_args(None, &program), "run python3") {
                Ok(_) => sandbox.python = Some(PathBuf::from(PYTHON)),
                Err(e) => tracing::warn!("run_python is off: {e}"),
            }
            if sandbox.python.is_some() {
                let find = format!(
                    "import importlib.util as u\nfor m in {WELL_KNOWN:?}:\n    print(m) if u.find_spec(m) else None"
                );
                let program = [PYTHON.to_string(), "-c".to_string(), find];
                if let Ok(found) =
                    sandbox.probe(&sandbox.jail_args(None, &program), "list packages")
                {
                    sandbox.python_packages = found.lines().map(str::to_string).collect();
                }
            }
        }
        Ok(sandbox)
    }

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

    /// Runs bwrap with `args` and returns its stdout, or why it failed.
    fn probe(&self, args: &[OsString], what: &str) -> Result<String, SandboxUnavailable> {
        let output = std::process::Command::new(&self.bwrap)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                SandboxUnavailable::new(format!(
                    "bubblewrap ({}) does not start: {e}",
                    self.bwrap.display()
                ))
            })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let detail: String = match stderr.trim() {
                "" => output.status.to_string(),
                text => text.chars().take(400).collect(),
            };
            return Err(SandboxUnavailable::new(format!(
                "bubblewrap cannot {what} here: {detail}"
            )));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// The bwrap arguments that run `program` (an argv; the first word is
    /// looked up on the jail's `PATH`) in `workspace`.
    #[cfg(test)]
    fn bwrap_args(&self, workspace: &Path, program: &[String]) -> Vec<OsString> {
        self.jail_args(Some(workspace), program)
    }

    /// The jail; without a workspace (the start-up probes) an empty tmpfs
    /// stands in for it.
    fn jail_args(&self, workspace: Option<&Path>, program: &[String]) -> Vec<OsString> {
        self.jail_args_with(workspace, program, self.limits.file_bytes)
    }

    /// [`Sandbox::jail_args`] with the largest file the code may write
    /// (`--fsize`) set to `file_bytes`.
    fn jail_args_with(
        &self,
        workspace: Option<&Path>,
        program: &[String],
        file_bytes: u64,
    ) -> Vec<OsString> {
        let limits = &self.limits;
        let scratch = limits.file_bytes.to_string();
        let mut args = system_args();
        push(
            &mut args,
            &[
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                "--perms",
                "1777",
                "--size",
                scratch.as_str(),
                "--tmpfs",
                "/dev/shm",
                "--perms",
                "1777",
                "--size",
                scratch.as_str(),
                "--tmpfs",
                "/tmp",
            ],
        );
        mount_workspace(&mut args, workspace);
        if let Some(dir) = &self.packages_dir {
            // Read-only: code may import the stack, never change it for
            // the next run. matplotlib draws without a display and keeps
            // its cache in the private /tmp.
            // bwrap would create /opt as 0700 root, closed to uid 65534.
            push(&mut args, &["--perms", "0755", "--dir", "/opt"]);
            args.push("--ro-bind".into());
            args.push(dir.as_os_str().to_owned());
            args.push(PACKAGES.into());
            push(
                &mut args,
                &[
                    "--setenv",
                    "PYTHONPATH",
                    PACKAGES,
                    "--setenv",
                    "MPLBACKEND",
                    "Agg",
                    "--setenv",
                    "MPLCONFIGDIR",
                    "/tmp",
                ],
            );
        }
        // After every mount: the root tmpfs (where bwrap made the mount
        // points) turns read-only, so nothing can be created next to them.
        push(
            &mut args,
            &[
                "--chdir",
                WORKSPACE,
                "--remount-ro",
                "/",
                "--cap-drop",
                "ALL",
            ],
        );
        for cap in RUN_CAPS {
            push(&mut args, &["--cap-add", cap]);
        }
        let uid = format!("--reuid={SANDBOX_UID}");
        let gid = format!("--regid={SANDBOX_UID}");
        // The soft CPU limit sends SIGXCPU (a clear report); the hard one,
        // a second later, SIGKILL for code that catches it.
        let cpu = format!(
            "--cpu={}:{}",
            limits.cpu_secs,
            limits.cpu_secs.saturating_add(1)
        );
        let memory = format!("--as={}", limits.memory_bytes);
        let processes = format!("--nproc={}", limits.processes);
        let file = format!("--fsize={file_bytes}");
        push(
            &mut args,
            &[
                SETPRIV,
                uid.as_str(),
                gid.as_str(),
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--",
                PRLIMIT,
                cpu.as_str(),
                memory.as_str(),
                processes.as_str(),
                file.as_str(),
                "--core=0",
                "--",
            ],
        );
        args.extend(program.iter().map(OsString::from));
        args
    }

    /// Gives everything in the workspace to uid 65534 (see the module
    /// comment). A failure is logged: the run still starts and reports
    /// whatever it cannot write.
    async fn adopt(&self, workspace: &Path) {
        let mut command = tokio::process::Command::new(&self.bwrap);
        command
            .args(adopt_args(Some(workspace)))
            .stdin(Stdio::null())
            .kill_on_drop(true);
        match tokio::time::timeout(ADOPT_TIMEOUT, command.output()).await {
            Ok(Ok(output)) if output.status.success() => {}
            Ok(Ok(output)) => {
                let stderr = String::from_utf8_lossy(&output.stderr);
                tracing::warn!(
                    "the sandbox user could not be given all of {}: {}",
                    workspace.display(),
                    stderr.trim()
                );
            }
            Ok(Err(e)) => tracing::warn!(
                "the sandbox user could not be given {}: {e}",
                workspace.display()
            ),
            Err(_) => tracing::warn!(
                "giving {} to the sandbox user took longer than {} and was stopped",
                workspace.display(),
                seconds(ADOPT_TIMEOUT)
            ),
        }
    }

    /// Runs `program` (an argv) in `workspace` under the limits. A program
    /// that fails, is killed or times out is an `Ok` outcome; only a
    /// sandbox that cannot start is an error.
    pub async fn run(
        &self,
        workspace: &Path,
        program: Vec<String>,
    ) -> Result<RunOutcome, ToolError> {
        self.run_within(workspace, program, self.limits.file_bytes)
            .await
    }

    /// [`Sandbox::run`], no file growing past `file_bytes` (at most the
    /// limit's): what the workspace's quota has left, so a write that
    /// would pass it fails inside the code (`EFBIG`, or `SIGXFSZ`).
    pub async fn run_within(
        &self,
        workspace: &Path,
        program: Vec<String>,
        file_bytes: u64,
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
        let finished = tokio::time::timeout(self.limits.wall, async {
            let (_, _, status) = tokio::join!(
                drain(stdout, &mut out),
                drain(stderr, &mut err),
                child.wait()
            );
            status
        })
        .await;
        let timed_out = finished.is_err();
        let status = match finished {
            Ok(status) => status,
            Err(_) => {
                // SIGKILL to bwrap; the jail's pid 1 has bwrap as parent
                // and `--die-with-parent`, and the kernel kills every
                // process of a pid namespace whose pid 1 dies.
                if let Err(e) = child.start_kill() {
                    tracing::warn!("the sandbox could not be killed at its wall-time limit: {e}");
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
            duration,
            stdout,
            stderr,
            stdout_cut,
            stderr_cut,
            limits: self.limits,
        })
    }
}

/// bwrap on `PATH` (absolute entries only) or in /usr/bin.
fn find_bwrap() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("bwrap"))
            .find(|candidate| candidate.is_file())
    });
    on_path.or_else(|| {
        let usual = PathBuf::from("/usr/bin/bwrap");
        usual.is_file().then_some(usual)
    })
}

/// The effective uid, from `/proc/self/status` (no libc, no unsafe).
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("Uid:"))?;
    // "Uid:  real  effective  saved  filesystem"
    line.split_whitespace().nth(2)?.parse().ok()
}

fn push(args: &mut Vec<OsString>, items: &[&str]) {
    args.extend(items.iter().map(|item| OsString::from(*item)));
}

/// What every jail here shares: the namespaces (no user namespace, see
/// the module comment), a fresh environment and the read-only system.
fn system_args() -> Vec<OsString> {
    let mut args = Vec::new();
    push(
        &mut args,
        &[
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            // Killed with its parent (the server); its own session, so it
            // cannot reach the server's terminal.
            "--die-with-parent",
            "--new-session",
            "--clearenv",
        ],
    );
    for (name, value) in ENV {
        push(&mut args, &["--setenv", name, value]);
    }
    for dir in SYSTEM_DIRS {
        push(&mut args, &["--ro-bind-try", dir, dir]);
    }
    // bwrap would create /etc as 0700 root, unreadable for uid 65534.
    push(&mut args, &["--perms", "0755", "--dir", "/etc"]);
    for entry in ETC_ENTRIES {
        push(&mut args, &["--ro-bind-try", entry, entry]);
    }
    args
}

fn mount_workspace(args: &mut Vec<OsString>, workspace: Option<&Path>) {
    match workspace {
        Some(dir) => {
            args.push("--bind".into());
            args.push(dir.as_os_str().to_owned());
            args.push(WORKSPACE.into());
        }
        None => push(args, &["--tmpfs", WORKSPACE]),
    }
}

/// The jail that gives the workspace to uid 65534: root with only
/// `CAP_CHOWN` and `CAP_DAC_READ_SEARCH`, no `/proc`, no `/dev`, the
/// workspace its only writable mount. `-R` without `-L` never follows a
/// symlink, `-h` changes the link itself.
fn adopt_args(workspace: Option<&Path>) -> Vec<OsString> {
    let mut args = system_args();
    mount_workspace(&mut args, workspace);
    let owner = format!("{SANDBOX_UID}:{SANDBOX_UID}");
    push(
        &mut args,
        &[
            "--chdir",
            "/",
            "--remount-ro",
            "/",
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_CHOWN",
            "--cap-add",
            "CAP_DAC_READ_SEARCH",
            CHOWN,
            "-R",
            "-h",
            owner.as_str(),
            WORKSPACE,
        ],
    );
    args
}

/// One output stream as kept: the first half of the allowance, the last
/// half, and how many bytes in between were read and dropped. Memory stays
/// below twice the allowance plus one chunk however much is written.
struct Capture {
    head: Vec<u8>,
    tail: Vec<u8>,
    head_cap: usize,
    tail_cap: usize,
    cut: u64,
}

impl Capture {
    fn new(limit: usize) -> Capture {
        let head_cap = limit.div_ceil(2);
        Capture {
            head: Vec::new(),
            tail: Vec::new(),
            head_cap,
            tail_cap: limit - head_cap,
            cut: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        let room = self.head_cap - self.head.len();
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        if rest.is_empty() {
            return;
        }
        if self.tail_cap == 0 {
            self.cut += rest.len() as u64;
            return;
        }
        self.tail.extend_from_slice(rest);
        // Trimmed in batches, not on every chunk.
        if self.tail.len() > 2 * self.tail_cap {
            self.trim();
        }
    }

    fn trim(&mut self) {
        let excess = self.tail.len().saturating_sub(self.tail_cap);
        if excess > 0 {
            self.tail.copy_within(excess.., 0);
            self.tail.truncate(self.tail_cap);
            self.cut += excess as u64;
        }
    }

    /// The kept text (invalid UTF-8 replaced) with a note where bytes were
    /// cut, and the number cut.
    fn finish(mut self) -> (String, u64) {
        self.trim();
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.cut > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("[… {} bytes cut …]\n", self.cut));
        }
        text.push_str(&String::from_utf8_lossy(&self.tail));
        (text, self.cut)
    }
}

/// Reads `pipe` to its end into `capture`. A read error ends the stream
/// (what was read is kept).
async fn drain<R: AsyncRead + Unpin>(mut pipe: R, capture: &mut Capture) {
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        let read = std::future::poll_fn(|cx| {
            let mut buf = ReadBuf::new(chunk.as_mut_slice());
            Pin::new(&mut pipe)
                .poll_read(cx, &mut buf)
                .map_ok(|()| buf.filled().len())
        })
        .await;
        match read {
            Ok(0) => break,
            Ok(n) => capture.push(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// How one run ended, with its kept output.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// bwrap's exit status: the code's, or 128 + n when the code was
    /// killed by signal n.
    pub exit_code: Option<i32>,
    /// The signal that ended the code (or bwrap itself).
    pub signal: Option<i32>,
    /// Stopped at the wall-time limit.
    pub timed_out: bool,
    pub duration: Duration,
    pub stdout: String,
    pub stderr: String,
    /// Bytes of stdout read but not kept.
    pub stdout_cut: u64,
    pub stderr_cut: u64,
    /// The limits it ran under, for the report.
    pub limits: SandboxLimits,
}

impl RunOutcome {
    /// What the model reads: how it ended, then stdout and stderr.
    pub fn report(&self) -> String {
        let took = format!("{:.2} s", self.duration.as_secs_f64());
        let mut text = if self.timed_out {
            format!(
                "killed: wall-time limit of {} reached ({took})",
                seconds(self.limits.wall)
            )
        } else if let Some(signal) = self.signal {
            let why = signal_note(signal, &self.limits);
            match self.exit_code {
                Some(code) => {
                    format!("killed by signal {signal} ({why}), exit status {code} ({took})")
                }
                None => format!("killed by signal {signal} ({why}) ({took})"),
            }
        } else {
            match self.exit_code {
                Some(code) => format!("exit status {code} ({took})"),
                None => format!("ended without an exit status ({took})"),
            }
        };
        text.push('\n');
        section(&mut text, "stdout", &self.stdout);
        section(&mut text, "stderr", &self.stderr);
        text.truncate(text.trim_end().len());
        text
    }
}

fn section(text: &mut String, name: &str, body: &str) {
    text.push_str("--- ");
    text.push_str(name);
    text.push_str(" ---\n");
    if body.is_empty() {
        text.push_str("(empty)\n");
    } else {
        text.push_str(body);
        if !body.ends_with('\n') {
            text.push('\n');
        }
    }
}

fn signal_note(signal: i32, limits: &SandboxLimits) -> String {
    match signal {
        9 => format!(
            "SIGKILL; the CPU-time limit of {} s, or out of memory?",
            limits.cpu_secs
        ),
        24 => format!(
            "SIGXCPU: the CPU-time limit of {} s was reached",
            limits.cpu_secs
        ),
        25 => format!(
            "SIGXFSZ: a file reached the size limit of {}",
            bytes(limits.file_bytes)
        ),
        other => signal_name(other).to_string(),
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => "an unusual signal",
    }
}

/// "60 s", "2.5 s".
fn seconds(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// "512 MiB", or bytes when not a whole number of MiB.
fn bytes(n: u64) -> String {
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else {
        format!("{n} bytes")
    }
}

/// `run_python` and `run_shell` in one workspace.
pub struct CodeTools {
    sandbox: Arc<Sandbox>,
    workspace: Workspace,
}

impl CodeTools {
    /// Creates the directory if needed.
    pub fn new(sandbox: Arc<Sandbox>, root: impl Into<PathBuf>) -> std::io::Result<CodeTools> {
        Ok(CodeTools::on(sandbox, Workspace::create(root)?))
    }

    /// The tools on an opened workspace (whose quota they keep).
    pub fn on(sandbox: Arc<Sandbox>, workspace: Workspace) -> CodeTools {
        CodeTools { sandbox, workspace }
    }

    pub fn root(&self) -> &Path {
        self.workspace.root()
    }

    /// The workspace's disk use, or `None` when it cannot be measured.
    async fn usage(&self) -> Option<u64> {
        let ws = self.workspace.clone();
        tokio::task::spawn_blocking(move || ws.usage().ok())
            .await
            .ok()
            .flatten()
    }

    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// What python can import, as `run_python`'s description says it.
    fn packages_sentence(&self) -> String {
        let found = &self.sandbox.python_packages;
        let missing: Vec<&str> = WELL_KNOWN
            .iter()
            .copied()
            .filter(|m| !found.iter().any(|f| f == m))
            .collect();
        match (found.is_empty(), missing.is_empty()) {
            (true, _) => format!(
                "Only the standard library is installed (csv, json, statistics, math, re, \
                 datetime…): no {}.",
                missing.join(", no ")
            ),
            (false, true) => format!("The standard library and {}.", found.join(", ")),
            (false, false) => format!(
                "The standard library and {}; not {}.",
                found.join(", "),
                missing.join(", ")
            ),
        }
    }

    /// The limits, as the tool descriptions state them.
    fn limits_sentence(&self) -> String {
        let limits = self.sandbox.limits();
        format!(
            "Limits: {} wall time, {} s CPU, {} of memory per process, {} per file; \
             the middle of output longer than {} per stream is cut.",
            seconds(limits.wall),
            limits.cpu_secs,
            bytes(limits.memory_bytes),
            bytes(limits.file_bytes),
            bytes(limits.output_bytes as u64)
        )
    }
}

fn string_arg<'a>(
    arguments: &'a Value,
    name: &str,
    max_chars: usize,
) -> Result<&'a str, ToolError> {
    let value = arguments
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::refused(format!("the argument {name} (a string) is missing")))?;
    if value.trim().is_empty() {
        return Err(ToolError::refused(format!("the argument {name} is empty")));
    }
    let chars = value.chars().count();
    if chars > max_chars {
        return Err(ToolError::refused(format!(
            "the argument {name} has {chars} characters; at most {max_chars} are accepted"
        )));
    }
    Ok(value)
}

#[async_trait::async_trait]
impl ToolBox for CodeTools {
    /// One default for both: `run_python` can do whatever `run_shell`
    /// can (`subprocess`), in the same jail, so a stricter shell guarded
    /// nothing. Both are `auto` because the jail is the guard (no network,
    /// uid 65534, the workspace the only writable place, limits), and
    /// asking a person to read every snippet of a data task teaches them
    /// to approve without reading. An operator who wants to see each one
    /// sets `PLANBOARD_TOOL_POLICY=run_python=ask,run_shell=ask`; a run
    /// may tighten that, never loosen it.
    fn default_policy(&self, _name: &str) -> ToolPolicy {
        ToolPolicy::Auto
    }

    fn specs(&self) -> Vec<ToolSpec> {
        let limits = self.limits_sentence();
        let mut specs = Vec::new();
        if self.sandbox.python().is_some() {
            specs.push(ToolSpec {
                name: "run_python".into(),
                description: format!(
                    "Runs Python 3 code (as `python3 -c`) in the run's workspace, which is the \
                     current directory: files it writes there are artifacts of the run. No \
                     network access. {} Returns the exit status, stdout and stderr; print \
                     what you need to see. {limits}",
                    self.packages_sentence()
                ),
                parameters: json!({
                    "type": "object",
                    "properties": {"code": {"type": "string", "maxLength": CODE_MAX_CHARS}},
                    "required": ["code"],
                }),
            });
        }
        specs.push(ToolSpec {
            name: "run_shell".into(),
            description: format!(
                "Runs a shell command (`/bin/sh -c`) in the run's workspace, which is the \
                 current directory: files it writes there are artifacts of the run. No network \
                 access; the usual command-line tools. Returns the exit status, stdout and \
                 stderr. {limits}"
            ),
            parameters: json!({
                "type": "object",
                "properties": {"command": {"type": "string", "maxLength": COMMAND_MAX_CHARS}},
                "required": ["command"],
            }),
        });
        specs
    }

    async fn call(&self, name: &str, arguments: &Value) -> Result<String, ToolError> {
        let program = match name {
            "run_python" => {
                let python = self.sandbox.python().ok_or_else(|| {
                    ToolError::refused("run_python is not available: python3 is not installed")
                })?;
                let code = string_arg(arguments, "code", CODE_MAX_CHARS)?;
                // Not `-I`: the environment is already clean, and modules
                // the code wrote in the workspace should import. The code
                // runs under SHOW_LAST, as a notebook cell does.
                vec![
                    python.to_string_lossy().into_owned(),
                    "-c".to_string(),
                    SHOW_LAST.to_string(),
                    code.to_string(),
                ]
            }
            "run_shell" => {
                let command = string_arg(arguments, "command", COMMAND_MAX_CHARS)?;
                vec![SHELL.to_string(), "-c".to_string(), command.to_string()]
            }
            other => {
                return Err(ToolError::refused(format!(
                    "there is no code tool named {other}"
                )))
            }
        };
        // The quota: code does not run while the workspace is past it (one
        // call can go past it by at most what the file-size and wall-time
        // limits let it write).
        let quota = self.workspace.quota();
        let before = self.usage().await;
        if let Some(used) = before.filter(|used| *used > quota) {
            return Err(ToolError::refused(format!(
                "the workspace holds {used} bytes, past its quota of {quota} bytes: code does not \
                 run until a person removes files or raises the quota \
                 (PLANBOARD_WORKSPACE_QUOTA_MB)"
            )));
        }
        // No file of this call may grow past what the quota has left.
        let left = before.map_or(u64::MAX, |used| quota.saturating_sub(used));
        let outcome = self.sandbox.run_within(self.root(), program, left).await?;
        tracing::info!(
            "{name} in {}: exit {:?}, signal {:?}, timed out {}, {:.2} s",
            self.root().display(),
            outcome.exit_code,
            outcome.signal,
            outcome.timed_out,
            outcome.duration.as_secs_f64()
        );
        let mut report = outcome.report();
        // Qwen2.5-1.5B imported pandas on every attempt, the description
        // and the earlier failures notwithstanding: the tool says it at the
        // point of failure, with what to do instead.
        if let Some(module) = missing_module(&outcome.stderr) {
            report.push_str(&format!(
                "\n--- note ---\n{module} is not installed here and cannot be installed (no \
                 network). {} Rewrite the code without {module}.",
                self.packages_sentence()
            ));
        }
        let after = self.usage().await;
        if let Some(note) = (name == "run_python")
            .then(|| python_note(&outcome, before != after))
            .flatten()
        {
            report.push_str("\n--- note ---\n");
            report.push_str(note);
        }
        if let Some(used) = after.filter(|used| *used > quota) {
            report.push_str(&format!(
                "\n--- note ---\nThe workspace now holds {used} bytes, past its quota of {quota} \
                 bytes: later writes are refused and code does not run again."
            ));
        } else if left < self.sandbox.limits().file_bytes
            && (outcome.signal == Some(25) || outcome.stderr.contains("File too large"))
        {
            report.push_str(&format!(
                "\n--- note ---\nA file would have passed the workspace's quota of {quota} \
                 bytes ({left} bytes were left), so the write failed: remove files or write \
                 less (PLANBOARD_WORKSPACE_QUOTA_MB)."
            ));
        }
        Ok(report)
    }
}

/// Runs the code (`sys.argv[1]`) as a notebook cell runs: when its last
/// statement is an expression, its value is printed (Qwen2.5-1.5B wrote
/// `sum(int(d) for d in str(2**100))` and, shown nothing, answered a
/// guess). Tracebacks start at the code, not at this runner; the code sees
/// `sys.argv == ['-c']` as under `python3 -c`. Code that does not parse
/// because a one-line string literal holds a line break (a `\n` the model
/// left unescaped in its JSON: it wrote `f.write(w + '\n')` four times
/// after being told) has that break read as `\n`, and stderr says so;
/// code that parses is never changed.
const SHOW_LAST: &str = r#"import ast, sys, traceback
src = sys.argv[1]
sys.argv = ['-c']
mended = 0
while True:
    try:
        tree = ast.parse(src, '<code>', 'exec')
        break
    except SyntaxError as e:
        lines = src.split('\n')
        n = (e.lineno or 0) - 1
        if 'unterminated string literal' in str(e.msg) and 0 <= n < len(lines) - 1 and mended < 50:
            lines[n:n + 2] = [lines[n] + '\\n' + lines[n + 1]]
            src = '\n'.join(lines)
            mended += 1
            continue
        traceback.print_exception(type(e), e, None)
        sys.exit(1)
if mended:
    print(f'(planboard: read {mended} line break(s) inside string literals as \\n)', file=sys.stderr)
last = None
if tree.body and isinstance(tree.body[-1], ast.Expr):
    last = ast.Expression(tree.body.pop().value)
scope = {'__name__': '__main__', '__builtins__': __builtins__}
try:
    exec(compile(tree, '<code>', 'exec'), scope)
    if last is not None:
        value = eval(compile(last, '<code>', 'eval'), scope)
        if value is not None:
            print(repr(value))
except SystemExit:
    raise
except BaseException as e:
    traceback.print_exception(type(e), e, e.__traceback__.tb_next)
    sys.exit(1)
"#;

/// What the model should know about a Python run it would otherwise
/// misread (Qwen2.5-1.5B answered "1" after code whose last line was an
/// expression printed nothing, and wrote `'\n'` in its JSON three times,
/// which puts a line break inside a Python string).
/// `wrote`: the workspace changed (code that writes a file and prints
/// nothing has done its work: Qwen2.5-1.5B, told "nothing was printed",
/// failed a subtask whose file was right).
fn python_note(outcome: &RunOutcome, wrote: bool) -> Option<&'static str> {
    let quiet = outcome.stdout.trim().is_empty() && outcome.stderr.trim().is_empty();
    if outcome.exit_code == Some(0) && quiet && !wrote {
        return Some("Nothing was printed and no file changed: print() what you need to see.");
    }
    let broken_string = [
        "unterminated string literal",
        "EOL while scanning string literal",
    ];
    if broken_string.iter().any(|m| outcome.stderr.contains(m)) {
        return Some(
            "A string literal in the code holds a line break. In the JSON of your call, a \
             newline inside a Python string is written \\\\n (two backslashes and n), so the \
             code receives \\n; or join lines with chr(10).",
        );
    }
    None
}

/// The module a Python traceback says is missing (`No module named 'x'`),
/// its top-level name.
fn missing_module(stderr: &str) -> Option<&str> {
    let rest = stderr
        .split("ModuleNotFoundError: No module named '")
        .nth(1)?;
    let name = rest.split('\'').next()?;
    let top = name.split('.').next()?;
    (!top.is_empty()).then_some(top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_missing_module_is_read_from_the_traceback() {
        let stderr = "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nModuleNotFoundError: No module named 'pandas'\n";
        assert_eq!(missing_module(stderr), Some("pandas"));
        assert_eq!(
            missing_module("ModuleNotFoundError: No module named 'matplotlib.pyplot'"),
            Some("matplotlib")
        );
        assert_eq!(missing_module("NameError: name 'x' is not defined"), None);
        assert_eq!(
            missing_module("ModuleNotFoundError: No module named ''"),
            None
        );
    }

    /// The sandbox, or `None` (the test is skipped) when this host has none
    /// and PLANBOARD_REQUIRE_SANDBOX is unset; with it set, a missing
    /// sandbox fails the test.
    fn sandbox_or_skip(limits: SandboxLimits) -> Option<Sandbox> {
        match Sandbox::detect(limits) {
            Ok(sandbox) => Some(sandbox),
            Err(e) if std::env::var_os("PLANBOARD_REQUIRE_SANDBOX").is_none() => {
                eprintln!("skipped (set PLANBOARD_REQUIRE_SANDBOX to fail instead): {e}");
                None
            }
            Err(e) => panic!("PLANBOARD_REQUIRE_SANDBOX is set, but {e}"),
        }
    }

    /// A sandbox that is never started: for the pure tests.
    fn unprobed() -> Sandbox {
        Sandbox {
            bwrap: PathBuf::from("/usr/bin/bwrap"),
            python: Some(PathBuf::from(PYTHON)),
            python_packages: vec!["numpy".into()],
            packages_dir: None,
            limits: SandboxLimits::default(),
        }
    }

    fn outcome(exit: i32, stdout: &str, stderr: &str) -> RunOutcome {
        RunOutcome {
            exit_code: Some(exit),
            signal: None,
            timed_out: false,
            duration: Duration::from_millis(10),
            stdout: stdout.into(),
            stderr: stderr.into(),
            stdout_cut: 0,
            stderr_cut: 0,
            limits: SandboxLimits::default(),
        }
    }

    #[test]
    fn a_python_run_that_printed_nothing_or_broke_a_string_says_what_to_do() {
        let silent = python_note(&outcome(0, "", ""), false).unwrap();
        assert!(silent.contains("print()"), "{silent}");
        assert_eq!(
            python_note(&outcome(0, "", ""), true),
            None,
            "it wrote a file"
        );
        let broken = python_note(&outcome(
            1,
            "",
            "  File \"<string>\", line 4\n    f.write(word + '\nSyntaxError: unterminated string literal",
        ), false)
        .unwrap();
        assert!(broken.contains("\\\\n (two backslashes and n)"), "{broken}");
        assert_eq!(python_note(&outcome(0, "46.0\n", ""), false), None);
        assert_eq!(python_note(&outcome(1, "", "NameError: json"), false), None);
    }

    #[test]
    fn run_python_says_which_well_known_packages_it_has_and_lacks() {
        let dir = tempfile::tempdir().unwrap();
        let tools = CodeTools::new(Arc::new(unprobed()), dir.path()).unwrap();
        let spec = tools
            .specs()
            .into_iter()
            .find(|s| s.name == "run_python")
            .unwrap();
        assert!(
            spec.description.contains(
                "The standard library and numpy; not pandas, scipy, matplotlib, openpyxl."
            ),
            "{}",
            spec.description
        );
    }

    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        (dir, ws)
    }

    async fn shell(sandbox: &Sandbox, ws: &Path, command: &str) -> RunOutcome {
        sandbox
            .run(
                ws,
                vec![SHELL.to_string(), "-c".to_string(), command.to_string()],
            )
            .await
            .unwrap()
    }

    async fn python(sandbox: &Sandbox, ws: &Path, code: &str) -> Option<RunOutcome> {
        let Some(python) = sandbox.python() else {
            eprintln!("skipped: python3 is not installed");
            return None;
        };
        let program = vec![
            python.to_string_lossy().into_owned(),
            "-c".to_string(),
            code.to_string(),
        ];
        Some(sandbox.run(ws, program).await.unwrap())
    }

    #[test]
    fn the_jail_binds_only_the_workspace_writable_and_no_host_secrets() {
        let program = vec![SHELL.to_string(), "-c".to_string(), "echo hi".to_string()];
        let args: Vec<String> = unprobed()
            .bwrap_args(Path::new("/srv/runs/r1"), &program)
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        let has = |flag: &str| args.iter().any(|arg| arg == flag);
        for flag in [
            "--unshare-net",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
        ] {
            assert!(has(flag), "{flag} is missing: {args:?}");
        }
        // A user namespace (which --unshare-all brings) would run the code
        // as host root, where the process limit does not apply.
        assert!(!has("--unshare-all"), "{args:?}");
        assert!(!has("--unshare-user"), "{args:?}");

        let writable: Vec<(&str, &str)> = args
            .windows(3)
            .filter(|w| {
                matches!(
                    w[0].as_str(),
                    "--bind" | "--bind-try" | "--dev-bind" | "--dev-bind-try"
                )
            })
            .map(|w| (w[1].as_str(), w[2].as_str()))
            .collect();
        assert_eq!(writable, [("/srv/runs/r1", "/workspace")]);
        let read_only: Vec<&str> = args
            .windows(2)
            .filter(|w| matches!(w[0].as_str(), "--ro-bind" | "--ro-bind-try"))
            .map(|w| w[1].as_str())
            .collect();
        for source in &read_only {
            assert!(
                SYSTEM_DIRS.contains(source) || ETC_ENTRIES.contains(source),
                "{source} is bound: {args:?}"
            );
        }
        for host in ["/", "/etc", "/root", "/home", "/work", "/tmp"] {
            assert!(!read_only.contains(&host), "{host} is bound: {args:?}");
        }
        assert!(args
            .windows(2)
            .any(|w| w[0] == "--chdir" && w[1] == "/workspace"));
        assert!(args
            .windows(2)
            .any(|w| w[0] == "--setenv" && w[1] == "PATH"));
        assert!(args.windows(2).any(|w| w[0] == "--tmpfs" && w[1] == "/tmp"));
        assert!(args
            .windows(2)
            .any(|w| w[0] == "--cap-drop" && w[1] == "ALL"));
        let remount = args.iter().position(|a| a == "--remount-ro").unwrap();
        let bind = args.iter().position(|a| a == "--bind").unwrap();
        assert!(remount > bind, "the root turns read-only after the mounts");

        // The code runs as 65534 under the limits, and exactly as given.
        let setpriv = args.iter().position(|a| a == SETPRIV).unwrap();
        let tail = &args[setpriv..];
        for expected in [
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            PRLIMIT,
            "--cpu=30:31",
            "--as=536870912",
            "--nproc=64",
            "--fsize=67108864",
            "--core=0",
        ] {
            assert!(tail.iter().any(|a| a == expected), "{expected}: {tail:?}");
        }
        assert!(args.ends_with(&program), "{args:?}");
    }

    #[test]
    fn the_workspace_is_handed_over_in_a_jail_that_follows_no_symlink() {
        let args: Vec<String> = adopt_args(Some(Path::new("/srv/runs/r1")))
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        assert!(args.ends_with(&[
            CHOWN.to_string(),
            "-R".to_string(),
            "-h".to_string(),
            "65534:65534".to_string(),
            "/workspace".to_string(),
        ]));
        assert!(!args.iter().any(|a| a == "-L" || a == "--dereference"));
        assert!(!args.iter().any(|a| a == "--proc" || a == "--dev"));
        assert!(args
            .windows(3)
            .any(|w| w[0] == "--bind" && w[1] == "/srv/runs/r1" && w[2] == "/workspace"));
    }

    #[test]
    fn output_keeps_the_head_and_the_tail_and_counts_what_was_cut() {
        let mut small = Capture::new(16);
        small.push(b"hello world");
        assert_eq!(small.finish(), ("hello world".to_string(), 0));

        let mut cut = Capture::new(10);
        cut.push(b"0123456789abcdefghij");
        cut.push(b"KLMNO");
        assert_eq!(
            cut.finish(),
            ("01234\n[… 15 bytes cut …]\nKLMNO".to_string(), 15)
        );

        let mut big = Capture::new(1000);
        let chunk = [b'x'; 4096];
        for _ in 0..1000 {
            big.push(&chunk);
            assert!(big.tail.len() <= 2 * 500 + chunk.len());
        }
        let (text, cut) = big.finish();
        assert_eq!(cut, 4096 * 1000 - 1000);
        assert!(text.len() < 1100, "{}", text.len());
    }

    #[test]
    fn the_report_names_the_exit_status_the_limits_and_the_cut_bytes() {
        let outcome = RunOutcome {
            exit_code: Some(0),
            signal: None,
            timed_out: false,
            duration: Duration::from_millis(120),
            stdout: "45\n".into(),
            stderr: String::new(),
            stdout_cut: 0,
            stderr_cut: 0,
            limits: SandboxLimits::default(),
        };
        assert_eq!(
            outcome.report(),
            "exit status 0 (0.12 s)\n--- stdout ---\n45\n--- stderr ---\n(empty)"
        );
        let timed_out = RunOutcome {
            timed_out: true,
            exit_code: None,
            signal: Some(9),
            ..outcome.clone()
        };
        assert!(timed_out
            .report()
            .starts_with("killed: wall-time limit of 60 s reached"));
        let cpu = RunOutcome {
            exit_code: Some(152),
            signal: Some(24),
            ..outcome
        };
        assert!(cpu
            .report()
            .starts_with("killed by signal 24 (SIGXCPU: the CPU-time limit of 30 s was reached), exit status 152"));
    }

    #[tokio::test]
    async fn a_missing_or_oversized_argument_is_refused_without_running() {
        let (_dir, ws) = workspace();
        let tools = CodeTools::new(Arc::new(unprobed()), ws).unwrap();
        let e = tools.call("run_shell", &json!({})).await.unwrap_err();
        assert!(e.message.contains("command"), "{e}");
        let long = "x".repeat(CODE_MAX_CHARS + 1);
        let e = tools
            .call("run_python", &json!({"code": long}))
            .await
            .unwrap_err();
        assert!(e.message.contains("at most"), "{e}");
        let e = tools.call("run_ruby", &json!({})).await.unwrap_err();
        assert!(e.message.contains("no code tool"), "{e}");
    }

    #[tokio::test]
    async fn python_computes_writes_to_the_workspace_and_has_a_private_tmp() {
        let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
            return;
        };
        let (_dir, ws) = workspace();
        let private = format!("/tmp/planboard-sandbox-private-{}", std::process::id());
        let code = format!(
            "print(sum(range(10)))\n\
             open('out.txt', 'w').write('written inside')\n\
             open('{private}', 'w').write('x')\n"
        );
        let Some(outcome) = python(&sandbox, &ws, &code).await else {
            return;
        };
        assert_eq!(outcome.exit_code, Some(0), "{}", outcome.report());
        assert_eq!(outcome.stdout, "45\n");
        assert_eq!(
            std::fs::read_to_string(ws.join("out.txt")).unwrap(),
            "written inside"
        );
        assert!(
            !Path::new(&private).exists(),
            "the sandbox's /tmp is the host's"
        );
    }

    #[tokio::test]
    async fn run_python_shows_the_last_expression_as_a_notebook_cell_does() {
        let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
            return;
        };
        if sandbox.python().is_none() {
            return;
        }
        let (_dir, ws) = workspace();
        let tools = CodeTools::new(Arc::new(sandbox), ws).unwrap();
        let run = |code: &'static str| {
            let tools = &tools;
            async move {
                tools
                    .call("run_python", &json!({ "code": code }))
                    .await
                    .unwrap()
            }
        };
        let report = run("x = 2 ** 100\nsum(int(d) for d in str(x))").await;
        assert!(report.contains("--- stdout ---\n115\n"), "{report}");
        // print() as usual; a last expression of None shows nothing.
        let report = run("import sys\nprint(sys.argv)\nNone").await;
        assert!(
            report.contains("--- stdout ---\n['-c']\n--- stderr"),
            "{report}"
        );
        // A traceback starts at the code, with its own line numbers.
        let report = run("a = 1\nb = a / 0").await;
        assert!(report.starts_with("exit status 1 ("), "{report}");
        assert!(report.contains("File \"<code>\", line 2"), "{report}");
        assert!(report.contains("ZeroDivisionError"), "{report}");
        assert!(
            !report.contains("exec(compile"),
            "not the runner's frame: {report}"
        );
        // exit() keeps its status.
        let report = run("import sys\nsys.exit(3)").await;
        assert!(report.starts_with("exit status 3 ("), "{report}");
        // A file written and nothing printed: no note saying nothing happened.
        let report = run("open('out.txt', 'w').write('x')\npass").await;
        assert!(!report.contains("--- note ---"), "{report}");
        // A line break the model's JSON left inside a string literal.
        let report =
            run("words = ['b', 'a']\nprint('\n'.join(sorted(words)) + '\n', end='')").await;
        assert!(
            report.contains("--- stdout ---\na\nb\n--- stderr"),
            "{report}"
        );
        assert!(report.contains("read 2 line break(s)"), "{report}");
        let report = run("y = 1").await;
        assert!(
            report.contains("Nothing was printed and no file changed"),
            "{report}"
        );
    }

    #[tokio::test]
    async fn code_tools_report_a_failing_command_as_a_result_not_an_error() {
        let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
            return;
        };
        let (_dir, ws) = workspace();
        let tools = CodeTools::new(Arc::new(sandbox), ws).unwrap();
        let names: Vec<String> = tools.specs().into_iter().map(|s| s.name).collect();
        assert!(names.contains(&"run_shell".to_string()), "{names:?}");
        assert_eq!(
            names.contains(&"run_python".to_string()),
            tools.sandbox().python().is_some()
        );
        let report = tools
            .call(
                "run_shell",
                &json!({"command": "echo hello; echo oops >&2; exit 3"}),
            )
            .await
            .unwrap();
        assert!(report.starts_with("exit status 3 ("), "{report}");
        assert!(report.contains("--- stdout ---\nhello\n"), "{report}");
        assert!(report.contains("--- stderr ---\noops"), "{report}");
        // A module that is not there: the tool says so, and what to do.
        if tools.sandbox().python().is_some() {
            let report = tools
                .call("run_python", &json!({"code": "import no_such_module_here"}))
                .await
                .unwrap();
            assert!(
                report.contains("--- note ---\nno_such_module_here is not installed here and cannot be installed")
                    && report.contains("Rewrite the code without no_such_module_here."),
                "{report}"
            );
        }
    }

    #[tokio::test]
    async fn the_data_stack_computes_and_draws_inside_and_cannot_be_changed() {
        // scripts/test installs it and names it; without it, nothing to test.
        let Some(packages) = std::env::var_os(PACKAGES_VAR).map(PathBuf::from) else {
            eprintln!("skipped: {PACKAGES_VAR} is not set");
            return;
        };
        let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
            return;
        };
        let (_dir, ws) = workspace();
        let tools = CodeTools::new(Arc::new(sandbox.clone()), &ws).unwrap();
        let spec = tools
            .specs()
            .into_iter()
            .find(|s| s.name == "run_python")
            .unwrap();
        assert!(
            spec.description
                .contains("The standard library and numpy, pandas, scipy, matplotlib, openpyxl."),
            "{}",
            spec.description
        );
        std::fs::write(
            tools.root().join("sales.csv"),
            "region,amount\nnorth,3\nsouth,4\nnorth,5\n",
        )
        .unwrap();
        let code = "import pandas as pd, matplotlib.pyplot as plt, scipy, openpyxl\n\
                    df = pd.read_csv('sales.csv')\n\
                    totals = df.groupby('region')['amount'].sum()\n\
                    print(totals.to_dict())\n\
                    totals.plot.bar(); plt.savefig('chart.png')\n\
                    df.to_excel('sales.xlsx')";
        let outcome = sandbox
            .run(tools.root(), vec![PYTHON.into(), "-c".into(), code.into()])
            .await
            .unwrap();
        assert_eq!(outcome.exit_code, Some(0), "{}", outcome.report());
        assert!(outcome.stdout.contains("'north': 8"), "{}", outcome.stdout);
        // Where the host has fonts configured, drawing finds them: no
        // "Fontconfig error" for the model to read as a failure.
        if Path::new("/etc/fonts/fonts.conf").exists() {
            assert!(
                !outcome.stderr.contains("Fontconfig"),
                "{}",
                outcome.report()
            );
        }
        let png = std::fs::read(tools.root().join("chart.png")).unwrap();
        assert_eq!(&png[..4], b"\x89PNG");
        assert!(tools.root().join("sales.xlsx").is_file());
        // Mounted read-only: the next run cannot be handed a changed pandas.
        let outcome = sandbox
            .run(
                tools.root(),
                vec![
                    SHELL.into(),
                    "-c".into(),
                    format!("touch {PACKAGES}/pandas/evil.py; echo $?"),
                ],
            )
            .await
            .unwrap();
        assert_ne!(outcome.stdout.trim(), "0", "{}", outcome.report());
        assert!(!packages.join("pandas/evil.py").exists());
    }

    #[tokio::test]
    async fn code_does_not_run_while_the_workspace_is_past_its_quota() {
        let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
            return;
        };
        let (_dir, ws) = workspace();
        let tools = CodeTools::on(
            Arc::new(sandbox),
            Workspace::open(&ws).unwrap().with_quota(1000),
        );
        // One call may go past the quota (each file stops at what was
        // left, two together pass it); it is told, and the next is refused.
        let report = tools
            .call(
                "run_shell",
                &json!({"command": "head -c 600 /dev/zero > a; head -c 600 /dev/zero > b"}),
            )
            .await
            .unwrap();
        assert!(report.contains("past its quota of 1000 bytes"), "{report}");
        let e = tools
            .call("run_shell", &json!({"command": "touch ran"}))
            .await
            .unwrap_err();
        assert!(e.message.contains("past its quota"), "{e}");
        assert!(!ws.join("ran").exists());
    }

    #[tokio::test]
    async fn a_file_the_code_writes_past_the_quota_fails_inside_the_code_and_says_why() {
        let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
            return;
        };
        let (_dir, ws) = workspace();
        std::fs::write(ws.join("data.csv"), vec![b'x'; 400]).unwrap();
        let tools = CodeTools::on(
            Arc::new(sandbox),
            Workspace::open(&ws).unwrap().with_quota(1000),
        );
        let report = tools
            .call(
                "run_shell",
                &json!({"command": "head -c 5000 /dev/zero > big"}),
            )
            .await
            .unwrap();
        assert!(
            report.contains("would have passed the workspace's quota of 1000 bytes")
                && report.contains("600 bytes were left"),
            "{report}"
        );
        assert_eq!(std::fs::metadata(ws.join("big")).unwrap().len(), 600);
        // Within the quota, code goes on running.
        let report = tools
            .call("run_shell", &json!({"command": "echo ok"}))
            .await
            .unwrap();
        assert!(report.contains("ok"), "{report}");
    }

    #[tokio::test]
    async fn code_runs_with_no_new_privs_and_no_capabilities() {
        // no_new_privs is bwrap's (it sets it for everything it starts);
        // setpriv clears the capability sets and switches the user.
        let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
            return;
        };
        let (_dir, ws) = workspace();
        let outcome = shell(
            &sandbox,
            &ws,
            "grep -E '^(NoNewPrivs|CapEff|CapPrm|CapBnd):' /proc/self/status",
        )
        .await;
        assert_eq!(outcome.exit_code, Some(0), "{}", outcome.report());
        let status = outcome.stdout;
        assert!(status.contains("NoNewPrivs:\t1"), "{status}");
        for set in ["CapEff", "CapPrm", "CapBnd"] {
            assert!(
                status.contains(&format!("{set}:\t0000000000000000")),
                "{set}: {status}"
            );
        }
    }

    #[tokio::test]
    async fn files_the_host_wrote_in_the_workspace_can_be_changed_inside() {
        let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
            return;
        };
        let (_dir, ws) = workspace();
        std::fs::write(ws.join("notes.txt"), "first\n").unwrap();
        std::fs::create_dir(ws.join("sub")).unwrap();
        std::fs::write(ws.join("sub").join("a.txt"), "a\n").unwrap();
        let outcome = shell(
            &sandbox,
            &ws,
            "echo second >> notes.txt && echo b >> sub/a.txt && mkdir sub/deeper && id -u",
        )
        .await;
        assert_eq!(outcome.exit_code, Some(0), "{}", outcome.report());
        assert_eq!(outcome.stdout.trim(), "65534");
        assert_eq!(
            std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
            "first\nsecond\n"
        );
        assert!(ws.join("sub").join("deeper").is_dir());
    }

    #[tokio::test]
    async fn writes_outside_the_workspace_fail_and_leave_nothing_on_the_host() {
        let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
            return;
        };
        let (_dir, ws) = workspace();
        let pid = std::process::id();
        let targets = [
            format!("/etc/planboard-pwned-{pid}"),
            format!("/work/planboard-pwned-{pid}"),
            format!("/root/planboard-pwned-{pid}"),
            format!("/usr/planboard-pwned-{pid}"),
            format!("/planboard-pwned-{pid}"),
        ];
        for target in &targets {
            for command in [format!("echo x > {target}"), format!("touch {target}")] {
                let outcome = shell(&sandbox, &ws, &command).await;
                assert_ne!(
                    outcome.exit_code,
                    Some(0),
                    "{command}: {}",
                    outcome.report()
                );
                assert!(!outcome.timed_out);
            }
            assert!(
                !Path::new(target).exists(),
                "{target} was written on the host"
            );
        }
    }

    #[tokio::test]
    async fn host_secrets_cannot_be_read() {
        let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
            return;
        };
        let (dir, ws) = workspace();
        let secret = dir.path().join("secret.txt");
        std::fs::write(&secret, "TOPSECRET-planboard").unwrap();
        let cat_secret = format!("cat {}", secret.display());
        for command in [
            "cat /etc/shadow",
            "cat /etc/passwd",
            cat_secret.as_str(),
            "cat ../secret.txt",
            "ls /root",
            "ls /work",
        ] {
            let outcome = shell(&sandbox, &ws, command).await;
            assert_ne!(
                outcome.exit_code,
                Some(0),
                "{command}: {}",
                outcome.report()
            );
            assert!(!outcome.stdout.contains("TOPSECRET"), "{command}");
            assert!(!outcome.stdout.contains("root:"), "{command}");
        }
    }

    #[tokio::test]
    async fn the_network_is_unreachable_even_on_the_host_loopback() {
        let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
            return;
        };
        let (_dir, ws) = workspace();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let code = format!(
            "import socket\n\
             try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n    print('ESCAPED')\n\
             except OSError as e:\n    print('BLOCKED', e)\n"
        );
        let Some(outcome) = python(&sandbox, &ws, &code).await else {
            return;
        };
        assert!(outcome.stdout.contains("BLOCKED"), "{}", outcome.report());
        assert!(!outcome.stdout.contains("ESCAPED"), "{}", outcome.report());
        let accepted = listener.accept();
        assert!(
            matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "the host listener accepted a connection: {accepted:?}"
        );
    }

    #[tokio::test]
    async fn a_fork_bomb_ends_within_the_wall_limit_and_the_host_is_fine() {
        let limits = SandboxLimits {
            wall: Duration::from_secs(5),
            processes: 32,
            ..SandboxLimits::default()
        };
        let Some(sandbox) = sandbox_or_skip(limits) else {
            return;
        };
        let (_dir, ws) = workspace();
        // The bomb's shells detach, so the top shell would end at once and
        // whether any "cannot fork" reached stderr before the jail closed
        // was a race (CI lost it). So the top shell then keeps starting
        // sleepers until a fork of its own fails: under the process limit
        // that happens within 32 forks and the shell exits saying so;
        // without `--nproc` it runs until the wall-time kill.
        let outcome = shell(
            &sandbox,
            &ws,
            "bomb() { bomb | bomb & }; bomb; \
             i=0; while [ $i -lt 500 ]; do sleep 30 & i=$((i+1)); done; wait",
        )
        .await;
        assert!(
            !outcome.timed_out && outcome.duration < Duration::from_secs(4),
            "{:?}: {}",
            outcome.duration,
            outcome.report()
        );
        assert!(
            outcome.stderr.to_lowercase().contains("fork"),
            "the shell says it cannot fork: {}",
            outcome.report()
        );
        assert!(std::process::Command::new("true")
            .status()
            .unwrap()
            .success());
        let after = shell(&sandbox, &ws, "echo alive").await;
        assert_eq!(after.stdout.trim(), "alive", "{}", after.report());
    }

    #[tokio::test]
    async fn an_endless_loop_is_killed_at_the_cpu_or_wall_limit() {
        let limits = SandboxLimits {
            wall: Duration::from_secs(10),
            cpu_secs: 1,
            ..SandboxLimits::default()
        };
        let Some(sandbox) = sandbox_or_skip(limits) else {
            return;
        };
        let (_dir, ws) = workspace();
        let outcome = shell(&sandbox, &ws, "while true; do :; done").await;
        assert!(
            outcome.timed_out || outcome.signal.is_some(),
            "{}",
            outcome.report()
        );
        assert!(
            outcome.duration < Duration::from_secs(13),
            "{:?}",
            outcome.duration
        );
        assert!(
            outcome.report().starts_with("killed"),
            "{}",
            outcome.report()
        );
    }

    #[tokio::test]
    async fn a_run_past_the_wall_limit_is_killed_and_keeps_its_output() {
        let limits = SandboxLimits {
            wall: Duration::from_secs(2),
            ..SandboxLimits::default()
        };
        let Some(sandbox) = sandbox_or_skip(limits) else {
            return;
        };
        let (_dir, ws) = workspace();
        let outcome = shell(&sandbox, &ws, "echo before; sleep 30; echo after").await;
        assert!(outcome.timed_out, "{}", outcome.report());
        assert!(
            outcome.duration < Duration::from_secs(5),
            "{:?}",
            outcome.duration
        );
        assert_eq!(outcome.stdout, "before\n");
        assert!(
            outcome
                .report()
                .starts_with("killed: wall-time limit of 2 s reached"),
            "{}",
            outcome.report()
        );
    }

    #[tokio::test]
    async fn a_gigabyte_of_output_is_capped_and_the_cut_counted() {
        let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
            return;
        };
        let (_dir, ws) = workspace();
        let outcome = shell(&sandbox, &ws, "head -c 1000000000 /dev/zero | tr '\\0' a").await;
        assert_eq!(outcome.exit_code, Some(0), "{}", outcome.report());
        let kept = sandbox.limits().output_bytes;
        assert_eq!(outcome.stdout_cut, 1_000_000_000 - kept as u64);
        assert!(outcome.stdout.len() < kept + 64, "{}", outcome.stdout.len());
        assert!(outcome
            .report()
            .contains(&format!("[… {} bytes cut …]", 1_000_000_000 - kept as u64)));
    }

    #[tokio::test]
    async fn symlinks_in_the_workspace_do_not_reach_host_files() {
        let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
            return;
        };
        let (dir, ws) = workspace();
        let secret = dir.path().join("secret.txt");
        std::fs::write(&secret, "TOPSECRET-planboard").unwrap();
        let secret_owner = std::fs::metadata(&secret).unwrap().uid();
        let etc_owner = std::fs::metadata("/etc").unwrap().uid();
        std::os::unix::fs::symlink("/etc", ws.join("etc_link")).unwrap();
        std::os::unix::fs::symlink("/", ws.join("root_link")).unwrap();
        std::os::unix::fs::symlink(&secret, ws.join("secret_link")).unwrap();
        std::os::unix::fs::symlink(dir.path(), ws.join("dir_link")).unwrap();
        let outcome = shell(
            &sandbox,
            &ws,
            "cat secret_link; cat dir_link/secret.txt; cat etc_link/shadow; \
             cat etc_link/passwd; cat root_link/etc/shadow; ls etc_link root_link",
        )
        .await;
        assert!(
            !outcome.stdout.contains("TOPSECRET"),
            "{}",
            outcome.report()
        );
        assert!(!outcome.stdout.contains("root:"), "{}", outcome.report());
        assert!(!outcome.stdout.contains("shadow"), "{}", outcome.report());
        // The chown before the run changed the links, not what they name.
        assert_eq!(std::fs::metadata(&secret).unwrap().uid(), secret_owner);
        assert_eq!(std::fs::metadata("/etc").unwrap().uid(), etc_owner);
        assert_eq!(
            std::fs::read_to_string(secret.as_path()).unwrap(),
            "TOPSECRET-planboard"
        );
    }
}
