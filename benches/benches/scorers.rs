#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Full scoring passes (`Scorer::score_all`) of every scorer, and of the
//! 5-child composite, at N = 1k, 10k, 100k standard workload items, next to
//! the floor (stable sort of N `(f64, u32)` pairs) measured in the same group.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cupel_benches::{epoch, floor_pairs, floor_sort, items};
use cupel_core::{ContextItem, FixedTimeProvider, Scorer};
use cupel_scorers::{
    CompositeScorer, DecayCurve, DecayScorer, FrequencyScorer, KindScorer, MetadataKeyScorer,
    MetadataTrustScorer, PriorityScorer, RecencyScorer, ReflexiveScorer, ScaledScorer, TagScorer,
};

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

fn tag_scorer() -> TagScorer {
    TagScorer::new([
        ("tag00", 1.0),
        ("tag01", 0.8),
        ("tag02", 0.6),
        ("tag03", 0.4),
        ("tag04", 0.2),
    ])
    .unwrap()
}

/// The 5-child composite: recency, priority, kind (default weights), tag, frequency; weights 1.0.
fn composite5() -> CompositeScorer {
    CompositeScorer::builder()
        .add(RecencyScorer, 1.0)
        .add(PriorityScorer, 1.0)
        .add(KindScorer::default(), 1.0)
        .add(tag_scorer(), 1.0)
        .add(FrequencyScorer, 1.0)
        .build()
        .unwrap()
}

fn scorers() -> Vec<(&'static str, Box<dyn Scorer>)> {
    let clock = Arc::new(FixedTimeProvider::new(epoch()));
    vec![
        ("recency", Box::new(RecencyScorer)),
        ("priority", Box::new(PriorityScorer)),
        ("kind", Box::new(KindScorer::default())),
        ("tag", Box::new(tag_scorer())),
        ("frequency", Box::new(FrequencyScorer)),
        ("reflexive", Box::new(ReflexiveScorer)),
        ("metadata_trust", Box::new(MetadataTrustScorer::default())),
        (
            "metadata_key",
            Box::new(MetadataKeyScorer::new("cupel:priority", "high", 1.5).unwrap()),
        ),
        (
            "decay_exponential",
            Box::new(
                DecayScorer::new(
                    clock,
                    DecayCurve::exponential(Duration::from_secs(7 * 24 * 3600)).unwrap(),
                )
                .unwrap(),
            ),
        ),
        (
            "scaled_recency",
            Box::new(ScaledScorer::wrap(RecencyScorer)),
        ),
        ("composite5", Box::new(composite5())),
    ]
}

fn bench_scorers(c: &mut Criterion) {
    let mut group = c.benchmark_group("scorers");
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    let scorers = scorers();
    for n in SIZES {
        let owned: Vec<ContextItem> = items(n);
        let refs: Vec<&ContextItem> = owned.iter().collect();
        let pairs = floor_pairs(n);
        group.throughput(Throughput::Elements(n as u64));
        group.sample_size(if n >= 100_000 { 10 } else { 20 });

        group.bench_with_input(BenchmarkId::new("floor", n), &pairs, |b, pairs| {
            b.iter_batched(
                || pairs.clone(),
                |mut v| {
                    floor_sort(&mut v);
                    v
                },
                BatchSize::LargeInput,
            )
        });
        for (name, scorer) in &scorers {
            group.bench_with_input(BenchmarkId::new(*name, n), &refs, |b, refs| {
                b.iter(|| black_box(scorer.score_all(black_box(refs))))
            });
        }
        if n == 1_000 {
            // The reference one-item algorithm over a whole pass, for scale.
            let frequency = FrequencyScorer;
            group.bench_with_input(
                BenchmarkId::new("frequency_per_item_reference", n),
                &refs,
                |b, refs| {
                    b.iter(|| {
                        (0..refs.len())
                            .map(|i| frequency.score(i, black_box(refs)))
                            .collect::<Vec<f64>>()
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench_scorers);
criterion_main!(benches);
