#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Adaptive token budgets (cupel-analytics `UsageRecorder`): the cost of one
//! loop cycle — `record_cycle` with a report from every agent, then
//! `suggest` — on a recorder that already holds ten cycles (full windows),
//! for A = 10 / 100 / 1,000 agents; plus the `floor` (stable sort of A
//! `(f64, u32)` pairs) in the same group. Usage per agent and cycle is a
//! fixed pseudo-random function of (agent, cycle).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use cupel_benches::{floor_pairs, floor_sort, quick};
use cupel_run::{Decimal, UsageRecorder};

fn usage(agent: usize, cycle: usize) -> i64 {
    // A small multiplicative hash: deterministic, spread over 0..5000.
    let h = (agent as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (cycle as u64 + 1);
    (h.wrapping_mul(0xBF58_476D_1CE4_E5B9) >> 33) as i64 % 5_000
}

fn reports(agents: &[String], cycle: usize) -> Vec<(&str, i64)> {
    agents
        .iter()
        .enumerate()
        .map(|(i, a)| (a.as_str(), usage(i, cycle)))
        .collect()
}

fn bench_adaptive(c: &mut Criterion) {
    let mut group = c.benchmark_group("adaptive");
    if quick() {
        group
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
    }
    let margin: Decimal = "0.1".parse().unwrap();
    for n in [10usize, 100, 1_000] {
        let agents: Vec<String> = (0..n).map(|i| format!("agent-{i:04}")).collect();
        let mut warm = UsageRecorder::new();
        for cycle in 0..10 {
            warm.record_cycle(reports(&agents, cycle)).unwrap();
        }
        let next = reports(&agents, 10);
        group.bench_with_input(
            BenchmarkId::new("record_cycle+suggest", n),
            &next,
            |b, next| {
                b.iter_batched_ref(
                    || warm.clone(),
                    |r| {
                        r.record_cycle(black_box(next.iter().copied())).unwrap();
                        r.suggest(1_000, margin)
                    },
                    BatchSize::SmallInput,
                );
            },
        );
        let pairs = floor_pairs(n);
        group.bench_with_input(BenchmarkId::new("floor", n), &pairs, |b, pairs| {
            b.iter_batched_ref(
                || pairs.clone(),
                |v| floor_sort(black_box(v)),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench_adaptive);
criterion_main!(benches);
