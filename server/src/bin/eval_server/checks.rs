//! `task-eval`'s check language: what a task file says a right run looks
//! like, read from JSON and judged against what the run left behind (its
//! answer, its log of tool calls, its mode, the files in its workspace).
//! `task-eval` includes it with `#[path]`; it lives beside `mod.rs` so
//! Cargo does not take it for a binary.
//!
//! A check is an object with one kind (and, for a few kinds, a modifier):
//!
//! | check | right when |
//! |---|---|
//! | `{"first_number": 42, "tolerance": 0}` | the first number of the answer the task does not already name is 42 (a hedge between two numbers fails) |
//! | `{"answer_has_number": 42, "tolerance": 0}` | some number of the answer is 42 |
//! | `{"answer_has": "term"}`, `{"answer_has_all": [...]}` | the answer names every term |
//! | `{"answer_has_any": [...]}` | the answer names at least one |
//! | `{"answer_lacks": [...]}` | the answer names none |
//! | `{"answer_max_words": 80}`, `{"answer_min_words": 20}` | words (split at white space) |
//! | `{"lines": 3}` | the answer has exactly 3 non-empty lines |
//! | `{"no_tool_calls": true}` | the run's log holds no `tool_call` entry |
//! | `{"mode": "emergent"}` | the run was planned in that mode |
//! | `{"file": {"path": "out.csv", …}}` | the workspace holds the file (below) |
//! | `{"png": "chart.png"}` | the file starts with PNG's signature |
//! | `{"xlsx": "book.xlsx", "has": [...]}` | the file is a zip with `xl/workbook.xml`; its sheets and strings name the terms |
//!
//! A `file` check may add: `lines` (exactly these non-empty lines,
//! trimmed), `line_count`, `has` (terms), `csv_header` (the first line's
//! columns, case-insensitive), `csv_rows` (non-empty lines after the
//! header), `json_keys` (the top-level object has them), `json_values`
//! (its values: numbers within 0.005, strings case-insensitive), `png`,
//! `xlsx` (`true`). The file must be at the path the check names.
//!
//! A term is matched case-insensitively as a word: `Sam` is not in
//! "same", `6` is not in "16", "60" or "6.5"; a term ending in `*` is a
//! prefix (`cat*` is in "cats").

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::{Map, Value};

/// What one run left to be judged.
pub struct Evidence<'a> {
    /// The task's own text (its numbers are not the answer's).
    pub task: &'a str,
    pub answer: &'a str,
    /// `tool_call` entries on the run's log.
    pub tool_calls: usize,
    /// The mode the run was planned in (`simple`, `complex`, `emergent`).
    pub mode: Option<&'a str>,
    /// The files the checks name that the workspace holds, by the check's path.
    pub files: &'a BTreeMap<String, Vec<u8>>,
}

pub enum Check {
    FirstNumber {
        number: f64,
        tolerance: f64,
    },
    HasNumber {
        number: f64,
        tolerance: f64,
    },
    HasAll(Vec<String>),
    HasAny(Vec<String>),
    Lacks(Vec<String>),
    MaxWords(usize),
    MinWords(usize),
    Lines(usize),
    NoToolCalls,
    Mode(String),
    /// Boxed: much larger than the other checks.
    File(Box<FileCheck>),
}

#[derive(Default)]
pub struct FileCheck {
    pub path: String,
    pub lines: Option<Vec<String>>,
    pub line_count: Option<usize>,
    pub has: Vec<String>,
    pub csv_header: Option<Vec<String>>,
    pub csv_rows: Option<usize>,
    pub json_keys: Vec<String>,
    pub json_values: Map<String, Value>,
    pub png: bool,
    pub xlsx: bool,
}

/// PNG's first eight bytes.
const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

fn number(v: &Value) -> Result<f64, String> {
    v.as_f64().ok_or_else(|| format!("{v} is not a number"))
}

fn count(v: &Value) -> Result<usize, String> {
    v.as_u64()
        .map(|n| n as usize)
        .ok_or_else(|| format!("{v} is not a count"))
}

fn text(v: &Value) -> Result<String, String> {
    match v.as_str() {
        Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
        _ => Err(format!("{v} is not a non-empty string")),
    }
}

fn texts(v: &Value) -> Result<Vec<String>, String> {
    match v {
        Value::Array(items) if !items.is_empty() => items.iter().map(text).collect(),
        Value::String(_) => Ok(vec![text(v)?]),
        _ => Err(format!("{v} is not a list of strings")),
    }
}

fn flag(v: &Value) -> Result<bool, String> {
    v.as_bool()
        .ok_or_else(|| format!("{v} is not true or false"))
}

impl Check {
    /// A check from the task file, or why it is not one.
    pub fn parse(v: &Value) -> Result<Check, String> {
        let obj = v
            .as_object()
            .ok_or_else(|| format!("a check is an object, not {v}"))?;
        let kinds: Vec<&str> = obj
            .keys()
            .map(String::as_str)
            .filter(|k| !["tolerance", "has"].contains(k))
            .collect();
        let [kind] = kinds.as_slice() else {
            return Err(format!("a check names exactly one kind: {v}"));
        };
        let kind = *kind;
        let modifiers: &[&str] = match kind {
            "first_number" | "answer_has_number" => &["tolerance"],
            "xlsx" => &["has"],
            _ => &[],
        };
        if let Some(extra) = obj
            .keys()
            .find(|k| k.as_str() != kind && !modifiers.contains(&k.as_str()))
        {
            return Err(format!("`{extra}` does not go with `{kind}`: {v}"));
        }
        let arg = obj.get(kind).unwrap_or(&Value::Null);
        let tolerance = match obj.get("tolerance") {
            Some(t) => number(t)?,
            None => 0.0,
        };
        let what = |e: String| format!("{kind}: {e}");
        Ok(match kind {
            "first_number" => Check::FirstNumber {
                number: number(arg).map_err(what)?,
                tolerance,
            },
            "answer_has_number" => Check::HasNumber {
                number: number(arg).map_err(what)?,
                tolerance,
            },
            "answer_has" | "answer_has_all" => Check::HasAll(texts(arg).map_err(what)?),
            "answer_has_any" => Check::HasAny(texts(arg).map_err(what)?),
            "answer_lacks" => Check::Lacks(texts(arg).map_err(what)?),
            "answer_max_words" => Check::MaxWords(count(arg).map_err(what)?),
            "answer_min_words" => Check::MinWords(count(arg).map_err(what)?),
            "lines" => Check::Lines(count(arg).map_err(what)?),
            "no_tool_calls" => {
                if !flag(arg).map_err(what)? {
                    return Err(format!("no_tool_calls is only ever true: {v}"));
                }
                Check::NoToolCalls
            }
            "mode" => {
                let mode = text(arg).map_err(what)?;
                if !["simple", "complex", "emergent"].contains(&mode.as_str()) {
                    return Err(format!("mode is simple, complex or emergent: {v}"));
                }
                Check::Mode(mode)
            }
            "file" => Check::File(Box::new(FileCheck::parse(arg)?)),
            "png" => Check::File(Box::new(FileCheck {
                path: text(arg).map_err(what)?,
                png: true,
                ..FileCheck::default()
            })),
            "xlsx" => Check::File(Box::new(FileCheck {
                path: text(arg).map_err(what)?,
                xlsx: true,
                has: match obj.get("has") {
                    Some(has) => texts(has).map_err(what)?,
                    None => Vec::new(),
                },
                ..FileCheck::default()
            })),
            other => return Err(format!("no check is called `{other}`: {v}")),
        })
    }

    /// The workspace file this check reads, if any.
    pub fn file(&self) -> Option<&str> {
        match self {
            Check::File(f) => Some(f.path.as_str()),
            _ => None,
        }
    }

    /// Right, or why not.
    pub fn judge(&self, e: &Evidence<'_>) -> Result<(), String> {
        let answer = e.answer;
        match self {
            Check::FirstNumber { number, tolerance } => {
                let given = numbers(e.task);
                let first = numbers(answer)
                    .into_iter()
                    .find(|n| !given.iter().any(|g| (g - n).abs() < 1e-9));
                match first {
                    Some(n) if (n - number).abs() <= tolerance.max(1e-9) => Ok(()),
                    Some(n) => Err(format!("first number {n}, expected {number}")),
                    None => Err(format!("no number; expected {number}")),
                }
            }
            Check::HasNumber { number, tolerance } => {
                if numbers(answer)
                    .iter()
                    .any(|n| (n - number).abs() <= tolerance.max(1e-9))
                {
                    Ok(())
                } else {
                    Err(format!("does not state {number}"))
                }
            }
            Check::HasAll(terms) => {
                let missing: Vec<&str> = terms
                    .iter()
                    .filter(|t| !has_term(answer, t))
                    .map(String::as_str)
                    .collect();
                if missing.is_empty() {
                    Ok(())
                } else {
                    Err(format!("does not name {}", missing.join(", ")))
                }
            }
            Check::HasAny(terms) => {
                if terms.iter().any(|t| has_term(answer, t)) {
                    Ok(())
                } else {
                    Err(format!("names none of {}", terms.join(", ")))
                }
            }
            Check::Lacks(terms) => match terms.iter().find(|t| has_term(answer, t)) {
                Some(t) => Err(format!("also names {t}")),
                None => Ok(()),
            },
            Check::MaxWords(most) => {
                let words = answer.split_whitespace().count();
                if words <= *most {
                    Ok(())
                } else {
                    Err(format!("{words} words, at most {most} asked"))
                }
            }
            Check::MinWords(least) => {
                let words = answer.split_whitespace().count();
                if words >= *least {
                    Ok(())
                } else {
                    Err(format!("{words} words, at least {least} expected"))
                }
            }
            Check::Lines(want) => {
                let got = answer.lines().filter(|l| !l.trim().is_empty()).count();
                if got == *want {
                    Ok(())
                } else {
                    Err(format!("{got} lines, {want} asked"))
                }
            }
            Check::NoToolCalls => match e.tool_calls {
                0 => Ok(()),
                n => Err(format!("{n} tool calls where none was needed")),
            },
            Check::Mode(want) => match e.mode {
                Some(mode) if mode.eq_ignore_ascii_case(want) => Ok(()),
                Some(mode) => Err(format!("planned {mode}, {want} expected")),
                None => Err(format!("no mode; {want} expected")),
            },
            Check::File(f) => match e.files.get(&f.path) {
                Some(bytes) => f.judge(bytes),
                None => Err(format!("no {} in the workspace", f.path)),
            },
        }
    }
}

impl FileCheck {
    fn parse(v: &Value) -> Result<FileCheck, String> {
        let obj = v
            .as_object()
            .ok_or_else(|| format!("file: an object with its path, not {v}"))?;
        let mut check = FileCheck::default();
        for (key, arg) in obj {
            let what = |e: String| format!("file.{key}: {e}");
            match key.as_str() {
                "path" => check.path = text(arg).map_err(what)?,
                "lines" => {
                    // An empty list is a file with nothing in it.
                    let lines = match arg {
                        Value::Array(items) if items.is_empty() => Vec::new(),
                        _ => texts(arg).map_err(what)?,
                    };
                    check.lines = Some(lines);
                }
                "line_count" => check.line_count = Some(count(arg).map_err(what)?),
                "has" => check.has = texts(arg).map_err(what)?,
                "csv_header" => check.csv_header = Some(texts(arg).map_err(what)?),
                "csv_rows" => check.csv_rows = Some(count(arg).map_err(what)?),
                "json_keys" => check.json_keys = texts(arg).map_err(what)?,
                "json_values" => {
                    check.json_values = arg
                        .as_object()
                        .filter(|m| !m.is_empty())
                        .cloned()
                        .ok_or_else(|| what(format!("{arg} is not an object of values")))?;
                }
                "png" => check.png = flag(arg).map_err(what)?,
                "xlsx" => check.xlsx = flag(arg).map_err(what)?,
                other => return Err(format!("file: no check is called `{other}`: {v}")),
            }
        }
        if check.path.is_empty() {
            return Err(format!("file: the path is missing: {v}"));
        }
        if check.png && check.xlsx {
            return Err(format!("file: png or xlsx, not both: {v}"));
        }
        Ok(check)
    }

    /// The file's bytes against every part of the check.
    fn judge(&self, bytes: &[u8]) -> Result<(), String> {
        let name = &self.path;
        if self.png && !bytes.starts_with(PNG_SIGNATURE) {
            return Err(format!("{name} is not a PNG image"));
        }
        let text = if self.xlsx {
            xlsx_text(name, bytes)?
        } else if self.png {
            String::new()
        } else {
            String::from_utf8_lossy(bytes).into_owned()
        };
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        if let Some(want) = &self.lines {
            if lines != want.iter().map(|l| l.trim()).collect::<Vec<_>>() {
                return Err(format!("{name} holds {lines:?}"));
            }
        }
        if let Some(want) = self.line_count {
            if lines.len() != want {
                return Err(format!("{name} has {} lines, {want} expected", lines.len()));
            }
        }
        let missing: Vec<&str> = self
            .has
            .iter()
            .filter(|t| !has_term(&text, t))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(format!("{name} does not name {}", missing.join(", ")));
        }
        if let Some(want) = &self.csv_header {
            let got: Vec<String> = lines
                .first()
                .copied()
                .map(csv_fields)
                .unwrap_or_default()
                .iter()
                .map(|f| f.to_lowercase())
                .collect();
            let want: Vec<String> = want.iter().map(|w| w.trim().to_lowercase()).collect();
            if got != want {
                return Err(format!("{name}'s header is {got:?}, {want:?} expected"));
            }
        }
        if let Some(want) = self.csv_rows {
            let rows = lines.len().saturating_sub(1);
            if rows != want {
                return Err(format!(
                    "{name} has {rows} rows under its header, {want} expected"
                ));
            }
        }
        if !self.json_keys.is_empty() || !self.json_values.is_empty() {
            let value: Value =
                serde_json::from_str(&text).map_err(|e| format!("{name} is not JSON: {e}"))?;
            let obj = value
                .as_object()
                .ok_or_else(|| format!("{name} is JSON but not an object"))?;
            if let Some(key) = self
                .json_keys
                .iter()
                .find(|k| !obj.contains_key(k.as_str()))
            {
                return Err(format!("{name} has no key {key}"));
            }
            for (key, want) in &self.json_values {
                match obj.get(key) {
                    Some(got) if same_value(got, want) => {}
                    Some(got) => return Err(format!("{name}: {key} is {got}, {want} expected")),
                    None => return Err(format!("{name} has no key {key}")),
                }
            }
        }
        Ok(())
    }
}

/// The text of an xlsx's workbook, sheets and shared strings (its XML as
/// it is), or why the file is no xlsx.
fn xlsx_text(name: &str, bytes: &[u8]) -> Result<String, String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| format!("{name} is not a zip, as an xlsx is: {e}"))?;
    if archive.index_for_name("xl/workbook.xml").is_none() {
        return Err(format!("{name} is a zip without xl/workbook.xml"));
    }
    let parts: Vec<String> = archive
        .file_names()
        .filter(|n| n.starts_with("xl/") && n.ends_with(".xml"))
        .map(str::to_string)
        .collect();
    let mut text = String::new();
    for part in parts {
        let mut file = archive
            .by_name(&part)
            .map_err(|e| format!("{name}: {part}: {e}"))?;
        file.read_to_string(&mut text)
            .map_err(|e| format!("{name}: {part}: {e}"))?;
        text.push('\n');
    }
    Ok(text)
}

/// A CSV line's fields, trimmed, quotes taken off (`""` inside quotes is one `"`).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field).trim().to_string()),
            c => field.push(c),
        }
    }
    fields.push(field.trim().to_string());
    fields
}

/// A JSON value as the check wants it: numbers within 0.005, strings
/// case-insensitive and trimmed, anything else equal.
fn same_value(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(g), Value::Number(w)) => match (g.as_f64(), w.as_f64()) {
            (Some(g), Some(w)) => (g - w).abs() <= 0.005,
            _ => false,
        },
        (Value::String(g), Value::String(w)) => g.trim().to_lowercase() == w.trim().to_lowercase(),
        _ => got == want,
    }
}

/// The numbers in `text`, in order, read as the agent reads a model's
/// numbers ([`agent::grounded::numbers`]).
pub fn numbers(text: &str) -> Vec<f64> {
    agent::grounded::numbers(text)
        .into_iter()
        .map(|n| n.value)
        .collect()
}

/// Whether `text` names `term` as a word (see the module's notes).
pub fn has_term(text: &str, term: &str) -> bool {
    let (term, prefix) = match term.strip_suffix('*') {
        Some(stem) => (stem, true),
        None => (term, false),
    };
    let hay = text.to_lowercase();
    let needle = term.trim().to_lowercase();
    if needle.is_empty() {
        return true;
    }
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let starts_word = needle.chars().next().is_some_and(word);
    let ends_word = needle.chars().next_back().is_some_and(word);
    let ends_digit = needle
        .chars()
        .next_back()
        .is_some_and(|c| c.is_ascii_digit());
    hay.match_indices(needle.as_str()).any(|(at, _)| {
        let before = hay[..at].chars().next_back();
        let mut after = hay[at + needle.len()..].chars();
        let next = after.next();
        if starts_word && before.is_some_and(word) {
            return false;
        }
        if ends_digit {
            let more_digits = next.is_some_and(|c| c.is_ascii_digit())
                || (matches!(next, Some('.') | Some(','))
                    && after.next().is_some_and(|c| c.is_ascii_digit()));
            if more_digits {
                return false;
            }
        }
        prefix || !ends_word || !next.is_some_and(word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn judge(check: Value, answer: &str, files: &BTreeMap<String, Vec<u8>>) -> Result<(), String> {
        Check::parse(&check)?.judge(&Evidence {
            task: "How many primes are below 10000?",
            answer,
            tool_calls: 0,
            mode: Some("simple"),
            files,
        })
    }

    #[test]
    fn terms_are_words_and_a_star_makes_a_prefix() {
        assert!(has_term("Jonas brings it.", "jonas"));
        assert!(!has_term("the same room", "Sam"));
        assert!(!has_term("it was 16 or 60 or 6.5", "6"));
        assert!(has_term("it was 6.", "6"));
        assert!(has_term("two cats", "cat*"));
        assert!(!has_term("two cats", "cat"));
        assert!(has_term("order #4471 arrived", "4471"));
        assert!(has_term("Subject: hello", "subject:"));
        assert!(has_term("la bibliothèque ouvre", "BIBLIOTHÈQUE"));
        assert!(!has_term("Feb 16", "Feb 6"));
    }

    #[test]
    fn the_first_new_number_decides_and_numbers_of_the_task_are_skipped() {
        let none = BTreeMap::new();
        let check = json!({"first_number": 1229});
        assert!(judge(check.clone(), "Below 10,000 there are 1229 primes.", &none).is_ok());
        assert!(judge(check.clone(), "There are 4 kinds, and 1229 primes.", &none).is_err());
        assert!(judge(check, "I cannot tell.", &none).is_err());
        let any = json!({"answer_has_number": 1229});
        assert!(judge(any, "There are 4 kinds, and 1,229 primes.", &none).is_ok());
    }

    #[test]
    fn answers_are_held_to_their_words_and_lines() {
        let none = BTreeMap::new();
        let haiku = "rain on the tin roof\na drum that never tires\nsleep comes anyway";
        assert!(judge(json!({"lines": 3}), haiku, &none).is_ok());
        assert!(judge(
            json!({"lines": 3}),
            &format!("Here it is:\n\n{haiku}"),
            &none
        )
        .is_err());
        assert!(judge(json!({"answer_max_words": 13}), haiku, &none).is_ok());
        assert!(judge(json!({"answer_max_words": 12}), haiku, &none).is_err());
        assert!(judge(
            json!({"answer_lacks": ["gizmo*"]}),
            "widgets, gizmos",
            &none
        )
        .is_err());
        assert!(judge(json!({"no_tool_calls": true}), "x", &none).is_ok());
        assert!(judge(json!({"mode": "emergent"}), "x", &none).is_err());
    }

    #[test]
    fn a_mistyped_check_is_refused_when_the_file_is_read() {
        for bad in [
            json!({"answer_hass": "x"}),
            json!({"answer_has": "x", "tolerance": 1}),
            json!({"first_number": "12"}),
            json!({"file": {"csv_rows": 3}}),
            json!({"file": {"path": "a.csv", "rows": 3}}),
            json!({"no_tool_calls": false}),
            json!({"mode": "fast"}),
        ] {
            assert!(Check::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn files_are_read_back_as_csv_json_png_and_xlsx() {
        use std::io::Write;
        let mut files = BTreeMap::new();
        files.insert("out.csv".to_string(), b"n,square\n1,1\n2,4\n\n".to_vec());
        files.insert(
            "s.json".to_string(),
            br#"{"host": "localhost", "port": 8080.0, "debug": false}"#.to_vec(),
        );
        let mut png = PNG_SIGNATURE.to_vec();
        png.extend_from_slice(b"rest");
        files.insert("c.png".to_string(), png);
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("xl/workbook.xml", options).unwrap();
        zip.write_all(b"<workbook/>").unwrap();
        zip.start_file("xl/sharedStrings.xml", options).unwrap();
        zip.write_all(b"<sst><si><t>Rent</t></si></sst>").unwrap();
        files.insert("b.xlsx".to_string(), zip.finish().unwrap().into_inner());
        let ok = |check: Value| judge(check, "", &files);
        assert!(ok(json!({"file": {"path": "out.csv", "csv_header": ["N", "square"], "csv_rows": 2, "has": "4"}})).is_ok());
        assert!(ok(json!({"file": {"path": "out.csv", "csv_rows": 3}})).is_err());
        assert!(ok(
            json!({"file": {"path": "s.json", "json_keys": ["host", "port"],
            "json_values": {"port": 8080, "debug": false, "host": "LocalHost"}}})
        )
        .is_ok());
        assert!(ok(json!({"file": {"path": "s.json", "json_values": {"debug": true}}})).is_err());
        assert!(ok(json!({"png": "c.png"})).is_ok());
        assert!(ok(json!({"png": "out.csv"})).is_err());
        assert!(ok(json!({"xlsx": "b.xlsx", "has": ["rent"]})).is_ok());
        assert!(ok(json!({"xlsx": "b.xlsx", "has": ["groceries"]})).is_err());
        assert!(ok(json!({"xlsx": "c.png"})).is_err());
        assert!(ok(json!({"png": "missing.png"})).is_err());
    }
}
