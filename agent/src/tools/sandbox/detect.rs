//! What this machine offers the sandbox: bubblewrap on `PATH`, the
//! helpers it runs (`prlimit`, `setpriv`, `chown`, `/bin/sh`), root to
//! switch users, python3 and which well-known packages it imports. Each
//! is proved by starting a real jail once at start-up, so a host that
//! cannot run code says why before a run needs it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::jail::adopt_args;
use super::{
    Sandbox, SandboxLimits, SandboxUnavailable, CHOWN, PACKAGES_VAR, PRLIMIT, PYTHON, SANDBOX_UID,
    SETPRIV, SHELL,
};

/// The packages a model reaches for first; each one found is named in
/// `run_python`'s description, and their absence too.
pub(super) const WELL_KNOWN: [&str; 5] = ["numpy", "pandas", "scipy", "matplotlib", "openpyxl"];
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
                text => plan_engine::text::prefix(text, 400).to_string(),
            };
            return Err(SandboxUnavailable::new(format!(
                "bubblewrap cannot {what} here: {detail}"
            )));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
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
