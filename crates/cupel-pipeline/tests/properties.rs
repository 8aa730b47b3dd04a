//! Pipeline-level invariants on random inputs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use cupel_core::{
    ContextBudget, ContextItem, ContextKind, CupelError, OverflowStrategy, Placer, Scorer,
    SelectionReport, Slicer,
};
use cupel_pipeline::Pipeline;
use cupel_placers::{ChronologicalPlacer, UShapedPlacer};
use cupel_scorers::{CompositeScorer, PriorityScorer, RecencyScorer, ReflexiveScorer};
use cupel_slicers::{GreedySlice, KnapsackSlice};
use proptest::prelude::*;

const KINDS: [ContextKind; 4] = [
    ContextKind::MESSAGE,
    ContextKind::DOCUMENT,
    ContextKind::TOOL_OUTPUT,
    ContextKind::MEMORY,
];

prop_compose! {
    fn arb_item()(
        content in 0usize..12,
        tokens in prop_oneof![1 => -5i64..0, 1 => Just(0i64), 8 => 1i64..120],
        kind in 0usize..4,
        pinned in prop::bool::weighted(0.1),
        hint in prop::option::of(0.0f64..1.0),
        priority in prop::option::of(0i64..5),
        ts in prop::option::of(0i64..10),
    ) -> ContextItem {
        let mut b = ContextItem::builder(format!("c{content}"), tokens)
            .kind(KINDS[kind].clone())
            .pinned(pinned)
            .future_relevance_hint_opt(hint)
            .priority_opt(priority);
        if let Some(t) = ts {
            b = b.timestamp(chrono::DateTime::from_timestamp(1_700_000_000 + t * 60, 0).unwrap());
        }
        b.build().unwrap()
    }
}

fn scorer() -> Arc<dyn Scorer> {
    let children: Vec<(Arc<dyn Scorer>, f64)> = vec![
        (Arc::new(ReflexiveScorer::new()), 2.0),
        (Arc::new(PriorityScorer::new()), 1.0),
        (Arc::new(RecencyScorer::new()), 1.0),
    ];
    Arc::new(CompositeScorer::new(children).unwrap())
}

fn pipeline(
    budget: ContextBudget,
    knapsack: bool,
    u_shaped: bool,
    overflow: OverflowStrategy,
) -> Pipeline {
    let slicer: Arc<dyn Slicer> = if knapsack {
        Arc::new(KnapsackSlice::new(10).unwrap())
    } else {
        Arc::new(GreedySlice::new())
    };
    let placer: Arc<dyn Placer> = if u_shaped {
        Arc::new(UShapedPlacer)
    } else {
        Arc::new(ChronologicalPlacer)
    };
    Pipeline::builder()
        .scorer(scorer())
        .slicer(slicer)
        .placer(placer)
        .overflow_strategy(overflow)
        .budget(budget)
        .build()
        .unwrap()
}

fn strip_durations(mut r: SelectionReport) -> SelectionReport {
    for e in &mut r.events {
        e.duration_ms = 0.0;
    }
    r
}

fn overflow_strategy() -> impl Strategy<Value = OverflowStrategy> {
    prop_oneof![
        Just(OverflowStrategy::Throw),
        Just(OverflowStrategy::Truncate),
        Just(OverflowStrategy::Proceed)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn pipeline_invariants(
        items in prop::collection::vec(arb_item(), 0..25),
        max in 0i64..600,
        target_frac in 0.0f64..=1.0,
        reserve_frac in 0.0f64..0.5,
        margin in prop_oneof![Just(0.0), 0.0f64..30.0],
        knapsack in any::<bool>(),
        u_shaped in any::<bool>(),
        overflow in overflow_strategy(),
    ) {
        let target = (max as f64 * target_frac) as i64;
        let reserve = ((max as f64 * reserve_frac) as i64).min(max);
        let budget = ContextBudget::builder(max, target)
            .output_reserve(reserve)
            .safety_margin_percent(margin)
            .build()
            .unwrap();
        let p = pipeline(budget.clone(), knapsack, u_shaped, overflow);
        let pinned_tokens: i64 = items.iter().filter(|i| i.pinned() && i.tokens() >= 0).map(ContextItem::tokens).sum();

        match p.run(&items) {
            Ok(window) => {
                let total: i64 = window.iter().map(ContextItem::tokens).sum();
                // Never above the hard ceiling (greedy/knapsack respect the effective max).
                prop_assert!(total <= max - reserve, "total {total} > {}", max - reserve);
                // Throw/Truncate: never above target unless pinned items alone are.
                if overflow != OverflowStrategy::Proceed {
                    prop_assert!(total <= target.max(pinned_tokens), "total {total} target {target} pinned {pinned_tokens}");
                }
                // No negative-token item is ever selected; every pinned one is.
                prop_assert!(window.iter().all(|i| i.tokens() >= 0));
                let pinned_in = window.iter().filter(|i| i.pinned()).count();
                let pinned_all = items.iter().filter(|i| i.pinned() && i.tokens() >= 0).count();
                prop_assert_eq!(pinned_in, pinned_all);

                let report = p.dry_run(&items).unwrap();
                prop_assert_eq!(report.total_candidates, items.len());
                prop_assert_eq!(report.included.len() + report.excluded.len(), items.len());
                let tokens_all: i64 = items.iter().map(ContextItem::tokens).sum();
                prop_assert_eq!(report.total_tokens_considered, tokens_all);
                // The report's included list is the window, in order.
                let a: Vec<&ContextItem> = window.iter().collect();
                let b: Vec<&ContextItem> = report.included.iter().map(|i| &i.item).collect();
                prop_assert_eq!(a, b);
                // Excluded sorted by score, descending.
                prop_assert!(report.excluded.windows(2).all(|w| w[0].score >= w[1].score));
                // Identical runs: identical output and report.
                prop_assert_eq!(p.run(&items).unwrap(), window);
                prop_assert_eq!(strip_durations(p.dry_run(&items).unwrap()), strip_durations(report));
            }
            Err(CupelError::PinnedBudgetExceeded { pinned_tokens: got, available_tokens }) => {
                prop_assert_eq!(got, pinned_tokens);
                prop_assert!(pinned_tokens > max - reserve);
                prop_assert_eq!(available_tokens, max - reserve);
            }
            Err(CupelError::BudgetOverflow { selected_tokens, target_tokens }) => {
                prop_assert_eq!(overflow, OverflowStrategy::Throw);
                prop_assert!(selected_tokens > target_tokens);
                prop_assert_eq!(target_tokens, target);
            }
            Err(e) => prop_assert!(false, "unexpected error: {e}"),
        }
    }
}

// ----- D-9: PinnedOverride blames pinned items truthfully ---------------------------------------

/// Takes every candidate, ignoring the budget, so that Truncate decides.
struct TakeAll;
impl Slicer for TakeAll {
    fn slice(
        &self,
        s: &[cupel_core::ScoredItem<'_>],
        _: cupel_core::SliceBudget,
    ) -> Result<cupel_core::SliceOutcome, CupelError> {
        Ok(cupel_core::SliceOutcome::selected((0..s.len()).collect()))
    }
}

prop_compose! {
    /// Items with unique contents (`p0`, `x1`, …) so that `displaced_by`
    /// names exactly one pinned item.
    fn arb_blame_items()(
        specs in prop::collection::vec((1i64..80, prop::bool::weighted(0.25), 0.0f64..1.0), 1..20),
    ) -> Vec<ContextItem> {
        specs
            .into_iter()
            .enumerate()
            .map(|(i, (tokens, pinned, hint))| {
                let name = if pinned { format!("p{i}") } else { format!("x{i}") };
                ContextItem::builder(name, tokens)
                    .pinned(pinned)
                    .future_relevance_hint(hint)
                    .build()
                    .unwrap()
            })
            .collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Whatever the stage, the tokens of the items a pinned item is blamed
    /// for never add up to more than that pinned item holds; at Slice, a
    /// PinnedOverride item is larger than the effective target with the
    /// pinned tokens and fits the one without them (E(0) = target here).
    #[test]
    fn pinned_override_never_overstates_what_pinned_items_displaced(
        items in arb_blame_items(),
        target in 1i64..400,
        truncate in any::<bool>(),
    ) {
        let slicer: Arc<dyn Slicer> = if truncate {
            Arc::new(TakeAll)
        } else {
            Arc::new(GreedySlice::new())
        };
        let p = Pipeline::builder()
            .scorer(ReflexiveScorer::new())
            .slicer(slicer)
            .placer(ChronologicalPlacer)
            .overflow_strategy(OverflowStrategy::Truncate)
            .budget(ContextBudget::new(1000, target).unwrap())
            .build()
            .unwrap();
        let report = p.dry_run(&items).unwrap();
        let pinned_total: i64 = items.iter().filter(|i| i.pinned()).map(ContextItem::tokens).sum();
        let mut blamed: std::collections::BTreeMap<&str, i64> = Default::default();
        for e in &report.excluded {
            if let cupel_core::ExclusionReason::PinnedOverride { displaced_by } = &e.reason {
                let holder = items.iter().find(|i| i.content() == displaced_by.as_str());
                prop_assert!(holder.is_some_and(ContextItem::pinned), "{displaced_by} is not pinned");
                *blamed.entry(displaced_by.as_str()).or_default() += e.item.tokens();
                if !truncate {
                    // Slice stage: E(pinned) = target - pinned, E(0) = target.
                    let t = e.item.tokens();
                    prop_assert!(t > target - pinned_total && t <= target,
                        "{} ({t}) blamed at Slice with target {target}, pinned {pinned_total}",
                        e.item.content());
                }
            }
        }
        for (name, tokens) in blamed {
            let held = items.iter().find(|i| i.content() == name).map_or(0, ContextItem::tokens);
            prop_assert!(tokens <= held, "{name} holds {held} but is blamed for {tokens}");
        }
    }
}
