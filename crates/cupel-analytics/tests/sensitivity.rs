#![allow(clippy::unwrap_used, clippy::expect_used)]
//! policy_sensitivity and policy_sensitivity_from_pipelines: the error rule,
//! variant order, content-keyed swing-only diffs, diff order.

mod common;

use common::{item, policy};
use cupel_analytics::{
    ItemStatus, PolicySensitivityReport, policy_sensitivity, policy_sensitivity_from_pipelines,
};
use cupel_core::{ContextBudget, ContextItem, CupelError};
use cupel_pipeline::{Pipeline, Policy};
use cupel_placers::ChronologicalPlacer;
use cupel_scorers::{PriorityScorer, ReflexiveScorer};
use cupel_slicers::{GreedySlice, KnapsackSlice};

use ItemStatus::{Excluded, Included};

fn statuses(report: &PolicySensitivityReport) -> Vec<(String, Vec<ItemStatus>)> {
    report
        .diffs
        .iter()
        .map(|d| (d.content.clone(), d.statuses.iter().map(|s| s.1).collect()))
        .collect()
}

fn contents(report: &cupel_core::SelectionReport) -> Vec<&str> {
    report.included_items().map(ContextItem::content).collect()
}

/// Items built so that greedy and exact knapsack disagree at 100 tokens:
/// greedy takes the densest (a: 0.9 / 51), knapsack b + c (0.6 + 0.6 > 0.9).
/// `keep` (1 token, 0.95) is in everywhere; `never` (500 tokens) nowhere.
fn items() -> Vec<ContextItem> {
    vec![
        item("never", 500, 0.99),
        item("c", 50, 0.6),
        item("keep", 1, 0.95),
        item("a", 51, 0.9),
        item("b", 50, 0.6),
    ]
}

fn greedy() -> Policy {
    policy(GreedySlice)
}

fn knapsack() -> Policy {
    policy(KnapsackSlice::new(1).unwrap())
}

fn budget() -> ContextBudget {
    ContextBudget::new(101, 101).unwrap()
}

#[test]
fn fewer_than_two_variants_is_the_spec_error() {
    let expected =
        CupelError::PipelineConfig("policy_sensitivity requires at least 2 variants".into());
    let g = greedy();
    let none: [(&str, &Policy); 0] = [];
    assert_eq!(
        policy_sensitivity(&items(), &budget(), &none),
        Err(expected.clone())
    );
    assert_eq!(
        policy_sensitivity(&items(), &budget(), &[("only", &g)]),
        Err(expected.clone())
    );
    let p = Pipeline::new(g, budget());
    let none: [(&str, &Pipeline); 0] = [];
    assert_eq!(
        policy_sensitivity_from_pipelines(&items(), &budget(), &none),
        Err(expected.clone())
    );
    assert_eq!(
        policy_sensitivity_from_pipelines(&items(), &budget(), &[("only", &p)]),
        Err(expected)
    );
}

#[test]
fn swing_items_only_in_order_of_first_appearance() {
    // Budget 101:
    //   greedy (density order keep 0.95, a 0.0176, b 0.012, c 0.012, never):
    //     keep (1) -> 100 left; a (51) -> 49 left; c, b (50) no; never no.
    //     Included: keep, a.
    //   knapsack (bucket 1, capacity 101): keep + b + c = 101 tokens, value
    //     0.95 + 0.6 + 0.6 = 2.15 beats keep + a + (nothing) = 1.85.
    //     Included: keep, c, b.
    // Swing: c, a, b — listed in order of first appearance in `items`
    // (c at 1, a at 3, b at 4), not in any report's order.
    let (g, k) = (greedy(), knapsack());
    let report =
        policy_sensitivity(&items(), &budget(), &[("greedy", &g), ("knapsack", &k)]).unwrap();
    assert_eq!(
        statuses(&report),
        vec![
            ("c".to_owned(), vec![Excluded, Included]),
            ("a".to_owned(), vec![Included, Excluded]),
            ("b".to_owned(), vec![Excluded, Included]),
        ]
    );
    // Labels travel with each status, in variant order.
    assert_eq!(
        report.diffs[0].statuses,
        vec![
            ("greedy".to_owned(), Excluded),
            ("knapsack".to_owned(), Included)
        ]
    );
    // Variants keep input order and carry full reports.
    let labels: Vec<&str> = report.variants.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["greedy", "knapsack"]);
    let mut greedy_in = contents(&report.variants[0].1);
    greedy_in.sort_unstable();
    assert_eq!(greedy_in, ["a", "keep"]);
    assert_eq!(report.variants[1].1.total_candidates, 5);

    // Reversing the variants reverses each status list, not the diff order.
    let report =
        policy_sensitivity(&items(), &budget(), &[("knapsack", &k), ("greedy", &g)]).unwrap();
    assert_eq!(
        statuses(&report),
        vec![
            ("c".to_owned(), vec![Included, Excluded]),
            ("a".to_owned(), vec![Excluded, Included]),
            ("b".to_owned(), vec![Included, Excluded]),
        ]
    );
}

#[test]
fn identical_policies_have_no_diffs() {
    let (g1, g2) = (greedy(), greedy());
    let report = policy_sensitivity(&items(), &budget(), &[("one", &g1), ("two", &g2)]).unwrap();
    assert!(report.diffs.is_empty());
    assert_eq!(report.variants.len(), 2);
    assert_eq!(report.variants[0].1.included, report.variants[1].1.included);
}

#[test]
fn three_variants_and_duplicate_labels() {
    // by priority: only "prio" has a priority -> score 1.0; everything else 0.
    let items = vec![
        ContextItem::builder("prio", 60)
            .priority(5)
            .future_relevance_hint(0.1)
            .build()
            .unwrap(),
        item("hint", 60, 0.9),
    ];
    let by_priority = Policy::builder()
        .scorer(PriorityScorer)
        .slicer(GreedySlice)
        .placer(ChronologicalPlacer)
        .build()
        .unwrap();
    let by_hint = Policy::builder()
        .scorer(ReflexiveScorer)
        .slicer(GreedySlice)
        .placer(ChronologicalPlacer)
        .build()
        .unwrap();
    let budget = ContextBudget::new(60, 60).unwrap(); // room for one
    let report = policy_sensitivity(
        &items,
        &budget,
        &[("x", &by_hint), ("x", &by_priority), ("y", &by_hint)],
    )
    .unwrap();
    assert_eq!(
        report.diffs[0].statuses,
        vec![
            ("x".to_owned(), Excluded),
            ("x".to_owned(), Included),
            ("y".to_owned(), Excluded)
        ]
    );
    assert_eq!(report.diffs[0].content, "prio");
    assert_eq!(report.diffs[1].content, "hint");
    assert_eq!(report.diffs.len(), 2);
}

#[test]
fn items_are_matched_by_content() {
    // Two items with the same content at positions 0 and 2. Deduplication keeps
    // the better-scored copy (position 2, 0.8). Under the hint policy at 40
    // tokens the 40-token "dup" (0.8 / 40 = 0.02) beats "other" (0.5 / 40).
    // Under the priority policy "other" (priority 1, the only prioritised
    // item) wins. The diff lists "dup" once, at its first appearance (0),
    // whichever copy was included.
    let items = vec![
        item("dup", 40, 0.1),
        ContextItem::builder("other", 40)
            .priority(1)
            .future_relevance_hint(0.5)
            .build()
            .unwrap(),
        item("dup", 40, 0.8),
    ];
    let by_hint = greedy();
    let by_priority = Policy::builder()
        .scorer(PriorityScorer)
        .slicer(GreedySlice)
        .placer(ChronologicalPlacer)
        .build()
        .unwrap();
    let budget = ContextBudget::new(40, 40).unwrap();
    let report = policy_sensitivity(
        &items,
        &budget,
        &[("hint", &by_hint), ("priority", &by_priority)],
    )
    .unwrap();
    assert_eq!(
        statuses(&report),
        vec![
            ("dup".to_owned(), vec![Included, Excluded]),
            ("other".to_owned(), vec![Excluded, Included]),
        ]
    );
}

#[test]
fn pipelines_are_run_with_the_given_budget() {
    // Both pipelines carry a 1-token budget of their own; the call's budget
    // (101) decides, so the result equals the policy-based one.
    let tiny = ContextBudget::new(1, 1).unwrap();
    let g = Pipeline::new(greedy(), tiny.clone());
    let k = Pipeline::new(knapsack(), tiny);
    let from_pipelines =
        policy_sensitivity_from_pipelines(&items(), &budget(), &[("greedy", &g), ("knapsack", &k)])
            .unwrap();
    let (gp, kp) = (greedy(), knapsack());
    let from_policies =
        policy_sensitivity(&items(), &budget(), &[("greedy", &gp), ("knapsack", &kp)]).unwrap();
    assert_eq!(from_pipelines.diffs, from_policies.diffs);
    assert_eq!(from_pipelines.diffs.len(), 3);
    for (a, b) in from_pipelines.variants.iter().zip(&from_policies.variants) {
        assert_eq!(a.0, b.0);
        assert_eq!(a.1.included, b.1.included);
        assert_eq!(a.1.excluded, b.1.excluded);
    }
}

#[test]
fn a_failing_variant_fails_the_call() {
    // Pinned 200 tokens cannot fit a 100-token budget: the dry run's error is returned.
    let items = vec![
        ContextItem::builder("sys", 200)
            .pinned(true)
            .build()
            .unwrap(),
        item("x", 10, 0.5),
    ];
    let (g, k) = (greedy(), knapsack());
    let budget = ContextBudget::new(100, 100).unwrap();
    assert_eq!(
        policy_sensitivity(&items, &budget, &[("g", &g), ("k", &k)]),
        Err(CupelError::PinnedBudgetExceeded {
            pinned_tokens: 200,
            available_tokens: 100
        })
    );
}

#[test]
fn results_are_deterministic() {
    let (g, k) = (greedy(), knapsack());
    let run = || policy_sensitivity(&items(), &budget(), &[("g", &g), ("k", &k)]).unwrap();
    let first = run();
    for _ in 0..5 {
        let again = run();
        assert_eq!(again.diffs, first.diffs);
        for (a, b) in again.variants.iter().zip(&first.variants) {
            assert_eq!(a.1.included, b.1.included);
            assert_eq!(a.1.excluded, b.1.excluded);
        }
    }
}
