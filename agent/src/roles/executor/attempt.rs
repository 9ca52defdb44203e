//! One attempt at a subtask: what it was shown, what it called, and which
//! of the executor's rules ([`crate::rules`]) have had their one turn.
//! [`Attempt::turn`] takes the model's action to what the model reads next,
//! or to the attempt's end; each rule is a small method here, named after
//! it, that asks [`crate::rules::on`] first.

use std::collections::HashSet;
use std::time::Instant;

use plan_engine::{NewSubtask, Op};
use serde_json::Value;

use super::{
    action_text, bare, bare_numbers, failed, fix, guarded, insisted, labelled, named_tool, offline,
    overruled, repeated, restates, run_tool, system, uncopied, ungrounded, unmangled, Guard, Job,
    Outcome, Seen, ToolRouter, AGENT_ACTOR, CODE_TOOLS, EARLIER_FAILURES, OBSERVATION, REPEATS,
};
use crate::call::{CallError, Caller};
use crate::host::Host;
use crate::llm::Message;
use crate::protocol::{Action, ToolSpec};
use crate::replay::Replayed;
use crate::roles::checker::{self, Recheck};
use crate::rules::{self, Rule};
use crate::run::{RunEntry, ToolPolicy};
use crate::tools::sandbox::capture::report_failed as code_failed;
use crate::tools::web::WEB_TOOLS;
use crate::tools::{ToolError, Toolset};

/// What one turn comes to.
pub(super) enum Turn {
    /// The attempt ends.
    End(Outcome),
    /// What the model reads next, with the tool router's advice and the
    /// last turn's warning.
    Said(String),
    /// What the model reads next, alone: its action was not carried out
    /// (a repeated call, a refused one, a subtask the plan holds).
    Aside(String),
}

/// A call a person, a grant or a recording let through.
struct Cleared {
    arguments: Value,
    /// The recording's answer, in a replay: nothing runs.
    answered: Option<run_model::RecordedCall>,
    /// What the model reads first when a person edited the arguments.
    edited: Option<String>,
}

pub(super) struct Attempt<'a> {
    caller: &'a Caller,
    host: &'a dyn Host,
    tools: &'a Toolset,
    job: &'a Job,
    specs: Vec<ToolSpec>,
    messages: Vec<Message>,
    /// What the model was given and what its tools printed: the numbers
    /// of its result must be found here (see `grounded`). Not the earlier
    /// attempts' failures: their reasons quote the guesses.
    evidence: Vec<String>,
    /// What this attempt's calls were asked to do (a program's code, a
    /// path): a file the code wrote is named there.
    asked: Vec<String>,
    /// The tools this attempt called.
    called: HashSet<String>,
    router: ToolRouter,
    seen: Seen,
    /// The recorded results this attempt's calls took (a replay): given
    /// back when the attempt stops at an unmatched call and is released.
    replayed_here: Vec<run_model::RecordedCall>,
    /// The error of the last code run, while it is not fixed.
    code_error: Option<String>,
    /// The report of the last program that ran without error.
    own_output: Option<String>,
    /// The error of the last web call, while none has succeeded since.
    web_error: Option<String>,
    /// The subtask this attempt added, if it added one.
    added: Option<u32>,
    /// A result of bare numbers that the tools' output showed whole.
    bare_shown: Option<String>,
    /// The number two checks agreed on against the result, if they did.
    disputed: Option<String>,
    /// The rules that have had their one turn in this attempt.
    spent: HashSet<&'static str>,
    /// The files this attempt wrote with `write_file`.
    typed: HashSet<String>,
    /// The last code run was `run_python`, and it failed.
    python_failed: bool,
}

impl<'a> Attempt<'a> {
    pub(super) fn new(
        caller: &'a Caller,
        host: &'a dyn Host,
        tools: &'a Toolset,
        job: &'a Job,
    ) -> Attempt<'a> {
        let specs = tools.specs();
        let first = super::brief(job);
        let given = first
            .split(EARLIER_FAILURES)
            .next()
            .unwrap_or_default()
            .to_string();
        Attempt {
            caller,
            host,
            tools,
            job,
            messages: vec![
                Message::system(system(&specs, job.offered)),
                Message::user(first),
            ],
            specs,
            evidence: vec![given],
            asked: Vec::new(),
            called: HashSet::new(),
            router: ToolRouter::default(),
            seen: Seen::default(),
            replayed_here: Vec::new(),
            code_error: None,
            own_output: None,
            web_error: None,
            added: None,
            bare_shown: None,
            disputed: None,
            spent: HashSet::new(),
            typed: HashSet::new(),
            python_failed: false,
        }
    }

    /// Whether `rule` is on and has not had its turn in this attempt.
    fn fresh(&self, rule: &Rule) -> bool {
        rules::on(rule) && !self.spent(rule)
    }

    fn spent(&self, rule: &Rule) -> bool {
        self.spent.contains(rule.name)
    }

    fn spend(&mut self, rule: &Rule) {
        self.spent.insert(rule.name);
    }

    /// The model's next action, or the attempt's end when the model could
    /// not be used.
    pub(super) async fn next_action(&self) -> Result<Action, Outcome> {
        let job = self.job;
        let action = match self
            .caller
            .action(self.messages.clone(), &self.specs, job.offered, job.subtask)
            .await
        {
            Ok(action) => action,
            Err(CallError::Budget(why)) => return Err(Outcome::Budget(why)),
            Err(e) => {
                return Err(Outcome::Failed {
                    again: !matches!(e, CallError::Llm(_)),
                    reason: e.to_string(),
                })
            }
        };
        if !rules::on(&rules::CODE_AS_TEXT) {
            return Ok(action);
        }
        unmangled(self.caller, &self.messages, action, job.subtask)
            .await
            .map_err(Outcome::Budget)
    }

    /// What the model's action comes to.
    pub(super) async fn turn(&mut self, action: &Action, turn: u32) -> Turn {
        match action {
            Action::Complete { result, short_of } => self.completes(result, short_of, turn).await,
            Action::Fail { reason } => self.fails(reason, turn),
            Action::Ask { question } => self.asks(question),
            Action::AddSubtask { name, description } => self.adds(name, description).await,
            Action::Tool { name, arguments } => self.calls(name, arguments).await,
        }
    }

    /// The model reads `said` after its `action`; `turn` is the turn just
    /// had, or `None` for an aside.
    pub(super) fn read(&mut self, action: &Action, mut said: String, turn: Option<u32>) {
        self.messages.push(Message::assistant(action_text(action)));
        if let Some(turn) = turn {
            if let Some(advice) = self.router.advice(&self.specs) {
                said.push_str("\n\n");
                said.push_str(&advice);
            }
            if turn + 1 == self.job.max_turns {
                said.push_str(
                    "\n\nThis is your last turn for this subtask: complete it or fail it now.",
                );
            }
        }
        self.messages.push(Message::user(said));
    }

    async fn completes(&mut self, result: &str, short_of: &Option<String>, turn: u32) -> Turn {
        if let Some(said) = self
            .failed_code_not_done(turn)
            .or_else(|| self.named_tool_used())
            .or_else(|| self.bare_numbers_said(result))
            .or_else(|| self.counts_computed(result))
            .or_else(|| self.printed_numbers_said(result))
        {
            return Turn::Said(said);
        }
        self.kept(result, short_of, turn).await
    }

    /// The rule `failed_code_not_done`: a completion while the last
    /// program's error is not fixed goes back once with the error.
    /// Only the model's own Python (a command may fail on purpose, as a
    /// test suite that fails does), and with a turn left to fix it.
    fn failed_code_not_done(&mut self, turn: u32) -> Option<String> {
        let error = self.code_error.clone().filter(|_| self.python_failed)?;
        if !self.fresh(&rules::FAILED_CODE_NOT_DONE) || turn >= self.job.max_turns {
            return None;
        }
        self.spend(&rules::FAILED_CODE_NOT_DONE);
        Some(format!(
            "Your last program failed, so what it was to compute or write was not done. The \
             error was:\n{}\nFix the program and run it again, then complete with what it \
             prints or writes. Only if the subtask truly needs nothing from it, answer complete \
             again.",
            super::cut(&plan_engine::text::last_lines(&error, 6), 800)
        ))
    }

    /// The rule `named_tool_used`.
    fn named_tool_used(&mut self) -> Option<String> {
        let tool = named_tool(self.job, &self.specs)
            .filter(|t| !self.called.contains(*t))?
            .to_string();
        if !self.fresh(&rules::NAMED_TOOL_USED) {
            return None;
        }
        self.spend(&rules::NAMED_TOOL_USED);
        Some(format!(
            "This subtask names the tool {tool}, but you completed it without calling {tool}. \
             Call {tool} now and complete with what it returns; only if the result truly \
             needs no tool, answer complete again."
        ))
    }

    /// The rule `bare_numbers_said`, its first half: the numbers are sent
    /// back to be said, and kept when the tools showed them all.
    fn bare_numbers_said(&mut self, result: &str) -> Option<String> {
        if !bare_numbers(result) || !self.fresh(&rules::BARE_NUMBERS_SAID) {
            return None;
        }
        self.spend(&rules::BARE_NUMBERS_SAID);
        let sources: Vec<&str> = self.evidence.iter().map(String::as_str).collect();
        self.bare_shown = crate::grounded::unsupported(result, &sources)
            .is_empty()
            .then(|| result.to_string());
        Some(bare(&self.specs))
    }

    /// The rule `counts_computed`.
    fn counts_computed(&mut self, result: &str) -> Option<String> {
        let uncounted = self.called.contains("read_file")
            && !CODE_TOOLS.iter().any(|t| self.called.contains(*t))
            && self.specs.iter().any(|s| s.name == "run_python")
            && !crate::grounded::numbers(result).is_empty();
        if !uncounted || !self.fresh(&rules::COUNTS_COMPUTED) {
            return None;
        }
        self.spend(&rules::COUNTS_COMPUTED);
        Some(
            "Your result states numbers you read or counted yourself. Count, sum or compute \
             them with run_python (open the file by its path) and complete with what it prints; \
             only if a number is copied as it stands in the file, answer complete again."
                .to_string(),
        )
    }

    /// The rule `printed_numbers_said`: a result that states no number
    /// after the attempt's own program printed some (and nothing else
    /// ran since) is sent back once with what the program printed.
    fn printed_numbers_said(&mut self, result: &str) -> Option<String> {
        let printed =
            crate::tools::sandbox::capture::stdout_of(self.own_output.as_deref()?).to_string();
        let silent = !crate::grounded::numbers(&printed).is_empty()
            && crate::grounded::numbers(result).is_empty()
            && self.code_error.is_none();
        if !silent || !self.fresh(&rules::PRINTED_NUMBERS_SAID) {
            return None;
        }
        self.spend(&rules::PRINTED_NUMBERS_SAID);
        Some(format!(
            "Your program printed:\n{}\nbut your result states none of its numbers. Complete \
             with the numbers it printed that this subtask asks for, each with what it is, \
             exactly as printed.",
            super::cut(printed.trim(), OBSERVATION)
        ))
    }

    /// A result past the checking turns: grounded, checked again, kept.
    async fn kept(&mut self, result: &str, short_of: &Option<String>, turn: u32) -> Turn {
        let missing = {
            let sources: Vec<&str> = self.evidence.iter().map(String::as_str).collect();
            crate::grounded::unsupported(result, &sources)
        };
        // The rule `numbers_grounded`: a subtask that works with tools and
        // states, after being shown the output, numbers none of it holds
        // has guessed: the attempt fails and the next starts with the
        // reason. One without tools (a text, a plan) keeps its words.
        let grounding = rules::on(&rules::NUMBERS_GROUNDED);
        let with_tools = !self.called.is_empty() || named_tool(self.job, &self.specs).is_some();
        let guessed =
            grounding && self.spent(&rules::NUMBERS_GROUNDED) && !missing.is_empty() && with_tools;
        // The rule `bare_numbers_said`, its second half: asked to say its
        // shown numbers, the model added numbers nothing shows; the shown
        // numbers stand, under the subtask's name, and the asking never
        // costs a right result.
        let said_shown = self
            .bare_shown
            .as_deref()
            .filter(|_| guessed)
            .map(|shown| labelled(self.job, shown));
        let result = said_shown.as_deref().unwrap_or(result);
        if let Some(end) = self.file_names_grounded(result, with_tools) {
            return Turn::End(end);
        }
        if guessed && said_shown.is_none() {
            return Turn::End(Outcome::Failed {
                reason: format!(
                    "the result stated {}, which no tool output shows; compute it with a tool \
                     and state it exactly as printed",
                    missing.join(", ")
                ),
                again: true,
            });
        }
        if !missing.is_empty() && grounding && !self.spent(&rules::NUMBERS_GROUNDED) {
            self.spend(&rules::NUMBERS_GROUNDED);
            let printed = (self.evidence.len() > 1)
                .then(|| self.evidence.last())
                .flatten()
                .map(String::as_str);
            return Turn::Said(ungrounded(&missing, &self.specs, printed));
        }
        let done = Outcome::Done {
            result: result.to_string(),
            short_of: short_of.clone(),
        };
        self.second_opinion(result, done, turn).await
    }

    /// The rule `file_names_grounded`: files a tool never showed cannot
    /// be reported as found.
    fn file_names_grounded(&self, result: &str, with_tools: bool) -> Option<Outcome> {
        if !rules::on(&rules::FILE_NAMES_GROUNDED) || !with_tools {
            return None;
        }
        let shown: Vec<&str> = self
            .evidence
            .iter()
            .chain(self.asked.iter())
            .map(String::as_str)
            .collect();
        let phantom = crate::grounded::unsupported_files(result, &shown);
        (!phantom.is_empty()).then(|| Outcome::Failed {
            reason: format!(
                "the result names {}, which no tool output shows; report only files a tool \
                 listed, read or wrote",
                phantom.join(", ")
            ),
            again: true,
        })
    }

    /// The rule `second_opinion`: once per attempt, with a turn left to
    /// use it; a number kept against two agreeing checks without a reason
    /// gives way to theirs.
    async fn second_opinion(&mut self, result: &str, done: Outcome, turn: u32) -> Turn {
        if let Some(theirs) = self.disputed.as_deref() {
            if insisted(result, theirs) {
                return Turn::End(Outcome::Done {
                    result: overruled(theirs, result),
                    short_of: None,
                });
            }
        }
        if !self.fresh(&rules::SECOND_OPINION) || turn >= self.job.max_turns {
            return Turn::End(done);
        }
        self.spend(&rules::SECOND_OPINION);
        // The words the numbers may come from without being found out:
        // the person's, not the files' previews, nor the subtask's text,
        // which the planner wrote (a plan folded into one step numbers its
        // parts "1. … 6. …", and a result of "6, 3, 3" went unchecked).
        let words = [self.job.said.as_str()];
        let checked = checker::recheck(
            self.caller,
            self.tools,
            self.job.subtask,
            &self.evidence[0],
            result,
            &words,
            self.own_output.as_deref(),
        )
        .await;
        match checked {
            Recheck::Keep => Turn::End(done),
            Recheck::Budget(why) => Turn::End(Outcome::Budget(why)),
            Recheck::Disputed {
                theirs,
                said,
                outputs,
            } => {
                self.evidence.extend(outputs);
                self.disputed = Some(theirs);
                Turn::Said(said)
            }
            Recheck::Contradicted { said } => Turn::Said(said),
        }
    }

    /// A `fail`: the rules `offline_computed` and `code_errors_fixed`
    /// (one turn between them), else the attempt fails.
    fn fails(&mut self, reason: &str, turn: u32) -> Turn {
        let had_turn =
            self.spent(&rules::OFFLINE_COMPUTED) || self.spent(&rules::CODE_ERRORS_FIXED);
        if !had_turn && turn < self.job.max_turns {
            let computes = self.specs.iter().any(|s| s.name == "run_python");
            // The web first: its code's failure followed from it.
            if let Some(error) = self.web_error.clone() {
                if computes && rules::on(&rules::OFFLINE_COMPUTED) {
                    self.spend(&rules::OFFLINE_COMPUTED);
                    return Turn::Said(offline(&error, self.code_error.as_deref()));
                }
            }
            if let Some(error) = self.code_error.clone() {
                if rules::on(&rules::CODE_ERRORS_FIXED) {
                    self.spend(&rules::CODE_ERRORS_FIXED);
                    return Turn::Said(fix(&error));
                }
            }
        }
        Turn::End(failed(reason))
    }

    /// An `ask`: the rules `tools_before_people` and
    /// `own_question_not_asked`, else the question goes to a person.
    fn asks(&mut self, question: &str) -> Turn {
        // Not offered (a grammar-free server may answer it anyway): the
        // model is told, and decides or fails.
        if !self.job.offered.ask {
            return Turn::Said(
                "Asking a person is not possible in this step: decide with a reasonable \
                 assumption and state it in the result, or fail with the reason."
                    .to_string(),
            );
        }
        // The subtask's tool, or the code tool this attempt has been
        // writing code with.
        let coding = CODE_TOOLS
            .iter()
            .copied()
            .find(|t| self.called.contains(*t) && self.specs.iter().any(|s| s.name == *t));
        let tool = named_tool(self.job, &self.specs)
            .or(coding)
            .map(str::to_string);
        if let Some(tool) = tool.filter(|_| self.fresh(&rules::TOOLS_BEFORE_PEOPLE)) {
            self.spend(&rules::TOOLS_BEFORE_PEOPLE);
            return Turn::Said(format!(
                "Do not ask a person for what {tool} can find out: the task's files, if any, are \
                 in the workspace, and {tool} reads and computes. Call {tool} (fix what failed, \
                 if anything did). Ask again only if the answer truly needs a person (a \
                 decision, a preference, an access)."
            ));
        }
        if self.fresh(&rules::OWN_QUESTION_NOT_ASKED) && restates(question, &self.job.said) {
            self.spend(&rules::OWN_QUESTION_NOT_ASKED);
            return Turn::Said(
                "That is the task's own question: the person who gave the task wants you to \
                 answer it. Answer it yourself from what you know, the task's text and your \
                 tools, and complete the subtask with the answer. Ask a person only for what \
                 only they can know (a decision, a preference, a fact of their own)."
                    .to_string(),
            );
        }
        Turn::End(Outcome::Asked(question.to_string()))
    }

    /// An `add_subtask`, under the rule `one_new_subtask`.
    async fn adds(&mut self, name: &str, description: &str) -> Turn {
        let one = rules::on(&rules::ONE_NEW_SUBTASK);
        if let Some(id) = self.added.filter(|_| one) {
            return Turn::Said(format!(
                "You added #{id} already; one new subtask per attempt. Do this subtask's own work \
                 now: call a tool, complete or fail."
            ));
        }
        let name = uncopied(name);
        let held = self.job.plan.subtasks().iter().find(|s| {
            run_model::adaptation::same_step(
                &name,
                description,
                s.name(),
                s.description(),
                s.state() == plan_engine::SubtaskState::Done,
            )
        });
        if let Some(held) = held.filter(|_| one) {
            return Turn::Aside(format!(
                "The plan holds that subtask already (#{}): do not add it again. Do this \
                 subtask's own work now.",
                held.id().0
            ));
        }
        let op = Op::AddSubtask {
            subtask: NewSubtask {
                name,
                description: description.to_string(),
                ..NewSubtask::default()
            },
            position: Default::default(),
            rewire_after: None,
            required_by: Vec::new(),
        };
        match self
            .host
            .execute(self.job.plan.id(), vec![op], AGENT_ACTOR)
            .await
        {
            Ok(plan) => {
                let id = plan.next_subtask_id().saturating_sub(1);
                self.added = Some(id);
                Turn::Said(format!(
                    "Added to the plan as #{id}. Go on with your own subtask."
                ))
            }
            Err(e) => Turn::Said(format!("The plan refused the new subtask: {e}")),
        }
    }

    /// A tool call: cleared (a replay, a grant, a person), run, logged,
    /// and shown to the model.
    async fn calls(&mut self, name: &str, arguments: &Value) -> Turn {
        self.called.insert(name.to_string());
        let code = CODE_TOOLS.contains(&name);
        if let Some(turn) = self.repeated_call(name, arguments, code) {
            return turn;
        }
        if let Some(turn) = self.written_files_not_shortened(name, arguments).await {
            return turn;
        }
        if let Some(turn) = self.given_files_read_whole(name, arguments) {
            return turn;
        }
        let cleared = match self.cleared(name, arguments).await {
            Ok(cleared) => cleared,
            Err(turn) => return turn,
        };
        let arguments = &cleared.arguments;
        let subtask = self.job.subtask;
        let started = Instant::now();
        let replayed = cleared.answered.is_some();
        let result = match cleared.answered {
            Some(call) if call.ok => Ok(call.result),
            Some(call) => Err(ToolError::refused(call.result)),
            None => run_tool(self.caller, self.tools, subtask, name, arguments).await,
        };
        self.router
            .record(name, result.as_ref().err().map(|e| e.message.as_str()));
        let (ok, text) = match result {
            Ok(out) => (true, out),
            Err(e) => (false, e.message),
        };
        self.asked.push(arguments.to_string());
        if ok {
            self.evidence.push(text.clone());
            self.typed_file(name, arguments);
        }
        self.caller
            .log(RunEntry::ToolCall {
                subtask,
                name: name.to_string(),
                arguments: arguments.clone(),
                result: super::cut(&text, 2_000),
                ok,
                duration_ms: started.elapsed().as_millis() as u64,
                replayed,
            })
            .await;
        let said = if ok {
            format!("Result of {name}:\n{}", super::cut(&text, OBSERVATION))
        } else {
            format!("{name} failed: {}", super::cut(&text, OBSERVATION))
        };
        if code {
            self.code_error = code_failed(&text).then(|| text.clone());
            self.python_failed = self.code_error.is_some() && name == "run_python";
            if ok && self.code_error.is_none() {
                self.own_output = Some(text.clone());
            }
        }
        if WEB_TOOLS.contains(&name) {
            self.web_error = (!ok).then(|| text.clone());
        }
        let again = self.seen.same_output(name, &text);
        self.seen.record(name, arguments, &text);
        let mut said = format!("{}{said}", cleared.edited.unwrap_or_default());
        if let Some(call) = again.filter(|_| rules::on(&rules::REPEATS_POINTED_OUT)) {
            self.seen.repeats += 1;
            if self.seen.repeats > REPEATS {
                return Turn::End(Outcome::Failed {
                    reason: format!(
                        "{name} returned the same as before (as call {call}): the attempt \
                         repeated itself instead of using what it had seen"
                    ),
                    again: true,
                });
            }
            said.push_str("\n\n");
            said.push_str(&repeated(name, call, false, code));
        }
        Turn::Said(said)
    }

    /// The rule `written_files_not_shortened`: a `write_file` that would
    /// replace a workspace file with fewer lines than it holds is not run,
    /// once (the file a program wrote whole, typed again by hand with half
    /// its rows). The file is read through the host, within its head's
    /// bound and never through a link; a host that cannot tell lets the
    /// call run.
    async fn written_files_not_shortened(&mut self, name: &str, arguments: &Value) -> Option<Turn> {
        if name != crate::tools::files::WRITE_FILE
            || !self.fresh(&rules::WRITTEN_FILES_NOT_SHORTENED)
        {
            return None;
        }
        let path = arguments.get("path")?.as_str()?;
        let path = path.strip_prefix("./").unwrap_or(path);
        // A file this attempt typed itself it may type again; a task or a
        // step that asks to shorten a file is let shorten it.
        let step = self
            .job
            .plan
            .subtask(self.job.subtask)
            .map(|s| s.description().to_string())
            .unwrap_or_default();
        let asked = format!("{} {step}", self.job.said).to_lowercase();
        if self.typed.contains(path) || SHORTENING.iter().any(|w| asked.contains(w)) {
            return None;
        }
        let typed = arguments
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let head = self
            .host
            .workspace_head(self.caller.run, path, run_model::asks::HEAD_BYTES)
            .await
            .ok()
            .flatten()?;
        // A binary file (a workbook, a picture) has no lines to lose.
        let Ok(text) = std::str::from_utf8(&head) else {
            return None;
        };
        if text.contains('\0') {
            return None;
        }
        let held = lines(text);
        let typing = lines(typed);
        if typing >= held {
            return None;
        }
        self.spend(&rules::WRITTEN_FILES_NOT_SHORTENED);
        Some(Turn::Aside(format!(
            "write_file did not run: {path} already holds {held} lines, and your content has \
             {typing}, so writing it would lose lines. If {path} already holds what the step \
             needs, use it as it is; if a program wrote it wrong, fix that program and run it \
             again; to replace it anyway, call write_file again."
        )))
    }

    /// The rule `given_files_read_whole`: a `write_file` typed from a
    /// given file's preview, before this attempt read a file or ran code,
    /// when the file is longer than its preview, does not run, once (its
    /// later rows would be missing). Not in a step given earlier steps'
    /// results, which may type what they found.
    fn given_files_read_whole(&mut self, name: &str, arguments: &Value) -> Option<Turn> {
        if name != crate::tools::files::WRITE_FILE
            || !self.fresh(&rules::GIVEN_FILES_READ_WHOLE)
            || self.called.contains(crate::tools::files::READ_FILE)
            || CODE_TOOLS.iter().any(|t| self.called.contains(*t))
        {
            return None;
        }
        // A step given earlier steps' results may type what they found.
        let step = self.job.plan.subtask(self.job.subtask)?;
        if !step.dependencies().is_empty() {
            return None;
        }
        // A program or a page is written, not copied.
        let path = arguments.get("path")?.as_str()?;
        let ext = path.rsplit_once('.').map(|(_, e)| e.to_lowercase());
        if ext.is_some_and(|e| CODE_FILES.contains(&e.as_str())) {
            return None;
        }
        let typed = arguments.get("content")?.as_str()?;
        let input = self.job.inputs.iter().find(|input| {
            input.preview.as_deref().is_some_and(|preview| {
                input.bytes > preview.len() as u64 && copied_lines(preview, typed) >= 2
            })
        })?;
        self.spend(&rules::GIVEN_FILES_READ_WHOLE);
        let shown = input.preview.as_deref().map_or(0, |p| p.chars().count());
        Some(Turn::Aside(format!(
            "write_file did not run: its content is typed from {path}, of which you saw only \
             the first {shown} characters ({path} has {bytes} bytes), so lines from the rest \
             would be missing. Read {path} whole with read_file, or write the file with a \
             program that reads {path}.",
            path = input.path,
            bytes = input.bytes,
        )))
    }

    /// Notes a file this attempt typed with `write_file`.
    fn typed_file(&mut self, name: &str, arguments: &Value) {
        if name != crate::tools::files::WRITE_FILE {
            return;
        }
        if let Some(path) = arguments.get("path").and_then(Value::as_str) {
            let path = path.strip_prefix("./").unwrap_or(path);
            self.typed.insert(path.to_string());
        }
    }

    /// The rule `repeats_pointed_out`, for a call with an earlier call's
    /// arguments: not run again.
    fn repeated_call(&mut self, name: &str, arguments: &Value, code: bool) -> Option<Turn> {
        if !rules::on(&rules::REPEATS_POINTED_OUT) {
            return None;
        }
        let call = self.seen.same_call(name, arguments)?;
        self.seen.repeats += 1;
        if self.seen.repeats > REPEATS {
            return Some(Turn::End(Outcome::Failed {
                reason: format!(
                    "called {name} again with the same arguments (as call {call}) instead of \
                     using the result it had already seen"
                ),
                again: true,
            }));
        }
        Some(Turn::Aside(repeated(name, call, true, code)))
    }

    /// Whether the call may run, and with which arguments: a replay
    /// answers a call its recording holds before any person is asked; a
    /// grant of the run lets it run without asking (a store that cannot
    /// be read asks, as without grants); else a guarded tool asks.
    async fn cleared(&mut self, name: &str, arguments: &Value) -> Result<Cleared, Turn> {
        let subtask = self.job.subtask;
        let answered = match self.tools.replayed(subtask, name, arguments) {
            Some(Replayed::Stop(why)) => {
                if let Some(recording) = self.tools.recording() {
                    recording.give_back(std::mem::take(&mut self.replayed_here));
                }
                return Err(Turn::End(Outcome::Stopped(why)));
            }
            Some(Replayed::Answered(call)) => {
                self.replayed_here.push(call.clone());
                Some(call)
            }
            None => None,
        };
        let mut cleared = Cleared {
            arguments: arguments.clone(),
            answered,
            edited: None,
        };
        let asks =
            cleared.answered.is_none() && self.tools.policy_for(name, arguments) == ToolPolicy::Ask;
        if !asks {
            return Ok(cleared);
        }
        let run = self.caller.run;
        if let Some(grant) = self.host.grant(run, name, arguments).await.ok().flatten() {
            self.caller
                .log(RunEntry::ToolGranted {
                    subtask,
                    name: name.to_string(),
                    arguments: arguments.clone(),
                    grant: grant.id,
                    by: grant.by.clone(),
                })
                .await;
            return Ok(cleared);
        }
        match guarded(self.caller, self.host, subtask, name, arguments).await {
            Guard::Run(decided) => {
                if &decided != arguments {
                    cleared.edited = Some(format!(
                        "A person edited the arguments before it ran: {decided}\n"
                    ));
                }
                cleared.arguments = decided;
                Ok(cleared)
            }
            Guard::Refused(observation) => Err(Turn::Aside(observation)),
        }
    }
}

/// Words with which a task or a step asks for a file to be shortened.
const SHORTENING: [&str; 10] = [
    "remove",
    "delete",
    "dedup",
    "duplicate",
    "filter",
    "trim",
    "keep only",
    "shorten",
    "drop",
    "truncate",
];

/// Kinds of file that are programs or pages, written rather than copied.
const CODE_FILES: [&str; 12] = [
    "py", "sh", "js", "ts", "rs", "go", "java", "c", "cpp", "rb", "html", "sql",
];

/// The non-empty lines of `typed` that are, trimmed, a line of
/// `preview` or one of its cells (between commas, semicolons, tabs or
/// bars; three characters or more, not a number): lines copied from it.
fn copied_lines(preview: &str, typed: &str) -> usize {
    let mut shown: HashSet<&str> = HashSet::new();
    for line in preview.lines() {
        shown.insert(line.trim());
        for cell in line.split([',', ';', '\t', '|']) {
            let cell = cell.trim().trim_matches('"');
            if cell.chars().count() >= 3 && cell.parse::<f64>().is_err() {
                shown.insert(cell);
            }
        }
    }
    shown.remove("");
    typed
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && shown.contains(line))
        .count()
}

/// The lines of a text that hold something.
fn lines(text: &str) -> usize {
    text.lines().filter(|l| !l.trim().is_empty()).count()
}
