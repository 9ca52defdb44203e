//! HTML read without building a tree: html5ever's tokenizer only, so the
//! memory and time a page costs grow with its bytes and nothing else.
//!
//! Why: a page the agent fetches is an attacker's input. html5ever's tree
//! builder (behind `html2text` and `scraper`, which read pages here
//! before) re-opens every unclosed formatting element (`<b>`, `<i>`,
//! `<font>` …) in every following block, without a bound: a 25 KiB page of
//! a few hundred unclosed `<b>` and a few thousand paragraphs built a tree
//! of 1.3 GB in the server's process, a 67 KiB one 9.2 GB. The tokenizer
//! keeps nothing but the token it is on; what a reader here keeps is
//! bounded by its own caps (the text's length, the open elements it
//! tracks, the results it collects).
//!
//! # Layout
//! - [`to_text`]: a page as readable text (headings, paragraphs, lists,
//!   tables as `a | b`, links as `[text](url)`), cut at a length.
//! - [`fragment_text`]: the text of a fragment on one line (a snippet).
//! - [`duckduckgo_hits`]: the results of DuckDuckGo's HTML results page.

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::TokenizerResult;
use reqwest::Url;

/// The most open elements a reader tracks: deeper ones are read as text
/// but not matched to their end tags (a page of 100,000 unclosed `<div>`
/// costs no more than one of 256).
const MAX_OPEN: usize = 256;
/// Characters kept of one result's title or snippet.
const HIT_TEXT: usize = 1_000;
/// Results kept of one page.
const MAX_HITS: usize = 50;

/// Runs the tokenizer over `html` and returns the sink it fed.
fn tokenize<S: TokenSink<Handle = ()>>(html: &str, sink: S) -> S {
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    // Our sinks never ask the tokenizer to stop (for a script or an
    // encoding); were it to, it goes on with the rest of the input.
    while !matches!(tokenizer.feed(&input), TokenizerResult::Done) {}
    tokenizer.end();
    tokenizer.sink
}

/// How the tokenizer must read what follows a start tag, as the tree
/// builder would tell it: script, style and the like hold no markup.
fn raw_kind(name: &str) -> Option<RawKind> {
    match name {
        "script" => Some(RawKind::ScriptData),
        "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => Some(RawKind::Rawtext),
        "title" | "textarea" => Some(RawKind::Rcdata),
        _ => None,
    }
}

/// Elements whose content is not text a reader sees.
fn hidden(name: &str) -> bool {
    matches!(
        name,
        "script" | "style" | "noscript" | "iframe" | "noembed" | "noframes" | "template"
    )
}

/// Elements that never have an end tag.
fn void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "br"
            | "col"
            | "embed"
            | "hr"
            | "img"
            | "input"
            | "link"
            | "meta"
            | "source"
            | "track"
            | "wbr"
            | "param"
    )
}

/// The line breaks a block element puts around itself (0: inline).
fn breaks(name: &str) -> u8 {
    match name {
        "p" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "pre" | "blockquote" | "table" | "ul"
        | "ol" | "dl" | "figure" | "hr" => 2,
        "div" | "section" | "article" | "header" | "footer" | "nav" | "main" | "aside" | "li"
        | "tr" | "dt" | "dd" | "br" | "form" | "figcaption" | "caption" | "address" | "details"
        | "summary" | "fieldset" | "option" => 1,
        _ => 0,
    }
}

fn attribute<'a>(tag: &'a Tag, name: &str) -> Option<&'a str> {
    tag.attrs
        .iter()
        .find(|a| &*a.name.local == name)
        .map(|a| &*a.value)
}

fn has_class(tag: &Tag, class: &str) -> bool {
    attribute(tag, "class").is_some_and(|c| c.split_ascii_whitespace().any(|c| c == class))
}

/// Text written with collapsed white space and pending breaks, up to a
/// length.
struct Writer {
    out: String,
    max: usize,
    full: bool,
    space: bool,
    breaks: u8,
    /// Written before the next text (a list item's `* `, a heading's `#`).
    prefix: String,
}

impl Writer {
    fn new(max: usize) -> Writer {
        Writer {
            out: String::new(),
            max,
            full: false,
            space: false,
            breaks: 0,
            prefix: String::new(),
        }
    }

    fn block(&mut self, n: u8) {
        self.breaks = self.breaks.max(n);
    }

    fn push(&mut self, text: &str, pre: bool) {
        for c in text.chars() {
            if self.full {
                return;
            }
            if c.is_whitespace() && !pre {
                self.space = true;
                continue;
            }
            if c == '\n' && pre {
                self.block(1);
                continue;
            }
            if self.breaks > 0 {
                if !self.out.is_empty() {
                    let kept = self.out.trim_end_matches([' ', '\t']).len();
                    self.out.truncate(kept);
                    let have = self.out.len() - self.out.trim_end_matches('\n').len();
                    for _ in have..self.breaks as usize {
                        self.out.push('\n');
                    }
                }
                self.breaks = 0;
                self.space = false;
            } else if self.space && !self.out.is_empty() && !self.out.ends_with([' ', '\n']) {
                self.out.push(' ');
            }
            self.space = false;
            if !self.prefix.is_empty() {
                let prefix = std::mem::take(&mut self.prefix);
                self.out.push_str(&prefix);
            }
            self.out.push(c);
            if self.out.len() >= self.max {
                self.full = true;
            }
        }
    }

    fn finish(self) -> String {
        self.out.trim().to_string()
    }
}

/// A page's readable text: what [`to_text`] collects.
struct TextSink {
    state: RefCell<TextState>,
}

struct TextState {
    writer: Writer,
    base: Option<Url>,
    links: bool,
    /// Inside a hidden element (its name): its content is skipped.
    skipping: Option<String>,
    pre: usize,
    /// The link being written: its address, and whether its `[` is out.
    link: Option<(String, bool)>,
    /// Whether the current table row has had a cell.
    cell: bool,
    title: Option<String>,
    in_title: bool,
}

impl TextState {
    fn start(&mut self, tag: &Tag) {
        let name = &*tag.name;
        if hidden(name) {
            if !void(name) && !tag.self_closing {
                self.skipping = Some(name.to_string());
            }
            return;
        }
        match name {
            "title" => self.in_title = true,
            "pre" => self.pre += 1,
            "li" => {
                self.writer.block(1);
                self.writer.prefix = "* ".into();
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.writer.block(2);
                let level = name[1..].parse::<usize>().unwrap_or(1);
                self.writer.prefix = format!("{} ", "#".repeat(level));
            }
            "tr" => self.cell = false,
            "td" | "th" => {
                if self.cell {
                    self.writer.push(" | ", true);
                }
                self.cell = true;
            }
            "a" if self.links => {
                let target = attribute(tag, "href").and_then(|href| {
                    let url = match &self.base {
                        Some(base) => base.join(href.trim()).ok()?,
                        None => Url::parse(href.trim()).ok()?,
                    };
                    matches!(url.scheme(), "http" | "https").then(|| url.to_string())
                });
                self.link = target.map(|t| (t, false));
            }
            "img" => {
                if let Some(alt) = attribute(tag, "alt").filter(|a| !a.trim().is_empty()) {
                    let alt = alt.to_string();
                    self.writer.push(" ", false);
                    self.writer.push(&alt, false);
                    self.writer.push(" ", false);
                }
            }
            _ => {}
        }
        self.writer.block(breaks(name));
    }

    fn end(&mut self, tag: &Tag) {
        let name = &*tag.name;
        match name {
            "title" => self.in_title = false,
            "pre" => self.pre = self.pre.saturating_sub(1),
            "a" => {
                if let Some((url, true)) = self.link.take() {
                    self.writer.push(&format!("]({url})"), true);
                }
            }
            _ => {}
        }
        self.writer.block(breaks(name));
    }

    fn text(&mut self, text: &str) {
        if self.in_title {
            let title = self.title.get_or_insert_with(String::new);
            if title.len() < HIT_TEXT {
                title.push_str(text);
            }
            return;
        }
        let pre = self.pre > 0;
        if let Some((_, opened)) = &mut self.link {
            let trimmed = text.trim_start();
            if !*opened && !trimmed.is_empty() {
                *opened = true;
                // The bracket goes where the text starts, after any break.
                self.writer.push(&text[..text.len() - trimmed.len()], pre);
                self.writer.push("[", false);
                self.writer.push(trimmed, pre);
                return;
            }
        }
        self.writer.push(text, pre);
    }
}

impl TokenSink for TextSink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut state = self.state.borrow_mut();
        match token {
            Token::TagToken(tag) => {
                if let Some(skipped) = &state.skipping {
                    if tag.kind == TagKind::EndTag && *tag.name == **skipped {
                        state.skipping = None;
                    }
                    return TokenSinkResult::Continue;
                }
                match tag.kind {
                    TagKind::StartTag => {
                        state.start(&tag);
                        if !tag.self_closing {
                            if let Some(kind) = raw_kind(&tag.name) {
                                return TokenSinkResult::RawData(kind);
                            }
                        }
                    }
                    TagKind::EndTag => state.end(&tag),
                }
            }
            Token::CharacterTokens(text) if state.skipping.is_none() => state.text(&text),
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

/// `html` as readable text of at most about `max` bytes: headings as
/// `# …`, list items as `* …`, table cells as `a | b`, links to http(s)
/// as `[text](url)` (relative ones resolved against `base`), scripts and
/// styles left out, the page's title first.
pub fn to_text(html: &str, base: Option<&Url>, max: usize) -> String {
    let sink = tokenize(
        html,
        TextSink {
            state: RefCell::new(TextState {
                writer: Writer::new(max),
                base: base.cloned(),
                links: true,
                skipping: None,
                pre: 0,
                link: None,
                cell: false,
                title: None,
                in_title: false,
            }),
        },
    );
    let state = sink.state.into_inner();
    let body = state.writer.finish();
    match state
        .title
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
    {
        Some(title) if !title.is_empty() && !body.starts_with(&title) => {
            format!("{title}\n\n{body}")
        }
        _ => body,
    }
}

/// The text of an HTML fragment on one line, its white space collapsed.
pub fn fragment_text(html: &str) -> String {
    let sink = tokenize(
        html,
        TextSink {
            state: RefCell::new(TextState {
                writer: Writer::new(HIT_TEXT * 4),
                base: None,
                links: false,
                skipping: None,
                pre: 0,
                link: None,
                cell: false,
                title: None,
                in_title: false,
            }),
        },
    );
    let text = sink.state.into_inner().writer.finish();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One search result: its title, the link as the page gives it, its
/// snippet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawHit {
    pub title: String,
    pub href: String,
    pub snippet: String,
    /// Inside an element marked as an ad (`result--ad`).
    pub ad: bool,
}

struct Open {
    name: String,
    result: bool,
    ad: bool,
    snippet: bool,
}

/// The element with class `result` being read, and what it held.
struct ResultBox {
    depth: usize,
    hits: Vec<RawHit>,
    snippet: Option<String>,
}

struct HitState {
    open: Vec<Open>,
    boxes: Vec<ResultBox>,
    /// The `a.result__a` being read: its depth and its result.
    anchor: Option<(usize, RawHit)>,
    /// The snippet element being read: its depth and its text.
    snippet: Option<(usize, String)>,
    hits: Vec<RawHit>,
}

impl HitState {
    fn start(&mut self, tag: &Tag) {
        let name = tag.name.to_string();
        if void(&name) || tag.self_closing || self.open.len() >= MAX_OPEN {
            return;
        }
        let depth = self.open.len();
        let result = has_class(tag, "result");
        let ad = has_class(tag, "result--ad") || self.open.iter().any(|o| o.ad);
        let snippet = has_class(tag, "result__snippet");
        if result {
            self.boxes.push(ResultBox {
                depth,
                hits: Vec::new(),
                snippet: None,
            });
        }
        if name == "a" && has_class(tag, "result__a") && self.anchor.is_none() {
            let href = attribute(tag, "href").unwrap_or_default().to_string();
            self.anchor = Some((
                depth,
                RawHit {
                    href,
                    ad,
                    ..RawHit::default()
                },
            ));
        }
        if snippet && self.snippet.is_none() {
            self.snippet = Some((depth, String::new()));
        }
        self.open.push(Open {
            name,
            result,
            ad,
            snippet,
        });
    }

    fn end(&mut self, name: &str) {
        let Some(at) = self.open.iter().rposition(|o| o.name == name) else {
            return;
        };
        while self.open.len() > at {
            let depth = self.open.len() - 1;
            let closed = self.open.pop().expect("an element is open");
            self.closed(depth, &closed);
        }
    }

    /// The element at `depth` ended: finish what it held.
    fn closed(&mut self, depth: usize, element: &Open) {
        if self.anchor.as_ref().is_some_and(|(d, _)| *d == depth) {
            let (_, hit) = self.anchor.take().expect("checked");
            match self.boxes.last_mut() {
                Some(b) => b.hits.push(hit),
                None => self.keep(hit),
            }
        }
        if element.snippet && self.snippet.as_ref().is_some_and(|(d, _)| *d == depth) {
            let (_, text) = self.snippet.take().expect("checked");
            if let Some(b) = self.boxes.last_mut() {
                b.snippet.get_or_insert(text);
            }
        }
        if element.result && self.boxes.last().is_some_and(|b| b.depth == depth) {
            let finished = self.boxes.pop().expect("checked");
            self.finish(finished);
        }
    }

    fn finish(&mut self, finished: ResultBox) {
        let mut snippet = finished.snippet;
        for mut hit in finished.hits {
            hit.snippet = snippet.take().unwrap_or_default();
            self.keep(hit);
        }
    }

    fn keep(&mut self, mut hit: RawHit) {
        if self.hits.len() < MAX_HITS {
            hit.title = hit.title.split_whitespace().collect::<Vec<_>>().join(" ");
            hit.snippet = hit.snippet.split_whitespace().collect::<Vec<_>>().join(" ");
            self.hits.push(hit);
        }
    }

    fn text(&mut self, text: &str) {
        let add = |into: &mut String| {
            if into.len() < HIT_TEXT {
                into.push_str(plan_engine::text::prefix(text, HIT_TEXT));
            }
        };
        if let Some((_, hit)) = &mut self.anchor {
            add(&mut hit.title);
        }
        if let Some((_, snippet)) = &mut self.snippet {
            add(snippet);
        }
    }
}

struct HitSink {
    state: RefCell<HitState>,
    skipping: RefCell<Option<String>>,
}

impl TokenSink for HitSink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut skipping = self.skipping.borrow_mut();
        let mut state = self.state.borrow_mut();
        match token {
            Token::TagToken(tag) => {
                if let Some(skipped) = skipping.as_deref() {
                    if tag.kind == TagKind::EndTag && *tag.name == *skipped {
                        *skipping = None;
                    }
                    return TokenSinkResult::Continue;
                }
                match tag.kind {
                    TagKind::StartTag => {
                        if let Some(kind) = raw_kind(&tag.name).filter(|_| !tag.self_closing) {
                            *skipping = Some(tag.name.to_string());
                            return TokenSinkResult::RawData(kind);
                        }
                        state.start(&tag);
                    }
                    TagKind::EndTag => state.end(&tag.name),
                }
            }
            Token::CharacterTokens(text) if skipping.is_none() => state.text(&text),
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

/// The results on DuckDuckGo's HTML page: each `a.result__a` with its
/// link, and the `.result__snippet` of the same `.result` element; those
/// inside a `result--ad` element are marked as ads.
pub fn duckduckgo_hits(html: &str) -> Vec<RawHit> {
    let sink = tokenize(
        html,
        HitSink {
            state: RefCell::new(HitState {
                open: Vec::new(),
                boxes: Vec::new(),
                anchor: None,
                snippet: None,
                hits: Vec::new(),
            }),
            skipping: RefCell::new(None),
        },
    );
    let mut state = sink.state.into_inner();
    // Elements the page never closed end with it.
    while let Some(open) = state.open.pop() {
        let depth = state.open.len();
        state.closed(depth, &open);
    }
    state.hits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_becomes_headings_paragraphs_lists_tables_and_links() {
        let base = Url::parse("https://example.org/docs/").unwrap();
        let text = to_text(
            r#"<html><head><title>Prices  page</title><style>p { color: red }</style>
            <script>var x = "<p>not text</p>";</script></head>
            <body><h1>Prices</h1><p>Apples cost <b>3</b>
            coins.</p><ul><li>one</li><li>two &amp; three</li></ul>
            <table><tr><th>fruit</th><th>price</th></tr><tr><td>pear</td><td>4</td></tr></table>
            <p>See <a href="more.html">the list</a> or <a href="javascript:x()">this</a>.</p>
            <pre>a  b
c</pre></body></html>"#,
            Some(&base),
            10_000,
        );
        assert_eq!(
            text,
            "Prices page\n\n# Prices\n\nApples cost 3 coins.\n\n* one\n* two & three\n\n\
             fruit | price\npear | 4\n\nSee [the list](https://example.org/docs/more.html) or \
             this.\n\na  b\nc"
        );
    }

    #[test]
    fn the_text_stops_at_its_length() {
        let page = "<p>word</p>".repeat(10_000);
        let text = to_text(&page, None, 1_000);
        assert!(text.len() <= 1_010, "{}", text.len());
        assert!(text.starts_with("word\n\nword"), "{text}");
    }

    #[test]
    fn a_fragment_is_one_line() {
        assert_eq!(
            fragment_text("A language <b>empowering</b>\n everyone &amp; more"),
            "A language empowering everyone & more"
        );
    }

    /// The page that took 1.3 GB through html2text's tree builder: each
    /// formatting element distinct (the tree builder keeps at most three
    /// alike), opened in a paragraph, so the next paragraph closes them
    /// and its text re-opens every one.
    fn amplifying_page(tags: usize, paragraphs: usize) -> String {
        let mut page = String::from("<html><body><p>");
        for i in 0..tags {
            let tag = ["b", "i", "font", "u", "em"][i % 5];
            page.push_str(&format!("<{tag} id={i}>"));
        }
        for _ in 0..paragraphs {
            page.push_str("<p>x");
        }
        page
    }

    /// The limit a reading of the page runs under: the test binary
    /// itself takes some tens of MB of address space; html2text's tree
    /// of the page took 1.3 GB.
    const LIMITED: &[&str] = &["--as=536870912"];

    #[test]
    fn unclosed_formatting_tags_cost_no_more_than_the_page_itself() {
        if !crate::testing::is_child() {
            return crate::testing::run_limited(
                "tools::html::tests::unclosed_formatting_tags_cost_no_more_than_the_page_itself",
                LIMITED,
                std::time::Duration::from_secs(60),
            );
        }
        // 25 KiB, as the page that raised the server's peak by 1.3 GB.
        let page = amplifying_page(300, 4_000);
        assert!(page.len() <= 25 * 1024, "{}", page.len());
        let text = to_text(&page, None, 100_000);
        assert_eq!(text.matches('x').count(), 4_000, "{text}");
        assert!(duckduckgo_hits(&page).is_empty());
        assert!(fragment_text(&page).starts_with("x x x"));
    }

    #[test]
    fn deeply_nested_elements_are_tracked_only_to_a_depth() {
        if !crate::testing::is_child() {
            return crate::testing::run_limited(
                "tools::html::tests::deeply_nested_elements_are_tracked_only_to_a_depth",
                LIMITED,
                std::time::Duration::from_secs(60),
            );
        }
        let inner =
            r#"<div class="result"><a class="result__a" href="https://a.example/">A</a></div>"#;
        let page = format!("{}{inner}", "<div>".repeat(1_000_000));
        // Past MAX_OPEN the result box is not tracked, so nothing is found,
        // and nothing grew with the depth.
        assert!(duckduckgo_hits(&page).is_empty());
        let shallow = format!("{}{inner}", "<div>".repeat(10));
        assert_eq!(duckduckgo_hits(&shallow).len(), 1);
    }
}
