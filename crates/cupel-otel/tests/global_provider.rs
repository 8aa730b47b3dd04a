#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `OtelCollector::new` and the global tracer provider. One test in
//! its own binary, because it installs a process-wide provider.

mod common;

use common::{pipeline, scenario};
use cupel_core::TraceCollector;
use cupel_otel::{CupelVerbosity, OtelCollector};
use cupel_pipeline::RunOptions;
use opentelemetry::global;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

#[test]
fn new_follows_the_global_provider_installed_at_construction() {
    // Nothing installed yet: the global provider is the no-op one.
    let mut before = OtelCollector::new(CupelVerbosity::Full);
    assert!(!before.is_enabled());
    let plain = pipeline().run(&scenario()).unwrap();
    assert_eq!(
        pipeline()
            .run_with(&scenario(), RunOptions::new().collector(&mut before))
            .map(|o| o.items)
            .unwrap(),
        plain
    );

    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    global::set_tracer_provider(provider.clone());

    // A collector built before installation keeps its no-op tracer.
    assert!(!before.is_enabled());
    pipeline()
        .run_with(&scenario(), RunOptions::new().collector(&mut before))
        .map(|o| o.items)
        .unwrap();
    assert!(exporter.get_finished_spans().unwrap().is_empty());

    // One built after it records: root + 5 stages.
    let mut after = OtelCollector::new(CupelVerbosity::StageOnly);
    assert!(after.is_enabled());
    pipeline()
        .run_with(&scenario(), RunOptions::new().collector(&mut after))
        .map(|o| o.items)
        .unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 6);
    assert!(
        spans
            .iter()
            .all(|s| s.instrumentation_scope.name() == "cupel")
    );
}
