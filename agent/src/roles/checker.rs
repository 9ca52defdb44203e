//! The checker: a second and a third opinion on a number before a subtask
//! keeps it. Small models compute wrongly with confidence: asked how many
//! primes lie below 10,000, Qwen2.5-Coder-1.5B summed them; asked for a
//! log's ERROR lines, it read the file and said 4 (there were 30). Two
//! short programs, written without seeing the executor's result, compute
//! what the subtask asks again; when both print the same number and the
//! result does not state it, the executor is shown their outputs once
//! and decides again (self-consistency: a wrong program is rarely wrong
//! the same way twice). A check whose program failed or printed no
//! answer, beside one that printed another number or failed too, is shown
//! why and written once more, so the disagreement can be settled by two
//! opinions, not one; when the two still settle nothing and one printed a
//! number alone, a third check, written another way, may agree with it or
//! with the result. A dispute needs two to print one number alone: a
//! line of several does not say which is the answer. The check sends a
//! result back once; it changes it only when the executor then keeps
//! another number without a reason (the executor's `insisted`), and a
//! check that cannot run (no code tool, a guarded one, a model error)
//! lets the result through.
//!
//! # Layout
//! - [`claimed`]: the numbers a result states that the person's task did
//!   not already say.
//! - [`recheck`]: the executor's entry: whether a result is checked and
//!   what becomes of it ([`Recheck`]).
//! - [`check`]: writes and runs the two programs (one fix each for a
//!   failed one beside a disagreeing or failed one, and a third program
//!   when the two settle nothing beside a lone dissent); [`Opinion`] is
//!   what they say of the result.
//! - [`disputed`]: what the executor reads when both disagree with it.

use plan_engine::text::{ellipsis, last_lines};
use plan_engine::SubtaskId;

use crate::call::{CallError, Caller};
use crate::grounded::{matches, numbers, Written};
use crate::llm::{CallRole, Message};
use crate::prompts;
use crate::run::{RunEntry, ToolPolicy};
use crate::tools::sandbox::capture::{report_failed, stderr_of, stdout_of};
use crate::tools::Toolset;

/// The code tool the checks run on.
pub const CHECK_TOOL: &str = "run_python";
/// Tokens of one check program (a short program; the executor's code is
/// seldom longer than 300), and of a program the executor writes again as
/// text.
pub(crate) const PROGRAM_TOKENS: u32 = 600;
/// Characters of a check's output and of its code shown to the executor.
const SHOWN: usize = 600;
const SHOWN_CODE: usize = 800;
/// Numbers an answer line may hold (a value with its unit or its parts).
const ANSWER_NUMBERS: usize = 3;
/// Characters of a check's output kept on the run log.
const LOGGED: usize = 2_000;

/// The program of a check's reply: the first fenced code block (to its
/// closing fence, or to the end when the reply was cut off), or the whole
/// reply when it has no fence; `None` when that is empty. A check is asked
/// for plain text, not for JSON: under a JSON schema, llama.cpp's grammar
/// lets a backslash be followed only by JSON's own escapes, so
/// Qwen2.5-Coder-1.5B's regular expressions came out with `\b` (a
/// backspace) where it meant `\w`, `\d` or `\s` (29 of 507 programs over
/// eleven rounds, every check of a count of clients and of functions
/// among them). Asked for a fenced block, the same model's checks of four
/// of the evaluation's tasks (functions, clients, March revenue, digit
/// sum; six tries each) printed the right number in 21 of 24 tries,
/// against 4 of 24 as JSON.
pub fn program_of(reply: &str) -> Option<String> {
    let code = match reply.split_once("```") {
        Some((_, fenced)) => {
            // The opening fence's language tag ends at the first line break.
            let body = fenced.split_once('\n').map_or("", |(_, body)| body);
            body.split("```").next().unwrap_or_default()
        }
        None => reply,
    };
    let code = code.trim_end();
    (!code.trim().is_empty()).then(|| code.trim_start_matches('\n').to_string())
}

/// How the checker's assistant turn shows a program it wrote, for a fix.
fn fenced(code: &str) -> String {
    format!("```python\n{code}\n```")
}

/// The numbers of `result` that `said` (the person's own words in the
/// task, without its files' previews) does not already hold: what the
/// executor found out. Or, when it states one number only and the task
/// holds it, that number if the task also holds another like it (as many
/// digits, no decimals): a choice among the task's numbers is found out
/// too. (Qwen2.5-1.5B's program counted 0 Fridays the 13th in each of
/// 2025, 2026 and 2027, and it answered that 2026 has the most: the task
/// holds 2026, so nothing was checked, and a wrong year would have passed
/// as well.)
pub fn claimed(result: &str, said: &[&str]) -> Vec<Written> {
    let known: Vec<Written> = said.iter().flat_map(|s| numbers(s)).collect();
    let stated = numbers(result);
    let found: Vec<Written> = stated
        .iter()
        .filter(|n| !known.iter().any(|k| matches(n, k.value)))
        .cloned()
        .collect();
    if !found.is_empty() {
        return found;
    }
    let whole = |n: &Written| n.decimals == 0 && n.value.fract() == 0.0;
    let digits = |n: &Written| n.text.chars().filter(char::is_ascii_digit).count();
    match stated.first() {
        Some(one)
            if stated.iter().all(|n| n.value == one.value)
                && whole(one)
                && known
                    .iter()
                    .any(|k| k.value != one.value && whole(k) && digits(k) == digits(one)) =>
        {
            vec![one.clone()]
        }
        _ => Vec::new(),
    }
}

/// What one check program said.
#[derive(Clone, Debug, PartialEq)]
enum Said {
    /// Its answer line holds one of the result's numbers.
    Agrees,
    /// Its answer line holds numbers, none of the result's.
    Differs(Vec<Written>),
    /// It failed, printed no number, or could not be written or run.
    Nothing,
}

/// What the two checks say of a result.
#[derive(Clone, Debug, PartialEq)]
pub enum Opinion {
    /// At least one check printed a number the result states.
    BorneOut,
    /// Two printed the same number alone, which the result does not state.
    Disputed {
        /// The number both printed, as the first of them wrote it.
        theirs: String,
    },
    /// No two opinions agree on anything (or none could be had): the
    /// result stands.
    Unsettled,
}

/// One check program that ran: its code and its report.
pub struct Ran {
    pub code: String,
    pub output: String,
}

/// The checks' outcome: the opinion and the programs that ran (whose
/// outputs become evidence: a number they printed may be stated).
pub struct Checked {
    pub opinion: Opinion,
    pub ran: Vec<Ran>,
}

/// The numbers on the last line that holds any, of what a program printed.
fn answer_line(stdout: &str) -> Vec<Written> {
    stdout
        .lines()
        .rev()
        .map(numbers)
        .find(|n| !n.is_empty())
        .unwrap_or_default()
}

fn said_of(claimed: &[Written], output: Option<&str>) -> Said {
    let Some(output) = output.filter(|o| !report_failed(o)) else {
        return Said::Nothing;
    };
    let answer = answer_line(stdout_of(output));
    // A line of many numbers is a listing, not an answer.
    if answer.is_empty() || answer.len() > ANSWER_NUMBERS {
        Said::Nothing
    } else if answer.iter().any(|a| claimed.iter().any(|c| same(a, c))) {
        Said::Agrees
    } else {
        Said::Differs(answer)
    }
}

/// Whether two written numbers are one value, each at the other's
/// precision (`33.67` and `33.666`).
pub(crate) fn same(a: &Written, b: &Written) -> bool {
    matches(a, b.value) || matches(b, a.value)
}

/// The opinion of the checks (pure, so it is tested alone).
fn opinion(said: &[Said]) -> Opinion {
    if said.contains(&Said::Agrees) {
        return Opinion::BorneOut;
    }
    match disputing(said) {
        Some((i, _)) => Opinion::Disputed {
            theirs: alone(&said[i]).map(|n| n.text.clone()).unwrap_or_default(),
        },
        None => Opinion::Unsettled,
    }
}

/// The number a check printed alone on its answer line, if it printed one
/// number that is not the result's.
fn alone(said: &Said) -> Option<&Written> {
    match said {
        Said::Differs(numbers) if numbers.len() == 1 => numbers.first(),
        _ => None,
    }
}

/// The first two checks that each printed one number alone, the same. A
/// line of several numbers bears a result out when it holds one of them,
/// but does not say which is its answer: Qwen2.5-1.5B's check printed
/// "Total functions: 12, Total methods: 0" beside another that printed 0,
/// and a dispute on the 0 turned the executor's answer to 0 (it was 12).
fn disputing(said: &[Said]) -> Option<(usize, usize)> {
    let mut pairs = (0..said.len()).flat_map(|i| (i + 1..said.len()).map(move |j| (i, j)));
    pairs.find(|&(i, j)| match (alone(&said[i]), alone(&said[j])) {
        (Some(x), Some(y)) => same(x, y),
        _ => false,
    })
}

/// Whether a result can be checked in this run: the code tool is offered
/// and runs without a person's approval (a check never goes around a
/// guard).
pub fn can_check(tools: &Toolset) -> bool {
    tools.specs().iter().any(|s| s.name == CHECK_TOOL)
        && tools.policy(CHECK_TOOL) == ToolPolicy::Auto
}

/// Writes and runs the check programs (two, and a third when they settle
/// nothing beside a lone number) for the subtask `given` describes (the
/// executor's brief without earlier attempts' guesses), and compares what
/// they print with `claimed`. Only a budget that ran
/// out is an error (why it ran out): any other failure is no opinion.
pub async fn check(
    caller: &Caller,
    tools: &Toolset,
    subtask: SubtaskId,
    given: &str,
    claimed: &[Written],
) -> Result<Checked, String> {
    // Per check: what it said, the program that ran (code and report),
    // and its conversation, for a fix.
    let mut said = Vec::new();
    let mut ran: Vec<Option<Ran>> = Vec::new();
    let mut asked: Vec<Vec<Message>> = Vec::new();
    for way in [prompts::CHECKER_PLAIN, prompts::CHECKER_STEPS] {
        let messages = vec![
            Message::system(format!("{}\n{way}", prompts::CHECKER)),
            Message::user(given.to_string()),
        ];
        let (one, program) = check_once(caller, tools, subtask, &messages, claimed).await?;
        said.push(one);
        ran.push(program);
        asked.push(messages);
        // The first check bore the result out: no second is needed.
        if said.first() == Some(&Said::Agrees) {
            break;
        }
    }
    // A check whose program failed or printed no answer, beside one that
    // printed another number or failed too, gets one fix, so two opinions
    // can be had (Qwen2.5-1.5B's first check counted the log's 33 clients
    // where the executor said 299, its second failed on a regex, and 299
    // stood; a count of functions checked as 12 beside a check that
    // printed nothing kept the executor's 28; both checks of a count of
    // ERROR lines called `read_file` in Python, and its 3 stood).
    let broken: &[usize] = match said.as_slice() {
        [Said::Differs(_), Said::Nothing] => &[1],
        [Said::Nothing, Said::Differs(_)] => &[0],
        [Said::Nothing, Said::Nothing] => &[0, 1],
        _ => &[],
    };
    for &i in broken {
        if let Some(program) = ran[i].as_ref() {
            let mut messages = asked[i].clone();
            messages.push(Message::assistant(fenced(&program.code)));
            messages.push(Message::user(fix_request(&program.output)));
            let (again, program) = check_once(caller, tools, subtask, &messages, claimed).await?;
            said[i] = again;
            if program.is_some() {
                ran[i] = program;
            }
        }
    }
    // The two settled nothing, and one printed a number of its own alone:
    // a third check, written another way, may agree with it or with the
    // result (Qwen2.5-1.5B's first check counted the log's 33 clients
    // where the executor said 299; its second wrote the same broken regex
    // before and after its fix, and 299 stood; in another round the
    // checks printed 0 and 33).
    if opinion(&said) == Opinion::Unsettled && said.iter().any(|s| alone(s).is_some()) {
        let messages = vec![
            Message::system(format!(
                "{}\n{}",
                prompts::CHECKER,
                prompts::CHECKER_PLAIN_TEXT
            )),
            Message::user(given.to_string()),
        ];
        let (third, program) = check_once(caller, tools, subtask, &messages, claimed).await?;
        said.push(third);
        ran.push(program);
    }
    let opinion = opinion(&said);
    // A dispute shows the two programs that agree, not one that failed or
    // printed a third number.
    let ran = match disputing(&said) {
        Some((i, j)) if matches!(opinion, Opinion::Disputed { .. }) => {
            vec![ran[i].take(), ran[j].take()]
        }
        _ => ran,
    };
    Ok(Checked {
        opinion,
        ran: ran.into_iter().flatten().collect(),
    })
}

/// What a check whose program gave no answer reads: its error's last
/// lines, or what it printed instead of an answer line.
fn fix_request(report: &str) -> String {
    let (what, shown) = if report_failed(report) {
        ("failed", stderr_of(report))
    } else {
        ("printed no answer on its last line", stdout_of(report))
    };
    let tail = last_lines(shown.trim(), 4);
    let tail = if tail.is_empty() {
        "(nothing)".to_string()
    } else {
        tail
    };
    format!(
        "The program {what}:\n{}\nFix it and answer with the whole program again; it prints \
         the answer alone on its last line.",
        ellipsis(&tail, SHOWN)
    )
}

/// One check: the program the model writes for `messages`, run and
/// logged; what it said, and the program if one ran. Only a budget that
/// ran out is an error.
async fn check_once(
    caller: &Caller,
    tools: &Toolset,
    subtask: SubtaskId,
    messages: &[Message],
    claimed: &[Written],
) -> Result<(Said, Option<Ran>), String> {
    let reply = match caller
        .text(
            CallRole::Checker,
            messages.to_vec(),
            PROGRAM_TOKENS,
            Some(subtask),
        )
        .await
    {
        Ok(reply) => reply,
        Err(CallError::Budget(why)) => return Err(why),
        Err(_) => return Ok((Said::Nothing, None)),
    };
    let Some(code) = program_of(&reply) else {
        return Ok((Said::Nothing, None));
    };
    let arguments = serde_json::json!({ "code": code });
    let started = std::time::Instant::now();
    // A replay answers the check from its recording when it holds the
    // same program; a replay that stops at unmatched calls runs no check
    // live (a check only confirms a number: the result stands unchecked).
    let (result, replayed) = match tools.replayed(subtask, CHECK_TOOL, &arguments) {
        Some(crate::replay::Replayed::Answered(call)) if call.ok => (Ok(call.result), true),
        Some(crate::replay::Replayed::Answered(call)) => {
            (Err(crate::tools::ToolError::refused(call.result)), true)
        }
        Some(crate::replay::Replayed::Stop(_)) => return Ok((Said::Nothing, None)),
        None => (tools.call(CHECK_TOOL, &arguments).await, false),
    };
    let (ok, text) = match result {
        Ok(out) => (true, out),
        Err(e) => (false, e.message),
    };
    caller
        .log(RunEntry::ToolCall {
            subtask,
            name: CHECK_TOOL.to_string(),
            arguments,
            result: ellipsis(&text, LOGGED),
            ok,
            duration_ms: started.elapsed().as_millis() as u64,
            replayed,
        })
        .await;
    let said = said_of(claimed, ok.then_some(text.as_str()));
    Ok((said, ok.then_some(Ran { code, output: text })))
}

/// What becomes of a result the checker saw.
pub enum Recheck {
    /// Nothing to check, or the checks bore it out or settled nothing.
    Keep,
    /// Two checks printed another number, `theirs`: `said` is what the
    /// executor reads, `outputs` what the checks printed (now evidence).
    Disputed {
        theirs: String,
        said: String,
        outputs: Vec<String>,
    },
    /// No check bore the result out, and the executor's own last program
    /// printed other numbers than the result states: `said` is what the
    /// executor reads.
    Contradicted { said: String },
    /// The run's budget ran out while checking.
    Budget(String),
}

/// Checks `result` when it states numbers `said` (the person's own words
/// in the task) does not hold: by two check programs when they can run
/// here, and against `own`, the report of the executor's own last program
/// that ran without error, when no check bore the result out.
pub async fn recheck(
    caller: &Caller,
    tools: &Toolset,
    subtask: SubtaskId,
    given: &str,
    result: &str,
    said: &[&str],
    own: Option<&str>,
) -> Recheck {
    let claimed = claimed(result, said);
    if claimed.is_empty() {
        return Recheck::Keep;
    }
    // Qwen2.5-1.5B's program printed 30 ERROR lines, it answered 4 (a
    // number the log holds), and both its checks failed: nothing but its
    // own program spoke, and it was not heard.
    let against_own = || match said_of(&claimed, own) {
        Said::Differs(printed) => Recheck::Contradicted {
            said: contradicted(&printed, &claimed),
        },
        Said::Agrees | Said::Nothing => Recheck::Keep,
    };
    if !can_check(tools) {
        return against_own();
    }
    match check(caller, tools, subtask, given, &claimed).await {
        Err(why) => Recheck::Budget(why),
        Ok(Checked {
            opinion: Opinion::Disputed { theirs },
            ran,
        }) => Recheck::Disputed {
            said: disputed(&theirs, &ran),
            outputs: ran.into_iter().map(|r| r.output).collect(),
            theirs,
        },
        Ok(Checked {
            opinion: Opinion::Unsettled,
            ..
        }) => against_own(),
        Ok(_) => Recheck::Keep,
    }
}

/// What the executor reads when its own program printed `printed` on its
/// last line with numbers and its result states `claimed` instead.
fn contradicted(printed: &[Written], claimed: &[Written]) -> String {
    let texts = |numbers: &[Written]| {
        numbers
            .iter()
            .map(|n| n.text.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let printed = texts(printed);
    format!(
        "Your own program printed {printed} on its last line with numbers, but your result \
         states {}. The result must say what a program computed. If your program answers the \
         subtask, complete with {printed}. If it printed only a part of the answer or is \
         wrong, compute the whole answer in one program and complete with what it prints.",
        texts(claimed)
    )
}

/// What the executor reads when two checks printed `theirs` and its
/// result states other numbers: each program and what it printed, so the
/// difference from its own program shows (Qwen2.5-Coder-1.5B, shown only
/// the outputs, ran its own program again, which left out the month the
/// task asked for, and kept its number).
pub fn disputed(theirs: &str, ran: &[Ran]) -> String {
    let shown: Vec<String> = ran
        .iter()
        .enumerate()
        .map(|(i, r)| {
            format!(
                "Program {}:\n{}\nIt printed:\n{}",
                i + 1,
                ellipsis(r.code.trim(), SHOWN_CODE),
                ellipsis(stdout_of(&r.output).trim(), SHOWN)
            )
        })
        .collect();
    format!(
        "Two programs written independently computed this subtask again and both printed \
         {theirs}, which your result does not state.\n{}\nCompare them with your own program: \
         which rows, filters or steps differ? Read again what the subtask asks. If {theirs} \
         answers it, complete with {theirs}. If your own number is right, complete with it \
         and say in the result what the programs above got wrong.",
        shown.join("\n\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(stdout: &str) -> String {
        format!("exit status 0 (0.03 s)\n--- stdout ---\n{stdout}\n--- stderr ---\n(empty)")
    }

    #[test]
    fn the_numbers_a_result_found_out_are_those_the_task_did_not_say() {
        let found: Vec<String> = claimed(
            "There are 1229 primes below 10,000 (2026 run).",
            &["How many primes are below 10000? Asked in 2026."],
        )
        .into_iter()
        .map(|n| n.text)
        .collect();
        assert_eq!(found, ["1229"]);
        assert!(claimed("Sorted the words.", &["sort"]).is_empty());
    }

    #[test]
    fn a_choice_among_the_tasks_numbers_is_found_out_and_a_number_merely_repeated_is_not() {
        let task = ["Which of the years 2025, 2026 and 2027 has the most Fridays the 13th?"];
        let chosen: Vec<String> = claimed("2026 has the most.", &task)
            .into_iter()
            .map(|n| n.text)
            .collect();
        assert_eq!(chosen, ["2026"]);
        // The task's one year said back is no choice.
        assert!(claimed("The 2026 report is written.", &["Write the 2026 report."]).is_empty());
        // Nor are two of its numbers restated, or a number unlike the others.
        assert!(claimed("From 2025 to 2027.", &task).is_empty());
        assert!(claimed("Done in 13 steps.", &["Sum 13 and 2025."]).is_empty());
    }

    #[test]
    fn a_check_agrees_when_its_answer_line_holds_a_number_of_the_result() {
        let result = claimed("The mean age is 46.00 years.", &[]);
        assert_eq!(
            said_of(&result, Some(&report("ages: 40 52\nmean: 46.0"))),
            Said::Agrees
        );
        // Only the answer line counts: 46 among the evidence is not it.
        assert!(matches!(
            said_of(&result, Some(&report("ages: 46 52\nmean: 49.0"))),
            Said::Differs(_)
        ));
        assert_eq!(said_of(&result, Some(&report("done"))), Said::Nothing);
        // At either's precision.
        let mean = claimed("The mean is 33.666.", &[]);
        assert_eq!(said_of(&mean, Some(&report("33.67"))), Said::Agrees);
        let failed = "exit status 1 (0.03 s)\n--- stdout ---\n46\n--- stderr ---\nValueError";
        assert_eq!(said_of(&result, Some(failed)), Said::Nothing);
        assert_eq!(said_of(&result, None), Said::Nothing);
        let listing = report("[40, 46, 52, 61]");
        assert_eq!(said_of(&result, Some(&listing)), Said::Nothing);
    }

    #[test]
    fn a_result_is_disputed_only_when_both_checks_print_the_same_other_number_alone() {
        let n = |text: &str| Said::Differs(numbers(text));
        assert_eq!(
            opinion(&[n("count: 30"), n("30 ERROR lines")]),
            Opinion::Disputed {
                theirs: "30".into()
            }
        );
        assert_eq!(opinion(&[n("30"), n("31")]), Opinion::Unsettled);
        assert_eq!(
            opinion(&[n("Total functions: 12, Total methods: 0"), n("0")]),
            Opinion::Unsettled,
            "a line of several numbers does not say which is its answer"
        );
        assert_eq!(opinion(&[n("30"), Said::Nothing]), Opinion::Unsettled);
        assert_eq!(opinion(&[Said::Nothing, Said::Nothing]), Opinion::Unsettled);
        assert_eq!(opinion(&[n("30"), Said::Agrees]), Opinion::BorneOut);
        assert_eq!(opinion(&[Said::Agrees, Said::Nothing]), Opinion::BorneOut);
        // Written at other precisions, the same value.
        assert_eq!(
            opinion(&[n("mean 33.67"), n("33.666666")]),
            Opinion::Disputed {
                theirs: "33.67".into()
            }
        );
        // A third check settles two that disagreed, or one beside nothing.
        assert_eq!(
            opinion(&[n("0"), n("33"), n("33 clients")]),
            Opinion::Disputed {
                theirs: "33".into()
            }
        );
        assert_eq!(
            opinion(&[n("33"), Said::Nothing, n("33")]),
            Opinion::Disputed {
                theirs: "33".into()
            }
        );
        assert_eq!(opinion(&[n("0"), n("33"), Said::Agrees]), Opinion::BorneOut);
        assert_eq!(opinion(&[n("0"), n("33"), n("34")]), Opinion::Unsettled);
        assert_eq!(disputing(&[n("0"), n("33"), n("33")]), Some((1, 2)));
    }

    struct Code;

    #[async_trait::async_trait]
    impl crate::tools::ToolBox for Code {
        fn specs(&self) -> Vec<crate::protocol::ToolSpec> {
            vec![crate::protocol::ToolSpec {
                name: CHECK_TOOL.into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
            }]
        }

        async fn call(
            &self,
            _: &str,
            _: &serde_json::Value,
        ) -> Result<String, crate::tools::ToolError> {
            Ok(String::new())
        }
    }

    #[test]
    fn a_check_runs_only_where_the_code_tool_runs_without_a_persons_approval() {
        let tools = Toolset::new(vec![std::sync::Arc::new(Code)]);
        assert!(can_check(&tools));
        let guarded = tools
            .clone()
            .with_policies([(CHECK_TOOL.to_string(), ToolPolicy::Ask)]);
        assert!(!can_check(&guarded), "a check never goes around a guard");
        assert!(!can_check(&tools.only(Some(&[]))), "not offered to the run");
        assert!(!can_check(&Toolset::default()));
    }

    #[test]
    fn a_check_program_is_the_first_code_block_of_the_reply_or_the_whole_reply() {
        let regex = "import re\nprint(len(re.findall(r'def \\w+', read_file('a.py'))))";
        assert_eq!(
            program_of(&format!(
                "Here it is:\n```python\n{regex}\n```\nIt prints 12."
            )),
            Some(regex.to_string()),
            "the backslash of \\w reaches Python as the model wrote it"
        );
        assert_eq!(
            program_of("```\nfor i in range(2):\n    print(i)\n```\n```python\nprint(3)\n```"),
            Some("for i in range(2):\n    print(i)".to_string()),
            "the first block, indentation kept"
        );
        assert_eq!(
            program_of("```python\nprint(1)\nprint(2"),
            Some("print(1)\nprint(2".to_string()),
            "a reply cut off inside its block"
        );
        assert_eq!(program_of("print(7)\n"), Some("print(7)".to_string()));
        assert_eq!(program_of("```python\n\n```"), None);
        assert_eq!(program_of("  \n"), None);
        assert_eq!(
            program_of(&fenced("print(1)")),
            Some("print(1)".to_string())
        );
    }

    #[test]
    fn a_check_that_gave_no_answer_is_told_why_it_is_written_again() {
        let failed = fix_request(
            "exit status 1 (0.03 s)\n--- stdout ---\n(empty)\n--- stderr ---\nTraceback\nNameError: name 'x' is not defined\n",
        );
        assert!(failed.starts_with("The program failed:\n"), "{failed}");
        assert!(
            failed.contains("NameError: name 'x' is not defined"),
            "{failed}"
        );
        let silent = fix_request("exit status 0 (0.03 s)\n--- stdout ---\n\n--- stderr ---\n");
        assert!(
            silent.starts_with("The program printed no answer on its last line:\n(nothing)"),
            "{silent}"
        );
    }

    #[test]
    fn the_executor_is_shown_what_both_programs_printed() {
        let ran = |code: &str, out: &str| Ran {
            code: code.into(),
            output: report(out),
        };
        let text = disputed(
            "30",
            &[ran("print(30)", "ERROR lines: 30"), ran("n = 30\nn", "30")],
        );
        assert!(text.contains("both printed 30"), "{text}");
        assert!(
            text.contains("Program 1:\nprint(30)\nIt printed:\nERROR lines: 30"),
            "{text}"
        );
        assert!(
            text.contains("Program 2:\nn = 30\nn\nIt printed:\n30"),
            "{text}"
        );
        assert!(!text.contains("exit status"), "{text}");
    }
}
