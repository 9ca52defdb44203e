//! Data questions on the files a person gave: the executor does not ask a
//! person for what its tool can find out, and reads only files that exist
//! (small models asked for a file's content after their code failed, and
//! read files nobody gave).

use std::sync::Arc;

use crate::support::*;
use agent::llm::Reply;
use agent::llm::{CallRole, Shape};
use agent::tools::{files::FileTools, ToolBox, Toolset};
use agent::{RunEntry, RunState};
use serde_json::json;

fn reading_plan() -> serde_json::Value {
    json!({"title": "Count", "subtasks": [{
        "name": "Count the lines", "description": "Count the lines of notes.txt.",
        "expected_outcome": "the count", "tool": "read_file",
    }]})
}

#[tokio::test]
async fn a_question_a_subtasks_tool_could_answer_is_sent_back_once_and_the_tool_used() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "a\nb\nc\n").unwrap();
    let llm = worker()
        .push_json(CallRole::Planner, reading_plan())
        .push_json(
            CallRole::Executor,
            json!({"action": "ask", "question": "What is in notes.txt?"}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "read_file", "arguments": {"path": "notes.txt"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "notes.txt holds a, b and c."}),
        );
    let world = World::reading(llm, dir.path());
    let run = world.run(simple("How many lines has notes.txt?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        world.plan().subtasks()[0].outcome(),
        Some("notes.txt holds a, b and c.")
    );
    assert!(
        !world
            .plan()
            .comments()
            .iter()
            .any(|c| c.body.contains("What is in notes.txt?")),
        "no person was asked"
    );
    let told = world.told("Do not ask a person for what read_file can find out");
    assert!(told.is_some(), "the model was told to use its tool");
}

#[tokio::test]
async fn a_question_for_code_after_writing_code_is_sent_back_once_to_the_code_tool() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker()
        .push_json(
            CallRole::Planner,
            json!({"title": "Fridays", "subtasks": [{
                "name": "Count the Fridays the 13th",
                "description": "Count the months of 2026 with a Friday the 13th.",
            }]}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": "import requests"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "ask", "question": "What is the code to count them?"}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": "print(2)"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "2 months have a Friday the 13th."}),
        );
    let world = coding_world(llm, dir.path());
    let run = world
        .run(simple("How many months of 2026 have a Friday the 13th?"))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert!(
        !world
            .plan()
            .comments()
            .iter()
            .any(|c| c.body.contains("What is the code")),
        "no person was asked"
    );
    let told = world.told("Do not ask a person for what run_python can find out");
    assert!(told.is_some(), "the model was told to use its code tool");
}

#[tokio::test]
async fn a_question_asked_again_after_the_reminder_reaches_a_person() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker()
        .push_json(CallRole::Planner, reading_plan())
        .push_json(
            CallRole::Executor,
            json!({"action": "ask", "question": "Which notes file?"}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "ask", "question": "Which notes file do you mean?"}),
        );
    let world = World::reading(llm, dir.path());
    let driving = world.start(simple("How many lines have my notes?")).await;
    let plan = world
        .wait_plan(|p| {
            p.comments()
                .iter()
                .any(|c| c.body.contains("Which notes file do you mean?"))
        })
        .await;
    assert!(!plan
        .comments()
        .iter()
        .any(|c| c.body.contains("Which notes file?")));
    driving.abort();
}

/// A `run_python` that prints what counting the ERROR lines would.
struct FakePython;

#[async_trait::async_trait]
impl ToolBox for FakePython {
    fn specs(&self) -> Vec<agent::protocol::ToolSpec> {
        vec![agent::protocol::ToolSpec {
            name: "run_python".into(),
            description: "Runs Python.".into(),
            parameters: json!({"type": "object", "properties": {"code": {"type": "string"}}}),
        }]
    }

    async fn call(
        &self,
        _name: &str,
        arguments: &serde_json::Value,
    ) -> Result<String, agent::tools::ToolError> {
        // A program that prints nothing.
        if arguments["code"]
            .as_str()
            .unwrap_or_default()
            .contains("# silent")
        {
            return Ok("exit status 0 (0.01 s)\n--- stdout ---\n(empty)\n".into());
        }
        // The jail has no network: a download in code fails.
        if arguments["code"]
            .as_str()
            .unwrap_or_default()
            .contains("import requests")
        {
            return Ok(
                "exit status 1 (0.01 s)\n--- stdout ---\n(empty)\n--- stderr ---\n\
                 ModuleNotFoundError: No module named 'requests'\n"
                    .into(),
            );
        }
        // A program that counts wrongly.
        if arguments["code"]
            .as_str()
            .unwrap_or_default()
            .contains("# wrong")
        {
            return Ok("exit status 0 (0.01 s)\n--- stdout ---\n0\n".into());
        }
        Ok("exit status 0 (0.01 s)\n--- stdout ---\n2\n".into())
    }
}

/// A world with the file tools on `dir` and a `run_python`.
fn coding_world(llm: agent::ScriptedLlm, dir: &std::path::Path) -> World {
    let root = dir.to_path_buf();
    World::with_agent(llm, move |agent| {
        agent.with_tools(move |_| {
            let files: Arc<dyn ToolBox> = Arc::new(FileTools::new(&root).unwrap());
            Toolset::new(vec![files, Arc::new(FakePython)])
        })
    })
}

#[tokio::test]
async fn numbers_stated_after_reading_a_file_without_code_are_sent_back_once_to_be_computed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("app.log"),
        "10:00 INFO up\n10:01 ERROR down\n10:02 ERROR down\n",
    )
    .unwrap();
    let llm = worker()
        .push_json(CallRole::Planner, reading_plan())
        .push_json(
            CallRole::Executor,
            json!({"action": "read_file", "arguments": {"path": "app.log"}}),
        )
        // 10 is in the log (a time of day): grounding alone lets it pass.
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "10 ERROR lines."}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": "print(sum('ERROR' in l.split() for l in open('app.log')))"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "2 ERROR lines."}),
        );
    let world = coding_world(llm, dir.path());
    let run = world.run(simple("How many ERROR lines has app.log?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.plan().subtasks()[0].outcome(), Some("2 ERROR lines."));
    let told = world.told("Your result states numbers you read or counted yourself");
    assert!(told.is_some(), "the model was sent to compute");

    // A number copied from the file, said again, is kept.
    let llm = worker()
        .push_json(CallRole::Planner, reading_plan())
        .push_json(
            CallRole::Executor,
            json!({"action": "read_file", "arguments": {"path": "app.log"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "The first entry is at 10:00."}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "The first entry is at 10:00."}),
        );
    let world = coding_world(llm, dir.path());
    let run = world.run(simple("When does app.log start?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.llm.calls(CallRole::Executor), 3);
}

/// A model that plans the count, runs its program (the fake prints 2)
/// and then completes with each of `results` in turn.
fn counted_then(results: &[&str]) -> agent::ScriptedLlm {
    let mut llm = worker().push_json(CallRole::Planner, counting_plan()).push_json(
        CallRole::Executor,
        json!({"action": "run_python", "arguments": {"code": "print(sum('ERROR' in l.split() for l in open('app.log')))"}}),
    );
    for result in results {
        llm = llm.push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": result}),
        );
    }
    llm
}

#[tokio::test]
async fn a_result_that_drops_the_numbers_its_program_printed_is_sent_back_once_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let llm = counted_then(&[
        "The ERROR lines were counted and stored in a variable.",
        "2 ERROR lines.",
    ]);
    let world = coding_world(llm, dir.path());
    let run = world.run(simple("How many ERROR lines has app.log?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.plan().subtasks()[0].outcome(), Some("2 ERROR lines."));
    let told = world.told("Your program printed:\n2\nbut your result states none of its numbers");
    assert!(
        told.is_some(),
        "the model was shown what its program printed"
    );

    // A result that says a number the program printed is not sent back.
    let world = coding_world(counted_then(&["2 ERROR lines."]), dir.path());
    world.run(simple("How many ERROR lines has app.log?")).await;
    assert!(world.told("Your program printed:").is_none());
}

/// A plan of one step writing squares.csv by hand, then what the step's
/// model does: `writes` (each a `write_file` of that many rows) and a
/// completion.
fn squares_typed(writes: &[usize]) -> agent::ScriptedLlm {
    let mut llm = worker().push_json(
        CallRole::Planner,
        json!({"title": "Squares", "subtasks": [{
            "name": "Write squares.csv", "description": "Write squares.csv with n and its square.",
            "expected_outcome": "squares.csv", "tool": "write_file",
        }]}),
    );
    for rows in writes {
        let content: String = (1..=*rows).map(|n| format!("{n},{}\n", n * n)).collect();
        llm = llm.push_json(
            CallRole::Executor,
            json!({"action": "write_file", "arguments": {"path": "squares.csv", "content": format!("n,square\n{content}")}}),
        );
    }
    llm.push_json(
        CallRole::Executor,
        json!({"action": "complete", "result": "squares.csv holds the squares of 1 to 10."}),
    )
}

#[tokio::test]
async fn a_file_typed_again_with_fewer_lines_than_it_holds_is_not_written_the_first_time() {
    let task = "Write squares.csv with the header n,square and the squares of 1 to 10";
    let whole: String = (1..=10).map(|n| format!("{n},{}\n", n * n)).collect();
    let whole = format!("n,square\n{whole}");

    // The program's file holds 11 lines; the model types 3 over it.
    let dir = tempfile::tempdir().unwrap();
    let world = coding_world(squares_typed(&[2]), dir.path());
    world.host.put_file_holding("squares.csv", whole.as_bytes());
    let run = world.run(simple(task)).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let told = world
        .told("write_file did not run: squares.csv already holds 11 lines, and your content has 3")
        .is_some();
    assert!(told, "the model was told what the file holds");
    assert!(
        !dir.path().join("squares.csv").exists(),
        "the shorter file was not written"
    );

    // Once: the same write asked for again replaces the file.
    let dir = tempfile::tempdir().unwrap();
    let world = coding_world(squares_typed(&[2, 2]), dir.path());
    world.host.put_file_holding("squares.csv", whole.as_bytes());
    world.run(simple(task)).await;
    let written = std::fs::read_to_string(dir.path().join("squares.csv")).unwrap();
    assert_eq!(written.lines().count(), 3);

    // A task that asks for the file shortened is not held up.
    let dir = tempfile::tempdir().unwrap();
    let world = coding_world(squares_typed(&[2]), dir.path());
    world.host.put_file_holding("squares.csv", whole.as_bytes());
    world
        .run(simple("Keep only the first two squares in squares.csv"))
        .await;
    assert!(world.told("write_file did not run").is_none());
    assert!(dir.path().join("squares.csv").exists());

    // A binary file of the same name (a workbook) has no lines to lose.
    let dir = tempfile::tempdir().unwrap();
    let world = coding_world(squares_typed(&[2]), dir.path());
    let mut zipped = b"PK\x03\x04\0\0".to_vec();
    zipped.extend(std::iter::repeat_n(b"x\n\xff\0".as_slice(), 30).flatten());
    world.host.put_file_holding("squares.csv", &zipped);
    world.run(simple(task)).await;
    assert!(world.told("write_file did not run").is_none());

    // A write of as many lines or more is not held up.
    let dir = tempfile::tempdir().unwrap();
    let world = coding_world(squares_typed(&[10]), dir.path());
    world.host.put_file_holding("squares.csv", whole.as_bytes());
    world.run(simple(task)).await;
    assert!(world.told("write_file did not run").is_none());
    let written = std::fs::read_to_string(dir.path().join("squares.csv")).unwrap();
    assert_eq!(written, whole);
}

/// The rule `given_files_read_whole`: a file typed from the preview the
/// task shows of a longer given file is not written the first time; the
/// model reads the file and types it whole.
#[tokio::test]
async fn a_file_typed_from_a_longer_given_files_preview_is_not_written_the_first_time() {
    let staff: String = (0..30)
        .map(|i| {
            format!(
                "person{i},{}\n",
                if i % 3 == 0 { "Sales" } else { "Support" }
            )
        })
        .collect();
    let staff = format!("name,department\n{staff}");
    let everyone: String = (0..30)
        .filter(|i| i % 3 == 0)
        .map(|i| format!("person{i}\n"))
        .collect();
    let script = || {
        worker()
            .push_json(
                CallRole::Planner,
                json!({"title": "Sales staff", "subtasks": [{
                    "name": "Write sales_staff.txt", "description": "The Sales names, one per line.",
                    "expected_outcome": "sales_staff.txt", "tool": "write_file",
                }]}),
            )
            .push_json(
                CallRole::Executor,
                json!({"action": "write_file", "arguments": {"path": "sales_staff.txt", "content": "person0\nperson1\n"}}),
            )
            .push_json(
                CallRole::Executor,
                json!({"action": "read_file", "arguments": {"path": "staff.csv"}}),
            )
            .push_json(
                CallRole::Executor,
                json!({"action": "write_file", "arguments": {"path": "sales_staff.txt", "content": everyone}}),
            )
            .push_json(
                CallRole::Executor,
                json!({"action": "complete", "result": "sales_staff.txt holds the Sales names."}),
            )
    };
    let task = "Write the names of the Sales people in staff.csv into sales_staff.txt";
    let given = |shown: usize| {
        let mut config = simple(task);
        config.inputs = vec![run_model::InputFile {
            path: "staff.csv".into(),
            bytes: staff.len() as u64,
            preview: Some(staff[..shown].to_string()),
        }];
        config
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("staff.csv"), &staff).unwrap();
    let world = coding_world(script(), dir.path());
    let run = world.run(given(60)).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert!(
        world
            .told("write_file did not run: its content is typed from staff.csv")
            .is_some(),
        "the model was told it saw only the preview"
    );
    let written = std::fs::read_to_string(dir.path().join("sales_staff.txt")).unwrap();
    assert_eq!(written, everyone, "typed whole after reading");

    // A preview that shows the whole file: the typed file is written.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("staff.csv"), &staff).unwrap();
    let world = coding_world(script(), dir.path());
    world.run(given(staff.len())).await;
    assert!(world.told("write_file did not run").is_none());
}

/// The rule `failed_code_not_done`: a step completed right after its
/// program failed is sent back once with the error, and its next program
/// does the work.
#[tokio::test]
async fn a_step_completed_on_a_program_that_failed_is_sent_back_once_with_the_error() {
    let llm = worker()
        .push_json(
            CallRole::Planner,
            json!({"title": "Names", "subtasks": [{
                "name": "Write names.txt", "description": "Write the names into names.txt.",
                "expected_outcome": "names.txt", "tool": "run_python",
            }]}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": "import requests"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "The names are written to names.txt."}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": "print(2)"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "names.txt holds 2 names."}),
        );
    let dir = tempfile::tempdir().unwrap();
    let world = coding_world(llm, dir.path());
    let run = world.run(simple("Write the names into names.txt")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let told = world
        .told("Your last program failed")
        .expect("sent back with the error");
    assert!(told.contains("No module named 'requests'"), "{told}");
    let plan = world.plan();
    assert_eq!(
        plan.subtasks()[0].outcome(),
        Some("names.txt holds 2 names."),
        "the result after the program ran"
    );
}

/// A plan of one subtask that counts with code.
fn counting_plan() -> serde_json::Value {
    json!({"title": "Count", "subtasks": [{
        "name": "Count the ERROR lines", "description": "Count the ERROR lines of app.log.",
        "expected_outcome": "the count", "tool": "run_python",
    }]})
}

/// A check program as the model writes it: plain text, the code in a
/// fenced block after a line of its own words.
fn program(lines: &[&str]) -> Reply {
    Reply::Text(format!(
        "The program:\n```python\n{}\n```",
        lines.join("\n")
    ))
}

/// The check programs the model writes (their code is not read: the fake
/// `run_python` prints 2 for any).
fn check_program() -> Reply {
    program(&[
        "lines = open('app.log').read().splitlines()",
        "print(sum('ERROR' in l.split() for l in lines))",
    ])
}

#[tokio::test]
async fn a_number_two_independent_programs_compute_otherwise_is_sent_back_once_with_their_outputs()
{
    let dir = tempfile::tempdir().unwrap();
    let llm = one_then_checked([check_program(), check_program()]);
    let world = coding_world(llm, dir.path());
    let run = world.run(simple("How many ERROR lines has app.log?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        world.plan().subtasks()[0].outcome(),
        Some("There are 2 ERROR lines.")
    );
    assert_eq!(world.llm.calls(CallRole::Checker), 2);
    let checks = world
        .llm
        .requests()
        .into_iter()
        .filter(|r| r.role == CallRole::Checker)
        .collect::<Vec<_>>();
    assert!(
        checks.iter().all(|r| !r
            .messages
            .iter()
            .any(|m| m.content.contains("1 ERROR line"))),
        "a check never sees the result it checks"
    );
    let told = world
        .told("Two programs written independently")
        .expect("the executor was shown the checks");
    assert!(told.contains("both printed 2"), "{told}");
    assert!(
        told.contains("Program 2:\nlines = open('app.log')") && told.contains("It printed:\n2"),
        "the programs are shown with what they printed: {told}"
    );
    let logged = world
        .entries()
        .into_iter()
        .filter(|e| matches!(e, agent::RunEntry::ToolCall { name, .. } if name == "run_python"))
        .count();
    assert_eq!(
        logged, 3,
        "the executor's program and both checks are on the run log"
    );
    let ran = world.entries().into_iter().any(|e| {
        matches!(e, agent::RunEntry::ToolCall { arguments, .. }
            if arguments["code"] == "lines = open('app.log').read().splitlines()\nprint(sum('ERROR' in l.split() for l in lines))")
    });
    assert!(ran, "a check runs its lines as one program, a line each");
}

#[tokio::test]
async fn a_result_its_own_program_contradicts_is_sent_back_once_when_no_check_bears_it_out() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("app.log"),
        "10:00 ERROR disk 4 full\n10:01 ERROR down\n",
    )
    .unwrap();
    let failing = program(&["import requests", "print(4)"]);
    let llm = worker()
        .push_json(CallRole::Planner, counting_plan())
        .push_json(
            CallRole::Executor,
            json!({"action": "read_file", "arguments": {"path": "app.log"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": "print(sum('ERROR' in l for l in open('app.log')))"}}),
        )
        // 4 is in the log, not what the program printed (2).
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "There are 4 ERROR lines."}),
        )
        .push(CallRole::Checker, failing.clone())
        .push(CallRole::Checker, failing.clone())
        // Each failed check is fixed once, and fails again.
        .push(CallRole::Checker, failing.clone())
        .push(CallRole::Checker, failing)
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "There are 2 ERROR lines."}),
        );
    let world = coding_world(llm, dir.path());
    let run = world.run(simple("How many ERROR lines has app.log?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        world.plan().subtasks()[0].outcome(),
        Some("There are 2 ERROR lines.")
    );
    assert_eq!(
        world.llm.calls(CallRole::Checker),
        4,
        "each check is fixed once, not more"
    );
    let told = world
        .told("Your own program printed 2")
        .expect("the executor was shown its own program's number");
    assert!(told.contains("your result states 4"), "{told}");
}

#[tokio::test]
async fn a_check_whose_program_failed_beside_one_that_disagrees_is_fixed_once_and_can_dispute() {
    check_fixed_once(
        program(&["import requests", "print(2)"]),
        "The program failed:\nModuleNotFoundError: No module named 'requests'",
    )
    .await;
}

#[tokio::test]
async fn a_check_that_printed_nothing_beside_one_that_disagrees_is_fixed_once_and_can_dispute() {
    check_fixed_once(
        program(&["# silent", "n = 2"]),
        "The program printed no answer on its last line:\n(nothing)",
    )
    .await;
}

#[tokio::test]
async fn two_checks_whose_programs_both_failed_are_each_fixed_once_and_can_dispute() {
    let dir = tempfile::tempdir().unwrap();
    let failing = program(&["import requests", "print(2)"]);
    let llm = one_then_checked([failing.clone(), failing, check_program(), check_program()]);
    let world = coding_world(llm, dir.path());
    let run = world.run(simple("How many ERROR lines has app.log?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.llm.calls(CallRole::Checker), 4, "one fix each");
    let fixes: Vec<String> = world
        .llm
        .requests()
        .iter()
        .filter(|r| r.role == CallRole::Checker)
        .skip(2)
        .map(|r| r.messages.last().unwrap().content.clone())
        .collect();
    assert!(
        fixes
            .iter()
            .all(|f| f.starts_with("The program failed:\nModuleNotFoundError")),
        "{fixes:?}"
    );
    disputed_to_two(&world);
}

/// A run whose executor reads the log and says 1, whose check programs
/// are `checks` in turn (the fake `run_python` prints 2 for a program that
/// does not fail), and whose executor then says 2.
fn one_then_checked<const N: usize>(checks: [Reply; N]) -> agent::ScriptedLlm {
    checked_then(checks, "There are 2 ERROR lines.")
}

#[tokio::test]
async fn a_choice_among_the_tasks_numbers_is_computed_again_and_two_checks_overturn_it() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker()
        .push_json(
            CallRole::Planner,
            json!({"title": "Days", "subtasks": [{
                "name": "Find the day with the most ERROR lines",
                "description": "Count the ERROR lines of days 1, 2 and 3 of app.log.",
                "expected_outcome": "the day", "tool": "run_python",
            }]}),
        )
        // A program that counts nothing, and a day the task names anyway.
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": "print(0)  # wrong"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "Day 3 has the most ERROR lines."}),
        )
        .push(CallRole::Checker, check_program())
        .push(CallRole::Checker, check_program())
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "Day 2 has the most ERROR lines."}),
        );
    let world = coding_world(llm, dir.path());
    let run = world
        .run(simple(
            "Which of the days 1, 2 and 3 of app.log has the most ERROR lines?",
        ))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let told = world
        .told("Two programs written independently")
        .expect("the executor was shown two checks that agree");
    assert!(told.contains("both printed 2"), "{told}");
    assert_eq!(
        world.plan().subtasks()[0].outcome(),
        Some("Day 2 has the most ERROR lines.")
    );
}

/// [`one_then_checked`] whose executor then completes with `then`.
fn checked_then<const N: usize>(checks: [Reply; N], then: &str) -> agent::ScriptedLlm {
    let llm = worker()
        .push_json(CallRole::Planner, counting_plan())
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": "print(open('app.log').read())"}}),
        )
        // Not what the code printed, but the brief holds a 1 (the
        // subtask's "#1"): grounding lets it through, the checks do not.
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "There is 1 ERROR line."}),
        );
    checks
        .into_iter()
        .fold(llm, |llm, check| llm.push(CallRole::Checker, check))
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": then}),
        )
}

/// What the executor of a [`one_then_checked`] run read when two checks
/// printed 2, after which the subtask kept 2.
fn disputed_to_two(world: &World) -> String {
    let told = world
        .told("Two programs written independently")
        .expect("the executor was shown two checks that agree");
    assert!(told.contains("both printed 2"), "{told}");
    assert_eq!(
        world.plan().subtasks()[0].outcome(),
        Some("There are 2 ERROR lines.")
    );
    told
}

/// The executor says 1; the first check prints 2, the second runs
/// `broken`, is told `told` and fixed, and prints 2: the executor is shown
/// both.
async fn check_fixed_once(broken: Reply, told: &str) {
    let dir = tempfile::tempdir().unwrap();
    let llm = one_then_checked([check_program(), broken, check_program()]);
    let world = coding_world(llm, dir.path());
    let run = world.run(simple("How many ERROR lines has app.log?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.llm.calls(CallRole::Checker), 3, "one fix");
    let requests = world.llm.requests();
    let fix = requests
        .iter()
        .filter(|r| r.role == CallRole::Checker)
        .nth(2)
        .unwrap();
    let asked = &fix.messages.last().unwrap().content;
    assert!(asked.starts_with(told), "{asked}");
    assert!(
        fix.messages
            .iter()
            .all(|m| !m.content.contains("1 ERROR line")),
        "the fixed check does not see the result either"
    );
    let told = disputed_to_two(&world);
    assert!(
        !told.contains("Program 3"),
        "the failed program is not shown: {told}"
    );
}

#[tokio::test]
async fn a_lone_dissent_beside_a_check_that_failed_twice_gets_a_third_check_and_can_dispute() {
    let dir = tempfile::tempdir().unwrap();
    let failing = program(&["import requests", "print(2)"]);
    // The first check prints 2; the second fails, and fails again after
    // its fix; a third, written another way, prints 2 too.
    let llm = one_then_checked([check_program(), failing.clone(), failing, check_program()]);
    let world = coding_world(llm, dir.path());
    let run = world.run(simple("How many ERROR lines has app.log?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.llm.calls(CallRole::Checker), 4, "one fix, one third");
    let third = world
        .llm
        .requests()
        .into_iter()
        .filter(|r| r.role == CallRole::Checker)
        .nth(3)
        .unwrap();
    assert!(
        third.messages[0].content.contains("no regular expressions"),
        "the third is written another way: {}",
        third.messages[0].content
    );
    assert_eq!(third.messages.len(), 2, "a new program, not a fix");
    let told = disputed_to_two(&world);
    assert!(
        !told.contains("requests"),
        "the failed program is not shown: {told}"
    );
}

#[tokio::test]
async fn two_checks_that_disagree_with_each_other_get_a_third_and_the_two_that_agree_dispute() {
    let dir = tempfile::tempdir().unwrap();
    let wrong = program(&["# wrong", "print(0)"]);
    let llm = one_then_checked([wrong, check_program(), check_program()]);
    let world = coding_world(llm, dir.path());
    let run = world.run(simple("How many ERROR lines has app.log?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.llm.calls(CallRole::Checker), 3, "no fix, one third");
    let told = disputed_to_two(&world);
    assert!(
        !told.contains("# wrong"),
        "the third number's program is not shown: {told}"
    );
}

#[tokio::test]
async fn a_number_the_first_check_computes_too_is_kept_without_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker()
        .push_json(CallRole::Planner, counting_plan())
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": "print(2)"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "There are 2 ERROR lines."}),
        )
        .push(CallRole::Checker, check_program())
        .push(
            CallRole::Compiler,
            agent::llm::Reply::Text("There are 2 ERROR lines.".into()),
        );
    let world = coding_world(llm, dir.path());
    let run = world.run(simple("How many ERROR lines has app.log?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        world.plan().subtasks()[0].outcome(),
        Some("There are 2 ERROR lines.")
    );
    assert_eq!(world.llm.calls(CallRole::Checker), 1);
    assert_eq!(world.llm.calls(CallRole::Executor), 2);
}

#[tokio::test]
async fn numbers_the_planners_own_text_holds_are_checked_all_the_same() {
    // A plan folded into one step numbers its parts; a result's numbers
    // that happen to be among them were found out all the same.
    let dir = tempfile::tempdir().unwrap();
    let plan = json!({"title": "Count", "subtasks": [{
        "name": "Count the ERROR lines",
        "description": "In one program: 1. read app.log 2. count its ERROR lines",
        "expected_outcome": "the count", "tool": "run_python",
    }]});
    let llm = worker()
        .push_json(CallRole::Planner, plan)
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": "print(2)"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "There are 2 ERROR lines."}),
        )
        .push(CallRole::Checker, check_program());
    let world = coding_world(llm, dir.path());
    let run = world.run(simple("How many ERROR lines has app.log?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.llm.calls(CallRole::Checker), 1, "the 2 was checked");
}

/// A `fetch_url` on a machine with no internet.
struct Offline;

#[async_trait::async_trait]
impl ToolBox for Offline {
    fn specs(&self) -> Vec<agent::protocol::ToolSpec> {
        vec![agent::protocol::ToolSpec {
            name: "fetch_url".into(),
            description: "Fetches a page.".into(),
            parameters: json!({"type": "object", "properties": {"url": {"type": "string"}}}),
        }]
    }

    async fn call(
        &self,
        _name: &str,
        _arguments: &serde_json::Value,
    ) -> Result<String, agent::tools::ToolError> {
        Err(agent::tools::ToolError::refused(
            "cannot resolve primes.example: failed to lookup address information",
        ))
    }
}

#[tokio::test]
async fn a_subtask_failed_after_the_web_could_not_be_reached_is_sent_back_once_to_compute_it() {
    let dir = tempfile::tempdir().unwrap();
    let plan = json!({"title": "Primes", "subtasks": [{
        "name": "Fetch the primes below 100", "description": "Fetch a list of the primes below 100.",
        "expected_outcome": "the count", "tool": "fetch_url",
    }]});
    let llm = worker()
        .push_json(CallRole::Planner, plan)
        .push_json(
            CallRole::Executor,
            json!({"action": "fetch_url", "arguments": {"url": "https://primes.example/100"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "fail", "reason": "the page cannot be fetched"}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": "print(2)"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "There are 2 of them."}),
        );
    let root = dir.path().to_path_buf();
    let world = World::with_agent(llm, move |agent| {
        agent.with_tools(move |_| {
            let files: Arc<dyn ToolBox> = Arc::new(FileTools::new(&root).unwrap());
            Toolset::new(vec![files, Arc::new(FakePython), Arc::new(Offline)])
        })
    });
    let run = world.run(simple("How many primes are below 100?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        world.plan().subtasks()[0].outcome(),
        Some("There are 2 of them.")
    );
    let told = world
        .llm
        .requests()
        .iter()
        .filter(|r| r.role == CallRole::Executor)
        .filter_map(|r| r.messages.last())
        .any(|m| {
            m.content
                .starts_with("The web could not be reached (cannot resolve")
        });
    assert!(told, "the model was sent to compute");
}

/// A world with files, a code tool and the web (offline).
fn web_world(llm: agent::ScriptedLlm, dir: &std::path::Path) -> World {
    let root = dir.to_path_buf();
    World::with_agent(llm, move |agent| {
        agent.with_tools(move |_| {
            let files: Arc<dyn ToolBox> = Arc::new(FileTools::new(&root).unwrap());
            Toolset::new(vec![files, Arc::new(FakePython), Arc::new(Offline)])
        })
    })
}

/// The planner's prompt: the task and the tools it was offered.
fn planner_prompt(world: &World) -> String {
    let requests = world.llm.requests();
    let planner = requests
        .iter()
        .find(|r| r.role == CallRole::Planner)
        .expect("a plan was asked for");
    planner.messages[1].content.clone()
}

#[tokio::test]
async fn a_task_a_program_can_answer_is_planned_without_the_web_tools_which_the_executor_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker().push_json(
        CallRole::Classifier,
        json!({"source": "computation", "why": "counting primes is arithmetic"}),
    );
    let world = web_world(llm, dir.path());
    let run = world.run(simple("How many primes are below 100?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let planner = planner_prompt(&world);
    assert!(planner.contains("- run_python:"), "{planner}");
    assert!(!planner.contains("fetch_url"), "{planner}");
    let requests = world.llm.requests();
    let executor = requests
        .iter()
        .find(|r| r.role == CallRole::Executor)
        .unwrap();
    assert!(
        format!("{:?}", executor.shape).contains("fetch_url"),
        "the executor is still offered the web"
    );
    let said = world.entries().into_iter().any(|e| match e {
        RunEntry::PlanRepaired { repairs } => repairs
            .iter()
            .any(|r| r.starts_with("planned without the web tools")),
        _ => false,
    });
    assert!(said, "the board says why the plan has no web step");
}

#[tokio::test]
async fn a_task_the_router_says_needs_the_web_is_planned_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker().push_json(
        CallRole::Classifier,
        json!({"source": "web", "why": "a population changes"}),
    );
    let world = web_world(llm, dir.path());
    let run = world.run(simple("What is the population of Lisbon?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert!(planner_prompt(&world).contains("- fetch_url:"));
    assert_eq!(world.llm.calls(CallRole::Classifier), 1);
}

#[tokio::test]
async fn a_task_that_names_a_page_is_planned_with_the_web_without_asking() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker().push_json(
        CallRole::Classifier,
        json!({"source": "computation", "why": "a wrong judgement"}),
    );
    let world = web_world(llm, dir.path());
    let run = world
        .run(simple("How many words has https://example.com/news/1?"))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert!(planner_prompt(&world).contains("- fetch_url:"));
    assert_eq!(
        world.llm.calls(CallRole::Classifier),
        0,
        "nothing was asked"
    );
}

#[tokio::test]
async fn a_router_that_cannot_answer_where_the_answer_comes_from_keeps_the_web() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker()
        .push(
            CallRole::Classifier,
            agent::llm::Reply::Text("computation, surely".into()),
        )
        .push(
            CallRole::Classifier,
            agent::llm::Reply::Text("computation!".into()),
        );
    let world = web_world(llm, dir.path());
    let run = world.run(simple("How many primes are below 100?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert!(planner_prompt(&world).contains("- fetch_url:"));
}

#[tokio::test]
async fn a_subtask_failed_after_the_web_and_then_a_download_in_code_failed_is_sent_to_compute_it() {
    let dir = tempfile::tempdir().unwrap();
    let plan = json!({"title": "Primes", "subtasks": [{
        "name": "Fetch the primes below 100", "description": "Fetch a list of the primes below 100.",
        "expected_outcome": "the count", "tool": "fetch_url",
    }]});
    let llm = worker()
        .push_json(CallRole::Planner, plan)
        .push_json(
            CallRole::Executor,
            json!({"action": "fetch_url", "arguments": {"url": "https://primes.example/100"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": "import requests"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "fail", "reason": "requests is not installed"}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": "print(2)"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "There are 2 of them."}),
        );
    let world = web_world(llm, dir.path());
    let run = world.run(simple("How many primes are below 100?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let told = world
        .told("The web could not be reached")
        .expect("the model was sent to compute");
    assert!(
        told.contains("Your code failed too:\nModuleNotFoundError: No module named 'requests'"),
        "{told}"
    );
}

#[tokio::test]
async fn a_run_whose_budget_leaves_no_room_for_the_routers_question_spends_it_on_work() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker().push_json(
        CallRole::Classifier,
        json!({"source": "computation", "why": "counting primes is arithmetic"}),
    );
    let world = web_world(llm, dir.path());
    let mut config = simple("How many primes are below 100?");
    config.budget.max_llm_calls = 3;
    world.run(config).await;
    assert_eq!(
        world.llm.calls(CallRole::Classifier),
        0,
        "nothing was asked"
    );
    assert!(planner_prompt(&world).contains("- fetch_url:"));
}

#[tokio::test]
async fn code_whose_json_turned_a_regex_backslash_into_a_backspace_is_asked_for_again_as_text() {
    let dir = tempfile::tempdir().unwrap();
    // What llama.cpp's JSON grammar leaves of `\w+`: JSON's `\b`, a
    // backspace, twice.
    let mangled = "import re\nprint(len(re.findall(r'def \u{8}\u{8}', read_file('calc.py'))))";
    let fenced = "import re\nprint(len(re.findall(r'def \\w+', read_file('calc.py'))))";
    let llm = worker()
        .push_json(CallRole::Planner, counting_plan())
        .push_json(
            CallRole::Executor,
            json!({"action": "run_python", "arguments": {"code": mangled}}),
        )
        .push(
            CallRole::Executor,
            Reply::Text(format!("The same program:\n```python\n{fenced}\n```")),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "calc.py defines 2 functions."}),
        );
    let world = coding_world(llm, dir.path());
    let run = world
        .run(simple("How many functions does calc.py define?"))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let ran: Vec<String> = world
        .entries()
        .iter()
        .filter_map(|e| match e {
            RunEntry::ToolCall {
                name, arguments, ..
            } if name == "run_python" => arguments["code"].as_str().map(str::to_string),
            _ => None,
        })
        .collect();
    assert_eq!(
        ran,
        [fenced],
        "the program written as text ran, not the mangled one"
    );
    let requests = world.llm.requests();
    let asked = requests
        .iter()
        .find(|r| r.role == CallRole::Executor && matches!(r.shape, Shape::Text))
        .expect("the program was asked for as plain text");
    let said = &asked.messages.last().unwrap().content;
    assert!(said.contains("backspace"), "{said}");
    // The next turn shows the call with the program that ran.
    let next = requests
        .iter()
        .filter(|r| r.role == CallRole::Executor)
        .nth(2)
        .unwrap();
    let shown = &next.messages[next.messages.len() - 2].content;
    assert!(shown.contains("def \\\\w+"), "{shown}");
}

#[tokio::test]
async fn a_number_kept_against_two_agreeing_checks_without_a_reason_gives_way_to_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let world = coding_world(
        checked_then([check_program(), check_program()], "1"),
        dir.path(),
    );
    let run = world.run(simple("How many ERROR lines has app.log?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let outcome = world.plan().subtasks()[0].outcome().unwrap().to_string();
    assert!(outcome.starts_with("2. Two programs"), "{outcome}");
    assert!(
        outcome.contains("said 1"),
        "the executor's number stays in view: {outcome}"
    );
}

#[tokio::test]
async fn a_number_kept_against_two_checks_with_a_reason_stands() {
    let dir = tempfile::tempdir().unwrap();
    let reason = "There is 1 ERROR line: both programs above also counted the word ERROR inside \
                  the message of a WARN line, which is not an ERROR line.";
    let world = coding_world(
        checked_then([check_program(), check_program()], reason),
        dir.path(),
    );
    let run = world.run(simple("How many ERROR lines has app.log?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.plan().subtasks()[0].outcome(), Some(reason));
}
