#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The cost of OpenTelemetry tracing (cupel-otel) on the standard pipeline case
//! of BENCH-WORKLOAD.md at N = 1k: a 5-scorer composite (recency, priority,
//! kind, tag with tag00..tag04 = 1.0..0.2, frequency; weights 1.0), greedy
//! slicing, chronological placement, deduplication on, overflow Proceed.
//!
//! Lines of the `otel` group (same process, same items):
//!
//! * `run` — the untraced hot path;
//! * `run_traced/noop` — `OtelCollector::new` with no tracer provider
//!   installed (the collector reports itself disabled);
//! * `run_traced/enabled_ignoring` — a collector that is enabled but ignores
//!   every hook: the pipeline's own traced path, no telemetry;
//! * `run_traced/stage_only`, `/stage_and_exclusions`, `/full` — an SDK tracer
//!   provider with a simple (synchronous) span processor and an exporter that
//!   discards every batch, so the line is Cupel's work plus the SDK's span
//!   building and processing, without I/O;
//! * `dry_run` — the pipeline's own traced path building a report, for scale;
//! * `floor` — stable sort of N `(f64, u32)` pairs.

use cupel_pipeline::RunOptions;
use std::future::Future;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use cupel_benches::{floor_pairs, floor_sort, items, quick, standard_pipeline};
use cupel_core::TraceCollector;
use cupel_otel::{CupelVerbosity, OtelCollector};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};

const N: usize = 1_000;

/// A collector that asks for tracing and ignores every hook: what the
/// pipeline's own traced path costs (clock reads, exclusion and inclusion
/// records), with no telemetry behind it.
struct EnabledIgnoring;

impl TraceCollector for EnabledIgnoring {
    fn is_enabled(&self) -> bool {
        true
    }
}

/// An exporter that drops every batch.
#[derive(Debug)]
struct Discard;

impl SpanExporter for Discard {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        drop(batch);
        std::future::ready(Ok(()))
    }
}

fn bench_otel(c: &mut Criterion) {
    let mut group = c.benchmark_group("otel");
    if quick() {
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
    } else {
        group
            .sample_size(30)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
    }
    let items = items(N);
    let pipeline = standard_pipeline(&items).unwrap();

    let pairs = floor_pairs(N);
    group.bench_with_input(BenchmarkId::new("floor", N), &pairs, |b, pairs| {
        b.iter_batched_ref(
            || pairs.clone(),
            |v| floor_sort(black_box(v)),
            BatchSize::LargeInput,
        )
    });

    group.bench_with_input(BenchmarkId::new("run", N), &items, |b, items| {
        b.iter(|| black_box(pipeline.run(black_box(items)).unwrap()))
    });

    // No provider installed in this process: the global one is the no-op provider.
    let mut noop = OtelCollector::new(CupelVerbosity::StageOnly);
    assert!(!noop.is_enabled());
    group.bench_with_input(
        BenchmarkId::new("run_traced/noop", N),
        &items,
        |b, items| {
            b.iter(|| {
                black_box(
                    pipeline
                        .run_with(black_box(items), RunOptions::new().collector(&mut noop))
                        .map(|o| o.items)
                        .unwrap(),
                )
            })
        },
    );

    let mut ignoring = EnabledIgnoring;
    group.bench_with_input(
        BenchmarkId::new("run_traced/enabled_ignoring", N),
        &items,
        |b, items| {
            b.iter(|| {
                black_box(
                    pipeline
                        .run_with(black_box(items), RunOptions::new().collector(&mut ignoring))
                        .map(|o| o.items)
                        .unwrap(),
                )
            })
        },
    );

    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(Discard)
        .build();
    for (label, verbosity) in [
        ("run_traced/stage_only", CupelVerbosity::StageOnly),
        (
            "run_traced/stage_and_exclusions",
            CupelVerbosity::StageAndExclusions,
        ),
        ("run_traced/full", CupelVerbosity::Full),
    ] {
        let mut collector = OtelCollector::with_tracer_provider(&provider, verbosity);
        assert!(collector.is_enabled());
        group.bench_with_input(BenchmarkId::new(label, N), &items, |b, items| {
            b.iter(|| {
                black_box(
                    pipeline
                        .run_with(
                            black_box(items),
                            RunOptions::new().collector(&mut collector),
                        )
                        .map(|o| o.items)
                        .unwrap(),
                )
            })
        });
    }

    group.bench_with_input(BenchmarkId::new("dry_run", N), &items, |b, items| {
        b.iter(|| black_box(pipeline.dry_run(black_box(items)).unwrap()))
    });
    group.finish();
    provider.shutdown().unwrap();
}

criterion_group!(benches, bench_otel);
criterion_main!(benches);
