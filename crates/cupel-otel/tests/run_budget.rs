//! Run-budget attributes and events on a real span, read back from the SDK.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{DateTime, TimeDelta, Utc};
use cupel_run::LocalTracker;
use cupel_run::{BudgetPhase, Deadline, ManualTimeProvider, RunBudget, TokenLimit, TokenUsage};
use opentelemetry::trace::{Span, Tracer, TracerProvider};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

fn t0() -> DateTime<Utc> {
    "2026-02-01T10:00:00Z".parse().unwrap()
}

/// A provider whose spans are kept in memory, and the exporter holding them.
fn recording() -> (InMemorySpanExporter, SdkTracerProvider) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    (exporter, provider)
}

#[test]
fn provider_call_span_carries_the_budget_state() {
    let (exporter, provider) = recording();
    let tracer = provider.tracer("agent");

    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::builder()
        .deadline(Deadline::after(&clock, TimeDelta::seconds(30)))
        .token_limit(TokenLimit::new(Some(1_000), Some(200)).unwrap())
        .build(&clock)
        .unwrap();
    let run = LocalTracker::new(budget, clock.clone()).unwrap();

    let mut span = tracer.start("provider.call");
    clock.advance(TimeDelta::seconds(12));
    let reservation = run
        .reserve(
            BudgetPhase::ProviderRequest,
            TokenUsage::new(300, 50).unwrap(),
        )
        .unwrap();
    // After the reservation: 1000 - 300 = 700 in, 200 - 50 = 150 out, 30 - 12 = 18 s.
    cupel_otel::record_run_budget(&mut span, &run.snapshot());
    reservation.settle(TokenUsage::new(290, 60).unwrap());
    // 200 - 60 = 140 out left; a tool call projected at 150 out does not fit.
    let err = run
        .reserve(BudgetPhase::ToolExecution, TokenUsage::new(0, 150).unwrap())
        .unwrap_err();
    cupel_otel::record_run_budget_exceeded(&mut span, &err);
    span.end();

    let spans = exporter.get_finished_spans().unwrap();
    let data = &spans[0];
    let attr = |k: &str| {
        data.attributes
            .iter()
            .find(|kv| kv.key.as_str() == k)
            .map(|kv| kv.value.clone())
    };
    assert_eq!(attr("budget_remaining_time"), Some(Value::I64(18_000)));
    assert_eq!(attr("budget_remaining_tokens.input"), Some(Value::I64(700)));
    assert_eq!(
        attr("budget_remaining_tokens.output"),
        Some(Value::I64(150))
    );
    assert_eq!(attr("budget_scope_depth"), Some(Value::I64(0)));

    let event = &data.events.events[0];
    assert_eq!(event.name, cupel_otel::BUDGET_EXCEEDED_EVENT);
    assert!(
        event
            .attributes
            .contains(&KeyValue::new("budget_phase", "tool_execution"))
    );
    assert!(
        event
            .attributes
            .contains(&KeyValue::new("budget_dimension", "output"))
    );
    assert!(
        event
            .attributes
            .contains(&KeyValue::new("budget_state", err.budget_json().to_owned()))
    );
    // The run's own request: depth 0, no label attribute.
    assert!(
        event
            .attributes
            .contains(&KeyValue::new("budget_requester_depth", 0))
    );
    assert!(
        !event
            .attributes
            .iter()
            .any(|kv| kv.key.as_str() == "budget_requester_label")
    );
}

#[test]
fn exceeded_event_names_the_subagent_that_broke_the_run_limit() {
    let (exporter, provider) = recording();
    let tracer = provider.tracer("agent");

    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::new(
        None,
        Some(TokenLimit::new(Some(100), None).unwrap()),
        &clock,
    )
    .unwrap();
    let run = LocalTracker::new(budget, clock.clone()).unwrap();
    let researcher = run
        .child_named("researcher", RunBudget::unlimited())
        .unwrap();
    // 100 input tokens in the run; the researcher asks for 120.
    let err = researcher
        .reserve(
            BudgetPhase::ProviderRequest,
            TokenUsage::new(120, 0).unwrap(),
        )
        .unwrap_err();

    let mut span = tracer.start("subagent.call");
    cupel_otel::record_run_budget_exceeded(&mut span, &err);
    span.end();

    let spans = exporter.get_finished_spans().unwrap();
    let attributes = &spans[0].events.events[0].attributes;
    assert_eq!(
        attributes[..4],
        [
            KeyValue::new("budget_phase", "provider_request"),
            KeyValue::new("budget_dimension", "input"),
            KeyValue::new("budget_requester_depth", 1),
            KeyValue::new("budget_requester_label", "researcher"),
        ]
    );
    // The state says which scope's limit broke: the run's (depth 0).
    let Value::String(state) = &attributes[4].value else {
        panic!("budget_state is a string");
    };
    assert!(
        state
            .as_str()
            .starts_with(r#"{"scope_depth":0,"requester_depth":1,"requester_label":"researcher","#)
    );
}

/// `record_budget` / `record_budget_exceeded`, the names before issue 50's
/// renames, are deprecated wrappers that record exactly what the new names
/// record.
#[test]
#[allow(deprecated)]
fn the_old_names_record_what_the_new_names_record() {
    let (exporter, provider) = recording();
    let tracer = provider.tracer("agent");
    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::builder()
        .token_limit(TokenLimit::new(Some(100), None).unwrap())
        .build(&clock)
        .unwrap();
    let run = LocalTracker::new(budget, clock).unwrap();
    let err = run
        .reserve(
            BudgetPhase::ProviderRequest,
            TokenUsage::new(101, 0).unwrap(),
        )
        .unwrap_err();
    let mut old = tracer.start("old");
    cupel_otel::record_budget(&mut old, &run.snapshot());
    cupel_otel::record_budget_exceeded(&mut old, &err);
    old.end();
    let mut new = tracer.start("new");
    cupel_otel::record_run_budget(&mut new, &run.snapshot());
    cupel_otel::record_run_budget_exceeded(&mut new, &err);
    new.end();
    let spans = exporter.get_finished_spans().unwrap();
    let (a, b) = (&spans[0], &spans[1]);
    assert!(!a.attributes.is_empty());
    assert_eq!(a.attributes, b.attributes);
    assert_eq!(a.events.len(), 1);
    let names = |s: &opentelemetry_sdk::trace::SpanData| {
        s.events
            .iter()
            .map(|e| (e.name.clone(), e.attributes.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(a), names(b));
}
