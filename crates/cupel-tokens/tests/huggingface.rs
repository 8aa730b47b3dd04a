//! `HuggingFaceCounter` on tokenizer files the tests write themselves
//! (nothing is downloaded).
#![cfg(feature = "huggingface")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cupel_core::TokenCounter;
use cupel_tokens::{HuggingFaceCounter, TokenizerError};

/// A byte-pair tokenizer over the letters a, b, c with two merges, `a b` then
/// `ab c`, and a whitespace pre-tokenizer.
const BPE: &str = r#"{
  "version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [{"id": 5, "content": "<s>", "single_word": false, "lstrip": false,
                    "rstrip": false, "normalized": false, "special": true}],
  "normalizer": null,
  "pre_tokenizer": {"type": "Whitespace"},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [5], "tokens": ["<s>"]}}},
  "decoder": null,
  "model": {"type": "BPE", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": null, "end_of_word_suffix": null,
            "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
            "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4, "<s>": 5},
            "merges": ["a b", "ab c"]}
}"#;

#[test]
fn counts_byte_pair_merges_by_hand() {
    let counter = HuggingFaceCounter::from_bytes(BPE.as_bytes()).unwrap();
    // "abc ab c" -> pre-tokens "abc", "ab", "c".
    //   abc: a b c -> (a b) c -> (ab c) = 1 token; ab: 1; c: 1. Total 3.
    assert_eq!(counter.count_tokens("abc ab c"), 3);
    // "cab": c a b -> c (a b) = 2 tokens ("c ab" is no merge).
    assert_eq!(counter.count_tokens("cab"), 2);
    // "bca": no merge applies (neither "b c" nor "c a"): 3 tokens.
    assert_eq!(counter.count_tokens("bca"), 3);
    // The post-processor's <s> is a special token: not counted.
    assert_eq!(counter.count_tokens(""), 0);
}

#[test]
fn reads_a_tokenizer_file_and_names_a_bad_one() {
    let dir = std::env::temp_dir().join(format!("cupel-tokens-hf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, BPE).unwrap();
    let counter = HuggingFaceCounter::from_file(&path).unwrap();
    assert_eq!(counter.count_tokens("ab ab"), 2);

    let missing = dir.join("absent.json");
    match HuggingFaceCounter::from_file(&missing).unwrap_err() {
        TokenizerError::TokenizerFile { source_name, .. } => {
            assert_eq!(source_name, missing.display().to_string());
        }
        other => panic!("unexpected error {other:?}"),
    }
    let err = HuggingFaceCounter::from_bytes(b"{\"model\": 42}").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("could not load the tokenizer from bytes: "),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
