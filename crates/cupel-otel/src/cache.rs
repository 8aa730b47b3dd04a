//! Cache-aware chat turns as OpenTelemetry span attributes.
//!
//! A [`CacheSession`](cupel_chat::CacheSession) turn says what it kept,
//! appended or cut and what the request is expected to read from and write
//! to the provider's prompt cache. [`record_cache_turn`] puts that on the
//! span of the model call the window feeds, so a trace shows per request
//! how warm the cache stayed and why the prefix broke when it did.

use cupel_chat::CacheTurn;
use opentelemetry::KeyValue;
use opentelemetry::trace::Span;

/// The turn's attributes (the names of [`CacheTurn::attributes`], in the
/// same order): `cupel.cache.turn`, `cupel.cache.window_tokens`,
/// `cupel.cache.max_tokens`, `cupel.cache.low_water_tokens`,
/// `cupel.cache.kept_prefix_messages`, `cupel.cache.kept_prefix_tokens`,
/// `cupel.cache.read_tokens`, `cupel.cache.written_tokens`,
/// `cupel.cache.uncached_tokens`, `cupel.cache.removed_messages`,
/// `cupel.cache.breakpoints` and `cupel.cache.explanation`, plus
/// `cupel.cache.expired_idle_seconds` when the turn came after the cache's
/// lifetime ([`CacheSession::idle`](cupel_chat::CacheSession::idle)).
///
/// ```
/// use cupel_chat::{CacheProfile, CacheSession, Message, Trim};
/// use opentelemetry::KeyValue;
///
/// let mut session = CacheSession::new(Trim::openai(1_000), CacheProfile::openai());
/// let transcript = vec![Message::system("Be terse."), Message::user("Hi")];
/// let turn = session.next(&transcript)?;
/// # #[allow(deprecated)]
/// let attributes = cupel_otel::cache_turn_attributes(&turn);
/// assert!(attributes.contains(&KeyValue::new("cupel.cache.turn", 1_i64)));
/// assert!(attributes.contains(&KeyValue::new("cupel.cache.read_tokens", 0_i64)));
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
#[deprecated(
    since = "0.2.0",
    note = "use `attribute_values(turn.attributes())`: the `chat` feature goes in 0.3"
)]
pub fn cache_turn_attributes(turn: &CacheTurn<'_>) -> Vec<KeyValue> {
    crate::attribute_values(turn.attributes())
}

/// Sets [`cache_turn_attributes`] on `span`: call it on the span of the
/// model request that sends the turn's window.
#[deprecated(
    since = "0.2.0",
    note = "use `record_attributes(span, turn.attributes())`: the `chat` feature goes in 0.3"
)]
pub fn record_cache_turn<S: Span + ?Sized>(span: &mut S, turn: &CacheTurn<'_>) {
    crate::record_attributes(span, turn.attributes());
}
