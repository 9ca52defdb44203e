//! The three planners (seed 004): one call each, turned into engine
//! subtasks. The engine validates a complex plan; its refusal (a cycle, an
//! unknown position) goes back to the model in the engine's own words.

use plan_engine::text::prefix as cut_to;
use plan_engine::{Mode, NewPlan, NewSubtask, Plan, SubtaskId};

use crate::call::{CallError, Caller};
use crate::llm::{CallRole, Message};
use crate::prompts;
use crate::protocol::{PlanAnswer, Proposed, Unreadable};
use crate::tools::files;
use crate::tools::web::WEB_TOOLS;

/// Emergent plans hold at most this many TODOs (seed 004 `MAX_TODO_ITEMS`).
pub const EMERGENT_CAP: u32 = 20;
/// A complex plan's largest size from one planning call.
pub const COMPLEX_MAX: usize = 100;
/// Simple plans are short (seed 004: v1 flat plan).
pub const SIMPLE_MAX: usize = 7;
const EMERGENT_START_MAX: usize = 3;
/// Engine refusals shown back to the model before giving up.
const REPAIRS: usize = 2;

#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    pub title: String,
    pub subtasks: Vec<NewSubtask>,
    /// What was wrong with the model's answer and mended without it
    /// (logged on the run, so people see the plan is not verbatim).
    pub repairs: Vec<String>,
}

/// The most subtasks one planning call may give in `mode`.
pub fn max_subtasks(mode: Mode) -> usize {
    match mode {
        Mode::Complex => COMPLEX_MAX,
        Mode::Emergent => EMERGENT_START_MAX,
        Mode::Simple | Mode::Manual => SIMPLE_MAX,
    }
}

/// The answer's schema for `mode`: its own bounds on the subtasks (so a
/// grammar-constrained server cannot write more than the mode takes) and
/// `depends_on` only where dependencies mean something (complex plans and
/// an emergent start; a simple plan is a chain), its positions bounded.
pub fn plan_schema(mode: Mode, tools: &[crate::protocol::ToolSpec]) -> serde_json::Value {
    let mut schema = crate::protocol::schema_of::<PlanAnswer>();
    let max = max_subtasks(mode);
    // The tool field names an offered tool or none: a grammar-constrained
    // server cannot invent one.
    if let Some(tool) = schema.pointer_mut("/properties/subtasks/items/properties/tool") {
        let mut names: Vec<serde_json::Value> =
            tools.iter().map(|t| t.name.clone().into()).collect();
        names.push("".into());
        tool["enum"] = names.into();
    }
    if let Some(subtasks) = schema.pointer_mut("/properties/subtasks") {
        subtasks["maxItems"] = max.into();
        subtasks["minItems"] = 1.into();
        if matches!(mode, Mode::Complex | Mode::Emergent) {
            // A dependency names another position: at most `max`.
            if let Some(depends) = subtasks.pointer_mut("/items/properties/depends_on") {
                if mode == Mode::Emergent {
                    // A TODO waits for at most the others of its start.
                    depends["maxItems"] = (max - 1).into();
                }
                if let Some(items) = depends.get_mut("items") {
                    items["maximum"] = max.into();
                    items["minimum"] = 1.into();
                }
            }
        } else if let Some(item) = subtasks.get_mut("items") {
            if let Some(props) = item.get_mut("properties").and_then(|p| p.as_object_mut()) {
                props.remove("depends_on");
            }
            if let Some(required) = item.get_mut("required").and_then(|r| r.as_array_mut()) {
                required.retain(|r| r != "depends_on");
            }
        }
    }
    schema
}

/// What the planner is revising, if anything.
pub struct Revision<'a> {
    pub plan: &'a Plan,
    pub comment: &'a str,
}

fn system(mode: Mode) -> &'static str {
    match mode {
        Mode::Complex => prompts::COMPLEX_PLANNER,
        Mode::Emergent => prompts::EMERGENT_PLANNER,
        Mode::Simple | Mode::Manual => prompts::SIMPLE_PLANNER,
    }
}

pub fn subtask_of(p: &Proposed, dependencies: Vec<SubtaskId>) -> NewSubtask {
    let tool = p.tool.trim();
    NewSubtask {
        name: p.name.trim().to_string(),
        description: p.description.trim().to_string(),
        tool: (!tool.is_empty()).then(|| tool.to_string()),
        expected_outcome: p.expected_outcome.trim().to_string(),
        dependencies,
        ..NewSubtask::default()
    }
}

/// Turns an answer into subtasks for `mode`. What can be mended without
/// the model is mended and said in `repairs` (too many subtasks: the first
/// ones are kept; a subtask without a name: dropped; a dependency on
/// itself, on a position that does not exist or on a dropped subtask:
/// dropped; no title: the first subtask's name). Only an answer with no
/// usable subtask is refused, in words for the model; and an emergent
/// start whose TODOs name themselves or a position the answer does not
/// have (its three TODOs are too few to guess what was meant), which
/// [`plan`] mends only once the model could not.
pub fn shape(mode: Mode, answer: &PlanAnswer) -> Result<Planned, Unreadable> {
    let max = max_subtasks(mode);
    if mode == Mode::Emergent {
        references(answer)?;
    }
    let mut repairs = Vec::new();
    // Subtasks without a name are dropped; positions are renumbered.
    let named: Vec<(u32, &Proposed)> = answer
        .subtasks
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.name.trim().is_empty())
        .map(|(i, p)| (i as u32 + 1, p))
        .collect();
    if named.len() < answer.subtasks.len() {
        repairs.push(format!(
            "dropped {} subtasks without a name",
            answer.subtasks.len() - named.len()
        ));
    }
    if named.is_empty() {
        return Err(Unreadable::PlanSize {
            given: 0,
            mode: mode.as_str(),
            min: 1,
            max,
        });
    }
    let kept = &named[..named.len().min(max)];
    if named.len() > max {
        repairs.push(format!(
            "kept the first {max} of {} subtasks (a {} plan has at most {max})",
            named.len(),
            mode.as_str()
        ));
    }
    // Old position → new id.
    let renumber: std::collections::HashMap<u32, u32> = kept
        .iter()
        .enumerate()
        .map(|(i, (old, _))| (*old, i as u32 + 1))
        .collect();
    let mut dropped_deps = 0;
    let mut self_deps = 0;
    let subtasks = kept
        .iter()
        .enumerate()
        .map(|(i, (old, p))| {
            let dependencies = match mode {
                // Positions are ids: a new plan numbers its subtasks from 1.
                Mode::Complex | Mode::Emergent => {
                    let mut deps = Vec::new();
                    for d in &p.depends_on {
                        if d == old {
                            self_deps += 1;
                        } else if let Some(new) = renumber.get(d) {
                            deps.push(SubtaskId(*new));
                        } else {
                            dropped_deps += 1;
                        }
                    }
                    deps.sort();
                    deps.dedup();
                    deps
                }
                // A simple plan is a chain.
                Mode::Simple | Mode::Manual if i > 0 => vec![SubtaskId(i as u32)],
                Mode::Simple | Mode::Manual => Vec::new(),
            };
            subtask_of(p, dependencies)
        })
        .collect();
    if self_deps > 0 {
        repairs.push(format!(
            "dropped {self_deps} dependencies of a subtask on itself"
        ));
    }
    if dropped_deps > 0 {
        repairs.push(format!(
            "dropped {dropped_deps} dependencies on subtasks that do not exist"
        ));
    }
    let mut title = answer.title.trim().to_string();
    if title.is_empty() {
        title = kept[0].1.name.trim().to_string();
        repairs.push("the plan had no title: it is named after its first subtask".into());
    }
    Ok(Planned {
        title,
        subtasks,
        repairs,
    })
}

/// An emergent start's references, against the answer as the model wrote
/// it: each names another TODO of the answer by its 1-based position.
fn references(answer: &PlanAnswer) -> Result<(), Unreadable> {
    let len = answer.subtasks.len();
    for (i, p) in answer.subtasks.iter().enumerate() {
        let at = i + 1;
        let name = cut_to(p.name.trim(), 80);
        for &d in &p.depends_on {
            if d as usize == at {
                return Err(Unreadable::BadDependency(format!(
                    "TODO {at} ('{name}') depends on itself; depends_on holds the positions of \
                     other TODOs it needs first"
                )));
            }
            if d == 0 || d as usize > len {
                return Err(Unreadable::BadDependency(format!(
                    "TODO {at} ('{name}') depends on {d}, but the answer has TODOs 1 to {len}; \
                     depends_on holds the 1-based positions of other TODOs in this answer"
                )));
            }
        }
    }
    Ok(())
}

/// An emergent start without its dependencies, when the model could not
/// give them right in its repairs: its TODOs then start unordered (as
/// they may), which is better than no run. `None` when that does not
/// help either.
fn unordered(answer: &PlanAnswer, problem: &Unreadable) -> Option<Planned> {
    let mut answer = answer.clone();
    for p in &mut answer.subtasks {
        p.depends_on.clear();
    }
    let mut planned = shape(Mode::Emergent, &answer).ok()?;
    check(&planned, Mode::Emergent).ok()?;
    planned.repairs.push(format!(
        "dropped the TODOs' dependencies, refused {} times: {}",
        REPAIRS + 1,
        cut_to(&problem.to_string(), 300)
    ));
    Some(planned)
}

/// Tools whose only work is reading what is there: a step of them before
/// a code step is part of that code step's work.
const READING: [&str; 2] = [files::READ_FILE, files::LIST_FILES];
/// The tool that runs code.
pub const CODE: &str = "run_python";
/// The tool that writes a file from text the model types.
const WRITING: &str = files::WRITE_FILE;

/// In a plan where no step runs code although code is offered, a step
/// that types a file the person's `task` does not name becomes a code
/// step: a program computes what it writes, where a model typing it
/// writes a guess (Qwen2.5-1.5B planned "write the digit sum of 2^100 to
/// output.txt" for a question that asked for no file, typed 2^100 itself
/// and failed every attempt). A file the task names (`sorted.txt`) keeps
/// its writing step. Said in `repairs`.
pub fn compute_unasked_writes(planned: &mut Planned, tools: &[&str], task: &str) {
    let coded = planned
        .subtasks
        .iter()
        .any(|s| s.tool.as_deref() == Some(CODE));
    if !tools.contains(&CODE) || coded {
        return;
    }
    let mut retooled = 0;
    for s in &mut planned.subtasks {
        if s.tool.as_deref() != Some(WRITING) {
            continue;
        }
        let words = format!("{} {}", s.name, s.description);
        if !crate::grounded::file_names(&words)
            .iter()
            .any(|f| task.contains(f))
        {
            s.tool = Some(CODE.to_string());
            retooled += 1;
        }
    }
    if retooled > 0 {
        planned.repairs.push(format!(
            "gave {retooled} steps that write a file the task does not ask for to {CODE}, so a \
             program computes what they write"
        ));
    }
}

/// Words with which a task asks for something to be written down (the
/// task's own file names are checked apart).
const ASKS_TO_WRITE: [&str; 7] = ["write", "save", "store", "export", "写", "保存", "存储"];

/// A plan's last steps that type a file nobody asked for, after a step
/// that runs code, are dropped: the answer carries what the code printed
/// (Qwen2.5-1.5B planned "write the result to
/// total_revenue_north_2026_03.txt" after its sum for a question that
/// asked for none; joined into the code step, the card said "Write the
/// result to a file", the program wrote the file and printed nothing, and
/// the model typed a number). Only when the task names no such file and
/// asks nothing to be written, and only steps nothing depends on. Said in
/// `repairs`.
pub fn drop_unasked_writes(planned: &mut Planned, tools: &[&str], task: &str) {
    let lower = task.to_lowercase();
    if !tools.contains(&CODE) || ASKS_TO_WRITE.iter().any(|w| lower.contains(w)) {
        return;
    }
    let codes = |s: &NewSubtask| s.tool.as_deref() == Some(CODE) || s.name == CODE;
    let mut dropped = 0;
    while let Some(last) = planned.subtasks.last() {
        let id = SubtaskId(planned.subtasks.len() as u32);
        let words = format!("{} {}", last.name, last.description);
        let unasked = (last.tool.as_deref() == Some(WRITING) || last.name == WRITING)
            && !crate::grounded::file_names(&words)
                .iter()
                .any(|f| task.contains(f));
        let before = &planned.subtasks[..planned.subtasks.len() - 1];
        let needed = before.iter().any(|s| s.dependencies.contains(&id));
        if !unasked || needed || !before.iter().any(codes) {
            break;
        }
        planned.subtasks.pop();
        dropped += 1;
    }
    if dropped > 0 {
        planned.repairs.push(format!(
            "dropped {dropped} steps that write a file the task does not ask for (the answer \
             carries the result)"
        ));
    }
}

/// Verbs with which a step says it writes the file it names, as whole
/// words with their endings ("output" puts nothing).
const WRITES_A_FILE: [&str; 9] = [
    "write", "save", "put", "create", "store", "export", "generate", "produce", "download",
];

/// Whether `word` (lower-cased) is a verb of [`WRITES_A_FILE`] with one of
/// its endings ("writes", "saving", "written", "wrote").
fn writing_verb(word: &str) -> bool {
    word == "wrote"
        || WRITES_A_FILE.iter().any(|v| {
            let stem = v.strip_suffix('e').unwrap_or(v);
            word == *v
                || word.strip_prefix(stem).is_some_and(|end| {
                    ["s", "es", "ed", "d", "ing", "ten", "ting", "ts"].contains(&end)
                })
        })
}

/// Words between a writing verb or a "to" and the file it writes ("save
/// it as a new CSV file named out.csv").
const BEFORE_A_WRITTEN_FILE: [&str; 14] = [
    "a", "an", "the", "new", "file", "named", "called", "it", "them", "csv", "text", "json",
    "excel", "result",
];

/// Whether a word right before a file name says the file is read.
fn reads(word: &str) -> bool {
    [
        "from", "of", "read", "reads", "load", "loads", "in", "using", "open",
    ]
    .contains(&word)
}

/// The files a step writes: the file names its name or description puts
/// right after a writing verb, or after "to", "into" or "as", in a step
/// that says it writes ("Plot data.csv and save it to chart.png" writes
/// chart.png, not data.csv); with the tool `write_file`, also each file it
/// names that it does not say it reads.
fn files_written(s: &NewSubtask) -> Vec<String> {
    let text = format!("{} {}", s.name, s.description).to_lowercase();
    let typing = s.tool.as_deref() == Some(WRITING);
    let bare = |w: &str| -> String { w.trim_matches(|c: char| !c.is_alphanumeric()).to_string() };
    let words: Vec<&str> = text.split_whitespace().collect();
    if !typing && !words.iter().any(|w| writing_verb(&bare(w))) {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for (i, raw) in words.iter().enumerate() {
        let Some(name) = crate::grounded::file_names(raw).into_iter().next() else {
            continue;
        };
        // The telling word before the file name.
        let before = words[..i]
            .iter()
            .rev()
            .map(|w| bare(w))
            .find(|w| !w.is_empty() && !BEFORE_A_WRITTEN_FILE.contains(&w.as_str()));
        let written = match before.as_deref() {
            Some(w) => {
                writing_verb(w) || ["to", "into", "as"].contains(&w) || (typing && !reads(w))
            }
            None => typing,
        };
        if written && !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// The rule [`crate::rules::FILES_WRITTEN_BEFORE_READ`], in a simple plan
/// (a chain by order): a step that names a file which only a later step
/// writes moves to just after that writer, and the chain is linked again.
/// Qwen2.5-1.5B planned "Count the words in long_words.txt" before "Write
/// long_words.txt"; the first step counted a file that was not there yet.
/// Files the person gave (`given`) are there from the start and order
/// nothing; two steps that each use what the other writes stay as they
/// are. Said in `repairs`.
pub fn files_written_before_read(planned: &mut Planned, mode: Mode, given: &[String]) {
    if mode != Mode::Simple || !crate::rules::on(&crate::rules::FILES_WRITTEN_BEFORE_READ) {
        return;
    }
    let n = planned.subtasks.len();
    let named = |s: &NewSubtask| -> Vec<String> {
        let words = format!("{} {}", s.name, s.description);
        crate::grounded::file_names(&words)
            .into_iter()
            .map(str::to_string)
            .filter(|f| !given.iter().any(|g| g == f))
            .collect()
    };
    let mut moved = 0;
    // Each pass moves one step down; n passes bound it.
    for _ in 0..n {
        let writes: Vec<Vec<String>> = planned.subtasks.iter().map(files_written).collect();
        let names: Vec<Vec<String>> = planned.subtasks.iter().map(named).collect();
        let early = (0..n).find_map(|i| {
            names[i]
                .iter()
                .filter(|f| !writes[..=i].iter().flatten().any(|w| w == *f))
                .find_map(|f| (i + 1..n).find(|&j| writes[j].iter().any(|w| w == f)))
                // Not when the writer uses what this step writes.
                .filter(|&j| !names[j].iter().any(|f| writes[i].contains(f)))
                .map(|j| (i, j))
        });
        let Some((reader, writer)) = early else {
            break;
        };
        let step = planned.subtasks.remove(reader);
        // The writer is now at `writer - 1`: the step goes right after it.
        planned.subtasks.insert(writer, step);
        moved += 1;
    }
    if moved == 0 {
        return;
    }
    for (i, s) in planned.subtasks.iter_mut().enumerate() {
        s.dependencies = match i {
            0 => Vec::new(),
            i => vec![SubtaskId(i as u32)],
        };
    }
    planned.repairs.push(format!(
        "moved {moved} step(s) that use a file to after the step that writes it (rule \
         files_written_before_read)"
    ));
}

/// The rule [`crate::rules::NO_READS_OF_AN_EMPTY_WORKSPACE`], in every
/// mode: in a run that starts with an empty workspace (`empty_start`), a
/// step that lists or reads files and has no step before it (by its
/// dependencies; in a simple plan, by order) that could write one is
/// dropped, and what depended on it depends on what it depended on. A plan
/// that would be left empty is kept as it is. (An emergent plan's first
/// TODO listed an empty workspace and reported three files it made up.)
pub fn drop_reads_of_an_empty_workspace(planned: &mut Planned, mode: Mode, empty_start: bool) {
    if !empty_start || !crate::rules::on(&crate::rules::NO_READS_OF_AN_EMPTY_WORKSPACE) {
        return;
    }
    let n = planned.subtasks.len();
    let reading = |s: &NewSubtask| s.tool.as_deref().is_some_and(|t| READING.contains(&t));
    let writing = |s: &NewSubtask| s.tool.as_deref().is_some_and(|t| !READING.contains(&t));
    // Each step's steps before it: its dependencies (1-based positions),
    // or, in a simple plan, every earlier step.
    let before = |i: usize| -> Vec<usize> {
        if mode == Mode::Simple {
            (0..i).collect()
        } else {
            planned.subtasks[i]
                .dependencies
                .iter()
                .filter_map(|d| (d.0 as usize).checked_sub(1))
                .filter(|d| *d < n && *d != i)
                .collect()
        }
    };
    // Whether something before a step (transitively) could write a file:
    // a fixed point, as dependencies may point anywhere.
    let mut wrote = vec![false; n];
    for _ in 0..n {
        let mut changed = false;
        for i in 0..n {
            let now = before(i)
                .iter()
                .any(|&d| writing(&planned.subtasks[d]) || wrote[d]);
            if now && !wrote[i] {
                wrote[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let dropped: Vec<bool> = (0..n)
        .map(|i| reading(&planned.subtasks[i]) && !wrote[i])
        .collect();
    let count = dropped.iter().filter(|d| **d).count();
    if count == 0 || count == n {
        return;
    }
    // A dropped step's place in others' dependencies goes to its own
    // dependencies, resolved to kept steps.
    fn kept_of(
        i: usize,
        dropped: &[bool],
        deps: &dyn Fn(usize) -> Vec<usize>,
        seen: &mut Vec<bool>,
    ) -> Vec<usize> {
        if !dropped[i] {
            return vec![i];
        }
        if std::mem::replace(&mut seen[i], true) {
            return Vec::new();
        }
        deps(i)
            .into_iter()
            .flat_map(|d| kept_of(d, dropped, deps, seen))
            .collect()
    }
    let mut new_position = vec![0u32; n];
    let mut next = 0;
    for i in 0..n {
        if !dropped[i] {
            next += 1;
            new_position[i] = next;
        }
    }
    let explicit = mode != Mode::Simple;
    let deps_of = |i: usize| -> Vec<usize> {
        planned.subtasks[i]
            .dependencies
            .iter()
            .filter_map(|d| (d.0 as usize).checked_sub(1))
            .filter(|d| *d < n)
            .collect()
    };
    let rewired: Vec<Vec<SubtaskId>> = (0..n)
        .map(|i| {
            if !explicit {
                return Vec::new();
            }
            let mut out: Vec<SubtaskId> = Vec::new();
            for d in deps_of(i) {
                let mut seen = vec![false; n];
                for k in kept_of(d, &dropped, &deps_of, &mut seen) {
                    let id = SubtaskId(new_position[k]);
                    if k != i && !out.contains(&id) {
                        out.push(id);
                    }
                }
            }
            out
        })
        .collect();
    let old = std::mem::take(&mut planned.subtasks);
    for (i, mut s) in old.into_iter().enumerate() {
        if dropped[i] {
            continue;
        }
        s.dependencies = if explicit {
            rewired[i].clone()
        } else {
            // A simple plan is a chain by order: the kept steps are chained
            // again (a step's old link pointed at a position that is gone,
            // and the engine refused the plan: "no subtask has id 2").
            match planned.subtasks.len() {
                0 => Vec::new(),
                n => vec![SubtaskId(n as u32)],
            }
        };
        planned.subtasks.push(s);
    }
    planned.repairs.push(format!(
        "dropped {count} steps that list or read files in a workspace that starts empty (rule \
         no_reads_of_an_empty_workspace)"
    ));
}

/// Mends what small models do to plans that the engine cannot see (seen
/// on Qwen2.5-Coder-1.5B, which plans "list_files, read_file, run_python,
/// run_python" for one sum over one given file):
/// - a subtask named after its tool gets a name from its description (a
///   card saying `run_python` tells a person nothing);
/// - in a simple plan, or a complex one that is a chain, whose files were
///   all listed to the planner
///   (`inputs_listed`), a step that only lists files is dropped: the
///   planner already knew them;
/// - in such a plan for a run that starts with an empty workspace
///   (`empty_start`: no file was given), a step that lists or reads files
///   before any step that could write one is dropped: there is nothing to
///   read (Qwen2.5-1.5B planned "list the files, read primes.txt" for a
///   count of primes, told the workspace was empty, and failed reading);
/// - in a simple plan, reading steps and code steps right before a code
///   step become part of it: one program reads, filters and sums, where a
///   chain of steps passes the data between them as text through the
///   model and loses it.
///
/// Each mend is said in `repairs`.
pub fn tidy(
    planned: &mut Planned,
    mode: Mode,
    tools: &[&str],
    inputs_listed: bool,
    empty_start: bool,
) {
    let mut renamed = 0;
    for s in &mut planned.subtasks {
        let named_for_tool = tools.iter().any(|t| s.name.eq_ignore_ascii_case(t))
            || s.tool
                .as_deref()
                .is_some_and(|t| s.name.eq_ignore_ascii_case(t));
        // `compute_total_revenue`: a function's name, not words for a card.
        let identifier = s.name.contains('_')
            && s.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if (named_for_tool || identifier) && !s.description.trim().is_empty() {
            // A name that is a tool's name is the tool the model meant,
            // whatever its tool field says: Qwen2.5-1.5B wrote the tools in
            // the names and shifted the tool fields by one ("read_file"
            // with the tool list_files, "run_python" with read_file), and
            // the shifted fields made the mends below drop its only step
            // that computed.
            if let Some(t) = tools.iter().find(|t| s.name.eq_ignore_ascii_case(t)) {
                s.tool = Some(t.to_string());
            }
            s.name = name_from(&s.description);
            renamed += 1;
        }
    }
    if renamed > 0 {
        planned.repairs.push(format!(
            "named {renamed} subtasks named after a tool or like a function for what they do"
        ));
    }
    // A complex plan that is a chain all the same (each subtask after the
    // one before it, or after none) is mended like a simple one. One whose
    // subtasks are all independent is a chain only when it has steps to
    // join (reading or code: Qwen2.5-1.5B's "read a", "read b", "count"
    // forgot their dependencies); otherwise the planner said they run in
    // parallel, and a chain of them ran 20 tool-less subtasks one at a
    // time (`cargo bench -p server --bench agent -- parallel_dag`: 5.07×
    // the ideal, against 1.02× before the mend).
    let chain = planned
        .subtasks
        .iter()
        .enumerate()
        .all(|(i, s)| s.dependencies.is_empty() || s.dependencies == [SubtaskId(i as u32)]);
    let independent = planned.subtasks.iter().all(|s| s.dependencies.is_empty());
    let joinable = planned
        .subtasks
        .iter()
        .any(|s| s.tool.as_deref().is_some_and(joins));
    let linear = matches!(mode, Mode::Simple)
        || (mode == Mode::Complex && chain && (!independent || joinable));
    if !linear || planned.subtasks.len() < 2 {
        return;
    }
    let before = planned.subtasks.len();
    if inputs_listed {
        let listing = |s: &NewSubtask| s.tool.as_deref() == Some("list_files");
        if !planned.subtasks.iter().all(listing) {
            planned.subtasks.retain(|s| !listing(s));
        }
    }
    let dropped = before - planned.subtasks.len();
    if dropped > 0 {
        planned.repairs.push(format!(
            "dropped {dropped} steps that only list the files the planner was given"
        ));
    }
    if empty_start {
        // Steps before the first one that could write a file (any tool but
        // a reading one; a step without a tool writes nothing).
        let first_writer = planned
            .subtasks
            .iter()
            .position(|s| s.tool.as_deref().is_some_and(|t| !READING.contains(&t)))
            .unwrap_or(planned.subtasks.len());
        let reading = |s: &NewSubtask| s.tool.as_deref().is_some_and(|t| READING.contains(&t));
        let void = planned.subtasks[..first_writer]
            .iter()
            .filter(|s| reading(s))
            .count();
        if void > 0 && void < planned.subtasks.len() {
            let mut i = 0;
            planned.subtasks.retain(|s| {
                i += 1;
                !(i <= first_writer && reading(s))
            });
            planned.repairs.push(format!(
                "dropped {void} steps that list or read files in a workspace that starts empty"
            ));
        }
    }
    let has_code = tools.contains(&CODE);
    // Each kept subtask with the descriptions of the steps it took in.
    let mut merged: Vec<(NewSubtask, Vec<String>)> = Vec::new();
    let mut absorbed = 0;
    let mut writes = 0;
    for mut s in std::mem::take(&mut planned.subtasks) {
        let mut steps = vec![s.description.trim().to_string()];
        if has_code && s.tool.as_deref() == Some(CODE) {
            while let Some((last, _)) = merged.last() {
                let t = last.tool.as_deref().unwrap_or("");
                if t == WRITING {
                    writes += 1;
                } else if joins(t) {
                    absorbed += 1;
                } else {
                    break;
                }
                let (_, earlier) = merged.pop().unwrap_or_default();
                steps.splice(0..0, earlier);
            }
        } else if has_code
            && s.tool.as_deref() == Some(WRITING)
            && merged
                .last()
                .is_some_and(|(last, _)| last.tool.as_deref() == Some(CODE))
        {
            // The file of what the code computed is written by that code
            // (Qwen2.5-1.5B's code wrote sorted.txt sorted, then its
            // write_file step typed the words unsorted over it); the step
            // keeps the later name, which says what the person gets.
            let (_, earlier) = merged.pop().unwrap_or_default();
            writes += 1;
            steps.splice(0..0, earlier);
            s.tool = Some(CODE.to_string());
        }
        merged.push((s, steps));
    }
    if absorbed > 0 {
        planned.repairs.push(format!(
            "joined {absorbed} reading and code steps into the code step after them"
        ));
    }
    if writes > 0 {
        planned.repairs.push(format!(
            "joined {writes} file-writing steps into the code step next to them (the program \
             writes what it computes)"
        ));
    }
    let mut merged: Vec<NewSubtask> = merged
        .into_iter()
        .map(|(s, steps)| {
            if steps.len() == 1 {
                return s;
            }
            let numbered = steps
                .iter()
                .enumerate()
                .map(|(i, d)| format!("{}. {d}", i + 1))
                .collect::<Vec<_>>()
                .join(" ");
            NewSubtask {
                description: cut_to(&format!("In one program: {numbered}"), 1_000).to_string(),
                ..s
            }
        })
        .collect();
    // A simple plan is a chain again.
    for (i, s) in merged.iter_mut().enumerate() {
        s.dependencies = if i == 0 {
            Vec::new()
        } else {
            vec![SubtaskId(i as u32)]
        };
    }
    planned.subtasks = merged;
}

/// Whether a step with this tool is joined into the code step after it
/// (reading and code: one program does both).
fn joins(tool: &str) -> bool {
    tool == CODE || READING.contains(&tool)
}

/// A subtask's name from its description: the first sentence, at most 60
/// characters, cut at a word.
fn name_from(description: &str) -> String {
    let text = description.trim();
    // The first sentence: up to a full stop before a space or the end (not
    // the one in `sales.csv`), a line break or a semicolon.
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            c == '\n' || c == ';' || (c == '.' && text[i + 1..].starts_with([' ', '\n']))
        })
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    let first = text[..end].trim_end_matches('.').trim();
    if first.chars().count() <= 60 {
        return first.to_string();
    }
    let cut = cut_to(first, 57);
    let at_word = cut.rfind(' ').map(|i| &cut[..i]).unwrap_or(cut);
    format!("{at_word}…")
}

/// The engine's verdict on a planned plan, without creating it.
pub fn check(planned: &Planned, mode: Mode) -> Result<(), Unreadable> {
    let spec = NewPlan {
        title: planned.title.clone(),
        mode,
        subtasks: planned.subtasks.clone(),
        ..NewPlan::default()
    };
    Plan::create(&spec, "planner", chrono::Utc::now())
        .map(|_| ())
        .map_err(Unreadable::PlanRefused)
}

fn summary(plan: &Plan) -> String {
    plan.subtasks()
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let deps: Vec<String> = s
                .dependencies()
                .iter()
                .filter_map(|d| plan.position(*d).map(|p| (p + 1).to_string()))
                .collect();
            format!(
                "{}. {} — {}{}",
                i + 1,
                s.name(),
                s.description(),
                if deps.is_empty() {
                    String::new()
                } else {
                    format!(" (after {})", deps.join(", "))
                }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One planning call (plus repairs) for `mode`.
pub async fn plan(
    caller: &Caller,
    mode: Mode,
    task: &str,
    tools: &[crate::protocol::ToolSpec],
    memory: &str,
    revision: Option<Revision<'_>>,
    given_files: bool,
) -> Result<Planned, CallError> {
    let files = if given_files {
        prompts::PLAN_FILES
    } else {
        prompts::PLAN_NO_FILES
    };
    let mut user = format!("Task: {task}\n{files}\n{}", prompts::LANGUAGE);
    if !memory.is_empty() {
        user.push_str("\n\n");
        user.push_str(memory);
    }
    if !tools.is_empty() {
        user.push_str(&format!("\n\n{}\n", prompts::PLAN_TOOLS));
        for tool in tools {
            let first = tool.description.split(". ").next().unwrap_or_default();
            user.push_str(&format!("- {}: {}\n", tool.name, cut_to(first, 120)));
        }
        let web = tools.iter().any(|t| WEB_TOOLS.contains(&t.name.as_str()));
        if web && tools.iter().any(|t| t.name == CODE) {
            user.push_str(prompts::PLAN_WEB);
            user.push('\n');
        }
    }
    if let Some(r) = &revision {
        user.push_str(&format!(
            "\n\n{}\nThe rejected plan:\n{}\nThe person's comment: {}",
            prompts::REVISE,
            summary(r.plan),
            r.comment
        ));
    }
    let mut messages = vec![Message::system(system(mode)), Message::user(user)];
    let mut repairs = 0;
    loop {
        let answer: PlanAnswer = caller
            .json_with(
                CallRole::Planner,
                "plan",
                plan_schema(mode, tools),
                messages.clone(),
                1500,
                None,
            )
            .await?;
        let problem = match shape(mode, &answer).and_then(|p| check(&p, mode).map(|_| p)) {
            Ok(planned) => return Ok(planned),
            Err(problem) => problem,
        };
        if repairs == REPAIRS {
            // A few TODOs may also run unordered: a model that cannot get
            // their dependencies right loses those, not the run.
            if let Some(planned) = (mode == Mode::Emergent)
                .then(|| unordered(&answer, &problem))
                .flatten()
            {
                return Ok(planned);
            }
            return Err(CallError::Refused {
                tries: REPAIRS + 1,
                last: problem,
                answer: crate::call::shown_answer(
                    &serde_json::to_string(&answer).unwrap_or_default(),
                ),
            });
        }
        repairs += 1;
        messages.push(Message::assistant(
            serde_json::to_string(&answer).unwrap_or_default(),
        ));
        messages.push(Message::user(format!(
            "The plan was refused: {problem}\nFix it and answer with the whole plan as JSON again."
        )));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposed(name: &str, after: &[u32]) -> Proposed {
        Proposed {
            depends_on: after.to_vec(),
            description: format!("do {name}"),
            expected_outcome: String::new(),
            name: name.into(),
            tool: String::new(),
        }
    }

    #[test]
    fn a_simple_plan_becomes_a_chain_and_ignores_dependencies() {
        let answer = PlanAnswer {
            title: "t".into(),
            subtasks: vec![proposed("a", &[]), proposed("b", &[]), proposed("c", &[1])],
        };
        let planned = shape(Mode::Simple, &answer).unwrap();
        let deps: Vec<Vec<SubtaskId>> = planned
            .subtasks
            .iter()
            .map(|s| s.dependencies.clone())
            .collect();
        assert_eq!(deps, vec![vec![], vec![SubtaskId(1)], vec![SubtaskId(2)]]);
    }

    #[test]
    fn a_cycle_in_a_complex_plan_is_refused_in_the_engines_words() {
        let answer = PlanAnswer {
            title: "t".into(),
            subtasks: vec![proposed("a", &[2]), proposed("b", &[1])],
        };
        let planned = shape(Mode::Complex, &answer).unwrap();
        let e = check(&planned, Mode::Complex).unwrap_err().to_string();
        assert!(e.contains("cycle"), "{e}");
    }

    #[test]
    fn too_many_subtasks_for_the_mode_are_cut_to_its_limit_and_said() {
        // Qwen2.5-1.5B answered 4 to 9 TODOs to the emergent planner.
        let answer = PlanAnswer {
            title: "t".into(),
            subtasks: (0..9).map(|i| proposed(&format!("s{i}"), &[])).collect(),
        };
        let planned = shape(Mode::Emergent, &answer).unwrap();
        let names: Vec<&str> = planned.subtasks.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["s0", "s1", "s2"]);
        assert_eq!(
            planned.repairs,
            ["kept the first 3 of 9 subtasks (a emergent plan has at most 3)"]
        );
    }

    #[test]
    fn self_unknown_and_cut_dependencies_are_dropped_and_nameless_subtasks_too() {
        let mut subtasks: Vec<Proposed> = vec![
            proposed("a", &[1]),
            proposed("", &[]),
            proposed("c", &[1, 1, 2, 999]),
        ];
        subtasks.extend((0..100).map(|i| proposed(&format!("x{i}"), &[3])));
        subtasks.push(proposed("late", &[]));
        subtasks[4].depends_on = vec![104];
        let answer = PlanAnswer {
            title: " ".into(),
            subtasks,
        };
        let planned = shape(Mode::Complex, &answer).unwrap();
        assert_eq!(planned.subtasks.len(), 100);
        assert_eq!(planned.title, "a", "named after the first subtask");
        assert!(planned.subtasks[0].dependencies.is_empty(), "not on itself");
        // `c` (now #2) keeps its dependency on `a`; 2 (nameless) and 999 go.
        assert_eq!(planned.subtasks[1].dependencies, vec![SubtaskId(1)]);
        // x0 (old 4, now #3) depended on `c` (old 3, now #2).
        assert_eq!(planned.subtasks[2].dependencies, vec![SubtaskId(2)]);
        // x1 depended on a subtask cut off the end.
        assert!(planned.subtasks[3].dependencies.is_empty());
        assert!(check(&planned, Mode::Complex).is_ok());
        let said = planned.repairs.join("; ");
        for part in [
            "dropped 1 subtasks without a name",
            "kept the first 100 of 103",
            "dropped 1 dependencies of a subtask on itself",
            "dropped 3 dependencies on subtasks that do not exist",
            "no title",
        ] {
            assert!(said.contains(part), "{part} in {said}");
        }
    }

    fn step(name: &str, tool: &str, description: &str) -> NewSubtask {
        NewSubtask {
            name: name.into(),
            description: description.into(),
            tool: (!tool.is_empty()).then(|| tool.to_string()),
            ..NewSubtask::default()
        }
    }

    const TOOLS: [&str; 4] = ["list_files", "read_file", "run_python", "fetch_url"];

    #[test]
    fn a_simple_plan_of_listing_reading_and_code_steps_becomes_one_named_code_step() {
        // Qwen2.5-Coder-1.5B's plan for one sum over one given CSV.
        let mut planned = Planned {
            title: "Sum".into(),
            subtasks: vec![
                step("list_files", "", "List the files in the workspace."),
                step("read_file", "read_file", "Read the sales.csv file."),
                step(
                    "run_python",
                    "run_python",
                    "Filter the rows of north in March.",
                ),
                step("run_python", "run_python", "Sum the revenue column."),
            ],
            repairs: Vec::new(),
        };
        tidy(&mut planned, Mode::Simple, &TOOLS, true, false);
        assert_eq!(planned.subtasks.len(), 1, "{:#?}", planned.subtasks);
        let s = &planned.subtasks[0];
        assert_eq!(s.tool.as_deref(), Some("run_python"));
        assert_eq!(s.name, "Sum the revenue column");
        assert_eq!(
            s.description,
            "In one program: 1. Read the sales.csv file. 2. Filter the rows of north in March. \
             3. Sum the revenue column."
        );
        assert!(s.dependencies.is_empty());
        assert_eq!(planned.repairs.len(), 3, "{:?}", planned.repairs);
    }

    #[test]
    fn a_subtask_named_after_a_tool_uses_that_tool_when_its_tool_field_names_another() {
        // Qwen2.5-1.5B's plan for a count of primes, no files given: the
        // tool fields shifted by one against the names.
        let mut planned = Planned {
            title: "Count".into(),
            subtasks: vec![
                step("list_files", "", "List all files in the workspace"),
                step("read_file", "list_files", "Read the file of the numbers"),
                step("run_python", "read_file", "Count the numbers"),
                step("write_file", "run_python", "Write the count to a file"),
            ],
            repairs: Vec::new(),
        };
        tidy(&mut planned, Mode::Simple, &TOOLS_WRITING, true, true);
        assert_eq!(planned.subtasks.len(), 1, "{:#?}", planned.subtasks);
        let s = &planned.subtasks[0];
        assert_eq!(s.tool.as_deref(), Some("run_python"));
        assert!(
            s.description.contains("Count the numbers")
                && s.description.contains("Write the count to a file"),
            "the computing step is kept: {}",
            s.description
        );
    }

    #[test]
    fn steps_that_are_not_reading_or_code_stay_and_the_chain_is_rebuilt() {
        let mut planned = Planned {
            title: "t".into(),
            subtasks: vec![
                step("Fetch the page", "fetch_url", "Fetch it."),
                step("Count the words", "run_python", "Count."),
                step("Write the summary", "", "Write."),
            ],
            repairs: Vec::new(),
        };
        let before = planned.subtasks.clone();
        tidy(&mut planned, Mode::Simple, &TOOLS, true, false);
        assert_eq!(planned.subtasks.len(), 3);
        assert_eq!(planned.subtasks[0].name, before[0].name);
        assert_eq!(planned.subtasks[2].dependencies, vec![SubtaskId(2)]);
        assert!(planned.repairs.is_empty());
    }

    #[test]
    fn listing_steps_stay_when_the_planner_was_not_given_every_file_and_complex_graphs_keep_their_shape(
    ) {
        let plan = || Planned {
            title: "t".into(),
            subtasks: vec![
                step("See the files", "list_files", "List them."),
                step("Summarise", "", "Write it."),
            ],
            repairs: Vec::new(),
        };
        let mut unlisted = plan();
        tidy(&mut unlisted, Mode::Simple, &TOOLS, false, false);
        assert_eq!(unlisted.subtasks.len(), 2);
        let mut identifier = Planned {
            subtasks: vec![step("compute_total", "", "Add the totals up.")],
            ..plan()
        };
        tidy(&mut identifier, Mode::Simple, &TOOLS, true, false);
        assert_eq!(identifier.subtasks[0].name, "Add the totals up");
        let mut complex = Planned {
            subtasks: vec![
                step("read_file", "read_file", "Read a.csv."),
                step("read_file", "read_file", "Read b.csv."),
                NewSubtask {
                    dependencies: vec![SubtaskId(1), SubtaskId(2)],
                    ..step("run_python", "run_python", "Sum both.")
                },
            ],
            ..plan()
        };
        tidy(&mut complex, Mode::Complex, &TOOLS, true, false);
        assert_eq!(complex.subtasks.len(), 3, "a graph is only renamed");
        assert_eq!(complex.subtasks[0].name, "Read a.csv");
        let mut chained = Planned {
            subtasks: vec![
                step("read_file", "read_file", "Read a.csv."),
                step("run_python", "run_python", "Sum it.").after(&[1]),
            ],
            ..plan()
        };
        tidy(&mut chained, Mode::Complex, &TOOLS, true, false);
        assert_eq!(
            chained.subtasks.len(),
            1,
            "a chain is mended like a simple plan"
        );
        let mut forgotten = Planned {
            subtasks: vec![
                step("read_file", "read_file", "Read a.csv."),
                step("run_python", "run_python", "Sum it."),
            ],
            ..plan()
        };
        tidy(&mut forgotten, Mode::Complex, &TOOLS, true, false);
        assert_eq!(
            forgotten.subtasks.len(),
            1,
            "independent reading and code steps are joined as a chain's"
        );
        let mut parallel = Planned {
            subtasks: vec![
                step("Draft the intro", "", "Write the intro."),
                step("Draft the summary", "", "Write the summary."),
                step("Draft the outlook", "", "Write the outlook."),
            ],
            ..plan()
        };
        tidy(&mut parallel, Mode::Complex, &TOOLS, true, false);
        assert!(
            parallel.subtasks.iter().all(|s| s.dependencies.is_empty()),
            "independent subtasks with nothing to join stay parallel: {:#?}",
            parallel.subtasks
        );
    }

    #[test]
    fn in_a_run_given_no_files_steps_that_list_or_read_before_anything_is_written_are_dropped() {
        // Qwen2.5-Coder-1.5B's plan for a count of primes, given no file.
        let plan = || Planned {
            title: "Primes".into(),
            subtasks: vec![
                step(
                    "List the files in the workspace",
                    "list_files",
                    "List them.",
                ),
                step("Read primes.txt", "read_file", "Read the file primes.txt."),
                step(
                    "Count the primes",
                    "run_python",
                    "Count the primes below the bound.",
                ),
                step("Read the output back", "read_file", "Read out.txt."),
                step("Say it", "", "Write the answer."),
            ],
            repairs: Vec::new(),
        };
        let mut empty = plan();
        tidy(&mut empty, Mode::Simple, &TOOLS, true, true);
        let names: Vec<&str> = empty.subtasks.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["Count the primes", "Read the output back", "Say it"],
            "what the code may write can be read after it"
        );
        assert!(empty.subtasks[0].dependencies.is_empty());
        assert_eq!(empty.subtasks[2].dependencies, vec![SubtaskId(2)]);
        assert!(
            empty
                .repairs
                .iter()
                .any(|r| r
                    == "dropped 1 steps that list or read files in a workspace that starts empty"),
            "{:?}",
            empty.repairs
        );
        // With files given, reading them stays (joined into the code step).
        let mut given = plan();
        tidy(&mut given, Mode::Simple, &TOOLS, false, false);
        assert_eq!(given.subtasks[0].name, "Count the primes");
        assert!(given.subtasks[0]
            .description
            .contains("Read the file primes.txt."));
        // A plan of nothing but reading is left for the executor to fail.
        let mut only = Planned {
            subtasks: vec![step("Read it", "read_file", "Read a.txt.")],
            ..plan()
        };
        tidy(&mut only, Mode::Simple, &TOOLS, true, true);
        assert_eq!(only.subtasks.len(), 1);
    }

    #[test]
    fn a_file_writing_step_next_to_a_code_step_becomes_part_of_the_program() {
        // Qwen2.5-Coder-1.5B's plan for a sorted copy of a word list: the
        // code sorted and wrote the file, the write step typed it unsorted.
        let mut after = Planned {
            title: "Sort".into(),
            subtasks: vec![
                step("sort", "run_python", "Sort the words of words.txt."),
                step(
                    "Write the sorted words to sorted.txt",
                    "write_file",
                    "Write them one per line into sorted.txt.",
                ),
                step("Tell", "", "Say where the file is."),
            ],
            repairs: Vec::new(),
        };
        tidy(&mut after, Mode::Simple, &TOOLS_WRITING, true, false);
        assert_eq!(after.subtasks.len(), 2, "{:#?}", after.subtasks);
        let s = &after.subtasks[0];
        assert_eq!(s.name, "Write the sorted words to sorted.txt");
        assert_eq!(s.tool.as_deref(), Some("run_python"));
        assert_eq!(
            s.description,
            "In one program: 1. Sort the words of words.txt. 2. Write them one per line into \
             sorted.txt."
        );
        assert_eq!(after.subtasks[1].dependencies, vec![SubtaskId(1)]);
        assert!(after.repairs[0].starts_with("joined 1 file-writing steps"));
        // Before the code step, too: one program computes and writes.
        let mut before = Planned {
            subtasks: vec![
                step("Save it", "write_file", "Write the count to count.txt."),
                step("Count", "run_python", "Count the primes."),
            ],
            ..after.clone()
        };
        tidy(&mut before, Mode::Simple, &TOOLS_WRITING, true, false);
        assert_eq!(before.subtasks.len(), 1);
        assert_eq!(before.subtasks[0].tool.as_deref(), Some("run_python"));
        // Without a code tool, or with no code step beside it, it stays.
        let mut alone = Planned {
            subtasks: vec![
                step("Draft", "", "Draft the letter."),
                step("Save it", "write_file", "Write it to letter.md."),
            ],
            ..after.clone()
        };
        tidy(&mut alone, Mode::Simple, &TOOLS_WRITING, true, false);
        assert_eq!(alone.subtasks[1].tool.as_deref(), Some("write_file"));
    }

    const TOOLS_WRITING: [&str; 5] = [
        "list_files",
        "read_file",
        "write_file",
        "run_python",
        "fetch_url",
    ];

    #[test]
    fn an_answer_with_no_usable_subtask_is_refused() {
        let answer = PlanAnswer {
            title: "t".into(),
            subtasks: vec![proposed(" ", &[])],
        };
        let e = shape(Mode::Simple, &answer).unwrap_err().to_string();
        assert!(e.contains("0 subtasks"), "{e}");
    }

    #[test]
    fn each_modes_schema_states_its_own_bounds() {
        for (mode, max) in [(Mode::Simple, 7), (Mode::Complex, 100), (Mode::Emergent, 3)] {
            let schema = plan_schema(mode, &[]);
            assert_eq!(
                schema["properties"]["subtasks"]["maxItems"], max,
                "{mode:?}"
            );
            assert_eq!(schema["properties"]["subtasks"]["minItems"], 1);
            let item = &schema["properties"]["subtasks"]["items"]["properties"];
            assert_eq!(
                item.get("depends_on").is_some(),
                mode != Mode::Simple,
                "{mode:?}"
            );
        }
        let emergent = plan_schema(Mode::Emergent, &[]);
        let depends = &emergent["properties"]["subtasks"]["items"]["properties"]["depends_on"];
        assert_eq!(depends["maxItems"], 2, "the other TODOs of the start");
        assert_eq!(depends["items"]["maximum"], 3);
        assert_eq!(depends["items"]["minimum"], 1);
    }

    #[test]
    fn an_emergent_starts_dependencies_become_the_plans_and_a_cycle_is_refused_in_the_engines_words(
    ) {
        let answer = PlanAnswer {
            title: "t".into(),
            subtasks: vec![
                proposed("look", &[]),
                proposed("dig", &[1]),
                proposed("aside", &[]),
            ],
        };
        let planned = shape(Mode::Emergent, &answer).unwrap();
        let deps: Vec<Vec<SubtaskId>> = planned
            .subtasks
            .iter()
            .map(|s| s.dependencies.clone())
            .collect();
        assert_eq!(deps, vec![vec![], vec![SubtaskId(1)], vec![]]);
        assert!(planned.repairs.is_empty());
        let cycle = PlanAnswer {
            title: "t".into(),
            subtasks: vec![proposed("a", &[2]), proposed("b", &[1])],
        };
        let planned = shape(Mode::Emergent, &cycle).unwrap();
        let e = check(&planned, Mode::Emergent).unwrap_err().to_string();
        assert!(e.contains("cycle"), "{e}");
        // Given up on, the start runs unordered and says why.
        let problem = check(&planned, Mode::Emergent).unwrap_err();
        let unordered = unordered(&cycle, &problem).unwrap();
        assert!(unordered.subtasks.iter().all(|s| s.dependencies.is_empty()));
        assert!(
            unordered.repairs[0].starts_with("dropped the TODOs' dependencies, refused 3 times: "),
            "{:?}",
            unordered.repairs
        );
    }

    #[test]
    fn an_emergent_todo_naming_itself_or_a_position_the_answer_lacks_is_refused_with_the_reason() {
        for (after, said) in [
            (
                3,
                "TODO 2 ('b') depends on 3, but the answer has TODOs 1 to 2",
            ),
            (
                0,
                "TODO 2 ('b') depends on 0, but the answer has TODOs 1 to 2",
            ),
            (2, "TODO 2 ('b') depends on itself"),
        ] {
            let answer = PlanAnswer {
                title: "t".into(),
                subtasks: vec![proposed("a", &[]), proposed("b", &[after])],
            };
            let e = shape(Mode::Emergent, &answer).unwrap_err();
            assert!(matches!(e, Unreadable::BadDependency(_)), "{e:?}");
            assert!(e.to_string().starts_with(said), "{e}");
        }
        // A complex plan mends the same answer instead (as before).
        let answer = PlanAnswer {
            title: "t".into(),
            subtasks: vec![proposed("a", &[]), proposed("b", &[3])],
        };
        assert!(shape(Mode::Complex, &answer).is_ok());
    }

    fn tool(name: &str) -> crate::protocol::ToolSpec {
        crate::protocol::ToolSpec {
            name: name.into(),
            description: format!("{name} does its work. More."),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    /// The planner's user prompt for a task offered `tools`.
    async fn prompt_with(tools: &[&str]) -> String {
        let llm = std::sync::Arc::new(crate::llm::ScriptedLlm::new().push_json(
            CallRole::Planner,
            serde_json::json!({"title": "t", "subtasks": [{"name": "Add them up",
                "description": "d", "expected_outcome": "", "tool": ""}]}),
        ));
        let caller = Caller::standalone(llm.clone(), 1, crate::llm::Protocol::JsonSchema);
        let specs: Vec<_> = tools.iter().map(|t| tool(t)).collect();
        plan(
            &caller,
            Mode::Simple,
            "Sum 2^100's digits",
            &specs,
            "",
            None,
            false,
        )
        .await
        .unwrap();
        llm.requests()[0].messages[1].content.clone()
    }

    #[tokio::test]
    async fn with_code_at_hand_the_planner_is_told_the_web_is_for_look_ups_only() {
        let rule = "never for what a program can compute";
        let both = prompt_with(&["run_python", "fetch_url", "web_search"]).await;
        assert!(both.contains(rule), "{both}");
        assert!(!prompt_with(&["fetch_url"]).await.contains(rule));
        assert!(!prompt_with(&["run_python"]).await.contains(rule));
    }

    fn writing(name: &str, description: &str) -> NewSubtask {
        NewSubtask {
            name: name.into(),
            description: description.into(),
            tool: Some(WRITING.into()),
            ..NewSubtask::default()
        }
    }

    #[test]
    fn a_step_typing_a_file_the_task_does_not_name_is_computed_by_a_program() {
        let tools = ["write_file", "run_python"];
        let mut planned = Planned {
            title: "t".into(),
            subtasks: vec![writing(
                "Write the digit sum",
                "Write the sum of the digits of 2^100 to a file named 'output.txt'.",
            )],
            repairs: Vec::new(),
        };
        compute_unasked_writes(&mut planned, &tools, "What is the digit sum of 2^100?");
        assert_eq!(planned.subtasks[0].tool.as_deref(), Some(CODE));
        assert_eq!(planned.repairs.len(), 1, "{:?}", planned.repairs);

        // A file the task names is written as planned.
        let mut asked = Planned {
            title: "t".into(),
            subtasks: vec![writing("Write the poem", "Write the poem into poem.txt.")],
            repairs: Vec::new(),
        };
        compute_unasked_writes(
            &mut asked,
            &tools,
            "Write a poem about the sea into poem.txt",
        );
        assert_eq!(asked.subtasks[0].tool.as_deref(), Some(WRITING));
        assert!(asked.repairs.is_empty());

        // Not without code, nor where a step already runs code.
        let mut no_code = planned_with_write();
        compute_unasked_writes(&mut no_code, &["write_file"], "What is 2+2?");
        assert_eq!(no_code.subtasks[0].tool.as_deref(), Some(WRITING));
        let mut coded = planned_with_write();
        coded.subtasks.push(NewSubtask {
            name: "Compute".into(),
            tool: Some(CODE.into()),
            ..NewSubtask::default()
        });
        compute_unasked_writes(&mut coded, &tools, "What is 2+2?");
        assert_eq!(coded.subtasks[0].tool.as_deref(), Some(WRITING));
    }

    #[test]
    fn a_last_step_writing_a_file_nobody_asked_for_after_the_code_is_dropped() {
        let tools = ["read_file", "write_file", "run_python"];
        let plan = |last: NewSubtask| Planned {
            title: "t".into(),
            subtasks: vec![
                step("Read sales.csv", "read_file", "Read sales.csv."),
                step(
                    "Sum the March revenue",
                    CODE,
                    "Sum the north region's March revenue.",
                ),
                last,
            ],
            repairs: Vec::new(),
        };
        let task =
            "What was the total revenue of the north region in 2026-03, according to sales.csv?";
        let mut planned = plan(writing(
            "write_file",
            "Write the result to a file named 'total_revenue_north_2026_03.txt'.",
        ));
        drop_unasked_writes(&mut planned, &tools, task);
        assert_eq!(planned.subtasks.len(), 2);
        assert_eq!(planned.subtasks[1].tool.as_deref(), Some(CODE));
        assert!(planned.repairs[0].starts_with("dropped 1 steps that write a file"));

        // Kept: a file the task names, a task that asks for a write, no
        // code before it, no code offered, a step another depends on.
        let mut named = plan(writing("Write it", "Write the total to out.txt."));
        drop_unasked_writes(&mut named, &tools, "Put the total of sales.csv in out.txt");
        assert_eq!(named.subtasks.len(), 3);
        let mut asked = plan(writing("Write it", "Write the total to a file."));
        drop_unasked_writes(&mut asked, &tools, "Sum sales.csv and save the total");
        assert_eq!(asked.subtasks.len(), 3);
        let mut uncoded = plan(writing("Write it", "Write the total to out.txt."));
        uncoded.subtasks[1].tool = Some("read_file".into());
        drop_unasked_writes(&mut uncoded, &tools, task);
        assert_eq!(uncoded.subtasks.len(), 3);
        let mut no_code = plan(writing("Write it", "Write the total to out.txt."));
        drop_unasked_writes(&mut no_code, &["read_file", "write_file"], task);
        assert_eq!(no_code.subtasks.len(), 3);
        let mut needed = plan(writing("Write it", "Write the total to out.txt."));
        needed.subtasks[1].dependencies = vec![SubtaskId(3)];
        drop_unasked_writes(&mut needed, &tools, task);
        assert_eq!(needed.subtasks.len(), 3);
        assert!(named.repairs.is_empty() && asked.repairs.is_empty() && needed.repairs.is_empty());
    }

    fn planned_with_write() -> Planned {
        Planned {
            title: "t".into(),
            subtasks: vec![writing("Write it", "Write the result to out.txt.")],
            repairs: Vec::new(),
        }
    }

    /// A planned step named `name`, with its tool and 1-based dependencies.
    fn linked(name: &str, tool: Option<&str>, deps: &[u32]) -> NewSubtask {
        NewSubtask {
            name: name.into(),
            description: name.into(),
            tool: tool.map(str::to_string),
            dependencies: deps.iter().map(|d| SubtaskId(*d)).collect(),
            ..NewSubtask::default()
        }
    }

    #[test]
    fn reading_an_empty_workspace_is_dropped_in_an_emergent_plan_and_its_dependents_rewired() {
        let mut planned = Planned {
            title: "t".into(),
            subtasks: vec![
                linked("List the files in the workspace", Some("list_files"), &[]),
                linked("Read a text file", Some("read_file"), &[1]),
                linked("Write the poem", None, &[2]),
                linked("Save the poem", Some("write_file"), &[3]),
                linked("Read it back", Some("read_file"), &[4]),
            ],
            repairs: Vec::new(),
        };
        drop_reads_of_an_empty_workspace(&mut planned, Mode::Emergent, true);
        let names: Vec<&str> = planned.subtasks.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Write the poem", "Save the poem", "Read it back"]);
        assert_eq!(planned.subtasks[0].dependencies, Vec::<SubtaskId>::new());
        assert_eq!(planned.subtasks[1].dependencies, vec![SubtaskId(1)]);
        assert_eq!(
            planned.subtasks[2].dependencies,
            vec![SubtaskId(2)],
            "after the write: kept"
        );
        assert!(
            planned.repairs[0].contains("dropped 2 steps"),
            "{:?}",
            planned.repairs
        );
        // Files given: nothing is dropped.
        let mut given = planned.clone();
        given
            .subtasks
            .insert(0, linked("Read the notes", Some("read_file"), &[]));
        let before = given.subtasks.len();
        drop_reads_of_an_empty_workspace(&mut given, Mode::Emergent, false);
        assert_eq!(given.subtasks.len(), before);
        // Only reading steps: kept as they are.
        let mut only = Planned {
            title: "t".into(),
            subtasks: vec![linked("List", Some("list_files"), &[])],
            repairs: Vec::new(),
        };
        drop_reads_of_an_empty_workspace(&mut only, Mode::Emergent, true);
        assert_eq!(only.subtasks.len(), 1);
    }

    /// Dropped from a simple plan (a chain), the reading steps take their
    /// links with them: what is kept is a chain the engine accepts.
    #[test]
    fn reading_an_empty_workspace_is_dropped_from_a_simple_plan_and_the_rest_chained_again() {
        let mut planned = Planned {
            title: "t".into(),
            subtasks: vec![
                linked("List the files in the workspace", Some("list_files"), &[]),
                linked("Read a text file", Some("read_file"), &[1]),
                linked("Write the haiku", None, &[2]),
                linked("Save the haiku", Some("write_file"), &[3]),
            ],
            repairs: Vec::new(),
        };
        drop_reads_of_an_empty_workspace(&mut planned, Mode::Simple, true);
        let names: Vec<&str> = planned.subtasks.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Write the haiku", "Save the haiku"]);
        assert_eq!(planned.subtasks[0].dependencies, Vec::<SubtaskId>::new());
        assert_eq!(planned.subtasks[1].dependencies, vec![SubtaskId(1)]);
        check(&planned, Mode::Simple).expect("the engine takes the plan");
    }

    #[test]
    fn a_step_using_a_file_a_later_step_writes_comes_after_that_step() {
        let mut planned = Planned {
            title: "t".into(),
            subtasks: vec![
                linked("Count the words in long_words.txt", Some(CODE), &[]),
                linked("Write long_words.txt", Some(CODE), &[1]),
                linked("Tell the count", None, &[2]),
            ],
            repairs: Vec::new(),
        };
        files_written_before_read(&mut planned, Mode::Simple, &["story.txt".into()]);
        let names: Vec<&str> = planned.subtasks.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Write long_words.txt",
                "Count the words in long_words.txt",
                "Tell the count"
            ]
        );
        assert!(planned.repairs[0].contains("moved 1 step(s)"));
        check(&planned, Mode::Simple).expect("the engine takes the plan");

        // A file the person gave, or one an earlier step writes, orders
        // nothing; nor does a complex plan, whose links say the order.
        for (mode, given) in [
            (Mode::Simple, "long_words.txt"),
            (Mode::Complex, "story.txt"),
        ] {
            let mut same = Planned {
                title: "t".into(),
                subtasks: vec![
                    linked("Count the words in long_words.txt", Some(CODE), &[]),
                    linked("Write long_words.txt", Some(CODE), &[]),
                ],
                repairs: Vec::new(),
            };
            files_written_before_read(&mut same, mode, &[given.into()]);
            assert_eq!(same.subtasks[0].name, "Count the words in long_words.txt");
            assert!(same.repairs.is_empty());
        }
        let mut ordered = Planned {
            title: "t".into(),
            subtasks: vec![
                linked("Save the totals to totals.csv", Some(CODE), &[]),
                linked(
                    "Draw a chart from totals.csv into chart.png",
                    Some(CODE),
                    &[1],
                ),
            ],
            repairs: Vec::new(),
        };
        files_written_before_read(&mut ordered, Mode::Simple, &[]);
        assert_eq!(ordered.subtasks[0].name, "Save the totals to totals.csv");
        assert!(ordered.repairs.is_empty());
        // Only the file a step writes counts as written, not one it reads
        // on the way: the plot step stays after the step making its data.
        let mut plotted = Planned {
            title: "t".into(),
            subtasks: vec![
                linked("Run gen.py to make data.csv", Some(CODE), &[]),
                linked("Plot data.csv and save it to chart.png", Some(CODE), &[1]),
            ],
            repairs: Vec::new(),
        };
        files_written_before_read(&mut plotted, Mode::Simple, &["gen.py".into()]);
        assert!(plotted.repairs.is_empty(), "{:?}", plotted.repairs);
        // The step that uses a file moves down to just after its writer;
        // the steps between keep their order.
        let mut between = Planned {
            title: "t".into(),
            subtasks: vec![
                linked("Count the rows of out.csv", Some(CODE), &[]),
                linked("Create settings.json", Some(WRITING), &[1]),
                linked(
                    "Run build.py with settings.json and save out.csv",
                    Some(CODE),
                    &[2],
                ),
            ],
            repairs: Vec::new(),
        };
        files_written_before_read(&mut between, Mode::Simple, &["build.py".into()]);
        let names: Vec<&str> = between.subtasks.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Create settings.json",
                "Run build.py with settings.json and save out.csv",
                "Count the rows of out.csv"
            ]
        );
        for (step, written) in [
            ("Writes b.txt", vec!["b.txt"]),
            ("Saving the result as b.txt", vec!["b.txt"]),
            ("Put each word into b.txt", vec!["b.txt"]),
            ("Read a.txt and write the total to b.txt", vec!["b.txt"]),
            ("Count the lines of output.txt", vec![]),
            ("Load a.csv and store nothing", vec![]),
        ] {
            let s = linked(step, Some(CODE), &[]);
            assert_eq!(files_written(&s), written, "{step}");
        }
    }

    #[test]
    fn file_names_are_words_with_an_extension_without_their_quotes() {
        assert_eq!(
            crate::grounded::file_names(
                "Write to 'output.txt', then sorted.csv. Version 2.5 and e.g. not"
            ),
            ["output.txt", "sorted.csv"]
        );
    }
}
