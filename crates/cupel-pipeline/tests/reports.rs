//! Full selection reports, pinned as JSON snapshots. Every number is derived by
//! hand in the comments; the snapshot guards the wire shape.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cupel_core::{ContextBudget, ContextItem, ContextKind, SelectionReport};
use cupel_pipeline::{Pipeline, PolicyConfig};

fn zero_durations(mut r: SelectionReport) -> SelectionReport {
    for e in &mut r.events {
        e.duration_ms = 0.0;
    }
    r
}

fn ts(s: &str) -> chrono::DateTime<chrono::Utc> {
    s.parse().unwrap()
}

#[test]
fn support_chat_report() {
    // Policy: reflexive alone (score = hint), greedy, chronological, truncate.
    // Budget max 300, target 200, reserve 50. Pinned "system" 40 (<= 300 - 50).
    // Effective: max = 300 - 50 - 40 = 210; target = min(200 - 40, 210) = 160.
    // Scoreable: question (60, 0.9), answer-doc (120, 0.7), small-talk (10, 0.1),
    //            answer-doc duplicate (120, 0.5), junk (-3).
    // Dedup: duplicate (0.5 < 0.7) excluded, Deduplicated.
    // Greedy densities: question 0.015, answer-doc 0.005833, small-talk 0.01.
    //   question 60 (100 left), small-talk 10 (90 left), answer-doc 120 > 90: excluded.
    //   room after slicing = 160 - 70 = 90. 120 alone fits the effective target 160,
    //   so the pinned prompt is not to blame: BudgetExceeded { 120, available 90 }.
    // Merged: system 40, question 60, small-talk 10 = 110 <= 200.
    // Chronological: small-talk 10:00, question 10:05, then system (no timestamp).
    let cfg = PolicyConfig::from_toml_str(
        "placer = \"chronological\"\noverflow_strategy = \"truncate\"\n[[scorers]]\ntype = \"reflexive\"\n",
    )
    .unwrap();
    let items = vec![
        ContextItem::builder("system: you are a billing assistant", 40)
            .kind(ContextKind::SYSTEM_PROMPT)
            .pinned(true)
            .build()
            .unwrap(),
        ContextItem::builder("user: why was I charged twice?", 60)
            .future_relevance_hint(0.9)
            .timestamp(ts("2025-02-01T10:05:00Z"))
            .build()
            .unwrap(),
        ContextItem::builder("doc: duplicate charges are refunded in 5 days", 120)
            .kind(ContextKind::DOCUMENT)
            .future_relevance_hint(0.7)
            .build()
            .unwrap(),
        ContextItem::builder("user: hi there", 10)
            .future_relevance_hint(0.1)
            .timestamp(ts("2025-02-01T10:00:00Z"))
            .build()
            .unwrap(),
        ContextItem::builder("doc: duplicate charges are refunded in 5 days", 120)
            .kind(ContextKind::DOCUMENT)
            .future_relevance_hint(0.5)
            .build()
            .unwrap(),
        ContextItem::builder("junk", -3).build().unwrap(),
    ];
    let budget = ContextBudget::builder(300, 200)
        .output_reserve(50)
        .build()
        .unwrap();
    let report = Pipeline::new(cfg.build().unwrap(), budget)
        .dry_run(&items)
        .unwrap();
    insta::assert_json_snapshot!(zero_durations(report));
}

#[test]
fn count_quota_report_shows_caps_and_shortfalls() {
    // count_quota: ToolOutput require 1 cap 1; Memory require 2 cap 2 (only 1 memory exists).
    // Scores = hints. Phase 1: tool-a (0.9) committed; memory-a (0.4) committed; shortfall Memory 2/1.
    // Phase 2 greedy on residual {tool-b 0.8, msg 0.5} with target 1000 - 20 = 980: both selected.
    // Phase 3: tool-b: ToolOutput count 1 >= cap 1 -> cap exclusion (cap 1, count 1); msg kept.
    let cfg = PolicyConfig::from_toml_str(
        r#"
        slicer = "count_quota"
        [[entries]]
        kind = "ToolOutput"
        require_count = 1
        cap_count = 1
        [[entries]]
        kind = "Memory"
        require_count = 2
        cap_count = 2
        [[scorers]]
        type = "reflexive"
        "#,
    )
    .unwrap();
    let item = |c: &str, k: ContextKind, h: f64| {
        ContextItem::builder(c, 10)
            .kind(k)
            .future_relevance_hint(h)
            .build()
            .unwrap()
    };
    let items = vec![
        item("tool-a", ContextKind::TOOL_OUTPUT, 0.9),
        item("tool-b", ContextKind::TOOL_OUTPUT, 0.8),
        item("msg", ContextKind::MESSAGE, 0.5),
        item("memory-a", ContextKind::MEMORY, 0.4),
    ];
    let report = Pipeline::new(
        cfg.build().unwrap(),
        ContextBudget::new(1000, 1000).unwrap(),
    )
    .dry_run(&items)
    .unwrap();
    assert_eq!(report.count_requirement_shortfalls.len(), 1);
    insta::assert_json_snapshot!(zero_durations(report));
}
