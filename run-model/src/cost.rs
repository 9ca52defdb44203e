//! What a run's model calls cost: the [`CostReport`] read from its
//! `llm_call` log entries, in all and per subtask and model.
//!
//! The money itself ([`Usd`], a model's [`Price`], the [`PriceTable`])
//! lives in [`crate::money`], below the run log that records each call's
//! cost; it is re-exported here.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::entry::LlmCallRecord;
pub use crate::money::{BadPrices, Price, PriceTable, Usd};

/// What a run's model calls used and cost, in all and per subtask and
/// model: read from its `llm_call` log entries, the one record of them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CostReport {
    pub total: Use,
    /// Per subtask, in the order first called; `subtask: null` holds the
    /// calls for no subtask (classifying, planning, recovering).
    pub by_subtask: Vec<SubtaskUse>,
    /// Per model, in the order first called.
    pub by_model: Vec<ModelUse>,
}

/// Calls, tokens and money.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Use {
    pub calls: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// What the priced calls cost.
    pub cost: Usd,
    /// Calls to a model without a price (not in `cost`).
    pub unpriced_calls: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubtaskUse {
    pub subtask: Option<plan_engine::SubtaskId>,
    #[serde(flatten)]
    pub used: Use,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelUse {
    pub model: String,
    #[serde(flatten)]
    pub used: Use,
}

impl Use {
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    fn add(&mut self, call: &LlmCallRecord) {
        self.calls += 1;
        self.prompt_tokens += u64::from(call.prompt_tokens);
        self.completion_tokens += u64::from(call.completion_tokens);
        match call.cost {
            Some(cost) => self.cost = self.cost.saturating_add(cost),
            None => self.unpriced_calls += 1,
        }
    }
}

impl CostReport {
    pub fn of<'a>(calls: impl IntoIterator<Item = &'a LlmCallRecord>) -> CostReport {
        let mut report = CostReport::default();
        for call in calls {
            report.total.add(call);
            match report
                .by_subtask
                .iter_mut()
                .find(|s| s.subtask == call.subtask)
            {
                Some(s) => s.used.add(call),
                None => {
                    let mut used = Use::default();
                    used.add(call);
                    report.by_subtask.push(SubtaskUse {
                        subtask: call.subtask,
                        used,
                    });
                }
            }
            match report.by_model.iter_mut().find(|m| m.model == call.model) {
                Some(m) => m.used.add(call),
                None => {
                    let mut used = Use::default();
                    used.add(call);
                    report.by_model.push(ModelUse {
                        model: call.model.clone(),
                        used,
                    });
                }
            }
        }
        report
    }

    /// What `subtask`'s calls used, if it made any.
    pub fn subtask(&self, subtask: plan_engine::SubtaskId) -> Option<&Use> {
        self.by_subtask
            .iter()
            .find(|s| s.subtask == Some(subtask))
            .map(|s| &s.used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(
        model: &str,
        subtask: Option<u32>,
        tokens: (u32, u32),
        cost: Option<Usd>,
    ) -> crate::LlmCallRecord {
        crate::LlmCallRecord {
            role: crate::CallRole::Executor,
            model: model.into(),
            subtask: subtask.map(plan_engine::SubtaskId),
            attempt: 1,
            prompt_tokens: tokens.0,
            completion_tokens: tokens.1,
            latency_ms: 1,
            finish_reason: None,
            error: None,
            cost,
            transcript: String::new(),
        }
    }

    #[test]
    fn a_report_adds_the_calls_up_per_subtask_and_model_and_keeps_unpriced_ones_apart() {
        let table = PriceTable::builtin();
        let priced = |model: &str, subtask, tokens: (u32, u32)| {
            call(
                model,
                subtask,
                tokens,
                table.cost(model, tokens.0.into(), tokens.1.into()),
            )
        };
        let calls = [
            priced("gpt-4o-mini", None, (2_000, 100)),
            priced("gpt-4o", Some(1), (1_000, 500)),
            priced("gpt-4o", Some(1), (1_000, 500)),
            priced("house-model", Some(2), (10, 10)),
            priced("gpt-4o", Some(2), (4_000, 0)),
        ];
        let report = CostReport::of(&calls);
        assert_eq!(report.total.calls, 5);
        assert_eq!(report.total.unpriced_calls, 1);
        assert_eq!(report.total.tokens(), 2_100 + 3_000 + 20 + 4_000);
        // 0.00036 + 2 × 0.0075 + 0.01
        assert_eq!(report.total.cost, Usd::from_dollars(0.02536).unwrap());
        let one = report.subtask(plan_engine::SubtaskId(1)).unwrap();
        assert_eq!(one.cost, Usd::from_dollars(0.015).unwrap());
        let two = report.subtask(plan_engine::SubtaskId(2)).unwrap();
        assert_eq!((two.calls, two.unpriced_calls), (2, 1));
        assert_eq!(report.by_subtask[0].subtask, None);
        assert_eq!(
            report
                .by_model
                .iter()
                .map(|m| m.model.as_str())
                .collect::<Vec<_>>(),
            ["gpt-4o-mini", "gpt-4o", "house-model"]
        );
        assert_eq!(report.subtask(plan_engine::SubtaskId(3)), None);
    }
}
