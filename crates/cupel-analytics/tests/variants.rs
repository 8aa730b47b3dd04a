//! Analytics over items with variants (spec/22-variants.md): a sweep counts
//! a window's tokens as the window holds them (an item taken as a variant
//! at its variant's tokens).
#![allow(clippy::unwrap_used)]

use cupel_analytics::budget_sweep_rows;
use cupel_core::{ContextBudget, ContextItem, ItemVariant};
use cupel_pipeline::Pipeline;
use cupel_placers::ChronologicalPlacer;
use cupel_scorers::ReflexiveScorer;
use cupel_slicers::GreedySlice;

#[test]
fn a_sweep_counts_variants_at_their_own_tokens() {
    let pipeline = Pipeline::builder()
        .scorer(ReflexiveScorer)
        .slicer(GreedySlice)
        .placer(ChronologicalPlacer)
        .budget(ContextBudget::new(1_000, 1_000).unwrap())
        .build()
        .unwrap();
    let items = vec![
        ContextItem::builder("log", 300)
            .future_relevance_hint(0.9)
            .variant(ItemVariant::new("[log omitted]", 5))
            .build()
            .unwrap(),
        ContextItem::builder("doc", 50)
            .future_relevance_hint(0.5)
            .build()
            .unwrap(),
    ];
    let rows: Vec<_> = budget_sweep_rows(&pipeline, &items, &[100, 400])
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // 100: doc 50 (density 0.01) then the log: 300 > 50, placeholder 5 <= 50:
    // 50 + 5 = 55 tokens, not 50 + 300.
    assert_eq!(
        (rows[0].included.clone(), rows[0].included_tokens),
        (vec![0, 1], 55)
    );
    // 400: both whole, 350.
    assert_eq!(rows[1].included_tokens, 350);
}

#[test]
fn policy_sensitivity_matches_a_variant_to_its_item() {
    use cupel_analytics::policy_sensitivity;
    use cupel_pipeline::Policy;
    use cupel_slicers::KnapsackSlice;
    let greedy = Policy::builder()
        .scorer(ReflexiveScorer)
        .slicer(GreedySlice)
        .placer(ChronologicalPlacer)
        .build()
        .unwrap();
    let knapsack = Policy::builder()
        .scorer(ReflexiveScorer)
        .slicer(KnapsackSlice::new(1).unwrap())
        .placer(ChronologicalPlacer)
        .build()
        .unwrap();
    let items = vec![
        ContextItem::builder("log", 300)
            .future_relevance_hint(0.9)
            .variant(ItemVariant::new("[log omitted]", 5))
            .build()
            .unwrap(),
        ContextItem::builder("doc", 50)
            .future_relevance_hint(0.5)
            .build()
            .unwrap(),
    ];
    // Target 310. Greedy: doc (density 0.01) 50, 260 left; log 300 > 260,
    // placeholder 5: the log is in as a variant. Knapsack (bucket 1): the
    // whole log alone is worth 9000; doc + placeholder only 5000 + about
    // 150; log + doc = 350 > 310: the log goes in whole, doc stays out.
    // The log is in under both (in two forms): only doc differs.
    let budget = ContextBudget::new(310, 310).unwrap();
    let report = policy_sensitivity(
        &items,
        &budget,
        &[("greedy", &greedy), ("knapsack", &knapsack)],
    )
    .unwrap();
    let diffs: Vec<&str> = report.diffs.iter().map(|d| d.content.as_str()).collect();
    assert_eq!(diffs, ["doc"]);
}

#[test]
fn the_minimum_budget_search_starts_at_the_smallest_form() {
    use cupel_analytics::{find_min_budget_for, find_min_budget_for_exact};
    let pipeline = Pipeline::builder()
        .scorer(ReflexiveScorer)
        .slicer(GreedySlice)
        .placer(ChronologicalPlacer)
        .budget(ContextBudget::new(1_000, 1_000).unwrap())
        .build()
        .unwrap();
    let items = vec![
        ContextItem::builder("log", 300)
            .future_relevance_hint(0.9)
            .variant(ItemVariant::new("[log omitted]", 5))
            .build()
            .unwrap(),
        ContextItem::builder("doc", 50)
            .future_relevance_hint(0.5)
            .build()
            .unwrap(),
    ];
    // At b: doc first when 50 <= b (density 0.01 > 0.003), then the log's
    // placeholder if 5 more fit; below 50 the placeholder alone. So the log
    // is in for b in 5..=49, out for 50..=54 (doc leaves fewer than 5), in
    // from 55: the exact smallest is 5 (not the whole item's 300).
    assert_eq!(
        find_min_budget_for_exact(&pipeline, &items, 0, 1_000).unwrap(),
        Some(5)
    );
    // The binary search over [5, 400] assumes monotonic inclusion: it probes
    // 202 (in), 103 (in), 54 (out), 78, 66, 60, 57, 55 (in) and verifies 55.
    assert_eq!(
        find_min_budget_for(&pipeline, &items, 0, 400).unwrap(),
        Some(55)
    );
    assert!(find_min_budget_for(&pipeline, &items, 0, 4).is_err());
}
