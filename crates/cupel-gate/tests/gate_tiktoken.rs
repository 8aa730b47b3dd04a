//! The gate with the real tokenizer (`TiktokenCounter`, cl100k_base).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cupel_core::TokenCounter;
use cupel_gate::CodeLanguage;
use cupel_gate::{
    CompactionRule, ContextGate, GateConfig, GateDecision, GateOutcome, GateState, RetrievalNode,
    compact_sql, format_node,
};
use cupel_tokens::TiktokenCounter;

const SQL: &str = "SELECT region, SUM(total)   -- revenue per region\nFROM sales\nGROUP BY region;";

fn gate(max: i64) -> ContextGate {
    let config = GateConfig::builder("manage_budget", max)
        // "hello world" is two cl100k_base tokens: "hello" and " world".
        .divide_new_content("hello world")
        .rule(CompactionRule::always(CodeLanguage::Sql))
        .build()
        .unwrap();
    ContextGate::new(config, TiktokenCounter::new("cl100k_base").unwrap())
}

fn state() -> GateState {
    GateState::new(
        vec!["hello world".into()],
        vec![RetrievalNode::new(SQL).with_id("q1")],
    )
}

#[test]
fn the_real_counter_decides_at_the_exact_boundary() {
    let counter = TiktokenCounter::new("cl100k_base").unwrap();
    assert_eq!(counter.count_tokens("hello world"), 2);
    let node = RetrievalNode::new(SQL).with_id("q1");
    let raw = counter.count_tokens(&format_node(&node, CodeLanguage::Sql, false, SQL));
    let compacted = compact_sql(SQL);
    assert_eq!(
        compacted,
        "SELECT region, SUM(total)\nFROM sales\nGROUP BY region;"
    );
    let after = counter.count_tokens(&format_node(&node, CodeLanguage::Sql, true, &compacted));
    // The comment's words are gone, so the compacted block is strictly smaller.
    assert!(after < raw, "{after} < {raw}");
    // Context 2 + divider 2 + the compacted block.
    let total = 2 + 2 + after;

    let report = gate(total)
        .evaluate(&state().context, &state().nodes, &[])
        .unwrap();
    assert_eq!(report.context_tokens, 2);
    assert_eq!(report.divider_tokens, 2);
    assert_eq!(report.nodes[0].language, CodeLanguage::Sql);
    assert!(report.nodes[0].compacted);
    assert_eq!(report.nodes[0].tokens_before, raw);
    assert_eq!(report.nodes[0].tokens_after, after);
    assert_eq!(report.total_tokens, total);

    // Exactly at the budget: admitted, and the appended blocks are the ones counted.
    match gate(total).admit(state(), &[]).unwrap() {
        GateOutcome::Admitted(a) => {
            assert_eq!(a.appended().len(), 2);
            assert_eq!(a.appended()[0], "hello world");
            let block = &a.appended()[1];
            assert_eq!(counter.count_tokens(block), after);
            assert!(block.ends_with(&compacted));
        }
        GateOutcome::Over(o) => panic!("{:?}", o.report()),
    }
    // One token less: over, and the state comes back as it went in.
    match gate(total - 1).admit(state(), &[]).unwrap() {
        GateOutcome::Over(o) => {
            assert_eq!(o.report().decision, GateDecision::Over);
            assert_eq!(o.state(), &state());
        }
        GateOutcome::Admitted(a) => panic!("{:?}", a.report()),
    }
}
