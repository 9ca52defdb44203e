//! One story against a real model, when `PLANBOARD_TEST_LLM_URL` names an
//! OpenAI-compatible endpoint (e.g. `../shared/tools/local-llm.sh`'s);
//! `PLANBOARD_TEST_LLM_MODEL` and `PLANBOARD_TEST_LLM_API_KEY` are optional.
//! Without it the test says it was skipped.

use std::sync::Arc;
use std::time::Duration;

use agent::llm::Protocol;
use agent::tools::{FileTools, ToolBox, Toolset};
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
