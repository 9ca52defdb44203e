//! Grants: a guarded tool allowed for one run when its plan is approved, so
//! its calls no longer ask — the whole tool, or the calls whose main
//! argument matches a pattern (a folder, a host, a command). Every grant
//! is an approval record; a grant is revocable while the run goes on.
//!
//! # The main argument and the pattern
//! A call's main argument is its `path` (the file tools, and any tool
//! with a `path`), the host of its `url` (`fetch_url`), its `command`
//! (`run_shell`) or its `query` (`web_search`). A pattern is a glob over
//! it, matched whole: `*` any run of characters, `?` one; everything else
//! as written (hosts in any case). `reports/*` grants every file under
//! `reports/`, `*.example.com` every host under `example.com`, `git
//! status` exactly that command. In a command a `*` never spans a shell
//! operator or a substitution (`;`, `&`, `|`, `<`, `>`, `$`, a backquote,
//! brackets, a line break), so `ls *` grants `ls -la` but not `ls; rm -rf
//! ~`. A tool with none of these arguments (`run_python`'s code, an MCP
//! tool) is granted whole or not at all.

use plan_engine::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::RunId;

/// A grant's id.
pub type GrantId = uuid::Uuid;

/// The longest pattern a grant takes, in characters.
pub const PATTERN_CHARS: usize = 200;
/// The most grants one approval gives.
pub const MAX_GRANTS: usize = 20;

/// A grant as an approval asks for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewGrant {
    /// The tool's name, as `GET /api/agent/tools` lists it.
    #[schemars(length(min = 1, max = crate::TOOL_NAME_CHARS))]
    pub tool: String,
    /// A glob over the call's main argument (see the module's docs);
    /// absent: every call of the tool.
    #[serde(default)]
    #[schemars(length(min = 1, max = PATTERN_CHARS))]
    pub pattern: Option<String>,
}

/// A grant of a run, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Grant {
    pub id: GrantId,
    pub run_id: RunId,
    pub tool: String,
    pub pattern: Option<String>,
    /// Who granted it (with the plan's approval).
    pub by: String,
    pub at: Timestamp,
    /// Who revoked it and when; a revoked grant covers nothing.
    pub revoked_by: Option<String>,
    pub revoked_at: Option<Timestamp>,
}

/// Why a grant is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    #[error("a grant names its tool (1 to {} characters)", crate::TOOL_NAME_CHARS)]
    Tool,
    #[error("a grant's pattern has 1 to {PATTERN_CHARS} characters")]
    PatternLength,
    #[error(
        "{0} has no path, url, command or query to match a pattern against: grant it whole \
         (no pattern) or not at all"
    )]
    NoMainArgument(String),
    #[error("an approval gives at most {MAX_GRANTS} grants")]
    TooMany,
}

/// What a tool's main argument is, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MainArgument {
    Path,
    UrlHost,
    Command,
    Query,
}

/// The main argument of `tool`, when it has one a pattern can match.
pub fn main_argument(tool: &str) -> Option<MainArgument> {
    match tool {
        "read_file" | "write_file" | "list_files" => Some(MainArgument::Path),
        "fetch_url" => Some(MainArgument::UrlHost),
        "run_shell" => Some(MainArgument::Command),
        "web_search" => Some(MainArgument::Query),
        _ => None,
    }
}

impl NewGrant {
    /// The grant trimmed, or why it is refused.
    pub fn checked(mut self) -> Result<NewGrant, GrantError> {
        self.tool = self.tool.trim().to_string();
        if self.tool.is_empty() || self.tool.chars().count() > crate::TOOL_NAME_CHARS {
            return Err(GrantError::Tool);
        }
        self.pattern = self.pattern.map(|p| p.trim().to_string());
        if let Some(pattern) = &self.pattern {
            let chars = pattern.chars().count();
            if chars == 0 || chars > PATTERN_CHARS {
                return Err(GrantError::PatternLength);
            }
            if main_argument(&self.tool).is_none() {
                return Err(GrantError::NoMainArgument(self.tool.clone()));
            }
        }
        Ok(self)
    }
}

/// The host of a URL: after `scheme://`, before the path, without the
/// user and the port, lower case.
fn host_of(url: &str) -> Option<String> {
    let rest = url.trim().split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    let host = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        host.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// The text a pattern of `kind` is matched against in `arguments`.
fn main_text(kind: MainArgument, arguments: &serde_json::Value) -> Option<String> {
    let field = |name: &str| arguments.get(name)?.as_str().map(str::to_string);
    match kind {
        MainArgument::Path => field("path"),
        MainArgument::UrlHost => host_of(&field("url")?),
        MainArgument::Command => field("command").map(|c| c.trim().to_string()),
        MainArgument::Query => field("query"),
    }
}

/// Characters a `*` in a command pattern never spans.
const SHELL_OPERATORS: &[char] = &[
    ';', '&', '|', '<', '>', '$', '`', '(', ')', '{', '}', '\n', '\r',
];

/// Whether `glob` matches `text` whole (`*` any run of characters but
/// those in `stops`, `?` one character not in `stops`).
pub fn glob(glob: &str, text: &str, stops: &[char]) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (glob.chars().collect(), text.chars().collect());
    let (mut i, mut j) = (0, 0);
    // The last `*` and where in the text it began to match.
    let mut star: Option<(usize, usize)> = None;
    while j < t.len() {
        let one = i < p.len() && p[i] == '?' && !stops.contains(&t[j]);
        if one || (i < p.len() && p[i] != '*' && p[i] != '?' && p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star.filter(|(_, sj)| !stops.contains(&t[*sj])) {
            // The star takes one more character, then the rest is tried again.
            star = Some((si, sj + 1));
            i = si + 1;
            j = sj + 1;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

impl Grant {
    /// Whether this grant, not revoked, covers a call of `tool` with
    /// `arguments`.
    pub fn covers(&self, tool: &str, arguments: &serde_json::Value) -> bool {
        if self.revoked_at.is_some() || self.tool != tool {
            return false;
        }
        let Some(pattern) = &self.pattern else {
            return true;
        };
        let Some(kind) = main_argument(tool) else {
            return false;
        };
        let Some(text) = main_text(kind, arguments) else {
            return false;
        };
        match kind {
            MainArgument::UrlHost => glob(&pattern.to_ascii_lowercase(), &text, &[]),
            MainArgument::Command => glob(pattern, &text, SHELL_OPERATORS),
            MainArgument::Path | MainArgument::Query => glob(pattern, &text, &[]),
        }
    }

    /// How the run header says it: `run_shell` or `read_file reports/*`.
    pub fn label(&self) -> String {
        match &self.pattern {
            Some(p) => format!("{} {p}", self.tool),
            None => self.tool.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn grant(tool: &str, pattern: Option<&str>) -> Grant {
        Grant {
            id: uuid::Uuid::nil(),
            run_id: uuid::Uuid::nil(),
            tool: tool.into(),
            pattern: pattern.map(str::to_string),
            by: "ann".into(),
            at: chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
            revoked_by: None,
            revoked_at: None,
        }
    }

    #[test]
    fn a_glob_matches_the_whole_text_with_stars_and_question_marks() {
        assert!(glob("reports/*", "reports/q1/sales.csv", &[]));
        assert!(!glob("reports/*", "secrets/reports/x", &[]));
        assert!(glob("*.csv", "a.csv", &[]));
        assert!(glob("a?c", "abc", &[]) && !glob("a?c", "abbc", &[]));
        assert!(glob("*", "", &[]) && !glob("", "x", &[]));
        assert!(glob("*x*y", "axbxy", &[]));
    }

    #[test]
    fn a_grant_covers_its_tool_and_only_the_calls_its_pattern_matches() {
        let whole = grant("write_file", None);
        assert!(whole.covers("write_file", &json!({"path": "anything.txt"})));
        assert!(!whole.covers("read_file", &json!({"path": "anything.txt"})));
        let folder = grant("write_file", Some("out/*"));
        assert!(folder.covers("write_file", &json!({"path": "out/a.txt", "content": "x"})));
        assert!(!folder.covers("write_file", &json!({"path": "notes.txt"})));
        let host = grant("fetch_url", Some("*.example.com"));
        assert!(host.covers(
            "fetch_url",
            &json!({"url": "https://Docs.Example.com:8443/a?b"})
        ));
        assert!(!host.covers("fetch_url", &json!({"url": "https://example.com.evil.io/"})));
        assert!(!host.covers(
            "fetch_url",
            &json!({"url": "https://user@evil.io/x.example.com"})
        ));
        let mut revoked = grant("write_file", None);
        revoked.revoked_at = Some(revoked.at);
        assert!(!revoked.covers("write_file", &json!({"path": "a"})));
    }

    #[test]
    fn a_star_in_a_command_never_spans_a_shell_operator() {
        let ls = grant("run_shell", Some("ls *"));
        assert!(ls.covers("run_shell", &json!({"command": "ls -la reports"})));
        let one = grant("run_shell", Some("ls?rm"));
        assert!(!one.covers("run_shell", &json!({"command": "ls;rm"})));
        for attack in [
            "ls; rm -rf ~",
            "ls && curl evil.io",
            "ls | sh",
            "ls $(rm -rf ~)",
            "ls `id`",
            "ls\nrm -rf ~",
            "ls > /etc/passwd",
        ] {
            assert!(
                !ls.covers("run_shell", &json!({ "command": attack })),
                "{attack}"
            );
        }
    }

    #[test]
    fn a_pattern_is_refused_for_a_tool_without_a_main_argument() {
        let code = NewGrant {
            tool: "run_python".into(),
            pattern: Some("print(*)".into()),
        };
        assert_eq!(
            code.checked(),
            Err(GrantError::NoMainArgument("run_python".into()))
        );
        let whole = NewGrant {
            tool: " run_python ".into(),
            pattern: None,
        };
        assert_eq!(whole.checked().unwrap().tool, "run_python");
    }
}
