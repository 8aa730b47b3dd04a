//! Names that moved out of this crate in 0.2 keep working from their old
//! paths for one minor version.
#![allow(clippy::unwrap_used)]

/// `TiktokenCounter` moved to `cupel-rs-tokens`.
#[cfg(feature = "tiktoken")]
#[test]
#[allow(deprecated)]
fn the_old_tiktoken_path_still_counts() {
    use cupel_core::TokenCounter;
    let old = cupel_pipeline::TiktokenCounter::new("cl100k_base").unwrap();
    // cl100k_base: "hello" and " world".
    assert_eq!(old.count_tokens("hello world"), 2);
    assert_eq!(
        cupel_pipeline::TIKTOKEN_ENCODINGS,
        cupel_tokens::TIKTOKEN_ENCODINGS
    );
}

/// The context gate moved to `cupel-rs-gate`: the root names and the
/// (deprecated) `gate` module still reach it.
#[cfg(feature = "gate")]
#[test]
#[allow(deprecated)]
fn the_old_gate_paths_still_reach_the_gate() {
    let rule = cupel_pipeline::CompactionRule::always(cupel_gate::CodeLanguage::Sql);
    let config = cupel_pipeline::gate::GateConfig::builder("g", 100)
        .rule(rule)
        .build()
        .unwrap();
    assert_eq!(config.id(), "g");
    assert_eq!(cupel_pipeline::compact_sql("SELECT 1 -- x"), "SELECT 1");
}
