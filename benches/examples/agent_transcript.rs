//! Writes the seeded agent transcript of N requests (the generator of
//! `BENCH-WORKLOAD`, the one `cache_sim` replays) as an Anthropic request
//! body, for whole-process timings of `cupel chat` and `cupel cache-sim`
//! (`cargo run --release -p cupel-benches --example agent_transcript --
//! 400 agent400.json`; 400 requests make about 800 messages).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_benches::agent::{AGENT_SEED, agent_transcript};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(n), Some(path)) = (args.first().and_then(|a| a.parse().ok()), args.get(1)) else {
        eprintln!("usage: agent_transcript REQUESTS FILE.json");
        std::process::exit(2);
    };
    let t = agent_transcript(AGENT_SEED, n).expect("the generator makes a valid transcript");
    std::fs::write(path, t.to_json_pretty()).expect("the file can be written");
}
