//! The W3C trace context a run belongs to ([`TraceParent`]): the
//! `traceparent` of the request that started it, kept on the run so its
//! spans join the caller's trace even after a restart.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A W3C `traceparent` (version 00): `00-<trace id>-<parent span id>-<flags>`.
/// All-zero ids are invalid and refused, as the recommendation says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "String", into = "String")]
#[schemars(with = "String")]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub sampled: bool,
}

/// Why a `traceparent` header was not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>): `{0}`")]
pub struct BadTraceParent(pub String);

impl std::fmt::Display for TraceParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("00-")?;
        for b in self.trace_id {
            write!(f, "{b:02x}")?;
        }
        f.write_str("-")?;
        for b in self.span_id {
            write!(f, "{b:02x}")?;
        }
        write!(f, "-{}", if self.sampled { "01" } else { "00" })
    }
}

fn hex_bytes<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

impl std::str::FromStr for TraceParent {
    type Err = BadTraceParent;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || BadTraceParent(plan_engine::text::prefix(text, 80).to_string());
        let mut parts = text.trim().split('-');
        let (Some(version), Some(trace), Some(span), Some(flags)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        // A later version may add fields after these four; 00 may not.
        if version == "ff" || hex_bytes::<1>(version).is_none() {
            return Err(bad());
        }
        if version == "00" && parts.next().is_some() {
            return Err(bad());
        }
        let trace_id = hex_bytes::<16>(trace).ok_or_else(bad)?;
        let span_id = hex_bytes::<8>(span).ok_or_else(bad)?;
        let [flags] = hex_bytes::<1>(flags).ok_or_else(bad)?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return Err(bad());
        }
        Ok(TraceParent {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
        })
    }
}

impl TryFrom<String> for TraceParent {
    type Error = BadTraceParent;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl From<TraceParent> for String {
    fn from(parent: TraceParent) -> String {
        parent.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_reads_and_writes_back_the_same() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parent: TraceParent = text.parse().unwrap();
        assert!(parent.sampled);
        assert_eq!(
            parent.span_id,
            [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]
        );
        assert_eq!(parent.to_string(), text);
        let json = serde_json::to_string(&parent).unwrap();
        assert_eq!(json, format!("\"{text}\""));
        assert_eq!(serde_json::from_str::<TraceParent>(&json).unwrap(), parent);
    }

    #[test]
    fn zero_ids_short_ids_and_junk_are_refused() {
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902zz-01",
            "hello",
        ] {
            assert!(bad.parse::<TraceParent>().is_err(), "{bad}");
        }
        let unsampled: TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
            .parse()
            .unwrap();
        assert!(!unsampled.sampled);
    }
}
