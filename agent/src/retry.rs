//! The one backoff policy: [`RetryPolicy`], `base · 2^(attempt − 1)` for
//! `attempts` in all, no wait past `max_delay`. Its three users keep their
//! own numbers:
//! - model calls (seed 002's `BatchRetryManager`: 3 attempts, 1 s base,
//!   doubling), with jitter and the server's `Retry-After` honoured
//!   ([`RetryPolicy::delay`]). async-openai's own retry layer is not
//!   installed (see `llm::openai`), so a failing call is never retried
//!   twice over;
//! - a work tool's transient failure, under the run's model-call policy
//!   ([`RetryPolicy::backoff`], no jitter: one run's own tool);
//! - a failed subtask, under the run's `max_attempts` and
//!   `retry_delay_ms` ([`RetryPolicy::subtasks`]).

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::llm::LlmError;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    pub base: Duration,
    /// No wait is longer than this, whatever the server asks.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 3,
            base: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Seed 002's subtask retries (`retryDelay · 2^attempt`): `max_attempts`
    /// in all, the first wait already twice `retry_delay_ms`, and no ceiling
    /// but the run configuration's own limits on both.
    pub fn subtasks(max_attempts: u32, retry_delay_ms: u64) -> RetryPolicy {
        RetryPolicy {
            attempts: max_attempts,
            base: Duration::from_millis(retry_delay_ms).saturating_mul(2),
            max_delay: Duration::MAX,
        }
    }

    /// How long to wait after failed attempt `attempt` (1-based), or `None`
    /// when the attempts are used up: `base · 2^(attempt − 1)`, at most
    /// `max_delay`.
    pub fn backoff(&self, attempt: u32) -> Option<Duration> {
        if attempt >= self.attempts {
            return None;
        }
        let doubled = 1u32 << attempt.saturating_sub(1).min(16);
        Some(self.base.saturating_mul(doubled).min(self.max_delay))
    }

    /// A model call's wait after failed attempt `attempt` (1-based), or
    /// `None` when the error is final or the attempts are used up: the
    /// server's `Retry-After` when it sent one, else [`RetryPolicy::backoff`]
    /// with jitter.
    pub fn delay(&self, attempt: u32, error: &LlmError) -> Option<Duration> {
        if !error.class.is_retryable() {
            return None;
        }
        let full = self.backoff(attempt)?;
        if let Some(asked) = error.retry_after {
            return Some(asked.min(self.max_delay));
        }
        // Equal jitter: half fixed, half random, so many runs failing at
        // once do not come back at the same instant.
        let half = full / 2;
        let random = (jitter() % 1_000_000) as f64 / 1_000_000.0;
        Some(half + half.mul_f64(random))
    }
}

/// A random number from the standard library's per-process hasher keys,
/// so the crate needs no random-number dependency for this.
fn jitter() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x9e37_79b9_7f4a_7c15);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ErrorClass;

    fn err(class: ErrorClass) -> LlmError {
        LlmError::new(class, "x")
    }

    #[test]
    fn delays_double_from_the_base_within_the_jitter_band() {
        let policy = RetryPolicy::default();
        let first = policy.delay(1, &err(ErrorClass::Server)).unwrap();
        let second = policy.delay(2, &err(ErrorClass::Server)).unwrap();
        assert!(first >= Duration::from_millis(500) && first <= Duration::from_secs(1));
        assert!(second >= Duration::from_secs(1) && second <= Duration::from_secs(2));
        assert_eq!(
            policy.delay(3, &err(ErrorClass::Server)),
            None,
            "3 attempts in all"
        );
    }

    #[test]
    fn retry_after_is_honoured_and_final_errors_are_not_retried() {
        let policy = RetryPolicy::default();
        let mut limited = err(ErrorClass::RateLimited);
        limited.retry_after = Some(Duration::from_secs(7));
        assert_eq!(policy.delay(1, &limited), Some(Duration::from_secs(7)));
        limited.retry_after = Some(Duration::from_secs(3600));
        assert_eq!(policy.delay(1, &limited), Some(policy.max_delay));
        assert_eq!(policy.delay(1, &err(ErrorClass::Auth)), None);
        assert_eq!(policy.delay(1, &err(ErrorClass::ContextTooLong)), None);
    }

    #[test]
    fn a_plain_backoff_doubles_from_the_base_without_jitter_up_to_its_ceiling() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.backoff(1), Some(Duration::from_secs(1)));
        assert_eq!(policy.backoff(2), Some(Duration::from_secs(2)));
        assert_eq!(policy.backoff(3), None, "3 attempts in all");
        let many = RetryPolicy {
            attempts: 100,
            ..RetryPolicy::default()
        };
        assert_eq!(
            many.backoff(7),
            Some(Duration::from_secs(60)),
            "the ceiling"
        );
        assert_eq!(
            many.backoff(99),
            Some(Duration::from_secs(60)),
            "no overflow"
        );
    }

    #[test]
    fn a_failed_subtask_waits_its_retry_delay_times_two_to_the_failures() {
        // Seed 002's retryDelay · 2^attempt, for max_attempts in all.
        let policy = RetryPolicy::subtasks(3, 1_000);
        assert_eq!(policy.backoff(1), Some(Duration::from_secs(2)));
        assert_eq!(policy.backoff(2), Some(Duration::from_secs(4)));
        assert_eq!(policy.backoff(3), None);
        let long = RetryPolicy::subtasks(10, 60_000);
        assert_eq!(
            long.backoff(9),
            Some(Duration::from_secs(60 * 512)),
            "no ceiling but the configuration's"
        );
    }
}
