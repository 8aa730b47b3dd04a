#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Report metrics on reports from real pipeline runs.

mod common;

use std::sync::Arc;

use common::{item, kinded, pipeline, roomy};
use cupel_analytics::{
    KindQuotaUtilization, budget_utilization, kind_diversity, quota_utilization, timestamp_coverage,
};
use cupel_core::{ContextBudget, ContextItem, ContextKind, parse_timestamp};
use cupel_slicers::{GreedySlice, QuotaSet, QuotaSlice};

fn kind(s: &str) -> ContextKind {
    ContextKind::new(s).unwrap()
}

#[test]
fn utilization_divides_by_max_tokens() {
    // Pinned 100 + greedy 300 + 200 (target 600 - 100 = 500 for the slicer).
    let items = vec![
        ContextItem::builder("sys", 100)
            .pinned(true)
            .build()
            .unwrap(),
        item("a", 300, 0.9),
        item("b", 200, 0.8),
        item("c", 400, 0.1),
    ];
    let budget = ContextBudget::new(1_000, 600).unwrap();
    let report = pipeline(GreedySlice, budget.clone())
        .dry_run(&items)
        .unwrap();
    // densities a 0.003, b 0.004, c 0.00025: b (200) -> 300 left; a (300) -> 0.
    // (100 + 200 + 300) / 1000 — divided by max, not by the 600 target.
    assert_eq!(budget_utilization(&report, &budget), 0.6);
}

#[test]
fn utilization_is_zero_when_max_is_zero() {
    // D-13: max_tokens = 0 is a valid budget; a pinned zero-token item fits it.
    let items = vec![ContextItem::builder("sys", 0).pinned(true).build().unwrap()];
    let budget = ContextBudget::new(0, 0).unwrap();
    let report = pipeline(GreedySlice, budget.clone())
        .dry_run(&items)
        .unwrap();
    assert_eq!(report.included.len(), 1);
    assert_eq!(budget_utilization(&report, &budget), 0.0);
}

#[test]
fn diversity_and_coverage_from_a_run() {
    let t = parse_timestamp("2025-01-01T00:00:00Z").unwrap();
    let items = vec![
        ContextItem::builder("m1", 10)
            .kind(kind("Message"))
            .timestamp(t)
            .future_relevance_hint(0.9)
            .build()
            .unwrap(),
        ContextItem::builder("m2", 10)
            .kind(kind("MESSAGE"))
            .future_relevance_hint(0.8)
            .build()
            .unwrap(),
        ContextItem::builder("d1", 10)
            .kind(kind("Document"))
            .timestamp(t)
            .future_relevance_hint(0.7)
            .build()
            .unwrap(),
        // Does not fit: its kind and missing timestamp must not count.
        ContextItem::builder("t1", 500)
            .kind(kind("ToolOutput"))
            .future_relevance_hint(0.6)
            .build()
            .unwrap(),
    ];
    let report = pipeline(GreedySlice, ContextBudget::new(30, 30).unwrap())
        .dry_run(&items)
        .unwrap();
    assert_eq!(report.included.len(), 3);
    // Message (twice, case folded) and Document.
    assert_eq!(kind_diversity(&report), 2);
    // 2 of the 3 included items carry a timestamp.
    assert_eq!(timestamp_coverage(&report), 2.0 / 3.0);
}

#[test]
fn empty_window_metrics() {
    let items = vec![item("big", 500, 0.9)];
    let budget = ContextBudget::new(100, 100).unwrap();
    let report = pipeline(GreedySlice, budget.clone())
        .dry_run(&items)
        .unwrap();
    assert!(report.included.is_empty());
    assert_eq!(budget_utilization(&report, &budget), 0.0);
    assert_eq!(kind_diversity(&report), 0);
    assert_eq!(timestamp_coverage(&report), 0.0);
}

#[test]
fn quota_utilization_against_a_quota_run() {
    // Budget 1000/1000, pinned system prompt 200 -> slicer target 800.
    // Quotas: Document require 25%, cap 50% -> require floor(0.25*800) = 200,
    // cap floor(0.5*800) = 400.
    // QuotaSlice at 800: unassigned 800 - 200 = 600; masses Document 450
    // (d1 300 + d2 150), Message 100; both can grow (cap > require), total 550.
    //   Document: min(200 + floor(600*450/550) = 200 + 490, 400) = 400
    //   Message:  min(0 + floor(600*100/550) = 109, 800) = 109
    // Greedy on documents with 400: d2 (0.8/150) first -> 250 left; d1 (300) no.
    // Greedy on messages with 109: m (100) fits.
    let items = vec![
        ContextItem::builder("system", 200)
            .kind(kind("SystemPrompt"))
            .pinned(true)
            .build()
            .unwrap(),
        kinded("d1", 300, 0.9, "Document"),
        kinded("d2", 150, 0.8, "Document"),
        kinded("m", 100, 0.5, "Message"),
    ];
    let quotas = QuotaSet::builder()
        .quota(kind("Document"), 25.0, 50.0)
        .build()
        .unwrap();
    let budget = ContextBudget::new(1_000, 1_000).unwrap();
    let p = pipeline(
        QuotaSlice::new(quotas.clone(), Arc::new(GreedySlice)),
        budget.clone(),
    );
    let report = p.dry_run(&items).unwrap();
    let mut got: Vec<&str> = report.included_items().map(ContextItem::content).collect();
    got.sort_unstable();
    assert_eq!(got, ["d2", "m", "system"]);

    let rows = quota_utilization(&report, &quotas, &budget);
    assert_eq!(
        rows,
        vec![
            KindQuotaUtilization {
                kind: kind("Document"),
                require_percent: 25.0,
                cap_percent: 50.0,
                slice_target: 800,
                require_tokens: 200,
                cap_tokens: 400,
                included_tokens: 150,
                utilization: 150.0 / 400.0,
                require_met: false,
                within_cap: true,
            },
            // Not configured: 0% / 100%; the pinned SystemPrompt is not listed.
            KindQuotaUtilization {
                kind: kind("Message"),
                require_percent: 0.0,
                cap_percent: 100.0,
                slice_target: 800,
                require_tokens: 0,
                cap_tokens: 800,
                included_tokens: 100,
                utilization: 100.0 / 800.0,
                require_met: true,
                within_cap: true,
            },
        ]
    );
}

#[test]
fn quota_utilization_lists_configured_kinds_without_items_and_zero_caps() {
    // A greedy run (no quotas enforced) judged against quotas it ignored.
    let items = vec![kinded("m", 100, 0.5, "Message")];
    let budget = ContextBudget::builder(1_000, 500)
        .output_reserve(100)
        .safety_margin_percent(10.0)
        .build()
        .unwrap();
    let report = pipeline(GreedySlice, budget.clone())
        .dry_run(&items)
        .unwrap();
    let quotas = QuotaSet::builder()
        .require(kind("Memory"), 10.0)
        .cap(kind("Message"), 0.0)
        .build()
        .unwrap();
    let rows = quota_utilization(&report, &quotas, &budget);
    // Slicer target: max = 1000 - 100 = 900, target = min(500, 900) = 500;
    // margin 10%: floor(500 * 0.9) = 450.
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0].kind.as_str(), rows[0].slice_target),
        ("Memory", 450)
    );
    // Memory: require floor(0.1 * 450) = 45, nothing included.
    assert_eq!((rows[0].require_tokens, rows[0].included_tokens), (45, 0));
    assert!(!rows[0].require_met);
    assert_eq!(rows[0].utilization, 0.0);
    // Message: cap 0% -> 0 tokens, but 100 included: infinite utilisation.
    assert_eq!(rows[1].cap_tokens, 0);
    assert_eq!(rows[1].utilization, f64::INFINITY);
    assert!(!rows[1].within_cap);
    // An empty report against an empty quota set has no rows.
    let empty = pipeline(GreedySlice, roomy()).dry_run(&[]).unwrap();
    assert!(quota_utilization(&empty, &QuotaSet::empty(), &budget).is_empty());
}

#[test]
fn quota_utilization_sums_each_kind_once_in_first_appearance_order() {
    // Greedy with room for everything: the window is pinned "sys" then the
    // rest by score (no timestamps): t 0.9, m1 0.8, d 0.7, m2 0.6.
    // "message" and "Message" are one kind (case-insensitive), spelled as
    // first seen.
    let items = vec![
        ContextItem::builder("sys", 50)
            .kind(kind("SystemPrompt"))
            .pinned(true)
            .build()
            .unwrap(),
        kinded("t", 40, 0.9, "ToolOutput"),
        kinded("m1", 30, 0.8, "message"),
        kinded("d", 20, 0.7, "Document"),
        kinded("m2", 10, 0.6, "Message"),
    ];
    let budget = ContextBudget::new(1_000, 1_000).unwrap();
    let report = pipeline(GreedySlice, budget.clone())
        .dry_run(&items)
        .unwrap();
    let quotas = QuotaSet::builder()
        .cap(kind("Document"), 10.0)
        .build()
        .unwrap();
    let rows = quota_utilization(&report, &quotas, &budget);
    // Slicer target 1000 - 50 pinned = 950. Document (configured) first: cap
    // floor(0.1 * 950) = 95; then ToolOutput and message in placed order,
    // each with cap 100% = 950. message: 30 + 10 = 40.
    let got: Vec<(&str, i64, i64)> = rows
        .iter()
        .map(|r| (r.kind.as_str(), r.included_tokens, r.cap_tokens))
        .collect();
    assert_eq!(
        got,
        [
            ("Document", 20, 95),
            ("ToolOutput", 40, 950),
            ("message", 40, 950)
        ]
    );
}
