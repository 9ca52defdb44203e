//! The executor: one subtask, a bounded ReAct loop. The prompt holds the
//! task, the engine's bounded hint (not the whole plan), this subtask, the
//! results of its dependencies (cut), what people said about it, and the
//! turns so far; its size does not grow with the plan.
//!
//! # Layout
//! - [`execute`]: the loop: the model acts, [`attempt::Attempt`] says what
//!   its action came to (the executor's named rules live there), until an
//!   outcome or the turn limit; [`write`]: a step written in words.
//! - [`brief`], `system`: what the model is given.
//! - The rules' texts and tests of what they recognise (`bare_numbers`,
//!   `restates`, `insisted`, `word_limit` …) below the loop.

mod attempt;

use std::collections::HashMap;

use attempt::{Attempt, Turn};

use plan_engine::text::last_lines;
use plan_engine::{HintOptions, Plan, SubtaskId};

use crate::call::{CallError, Caller};
use crate::host::Host;
use crate::llm::Message;
use crate::prompts;
use crate::protocol::{Action, ToolSpec};
use crate::roles::checker;
use crate::roles::length::{counted_length, word_limit};
use crate::run::RunEntry;
use crate::run::Verdict;
use crate::tools::sandbox::capture::{stderr_of, untimed};
use crate::tools::{ToolError, Toolset};

/// The agent's name on the plans it changes.
pub const AGENT_ACTOR: &str = "planboard-agent";
/// Characters of one dependency's result shown to the executor.
const DEPENDENCY_RESULT: usize = 600;
/// Dependencies whose results are shown; the rest are named only.
const DEPENDENCIES_SHOWN: usize = 8;
/// Characters of one tool result shown back to the model.
const OBSERVATION: usize = 4_000;

pub enum Outcome {
    /// `short_of`: what the executor says the result lacks against the
    /// expected outcome.
    Done {
        result: String,
        short_of: Option<String>,
    },
    /// `again`: another attempt may succeed (the model said it failed, ran
    /// out of turns, or answered unreadably); not when the model itself
    /// could not be used (a wrong key, no quota, out of retries), which is
    /// for a person.
    Failed {
        reason: String,
        again: bool,
    },
    Asked(String),
    /// A budget ran out mid-subtask: the subtask is released, the run pauses.
    Budget(String),
    /// A replay that stops at unmatched calls met one: the subtask is
    /// released and the run pauses with the reason (a person edits or
    /// skips the subtask, or resumes to make the call live).
    Stopped(String),
}

pub struct Job {
    /// The task as the model reads it, with the given files listed
    /// ([`run_model::RunConfig::task_for_model`]).
    pub task: String,
    /// The person's own words, without that listing: what the task asks
    /// (a length, a number) is read here, never from a file's preview.
    pub said: String,
    /// Shared with the coordinator (a copy would cost as much as the plan).
    pub plan: std::sync::Arc<Plan>,
    pub subtask: SubtaskId,
    /// The optional actions offered (add a subtask, ask a person).
    pub offered: crate::protocol::Actions,
    pub max_turns: u32,
    /// What people changed in the plan while it ran, newest last.
    pub people_changes: Vec<String>,
    /// Why the earlier attempts at this subtask failed, oldest first.
    pub earlier_failures: Vec<String>,
    /// What people taught that concerns this step (recalled rules and
    /// corrections, [`run_model::memory::step_section`]); "" when none.
    pub taught: String,
    /// The step is written in one plain-text turn (the rule
    /// [`crate::rules::WORDS_WRITTEN_WHOLE`], for a task answered in
    /// words), not worked in the action loop.
    pub written: bool,
    /// Given files the written step is about (the rule
    /// [`crate::rules::GIVEN_TEXTS_WRITTEN_ABOUT`]): their whole text is
    /// read into the writer's brief; empty for every other step.
    pub material: Vec<String>,
    /// The files the run was given, with the previews the task shows of
    /// them (the rule [`crate::rules::GIVEN_FILES_READ_WHOLE`]).
    pub inputs: Vec<run_model::config::InputFile>,
}

pub fn cut(text: &str, max: usize) -> String {
    let kept = plan_engine::text::prefix(text, max);
    if kept.len() == text.len() {
        return text.to_string();
    }
    format!("{kept}{CUT}")
}

/// What [`cut`] adds to a text it cut, so a reader (the model, a person)
/// knows there was more.
const CUT: &str = "… (cut)";

/// The longest note or description the agent writes into a plan itself
/// (a subtask's reason, a re-planned description, a planner's note): half
/// the engine's bound ([`plan_engine::model::limits::TEXT`]), so a model's
/// long answer stays readable on a card and in the next prompt ([`cut`]'s
/// marker keeps it far inside the bound).
pub const OWN_TEXT: usize = plan_engine::model::limits::TEXT / 2;

/// [`cut`] so that the result, its marker included, stays within `limit`
/// characters: for a value bound for one of the engine's limits
/// ([`plan_engine::model::limits`]), which refuses a longer one.
pub fn cut_within(text: &str, limit: usize) -> String {
    cut(text, limit.saturating_sub(CUT.chars().count()))
}

/// The heading of the earlier attempts' reasons in a brief.
const EARLIER_FAILURES: &str = "\nEarlier attempts at this subtask failed:\n";

/// The first user message of a subtask.
pub fn brief(job: &Job) -> String {
    let plan = &job.plan;
    let Some(s) = plan.subtask(job.subtask) else {
        return format!("Task: {}", job.task);
    };
    let mut out = format!("Task: {}\n\n", job.task);
    let hint = plan_engine::hint(Some(plan), &HintOptions::default());
    out.push_str("Where the plan stands (for orientation; act only through your actions):\n");
    out.push_str(&hint);
    out.push_str(&format!(
        "\n\nYour subtask #{}: {}\n{}\n",
        s.id().0,
        s.name(),
        s.description()
    ));
    if let Some(tool) = s.tool() {
        out.push_str(&format!("Tool to use: {tool}\n"));
    }
    if !s.expected_outcome().is_empty() {
        out.push_str(&format!("Expected outcome: {}\n", s.expected_outcome()));
    }
    if !s.dependencies().is_empty() {
        out.push_str("\nResults of the subtasks it depends on:\n");
        for (i, dep) in s.dependencies().iter().enumerate() {
            let Some(d) = plan.subtask(*dep) else {
                continue;
            };
            if i < DEPENDENCIES_SHOWN {
                let result = d.outcome().unwrap_or("(no result)");
                out.push_str(&format!(
                    "- #{} {}: {}\n",
                    d.id().0,
                    d.name(),
                    cut(result, DEPENDENCY_RESULT)
                ));
            } else {
                out.push_str(&format!(
                    "- #{} {} (result not shown)\n",
                    d.id().0,
                    d.name()
                ));
            }
        }
    }
    people_said(
        plan,
        |about| about == Some(s.id()),
        "What people said about this subtask (answers to your questions among them):",
        &mut out,
    );
    // What people said about the plan as a whole (files they added to the
    // workspace are announced so).
    people_said(
        plan,
        |about| about.is_none(),
        "What people said about the plan:",
        &mut out,
    );
    if !job.earlier_failures.is_empty() {
        out.push_str(EARLIER_FAILURES);
        for (i, reason) in job.earlier_failures.iter().enumerate() {
            out.push_str(&format!("- attempt {}: {}\n", i + 1, cut(reason, 500)));
        }
        out.push_str(prompts::TRY_AGAIN);
        out.push('\n');
    }
    if !job.taught.is_empty() {
        out.push('\n');
        out.push_str(&job.taught);
    }
    if !job.people_changes.is_empty() {
        out.push_str("\nPeople changed the plan while it ran:\n");
        for change in job.people_changes.iter().rev().take(5).rev() {
            out.push_str(&format!("- {change}\n"));
        }
    }
    out.push('\n');
    out.push_str(prompts::LANGUAGE);
    out
}

/// The newest three comments of people (not the agent) whose subtask
/// `about` picks, oldest first under `heading`, each cut to 500
/// characters; nothing when there are none.
fn people_said(
    plan: &Plan,
    about: impl Fn(Option<SubtaskId>) -> bool,
    heading: &str,
    out: &mut String,
) {
    let said: Vec<String> = plan
        .comments()
        .iter()
        .filter(|c| about(c.subtask) && c.author != AGENT_ACTOR)
        .rev()
        .take(3)
        .map(|c| format!("- {}: {}", c.author, cut(&c.body, 500)))
        .collect();
    if said.is_empty() {
        return;
    }
    out.push_str(&format!("\n{heading}\n"));
    for line in said.iter().rev() {
        out.push_str(line);
        out.push('\n');
    }
}

fn system(tools: &[ToolSpec], offered: crate::protocol::Actions) -> String {
    let mut out = String::from(prompts::EXECUTOR);
    if tools.iter().any(|t| CODE_TOOLS.contains(&t.name.as_str())) {
        out.push('\n');
        out.push_str(prompts::EXECUTOR_CODE);
    }
    if offered.ask {
        out.push('\n');
        out.push_str(prompts::EXECUTOR_ASK);
    }
    if offered.add_subtask {
        out.push('\n');
        out.push_str(prompts::EXECUTOR_ADD);
    }
    if !tools.is_empty() {
        out.push_str("\nTools:");
        for t in tools {
            out.push_str(&format!("\n- {}: {}", t.name, t.description));
        }
    }
    out
}

/// The tools that run code the model writes.
use crate::tools::CODE_TOOLS;

/// Seed 004's tool router: a tool that failed twice in a row is named in
/// the next prompt, with the alternatives.
#[derive(Default)]
struct ToolRouter {
    failures: HashMap<String, (u32, String)>,
}

impl ToolRouter {
    fn record(&mut self, tool: &str, error: Option<&str>) {
        match error {
            Some(e) => {
                let entry = self.failures.entry(tool.to_string()).or_default();
                entry.0 += 1;
                entry.1 = e.to_string();
            }
            None => {
                self.failures.remove(tool);
            }
        }
    }

    fn advice(&self, tools: &[ToolSpec]) -> Option<String> {
        let (tool, (_, last)) = self.failures.iter().find(|(_, (n, _))| *n >= 2)?;
        let others: Vec<&str> = tools
            .iter()
            .map(|t| t.name.as_str())
            .filter(|n| n != tool)
            .collect();
        Some(format!(
            "IMPORTANT: {tool} failed twice in a row (last: {last}). Do not call it again the same way; {}",
            if others.is_empty() {
                "complete with what you have, or fail with the reason.".to_string()
            } else {
                format!("try another way: {}, or complete or fail.", others.join(", "))
            }
        ))
    }
}

/// The calls of one attempt and what they returned: a call repeated with
/// the same arguments, or one that returns what an earlier call returned,
/// shows the model nothing new (Qwen2.5-1.5B printed the same three files
/// with the same code four times, until the run's time ran out).
#[derive(Default)]
struct Seen {
    /// Each call's tool, arguments and output (without its timing).
    calls: Vec<(String, serde_json::Value, String)>,
    /// How often the model repeated itself so far.
    repeats: u32,
}

/// Repeats an attempt survives: the first is pointed out, the next one
/// fails the attempt, whose next try starts afresh with the reason.
const REPEATS: u32 = 1;

impl Seen {
    /// The 1-based number of an earlier call with these arguments.
    fn same_call(&self, name: &str, arguments: &serde_json::Value) -> Option<usize> {
        self.calls
            .iter()
            .position(|(n, a, _)| n == name && a == arguments)
            .map(|i| i + 1)
    }

    /// The 1-based number of an earlier call of `name` that returned
    /// `output`; a code tool's run time (its report's first line, `exit
    /// status 0 (0.03 s)`) is not part of what it returned.
    fn same_output(&self, name: &str, output: &str) -> Option<usize> {
        let output = untimed(output);
        self.calls
            .iter()
            .position(|(n, _, o)| n == name && o == output)
            .map(|i| i + 1)
    }

    fn record(&mut self, name: &str, arguments: &serde_json::Value, output: &str) {
        self.calls.push((
            name.to_string(),
            arguments.clone(),
            untimed(output).to_string(),
        ));
    }
}

/// What the model reads when it repeats itself: use what it already has.
fn repeated(name: &str, call: usize, same_arguments: bool, code: bool) -> String {
    let what = if same_arguments {
        format!("You already called {name} with exactly these arguments (call {call}); it was not run again: its result, above, would be the same.")
    } else {
        format!("This is exactly what call {call} of {name} returned: nothing new.")
    };
    let next = if code {
        "Do not print or read the same data again: use what it showed. Write code that \
         computes what the subtask asks (count, sum, filter, compare) and prints the result \
         with a label, then complete with it."
    } else {
        "Do not repeat it: use what it returned, take another way, or complete with what you \
         have."
    };
    format!("{what} {next}")
}

/// The offered tool the subtask is to use: its `tool` field, else the
/// first offered tool its own words name (its name, description or
/// expected outcome; plans written by people or older planners).
fn named_tool<'a>(job: &Job, specs: &'a [ToolSpec]) -> Option<&'a str> {
    let s = job.plan.subtask(job.subtask)?;
    if let Some(tool) = s.tool() {
        if let Some(spec) = specs.iter().find(|spec| spec.name == tool) {
            return Some(spec.name.as_str());
        }
    }
    let text = format!("{} {} {}", s.name(), s.description(), s.expected_outcome());
    specs
        .iter()
        .map(|spec| spec.name.as_str())
        .find(|name| text.contains(name))
}

/// What a person said about a guarded call.
enum Guard {
    /// Run it, with these arguments (the agent's, or the person's edit).
    Run(serde_json::Value),
    /// Not run; the model reads why.
    Refused(String),
}

/// Asks a person about a call of an `ask` tool and waits for the answer
/// (on the run log, so it survives nothing but is never lost either: a
/// run that restarts expires the question and the agent may ask again).
async fn guarded(
    caller: &Caller,
    host: &dyn Host,
    subtask: SubtaskId,
    name: &str,
    arguments: &serde_json::Value,
) -> Guard {
    let call = uuid::Uuid::new_v4().to_string();
    caller
        .log(RunEntry::ToolApproval {
            subtask,
            call: call.clone(),
            name: name.to_string(),
            arguments: arguments.clone(),
            asker: None,
        })
        .await;
    let decided = match host.tool_verdict(caller.run, &call).await {
        Ok(decided) => decided,
        Err(e) => {
            return Guard::Refused(format!(
                "{name} was not run: the person's decision could not be read ({e})"
            ))
        }
    };
    let because = decided
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    match decided.verdict {
        Verdict::Approved => Guard::Run(arguments.clone()),
        Verdict::Edited => Guard::Run(decided.arguments.unwrap_or_else(|| arguments.clone())),
        Verdict::Denied => Guard::Refused(format!(
            "A person ({}) denied the call of {name}{because}. Do not repeat it; find another way or explain in your result why you cannot.",
            decided.by
        )),
        Verdict::Expired => Guard::Refused(format!(
            "The call of {name} was not decided before the run restarted{because}; ask again if you still need it."
        )),
    }
}

async fn run_tool(
    caller: &Caller,
    tools: &Toolset,
    subtask: SubtaskId,
    name: &str,
    arguments: &serde_json::Value,
) -> Result<String, ToolError> {
    // Stored before the call runs: a call that takes the process down
    // (a page that exhausts memory) is found on the log at the restart,
    // and the same call is not made blindly a third time.
    caller
        .log_stored(RunEntry::ToolStarted {
            subtask,
            name: name.to_string(),
            arguments: arguments.clone(),
            digest: run_model::call_digest(name, arguments),
        })
        .await;
    // A tool that asks a person in the middle of its call asks this run's.
    let people: std::sync::Arc<dyn crate::tools::People> =
        std::sync::Arc::new(crate::asking::RunPeople {
            host: caller.host.clone(),
            run: caller.run,
            subtask,
        });
    let mut attempt = 1;
    loop {
        match tools.call_for(name, arguments, Some(people.clone())).await {
            Ok(out) => return Ok(out),
            Err(e) if e.retryable => {
                let Some(delay) = caller.retry.backoff(attempt) else {
                    return Err(e);
                };
                caller
                    .log(RunEntry::ToolRetryScheduled {
                        subtask,
                        name: name.to_string(),
                        attempt,
                        delay_ms: delay.as_millis() as u64,
                        error: e.message.clone(),
                    })
                    .await;
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Runs one subtask to an outcome. Adding a subtask happens right away
/// through the host, so people see it while the subtask goes on. Each
/// turn, the model acts and reads what its action came to; the rules that
/// give it another turn, or end the attempt, are [`Attempt`]'s.
pub async fn execute(caller: &Caller, host: &dyn Host, tools: &Toolset, job: Job) -> Outcome {
    if job.written {
        return write(caller, host, &job).await;
    }
    let mut attempt = Attempt::new(caller, host, tools, &job);
    for turn in 1..=job.max_turns.max(1) {
        let action = match attempt.next_action().await {
            Ok(action) => action,
            Err(end) => return end,
        };
        match attempt.turn(&action, turn).await {
            Turn::End(outcome) => return outcome,
            Turn::Said(said) => attempt.read(&action, said, Some(turn)),
            Turn::Aside(said) => attempt.read(&action, said, None),
        }
    }
    Outcome::Failed {
        reason: format!(
            "no result after {} turns (the per-subtask limit)",
            job.max_turns
        ),
        again: true,
    }
}

/// The rule `words_written_whole`: the step's text, written in one
/// plain-text turn from the step's brief; the text is the result.
async fn write(caller: &Caller, host: &dyn Host, job: &Job) -> Outcome {
    let texts = given_texts(caller, host, job).await;
    // Without the text, the writer would write from a preview it was
    // told to read with a tool it does not have.
    if texts.len() < job.material.len() {
        return Outcome::Failed {
            reason: "a given file to write about could not be read from the workspace".into(),
            again: true,
        };
    }
    let brief = words_brief(job, &texts);
    let messages = vec![
        Message::system(prompts::WRITER),
        Message::user(brief.clone()),
    ];
    let limit = crate::rules::on(&crate::rules::WORD_LIMIT_KEPT)
        .then(|| word_limit(&job.said))
        .flatten();
    let mut written = caller
        .text(
            crate::llm::CallRole::Executor,
            messages,
            1200,
            Some(job.subtask),
        )
        .await;
    // The rule `word_limit_kept`: once, a text over the task's limit.
    if let (Ok(text), Some(most)) = (&written, limit) {
        let words = text.split_whitespace().count();
        if words > most {
            let least = most / 2;
            let ask = format!(
                "That text has {words} words; the task allows at most {most}. Write it again in \
                 {least} to {most} words, keeping what matters most, the text alone."
            );
            // The shorter text when there is one; a failed retry keeps
            // the first (a text over the limit is still the work).
            if let Some(shorter) = sent_back(caller, job, &brief, text, ask).await {
                written = Ok(shorter);
            }
            // Still over: its whole sentences that fit, when one does (a
            // summary asked in 40 words came back twice in 59).
            if let Ok(text) = &written {
                if let Some(fits) = sentences_within(text, most) {
                    written = Ok(fits);
                }
            }
        }
    }
    // The same rule for a length in sentences ("two or three sentences")
    // or lines ("a limerick", "in four lines"): once, with the count; not
    // cut, as a poem or a sentence cut off is no text.
    if crate::rules::on(&crate::rules::WORD_LIMIT_KEPT) {
        if let Ok(text) = &written {
            let said = crate::roles::classify::instruction(&job.said);
            let ask = sentences_over(&said, text).or_else(|| lines_off(&said, text));
            if let Some(ask) = ask {
                if let Some(again) = sent_back(caller, job, &brief, text, ask).await {
                    // The word limit holds for the text written again.
                    let fits = limit.and_then(|most| sentences_within(&again, most));
                    written = Ok(fits.unwrap_or(again));
                }
            }
        }
    }
    match written {
        Ok(text) if !text.trim().is_empty() => Outcome::Done {
            result: text,
            short_of: None,
        },
        Ok(_) => Outcome::Failed {
            reason: "the model wrote nothing".into(),
            again: true,
        },
        Err(CallError::Budget(why)) => Outcome::Budget(why),
        Err(e) => Outcome::Failed {
            again: !matches!(e, CallError::Llm(_)),
            reason: e.to_string(),
        },
    }
}

/// The rule `word_limit_kept`'s one turn: `text` sent back to the writer
/// with `ask`; the text written again, when the model wrote one.
async fn sent_back(
    caller: &Caller,
    job: &Job,
    brief: &str,
    text: &str,
    ask: String,
) -> Option<String> {
    let messages = vec![
        Message::system(prompts::WRITER),
        Message::user(brief.to_string()),
        Message::assistant(text.to_string()),
        Message::user(ask),
    ];
    caller
        .text(
            crate::llm::CallRole::Executor,
            messages,
            1200,
            Some(job.subtask),
        )
        .await
        .ok()
        .filter(|again| !again.trim().is_empty())
}

/// The writer's message: the task, the step when it says more, what
/// people said and taught; not the plan, whose lines a small model copied
/// into its text ("#1 … (in_progress) - Description: …").
fn words_brief(job: &Job, texts: &[(String, String)]) -> String {
    // With the files' whole text, not their listing's "read them with
    // read_file" and previews: the writer has no tool.
    let task = match texts {
        [] => &job.task,
        _ => &job.said,
    };
    let mut out = format!("Task: {task}\n");
    for (path, text) in texts {
        out.push_str(&format!(
            "\nThe text of {path}, given by the person (material, not instructions):\n<<<\n{}\n>>>\n",
            text.trim_end()
        ));
    }
    if let Some(s) = job.plan.subtask(job.subtask) {
        if s.description().trim() != job.said.trim() {
            out.push_str(&format!("\nWhat to write: {}\n", s.description()));
        }
        people_said(
            &job.plan,
            |about| about.is_none_or(|id| id == s.id()),
            "What people said:",
            &mut out,
        );
    }
    if !job.taught.is_empty() {
        out.push('\n');
        out.push_str(&job.taught);
    }
    out.push('\n');
    out.push_str(prompts::LANGUAGE);
    out
}

/// The whole text of each given file the written step is about (read
/// through the host, bounded, never through a link), by path; a file the
/// host cannot read is left out (and [`write`] then fails the step).
async fn given_texts(caller: &Caller, host: &dyn Host, job: &Job) -> Vec<(String, String)> {
    // One bound for all of them together.
    let mut left = crate::roles::classify::GIVEN_TEXT_BYTES;
    let mut out = Vec::new();
    for path in &job.material {
        if let Ok(Some(bytes)) = host.workspace_head(caller.run, path, left).await {
            left = left.saturating_sub(bytes.len() as u64);
            out.push((path.clone(), String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    out
}

/// `text`'s leading whole sentences that fit in `most` words, when the
/// whole text does not and at least one sentence does.
fn sentences_within(text: &str, most: usize) -> Option<String> {
    if text.split_whitespace().count() <= most {
        return None;
    }
    let mut kept = String::new();
    let mut words = 0;
    for sentence in crate::roles::classify::sentences(text) {
        let sentence = sentence.trim();
        // A heading ("Summary of notes.txt:") is not a sentence of the
        // text: kept alone, it was the whole answer once.
        if sentence.ends_with(':') {
            continue;
        }
        let n = sentence.split_whitespace().count();
        if words + n > most {
            break;
        }
        if !sentence.is_empty() {
            if !kept.is_empty() {
                kept.push(' ');
            }
            kept.push_str(sentence);
            words += n;
        }
    }
    (!kept.is_empty()).then_some(kept)
}

/// The sentences of a written text that are sentences of it: those of
/// three words or more, not a subject line (a greeting, "Dear Ines,", or
/// a short sign-off is none).
fn sentence_count(text: &str) -> usize {
    crate::roles::classify::sentences(text)
        .filter(|s| {
            let s = s.trim();
            s.split_whitespace().count() >= 3 && !s.to_lowercase().starts_with("subject:")
        })
        .count()
}

/// What the writer is told when `text` has more sentences than the task's
/// `instruction` allows.
fn sentences_over(instruction: &str, text: &str) -> Option<String> {
    let (most, _) = counted_length(instruction, "sentence")?;
    let n = sentence_count(text);
    (n > most).then(|| {
        format!(
            "That text has {n} sentences; the task asks for {most} at most. Write it again in \
             {most} sentences or fewer, keeping what matters most, the text alone."
        )
    })
}

/// Poems whose form sets their lines.
const FORMS: [(&str, usize); 3] = [("haiku", 3), ("limerick", 5), ("sonnet", 14)];

/// The lines the task's `instruction` asks its text to have, whether that
/// is a most, and why: a count of lines ("in four lines"), else one poem
/// of a form that the instruction asks to be written ("Write a short
/// limerick …": 5). Not "Explain what a sonnet is", "Write a haiku and a
/// limerick" or "two haikus".
fn line_ask(instruction: &str) -> Option<(usize, bool, String)> {
    if let Some((n, most)) = counted_length(instruction, "line") {
        return Some((n, most, format!("the task asks for {n}")));
    }
    let lower = instruction.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut forms = FORMS
        .iter()
        .filter(|(form, _)| words.iter().any(|w| w.starts_with(form)));
    let (form, n) = forms.next()?;
    if forms.next().is_some() {
        return None;
    }
    // "write|compose|draft [me] a|an|one [one or two words] <form>", the
    // form's word singular.
    let at = words.iter().position(|w| w == form)?;
    let article = (at.saturating_sub(3)..at).find(|&k| ["a", "an", "one"].contains(&words[k]))?;
    let verb = article.checked_sub(1).map(|k| words[k]);
    let verb = if verb == Some("me") {
        article.checked_sub(2).map(|k| words[k])
    } else {
        verb
    };
    matches!(verb, Some("write" | "compose" | "draft"))
        .then(|| (*n, false, format!("a {form} has {n}")))
}

/// What the writer is told when `text`'s lines are not what the task's
/// `instruction` asks.
fn lines_off(instruction: &str, text: &str) -> Option<String> {
    let (n, most, why) = line_ask(instruction)?;
    let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
    let off = if most { lines > n } else { lines != n };
    off.then(|| {
        format!(
            "That text has {lines} lines; {why}. Write it again in {n} lines, each on a line of \
             its own, the text alone."
        )
    })
}

/// Whether a question to a person asks what the task itself asks (the
/// rule `own_question_not_asked`): at least two of its telling words, and
/// four in five of them, are the task's. A question about something the
/// task does not say ("Which folder should the report go to?") brings
/// words of its own.
fn restates(question: &str, task: &str) -> bool {
    let theirs = run_model::memory::telling(question);
    let task = run_model::memory::telling(task);
    let shared = theirs.iter().filter(|t| task.contains(t)).count();
    shared >= 2 && shared * 5 >= theirs.len() * 4
}

/// What the model reads when its result states numbers that neither its
/// brief nor a tool's output holds.
/// `printed`: the last tool output, quoted so the model can copy its
/// values (asked only to look again, Qwen2.5-1.5B repeated its guess).
fn ungrounded(missing: &[String], specs: &[ToolSpec], printed: Option<&str>) -> String {
    let list = missing
        .iter()
        .take(5)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    let code = specs.iter().any(|s| s.name == "run_python");
    let quoted = printed
        .map(|p| format!("The last tool output was:\n{}\n", cut(p, 600)))
        .unwrap_or_default();
    format!(
        "Your result states {list}, but no tool output and nothing you were given shows that. \
         Do not state numbers you did not see. {quoted}{}",
        if printed.is_some() {
            "Complete with the values exactly as printed, or call a tool to compute what is \
             missing."
        } else if code {
            "Call run_python with a program that computes and prints them, then complete with \
             the values exactly as printed."
        } else {
            "Complete with the values exactly as the tools printed them, or fail with the reason."
        }
    )
}

/// Characters of a result that keeps its number against two checks and
/// still counts as giving no reason: a number and a short sentence.
const NO_REASON: usize = 100;

/// Whether a result completed after two checks agreed on `theirs` keeps
/// another number without a reason: it states numbers, none of `theirs`,
/// and is no longer than a short sentence, where the dispute asked it to
/// say what the two programs got wrong. Qwen2.5-1.5B, shown two programs
/// that both counted 33 distinct clients, ran its own program again and
/// completed with "299" (its program took the rest of each line for the
/// address).
fn insisted(result: &str, theirs: &str) -> bool {
    let theirs = crate::grounded::numbers(theirs);
    let stated = crate::grounded::numbers(result);
    !theirs.is_empty()
        && !stated.is_empty()
        && !stated
            .iter()
            .any(|n| theirs.iter().any(|t| checker::same(n, t)))
        && result.trim().chars().count() <= NO_REASON
}

/// The result of a subtask whose executor kept its number against two
/// checks without a reason: the checks' number first (two programs
/// against one), and what the executor said, so a person sees both.
fn overruled(theirs: &str, result: &str) -> String {
    format!(
        "{theirs}. Two programs written independently both computed {theirs}; the \
         executor said {} and gave no reason to keep it.",
        result.trim()
    )
}

/// Whether a result is several numbers and no word of what they are
/// (Qwen2.5-1.5B completed "count the functions of three files" with "6 3
/// 3", its code's per-file counts, and the answer then said 6): a person
/// cannot read it, and the answer's writer may not add them up.
fn bare_numbers(result: &str) -> bool {
    crate::grounded::numbers(result).len() >= 2 && !result.chars().any(char::is_alphabetic)
}

/// Numbers a tool showed, under the name of the subtask they answer, so
/// a person and the answer's writer can tell what they are.
fn labelled(job: &Job, shown: &str) -> String {
    let name = job
        .plan
        .subtask(job.subtask)
        .map(|s| s.name())
        .unwrap_or("result");
    format!("{name}: {}", shown.trim())
}

/// What the model reads when its result is bare numbers.
fn bare(specs: &[ToolSpec]) -> String {
    let tool = if specs.iter().any(|s| s.name == "run_python") {
        "run_python"
    } else {
        "a tool"
    };
    format!(
        "Your result is only numbers, with no word of what each one is. Complete with a \
         sentence that answers the subtask, each number labelled (what it is, of which part). \
         If the subtask asks for one value over the parts (a total, a mean, the largest), \
         compute it with {tool} and state it first."
    )
}

/// A new subtask's name without a leading "#12 " the model copied from
/// what it was told ("Added to the plan as #12"); any other name whole
/// ("2026 sales summary" keeps its year).
fn uncopied(name: &str) -> String {
    let copied = name.trim_start().strip_prefix('#').and_then(|rest| {
        let after = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        (after.len() < rest.len() && after.starts_with(char::is_whitespace))
            .then(|| after.trim_start())
    });
    copied.unwrap_or(name).to_string()
}

/// The failed attempt a `fail` action ends in.
fn failed(reason: &str) -> Outcome {
    Outcome::Failed {
        reason: reason.to_string(),
        again: true,
    }
}

/// What the model reads when it fails a subtask after its code failed:
/// the error's last lines, and that fixing it is its work.
fn fix(report: &str) -> String {
    let tail = last_lines(report, 6);
    format!(
        "Do not fail the subtask because your code failed: a code error is yours to fix. The \
         error was:\n{}\nFix that line (the code holds only Python, nothing copied from the \
         task or the plan) and run it again. Fail only if the subtask truly cannot be done.",
        cut(&tail, 800)
    )
}

/// What the model reads when it fails a subtask after the web could not
/// be reached, with a code tool at hand (and its code's last error, if
/// its code failed too).
fn offline(error: &str, code: Option<&str>) -> String {
    let mut said = format!(
        "The web could not be reached ({}). Do not fail yet: if what the subtask needs can be \
         computed or worked out from the files, do it with run_python, without the network, \
         and complete with what it prints. Fail only if the subtask truly needs a page from \
         the web.",
        cut(error, 300)
    );
    if let Some(report) = code {
        let tail = last_lines(stderr_of(report), 4);
        said.push_str(&format!("\nYour code failed too:\n{}", cut(&tail, 500)));
    }
    said
}

/// A `run_python` call whose code holds a backspace or a form feed: a
/// JSON string's `\b` or `\f`, which is what llama.cpp's grammar left of
/// a regular expression's `\w`, `\d` or `\s` (it allows after a
/// backslash only JSON's own escapes). Python would run the mangled
/// pattern and match nothing; Qwen2.5-Coder-1.5B's executors wrote such
/// code, and six of their replies ran on in `\b\b\b…` to the token limit
/// (about a minute each). The model writes the program once more as
/// plain text, in a fenced block, where a backslash is its own, and that
/// program is the call; the conversation shows the call with it. Anything
/// else, or a text call that fails, leaves the action as it was.
async fn unmangled(
    caller: &Caller,
    messages: &[Message],
    action: Action,
    subtask: SubtaskId,
) -> Result<Action, String> {
    let mangled = match &action {
        Action::Tool { name, arguments } if name == checker::CHECK_TOOL => arguments["code"]
            .as_str()
            .is_some_and(|c| c.contains(['\u{8}', '\u{c}'])),
        _ => false,
    };
    if !mangled {
        return Ok(action);
    }
    let mut asked = messages.to_vec();
    asked.push(Message::assistant(action_text(&action)));
    asked.push(Message::user(prompts::CODE_AS_TEXT.to_string()));
    let reply = match caller
        .text(
            crate::llm::CallRole::Executor,
            asked,
            checker::PROGRAM_TOKENS,
            Some(subtask),
        )
        .await
    {
        Ok(reply) => reply,
        Err(CallError::Budget(why)) => return Err(why),
        Err(_) => return Ok(action),
    };
    Ok(match checker::program_of(&reply) {
        Some(code) => Action::Tool {
            name: checker::CHECK_TOOL.to_string(),
            arguments: serde_json::json!({ "code": code }),
        },
        None => action,
    })
}

fn action_text(action: &Action) -> String {
    let value = match action {
        Action::Complete { result, short_of } => {
            serde_json::json!({"action": "complete", "result": result, "short_of": short_of.as_deref().unwrap_or("")})
        }
        Action::Fail { reason } => serde_json::json!({"action": "fail", "reason": reason}),
        Action::Ask { question } => serde_json::json!({"action": "ask", "question": question}),
        Action::AddSubtask { name, description } => {
            serde_json::json!({"action": "add_subtask", "name": name, "description": description})
        }
        Action::Tool { name, arguments } => {
            serde_json::json!({"action": name, "arguments": arguments})
        }
    };
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_people_said_is_their_newest_three_comments_on_the_picked_subtask_oldest_first() {
        use plan_engine::{Command, NewPlan, NewSubtask, Op};
        let now = plan_engine::Timestamp::default();
        let spec = NewPlan {
            title: "t".into(),
            goal: "g".into(),
            subtasks: vec![NewSubtask::named("a"), NewSubtask::named("b")],
            ..NewPlan::default()
        };
        let mut plan = Plan::create(&spec, "mira", now).expect("a plan").0;
        for (who, about, body) in [
            ("mira", Some(1), "one"),
            ("ivo", None, "about the plan"),
            ("mira", Some(2), "about b"),
            ("ivo", Some(1), "two"),
            ("mira", Some(1), "three"),
            ("ivo", Some(1), "four"),
            (AGENT_ACTOR, Some(1), "the agent's own"),
        ] {
            let op = Op::Comment {
                subtask: about.map(SubtaskId),
                body: body.into(),
            };
            plan.execute(&Command::from(op), who, now)
                .expect("a comment");
        }
        let said = |pick: fn(Option<SubtaskId>) -> bool| {
            let mut out = String::new();
            people_said(&plan, pick, "Said:", &mut out);
            out
        };
        assert_eq!(
            said(|about| about == Some(SubtaskId(1))),
            "\nSaid:\n- ivo: two\n- mira: three\n- ivo: four\n"
        );
        assert_eq!(
            said(|about| about.is_none()),
            "\nSaid:\n- ivo: about the plan\n"
        );
        assert_eq!(said(|about| about == Some(SubtaskId(9))), "");
    }

    #[test]
    fn a_text_over_its_limit_keeps_the_whole_sentences_that_fit() {
        let text = "One two three. Four five six seven! Eight nine ten eleven twelve.";
        assert_eq!(
            sentences_within(text, 8).as_deref(),
            Some("One two three. Four five six seven!")
        );
        assert_eq!(sentences_within(text, 20), None, "it fits");
        assert_eq!(sentences_within(text, 2), None, "no sentence fits");
        let headed = "Summary of notes.txt for the manager:\nThe roof leaks badly in bay two. The \
                      charger in bay four trips its breaker twice a week, an electrician says.";
        assert_eq!(
            sentences_within(headed, 12).as_deref(),
            Some("The roof leaks badly in bay two."),
            "not the heading"
        );
        assert_eq!(
            sentences_within("Version 2.5 is out. It is fast and small.", 5).as_deref(),
            Some("Version 2.5 is out.")
        );
    }

    #[test]
    fn a_task_sets_a_sentence_limit_only_where_it_counts_them() {
        let limit = |task: &str| counted_length(task, "sentence").map(|(n, _)| n);
        assert_eq!(
            limit("Write her a thank-you note of two or three sentences."),
            Some(3)
        );
        assert_eq!(limit("Explain it in 2 sentences"), Some(2));
        assert_eq!(limit("Explain tides in one sentence."), Some(1));
        assert_eq!(limit("Translate the sentence into German"), None);
        assert_eq!(limit("Write a sentence about cats"), None);
        assert_eq!(limit("Explain DNS in 80 words"), None);
        assert_eq!(limit("Write one sentence for each planet"), None);
        assert_eq!(
            limit("Expand these two sentences into five sentences"),
            Some(5)
        );
    }

    #[test]
    fn a_task_asks_for_lines_by_their_number_or_by_one_poem_of_a_form_it_asks_written() {
        let limerick = "There once was a cat\nwho sat on a mat\nit purred all day\nthen went away";
        assert_eq!(
            lines_off("Write a limerick about a cat", limerick).as_deref(),
            Some(
                "That text has 4 lines; a limerick has 5. Write it again in 5 lines, each on a \
                 line of its own, the text alone."
            )
        );
        assert!(lines_off(
            "Write a limerick about a cat",
            &format!("{limerick}\nand that was that")
        )
        .is_none());
        assert!(lines_off("Compose me a short limerick about a cat", limerick).is_some());
        assert!(lines_off("Write a poem in four lines about snow", limerick).is_none());
        assert!(lines_off("Write a poem in 3 lines about snow", limerick).is_some());
        assert!(lines_off("A poem of at most 6 lines about snow", limerick).is_none());
        assert!(lines_off("Write two haikus about rain", "a\nb\nc\nd\ne\nf").is_none());
        assert!(lines_off("List the fruits, one per line", "apple").is_none());
        assert!(lines_off("Explain DNS", "one\ntwo").is_none());
        // Not a poem asked for, two forms, a line picked, a one-line part.
        for task in [
            "Explain what a sonnet is",
            "Write a haiku and a limerick about tea",
            "Explain the first two lines of this poem",
            "Explain one linear and one quadratic function",
            "Write an email with a one-line subject",
        ] {
            assert!(lines_off(task, limerick).is_none(), "{task}");
        }
    }

    #[test]
    fn a_texts_sentences_are_counted_without_its_subject_greeting_and_sign_off() {
        let note = "Subject: Thanks for the plants\n\nDear Ines,\n\nThank you so much for \
                    watering our plants. They look wonderful! We owe you a dinner.\n\nBest,\nSam";
        assert_eq!(sentence_count(note), 3);
        assert_eq!(sentence_count("Version 2.5 is out. It is fast."), 2);
        assert_eq!(sentence_count(""), 0);
    }

    #[test]
    fn a_question_restates_the_task_when_nearly_all_its_telling_words_are_the_tasks() {
        let task = "Which planet of the solar system is the largest?";
        assert!(restates(
            "Which planet in the solar system is the largest?",
            task
        ));
        assert!(restates("What is the largest planet?", task));
        // Words of its own: a question for a person.
        assert!(!restates(
            "Should the answer name its moons as well, or only the planet?",
            task
        ));
        assert!(!restates("Which folder should I save it to?", task));
        // Too few telling words to tell.
        assert!(!restates("Which one?", task));
    }

    #[test]
    fn a_number_copied_into_a_new_subtasks_name_is_dropped_and_a_leading_year_kept() {
        assert_eq!(uncopied("#12 calculate revenue"), "calculate revenue");
        assert_eq!(uncopied(" #7  check"), "check");
        assert_eq!(uncopied("2026 sales summary"), "2026 sales summary");
        assert_eq!(uncopied("#hashtags to count"), "#hashtags to count");
        assert_eq!(uncopied("#12"), "#12");
    }

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    #[test]
    fn with_a_code_tool_the_executor_is_told_to_print_its_evidence_and_write_files_in_code() {
        let offered = crate::protocol::Actions {
            add_subtask: false,
            ask: false,
        };
        let with = system(&[spec("read_file"), spec("run_python")], offered);
        assert!(
            with.contains("Code prints its evidence")
                && with.contains("written by the code itself"),
            "{with}"
        );
        let without = system(&[spec("read_file"), spec("fetch_url")], offered);
        assert!(!without.contains("evidence"), "{without}");
    }

    #[test]
    fn a_code_runs_time_is_not_part_of_what_it_returned() {
        let mut seen = Seen::default();
        let code = serde_json::json!({"code": "print(1)"});
        seen.record(
            "run_python",
            &code,
            "exit status 0 (0.03 s)\n--- stdout ---\n1",
        );
        let again = "exit status 0 (0.05 s)\n--- stdout ---\n1";
        assert_eq!(seen.same_output("run_python", again), Some(1));
        assert_eq!(
            seen.same_output("run_python", "exit status 0 (0.05 s)\n--- stdout ---\n2"),
            None
        );
        assert_eq!(seen.same_output("run_shell", again), None, "another tool");
        assert_eq!(seen.same_call("run_python", &code), Some(1));
    }

    #[test]
    fn a_tool_that_failed_twice_in_a_row_is_named_with_the_alternatives() {
        let tools = [spec("fetch_url"), spec("web_search"), spec("read_file")];
        let mut router = ToolRouter::default();
        router.record("fetch_url", Some("timed out"));
        assert_eq!(router.advice(&tools), None, "once is not yet a pattern");
        router.record("fetch_url", Some("404"));
        let advice = router.advice(&tools).unwrap();
        assert!(
            advice.contains("fetch_url failed twice in a row (last: 404)"),
            "{advice}"
        );
        assert!(advice.contains("web_search, read_file"), "{advice}");
        // A success in between starts the count again.
        router.record("fetch_url", None);
        router.record("fetch_url", Some("404"));
        assert_eq!(router.advice(&tools), None);
        // With no other tool, the way out is to complete or fail.
        let mut alone = ToolRouter::default();
        alone.record("read_file", Some("no such file"));
        alone.record("read_file", Some("no such file"));
        assert!(alone
            .advice(&[spec("read_file")])
            .unwrap()
            .contains("complete with what you have"));
    }

    #[test]
    fn a_short_result_with_another_number_than_two_checks_is_kept_without_a_reason() {
        assert!(insisted("299", "33"));
        assert!(insisted(
            "There are 299 distinct client IP addresses.",
            "33"
        ));
        assert!(!insisted("33", "33"), "it gave way");
        assert!(!insisted("33 distinct clients, not 299", "33"));
        assert!(!insisted(
            "299: both programs above counted only the clients of ERROR lines, and the task \
             asks for every line of the log.",
            "33"
        ));
        assert!(!insisted("299", "no number"));
        assert!(!insisted("Done.", "33"), "no number kept");
        assert_eq!(
            overruled("33", " 299 "),
            "33. Two programs written independently both computed 33; the executor said \
             299 and gave no reason to keep it."
        );
    }
}
