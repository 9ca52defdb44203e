//! Seed 002's PlanAgent for a task over a large input: one call plans the
//! next batch of items as subtasks. The coordinator, not the model,
//! guarantees coverage: what the answer leaves out is mended here (an item
//! nobody covered gets a subtask of its own, an item outside the batch or
//! covered twice is dropped), and an answer that cannot be used at all
//! becomes one subtask per item. So a batch always covers its items, and a
//! run in batches never fails at planning for its model's answer.
//!
//! The prompt is bounded whatever the batch number: the task, the run's
//! counts and its last batch ([`BatchProgress::prompt_section`]), and this
//! batch's items (each cut to [`run_model::batch::ITEM_CHARS`]), never
//! every earlier result.

use std::collections::HashSet;

use plan_engine::NewSubtask;
use run_model::{BatchInput, BatchProgress};

use crate::call::{CallError, Caller};
use crate::llm::{CallRole, Message};
use crate::prompts;
use crate::protocol::{BatchAnswer, ToolSpec};
use crate::roles::executor::cut;

/// A batch ready for the plan: each subtask with the items it covers.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchPlanned {
    pub subtasks: Vec<(NewSubtask, Vec<u32>)>,
    /// What was mended without the model (logged on the run).
    pub repairs: Vec<String>,
}

/// What the planner is told about one batch.
pub struct BatchAsk<'a> {
    pub task: &'a str,
    /// The input file's path, as the person named it.
    pub path: &'a str,
    pub input: &'a BatchInput,
    pub progress: &'a BatchProgress,
    pub items: &'a [u32],
    pub tools: &'a [ToolSpec],
    /// A person's comment on the rejected first batch.
    pub comment: Option<&'a str>,
    /// What the run recalled ([`run_model::memory::prompt_section`]; ""
    /// when nothing).
    pub memory: &'a str,
}

/// The answer's schema: as many subtasks as items at most, and `items`
/// limited to this batch's numbers (so a grammar-constrained server cannot
/// name another).
pub fn batch_schema(items: &[u32]) -> serde_json::Value {
    let mut schema = crate::protocol::schema_of::<BatchAnswer>();
    let n = items.len().max(1);
    if let Some(subtasks) = schema.pointer_mut("/properties/subtasks") {
        subtasks["maxItems"] = n.into();
        subtasks["minItems"] = 1.into();
        if let Some(covered) = subtasks.pointer_mut("/items/properties/items") {
            covered["maxItems"] = n.into();
            covered["items"] = serde_json::json!({ "type": "integer", "enum": items });
        }
    }
    schema
}

/// The user message for one batch.
pub fn batch_prompt(ask: &BatchAsk<'_>) -> String {
    let mut out = format!(
        "Task: {}\n{}\n\nInput: {} ({} items).",
        ask.task,
        prompts::LANGUAGE,
        ask.path,
        ask.input.items.len()
    );
    if let Some(header) = &ask.input.header {
        out.push_str(&format!(" Columns: {}", cut(header, 200)));
    }
    out.push('\n');
    out.push_str(&ask.progress.prompt_section(ask.items));
    if !ask.tools.is_empty() {
        let names: Vec<&str> = ask.tools.iter().map(|t| t.name.as_str()).collect();
        out.push_str(&format!(
            "Tools the executor has (name them in a description when needed): {}\n",
            names.join(", ")
        ));
    }
    out.push_str(&format!(
        "\nBatch {} — its items:\n",
        ask.progress.batch + 1
    ));
    for n in ask.items {
        // Items are "item n" everywhere in a run (the failures above, the
        // descriptions, the answer): `#n` names subtasks.
        out.push_str(&format!("item {n}: {}", ask.input.shown(*n)));
        if let Some(retry) = ask.progress.failures_of(*n) {
            out.push_str(&format!(
                " (failed {} times; last: {})",
                retry.failed, retry.reason
            ));
        }
        out.push('\n');
    }
    if let Some(comment) = ask.comment {
        out.push_str(&format!(
            "\nA person rejected the earlier proposal for this batch: {}\n",
            cut(comment, 1_000)
        ));
    }
    if !ask.memory.is_empty() {
        out.push('\n');
        out.push_str(ask.memory);
    }
    out
}

/// The items' lines a subtask's description ends with, so the executor
/// always reads its items whatever the model wrote.
fn items_block(ask: &BatchAsk<'_>, items: &[u32]) -> String {
    // A question per item would stop a long list for a person at every
    // step (Qwen2.5-1.5B asked on 2 of its first 3 items without this).
    let mut out = String::from(
        "\n\nThis is one step of a long list: where the item leaves something open, \
         make a reasonable assumption and state it in the result instead of asking a person.\n\nItems:",
    );
    for n in items {
        // "item 4", never "#4": the description shows on the board,
        // where `#4` is a subtask's id.
        out.push_str(&format!("\nitem {n}: {}", ask.input.shown(*n)));
        if let Some(retry) = ask.progress.failures_of(*n) {
            out.push_str(&format!(
                "\n(an earlier attempt failed: {}; try another way)",
                retry.reason
            ));
        }
    }
    out
}

/// A subtask for one item the answer left out.
fn one_item(ask: &BatchAsk<'_>, n: u32) -> NewSubtask {
    let first = ask.task.lines().next().unwrap_or_default();
    NewSubtask {
        name: cut_name(&format!("Item {n}: {}", ask.input.shown(n))),
        description: format!(
            "For item {n} of {}: {}{}",
            ask.path,
            cut(first, 200),
            items_block(ask, &[n])
        ),
        ..NewSubtask::default()
    }
}

fn cut_name(name: &str) -> String {
    plan_engine::text::fit(name.trim(), plan_engine::model::limits::NAME.min(80))
}

/// Turns an answer (or none) into subtasks covering exactly `ask.items`.
pub fn shape_batch(ask: &BatchAsk<'_>, answer: Option<&BatchAnswer>) -> BatchPlanned {
    let batch: HashSet<u32> = ask.items.iter().copied().collect();
    let mut covered: HashSet<u32> = HashSet::new();
    let mut repairs = Vec::new();
    let mut subtasks = Vec::new();
    let (mut outside, mut twice, mut unnamed) = (0, 0, 0);
    for step in answer.map(|a| a.subtasks.as_slice()).unwrap_or_default() {
        if subtasks.len() == ask.items.len() {
            repairs.push(format!(
                "kept the first {} subtasks (one per item at most)",
                ask.items.len()
            ));
            break;
        }
        let mut mine = Vec::new();
        for n in &step.items {
            if !batch.contains(n) {
                outside += 1;
            } else if !covered.insert(*n) {
                twice += 1;
            } else {
                mine.push(*n);
            }
        }
        if mine.is_empty() {
            continue;
        }
        if step.name.trim().is_empty() {
            // Its items fall to the one-item subtasks below.
            unnamed += 1;
            for n in &mine {
                covered.remove(n);
            }
            continue;
        }
        let description = format!(
            "{}{}",
            cut(step.description.trim(), 400),
            items_block(ask, &mine)
        );
        subtasks.push((
            NewSubtask {
                name: cut_name(&step.name),
                description,
                expected_outcome: cut(step.expected_outcome.trim(), 200),
                ..NewSubtask::default()
            },
            mine,
        ));
    }
    if outside > 0 {
        repairs.push(format!("dropped {outside} item numbers outside the batch"));
    }
    if twice > 0 {
        repairs.push(format!("dropped {twice} items covered twice"));
    }
    if unnamed > 0 {
        repairs.push(format!("replaced {unnamed} subtasks without a name"));
    }
    let left: Vec<u32> = ask
        .items
        .iter()
        .copied()
        .filter(|n| !covered.contains(n))
        .collect();
    if !left.is_empty() && answer.is_some() {
        repairs.push(format!(
            "gave {} items the answer left out a subtask each (items {})",
            left.len(),
            left.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for n in left {
        subtasks.push((one_item(ask, n), vec![n]));
    }
    BatchPlanned { subtasks, repairs }
}

/// Plans one batch. Only a budget stops it: any other failure of the call
/// gives one subtask per item, and says why in the repairs.
pub async fn plan_batch(caller: &Caller, ask: &BatchAsk<'_>) -> Result<BatchPlanned, CallError> {
    let messages = vec![
        Message::system(prompts::BATCH_PLANNER),
        Message::user(batch_prompt(ask)),
    ];
    let answer: Result<BatchAnswer, CallError> = caller
        .json_with(
            CallRole::Planner,
            "batch",
            batch_schema(ask.items),
            messages,
            // About 150 tokens per subtask.
            200 + 150 * ask.items.len() as u32,
            None,
        )
        .await;
    match answer {
        Ok(answer) => Ok(shape_batch(ask, Some(&answer))),
        Err(CallError::Budget(why)) => Err(CallError::Budget(why)),
        Err(e) => {
            let mut planned = shape_batch(ask, None);
            planned.repairs.insert(
                0,
                format!(
                    "the planner's answer could not be used ({}): one subtask per item",
                    cut(&e.to_string(), 300)
                ),
            );
            Ok(planned)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::BatchStep;

    fn input() -> BatchInput {
        BatchInput::parse("tools.txt", b"get_user\nlist_orders\ndelete_cart\nping\n").unwrap()
    }

    fn step(name: &str, items: &[u32]) -> BatchStep {
        BatchStep {
            name: name.into(),
            description: format!("test {name}"),
            expected_outcome: "it answers".into(),
            items: items.to_vec(),
        }
    }

    #[test]
    fn every_item_of_the_batch_is_covered_once_whatever_the_answer() {
        let input = input();
        let progress = BatchProgress::new(4);
        let ask = BatchAsk {
            task: "Test every tool",
            path: "tools.txt",
            input: &input,
            progress: &progress,
            items: &[2, 3, 4],
            tools: &[],
            comment: None,
            memory: "",
        };
        let answer = BatchAnswer {
            subtasks: vec![
                step("orders", &[2, 1, 2]),
                step("", &[3]),
                step("also orders", &[2]),
            ],
        };
        let planned = shape_batch(&ask, Some(&answer));
        let covered: Vec<Vec<u32>> = planned.subtasks.iter().map(|(_, i)| i.clone()).collect();
        assert_eq!(covered, vec![vec![2], vec![3], vec![4]]);
        assert_eq!(planned.subtasks[0].0.name, "orders");
        assert!(planned.subtasks[0]
            .0
            .description
            .ends_with("Items:\nitem 2: list_orders"));
        assert_eq!(planned.subtasks[2].0.name, "Item 4: ping");
        let repairs = planned.repairs.join("; ");
        assert!(
            repairs.contains("1 item numbers outside the batch"),
            "{repairs}"
        );
        assert!(repairs.contains("2 items covered twice"), "{repairs}");
        assert!(repairs.contains("1 subtasks without a name"), "{repairs}");
        assert!(repairs.contains("(items 3, 4)"), "{repairs}");

        let none = shape_batch(&ask, None);
        assert_eq!(none.subtasks.len(), 3);
        assert!(none.subtasks[1]
            .0
            .description
            .contains("item 3: delete_cart"));
    }

    #[test]
    fn the_schema_bounds_the_subtasks_and_names_only_the_batchs_items() {
        let schema = batch_schema(&[7, 9]);
        let subtasks = &schema["properties"]["subtasks"];
        assert_eq!(subtasks["maxItems"], 2);
        assert_eq!(
            subtasks["items"]["properties"]["items"]["items"]["enum"],
            serde_json::json!([7, 9])
        );
    }

    #[test]
    fn an_item_that_failed_is_planned_with_its_reason() {
        let input = input();
        let mut progress = BatchProgress::new(4);
        progress.opened(&[1], vec![]);
        progress.failed(1, "HTTP 500 from /users", 3);
        let items = progress.next_items(2);
        assert_eq!(items, vec![1, 2]);
        let ask = BatchAsk {
            task: "Test every tool",
            path: "tools.txt",
            input: &input,
            progress: &progress,
            items: &items,
            tools: &[],
            comment: None,
            memory: "",
        };
        let prompt = batch_prompt(&ask);
        assert!(prompt.contains("item 1: get_user (failed 1 times; last: HTTP 500 from /users)"));
        assert!(prompt.contains("Batch 2 — its items:"));
        let planned = shape_batch(&ask, None);
        assert!(planned.subtasks[0]
            .0
            .description
            .contains("an earlier attempt failed: HTTP 500 from /users"));
    }
}
