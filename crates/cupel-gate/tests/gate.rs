//! The context gate: every transition and failure mode of the seed, with
//! token counts derived by hand.
//!
//! Counting: `Words` (tests/common) counts whitespace-separated words, so a
//! block's cost can be worked out on paper: a node block without id/path is
//! 8 words plus the words of its text; `id: …` and `path: …` add 2 each.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cupel_core::{CupelError, TokenCounter};
use cupel_gate::CodeLanguage;
use cupel_gate::{
    CompactionPolicyKind, CompactionRule, ContextGate, GateConfig, GateDecision, GateFailure,
    GateOutcome, GateState, InboxMessage, RetrievalNode,
};
use proptest::prelude::*;

mod common;

use common::{SQL, SQL_COMPACT, Words, demand_then_always, gate, state, words};

fn admitted(o: GateOutcome) -> cupel_gate::Admitted {
    match o {
        GateOutcome::Admitted(a) => a,
        GateOutcome::Over(o) => panic!("expected admitted, got over: {:?}", o.report()),
    }
}

fn over(o: GateOutcome) -> cupel_gate::Over {
    match o {
        GateOutcome::Over(o) => o,
        GateOutcome::Admitted(a) => panic!("expected over, got admitted: {:?}", a.report()),
    }
}

// ----- admitted / over ---------------------------------------------------------

#[test]
fn admitted_appends_the_formatted_blocks_and_consumes_the_buffer() {
    // context 3 + node block (8 + 2 "alpha beta") 10 = 13 = max: fits exactly.
    let g = gate(GateConfig::builder("g", 13).build().unwrap());
    let node = RetrievalNode::new("alpha beta");
    let a = admitted(g.admit(state(&["a b c"], vec![node]), &[]).unwrap());
    assert_eq!(
        a.context(),
        [
            "a b c",
            "--- NODE ---\nlanguage: unknown\ncompact: false\ntext:\nalpha beta"
        ]
    );
    assert_eq!(a.appended().len(), 1);
    let r = a.report();
    assert_eq!(r.decision, GateDecision::Admitted);
    assert_eq!(
        (r.context_tokens, r.retrieval_tokens, r.total_tokens),
        (3, 10, 13)
    );
    let s = a.into_state();
    assert!(s.nodes.is_empty(), "the retrieval buffer is consumed");
}

#[test]
fn one_token_more_than_the_budget_is_over_and_changes_nothing() {
    // Same inputs, max 12: 3 + 10 = 13 > 12.
    let g = gate(GateConfig::builder("g", 12).build().unwrap());
    let input = state(
        &["a b c"],
        vec![RetrievalNode::new("alpha beta").with_id("n1")],
    );
    // With the id the block is 12 words: 3 + 12 = 15 > 12, while 12 alone fits.
    let o = over(g.admit(input.clone(), &[]).unwrap());
    assert_eq!(o.state(), &input);
    assert!(o.requeue().is_empty());
    assert_eq!(o.report().total_tokens, 15);
    assert_eq!(o.report().decision, GateDecision::Over);
}

#[test]
fn over_is_decided_for_the_whole_batch() {
    // max 30, context 10: node 1 = 8 + 5 = 13 (running 23), node 2 = 8 + 5 = 13
    // (running 36 > 30). Nothing is appended, not even the first node.
    let g = gate(GateConfig::builder("g", 30).build().unwrap());
    let input = state(
        &[&words(10)],
        vec![RetrievalNode::new(words(5)), RetrievalNode::new(words(5))],
    );
    let (s, requeue) = over(g.admit(input.clone(), &[]).unwrap()).into_parts();
    assert_eq!(s, input);
    assert!(requeue.is_empty());
}

#[test]
fn an_empty_buffer_is_admitted_without_a_divider_even_over_budget() {
    // G-6: nothing to append is never over; the context is handed back as is.
    let cfg = GateConfig::builder("g", 2)
        .divide_new_content("<<<New content")
        .build()
        .unwrap();
    let a = admitted(gate(cfg).admit(state(&["a b c d e"], vec![]), &[]).unwrap());
    assert_eq!(a.context(), ["a b c d e"]);
    assert!(a.appended().is_empty());
    assert_eq!(a.report().divider_tokens, 0);
}

// ----- misconfiguration --------------------------------------------------------

#[test]
fn a_buffer_that_cannot_fit_alone_is_a_misconfiguration() {
    // Node block 8 + 2 = 10 > max 9, even with an empty context.
    let g = gate(GateConfig::builder("manage_budget", 9).build().unwrap());
    let input = state(&[], vec![RetrievalNode::new("alpha beta")]);
    let err = g.admit(input.clone(), &[]).unwrap_err();
    assert_eq!(
        err.error(),
        &GateFailure::PipelineBudgetMisconfig {
            gate_id: "manage_budget".into(),
            nodes: 1,
            retrieval_tokens: 10,
            max_context_tokens: 9,
        }
    );
    let msg = err.to_string();
    assert!(msg.starts_with("PIPELINE_BUDGET_MISCONFIG"), "{msg}");
    assert!(
        msg.contains("10 tokens") && msg.contains("max_context_tokens = 9"),
        "{msg}"
    );
    insta::assert_snapshot!("misconfig_message", msg);
    assert_eq!(err.into_state(), input, "the state comes back untouched");
}

#[test]
fn the_misconfiguration_is_measured_after_compaction() {
    // G-2. Raw SQL block 8 + 6 = 14 > max 13; compacted (always) 8 + 4 = 12 fits.
    let cfg = GateConfig::builder("g", 13)
        .rule(CompactionRule::always(CodeLanguage::Sql))
        .build()
        .unwrap();
    let a = admitted(
        gate(cfg)
            .admit(state(&[], vec![RetrievalNode::new(SQL)]), &[])
            .unwrap(),
    );
    assert!(a.context()[0].ends_with(&format!("compact: true\ntext:\n{SQL_COMPACT}")));
    // Without the rule the same buffer alone is too big.
    let g = gate(GateConfig::builder("g", 13).build().unwrap());
    let e = g
        .admit(state(&[], vec![RetrievalNode::new(SQL)]), &[])
        .unwrap_err();
    assert!(matches!(
        e.error(),
        GateFailure::PipelineBudgetMisconfig {
            retrieval_tokens: 14,
            max_context_tokens: 13,
            ..
        }
    ));
}

#[test]
fn the_divider_counts_towards_the_buffer_alone() {
    // Divider "<<<New content" = 2 words; node block 10: buffer 12 > max 11.
    let cfg = GateConfig::builder("g", 11)
        .divide_new_content("<<<New content")
        .build()
        .unwrap();
    let e = gate(cfg)
        .admit(state(&[], vec![RetrievalNode::new("alpha beta")]), &[])
        .unwrap_err();
    assert!(matches!(
        e.error(),
        GateFailure::PipelineBudgetMisconfig {
            retrieval_tokens: 12,
            ..
        }
    ));
}

#[test]
fn a_negative_count_from_a_custom_counter_is_an_error_not_a_panic() {
    struct Negative;
    impl TokenCounter for Negative {
        fn count_tokens(&self, _: &str) -> i64 {
            -1
        }
    }
    let g = ContextGate::new(GateConfig::builder("g", 10).build().unwrap(), Negative);
    let input = state(&["x"], vec![]);
    let e = g.admit(input.clone(), &[]).unwrap_err();
    assert!(
        matches!(e.error(), GateFailure::Core(CupelError::InvalidArgument(m)) if m.contains("-1"))
    );
    assert_eq!(e.into_state(), input);
}

#[test]
fn huge_counts_saturate_instead_of_overflowing() {
    struct Huge;
    impl TokenCounter for Huge {
        fn count_tokens(&self, _: &str) -> i64 {
            i64::MAX
        }
    }
    let g = ContextGate::new(GateConfig::builder("g", i64::MAX).build().unwrap(), Huge);
    // Context i64::MAX + block i64::MAX: over, reported saturated.
    let o = over(
        g.admit(state(&["x"], vec![RetrievalNode::new("y")]), &[])
            .unwrap(),
    );
    assert_eq!(o.report().total_tokens, i64::MAX);
}

#[test]
fn gates_and_outcomes_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<ContextGate>();
    check::<GateOutcome>();
    check::<cupel_gate::GateError>();
    check::<GateConfig>();
}

#[test]
fn a_gate_needs_a_counter() {
    let e = ContextGate::builder(GateConfig::builder("g", 10).build().unwrap())
        .build()
        .unwrap_err();
    assert!(matches!(e, CupelError::PipelineConfig(m) if m.contains("token counter is required")));
}

// ----- compaction rules --------------------------------------------------------

fn threshold_gate() -> ContextGate {
    // trigger = 0.5 × 100 = 50 tokens.
    gate(
        GateConfig::builder("g", 100)
            .rule(CompactionRule::threshold(CodeLanguage::Sql, 0.5))
            .build()
            .unwrap(),
    )
}

#[test]
fn threshold_exactly_at_the_trigger_does_not_compact() {
    // Raw block 8 + 6 = 14; context 36: 36 + 14 = 50, not above 50.
    let r = threshold_gate()
        .evaluate(&[words(36)], &[RetrievalNode::new(SQL)], &[])
        .unwrap();
    assert!(!r.nodes[0].compacted);
    assert_eq!(r.nodes[0].policy, Some(CompactionPolicyKind::Threshold));
    assert_eq!(
        (r.nodes[0].tokens_before, r.nodes[0].tokens_after),
        (14, 14)
    );
}

#[test]
fn threshold_one_token_above_the_trigger_compacts() {
    // Context 37: 37 + 14 = 51 > 50 -> compacted block 8 + 4 = 12.
    let r = threshold_gate()
        .evaluate(&[words(37)], &[RetrievalNode::new(SQL)], &[])
        .unwrap();
    assert!(r.nodes[0].compacted);
    assert_eq!(
        (r.nodes[0].tokens_before, r.nodes[0].tokens_after),
        (14, 12)
    );
    assert_eq!(r.total_tokens, 37 + 12);
}

#[test]
fn threshold_counts_earlier_nodes_of_the_same_batch() {
    // Context 30; node 1 raw 14 -> 44 <= 50, kept raw; node 2: 44 + 14 = 58 > 50, compacted.
    let r = threshold_gate()
        .evaluate(
            &[words(30)],
            &[RetrievalNode::new(SQL), RetrievalNode::new(SQL)],
            &[],
        )
        .unwrap();
    assert_eq!(
        r.nodes.iter().map(|n| n.compacted).collect::<Vec<_>>(),
        [false, true]
    );
}

#[test]
fn the_seed_trigger_example() {
    // max_context_tokens = 5000, threshold = 0.4 -> 2000.
    let cfg = GateConfig::builder("g", 5000).build().unwrap();
    assert_eq!(cfg.trigger_tokens(0.4), 2000);
    assert_eq!(cfg.trigger_tokens(1.0), 5000);
    // 0.7 × 10 is 7.000000000000001 in binary floating point: taken as 7.
    assert_eq!(
        GateConfig::builder("g", 10)
            .build()
            .unwrap()
            .trigger_tokens(0.7),
        7
    );
    // 0.333 × 10 = 3.33 -> 3 (rounded down).
    assert_eq!(
        GateConfig::builder("g", 10)
            .build()
            .unwrap()
            .trigger_tokens(0.333),
        3
    );
}

#[test]
fn first_matching_rule_wins() {
    // The demand rule comes first for sql: without a demand the later
    // `always` rule is never consulted, so the node stays raw.
    let r = demand_then_always()
        .evaluate(&[], &[RetrievalNode::new(SQL)], &[])
        .unwrap();
    assert_eq!(r.nodes[0].language, CodeLanguage::Sql);
    assert_eq!(r.nodes[0].policy, Some(CompactionPolicyKind::Demand));
    assert!(!r.nodes[0].compacted);
}

#[test]
fn unknown_language_matches_no_rule() {
    let r = demand_then_always()
        .evaluate(&[], &[RetrievalNode::new("just some words here")], &[])
        .unwrap();
    assert_eq!(r.nodes[0].language, CodeLanguage::Unknown);
    assert_eq!(r.nodes[0].policy, None);
    assert!(!r.nodes[0].compacted);
}

#[test]
fn demand_present_compacts_only_for_this_gate_and_topic() {
    let g = demand_then_always();
    let nodes = [RetrievalNode::new(SQL)];
    let compacted =
        |inbox: &[InboxMessage]| g.evaluate(&[], &nodes, inbox).unwrap().nodes[0].compacted;
    assert!(compacted(&[InboxMessage::new(
        "manage_budget",
        "compact_sql"
    )]));
    assert!(!compacted(&[InboxMessage::new(
        "other_step",
        "compact_sql"
    )]));
    assert!(!compacted(&[InboxMessage::new(
        "manage_budget",
        "compact_dotnet"
    )]));
    assert!(!compacted(&[]));
}

#[test]
fn dotnet_always_rule_compacts_csharp() {
    let cs = "public class A\n{\n    // comment words here\n    public int X { get; set; }\n}";
    // By the original classifier's scores this text alone is unknown (class
    // 8 + 1, public twice 1.5 + 0.6: 11.1 < 14 - 2); its `.cs` path decides.
    let r = demand_then_always()
        .evaluate(&[], &[RetrievalNode::new(cs)], &[])
        .unwrap();
    assert_eq!(r.nodes[0].language, CodeLanguage::Unknown);
    let r = demand_then_always()
        .evaluate(&[], &[RetrievalNode::new(cs).with_path("Shop/A.cs")], &[])
        .unwrap();
    assert_eq!(r.nodes[0].language, CodeLanguage::Dotnet);
    assert!(r.nodes[0].compacted);
    // The comment's 4 words are gone.
    assert_eq!(r.nodes[0].tokens_before - r.nodes[0].tokens_after, 4);
}

#[test]
fn demand_is_requeued_on_over_only() {
    let g = demand_then_always();
    let inbox = [
        InboxMessage::new("manage_budget", "compact_sql"),
        InboxMessage::new("manage_budget", "compact_sql"),
        InboxMessage::new("elsewhere", "compact_sql"),
        InboxMessage::new("manage_budget", "unrelated"),
    ];
    // Over: context 95 + compacted block 12 = 107 > 100. One message back per
    // demand topic present (G-7), addressed to the gate.
    let input = state(&[&words(95)], vec![RetrievalNode::new(SQL)]);
    let o = over(g.admit(input.clone(), &inbox).unwrap());
    assert_eq!(
        o.requeue(),
        [InboxMessage::new("manage_budget", "compact_sql")]
    );
    assert_eq!(o.state(), &input);
    // Admitted: 80 + 12 = 92 <= 100; the demand is used up (nothing to requeue
    // exists on the Admitted variant at all).
    let a = admitted(
        g.admit(state(&[&words(80)], vec![RetrievalNode::new(SQL)]), &inbox)
            .unwrap(),
    );
    assert!(a.report().nodes[0].compacted);
    // Over without a demand message: nothing to requeue.
    let o = over(g.admit(input, &[]).unwrap());
    assert!(o.requeue().is_empty());
}

// ----- divider -----------------------------------------------------------------

#[test]
fn the_divider_is_inserted_once_per_admitted_batch() {
    let cfg = GateConfig::builder("g", 100)
        .divide_new_content("<<<New content")
        .build()
        .unwrap();
    let g = gate(cfg);
    let a = admitted(
        g.admit(
            state(
                &["old"],
                vec![RetrievalNode::new("one"), RetrievalNode::new("two")],
            ),
            &[],
        )
        .unwrap(),
    );
    assert_eq!(a.context().len(), 4);
    assert_eq!(a.context()[1], "<<<New content");
    assert_eq!(
        a.context()
            .iter()
            .filter(|b| *b == "<<<New content")
            .count(),
        1
    );
    assert_eq!(a.appended()[0], "<<<New content");
    // 1 + 2 + (8 + 1) × 2 = 21.
    assert_eq!(a.report().divider_tokens, 2);
    assert_eq!(a.report().total_tokens, 21);

    // The next batch gets its own divider; the earlier one is now plain context.
    let next = admitted(
        g.admit(
            GateState::new(a.into_context(), vec![RetrievalNode::new("three")]),
            &[],
        )
        .unwrap(),
    );
    assert_eq!(
        next.context()
            .iter()
            .filter(|b| *b == "<<<New content")
            .count(),
        2
    );
    assert_eq!(next.appended()[0], "<<<New content");
}

#[test]
fn the_divider_is_never_added_on_over() {
    let cfg = GateConfig::builder("g", 12)
        .divide_new_content("<<<New content")
        .build()
        .unwrap();
    // Divider 2 + block 9 = 11 fits alone; context 5 + 11 = 16 > 12.
    let input = state(&[&words(5)], vec![RetrievalNode::new("one")]);
    let o = over(gate(cfg).admit(input.clone(), &[]).unwrap());
    assert_eq!(o.state(), &input);
    assert!(!o.state().context.iter().any(|b| b.contains("<<<")));
}

// ----- formatting ----------------------------------------------------------------

#[test]
fn formatted_blocks_snapshot() {
    let cfg = GateConfig::builder("manage_budget", 1000)
        .divide_new_content("<<<New content")
        .rule(CompactionRule::always(CodeLanguage::Sql))
        .build()
        .unwrap();
    let nodes = vec![
        RetrievalNode::new("SELECT id,  name\n  FROM users -- all of them\n WHERE active = 1;")
            .with_id("n1")
            .with_path("db/users.sql"),
        RetrievalNode::new("Refunds are processed within 5 days.")
            .with_id("kb-7")
            .with_source("kb/refunds.md"),
        RetrievalNode::new("no id, path from metadata").with_metadata("path", "notes/x.txt"),
    ];
    let a = admitted(
        gate(cfg)
            .admit(state(&["earlier context"], nodes), &[])
            .unwrap(),
    );
    insta::assert_snapshot!("formatted_blocks", a.appended().join("\n\n"));
}

// ----- properties ------------------------------------------------------------------

fn arb_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,40}",
        Just(SQL.to_string()),
        Just("public class A { int x; // c\n }".to_string()),
        "[ -~\n]{0,60}",
    ]
}

fn arb_node() -> impl Strategy<Value = RetrievalNode> {
    (
        arb_text(),
        proptest::option::of("[a-z0-9]{1,6}"),
        proptest::option::of("[a-z/.]{1,10}"),
    )
        .prop_map(|(t, id, path)| {
            let mut n = RetrievalNode::new(t);
            if let Some(id) = id {
                n = n.with_id(id);
            }
            if let Some(p) = path {
                n = n.with_path(p);
            }
            n
        })
}

proptest! {
    #[test]
    fn over_leaves_its_inputs_byte_identical(
        // At least one word of context, so that over is possible.
        context in proptest::collection::vec("[a-z]{1,5}[ -~\n]{0,80}", 1..6),
        nodes in proptest::collection::vec(arb_node(), 1..5),
        demand in any::<bool>(),
        // A blank divider is refused at validation (G-24), so one that is
        // used starts with a visible character.
        divider in proptest::option::of("[<>a-z][<>a-z ]{0,11}"),
    ) {
        let inbox = if demand { vec![InboxMessage::new("g", "k")] } else { vec![] };
        let config = |max: i64| {
            let mut b = GateConfig::builder("g", max)
                .rule(CompactionRule::demand(CodeLanguage::Sql, "k"))
                .rule(CompactionRule::always(CodeLanguage::Dotnet));
            if let Some(d) = &divider {
                b = b.divide_new_content(d.clone());
            }
            b.build().unwrap()
        };
        // Measure with a budget nothing reaches, then size the real budget so
        // that the buffer fits alone but not on top of the context (the rules
        // do not depend on the budget, so the blocks are the same).
        let generous = gate(config(1_000_000));
        let rep = generous.evaluate(&context, &nodes, &inbox).unwrap();
        prop_assert!(rep.context_tokens > 0);
        let buffer = rep.divider_tokens + rep.retrieval_tokens;
        let max = (buffer + rep.context_tokens - 1).max(1);
        let g2 = gate(config(max));
        let input = GateState::new(context.clone(), nodes.clone());
        match g2.admit(input, &inbox) {
            Ok(GateOutcome::Over(o)) => {
                let (s, requeue) = o.into_parts();
                prop_assert_eq!(&s.context, &context);
                prop_assert_eq!(&s.nodes, &nodes);
                prop_assert_eq!(requeue.len(), usize::from(demand));
            }
            Ok(GateOutcome::Admitted(a)) => {
                // Impossible: context > 0 and max < context + buffer.
                prop_assert!(false, "admitted: {:?}", a.report());
            }
            Err(e) => prop_assert!(false, "error: {}", e),
        }
    }

    #[test]
    fn admitted_appends_exactly_the_blocks_and_stays_within_budget(
        context in proptest::collection::vec("[a-z ]{0,30}", 0..4),
        nodes in proptest::collection::vec(arb_node(), 0..4),
        max in 1i64..200,
    ) {
        let g = gate(GateConfig::builder("g", max).rule(CompactionRule::always(CodeLanguage::Sql)).build().unwrap());
        if let Ok(GateOutcome::Admitted(a)) = g.admit(GateState::new(context.clone(), nodes.clone()), &[]) {
            prop_assert_eq!(&a.context()[..context.len()], &context[..]);
            prop_assert_eq!(a.appended().len(), nodes.len());
            let total: i64 = a.context().iter().map(|b| Words.count_tokens(b)).sum();
            prop_assert_eq!(total, a.report().total_tokens);
            prop_assert!(nodes.is_empty() || total <= max);
        }
    }
}

#[test]
fn the_report_summarises_the_inbox() {
    let g = demand_then_always();
    let inbox = [
        InboxMessage::new("manage_budget", "compact_sql"),
        InboxMessage::new("manage_budget", "compact_sql"),
        InboxMessage::new("manage_budget", "other_topic"),
        InboxMessage::new("call_model", "compact_sql"),
    ];
    // 95 + the compacted block (8 + 4) 12 = 107 > 100: over.
    let o = over(
        g.admit(state(&[&words(95)], vec![RetrievalNode::new(SQL)]), &inbox)
            .unwrap(),
    );
    let r = o.report();
    assert_eq!(r.total_tokens, 107);
    assert_eq!(r.consumed, 4);
    assert_eq!(r.demanded, ["compact_sql"]);
    assert_eq!(r.requeued, 1);
    assert_eq!(
        o.requeue(),
        [InboxMessage::new("manage_budget", "compact_sql")]
    );
    // Admitted: the same demand is found, and nothing is handed back.
    let a = admitted(
        g.admit(state(&[&words(5)], vec![RetrievalNode::new(SQL)]), &inbox)
            .unwrap(),
    );
    let r = a.report();
    assert_eq!(r.total_tokens, 17);
    assert_eq!((r.consumed, r.requeued), (4, 0));
    assert_eq!(r.demanded, ["compact_sql"]);
}

#[test]
fn an_id_with_a_line_break_cannot_forge_header_lines() {
    let g = gate(GateConfig::builder("g", 100).build().unwrap());
    let node = RetrievalNode::new("plain words")
        .with_id("n1\ncompact: true")
        .with_source("kb\r\n42");
    let a = admitted(g.admit(state(&[], vec![node]), &[]).unwrap());
    assert_eq!(
        a.appended(),
        [
            "--- NODE ---\nid: n1\\ncompact: true\npath: kb\\r\\n42\nlanguage: unknown\ncompact: false\ntext:\nplain words"
        ]
    );
    // The report keeps the id as given.
    assert_eq!(a.report().nodes[0].id.as_deref(), Some("n1\ncompact: true"));
}

// ----- issue 28 ------------------------------------------------------------------

/// Point 2: a node no rule matched says so, and why.
#[test]
fn the_report_says_when_no_rule_matched() {
    // Rules: sql only. Nodes: SQL (a rule matches), C# by its path (no rule
    // for dotnet), and prose (unknown: no rule can match).
    let g = gate(
        GateConfig::builder("g", 1000)
            .rule(CompactionRule::always(CodeLanguage::Sql))
            .build()
            .unwrap(),
    );
    let r = g
        .evaluate(
            &[],
            &[
                RetrievalNode::new(SQL).with_id("q"),
                RetrievalNode::new("x").with_path("A.cs"),
                RetrievalNode::new("hello there"),
            ],
            &[],
        )
        .unwrap();
    use cupel_gate::Unmatched;
    assert_eq!(r.nodes[0].unmatched, None);
    assert_eq!(r.nodes[1].unmatched, Some(Unmatched::NoRule));
    assert_eq!(r.nodes[2].unmatched, Some(Unmatched::UnknownLanguage));
    // Point 8: the report reads as text. Node 1: 8 + 2 (id) + 4 compacted words
    // = 14, raw 16; node 2: 8 + 2 (path) + 1 = 11; node 3: 8 + 2 = 10; 35 in all.
    assert_eq!(
        r.to_string(),
        "gate g: admitted (context 0 + divider 0 + nodes 35 = 35 <= max_context_tokens 1000)\n  \
         node 1 (q): sql, policy always, compacted, 16 -> 14 tokens\n  \
         node 2: dotnet, no rule (no compaction rule for this language), 11 tokens\n  \
         node 3: unknown, no rule (language unknown, so no compaction rule can match), 10 tokens"
    );
}

/// Point 4: the original node keys feed the gate unchanged.
#[cfg(feature = "config")]
#[test]
fn the_original_node_keys_are_accepted() {
    let json = r#"{"node_id": "n1", "repo_relative_path": "db/q.sql", "source_file": "db/q.sql",
                   "text": "SELECT 1", "metadata_context": {"kind": "query", "rank": 3, "hot": true, "gone": null}}"#;
    let n: RetrievalNode = serde_json::from_str(json).unwrap();
    assert_eq!(n.id(), Some("n1"));
    assert_eq!(n.path(), Some("db/q.sql"));
    assert_eq!(n.source(), Some("db/q.sql"));
    assert_eq!(
        n.metadata()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>(),
        ["hot=true", "kind=query", "rank=3"]
    );
    // A bare string context is kept under `context`; the new names still work.
    let n: RetrievalNode = serde_json::from_str(
        r#"{"id": "n2", "path": "a.cs", "source": "s", "text": "x", "metadata_context": "class Foo"}"#,
    )
    .unwrap();
    assert_eq!(
        n.metadata().get("context").map(String::as_str),
        Some("class Foo")
    );
    assert_eq!(n.id(), Some("n2"));
    // The path decides the language: `.sql`.
    let r = demand_then_always()
        .evaluate(&[], &[serde_json::from_str(json).unwrap()], &[])
        .unwrap();
    assert_eq!(r.nodes[0].language, CodeLanguage::Sql);
}

/// Point 1: a custom classifier sees the node's id and path.
#[test]
fn a_custom_classifier_sees_the_whole_node() {
    use cupel_gate::{CodeNode, LanguageClassifier};
    struct ById;
    impl LanguageClassifier for ById {
        fn classify(&self, _text: &str) -> CodeLanguage {
            CodeLanguage::Unknown
        }
        fn classify_node(&self, node: CodeNode<'_>) -> CodeLanguage {
            match (node.id, node.path) {
                (Some("sql-1"), _) => CodeLanguage::Sql,
                (_, Some(p)) if p.ends_with(".razor") => CodeLanguage::Dotnet,
                _ => CodeLanguage::Unknown,
            }
        }
    }
    let g = ContextGate::builder(GateConfig::builder("g", 100).build().unwrap())
        .counter(Words)
        .classifier(ById)
        .build()
        .unwrap();
    let r = g
        .evaluate(
            &[],
            &[
                RetrievalNode::new("x").with_id("sql-1"),
                RetrievalNode::new("x").with_source("Pages/Index.razor"),
                RetrievalNode::new("SELECT a FROM t"),
            ],
            &[],
        )
        .unwrap();
    let langs: Vec<_> = r.nodes.iter().map(|n| n.language).collect();
    assert_eq!(
        langs,
        [
            CodeLanguage::Sql,
            CodeLanguage::Dotnet,
            CodeLanguage::Unknown
        ]
    );
}
