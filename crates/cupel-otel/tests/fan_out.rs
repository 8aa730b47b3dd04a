#![allow(clippy::unwrap_used, clippy::expect_used, deprecated)]
//! One run, two collectors: OpenTelemetry spans and a `SelectionReport` from
//! the same run, and the public name constants against what is exported.
//!
//! The scenario is the one in `common/mod.rs` (worked in `otel_spans.rs`):
//! 4 included items, 3 exclusions (Classify, Deduplicate, Slice).

mod common;

use common::{pipeline, scenario};
use cupel_core::{
    DiagnosticTraceCollector, FanOut, SelectionReport, TraceCollector, TraceDetailLevel,
};
use cupel_otel::{CupelVerbosity, OtelCollector, names};
use cupel_pipeline::RunOptions;
use opentelemetry::trace::SpanId;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

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

/// The exported span tree as `(name, parent name)`, in export order.
fn tree(spans: &[SpanData]) -> Vec<(String, Option<String>)> {
    spans
        .iter()
        .map(|s| {
            let parent = (s.parent_span_id != SpanId::INVALID)
                .then(|| {
                    spans
                        .iter()
                        .find(|p| p.span_context.span_id() == s.parent_span_id)
                        .map(|p| p.name.to_string())
                })
                .flatten();
            (s.name.to_string(), parent)
        })
        .collect()
}

fn expected_tree() -> Vec<(String, Option<String>)> {
    let mut t: Vec<(String, Option<String>)> = [
        names::STAGE_CLASSIFY_SPAN,
        names::STAGE_SCORE_SPAN,
        names::STAGE_DEDUPLICATE_SPAN,
        names::STAGE_SLICE_SPAN,
        names::STAGE_PLACE_SPAN,
    ]
    .iter()
    .map(|n| ((*n).to_owned(), Some(names::PIPELINE_SPAN.to_owned())))
    .collect();
    // Spans are exported as they end: the root last.
    t.push((names::PIPELINE_SPAN.to_owned(), None));
    t
}

#[test]
fn one_run_exports_spans_and_returns_the_dry_run_report() {
    let (provider, exporter) = sdk();
    let mut otel =
        OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageAndExclusions);
    let pipeline = pipeline();
    let items = scenario();

    let (window, report) = pipeline.run_traced_with_report(&items, &mut otel).unwrap();
    assert_eq!(window.len(), 4);

    // The report is the dry run's, durations aside.
    assert_eq!(
        zero_durations(report.clone()),
        zero_durations(pipeline.dry_run(&items).unwrap())
    );
    assert_eq!(report.included.len(), 4);
    assert_eq!(report.excluded.len(), 3);

    // And OpenTelemetry saw the whole run: the root and five stage spans, the
    // three exclusions as events on the stages that made them.
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(tree(&spans), expected_tree());
    let exclusions: usize = spans
        .iter()
        .flat_map(|s| s.events.iter())
        .filter(|e| e.name == names::EXCLUSION_EVENT)
        .count();
    assert_eq!(exclusions, 3);
}

#[test]
fn a_fan_out_feeds_otel_and_an_item_level_diagnostic_collector() {
    let (provider, exporter) = sdk();
    let mut both = FanOut::new(
        OtelCollector::with_tracer_provider(&provider, CupelVerbosity::Full),
        DiagnosticTraceCollector::new(TraceDetailLevel::Item),
    );
    assert!(both.is_enabled());
    let window = pipeline()
        .run_with(&scenario(), RunOptions::new().collector(&mut both))
        .map(|o| o.items)
        .unwrap();
    let (_, diagnostics) = both.into_inner();
    let report = diagnostics.into_report();
    assert_eq!(report.included.len(), window.len());
    // Item level: 5 stage events + 3 exclusions + 4 inclusions.
    assert_eq!(report.events.len(), 12);
    // Sorted by score: the duplicate (0.5), gamma (0.1), the negative item (0.0).
    let reasons: Vec<&str> = report
        .excluded
        .iter()
        .map(|e| e.reason.variant_name())
        .collect();
    assert_eq!(
        reasons,
        ["Deduplicated", "BudgetExceeded", "NegativeTokens"]
    );

    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(tree(&spans), expected_tree());
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

#[test]
fn the_deprecated_name_still_works() {
    #[allow(deprecated)]
    let old: cupel_otel::CupelOtelTraceCollector =
        cupel_otel::CupelOtelTraceCollector::new(CupelVerbosity::StageOnly);
    // The same type under its new name.
    let new: OtelCollector = old;
    // No global provider in this test binary: disabled.
    assert!(!new.is_enabled());
}
