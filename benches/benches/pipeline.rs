//! The standard pipeline case of BENCH-WORKLOAD.md: a 5-scorer composite,
//! greedy slicing, chronological placement, deduplication on, overflow Proceed,
//! at N = 100, 1k, 10k, 100k — `run`, `dry_run`, and the sort floor; and the
//! same case on the grouped workload (a fifth of the items in atomic pairs),
//! `run_grouped` and `dry_run_grouped`, reported beside the ungrouped rows;
//! `run_traced` feeds an item-level `DiagnosticTraceCollector` (the traced
//! path with every record built); `run_variants` runs the variant workload
//! (every fifth item with two cheaper forms). `run`, `dry_run` and the floor are also
//! measured at N = 1M (10 samples; set `CUPEL_BENCH_NO_1M` to skip that size).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_pipeline::RunOptions;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use cupel_benches::{
    floor_pairs, floor_sort, grouped_items, items, quick, standard_pipeline, variant_items,
};
use cupel_core::{DiagnosticTraceCollector, TraceDetailLevel};

fn bench_pipeline(c: &mut Criterion) {
    let mut group = c.benchmark_group("pipeline");
    if quick() {
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
    }
    let big = std::env::var_os("CUPEL_BENCH_NO_1M").is_none();
    let sizes: &[usize] = if big {
        &[100, 1_000, 10_000, 100_000, 1_000_000]
    } else {
        &[100, 1_000, 10_000, 100_000]
    };
    for &n in sizes {
        if n >= 10_000 {
            group.sample_size(10);
        }
        if n >= 1_000_000 {
            let items = items(n);
            let pipeline = standard_pipeline(&items).unwrap();
            group.bench_with_input(BenchmarkId::new("run", n), &items, |b, items| {
                b.iter(|| black_box(pipeline.run(black_box(items)).unwrap()));
            });
            group.bench_with_input(BenchmarkId::new("dry_run", n), &items, |b, items| {
                b.iter(|| black_box(pipeline.dry_run(black_box(items)).unwrap()));
            });
            let pairs = floor_pairs(n);
            group.bench_with_input(BenchmarkId::new("floor", n), &pairs, |b, pairs| {
                b.iter_batched_ref(
                    || pairs.clone(),
                    |v| floor_sort(black_box(v)),
                    BatchSize::LargeInput,
                );
            });
            continue;
        }
        let items = items(n);
        let pipeline = standard_pipeline(&items).unwrap();
        group.bench_with_input(BenchmarkId::new("run", n), &items, |b, items| {
            b.iter(|| black_box(pipeline.run(black_box(items)).unwrap()));
        });
        group.bench_with_input(BenchmarkId::new("dry_run", n), &items, |b, items| {
            b.iter(|| black_box(pipeline.dry_run(black_box(items)).unwrap()));
        });
        group.bench_with_input(BenchmarkId::new("run_traced", n), &items, |b, items| {
            b.iter(|| {
                let mut c = DiagnosticTraceCollector::new(TraceDetailLevel::Item);
                let w = pipeline
                    .run_with(black_box(items), RunOptions::new().collector(&mut c))
                    .map(|o| o.items)
                    .unwrap();
                black_box((w, c))
            });
        });
        let grouped = grouped_items(n);
        group.bench_with_input(BenchmarkId::new("run_grouped", n), &grouped, |b, items| {
            b.iter(|| black_box(pipeline.run(black_box(items)).unwrap()));
        });
        group.bench_with_input(
            BenchmarkId::new("dry_run_grouped", n),
            &grouped,
            |b, items| {
                b.iter(|| black_box(pipeline.dry_run(black_box(items)).unwrap()));
            },
        );
        let varied = variant_items(n);
        group.bench_with_input(BenchmarkId::new("run_variants", n), &varied, |b, items| {
            b.iter(|| black_box(pipeline.run(black_box(items)).unwrap()));
        });
        let pairs = floor_pairs(n);
        group.bench_with_input(BenchmarkId::new("floor", n), &pairs, |b, pairs| {
            b.iter_batched_ref(
                || pairs.clone(),
                |v| floor_sort(black_box(v)),
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench_pipeline);
criterion_main!(benches);
