//! Tests that attack a bound on the process itself (its memory, its file
//! descriptors) run again in a child process under `prlimit`, so the
//! limit binds that test alone and a test that breaks it fails instead of
//! taking the whole test binary down.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the child: the test does its work instead of starting a child.
const CHILD: &str = "PLANBOARD_TEST_CHILD";

/// Whether this process is the child a test started.
pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Runs the test `name` (its path in this crate, `tools::html::tests::x`)
/// in a child process under `limits` (`prlimit`'s options, such as
/// `--as=268435456` or `--nofile=1024`), and fails unless it passed
/// within `timeout`.
pub fn run_limited(name: &str, limits: &[&str], timeout: Duration) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let log: PathBuf =
        std::env::temp_dir().join(format!("planboard-child-{}.log", uuid::Uuid::new_v4()));
    let file = std::fs::File::create(&log).expect("a log file for the child");
    let mut child = Command::new("prlimit")
        .args(limits)
        .arg("--")
        .arg(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("the log, twice"))
        .stderr(file)
        .spawn()
        .expect("prlimit (util-linux) runs the child");
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child's status") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    match status {
        None => panic!("{name} did not finish within {timeout:?} under {limits:?}:\n{output}"),
        Some(status) => assert!(
            status.success() && output.contains("1 passed"),
            "{name} failed under {limits:?} ({status}):\n{output}"
        ),
    }
}
