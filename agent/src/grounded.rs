//! Whether the numbers a model states come from what it saw.
//!
//! Small models answer data questions from their own head: asked for a
//! CSV's March revenue, Qwen2.5-Coder-1.5B ran pandas and then reported
//! figures pandas had not printed. Before a subtask completes, and before
//! the final answer is kept, the numbers in the model's text are looked up
//! in the text it was given and the tools' outputs; a number found nowhere
//! sends the model back once with the numbers named. A number counts as
//! found when a source holds it, or holds a value it rounds to at the
//! precision it was written with (`5811.91` from `5811.910000000001`,
//! `46` from `46.0`, `33.7` from `33.6666`).
//!
//! # Layout
//! - [`numbers`]: the numbers in a text, with their written precision.
//! - [`unsupported`]: the numbers of a claim no source holds.
//! - [`file_names`], [`unsupported_files`]: the file names of a claim no
//!   source shows (the rule [`crate::rules::FILE_NAMES_GROUNDED`]).

/// A number as written: its value and how many decimals it was given with.
#[derive(Clone, Debug, PartialEq)]
pub struct Written {
    pub text: String,
    pub value: f64,
    pub decimals: u32,
}

/// The numbers in `text`, in order. `1,526` is one number; a digit inside
/// a word or an identifier (`sku7`, `v2`, `2026-03`'s `03`) is not one of
/// its own; a full stop after a number ends a sentence.
pub fn numbers(text: &str) -> Vec<Written> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let after_word = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if !chars[i].is_ascii_digit() || after_word {
            i += 1;
            continue;
        }
        let negative = i > 0
            && chars[i - 1] == '-'
            && (i < 2 || !(chars[i - 2].is_alphanumeric() || chars[i - 2] == '-'));
        let after_dash = i > 0 && chars[i - 1] == '-' && !negative;
        let mut digits = String::new();
        let mut decimals = None;
        let mut j = i;
        while j < chars.len() {
            let c = chars[j];
            let digit_next = chars.get(j + 1).is_some_and(char::is_ascii_digit);
            if c.is_ascii_digit() {
                digits.push(c);
                if let Some(d) = decimals.as_mut() {
                    *d += 1;
                }
            } else if c == '.' && digit_next && decimals.is_none() {
                digits.push('.');
                decimals = Some(0);
            } else if !(c == ',' && digit_next && decimals.is_none()) {
                break;
            }
            j += 1;
        }
        // The tail of a word (`abc123`) or of a date (`2026-03`) is no number.
        let tail_of_word = j < chars.len() && (chars[j].is_alphabetic() || chars[j] == '_');
        if !after_dash && !tail_of_word {
            if let Ok(value) = digits.parse::<f64>() {
                let value = if negative { -value } else { value };
                out.push(Written {
                    text: chars[i..j].iter().collect(),
                    value,
                    decimals: decimals.unwrap_or(0),
                });
            }
        }
        i = j;
    }
    out
}

/// Whether `written` is `source`, or `source` rounded to `written`'s
/// precision.
pub fn matches(written: &Written, source: f64) -> bool {
    let half = 0.5 * 10f64.powi(-(written.decimals as i32));
    (written.value - source).abs() <= half + 1e-9 * source.abs().max(1.0)
}

/// The numbers of `claim` that none of `sources` holds (each once, in the
/// order written). Small counts are questioned too: Qwen2.5-1.5B answered
/// "4" for 30 ERROR lines it had read, and "1" after code that printed
/// nothing; a count the text itself names ("the 3 files") is in the
/// sources anyway.
pub fn unsupported(claim: &str, sources: &[&str]) -> Vec<String> {
    let known: Vec<f64> = sources
        .iter()
        .flat_map(|s| numbers(s))
        .map(|n| n.value)
        .collect();
    let mut out: Vec<String> = Vec::new();
    for n in numbers(claim) {
        if !known.iter().any(|k| matches(&n, *k)) && !out.contains(&n.text) {
            out.push(n.text);
        }
    }
    out
}

/// The file names in `text`: words with an extension (`output.txt`,
/// `'sorted.csv'`), without the quotes around them.
pub fn file_names(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || ",;:()[]{}<>'\"`“”‘’".contains(c))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| {
            w.rsplit_once('.').is_some_and(|(stem, ext)| {
                // Not an abbreviation (`e.g`, `i.e`).
                !stem.is_empty()
                    && (stem.len() > 1 || ext.len() > 1)
                    && (1..=5).contains(&ext.len())
                    && ext.chars().all(|c| c.is_ascii_alphanumeric())
                    && ext.chars().any(|c| c.is_ascii_alphabetic())
            })
        })
        .collect()
}

/// The file names `claim` states that no source holds (by name, anywhere
/// in a source: a listing, a traceback, the task): a report of files a
/// tool never showed (Qwen2.5-1.5B listed an empty workspace and reported
/// `['file1.txt', 'file2.txt', 'file3.txt']`).
pub fn unsupported_files(claim: &str, sources: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in file_names(claim) {
        let shown = sources.iter().any(|s| s.contains(name));
        if !shown && !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<f64> {
        numbers(text).into_iter().map(|n| n.value).collect()
    }

    #[test]
    fn numbers_are_read_with_separators_signs_and_decimals() {
        assert_eq!(
            values("Sold 1,526 units for 5811.91 (a loss of -3.5). Done."),
            vec![1526.0, 5811.91, -3.5]
        );
        assert_eq!(numbers("46.0")[0].decimals, 1);
    }

    #[test]
    fn digits_inside_words_dates_and_identifiers_are_not_numbers() {
        assert_eq!(values("sku7 v2 x_3 10.0.3.1"), vec![10.0, 3.1]);
        assert_eq!(values("in 2026-03 and 2026-04"), vec![2026.0, 2026.0]);
        assert_eq!(values("abc123 123abc"), Vec::<f64>::new());
    }

    #[test]
    fn a_number_the_sources_hold_or_round_to_is_supported() {
        let output = "north 1526\nvalue 5811.910000000001\nmean 46.0\nratio 0.33333";
        for claim in ["1526", "1,526", "5811.91", "46", "46.0", "0.33", "0.3333"] {
            assert!(
                unsupported(claim, &[output]).is_empty(),
                "{claim} is in the output"
            );
        }
    }

    #[test]
    fn a_number_no_source_holds_is_named_once() {
        let output = "north    150\neast     210";
        assert_eq!(
            unsupported(
                "North 180, east 420 and north 180 again; 210 is right",
                &[output]
            ),
            vec!["180", "420"]
        );
        // 150.4 is not 150 at one decimal; 151 is not 150.
        assert_eq!(unsupported("150.4 or 151", &[output]), vec!["150.4", "151"]);
    }

    #[test]
    fn small_counts_are_questioned_unless_the_sources_name_them() {
        assert_eq!(
            unsupported("There are 4 ERROR lines", &["2026 ERROR a"]),
            vec!["4"]
        );
        assert!(unsupported("the 2 files and step 3", &["files a and b: 2; step 3"]).is_empty());
        assert_eq!(unsupported("a mean of 4.5", &[""]), vec!["4.5"]);
    }
}
