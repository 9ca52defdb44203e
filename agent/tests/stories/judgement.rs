//! The agent's judgement as named rules (`agent::rules`): a task answered
//! in words, a task whose parts must all be answered, a step that reports
//! files no tool showed.

use crate::support::*;
use agent::llm::{CallRole, Reply, Shape};
use agent::{RunEntry, RunState};
use serde_json::json;

/// The executor's action schema names the tools it was offered.
fn offered_tools(request: &agent::llm::ChatRequest) -> String {
    match &request.shape {
        Shape::Json { schema, .. } => schema.to_string(),
        Shape::Tools { functions } => serde_json::to_string(functions.as_slice()).unwrap(),
        Shape::Text => String::new(),
    }
}

#[tokio::test]
async fn a_poem_is_one_step_with_no_tool_and_its_text_is_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let poem = "Plans unfold slowly\nsteps waiting on their own turn\nthe board turns to green";
    let llm = worker()
        .push_json(
            CallRole::Classifier,
            json!({"source": "words", "why": "a poem is written"}),
        )
        .push(CallRole::Executor, Reply::Text(poem.into()));
    let world = World::reading(llm, dir.path());
    // Not led by a writing verb: the router's model is asked.
    let run = world.run(config("A haiku about plans, please")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let c = run.classification.unwrap();
    assert!(c.in_words && c.mode == plan_engine::Mode::Simple, "{c:?}");
    // No planner and no compiler: the question, then the one step.
    assert_eq!(world.llm.calls(CallRole::Planner), 0);
    assert_eq!(world.llm.calls(CallRole::Compiler), 0);
    assert_eq!(world.llm.calls(CallRole::Classifier), 1);
    let plan = world.plan();
    assert_eq!(plan.subtasks().len(), 1);
    assert_eq!(plan.subtasks()[0].name(), "A haiku about plans, please");
    assert_eq!(plan.subtasks()[0].tool(), None);
    // The executor was offered no tool at all.
    let executor = world
        .llm
        .requests()
        .into_iter()
        .find(|r| r.role == CallRole::Executor)
        .unwrap();
    let offered = offered_tools(&executor);
    assert!(
        !offered.contains("read_file") && !offered.contains("list_files"),
        "{offered}"
    );
    assert_eq!(run.answer.as_deref(), Some(poem), "the poem as written");
}

/// The rule `words_written_whole`: the step of a task in words is one
/// plain-text turn, so there is no form to ask a person through, and the
/// text is not squeezed into a field (the model wrote an email's subject
/// line as the result).
#[tokio::test]
async fn the_step_of_a_task_in_words_is_written_in_one_plain_text_turn_and_asks_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let email = "Subject: Planning on Thursday\n\nDear Priya,\n\nplease join us on Thursday at \
                 10:00 in room B2 for the quarterly planning meeting.\n\nBest,\nAda";
    let llm = worker()
        .push_json(
            CallRole::Classifier,
            json!({"source": "words", "why": "an email is written"}),
        )
        .push(CallRole::Executor, Reply::Text(format!("  {email}\n")))
        // Were the form still offered, this would be the step's action.
        .push_json(
            CallRole::Executor,
            json!({"action": "ask", "question": "What should the email say?"}),
        );
    let world = World::reading(llm, dir.path());
    let run = world
        .run(config(
            "Write a short email inviting Priya to the planning meeting on Thursday at 10:00 in B2",
        ))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.llm.calls(CallRole::Executor), 1);
    let executor = world
        .llm
        .requests()
        .into_iter()
        .find(|r| r.role == CallRole::Executor)
        .unwrap();
    assert!(
        matches!(executor.shape, Shape::Text),
        "{:?}",
        executor.shape
    );
    // The task, not the plan: a small model copied the plan's lines.
    let brief = &executor.messages[1].content;
    assert!(brief.starts_with("Task: Write a short email"), "{brief}");
    assert!(!brief.contains("Where the plan stands"), "{brief}");
    assert_eq!(run.answer.as_deref(), Some(email), "the whole email");
}

/// The rule `own_question_not_asked`: a step that asks the person the
/// task's own question is told once to answer it itself.
#[tokio::test]
async fn a_question_to_a_person_that_restates_the_task_is_sent_back_once_to_be_answered() {
    let llm = worker()
        .push_json(
            CallRole::Executor,
            json!({"action": "ask", "question": "Which planet in the solar system is the largest?"}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "Jupiter is the largest planet."}),
        )
        .push(
            CallRole::Compiler,
            Reply::Text("Jupiter is the largest planet.".into()),
        );
    let world = World::new(llm);
    let run = world
        .run(simple("Which planet of the solar system is the largest?"))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.llm.calls(CallRole::Executor), 2);
    let second = world
        .llm
        .requests()
        .into_iter()
        .filter(|r| r.role == CallRole::Executor)
        .nth(1)
        .unwrap();
    let told = &second.messages.last().unwrap().content;
    assert!(told.contains("the task's own question"), "{told}");
    assert_eq!(
        run.answer.as_deref(),
        Some("Jupiter is the largest planet.")
    );
}

/// A question that brings words of its own (a folder, a preference) is
/// a question for a person: the rule lets it through.
#[tokio::test]
async fn a_question_about_what_the_task_does_not_say_still_reaches_a_person() {
    let llm = worker().push_json(
        CallRole::Executor,
        json!({"action": "ask", "question": "Should the summary be formal or casual in tone?"}),
    );
    let world = World::new(llm);
    let _driving = world
        .start(simple("Summarise the meeting notes for the team"))
        .await;
    let plan = world
        .wait_plan(|p| {
            p.subtasks()
                .first()
                .is_some_and(|s| s.state() == plan_engine::SubtaskState::Blocked)
        })
        .await;
    assert!(plan
        .comments()
        .iter()
        .any(|c| c.body.contains("formal or casual")));
    assert_eq!(world.llm.calls(CallRole::Executor), 1);
}

#[tokio::test]
async fn a_task_that_needs_computing_is_planned_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker().push_json(
        CallRole::Classifier,
        json!({"source": "computation", "why": "a count"}),
    );
    let world = World::reading(llm, dir.path());
    let run = world.run(config("Count the vowels in 'planboard'")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert!(!run.classification.unwrap().in_words);
    assert_eq!(world.llm.calls(CallRole::Planner), 1);
}

#[tokio::test]
async fn a_part_of_the_task_the_answer_left_out_is_sent_back_once_and_then_answered() {
    let llm = worker()
        .push(
            CallRole::Compiler,
            Reply::Text("The bar chart of units per region was saved.".into()),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "only"}),
        )
        // Told once that no tool shows 42, a step without tools keeps its
        // words.
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "North sold the most: 42 units."}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "North sold the most: 42 units."}),
        )
        .push(
            CallRole::Compiler,
            Reply::Text("North sold the most units: 42.".into()),
        );
    let world = World::new(llm);
    let task = "Which region sold the most units, and how many?";
    let run = world.run(simple(task)).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(run.asks.len(), 1, "{:?}", run.asks);
    let plan = world.plan();
    assert_eq!(plan.subtasks().len(), 2, "one step sent back");
    assert!(
        plan.subtasks()[1]
            .name()
            .starts_with("Answer: Which region"),
        "{}",
        plan.subtasks()[1].name()
    );
    assert_eq!(
        run.answer.as_deref(),
        Some("North sold the most units: 42.")
    );
    assert!(world.entries().iter().any(|e| matches!(
        e,
        RunEntry::PlanAdjusted { reason, .. } if reason.contains("every_ask_answered")
    )));
}

#[tokio::test]
async fn a_part_still_missing_after_the_second_try_is_named_in_the_first_line() {
    let llm = worker();
    let world = World::new(llm);
    // The scripted compiler always answers "the final answer": no number.
    let run = world
        .run(simple(
            "How many days are there from 2026-03-14 to 2027-01-01?",
        ))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let answer = run.answer.unwrap();
    assert!(
        answer.starts_with("Not done: How many days are there from 2026-03-14 to 2027-01-01?\n"),
        "{answer}"
    );
    assert_eq!(
        world.plan().subtasks().len(),
        2,
        "sent back once, not twice"
    );
}

#[tokio::test]
async fn a_file_the_task_asks_for_that_is_missing_is_sent_back_and_one_written_is_not() {
    let world = World::new(worker());
    world.host.put_file("notes/other.txt", 12);
    let run = world.run(simple("Write a short report to report.md")).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    assert!(
        plan.subtasks()
            .iter()
            .any(|s| s.name() == "Write report.md"),
        "{:?}",
        plan.subtasks().iter().map(|s| s.name()).collect::<Vec<_>>()
    );
    assert!(run.answer.unwrap().starts_with("Not done: write report.md"));

    let world = World::new(worker());
    world.host.put_file("report.md", 120);
    let run = world.run(simple("Write a short report to report.md")).await;
    assert_eq!(world.plan().subtasks().len(), 1, "nothing sent back");
    assert!(!run.answer.unwrap().starts_with("Not done"));
}

#[tokio::test]
async fn a_file_the_task_asks_for_written_as_another_kind_is_sent_back_and_named() {
    let task = "Save a bar chart of units per region as chart.png";
    let world = World::new(worker());
    world
        .host
        .put_file_holding("chart.png", b"North 42\nSouth 17\n");
    let run = world.run(simple(task)).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let plan = world.plan();
    let sent = plan
        .subtasks()
        .iter()
        .find(|s| s.name() == "Write chart.png")
        .expect("the chart sent back");
    assert!(
        sent.description().contains("is not a PNG image"),
        "{}",
        sent.description()
    );
    assert!(run
        .answer
        .unwrap()
        .starts_with("Not done: write chart.png (it is not a PNG image)."),);

    let world = World::new(worker());
    world
        .host
        .put_file_holding("out/chart.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let run = world.run(simple(task)).await;
    assert_eq!(world.plan().subtasks().len(), 1, "nothing sent back");
    assert!(!run.answer.unwrap().starts_with("Not done"));
}

#[tokio::test]
async fn a_step_that_reports_files_no_tool_showed_fails_its_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker()
        .push_json(
            CallRole::Classifier,
            json!({"source": "files", "why": "files"}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "list_files", "arguments": {"path": "."}}),
        )
        .push_json(
            CallRole::Executor,
            json!({"action": "complete", "result": "The workspace holds file1.txt and file2.txt."}),
        );
    let world = World::reading(llm, dir.path());
    let mut c = simple("Tell me what the workspace holds");
    c.max_attempts = 1;
    let driving = world.start(c).await;
    world
        .wait_run(|r| r.state.is_finished() || r.state == RunState::Paused)
        .await;
    driving.abort();
    let said: Vec<String> = world
        .entries()
        .iter()
        .filter_map(|e| match e {
            RunEntry::SubtaskResult {
                ok: false, text, ..
            } => Some(text.clone()),
            RunEntry::SubtaskRetry { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(
        said.iter()
            .any(|t| t.contains("file1.txt") && t.contains("no tool output shows")),
        "{said:?}"
    );
}

#[tokio::test]
async fn an_earlier_run_about_another_kind_of_task_does_not_reach_the_planner() {
    let world = World::new(worker());
    let first = "Make the release plans for the billing deploy";
    let record = world.agent.start(simple(first), "ada").await.unwrap();
    world.agent.drive(record).await;
    assert!(
        !world.host.memories().is_empty(),
        "the first run is remembered"
    );
    let later = "Make the release plans for the billing deploy on Friday";
    let record = world.agent.start(simple(later), "ada").await.unwrap();
    world.agent.drive(record).await;
    let other = "Write plans of a treehouse as a list of boards";
    let record = world.agent.start(simple(other), "ada").await.unwrap();
    world.agent.drive(record).await;
    let planner = |task: &str| {
        world
            .llm
            .requests()
            .iter()
            .filter(|r| r.role == CallRole::Planner)
            .map(|r| r.messages[1].content.clone())
            .rfind(|m| m.contains(&format!("Task: {task}")))
            .unwrap()
    };
    assert!(
        planner(later).contains("Records of earlier runs"),
        "the same kind of task recalls it"
    );
    assert!(
        !planner(other).contains("Records of earlier runs"),
        "plans of a treehouse are another kind of task: {}",
        planner(other)
    );
}

/// The rule `word_limit_kept`: a text over the words the task allows is
/// written again once, and the shorter one is the answer.
#[tokio::test]
async fn a_text_over_the_tasks_word_limit_is_written_again_once_within_it() {
    let dir = tempfile::tempdir().unwrap();
    let long = "The sea is wide and grey and moves all day under a low and heavy sky";
    let short = "A wide grey sea under heavy skies.";
    let llm = worker()
        .push_json(
            CallRole::Classifier,
            json!({"source": "words", "why": "a description is written"}),
        )
        .push(CallRole::Executor, Reply::Text(long.into()))
        .push(CallRole::Executor, Reply::Text(short.into()))
        .push(CallRole::Executor, Reply::Text("never asked for".into()));
    let world = World::reading(llm, dir.path());
    let run = world
        .run(config("In at most 8 words, describe the sea in winter"))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.llm.calls(CallRole::Executor), 2);
    let again = world
        .llm
        .requests()
        .into_iter()
        .filter(|r| r.role == CallRole::Executor)
        .nth(1)
        .unwrap();
    let told = &again.messages.last().unwrap().content;
    assert!(
        told.contains("has 16 words") && told.contains("at most 8"),
        "{told}"
    );
    assert_eq!(run.answer.as_deref(), Some(short));
}

/// The rule `word_limit_kept`, for a length in sentences: a note of more
/// sentences than the task asks for is written again once, and the
/// shorter one is the answer.
#[tokio::test]
async fn a_text_of_more_sentences_than_the_task_asks_is_written_again_once() {
    let dir = tempfile::tempdir().unwrap();
    let long = "Subject: Thank you\n\nDear Ines,\n\nI hope this note finds you well. Thank you \
                for watering our plants. They have never looked better. We owe you a dinner.\n\n\
                Best,\nSam";
    let short = "Dear Ines, thank you for watering our plants while we were away. They look \
                 wonderful, and we owe you a dinner.";
    let llm = worker()
        .push(CallRole::Executor, Reply::Text(long.into()))
        .push(CallRole::Executor, Reply::Text(short.into()))
        .push(CallRole::Executor, Reply::Text("never asked for".into()));
    let world = World::reading(llm, dir.path());
    let task = "Ines watered our plants. Please write her a thank-you note of two or three \
                sentences.";
    let run = world.run(config(task)).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.llm.calls(CallRole::Executor), 2);
    let told = world.told("That text has 4 sentences; the task asks for 3 at most");
    assert!(told.is_some(), "the count was said");
    assert_eq!(run.answer.as_deref(), Some(short));
}

/// The rule `word_limit_kept`, for a poem's lines: a limerick of four
/// lines is written again once, and the five-line one is the answer.
#[tokio::test]
async fn a_poem_whose_lines_are_not_its_forms_is_written_again_once() {
    let dir = tempfile::tempdir().unwrap();
    let four = "A robot who lived in a shed\nforgot every word that it read\nit polished its \
                gears\nfor thirty-one years";
    let five = format!("{four}\nthen went back to bed");
    let llm = worker()
        .push(CallRole::Executor, Reply::Text(four.into()))
        .push(CallRole::Executor, Reply::Text(five.clone()))
        .push(CallRole::Executor, Reply::Text("never asked for".into()));
    let world = World::reading(llm, dir.path());
    let run = world
        .run(config("Write a limerick about a forgetful robot."))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(world.llm.calls(CallRole::Executor), 2);
    assert!(world
        .told("That text has 4 lines; a limerick has 5.")
        .is_some());
    assert_eq!(run.answer.as_deref(), Some(five.as_str()));
}

/// Runs `task` where the router's model would say "web" (as it did) and
/// the writer answers `text`: the run must be planned in words by the
/// rules layer, without the router's call, and answered with `text`; its
/// classification's reason names the rule.
async fn in_words_by_rule(task: &str, text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker().push(CallRole::Executor, Reply::Text(text.into()));
    let world = World::reading(llm, dir.path());
    let run = world.run(config(task)).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let c = run.classification.unwrap();
    assert!(c.in_words && c.by == run_model::DecidedBy::Rules, "{c:?}");
    assert_eq!(world.llm.calls(CallRole::Classifier), 0, "no router call");
    assert_eq!(world.llm.calls(CallRole::Planner), 0);
    assert_eq!(run.answer.as_deref(), Some(text));
    c.reason
}

/// The rule `writing_by_its_verb`: a text asked for by its verb, and
/// nothing a tool does, is answered in words without the router's model
/// call (which, sampling, said "words" for a haiku one time and not the
/// next).
#[tokio::test]
async fn a_task_asking_by_its_verb_for_a_text_is_written_without_asking_the_router() {
    let reason = in_words_by_rule(
        "Draft a two-sentence note thanking the team for the launch",
        "Thank you all for the launch: it went out on time and without a hitch.",
    )
    .await;
    assert!(reason.contains("writing_by_its_verb"), "{reason}");
}

/// The rule `given_texts_written_about`: a summary of a short prose file
/// the person gave is one written step, with no tool, from the file's
/// whole text (Qwen2.5-Coder-1.5B copied the file's preview into
/// summary.txt and answered "A summary of the site visit details").
#[tokio::test]
async fn a_summary_of_a_given_prose_file_is_written_from_its_whole_text_with_no_tool() {
    let dir = tempfile::tempdir().unwrap();
    let summary = "The bay 2 roof leaks and a roofer comes on 20 October; the bay 4 charger \
                   trips its breaker.";
    let llm = worker().push(CallRole::Executor, Reply::Text(summary.into()));
    let world = World::reading(llm, dir.path());
    // Past the preview of 400 characters: the writer must see the end.
    let visit = format!(
        "Site visit, Harbour Road depot.\n{}\nNext steps: replace the bay 4 socket.\n",
        "The roof over bay 2 leaks in heavy rain. ".repeat(12)
    );
    world
        .host
        .put_file_holding("site_visit.txt", visit.as_bytes());
    let mut config = config("Summarise site_visit.txt in at most 50 words for the manager.");
    config.inputs = vec![run_model::InputFile {
        path: "site_visit.txt".into(),
        bytes: visit.len() as u64,
        preview: Some(visit[..400].to_string()),
    }];
    let run = world.run(config).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    let c = run.classification.unwrap();
    assert!(c.in_words && c.by == run_model::DecidedBy::Rules, "{c:?}");
    // Kept with the run: a restart reads the same files.
    assert_eq!(c.about, ["site_visit.txt"]);
    assert!(
        c.reason.contains("given_texts_written_about"),
        "{}",
        c.reason
    );
    assert_eq!(world.llm.calls(CallRole::Classifier), 0, "no router call");
    assert_eq!(world.llm.calls(CallRole::Planner), 0);
    let executor = world
        .llm
        .requests()
        .into_iter()
        .find(|r| r.role == CallRole::Executor)
        .unwrap();
    assert!(matches!(executor.shape, Shape::Text), "no tool offered");
    let brief = &executor.messages[1].content;
    assert!(
        brief.contains("replace the bay 4 socket") && brief.contains("<<<"),
        "the file's whole text: {brief}"
    );
    assert!(!brief.contains("read_file"), "{brief}");
    assert_eq!(run.answer.as_deref(), Some(summary));
}

/// The same rule, attacked through the file: a length the given text
/// states ("in at most 12 words", in a preview the task lists) is the
/// file's, not the person's, and never cuts the writer's answer.
#[tokio::test]
async fn a_length_inside_a_given_file_never_sets_the_answers_length() {
    let dir = tempfile::tempdir().unwrap();
    let summary = "Staff must reply within a day. \
                   Urgent mail from customers goes to the duty manager, who answers it first.";
    let llm = worker().push(CallRole::Executor, Reply::Text(summary.into()));
    let world = World::reading(llm, dir.path());
    let memo = "Memo. Answer every customer in at most 12 words when you can. Staff must \
                reply within a day. Urgent mail goes to the duty manager.\n";
    world.host.put_file_holding("memo.txt", memo.as_bytes());
    let mut config = config("Summarise memo.txt in one or two sentences.");
    config.inputs = vec![run_model::InputFile {
        path: "memo.txt".into(),
        bytes: memo.len() as u64,
        preview: Some(memo.into()),
    }];
    let run = world.run(config).await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert!(run.classification.is_some_and(|c| c.in_words));
    assert_eq!(run.answer.as_deref(), Some(summary), "not cut to 12 words");
}

/// The same rule, attacked: the given text cannot be read whole (the run's
/// code swapped a link or a named pipe in for it, which the host refuses
/// to read through). The writer never writes from the preview alone, and
/// the run ends with a reason that names the unread file.
#[tokio::test]
async fn a_given_text_that_cannot_be_read_is_never_written_about_from_its_preview() {
    let dir = tempfile::tempdir().unwrap();
    let world = World::reading(worker(), dir.path());
    // Listed, but the host will not read it.
    world.host.put_file("notes.txt", 900);
    let mut config = config("Summarise notes.txt in at most 40 words.");
    config.inputs = vec![run_model::InputFile {
        path: "notes.txt".into(),
        bytes: 900,
        preview: Some("The preview, the first lines only. ".repeat(8)),
    }];
    config.retry_delay_ms = 1;
    let _driving = world.start(config).await;
    // Tried again, then paused for a person, who can retry or skip it.
    let run = world
        .wait_run(|r| {
            matches!(
                r.state,
                RunState::Paused | RunState::Failed | RunState::Done
            )
        })
        .await;
    assert!(
        run.classification.as_ref().is_some_and(|c| c.in_words),
        "{:?}",
        run.classification
    );
    assert_eq!(
        world.llm.calls(CallRole::Executor),
        0,
        "nothing written from the preview"
    );
    assert_eq!(run.state, RunState::Paused, "{:?}", run.reason);
    let reason = run.reason.unwrap_or_default();
    assert!(
        reason.contains("could not be read") && reason.contains("retry or skip"),
        "{reason}"
    );
}

/// The same rule leaves a table to its tools: a summary of a CSV is
/// computed.
#[tokio::test]
async fn a_summary_of_a_given_table_keeps_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker().push_json(
        CallRole::Classifier,
        json!({"mode": "simple", "why": "one file"}),
    );
    let world = World::reading(llm, dir.path());
    let mut config = config("Summarise sales.csv in at most 50 words.");
    config.inputs = vec![run_model::InputFile {
        path: "sales.csv".into(),
        bytes: 40,
        preview: Some("region,units\nnorth,3\n".into()),
    }];
    let run = world.run(config).await;
    assert!(
        !run.classification.is_some_and(|c| c.in_words),
        "a table is data"
    );
    assert_eq!(world.llm.calls(CallRole::Planner), 1, "planned with tools");
}

/// The rule `known_answers_in_words`: a question of settled knowledge is
/// answered in words, not sent to the web by the router's model.
#[tokio::test]
async fn a_question_of_settled_knowledge_is_answered_in_words_without_the_web() {
    let reason = in_words_by_rule(
        "At sea level, at what temperature in degrees Celsius does pure water boil?",
        "Pure water boils at 100 °C at sea level.",
    )
    .await;
    assert!(reason.contains("known_answers_in_words"), "{reason}");
}

/// The rule `numbers_are_computed`: the router's model said "words" for a
/// count of primes; a task holding a number keeps its tools and is
/// planned, so a program counts.
#[tokio::test]
async fn a_task_holding_a_number_keeps_its_tools_when_the_router_says_words() {
    let dir = tempfile::tempdir().unwrap();
    let llm = worker().push_json(
        CallRole::Classifier,
        json!({"source": "words", "why": "known"}),
    );
    let world = World::reading(llm, dir.path());
    let run = world
        .run(config("How many prime numbers are there below 10000?"))
        .await;
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert!(!run.classification.unwrap().in_words);
    assert_eq!(
        world.llm.calls(CallRole::Planner),
        1,
        "planned, with its tools"
    );
}
