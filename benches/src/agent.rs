//! A seeded generator of long agent transcripts (Anthropic Messages format):
//! a long system prompt, user instructions every few steps, assistant steps
//! that call tools (sometimes two in parallel), tool results of a few hundred
//! tokens and now and then a huge one (a log, a file dump).

use cupel_chat::{ChatError, Format, Transcript};
use serde_json::{Value, json};

use crate::XorShift64;

/// Seed of the agent transcript generator.
pub const AGENT_SEED: u64 = 0x5EED_CAC4_E000_0026;

const WORDS: [&str; 24] = [
    "the", "build", "fails", "in", "module", "parser", "when", "input", "is", "empty", "retry",
    "with", "flag", "error", "line", "function", "returns", "value", "config", "test", "cache",
    "window", "token", "request",
];

/// About `tokens` tokens of text (the Anthropic estimate counts 3.5
/// characters a token; the words average about 5.5 characters with a space).
fn text(rng: &mut XorShift64, tokens: u64, tag: &str) -> String {
    let chars = tokens * 7 / 2;
    let mut s = String::with_capacity(chars as usize + 16);
    s.push_str(tag);
    while (s.len() as u64) < chars {
        s.push(' ');
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    s
}

/// An agent transcript with `requests` assistant messages (each one model
/// request), drawn from `seed`: the system prompt is about 1,500 tokens; a
/// user message comes every 2–6 assistant steps; 85% of steps call one tool,
/// 15% two in parallel; a result is 100–800 tokens, or 6,000–12,000 with
/// probability 1/40.
///
/// # Errors
/// Never in practice: the document is built by this function in the shape
/// the chat crate reads.
pub fn agent_transcript(seed: u64, requests: usize) -> Result<Transcript, ChatError> {
    let mut rng = XorShift64::new(seed);
    let system = text(&mut rng, 1_500, "You are a coding agent.");
    let mut messages: Vec<Value> = Vec::new();
    let mut call = 0u64;
    let mut until_user = 0u64;
    for step in 0..requests {
        if until_user == 0 {
            let t = 30 + rng.below(150);
            messages.push(json!({"role": "user", "content": text(&mut rng, t, &format!("[instruction {step}]"))}));
            until_user = 2 + rng.below(5);
        }
        until_user -= 1;
        let tt = 20 + rng.below(60);
        let thought = text(&mut rng, tt, &format!("[step {step}]"));
        if until_user == 0 {
            // The last step before the user speaks again: a plain answer.
            messages.push(json!({"role": "assistant", "content": thought}));
            continue;
        }
        let calls = if rng.below(100) < 15 { 2 } else { 1 };
        let mut blocks = vec![json!({"type": "text", "text": thought})];
        let mut results = Vec::new();
        for _ in 0..calls {
            call += 1;
            let id = format!("toolu_{call:05}");
            blocks.push(json!({"type": "tool_use", "id": id, "name": "shell",
                "input": {"cmd": format!("run {call}")}}));
            let t = if rng.below(40) == 0 {
                6_000 + rng.below(6_001)
            } else {
                100 + rng.below(701)
            };
            results.push(json!({"type": "tool_result", "tool_use_id": id,
                "content": text(&mut rng, t, &format!("[output {call}]"))}));
        }
        messages.push(json!({"role": "assistant", "content": blocks}));
        messages.push(json!({"role": "user", "content": results}));
    }
    // A final user message so the last assistant step is a request too.
    messages.push(json!({"role": "user", "content": "Summarise what you did."}));
    messages.push(json!({"role": "assistant", "content": "Done."}));
    let body = json!({"model": "claude-sonnet", "max_tokens": 1024, "system": system, "messages": messages});
    Transcript::from_value(body, Some(Format::Anthropic))
}

/// A plain chat with `requests` user/assistant exchanges drawn from `seed`:
/// the same system prompt, user messages of 30–400 tokens (a pasted
/// document of 3,000–6,000 with probability 1/30), replies of 50–500.
/// Every request adds one exchange, so trimming to the newest turns moves
/// its front on every request once the budget is reached.
///
/// # Errors
/// Never in practice (see [`agent_transcript`]).
pub fn chat_transcript(seed: u64, requests: usize) -> Result<Transcript, ChatError> {
    let mut rng = XorShift64::new(seed);
    let system = text(&mut rng, 1_500, "You are a helpful assistant.");
    let mut messages: Vec<Value> = Vec::new();
    for step in 0..requests {
        let t = if rng.below(30) == 0 {
            3_000 + rng.below(3_001)
        } else {
            30 + rng.below(371)
        };
        messages.push(
            json!({"role": "user", "content": text(&mut rng, t, &format!("[question {step}]"))}),
        );
        let r = 50 + rng.below(451);
        messages.push(
            json!({"role": "assistant", "content": text(&mut rng, r, &format!("[answer {step}]"))}),
        );
    }
    let body = json!({"model": "claude-sonnet", "max_tokens": 1024, "system": system, "messages": messages});
    Transcript::from_value(body, Some(Format::Anthropic))
}
