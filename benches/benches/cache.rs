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
    turn_cost(c);
}

/// One turn's cost against its history (issue 54, item 1: a turn on a
/// 10,000-message history at most 2x one on a 100-message history, the new
/// messages equal), with `next` (`history_*`: every older message's
/// fingerprint compared) and `next_appended` (`appended_*`: the caller
/// vouches that the transcript only grew): a session that made the windows of the requests ending
/// at messages `h` and `h + 2` makes the next one, two messages later (an
/// answer and a question), on the seeded chat transcript at a
/// 40,000-token budget.
fn turn_cost(c: &mut Criterion) {
    let doc = cupel_benches::agent::chat_transcript(AGENT_SEED, 5_010).unwrap();
    let messages = doc.messages();
    let opts = Trim::anthropic(40_000);
    let profile = CacheProfile::anthropic();
    let mut g = c.benchmark_group("cache_turn");
    if quick() {
        g.sample_size(10).measurement_time(Duration::from_secs(1));
    }
    for h in [100usize, 1_000, 10_000] {
        // #0 is the system prompt, then questions at odd positions: `..h`
        // ends on a question.
        let mut warm = CacheSession::new(opts.clone(), profile.clone());
        warm.next(&messages[..h]).unwrap();
        warm.next(&messages[..h + 2]).unwrap();
        let next = &messages[..h + 4];
        g.bench_function(format!("history_{h}"), |b| {
            b.iter_batched(
                || warm.clone(),
                |mut s| {
                    let tokens = s.next(next).unwrap().window_tokens;
                    // Dropped outside the timing, as a live session is kept.
                    (s, black_box(tokens))
                },
                criterion::BatchSize::LargeInput,
            )
        });
        g.bench_function(format!("appended_{h}"), |b| {
            b.iter_batched(
                || warm.clone(),
                |mut s| {
                    let tokens = s.next_appended(next).unwrap().window_tokens;
                    (s, black_box(tokens))
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
