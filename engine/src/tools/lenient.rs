//! Argument types that forgive what LLMs commonly get wrong (numbers sent as
//! strings, `"#3"`, a list sent as a JSON string or a single value) while
//! their schemas still tell the model the strict shape.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A non-negative integer: `3`, `"3"`, `" #3 "`, `3.0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Int(pub u64);

impl Int {
    fn from_value(v: &Value) -> Result<Int, String> {
        match v {
            Value::Number(n) => n
                .as_u64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                        .map(|f| f as u64)
                })
                .map(Int)
                .ok_or_else(|| format!("expected a non-negative whole number, got {n}")),
            Value::String(s) => {
                let t = s.trim().trim_start_matches('#').trim();
                t.parse::<u64>()
                    .map(Int)
                    .map_err(|_| format!("expected a non-negative whole number, got \"{s}\""))
            }
            other => Err(format!("expected a non-negative whole number, got {other}")),
        }
    }
}

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Int::from_value(&v).map_err(D::Error::custom)
    }
}

impl JsonSchema for Int {
    fn schema_name() -> Cow<'static, str> {
        "Int".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer", "minimum": 0 })
    }
}

/// A list of integers: `[1, 2]`, `["1", "2"]`, `"1, 2"`, `"[1,2]"`, `3`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ints(pub Vec<u64>);

impl<'de> Deserialize<'de> for Ints {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let items: Vec<Value> = match v {
            Value::Array(items) => items,
            Value::Null => Vec::new(),
            Value::String(s) => {
                let t = s.trim();
                if t.starts_with('[') {
                    serde_json::from_str(t).map_err(D::Error::custom)?
                } else {
                    t.split(',')
                        .map(str::trim)
                        .filter(|x| !x.is_empty())
                        .map(|x| Value::String(x.to_string()))
                        .collect()
                }
            }
            single => vec![single],
        };
        items
            .iter()
            .map(Int::from_value)
            .map(|r| r.map(|i| i.0))
            .collect::<Result<Vec<_>, _>>()
            .map(Ints)
            .map_err(D::Error::custom)
    }
}

impl JsonSchema for Ints {
    fn schema_name() -> Cow<'static, str> {
        "Ints".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "array", "items": { "type": "integer", "minimum": 0 } })
    }
}

/// A list of `T` that may also arrive as a JSON string holding the list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct List<T>(pub Vec<T>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(Vec::new())
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let v = match v {
            Value::String(s) if s.trim_start().starts_with('[') => {
                serde_json::from_str(&s).map_err(D::Error::custom)?
            }
            Value::Null => Value::Array(Vec::new()),
            other => other,
        };
        serde_json::from_value(v)
            .map(List)
            .map_err(D::Error::custom)
    }
}

impl<T: JsonSchema> JsonSchema for List<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("List_{}", T::schema_name()).into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let items = generator.subschema_for::<T>();
        json_schema!({ "type": "array", "items": items })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_arrive_as_numbers_strings_or_hashes() {
        for text in ["3", "\"3\"", "\" #3 \"", "3.0"] {
            let i: Int = serde_json::from_str(text).unwrap();
            assert_eq!(i, Int(3), "{text}");
        }
    }

    #[test]
    fn a_negative_or_wordy_id_is_refused_with_a_reason() {
        let err = serde_json::from_str::<Int>("\"three\"").unwrap_err();
        assert!(err.to_string().contains("whole number"), "{err}");
        assert!(serde_json::from_str::<Int>("-1").is_err());
    }

    #[test]
    fn id_lists_arrive_in_any_of_the_usual_shapes() {
        for text in ["[1, 2]", "[\"1\", \"2\"]", "\"1, 2\"", "\"[1,2]\""] {
            let ids: Ints = serde_json::from_str(text).unwrap();
            assert_eq!(ids, Ints(vec![1, 2]), "{text}");
        }
        let single: Ints = serde_json::from_str("7").unwrap();
        assert_eq!(single, Ints(vec![7]));
    }

    #[test]
    fn a_list_may_arrive_as_a_json_string() {
        let l: List<String> = serde_json::from_str("\"[\\\"a\\\", \\\"b\\\"]\"").unwrap();
        assert_eq!(l.0, vec!["a", "b"]);
    }
}
