//! One story against a real model, when `PLANBOARD_TEST_LLM_URL` names an
//! OpenAI-compatible endpoint (e.g. `../shared/tools/local-llm.sh`'s);
//! `PLANBOARD_TEST_LLM_MODEL` and `PLANBOARD_TEST_LLM_API_KEY` are optional.
//! Without it the test says it was skipped.

use std::sync::Arc;
use std::time::Duration;

use agent::llm::Protocol;
use agent::tools::{files::FileTools, ToolBox, Toolset};
use agent::{Agent, LlmConfig, MemoryHost, ModeChoice, OpenAiLlm, RunConfig, RunEntry, RunState};

#[tokio::test(flavor = "multi_thread")]
async fn a_real_model_plans_and_runs_a_small_task_with_the_file_tools() {
    let Ok(url) = std::env::var("PLANBOARD_TEST_LLM_URL") else {
        println!("skipped: set PLANBOARD_TEST_LLM_URL to run this story against a real model");
        return;
    };
    let config = LlmConfig {
        base_url: url.trim_end_matches('/').to_string(),
        api_key: std::env::var("PLANBOARD_TEST_LLM_API_KEY").unwrap_or_default(),
        model: std::env::var("PLANBOARD_TEST_LLM_MODEL")
            .unwrap_or_else(|_| "qwen2.5-coder-1.5b-instruct".into()),
        classifier_model: None,
        embedding_model: None,
        timeout: Duration::from_secs(300),
        concurrency: 2,
        protocol: Protocol::Auto,
        stream: true,
    };
    let workspace = tempfile::tempdir().unwrap();
    let files: Arc<dyn ToolBox> = Arc::new(FileTools::new(workspace.path()).unwrap());
    let host = MemoryHost::new();
    let agent = Agent::new(host.clone(), Arc::new(OpenAiLlm::new(config).unwrap()), 2)
        .with_tools(move |_| Toolset::new(vec![files.clone()]));
    let record = agent
        .start(
            RunConfig {
                task: "Compute 12345 + 67890 and write the result into a file named sum.txt."
                    .into(),
                mode: ModeChoice::Auto,
                approval_required: false,
                ..RunConfig::default()
            },
            "test",
        )
        .await
        .unwrap();
    let id = record.id;
    let run = tokio::time::timeout(Duration::from_secs(900), agent.drive(record))
        .await
        .expect("the run finishes within 15 minutes");
    let plan = host.only_plan().unwrap();
    println!(
        "run: {:?} ({:?}), mode {:?}",
        run.state, run.reason, run.classification
    );
    for s in plan.subtasks() {
        println!(
            "  #{} {} [{}] → {:?}",
            s.id().0,
            s.name(),
            s.state().as_str(),
            s.outcome()
        );
    }
    for entry in host.entries(id) {
        match entry {
            RunEntry::LlmCall(c) => println!(
                "  llm {} attempt {} {} ms, {}+{} tokens, finish {:?}, error {:?}",
                c.role,
                c.attempt,
                c.latency_ms,
                c.prompt_tokens,
                c.completion_tokens,
                c.finish_reason,
                c.error
            ),
            RunEntry::ToolCall {
                name, ok, result, ..
            } => println!("  tool {name} ok={ok}: {result}"),
            other => println!("  {other:?}"),
        }
    }
    println!("answer: {:?}", run.answer);
    println!(
        "sum.txt: {:?}",
        std::fs::read_to_string(workspace.path().join("sum.txt")).ok()
    );
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    // The replies streamed: more pieces than calls, and the answer's pieces
    // make up the answer.
    let deltas = host.deltas(id);
    let calls = host
        .entries(id)
        .iter()
        .filter(|e| matches!(e, RunEntry::LlmCall(_)))
        .count();
    let pieces = deltas.iter().filter(|d| !d.done).count();
    println!("streamed: {pieces} pieces over {calls} calls");
    assert!(pieces > calls, "{pieces} pieces, {calls} calls");
    let answer: String = deltas
        .iter()
        .filter(|d| d.role == agent::run::CallRole::Compiler)
        .map(|d| d.text.as_str())
        .collect();
    assert_eq!(Some(answer), run.answer);
}

/// The model's config, when a real model is named (`None`: skip).
fn real_model() -> Option<LlmConfig> {
    let url = std::env::var("PLANBOARD_TEST_LLM_URL").ok()?;
    Some(LlmConfig {
        base_url: url.trim_end_matches('/').to_string(),
        api_key: std::env::var("PLANBOARD_TEST_LLM_API_KEY").unwrap_or_default(),
        model: std::env::var("PLANBOARD_TEST_LLM_MODEL")
            .unwrap_or_else(|_| "qwen2.5-coder-1.5b-instruct".into()),
        classifier_model: None,
        embedding_model: None,
        timeout: Duration::from_secs(300),
        concurrency: 2,
        protocol: Protocol::Auto,
        stream: true,
    })
}

/// Everything the run did, for the note that reports it.
fn print_run(host: &MemoryHost, id: agent::RunId, run: &agent::RunRecord) {
    println!(
        "run: {:?} ({:?}), mode {:?}",
        run.state, run.reason, run.classification
    );
    if let Some(plan) = host.only_plan() {
        for s in plan.subtasks() {
            println!(
                "  #{} {} [{}] after {:?} → {:?}",
                s.id().0,
                s.name(),
                s.state().as_str(),
                s.dependencies(),
                s.outcome()
            );
        }
    }
    for entry in host.entries(id) {
        match entry {
            RunEntry::LlmCall(c) => println!(
                "  llm {} attempt {} {} ms, {}+{} tokens, error {:?}",
                c.role, c.attempt, c.latency_ms, c.prompt_tokens, c.completion_tokens, c.error
            ),
            RunEntry::ToolCall {
                name,
                ok,
                arguments,
                result,
                ..
            } => println!("  tool {name} ok={ok} {arguments}\n    → {result}"),
            other => println!("  {other:?}"),
        }
    }
    println!("answer: {:?}", run.answer);
}

/// Tasks whose answer needs a computation the model should not do in its
/// head: each names the file and asks for `run_python`.
const COMPUTE_TASKS: [(&str, &str, &str); 3] = [
    (
        "sales.csv",
        "region,amount\nnorth,120\nsouth,75\nnorth,30\neast,210\nsouth,25\n",
        "Use run_python to compute the total amount per region in sales.csv, then write a short report with the totals to report.md.",
    ),
    (
        "scores.csv",
        "student,score\nana,81\nben,67\ncai,94\ndee,72\neve,88\nfay,59\n",
        "Compute the mean and the median score in scores.csv with run_python and write them to report.md.",
    ),
    (
        "orders.csv",
        "order,quantity,unit_price\n1,3,19.99\n2,12,4.50\n3,1,249.00\n4,7,12.25\n",
        "Find the revenue of every order in orders.csv (quantity times unit price) and their sum, using run_python, and write them to report.md.",
    ),
];

#[tokio::test(flavor = "multi_thread")]
async fn a_real_model_totals_an_uploaded_csv_with_run_python_and_writes_a_report() {
    let Some(config) = real_model() else {
        println!("skipped: set PLANBOARD_TEST_LLM_URL to run this story against a real model");
        return;
    };
    let sandbox = match agent::tools::sandbox::Sandbox::detect(Default::default()) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            println!("skipped: {e}");
            return;
        }
    };
    let mut used = 0;
    let mut done = 0;
    for (file, content, task) in COMPUTE_TASKS {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join(file), content).unwrap();
        let root = workspace.path().to_path_buf();
        let host = MemoryHost::new();
        let code_sandbox = sandbox.clone();
        let agent = Agent::new(
            host.clone(),
            Arc::new(OpenAiLlm::new(config.clone()).unwrap()),
            2,
        )
        .with_tools(move |_| {
            let files: Arc<dyn ToolBox> = Arc::new(FileTools::new(&root).unwrap());
            let code: Arc<dyn ToolBox> = Arc::new(
                agent::tools::sandbox::code::CodeTools::new(code_sandbox.clone(), &root).unwrap(),
            );
            Toolset::new(vec![files, code])
        });
        let record = agent
            .start(
                RunConfig {
                    task: task.into(),
                    mode: ModeChoice::Simple,
                    approval_required: false,
                    inputs: vec![agent::run::InputFile {
                        path: file.into(),
                        bytes: content.len() as u64,
                        preview: Some(content.into()),
                    }],
                    ..RunConfig::default()
                },
                "test",
            )
            .await
            .unwrap();
        let id = record.id;
        // A run that asks a person (nobody here answers) or waits on one
        // is stopped after 5 minutes and reported as it stands.
        let mut driving = tokio::spawn(async move { agent.drive(record).await });
        let run = match tokio::time::timeout(Duration::from_secs(300), &mut driving).await {
            Ok(run) => run.unwrap(),
            Err(_) => {
                driving.abort();
                host.run(id).unwrap()
            }
        };
        print_run(&host, id, &run);
        let report = std::fs::read_to_string(workspace.path().join("report.md")).ok();
        println!("report.md: {report:?}");
        let used_python = host.entries(id).iter().any(
            |e| matches!(e, RunEntry::ToolCall { name, ok: true, .. } if name == "run_python"),
        );
        println!(
            "{file}: run_python used: {used_python}, state {:?}",
            run.state
        );
        used += usize::from(used_python);
        done += usize::from(run.state == RunState::Done);
    }
    println!(
        "runs that ran code (run_python or run_shell): {used} of {}; done: {done}",
        COMPUTE_TASKS.len()
    );
    assert!(done > 0, "no run finished");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_models_emergent_plan_fits_the_emergent_shape() {
    let Some(config) = real_model() else {
        println!("skipped: set PLANBOARD_TEST_LLM_URL to run this story against a real model");
        return;
    };
    let rounds: usize = std::env::var("PLANBOARD_TEST_LLM_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let tasks = [
        "Explore why our nightly builds got slower this month and find the cause.",
        "Investigate which of our three suppliers is the most reliable; we do not know yet what data we have.",
        "Research how other teams onboard new engineers and propose what we could try.",
    ];
    let mut planned = 0;
    for i in 0..rounds {
        let host = MemoryHost::new();
        let agent = Agent::new(
            host.clone(),
            Arc::new(OpenAiLlm::new(config.clone()).unwrap()),
            2,
        );
        let record = agent
            .start(
                RunConfig {
                    task: tasks[i % tasks.len()].into(),
                    mode: ModeChoice::Emergent,
                    approval_required: true,
                    ..RunConfig::default()
                },
                "test",
            )
            .await
            .unwrap();
        let id = record.id;
        let driving = tokio::spawn(async move { agent.drive(record).await });
        // Planning is done when the plan waits for approval, or the run failed.
        let mut state = RunState::Classifying;
        for _ in 0..6000 {
            state = host.run(id).map_or(state, |r| r.state);
            if matches!(state, RunState::AwaitingApproval | RunState::Failed) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        driving.abort();
        let repaired: Vec<String> = host
            .entries(id)
            .iter()
            .filter_map(|e| match e {
                RunEntry::PlanRepaired { repairs } => Some(repairs.join("; ")),
                _ => None,
            })
            .collect();
        let todos = host.only_plan().map_or(0, |p| p.subtasks().len());
        // Which TODOs the model said wait for which (seed 004's
        // `dependencies`).
        if let Some(plan) = host.only_plan() {
            for s in plan.subtasks() {
                let after: Vec<u32> = s.dependencies().iter().map(|d| d.0).collect();
                println!("  #{} {} after {after:?}", s.id().0, s.name());
            }
        }
        println!(
            "emergent run {i}: {state:?}, {todos} TODOs, repairs {repaired:?}, reason {:?}",
            host.run(id).and_then(|r| r.reason)
        );
        if state == RunState::AwaitingApproval {
            planned += 1;
        }
    }
    println!("emergent runs that reached approval: {planned} of {rounds}");
    assert_eq!(planned, rounds);
}

/// A whole emergent run against the real model (approval off, no work
/// tools, at most 40 model calls): what the TODO updates decided (added,
/// dropped, revised, blocked), for the note that reports it.
#[tokio::test(flavor = "multi_thread")]
async fn a_real_models_emergent_run_keeps_its_todo_list() {
    let Some(config) = real_model() else {
        println!("skipped: set PLANBOARD_TEST_LLM_URL to run this story against a real model");
        return;
    };
    let host = MemoryHost::new();
    let agent = Agent::new(host.clone(), Arc::new(OpenAiLlm::new(config).unwrap()), 2);
    let mut c = RunConfig {
        task: "Explore why our nightly builds got slower this month and find the cause.".into(),
        mode: ModeChoice::Emergent,
        approval_required: false,
        tools: Some(Vec::new()),
        ..RunConfig::default()
    };
    c.budget.max_llm_calls = 40;
    let record = agent.start(c, "test").await.unwrap();
    let id = record.id;
    let driving = tokio::spawn(async move { agent.drive(record).await });
    // Until it ends, or pauses (its budget: a paused run waits for a
    // person, so `drive` would not return), at most 15 minutes.
    let mut run = host.run(id).unwrap();
    let mut most_at_once = 0;
    for _ in 0..9_000 {
        run = host.run(id).unwrap_or(run);
        if matches!(
            run.state,
            RunState::Done | RunState::Failed | RunState::Paused | RunState::Cancelled
        ) {
            break;
        }
        if let Some(p) = host.only_plan() {
            most_at_once = most_at_once.max(p.in_progress().len());
        }
        // A question to a person, and nothing else to do.
        if host.only_plan().is_some_and(|p| {
            p.count(plan_engine::SubtaskState::Blocked) > 0
                && p.in_progress().is_empty()
                && p.ready().is_empty()
        }) {
            println!("the run waits for a person's answer");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    driving.abort();
    println!("TODOs in progress at once (sampled every 100 ms): at most {most_at_once}");
    for e in host.entries(id) {
        if let RunEntry::PlanAdjusted { reason, changes } = e {
            println!("update: {changes} changes: {reason}");
        }
    }
    print_run(&host, id, &run);
    let Some(plan) = host.only_plan() else {
        return;
    };
    let blocked = plan
        .subtasks()
        .iter()
        .filter(|s| s.state() == plan_engine::SubtaskState::Blocked)
        .count();
    println!(
        "{} TODOs, {blocked} blocked, {} calls",
        plan.subtasks().len(),
        run.spent.llm_calls
    );
}

/// Seed 002's batches against the real model: an 8-item catalog in
/// batches of 3 (approval off, no work tools): how many batches, what the
/// batch planner's answers needed mending, and the coverage it ended with.
#[tokio::test(flavor = "multi_thread")]
async fn a_real_model_goes_through_a_catalog_in_batches() {
    let Some(config) = real_model() else {
        println!("skipped: set PLANBOARD_TEST_LLM_URL to run this story against a real model");
        return;
    };
    let host = MemoryHost::new();
    let catalog = "get_user(id): returns a user's name and email\n\
        list_orders(user_id): the user's orders, newest first\n\
        create_order(user_id, items): places an order, returns its id\n\
        cancel_order(order_id): cancels an open order\n\
        get_invoice(order_id): the invoice as PDF bytes\n\
        refund(order_id, amount): refunds part of an order\n\
        ping(): answers pong\n\
        search_products(query): products matching the words\n";
    host.put_input("tools.txt", catalog.as_bytes().to_vec());
    let agent = Agent::new(host.clone(), Arc::new(OpenAiLlm::new(config).unwrap()), 2);
    let record = agent
        .start(
            RunConfig {
                task: "For every API tool in tools.txt, write one test case: the call with sample \
                       arguments and the answer you expect."
                    .into(),
                approval_required: false,
                batches: Some(run_model::Batching {
                    input: "tools.txt".into(),
                    size: 3,
                }),
                budget: agent::Budget {
                    max_llm_calls: 60,
                    ..agent::Budget::default()
                },
                ..RunConfig::default()
            },
            "test",
        )
        .await
        .unwrap();
    let id = record.id;
    let driving = tokio::spawn(async move { agent.drive(record).await });
    // Until the run ends or waits for a person (a question, a stuck
    // subtask, the budget), at most 20 minutes; what it did is printed.
    for _ in 0..2400 {
        let state = host.run(id).map(|r| r.state);
        if state.is_some_and(|s| s.is_finished() || s == RunState::Paused) {
            break;
        }
        // A question to a person, and nothing else to do.
        let waiting = host.only_plan().is_some_and(|p| {
            p.count(plan_engine::SubtaskState::Blocked) > 0
                && p.in_progress().is_empty()
                && p.ready().is_empty()
        });
        if waiting {
            println!("the run waits for a person's answer");
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    driving.abort();
    let run = host.run(id).unwrap();
    print_run(&host, id, &run);
    let repairs = host
        .entries(id)
        .iter()
        .filter(|e| matches!(e, RunEntry::PlanRepaired { .. }))
        .count();
    let progress = run.batches.clone().unwrap_or_default();
    println!(
        "batches: {} planned, {} batch answers mended, {} of {} items covered ({} done, {} given up), {} failed attempts; run {:?}",
        progress.batch,
        repairs,
        progress.done_count() + progress.given_up.len(),
        progress.total,
        progress.done_count(),
        progress.given_up.len(),
        progress.failed_attempts,
        run.state
    );
    assert_eq!(run.state, RunState::Done, "{:?}", run.reason);
    assert_eq!(progress.done_count() + progress.given_up.len(), 8);
}

/// The real model's emergent planner and TODO updates, around an executor
/// that is scripted: TODO #1 fails every attempt ("the site answers 403",
/// recovery gives up), every other TODO completes. What the update after
/// the failure decides (a way around it or nothing), for the note that
/// reports it. Few real calls: the plan and the updates.
#[tokio::test(flavor = "multi_thread")]
async fn a_real_models_emergent_update_after_a_failed_todo() {
    let Some(config) = real_model() else {
        println!("skipped: set PLANBOARD_TEST_LLM_URL to run this story against a real model");
        return;
    };
    struct Hybrid {
        real: OpenAiLlm,
    }
    #[async_trait::async_trait]
    impl agent::Llm for Hybrid {
        async fn chat(
            &self,
            request: &agent::llm::ChatRequest,
        ) -> Result<agent::llm::ChatReply, agent::llm::LlmError> {
            use agent::llm::{CallRole, Shape};
            let text = |content: String| agent::llm::ChatReply {
                content,
                calls: Vec::new(),
                finish_reason: Some("stop".into()),
                usage: None,
                model: "scripted".into(),
            };
            let scripted = |value: serde_json::Value| text(value.to_string());
            match request.role {
                CallRole::Planner => self.real.chat(request).await,
                CallRole::Adapter
                    if matches!(
                        &request.shape,
                        Shape::Json {
                            name: "todo_update",
                            ..
                        }
                    ) =>
                {
                    let reply = self.real.chat(request).await;
                    println!(
                        "update asked:\n{}\nanswered: {:?}",
                        request.messages[1].content,
                        reply.as_ref().map(|r| r.content.clone())
                    );
                    reply
                }
                CallRole::Adapter => Ok(scripted(serde_json::json!({
                    "decision": "give_up", "reason": "only a person can get past the 403",
                    "name": "", "description": ""}))),
                CallRole::Executor => {
                    let first = request.messages.get(1).is_some_and(|m| {
                        m.content.lines().any(|l| l.starts_with("Your subtask #1:"))
                    });
                    Ok(scripted(if first {
                        serde_json::json!({"action": "fail", "reason": "the site answers 403 Forbidden to every request"})
                    } else {
                        serde_json::json!({"action": "complete", "result": "done: notes written"})
                    }))
                }
                CallRole::Compiler => Ok(text("the answer".into())),
                CallRole::Classifier => unreachable!("the mode is forced"),
                CallRole::Checker => Err(agent::llm::LlmError::new(
                    agent::llm::ErrorClass::BadRequest,
                    "no check is scripted",
                )),
            }
        }
        fn model(&self, role: agent::llm::CallRole) -> String {
            self.real.model(role)
        }
    }
    let host = MemoryHost::new();
    let llm = Hybrid {
        real: OpenAiLlm::new(config).unwrap(),
    };
    let agent = Agent::new(host.clone(), Arc::new(llm), 2);
    let mut c = RunConfig {
        task: "Find out what our vendor's public price page says about volume discounts.".into(),
        mode: ModeChoice::Emergent,
        approval_required: false,
        tools: Some(Vec::new()),
        max_attempts: 1,
        ..RunConfig::default()
    };
    c.budget.max_llm_calls = 20;
    let record = agent.start(c, "test").await.unwrap();
    let id = record.id;
    let driving = tokio::spawn(async move { agent.drive(record).await });
    let mut run = host.run(id).unwrap();
    for _ in 0..9_000 {
        run = host.run(id).unwrap_or(run);
        if matches!(
            run.state,
            RunState::Done | RunState::Failed | RunState::Paused | RunState::Cancelled
        ) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    driving.abort();
    for e in host.entries(id) {
        if let RunEntry::PlanAdjusted { reason, changes } = e {
            println!("update: {changes} changes: {reason}");
        }
    }
    print_run(&host, id, &run);
}
