//! The engine benchmark: a plan walked through the AgentScope dialect's
//! `call` with JSON arguments, as an LLM would drive it.
//!
//! For N = 10, 100, 1000 subtasks it measures
//! - `create_plan` (median time),
//! - the walk: `update_subtask_state(i, in_progress)` then
//!   `finish_subtask(i, outcome)` for every subtask (median time),
//! - 100 `revise_current_plan(add)` at the middle of the plan (median time),
//! - a hint before every step of the walk (2N + 1 hints, the last one before
//!   `finish_plan`): time, and mean and total size in cl100k tokens, for the
//!   bounded window (default) and, for N ≤ 100, the full-plan option.
//!
//! Run: `cargo bench -p plan-engine --bench walk`. Reference numbers for
//! AgentScope 1.0.21 on the same machine are printed alongside.

use std::hint::black_box;
use std::time::{Duration, Instant};

use chrono::TimeZone;
use plan_engine::{CallContext, Dialect, HintOptions, Lang, Workspace};
use serde_json::{json, Value};
use tiktoken_rs::CoreBPE;

const SESSION: &str = "bench";

fn ctx() -> CallContext {
    let now = chrono::Utc
        .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
        .single()
        .expect("valid time");
    CallContext::new(SESSION, "bench-agent", now, uuid::Uuid::from_u128(1))
}

/// Arguments as the model sends them: a JSON string, parsed inside `call`.
fn raw(args: Value) -> Value {
    Value::String(args.to_string())
}

fn create_args(n: usize) -> Value {
    let subtasks: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "name": format!("Subtask {i}: collect and analyse data"),
                "description": format!("Collect the data for item {i} and write a short analysis."),
                "expected_outcome": format!("A short analysis of item {i}"),
            })
        })
        .collect();
    json!({
        "name": format!("Benchmark plan with {n} subtasks"),
        "description": "Walk every subtask in order.",
        "expected_outcome": "Every subtask done",
        "subtasks": subtasks,
    })
}

fn call(ws: &mut Workspace, tool: &str, args: &Value, ctx: &CallContext) {
    let result = ws.call(Dialect::AgentScope, tool, args, ctx);
    assert!(result.ok, "{tool} failed: {}", result.text);
    black_box(result);
}

fn created(n: usize, ctx: &CallContext) -> Workspace {
    let mut ws = Workspace::new();
    call(&mut ws, "create_plan", &raw(create_args(n)), ctx);
    ws
}

/// Every call of the walk, prepared before the clock starts: two per
/// subtask, then `finish_plan`.
fn walk_calls(n: usize) -> Vec<(&'static str, Value)> {
    let mut calls = Vec::with_capacity(2 * n + 1);
    for i in 0..n {
        calls.push((
            "update_subtask_state",
            raw(json!({"subtask_idx": i, "state": "in_progress"})),
        ));
        calls.push((
            "finish_subtask",
            raw(json!({"subtask_idx": i, "subtask_outcome": format!("Analysis of item {i}: 3 findings.")})),
        ));
    }
    calls.push((
        "finish_plan",
        raw(json!({"state": "done", "outcome": "all done"})),
    ));
    calls
}

fn walk(
    ws: &mut Workspace,
    calls: &[(&'static str, Value)],
    ctx: &CallContext,
    mut before_each: impl FnMut(&Workspace),
) {
    for (tool, args) in calls {
        before_each(ws);
        call(ws, tool, args, ctx);
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time_runs(runs: usize, mut setup_and_run: impl FnMut() -> Duration) -> Duration {
    median((0..runs).map(|_| setup_and_run()).collect())
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

struct HintStats {
    hints: usize,
    mean_tokens: f64,
    total_tokens: usize,
    max_tokens: usize,
    time: Duration,
}

/// `version_aware`: the runtime passes the plan version of the hint it
/// showed last (`HintOptions::since_version`), as an agent loop can.
fn hint_stats(n: usize, full_plan: bool, version_aware: bool, bpe: &CoreBPE) -> HintStats {
    let mut opts = HintOptions {
        lang: Lang::En,
        dialect: Dialect::AgentScope,
        full_plan,
        ..HintOptions::default()
    };
    let mut texts = Vec::with_capacity(2 * n + 1);
    let ctx = ctx();
    let mut ws = created(n, &ctx);
    let mut time = Duration::ZERO;
    walk(&mut ws, &walk_calls(n), &ctx, |ws| {
        let started = Instant::now();
        let text = ws.hint(SESSION, &opts);
        time += started.elapsed();
        if version_aware {
            opts.since_version = ws.active_plan(SESSION).map(|p| p.version());
        }
        texts.push(text);
    });
    if std::env::var_os("SHOW_HINT").is_some() && n == 100 {
        println!(
            "---- hint before step 101 ----\n{}\n---- end ----",
            texts[101]
        );
    }
    let counts: Vec<usize> = texts.iter().map(|t| bpe.encode_ordinary(t).len()).collect();
    let total: usize = counts.iter().sum();
    HintStats {
        hints: counts.len(),
        mean_tokens: total as f64 / counts.len() as f64,
        total_tokens: total,
        max_tokens: counts.iter().copied().max().unwrap_or(0),
        time,
    }
}

fn main() {
    // `cargo test --benches` passes --bench too; only run when asked for real.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if std::env::var_os("WALK_ONLY").is_some() {
        // For profilers: the N = 1000 walk, many times, nothing else.
        let ctx = ctx();
        let calls = walk_calls(1000);
        for _ in 0..200 {
            let mut ws = created(1000, &ctx);
            walk(&mut ws, &calls, &ctx, |_| {});
        }
        return;
    }
    if std::env::var_os("WALK_SPLIT").is_some() {
        use plan_engine::{Command, Op, SubtaskId, SubtaskState};
        let ctx = ctx();
        let t = time_runs(11, || {
            let mut ws = created(1000, &ctx);
            let plan = ws.active_plan(SESSION).unwrap().clone();
            let mut plan = plan;
            let _ = &mut ws;
            let started = Instant::now();
            for i in 1..=1000u32 {
                let op = Op::SetSubtaskState {
                    id: SubtaskId(i),
                    state: SubtaskState::Done,
                    note: Some(format!("Analysis of item {i}: 3 findings.")),
                    start_next: true,
                };
                if i == 1 {
                    plan.execute(
                        &Command::from(Op::SetSubtaskState {
                            id: SubtaskId(1),
                            state: SubtaskState::InProgress,
                            note: None,
                            start_next: false,
                        }),
                        "a",
                        ctx.now,
                    )
                    .unwrap();
                }
                black_box(plan.execute(&Command::from(op), "a", ctx.now).unwrap());
            }
            started.elapsed()
        });
        println!("engine only (1000 finishes with start_next): {}", ms(t));
        let t = time_runs(11, || {
            let started = Instant::now();
            for i in 0..2001u32 {
                let v: serde_json::Value = serde_json::from_str(&format!("{{\"subtask_idx\": {i}, \"subtask_outcome\": \"Analysis of item {i}: 3 findings.\"}}")).unwrap();
                black_box(v);
            }
            started.elapsed()
        });
        println!("2001 arg format+parse: {}", ms(t));
        return;
    }
    let bpe = tiktoken_rs::cl100k_base().expect("cl100k tokenizer");
    let reference = [
        (10, 473.0, 9_930.0),
        (100, 1_789.0, 359_490.0),
        (1000, 14_840.0, 29_700_000.0),
    ];
    println!("planboard engine benchmark (AgentScope dialect, JSON arguments through `call`)");
    for (n, as_mean, as_total) in reference {
        let runs = if n >= 1000 { 11 } else { 31 };
        let ctx = ctx();
        let create_call = raw(create_args(n));
        let create = time_runs(runs, || {
            let mut ws = Workspace::new();
            let started = Instant::now();
            call(&mut ws, "create_plan", &create_call, &ctx);
            started.elapsed()
        });
        let calls = walk_calls(n);
        let walk_time = time_runs(runs, || {
            let mut ws = created(n, &ctx);
            let started = Instant::now();
            walk(&mut ws, &calls, &ctx, |_| {});
            started.elapsed()
        });
        let adds: Vec<Value> = (0..100)
            .map(|k| raw(json!({"subtask_idx": (n + k) / 2, "action": "add", "subtask": {"name": format!("Inserted {k}"), "expected_outcome": "x"}})))
            .collect();
        let revise = time_runs(runs, || {
            let mut ws = created(n, &ctx);
            let started = Instant::now();
            for args in &adds {
                call(&mut ws, "revise_current_plan", args, &ctx);
            }
            started.elapsed()
        });
        let window = hint_stats(n, false, false, &bpe);
        let aware = hint_stats(n, false, true, &bpe);
        println!("\nN = {n}");
        println!("  create_plan                      {}", ms(create));
        println!(
            "  walk (2N calls + finish_plan)    {}   ({:.2} µs per call)",
            ms(walk_time),
            walk_time.as_secs_f64() * 1e6 / (2 * n + 1) as f64
        );
        println!("  100 adds at the middle           {}", ms(revise));
        println!(
            "  hints, window (default): {} hints, mean {:.0} tokens, max {}, total {} tokens, {} to render all ({:.1}% of AgentScope's total {:.0}; AgentScope mean {:.0})",
            window.hints,
            window.mean_tokens,
            window.max_tokens,
            window.total_tokens,
            ms(window.time),
            window.total_tokens as f64 * 100.0 / as_total,
            as_total,
            as_mean
        );
        println!(
            "  hints, window + since_version:  mean {:.0} tokens, total {} tokens ({:.1}% of AgentScope's total)",
            aware.mean_tokens,
            aware.total_tokens,
            aware.total_tokens as f64 * 100.0 / as_total
        );
        if n <= 100 {
            let full = hint_stats(n, true, false, &bpe);
            println!(
                "  hints, full plan (option): mean {:.0} tokens, total {} tokens",
                full.mean_tokens, full.total_tokens
            );
        }
    }
}
