//! `TiktokenCounter` counts exactly as tiktoken-rs's own encoder does
//! (`count_ordinary`), on random text of every kind the patterns tell apart:
//! letters of every case and script, CJK, emoji, combining marks, digits,
//! apostrophes and contractions, punctuation, whitespace runs of every kind,
//! and pieces long enough for the large merge.
#![cfg(feature = "tiktoken")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::LazyLock;

use cupel_core::TokenCounter;
use cupel_tokens::{TIKTOKEN_PIECE_BYTES, TiktokenCounter};
use proptest::prelude::*;
use tiktoken_rs::CoreBPE;

/// The encodings with distinct ranks or patterns, each with tiktoken-rs's
/// encoder (built once: it takes seconds in a debug build).
static ENCODINGS: LazyLock<Vec<(&'static str, CoreBPE)>> = LazyLock::new(|| {
    vec![
        ("o200k_base", tiktoken_rs::o200k_base().unwrap()),
        ("cl100k_base", tiktoken_rs::cl100k_base().unwrap()),
        ("p50k_base", tiktoken_rs::p50k_base().unwrap()),
        ("r50k_base", tiktoken_rs::r50k_base().unwrap()),
    ]
});

fn assert_same_counts(text: &str) {
    assert!(text.len() <= TIKTOKEN_PIECE_BYTES, "one piece");
    for (name, bpe) in ENCODINGS.iter() {
        let ours = TiktokenCounter::shared(name).unwrap().count_tokens(text);
        let theirs = i64::try_from(bpe.count_ordinary(text)).unwrap();
        assert_eq!(ours, theirs, "{name} on {text:?}");
    }
}

/// One run of text of a kind the patterns split differently.
fn fragment() -> impl Strategy<Value = String> {
    let chars = |ranges: &'static [(char, char)], len: std::ops::Range<usize>| {
        let pick = ranges
            .iter()
            .map(|&(a, b)| proptest::char::range(a, b))
            .collect::<Vec<_>>();
        prop::collection::vec(prop::strategy::Union::new(pick), len)
            .prop_map(|v| v.into_iter().collect::<String>())
    };
    prop_oneof![
        // ASCII words, upper, lower and mixed case.
        "[a-z]{1,12}",
        "[A-Z][a-z]{0,8}",
        "[A-Z]{1,6}",
        "[a-zA-Z]{1,10}",
        // Contractions and apostrophes, any case.
        prop::sample::select(vec![
            "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Ve", "'", "''", "’s",
        ])
        .prop_map(str::to_string),
        // Digits: runs split in threes (o200k, cl100k) or not (r50k).
        "[0-9]{1,9}",
        // Punctuation and symbols, with slashes and line ends after them.
        "[!-/:-@\\[-`{-~]{1,4}[\r\n/]{0,2}",
        // Whitespace runs of every kind, including non-ASCII spaces.
        chars(
            &[
                (' ', ' '),
                ('\t', '\t'),
                ('\n', '\n'),
                ('\r', '\r'),
                ('\u{a0}', '\u{a0}'),
                ('\u{2000}', '\u{200a}'),
                ('\u{2028}', '\u{2029}'),
                ('\u{3000}', '\u{3000}'),
                ('\u{b}', '\u{c}'),
            ],
            1..8,
        ),
        // Letters beyond ASCII: accented Latin, Greek, Cyrillic, Arabic,
        // Devanagari, title case and modifier letters, combining marks.
        chars(
            &[
                ('\u{c0}', '\u{24f}'),
                ('\u{1c4}', '\u{1cc}'),
                ('\u{2b0}', '\u{2ff}'),
                ('\u{300}', '\u{36f}'),
                ('\u{391}', '\u{3c9}'),
                ('\u{410}', '\u{44f}'),
                ('\u{627}', '\u{64a}'),
                ('\u{905}', '\u{94d}'),
            ],
            1..8,
        ),
        // CJK, kana, Hangul, and their punctuation and full-width forms.
        chars(
            &[
                ('\u{4e00}', '\u{9fff}'),
                ('\u{3040}', '\u{30ff}'),
                ('\u{ac00}', '\u{d7a3}'),
                ('\u{3001}', '\u{3011}'),
                ('\u{ff01}', '\u{ff5e}'),
            ],
            1..10,
        ),
        // Emoji, with skin tones, variation selectors and joiners.
        chars(
            &[
                ('\u{1f300}', '\u{1faff}'),
                ('\u{2600}', '\u{27bf}'),
                ('\u{1f3fb}', '\u{1f3ff}'),
                ('\u{fe0f}', '\u{fe0f}'),
                ('\u{200d}', '\u{200d}'),
            ],
            1..6,
        ),
        // Other numbers: superscripts, fractions, Roman numerals, other digits.
        chars(
            &[
                ('\u{b2}', '\u{b3}'),
                ('\u{bc}', '\u{be}'),
                ('\u{2160}', '\u{2188}'),
                ('\u{660}', '\u{669}'),
                ('\u{ff10}', '\u{ff19}'),
            ],
            1..5,
        ),
        // Any character at all.
        prop::collection::vec(any::<char>(), 1..4).prop_map(|v| v.into_iter().collect()),
        // Long pieces (100 bytes and more): the heap-based merge.
        "[a-z]{100,300}",
        "[ ]{100,200}",
        chars(&[('\u{4e00}', '\u{9fff}')], 40..120),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn counts_equal_tiktoken_rs_on_mixed_text(parts in prop::collection::vec(fragment(), 0..24)) {
        assert_same_counts(&parts.concat());
    }

    #[test]
    fn counts_equal_tiktoken_rs_on_any_text(text in "\\PC{0,64}") {
        assert_same_counts(&text);
    }
}

#[test]
fn aliases_count_as_their_encoding_in_tiktoken_rs() {
    let text = "Hello, 世界! It's 2024 — naïve café 🙂\n\n  <|endoftext|> done";
    let harmony = tiktoken_rs::o200k_harmony().unwrap();
    let edit = tiktoken_rs::p50k_edit().unwrap();
    for (name, bpe) in [("o200k_harmony", &harmony), ("p50k_edit", &edit)] {
        let c = TiktokenCounter::new(name).unwrap();
        assert_eq!(c.encoding(), name);
        assert_eq!(
            c.count_tokens(text),
            i64::try_from(bpe.count_ordinary(text)).unwrap(),
            "{name}"
        );
    }
}

/// A long text of every kind, made by a fixed generator, counted whole by
/// tiktoken-rs and by pieces here: equal, since it has a space at least
/// every few bytes (the pieces end before one).
#[test]
fn a_long_mixed_text_counts_as_tiktoken_rs_counts_it() {
    let text = mixed_text(300_000);
    assert!(text.len() > 30 * TIKTOKEN_PIECE_BYTES);
    for (name, bpe) in ENCODINGS.iter().take(2) {
        let ours = TiktokenCounter::shared(name).unwrap().count_tokens(&text);
        let theirs = i64::try_from(bpe.count_ordinary(&text)).unwrap();
        assert_eq!(ours, theirs, "{name}");
    }
}

/// The same on 16 MiB, with both counters timed (run it in release:
/// `cargo test --release -p cupel-rs-tokens --test tiktoken_counts -- --ignored --nocapture`).
#[test]
#[ignore = "16 MiB: slow in a debug build"]
fn a_large_mixed_text_counts_as_tiktoken_rs_counts_it() {
    use std::time::Instant;
    let text = mixed_text(16 << 20);
    for (name, bpe) in ENCODINGS.iter() {
        let counter = TiktokenCounter::shared(name).unwrap();
        let start = Instant::now();
        let ours = counter.count_tokens(&text);
        let ours_time = start.elapsed();
        let start = Instant::now();
        let theirs = i64::try_from(bpe.count_ordinary(&text)).unwrap();
        let theirs_time = start.elapsed();
        eprintln!(
            "{name}: {ours} tokens in {} bytes; this crate {ours_time:.2?}, tiktoken-rs {theirs_time:.2?}",
            text.len()
        );
        assert_eq!(ours, theirs, "{name}");
    }
}

/// About `bytes` bytes of words, numbers, code, CJK, emoji and whitespace
/// from a fixed linear congruential generator.
fn mixed_text(bytes: usize) -> String {
    const WORDS: &[&str] = &[
        "The",
        "quick",
        "brown",
        "fox's",
        "jumped",
        "over",
        "THE",
        "lazy",
        "dog",
        "we'll",
        "they've",
        "naïve",
        "café",
        "Straße",
        "東京",
        "日本語のテキスト",
        "한국어",
        "Москва",
        "العربية",
        "हिन्दी",
        "🙂",
        "👩‍💻",
        "🇺🇸",
        "1234567",
        "3.14159",
        "x=1;",
        "fn(a,b)",
        "{\"k\":[1,2]}",
        "https://example.com/a/b?c=d",
        "--flag",
        "...",
        "!!!",
        "¿Qué?",
        "ǅemal",
        "ʰello",
        "e\u{301}",
        "١٢٣",
        "Ⅻ",
        "½",
        "ＡＢＣ",
    ];
    const GAPS: &[&str] = &[
        " ", " ", " ", "  ", "\n", "\n\n", " \n", "\t", "\r\n", "   \n  ", "\u{3000}",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % n
    };
    let mut text = String::with_capacity(bytes + 64);
    while text.len() < bytes {
        text.push_str(WORDS[next(WORDS.len())]);
        text.push_str(GAPS[next(GAPS.len())]);
    }
    text
}
