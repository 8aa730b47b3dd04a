//! Head + tail truncation (spec/22-variants.md) with a real tokenizer:
//! within the size, never inside a UTF-8 character, the same bytes every
//! time, and the marker counting what was left out.
#![cfg(feature = "tiktoken")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cupel_core::{HeadTail, TokenCounter};
use cupel_tokens::TiktokenCounter;

fn log() -> String {
    // Mixed ASCII, accents, CJK and emoji: multi-byte characters that
    // byte-level BPE splits across tokens.
    (0..600)
        .map(|i| format!("{i:04} GET /api/naïve?q=東京 200 ✅ {}ms\n", i * 7 % 113))
        .collect()
}

#[test]
fn cuts_within_the_size_on_character_boundaries_deterministically() {
    let counter = TiktokenCounter::new("o200k_base").unwrap();
    let text = log();
    let total = counter.count_tokens(&text);
    assert!(total > 5_000, "the log should be long: {total}");
    for size in [40, 300, 1_000] {
        let cut = HeadTail::new(size).unwrap();
        let a = cut.truncate(&text, &counter).unwrap().unwrap();
        let b = cut.truncate(&text, &counter).unwrap().unwrap();
        // Deterministic bytes, within the size as the tokenizer counts them.
        assert_eq!(a.content(), b.content());
        assert_eq!(a.tokens(), counter.count_tokens(a.content()));
        assert!(a.tokens() <= size, "{} > {size}", a.tokens());
        // A String is valid UTF-8 by construction; the head and tail are a
        // prefix and a suffix of the input.
        let (head, rest) = a.content().split_once("\n[… ").unwrap();
        let (marker, tail) = rest.split_once(" …]\n").unwrap();
        assert!(text.starts_with(head) && text.ends_with(tail));
        // The marker names the omitted middle's own count, digits grouped.
        let middle = &text[head.len()..text.len() - tail.len()];
        let omitted: i64 = marker
            .trim_end_matches(" tokens omitted")
            .replace(',', "")
            .parse()
            .unwrap();
        assert_eq!(omitted, counter.count_tokens(middle));
        // Nearly all of the size is used: at most a few tokens of slack per
        // cut (a character that would cross the room is left out).
        assert!(a.tokens() >= size - 12, "{} tokens for {size}", a.tokens());
    }
}
