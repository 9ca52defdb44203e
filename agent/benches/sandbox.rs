//! The code runner's cost per call: how long `run_shell` / `run_python`
//! take for code that does nothing, so what is measured is the sandbox
//! (two bubblewrap jails: the one that hands the workspace to uid 65534 and
//! the one that runs the code, plus setpriv and prlimit), against the same
//! program started without a sandbox.
//!
//! Run: `cargo bench -p agent --bench sandbox` (as root, with bubblewrap).

use std::time::{Duration, Instant};

use agent::tools::sandbox::{Sandbox, SandboxLimits};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "{name:<44} p50 {:>6.1} ms  p90 {:>6.1} ms  p99 {:>6.1} ms  ({} calls)",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.9).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3,
        times.len()
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let sandbox = match Sandbox::detect(SandboxLimits::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("no sandbox here: {e}");
            return;
        }
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    // A workspace with some files, as a run has: the hand-over walks them.
    for i in 0..50 {
        std::fs::write(workspace.join(format!("f{i}.txt")), "x".repeat(1000)).unwrap();
    }
    const CALLS: usize = 100;
    let mut bare = Vec::new();
    for _ in 0..CALLS {
        let t = Instant::now();
        let status = tokio::process::Command::new("/bin/true")
            .current_dir(&workspace)
            .status()
            .await
            .unwrap();
        assert!(status.success());
        bare.push(t.elapsed());
    }
    report("/bin/true, no sandbox", bare);
    let mut shell = Vec::new();
    for _ in 0..CALLS {
        let t = Instant::now();
        let out = sandbox
            .run(
                &workspace,
                vec!["/bin/sh".into(), "-c".into(), "true".into()],
            )
            .await
            .unwrap();
        assert_eq!(out.exit_code, Some(0));
        shell.push(t.elapsed());
    }
    report("run_shell `true` in the sandbox", shell);
    if sandbox.python().is_some() {
        let mut bare = Vec::new();
        for _ in 0..CALLS / 2 {
            let t = Instant::now();
            tokio::process::Command::new("/usr/bin/python3")
                .args(["-c", "pass"])
                .status()
                .await
                .unwrap();
            bare.push(t.elapsed());
        }
        report("python3 -c pass, no sandbox", bare);
        let mut python = Vec::new();
        for _ in 0..CALLS / 2 {
            let t = Instant::now();
            let out = sandbox
                .run(
                    &workspace,
                    vec!["/usr/bin/python3".into(), "-c".into(), "pass".into()],
                )
                .await
                .unwrap();
            assert_eq!(out.exit_code, Some(0));
            python.push(t.elapsed());
        }
        report("run_python `pass` in the sandbox", python);
    }
}
