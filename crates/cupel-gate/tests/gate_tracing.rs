//! The gate's `MANAGE_CONTEXT_BUDGET` trace event. Alone in its own test
//! binary: `tracing` caches per-callsite interest process-wide, and tests on
//! other threads hitting the same callsite without a subscriber would race
//! with the scoped one installed here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use cupel_gate::{GateConfig, InboxMessage, RetrievalNode};

mod common;

use common::{SQL, demand_then_always, gate, state, words};

type Fields = BTreeMap<String, String>;

struct Capture(Arc<Mutex<Vec<Fields>>>);

struct Visit<'a>(&'a mut Fields);
impl tracing::field::Visit for Visit<'_> {
    fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
        self.0.insert(f.name().into(), format!("{v:?}"));
    }
    fn record_str(&mut self, f: &tracing::field::Field, v: &str) {
        self.0.insert(f.name().into(), v.into());
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, e: &tracing::Event<'_>) {
        let mut fields = Fields::new();
        e.record(&mut Visit(&mut fields));
        fields.insert("@name".into(), e.metadata().name().into());
        fields.insert("@target".into(), e.metadata().target().into());
        self.0.lock().unwrap().push(fields);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn every_decision_emits_one_manage_context_budget_event() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let g = demand_then_always();
    tracing::subscriber::with_default(Capture(events.clone()), || {
        // Other tests on other threads may have registered these callsites
        // while no subscriber was listening; recompute their interest now
        // that this one is (tracing caches it per callsite).
        tracing::callsite::rebuild_interest_cache();
        let _ = g.admit(
            state(&[&words(95)], vec![RetrievalNode::new(SQL).with_id("q")]),
            &[
                InboxMessage::new("manage_budget", "compact_sql"),
                InboxMessage::new("call_model", "compact_sql"),
            ],
        );
        let _ = g.admit(state(&[], vec![RetrievalNode::new(SQL)]), &[]);
        let big = gate(GateConfig::builder("tiny", 1).build().unwrap());
        let _ = big.admit(state(&[], vec![RetrievalNode::new("x")]), &[]);
    });
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 3, "{events:#?}");
    for e in events.iter() {
        assert_eq!(e["@name"], "MANAGE_CONTEXT_BUDGET");
        assert_eq!(e["@target"], "cupel::gate");
        assert_eq!(e["event_type"], "MANAGE_CONTEXT_BUDGET");
    }
    let first = &events[0];
    // Seed 004, "Tracing / logging": "decision: `on_ok` / `on_over`".
    assert_eq!(first["decision"], "on_over");
    assert_eq!(first["verdict"], "over");
    assert_eq!(first["gate_id"], "manage_budget");
    // 95 + compacted block (8 + 2 id + 4) 14 = 109.
    assert_eq!(first["total_tokens"], "109");
    // Two messages consumed (one for another step); one demand topic found
    // and, the decision being Over, handed back.
    assert_eq!(first["consumed"], "2");
    assert_eq!(first["demanded"], "compact_sql");
    assert_eq!(first["requeued"], "1");
    let nodes: serde_json::Value = serde_json::from_str(&first["nodes"]).unwrap();
    assert_eq!(
        nodes,
        serde_json::json!([{
            "index": 0, "id": "q", "language": "sql", "policy": "demand",
            "compacted": true, "tokens_before": 16, "tokens_after": 14
        }])
    );
    assert_eq!(events[1]["decision"], "on_ok");
    assert_eq!(events[1]["verdict"], "admitted");
    // `outcome` (issue 28 point 5) still carries the seed's words for hosts
    // that read it.
    assert_eq!(first["outcome"], "on_over");
    assert_eq!(events[1]["outcome"], "on_ok");
    assert_eq!(events[1]["consumed"], "0");
    assert_eq!(events[1]["demanded"], "");
    assert_eq!(events[1]["requeued"], "0");
    // A failure is no transition: no `decision`, no `outcome`; the verdict
    // names it.
    assert!(!events[2].contains_key("decision"), "{:?}", events[2]);
    assert!(!events[2].contains_key("outcome"));
    assert_eq!(events[2]["verdict"], "pipeline_budget_misconfig");
    // The seed's wording follows the code.
    assert!(
        events[2]["error"].starts_with(
            "PIPELINE_BUDGET_MISCONFIG: fetch_node_texts produced retrieval texts that cannot fit into settings.max_context_tokens"
        ),
        "{}",
        events[2]["error"]
    );
}

#[test]
fn a_dry_run_then_the_real_call_is_one_event() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let g = demand_then_always();
    let inbox = [InboxMessage::new("manage_budget", "compact_sql")];
    let context = vec![words(10)];
    let nodes = vec![RetrievalNode::new(SQL).with_id("q")];
    let (dry, real) = tracing::subscriber::with_default(Capture(events.clone()), || {
        // Other tests on other threads may have registered these callsites
        // while no subscriber was listening; recompute their interest now
        // that this one is (tracing caches it per callsite).
        tracing::callsite::rebuild_interest_cache();
        let dry = g.evaluate(&context, &nodes, &inbox).unwrap();
        // A misconfigured dry run is silent too.
        let tiny = gate(GateConfig::builder("tiny", 1).build().unwrap());
        assert!(tiny.evaluate(&[], &nodes, &[]).is_err());
        let real = g
            .admit(
                cupel_gate::GateState::new(context.clone(), nodes.clone()),
                &inbox,
            )
            .unwrap();
        (dry, real)
    });
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0]["decision"], "on_ok");
    // The dry run reported what the real call decided, inbox summary included:
    // 10 context words + the compacted block (8 + 2 id + 4) = 24 <= 100.
    assert_eq!(&dry, real.report());
    assert_eq!(dry.total_tokens, 24);
    assert_eq!(events[0]["total_tokens"], "24");
    assert_eq!((dry.consumed, dry.requeued), (1, 0));
    assert_eq!(dry.demanded, ["compact_sql"]);
}

/// Issue 28 point 5: the retry loop's gate calls are `on_over` then `on_ok`,
/// and the loop reports how it ended.
#[test]
fn the_retry_loop_names_the_seed_outcomes() {
    use cupel_gate::{LoopGuard, SummarizeWith};
    let events = Arc::new(Mutex::new(Vec::new()));
    let g = demand_then_always();
    // Keep nothing of the context: 95 words, then 0.
    let drop_all = SummarizeWith(|_: &[String]| Ok(Vec::new()));
    tracing::subscriber::with_default(Capture(events.clone()), || {
        tracing::callsite::rebuild_interest_cache();
        let _ = g.admit_with_retry(
            state(&[&words(95)], vec![RetrievalNode::new(SQL)]),
            Vec::new(),
            &drop_all,
            LoopGuard::new(3).unwrap(),
        );
    });
    let events = events.lock().unwrap();
    let outcomes: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e["@name"].as_str(), e["outcome"].as_str()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("MANAGE_CONTEXT_BUDGET", "on_over"),
            ("MANAGE_CONTEXT_BUDGET", "on_ok"),
            ("MANAGE_CONTEXT_BUDGET_LOOP", "on_ok"),
        ]
    );
    assert_eq!(events[2]["attempts"], "2");
}

/// Issue 50 item 8: a host that filters on the seed's words finds them in
/// `decision`, whatever the decision: exactly `on_ok` and `on_over`.
#[test]
fn the_decision_field_holds_the_seeds_words() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let g = demand_then_always();
    tracing::subscriber::with_default(Capture(events.clone()), || {
        tracing::callsite::rebuild_interest_cache();
        // 95 words + the block do not fit 100; an empty context does.
        let _ = g.admit(state(&[&words(95)], vec![RetrievalNode::new(SQL)]), &[]);
        let _ = g.admit(state(&[], vec![RetrievalNode::new(SQL)]), &[]);
        // An empty buffer is admitted too (G-6).
        let _ = g.admit(state(&[&words(95)], Vec::new()), &[]);
    });
    let events = events.lock().unwrap();
    let decisions: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e["decision"].as_str(), e["verdict"].as_str()))
        .collect();
    assert_eq!(
        decisions,
        [
            ("on_over", "over"),
            ("on_ok", "admitted"),
            ("on_ok", "admitted")
        ]
    );
}
