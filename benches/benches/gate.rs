#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The context gate: one decision over N retrieval nodes (classify, format,
//! count, compact every SQL/C# node under `always` rules) at N = 100, 1k, 10k,
//! and the two compactors alone on the same texts, next to the floor (stable
//! sort of N `(f64, u32)` pairs) measured in the same group.
//!
//! The counter counts whitespace-separated words, so the timings are the
//! gate's own work, not a tokenizer's.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cupel_benches::{XorShift64, floor_pairs, floor_sort, quick};
use cupel_core::TokenCounter;
use cupel_gate::CodeLanguage;
use cupel_gate::{
    CompactionRule, ContextGate, GateConfig, RetrievalNode, compact_csharp, compact_sql,
};

const SIZES: [usize; 3] = [100, 1_000, 10_000];
/// Seed of the gate's node generator.
const GATE_SEED: u64 = 0x6A09_E667_F3BC_C908;

struct Words;
impl TokenCounter for Words {
    fn count_tokens(&self, text: &str) -> i64 {
        i64::try_from(text.split_whitespace().count()).unwrap_or(i64::MAX)
    }
}

const SQL: &str = "-- revenue per region\nSELECT   r.Name AS Region,  SUM(o.Total) AS Revenue\nFROM     dbo.Orders o  /* all orders */\nJOIN     dbo.Regions r ON r.Id = o.RegionId\nWHERE    o.Note <> 'it''s -- not a comment'\nGROUP BY r.Name;\n";
const CSHARP: &str = "public class Repo\n{\n    // the query\n    const string Sql = @\"SELECT *\n        FROM  t -- all\";\n    public async Task<int> CountAsync() => await _db.ExecuteScalarAsync<int>($\"SELECT COUNT(*) FROM {Table}\");\n}\n";
const PROSE: &str = "Refunds are processed within five business days of the request.";

/// N nodes: a seeded mix of SQL, C# and prose.
fn nodes(n: usize) -> Vec<RetrievalNode> {
    let mut rng = XorShift64::new(GATE_SEED);
    (0..n)
        .map(|i| {
            let text = match rng.below(3) {
                0 => SQL,
                1 => CSHARP,
                _ => PROSE,
            };
            RetrievalNode::new(text)
                .with_id(format!("n{i}"))
                .with_path(format!("src/file{i}.txt"))
        })
        .collect()
}

fn bench_gate(c: &mut Criterion) {
    let mut group = c.benchmark_group("gate");
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(if quick() { 1 } else { 3 }));
    let config = GateConfig::builder("g", i64::MAX)
        .divide_new_content("<<<New content")
        .rule(CompactionRule::always(CodeLanguage::Sql))
        .rule(CompactionRule::always(CodeLanguage::Dotnet))
        .build()
        .unwrap();
    let gate = ContextGate::new(config, Words);
    let context = vec!["user: what changed in the revenue report?".to_string(); 8];
    for n in SIZES {
        let nodes = nodes(n);
        let pairs = floor_pairs(n);
        group.throughput(Throughput::Elements(n as u64));
        group.sample_size(if n >= 10_000 { 10 } else { 20 });
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
        group.bench_with_input(BenchmarkId::new("evaluate", n), &nodes, |b, nodes| {
            b.iter(|| black_box(gate.evaluate(&context, black_box(nodes), &[]).unwrap()))
        });
        group.bench_with_input(BenchmarkId::new("compact_only", n), &nodes, |b, nodes| {
            b.iter(|| {
                nodes
                    .iter()
                    .map(|node| compact_sql(node.text()).len() + compact_csharp(node.text()).len())
                    .sum::<usize>()
            })
        });
    }
    group.finish();
}

/// Issue 31: the C# compactor on hostile texts of 64 KiB, 256 KiB and 1 MiB —
/// nested interpolated strings (which overflowed the stack) and runs of `$`
/// outside strings (which were rescanned at every `$`: 256 KiB took 19.7 s) —
/// next to ordinary C# of the same size and the floor (a stable sort of N
/// pairs, N = the size in bytes). Linear scanning shows as a flat ratio.
fn bench_hostile_compaction(c: &mut Criterion) {
    let mut group = c.benchmark_group("gate_hostile");
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(if quick() { 1 } else { 3 }));
    group.sample_size(10);
    let fill = |unit: &str, bytes: usize| unit.repeat(bytes / unit.len());
    for bytes in [64 << 10, 256 << 10, 1 << 20] {
        let pairs = floor_pairs(bytes);
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_with_input(BenchmarkId::new("floor", bytes), &pairs, |b, pairs| {
            b.iter_batched(
                || pairs.clone(),
                |mut v| {
                    floor_sort(&mut v);
                    v
                },
                BatchSize::LargeInput,
            )
        });
        for (name, text) in [
            ("csharp_ordinary", fill(CSHARP, bytes)),
            ("csharp_nested_interp", fill("$\"{", bytes)),
            ("csharp_nested_verbatim_interp", fill("@$\"{", bytes)),
            ("csharp_dollar_run", fill("$", bytes)),
            ("sql_dollar_tags", fill("$a$", bytes)),
        ] {
            group.bench_with_input(BenchmarkId::new(name, bytes), &text, |b, text| {
                b.iter(|| {
                    if name.starts_with("sql") {
                        compact_sql(black_box(text)).len()
                    } else {
                        compact_csharp(black_box(text)).len()
                    }
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_gate, bench_hostile_compaction);
criterion_main!(benches);
