//! Bubblewrap's command line: the namespaces (no user namespace, see the
//! module comment of [`super`]), the read-only system, the mounts, the
//! cleared environment, the capabilities kept until `setpriv` drops to
//! uid 65534, and `prlimit`'s limits; and the smaller jail that hands the
//! workspace to uid 65534 before each run. Nothing here starts code but
//! [`Sandbox::adopt`]; the arguments are plain data, tested as such.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use super::capture::seconds;
use super::{Sandbox, CHOWN, PACKAGES, PRLIMIT, SANDBOX_UID, SETPRIV, WORKSPACE};

/// Read-only system directories; `--ro-bind-try` skips the missing ones.
pub(super) const SYSTEM_DIRS: [&str; 6] = ["/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin"];

/// The entries of `/etc` programs need; never `/etc` itself, whose other
/// files (`shadow`, keys, the host's configuration) stay invisible.
/// `/etc/fonts`: without it every matplotlib import wrote "Fontconfig
/// error: Cannot load default config file" to stderr, which the model then
/// reported as what its result lacked.
pub(super) const ETC_ENTRIES: [&str; 5] = [
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/fonts",
];

/// The whole environment inside (after `--clearenv`). `USER` keeps
/// `getpass.getuser()` working without an `/etc/passwd`; unbuffered python
/// output survives a kill at the wall-time limit.
const ENV: [(&str, &str); 9] = [
    ("PATH", "/usr/bin:/bin"),
    // A private home in the jail's own /tmp: caches (matplotlib's
    // fontconfig, pip's) never land in the workspace as artifacts.
    ("HOME", "/tmp"),
    ("XDG_CACHE_HOME", "/tmp/.cache"),
    ("LANG", "C.UTF-8"),
    ("USER", "nobody"),
    ("TMPDIR", "/tmp"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PYTHONUNBUFFERED", "1"),
    // `python3 -c` and `-m` in a shell command put no current folder
    // first on the path either (Python 3.11+).
    ("PYTHONSAFEPATH", "1"),
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
impl Sandbox {
    /// The bwrap arguments that run `program` (an argv; the first word is
    /// looked up on the jail's `PATH`) in `workspace`.
    #[cfg(test)]
    pub(super) fn bwrap_args(&self, workspace: &Path, program: &[String]) -> Vec<OsString> {
        self.jail_args(Some(workspace), program)
    }

    /// The jail; without a workspace (the start-up probes) an empty tmpfs
    /// stands in for it.
    pub(super) fn jail_args(&self, workspace: Option<&Path>, program: &[String]) -> Vec<OsString> {
        self.jail_args_with(workspace, program, self.limits.file_bytes)
    }

    /// [`Sandbox::jail_args`] with the largest file the code may write
    /// (`--fsize`) set to `file_bytes`.
    pub(super) fn jail_args_with(
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
    pub(super) async fn adopt(&self, workspace: &Path) {
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
pub(super) fn adopt_args(workspace: Option<&Path>) -> Vec<OsString> {
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
