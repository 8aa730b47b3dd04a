//! Context-gate decisions as an OpenTelemetry span event.
//!
//! The context gate (`cupel_gate::ContextGate`) emits its
//! `MANAGE_CONTEXT_BUDGET` event through `tracing`. Applications that trace
//! with OpenTelemetry directly put the same decision on their own span (the
//! step that runs the gate, the model call it feeds) with
//! [`record_gate_report`], from the [`GateReport`] the gate returns with
//! every outcome; [`record_gate_error`] records a failed call.
//!
//! The report type lives in `cupel-gate` (which depends on `cupel-core`
//! only), the one optional dependency this module (feature `gate`) adds.

use cupel_gate::{GATE_EVENT, GateFailure, GateReport};
use opentelemetry::trace::Span;
use opentelemetry::{Array, KeyValue, StringValue, Value};

/// The event's name and its `event_type` attribute: `MANAGE_CONTEXT_BUDGET`.
pub const GATE_EVENT_NAME: &str = GATE_EVENT;

/// The attributes of a gate decision's event, named like the fields of the
/// gate's own `tracing` event: `event_type`, `gate_id`, `decision` (the
/// seed's `on_ok` / `on_over`), `verdict` (`admitted` / `over`),
/// `max_context_tokens`, `context_tokens`, `divider_tokens`,
/// `retrieval_tokens`, `total_tokens`, `node_count`, `consumed`, `demanded`
/// (array of the demand topics found), `requeued`, then one array per node
/// field, in buffer order: `node.index`, `node.id` (`""` for a node without
/// one), `node.language`, `node.policy` (`""` where no rule matched),
/// `node.compacted`, `node.tokens_before`, `node.tokens_after`,
/// `node.unmatched` (`unknown_language` or `no_rule` where no rule matched
/// the node, else `""`). Element `i` of
/// every `node.*` array describes node `i`. (OpenTelemetry attributes are
/// flat: parallel arrays keep each field typed.)
///
/// ```
/// use cupel_gate::{CodeLanguage, CompactionPolicyKind, GateDecision, GateReport, NodeReport};
/// use opentelemetry::{Array, KeyValue, Value};
///
/// let mut node = NodeReport::new(0, CodeLanguage::Sql);
/// node.policy = Some(CompactionPolicyKind::Always);
/// node.compacted = true;
/// node.tokens_before = 30;
/// node.tokens_after = 22;
/// let mut report = GateReport::new("manage_budget", GateDecision::Admitted, 100);
/// report.retrieval_tokens = 22;
/// report.total_tokens = 22;
/// report.nodes.push(node);
///
/// let attributes = cupel_otel::gate_report_attributes(&report);
/// assert!(attributes.contains(&KeyValue::new("decision", "on_ok")));
/// assert!(attributes.contains(&KeyValue::new("verdict", "admitted")));
/// assert!(attributes.contains(&KeyValue::new(
///     "node.tokens_after",
///     Value::Array(Array::I64(vec![22])),
/// )));
/// // A rule matched this node: nothing in `node.unmatched`.
/// assert!(attributes.contains(&KeyValue::new(
///     "node.unmatched",
///     Value::Array(Array::String(vec!["".into()])),
/// )));
/// ```
pub fn gate_report_attributes(report: &GateReport) -> Vec<KeyValue> {
    let n = &report.nodes;
    let strings = |f: &dyn Fn(usize) -> String| {
        Value::Array(Array::String(
            (0..n.len()).map(|i| StringValue::from(f(i))).collect(),
        ))
    };
    let ints = |f: &dyn Fn(usize) -> i64| Value::Array(Array::I64((0..n.len()).map(f).collect()));
    vec![
        KeyValue::new("event_type", GATE_EVENT),
        KeyValue::new("gate_id", report.gate_id.clone()),
        KeyValue::new("decision", report.decision.seed_outcome()),
        KeyValue::new("verdict", report.decision.as_str()),
        KeyValue::new("max_context_tokens", report.max_context_tokens),
        KeyValue::new("context_tokens", report.context_tokens),
        KeyValue::new("divider_tokens", report.divider_tokens),
        KeyValue::new("retrieval_tokens", report.retrieval_tokens),
        KeyValue::new("total_tokens", report.total_tokens),
        KeyValue::new("node_count", count(n.len())),
        KeyValue::new("consumed", count(report.consumed)),
        KeyValue::new(
            "demanded",
            Value::Array(Array::String(
                report
                    .demanded
                    .iter()
                    .map(|t| StringValue::from(t.clone()))
                    .collect(),
            )),
        ),
        KeyValue::new("requeued", count(report.requeued)),
        KeyValue::new("node.index", ints(&|i| count(n[i].index))),
        KeyValue::new("node.id", strings(&|i| n[i].id.clone().unwrap_or_default())),
        KeyValue::new(
            "node.language",
            strings(&|i| n[i].language.as_str().to_string()),
        ),
        KeyValue::new(
            "node.policy",
            strings(&|i| n[i].policy.map_or("", |p| p.as_str()).to_string()),
        ),
        KeyValue::new(
            "node.compacted",
            Value::Array(Array::Bool(n.iter().map(|x| x.compacted).collect())),
        ),
        KeyValue::new("node.tokens_before", ints(&|i| n[i].tokens_before)),
        KeyValue::new("node.tokens_after", ints(&|i| n[i].tokens_after)),
        KeyValue::new(
            "node.unmatched",
            strings(&|i| n[i].unmatched.map_or("", |u| u.as_str()).to_string()),
        ),
    ]
}

/// Adds a [`GATE_EVENT_NAME`] event with [`gate_report_attributes`] to `span`.
///
/// Call it once per decision (with the report of `admit`'s outcome, or of a
/// dry run you want on record); the gate itself never touches your spans.
pub fn record_gate_report<S: Span + ?Sized>(span: &mut S, report: &GateReport) {
    span.add_event(GATE_EVENT_NAME, gate_report_attributes(report));
}

/// Adds a [`GATE_EVENT_NAME`] event for a call of gate `gate_id` that failed
/// with `error`: `event_type`, `gate_id`, `verdict`
/// ([`GateFailure::verdict`]: `pipeline_budget_misconfig` for
/// [`GateFailure::PipelineBudgetMisconfig`], else `error`) and `error` (the
/// message) — the fields of the gate's own `tracing` event for a failure. A
/// failure is no transition, so there is no `decision`.
pub fn record_gate_error<S: Span + ?Sized>(span: &mut S, gate_id: &str, error: &GateFailure) {
    let verdict = error.verdict();
    span.add_event(
        GATE_EVENT_NAME,
        vec![
            KeyValue::new("event_type", GATE_EVENT),
            KeyValue::new("gate_id", gate_id.to_owned()),
            KeyValue::new("verdict", verdict),
            KeyValue::new("error", error.to_string()),
        ],
    );
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
