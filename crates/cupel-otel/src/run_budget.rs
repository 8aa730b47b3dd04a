//! Run-budget state as OpenTelemetry span attributes and events.
//!
//! A [`LocalTracker`](cupel_run::LocalTracker) already emits a `tracing`
//! event at every checkpoint; applications that trace with OpenTelemetry
//! directly attach the same numbers to their own spans (the provider call,
//! the tool call) with [`record_run_budget`], and record a failed checkpoint with
//! [`record_run_budget_exceeded`].

use cupel_run::BudgetExceededError;
use cupel_run::RunSnapshot;
use opentelemetry::KeyValue;
use opentelemetry::trace::Span;

/// Milliseconds left before the run's earliest deadline (absent without one).
pub const BUDGET_REMAINING_TIME: &str = "budget_remaining_time";
/// Input tokens a new request could still take (absent when unbounded).
pub const BUDGET_REMAINING_TOKENS_INPUT: &str = "budget_remaining_tokens.input";
/// Output tokens a new request could still take (absent when unbounded).
pub const BUDGET_REMAINING_TOKENS_OUTPUT: &str = "budget_remaining_tokens.output";
/// `0` for the run's own tracker, `n` for a subagent scope `n` levels down.
pub const BUDGET_SCOPE_DEPTH: &str = "budget_scope_depth";
/// The event recorded by [`record_run_budget_exceeded`].
pub const BUDGET_EXCEEDED_EVENT: &str = "cupel.run_budget.exceeded";
/// The failed checkpoint (`preflight`, `provider_request`, ...), on the event.
pub const BUDGET_PHASE: &str = "budget_phase";
/// What ran out (`deadline`, `input`, `output`), on the event.
pub const BUDGET_DIMENSION: &str = "budget_dimension";
/// The breached scope's state as JSON, on the event.
pub const BUDGET_STATE: &str = "budget_state";
/// Depth of the scope whose request broke the limit, on the event (`0` for
/// the run's own tracker; compare with the depth in [`BUDGET_STATE`]).
pub const BUDGET_REQUESTER_DEPTH: &str = "budget_requester_depth";
/// Label of the requesting scope, on the event when it has one
/// (`LocalTracker::child_named`).
pub const BUDGET_REQUESTER_LABEL: &str = "budget_requester_label";

/// The attributes describing `snapshot`: [`BUDGET_REMAINING_TIME`],
/// [`BUDGET_REMAINING_TOKENS_INPUT`], [`BUDGET_REMAINING_TOKENS_OUTPUT`]
/// (each only when bounded) and [`BUDGET_SCOPE_DEPTH`]. The names are the
/// `tracing` field names the tracker's own events use.
///
/// ```
/// use cupel_run::{FixedTimeProvider, LocalTracker, RunBudget, TokenLimit};
/// use opentelemetry::KeyValue;
///
/// let clock = FixedTimeProvider::new("2026-01-01T00:00:00Z".parse().unwrap());
/// let run = LocalTracker::new(
///     RunBudget::new(None, Some(TokenLimit::new(Some(500), None)?), &clock)?,
///     clock,
/// )?;
/// let attributes = cupel_otel::budget_attributes(&run.snapshot());
/// assert_eq!(
///     attributes,
///     [
///         KeyValue::new("budget_remaining_tokens.input", 500),
///         KeyValue::new("budget_scope_depth", 0),
///     ]
/// );
/// # Ok::<(), cupel_run::RunError>(())
/// ```
pub fn budget_attributes(snapshot: &RunSnapshot) -> Vec<KeyValue> {
    let mut attributes = Vec::with_capacity(4);
    if let Some(ms) = snapshot.remaining_time_ms() {
        attributes.push(KeyValue::new(BUDGET_REMAINING_TIME, ms));
    }
    if let Some(left) = snapshot.remaining_tokens {
        if let Some(input) = left.input() {
            attributes.push(KeyValue::new(BUDGET_REMAINING_TOKENS_INPUT, input));
        }
        if let Some(output) = left.output() {
            attributes.push(KeyValue::new(BUDGET_REMAINING_TOKENS_OUTPUT, output));
        }
    }
    let depth = i64::try_from(snapshot.scope_depth).unwrap_or(i64::MAX);
    attributes.push(KeyValue::new(BUDGET_SCOPE_DEPTH, depth));
    attributes
}

/// Sets [`budget_attributes`] on `span`.
pub fn record_run_budget<S: Span + ?Sized>(span: &mut S, snapshot: &RunSnapshot) {
    for attribute in budget_attributes(snapshot) {
        span.set_attribute(attribute);
    }
}

/// The old name of [`record_run_budget`].
#[deprecated(since = "0.2.0", note = "renamed `record_run_budget`")]
pub fn record_budget<S: Span + ?Sized>(span: &mut S, snapshot: &RunSnapshot) {
    record_run_budget(span, snapshot);
}

/// The old name of [`record_run_budget_exceeded`].
#[deprecated(since = "0.2.0", note = "renamed `record_run_budget_exceeded`")]
pub fn record_budget_exceeded<S: Span + ?Sized>(span: &mut S, error: &BudgetExceededError) {
    record_run_budget_exceeded(span, error);
}

/// Adds a [`BUDGET_EXCEEDED_EVENT`] event to `span` with the phase, the
/// dimension, the requesting scope ([`BUDGET_REQUESTER_DEPTH`], and
/// [`BUDGET_REQUESTER_LABEL`] when it has a label) and the JSON state of
/// `error`.
pub fn record_run_budget_exceeded<S: Span + ?Sized>(span: &mut S, error: &BudgetExceededError) {
    let depth = i64::try_from(error.requester_depth()).unwrap_or(i64::MAX);
    let mut attributes = vec![
        KeyValue::new(BUDGET_PHASE, error.phase().as_str()),
        KeyValue::new(BUDGET_DIMENSION, error.dimension().as_str()),
        KeyValue::new(BUDGET_REQUESTER_DEPTH, depth),
    ];
    if let Some(label) = error.requester_label() {
        attributes.push(KeyValue::new(BUDGET_REQUESTER_LABEL, label.to_owned()));
    }
    attributes.push(KeyValue::new(BUDGET_STATE, error.budget_json().to_owned()));
    span.add_event(BUDGET_EXCEEDED_EVENT, attributes);
}
