//! A tool call's digest: SHA-256 over its tool's name and its arguments
//! written canonically (object keys sorted at every level, no white
//! space), as lowercase hex. Two calls have the same digest exactly when
//! they call the same tool with the same arguments, whatever order the
//! model wrote the keys in: what tells "the same call again" (a call that
//! was running when the server stopped) and what an approval is bound to.
//! A plan's digest ([`plan_digest`]) is the same over what a person reads
//! when approving it.

use plan_engine::Plan;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The canonical text of `value`: keys sorted, no white space; strings
/// and numbers as serde_json writes them.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The hex SHA-256 of `name`, a NUL, and the canonical `arguments`.
pub fn call_digest(name: &str, arguments: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update([0u8]);
    hasher.update(canonical(arguments).as_bytes());
    hex(hasher)
}

/// The hex SHA-256 of the canonical `value` (a budget, a grant).
pub fn value_digest(value: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(canonical(value).as_bytes());
    hex(hasher)
}

fn hex(hasher: Sha256) -> String {
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What a person approves of a plan, as JSON: its title, goal,
/// description, expected outcome and mode, and each subtask's id, name,
/// description, expected outcome, dependencies and tool, in order. Not its
/// states, results, times, approval or version: approving, starting or
/// working a plan leaves its content as it was; editing what it says
/// changes it.
pub fn plan_content(plan: &Plan) -> Value {
    let subtasks: Vec<Value> = plan
        .subtasks()
        .iter()
        .map(|s| {
            json!({
                "id": s.id(),
                "name": s.name(),
                "description": s.description(),
                "expected_outcome": s.expected_outcome(),
                "dependencies": s.dependencies(),
                "tool": s.tool(),
            })
        })
        .collect();
    json!({
        "title": plan.title(),
        "goal": plan.goal(),
        "description": plan.description(),
        "expected_outcome": plan.expected_outcome(),
        "mode": plan.mode(),
        "subtasks": subtasks,
    })
}

/// The hex SHA-256 of a plan's content ([`plan_content`]) written
/// canonically: what an approval of the plan is bound to.
pub fn plan_digest(plan: &Plan) -> String {
    value_digest(&plan_content(plan))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_same_call_has_one_digest_whatever_the_order_of_its_keys() {
        let a = json!({"url": "https://a.example/", "opts": {"x": 1, "y": [1, {"b": 2, "a": 1}]}});
        let b = json!({"opts": {"y": [1, {"a": 1, "b": 2}], "x": 1}, "url": "https://a.example/"});
        assert_eq!(call_digest("fetch_url", &a), call_digest("fetch_url", &b));
        assert_eq!(call_digest("fetch_url", &a).len(), 64);
        assert_ne!(call_digest("fetch_url", &a), call_digest("read_file", &a));
        assert_ne!(
            call_digest("fetch_url", &json!({"url": "https://a.example/"})),
            call_digest("fetch_url", &json!({"url": "https://b.example/"}))
        );
        assert_eq!(
            canonical(&b),
            r#"{"opts":{"x":1,"y":[1,{"a":1,"b":2}]},"url":"https://a.example/"}"#
        );
    }

    #[test]
    fn a_plans_digest_changes_with_what_it_says_not_with_its_state() {
        use plan_engine::{NewPlan, NewSubtask, Op, SubtaskPatch};
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let spec = NewPlan {
            title: "Release".into(),
            approval_required: true,
            subtasks: vec![NewSubtask::named("build"), NewSubtask::named("tag")],
            ..NewPlan::default()
        };
        let (mut plan, _) = Plan::create(&spec, "ana", at).unwrap();
        let before = plan_digest(&plan);
        assert_eq!(before.len(), 64);
        let approve = Op::Approve { comment: None };
        plan.execute(&approve.into(), "bo", at).unwrap();
        assert_eq!(
            plan_digest(&plan),
            before,
            "approving changes nothing it says"
        );
        let edit = Op::EditSubtask {
            id: plan_engine::SubtaskId(2),
            patch: SubtaskPatch {
                description: Some("sign the tag".into()),
                ..Default::default()
            },
        };
        plan.execute(&edit.into(), "bo", at).unwrap();
        assert_ne!(plan_digest(&plan), before);
    }

    #[test]
    fn a_name_cannot_be_shifted_into_the_arguments() {
        assert_ne!(
            call_digest("ab", &json!("c")),
            call_digest("a", &json!("bc"))
        );
    }
}
