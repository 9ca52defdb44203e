//! Measures the classifier against the labelled fixture and the model in
//! the environment (`PLANBOARD_LLM_*`, see the README):
//!
//! ```text
//! cargo run -p agent --bin classify-eval [fixture.jsonl]
//! ```
//!
//! Prints each task's verdicts, then accuracy and the confusion matrix for
//! the model alone and for rules-then-model (what runs use).

use std::sync::Arc;
use std::time::Instant;

use agent::call::Caller;
use agent::classify::{by_model, by_rules};
use agent::{LlmConfig, OpenAiLlm};
use plan_engine::Mode;
use serde::Deserialize;

#[derive(Deserialize)]
struct Labelled {
    mode: String,
    task: String,
}

const MODES: [Mode; 3] = [Mode::Simple, Mode::Complex, Mode::Emergent];

fn index(mode: Mode) -> usize {
    MODES.iter().position(|m| *m == mode).unwrap_or(0)
}

fn report(title: &str, matrix: &[[u32; 3]; 3]) {
    let total: u32 = matrix.iter().flatten().sum();
    let right: u32 = (0..3).map(|i| matrix[i][i]).sum();
    println!(
        "\n{title}: {right}/{total} right ({:.1} %)",
        100.0 * f64::from(right) / f64::from(total.max(1))
    );
    println!(
        "{:>10} | {:>8} {:>8} {:>8}   (rows: expected, columns: answered)",
        "", "simple", "complex", "emergent"
    );
    for (i, row) in matrix.iter().enumerate() {
        println!(
            "{:>10} | {:>8} {:>8} {:>8}",
            MODES[i].as_str(),
            row[0],
            row[1],
            row[2]
        );
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/classify.jsonl").into());
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let cases: Vec<Labelled> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{path}: {e}: {l}")))
        .collect::<Result<_, _>>()?;
    let config = LlmConfig::from_vars(|n| std::env::var(n).ok())?
        .ok_or("no model configured: set PLANBOARD_LLM_MODEL (and PLANBOARD_LLM_BASE_URL, PLANBOARD_LLM_API_KEY)")?;
    println!(
        "model {} at {}, {} tasks",
        config.model,
        config.base_url,
        cases.len()
    );
    let llm = Arc::new(OpenAiLlm::new(config.clone())?);
    let caller = Caller::standalone(llm, 1, config.protocol);
    let mut model_only = [[0u32; 3]; 3];
    let mut combined = [[0u32; 3]; 3];
    let started = Instant::now();
    let mut failures = 0;
    for case in &cases {
        let expected = Mode::parse(&case.mode).ok_or(format!("unknown mode {}", case.mode))?;
        let t = Instant::now();
        let model = match by_model(&caller, &case.task, "").await {
            Ok(c) => c.mode,
            Err(e) => {
                failures += 1;
                println!("  model failed on {:?}: {e}", case.task);
                Mode::Complex
            }
        };
        let rules = by_rules(&case.task).map(|c| c.mode);
        let used = rules.unwrap_or(model);
        model_only[index(expected)][index(model)] += 1;
        combined[index(expected)][index(used)] += 1;
        println!(
            "{} {:>8} model={:<8} used={:<8} {:>5} ms  {}",
            if used == expected { "✓" } else { "✗" },
            expected.as_str(),
            model.as_str(),
            used.as_str(),
            t.elapsed().as_millis(),
            case.task
        );
    }
    report("model alone", &model_only);
    report("rules, then the model (what runs use)", &combined);
    let spent = caller.spent();
    println!(
        "\n{} calls ({} failed), {} prompt + {} completion tokens, {:.1} s in all",
        spent.llm_calls,
        failures,
        spent.prompt_tokens,
        spent.completion_tokens,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
