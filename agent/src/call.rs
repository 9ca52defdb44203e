//! [`Caller`]: every model call of a run goes through here, so each one is
//! counted against the budget, waits its run's turn in the endpoint's
//! [`ModelQueue`] (as many in flight as the endpoint serves; waiting never
//! counts toward the call's timeout), retried by the one retry layer,
//! recorded on the run log, and (for structured answers) given one repair
//! round with the parse error shown.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use plan_engine::SubtaskId;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::host::Host;
use crate::llm::{
    CallRole, ChatReply, ChatRequest, ErrorClass, Llm, LlmError, Message, ModelQueue, Protocol,
    Shape,
};
use crate::protocol::{self, Action, ToolSpec, Unreadable};
use crate::retry::RetryPolicy;
use run_model::PriceTable;

use crate::run::{Budget, LlmCallRecord, ReplyDelta, RunEntry, RunId, Spent, MESSAGE_CAP};

#[derive(Clone, Debug, thiserror::Error)]
pub enum CallError {
    /// Final (or out of retries): the reason is readable.
    #[error("{0}")]
    Llm(LlmError),
    /// The answer could not be read, even after the repair round;
    /// `answer` is what the model said last (cut), for the person who
    /// reads why the run failed.
    #[error("the model's answer could not be read: {problem}; it answered: {answer}")]
    Malformed { problem: Unreadable, answer: String },
    /// A plan the engine or the mode's shape refused, repairs included.
    #[error("the model's answer could not be read: the plan was refused {tries} times; last: {last}; it answered: {answer}")]
    Refused {
        tries: usize,
        last: Unreadable,
        answer: String,
    },
    /// A budget is used up; the run pauses.
    #[error("{0}")]
    Budget(String),
}

/// A model's answer as a failure shows it: the first 300 characters.
pub fn shown_answer(text: &str) -> String {
    plan_engine::text::ellipsis(text.trim(), 300)
}

/// What a run's calls share.
#[derive(Clone)]
pub struct Caller {
    pub llm: Arc<dyn Llm>,
    /// The endpoint's queue, shared by all runs: a call is sent only
    /// when its run's turn has come and a place is free.
    pub queue: ModelQueue,
    pub retry: RetryPolicy,
    pub host: Arc<dyn Host>,
    pub run: RunId,
    pub spent: Arc<Mutex<Spent>>,
    pub budget: Arc<Mutex<Budget>>,
    pub protocol: Protocol,
    /// What each call is charged at.
    pub prices: Arc<PriceTable>,
    /// The executor's last action shape and what it was made of: a run's
    /// tools seldom change, and making the shape anew cost more per step
    /// than comparing and copying it.
    pub shapes: Arc<Mutex<Option<ActionShape>>>,
}

/// An action shape with the tools, offer and protocol it was made for.
pub struct ActionShape {
    tools: Vec<ToolSpec>,
    offered: protocol::Actions,
    native: bool,
    shape: Shape,
}

/// What the model said: its text, or the calls it made.
fn said(reply: &ChatReply) -> String {
    if reply.calls.is_empty() {
        reply.content.clone()
    } else {
        serde_json::to_string(&reply.calls).unwrap_or_default()
    }
}

fn transcript(messages: &[Message], reply: &str) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str(&format!("[{}]\n{}\n", m.role.as_str(), m.content));
    }
    out.push_str(&format!("[reply]\n{reply}"));
    if out.len() > MESSAGE_CAP {
        let mut cut = MESSAGE_CAP;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("\n… (cut)");
    }
    out
}

impl Caller {
    /// A caller outside any run (tools, evaluations): no budget, a
    /// throw-away log, a queue of its own (`concurrency` as
    /// [`ModelQueue::for_setting`] takes it: `0` asks the endpoint).
    pub fn standalone(llm: Arc<dyn Llm>, concurrency: usize, protocol: Protocol) -> Caller {
        Caller {
            queue: ModelQueue::for_setting(llm.clone(), concurrency),
            llm,
            retry: RetryPolicy::default(),
            host: crate::host::MemoryHost::new(),
            run: uuid::Uuid::nil(),
            spent: Arc::default(),
            budget: Arc::new(Mutex::new(Budget {
                max_llm_calls: u32::MAX,
                max_tokens: u64::MAX,
                max_wall_secs: u64::MAX / 2000,
                max_turns: 8,
                max_cost: None,
            })),
            protocol,
            prices: Arc::default(),
            shapes: Arc::default(),
        }
    }

    pub fn spent(&self) -> Spent {
        self.spent.lock().expect("spent lock").clone()
    }

    /// The run's budget as it is now (a person may have raised it).
    pub fn budget(&self) -> Budget {
        self.budget.lock().expect("budget lock").clone()
    }

    /// The budget this run has used up, in words, if any.
    pub fn budget_reached(&self) -> Option<String> {
        self.spent().reached(&self.budget())
    }

    fn check_budget(&self) -> Result<(), CallError> {
        match self.budget_reached() {
            Some(why) => Err(CallError::Budget(why)),
            None => Ok(()),
        }
    }

    /// One call with retries; every attempt is on the run log.
    pub async fn raw(
        &self,
        request: &ChatRequest,
        subtask: Option<SubtaskId>,
    ) -> Result<ChatReply, CallError> {
        let mut attempt = 1;
        loop {
            self.check_budget()?;
            // The run's turn in the endpoint's queue. Waiting has no
            // deadline and is not the call's: its timeout starts when it
            // is sent, below.
            let permit = self.queue.acquire(self.run).await;
            // Another call of this run may have used the budget up while
            // this one waited.
            self.check_budget()?;
            let started = Instant::now();
            let result = {
                let role = request.role;
                let piece = move |text: &str, done: bool| ReplyDelta {
                    role,
                    subtask,
                    attempt,
                    text: text.into(),
                    done,
                };
                let (host, run) = (self.host.clone(), self.run);
                let delta = move |text: &str| host.delta(run, piece(text, false));
                // A streamed reply holds its place until the stream ends.
                if self.host.watched(self.run) {
                    let result = self.llm.chat_streaming(request, &delta).await;
                    self.host.delta(self.run, piece("", true));
                    result
                } else {
                    self.llm.chat(request).await
                }
            };
            // The call's own time, from when it was sent (not its wait).
            let latency_ms = started.elapsed().as_millis() as u64;
            match &result {
                Ok(_) => permit.succeeded(),
                Err(e) if e.class == ErrorClass::RateLimited => permit.rate_limited(),
                Err(_) => {}
            }
            drop(permit);
            let (usage, finish_reason, error, reply_text, model) = match &result {
                Ok(r) => (
                    r.usage.clone().unwrap_or_default(),
                    r.finish_reason.clone(),
                    None,
                    said(r),
                    r.model.clone(),
                ),
                Err(e) => (
                    Default::default(),
                    None,
                    Some(e.to_string()),
                    String::new(),
                    self.llm.model(request.role),
                ),
            };
            let cost = self.prices.cost(
                &model,
                u64::from(usage.prompt_tokens),
                u64::from(usage.completion_tokens),
            );
            {
                let mut spent = self.spent.lock().expect("spent lock");
                spent.llm_calls += 1;
                spent.prompt_tokens += u64::from(usage.prompt_tokens);
                spent.completion_tokens += u64::from(usage.completion_tokens);
                match cost {
                    Some(cost) => spent.cost = spent.cost.saturating_add(cost),
                    None => spent.unpriced_calls += 1,
                }
            }
            self.log(RunEntry::LlmCall(LlmCallRecord {
                role: request.role,
                model,
                subtask,
                attempt,
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                latency_ms,
                finish_reason,
                error,
                cost,
                transcript: transcript(&request.messages, &reply_text),
            }))
            .await;
            let error = match result {
                Ok(reply) => return Ok(reply),
                Err(e) => e,
            };
            let Some(delay) = self.retry.delay(attempt, &error) else {
                return Err(CallError::Llm(error));
            };
            self.log(RunEntry::RetryScheduled {
                role: request.role,
                attempt,
                delay_ms: delay.as_millis() as u64,
                class: error.class,
                error: error.message.clone(),
            })
            .await;
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    /// A call whose reply must pass `read`; one repair round shows the
    /// model what was wrong.
    async fn structured<T>(
        &self,
        mut request: ChatRequest,
        subtask: Option<SubtaskId>,
        read: impl Fn(&ChatReply) -> Result<T, Unreadable>,
    ) -> Result<T, CallError> {
        let reply = self.raw(&request, subtask).await?;
        let problem = match read(&reply) {
            Ok(value) => return Ok(value),
            Err(problem) => problem,
        };
        if reply.finish_reason.as_deref() == Some("length") {
            // A small model that ran on until the token limit (Qwen2.5-1.5B
            // repeated one character for 1,200 tokens inside a regex) does
            // it again with its own run-on answer before it: the repair
            // round shows no run-on text, only what happened.
            request.messages.push(Message::user(format!(
                "Your answer was cut off at the limit of {} tokens before it ended: it ran on or \
                 repeated itself, and was dropped. Answer again with one short JSON object that \
                 matches the schema: short code, nothing repeated.",
                request.max_tokens
            )));
        } else {
            request.messages.push(Message::assistant(said(&reply)));
            request.messages.push(Message::user(format!(
                "Your answer could not be used: {problem}\nAnswer again with one JSON object that matches the schema, and nothing else."
            )));
        }
        let reply = self.raw(&request, subtask).await?;
        read(&reply).map_err(|problem| CallError::Malformed {
            problem,
            answer: shown_answer(&said(&reply)),
        })
    }

    /// A typed JSON answer (`response_format: json_schema`).
    pub async fn json<T: DeserializeOwned + JsonSchema>(
        &self,
        role: CallRole,
        name: &'static str,
        messages: Vec<Message>,
        max_tokens: u32,
        subtask: Option<SubtaskId>,
    ) -> Result<T, CallError> {
        self.json_with(
            role,
            name,
            protocol::schema_of::<T>(),
            messages,
            max_tokens,
            subtask,
        )
        .await
    }

    /// [`Caller::json`] with a schema of the caller's (narrower than the
    /// type's: a planner's bounds for its mode, say).
    pub async fn json_with<T: DeserializeOwned>(
        &self,
        role: CallRole,
        name: &'static str,
        schema: serde_json::Value,
        messages: Vec<Message>,
        max_tokens: u32,
        subtask: Option<SubtaskId>,
    ) -> Result<T, CallError> {
        let request = ChatRequest {
            role,
            messages,
            shape: Shape::Json {
                name,
                schema: std::sync::Arc::new(schema),
            },
            max_tokens,
        };
        self.structured(request, subtask, |r| protocol::parse::<T>(&r.content))
            .await
    }

    pub async fn text(
        &self,
        role: CallRole,
        messages: Vec<Message>,
        max_tokens: u32,
        subtask: Option<SubtaskId>,
    ) -> Result<String, CallError> {
        let request = ChatRequest {
            role,
            messages,
            shape: Shape::Text,
            max_tokens,
        };
        Ok(self
            .raw(&request, subtask)
            .await?
            .content
            .trim()
            .to_string())
    }

    /// The executor's next action, in the protocol this model does best.
    pub async fn action(
        &self,
        messages: Vec<Message>,
        tools: &[ToolSpec],
        offered: protocol::Actions,
        subtask: SubtaskId,
    ) -> Result<Action, CallError> {
        let native = match self.protocol {
            Protocol::ToolCalls => true,
            Protocol::JsonSchema => false,
            Protocol::Auto => self.llm.tool_calls_reliable(),
        };
        let shape = self.action_shape(tools, offered, native);
        let request = ChatRequest {
            role: CallRole::Executor,
            messages,
            shape,
            max_tokens: 1200,
        };
        self.structured(request, Some(subtask), |r| {
            protocol::parse_action(&r.content, &r.calls, tools)
        })
        .await
    }

    /// The action shape for these tools and offer, the last one made if
    /// it was made for the same.
    fn action_shape(&self, tools: &[ToolSpec], offered: protocol::Actions, native: bool) -> Shape {
        let mut cached = self.shapes.lock().expect("shapes lock");
        if let Some(made) = cached.as_ref() {
            if made.native == native && made.offered == offered && made.tools == tools {
                return made.shape.clone();
            }
        }
        let shape = if native {
            Shape::Tools {
                functions: std::sync::Arc::new(protocol::action_functions(tools, offered)),
            }
        } else {
            Shape::Json {
                name: "action",
                schema: std::sync::Arc::new(protocol::action_schema(tools, offered)),
            }
        };
        *cached = Some(ActionShape {
            tools: tools.to_vec(),
            offered,
            native,
            shape: shape.clone(),
        });
        shape
    }

    pub async fn log(&self, entry: RunEntry) {
        if let Err(e) = self.host.log(self.run, entry).await {
            tracing::warn!("run {}: could not write the run log: {e}", self.run);
        }
    }

    /// [`Caller::log`], returning once the entry is stored.
    pub async fn log_stored(&self, entry: RunEntry) {
        if let Err(e) = self.host.log_stored(self.run, entry).await {
            tracing::warn!("run {}: could not write the run log: {e}", self.run);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ScriptedLlm;
    use serde_json::json;

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("the tool {name}"),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }
    }

    /// What the shape is when made anew.
    fn fresh(tools: &[ToolSpec], offered: protocol::Actions, native: bool) -> Shape {
        if native {
            Shape::Tools {
                functions: std::sync::Arc::new(protocol::action_functions(tools, offered)),
            }
        } else {
            Shape::Json {
                name: "action",
                schema: std::sync::Arc::new(protocol::action_schema(tools, offered)),
            }
        }
    }

    #[tokio::test]
    async fn an_answer_cut_off_at_the_token_limit_is_asked_again_without_its_run_on_text() {
        let run_on = format!(
            "{{\"action\": \"run_python\", \"code\": \"{}",
            "\\b".repeat(500)
        );
        let llm = Arc::new(
            ScriptedLlm::new()
                .push(CallRole::Executor, crate::llm::Reply::CutOff(run_on))
                .push_json(
                    CallRole::Executor,
                    json!({"action": "complete", "result": "done"}),
                ),
        );
        let caller = Caller::standalone(llm.clone(), 1, Protocol::JsonSchema);
        let action = caller
            .action(
                vec![Message::system("act"), Message::user("the subtask")],
                &[tool("read_file")],
                protocol::Actions {
                    add_subtask: false,
                    ask: false,
                },
                plan_engine::SubtaskId(1),
            )
            .await
            .unwrap();
        assert!(matches!(action, Action::Complete { .. }), "{action:?}");
        let asked_again = &llm.requests()[1].messages;
        assert_eq!(asked_again.len(), 3, "{asked_again:?}");
        assert!(asked_again[2]
            .content
            .starts_with("Your answer was cut off at the limit of 1200 tokens"));
        assert!(asked_again.iter().all(|m| !m.content.contains("\\b\\b")));
    }

    #[test]
    fn the_action_shape_is_kept_and_made_again_when_the_tools_or_the_offer_change() {
        let caller = Caller::standalone(Arc::new(ScriptedLlm::new()), 1, Protocol::JsonSchema);
        let all = protocol::Actions {
            add_subtask: true,
            ask: true,
        };
        let none = protocol::Actions {
            add_subtask: false,
            ask: false,
        };
        let one = [tool("read_file")];
        let two = [tool("read_file"), tool("write_file")];
        assert_eq!(
            caller.action_shape(&one, all, false),
            fresh(&one, all, false)
        );
        assert!(
            caller.shapes.lock().unwrap().is_some(),
            "the shape is kept for the next step"
        );
        assert_eq!(
            caller.action_shape(&one, all, false),
            fresh(&one, all, false)
        );
        assert_eq!(
            caller.action_shape(&two, all, false),
            fresh(&two, all, false)
        );
        assert_eq!(
            caller.action_shape(&two, none, false),
            fresh(&two, none, false)
        );
        assert_eq!(
            caller.action_shape(&two, none, true),
            fresh(&two, none, true)
        );
        assert_ne!(fresh(&one, all, false), fresh(&two, all, false));
        assert_ne!(fresh(&two, all, false), fresh(&two, none, false));
    }
}
