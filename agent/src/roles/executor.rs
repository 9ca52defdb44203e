//! The executor: one subtask, a bounded ReAct loop. The prompt holds the
//! task, the engine's bounded hint (not the whole plan), this subtask, the
//! results of its dependencies (cut), what people said about it, and the
//! turns so far; its size does not grow with the plan.

use std::collections::HashMap;
use std::time::Instant;

use plan_engine::text::last_lines;
use plan_engine::{HintOptions, NewSubtask, Op, Plan, SubtaskId};

use crate::call::{CallError, Caller};
use crate::host::Host;
use crate::llm::Message;
use crate::prompts;
use crate::protocol::{Action, ToolSpec};
use crate::replay::Replayed;
use crate::roles::checker::{self, Recheck};
use crate::run::RunEntry;
use crate::run::{ToolPolicy, Verdict};
use crate::tools::sandbox::capture::{report_failed as code_failed, stderr_of, untimed};
use crate::tools::web::WEB_TOOLS;
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
    pub task: String,
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
    let said: Vec<String> = plan
        .comments()
        .iter()
        .filter(|c| c.subtask == Some(s.id()) && c.author != AGENT_ACTOR)
        .rev()
        .take(3)
        .map(|c| format!("- {}: {}", c.author, cut(&c.body, 500)))
        .collect();
    if !said.is_empty() {
        out.push_str(
            "\nWhat people said about this subtask (answers to your questions among them):\n",
        );
        for line in said.iter().rev() {
            out.push_str(line);
            out.push('\n');
        }
    }
    // What people said about the plan as a whole (files they added to the
    // workspace are announced so), newest 3.
    let about_plan: Vec<String> = plan
        .comments()
        .iter()
        .filter(|c| c.subtask.is_none() && c.author != AGENT_ACTOR)
        .rev()
        .take(3)
        .map(|c| format!("- {}: {}", c.author, cut(&c.body, 500)))
        .collect();
    if !about_plan.is_empty() {
        out.push_str("\nWhat people said about the plan:\n");
        for line in about_plan.iter().rev() {
            out.push_str(line);
            out.push('\n');
        }
    }
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
/// through the host, so people see it while the subtask goes on.
pub async fn execute(caller: &Caller, host: &dyn Host, tools: &Toolset, job: Job) -> Outcome {
    if job.written {
        return write(caller, &job).await;
    }
    let specs = tools.specs();
    let first = brief(&job);
    // What the model was given and what its tools printed: the numbers of
    // its result must be found here (see `grounded`).
    // Not the earlier attempts' failures: their reasons quote the guesses.
    let given = first
        .split(EARLIER_FAILURES)
        .next()
        .unwrap_or_default()
        .to_string();
    let mut evidence = vec![given];
    // What the tool calls of this attempt were asked to do (a program's
    // code, a path): a file the code wrote is named there.
    let mut asked: Vec<String> = Vec::new();
    let mut grounding_checked = false;
    let mut messages = vec![
        Message::system(system(&specs, job.offered)),
        Message::user(first),
    ];
    let mut router = ToolRouter::default();
    // The tools this attempt called, and whether the checking turn (a
    // subtask that names a tool but was completed without it) was had.
    let mut called: std::collections::HashSet<String> = Default::default();
    let mut checked = false;
    // Whether a question was sent back once for the named tool instead,
    // and once as the task's own (the rule `own_question_not_asked`).
    let mut asked_checked = false;
    let mut own_checked = false;
    // Whether numbers read off a file were sent back once to be computed.
    let mut computed_checked = false;
    // Whether a result of bare numbers was sent back once to be said, and
    // that result when the tools' output showed all its numbers.
    let mut bare_checked = false;
    let mut bare_shown: Option<String> = None;
    // The error of the last code run, while it is not fixed, and whether
    // a `fail` after it was sent back once to fix the code instead.
    let mut code_error: Option<String> = None;
    // The report of the last program that ran without error.
    let mut own_output: Option<String> = None;
    // The subtask this attempt added, if it added one.
    let mut added: Option<u32> = None;
    // The error of the last web call, while none has succeeded since.
    let mut web_error: Option<String> = None;
    let mut fix_checked = false;
    // Whether the checker computed this attempt's numbers again, and the
    // number two checks agreed on against the result, if they did.
    let mut others_checked = false;
    let mut disputed: Option<String> = None;
    let mut seen = Seen::default();
    // The recorded results this attempt's calls took (a replay): given
    // back when the attempt stops at an unmatched call and is released.
    let mut replayed_here: Vec<run_model::RecordedCall> = Vec::new();
    for turn in 1..=job.max_turns.max(1) {
        let action = match caller
            .action(messages.clone(), &specs, job.offered, job.subtask)
            .await
        {
            Ok(action) => action,
            Err(CallError::Budget(why)) => return Outcome::Budget(why),
            Err(e) => {
                return Outcome::Failed {
                    again: !matches!(e, CallError::Llm(_)),
                    reason: e.to_string(),
                }
            }
        };
        let action = match unmangled(caller, &messages, action, job.subtask).await {
            Ok(action) => action,
            Err(why) => return Outcome::Budget(why),
        };
        let observation = match &action {
            Action::Complete { result, short_of } => {
                // Numbers stated after reading a file but running no code,
                // where code could have counted them (Qwen2.5-1.5B read a
                // log and answered "10" ERROR lines, a number the log holds
                // in a time of day; there were 30).
                let uncounted = !computed_checked
                    && called.contains("read_file")
                    && !CODE_TOOLS.iter().any(|t| called.contains(*t))
                    && specs.iter().any(|s| s.name == "run_python")
                    && !crate::grounded::numbers(result).is_empty();
                match named_tool(&job, &specs).filter(|t| !checked && !called.contains(*t)) {
                    // One checking turn: small models complete a subtask
                    // from their own head instead of calling the tool its
                    // description names (Qwen2.5-1.5B summed a CSV wrongly).
                    Some(tool) => {
                        checked = true;
                        format!(
                            "This subtask names the tool {tool}, but you completed it without calling {tool}. \
                             Call {tool} now and complete with what it returns; only if the result truly \
                             needs no tool, answer complete again."
                        )
                    }
                    None if !bare_checked && bare_numbers(result) => {
                        bare_checked = true;
                        let sources: Vec<&str> = evidence.iter().map(String::as_str).collect();
                        bare_shown = crate::grounded::unsupported(result, &sources)
                            .is_empty()
                            .then(|| result.clone());
                        bare(&specs)
                    }
                    None if uncounted => {
                        computed_checked = true;
                        "Your result states numbers you read or counted yourself. Count, sum or \
                         compute them with run_python (open the file by its path) and complete \
                         with what it prints; only if a number is copied as it stands in the \
                         file, answer complete again."
                            .to_string()
                    }
                    None => {
                        let sources: Vec<&str> = evidence.iter().map(String::as_str).collect();
                        let missing = crate::grounded::unsupported(result, &sources);
                        // A subtask that works with tools and states,
                        // after being shown the output, numbers none of
                        // it holds has guessed (Qwen2.5-1.5B answered
                        // 134626151315 as 2^100's digit sum): the attempt
                        // fails and the next starts with the reason. One
                        // without tools (a text, a plan) keeps its words.
                        let with_tools = !called.is_empty() || named_tool(&job, &specs).is_some();
                        let guessed = grounding_checked && !missing.is_empty() && with_tools;
                        // Asked to say what its shown numbers are, the model
                        // added numbers nothing shows, twice (Qwen2.5-1.5B
                        // printed the perfect numbers [6, 28, 496], then
                        // "said" them with a sum of 720 and a mean of 240):
                        // the shown numbers stand, under the subtask's name,
                        // and the asking never costs a right result. (It
                        // goes on as a result after the grounding turn.)
                        let said_shown = bare_shown
                            .as_deref()
                            .filter(|_| guessed)
                            .map(|shown| labelled(&job, shown));
                        let result = said_shown.as_ref().unwrap_or(result);
                        // The rule `file_names_grounded`: files a tool
                        // never showed cannot be reported as found.
                        let shown: Vec<&str> = sources
                            .iter()
                            .copied()
                            .chain(asked.iter().map(String::as_str))
                            .collect();
                        let phantom = crate::grounded::unsupported_files(result, &shown);
                        if crate::rules::on(&crate::rules::FILE_NAMES_GROUNDED)
                            && with_tools
                            && !phantom.is_empty()
                        {
                            return Outcome::Failed {
                                reason: format!(
                                    "the result names {}, which no tool output shows; report only \
                                     files a tool listed, read or wrote",
                                    phantom.join(", ")
                                ),
                                again: true,
                            };
                        }
                        if guessed && said_shown.is_none() {
                            return Outcome::Failed {
                                reason: format!(
                                    "the result stated {}, which no tool output shows; compute \
                                     it with a tool and state it exactly as printed",
                                    missing.join(", ")
                                ),
                                again: true,
                            };
                        }
                        if missing.is_empty() || grounding_checked {
                            if let Some(theirs) = disputed.as_deref() {
                                if insisted(result, theirs) {
                                    return Outcome::Done {
                                        result: overruled(theirs, result),
                                        short_of: None,
                                    };
                                }
                            }
                            let done = Outcome::Done {
                                result: result.clone(),
                                short_of: short_of.clone(),
                            };
                            // A second and third opinion, once per attempt,
                            // with a turn left to use it.
                            if others_checked || turn >= job.max_turns {
                                return done;
                            }
                            others_checked = true;
                            let given = &evidence[0];
                            let words = [own_words(&job)];
                            match checker::recheck(
                                caller,
                                tools,
                                job.subtask,
                                given,
                                result,
                                &words,
                                own_output.as_deref(),
                            )
                            .await
                            {
                                Recheck::Keep => return done,
                                Recheck::Budget(why) => return Outcome::Budget(why),
                                Recheck::Disputed {
                                    theirs,
                                    said,
                                    outputs,
                                } => {
                                    evidence.extend(outputs);
                                    disputed = Some(theirs);
                                    said
                                }
                                Recheck::Contradicted { said } => said,
                            }
                        } else {
                            // One checking turn: the result states numbers
                            // nothing printed (a small model's guess).
                            grounding_checked = true;
                            let printed = (evidence.len() > 1)
                                .then(|| evidence.last())
                                .flatten()
                                .map(String::as_str);
                            ungrounded(&missing, &specs, printed)
                        }
                    }
                }
            }
            // One checking turn: a small model whose code failed gave up
            // the subtask instead of fixing the code (Qwen2.5-1.5B pasted
            // the plan's text into its program and failed on the syntax
            // error, in all three attempts), while turns were left.
            Action::Fail { reason } if !fix_checked && turn < job.max_turns => {
                let computes = specs.iter().any(|s| s.name == "run_python");
                match (code_error.as_deref(), web_error.as_deref()) {
                    // One checking turn: the web could not be reached and
                    // the model failed a subtask a program might answer
                    // (Qwen2.5-1.5B planned a fetch for the primes below
                    // 10,000 on a machine with no internet, tried the same
                    // download in code, and gave up): the web first, as
                    // its code's failure followed from it.
                    (code, Some(error)) if computes => {
                        fix_checked = true;
                        offline(error, code)
                    }
                    (Some(error), _) => {
                        fix_checked = true;
                        fix(error)
                    }
                    _ => return failed(reason),
                }
            }
            Action::Fail { reason } => return failed(reason),
            Action::Ask { question } if job.offered.ask => {
                // The subtask's tool, or the code tool this attempt has
                // been writing code with (Qwen2.5-1.5B, its program's
                // `calendar.weekday` call wrong, asked a person "What is
                // the code to count the number of months with a Friday
                // the 13th?").
                let coding = CODE_TOOLS
                    .iter()
                    .copied()
                    .find(|t| called.contains(*t) && specs.iter().any(|s| s.name == *t));
                match named_tool(&job, &specs)
                    .or(coding)
                    .filter(|_| !asked_checked)
                {
                    // One checking turn: a small model whose code failed
                    // asked a person for what its tool reads (Qwen2.5-1.5B:
                    // "What is the content of the server.log file?"), and
                    // the run waited for nobody.
                    Some(tool) => {
                        asked_checked = true;
                        format!(
                            "Do not ask a person for what {tool} can find out: the task's files, \
                             if any, are in the workspace, and {tool} reads and computes. Call \
                             {tool} (fix what failed, if anything did). Ask again only if the \
                             answer truly needs a person (a decision, a preference, an access)."
                        )
                    }
                    None if !own_checked
                        && crate::rules::on(&crate::rules::OWN_QUESTION_NOT_ASKED)
                        && restates(question, &job.task) =>
                    {
                        own_checked = true;
                        "That is the task's own question: the person who gave the task wants \
                         you to answer it. Answer it yourself from what you know, the task's \
                         text and your tools, and complete the subtask with the answer. Ask a \
                         person only for what only they can know (a decision, a preference, a \
                         fact of their own)."
                            .to_string()
                    }
                    None => return Outcome::Asked(question.clone()),
                }
            }
            // Not offered (a grammar-free server may answer it anyway):
            // the model is told, and decides or fails.
            Action::Ask { .. } => "Asking a person is not possible in this step: decide with a \
                reasonable assumption and state it in the result, or fail with the reason."
                .to_string(),
            // One subtask added per attempt, never one the plan holds: a
            // small model asked to add work adds it again and again
            // (Qwen2.5-1.5B added the same step eight times in one
            // attempt, copying the "#12" it was told into the next name).
            Action::AddSubtask { .. } if added.is_some() => format!(
                "You added #{} already; one new subtask per attempt. Do this subtask's own work \
                 now: call a tool, complete or fail.",
                added.unwrap_or_default()
            ),
            Action::AddSubtask { name, description } => {
                let name = uncopied(name);
                let held = job.plan.subtasks().iter().find(|s| {
                    run_model::adaptation::same_step(
                        &name,
                        description,
                        s.name(),
                        s.description(),
                        s.state() == plan_engine::SubtaskState::Done,
                    )
                });
                if let Some(held) = held {
                    let said = format!(
                        "The plan holds that subtask already (#{}): do not add it again. Do this \
                         subtask's own work now.",
                        held.id().0
                    );
                    messages.push(Message::assistant(action_text(&action)));
                    messages.push(Message::user(said));
                    continue;
                }
                let op = Op::AddSubtask {
                    subtask: NewSubtask {
                        name,
                        description: description.clone(),
                        ..NewSubtask::default()
                    },
                    position: Default::default(),
                    rewire_after: None,
                    required_by: Vec::new(),
                };
                match host.execute(job.plan.id(), vec![op], AGENT_ACTOR).await {
                    Ok(plan) => {
                        let id = plan.next_subtask_id().saturating_sub(1);
                        added = Some(id);
                        format!("Added to the plan as #{id}. Go on with your own subtask.")
                    }
                    Err(e) => format!("The plan refused the new subtask: {e}"),
                }
            }
            Action::Tool { name, arguments } => {
                called.insert(name.clone());
                let code = CODE_TOOLS.contains(&name.as_str());
                if let Some(call) = seen.same_call(name, arguments) {
                    seen.repeats += 1;
                    if seen.repeats > REPEATS {
                        return Outcome::Failed {
                            reason: format!(
                                "called {name} again with the same arguments (as call {call}) \
                                 instead of using the result it had already seen"
                            ),
                            again: true,
                        };
                    }
                    messages.push(Message::assistant(action_text(&action)));
                    messages.push(Message::user(repeated(name, call, true, code)));
                    continue;
                }
                let mut arguments = arguments.clone();
                let mut edited_note = None;
                // A replay answers a call its recording holds before any
                // person is asked: nothing runs.
                let answered = match tools.replayed(job.subtask, name, &arguments) {
                    Some(Replayed::Stop(why)) => {
                        if let Some(recording) = tools.recording() {
                            recording.give_back(std::mem::take(&mut replayed_here));
                        }
                        return Outcome::Stopped(why);
                    }
                    Some(Replayed::Answered(call)) => {
                        replayed_here.push(call.clone());
                        Some(call)
                    }
                    None => None,
                };
                // A grant of the run lets the call run without asking (a
                // store that cannot be read asks, as without grants).
                let asks =
                    answered.is_none() && tools.policy_for(name, &arguments) == ToolPolicy::Ask;
                let granted = if asks {
                    host.grant(caller.run, name, &arguments)
                        .await
                        .ok()
                        .flatten()
                } else {
                    None
                };
                if let Some(grant) = granted {
                    caller
                        .log(RunEntry::ToolGranted {
                            subtask: job.subtask,
                            name: name.clone(),
                            arguments: arguments.clone(),
                            grant: grant.id,
                            by: grant.by.clone(),
                        })
                        .await;
                } else if asks {
                    match guarded(caller, host, job.subtask, name, &arguments).await {
                        Guard::Run(decided) => {
                            if decided != arguments {
                                edited_note = Some(format!(
                                    "A person edited the arguments before it ran: {decided}\n"
                                ));
                            }
                            arguments = decided;
                        }
                        Guard::Refused(observation) => {
                            messages.push(Message::assistant(action_text(&action)));
                            messages.push(Message::user(observation));
                            continue;
                        }
                    }
                }
                let arguments = &arguments;
                let started = Instant::now();
                let replayed = answered.is_some();
                let result = match answered {
                    Some(call) if call.ok => Ok(call.result),
                    Some(call) => Err(ToolError::refused(call.result)),
                    None => run_tool(caller, tools, job.subtask, name, arguments).await,
                };
                router.record(name, result.as_ref().err().map(|e| e.message.as_str()));
                let (ok, text) = match result {
                    Ok(out) => (true, out),
                    Err(e) => (false, e.message),
                };
                asked.push(arguments.to_string());
                if ok {
                    evidence.push(text.clone());
                }
                caller
                    .log(RunEntry::ToolCall {
                        subtask: job.subtask,
                        name: name.clone(),
                        arguments: arguments.clone(),
                        result: cut(&text, 2_000),
                        ok,
                        duration_ms: started.elapsed().as_millis() as u64,
                        replayed,
                    })
                    .await;
                let said = if ok {
                    format!("Result of {name}:\n{}", cut(&text, OBSERVATION))
                } else {
                    format!("{name} failed: {}", cut(&text, OBSERVATION))
                };
                if code {
                    code_error = code_failed(&text).then(|| text.clone());
                    if ok && code_error.is_none() {
                        own_output = Some(text.clone());
                    }
                }
                if WEB_TOOLS.contains(&name.as_str()) {
                    web_error = (!ok).then(|| text.clone());
                }
                let again = seen.same_output(name, &text);
                seen.record(name, arguments, &text);
                let mut said = format!("{}{said}", edited_note.unwrap_or_default());
                if let Some(call) = again {
                    seen.repeats += 1;
                    if seen.repeats > REPEATS {
                        return Outcome::Failed {
                            reason: format!(
                                "{name} returned the same as before (as call {call}): the \
                                 attempt repeated itself instead of using what it had seen"
                            ),
                            again: true,
                        };
                    }
                    said.push_str("\n\n");
                    said.push_str(&repeated(name, call, false, code));
                }
                said
            }
        };
        messages.push(Message::assistant(action_text(&action)));
        let mut next = observation;
        if let Some(advice) = router.advice(&specs) {
            next.push_str("\n\n");
            next.push_str(&advice);
        }
        if turn + 1 == job.max_turns {
            next.push_str(
                "\n\nThis is your last turn for this subtask: complete it or fail it now.",
            );
        }
        messages.push(Message::user(next));
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
async fn write(caller: &Caller, job: &Job) -> Outcome {
    let mut messages = vec![
        Message::system(prompts::WRITER),
        Message::user(words_brief(job)),
    ];
    let limit = crate::rules::on(&crate::rules::WORD_LIMIT_KEPT)
        .then(|| word_limit(&job.task))
        .flatten();
    let mut written = caller
        .text(
            crate::llm::CallRole::Executor,
            messages.clone(),
            1200,
            Some(job.subtask),
        )
        .await;
    // The rule `word_limit_kept`: once, a text over the task's limit.
    if let (Ok(text), Some(most)) = (&written, limit) {
        let words = text.split_whitespace().count();
        if words > most {
            messages.push(Message::assistant(text.clone()));
            let least = most / 2;
            messages.push(Message::user(format!(
                "That text has {words} words; the task allows at most {most}. Write it again in \
                 {least} to {most} words, keeping what matters most, the text alone."
            )));
            let shorter = caller
                .text(
                    crate::llm::CallRole::Executor,
                    messages,
                    1200,
                    Some(job.subtask),
                )
                .await;
            // The shorter text when there is one; a failed retry keeps
            // the first (a text over the limit is still the work).
            if let Ok(shorter) = shorter {
                if !shorter.trim().is_empty() {
                    written = Ok(shorter);
                }
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

/// The writer's message: the task, the step when it says more, what
/// people said and taught; not the plan, whose lines a small model copied
/// into its text ("#1 … (in_progress) - Description: …").
fn words_brief(job: &Job) -> String {
    let mut out = format!("Task: {}\n", job.task);
    if let Some(s) = job.plan.subtask(job.subtask) {
        if s.description().trim() != job.task.trim() {
            out.push_str(&format!("\nWhat to write: {}\n", s.description()));
        }
        let said: Vec<String> = job
            .plan
            .comments()
            .iter()
            .filter(|c| c.subtask.is_none_or(|id| id == s.id()) && c.author != AGENT_ACTOR)
            .rev()
            .take(3)
            .map(|c| format!("- {}: {}", c.author, cut(&c.body, 500)))
            .collect();
        if !said.is_empty() {
            out.push_str("\nWhat people said:\n");
            for line in said.iter().rev() {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    if !job.taught.is_empty() {
        out.push('\n');
        out.push_str(&job.taught);
    }
    out.push('\n');
    out.push_str(prompts::LANGUAGE);
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
    let mut rest = text.trim();
    while !rest.is_empty() {
        // A sentence ends at ". ", "! ", "? " or a line break.
        let end = rest
            .char_indices()
            .find(|&(i, c)| {
                c == '\n'
                    || (matches!(c, '.' | '!' | '?' | '。' | '！' | '？')
                        && rest[i + c.len_utf8()..]
                            .chars()
                            .next()
                            .is_none_or(char::is_whitespace))
            })
            .map(|(i, c)| i + c.len_utf8())
            .unwrap_or(rest.len());
        let sentence = rest[..end].trim();
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
        rest = rest[end..].trim_start();
    }
    (!kept.is_empty()).then_some(kept)
}

/// The most words a task allows its text ("at most 80 words", "in under
/// 50 words", "no more than 40 words", "in 30 words or fewer"), if it
/// says; "under N" allows N - 1.
fn word_limit(task: &str) -> Option<usize> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        let Ok(n) = w.parse::<usize>() else {
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
                | (Some("than"), _)
                | (_, Some("maximum"))
                | (_, Some("max"))
        ) || (before(2) == Some("more") && before(1) == Some("than"))
            || matches!((after(2), after(3)), (Some("or"), Some("fewer" | "less")))
            || before(1) == Some("within");
        if most {
            return Some(n);
        }
        if before(1) == Some("under") {
            return Some(n.saturating_sub(1).max(1));
        }
    }
    None
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

/// The words a subtask's numbers may come from without being found out:
/// the person's task, not its files' previews, nor the subtask's text,
/// which the planner wrote (a plan folded into one step numbers its parts
/// "1. … 6. …", and a result of "6, 3, 3" went unchecked).
fn own_words(job: &Job) -> &str {
    job.task
        .split(run_model::config::FILES_HEADING)
        .next()
        .unwrap_or_default()
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
    fn a_text_over_its_limit_keeps_the_whole_sentences_that_fit() {
        let text = "One two three. Four five six seven! Eight nine ten eleven twelve.";
        assert_eq!(
            sentences_within(text, 8).as_deref(),
            Some("One two three. Four five six seven!")
        );
        assert_eq!(sentences_within(text, 20), None, "it fits");
        assert_eq!(sentences_within(text, 2), None, "no sentence fits");
        assert_eq!(
            sentences_within("Version 2.5 is out. It is fast and small.", 5).as_deref(),
            Some("Version 2.5 is out.")
        );
    }

    #[test]
    fn a_task_sets_a_word_limit_only_where_it_says_one() {
        assert_eq!(word_limit("In at most 80 words, explain DNS."), Some(80));
        assert_eq!(word_limit("Describe it in under 50 words"), Some(49));
        assert_eq!(word_limit("Summarise, no more than 40 words."), Some(40));
        assert_eq!(word_limit("A reply in 30 words or fewer"), Some(30));
        assert_eq!(word_limit("Keep it within 100 words"), Some(100));
        assert_eq!(word_limit("Write 3 words that rhyme"), None);
        assert_eq!(word_limit("Count the words in notes.txt"), None);
        assert_eq!(word_limit("Explain DNS"), None);
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
