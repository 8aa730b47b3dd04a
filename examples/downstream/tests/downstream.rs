//! The acceptance test of issue 19 from a downstream crate's point of view:
//! per-request budgets, one run feeding OpenTelemetry and a report, the
//! public telemetry names, and the example binary itself.
//!
//! Every window is derived by hand from `billing_conversation()`: keyword
//! "refund" scores the policy (60 tokens) and the user's request (30) 1.0,
//! the rest 0.0; greedy densities are request 1/30, policy 1/60, then the
//! weather message and the FAQ (0.0, input order); the 20-token system prompt
//! is pinned; chronological placement keeps input order.
#![allow(clippy::unwrap_used, clippy::expect_used, deprecated)]

use cupel_core::{
    ContextKind, DiagnosticTraceCollector, ExclusionReason, FanOut, SelectionReport,
    TraceCollector, TraceDetailLevel,
};
use cupel_downstream_example::{
    LARGE, SMALL, SUPPORT_POLICY, billing_conversation, pipeline_from_policy, select_for,
    support_pipeline, traced_select,
};
use cupel_otel::{CupelVerbosity, OtelCollector, names};
use cupel_testing::{ReasonKind, SelectionReportAssertions};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

fn contents(window: &[cupel_core::ContextItem]) -> Vec<&str> {
    window.iter().map(|i| i.content()).collect()
}

fn sdk() -> (SdkTracerProvider, InMemorySpanExporter) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    (provider, exporter)
}

fn zero_durations(mut r: SelectionReport) -> SelectionReport {
    for e in &mut r.events {
        e.duration_ms = 0.0;
    }
    r
}

/// Span names in export order (stages as they end, the root last).
fn span_names(spans: &[SpanData]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_ref()).collect()
}

const STAGE_THEN_ROOT: [&str; 6] = [
    names::STAGE_CLASSIFY_SPAN,
    names::STAGE_SCORE_SPAN,
    names::STAGE_DEDUPLICATE_SPAN,
    names::STAGE_SLICE_SPAN,
    names::STAGE_PLACE_SPAN,
    names::PIPELINE_SPAN,
];

#[test]
fn one_pipeline_selects_for_two_models() {
    let pipeline = support_pipeline("refund").unwrap();
    let items = billing_conversation().unwrap();

    // Small: target 100 - 20 pinned = 80. Request 30 (50 left), policy 60 > 50,
    // weather 10 (40 left), FAQ 50 > 40.
    let small = select_for(&pipeline, &items, SMALL).unwrap();
    assert_eq!(
        contents(&small),
        [
            "You are the billing assistant.",
            "User: I want a refund for order 42.",
            "User: nice weather today.",
        ]
    );

    // Large: target 130 - 20 = 110. Request 30 (80 left), policy 60 (20 left),
    // weather 10 (10 left), FAQ 50 > 10.
    let large = select_for(&pipeline, &items, LARGE).unwrap();
    assert_eq!(
        contents(&large),
        [
            "You are the billing assistant.",
            "Refund policy: refunds within 30 days.",
            "User: I want a refund for order 42.",
            "User: nice weather today.",
        ]
    );
}

#[test]
fn the_pipeline_from_configuration_selects_the_same_windows() {
    // Issue 19, item 3: `type = "keyword"` in a TOML policy names the
    // application's own scorer through a ComponentRegistry; the configured
    // pipeline must select exactly what the hand-built one selects.
    let built = support_pipeline("refund").unwrap();
    let configured = pipeline_from_policy(SUPPORT_POLICY).unwrap();
    let items = billing_conversation().unwrap();
    for model in [SMALL, LARGE] {
        assert_eq!(
            select_for(&configured, &items, model).unwrap(),
            select_for(&built, &items, model).unwrap(),
            "{}",
            model.name
        );
    }
    // An unknown type lists the built-in and the registered names.
    let err = pipeline_from_policy("[[scorers]]\ntype = \"keywrd\"\n").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("unknown scorer `keywrd`"), "{text}");
    assert!(text.contains("registered: keyword"), "{text}");
    // The constructor's own check: params.keyword is required.
    let err = pipeline_from_policy("[[scorers]]\ntype = \"keyword\"\nparams = {}\n").unwrap_err();
    assert!(err.to_string().contains("params.keyword"), "{err}");
}

#[test]
fn one_run_feeds_opentelemetry_and_returns_the_report() {
    let (provider, exporter) = sdk();
    let mut otel =
        OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageAndExclusions);
    let pipeline = support_pipeline("refund").unwrap();
    let items = billing_conversation().unwrap();

    let (window, report) = traced_select(&pipeline, &items, SMALL, &mut otel).unwrap();
    assert_eq!(window.len(), 3);

    // The report is the dry run's under the same budget.
    let dry = pipeline
        .dry_run_with_budget(&items, &SMALL.budget().unwrap())
        .unwrap();
    assert_eq!(zero_durations(report.clone()), zero_durations(dry));

    // Room after slicing: 80 - (30 + 10) = 40 for both budget exclusions.
    report
        .should()
        .include_item_with_kind(ContextKind::SYSTEM_PROMPT)
        .include_exactly_n_items_with_kind(ContextKind::MESSAGE, 2)
        .exclude_item_with_reason(ReasonKind::BudgetExceeded)
        .exclude_item_with_budget_details(|i| i.content().starts_with("Refund"), 60, 40)
        .exclude_item_with_budget_details(|i| i.content().starts_with("Shipping"), 50, 40)
        .excluded_items_are_sorted_by_score_descending();

    // OpenTelemetry saw the same run: the span tree under the public names, and
    // one exclusion event per excluded item on the Slice span.
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(span_names(&spans), STAGE_THEN_ROOT);
    let slice = spans
        .iter()
        .find(|s| s.name == names::STAGE_SLICE_SPAN)
        .unwrap();
    let reasons: Vec<String> = slice
        .events
        .iter()
        .filter(|e| e.name == names::EXCLUSION_EVENT)
        .flat_map(|e| e.attributes.iter())
        .filter(|kv| kv.key.as_str() == names::EXCLUSION_REASON)
        .map(|kv| kv.value.to_string())
        .collect();
    assert_eq!(reasons, ["BudgetExceeded", "BudgetExceeded"]);
}

#[test]
fn a_fan_out_feeds_opentelemetry_and_an_item_level_report_per_request() {
    let (provider, exporter) = sdk();
    let pipeline = support_pipeline("refund").unwrap();
    let items = billing_conversation().unwrap();
    let mut both = FanOut::new(
        OtelCollector::with_tracer_provider(&provider, CupelVerbosity::Full),
        DiagnosticTraceCollector::new(TraceDetailLevel::Item),
    );
    assert!(both.is_enabled());
    let window = pipeline
        .run_traced_with_budget(&items, &LARGE.budget().unwrap(), &mut both)
        .unwrap();
    assert_eq!(window.len(), 4);

    let (_, diagnostics) = both.into_inner();
    let report = diagnostics.into_report();
    // Only the FAQ is left out: 50 tokens, 10 left after slicing.
    assert_eq!(report.excluded.len(), 1);
    assert_eq!(
        report.excluded[0].reason,
        ExclusionReason::BudgetExceeded {
            item_tokens: 50,
            available_tokens: 10
        }
    );
    // Item level: 5 stage events, 1 exclusion, 4 inclusions.
    assert_eq!(report.events.len(), 10);

    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(span_names(&spans), STAGE_THEN_ROOT);
    let place = spans
        .iter()
        .find(|s| s.name == names::STAGE_PLACE_SPAN)
        .unwrap();
    let included = place
        .events
        .iter()
        .filter(|e| e.name == names::INCLUDED_EVENT)
        .count();
    assert_eq!(included, 4);
}

/// A span's name and its parent's name.
type NamedSpan = (String, Option<String>);

/// Records every new span as `(name, parent name)`.
#[derive(Clone, Default)]
struct SpanTree(std::sync::Arc<std::sync::Mutex<Vec<NamedSpan>>>);

impl<S> tracing_subscriber::Layer<S> for SpanTree
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let parent = ctx
            .span_scope(id)
            .and_then(|mut scope| scope.nth(1))
            .map(|p| p.name().to_owned());
        self.0
            .lock()
            .unwrap()
            .push((attrs.metadata().name().to_owned(), parent));
    }
}

#[test]
fn tracing_users_see_the_same_span_tree() {
    use tracing_subscriber::layer::SubscriberExt;

    let tree = SpanTree::default();
    let subscriber = tracing_subscriber::Registry::default()
        .with(tracing_subscriber::filter::LevelFilter::DEBUG)
        .with(tree.clone());
    let pipeline = support_pipeline("refund").unwrap();
    let items = billing_conversation().unwrap();
    tracing::subscriber::with_default(subscriber, || {
        // Other tests on other threads may have registered these callsites
        // while no subscriber was listening; recompute their interest now
        // that this one is (tracing caches it per callsite).
        tracing::callsite::rebuild_interest_cache();
        let mut collector = cupel_otel::TracingCollector::new();
        select_for(&pipeline, &items, SMALL).unwrap();
        pipeline
            .run_traced_with_budget(&items, &SMALL.budget().unwrap(), &mut collector)
            .unwrap();
    });
    let spans = tree.0.lock().unwrap().clone();
    let expected: Vec<NamedSpan> = std::iter::once((names::PIPELINE_SPAN, None))
        .chain(
            STAGE_THEN_ROOT[..5]
                .iter()
                .map(|&stage| (stage, Some(names::PIPELINE_SPAN))),
        )
        .map(|(n, p)| (n.to_owned(), p.map(str::to_owned)))
        .collect();
    assert_eq!(spans, expected);
}

#[test]
fn the_example_binary_runs() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cupel-downstream-example"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("small model: 3 items, 60 tokens"),
        "{stdout}"
    );
    assert!(
        stdout.contains("large model: 4 items, 120 tokens"),
        "{stdout}"
    );
    assert!(
        stdout.contains("configured pipeline (type = \"keyword\"): same window: true"),
        "{stdout}"
    );
    assert!(
        stdout.contains("stage slice       4 -> 2 items"),
        "{stdout}"
    );
    assert!(stdout.contains("10 events recorded"), "{stdout}");
}
