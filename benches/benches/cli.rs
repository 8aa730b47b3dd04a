#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The CLI's input and output path (`cupel select`, `cupel explain`,
//! `--format json`, all three per iteration) on N identical items —
//! `content = "ok"`, `tokens = 1`, distinct timestamps, budget 1000/800, the
//! repro of issue 18, whose explanation was quadratic — at N = 1k, 10k,
//! 100k, with deduplication on (the chat preset) and off. Time per item
//! should stay flat as N grows.

use std::fmt::Write as _;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cupel_benches::quick;
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
        for dedup in [true, false] {
            let text = identical(n, dedup);
            group.throughput(Throughput::Elements(n as u64));
            let id = format!("n{n}-dedup-{}", if dedup { "on" } else { "off" });
            group.bench_function(BenchmarkId::new("explain-select-json", &id), |b| {
                b.iter(|| select_and_explain(text.as_bytes(), Format::Toml, None, None).unwrap());
            });
        }
    }
    group.finish();
}

criterion_group!(benches, cli);
criterion_main!(benches);
