//! Wire names: the one way every crate names the variants of its plain
//! enums on the wire (JSON, query strings, SSE event names, log labels).
//!
//! [`wire_enum!`](crate::wire_enum) declares the enum with each variant's
//! name written once beside it. serde reads and writes that name, and the
//! macro adds `ALL`, `as_str` (a `&'static str`, no allocation),
//! `from_wire` (exact), `Display` and `FromStr` (an [`UnknownName`] error
//! naming what was expected). Before it, names lived in serde's
//! `rename_all`, in hand `as_str`/`parse` tables beside them and in a
//! serde round-trip macro; a variant added to one and not the other read
//! back as something else.

/// A name that is not one of a type's wire names.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{given}` is not a {what}")]
pub struct UnknownName {
    pub what: &'static str,
    pub given: String,
}

/// Declares a plain enum with its wire names.
///
/// ```
/// plan_engine::wire_enum! {
///     /// How a thing is lit.
///     #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
///     pub enum Light: "light (on or off)" {
///         On = "on",
///         /// Also after a restart.
///         Off = "off",
///     }
/// }
/// assert_eq!(Light::On.as_str(), "on");
/// assert_eq!("off".parse::<Light>(), Ok(Light::Off));
/// assert_eq!(serde_json::to_string(&Light::Off).unwrap(), "\"off\"");
/// assert_eq!(Light::from_wire("dim"), None);
/// assert_eq!("dim".parse::<Light>().unwrap_err().to_string(), "`dim` is not a light (on or off)");
/// assert_eq!(Light::ALL, [Light::On, Light::Off]);
/// ```
///
/// The enum must derive serde's `Serialize` and `Deserialize` (the names
/// are given to serde as `rename`s) and must not also say `rename_all`.
/// A name is taken as a token (`tt`), not a `literal` fragment: a fragment
/// reaches derive macros wrapped in an invisible group, which serde and
/// schemars look through but utoipa does not (it documented `Mermaid` for
/// `mermaid`). `as_str` returning it keeps it a string.
#[macro_export]
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:tt ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [$name; [$($wire),+].len()] = [$($name::$variant),+];

            /// The name on the wire.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $wire, )+
                }
            }

            /// The variant with exactly this wire name.
            pub fn from_wire(text: &str) -> Option<$name> {
                match text {
                    $( $wire => Some($name::$variant), )+
                    _ => None,
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::wire::UnknownName;
            fn from_str(text: &str) -> Result<Self, Self::Err> {
                $name::from_wire(text).ok_or_else(|| $crate::wire::UnknownName {
                    what: $what,
                    given: text.to_string(),
                })
            }
        }
    };
}

/// serde reads a struct from a JSON array too, field by field in order
/// (`"patch": [null, "x"]`), which no client means and no schema allows.
/// `#[serde(deserialize_with = "crate::wire::object")]` on a struct-typed
/// field (and [`objects`] on a list of them) reads only a JSON object.
pub(crate) fn object<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    deserializer.deserialize_map(ObjectOnly(std::marker::PhantomData))
}

/// [`object`] for each item of a list.
pub(crate) fn objects<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    struct Item<T>(T);
    impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Item<T> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            object(d).map(Item)
        }
    }
    let items: Vec<Item<T>> = serde::Deserialize::deserialize(deserializer)?;
    Ok(items.into_iter().map(|Item(t)| t).collect())
}

struct ObjectOnly<T>(std::marker::PhantomData<T>);

impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for ObjectOnly<T> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
    }
}

/// For the crates' tests: whether serde and `as_str` are one table, every
/// variant written as its name and read back from it through serde and
/// `FromStr`; the first variant that is not, by name.
#[doc(hidden)]
pub fn names_agree<T>(all: &[T]) -> Result<(), String>
where
    T: Copy + PartialEq + std::fmt::Debug + std::fmt::Display + std::str::FromStr,
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    for &v in all {
        let name = v.to_string();
        let written = serde_json::to_value(v).ok() == Some(serde_json::json!(name));
        let read = serde_json::from_value::<T>(serde_json::json!(name)).ok() == Some(v);
        if !(written && read && name.parse::<T>().ok() == Some(v)) {
            return Err(format!(
                "{v:?} is `{name}` for as_str but not for serde or FromStr"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::names_agree;
    use crate::{Dialect, Mode, PlanState, StateFilter, SubtaskState};

    /// An enum whose names serde and `Display` write differently.
    #[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Drifted {
        InProgress,
    }

    impl std::fmt::Display for Drifted {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("in-progress")
        }
    }

    impl std::str::FromStr for Drifted {
        type Err = ();
        fn from_str(_: &str) -> Result<Self, ()> {
            Ok(Drifted::InProgress)
        }
    }

    #[test]
    fn two_tables_that_drifted_apart_are_told() {
        assert!(names_agree(&[Drifted::InProgress]).is_err());
    }

    #[test]
    fn the_engines_enums_write_and_read_the_same_names_through_serde_and_as_str() {
        names_agree(&SubtaskState::ALL).unwrap();
        names_agree(&PlanState::ALL).unwrap();
        names_agree(&Mode::ALL).unwrap();
        names_agree(&Dialect::ALL).unwrap();
        names_agree(&StateFilter::ALL).unwrap();
        assert_eq!(SubtaskState::InProgress.as_str(), "in_progress");
        assert_eq!(
            "sleeping".parse::<PlanState>().unwrap_err().to_string(),
            "`sleeping` is not a plan state"
        );
    }

    #[test]
    fn a_patch_or_a_subtask_given_as_an_array_is_refused_and_as_an_object_read() {
        let array = r#"{"op":"update_info","patch":[null,null]}"#;
        let error = serde_json::from_str::<crate::Command>(array).unwrap_err();
        assert!(error.to_string().contains("a JSON object"), "{error}");
        let object = r#"{"op":"update_info","patch":{"title":"t"}}"#;
        assert!(serde_json::from_str::<crate::Command>(object).is_ok());
        let listed = r#"{"title":"t","subtasks":[["a"]]}"#;
        assert!(serde_json::from_str::<crate::NewPlan>(listed).is_err());
        let listed = r#"{"title":"t","subtasks":[{"name":"a"}]}"#;
        assert!(serde_json::from_str::<crate::NewPlan>(listed).is_ok());
        let added = r#"{"op":"add_subtask","subtask":["a"]}"#;
        assert!(serde_json::from_str::<crate::Command>(added).is_err());
        let edited = r#"{"op":"edit_subtask","id":1,"patch":["a"]}"#;
        assert!(serde_json::from_str::<crate::Command>(edited).is_err());
        let replaced = r#"{"op":"replace_subtasks","subtasks":[["a"]]}"#;
        assert!(serde_json::from_str::<crate::Command>(replaced).is_err());
    }
}
