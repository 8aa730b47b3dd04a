#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The CLI's input and output path (`cupel select`, `cupel explain`,
//! `--format json`, all three per iteration) on N identical items —
//! `content = "ok"`, `tokens = 1`, distinct timestamps, budget 1000/800, the
//! repro of issue 18, whose explanation was quadratic — at N = 1k, 10k,
//! 100k, with deduplication on (the chat preset) and off, next to the floor
//! (stable sort of N `(f64, u32)` pairs). Time per item should stay flat as
//! N grows (the ratio to the floor roughly constant).

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cupel_benches::{floor_pairs, floor_sort, quick};
use cupel_cli::harness::{Format, select_and_explain};

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// The input: `n` copies of one message with distinct timestamps.
fn identical(n: usize, dedup: bool) -> String {
    let mut s = String::from("[budget]\nmax_tokens = 1000\ntarget_tokens = 800\n");
    if !dedup {
        s.push_str("[policy]\ndeduplication = false\n[[policy.scorers]]\ntype = \"recency\"\n");
    }
    for i in 0..n {
        let _ = write!(
            s,
            "[[items]]\ncontent = \"ok\"\ntokens = 1\ntimestamp = \"{}\"\n",
            chrono::DateTime::from_timestamp(1_700_000_000 + i as i64, 0)
                .unwrap()
                .to_rfc3339()
        );
    }
    s
}

fn cli(c: &mut Criterion) {
    let mut group = c.benchmark_group("cli");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(if quick() { 2 } else { 8 }));
    for n in SIZES {
        let pairs = floor_pairs(n);
        group.throughput(Throughput::Elements(n as u64));
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
        for dedup in [true, false] {
            let text = identical(n, dedup);
            let name = if dedup { "dedup-on" } else { "dedup-off" };
            group.bench_with_input(BenchmarkId::new(name, n), &text, |b, text| {
                b.iter(|| {
                    black_box(
                        select_and_explain(text.as_bytes(), Format::Toml, None, None).unwrap(),
                    )
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, cli);
criterion_main!(benches);
