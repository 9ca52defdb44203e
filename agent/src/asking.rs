//! A tool's question to a run's people (an MCP server's elicitation in
//! the middle of a call), put as a guarded call in "Needs you": the
//! board's approve, edit and deny already say everything a reply can.
//!
//! - The guarded call is named after the server and the tool, and its
//!   arguments are the question: the server's message, the answer's fields
//!   with their defaults (a form), or the page to open (a page).
//! - Approve: the answer as it stands (the defaults, or "done" for a
//!   page). Run edited: the person's answer, kept to the fields the form
//!   asked for and to values a form can hold. Deny: declined.
//! - The call ends before anyone replies (the run stopped, the server gave
//!   up): the guarded call is closed as expired, so nobody answers a
//!   question nobody waits for.
//!
//! The question is the server's text, an attacker's as much as a page's:
//! it is shown, never obeyed, and the model never sees the person's reply
//! except through what the tool returns.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use plan_engine::SubtaskId;
use serde_json::{json, Map, Value};

use crate::host::{Host, ToolVerdict};
use crate::run::{RunEntry, RunId, Verdict};
use crate::tools::{People, Question, Reply};

/// The people of one run, asked on the subtask whose call asks.
pub struct RunPeople {
    pub host: Arc<dyn Host>,
    pub run: RunId,
    pub subtask: SubtaskId,
}

/// The guarded call's name: who asks, and in which tool's call.
pub fn asker(question: &Question) -> String {
    plan_engine::text::fit(
        &format!("{} asks (in {})", question.server, question.tool),
        100,
    )
}

/// The guarded call's arguments: what a person reads and edits.
pub fn arguments(question: &Question) -> Value {
    let mut shown = Map::new();
    shown.insert("question".into(), json!(question.message));
    if let Some(url) = &question.url {
        shown.insert("open".into(), json!(url));
        shown.insert(
            "reply".into(),
            json!("Approve once you have done what the page asks; Deny to decline."),
        );
    }
    if let Some(schema) = &question.schema {
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut answer = Map::new();
        let mut fields = Map::new();
        for (name, field) in schema["properties"].as_object().into_iter().flatten() {
            answer.insert(
                name.clone(),
                field.get("default").cloned().unwrap_or(Value::Null),
            );
            let words = [field.get("title"), field.get("description")]
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(": ");
            let kind = field["type"].as_str().unwrap_or("a choice");
            let need = if required.contains(&name.as_str()) {
                "required"
            } else {
                "optional"
            };
            let choices = field["enum"]
                .as_array()
                .map(|c| format!("; one of {}", Value::Array(c.clone())))
                .unwrap_or_default();
            fields.insert(
                name.clone(),
                json!(format!("{words} ({kind}, {need}{choices})")),
            );
        }
        shown.insert("answer".into(), Value::Object(answer));
        shown.insert("fields".into(), Value::Object(fields));
    }
    Value::Object(shown)
}

/// A form's answer kept to what the form asked: its fields only, unset
/// ones left out, and only values a form holds (text, a number, yes or
/// no, a list of texts).
pub fn answer(question: &Question, given: &Value) -> Value {
    let asked = question
        .schema
        .as_ref()
        .and_then(|s| s["properties"].as_object());
    let given = given.get("answer").unwrap_or(given);
    let mut kept = Map::new();
    for (name, value) in given.as_object().into_iter().flatten() {
        if !asked.is_some_and(|a| a.contains_key(name)) {
            continue;
        }
        let fits = match value {
            Value::String(_) | Value::Number(_) | Value::Bool(_) => true,
            Value::Array(items) => items.iter().all(Value::is_string),
            _ => false,
        };
        if fits {
            kept.insert(name.clone(), value.clone());
        }
    }
    Value::Object(kept)
}

/// What a person's decision on the guarded call replies to the question.
pub fn reply(question: &Question, shown: &Value, decided: &ToolVerdict) -> Reply {
    let form = question.schema.is_some();
    match decided.verdict {
        Verdict::Approved if form => Reply::Accept(Some(answer(question, shown))),
        Verdict::Edited if form => Reply::Accept(Some(answer(
            question,
            decided.arguments.as_ref().unwrap_or(shown),
        ))),
        Verdict::Approved | Verdict::Edited => Reply::Accept(None),
        Verdict::Denied => Reply::Decline,
        Verdict::Expired => Reply::Cancel,
    }
}

#[async_trait::async_trait]
impl People for RunPeople {
    fn whose(&self) -> String {
        self.run.to_string()
    }

    async fn ask(&self, question: Question, gone: BoxFuture<'static, ()>) -> Reply {
        let call = uuid::Uuid::new_v4().to_string();
        let shown = arguments(&question);
        let log = |entry| async {
            if let Err(e) = self.host.log(self.run, entry).await {
                tracing::warn!("run {}: could not write the run log: {e}", self.run);
            }
        };
        log(RunEntry::ToolApproval {
            subtask: self.subtask,
            call: call.clone(),
            name: asker(&question),
            arguments: shown.clone(),
            asker: Some(question.server.clone()),
        })
        .await;
        tokio::select! {
            decided = self.host.tool_verdict(self.run, &call) => match decided {
                Ok(decided) => reply(&question, &shown, &decided),
                Err(e) => {
                    tracing::warn!("run {}: a reply to {} could not be read: {e}", self.run, question.server);
                    Reply::Cancel
                }
            },
            _ = gone => {
                log(RunEntry::ToolDecision {
                    call,
                    verdict: Verdict::Expired,
                    by: "planboard".into(),
                    reason: Some(format!(
                        "the call of {} ended before anyone replied",
                        question.tool
                    )),
                    arguments: None,
                })
                .await;
                Reply::Cancel
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Question {
        Question {
            server: "shop".into(),
            tool: "order".into(),
            message: "Which size?".into(),
            schema: Some(json!({
                "type": "object",
                "properties": {
                    "size": {"type": "string", "title": "Size", "enum": ["S", "M"], "default": "M"},
                    "count": {"type": "integer", "description": "How many"},
                    "gift": {"type": "boolean"}
                },
                "required": ["size"]
            })),
            url: None,
        }
    }

    fn decided(verdict: Verdict, arguments: Option<Value>) -> ToolVerdict {
        ToolVerdict {
            verdict,
            by: "ana".into(),
            reason: None,
            arguments,
        }
    }

    #[test]
    fn a_form_is_shown_with_its_defaults_and_what_each_field_is() {
        let shown = arguments(&form());
        assert_eq!(shown["question"], "Which size?");
        assert_eq!(
            shown["answer"],
            json!({"size": "M", "count": null, "gift": null})
        );
        assert_eq!(
            shown["fields"]["size"],
            "Size (string, required; one of [\"S\",\"M\"])"
        );
        assert_eq!(shown["fields"]["count"], "How many (integer, optional)");
        assert_eq!(asker(&form()), "shop asks (in order)");
    }

    #[test]
    fn approving_a_form_accepts_its_defaults_and_unset_fields_stay_out() {
        let q = form();
        let shown = arguments(&q);
        assert_eq!(
            reply(&q, &shown, &decided(Verdict::Approved, None)),
            Reply::Accept(Some(json!({"size": "M"})))
        );
    }

    #[test]
    fn an_edited_answer_keeps_only_the_asked_fields_with_values_a_form_holds() {
        let q = form();
        let shown = arguments(&q);
        let edited = json!({
            "question": "Which size?",
            "answer": {"size": "S", "count": 3, "gift": true,
                       "admin": true, "size2": "XL", "note": {"nested": 1}}
        });
        assert_eq!(
            reply(&q, &shown, &decided(Verdict::Edited, Some(edited))),
            Reply::Accept(Some(json!({"size": "S", "count": 3, "gift": true})))
        );
        // An edit that dropped the "answer" wrapper is read as the answer.
        assert_eq!(
            reply(
                &q,
                &shown,
                &decided(
                    Verdict::Edited,
                    Some(json!({"size": "S", "gift": {"x": 1}}))
                )
            ),
            Reply::Accept(Some(json!({"size": "S"})))
        );
    }

    #[test]
    fn a_denial_declines_and_an_expiry_cancels() {
        let q = form();
        let shown = arguments(&q);
        assert_eq!(
            reply(&q, &shown, &decided(Verdict::Denied, None)),
            Reply::Decline
        );
        assert_eq!(
            reply(&q, &shown, &decided(Verdict::Expired, None)),
            Reply::Cancel
        );
    }

    #[test]
    fn a_page_is_shown_to_open_and_approving_it_accepts_without_content() {
        let q = Question {
            schema: None,
            url: Some("https://shop.example/confirm".into()),
            ..form()
        };
        let shown = arguments(&q);
        assert_eq!(shown["open"], "https://shop.example/confirm");
        assert!(shown.get("answer").is_none());
        assert_eq!(
            reply(&q, &shown, &decided(Verdict::Approved, None)),
            Reply::Accept(None)
        );
    }

    #[tokio::test]
    async fn a_question_waits_on_the_runs_log_for_a_persons_decision() {
        let host = crate::host::MemoryHost::new();
        let run = RunId::new_v4();
        let people = RunPeople {
            host: host.clone(),
            run,
            subtask: SubtaskId(1),
        };
        let asking =
            tokio::spawn(async move { people.ask(form(), Box::pin(std::future::pending())).await });
        let call = loop {
            let open = host.open_tool_calls(run).await.unwrap();
            if let Some(call) = open.first() {
                break call.clone();
            }
            tokio::task::yield_now().await;
        };
        host.log(
            run,
            RunEntry::ToolDecision {
                call,
                verdict: Verdict::Edited,
                by: "ana".into(),
                reason: None,
                arguments: Some(json!({"answer": {"size": "S"}})),
            },
        )
        .await
        .unwrap();
        assert_eq!(
            asking.await.unwrap(),
            Reply::Accept(Some(json!({"size": "S"})))
        );
    }

    #[tokio::test]
    async fn a_question_whose_call_ended_is_closed_as_expired_and_cancelled() {
        let host = crate::host::MemoryHost::new();
        let run = RunId::new_v4();
        let people = RunPeople {
            host: host.clone(),
            run,
            subtask: SubtaskId(1),
        };
        let reply = people.ask(form(), Box::pin(async {})).await;
        assert_eq!(reply, Reply::Cancel);
        assert!(
            host.open_tool_calls(run).await.unwrap().is_empty(),
            "nobody is left a question nobody waits for"
        );
        assert!(host.entries(run).iter().any(|e| matches!(
            e,
            RunEntry::ToolDecision {
                verdict: Verdict::Expired,
                ..
            }
        )));
    }
}
