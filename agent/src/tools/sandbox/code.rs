//! The code tools: [`CodeTools`] offers `run_python` (when python3 runs
//! in the jail) and `run_shell` on one workspace, checks their arguments,
//! keeps the workspace's quota around each run and adds what the model
//! would otherwise misread (a missing package, a silent run, a line break
//! inside a string literal) to the report.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use super::capture::{bytes, quota_note, room, seconds, RunOutcome};
use super::detect::WELL_KNOWN;
use super::{Sandbox, SHELL};
use crate::protocol::ToolSpec;
use crate::run::ToolPolicy;
use crate::tools::{ToolBox, ToolError};
use crate::workspace::{Listing, Workspace, WorkspaceError};

pub(super) const CODE_MAX_CHARS: usize = 20_000;
const COMMAND_MAX_CHARS: usize = 4_000;
/// Files written by a silent run that its report shows, and the bytes
/// shown of each.
const WRITTEN_SHOWN: usize = 3;
const WRITTEN_HEAD: usize = 400;
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

    /// The workspace's disk use and entries.
    async fn measure(&self) -> Result<crate::workspace::Usage, WorkspaceError> {
        let ws = self.workspace.clone();
        crate::workspace::off_thread(move || ws.usage_counted()).await
    }

    /// The workspace's disk use, or `None` when it cannot be measured.
    async fn usage(&self) -> Option<u64> {
        let ws = self.workspace.clone();
        crate::workspace::off_thread(move || ws.usage()).await.ok()
    }

    /// The workspace's files, if it can be listed (none when it holds too
    /// many entries: then nothing written is shown).
    async fn listing(&self) -> Option<Listing> {
        let ws = self.workspace.clone();
        crate::workspace::off_thread(move || ws.files()).await.ok()
    }

    /// The files of `now` that are new or changed (in size or time) since
    /// `before`, each with its first lines, read through the workspace
    /// (never through a link); "" when none.
    async fn written_since(&self, before: Listing, now: Listing) -> String {
        let ws = self.workspace.clone();
        crate::workspace::off_thread(move || {
            let mut out = String::new();
            let changed = now
                .files
                .iter()
                .filter(|f| !before.files.contains(f))
                .take(WRITTEN_SHOWN);
            for file in changed {
                let head = ws
                    .read_head(&file.path, WRITTEN_HEAD as u64)
                    .unwrap_or_default();
                let text = match std::str::from_utf8(&head) {
                    Ok(text) => text.to_string(),
                    // Cut inside a character: the whole ones before it.
                    Err(e) if e.error_len().is_none() => {
                        String::from_utf8_lossy(&head[..e.valid_up_to()]).into_owned()
                    }
                    Err(_) => "(binary)".to_string(),
                };
                let more = if file.bytes > head.len() as u64 {
                    "\n…"
                } else {
                    ""
                };
                out.push_str(&format!(
                    "\n--- written: {} ({} bytes) ---\n{}{more}",
                    file.path,
                    file.bytes,
                    text.trim_end()
                ));
            }
            Ok(out)
        })
        .await
        .unwrap_or_default()
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
                // Isolated (`-I`: no current folder on the path, no user
                // site, no PYTHON* variables), so a module the model's
                // file tools planted (`ast.py`) never runs inside the
                // snippet a person approved; SHOW_LAST puts the data stack
                // after the standard library and the workspace last, so
                // the code's own modules import but shadow nothing. `-B`
                // and `-u` stand for the variables `-I` ignores. The code
                // runs under SHOW_LAST, as a notebook cell does.
                vec![
                    python.to_string_lossy().into_owned(),
                    "-I".to_string(),
                    "-B".to_string(),
                    "-u".to_string(),
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
        let quota = self.workspace.quota();
        let listed = self.listing().await;
        let ws = self.workspace.clone();
        let top_before = crate::workspace::off_thread(move || Ok(ws.top_names()))
            .await
            .ok()
            .flatten();
        let measured = self.measure().await;
        let before = measured.as_ref().ok().map(|u| u.bytes);
        let left = room(&self.workspace, measured)?;
        let outcome = self
            .sandbox
            .run_within(
                self.root(),
                program,
                left,
                Some(quota_watch(self.workspace.clone())),
            )
            .await?;
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
            report.push_str(&missing_module_note(module, &self.packages_sentence()));
        }
        if let Some(note) = tool_called_in_code(&outcome.stderr) {
            report.push_str(&note);
        }
        // Code that opened a file nobody gave or wrote (Qwen2.5-1.5B read
        // a "primes.txt" and an "input.txt" in runs given no files): the
        // workspace's real files, so the next call uses them or computes.
        if missing_file(&outcome.stderr) {
            let workspace = self.workspace.clone();
            if let Ok(held) =
                crate::workspace::off_thread(move || Ok(crate::tools::files::holdings(&workspace)))
                    .await
            {
                report.push_str("\n--- note ---\nA file the code opened does not exist. ");
                report.push_str(&held);
            }
        }
        // Past a quota after the run (many files, each within the size
        // limit, written faster than the watchdog looks): what this run
        // added goes until the workspace is within it again.
        // Code stopped mid-run may still be dying in its jail for a few
        // milliseconds: then the workspace is looked at a few times.
        let stopped = outcome.stopped.is_some() || outcome.timed_out;
        let mut reclaimed = Vec::new();
        for _ in 0..if stopped { 5 } else { 1 } {
            let past = match self.measure().await {
                Ok(usage) => self.workspace.past_quota(usage).is_some(),
                Err(_) => true,
            };
            if past {
                let ws = self.workspace.clone();
                let files_before = listed.clone().map(|l| l.files).unwrap_or_default();
                let top_before = top_before.clone().unwrap_or_default();
                reclaimed.extend(
                    crate::workspace::off_thread(
                        move || Ok(ws.reclaim(&top_before, &files_before)),
                    )
                    .await
                    .unwrap_or_default(),
                );
            }
            if stopped {
                tokio::time::sleep(WATCH_EVERY).await;
            }
        }
        if !reclaimed.is_empty() {
            let shown: Vec<&str> = reclaimed.iter().take(5).map(String::as_str).collect();
            let more = reclaimed.len().saturating_sub(shown.len());
            report.push_str(&format!(
                "\n--- note ---\nThe code wrote past the workspace's quota ({} bytes, {} files and \
                 folders); what it added was removed, newest first: {}{}. Write fewer or \
                 smaller files.",
                quota,
                self.workspace.max_entries(),
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        let after = self.usage().await;
        // Code that wrote its result to a file and printed nothing: what it
        // wrote is shown, as a person would open the file (Qwen2.5-1.5B's
        // program wrote the March total to a file, printed nothing, and
        // the model then stated a number of its own).
        // A file rewritten at the same size changes the listing, not the
        // usage (Qwen2.5-1.5B's program sorted sorted.txt in place, was told
        // it changed no file, and "fixed" it into one line).
        // Only a silent run needs it: what it wrote is all it showed.
        let silent = outcome.exit_code == Some(0) && outcome.stdout.trim().is_empty();
        let relisted = match &listed {
            Some(_) if silent => self.listing().await,
            _ => None,
        };
        let wrote = before != after || (relisted.is_some() && relisted != listed);
        if silent && wrote {
            if let (Some(listed), Some(relisted)) = (listed, relisted) {
                report.push_str(&self.written_since(listed, relisted).await);
            }
        }
        if let Some(note) = (name == "run_python")
            .then(|| python_note(&outcome, wrote))
            .flatten()
        {
            report.push_str("\n--- note ---\n");
            report.push_str(note);
        }
        if let Some(note) = quota_note(after, quota, left, &outcome) {
            report.push_str(&note);
        }
        Ok(report)
    }
}

/// How often the quota watchdog measures the workspace at least (a walk
/// of a large workspace waits twice its own duration before the next).
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Resolves, with the reason, once the workspace is past a quota (or can
/// no longer be measured) while code runs in it: the code is stopped
/// there, instead of only between calls.
fn quota_watch(workspace: Workspace) -> futures_util::future::BoxFuture<'static, String> {
    Box::pin(async move {
        let mut pause = WATCH_EVERY;
        loop {
            tokio::time::sleep(pause).await;
            let started = std::time::Instant::now();
            let ws = workspace.clone();
            match crate::workspace::off_thread(move || ws.usage_counted()).await {
                Ok(usage) => {
                    if let Some(why) = workspace.past_quota(usage) {
                        return why;
                    }
                }
                Err(e @ (WorkspaceError::TooManyEntries | WorkspaceError::TooDeep)) => {
                    return e.to_string()
                }
                Err(_) => {}
            }
            pause = WATCH_EVERY.max(started.elapsed() * 2);
        }
    })
}

/// Runs the code (`sys.argv[1]`) as a notebook cell runs: when its last
/// statement is an expression, its value is printed (Qwen2.5-1.5B wrote
/// `sum(int(d) for d in str(2**100))` and, shown nothing, answered a
/// guess). Tracebacks start at the code, not at this runner; the code sees
/// `sys.argv == ['-c']` as under `python3 -c`. Code that does not parse
/// because a one-line string literal holds a line break (a `\n` the model
/// left unescaped in its JSON: it wrote `f.write(w + '\n')` four times
/// after being told) has that break read as `\n`, and stderr says so;
/// code that parses is never changed. The agent's file tools are Python
/// functions here too (`read_file`, `list_files`, `write_file`), and a
/// common module the code uses without importing it is imported when first
/// used, with a line on stderr that says so: across eleven rounds of the
/// task evaluation, Qwen2.5-1.5B's programs failed 29 times on a forgotten
/// `import csv` or `import json` or a call of `read_file`, and a check
/// program that fails cannot catch a wrong number. Names the code defines
/// come first; anything else it did not define is still a `NameError`.
pub(super) const SHOW_LAST: &str = r#"import ast, builtins, importlib, os, sys, traceback
stdlib = [p for p in sys.path if 'packages' not in p]
extra = [p for p in os.environ.get('PYTHONPATH', '').split(':') if p]
sys.path[:] = stdlib + extra + [p for p in sys.path if 'packages' in p] + [os.getcwd()]
del stdlib, extra
src = sys.argv[1]
sys.argv = ['-c']
mended = 0
quoted = 0
def fstring_quotes(line):
    # Python 3.11 ends an f-string at its own quote even inside braces
    # (f'{p['name']}', which 3.12 reads): such a quote becomes the other.
    out, i, n = [], 0, len(line)
    while i < n:
        c = line[i]
        if c in '\'"' and line[i + 1:i + 3] != c * 2:
            fmt = i > 0 and line[i - 1] in 'fF' or i > 1 and line[i - 2:i].lower() in ('rf', 'fr')
            other = '"' if c == "'" else "'"
            out.append(c)
            i += 1
            depth = 0
            while i < n:
                d = line[i]
                if d == '\\' and depth == 0:
                    out.append(line[i:i + 2])
                    i += 2
                    continue
                if fmt and d == '{':
                    if depth == 0 and line[i + 1:i + 2] == '{':
                        out.append('{{')
                        i += 2
                        continue
                    depth += 1
                elif fmt and d == '}' and depth > 0:
                    depth -= 1
                elif d == c:
                    if depth == 0:
                        break
                    d = other
                out.append(d)
                i += 1
            if i < n:
                out.append(c)
                i += 1
            continue
        if c == '#':
            out.append(line[i:])
            break
        out.append(c)
        i += 1
    return ''.join(out)
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
        if str(e.msg).startswith('f-string') and 0 <= n < len(lines) and quoted < 50:
            line = fstring_quotes(lines[n])
            if line != lines[n]:
                lines[n] = line
                src = '\n'.join(lines)
                quoted += 1
                continue
        traceback.print_exception(type(e), e, None)
        sys.exit(1)
if mended:
    print(f'(planboard: read {mended} line break(s) inside string literals as \\n)', file=sys.stderr)
if quoted:
    print(f'(planboard: this is Python {sys.version_info[0]}.{sys.version_info[1]}: a quote inside an f-string\'s braces was read as the other quote, on {quoted} line(s))', file=sys.stderr)
last = None
if tree.body and isinstance(tree.body[-1], ast.Expr):
    last = ast.Expression(tree.body.pop().value)
def read_file(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return f.read()
def list_files(path='.'):
    return sorted(os.listdir(path))
def write_file(path, content):
    with open(path, 'w', encoding='utf-8') as f:
        return f.write(content)
FORGOTTEN = {m: (m, None) for m in ('csv', 'json', 'math', 're', 'os', 'sys', 'collections',
    'statistics', 'datetime', 'itertools', 'functools', 'random', 'string', 'decimal',
    'fractions', 'pathlib', 'glob', 'time', 'io', 'operator', 'heapq', 'bisect', 'textwrap',
    'hashlib', 'calendar', 'ast', 'shutil')}
FORGOTTEN.update({n: ('collections', n) for n in ('Counter', 'defaultdict', 'deque', 'namedtuple')})
FORGOTTEN['Path'] = ('pathlib', 'Path')
class Builtins(dict):
    def __missing__(self, name):
        if name not in FORGOTTEN:
            raise KeyError(name)
        module, attr = FORGOTTEN[name]
        value = importlib.import_module(module)
        if attr is not None:
            value = getattr(value, attr)
        self[name] = value
        print(f'(planboard: the code used {name} without importing it; imported it)', file=sys.stderr)
        return value
helpers = Builtins(vars(builtins))
helpers.update(read_file=read_file, list_files=list_files, write_file=write_file)
scope = {'__name__': '__main__', '__builtins__': helpers}
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
pub(super) fn python_note(outcome: &RunOutcome, wrote: bool) -> Option<&'static str> {
    // The runner's own lines (`(planboard: …)`) are not the code's output.
    let said = |l: &str| !l.trim().is_empty() && !l.starts_with("(planboard: ");
    let quiet = outcome.stdout.trim().is_empty() && !outcome.stderr.lines().any(said);
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

/// Whether the code failed on a file that does not exist (Python's
/// `FileNotFoundError`, a shell's "No such file or directory").
pub(super) fn missing_file(stderr: &str) -> bool {
    stderr.contains("FileNotFoundError") || stderr.contains("No such file or directory")
}

/// The module a Python traceback says is missing (`No module named 'x'`),
/// its top-level name.
/// What the report adds when the code imported a module that is not
/// there. A module for the web gets no "rewrite without it": the jail has
/// no network at all (Qwen2.5-1.5B, its fetch refused on a machine without
/// internet, wrote the same download with `requests` three times and gave
/// up the count of primes it could have computed).
pub(super) fn missing_module_note(module: &str, packages: &str) -> String {
    const WEB: [&str; 5] = ["requests", "httpx", "aiohttp", "urllib3", "bs4"];
    if WEB.contains(&module) {
        format!(
            "\n--- note ---\n{module} is not installed here, and the code runs with no \
             network: nothing can be downloaded from it. If what the subtask needs can be \
             computed, compute it in the code; use the files in the current directory for data."
        )
    } else {
        format!(
            "\n--- note ---\n{module} is not installed here and cannot be installed (no \
             network). {packages} Rewrite the code without {module}."
        )
    }
}

/// A note for code that called one of the agent's web tools as if it were
/// a Python function (Qwen2.5-1.5B's programs called the tools it had seen
/// in the results; the file tools are functions in the code since then,
/// the web ones cannot be: the jail has no network): what to do instead.
pub(super) fn tool_called_in_code(stderr: &str) -> Option<String> {
    let rest = stderr.split("NameError: name '").nth(1)?;
    let name = rest.split('\'').next()?;
    let tool = crate::tools::web::WEB_TOOLS.iter().find(|t| **t == name)?;
    Some(format!(
        "\n--- note ---\n{tool} is the agent's tool, not a Python function: code runs with no \
         network; compute what can be computed, and use the files in the current directory \
         for data."
    ))
}

pub(super) fn missing_module(stderr: &str) -> Option<&str> {
    let rest = stderr
        .split("ModuleNotFoundError: No module named '")
        .nth(1)?;
    let name = rest.split('\'').next()?;
    let top = name.split('.').next()?;
    (!top.is_empty()).then_some(top)
}
