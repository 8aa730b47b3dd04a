#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Budget simulation (cupel-analytics) on the standard pipeline case of
//! BENCH-WORKLOAD.md at N = 1k: a 5-scorer composite (recency, priority,
//! kind, tag, frequency), greedy slicing, chronological placement,
//! deduplication on, overflow Proceed, budget max = total, target = total / 4.
//!
//! * `find_min_budget_for` — the specification's binary search for the
//!   highest-scored item the standard dry run leaves out, ceiling = total
//!   tokens (the whole range), and the same search on the capped range below;
//! * `find_min_budget_for_exact` — the exact linear search for the same item,
//!   with the range **capped** at the item's tokens + 2,000 (2,001 dry runs
//!   when no size in it works, which is the case here); an uncapped exact
//!   search over ~1M sizes would take minutes;
//! * `budget_sweep` — 100 sizes, total × k / 100 for k = 1..=100;
//! * `dry_run` — one dry run, the unit every simulation pays per probe;
//! * `floor` — the stable sort of 1k `(f64, u32)` pairs, in the same group.
//!
//! With `CUPEL_BENCH_EXACT_FULL=1` the setup also runs the exact search once
//! over the whole range `[tokens, binary search's answer]` (about 276,000 dry
//! runs, tens of seconds) and prints whether the binary search overshot.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use cupel_analytics::{budget_sweep, find_min_budget_for, find_min_budget_for_exact};
use cupel_benches::{floor_pairs, floor_sort, items, quick, standard_pipeline};
use cupel_core::{ContextItem, ExclusionReason};
use cupel_pipeline::Pipeline;

const N: usize = 1_000;
/// How far above the item's tokens the exact search may look.
const EXACT_RANGE: i64 = 2_000;

/// Position of the highest-scored item the standard dry run leaves out for
/// lack of room (not a deduplicated copy).
fn target_index(pipeline: &Pipeline, items: &[ContextItem]) -> usize {
    let report = pipeline.dry_run(items).unwrap();
    let excluded = report
        .excluded
        .iter()
        .find(|e| matches!(e.reason, ExclusionReason::BudgetExceeded { .. }))
        .unwrap();
    items.iter().position(|i| i.ptr_eq(&excluded.item)).unwrap()
}

fn bench_analytics(c: &mut Criterion) {
    let mut group = c.benchmark_group("analytics");
    group.sample_size(10);
    if quick() {
        group
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
    }
    let items = items(N);
    let pipeline = standard_pipeline(&items).unwrap();
    let total = pipeline.budget().max_tokens();
    let target = target_index(&pipeline, &items);
    let tokens = items[target].tokens();
    let capped = tokens + EXACT_RANGE;
    let sizes: Vec<i64> = (1..=100).map(|k| total * k / 100).collect();

    // What is being measured, once, outside the timed part.
    let binary_full = find_min_budget_for(&pipeline, &items, target, total).unwrap();
    let binary_capped = find_min_budget_for(&pipeline, &items, target, capped).unwrap();
    let exact_capped = find_min_budget_for_exact(&pipeline, &items, target, capped).unwrap();
    let sweep = budget_sweep(&pipeline, &items, &sizes).unwrap();
    let in_sweep = sweep.by_item[target].first().copied();
    eprintln!(
        "analytics n={N}: total {total} tokens, target item {target} ({tokens} tokens); \
         binary on [{tokens}, {total}] -> {binary_full:?}; binary on [{tokens}, {capped}] -> \
         {binary_capped:?}; exact on [{tokens}, {capped}] -> {exact_capped:?}; first swept \
         size including it: {in_sweep:?}; items with non-monotonic inclusion over the 100 \
         sizes: {}",
        sweep.non_monotonic_items().len()
    );

    let full_exact = std::env::var_os("CUPEL_BENCH_EXACT_FULL").is_some_and(|v| v != "0");
    if let (true, Some(h)) = (full_exact, binary_full) {
        let started = std::time::Instant::now();
        let exact = find_min_budget_for_exact(&pipeline, &items, target, h).unwrap();
        eprintln!(
            "analytics n={N}: exact on [{tokens}, {h}] -> {exact:?} ({} dry runs in {:.1?})",
            exact.map_or(h - tokens + 1, |e| e - tokens + 1),
            started.elapsed()
        );
    }

    let id = |name: &str| BenchmarkId::new(name, N);
    group.bench_function(id("dry_run"), |b| {
        b.iter(|| black_box(pipeline.dry_run(black_box(&items)).unwrap()));
    });
    group.bench_function(id("find_min_budget_for/full-range"), |b| {
        b.iter(|| find_min_budget_for(&pipeline, black_box(&items), target, total).unwrap());
    });
    group.bench_function(id("find_min_budget_for/capped-2000"), |b| {
        b.iter(|| find_min_budget_for(&pipeline, black_box(&items), target, capped).unwrap());
    });
    group.bench_function(id("find_min_budget_for_exact/capped-2000"), |b| {
        b.iter(|| find_min_budget_for_exact(&pipeline, black_box(&items), target, capped).unwrap());
    });
    group.bench_function(id("budget_sweep/100-sizes"), |b| {
        b.iter(|| budget_sweep(&pipeline, black_box(&items), &sizes).unwrap());
    });
    let pairs = floor_pairs(N);
    group.bench_with_input(BenchmarkId::new("floor", N), &pairs, |b, pairs| {
        b.iter_batched_ref(
            || pairs.clone(),
            |v| floor_sort(black_box(v)),
            BatchSize::LargeInput,
        );
    });
    group.finish();
}

criterion_group!(benches, bench_analytics);
criterion_main!(benches);
