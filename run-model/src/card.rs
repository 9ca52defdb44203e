//! The card a person reads before approving a run's plan: the guarded
//! tools its steps will call (which the person may grant for the run at
//! the same time), what is wrong with the plan ([`plan_checks`]), and what
//! it will likely cost ([`forecast`]), with how often such forecasts
//! held ([`accuracy`]).

use plan_engine::{Mode, Plan, SubtaskId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::{Budget, ToolPolicy};
use crate::money::Price;
use crate::record::Spent;

/// A tool that asks a person before each call, and the steps that will
/// call it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GuardedTool {
    pub tool: String,
    pub policy: ToolPolicy,
    /// The steps that name it (their `tool`, else their words), in plan
    /// order.
    pub steps: Vec<SubtaskId>,
}

/// The offered tool a step is to use: its `tool` when offered, else the
/// first offered tool its words (name, description, expected outcome)
/// name, as the executor reads it.
pub fn step_tool<'a>(step: &plan_engine::Subtask, offered: &'a [String]) -> Option<&'a str> {
    if let Some(tool) = step.tool() {
        if let Some(name) = offered.iter().find(|name| *name == tool) {
            return Some(name.as_str());
        }
    }
    let text = format!(
        "{} {} {}",
        step.name(),
        step.description(),
        step.expected_outcome()
    );
    offered
        .iter()
        .map(String::as_str)
        .find(|name| text.contains(name))
}

/// The tools of `offered` whose `policy` asks (`ask`) and that a step of
/// `plan` names, each with those steps, in the order first named.
pub fn guarded_tools(
    plan: &Plan,
    offered: &[String],
    policy: impl Fn(&str) -> ToolPolicy,
) -> Vec<GuardedTool> {
    let mut out: Vec<GuardedTool> = Vec::new();
    for step in plan.subtasks() {
        let Some(tool) = step_tool(step, offered) else {
            continue;
        };
        let policy = policy(tool);
        if policy != ToolPolicy::Ask {
            continue;
        }
        match out.iter_mut().find(|g| g.tool == tool) {
            Some(guarded) => guarded.steps.push(step.id()),
            None => out.push(GuardedTool {
                tool: tool.to_string(),
                policy,
                steps: vec![step.id()],
            }),
        }
    }
    out
}

plan_engine::wire_enum! {
    /// What a plan check found.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum PlanCheckKind: "plan check (unconnected, missing_file, duplicate, no_outcome or tool_not_allowed)" {
        /// Steps of a complex plan that depend on nothing and feed nothing.
        Unconnected = "unconnected",
        /// A step reads a file neither given nor written by an earlier step.
        MissingFile = "missing_file",
        /// Steps that say the same (the same words).
        Duplicate = "duplicate",
        /// Steps without an expected outcome.
        NoOutcome = "no_outcome",
        /// A step names a tool the run may not use.
        ToolNotAllowed = "tool_not_allowed",
    }
}

/// One thing wrong with a plan, as a sentence on the card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanCheck {
    pub kind: PlanCheckKind,
    /// The steps it is about, in plan order.
    pub steps: Vec<SubtaskId>,
    /// The file read (`missing_file`) or the tool named
    /// (`tool_not_allowed`).
    pub what: Option<String>,
    /// The sentence, in English (the API's language).
    pub text: String,
}

/// Words before a file name that say a step reads it.
const READ_WORDS: &[&str] = &[
    "read", "reads", "reading", "open", "opens", "opening", "load", "loads", "loading", "parse",
    "parses", "parsing",
];

/// `#1, #3`.
fn step_list(steps: &[SubtaskId]) -> String {
    steps
        .iter()
        .map(|s| format!("#{}", s.0))
        .collect::<Vec<_>>()
        .join(", ")
}

impl PlanCheck {
    /// The sentence in English, or in Chinese.
    pub fn sentence(&self, chinese: bool) -> String {
        let steps = step_list(&self.steps);
        let what = self.what.as_deref().unwrap_or_default();
        match (self.kind, chinese) {
            (PlanCheckKind::Unconnected, false) => format!(
                "{steps} depend on nothing and nothing depends on them: in a complex plan, say \
                 what each needs or what needs it."
            ),
            (PlanCheckKind::Unconnected, true) => format!(
                "{steps} 既不依赖其他步骤，也没有步骤依赖它们：在复杂计划中，请说明它们需要什么或被什么需要。"
            ),
            (PlanCheckKind::MissingFile, false) => format!(
                "{steps} reads {what}, which is neither among the run's files nor written by \
                 an earlier step."
            ),
            (PlanCheckKind::MissingFile, true) => format!(
                "{steps} 读取 {what}，但它既不在运行的文件中，也不是由之前的步骤写出的。"
            ),
            (PlanCheckKind::Duplicate, false) => format!(
                "{steps} say the same (the same words): one of them is likely not needed."
            ),
            (PlanCheckKind::Duplicate, true) => {
                format!("{steps} 内容相同（用词相同）：其中一个很可能是多余的。")
            }
            (PlanCheckKind::NoOutcome, false) => format!(
                "{steps} have no expected outcome: say what each should produce, so its result \
                 can be judged."
            ),
            (PlanCheckKind::NoOutcome, true) => {
                format!("{steps} 没有预期结果：请说明每一步应产出什么，以便评判结果。")
            }
            (PlanCheckKind::ToolNotAllowed, false) => {
                format!("{steps} calls {what}, which this run may not use.")
            }
            (PlanCheckKind::ToolNotAllowed, true) => {
                format!("{steps} 调用 {what}，但本次运行不能使用它。")
            }
        }
    }

    fn new(kind: PlanCheckKind, steps: Vec<SubtaskId>, what: Option<String>) -> PlanCheck {
        let mut check = PlanCheck {
            kind,
            steps,
            what,
            text: String::new(),
        };
        check.text = check.sentence(false);
        check
    }
}

/// A word that names a file: a stem and an extension of 2 to 5 letters
/// and digits starting with a letter (`sales.csv`, `out/report.md`), not
/// an address or a number (`1.5`, `e.g`).
fn file_name(word: &str) -> Option<&str> {
    let word =
        word.trim_matches(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')));
    let word = word.trim_end_matches('.');
    if word.contains("://") || word.starts_with('/') {
        return None;
    }
    let (stem, ext) = word.rsplit_once('.')?;
    let ext_ok = (2..=5).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && ext.starts_with(|c: char| c.is_ascii_alphabetic());
    let stem_ok = !stem.is_empty()
        && stem.chars().any(|c| c.is_alphabetic())
        && stem
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    (ext_ok && stem_ok).then_some(word)
}

/// The last part of a path, lower case.
fn base_name(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_lowercase()
}

/// The files a step's name and description say it reads: names with an
/// extension within three words after a reading word (read, open, load,
/// parse). Conservative: a file merely mentioned is not read.
pub fn files_read(name: &str, description: &str) -> Vec<String> {
    let text = format!("{name} {description}");
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out: Vec<String> = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let Some(file) = file_name(word) else {
            continue;
        };
        let reading = words[i.saturating_sub(3)..i].iter().any(|w| {
            let w = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            READ_WORDS.contains(&w.as_str())
        });
        if reading && !out.iter().any(|f| f == file) {
            out.push(file.to_string());
        }
    }
    out
}

/// What is wrong with `plan`, each as a sentence: in a complex plan of more
/// than two steps, steps that depend on nothing and feed nothing; steps
/// that read a file neither `given` (the run's input files) nor named by
/// an earlier step (a step that writes it says so); steps that say the
/// same; steps without an expected outcome; steps whose `tool` is not
/// `offered` to the run. Empty: nothing found.
pub fn plan_checks(plan: &Plan, given: &[String], offered: &[String]) -> Vec<PlanCheck> {
    let steps = plan.subtasks();
    let mut checks = Vec::new();
    if plan.mode() == Mode::Complex && steps.len() > 2 {
        let needed: std::collections::HashSet<SubtaskId> = steps
            .iter()
            .flat_map(|s| s.dependencies().iter().copied())
            .collect();
        let alone: Vec<SubtaskId> = steps
            .iter()
            .filter(|s| s.dependencies().is_empty() && !needed.contains(&s.id()))
            .map(|s| s.id())
            .collect();
        if !alone.is_empty() {
            checks.push(PlanCheck::new(PlanCheckKind::Unconnected, alone, None));
        }
    }
    let given: Vec<String> = given.iter().map(|g| base_name(g)).collect();
    for (i, step) in steps.iter().enumerate() {
        for file in files_read(step.name(), step.description()) {
            let base = base_name(&file);
            let written = steps[..i].iter().any(|earlier| {
                format!(
                    "{} {} {}",
                    earlier.name(),
                    earlier.description(),
                    earlier.expected_outcome()
                )
                .to_lowercase()
                .contains(&base)
            });
            if !given.contains(&base) && !written {
                checks.push(PlanCheck::new(
                    PlanCheckKind::MissingFile,
                    vec![step.id()],
                    Some(file),
                ));
            }
        }
    }
    let mut seen: Vec<(Vec<String>, Vec<SubtaskId>)> = Vec::new();
    for step in steps {
        let words = plan_engine::distance::step_words(step.name(), step.description());
        if words.is_empty() {
            continue;
        }
        match seen.iter_mut().find(|(w, _)| *w == words) {
            Some((_, ids)) => ids.push(step.id()),
            None => seen.push((words, vec![step.id()])),
        }
    }
    for (_, ids) in seen.into_iter().filter(|(_, ids)| ids.len() > 1) {
        checks.push(PlanCheck::new(PlanCheckKind::Duplicate, ids, None));
    }
    let no_outcome: Vec<SubtaskId> = steps
        .iter()
        .filter(|s| s.expected_outcome().trim().is_empty())
        .map(|s| s.id())
        .collect();
    if !no_outcome.is_empty() {
        checks.push(PlanCheck::new(PlanCheckKind::NoOutcome, no_outcome, None));
    }
    let mut refused: Vec<(String, Vec<SubtaskId>)> = Vec::new();
    for step in steps {
        let Some(tool) = step.tool().filter(|t| !offered.iter().any(|o| o == t)) else {
            continue;
        };
        match refused.iter_mut().find(|(t, _)| t == tool) {
            Some((_, ids)) => ids.push(step.id()),
            None => refused.push((tool.to_string(), vec![step.id()])),
        }
    }
    for (tool, ids) in refused {
        checks.push(PlanCheck::new(
            PlanCheckKind::ToolNotAllowed,
            ids,
            Some(tool),
        ));
    }
    checks
}

/// A low and a high estimate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

impl Interval {
    pub fn contains(&self, value: f64) -> bool {
        value >= self.low && value <= self.high
    }
}

plan_engine::wire_enum! {
    /// What a forecast was read from.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum ForecastBasis: "forecast basis (similar_runs or plan_size)" {
        /// Finished runs of the same mode on the same model, answered
        /// the same way (in words or with tools).
        SimilarRuns = "similar_runs",
        /// The plan's size alone (too few such runs).
        PlanSize = "plan_size",
    }
}

/// What a plan will likely cost, each an interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Forecast {
    /// Model calls.
    pub calls: Interval,
    /// Prompt and completion tokens.
    pub tokens: Interval,
    /// Minutes of running.
    pub minutes: Interval,
    /// US dollars; `None` when the model has no price.
    pub cost: Option<Interval>,
    pub basis: ForecastBasis,
    /// The finished runs it was read from (none for the plan's size).
    pub runs: usize,
    /// The budgets the high end passes (`max_llm_calls`, `max_tokens`,
    /// `max_wall_secs`, `max_cost`); empty: the run fits its budget.
    pub over_budget: Vec<String>,
    /// `over_budget` is empty.
    pub fits_budget: bool,
}

/// A finished run as a forecast reads it: its plan's size, what it spent.
#[derive(Clone, Debug, PartialEq)]
pub struct Past {
    pub steps: usize,
    pub spent: Spent,
}

/// The fewest similar finished runs a forecast is read from; with fewer,
/// it is read from the plan's size.
pub const SIMILAR_RUNS: usize = 3;

/// The lowest and the highest of `values`, or their 10th and 90th
/// percentiles (nearest rank) from ten values on.
fn spread(mut values: Vec<f64>) -> Interval {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return Interval {
            low: 0.0,
            high: 0.0,
        };
    }
    let (low, high) = if n < 10 {
        (0, n - 1)
    } else {
        let at = |q: f64| ((n - 1) as f64 * q).round() as usize;
        (at(0.1), at(0.9))
    };
    Interval {
        low: values[low],
        high: values[high],
    }
}

/// Whole numbers: the low end down, the high end up.
fn whole(i: Interval) -> Interval {
    Interval {
        low: i.low.floor(),
        high: i.high.ceil(),
    }
}

/// What a plan of `steps` steps will likely cost: from `past` (finished
/// runs like this one: the same mode, the same model, answered the same
/// way), each scaled to this plan's size by its cost per step, when there
/// are [`SIMILAR_RUNS`] or more; else from the size alone
/// ([`by_size`]). The cost follows `price` (the model's; `None`: no
/// price, no cost). Whether the high end fits `budget` is said too.
pub fn forecast(
    steps: usize,
    in_words: bool,
    past: &[Past],
    price: Option<Price>,
    budget: &Budget,
) -> Forecast {
    let n = steps.max(1) as f64;
    let (calls, tokens, minutes, cost, basis, runs) = if past.len() >= SIMILAR_RUNS {
        let scaled = |of: &dyn Fn(&Spent) -> f64| -> Interval {
            spread(
                past.iter()
                    .map(|p| of(&p.spent) / p.steps.max(1) as f64 * n)
                    .collect(),
            )
        };
        let cost = price.map(|_| scaled(&|s| s.cost.dollars()));
        (
            whole(scaled(&|s| f64::from(s.llm_calls))),
            whole(scaled(&|s| s.tokens() as f64)),
            scaled(&|s| s.wall_ms as f64 / 60_000.0),
            cost,
            ForecastBasis::SimilarRuns,
            past.len(),
        )
    } else {
        let (calls, tokens, minutes) = by_size(n, in_words, budget.max_turns);
        // A call's tokens are about four parts prompt to one completion.
        let cost = price.map(|p| {
            let dollars = |t: f64| p.cost((t * 0.8) as u64, (t * 0.2) as u64).dollars();
            Interval {
                low: dollars(tokens.low),
                high: dollars(tokens.high),
            }
        });
        (calls, tokens, minutes, cost, ForecastBasis::PlanSize, 0)
    };
    let mut over = Vec::new();
    if calls.high > f64::from(budget.max_llm_calls) {
        over.push("max_llm_calls".to_string());
    }
    if tokens.high > budget.max_tokens as f64 {
        over.push("max_tokens".to_string());
    }
    if minutes.high * 60.0 > budget.max_wall_secs as f64 {
        over.push("max_wall_secs".to_string());
    }
    if let (Some(cost), Some(max)) = (cost, budget.max_cost) {
        if cost.high > max.dollars() {
            over.push("max_cost".to_string());
        }
    }
    Forecast {
        calls,
        tokens,
        minutes,
        cost,
        basis,
        runs,
        fits_budget: over.is_empty(),
        over_budget: over,
    }
}

/// Calls, tokens and minutes of `n` steps read from the plan's size and
/// from what the agent does in a step, when no similar runs are there:
/// - answered in words, a step is one writing turn (and at most one more
///   to shorten it), 200 to 2,000 tokens a call (the writer's brief and at
///   most 1,200 tokens of text), 3 s to 1 min; two calls more at most to
///   classify and plan;
/// - with tools, a step takes from one turn to `max_turns` (the run's
///   limit per attempt, where a step stops at the latest), 1,000 to 4,000
///   tokens a call, 6 s to 2 min; two to three calls more to classify,
///   plan and answer.
///
/// Measured on the local model (issue 55), the first prior, 1 to 3 calls
/// a step for every run, held the calls of none of eight one-step runs
/// with tools (7 to 13 calls) and was above every run answered in words
/// (1 or 2 calls). The time ignores the model's queue: runs sharing a
/// busy model wait, and the forecast from similar runs learns that.
pub fn by_size(n: f64, in_words: bool, max_turns: u32) -> (Interval, Interval, Interval) {
    // Per step: calls, and the calls beside the steps; tokens a call;
    // minutes a step.
    let (per_step, beside, per_call, minutes) = if in_words {
        ((1.0, 2.0), (0.0, 2.0), (200.0, 2_000.0), (0.05, 1.0))
    } else {
        let turns = f64::from(max_turns.max(1));
        ((1.0, turns), (2.0, 3.0), (1_000.0, 4_000.0), (0.1, 2.0))
    };
    let calls = Interval {
        low: n * per_step.0 + beside.0,
        high: n * per_step.1 + beside.1,
    };
    let tokens = Interval {
        low: calls.low * per_call.0,
        high: calls.high * per_call.1,
    };
    let minutes = Interval {
        low: n * minutes.0,
        high: n * minutes.1,
    };
    (calls, tokens, minutes)
}

/// How often finished runs spent within their forecast's interval, per
/// measure (0.0 to 1.0; `None` without a run to count).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ForecastAccuracy {
    /// Finished runs whose approval carried a forecast.
    pub runs: usize,
    pub calls: Option<f64>,
    pub tokens: Option<f64>,
    pub minutes: Option<f64>,
    /// Among the runs forecast with a cost.
    pub cost: Option<f64>,
}

/// How often the spend of each run fell inside the forecast made for it.
pub fn accuracy(pairs: &[(Forecast, Spent)]) -> ForecastAccuracy {
    let share = |hits: usize, of: usize| (of > 0).then(|| hits as f64 / of as f64);
    let count = |inside: &dyn Fn(&Forecast, &Spent) -> bool| {
        pairs.iter().filter(|(f, s)| inside(f, s)).count()
    };
    let n = pairs.len();
    let priced = pairs.iter().filter(|(f, _)| f.cost.is_some()).count();
    ForecastAccuracy {
        runs: n,
        calls: share(count(&|f, s| f.calls.contains(f64::from(s.llm_calls))), n),
        tokens: share(count(&|f, s| f.tokens.contains(s.tokens() as f64)), n),
        minutes: share(
            count(&|f, s| f.minutes.contains(s.wall_ms as f64 / 60_000.0)),
            n,
        ),
        cost: share(
            count(&|f, s| f.cost.is_some_and(|c| c.contains(s.cost.dollars()))),
            priced,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan_engine::{NewPlan, NewSubtask};

    #[test]
    fn the_card_lists_the_asking_tools_its_steps_name_with_the_steps() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let mut shell = NewSubtask::named("list the files");
        shell.tool = Some("run_shell".into());
        let spec = NewPlan {
            title: "t".into(),
            subtasks: vec![
                shell,
                NewSubtask::named("save it with write_file"),
                NewSubtask::named("read it back with read_file"),
                NewSubtask::named("then run_shell again"),
            ],
            ..NewPlan::default()
        };
        let plan = Plan::create(&spec, "ann", at).unwrap().0;
        let offered: Vec<String> = ["read_file", "write_file", "run_shell"]
            .map(String::from)
            .to_vec();
        let asks = |tool: &str| match tool {
            "run_shell" | "write_file" => ToolPolicy::Ask,
            _ => ToolPolicy::Auto,
        };
        let guarded = guarded_tools(&plan, &offered, asks);
        let listed: Vec<(&str, Vec<u32>)> = guarded
            .iter()
            .map(|g| (g.tool.as_str(), g.steps.iter().map(|s| s.0).collect()))
            .collect();
        assert_eq!(
            listed,
            vec![("run_shell", vec![1, 4]), ("write_file", vec![2])]
        );
    }

    fn plan(mode: Mode, steps: Vec<NewSubtask>) -> Plan {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let spec = NewPlan {
            title: "t".into(),
            mode,
            subtasks: steps,
            ..NewPlan::default()
        };
        Plan::create(&spec, "ann", at).unwrap().0
    }

    fn step(name: &str, description: &str, outcome: &str, after: &[u32]) -> NewSubtask {
        NewSubtask {
            name: name.into(),
            description: description.into(),
            expected_outcome: outcome.into(),
            ..NewSubtask::default()
        }
        .after(after)
    }

    #[test]
    fn each_check_is_a_sentence_about_its_steps() {
        let mut shell = step("list", "list the folder", "a list", &[]);
        shell.tool = Some("run_shell".into());
        let p = plan(
            Mode::Complex,
            vec![
                step(
                    "Load the data",
                    "open sales.csv and read notes.txt",
                    "rows",
                    &[],
                ),
                step("Sum", "sum the rows", "", &[1]),
                step("Write the report", "write report.md", "report.md", &[2]),
                step("Read it back", "read report.md again", "a check", &[3]),
                shell,
                step("sum", "Sum the rows!", "the sum", &[1]),
            ],
        );
        let checks = plan_checks(&p, &["data/notes.txt".into()], &["read_file".into()]);
        let found: Vec<(PlanCheckKind, Vec<u32>, Option<&str>)> = checks
            .iter()
            .map(|c| {
                (
                    c.kind,
                    c.steps.iter().map(|s| s.0).collect(),
                    c.what.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            found,
            vec![
                (PlanCheckKind::Unconnected, vec![5], None),
                (PlanCheckKind::MissingFile, vec![1], Some("sales.csv")),
                (PlanCheckKind::Duplicate, vec![2, 6], None),
                (PlanCheckKind::NoOutcome, vec![2], None),
                (PlanCheckKind::ToolNotAllowed, vec![5], Some("run_shell")),
            ]
        );
        assert_eq!(
            checks[1].text,
            "#1 reads sales.csv, which is neither among the run's files nor written by an \
             earlier step."
        );
        assert!(checks[4].sentence(true).contains("本次运行不能使用"));
    }

    #[test]
    fn a_simple_plan_of_connected_steps_with_outcomes_passes() {
        let p = plan(
            Mode::Simple,
            vec![
                step("Fetch the page", "fetch the weather page", "the page", &[]),
                step(
                    "Answer",
                    "say the temperature, e.g. 21.5 degrees",
                    "a number",
                    &[1],
                ),
            ],
        );
        assert_eq!(plan_checks(&p, &[], &[]), Vec::new());
        assert_eq!(
            files_read("Load", "load https://a.example/x.csv or 1.5 e.g"),
            Vec::<String>::new()
        );
    }

    fn spent(calls: u32, tokens: u64, secs: u64, dollars: f64) -> Spent {
        Spent {
            llm_calls: calls,
            prompt_tokens: tokens,
            completion_tokens: 0,
            wall_ms: secs * 1000,
            cost: crate::Usd::from_dollars(dollars).unwrap(),
            unpriced_calls: 0,
        }
    }

    #[test]
    fn a_forecast_scales_similar_runs_to_the_plans_size_and_says_if_it_fits() {
        let past = [
            Past {
                steps: 2,
                spent: spent(6, 6_000, 60, 0.02),
            },
            Past {
                steps: 4,
                spent: spent(16, 20_000, 240, 0.08),
            },
            Past {
                steps: 2,
                spent: spent(8, 10_000, 120, 0.04),
            },
        ];
        let budget = Budget::default();
        let f = forecast(4, false, &past, Some(Price::FREE), &budget);
        assert_eq!(f.basis, ForecastBasis::SimilarRuns);
        assert_eq!(f.runs, 3);
        // Per step 3, 4 and 4 calls: 12 to 16 for four steps.
        assert_eq!((f.calls.low, f.calls.high), (12.0, 16.0));
        assert_eq!((f.tokens.low, f.tokens.high), (12_000.0, 20_000.0));
        assert_eq!((f.minutes.low, f.minutes.high), (2.0, 4.0));
        assert!(f.fits_budget && f.over_budget.is_empty());
        let tight = Budget {
            max_llm_calls: 14,
            ..Budget::default()
        };
        assert_eq!(
            forecast(4, false, &past, None, &tight).over_budget,
            ["max_llm_calls"]
        );
        assert_eq!(forecast(4, false, &past, None, &tight).cost, None);
        // Too few similar runs: the plan's size, up to the turn limit a
        // step (8 by default) and three calls more.
        let by_size = forecast(4, false, &past[..2], None, &budget);
        assert_eq!(by_size.basis, ForecastBasis::PlanSize);
        assert_eq!((by_size.calls.low, by_size.calls.high), (6.0, 35.0));
    }

    /// A run answered in words writes a step in a call or two; one with
    /// tools may take its turn limit a step. Seen on the local model: a
    /// one-step run with tools took 7 to 13 calls, one in words 1 or 2.
    #[test]
    fn a_forecast_from_the_plans_size_knows_a_step_in_words_from_one_with_tools() {
        let budget = Budget::default();
        let words = forecast(1, true, &[], None, &budget);
        let tools = forecast(1, false, &[], None, &budget);
        for calls in [1.0, 2.0] {
            assert!(words.calls.contains(calls), "{:?}", words.calls);
        }
        for calls in [7.0, 11.0] {
            assert!(tools.calls.contains(calls), "{:?}", tools.calls);
            assert!(!words.calls.contains(calls), "{:?}", words.calls);
        }
        assert!(words.tokens.high < tools.tokens.high);
        assert!(words.minutes.high < tools.minutes.high);
        let fewer_turns = Budget {
            max_turns: 2,
            ..Budget::default()
        };
        assert_eq!(forecast(1, false, &[], None, &fewer_turns).calls.high, 5.0);
    }

    #[test]
    fn accuracy_is_the_share_of_runs_spending_inside_their_interval() {
        let budget = Budget::default();
        let f = forecast(1, false, &[], None, &budget);
        // Calls 3 to 11.
        let pairs = vec![
            (f.clone(), spent(4, 4_000, 30, 0.0)),
            (f.clone(), spent(12, 4_000, 30, 0.0)),
        ];
        let a = accuracy(&pairs);
        assert_eq!(a.runs, 2);
        assert_eq!(a.calls, Some(0.5));
        assert_eq!(a.cost, None);
        assert_eq!(accuracy(&[]).calls, None);
    }
}
