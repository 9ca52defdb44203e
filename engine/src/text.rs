//! Cutting text to a number of characters, the one way every crate does
//! it (the board, the agent's prompts, the run's types, the server).
//! Characters are Unicode scalar values, as JSON Schema's `maxLength` and
//! the engine's [`crate::model::limits`] count them; a cut never splits
//! one.

/// The first `max` characters of `text` (all of it when shorter).
pub fn prefix(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// `text` whole when it has at most `max` characters, else its first
/// `max` and an ellipsis (`max + 1` in all): for labels, where what is
/// shown matters more than a bound.
pub fn ellipsis(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `text` within `max` characters in all, the ellipsis included: for a
/// value that must stay within a limit.
pub fn fit(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some(_) if max == 0 => String::new(),
        Some(_) => ellipsis(text, max - 1),
    }
}

/// The last `n` lines of `text` (all of them when it has fewer), joined
/// by `\n`: the end of a program's error, where its cause is written.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_lines_of_a_text_are_its_end_and_the_whole_text_when_shorter() {
        let error = "Traceback (most recent call last):\n  File \"x.py\", line 1\nNameError: x\n";
        assert_eq!(
            last_lines(error, 2),
            "  File \"x.py\", line 1\nNameError: x"
        );
        assert_eq!(last_lines(error, 9), error.trim_end());
        assert_eq!(last_lines(error, 0), "");
        assert_eq!(last_lines("", 3), "");
    }

    #[test]
    fn a_cut_counts_characters_and_never_splits_one() {
        assert_eq!(prefix("日本語テキスト", 3), "日本語");
        assert_eq!(prefix("ab", 5), "ab");
        assert_eq!(ellipsis("日本語テキスト", 3), "日本語…");
        assert_eq!(ellipsis("abc", 3), "abc");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abcd", 4), "abcd");
        assert_eq!(fit("日本語テキスト", 4).chars().count(), 4);
        assert_eq!(fit("abc", 0), "");
    }
}
