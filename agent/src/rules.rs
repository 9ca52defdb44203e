//! The agent's judgement as rules with names: each special case the
//! agent makes of what a small model does is a [`Rule`] here, with the
//! failure that motivated it, and a switch the evaluation turns it off
//! with (`PLANBOARD_RULES_OFF=name,name`), so that every rule's effect on
//! the held-out tasks can be measured with it on and off. A rule that does
//! not pay for itself goes.
//!
//! A rule's code stays where it acts (the router, the planner's mends, the
//! executor, the answer); it asks [`on`] first.
//!
//! # Layout
//! - [`Rule`] and the rules, one constant each, listed in [`ALL`];
//! - [`on`]: whether a rule is on (all are, unless switched off).

use std::collections::HashSet;
use std::sync::OnceLock;

/// One named rule of the agent's judgement.
#[derive(Debug)]
pub struct Rule {
    /// Its name on the switch and in the docs.
    pub name: &'static str,
    /// What it does.
    pub does: &'static str,
    /// The failure it guards, as it was seen.
    pub guards: &'static str,
}

/// A task answered in words (writing, explaining, translating, answering
/// from the task's text) is one step with no tool, and its result is the
/// answer.
pub const WORDS_ONLY: Rule = Rule {
    name: "words_only",
    does: "asks where the answer comes from before classifying; an answer in words is one step \
           with no tool whose result is the answer, written without a planner or a compiler call",
    guards: "\"Write a haiku about plans\" was planned as list, read and write file steps, \
             reported files of an empty workspace and stopped stuck after 14 calls, with no poem",
};

/// A text asked about a short prose file the person gave is written in
/// words from that file's whole text, like a text asked about the task's
/// own words.
pub const GIVEN_TEXTS_WRITTEN_ABOUT: Rule = Rule {
    name: "given_texts_written_about",
    does: "a task that asks for a text (by a writing verb, or with a length in words or \
           sentences) about given prose files (.txt, .md; 8,000 bytes together at most), asking \
           nothing a tool does, is one step with no tool; the writer reads the files' whole text",
    guards: "\"Summarise site_visit.txt in at most 50 words\" wrote a copy of the file to \
             summary.txt and answered \"A summary of the site visit details in at most 50 \
             words\"; \"Read feedback.txt and tell me, in one or two sentences, what our \
             customers complain about most\" ran code that printed one line and ran out of time",
};

/// Wording that asks to explore or to find every item of a kind goes to
/// the emergent planner.
pub const EXPLORING_IS_EMERGENT: Rule = Rule {
    name: "exploring_is_emergent",
    does: "a task that asks to explore, investigate, find out why, keep looking until, or find \
           all / every item of a kind is classified emergent by the rules layer",
    guards: "the classifier put 6 of 12 exploratory tasks right (5 went to complex, a fixed \
             graph for work that is discovered while doing it)",
};

/// A step that lists or reads files before anything could have written
/// one, in a run given no files, is dropped, in every mode.
pub const NO_READS_OF_AN_EMPTY_WORKSPACE: Rule = Rule {
    name: "no_reads_of_an_empty_workspace",
    does: "drops steps that list or read files when the run was given none and no step before \
           them (by dependency) writes one, in simple, complex and emergent plans",
    guards: "an emergent plan's first TODO listed an empty workspace and reported \
             ['file1.txt', 'file2.txt', 'file3.txt']",
};

/// A file is not typed from another file's preview.
pub const GIVEN_FILES_READ_WHOLE: Rule = Rule {
    name: "given_files_read_whole",
    does: "a write_file whose content has two lines or more holding words of a given file's \
           preview, in an attempt that has not read a file or run code, when that file is \
           longer than its preview, does not run, once: the model is told how much of the \
           file it saw and to read it whole or write the file with code",
    guards: "on the held-out set (2026-11-30), a file asked for from a given file's rows was \
             typed from the first 400 characters of it the task showed, and the rows after \
             them were missing",
};

/// A result that names files the tools never showed does not stand.
pub const FILE_NAMES_GROUNDED: Rule = Rule {
    name: "file_names_grounded",
    does: "a subtask's result that names a file (a name with an extension) which neither the \
           task nor any tool output shows fails the attempt with that reason",
    guards: "a step reported files in an empty workspace and the next ones built on them",
};

/// The task's asks are listed with the plan and checked in the answer.
pub const EVERY_ASK_ANSWERED: Rule = Rule {
    name: "every_ask_answered",
    does: "lists the task's asks (each question, each file to write) with the plan; before the \
           answer is kept, a file asked for must exist, not be empty and be of its name's kind \
           (a .png a PNG image, a .csv text that is not JSON …) and each question asking how \
           many or how much must be answered with a number of its own (two questions joined \
           in one sentence need two, and so does \"both the sum and the mean\"); a missing \
           part sends the run back once, then the answer says in its first line what is \
           missing",
    guards: "\"Which region sold the most units, and how many? Save a bar chart\" was answered \
             \"The bar chart was saved as chart.png\"; two-part tasks lost their second part",
};

/// Recall keeps only memories about the same kind of task.
pub const RECALL_RELEVANCE_BAR: Rule = Rule {
    name: "recall_relevance_bar",
    does: "a recalled memory (not a rule, not pinned) must share at least half of the task's \
           telling words (its terms without the words any asking uses) to reach the run",
    guards: "\"Write a haiku about plans\", after earlier tasks had run, answered \"42 bytes \
             written to run/artifacts/west.xlsx\", a file of an earlier run; an email was \
             answered with an earlier task's words",
};

/// A task that asks by its first verb for a text, and names no file, no
/// page and nothing to compute, is answered in words without asking the
/// model where the answer comes from.
pub const WRITING_BY_ITS_VERB: Rule = Rule {
    name: "writing_by_its_verb",
    does: "a task given no files one of whose instruction's sentences starts with a verb that \
           asks for a text (write, draft, compose, translate, summarise, explain, describe, \
           rewrite, paraphrase; 写, 翻译, 解释, 总结; after a short lead such as \"For a \
           child, \" or after statements that only set the scene), or with a giving verb \
           (give, tell, create, come up with …) whose next words name a text (\"Tell me a \
           bedtime story\"), and \
           whose instruction names no file, no page, no file kind and nothing to count or \
           compute is answered in words by the rules layer, without the router's model call; \
           the text it gives to work on (after a blank line or a colon ending a line, or in \
           quotes) is material, not instruction: a \"file\" in a notice to summarise asks \
           nothing of a tool",
    guards: "the router's model, sampling, said \"words\" for a haiku one time and not the next; \
             the next time the haiku was planned as \"Write a text file in the workspace\", \
             written with write_file and run_python, and answered with a sentence about it; \
             \"Tell me a short bedtime story about a turtle\" was written to a file, then \
             fetched from example.com until its 300 s ran out",
};

/// A simple plan writes a file before it uses it.
pub const FILES_WRITTEN_BEFORE_READ: Rule = Rule {
    name: "files_written_before_read",
    does: "in a simple plan, a step that names a file which no earlier step writes and the \
           person did not give, where a later step writes it (its tool is write_file or its words \
           say write, save, put, create, store or export), moves after that writer; the chain is \
           linked again and the move said in the plan's repairs",
    guards: "for \"put each long word of story.txt into long_words.txt and tell me how many\", \
             Qwen2.5-1.5B planned \"Count the words in long_words.txt\" before \"Write \
             long_words.txt\"; the count ran on a file not yet written and the run used its 300 s",
};

/// A question of settled knowledge is answered in words.
pub const KNOWN_ANSWERS_IN_WORDS: Rule = Rule {
    name: "known_answers_in_words",
    does: "a question given no files, with no digits, naming no file, page or count, and \
           asking nothing that changes (today, current, latest, price, news, weather, version, \
           population) is answered in words by the rules layer, without the router's model call",
    guards: "the router's model sent a question of school knowledge (the temperature at which \
             water boils at sea level) to the web, which this machine cannot reach: six fetches, \
             16 model calls, and the run paused stuck with no answer",
};

/// A task holding a number is not answered in words on the router's
/// model's say-so.
pub const NUMBERS_ARE_COMPUTED: Rule = Rule {
    name: "numbers_are_computed",
    does: "when the router's model says a task is answered in words but the task holds a number \
           that is not a length (\"80 words\", \"5 lines\") or asks how many letters, words, \
           digits or days, and \
           no rule found it a text asked \
           for by its verb, the task keeps its tools and is planned, so that a program works its \
           numbers out",
    guards: "\"How many prime numbers are there below 10000?\" was routed to words, written \
             with no tool, and answered 168497 (1229); a task naming three capitals and asking \
             how many letters they have altogether was routed to words and counted 22 (16)",
};

/// The step of a task answered in words is written in one plain-text
/// turn, not through the action form.
pub const WORDS_WRITTEN_WHOLE: Rule = Rule {
    name: "words_written_whole",
    does: "the step of a task answered in words is written in one plain-text turn (no action \
           form, so no question to a person and no JSON field to squeeze the text into); the \
           text is the step's result and, alone, the answer",
    guards: "tasks answered in words: the only step asked a person the task's own question and \
             waited until the run's time ran out, or completed with the text cut down to a \
             line (an email answered by its subject line; an explanation that restated the \
             question)",
};

/// A text longer than the words the task allows is written again once.
pub const WORD_LIMIT_KEPT: Rule = Rule {
    name: "word_limit_kept",
    does: "a task that sets a length in words (\"at most 80 words\", \"in under 50 words\", \"no \
           more than 40 words\") and a text written in words over it: the text is sent back once, \
           with its count, to be written again within the limit; still over, its whole sentences \
           that fit are kept. A length in sentences (\"in three sentences\", \"two or three \
           sentences\") and a text of more sentences of three words or more, or lines asked for \
           (\"in four lines\", or a poem's form: a haiku 3, a limerick 5, a sonnet 14) and a \
           text of other lines: sent back once with its count",
    guards: "an explanation asked for in at most 80 words came back with 82; a summary asked \
             for in at most 40 came back in 59 twice; a thank-you note asked for in two or three \
             sentences came back as a letter of 113 words with a subject line; a limerick came back \
             in four lines",
};

/// A question to a person that restates the task is sent back once.
pub const OWN_QUESTION_NOT_ASKED: Rule = Rule {
    name: "own_question_not_asked",
    does: "a question to a person whose telling words are nearly all the task's own (it asks \
           the person what the task asks the agent) is sent back once: the step answers it \
           itself, from what it knows, the task's text and its tools",
    guards: "a step asked the person who gave the task the task's own question and the run \
             stayed blocked, waiting for an answer nobody was going to give",
};

// The executor's rules: each gives the model one more turn (or ends the
// attempt) when a result, a failure, a question or a call shows a small
// model's known mistake. Their code is `roles::executor::attempt`.

/// A subtask that names a tool is not completed without calling it.
pub const NAMED_TOOL_USED: Rule = Rule {
    name: "named_tool_used",
    does: "a subtask that names a tool (its tool field, else its own words) and is completed \
           without calling it gets one turn to call it and complete with what it returns",
    guards: "Qwen2.5-1.5B completed a subtask from its own head instead of calling the tool the \
             subtask named, and summed a CSV wrongly",
};

/// A result of bare numbers is said in words.
pub const BARE_NUMBERS_SAID: Rule = Rule {
    name: "bare_numbers_said",
    does: "a result of two or more numbers and no word is sent back once to be said, each \
           number labelled; when the saying then adds numbers nothing shows, the numbers a tool \
           showed stand, under the subtask's name",
    guards: "\"count the functions of three files\" was completed with \"6 3 3\" and the \
             answer said 6; asked to say the perfect numbers [6, 28, 496] it printed, the model \
             added a sum of 720 and a mean of 240 that nothing computed",
};

/// Numbers read off a file are computed by a program.
pub const COUNTS_COMPUTED: Rule = Rule {
    name: "counts_computed",
    does: "a result stating numbers after the attempt read a file and ran no code, with \
           run_python offered, is sent back once to count or compute them with run_python",
    guards: "Qwen2.5-1.5B read a log and answered \"10\" ERROR lines, a number the log holds \
             in a time of day; there were 30",
};

/// A result keeps the numbers its own program printed.
pub const PRINTED_NUMBERS_SAID: Rule = Rule {
    name: "printed_numbers_said",
    does: "a result that states no number after the attempt's own program printed numbers \
           (and ran without error) is sent back once with what the program printed, to be \
           completed with those numbers, each said with what it is",
    guards: "asked for the sum and the mean of a file's numbers, the program printed \
             \"348 34.8\" and the step completed with \"The mean of the numbers is computed \
             and stored in a variable\"; the answer held neither number",
};

/// A file is not replaced by a shorter one typed by hand.
pub const WRITTEN_FILES_NOT_SHORTENED: Rule = Rule {
    name: "written_files_not_shortened",
    does: "a write_file that would replace a file of the workspace with fewer non-empty lines \
           than it holds (one an earlier program wrote, or one a person gave) is not run, once: \
           the model is told how many lines the file holds and how many it typed, and to use the \
           file, fix the program that wrote it, or call write_file again to replace it anyway; \
           not a file the attempt typed itself, nor where the task or the step asks to remove, \
           delete, filter, trim, drop, truncate or keep only",
    guards: "a program wrote all four names asked for into a CSV, then the step typed the CSV \
             again with write_file holding two of them, over the program's file; a plan's \
             second step typed squares.csv again over the program's ten rows",
};

/// Numbers a result states are numbers something showed.
pub const NUMBERS_GROUNDED: Rule = Rule {
    name: "numbers_grounded",
    does: "a result stating numbers that neither the subtask's brief nor any tool output shows \
           gets one turn to show them; a subtask working with tools that still states them \
           fails the attempt, the numbers named in its reason",
    guards: "Qwen2.5-1.5B answered 134626151315 as the digit sum of 2^100 (115), a number no \
             program printed",
};

/// A number is computed again by two programs before it is kept.
pub const SECOND_OPINION: Rule = Rule {
    name: "second_opinion",
    does: "once per attempt, with a turn left, a result stating numbers the task does not hold \
           is computed again by two check programs written without seeing it (a third when they \
           settle nothing); two that print another number send it back once with their outputs, \
           and a result kept against them without a reason gives way to theirs",
    guards: "asked how many primes lie below 10,000, Qwen2.5-Coder-1.5B summed them; asked for a \
             log's ERROR lines, it read the file and said 4 (there were 30)",
};

/// A subtask is not failed for its own code's error.
pub const CODE_ERRORS_FIXED: Rule = Rule {
    name: "code_errors_fixed",
    does: "a subtask failed right after its code failed, with turns left, is sent back once \
           with the error's last lines to fix the code",
    guards: "Qwen2.5-1.5B pasted the plan's text into its program, failed on the syntax error, \
             and gave the subtask up, in all three attempts",
};

/// A subtask is not completed on a program that failed.
pub const FAILED_CODE_NOT_DONE: Rule = Rule {
    name: "failed_code_not_done",
    does: "a subtask completed while its last program's error is not fixed is sent back once \
           with the error's last lines, to fix and run it before completing",
    guards: "asked to write the Sales names of staff.csv into sales_staff.txt, \
             Qwen2.5-Coder-1.5B wrote a program of one line (with …: for …: if …:), which \
             Python cannot read, and completed the step with \"The names … are written to \
             sales_staff.txt\"; no file was written",
};

/// A subtask that failed on the web is computed offline when it can be.
pub const OFFLINE_COMPUTED: Rule = Rule {
    name: "offline_computed",
    does: "a subtask failed after the web could not be reached, with run_python offered and \
           turns left, is sent back once to compute the answer without the network",
    guards: "Qwen2.5-1.5B planned a fetch for the primes below 10,000 on a machine with no \
             internet, tried the same download in code, and gave up",
};

/// A question a tool can answer goes to the tool, not a person.
pub const TOOLS_BEFORE_PEOPLE: Rule = Rule {
    name: "tools_before_people",
    does: "a question to a person from a subtask that names a tool, or after the attempt wrote \
           code, is sent back once to that tool",
    guards: "\"What is the content of the server.log file?\" and \"What is the code to count \
             the months with a Friday the 13th?\" were asked of a person, and the run waited \
             for nobody",
};

/// One new subtask per attempt, never one the plan holds.
pub const ONE_NEW_SUBTASK: Rule = Rule {
    name: "one_new_subtask",
    does: "an attempt adds at most one subtask, and never one the plan already holds; a second \
           or a held one is refused with the reason and the attempt goes on",
    guards: "Qwen2.5-1.5B added the same step eight times in one attempt, copying the \"#12\" \
             it was told into the next name",
};

/// A call repeated, or a repeated output, is pointed out, then ends the
/// attempt.
pub const REPEATS_POINTED_OUT: Rule = Rule {
    name: "repeats_pointed_out",
    does: "a call with the arguments of an earlier one is not run again, and a call that \
           returns what an earlier one returned is pointed out; the second repeat fails the \
           attempt, whose next try starts afresh with the reason",
    guards: "Qwen2.5-1.5B printed the same three files with the same code four times, until the \
             run's time ran out",
};

/// Code whose JSON lost a regular expression's backslashes is written
/// again as text.
pub const CODE_AS_TEXT: Rule = Rule {
    name: "code_as_text",
    does: "a run_python call whose code holds a backspace or a form feed (what the JSON grammar \
           left of \\w, \\d or \\s) is asked for once more as plain text in a fenced block, \
           and that program is the call",
    guards: "Qwen2.5-Coder-1.5B's regular expressions matched nothing, and six replies ran on \
             in \\b\\b\\b… to the token limit (about a minute each)",
};

/// Every rule, for the docs and the evaluation's switch.
pub const ALL: &[&Rule] = &[
    &WORDS_ONLY,
    &WRITING_BY_ITS_VERB,
    &KNOWN_ANSWERS_IN_WORDS,
    &GIVEN_TEXTS_WRITTEN_ABOUT,
    &NUMBERS_ARE_COMPUTED,
    &EXPLORING_IS_EMERGENT,
    &NO_READS_OF_AN_EMPTY_WORKSPACE,
    &FILES_WRITTEN_BEFORE_READ,
    &FILE_NAMES_GROUNDED,
    &EVERY_ASK_ANSWERED,
    &RECALL_RELEVANCE_BAR,
    &WORDS_WRITTEN_WHOLE,
    &WORD_LIMIT_KEPT,
    &OWN_QUESTION_NOT_ASKED,
    &NAMED_TOOL_USED,
    &BARE_NUMBERS_SAID,
    &COUNTS_COMPUTED,
    &PRINTED_NUMBERS_SAID,
    &WRITTEN_FILES_NOT_SHORTENED,
    &GIVEN_FILES_READ_WHOLE,
    &NUMBERS_GROUNDED,
    &SECOND_OPINION,
    &CODE_ERRORS_FIXED,
    &FAILED_CODE_NOT_DONE,
    &OFFLINE_COMPUTED,
    &TOOLS_BEFORE_PEOPLE,
    &ONE_NEW_SUBTASK,
    &REPEATS_POINTED_OUT,
    &CODE_AS_TEXT,
];

/// The rules switched off in this process (`PLANBOARD_RULES_OFF`, names
/// separated by commas), read once.
fn off() -> &'static HashSet<String> {
    static OFF: OnceLock<HashSet<String>> = OnceLock::new();
    OFF.get_or_init(|| {
        std::env::var("PLANBOARD_RULES_OFF")
            .unwrap_or_default()
            .split(',')
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect()
    })
}

/// Whether `rule` is on.
pub fn on(rule: &Rule) -> bool {
    !off().contains(rule.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_has_a_row_in_the_docs_table_and_every_row_a_rule() {
        let docs = include_str!("../../docs/agent.md");
        let table = docs
            .split("## The agent's rules")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .expect("docs/agent.md has a section on the agent's rules");
        let rows: HashSet<&str> = table
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|rest| rest.split('`').next())
            .collect();
        let names: HashSet<&str> = ALL.iter().map(|r| r.name).collect();
        assert_eq!(rows, names);
    }

    #[test]
    fn every_rule_has_a_unique_name_and_says_what_it_guards() {
        let names: HashSet<&str> = ALL.iter().map(|r| r.name).collect();
        assert_eq!(names.len(), ALL.len());
        for rule in ALL {
            assert!(
                !rule.does.is_empty() && !rule.guards.is_empty(),
                "{}",
                rule.name
            );
            assert!(
                rule.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_'),
                "{}",
                rule.name
            );
        }
    }
}
