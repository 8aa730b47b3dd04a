//! Chat transcripts (cupel-chat, issue 25): `trim` of a seeded OpenAI-style
//! transcript of N = 100, 1k, 10k, 100k messages to half its tokens —
//! `trim` with counts read from the messages (the trim alone, rows but no
//! `SelectionReport`), `trim+report` (the default: the same with the
//! report, which is built when first read), `trim+report+read` (the same,
//! then reading the report, which builds it), `trim+count` counting every
//! message with o200k_base (what a caller pays end to end by default) —
//! beside `pipeline_run` (the `newest-turns` preset's `Pipeline::run` on N
//! items with the same tokens and tool groups), `pipeline_dry_run` (the same
//! with its `SelectionReport`: the peer of `trim+report`) and the sort `floor`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use cupel_benches::{XorShift64, floor_pairs, floor_sort, quick};
use cupel_chat::{Format, Message, MessageCounter, Trim, message_from_value, trim};
use cupel_core::{ContextBudget, ContextItem};
use cupel_pipeline::{Pipeline, preset};
use serde_json::{Value, json};

/// Reads the count the generator stored in field `t`.
struct Stored;

impl MessageCounter for Stored {
    fn count_message(&self, m: &Message) -> i64 {
        m.extra.get("t").and_then(Value::as_i64).unwrap_or(0)
    }
    fn describe(&self) -> String {
        "stored".into()
    }
}

/// A system prompt, then user / assistant turns; one turn in five makes a
/// tool call (one in three of those a parallel pair) answered by its results.
fn transcript(n: usize) -> Vec<Message> {
    let mut rng = XorShift64::new(0xC4A7);
    let mut v = Vec::with_capacity(n);
    let parse = |j: Value| message_from_value(j, Format::OpenAi, "m").unwrap();
    v.push(parse(
        json!({"role": "system", "content": "You are a support agent.", "t": 12}),
    ));
    let mut call = 0;
    while v.len() < n {
        let t = 5 + rng.below(60) as i64;
        v.push(parse(json!({"role": "user", "content": format!("user turn {} about order {}", v.len(), rng.next() % 9999), "t": t})));
        if rng.below(5) == 0 && v.len() + 3 < n {
            let k = if rng.below(3) == 0 { 2 } else { 1 };
            let ids: Vec<String> = (0..k)
                .map(|_| {
                    call += 1;
                    format!("call_{call}")
                })
                .collect();
            let calls: Vec<Value> = ids
                .iter()
                .map(|id| {
                    json!({"id": id, "type": "function",
                "function": {"name": "lookup", "arguments": "{\"order\": 42}"}})
                })
                .collect();
            v.push(parse(
                json!({"role": "assistant", "content": null, "tool_calls": calls, "t": 20}),
            ));
            for id in &ids {
                let t = 20 + rng.below(400) as i64;
                v.push(parse(json!({"role": "tool", "tool_call_id": id, "content": format!("result of {id}: status shipped, eta {}", rng.next() % 30), "t": t})));
            }
        }
        let t = 10 + rng.below(120) as i64;
        v.push(parse(json!({"role": "assistant", "content": format!("assistant reply {} with details", v.len()), "t": t})));
    }
    v.truncate(n);
    v
}

fn items_of(messages: &[Message]) -> Vec<ContextItem> {
    let mut owner = std::collections::BTreeMap::new();
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let t = Stored.count_message(m);
            let mut b = ContextItem::builder(format!("#{i}"), t).pinned(m.role.is_prompt());
            for c in m.calls() {
                owner.insert(c.id.clone(), i);
                b = b.group(format!("g{i}"));
            }
            if let Some(id) = m.answered_ids().next()
                && let Some(o) = owner.get(id)
            {
                b = b.group(format!("g{o}"));
            }
            b.build().unwrap()
        })
        .collect()
}

fn bench_chat(c: &mut Criterion) {
    let mut group = c.benchmark_group("chat");
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
        let messages = transcript(n);
        let total: i64 = messages.iter().map(|m| Stored.count_message(m)).sum();
        let max = total / 2;
        let stored = Trim::openai(max).counter(Stored).report(false);
        group.bench_with_input(BenchmarkId::new("trim", n), &messages, |b, m| {
            b.iter(|| black_box(trim(black_box(m), &stored).unwrap()));
        });
        let with_report = Trim::openai(max).counter(Stored);
        group.bench_with_input(BenchmarkId::new("trim+report", n), &messages, |b, m| {
            b.iter(|| black_box(trim(black_box(m), &with_report).unwrap()));
        });
        group.bench_with_input(
            BenchmarkId::new("trim+report+read", n),
            &messages,
            |b, m| {
                b.iter(|| {
                    let out = trim(black_box(m), &with_report).unwrap();
                    black_box(out.report.get().included.len());
                    out
                });
            },
        );
        let o200k = cupel_chat::OpenAiCounter::new("o200k_base").unwrap();
        let real: i64 = messages.iter().map(|m| o200k.count_message(m)).sum();
        let counted = Trim::openai(real / 2 + 3);
        group.bench_with_input(BenchmarkId::new("trim+count", n), &messages, |b, m| {
            b.iter(|| black_box(trim(black_box(m), &counted).unwrap()));
        });
        let items = items_of(&messages);
        let pipeline = Pipeline::new(
            preset("newest-turns").unwrap().config.build().unwrap(),
            ContextBudget::new(max, max).unwrap(),
        );
        group.bench_with_input(BenchmarkId::new("pipeline_run", n), &items, |b, items| {
            b.iter(|| black_box(pipeline.run(black_box(items)).unwrap()));
        });
        // `trim+report` builds a `SelectionReport`: its peer is a dry run.
        group.bench_with_input(
            BenchmarkId::new("pipeline_dry_run", n),
            &items,
            |b, items| {
                b.iter(|| black_box(pipeline.dry_run(black_box(items)).unwrap()));
            },
        );
        let pairs = floor_pairs(n);
        group.bench_with_input(BenchmarkId::new("floor", n), &pairs, |b, pairs| {
            b.iter_batched_ref(
                || pairs.clone(),
                |v| floor_sort(black_box(v)),
                criterion::BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench_chat);
criterion_main!(benches);
