//! One JSON reader for everything the wasm decodes.
//!
//! serde_json's readers are generic over their input: `from_str` and
//! `from_slice` each get their own copy of the code that reads every type.
//! The server functions answer through `from_slice`, while Leptos' default
//! resource codec (and a plain `from_str`) reads with the other one, so
//! every plan, event and row type was compiled twice into the wasm. Reading
//! resources and the live stream through `from_slice` as well took 31 KB
//! off the release wasm (9 KB gzipped).

use codee::{Decoder, Encoder};
use leptos::prelude::Resource;
use serde::{de::DeserializeOwned, Serialize};

/// A resource codec: JSON text, read as bytes.
pub struct JsonBytes;

impl<T: Serialize> Encoder<T> for JsonBytes {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(value: &T) -> Result<String, serde_json::Error> {
        serde_json::to_string(value)
    }
}

impl<T: DeserializeOwned> Decoder<T> for JsonBytes {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(text: &str) -> Result<T, serde_json::Error> {
        read(text)
    }
}

/// Reads JSON text with the reader the server functions use.
pub fn read<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    serde_json::from_slice(text.as_bytes())
}

/// A resource whose value crosses from server to browser as [`JsonBytes`].
pub type Loaded<T> = Resource<T, JsonBytes>;

/// `Resource::new`, with the one reader.
pub fn load<S, T, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Loaded<T>
where
    S: PartialEq + Clone + Send + Sync + 'static,
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    Resource::new_with_options(source, fetcher, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Viewer;

    #[test]
    fn a_value_encoded_for_the_page_reads_back_the_same() {
        let viewer = Viewer {
            name: "ada <admin>".into(),
            can_edit: true,
            signed_in: false,
            is_admin: true,
        };
        let text = <JsonBytes as Encoder<Viewer>>::encode(&viewer).unwrap();
        let back: Viewer = <JsonBytes as Decoder<Viewer>>::decode(&text).unwrap();
        assert_eq!(back, viewer);
    }

    #[test]
    fn text_that_is_not_the_type_is_an_error_not_a_default() {
        assert!(read::<Viewer>(r#"{"name":"ada"}"#).is_err());
        assert!(read::<Viewer>("not json").is_err());
    }
}
