//! Which run-log entries notify people, and what is sent: the JSON
//! payload (or Slack's one line of text) and its signature.

use hmac::{Hmac, Mac};
use plan_engine::{PlanId, Timestamp};
use run_model::{RecoveryDecision, RunEntry, RunId, RunState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::Endpoint;
use crate::runlog::StoredRunEntry;

plan_engine::wire_enum! {
    /// What a notification is about.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    pub enum WebhookEvent: "webhook event" {
        /// A plan waits for a person's approval before it runs.
        ApprovalNeeded = "approval_needed",
        /// The agent asked a question and waits for the answer.
        QuestionAsked = "question_asked",
        /// A run ended done or cancelled (`state` says which).
        RunFinished = "run_finished",
        RunFailed = "run_failed",
        /// A run paused, or a subtask the planner gave up on waits for a person.
        RunStuck = "run_stuck",
        /// A run's budget is used up; it paused.
        BudgetReached = "budget_reached",
        /// A plan has waited for approval longer than
        /// `PLANBOARD_APPROVAL_REMIND_MINUTES` (it is never approved by a
        /// timer).
        ApprovalOverdue = "approval_overdue",
    }
}

/// The notification a run-log entry makes, and its sentence; `None` for
/// the entries nobody is called for.
pub fn event_of(entry: &RunEntry) -> Option<(WebhookEvent, Option<RunState>, String)> {
    match entry {
        RunEntry::StateChanged { to, reason, .. } => {
            let event = match to {
                RunState::AwaitingApproval => WebhookEvent::ApprovalNeeded,
                RunState::Done | RunState::Cancelled => WebhookEvent::RunFinished,
                RunState::Failed => WebhookEvent::RunFailed,
                // A budget's pause is told once, as budget_reached.
                RunState::Paused if reason.starts_with("budget reached") => return None,
                RunState::Paused => WebhookEvent::RunStuck,
                _ => return None,
            };
            let text = if reason.is_empty() {
                format!("the run is {to}")
            } else {
                reason.clone()
            };
            Some((event, Some(*to), text))
        }
        RunEntry::Asked { subtask, question } => Some((
            WebhookEvent::QuestionAsked,
            None,
            format!("#{}: {question}", subtask.0),
        )),
        RunEntry::BudgetReached { what } => Some((WebhookEvent::BudgetReached, None, what.clone())),
        RunEntry::ApprovalOverdue { waited_secs } => Some((
            WebhookEvent::ApprovalOverdue,
            Some(RunState::AwaitingApproval),
            format!(
                "the plan has waited {} min for approval; nobody approves it but a person",
                waited_secs / 60
            ),
        )),
        RunEntry::Recovery {
            subtask,
            decision: RecoveryDecision::GiveUp,
            reason,
            ..
        } => Some((
            WebhookEvent::RunStuck,
            None,
            format!("the planner gave up on #{}: {reason}", subtask.0),
        )),
        _ => None,
    }
}

/// The JSON body of a notification.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Payload {
    pub event: WebhookEvent,
    pub plan_id: Option<PlanId>,
    pub run_id: RunId,
    /// The run's state, when the event is a change of it.
    pub state: Option<RunState>,
    /// What happened, in a sentence (at most 1,000 characters).
    pub text: String,
    /// The plan on the board.
    pub link: Option<String>,
    pub at: Timestamp,
    /// The run log entry's seq: the same notification always has it.
    pub seq: i64,
}

/// The body one endpoint gets for `entry`, if any.
pub(super) fn body_for(
    endpoint: &Endpoint,
    entry: &StoredRunEntry,
    board_url: &str,
) -> Option<(WebhookEvent, String)> {
    let read: RunEntry = serde_json::from_value(entry.entry.clone()).ok()?;
    let (event, state, text) = event_of(&read)?;
    let text = plan_engine::text::prefix(&text, 1000).to_string();
    let link = entry
        .plan_id
        .map(|id| format!("{}/plans/{id}", board_url.trim_end_matches('/')));
    let body = if endpoint.slack {
        let words = event.as_str().replace('_', " ");
        let link = link
            .map(|l| format!(" <{l}|open the plan>"))
            .unwrap_or_default();
        let text = slack_escaped(&text);
        serde_json::json!({ "text": format!("planboard · {words}: {text}{link}") }).to_string()
    } else {
        serde_json::to_string(&Payload {
            event,
            plan_id: entry.plan_id,
            run_id: entry.run_id,
            state,
            text,
            link,
            at: entry.at,
            seq: entry.seq,
        })
        .ok()?
    };
    Some((event, body))
}

/// Text for Slack's mrkdwn with `&`, `<` and `>` as Slack asks them
/// escaped: the words of a plan, a task or a model are shown as written,
/// so a title `<!channel>` pings nobody and `<https://evil|click>` links
/// nowhere. Only planboard's own link is written as Slack's `<url|label>`.
pub fn slack_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `X-Planboard-Signature`'s value for `body` sent at `t` (unix seconds).
pub fn signature(secret: &str, t: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length works");
    mac.update(format!("{t}.{body}").as_bytes());
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_an_hmac_of_the_time_and_the_body() {
        // RFC 4231-style check against an independent computation.
        let sig = signature("key", 1_700_000_000, "{}");
        let mut mac = Hmac::<Sha256>::new_from_slice(b"key").unwrap();
        mac.update(b"1700000000.{}");
        let expected = hex::encode(mac.finalize().into_bytes());
        assert_eq!(sig, format!("t=1700000000,v1={expected}"));
        assert_ne!(signature("other", 1_700_000_000, "{}"), sig);
    }

    #[test]
    fn only_the_entries_people_are_called_for_notify() {
        let changed = |to, reason: &str| RunEntry::StateChanged {
            from: None,
            to,
            reason: reason.into(),
        };
        let event = |e: &RunEntry| event_of(e).map(|(event, _, _)| event);
        assert_eq!(
            event(&changed(RunState::AwaitingApproval, "")),
            Some(WebhookEvent::ApprovalNeeded)
        );
        assert_eq!(
            event(&changed(RunState::Done, "")),
            Some(WebhookEvent::RunFinished)
        );
        assert_eq!(
            event(&changed(RunState::Failed, "x")),
            Some(WebhookEvent::RunFailed)
        );
        assert_eq!(
            event(&changed(RunState::Paused, "paused by ada")),
            Some(WebhookEvent::RunStuck)
        );
        assert_eq!(
            event(&changed(RunState::Paused, "budget reached: the run …")),
            None
        );
        assert_eq!(event(&changed(RunState::Running, "")), None);
        assert_eq!(
            event(&RunEntry::ApprovalOverdue { waited_secs: 3700 }),
            Some(WebhookEvent::ApprovalOverdue)
        );
        assert_eq!(
            event(&RunEntry::BudgetReached { what: "x".into() }),
            Some(WebhookEvent::BudgetReached)
        );
    }

    #[test]
    fn a_slack_endpoint_gets_one_line_of_text_with_the_link() {
        let plan = uuid::Uuid::new_v4();
        let entry = StoredRunEntry {
            seq: 7,
            run_id: uuid::Uuid::new_v4(),
            plan_id: Some(plan),
            kind: run_model::EntryKind::Asked,
            at: chrono::Utc::now(),
            entry: serde_json::to_value(RunEntry::Asked {
                subtask: plan_engine::SubtaskId(2),
                question: "Which region?".into(),
            })
            .unwrap(),
        };
        let mut endpoint = Endpoint {
            url: "https://hooks.slack.com/services/x".parse().unwrap(),
            secret: None,
            slack: true,
        };
        let (event, body) = body_for(&endpoint, &entry, "https://board.example/").unwrap();
        assert_eq!(event, WebhookEvent::QuestionAsked);
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"text": format!(
                "planboard · question asked: #2: Which region? <https://board.example/plans/{plan}|open the plan>"
            )})
        );
        endpoint.slack = false;
        let (_, body) = body_for(&endpoint, &entry, "https://board.example").unwrap();
        let payload: Payload = serde_json::from_str(&body).unwrap();
        assert_eq!(payload.seq, 7);
        assert_eq!(payload.text, "#2: Which region?");
    }

    #[test]
    fn a_slack_message_shows_what_a_plan_or_model_wrote_and_never_pings_or_links() {
        let plan = uuid::Uuid::new_v4();
        let entry = StoredRunEntry {
            seq: 8,
            run_id: uuid::Uuid::new_v4(),
            plan_id: Some(plan),
            kind: run_model::EntryKind::Asked,
            at: chrono::Utc::now(),
            entry: serde_json::to_value(RunEntry::Asked {
                subtask: plan_engine::SubtaskId(3),
                question: "<!channel> see <https://evil.example|click> & <@U123>".into(),
            })
            .unwrap(),
        };
        let endpoint = Endpoint {
            url: "https://hooks.slack.com/services/x".parse().unwrap(),
            secret: None,
            slack: true,
        };
        let (_, body) = body_for(&endpoint, &entry, "https://board.example").unwrap();
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body["text"],
            format!(
                "planboard · question asked: #3: &lt;!channel&gt; see \
                 &lt;https://evil.example|click&gt; &amp; &lt;@U123&gt; \
                 <https://board.example/plans/{plan}|open the plan>"
            )
        );
        // The JSON payload carries the text as written: it is not mrkdwn.
        let endpoint = Endpoint {
            slack: false,
            ..endpoint
        };
        let (_, body) = body_for(&endpoint, &entry, "https://board.example").unwrap();
        let payload: Payload = serde_json::from_str(&body).unwrap();
        assert!(
            payload.text.starts_with("#3: <!channel>"),
            "{}",
            payload.text
        );
    }

    #[test]
    fn an_endpoint_never_shows_its_path_or_secret() {
        let e = Endpoint {
            url: "https://hooks.slack.com/services/T0/B0/secretpath"
                .parse()
                .unwrap(),
            secret: Some("whsec".into()),
            slack: true,
        };
        let shown = format!("{e:?}");
        assert!(
            !shown.contains("secretpath") && !shown.contains("whsec"),
            "{shown}"
        );
        assert!(shown.contains("https://hooks.slack.com/…"), "{shown}");
    }
}
