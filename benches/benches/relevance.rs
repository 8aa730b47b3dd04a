#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Relevance runs against plain runs (issue 51, item 9), at N = 1k, 10k,
//! 100k standard workload items, next to the floor measured in the same
//! group:
//!
//! - `plain`: the standard pipeline, `run` (no query);
//! - `relevance`: the same pipeline with a `bm25` child (weight 1) added to
//!   its composite, run with a query (`run_with(.., query)`): every item's
//!   text analysed per query;
//! - `indexed`: the same with the bm25 child reading an
//!   [`IndexedBm25Scorer`] that holds every item (built outside the timed
//!   part, as a session builds it turn by turn): no text analysed per query.
//!
//! Targets: `relevance` <= 3x `plain`, `indexed` <= 1.5x `plain` at 10k.
//! The index's memory against the text it indexes is printed once per size.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cupel_benches::{floor_pairs, floor_sort, items, quick, relevance_pipeline, standard_pipeline};
use cupel_core::Query;
use cupel_pipeline::RunOptions;
use cupel_scorers::{Bm25Scorer, IndexedBm25Scorer};

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// Matches the kind word of half the items ("Memory", "Document").
const QUERY: &str = "memory document";

fn bench_relevance(c: &mut Criterion) {
    let mut group = c.benchmark_group("relevance");
    let (warm, measure) = if quick() { (0.5, 1.5) } else { (1.0, 3.0) };
    group.warm_up_time(Duration::from_secs_f64(warm));
    group.measurement_time(Duration::from_secs_f64(measure));
    let query = Query::new(QUERY);
    for n in SIZES {
        let owned = items(n);
        let pairs = floor_pairs(n);
        group.throughput(Throughput::Elements(n as u64));
        group.sample_size(if n >= 100_000 { 10 } else { 20 });

        let plain = standard_pipeline(&owned).unwrap();
        let relevance = relevance_pipeline(&owned, Arc::new(Bm25Scorer::new())).unwrap();
        let indexed_scorer = IndexedBm25Scorer::new(Bm25Scorer::new());
        indexed_scorer.extend(&owned).unwrap();
        indexed_scorer.shrink_to_fit();
        let (heap, text) = indexed_scorer.with_index(|i| (i.heap_bytes(), i.text_bytes()));
        eprintln!(
            "relevance/index/{n}: {heap} heap bytes for {text} text bytes ({:.2}x)",
            heap as f64 / text as f64
        );
        let indexed = relevance_pipeline(&owned, Arc::new(indexed_scorer)).unwrap();

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
        group.bench_with_input(BenchmarkId::new("plain", n), &owned, |b, items| {
            b.iter(|| black_box(plain.run(black_box(items)).unwrap()))
        });
        for (name, p) in [("relevance", &relevance), ("indexed", &indexed)] {
            group.bench_with_input(BenchmarkId::new(name, n), &owned, |b, items| {
                b.iter(|| {
                    let out = p.run_with(black_box(items), RunOptions::new().query(&query));
                    black_box(out.unwrap().items)
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_relevance);
criterion_main!(benches);
