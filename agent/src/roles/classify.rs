//! Seed 004's router: a cheap rules layer where it is certain, the model
//! for the rest. The rules only claim what the wording proves (an explicit
//! list of steps, asked-for parallelism); everything else is a judgement
//! and goes to the model with the seed's examples.

use plan_engine::Mode;

use crate::call::{CallError, Caller};
use crate::llm::{CallRole, Message};
use crate::prompts;
use crate::protocol::{ModeAnswer, ModeWord, SourceAnswer, SourceWord};
use crate::run::{Classification, DecidedBy};

/// Wording that asks to explore, or to find every item of a kind (the
/// rule [`crate::rules::EXPLORING_IS_EMERGENT`]): the work is discovered
/// while doing it. A verb counts at the task's start, a phrase anywhere.
const EXPLORING_VERBS: [&str; 3] = ["explore ", "investigate ", "research "];
const EXPLORING_PHRASES: [&str; 11] = [
    "find out why",
    "figure out why",
    "keep digging",
    "keep looking",
    "keep searching",
    "until you find",
    "find all ",
    "find every ",
    "调查",
    "探索",
    "找出所有",
];

/// The exploring wording in `lower` (a lower-cased task), if any.
fn exploring(lower: &str) -> Option<&'static str> {
    let start = lower.trim_start();
    EXPLORING_VERBS
        .iter()
        .find(|v| start.starts_with(*v))
        .or_else(|| EXPLORING_PHRASES.iter().find(|p| lower.contains(*p)))
        .copied()
}

/// The rules layer: `Some` only when the wording settles it.
pub fn by_rules(task: &str) -> Option<Classification> {
    let lower = task.to_lowercase();
    let parallel_words = [
        "in parallel",
        "at the same time",
        "simultaneously",
        "concurrently",
        "并行",
        "同时",
    ];
    if let Some(word) = parallel_words.iter().find(|w| lower.contains(*w)) {
        return Some(Classification {
            mode: Mode::Complex,
            reason: format!("the task asks for parallel work (\"{word}\")"),
            confidence: 1.0,
            by: DecidedBy::Rules,
            in_words: false,
            about: Vec::new(),
        });
    }
    let steps = task
        .lines()
        .map(str::trim_start)
        .filter(|line| is_list_item(line))
        .count();
    if steps >= 3 {
        return Some(Classification {
            mode: Mode::Complex,
            reason: format!("the task lists {steps} steps explicitly"),
            confidence: 1.0,
            by: DecidedBy::Rules,
            in_words: false,
            about: Vec::new(),
        });
    }
    if crate::rules::on(&crate::rules::EXPLORING_IS_EMERGENT) {
        if let Some(word) = exploring(&lower) {
            return Some(Classification {
                mode: Mode::Emergent,
                reason: format!(
                    "the task asks to explore or to find every item of a kind (\"{}\")",
                    word.trim()
                ),
                confidence: 1.0,
                by: DecidedBy::Rules,
                in_words: false,
                about: Vec::new(),
            });
        }
    }
    None
}

/// `1.`, `2)`, `- `, `* `, `• `, `一、`.
fn is_list_item(line: &str) -> bool {
    if line.starts_with("- ") || line.starts_with("* ") || line.starts_with("• ") {
        return true;
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && digits < 3 {
        let rest = &line[digits..];
        return rest.starts_with(". ") || rest.starts_with(") ") || rest.starts_with('、');
    }
    let numerals = "一二三四五六七八九十";
    let mut chars = line.chars();
    matches!((chars.next(), chars.next()), (Some(c), Some('、')) if numerals.contains(c))
}

fn mode_of(word: ModeWord) -> Mode {
    match word {
        ModeWord::Simple => Mode::Simple,
        ModeWord::Complex => Mode::Complex,
        ModeWord::Emergent => Mode::Emergent,
    }
}

/// Asks the model; the rules are not consulted (see [`classify`]).
/// `memory`: what people decided on similar earlier tasks (a prompt
/// section, maybe empty): their mode choices work as examples.
pub async fn by_model(
    caller: &Caller,
    task: &str,
    memory: &str,
) -> Result<Classification, CallError> {
    let answer: ModeAnswer = caller
        .json(
            CallRole::Classifier,
            "mode",
            vec![
                Message::system(prompts::CLASSIFIER),
                Message::user(if memory.is_empty() {
                    format!("Task: {task}")
                } else {
                    format!("{memory}\nTask: {task}")
                }),
            ],
            120,
            None,
        )
        .await?;
    Ok(Classification {
        mode: mode_of(answer.mode),
        reason: answer.reason,
        confidence: answer.confidence.clamp(0.0, 1.0),
        by: DecidedBy::Model,
        in_words: false,
        about: Vec::new(),
    })
}

/// Rules first, then the model. If the model cannot answer, the run still
/// goes on as a complex plan (it covers linear work too) and says why; a
/// person can switch the mode before approving.
pub async fn classify(
    caller: &Caller,
    task: &str,
    memory: &str,
) -> Result<Classification, CallError> {
    if let Some(sure) = by_rules(task) {
        return Ok(sure);
    }
    match by_model(caller, task, memory).await {
        Ok(decided) => Ok(decided),
        Err(CallError::Budget(why)) => Err(CallError::Budget(why)),
        Err(e) => Ok(Classification {
            mode: Mode::Complex,
            reason: format!("the classifier could not decide ({e}); planned as complex"),
            confidence: 0.0,
            by: DecidedBy::Rules,
            in_words: false,
            about: Vec::new(),
        }),
    }
}

/// The verbs with which a task asks for a text (the rule
/// [`crate::rules::WRITING_BY_ITS_VERB`]), at its start.
const WRITING_VERBS: [&str; 16] = [
    "write ",
    "draft ",
    "compose ",
    "translate ",
    "summarise ",
    "summarize ",
    "explain ",
    "describe ",
    "rewrite ",
    "paraphrase ",
    "写",
    "翻译",
    "解释",
    "总结",
    "概括",
    "描述",
];

/// Words that take a text task out of words alone: a file or its kind, a
/// place for files, keeping something, counting or computing.
const NOT_WORDS_ALONE: [&str; 24] = [
    "file",
    "csv",
    "json",
    "xlsx",
    "excel",
    "spreadsheet",
    "chart",
    "plot",
    "png",
    "pdf",
    "workspace",
    "folder",
    "directory",
    "save ",
    "store ",
    "export",
    "how many",
    "how much",
    "count",
    "compute",
    "calculate",
    "文件",
    "保存",
    "计算",
];

/// Whether `task` asks by its first verb for a text and for nothing a
/// tool would do (the rule [`crate::rules::WRITING_BY_ITS_VERB`]): "Write a
/// haiku about rain", "Translate into French: …", "Explain what DNS
/// does"; not "Write the totals to out.csv", "Summarise sales.csv" or
/// "Write a poem and count its words".
pub fn written(task: &str) -> bool {
    if !crate::rules::on(&crate::rules::WRITING_BY_ITS_VERB) || names_a_page(task) {
        return false;
    }
    // What the task says to do is its instruction; a text it gives to
    // summarise or translate is material, and a "file" or a "count" in a
    // notice to summarise asks nothing of a tool.
    let said = instruction(task);
    let said_lower = said.to_lowercase();
    let asks = asking_sentence(&said).is_some_and(|s| asks_by_a_writing_verb(&s));
    // A file named anywhere, even in what reads as material ("Summarise
    // this: … Then save it to notes.txt."), is work for a tool.
    asks && !NOT_WORDS_ALONE.iter().any(|w| said_lower.contains(w))
        && crate::grounded::file_names(task).is_empty()
}

/// Kinds of a given file whose text is prose to write about, not data
/// to compute over (a table, a log, a program).
const PROSE: [&str; 4] = ["txt", "md", "markdown", "text"];
/// Most bytes of the given texts, together, that a writer reads whole.
pub const GIVEN_TEXT_BYTES: u64 = 8_000;
/// Most given files a task naming none is taken to be about.
const GIVEN_UNNAMED: usize = 3;
/// Leads that only say to read the text before the text is asked for.
const READ_LEADS: [&str; 6] = [
    "read the text and ",
    "read the text, then ",
    "read the text, and ",
    "using the text, ",
    "based on the text, ",
    "from the text, ",
];

/// Words of a text about numbers that a program works out, or that
/// pick by a count ("sentences with more than 20 words").
const COMPUTED: [&str; 12] = [
    "total",
    " sum",
    "average",
    "mean ",
    "median",
    "percent",
    "%",
    "with more than",
    "with fewer than",
    "with less than",
    "longer than",
    "shorter than",
];
/// Verbs that may ask a given file changed in place.
const EDITING: [&str; 5] = ["rewrite ", "translate ", "paraphrase ", "edit ", "correct "];

/// The given files a task asks a text about (the rule
/// [`crate::rules::GIVEN_TEXTS_WRITTEN_ABOUT`]), when it asks for nothing
/// else: "Summarise site_visit.txt in at most 50 words", "Read
/// feedback.txt and tell me, in one or two sentences, what customers
/// complain about most". Each file is given, prose by its kind, and the
/// files are short enough to be read whole; the instruction, with the
/// files named as "the text", asks by a writing verb or sets a length in
/// words or sentences, and asks nothing a tool does (no other file, no
/// count, no number). Not "Summarise sales.csv", "How many lines does
/// notes.txt have?", "Summarise notes.txt into summary.txt".
pub fn written_about<'a>(
    task: &str,
    given: &'a [run_model::config::InputFile],
) -> Option<Vec<&'a run_model::config::InputFile>> {
    if !crate::rules::on(&crate::rules::GIVEN_TEXTS_WRITTEN_ABOUT)
        || given.is_empty()
        || names_a_page(task)
    {
        return None;
    }
    // With files given, what follows a blank line or stands in quotes is
    // more instruction ("Save it as \"summary.txt\""), not material: the
    // whole task is read.
    let mut named = crate::grounded::file_names(task);
    named.sort_by_key(|n| std::cmp::Reverse(n.len()));
    named.dedup();
    let of = |name: &str| given.iter().find(|f| f.is_named(name));
    let mut about: Vec<&run_model::config::InputFile> = if named.is_empty() {
        if given.len() > GIVEN_UNNAMED {
            return None;
        }
        given.iter().collect()
    } else {
        named.iter().map(|n| of(n)).collect::<Option<_>>()?
    };
    about.sort_by(|a, b| a.path.cmp(&b.path));
    about.dedup_by(|a, b| a.path == b.path);
    let prose = about.iter().all(|f| {
        f.preview.is_some()
            && f.path
                .rsplit_once('.')
                .is_some_and(|(_, ext)| PROSE.contains(&ext.to_lowercase().as_str()))
    });
    let bytes: u64 = about.iter().map(|f| f.bytes).sum();
    if !prose || bytes > GIVEN_TEXT_BYTES {
        return None;
    }
    // The instruction with each file named as "the text".
    let mut plain = task.to_string();
    for name in &named {
        plain = plain
            .replace(&format!("the file {name}"), "the text")
            .replace(&format!("{name} file"), "the text")
            .replace(name, "the text");
    }
    for (file, text) in [
        ("attached file", "attached text"),
        ("uploaded file", "uploaded text"),
        ("given file", "given text"),
    ] {
        plain = plain.replace(file, text);
    }
    let lower = plain.to_lowercase();
    if NOT_WORDS_ALONE.iter().any(|w| lower.contains(w))
        || COMPUTED.iter().any(|w| lower.contains(w))
        || holds_numbers(&plain)
    {
        return None;
    }
    let mut asks = crate::roles::length::sets_a_length(&plain);
    if let Some(sentence) = asking_sentence(&plain) {
        let mut asked = sentence.as_str();
        for lead in READ_LEADS {
            asked = asked.strip_prefix(lead).unwrap_or(asked);
        }
        // A given file rewritten or translated may be asked changed in
        // place: the router decides.
        if EDITING.iter().any(|v| asked.starts_with(v)) {
            return None;
        }
        asks |= asks_by_a_writing_verb(asked);
    }
    asks.then_some(about)
}

/// The sentence of an instruction that says what to do, lower-cased: the
/// first that asks for a text by its verb or does more than set the
/// scene. A writing verb counts where it opens the instruction or a
/// sentence after ones that only set the scene ("My nephew is eight.
/// Explain …"); "Run the tests. Explain why they fail." asks a tool first.
fn asking_sentence(instruction: &str) -> Option<String> {
    sentences(instruction).find_map(|sentence| {
        let lower = sentence.trim_start().to_lowercase();
        (asks_by_a_writing_verb(&lower) || !sets_the_scene(sentence)).then_some(lower)
    })
}

/// Words that open a sentence telling, not asking: a person, a thing or a
/// time ("My nephew is eight.", "Our neighbour watered the plants.").
const SCENE_OPENERS: [&str; 24] = [
    "my",
    "our",
    "your",
    "his",
    "her",
    "their",
    "the",
    "a",
    "an",
    "this",
    "that",
    "these",
    "those",
    "i",
    "i'm",
    "we",
    "we're",
    "he",
    "she",
    "they",
    "it",
    "there",
    "yesterday",
    "last",
];

/// Whether a sentence only sets the scene: a statement that opens with a
/// person, a thing or a time ("My nephew is eight."), or with a name and
/// what it did or is ("Ines watered our plants.", "Sam is eight."); not a
/// question or an order ("Run the tests.").
fn sets_the_scene(sentence: &str) -> bool {
    let trimmed = sentence.trim();
    let mut words = trimmed.split(|c: char| c.is_whitespace() || c == ',');
    let first = words.next().unwrap_or_default();
    let second = words.next().unwrap_or_default().to_lowercase();
    let named = first.chars().next().is_some_and(char::is_uppercase)
        && first.chars().skip(1).all(char::is_lowercase)
        && (second.ends_with("ed")
            || ["is", "was", "has", "had", "and", "will", "can", "asked"]
                .contains(&second.as_str()));
    !trimmed.ends_with(['?', '？'])
        && (SCENE_OPENERS.contains(&first.to_lowercase().as_str()) || named)
}

/// Whether a sentence (lower-cased) starts, after a polite word or a short
/// lead ("In at most 80 words, ", "For a seven-year-old, "), with a
/// writing verb: the imperative that asks for a text, wherever in the
/// instruction it stands ("My nephew asked why leaves turn red. Explain it
/// to him in three sentences.").
fn asks_by_a_writing_verb(sentence: &str) -> bool {
    let mut start = sentence.trim_start();
    for polite in ["please ", "can you ", "could you ", "请"] {
        start = start.strip_prefix(polite).unwrap_or(start).trim_start();
    }
    // A lead of its own numbers ("For numbers 1 to 50, write …") is work.
    let lead = start.find(", ").filter(|i| {
        *i < 40
            && ["in ", "for "].iter().any(|w| start.starts_with(w))
            && (start.starts_with("in ") || !start[..*i].chars().any(|c| c.is_ascii_digit()))
    });
    if let Some(i) = lead {
        start = start[i + 2..].trim_start();
    }
    for polite in ["please ", "请"] {
        start = start.strip_prefix(polite).unwrap_or(start).trim_start();
    }
    WRITING_VERBS.iter().any(|v| start.starts_with(v)) || names_a_text(start)
}

/// Verbs that ask for a text only by the noun after them ("Tell me a
/// bedtime story", "Give a child-friendly explanation of …", "Come up with
/// a slogan").
const GIVING_VERBS: [&str; 8] = [
    "give ",
    "tell ",
    "create ",
    "make up ",
    "come up with ",
    "invent ",
    "suggest ",
    "share ",
];

/// Texts a giving verb asks for (singular; a plural is matched by its
/// start).
const TEXT_NOUNS: [&str; 30] = [
    "story",
    "stories",
    "tale",
    "fable",
    "poem",
    "haiku",
    "limerick",
    "rhyme",
    "song",
    "joke",
    "riddle",
    "explanation",
    "summary",
    "description",
    "definition",
    "email",
    "letter",
    "note",
    "message",
    "speech",
    "toast",
    "greeting",
    "apology",
    "slogan",
    "tagline",
    "motto",
    "name",
    "title",
    "caption",
    "translation",
];

/// Whether a sentence (lower-cased, from its verb) asks by a giving verb
/// for a text named within its next four words (after "me", "us" …, and
/// before "about", "of" …): "tell me a short bedtime
/// story", "give a child-friendly explanation"; not "tell me the total",
/// "give me the list of files".
fn names_a_text(start: &str) -> bool {
    let Some(verb) = GIVING_VERBS.iter().find(|v| start.starts_with(**v)) else {
        return false;
    };
    // What changes is the web's ("Tell me the latest news in a summary").
    if CHANGING.iter().any(|w| start.contains(w)) {
        return false;
    }
    start[verb.len()..]
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .skip_while(|w| ["me", "us", "him", "her", "them"].contains(w))
        .take(4)
        .take_while(|w| !LINKS.contains(w) && *w != "the")
        .any(|w| {
            TEXT_NOUNS
                .iter()
                .any(|n| w == *n || w.strip_suffix('s') == Some(n))
        })
}

/// Words after which a noun is what a text is about, not the text asked.
const LINKS: [&str; 12] = [
    "about", "of", "for", "on", "with", "to", "from", "in", "that", "which", "whose", "how",
];

/// The sentences of a text: split after `.`, `!`, `?` (and their full-width
/// forms) that end a sentence, and at line breaks; a full stop inside a
/// word (`e.g`, `3.5`) does not split.
pub(crate) fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut out = Vec::new();
    let mut from = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let ends = match c {
            '\n' | '。' | '！' | '？' => true,
            '.' | '!' | '?' => next.is_none_or(char::is_whitespace),
            _ => false,
        };
        if ends {
            let end = i + c.len_utf8();
            out.push(&text[from..end]);
            from = end;
        }
    }
    out.push(&text[from..]);
    out.into_iter().filter(|s| !s.trim().is_empty())
}

/// The part of `task` that says what to do, without the material it
/// gives: the text before its first blank line, or before a colon that
/// ends a line, or one that ends a sentence asking for a text by its verb
/// and naming what follows as material ("Summarise this notice in one
/// sentence: The store …", "Translate into French: …") when no further
/// ask ("Then …") follows it, with whatever
/// it quotes taken out ("Translate into French: \"Save the file.\"" says
/// "Translate into French:"). Used only where a text is asked for by its
/// verb: a question's numbers stay its own.
pub fn instruction(task: &str) -> String {
    let trimmed = task.trim_start();
    let mut end = trimmed.find("\n\n").unwrap_or(trimmed.len());
    if let Some(i) = trimmed[..end].find(":\n") {
        end = i + 1;
    }
    if let Some(i) = trimmed[..end].find(": ") {
        let before = &trimmed[..i];
        let sentence =
            before[before.rfind(['.', '?', '!', '\n']).map_or(0, |k| k + 1)..].to_lowercase();
        let after = &trimmed[i + 2..end];
        if asks_by_a_writing_verb(&sentence)
            && introduces_material(&sentence)
            && !sentences(after).any(|s| {
                let s = s.trim_start().to_lowercase();
                FURTHER.iter().any(|w| s.starts_with(w))
            })
        {
            end = i + 1;
        }
    }
    let head = &trimmed[..end];
    let mut said = String::with_capacity(head.len());
    let mut closing: Option<char> = None;
    for c in head.chars() {
        match closing {
            Some(close) if c == close => closing = None,
            Some(_) => {}
            None => match c {
                '"' => closing = Some('"'),
                '“' => closing = Some('”'),
                '«' => closing = Some('»'),
                '「' => closing = Some('」'),
                _ => said.push(c),
            },
        }
    }
    said
}

/// Nouns a writing ask names its material by, right before the colon that
/// opens it ("Summarise this announcement: …", "… the following: …").
const MATERIAL_NOUNS: [&str; 22] = [
    "notice",
    "announcement",
    "text",
    "message",
    "email",
    "letter",
    "note",
    "memo",
    "paragraph",
    "passage",
    "excerpt",
    "sentence",
    "sentences",
    "article",
    "review",
    "post",
    "update",
    "statement",
    "quote",
    "feedback",
    "comment",
    "following",
];

/// Openings of a sentence that asks more after the material ("Then save
/// it …"): the colon did not end the instruction.
const FURTHER: [&str; 5] = ["then ", "and then ", "also ", "after that", "finally"];

/// Whether a writing ask's sentence (lower-cased, up to a colon) names
/// what follows as material: a text by its noun after a pointing word
/// ("this notice", "the following message"; not "this theme"), "the
/// following", or the language a translation goes into ("Translate into
/// French").
fn introduces_material(sentence: &str) -> bool {
    let words: Vec<&str> = sentence
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let named = words.windows(2).any(|pair| {
        matches!(
            pair[0],
            "this" | "these" | "that" | "the" | "my" | "our" | "following"
        ) && MATERIAL_NOUNS.contains(&pair[1])
    });
    let translated = words.contains(&"translate")
        && words
            .len()
            .checked_sub(2)
            .is_some_and(|k| matches!(words[k], "into" | "to" | "in"));
    named || words.last() == Some(&"following") || translated
}

/// Words by which a question asks for what changes: the web's.
const CHANGING: [&str; 16] = [
    "today",
    "now",
    "current",
    "latest",
    "newest",
    "recent",
    "this week",
    "this year",
    "price",
    "news",
    "weather",
    "stock",
    "version",
    "population",
    "最新",
    "今天",
];

/// Words that start a question.
const QUESTION_WORDS: [&str; 10] = [
    "what ", "which ", "who ", "whom ", "whose ", "when ", "where ", "why ", "how ", "name ",
];

/// Whether `task` is a question of settled knowledge (the rule
/// [`crate::rules::KNOWN_ANSWERS_IN_WORDS`]): a question, with no digits
/// (numbers are computed), naming no file, page or count, and asking
/// nothing that changes. "What is the capital of Peru?" is; "What is the
/// latest version of Rust?", "What is 17% of 240?" and "Which region in
/// sales.csv sold most?" are not.
pub fn known(task: &str) -> bool {
    if !crate::rules::on(&crate::rules::KNOWN_ANSWERS_IN_WORDS) || names_a_page(task) {
        return false;
    }
    let lower = task.to_lowercase();
    let start = lower.trim_start();
    let question = lower.trim_end().ends_with(['?', '？'])
        || QUESTION_WORDS.iter().any(|w| start.starts_with(w));
    question
        && !lower.chars().any(|c| c.is_ascii_digit())
        && !NOT_WORDS_ALONE.iter().any(|w| lower.contains(w))
        && !CHANGING.iter().any(|w| lower.contains(w))
        && crate::grounded::file_names(task).is_empty()
}

/// Units that make a number a length, not a quantity to work out.
const LENGTH_UNITS: [&str; 10] = [
    "word",
    "line",
    "sentence",
    "paragraph",
    "stanza",
    "bullet",
    "point",
    "item",
    "character",
    "syllable",
];

/// What a "how many" counts that a program counts and a small model
/// miscounts: letters, words, digits, days ("tell me how many letters the
/// three names have altogether"); not legs of a spider, which are known.
const COUNTED: [&str; 12] = [
    "letter",
    "character",
    "word",
    "vowel",
    "consonant",
    "syllable",
    "digit",
    "day",
    "week",
    "hour",
    "minute",
    "second",
];

/// Whether `lower` asks how many of something [`COUNTED`] (within the
/// three words after "how many").
fn asks_a_count(lower: &str) -> bool {
    lower.match_indices("how many").any(|(i, m)| {
        lower[i + m.len()..]
            .split_whitespace()
            .take(3)
            .any(|w| COUNTED.iter().any(|c| w.starts_with(c)))
    })
}

/// Whether `task` holds a number to work out (the rule
/// [`crate::rules::NUMBERS_ARE_COMPUTED`]): a run of digits that is not a
/// length ("at most 80 words", "5 lines"), or a count or an amount asked
/// for.
pub fn holds_numbers(task: &str) -> bool {
    let lower = task.to_lowercase();
    if asks_a_count(&lower) {
        return true;
    }
    let mut rest = lower.as_str();
    while let Some(i) = rest.find(|c: char| c.is_ascii_digit()) {
        let after = rest[i..].trim_start_matches(|c: char| c.is_ascii_digit());
        let next = after.trim_start();
        if !LENGTH_UNITS.iter().any(|u| next.starts_with(u)) {
            return true;
        }
        rest = after;
    }
    false
}

/// Whether a task names a page (then its answer comes from the web,
/// without asking).
pub fn names_a_page(task: &str) -> bool {
    let lower = task.to_lowercase();
    ["http://", "https://", "www."]
        .iter()
        .any(|p| lower.contains(p))
}

/// The router's question: where the task's answer comes from (words,
/// computation, the files, the web); `None` when it cannot be had (a
/// budget reached here is reached again by the planner's call, which says
/// so as it did before this question was asked).
pub async fn source(caller: &Caller, task: &str) -> Option<SourceWord> {
    if names_a_page(task) {
        return Some(SourceWord::Web);
    }
    caller
        .json::<SourceAnswer>(
            CallRole::Classifier,
            "source",
            vec![
                Message::system(prompts::SOURCE),
                Message::user(format!("Task: {task}")),
            ],
            150,
            None,
        )
        .await
        .ok()
        .map(|answer| answer.source)
}

/// Whether the task's answer may need the web, from [`source`]'s answer:
/// an answer that could not be had keeps the web (as if the question were
/// never asked).
pub fn needs_web(source: Option<SourceWord>) -> bool {
    source.is_none_or(|s| s == SourceWord::Web)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_is_to_be_worked_out_unless_it_is_a_length() {
        assert!(holds_numbers("How many primes are there below 10000?"));
        assert!(holds_numbers("What day of the week was 14 July 1989?"));
        assert!(holds_numbers("In at most 80 words, explain why 2 + 2 is 4"));
        assert!(!holds_numbers("In at most 80 words, explain DNS"));
        assert!(!holds_numbers("A limerick of 5 lines about a cat"));
        assert!(!holds_numbers("What is the capital of Peru?"));
        // A count asked for is worked out, with no digit in the task.
        assert!(holds_numbers(
            "Name the capitals of Chile and Ghana, and tell me how many letters they have"
        ));
        assert!(holds_numbers(
            "How many days are there between Easter and Whitsun?"
        ));
        assert!(!holds_numbers("How many legs does a spider have?"));
        assert!(!holds_numbers(
            "Tell her how much I miss her in a short note"
        ));
    }

    #[test]
    fn a_question_of_settled_knowledge_is_known_and_one_of_what_changes_is_not() {
        for task in [
            "What is the capital city of Peru?",
            "At sea level, at what temperature in degrees Celsius does pure water boil?",
            "Who wrote the novel Frankenstein?",
            "Which gas do plants take in from the air?",
        ] {
            assert!(known(task), "{task}");
        }
        for task in [
            "What is the latest version of Rust?",
            "What is 17% of 240?",
            "Which region in sales.csv sold the most units?",
            "How many days are there until the end of March?",
            "What is the weather in Oslo?",
            "What does https://example.com say about pricing?",
            "Rename the files in the folder",
        ] {
            assert!(!known(task), "{task}");
        }
    }

    #[test]
    fn a_text_asked_for_by_its_noun_after_a_giving_verb_is_written() {
        assert!(written(
            "Tell me a short bedtime story about a turtle who learns to swim."
        ));
        assert!(written(
            "Give a child-friendly explanation of why leaves change colour."
        ));
        assert!(written(
            "Please come up with three names for a sourdough bakery."
        ));
        assert!(written("Can you suggest a title for my talk on gardens?"));
        assert!(written("Make up a riddle about the moon."));
        // No text named, or work: tools.
        assert!(!written("Tell me the capital of Peru."));
        assert!(!written("Give me the list of files here."));
        assert!(!written("Tell me how many words the story has."));
        assert!(!written("Create a summary of sales.csv."));
        assert!(!written("Give the total revenue of the north region."));
        assert!(!written(
            "Tell me about the company whose name starts with Q."
        ));
        assert!(!written("Tell me how the story of Troy ends."));
        assert!(!written(
            "Tell me the name of the tallest mountain in Peru."
        ));
        assert!(!written("Give me a summary of the latest Rust release."));
    }

    #[test]
    fn material_after_the_colon_of_a_writing_ask_is_not_read_as_instruction() {
        let notice = "Summarise this announcement in one sentence: The Elm Street store will \
                      close its pharmacy counter from 3 to 14 June; count on the Oak Avenue \
                      branch instead.";
        assert_eq!(
            instruction(notice),
            "Summarise this announcement in one sentence:"
        );
        assert!(written(notice));
        assert!(written(
            "Translate into German: Please save your work before you leave."
        ));
        // A colon in a later sentence that asks nothing is no cut.
        let email = "Write a short email to Sam. Begin with a line 'Subject: Lunch'.";
        assert_eq!(instruction(email), email);
        // Nor where no text is asked for by its verb.
        assert_eq!(
            instruction("Compute this: 3 + 4, then save it."),
            "Compute this: 3 + 4, then save it."
        );
        // A file named in the material still asks for a tool.
        assert!(!written(
            "Summarise this text: the team met on Monday. Then save it to notes.txt."
        ));
        // A colon that does not open material named as such ends nothing:
        // what follows is still instruction.
        assert!(!written(
            "Write a poem on this theme: autumn rain, and count its words."
        ));
        let son = "Explain this to my son: why leaves fall, in two sentences.";
        assert_eq!(instruction(son), son);
        // Nor does one followed by a further ask.
        assert!(!written(
            "Summarise this notice: the pool closes in May. Then count its words."
        ));
    }

    fn given(path: &str, bytes: u64, text: bool) -> run_model::config::InputFile {
        run_model::config::InputFile {
            path: path.into(),
            bytes,
            preview: text.then(|| "Some words.".to_string()),
        }
    }

    #[test]
    fn a_text_asked_about_short_given_prose_is_written_from_it_and_nothing_else_is() {
        let notes = [given("notes.txt", 900, true)];
        let about = |task: &str| written_about(task, &notes).is_some();
        assert!(about("Summarise notes.txt in at most 50 words."));
        assert!(about("Summarise the file notes.txt for the team."));
        assert!(about(
            "Read notes.txt and tell me, in one or two sentences, what people complain about."
        ));
        assert!(!about(
            "Rewrite notes.txt in plain words for our customers."
        ));
        assert!(about("Summarise the notes.txt file in two sentences."));
        assert!(about("Summarise the attached file in three sentences."));
        assert!(!about("Summarise notes.txt into \"summary.txt\"."));
        assert!(!about(
            "Summarise notes.txt in 50 words.\n\nSave it as summary.txt."
        ));
        assert!(!about(
            "Describe the average reading in notes.txt in one sentence."
        ));
        assert!(!about(
            "List the sentences in notes.txt with more than 20 words."
        ));
        // Naming none, the files given are what it is about.
        assert!(about("Summarise the attached notes in three sentences."));
        // A count, a number, another file, a file to keep: tools.
        assert!(!about("How many lines does notes.txt have?"));
        assert!(!about(
            "Summarise notes.txt in 50 words and count its dates."
        ));
        assert!(!about("Summarise notes.txt into summary.txt."));
        assert!(!about("Summarise notes.txt and save it."));
        assert!(!about("What is the total of the amounts in notes.txt?"));
        assert!(
            !about("Summarise notes.txt and old.txt."),
            "old.txt not given"
        );
        assert!(!about("Tell me about notes.txt"), "no text asked for");
        assert!(!about("Fix the typos in notes.txt"));
        // Data, binary, too long or too many: tools.
        let csv = [given("sales.csv", 90, true)];
        assert!(written_about("Summarise sales.csv in 40 words.", &csv).is_none());
        let log = [given("server.log", 90, true)];
        assert!(written_about("Summarise server.log in 40 words.", &log).is_none());
        let binary = [given("scan.txt", 90, false)];
        assert!(written_about("Summarise scan.txt in 40 words.", &binary).is_none());
        let long = [given("book.txt", GIVEN_TEXT_BYTES + 1, true)];
        assert!(written_about("Summarise book.txt in 40 words.", &long).is_none());
        let many: Vec<_> = (0..4)
            .map(|i| given(&format!("n{i}.txt"), 10, true))
            .collect();
        assert!(written_about("Summarise the notes in 40 words.", &many).is_none());
        assert!(written_about("Summarise n1.txt in 40 words.", &many).is_some());
        assert!(written_about("Summarise n1.txt in 40 words.", &[]).is_none());
    }

    #[test]
    fn a_task_asking_by_its_verb_for_a_text_and_nothing_a_tool_does_is_written() {
        for task in [
            "Write a haiku about rain on a tin roof.",
            "Please draft a short email inviting Sam to lunch on Friday.",
            "Translate into French: \"The shop opens at nine.\"",
            "Explain what a dependency graph is to a new colleague.",
            "Summarise the following text in two sentences.\n\nThe council met …",
            "In at most 80 words, explain what DNS does.",
            "写一首关于秋天的短诗",
            // The material given is not the instruction.
            "Summarise this notice in two sentences.\n\nThe accounts office moves to floor 3; \
             please store your files in the shared folder and count your keys.",
            "Translate into Spanish: \"Save the file and close the workbook.\"",
            "Rewrite this paragraph for a newsletter:\nOur team filed 12 reports and \
             exported the charts.",
            // The instruction after a sentence that sets the scene.
            "My grandmother keeps asking what a podcast is. Explain it to her in three \
             sentences.",
            "Our neighbour lent us her ladder! Please write her a two-line thank-you note.",
            "For a nine-year-old, explain why the moon seems to change shape.",
            "Ines watered our plants. Write her a short thank-you note.",
        ] {
            assert!(written(task), "{task}");
        }
        for task in [
            "Write the totals to out.csv",
            "Summarise sales.csv in three lines",
            "Write a poem and count its words",
            "Write a short report and save it in the workspace",
            "Explain the chart in https://example.com/q3",
            "How many days are there until 2027?",
            "Draw a bar chart of units per region",
            "What is the capital of Peru?",
            // An instruction asking for a file keeps it, material or not.
            "Summarise this notice into summary.txt.\n\nThe office moves.",
            "Translate \"Good morning\" into German and save it to de.txt",
            // A scene and then a tool's work is not a text alone.
            "The logs grew large. Summarise errors.log by day.",
            "We moved offices. Explain the move in notes.md.",
            // A sentence before the verb that asks a tool or a question.
            "Run the test suite. Explain why it fails.",
            "Look up the exchange rate. Explain what drives it.",
            "What is 2^100? Explain how you got it.",
            "Using Python, write a program that prints the primes below 100.",
            "For numbers 1 to 50, write whether each is prime.",
        ] {
            assert!(!written(task), "{task}");
        }
    }

    /// Every task of the labelled fixture the rules decide is decided as
    /// labelled (the rules answer only when sure; the model has the rest).
    #[test]
    fn every_fixture_task_the_rules_decide_agrees_with_its_label() {
        let fixture = include_str!("../../fixtures/classify.jsonl");
        let mut decided = 0;
        for line in fixture.lines().filter(|l| !l.trim().is_empty()) {
            let case: serde_json::Value = serde_json::from_str(line).unwrap();
            let task = case["task"].as_str().unwrap();
            let label = Mode::from_wire(case["mode"].as_str().unwrap()).unwrap();
            if let Some(c) = by_rules(task) {
                decided += 1;
                assert_eq!(c.mode, label, "the rules misroute {task:?}");
            }
        }
        // The rules must keep deciding some (a layer that never answers
        // would pass the loop above); two do today.
        assert!(
            decided >= 2,
            "the rules decided only {decided} fixture tasks"
        );
    }

    #[test]
    fn exploring_and_finding_every_item_are_emergent_by_the_rules() {
        for task in [
            "Investigate why the nightly job times out",
            "Explore the logs and tell me what stands out",
            "Find all the functions that are never called",
            "Keep digging until you find who changed the config",
            "调查一下为什么夜间任务经常超时",
        ] {
            assert_eq!(
                by_rules(task).map(|c| c.mode),
                Some(Mode::Emergent),
                "{task}"
            );
        }
        for task in [
            "Sum the amounts in sales.csv",
            "List the files in the workspace",
            "Write a haiku about exploring",
        ] {
            assert_eq!(by_rules(task), None, "{task}");
        }
    }

    #[test]
    fn the_rules_are_sure_only_about_lists_parallel_work_and_exploring() {
        assert_eq!(
            by_rules("Analyse these 5 repositories in parallel").map(|c| c.mode),
            Some(Mode::Complex)
        );
        assert_eq!(
            by_rules("同时分析 5 个不同的开源项目并对比").map(|c| c.mode),
            Some(Mode::Complex)
        );
        assert_eq!(
            by_rules("Release:\n1. bump the version\n2. tag\n3. publish").map(|c| c.mode),
            Some(Mode::Complex)
        );
        assert_eq!(
            by_rules("步骤：\n一、备份\n二、升级\n三、验证").map(|c| c.mode),
            Some(Mode::Complex)
        );
        assert_eq!(by_rules("查询上海今天天气"), None);
        assert_eq!(
            by_rules("Fix 2 bugs.\n1. one"),
            None,
            "one item is not a list"
        );
    }
}
