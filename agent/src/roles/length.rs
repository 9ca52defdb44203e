//! The lengths a task sets its text: a most in words ("at most 80
//! words", "in fewer than sixty words"), a count of sentences or lines
//! ("two or three sentences"). Read by the router (a length asks for a
//! text, [`sets_a_length`]) and by the writer (the rule
//! [`crate::rules::WORD_LIMIT_KEPT`]).
//!
//! # Layout
//! - [`word_limit`]: the most words;
//! - [`counted_length`]: a count of sentences, lines or words;
//! - [`sets_a_length`]: whether either is set.

/// The most words a task allows its text ("at most 80 words", "in under
/// 50 words", "no more than 40 words", "in 30 words or fewer"), if it
/// says; "under N" allows N - 1.
pub(crate) fn word_limit(task: &str) -> Option<usize> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        let Some(n) = w.parse::<usize>().ok().or_else(|| tens(w)) else {
            continue;
        };
        if !words
            .get(i + 1)
            .is_some_and(|next| next.starts_with("word"))
            || n == 0
        {
            continue;
        }
        let before = |k: usize| i.checked_sub(k).and_then(|j| words.get(j)).copied();
        let after = |k: usize| words.get(i + k).copied();
        let most = matches!(
            (before(2), before(1)),
            (Some("at"), Some("most"))
                | (Some("up"), Some("to"))
                | (_, Some("maximum" | "max" | "within"))
        ) || (matches!(
            (before(2), before(1)),
            (Some("more" | "longer"), Some("than"))
        ) && matches!(before(3), Some("no" | "not")))
            || matches!((after(2), after(3)), (Some("or"), Some("fewer" | "less")))
            || matches!(after(2), Some("max" | "maximum"));
        if most {
            return Some(n);
        }
        // Strictly fewer: "under 60 words", "in fewer than 60 words".
        let fewer = matches!(before(1), Some("under" | "below"))
            || matches!(
                (before(2), before(1)),
                (Some("fewer" | "less"), Some("than"))
            );
        if fewer {
            return Some(n.saturating_sub(1).max(1));
        }
    }
    None
}

/// A round number of tens written as a word ("sixty"), or a hundred.
fn tens(word: &str) -> Option<usize> {
    const TENS: [&str; 9] = [
        "ten", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    match word {
        "hundred" => Some(100),
        _ => TENS.iter().position(|t| *t == word).map(|k| (k + 1) * 10),
    }
}

/// Numbers as words, for a length said in words ("two or three
/// sentences").
const NUMBER_WORDS: [&str; 10] = [
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
];

/// The count of `unit`s ("sentence", "line") a task's instruction asks
/// its text to have, and whether it is a most rather than an exact count:
/// the number right before the unit ("in three sentences", "two or three
/// sentences", "at most 6 lines"). Not a number that picks among units
/// given ("these two sentences", "the first two lines"), nor one per item
/// ("one sentence for each planet", "one per line"); "one-line" is one
/// word and counts nothing.
pub(crate) fn counted_length(instruction: &str, unit: &str) -> Option<(usize, bool)> {
    let lower = instruction.to_lowercase();
    let words: Vec<&str> = lower
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-'))
        .filter(|w| !w.is_empty())
        .collect();
    let plural = format!("{unit}s");
    (1..words.len()).find_map(|i| {
        if words[i] != unit && words[i] != plural {
            return None;
        }
        let n = words[i - 1].parse::<usize>().ok().or_else(|| {
            NUMBER_WORDS
                .iter()
                .position(|w| *w == words[i - 1])
                .map(|k| k + 1)
        })?;
        let before = i.checked_sub(2).map(|j| words[j]);
        let picks = matches!(
            before,
            Some("these" | "those" | "the" | "first" | "last" | "each" | "of")
        );
        let each = matches!(words.get(i + 1), Some(&"per" | &"each"))
            || (words.get(i + 1) == Some(&"for") && words.get(i + 2) == Some(&"each"));
        let most = matches!(before, Some("most" | "than" | "to" | "under" | "within"));
        (n > 0 && !picks && !each).then_some((n, most))
    })
}

/// Whether a task's instruction sets its text a length in words or
/// sentences ("in at most 50 words", "in one or two sentences"): it asks
/// for a text.
pub(crate) fn sets_a_length(instruction: &str) -> bool {
    word_limit(instruction).is_some()
        || counted_length(instruction, "word").is_some()
        || counted_length(instruction, "sentence").is_some()
}
