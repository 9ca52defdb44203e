//! A task's asks: each question it asks and each file it asks to be
//! written, read from its words (the agent's rule `every_ask_answered`).
//! They are listed with the plan (the approval card, the run page) and,
//! before an answer is kept, each is checked against the answer and the
//! workspace: a file asked for must exist and not be empty, a question
//! asking how many or how much must be answered with a number of its own.
//!
//! Pure, and conservative: an ask is read only where the wording proves it
//! (a sentence that ends with `?`, a question word opening a clause, a
//! file name after a verb of writing or a preposition of destination);
//! what is not read is left to the answer as before.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One thing the task asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ask {
    /// A question; `number`: it asks how many or how much.
    Question { text: String, number: bool },
    /// A file to write, by its name in the task.
    File { path: String },
}

impl Ask {
    /// The ask in a person's words.
    pub fn describe(&self) -> String {
        match self {
            Ask::Question { text, .. } => text.clone(),
            Ask::File { path } => format!("write {path}"),
        }
    }
}

/// Words that open a question at a clause's start (after `then`, `and`,
/// `also` or `please`).
const QUESTION_STARTS: [&str; 11] = [
    "which ", "what ", "who ", "when ", "where ", "why ", "is ", "are ", "does ", "do ", "can ",
];

/// Phrases that ask, anywhere in a clause.
const QUESTION_PHRASES: [&str; 7] = [
    "how many", "how much", "how long", "how old", "tell me", "give me", "say how",
];

/// Words a clause may open with before its question.
const LEADS: [&str; 4] = ["then ", "and ", "also ", "please "];

/// Words that ask for a number.
const NUMBER_WORDS: [&str; 14] = [
    "how many",
    "how much",
    "how long",
    "how old",
    "total",
    "sum",
    "count",
    "average",
    "mean",
    "number of",
    "percentage",
    "多少",
    "几",
    "总",
];

/// Words before a file name that say it is written, not read.
const WRITE_WORDS: [&str; 14] = [
    "save", "write", "create", "produce", "export", "store", "draw", "plot", "output", "put",
    "generate", "make", "保存", "写入",
];

/// Words right before a file name that say where something goes.
const DESTINATIONS: [&str; 6] = ["to", "as", "into", "called", "named", "in a file"];

/// Words right before a file name that say it is read.
const SOURCES: [&str; 5] = ["from", "of", "in", "read", "open"];

/// The asks of `task`, in the order they appear, each once.
pub fn of(task: &str) -> Vec<Ask> {
    let mut asks: Vec<Ask> = Vec::new();
    for clause in clauses(task) {
        let lower = clause.to_lowercase();
        let asked = clause.trim_end().ends_with('?') || clause.trim_end().ends_with('？');
        let mut start = lower.trim_start();
        while let Some(rest) = LEADS.iter().find_map(|l| start.strip_prefix(l)) {
            start = rest.trim_start();
        }
        let opens = QUESTION_STARTS.iter().any(|w| start.starts_with(w))
            || QUESTION_PHRASES.iter().any(|p| lower.contains(p));
        let number = NUMBER_WORDS.iter().any(|w| lower.contains(w));
        if asked || (opens && number) {
            for part in question_parts(clause) {
                let text = part.trim().trim_start_matches(['-', '*', ' ']).to_string();
                let lower = text.to_lowercase();
                let number = NUMBER_WORDS.iter().any(|w| lower.contains(w));
                if !text.is_empty()
                    && !asks
                        .iter()
                        .any(|a| matches!(a, Ask::Question { text: t, .. } if *t == text))
                {
                    asks.push(Ask::Question { text, number });
                }
            }
        }
        for path in written_files(clause) {
            if !asks
                .iter()
                .any(|a| matches!(a, Ask::File { path: p } if *p == path))
            {
                asks.push(Ask::File { path });
            }
        }
    }
    asks
}

/// Phrases that open a second question inside one sentence ("How many
/// lines does it have, and how many words?").
const SECOND_QUESTIONS: [&str; 4] = ["how many ", "how much ", "how long ", "how old "];

/// A question clause cut where a second question joins it with `and`
/// ("How many lines …, and how many words?" is two asks, each needing a
/// number of its own); the second part is cut only where it asks about
/// something it names ("…, and how many?" stays one ask: it asks the
/// number of the first part's answer). The second part loses its `and`.
fn question_parts(clause: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = clause;
    'cut: loop {
        for (i, _) in rest.char_indices().skip(1) {
            let joined = ["and ", ", and "].iter().find_map(|j| {
                let at = rest.get(i..)?;
                at.get(..j.len())
                    .filter(|w| w.eq_ignore_ascii_case(j))
                    .map(|_| j.len())
            });
            let Some(lead) = joined else { continue };
            // "and" as a word, not the end of "band".
            if lead == 4 && !rest[..i].ends_with(' ') {
                continue;
            }
            let after = &rest[i + lead..];
            let Some(phrase) = SECOND_QUESTIONS.iter().find(|p| {
                after
                    .get(..p.len())
                    .is_some_and(|w| w.eq_ignore_ascii_case(p))
            }) else {
                continue;
            };
            let names = after[phrase.len()..]
                .chars()
                .take_while(|c| !matches!(c, '?' | '？' | '.' | '!'))
                .any(char::is_alphabetic);
            let first = rest[..i].trim_end_matches([',', ' ']);
            if names && !first.trim().is_empty() {
                parts.push(first);
                rest = after;
                continue 'cut;
            }
        }
        parts.push(rest);
        return parts;
    }
}

/// The task's clauses: sentences, split after `?`, `!`, `.` followed by a
/// space, `;` and line breaks; a question mark keeps its clause.
fn clauses(task: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = task.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let next = chars.get(k + 1).map(|&(_, n)| n);
        let end = match c {
            '?' | '？' | '!' | '。' | ';' | '\n' => true,
            '.' => next.is_none_or(char::is_whitespace),
            _ => false,
        };
        if end {
            let stop = i + c.len_utf8();
            let clause = &task[start..stop];
            if !clause.trim().is_empty() {
                out.push(clause);
            }
            start = stop;
        }
    }
    if !task[start..].trim().is_empty() {
        out.push(&task[start..]);
    }
    out
}

/// The file names in `clause` that it asks to be written: after a verb of
/// writing in the clause, or right after a word of destination, and not
/// right after a word of reading.
fn written_files(clause: &str) -> Vec<String> {
    let lower = clause.to_lowercase();
    let words: Vec<&str> = clause
        .split(|c: char| c.is_whitespace() || ",;:()[]{}<>'\"`“”‘’".contains(c))
        .filter(|w| !w.is_empty())
        .collect();
    let writes = WRITE_WORDS.iter().any(|w| lower.contains(w));
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let name = word.trim_end_matches(['.', '?', '!']);
        let Some((stem, ext)) = name.rsplit_once('.') else {
            continue;
        };
        let is_file = !stem.is_empty()
            && (1..=5).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
            && !name.contains("://");
        if !is_file {
            continue;
        }
        let before = i
            .checked_sub(1)
            .map(|j| words[j].to_lowercase())
            .unwrap_or_default();
        let destination = DESTINATIONS.contains(&before.as_str());
        let read = SOURCES.contains(&before.as_str());
        if (destination || writes) && !read {
            out.push(name.to_string());
        }
    }
    out
}

/// The questions among `asks` that `answer` leaves open, by index. A
/// question asking how many or how much needs a number of its own, one
/// the task does not hold; they are counted in order, so two such
/// questions need two numbers ("5.28" answers one of "how many …, and how
/// many …?"), and the same value written twice counts twice ("5 lines and
/// 5 words" answers both). Other questions are taken as answered by any
/// answer; files are not questions and are never listed here.
pub fn open_questions(asks: &[Ask], answer: &str, task: &str) -> Vec<usize> {
    let given = numbers_of(task);
    let mut numbers = numbers_of(answer)
        .into_iter()
        .filter(|n| !given.contains(n))
        .count();
    let mut open = Vec::new();
    for (i, ask) in asks.iter().enumerate() {
        match ask {
            Ask::Question { number: true, text } => {
                let wanted = numbers_asked(text);
                if numbers < wanted {
                    open.push(i);
                }
                numbers = numbers.saturating_sub(wanted);
            }
            Ask::Question { .. } if answer.trim().is_empty() => open.push(i),
            _ => {}
        }
    }
    open
}

/// Words that each name one number asked for, joined in a list ("the sum
/// and the mean", "the total, the average and the median").
const NUMBER_NAMES: [&str; 9] = [
    "sum",
    "total",
    "mean",
    "average",
    "median",
    "count",
    "minimum",
    "maximum",
    "percentage",
];

/// Words that may stand between two numbers asked for in one list.
const LIST_JOINS: [&str; 7] = [",", "and", "the", "its", "their", "both", "also"];

/// How many numbers the question `text` asks for: one per "how many" (or
/// much, long, old) in it, or one per name in a list of numbers ("both
/// the sum and the mean" asks two), whichever is more; at least one.
/// "The average of the total column" asks one: its names are not joined
/// as a list.
fn numbers_asked(text: &str) -> usize {
    let lower = text.to_lowercase();
    let hows = SECOND_QUESTIONS
        .iter()
        .map(|p| lower.matches(p.trim_end()).count())
        .sum::<usize>();
    let mut tokens: Vec<&str> = Vec::new();
    for word in lower.split(|c: char| !c.is_alphanumeric() && c != ',') {
        let mut rest = word;
        while let Some(i) = rest.find(',') {
            if i > 0 {
                tokens.push(&rest[..i]);
            }
            tokens.push(",");
            rest = &rest[i + 1..];
        }
        if !rest.is_empty() {
            tokens.push(rest);
        }
    }
    let (mut longest, mut run, mut joined) = (0usize, 0usize, false);
    for token in tokens {
        if NUMBER_NAMES.contains(&token) {
            run = if run > 0 && joined { run + 1 } else { 1 };
            joined = false;
            longest = longest.max(run);
        } else if run > 0 && LIST_JOINS.contains(&token) {
            joined = true;
        } else {
            run = 0;
            joined = false;
        }
    }
    hows.max(longest).max(1)
}

/// How many of a written file's first bytes [`file_fits`] reads.
pub const HEAD_BYTES: u64 = 64 * 1024;

/// Whether a file written under `path` is of the kind its name says, read
/// from `head`, its first bytes (`whole`: they are the whole file): a
/// `.png` must be a PNG image, an `.xlsx` a workbook (a ZIP), a `.json`
/// JSON, a `.csv` text that is not JSON, a `.txt` or `.md` text. `Err`
/// names the kind it is not ("a PNG image"). Other names fit whatever they
/// hold. Guards a chart "saved" as text under chart.png and a CSV written
/// as JSON, which being there and not empty let pass.
pub fn file_fits(path: &str, head: &[u8], whole: bool) -> Result<(), &'static str> {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let starts = |magic: &[u8]| head.starts_with(magic);
    let text = || {
        !head.contains(&0)
            && match std::str::from_utf8(head) {
                Ok(_) => true,
                // A character cut by the end of the head is still text.
                Err(e) => !whole && e.error_len().is_none(),
            }
    };
    let body = || {
        let t = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
        let at = t.iter().position(|b| !b.is_ascii_whitespace());
        at.map(|i| &t[i..]).unwrap_or(&[])
    };
    let (fits, kind) = match ext.as_str() {
        "png" => (starts(b"\x89PNG\r\n\x1a\n"), "a PNG image"),
        "jpg" | "jpeg" => (starts(b"\xFF\xD8\xFF"), "a JPEG image"),
        "gif" => (starts(b"GIF87a") || starts(b"GIF89a"), "a GIF image"),
        "pdf" => (starts(b"%PDF-"), "a PDF document"),
        "xlsx" | "docx" | "pptx" | "zip" => (
            starts(b"PK\x03\x04"),
            "a ZIP-based file (an Office document)",
        ),
        "json" => (
            text()
                && if whole {
                    serde_json::from_slice::<serde_json::Value>(body()).is_ok()
                } else {
                    body().first().is_some_and(|b| b"{[".contains(b))
                },
            "JSON",
        ),
        "csv" | "tsv" => (
            text() && !body().first().is_some_and(|b| b"{[".contains(b)),
            "comma-separated text (not JSON)",
        ),
        "txt" | "md" | "html" | "py" | "yaml" | "yml" | "toml" | "xml" | "svg" => (text(), "text"),
        _ => (true, ""),
    };
    if fits {
        Ok(())
    } else {
        Err(kind)
    }
}

/// The numbers written in `text`, as written (digits, one decimal point).
fn numbers_of(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, out: &mut Vec<String>| {
        let n = current.trim_end_matches('.').replace(',', "");
        if n.chars().any(|c| c.is_ascii_digit()) {
            out.push(n);
        }
        current.clear();
    };
    for c in text.chars() {
        if c.is_ascii_digit() || ((c == '.' || c == ',') && !current.is_empty()) {
            current.push(c);
        } else {
            flush(&mut current, &mut out);
        }
    }
    flush(&mut current, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn described(task: &str) -> Vec<String> {
        of(task).iter().map(Ask::describe).collect()
    }

    #[test]
    fn a_question_and_a_file_to_write_are_two_asks() {
        let asks = of("Which region sold the most units, and how many? Save a bar chart of units per region as chart.png.");
        assert_eq!(
            asks,
            [
                Ask::Question {
                    text: "Which region sold the most units, and how many?".into(),
                    number: true
                },
                Ask::File {
                    path: "chart.png".into()
                },
            ]
        );
    }

    #[test]
    fn files_read_are_not_asks_and_files_written_are() {
        assert_eq!(
            described("Read sales.csv and write the totals per region to totals.csv; then tell me how many regions there are."),
            ["write totals.csv", "then tell me how many regions there are."]
        );
        assert_eq!(
            described("Sum the amounts in data.csv"),
            Vec::<String>::new()
        );
        assert_eq!(
            described("What was the total revenue in March 2026 in orders.csv? Write a short report to report.md."),
            ["What was the total revenue in March 2026 in orders.csv?", "write report.md"]
        );
        assert_eq!(described("Write a haiku about plans"), Vec::<String>::new());
        assert_eq!(
            described("See https://example.com/a.html for details"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_number_asked_for_must_be_a_number_the_task_does_not_hold() {
        let task = "How many days from 2026-03-14 to 2027-01-01?";
        let asks = of(task);
        assert_eq!(asks.len(), 1);
        assert!(open_questions(&asks, "There are 293 days.", task).is_empty());
        assert_eq!(
            open_questions(
                &asks,
                "The days from 2026-03-14 to 2027-01-01 were counted.",
                task
            ),
            [0]
        );
        assert_eq!(open_questions(&asks, "The result is:", task), [0]);
        let plain = of("Who wrote it?");
        assert!(open_questions(&plain, "Ada did.", "Who wrote it?").is_empty());
        assert_eq!(open_questions(&plain, " ", "Who wrote it?"), [0]);
    }

    #[test]
    fn two_questions_joined_in_one_sentence_are_two_asks_each_needing_its_number() {
        let task = "How many lines does poem.txt have, and how many words does it hold?";
        assert_eq!(
            described(task),
            [
                "How many lines does poem.txt have",
                "how many words does it hold?"
            ]
        );
        let asks = of(task);
        assert_eq!(open_questions(&asks, "It has 12 lines.", task), [1]);
        assert!(open_questions(&asks, "12 lines and 80 words.", task).is_empty());
        assert!(open_questions(&asks, "5 lines and 5 words.", task).is_empty());
        // Asking the number of the first part's answer is one ask.
        assert_eq!(
            described("Which city is largest, and how many people live there?").len(),
            2
        );
        assert_eq!(
            described("Which region sold the most units, and how many?"),
            ["Which region sold the most units, and how many?"]
        );
        // "and" inside a word, or before something that is not a question.
        assert_eq!(
            described("How many bands and albums are listed, and tell me which is oldest?").len(),
            1
        );
    }

    #[test]
    fn a_list_of_numbers_asked_for_needs_each_of_them() {
        let task = "Give me both the sum and the mean of the numbers in numbers.txt.";
        // Not a question by its mark, but one by "give me" and its numbers.
        let asks = of(task);
        assert_eq!(asks.len(), 1, "{asks:?}");
        assert_eq!(open_questions(&asks, "The sum is 348.", task), [0]);
        assert!(open_questions(&asks, "The sum is 348 and the mean 34.8.", task).is_empty());
        assert_eq!(
            numbers_asked("What are the total, the average and the median?"),
            3
        );
        assert_eq!(numbers_asked("What is the average of the total column?"), 1);
        assert_eq!(numbers_asked("What is the total revenue?"), 1);
        assert_eq!(numbers_asked("How many rows, and how many columns?"), 2);
    }

    #[test]
    fn separate_number_questions_each_need_a_number() {
        let task = "How many rows are there? How much is the total?";
        let asks = of(task);
        assert_eq!(asks.len(), 2);
        assert_eq!(open_questions(&asks, "There are 40 rows.", task), [1]);
        assert!(open_questions(&asks, "40 rows, 1,526.50 in total.", task).is_empty());
    }

    #[test]
    fn a_written_file_must_be_of_the_kind_its_name_says() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert_eq!(file_fits("chart.png", png, true), Ok(()));
        assert_eq!(
            file_fits("out/chart.PNG", b"units per region: North 42", true),
            Err("a PNG image")
        );
        assert_eq!(file_fits("budget.xlsx", b"PK\x03\x04\x14\0", false), Ok(()));
        assert!(file_fits("budget.xlsx", b"item,amount\nrent,900\n", true).is_err());
        assert_eq!(file_fits("s.json", b" {\"port\": 8080}\n", true), Ok(()));
        assert_eq!(file_fits("s.json", b"{\"port\": 8080,", true), Err("JSON"));
        assert_eq!(file_fits("s.json", b"{\"port\": 8080,", false), Ok(()));
        assert_eq!(file_fits("s.json", b"port = 8080", true), Err("JSON"));
        assert_eq!(file_fits("squares.csv", b"n,square\n1,1\n", true), Ok(()));
        assert!(file_fits("squares.csv", b"[{\"n\": 1, \"square\": 1}]", true).is_err());
        assert_eq!(file_fits("notes.txt", "caf\u{e9}".as_bytes(), true), Ok(()));
        assert_eq!(file_fits("notes.txt", b"caf\xC3", false), Ok(()));
        assert_eq!(file_fits("notes.txt", b"caf\xC3", true), Err("text"));
        assert_eq!(file_fits("notes.txt", b"\0\x01\x02", false), Err("text"));
        assert_eq!(file_fits("model.bin", b"\0\x01", true), Ok(()));
    }
}
