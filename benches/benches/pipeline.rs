//! The standard pipeline case of BENCH-WORKLOAD.md: a 5-scorer composite,
//! greedy slicing, chronological placement, deduplication on, overflow Proceed,
//! at N = 100, 1k, 10k, 100k — `run`, `dry_run`, and the sort floor.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use cupel_benches::{budget, floor_pairs, floor_sort, items, quick};
use cupel_core::{OverflowStrategy, Scorer};
use cupel_pipeline::Pipeline;
use cupel_placers::ChronologicalPlacer;
use cupel_scorers::{
    CompositeScorer, FrequencyScorer, KindScorer, PriorityScorer, RecencyScorer, TagScorer,
};
use cupel_slicers::GreedySlice;

fn standard_scorer() -> CompositeScorer {
    let tags = TagScorer::new([
        ("tag00", 1.0),
        ("tag01", 0.8),
        ("tag02", 0.6),
        ("tag03", 0.4),
        ("tag04", 0.2),
    ])
    .unwrap();
    let children: Vec<(Arc<dyn Scorer>, f64)> = vec![
        (Arc::new(RecencyScorer::new()), 1.0),
        (Arc::new(PriorityScorer::new()), 1.0),
        (Arc::new(KindScorer::default_weights()), 1.0),
        (Arc::new(tags), 1.0),
        (Arc::new(FrequencyScorer::new()), 1.0),
    ];
    CompositeScorer::new(children).unwrap()
}

fn bench_pipeline(c: &mut Criterion) {
    let mut group = c.benchmark_group("pipeline");
    if quick() {
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
    }
    for n in [100usize, 1_000, 10_000, 100_000] {
        if n >= 10_000 {
            group.sample_size(10);
        }
        let items = items(n);
        let pipeline = Pipeline::builder()
            .scorer(standard_scorer())
            .slicer(GreedySlice::new())
            .placer(ChronologicalPlacer)
            .overflow_strategy(OverflowStrategy::Proceed)
            .deduplication(true)
            .budget(budget(&items))
            .build()
            .unwrap();
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
    }
    group.finish();
}

criterion_group!(benches, bench_pipeline);
criterion_main!(benches);
