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
/// 50 words", "no more than 40 words", "in 30 words or fewer", "a
/// maximum of 60 words", "must not exceed 60 words"), if it says; "under
/// N" allows N - 1. Failing those, a length as an adjective ("a 60-word
/// summary"; not "a 3-word title", nor "a 300-word minimum").
pub(crate) fn word_limit(task: &str) -> Option<usize> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let counts = || {
        words.iter().enumerate().filter_map(|(i, w)| {
            let n = w.parse::<usize>().ok().or_else(|| tens(w))?;
            let unit = words.get(i + 1).filter(|next| next.starts_with("word"))?;
            (n > 0).then_some((i, n, *unit))
        })
    };
    let said = counts().find_map(|(i, n, _)| {
        let before = |k: usize| i.checked_sub(k).and_then(|j| words.get(j)).copied();
        let after = |k: usize| words.get(i + k).copied();
        // A negation right before, or before one verb: "no more than",
        // "do not use more than", "must not exceed", "don't go over"
        // ("don't" splits into "don" and "t").
        let negated = |at: usize| {
            before(at).is_some_and(|w| NEGATIONS.contains(&w))
                || (before(at).is_some_and(|w| NEGATED_VERBS.contains(&w))
                    && before(at + 1).is_some_and(|w| NEGATIONS.contains(&w)))
        };
        let most = matches!(
            (before(2), before(1)),
            (Some("at"), Some("most"))
                | (Some("up"), Some("to"))
                | (Some("maximum" | "max" | "limit"), Some("of"))
                | (_, Some("maximum" | "max" | "within" | "limit"))
        ) || (matches!(
            (before(2), before(1)),
            (Some("more" | "longer"), Some("than"))
        ) && negated(3))
            || (matches!(before(1), Some("exceed" | "exceeding" | "over")) && negated(2))
            || matches!(
                (after(2), after(3)),
                (Some("or"), Some("fewer" | "less" | "under" | "below"))
                    | (Some("at"), Some("most"))
            )
            || matches!(after(2), Some("max" | "maximum" | "tops"));
        if most {
            return Some(n);
        }
        // Strictly fewer: "under 60 words", "in fewer than 60 words".
        let fewer = matches!(before(1), Some("under" | "below"))
            || matches!(
                (before(2), before(1)),
                (Some("fewer" | "less" | "shorter"), Some("than"))
            );
        fewer.then(|| n.saturating_sub(1).max(1))
    });
    // The adjective, hyphenated and of a text's length: a singular unit
    // after ten words or more, not a least.
    said.or_else(|| {
        counts().find_map(|(i, n, unit)| {
            let hyphenated = lower.contains(&format!("{}-word", words[i]));
            let least = matches!(words.get(i + 2).copied(), Some("minimum" | "min" | "least"));
            (unit == "word" && n >= 10 && hyphenated && !least).then_some(n)
        })
    })
}

/// Words that turn "more than", "exceed" or "over" into a most ("no more
/// than", "must not exceed", "without exceeding").
const NEGATIONS: [&str; 5] = ["no", "not", "t", "never", "without"];
/// Verbs a negation may stand before ("do not use more than", "don't go
/// over").
const NEGATED_VERBS: [&str; 6] = ["use", "go", "be", "write", "run", "get"];

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_sets_a_word_limit_only_where_it_says_one() {
        assert_eq!(word_limit("In at most 80 words, explain DNS."), Some(80));
        assert_eq!(word_limit("Describe it in under 50 words"), Some(49));
        assert_eq!(word_limit("Summarise, no more than 40 words."), Some(40));
        assert_eq!(word_limit("A reply in 30 words or fewer"), Some(30));
        assert_eq!(word_limit("Keep it within 100 words"), Some(100));
        assert_eq!(word_limit("Explain it in fewer than 60 words."), Some(59));
        assert_eq!(word_limit("in less than 30 words"), Some(29));
        assert_eq!(word_limit("no longer than 45 words"), Some(45));
        assert_eq!(word_limit("Describe it in up to 70 words"), Some(70));
        assert_eq!(word_limit("Answer below 20 words"), Some(19));
        assert_eq!(word_limit("A note, 50 words max"), Some(50));
        assert_eq!(word_limit("In under sixty words, explain rain"), Some(59));
        assert_eq!(word_limit("at most forty words"), Some(40));
        assert_eq!(word_limit("Use more than 30 words"), None);
        assert_eq!(word_limit("It has twenty words"), None);
        assert_eq!(word_limit("Write 3 words that rhyme"), None);
        assert_eq!(word_limit("Count the words in notes.txt"), None);
        assert_eq!(word_limit("Explain DNS"), None);
    }

    #[test]
    fn a_word_limit_is_read_in_the_ways_people_say_it() {
        assert_eq!(word_limit("Explain it in a maximum of 60 words."), Some(60));
        assert_eq!(word_limit("A summary (limit: 40 words)"), Some(40));
        assert_eq!(word_limit("The reply must not exceed 50 words"), Some(50));
        assert_eq!(word_limit("without exceeding 75 words"), Some(75));
        assert_eq!(word_limit("Don't go over 30 words."), Some(30));
        assert_eq!(word_limit("Do not use more than 25 words"), Some(25));
        assert_eq!(word_limit("in 40 words or under"), Some(40));
        assert_eq!(word_limit("Describe it in 35 words at most"), Some(35));
        assert_eq!(word_limit("one paragraph, 80 words tops"), Some(80));
        assert_eq!(word_limit("Write a 50-word summary of the plan"), Some(50));
        assert_eq!(word_limit("A sixty-word note for the team"), Some(60));
        assert_eq!(word_limit("Keep it shorter than 20 words"), Some(19));
        // Not a most: a least, a count of words to find, a length told.
        assert_eq!(word_limit("The essay runs over 300 words"), None);
        assert_eq!(word_limit("Exceed 100 words if you must"), None);
        assert_eq!(word_limit("List 5 words that rhyme with cat"), None);
        assert_eq!(word_limit("Spell the 1 word aloud"), None);
        assert_eq!(
            word_limit("Explain grade 4 word problems to a parent"),
            None
        );
        assert_eq!(word_limit("Write a story, 300-word minimum."), None);
        assert_eq!(word_limit("Find the 5-word phrase in notes.txt"), None);
        assert_eq!(
            word_limit("Explain it without jargon in more than 50 words"),
            None
        );
        // A limit said outright wins over a length as an adjective.
        assert_eq!(
            word_limit("Give it a 12-word title, then summarise it in at most 60 words."),
            Some(60)
        );
    }
}
