//! What a run leaves behind: each output stream kept as its head and
//! tail (the middle drained and counted, never stored), the
//! [`RunOutcome`] and the report the model reads, and the workspace's
//! quota reckoned once around a run: whether code may run, how large a
//! file it may write, and what to tell the model afterwards.

use std::pin::Pin;
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};

use super::{SandboxLimits, MIB};
use crate::tools::ToolError;

/// Bytes read from a pipe at a time.
const READ_CHUNK: usize = 64 * 1024;
/// One output stream as kept: the first half of the allowance, the last
/// half, and how many bytes in between were read and dropped. Memory stays
/// below twice the allowance plus one chunk however much is written.
pub(super) struct Capture {
    head: Vec<u8>,
    pub(super) tail: Vec<u8>,
    head_cap: usize,
    tail_cap: usize,
    cut: u64,
}

impl Capture {
    pub(super) fn new(limit: usize) -> Capture {
        let head_cap = limit.div_ceil(2);
        Capture {
            head: Vec::new(),
            tail: Vec::new(),
            head_cap,
            tail_cap: limit - head_cap,
            cut: 0,
        }
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
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
    pub(super) fn finish(mut self) -> (String, u64) {
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
pub(super) async fn drain<R: AsyncRead + Unpin>(mut pipe: R, capture: &mut Capture) {
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
    /// Stopped by a watchdog, and why (the workspace passed its quota).
    pub stopped: Option<String>,
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
        let mut text = if let Some(why) = &self.stopped {
            format!("killed: {why} ({took})")
        } else if self.timed_out {
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

/// Whether a [`RunOutcome::report`] says the code failed (a non-zero exit,
/// a signal, the time limit), read where it is written so the two agree.
pub fn report_failed(report: &str) -> bool {
    let first = report.lines().next().unwrap_or_default();
    first.starts_with("killed")
        || first.starts_with("ended without")
        || (first.starts_with("exit status ") && !first.starts_with("exit status 0 "))
}

/// A tool's output without a report's first line when that line only says
/// how the run ended and how long it took (`exit status 0 (0.03 s)`): two
/// runs that printed the same returned the same.
pub fn untimed(output: &str) -> &str {
    match output.split_once('\n') {
        Some((first, rest)) if first.ends_with(" s)") => rest,
        _ => output,
    }
}

/// What a [`RunOutcome::report`]'s code printed on stdout (`""` for any
/// other text).
pub fn stdout_of(report: &str) -> &str {
    let Some((_, rest)) = report.split_once("--- stdout ---\n") else {
        return "";
    };
    let body = rest.split("\n--- stderr ---").next().unwrap_or_default();
    if body.trim_end() == "(empty)" {
        ""
    } else {
        body
    }
}

/// What a [`RunOutcome::report`]'s code printed on stderr; any other text
/// whole (a tool's own error is what went wrong).
pub fn stderr_of(report: &str) -> &str {
    report.rsplit("--- stderr ---\n").next().unwrap_or(report)
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
pub(super) fn seconds(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// "512 MiB", or bytes when not a whole number of MiB.
pub(super) fn bytes(n: u64) -> String {
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else {
        format!("{n} bytes")
    }
}

/// What the workspace's quotas leave one run, reckoned from its use before
/// the run (`measured`). Code does not run while the workspace is past a
/// quota or cannot be measured, and the bytes left are the largest file
/// the run may write, so a single write that would pass the quota fails
/// inside the code (`EFBIG`, or `SIGXFSZ`). Many files together are the
/// watchdog's and [`crate::workspace::Workspace::reclaim`]'s (see
/// `code.rs`).
pub(super) fn room(
    workspace: &crate::workspace::Workspace,
    measured: Result<crate::workspace::Usage, crate::workspace::WorkspaceError>,
) -> Result<u64, ToolError> {
    let why = match measured {
        Ok(usage) => match workspace.past_quota(usage) {
            None => return Ok(workspace.quota().saturating_sub(usage.bytes)),
            Some(why) => why,
        },
        // A workspace that cannot be measured (too many entries, nested
        // too deep) is not taken to be within its quota.
        Err(e) => format!("the workspace cannot be measured ({e})"),
    };
    Err(ToolError::refused(format!(
        "{why}: code does not run until a person removes files or raises the quota \
         (PLANBOARD_WORKSPACE_QUOTA_MB)"
    )))
}

/// What the model must hear of the quota after a run that had `left`
/// bytes of [`room`]: the workspace now past it (`after`, its use now),
/// or a write that failed because it would have passed it.
pub(super) fn quota_note(
    after: Option<u64>,
    quota: u64,
    left: u64,
    outcome: &RunOutcome,
) -> Option<String> {
    if let Some(used) = after.filter(|used| *used > quota) {
        return Some(format!(
            "\n--- note ---\nThe workspace now holds {used} bytes, past its quota of {quota} \
             bytes: later writes are refused and code does not run again."
        ));
    }
    let held_back = left < outcome.limits.file_bytes;
    let too_large = outcome.signal == Some(25) || outcome.stderr.contains("File too large");
    (held_back && too_large).then(|| {
        format!(
            "\n--- note ---\nA file would have passed the workspace's quota of {quota} \
             bytes ({left} bytes were left), so the write failed: remove files or write \
             less (PLANBOARD_WORKSPACE_QUOTA_MB)."
        )
    })
}
