//! Measures the classifier against the labelled fixture and the model in
//! the environment (`PLANBOARD_LLM_*`, see the README):
//!
//! ```text
//! cargo run -p agent --bin classify-eval [--memories] [fixture.jsonl]
//! ```
//!
//! Prints each task's verdicts, then accuracy and the confusion matrix for
//! the model alone and for rules-then-model (what runs use).
//!
//! `--memories` measures what people's earlier decisions teach the
//! classifier. The fixture is split in two folds (alternate tasks of each
//! mode); every task of one fold is remembered as a person's mode choice
//! ("For the task «…», a person chose the emergent mode", the correction a
//! run leaves), and each task of the other fold is classified twice: with
//! no memory, and with the memories most like it recalled from the other
//! fold — never its own. `--taught-only` skips the first (to try a
//! prompt change in half the time). Recall here ranks by BM25 over the same search
//! terms the stores index ([`run_model::memory::terms`]), in memory, since
//! the agent has no database; the prompt section is the one runs use.

use std::sync::Arc;
use std::time::Instant;

use agent::call::Caller;
use agent::roles::classify::{by_model, by_rules};
use agent::{LlmConfig, OpenAiLlm};
use plan_engine::Mode;
use run_model::memory::{prompt_section, terms, Memory, MemoryKind, RECALLED};
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

/// A person's mode choice on a task, as the run leaves it in memory.
fn decision(case: &Labelled) -> Memory {
    Memory {
        id: uuid::Uuid::new_v4(),
        kind: MemoryKind::Correction,
        task: case.task.clone(),
        text: format!(
            "For the task «{}», a person chose the {} mode",
            case.task, case.mode
        ),
        run_id: None,
        plan_id: None,
        pinned: false,
        created_at: chrono::Utc::now(),
    }
}

/// The `RECALLED` memories most like `task` by BM25 over their tasks'
/// terms; memories sharing no term are not recalled.
fn recall(memories: &[Memory], task: &str) -> Vec<Memory> {
    let docs: Vec<Vec<String>> = memories.iter().map(|m| terms(&m.task)).collect();
    let n = docs.len() as f64;
    let average = docs.iter().map(Vec::len).sum::<usize>() as f64 / n.max(1.0);
    let query = terms(task);
    let mut scored: Vec<(f64, usize)> = docs
        .iter()
        .enumerate()
        .map(|(i, doc)| {
            let score: f64 = query
                .iter()
                .filter(|t| doc.contains(t))
                .map(|t| {
                    let having = docs.iter().filter(|d| d.contains(t)).count() as f64;
                    let idf = ((n - having + 0.5) / (having + 0.5) + 1.0).ln();
                    // terms are distinct per text, so the term frequency is 1
                    idf * 2.2 / (1.0 + 1.2 * (0.25 + 0.75 * doc.len() as f64 / average))
                })
                .sum();
            (score, i)
        })
        .filter(|(score, _)| *score > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored
        .into_iter()
        .take(RECALLED)
        .map(|(_, i)| memories[i].clone())
        .collect()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let with_memories = std::env::args().any(|a| a == "--memories");
    let taught_only = std::env::args().any(|a| a == "--taught-only");
    // `--top=N`: give the classifier only the N most similar memories.
    let top = std::env::args()
        .find_map(|a| {
            a.strip_prefix("--top=")
                .and_then(|n| n.parse::<usize>().ok())
        })
        .unwrap_or(RECALLED);
    let path = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
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
    if with_memories {
        return by_folds(&caller, &cases, taught_only, top).await;
    }
    let mut model_only = [[0u32; 3]; 3];
    let mut combined = [[0u32; 3]; 3];
    let started = Instant::now();
    let mut failures = 0;
    for case in &cases {
        let expected = Mode::from_wire(&case.mode).ok_or(format!("unknown mode {}", case.mode))?;
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

/// `--memories`: each fold classified without and with the other fold's
/// decisions recalled.
/// `taught_only`: skip the classification without memory (to try a prompt).
async fn by_folds(
    caller: &Caller,
    cases: &[Labelled],
    taught_only: bool,
    top: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    // alternate tasks of each mode: both folds hold every mode and language
    let mut seen = [0usize; 3];
    let mut fold = Vec::with_capacity(cases.len());
    for case in cases {
        let mode = Mode::from_wire(&case.mode).ok_or(format!("unknown mode {}", case.mode))?;
        fold.push(seen[index(mode)] % 2);
        seen[index(mode)] += 1;
    }
    let mut without = [[0u32; 3]; 3];
    let mut with = [[0u32; 3]; 3];
    let mut recalled_right = 0usize;
    let mut recalled_all = 0usize;
    let started = Instant::now();
    for (i, case) in cases.iter().enumerate() {
        let expected = Mode::from_wire(&case.mode).ok_or("unknown mode")?;
        let others: Vec<Memory> = cases
            .iter()
            .zip(&fold)
            .filter(|(_, f)| **f != fold[i])
            .map(|(c, _)| decision(c))
            .collect();
        let mut recalled = recall(&others, &case.task);
        recalled.truncate(top);
        recalled_all += recalled.len();
        recalled_right += recalled
            .iter()
            .filter(|m| m.text.ends_with(&format!("the {} mode", case.mode)))
            .count();
        let section = prompt_section(&recalled);
        let plain = if taught_only {
            Ok(expected)
        } else {
            by_model(caller, &case.task, "").await.map(|c| c.mode)
        };
        let taught = by_model(caller, &case.task, &section).await.map(|c| c.mode);
        let (plain, taught) = (
            plain.unwrap_or(Mode::Complex),
            taught.unwrap_or(Mode::Complex),
        );
        without[index(expected)][index(plain)] += 1;
        with[index(expected)][index(taught)] += 1;
        println!(
            "fold {} {:>8} without={:<8} with={:<8} ({} recalled)  {}",
            fold[i],
            expected.as_str(),
            plain.as_str(),
            taught.as_str(),
            recalled.len(),
            case.task
        );
    }
    if !taught_only {
        report("model alone, no memory", &without);
    }
    report("model with the other fold's decisions recalled", &with);
    println!(
        "\n{recalled_all} memories recalled in all, {recalled_right} of them for the task's own mode; {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
