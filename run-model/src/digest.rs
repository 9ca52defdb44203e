//! A tool call's digest: SHA-256 over its tool's name and its arguments
//! written canonically (object keys sorted at every level, no white
//! space), as lowercase hex. Two calls have the same digest exactly when
//! they call the same tool with the same arguments, whatever order the
//! model wrote the keys in: what tells "the same call again" (a call that
//! was running when the server stopped) and what an approval is bound to.

use serde_json::Value;
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
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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
    fn a_name_cannot_be_shifted_into_the_arguments() {
        assert_ne!(
            call_digest("ab", &json!("c")),
            call_digest("a", &json!("bc"))
        );
    }
}
