//! Prompt-cache-aware windows (cupel-chat, issue 26), on the seeded
//! 300-request agent transcript of `cupel_benches::agent` at a 40,000-token
//! budget with the Anthropic profile: `session_300` (a `CacheSession` making
//! all 300 windows, each from the whole transcript so far) and `simulate_300`
//! (the three strategies replayed and billed). Before timing, it prints the
//! strategies' totals (what the README's table shows).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use cupel_benches::agent::{AGENT_SEED, agent_transcript};
use cupel_benches::quick;
use cupel_chat::{CacheProfile, CacheSession, Trim, request_ends, simulate};

fn bench(c: &mut Criterion) {
    let doc = agent_transcript(AGENT_SEED, 300).unwrap();
    let messages = doc.messages();
    let opts = Trim::anthropic(40_000);
    let profile = CacheProfile::anthropic();
    let sim = simulate(messages, &opts, &profile).unwrap();
    print!("{}", sim.totals_table());

    let mut g = c.benchmark_group("cache");
    if quick() {
        g.sample_size(10).measurement_time(Duration::from_secs(1));
    } else {
        g.sample_size(10);
    }
    let ends = request_ends(messages);
    g.bench_function("session_300", |b| {
        b.iter(|| {
            let mut s = CacheSession::new(opts.clone(), profile.clone());
            for &end in &ends {
                black_box(s.next(&messages[..end]).unwrap().window_tokens);
            }
        })
    });
    g.bench_function("simulate_300", |b| {
        b.iter(|| black_box(simulate(messages, &opts, &profile).unwrap().runs.len()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
