//! Context-gate decisions recorded on a real span, read back from the SDK.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cupel_core::TokenCounter;
use cupel_gate::CodeLanguage;
use cupel_gate::{
    CompactionRule, ContextGate, GateConfig, GateOutcome, GateState, InboxMessage, RetrievalNode,
};
use opentelemetry::trace::{Span, Tracer, TracerProvider};
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

/// Whitespace-separated words: a deterministic stand-in for a tokenizer.
struct Words;
impl TokenCounter for Words {
    fn count_tokens(&self, text: &str) -> i64 {
        text.split_whitespace().count() as i64
    }
}

/// 11 words raw; 8 once the `-- per region` comment is gone.
const SQL: &str = "SELECT region, SUM(total)  -- per region\nFROM sales GROUP BY region;";

fn attr(event: &opentelemetry::trace::Event, key: &str) -> Value {
    event
        .attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
        .unwrap_or_else(|| panic!("no attribute {key}"))
}

fn strings(v: &[&str]) -> Value {
    Value::Array(Array::String(
        v.iter().map(|s| StringValue::from(s.to_string())).collect(),
    ))
}

fn run_span(f: impl FnOnce(&mut opentelemetry_sdk::trace::Span)) -> SpanData {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let mut span = provider.tracer("app").start("manage_budget");
    f(&mut span);
    span.end();
    exporter.get_finished_spans().unwrap().remove(0)
}

#[test]
fn an_admitted_decision_becomes_one_event_with_every_node_field() {
    let config = GateConfig::builder("manage_budget", 40)
        .divide_new_content("<<<New content")
        .rule(CompactionRule::always(CodeLanguage::Sql))
        .build()
        .unwrap();
    let gate = ContextGate::new(config, Words);
    let state = GateState::new(
        vec!["the user asked about sales".into()],
        vec![
            RetrievalNode::new(SQL).with_id("q1"),
            RetrievalNode::new("the weather is fine today").with_id("n2"),
        ],
    );
    let outcome = gate
        .admit(state, &[InboxMessage::new("call_model", "x")])
        .unwrap();
    assert!(matches!(outcome, GateOutcome::Admitted(_)));
    let data = run_span(|span| cupel_otel::record_gate_report(span, outcome.report()));

    assert_eq!(data.events.events.len(), 1);
    let e = &data.events.events[0];
    assert_eq!(e.name, "MANAGE_CONTEXT_BUDGET");
    assert_eq!(attr(e, "event_type"), Value::from("MANAGE_CONTEXT_BUDGET"));
    assert_eq!(attr(e, "gate_id"), Value::from("manage_budget"));
    // The seed's word in `decision`, ours in `verdict`.
    assert_eq!(attr(e, "decision"), Value::from("on_ok"));
    assert_eq!(attr(e, "verdict"), Value::from("admitted"));
    // Context 5 words; divider 2; q1 compacted: 8 header + 2 id + 8 text = 18
    // (raw: 8 + 2 + 11 = 21); n2 (prose, no rule): 8 + 2 + 5 = 15.
    // 5 + 2 + 18 + 15 = 40: exactly the budget, which is admitted.
    assert_eq!(attr(e, "max_context_tokens"), Value::I64(40));
    assert_eq!(attr(e, "context_tokens"), Value::I64(5));
    assert_eq!(attr(e, "divider_tokens"), Value::I64(2));
    assert_eq!(attr(e, "retrieval_tokens"), Value::I64(33));
    assert_eq!(attr(e, "total_tokens"), Value::I64(40));
    assert_eq!(attr(e, "node_count"), Value::I64(2));
    // One message consumed, for another step: no demand, nothing handed back.
    assert_eq!(attr(e, "consumed"), Value::I64(1));
    assert_eq!(attr(e, "demanded"), strings(&[]));
    assert_eq!(attr(e, "requeued"), Value::I64(0));
    assert_eq!(attr(e, "node.index"), Value::Array(Array::I64(vec![0, 1])));
    assert_eq!(attr(e, "node.id"), strings(&["q1", "n2"]));
    assert_eq!(attr(e, "node.language"), strings(&["sql", "unknown"]));
    assert_eq!(attr(e, "node.policy"), strings(&["always", ""]));
    // n2 is prose: its language is unknown, so no rule could match it.
    assert_eq!(
        attr(e, "node.unmatched"),
        strings(&["", "unknown_language"])
    );
    assert_eq!(
        attr(e, "node.compacted"),
        Value::Array(Array::Bool(vec![true, false]))
    );
    assert_eq!(
        attr(e, "node.tokens_before"),
        Value::Array(Array::I64(vec![21, 15]))
    );
    assert_eq!(
        attr(e, "node.tokens_after"),
        Value::Array(Array::I64(vec![18, 15]))
    );
    assert_eq!(
        e.attributes,
        cupel_otel::gate_report_attributes(outcome.report())
    );
}

#[test]
fn an_over_decision_carries_the_inbox_summary() {
    let config = GateConfig::builder("manage_budget", 30)
        .rule(CompactionRule::demand(CodeLanguage::Sql, "compact_sql"))
        .build()
        .unwrap();
    let gate = ContextGate::new(config, Words);
    let context = vec![vec!["w"; 20].join(" ")];
    let outcome = gate
        .admit(
            GateState::new(context, vec![RetrievalNode::new(SQL).with_id("q1")]),
            &[
                InboxMessage::new("manage_budget", "compact_sql"),
                InboxMessage::new("manage_budget", "compact_sql"),
            ],
        )
        .unwrap();
    let data = run_span(|span| cupel_otel::record_gate_report(span, outcome.report()));
    let e = &data.events.events[0];
    // 20 + 18 (compacted on demand) = 38 > 30.
    assert_eq!(attr(e, "decision"), Value::from("on_over"));
    assert_eq!(attr(e, "verdict"), Value::from("over"));
    assert_eq!(attr(e, "total_tokens"), Value::I64(38));
    assert_eq!(attr(e, "consumed"), Value::I64(2));
    assert_eq!(attr(e, "demanded"), strings(&["compact_sql"]));
    // Duplicates collapse: one message handed back per topic.
    assert_eq!(attr(e, "requeued"), Value::I64(1));
    assert_eq!(attr(e, "node.policy"), strings(&["demand"]));
    assert_eq!(
        attr(e, "node.compacted"),
        Value::Array(Array::Bool(vec![true]))
    );
}

#[test]
fn a_misconfiguration_is_recorded_with_its_message() {
    let gate = ContextGate::new(GateConfig::builder("tiny", 5).build().unwrap(), Words);
    let err = gate
        .admit(GateState::new(vec![], vec![RetrievalNode::new("x")]), &[])
        .unwrap_err();
    let data = run_span(|span| cupel_otel::record_gate_error(span, "tiny", err.error()));
    let e = &data.events.events[0];
    assert_eq!(e.name, "MANAGE_CONTEXT_BUDGET");
    assert_eq!(attr(e, "gate_id"), Value::from("tiny"));
    // No transition, so no `decision`: the verdict names the failure.
    assert!(!e.attributes.iter().any(|kv| kv.key.as_str() == "decision"));
    assert_eq!(attr(e, "verdict"), Value::from("pipeline_budget_misconfig"));
    assert_eq!(attr(e, "error"), Value::from(err.to_string()));
    assert!(err.to_string().starts_with("PIPELINE_BUDGET_MISCONFIG"));
    // A block of 8 header words + 1 text word = 9 > 5.
    assert!(
        e.attributes
            .contains(&KeyValue::new("event_type", "MANAGE_CONTEXT_BUDGET"))
    );
    assert!(err.to_string().contains("9 tokens"), "{err}");
}
