//! Steady-state turn cost of a `CacheSession` against its history's length
//! (issue 54, item 1): a session serves 50 consecutive requests of the
//! seeded chat transcript (two new messages each) after a history of
//! 100, 1,000 or 10,000 messages, with `next` and `next_appended`; prints
//! the mean time per turn. The criterion group `cache_turn` (bench
//! `cache`) measures one turn the same way.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Instant;

use cupel_benches::agent::{AGENT_SEED, chat_transcript};
use cupel_chat::{CacheProfile, CacheSession, Trim};

fn main() {
    let doc = chat_transcript(AGENT_SEED, 5_300).unwrap();
    let messages = doc.messages();
    let opts = Trim::anthropic(40_000);
    for appended in [false, true, false, true] {
        for h in [100usize, 1_000, 10_000] {
            let mut s = CacheSession::new(opts.clone(), CacheProfile::anthropic());
            s.next(&messages[..h]).unwrap();
            s.next(&messages[..h + 2]).unwrap();
            let turns = 50;
            let t = Instant::now();
            for k in 0..turns {
                let end = h + 4 + 2 * k;
                let turn = if appended {
                    s.next_appended(&messages[..end])
                } else {
                    s.next(&messages[..end])
                };
                std::hint::black_box(turn.unwrap().window_tokens);
            }
            let per = t.elapsed().as_secs_f64() * 1e6 / turns as f64;
            let name = if appended { "next_appended" } else { "next" };
            println!("{name:>14} history {h:>6}: {per:8.1} us per turn");
        }
    }
}
