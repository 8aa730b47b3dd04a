//! [`CacheError`], the old name of the cache session's errors: they are
//! [`ChatError`]'s now, the one error type of the crate.

use crate::error::ChatError;

/// The old name of [`ChatError`] for cache sessions and simulations: its
/// variants (`InvalidLowWaterFraction`, `InvalidLowWater`, `Request`,
/// `NoRequests`) are [`ChatError`]'s, so `CacheError::Request { .. }` still
/// names one. `CacheError::Chat(e)` is gone: the error is `e` itself.
#[deprecated(since = "0.2.0", note = "use `ChatError`, the crate's one error type")]
pub type CacheError = ChatError;
