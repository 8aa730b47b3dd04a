//! The acceptance scenario of issue 25: a 41-message OpenAI agent transcript
//! (system prompt, user/assistant turns, three tool calls with results, one
//! of them parallel, one huge tool log) trimmed to 2,000 tokens.
//!
//! `cargo run -p cupel-rs-chat --example trim_agent [FILE]`
use cupel_chat::{Transcript, Trim, trim_transcript};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let default = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/agent_41.json");
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| default.to_string());
    let doc = Transcript::parse(&std::fs::read_to_string(path)?)?;
    let (window, out) = trim_transcript(&doc, &Trim::openai(2_000))?;
    eprint!("{}", out.explain());
    eprintln!(
        "kept {} of {} messages: {} of 2,000 tokens",
        out.positions.len(),
        doc.messages().len(),
        out.tokens.window
    );
    println!("{}", window.to_json_pretty());
    Ok(())
}
