//! The local model `scripts/run` starts (`scripts/local-model.sh`), as
//! the server sees it: the script writes where it is (`state`: building,
//! fetching, starting, ready, failed: why), its own pid while it works
//! (`launcher.pid`) and the model server's (`planboard-model.pid`) in its
//! home, which `PLANBOARD_LOCAL_MODEL_HOME` names. From those and whether
//! the endpoint answers, [`status`] tells "still building" and "starting"
//! from "died", with the last lines of the model's log. It reads a few
//! small files and `/proc`, so it is asked on every request, and a
//! process that died is reported at once.

use std::path::Path;

use plan_engine::text::last_lines;
use run_model::ModelStatus;

/// Lines of the model's log shown when it died.
pub const LOG_LINES: usize = 20;

/// What the model's home says, read once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    pub state: Option<String>,
    pub launcher_alive: bool,
    /// `None`: no pid file (never started).
    pub server_alive: Option<bool>,
    pub log_tail: String,
}

/// Reads the model's home.
pub fn observe(home: &Path) -> Observed {
    let read = |name: &str| std::fs::read_to_string(home.join(name)).ok();
    let alive = |name: &str| {
        read(name)
            .and_then(|pid| pid.trim().parse::<u32>().ok())
            .map(process_alive)
    };
    Observed {
        state: read("state").map(|s| s.trim().to_string()),
        launcher_alive: alive("launcher.pid").unwrap_or(false),
        server_alive: alive("planboard-model.pid"),
        log_tail: read("planboard-model.log")
            .map(|log| last_lines(&log, LOG_LINES))
            .unwrap_or_default(),
    }
}

/// Whether a process runs (and is no zombie), from `/proc`.
pub fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat_state(&stat))
        .is_some_and(|state| !matches!(state, 'Z' | 'X' | 'x'))
}

/// The state letter of a `/proc/<pid>/stat` line (after the command's
/// name in parentheses, which may itself hold spaces and parentheses).
fn stat_state(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The model's status: `answers` is whether its endpoint answered;
/// `local` what the local model's home says, when planboard started one.
pub fn status(configured: bool, answers: bool, local: Option<&Observed>) -> ModelStatus {
    if !configured {
        return ModelStatus::None;
    }
    let Some(local) = local else {
        return if answers {
            ModelStatus::Ready
        } else {
            ModelStatus::Waiting { doing: None }
        };
    };
    let died = |reason: String| ModelStatus::Died {
        reason,
        log: local.log_tail.clone(),
    };
    if local.launcher_alive {
        // Still building, fetching or starting (the script checks one
        // real completion before it says ready).
        return ModelStatus::Waiting {
            doing: local.state.clone(),
        };
    }
    if let Some(why) = local
        .state
        .as_deref()
        .and_then(|s| s.strip_prefix("failed:"))
    {
        return died(why.trim().to_string());
    }
    match local.server_alive {
        Some(false) => died("the local model's server process exited".into()),
        Some(true) if answers => ModelStatus::Ready,
        Some(true) => ModelStatus::Waiting {
            doing: Some("starting".into()),
        },
        // Not started by the script (yet): an endpoint that answers is
        // someone else's model.
        None if answers => ModelStatus::Ready,
        None => ModelStatus::Waiting {
            doing: local.state.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(state: &str, launcher: bool, server: Option<bool>) -> Observed {
        Observed {
            state: Some(state.into()),
            launcher_alive: launcher,
            server_alive: server,
            log_tail: "ggml: illegal instruction".into(),
        }
    }

    #[test]
    fn building_starting_ready_and_died_are_told_apart() {
        assert_eq!(status(false, false, None), ModelStatus::None);
        assert_eq!(status(true, true, None), ModelStatus::Ready);
        assert_eq!(
            status(true, false, Some(&seen("building", true, None))),
            ModelStatus::Waiting {
                doing: Some("building".into())
            }
        );
        assert_eq!(
            status(true, false, Some(&seen("starting", false, Some(true)))),
            ModelStatus::Waiting {
                doing: Some("starting".into())
            }
        );
        assert_eq!(
            status(true, true, Some(&seen("ready", false, Some(true)))),
            ModelStatus::Ready
        );
        // Ready once, dead now: the endpoint's earlier answer counts for nothing.
        assert_eq!(
            status(true, true, Some(&seen("ready", false, Some(false)))),
            ModelStatus::Died {
                reason: "the local model's server process exited".into(),
                log: "ggml: illegal instruction".into()
            }
        );
        assert!(matches!(
            status(true, false, Some(&seen("failed: llama-server died at its first completion", false, Some(false)))),
            ModelStatus::Died { reason, .. } if reason == "llama-server died at its first completion"
        ));
    }

    #[test]
    fn a_process_state_is_read_past_a_name_with_parentheses() {
        assert_eq!(stat_state("42 (llama (x) server) S 1 2 3"), Some('S'));
        assert_eq!(stat_state("42 (sh) Z 1"), Some('Z'));
        assert!(process_alive(std::process::id()));
        assert!(!process_alive(u32::MAX - 1));
    }
}
