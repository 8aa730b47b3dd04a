//! Reported figures as OpenTelemetry span attributes.
//!
//! A component that reports named figures as [`AttributeValue`]s (a cache
//! session's turn: `CacheTurn::attributes` in `cupel-chat`) is recorded here
//! without this crate depending on the component's: the pairs are all it
//! needs. On the span of the model request a cache-aware window feeds, a
//! trace then shows per request how warm the prompt cache stayed and why
//! the prefix broke when it did.

use cupel_core::AttributeValue;
use opentelemetry::KeyValue;
use opentelemetry::trace::Span;

/// The pairs as key-values, in their order: an [`AttributeValue::Int`] as an
/// integer, an [`AttributeValue::Str`] as a string.
///
/// ```
/// use cupel_chat::{CacheProfile, CacheSession, Message, Trim};
/// use opentelemetry::KeyValue;
///
/// let mut session = CacheSession::new(Trim::openai(1_000), CacheProfile::openai());
/// let transcript = vec![Message::system("Be terse."), Message::user("Hi")];
/// let turn = session.next(&transcript)?;
/// let attributes = cupel_otel::attribute_values(turn.attributes());
/// assert!(attributes.contains(&KeyValue::new("cupel.cache.turn", 1_i64)));
/// assert!(attributes.contains(&KeyValue::new("cupel.cache.read_tokens", 0_i64)));
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
pub fn attribute_values(
    pairs: impl IntoIterator<Item = (&'static str, AttributeValue)>,
) -> Vec<KeyValue> {
    pairs
        .into_iter()
        .map(|(k, v)| match v {
            AttributeValue::Int(i) => KeyValue::new(k, i),
            AttributeValue::Str(s) => KeyValue::new(k, s),
            // `AttributeValue` is non-exhaustive: a future kind is recorded as text.
            other => KeyValue::new(k, format!("{other:?}")),
        })
        .collect()
}

/// Sets [`attribute_values`] on `span`: for a cache session, call it with
/// the turn's `attributes()` on the span of the model request that sends the
/// turn's window.
pub fn record_attributes<S: Span + ?Sized>(
    span: &mut S,
    pairs: impl IntoIterator<Item = (&'static str, AttributeValue)>,
) {
    span.set_attributes(attribute_values(pairs));
}
