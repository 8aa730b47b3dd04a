//! Helpers shared by the gate's integration tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use cupel_core::TokenCounter;
use cupel_gate::CodeLanguage;
use cupel_gate::{CompactionRule, ContextGate, GateConfig, GateState, RetrievalNode};

/// Whitespace-separated words: a deterministic stand-in for a tokenizer.
///
/// A node block without id/path is `--- NODE ---` (3) + `language: x` (2) +
/// `compact: x` (2) + `text:` (1) = 8 words plus the words of the text;
/// `id: …` and `path: …` add 2 each.
pub struct Words;
impl TokenCounter for Words {
    fn count_tokens(&self, text: &str) -> i64 {
        text.split_whitespace().count() as i64
    }
}

/// `n` one-word tokens.
pub fn words(n: usize) -> String {
    vec!["w"; n].join(" ")
}

/// A gate counting [`Words`].
pub fn gate(cfg: GateConfig) -> ContextGate {
    ContextGate::new(cfg, Words)
}

/// A state from string slices and nodes.
pub fn state(context: &[&str], nodes: Vec<RetrievalNode>) -> GateState {
    GateState::new(context.iter().map(|s| s.to_string()).collect(), nodes)
}

/// Six words raw; the compactor drops the two comment words -> four.
pub const SQL: &str = "SELECT a FROM t -- x";
/// [`SQL`] compacted.
pub const SQL_COMPACT: &str = "SELECT a FROM t";

/// Gate `manage_budget` (max 100): sql demand `compact_sql`, then sql always,
/// then dotnet always.
pub fn demand_then_always() -> ContextGate {
    gate(
        GateConfig::builder("manage_budget", 100)
            .rule(CompactionRule::demand(CodeLanguage::Sql, "compact_sql"))
            .rule(CompactionRule::always(CodeLanguage::Sql))
            .rule(CompactionRule::always(CodeLanguage::Dotnet))
            .build()
            .unwrap(),
    )
}
