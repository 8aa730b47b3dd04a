#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Slicer benchmarks (cupel-slicers), each group with its sort floor.
//!
//! Inputs: `cupel_benches::items(n)` scored with `cupel_benches::knapsack_scores(n)`
//! and stably sorted by score descending (as the pipeline's Sort stage hands
//! them over). Budgets: `cupel_benches::budget` (target = total / 4) for greedy,
//! quota and count-quota; the BENCH-WORKLOAD "Knapsack case" targets
//! (250,000 for N = 1k with bucket 100 and 10; 2,500,000 for N = 10k, bucket 100)
//! for the knapsack.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use cupel_benches::{budget, floor_pairs, floor_sort, items, knapsack_scores};
use cupel_core::{ContextItem, ContextKind, ScoredItem, SliceBudget, Slicer, score_cmp_desc};
use cupel_slicers::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaSet, QuotaSlice, ScarcityBehavior,
};

/// `n` workload items and their knapsack scores, sorted score-descending
/// (stable: ties keep item order).
fn sorted_workload(n: usize) -> (Vec<ContextItem>, Vec<f64>) {
    let items = items(n);
    let scores = knapsack_scores(n);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| score_cmp_desc(scores[a], scores[b]));
    (
        order.iter().map(|&i| items[i].clone()).collect(),
        order.iter().map(|&i| scores[i]).collect(),
    )
}

fn scored<'a>(items: &'a [ContextItem], scores: &[f64]) -> Vec<ScoredItem<'a>> {
    items
        .iter()
        .zip(scores)
        .map(|(i, &s)| ScoredItem::new(i, s))
        .collect()
}

/// The standard effective budget (no pinned items): target = total / 4.
fn standard_budget(items: &[ContextItem]) -> SliceBudget {
    budget(items).effective(0)
}

fn bench_floor(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    n: usize,
) {
    let pairs = floor_pairs(n);
    group.bench_with_input(BenchmarkId::new("floor", n), &n, |b, _| {
        b.iter_batched_ref(
            || pairs.clone(),
            |v| floor_sort(black_box(v)),
            BatchSize::LargeInput,
        )
    });
}

fn greedy(c: &mut Criterion) {
    let mut group = c.benchmark_group("slicers/greedy");
    for n in [1_000, 10_000, 100_000] {
        if n >= 100_000 {
            group.sample_size(10);
        }
        let (items, scores) = sorted_workload(n);
        let s = scored(&items, &scores);
        let budget = standard_budget(&items);
        group.bench_with_input(BenchmarkId::new("greedy", n), &n, |b, _| {
            b.iter(|| GreedySlice.slice(black_box(&s), budget).unwrap())
        });
        bench_floor(&mut group, n);
    }
    group.finish();
}

fn knapsack(c: &mut Criterion) {
    let mut group = c.benchmark_group("slicers/knapsack");
    group.sample_size(10);
    let cases: [(usize, i64, i64); 3] = [
        (1_000, 250_000, 100),
        (1_000, 250_000, 10),
        (10_000, 2_500_000, 100),
    ];
    let mut floors_done = Vec::new();
    for (n, target, bucket) in cases {
        let (items, scores) = sorted_workload(n);
        let s = scored(&items, &scores);
        let total: i64 = items.iter().map(ContextItem::tokens).sum();
        let budget = SliceBudget::new(total.max(target), target);
        let slicer = KnapsackSlice::new(bucket).unwrap();
        let t = slicer.table_size(n, target);
        eprintln!(
            "knapsack n={n} target={target} bucket={bucket}: {} cells, keep table {} bytes \
             ({:.4} bytes/cell), dp row {} bytes",
            t.cells,
            t.keep_bytes,
            t.keep_bytes as f64 / t.cells as f64,
            t.dp_bytes
        );
        let id = format!("n{n}-target{target}-bucket{bucket}");
        match slicer.slice(&s, budget) {
            Ok(_) => {
                group.bench_function(BenchmarkId::new("knapsack", &id), |b| {
                    b.iter(|| slicer.slice(black_box(&s), budget).unwrap())
                });
            }
            Err(e) => {
                eprintln!("knapsack {id} with the default guard: {e}");
                // Measure it anyway with the guard raised to fit the table.
                let raised = slicer.with_max_table_bytes(t.keep_bytes);
                group.bench_function(BenchmarkId::new("knapsack-raised-guard", &id), |b| {
                    b.iter(|| raised.slice(black_box(&s), budget).unwrap())
                });
            }
        }
        // The count-constrained knapsack on the same input (a few requirements).
        let ccks =
            CountConstrainedKnapsackSlice::new(count_entries(), slicer, ScarcityBehavior::Degrade)
                .unwrap();
        if ccks.slice(&s, budget).is_ok() {
            group.bench_function(BenchmarkId::new("count-constrained-knapsack", &id), |b| {
                b.iter(|| ccks.slice(black_box(&s), budget).unwrap())
            });
        }
        if !floors_done.contains(&n) {
            bench_floor(&mut group, n);
            floors_done.push(n);
        }
    }
    group.finish();
}

fn count_entries() -> Vec<CountQuotaEntry> {
    vec![
        CountQuotaEntry::new(ContextKind::TOOL_OUTPUT, 5, 200).unwrap(),
        CountQuotaEntry::new(ContextKind::MEMORY, 2, 100).unwrap(),
        CountQuotaEntry::new(ContextKind::DOCUMENT, 0, 300).unwrap(),
    ]
}

fn quotas(c: &mut Criterion) {
    let n = 10_000;
    let mut group = c.benchmark_group("slicers/quota");
    let (items, scores) = sorted_workload(n);
    let s = scored(&items, &scores);
    let budget = standard_budget(&items);
    let quota_set = QuotaSet::builder()
        .quota(ContextKind::MESSAGE, 20.0, 50.0)
        .quota(ContextKind::DOCUMENT, 10.0, 40.0)
        .cap(ContextKind::TOOL_OUTPUT, 30.0)
        .build()
        .unwrap();
    let quota = QuotaSlice::new(quota_set, Arc::new(GreedySlice));
    group.bench_with_input(BenchmarkId::new("quota-greedy", n), &n, |b, _| {
        b.iter(|| quota.slice(black_box(&s), budget).unwrap())
    });
    let count = CountQuotaSlice::new(
        count_entries(),
        Arc::new(GreedySlice),
        ScarcityBehavior::Degrade,
    )
    .unwrap();
    group.bench_with_input(BenchmarkId::new("count-quota-greedy", n), &n, |b, _| {
        b.iter(|| count.slice(black_box(&s), budget).unwrap())
    });
    group.bench_with_input(BenchmarkId::new("greedy", n), &n, |b, _| {
        b.iter(|| GreedySlice.slice(black_box(&s), budget).unwrap())
    });
    bench_floor(&mut group, n);
    group.finish();
}

criterion_group!(benches, greedy, knapsack, quotas);
criterion_main!(benches);
