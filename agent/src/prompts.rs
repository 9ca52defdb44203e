//! The words the agent says to the model. Kept short: small local models
//! follow short rules better, and every token is paid for on every call.

pub const LANGUAGE: &str =
    "Write names, descriptions and results in the same language as the task.";

/// Seed 004's design card, as rules and its own examples.
pub const CLASSIFIER: &str = "You route a task to a planning mode. Answer with JSON.
Ask yourself: could I list every step before starting, and do parts not depend on each other?
- simple: one clear goal reached by a few known steps, one after another (look something up, compute, convert, write one text).
- complex: the steps are known and several parts are independent of each other (several files, projects, languages, cities, teams or checks, handled separately then combined).
- emergent: the steps cannot be listed yet: research, explore, investigate, find out why, review or improve something, design something new; the work is discovered while doing it.
Examples (not from your tasks):
- \"把这段话改成正式的语气\" → simple
- \"Find the population of Canada and round it to millions\" → simple
- \"Resize the 30 product photos and upload each to the shop\" → complex
- \"分别统计三个仓库的提交数，再汇总成一张表\" → complex
- \"What should we change to make onboarding less confusing?\" → emergent
- \"调查一下为什么夜间任务经常超时\" → emergent
confidence is 0..1. reason is one short sentence.";

/// No example task or name in the planners' prompts: Qwen2.5-1.5B
/// copied them into its plans ("read sales.csv" for a task without files,
/// "convert the ages to euros" for a mean age).
pub const SIMPLE_PLANNER: &str = "You plan a simple task as a short linear list of 1 to 7 subtasks, done one after another. Plan as few as the task needs: when one program can answer it (a count, a sum, a lookup, a conversion), plan exactly one subtask.
Each subtask: a name saying in words what it achieves (never a tool's or a function's name), a description of what to do, the expected outcome, and the tool it uses (empty if none). No depends_on.
Plan nothing the task does not ask for (no file to write unless it asks for one).
Answer with JSON.";

pub const COMPLEX_PLANNER: &str = "You plan a task as a dependency graph of 2 to 20 subtasks.
Each subtask: a name saying what it achieves (not a tool's name), a description, the expected outcome, the tool it uses (empty if none), and depends_on: the 1-based positions of the subtasks it needs first.
Subtasks that do not need each other must not depend on each other, so they run in parallel. No cycles.
Answer with JSON.";

/// Seed 002's PlanAgent, one batch of a large input at a time.
pub const BATCH_PLANNER: &str = "You plan one batch of a task over a long list of items. You see how the run went so far and this batch's items.
Give one subtask per item (or one for a few items that belong together). Each subtask: a short name, a description of what to do with its items, the expected outcome, and items: the item numbers it covers.
Cover every item of this batch exactly once and no other item. An item that failed before: change the approach its failure calls for.
Answer with JSON.";

pub const EMERGENT_PLANNER: &str = "You start an exploratory task with 1 to 3 high-level TODOs; more will be added as work reveals it.
Each TODO: a short name, a description, the expected outcome, and depends_on: the 1-based positions of the TODOs of this list it needs first (usually none: TODOs that do not need each other run at the same time). No cycles.
Answer with JSON.";

/// The planner learns which tools the executor has, so it can say which a
/// subtask needs (the executor is then held to it).
pub const PLAN_TOOLS: &str = "The executor of each subtask can use these tools. A subtask that computes, counts or reads data uses run_python when it is offered; give the tool in the subtask's tool field.";

/// After the tools, when both the web and code are offered (Qwen2.5-1.5B
/// planned a web search for 2^100's digit sum, and the run stopped when
/// the page could not be fetched).
pub const PLAN_WEB: &str = "Plan a web tool only for facts that must be looked up (a page, news, a price, a document online), never for what a program can compute (arithmetic, counting, dates, conversions): that is run_python's.";

/// The router's question before planning, when the planner could be
/// offered both the web and run_python (Qwen2.5-1.5B planned web fetches
/// for a count of primes and a digit sum whatever the planner's prompt
/// said; asked this alone, it told computation from web in 20 of 22
/// tasks, and its two misses keep the web for the executor).
pub const SOURCE: &str = "Where does the answer to this task come from? words: it is written, not computed or looked up (a poem, a story, an email, a letter, an explanation, a definition, a translation, a summary or rewrite of text given in the task, an answer from general knowledge). computation: a program can work it out from numbers, dates or text given in the task (arithmetic, counting, conversions). files: the files the task names. web: facts that change or must be looked up online (news, prices, populations, versions, a page). Answer with JSON.";

/// After the task, when the person gave files (their names and first
/// lines are in the task).
pub const PLAN_FILES: &str = "The files above and their first lines are already known: plan no step to list, open or look at them.";

/// After the task, when the workspace starts empty (Qwen2.5-1.5B planned
/// "list the files, read sales.csv" for a task that gave none).
pub const PLAN_NO_FILES: &str = "No files were given: the workspace starts empty. Plan no step to list or read files the task does not name.";

pub const UPDATE: &str = "You keep the TODO list of an exploratory task up to date after a TODO finished or failed.
needs_update is true only if the result revealed work not yet on the list, or a failed TODO can be reached another way. new_todos: at most 3, each with a short name and description; depends_on holds 1-based positions of existing TODOs.
drop: 1-based positions of unstarted TODOs that are no longer needed. revise: a new description for an unstarted TODO the result changed (by position). blocked: an unstarted TODO that cannot be done without a person (by position), with the reason. Usually all lists are empty. Answer with JSON.";

/// After a TODO failed every attempt (seed 004 updates the list after
/// every result, a failure too): the model may add a way around it.
pub const UPDATE_FAILED: &str = "It will not be tried again unless a person retries it, and TODOs listed after it cannot start. If another way can still reach what it was for, add that as a new TODO (not the same TODO again, and not after it); if none can, add nothing.";

/// After a TODO that was itself added to work around a failure failed:
/// nothing more is added for it, so failures cannot grow the list.
pub const UPDATE_FAILED_AGAIN: &str = "It was itself added to work around an earlier failure: add no TODO for it (new_todos empty); a person will look at it.";

pub const COMPACT: &str = "The TODO list is nearly full. Do not add TODOs (new_todos must be empty). Instead drop unstarted TODOs that are covered by others or no longer needed, so the task can finish.";

pub const ADAPT: &str = "You review a plan between steps: a subtask failed or fell short of its expected outcome. Earlier results may change what the unstarted subtasks should do.
needs_change is true only if a result makes the plan wrong or incomplete. revise: new descriptions for unstarted subtasks (by 1-based position). drop: unstarted subtasks to skip. add: at most 5 new subtasks the results call for, each with depends_on (1-based positions; positions past the plan's end are the new subtasks, in order). depends: new depends_on for unstarted subtasks (by position). No cycles. Answer with JSON.";

pub const EXECUTOR: &str = "You carry out one subtask of a plan, one action per answer, as JSON.
- complete: the subtask is done; result holds what it produced (the facts, numbers, text), not a promise. If it falls short of the expected outcome, short_of says what is missing.
- fail: it cannot be done; reason says why.
- a tool name: call that tool with its arguments; you will see its result.
Do only this subtask. Use the results of earlier subtasks given below. Never work out numbers in your head: compute them with a tool and state them exactly as it printed them.";

/// When a code tool is offered: the output shows what the code matched,
/// so a wrong program shows itself (Qwen2.5-1.5B counted the lines of
/// three files as their functions and printed 28 with confidence).
pub const EXECUTOR_CODE: &str = "- Code prints its evidence, not only the result: what it matched or counted (the first 10 items) and how many, each with a label. Read the output: if it did not count what the subtask asks, fix the code. A file made from data (sorted, filtered, computed) is written by the code itself.";

/// A step answered in words, written in one plain-text turn (the rule
/// `words_written_whole`): the text itself, with no form around it. The
/// form is the one asked for and no other: told "an email with its
/// subject line" as one example among the forms, Qwen2.5-Coder-1.5B wrote
/// a summary, a rewritten release note and a list of capitals as emails
/// ("Subject: …", "Dear …").
pub const WRITER: &str = "You write what a task asks for, for the person who gave it. Write the text itself, in full, in the form the task asks for and in no other: a poem, an explanation, a translation, a summary, a rewritten text of the same kind as the original, a direct answer to a question; a letter or an email only when the task asks for one (then with its subject line). Keep to any length it sets. Do not describe what you would write, do not ask anything back and add no notes about the task. A question is answered directly, in a sentence that names the answer.";

pub const EXECUTOR_ASK: &str =
    "- ask: only a person can answer something you need; ask one clear question.";

pub const EXECUTOR_ADD: &str =
    "- add_subtask: you found work outside this subtask that the plan needs; it is added to the plan.";

/// The checker ([`crate::roles::checker`]): a program written without
/// the executor's result, so it cannot copy it; as plain text in a fenced
/// block, where a backslash is the model's own (see
/// [`crate::roles::checker::program_of`]).
pub const CHECKER: &str = "You check a subtask of a plan by computing its answer yourself. Write one short Python program that computes what the subtask asks, from the files in the current directory and the results given below, and prints the answer alone on its last line. Read files with open('name') or read_file('name'), which returns the text; write or change none. Do not guess values: compute them. Answer with the program alone, in one ```python block.";

/// The first check: the plain way.
pub const CHECKER_PLAIN: &str = "Write the most direct program.";

/// The second check: another route through the data, so the two are not
/// the same program twice.
pub const CHECKER_STEPS: &str = "Go step by step: print what you matched or counted first (the first 5 items and how many), then the answer alone on the last line.";

/// The third check, when the first two settle nothing beside a lone
/// number: plain string methods, since a broken regular expression was
/// what failed twice (Qwen2.5-1.5B's `r'client=(\b\b\b)'`).
pub const CHECKER_PLAIN_TEXT: &str = "Read any file line by line with plain string methods (split, strip, startswith, in), no regular expressions.";

/// When the executor's `run_python` code came through JSON with a
/// backspace where it wrote a regular expression's backslash
/// ([`crate::roles::executor`]): the same program as plain text.
pub const CODE_AS_TEXT: &str = "Your code reached Python with backspace characters: in a JSON string, \\b is a backspace, and a regular expression's \\w, \\d or \\s cannot be written there. Write the same program again in one ```python block, as plain text, not JSON: it runs as your run_python call.";

/// After the reasons earlier attempts failed, in the executor's brief.
pub const TRY_AGAIN: &str = "Do not repeat what failed: take another way (another tool, other arguments, a smaller step). If it truly cannot be done, fail with the reason.";

/// Seed 002's failure analysis: what to do with a subtask that failed
/// every attempt.
pub const RECOVER: &str = "A subtask of a plan failed every attempt; the reasons are below. Choose one decision:
- revise: the subtask can succeed if done differently; description is its new description (say which tool to use).
- workaround: another subtask can produce what the later subtasks need; name and description describe it, and it replaces the failed one.
- skip: the other subtasks can reach the task's goal without this one's result (what it was to fetch or read can be computed by a later step); it is skipped.
- give_up: only a person can help (missing access, a decision, a wrong task); reason says what they must do.
reason is one short sentence. Answer with JSON.";

pub const COMPILER: &str = "You write the final answer for the person who asked the task, from the results below. Begin with the result itself (the number, the name, the file written) in one sentence; then, briefly, how it was found. Use only numbers that appear in the results; do not mention subtasks, plans or tool names. At most 200 words.";

pub const REVISE: &str =
    "A person rejected the plan below with a comment. Make a new plan that follows the comment.";
