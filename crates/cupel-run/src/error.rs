//! The one error type of the run budget: [`RunError`].

use chrono::TimeDelta;

use crate::UsageError;
use crate::values::{BudgetDimension, BudgetExceededError, BudgetPhase};

/// Every way a run-budget operation can fail: a value that breaks its rules,
/// a checkpoint that refuses ([`Exceeded`](Self::Exceeded), seed 001's
/// [`BudgetExceededError`]), or the store of a shared budget failing.
///
/// This crate owns it (issue 50, clarification SL-6): core's
/// [`CupelError`](cupel_core::CupelError) keeps the selection errors. Where
/// the two meet — a selection under a run budget — the pipeline's
/// `SelectWithinError` wraps both with `From`.
///
/// Each variant carries the numbers a caller needs to act. The enum is
/// `#[non_exhaustive]`: match the variants you handle and keep a `_` arm.
///
/// ```
/// use cupel_run::{BudgetDimension, RunError, TokenLimit};
/// let err = TokenLimit::new(Some(-5), None).unwrap_err();
/// assert_eq!(
///     err,
///     RunError::NegativeTokenLimit { dimension: BudgetDimension::Input, limit: -5 }
/// );
/// assert_eq!(err.to_string(), "run budget input token limit must be >= 0 (got -5)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A [`TokenLimit`](crate::TokenLimit) ceiling was negative.
    #[error("run budget {dimension} token limit must be >= 0 (got {limit})")]
    NegativeTokenLimit {
        /// The dimension (`input` or `output`).
        dimension: BudgetDimension,
        /// The rejected ceiling.
        limit: i64,
    },

    /// A [`TokenUsage`](crate::TokenUsage) count was negative.
    #[error("run budget {dimension} token usage must be >= 0 (got {tokens})")]
    NegativeTokenUsage {
        /// The dimension (`input` or `output`).
        dimension: BudgetDimension,
        /// The rejected count.
        tokens: i64,
    },

    /// A [`RunRequest`](crate::RunRequest) was given a negative projected
    /// duration.
    #[error("run budget projected duration must be >= 0 (got {})", millis(.duration))]
    NegativeProjectedDuration {
        /// The rejected duration.
        duration: TimeDelta,
    },

    /// A cumulative usage counter fed to a [`UsageMeter`](crate::UsageMeter)
    /// went down: the provider reported a total below the one it reported
    /// before (a counter reset, or a delta passed where a total was
    /// expected). Nothing was recorded.
    #[error(
        "run budget cumulative {dimension} token counter went backwards (from {previous} to \
         {observed}); pass deltas to LocalTracker::record, or start a new meter after a reset"
    )]
    UsageCounterDecreased {
        /// The dimension whose counter went down (`input` or `output`).
        dimension: BudgetDimension,
        /// The total observed before.
        previous: i64,
        /// The lower total observed now.
        observed: i64,
    },

    /// A token suggestion was asked to cap a dimension that is not a token
    /// count ([`AdaptiveSuggestion::token_limit`](crate::AdaptiveSuggestion::token_limit)
    /// with [`BudgetDimension::Deadline`]).
    #[error(
        "invalid argument: a token budget suggestion can cap the input or the output dimension, \
         not {dimension}"
    )]
    NotATokenDimension {
        /// The dimension asked for.
        dimension: BudgetDimension,
    },

    /// A cycle of usage could not be recorded in an adaptive-budget history
    /// kept in a store
    /// ([`SharedTracker::record_history_cycle`](crate::store::SharedTracker::record_history_cycle)):
    /// the recorder's own error, and nothing was stored.
    #[error(transparent)]
    Usage(#[from] UsageError),

    /// A run-budget checkpoint refused: see [`BudgetExceededError`] for the
    /// phase, dimension, numbers and JSON state. (Was
    /// `CupelError::RunBudgetExceeded`.)
    #[error(transparent)]
    Exceeded(BudgetExceededError),

    /// The store holding a shared run budget ([`store`](crate::store))
    /// failed during a checkpoint: no budget decision was made. Under the
    /// default fail-closed policy the request must not be made. (Was
    /// `CupelError::BudgetStoreFailed`.)
    #[error("run budget store failed at the {phase} checkpoint: {message}")]
    StoreFailed {
        /// The checkpoint in which the store failed.
        phase: BudgetPhase,
        /// What failed (the operation and the store's message).
        message: String,
    },
}

impl RunError {
    /// The refusal, when this is one ([`Exceeded`](Self::Exceeded)).
    pub fn exceeded(&self) -> Option<&BudgetExceededError> {
        match self {
            RunError::Exceeded(err) => Some(err),
            _ => None,
        }
    }
}

impl From<BudgetExceededError> for RunError {
    fn from(err: BudgetExceededError) -> Self {
        RunError::Exceeded(err)
    }
}

/// `d` in milliseconds, with a fraction only when `d` is not whole
/// (`-1500 ms`, `-0.000001 ms`).
fn millis(d: &TimeDelta) -> String {
    let sign = if *d < TimeDelta::zero() { "-" } else { "" };
    let abs = d.abs();
    let whole = abs.num_milliseconds();
    let nanos = (abs - TimeDelta::milliseconds(whole))
        .num_nanoseconds()
        .unwrap_or(0);
    if nanos == 0 {
        format!("{sign}{whole} ms")
    } else {
        format!("{sign}{whole}.{nanos:06} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_milliseconds() {
        // 1.5 s = 1500 ms exactly; one nanosecond = 0.000001 ms.
        assert_eq!(millis(&TimeDelta::milliseconds(-1_500)), "-1500 ms");
        assert_eq!(millis(&TimeDelta::nanoseconds(-1)), "-0.000001 ms");
        assert_eq!(millis(&TimeDelta::zero()), "0 ms");
    }
}
