//! [`CacheError`]: what a cache session or a simulation can refuse.

use crate::error::ChatError;

/// Why a cache-aware window or a simulation could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The transcript could not be counted or trimmed (budget, encoding,
    /// pinned prompts over the budget, nothing fits).
    #[error(transparent)]
    Chat(#[from] ChatError),
    /// A low-water fraction outside `0 < f <= 1`.
    #[error("the low-water fraction must be in (0, 1], got {fraction}")]
    InvalidLowWaterFraction {
        /// The fraction given.
        fraction: f64,
    },
    /// A low-water mark in tokens that is negative or above the budget.
    #[error("the low-water mark must be between 0 and max_tokens {max_tokens}, got {low_water}")]
    InvalidLowWater {
        /// The mark given.
        low_water: i64,
        /// The budget.
        max_tokens: i64,
    },
    /// One request of a simulation, named: what
    /// [`SimTurn::error`](crate::SimTurn::error) reports for a request a
    /// strategy could not window (its newest unit alone over the budget,
    /// the pinned prompts over it, no conversation message left; the replay
    /// goes on), and what [`simulate`](crate::simulate) returns when
    /// trimming one request fails for another reason (the replay stops).
    #[error("request {request} (the first {messages} messages) cannot be windowed: {source}")]
    Request {
        /// The request, numbered from 1 as the simulation numbers them.
        request: usize,
        /// The messages that request holds.
        messages: usize,
        /// Why.
        source: ChatError,
    },
    /// A simulation needs at least one request: a non-pinned message before
    /// an assistant message.
    #[error(
        "the transcript has no request to replay: {messages} messages, {assistant} from the assistant, none after a user message"
    )]
    NoRequests {
        /// Messages in the transcript.
        messages: usize,
        /// Assistant messages.
        assistant: usize,
    },
}
