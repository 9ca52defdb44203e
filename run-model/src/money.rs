//! What the agent's model calls cost in money: [`Usd`] amounts, a
//! [`Price`] per model and the [`PriceTable`] that finds it.
//!
//! Amounts are whole pico-dollars (10⁻¹² USD) and prices whole
//! micro-dollars per million tokens, so a call's cost is one exact integer
//! product (`tokens × price`) and a run's total is the exact sum of its
//! calls: no float drift between the calls on the log and the run header.
//! On the wire both are plain USD numbers (`0.0075`, `2.5`).

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An amount of money in US dollars, kept as whole pico-dollars.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Usd(u64);

const PICO_PER_USD: f64 = 1e12;
/// The largest amount the API's schema offers.
const MAX_SCHEMA_USD: f64 = 18_000_000.0;

impl Usd {
    pub const ZERO: Usd = Usd(0);

    pub fn from_pico(pico: u64) -> Usd {
        Usd(pico)
    }

    pub fn pico(self) -> u64 {
        self.0
    }

    /// `None` for a negative, infinite or unrepresentably large amount.
    pub fn from_dollars(dollars: f64) -> Option<Usd> {
        let pico = (dollars * PICO_PER_USD).round();
        (pico.is_finite() && pico >= 0.0 && pico < u64::MAX as f64).then_some(Usd(pico as u64))
    }

    pub fn dollars(self) -> f64 {
        self.0 as f64 / PICO_PER_USD
    }

    pub fn saturating_add(self, other: Usd) -> Usd {
        Usd(self.0.saturating_add(other.0))
    }
}

impl std::iter::Sum for Usd {
    fn sum<I: Iterator<Item = Usd>>(iter: I) -> Usd {
        iter.fold(Usd::ZERO, Usd::saturating_add)
    }
}

/// `$0`, `$0.0075`, `<$0.0001`, `$12.35`: what people read on the board
/// (four decimals under a dollar, cents above; whole-number arithmetic, so
/// the wasm board carries no float formatting for it).
impl fmt::Display for Usd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const TEN_THOUSANDTH: u64 = 100_000_000;
        const CENT: u64 = 10_000_000_000;
        let pico = self.0;
        if pico == 0 {
            return f.write_str("$0");
        }
        if pico < TEN_THOUSANDTH {
            return f.write_str("<$0.0001");
        }
        let small = pico.saturating_add(TEN_THOUSANDTH / 2) / TEN_THOUSANDTH;
        if small < 10_000 {
            return write!(f, "$0.{small:04}");
        }
        let cents = pico.saturating_add(CENT / 2) / CENT;
        write!(f, "${}.{:02}", cents / 100, cents % 100)
    }
}

impl Serialize for Usd {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.dollars())
    }
}

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Usd, D::Error> {
        let dollars = f64::deserialize(deserializer)?;
        Usd::from_dollars(dollars).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{dollars} is not an amount of money (0 or more US dollars)"
            ))
        })
    }
}

impl JsonSchema for Usd {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Usd".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "number",
            "minimum": 0,
            // What `from_dollars` holds (picodollars in a u64: about 18.4
            // million dollars), rounded down: an amount the schema allows
            // is never refused.
            "maximum": MAX_SCHEMA_USD,
            "description": "US dollars"
        })
    }
}

/// What a model charges, per million tokens of prompt and of completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Price {
    /// USD per million prompt (input) tokens.
    #[serde(with = "per_million")]
    #[schemars(with = "f64")]
    pub prompt: u64,
    /// USD per million completion (output) tokens.
    #[serde(with = "per_million")]
    #[schemars(with = "f64")]
    pub completion: u64,
}

/// A price on the wire is USD per million tokens; kept as micro-dollars.
mod per_million {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(micro: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(*micro as f64 / 1e6)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let dollars = f64::deserialize(d)?;
        let micro = (dollars * 1e6).round();
        if (0.0..=1e12).contains(&micro) {
            Ok(micro as u64)
        } else {
            Err(serde::de::Error::custom(format!(
                "{dollars} is not a price (0 to 1,000,000 USD per million tokens)"
            )))
        }
    }
}

impl Price {
    pub const FREE: Price = Price {
        prompt: 0,
        completion: 0,
    };

    /// From USD per million tokens (the way providers publish prices).
    pub const fn per_million(prompt_micro: u64, completion_micro: u64) -> Price {
        Price {
            prompt: prompt_micro,
            completion: completion_micro,
        }
    }

    /// What a call with this usage costs: exact (pico-dollars are
    /// micro-dollars per million tokens, times tokens).
    pub fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> Usd {
        Usd(prompt_tokens
            .saturating_mul(self.prompt)
            .saturating_add(completion_tokens.saturating_mul(self.completion)))
    }
}

/// Micro-dollars from dollars and cents, for the table below.
const fn usd(dollars: u64, micro: u64) -> u64 {
    dollars * 1_000_000 + micro
}

/// Published list prices (USD per million tokens, prompt / completion;
/// DeepSeek's are the cache-miss ones), as of 2025. Providers change them:
/// `PLANBOARD_PRICES` overrides any of them and adds others.
const BUILT_IN: &[(&str, Price)] = &[
    // OpenAI
    ("gpt-5", Price::per_million(usd(1, 250_000), usd(10, 0))),
    ("gpt-5-mini", Price::per_million(usd(0, 250_000), usd(2, 0))),
    (
        "gpt-5-nano",
        Price::per_million(usd(0, 50_000), usd(0, 400_000)),
    ),
    ("gpt-4.1", Price::per_million(usd(2, 0), usd(8, 0))),
    (
        "gpt-4.1-mini",
        Price::per_million(usd(0, 400_000), usd(1, 600_000)),
    ),
    (
        "gpt-4.1-nano",
        Price::per_million(usd(0, 100_000), usd(0, 400_000)),
    ),
    ("gpt-4o", Price::per_million(usd(2, 500_000), usd(10, 0))),
    (
        "gpt-4o-mini",
        Price::per_million(usd(0, 150_000), usd(0, 600_000)),
    ),
    (
        "gpt-3.5-turbo",
        Price::per_million(usd(0, 500_000), usd(1, 500_000)),
    ),
    ("o3", Price::per_million(usd(2, 0), usd(8, 0))),
    (
        "o3-mini",
        Price::per_million(usd(1, 100_000), usd(4, 400_000)),
    ),
    (
        "o4-mini",
        Price::per_million(usd(1, 100_000), usd(4, 400_000)),
    ),
    // DeepSeek
    (
        "deepseek-chat",
        Price::per_million(usd(0, 280_000), usd(0, 420_000)),
    ),
    (
        "deepseek-reasoner",
        Price::per_million(usd(0, 280_000), usd(0, 420_000)),
    ),
    // Qwen (Alibaba Cloud Model Studio, international)
    (
        "qwen-max",
        Price::per_million(usd(1, 600_000), usd(6, 400_000)),
    ),
    (
        "qwen-plus",
        Price::per_million(usd(0, 400_000), usd(1, 200_000)),
    ),
    (
        "qwen-turbo",
        Price::per_million(usd(0, 50_000), usd(0, 200_000)),
    ),
    (
        "qwen-flash",
        Price::per_million(usd(0, 50_000), usd(0, 400_000)),
    ),
];

/// Why a price table given by the operator cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the price table must be a JSON object of model names to {{\"prompt\": USD, \"completion\": USD}} per million tokens: {0}")]
pub struct BadPrices(String);

/// Which price a model's calls are charged at.
///
/// Looked up by the model's name as the provider answered it, lower-cased,
/// without a provider prefix (`openai/`) or a tag (`:latest`): the
/// operator's prices first, then free when the model runs locally, then
/// the built-in list. A dated name (`gpt-4o-2024-08-06`) takes the price
/// of the longest listed name it starts with, followed by `-`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PriceTable {
    given: BTreeMap<String, Price>,
    /// The model runs on the operator's machine (a local endpoint): its
    /// calls cost nothing unless `given` says otherwise.
    local: bool,
}

impl PriceTable {
    /// The built-in list only.
    pub fn builtin() -> PriceTable {
        PriceTable::default()
    }

    /// Reads the operator's table (`{"model": {"prompt": 2.5, "completion": 10}}`).
    pub fn with_given(mut self, json: &str) -> Result<PriceTable, BadPrices> {
        let given: BTreeMap<String, Price> =
            serde_json::from_str(json).map_err(|e| BadPrices(e.to_string()))?;
        self.given = given.into_iter().map(|(k, v)| (normal(&k), v)).collect();
        Ok(self)
    }

    /// Every model not priced by the operator is free: it runs locally.
    pub fn local(mut self, local: bool) -> PriceTable {
        self.local = local;
        self
    }

    pub fn is_local(&self) -> bool {
        self.local
    }

    /// The price of `model`'s calls; `None` when nobody knows it. The
    /// longest matching name wins (the operator's `gpt-4o` does not price
    /// the listed `gpt-4o-mini`); on the same name, the operator's.
    pub fn price(&self, model: &str) -> Option<Price> {
        let name = normal(model);
        let given = longest(self.given.iter().map(|(k, v)| (k.as_str(), *v)), &name);
        if self.local {
            return Some(given.map_or(Price::FREE, |(_, price)| price));
        }
        let listed = longest(BUILT_IN.iter().copied(), &name);
        match (given, listed) {
            (Some((g, price)), Some((l, _))) if g >= l => Some(price),
            (_, Some((_, price))) | (Some((_, price)), None) => Some(price),
            (None, None) => None,
        }
    }

    /// What one call cost; `None` when the model has no price.
    pub fn cost(&self, model: &str, prompt_tokens: u64, completion_tokens: u64) -> Option<Usd> {
        self.price(model)
            .map(|p| p.cost(prompt_tokens, completion_tokens))
    }
}

fn normal(model: &str) -> String {
    let name = model.trim().to_lowercase();
    let name = name.rsplit('/').next().unwrap_or_default();
    name.split(':').next().unwrap_or_default().to_string()
}

/// The longest name in `list` that `name` is or starts with (then `-`),
/// with its length.
fn longest<'a>(list: impl Iterator<Item = (&'a str, Price)>, name: &str) -> Option<(usize, Price)> {
    list.filter(|(key, _)| {
        name == *key
            || name
                .strip_prefix(key)
                .is_some_and(|rest| rest.starts_with('-'))
    })
    .max_by_key(|(key, _)| key.len())
    .map(|(key, price)| (key.len(), price))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_amount_the_schema_allows_is_an_amount_of_money() {
        let schema = schemars::schema_for!(Usd);
        let max = schema.get("maximum").and_then(|m| m.as_f64()).unwrap();
        assert!(Usd::from_dollars(max).is_some());
        let over: Result<Usd, _> = serde_json::from_str("1.326750163657245e308");
        assert!(over.is_err());
    }

    #[test]
    fn a_call_costs_its_tokens_times_the_price_exactly() {
        let table = PriceTable::builtin();
        // gpt-4o: $2.50 and $10 per million tokens.
        let cost = table.cost("gpt-4o", 1_000, 500).unwrap();
        assert_eq!(cost, Usd::from_dollars(0.0075).unwrap());
        assert_eq!(cost.pico(), 7_500_000_000);
        // A thousand one-token calls add up to exactly one thousand-token call.
        let small: Usd = (0..1_000)
            .map(|_| table.cost("gpt-4o-mini", 1, 1).unwrap())
            .sum();
        assert_eq!(small, table.cost("gpt-4o-mini", 1_000, 1_000).unwrap());
    }

    #[test]
    fn dated_and_prefixed_names_find_their_model_and_not_a_shorter_one() {
        let table = PriceTable::builtin();
        assert_eq!(table.price("gpt-4o-2024-08-06"), table.price("gpt-4o"));
        assert_eq!(
            table.price("gpt-4o-mini-2024-07-18"),
            table.price("gpt-4o-mini")
        );
        assert_ne!(table.price("gpt-4o-mini"), table.price("gpt-4o"));
        assert_eq!(table.price("openai/GPT-4o"), table.price("gpt-4o"));
        assert_eq!(table.price("gpt-4oops"), None);
        assert_eq!(table.price("qwen2.5-coder:1.5b"), None);
    }

    #[test]
    fn a_local_model_is_free_unless_the_operator_prices_it() {
        let table = PriceTable::builtin().local(true);
        assert_eq!(
            table.cost("qwen2.5-coder:1.5b", 10_000, 10_000),
            Some(Usd::ZERO)
        );
        let priced = table
            .with_given(r#"{"qwen2.5-coder": {"prompt": 0.1, "completion": 0.2}}"#)
            .unwrap();
        assert_eq!(
            priced.cost("qwen2.5-coder:1.5b", 1_000_000, 1_000_000),
            Usd::from_dollars(0.3)
        );
    }

    #[test]
    fn the_operators_prices_win_over_the_built_in_ones() {
        let table = PriceTable::builtin()
            .with_given(r#"{"gpt-4o": {"prompt": 1, "completion": 2}}"#)
            .unwrap();
        assert_eq!(table.cost("gpt-4o", 1_000_000, 0), Usd::from_dollars(1.0));
        assert_eq!(
            table.cost("gpt-4o-mini", 1_000_000, 0),
            Usd::from_dollars(0.15)
        );
    }

    #[test]
    fn a_bad_price_table_is_refused_with_the_reason() {
        for bad in [
            "[]",
            r#"{"m": {"prompt": -1, "completion": 1}}"#,
            r#"{"m": {"prompt": 1}}"#,
            "{",
        ] {
            let err = PriceTable::builtin().with_given(bad).unwrap_err();
            assert!(
                err.to_string().starts_with("the price table must be"),
                "{err}"
            );
        }
    }

    #[test]
    fn money_reads_as_people_write_it_and_round_trips_the_wire() {
        assert_eq!(Usd::ZERO.to_string(), "$0");
        assert_eq!(Usd::from_pico(30).to_string(), "<$0.0001");
        assert_eq!(Usd::from_dollars(0.0075).unwrap().to_string(), "$0.0075");
        assert_eq!(Usd::from_dollars(12.345).unwrap().to_string(), "$12.35");
        assert_eq!(Usd::from_dollars(0.99999).unwrap().to_string(), "$1.00");
        assert_eq!(Usd::from_dollars(1234.5).unwrap().to_string(), "$1234.50");
        let amount = Usd::from_dollars(0.0075).unwrap();
        let wire = serde_json::to_string(&amount).unwrap();
        assert_eq!(wire, "0.0075");
        assert_eq!(serde_json::from_str::<Usd>(&wire).unwrap(), amount);
        assert!(serde_json::from_str::<Usd>("-1").is_err());
    }
}
