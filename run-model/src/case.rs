//! Regression cases (issue 56): a run a reviewer judged good, kept with
//! its task, its input files, its plan's graph, its answer and the checks
//! the reviewer wrote, so a later model, prompt or policy can be run on
//! it again and judged the same way ([`crate::suite`]).
//!
//! A check is judged on what a later run left ([`Evidence`]): its answer,
//! the files of its workspace, and which steps of the case's plan its own
//! plan did (a step of the case's plan is matched to the later plan's by
//! the engine's graph matching; an unmatched step was not done).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use plan_engine::PlanId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::compare::GraphNode;
use crate::config::{InputFile, RunId};

/// A case's id, and the case a run belongs to: defined with the config,
/// which names them.
pub use crate::config::{CaseId, CaseRun};

/// The longest case name, in characters.
pub const CASE_NAME: usize = 200;
/// Tags on one case, and the longest tag.
pub const CASE_TAGS: usize = 20;
pub const TAG_CHARS: usize = 40;
/// Checks on one case.
pub const CASE_CHECKS: usize = 20;
/// The longest text a check looks for, and the longest file path.
pub const CHECK_TEXT: usize = 1_000;
pub const CHECK_PATH: usize = 500;

/// What a case checks of a later run, as the reviewer wrote it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Check {
    /// The answer holds this text (letter case and runs of white space
    /// aside).
    AnswerText {
        #[schemars(length(min = 1, max = CHECK_TEXT))]
        text: String,
    },
    /// The answer states this number, within `tolerance` (default 0: the
    /// number itself; `1,234.5` and `1234.5` are the same number).
    AnswerNumber {
        number: f64,
        #[serde(default)]
        #[schemars(range(min = 0))]
        tolerance: f64,
    },
    /// The run's workspace holds this file.
    FileExists {
        #[schemars(length(min = 1, max = CHECK_PATH))]
        path: String,
    },
    /// The run's workspace holds this file, and the file holds this text.
    FileText {
        #[schemars(length(min = 1, max = CHECK_PATH))]
        path: String,
        #[schemars(length(min = 1, max = CHECK_TEXT))]
        text: String,
    },
    /// This subtask of the case's plan was done: its match in the later
    /// run's plan ended done.
    StepDone {
        #[schemars(range(min = 1))]
        subtask: u32,
        /// Its name in the case's plan (filled in when the check is kept).
        #[serde(default)]
        name: String,
    },
    /// This subtask of the case's plan was not done: the later plan has
    /// no match of it, or its match did not end done.
    StepNotDone {
        #[schemars(range(min = 1))]
        subtask: u32,
        #[serde(default)]
        name: String,
    },
}

/// How one check went on one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckOutcome {
    pub check: Check,
    pub passed: bool,
    /// What was found, in a sentence.
    pub detail: String,
}

/// What a later run left, as its checks are judged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evidence {
    pub answer: Option<String>,
    /// The text of each file a check names: `None` when the workspace has
    /// no such file (a binary file reads as its lossy text).
    pub files: BTreeMap<String, Option<String>>,
    /// Each subtask of the case's plan that the later plan matched, and
    /// whether its match ended done.
    pub done: BTreeMap<u32, bool>,
}

/// Text as a check compares it: lower case, runs of white space as one
/// space.
fn normal(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The numbers a text states, in order: digits with a decimal point and
/// thousands separators (`1,234.5`), negative when a minus sign starts
/// them. Not a word's digits (`v2`, `x86`).
pub fn numbers_in(text: &str) -> Vec<f64> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'));
        if !starts {
            i += 1;
            continue;
        }
        let negative = i > 0
            && chars[i - 1] == '-'
            && (i < 2 || !(chars[i - 2].is_alphanumeric() || chars[i - 2] == '_'));
        let mut digits = String::new();
        let mut point = false;
        while i < chars.len() {
            let c = chars[i];
            let next_digit = chars.get(i + 1).is_some_and(char::is_ascii_digit);
            if c.is_ascii_digit() {
                digits.push(c);
            } else if c == ',' && next_digit && !point {
                // A thousands separator: left out.
            } else if c == '.' && next_digit && !point {
                point = true;
                digits.push('.');
            } else {
                break;
            }
            i += 1;
        }
        if let Ok(n) = digits.parse::<f64>() {
            out.push(if negative { -n } else { n });
        }
    }
    out
}

impl Check {
    /// The file the check reads, if it reads one.
    pub fn file(&self) -> Option<&str> {
        match self {
            Check::FileExists { path } | Check::FileText { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The check in a few words, for the board and the command line.
    pub fn label(&self, chinese: bool) -> String {
        let step = |subtask: &u32, name: &str| {
            if name.is_empty() {
                format!("#{subtask}")
            } else {
                format!("#{subtask} «{name}»")
            }
        };
        match (self, chinese) {
            (Check::AnswerText { text }, false) => format!("the answer holds «{text}»"),
            (Check::AnswerText { text }, true) => format!("答案包含「{text}」"),
            (Check::AnswerNumber { number, tolerance }, false) if *tolerance > 0.0 => {
                format!("the answer states {number} (± {tolerance})")
            }
            (Check::AnswerNumber { number, .. }, false) => format!("the answer states {number}"),
            (Check::AnswerNumber { number, tolerance }, true) if *tolerance > 0.0 => {
                format!("答案给出 {number}（± {tolerance}）")
            }
            (Check::AnswerNumber { number, .. }, true) => format!("答案给出 {number}"),
            (Check::FileExists { path }, false) => format!("the file {path} exists"),
            (Check::FileExists { path }, true) => format!("文件 {path} 存在"),
            (Check::FileText { path, text }, false) => format!("the file {path} holds «{text}»"),
            (Check::FileText { path, text }, true) => format!("文件 {path} 包含「{text}」"),
            (Check::StepDone { subtask, name }, false) => {
                format!("step {} was done", step(subtask, name))
            }
            (Check::StepDone { subtask, name }, true) => {
                format!("步骤 {} 已完成", step(subtask, name))
            }
            (Check::StepNotDone { subtask, name }, false) => {
                format!("step {} was not done", step(subtask, name))
            }
            (Check::StepNotDone { subtask, name }, true) => {
                format!("步骤 {} 未完成", step(subtask, name))
            }
        }
    }

    /// Judges the check on what a run left.
    pub fn judge(&self, evidence: &Evidence) -> CheckOutcome {
        let answer = evidence.answer.as_deref().unwrap_or_default();
        let file = |path: &str| evidence.files.get(path).cloned().flatten();
        let (passed, detail) = match self {
            Check::AnswerText { text } => {
                let found = !text.trim().is_empty() && normal(answer).contains(&normal(text));
                let said = if evidence.answer.is_none() {
                    "the run has no answer".to_string()
                } else if found {
                    "the answer holds it".to_string()
                } else {
                    format!(
                        "the answer does not hold it: {}",
                        plan_engine::text::ellipsis(answer.trim(), 200)
                    )
                };
                (found, said)
            }
            Check::AnswerNumber { number, tolerance } => {
                let stated = numbers_in(answer);
                let found = stated
                    .iter()
                    .any(|n| (n - number).abs() <= tolerance.max(0.0) + f64::EPSILON * n.abs());
                let shown: Vec<String> = stated.iter().take(10).map(f64::to_string).collect();
                let said = match (found, shown.is_empty()) {
                    (true, _) => "the answer states it".to_string(),
                    (false, true) => "the answer states no number".to_string(),
                    (false, false) => format!("the answer states {}", shown.join(", ")),
                };
                (found, said)
            }
            Check::FileExists { path } => match evidence.files.get(path.as_str()) {
                Some(Some(_)) => (true, format!("{path} is there")),
                _ => (false, format!("the workspace has no {path}")),
            },
            Check::FileText { path, text } => match file(path) {
                Some(content) => {
                    let found = normal(&content).contains(&normal(text));
                    let said = if found {
                        format!("{path} holds it")
                    } else {
                        format!(
                            "{path} does not hold it: {}",
                            plan_engine::text::ellipsis(content.trim(), 200)
                        )
                    };
                    (found, said)
                }
                None => (false, format!("the workspace has no {path}")),
            },
            Check::StepDone { subtask, .. } => match evidence.done.get(subtask) {
                Some(true) => (true, "its match in the run's plan was done".to_string()),
                Some(false) => (
                    false,
                    "its match in the run's plan was not done".to_string(),
                ),
                None => (false, "the run's plan has no step like it".to_string()),
            },
            Check::StepNotDone { subtask, .. } => match evidence.done.get(subtask) {
                Some(true) => (false, "its match in the run's plan was done".to_string()),
                Some(false) => (true, "its match in the run's plan was not done".to_string()),
                None => (true, "the run's plan has no step like it".to_string()),
            },
        };
        CheckOutcome {
            check: self.clone(),
            passed,
            detail,
        }
    }

    /// The check with its text trimmed and its step named from the case's
    /// plan, or why it cannot be kept.
    pub fn checked(mut self, graph: &[GraphNode]) -> Result<Check, CaseError> {
        let text_ok = |text: &mut String| {
            *text = text.trim().to_string();
            let chars = text.chars().count();
            if chars == 0 || chars > CHECK_TEXT {
                return Err(CaseError::CheckText(chars));
            }
            Ok(())
        };
        let path_ok = |path: &mut String| {
            *path = path.trim().trim_start_matches("./").to_string();
            let chars = path.chars().count();
            if chars == 0
                || chars > CHECK_PATH
                || path.starts_with('/')
                || path.split('/').any(|part| part == "..")
                || path.contains(char::is_control)
            {
                return Err(CaseError::Path(path.clone()));
            }
            Ok(())
        };
        let name_of = |subtask: u32| {
            graph
                .iter()
                .find(|n| n.id.0 == subtask)
                .map(|n| n.name.clone())
                .ok_or_else(|| CaseError::UnknownSubtask {
                    subtask,
                    known: known_ids(graph),
                })
        };
        match &mut self {
            Check::AnswerText { text } => text_ok(text)?,
            Check::AnswerNumber { number, tolerance } => {
                if !number.is_finite() || !tolerance.is_finite() || *tolerance < 0.0 {
                    return Err(CaseError::Number);
                }
            }
            Check::FileExists { path } => path_ok(path)?,
            Check::FileText { path, text } => {
                path_ok(path)?;
                text_ok(text)?;
            }
            Check::StepDone { subtask, name } | Check::StepNotDone { subtask, name } => {
                *name = name_of(*subtask)?;
            }
        }
        Ok(self)
    }
}

fn known_ids(graph: &[GraphNode]) -> String {
    let ids: Vec<String> = graph.iter().map(|n| n.id.0.to_string()).collect();
    if ids.is_empty() {
        "none".into()
    } else {
        ids.join(", ")
    }
}

/// A stored case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Case {
    pub id: CaseId,
    pub name: String,
    pub tags: Vec<String>,
    /// What was asked.
    pub task: String,
    /// The reviewed run: its log is the recording a suite's replay
    /// answers from, and what each later run's first divergence is
    /// measured against. A case keeps its run from the retentions.
    pub run_id: RunId,
    pub plan_id: PlanId,
    /// The reviewed plan: its subtasks, their dependencies, states and
    /// results.
    pub graph: Vec<GraphNode>,
    /// The reviewed run's answer.
    pub answer: Option<String>,
    /// The files the run started with, kept with the case (a copy).
    pub inputs: Vec<InputFile>,
    pub checks: Vec<Check>,
    /// A retired case stays on the Cases page but no suite runs it.
    pub retired: bool,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The body of `POST /api/cases`: a run reviewed good becomes a case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewCase {
    pub run_id: RunId,
    /// What the team calls it (default: the plan's title).
    #[serde(default)]
    #[schemars(length(max = CASE_NAME))]
    pub name: Option<String>,
    #[serde(default)]
    #[schemars(length(max = CASE_TAGS))]
    pub tags: Vec<String>,
    #[serde(default)]
    #[schemars(length(max = CASE_CHECKS))]
    pub checks: Vec<Check>,
}

/// The body of `PATCH /api/cases/{id}`: what changes (absent: stays).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CasePatch {
    #[serde(default)]
    #[schemars(length(min = 1, max = CASE_NAME))]
    pub name: Option<String>,
    #[serde(default)]
    #[schemars(length(max = CASE_TAGS))]
    pub tags: Option<Vec<String>>,
    /// Replaces every check.
    #[serde(default)]
    #[schemars(length(max = CASE_CHECKS))]
    pub checks: Option<Vec<Check>>,
    /// `true` retires the case (no suite runs it), `false` brings it back.
    #[serde(default)]
    pub retired: Option<bool>,
}

/// Why a case was not made or changed; nothing was stored.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CaseError {
    #[error("a case's name has 1 to {CASE_NAME} characters, not {0}")]
    Name(usize),
    #[error("a case has at most {CASE_TAGS} tags of 1 to {TAG_CHARS} letters, digits, '-' or '_'")]
    Tags,
    #[error("a case has at most {CASE_CHECKS} checks (got {0})")]
    TooManyChecks(usize),
    #[error("a check's text has 1 to {CHECK_TEXT} characters, not {0}")]
    CheckText(usize),
    #[error("a number check needs a finite number and a tolerance of 0 or more")]
    Number,
    #[error("{0:?} is not a file path of a run's workspace (relative, without '..', at most {CHECK_PATH} characters)")]
    Path(String),
    #[error("the case's plan has no subtask {subtask} (its subtasks are {known})")]
    UnknownSubtask { subtask: u32, known: String },
}

/// The case's name trimmed, or why not.
pub fn checked_name(name: &str) -> Result<String, CaseError> {
    let name = name.trim();
    let chars = name.chars().count();
    if chars == 0 || chars > CASE_NAME {
        return Err(CaseError::Name(chars));
    }
    Ok(name.to_string())
}

/// Tags trimmed, lower case, sorted and without repeats, or why not.
pub fn checked_tags(tags: Vec<String>) -> Result<Vec<String>, CaseError> {
    let mut out: Vec<String> = tags
        .into_iter()
        .map(|t| t.trim().to_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    out.sort();
    out.dedup();
    let usable = |t: &String| {
        t.chars().count() <= TAG_CHARS
            && t.chars()
                .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
    };
    if out.len() > CASE_TAGS || !out.iter().all(usable) {
        return Err(CaseError::Tags);
    }
    Ok(out)
}

/// Checks kept for a case of `graph`, or the first reason one is not.
pub fn checked_checks(checks: Vec<Check>, graph: &[GraphNode]) -> Result<Vec<Check>, CaseError> {
    if checks.len() > CASE_CHECKS {
        return Err(CaseError::TooManyChecks(checks.len()));
    }
    checks.into_iter().map(|c| c.checked(graph)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan_engine::{SubtaskId, SubtaskState};

    fn graph() -> Vec<GraphNode> {
        vec![
            GraphNode {
                id: SubtaskId(1),
                name: "fetch".into(),
                depends_on: vec![],
                state: SubtaskState::Done,
                result: Some("ok".into()),
            },
            GraphNode {
                id: SubtaskId(2),
                name: "sum".into(),
                depends_on: vec![SubtaskId(1)],
                state: SubtaskState::Done,
                result: None,
            },
        ]
    }

    #[test]
    fn the_numbers_of_a_text_are_read_with_their_separators_and_signs() {
        assert_eq!(
            numbers_in("Total: 1,234.5 USD, down -3 from v2 (x86), 7."),
            vec![1234.5, -3.0, 7.0]
        );
        assert_eq!(numbers_in("no numbers"), Vec::<f64>::new());
        assert_eq!(numbers_in("12,34"), vec![1234.0]);
    }

    #[test]
    fn each_kind_of_check_is_judged_on_what_the_run_left() {
        let mut evidence = Evidence {
            answer: Some("The total is 1,234.5 dollars.\nAll   Good".into()),
            ..Evidence::default()
        };
        evidence
            .files
            .insert("out/report.md".into(), Some("# Report\nsum=42".into()));
        evidence.files.insert("missing.txt".into(), None);
        evidence.done.insert(1, true);
        evidence.done.insert(2, false);
        let judged = |check: Check| check.judge(&evidence).passed;
        assert!(judged(Check::AnswerText {
            text: "all good".into()
        }));
        assert!(!judged(Check::AnswerText {
            text: "all bad".into()
        }));
        assert!(judged(Check::AnswerNumber {
            number: 1234.5,
            tolerance: 0.0
        }));
        assert!(judged(Check::AnswerNumber {
            number: 1234.0,
            tolerance: 0.5
        }));
        assert!(!judged(Check::AnswerNumber {
            number: 1234.0,
            tolerance: 0.0
        }));
        assert!(judged(Check::FileExists {
            path: "out/report.md".into()
        }));
        assert!(!judged(Check::FileExists {
            path: "missing.txt".into()
        }));
        assert!(judged(Check::FileText {
            path: "out/report.md".into(),
            text: "SUM=42".into()
        }));
        assert!(!judged(Check::FileText {
            path: "missing.txt".into(),
            text: "x".into()
        }));
        assert!(judged(Check::StepDone {
            subtask: 1,
            name: String::new()
        }));
        assert!(!judged(Check::StepDone {
            subtask: 2,
            name: String::new()
        }));
        assert!(!judged(Check::StepDone {
            subtask: 3,
            name: String::new()
        }));
        assert!(judged(Check::StepNotDone {
            subtask: 3,
            name: String::new()
        }));
        let said = Check::AnswerNumber {
            number: 9.0,
            tolerance: 0.0,
        }
        .judge(&evidence);
        assert_eq!(said.detail, "the answer states 1234.5");
    }

    #[test]
    fn a_check_is_kept_trimmed_and_named_or_refused_with_its_reason() {
        let kept = Check::StepDone {
            subtask: 2,
            name: "whatever".into(),
        }
        .checked(&graph())
        .unwrap();
        assert_eq!(
            kept,
            Check::StepDone {
                subtask: 2,
                name: "sum".into()
            }
        );
        assert_eq!(
            Check::StepNotDone {
                subtask: 9,
                name: String::new()
            }
            .checked(&graph())
            .unwrap_err()
            .to_string(),
            "the case's plan has no subtask 9 (its subtasks are 1, 2)"
        );
        assert_eq!(
            Check::FileExists {
                path: " ./out/a.txt ".into()
            }
            .checked(&graph()),
            Ok(Check::FileExists {
                path: "out/a.txt".into()
            })
        );
        for bad in ["../etc/passwd", "/etc/passwd", "a/../../b", ""] {
            assert!(
                Check::FileExists { path: bad.into() }
                    .checked(&graph())
                    .is_err(),
                "{bad}"
            );
        }
        assert_eq!(
            Check::AnswerText { text: "  ".into() }.checked(&graph()),
            Err(CaseError::CheckText(0))
        );
        assert_eq!(
            Check::AnswerNumber {
                number: 1.0,
                tolerance: -1.0
            }
            .checked(&graph()),
            Err(CaseError::Number)
        );
        assert_eq!(
            checked_checks(
                vec![Check::AnswerText { text: "a".into() }; CASE_CHECKS + 1],
                &graph()
            ),
            Err(CaseError::TooManyChecks(CASE_CHECKS + 1))
        );
    }

    #[test]
    fn tags_are_kept_lower_case_sorted_and_once() {
        assert_eq!(
            checked_tags(vec![
                " Weekly ".into(),
                "csv".into(),
                "weekly".into(),
                "".into()
            ]),
            Ok(vec!["csv".to_string(), "weekly".to_string()])
        );
        assert_eq!(checked_tags(vec!["a b".into()]), Err(CaseError::Tags));
        assert_eq!(checked_name("  Sales  "), Ok("Sales".to_string()));
        assert_eq!(checked_name(" "), Err(CaseError::Name(0)));
    }

    #[test]
    fn a_check_reads_and_writes_its_kind_by_name() {
        let check: Check =
            serde_json::from_value(serde_json::json!({"kind": "answer_number", "number": 42}))
                .unwrap();
        assert_eq!(
            check,
            Check::AnswerNumber {
                number: 42.0,
                tolerance: 0.0
            }
        );
        let json = serde_json::to_value(Check::FileText {
            path: "a".into(),
            text: "b".into(),
        })
        .unwrap();
        assert_eq!(json["kind"], "file_text");
    }
}
