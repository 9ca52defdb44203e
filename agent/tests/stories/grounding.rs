//! Numbers come from what the model saw: a subtask's result that states a
//! number no tool printed is sent back once, and so is a final answer that
//! states one the results do not hold (small models answer data questions
//! from their own head).

use crate::support::*;
use agent::llm::{CallRole, Reply};
use agent::RunState;
use serde_json::json;

#[tokio::test]
async fn a_result_stating_a_number_no_tool_printed_is_sent_back_once_and_the_printed_one_kept() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("totals.txt"), "north 1526\neast 2210\n").unwrap();
    let llm = worker()
        .push_json(
            CallRole::Executor,
            json!({"action": "read_file", "arguments": {"path": "totals.txt"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "North sold 1800."}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "North sold 1,526."}),
        );
    let world = World::reading(llm, dir.path());
    let run = world.run(simple("How much did north sell?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    assert_eq!(plan.subtasks()[0].outcome(), Some("North sold 1,526."));
    let requests = world.llm.requests();
    let checked = requests
        .iter()
        .filter(|r| r.role == CallRole::Executor)
        .filter_map(|r| r.messages.last())
        .any(|m| m.content.contains("Your result states 1800"));
    assert!(checked, "the model was told which number nothing printed");
}

#[tokio::test]
async fn a_result_of_a_subtask_without_tools_sent_back_once_is_kept_the_second_time() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker()
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "About 1800."}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "About 1800, I am sure."}),
        );
    let world = World::reading(llm, dir.path());
    let run = world.run(simple("Guess a number")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        world.plan().subtasks()[0].outcome(),
        Some("About 1800, I am sure.")
    );
    assert_eq!(world.llm.calls(CallRole::Executor), 2);
}

#[tokio::test]
async fn an_answer_stating_a_number_the_results_lack_is_written_again_and_else_the_results_stand() {
    // The executor's result holds 1229 (said twice: a number no tool
    // printed is questioned once); the answer's 1300 is in no result.
    let llm = worker()
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "The count is 1229."}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "The count is 1229."}),
        )
        .push(
            CallRole::Compiler,
            Reply::Text("There are 1300 of them.".into()),
        )
        .push(
            CallRole::Compiler,
            Reply::Text("There are 1229 primes below the bound.".into()),
        );
    let world = World::new(llm);
    let run = world.run(simple("Count the primes")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        run.answer.as_deref(),
        Some("There are 1229 primes below the bound.")
    );

    let stubborn = worker()
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "The count is 1229."}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "The count is 1229."}),
        )
        .push(CallRole::Compiler, Reply::Text("There are 1300.".into()))
        .push(CallRole::Compiler, Reply::Text("Still 1300.".into()));
    let world = World::new(stubborn);
    let run = world.run(simple("Count the primes")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let answer = run.answer.unwrap_or_default();
    assert!(
        answer.contains("1229") && !answer.contains("1300"),
        "the results stand: {answer}"
    );
    assert_eq!(world.llm.calls(CallRole::Compiler), 2);
}

#[tokio::test]
async fn an_answer_stating_a_number_only_a_files_preview_holds_is_written_again() {
    let result = json!({"action": "complete", "result": "widget has the highest revenue."});
    let llm = worker()
        .push_json(CallRole::Executor, result)
        .push(
            CallRole::Compiler,
            Reply::Text("widget, followed by gizmo with 39.".into()),
        )
        .push(
            CallRole::Compiler,
            Reply::Text("widget has the highest revenue.".into()),
        );
    let world = World::new(llm);
    let mut config = simple("Which product has the highest revenue in sales.csv?");
    config.inputs = vec![run_model::InputFile {
        path: "sales.csv".into(),
        bytes: 40,
        preview: Some("product,revenue\nwidget,284\ngizmo,39\n".into()),
    }];
    let run = world.run(config).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.llm.calls(CallRole::Compiler), 2);
    assert_eq!(
        run.answer.as_deref(),
        Some("widget has the highest revenue.")
    );
}

#[tokio::test]
async fn an_answer_that_pastes_the_results_under_their_headings_keeps_only_what_it_wrote() {
    let llm = worker().push(
        CallRole::Compiler,
        Reply::Text("It is the only result.\n\n## only\nresult of only".into()),
    );
    let world = World::new(llm);
    let run = world.run(simple("What is it?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(run.answer.as_deref(), Some("It is the only result."));
}

#[tokio::test]
async fn with_one_result_the_answer_the_model_cannot_write_is_that_result_alone() {
    // Said twice: a number no tool printed is questioned once.
    let result = json!({"action": "complete", "result": "There are 1229 primes below 10000."});
    let stubborn = worker()
        .push_json(CallRole::Executor, result.clone())
        .push_json(CallRole::Executor, result)
        .push(CallRole::Compiler, Reply::Text("There are 1300.".into()))
        .push(CallRole::Compiler, Reply::Text("Still 1300.".into()));
    let world = World::new(stubborn);
    let run = world.run(simple("How many primes are below 10000?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        run.answer.as_deref(),
        Some("There are 1229 primes below 10000."),
        "the result, not a plan's headings"
    );
}

#[tokio::test]
async fn a_subtask_with_tools_that_repeats_a_number_nothing_printed_fails_the_attempt_and_tries_again(
) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("totals.txt"), "north 1526\n").unwrap();
    let guess = json!({"action": "complete", "result": "North sold 1800."});
    let llm = worker()
        .push_json(
            CallRole::Executor,
            json!({"action": "read_file", "arguments": {"path": "totals.txt"}}),
        )
        .push_json(CallRole::Executor, guess.clone())
        .push_json(CallRole::Executor, guess.clone())
        // The next attempt: the reason does not make the guess grounded.
        .push_json(CallRole::Executor, guess)
        .push_json(
            CallRole::Executor,
            json!({"action": "read_file", "arguments": {"path": "totals.txt"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "North sold 1526."}),
        );
    let world = World::reading(llm, dir.path());
    let mut c = simple("How much did north sell?");
    c.retry_delay_ms = 0;
    let run = world.run(c).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        world.plan().subtasks()[0].outcome(),
        Some("North sold 1526.")
    );
    let retried = world
        .llm
        .requests()
        .iter()
        .filter(|r| r.role == CallRole::Executor)
        .filter_map(|r| r.messages.get(1))
        .any(|m| {
            m.content
                .contains("the result stated 1800, which no tool output shows")
        });
    assert!(retried, "the next attempt starts with the reason");
    let checked = world
        .llm
        .requests()
        .iter()
        .filter(|r| r.role == CallRole::Executor)
        .filter_map(|r| r.messages.last())
        .filter(|m| m.content.contains("Your result states 1800"))
        .count();
    assert_eq!(checked, 2, "the guess is questioned in both attempts");
}

#[tokio::test]
async fn a_result_of_bare_numbers_is_sent_back_once_to_be_said_in_words() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("counts.txt"), "a 6\nb 3\nc 3\n").unwrap();
    let llm = worker()
        .push_json(
            CallRole::Executor,
            json!({"action": "read_file", "arguments": {"path": "counts.txt"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "6 3 3"}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "a counts 6, b 3 and c 3."}),
        )
        .push(
            CallRole::Compiler,
            agent::llm::Reply::Text("a counts 6, b 3 and c 3.".into()),
        );
    let world = World::reading(llm, dir.path());
    let run = world.run(simple("What are the counts?")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(
        world.plan().subtasks()[0].outcome(),
        Some("a counts 6, b 3 and c 3.")
    );
    let told: Vec<String> = world
        .llm
        .requests()
        .iter()
        .filter(|r| r.role == CallRole::Executor)
        .filter_map(|r| r.messages.last().map(|m| m.content.clone()))
        .collect();
    assert!(told[2].contains("Your result is only numbers"), "{told:#?}");
    assert_eq!(world.llm.calls(CallRole::Executor), 3);
}

#[tokio::test]
async fn shown_numbers_sent_back_to_be_said_stand_when_the_saying_adds_numbers_nothing_shows() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("perfect.txt"), "[6, 28, 496]\n").unwrap();
    let said = |extra: &str| {
        json!({"action": "complete",
               "result": format!("The perfect numbers up to 1000 are 6, 28 and 496. {extra}")})
    };
    let llm = worker()
        .push_json(
            CallRole::Executor,
            json!({"action": "read_file", "arguments": {"path": "perfect.txt"}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "[6, 28, 496]"}),
        )
        .push_json(CallRole::Executor, said("Their sum is 720."))
        .push_json(
            CallRole::Executor,
            said("Their sum is 720 and their mean 240."),
        );
    let world = World::reading(llm, dir.path());
    let run = world
        .run(simple("List the perfect numbers up to 1000."))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let subtask = world.plan().subtasks()[0].clone();
    assert_eq!(
        subtask.outcome(),
        Some(format!("{}: [6, 28, 496]", subtask.name()).as_str())
    );
    // Asked to say them, then told once that 720 shows nowhere: one
    // attempt, no failure.
    assert_eq!(world.llm.calls(CallRole::Executor), 4);
}
