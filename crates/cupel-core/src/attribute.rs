//! [`AttributeValue`]: the value of a named figure a component reports for
//! telemetry (a cache session's turn, ...), so an exporter such as
//! `cupel-otel` records it without depending on the component's crate.

/// The value of one reported attribute (`cupel.cache.read_tokens` = 1,200).
///
/// ```
/// use cupel_core::AttributeValue;
/// let v = AttributeValue::Int(1_200);
/// assert_eq!(v, AttributeValue::Int(1_200));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AttributeValue {
    /// A count of tokens or messages.
    Int(i64),
    /// Text.
    Str(String),
}
