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
            let text = clause
                .trim()
                .trim_start_matches(['-', '*', ' '])
                .to_string();
            if !text.is_empty()
                && !asks
                    .iter()
                    .any(|a| matches!(a, Ask::Question { text: t, .. } if *t == text))
            {
                asks.push(Ask::Question { text, number });
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

/// Whether `answer` answers the question `ask` as far as words can tell:
/// a question asking how many or how much needs a number the task does
/// not already hold; other questions are taken as answered by any answer.
pub fn answered_in(ask: &Ask, answer: &str, task: &str) -> bool {
    match ask {
        Ask::Question { number: true, .. } => {
            let given = numbers_of(task);
            numbers_of(answer).iter().any(|n| !given.contains(n))
        }
        Ask::Question { .. } => !answer.trim().is_empty(),
        Ask::File { .. } => true,
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
        let ask = Ask::Question {
            text: "How many days from 2026-03-14 to 2027-01-01?".into(),
            number: true,
        };
        let task = "How many days from 2026-03-14 to 2027-01-01?";
        assert!(answered_in(&ask, "There are 293 days.", task));
        assert!(!answered_in(
            &ask,
            "The days from 2026-03-14 to 2027-01-01 were counted.",
            task
        ));
        assert!(!answered_in(&ask, "The result is:", task));
        let plain = Ask::Question {
            text: "Who wrote it?".into(),
            number: false,
        };
        assert!(answered_in(&plain, "Ada did.", "Who wrote it?"));
    }
}
