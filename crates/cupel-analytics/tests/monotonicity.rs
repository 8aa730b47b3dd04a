#![allow(clippy::unwrap_used, clippy::expect_used, deprecated)]
//! Greedy inclusion is not monotonic in the budget (clarification S-1), what
//! that does to the specification's binary search, and a property test of the
//! exact search against it.

mod common;

use std::sync::Arc;

use common::{dry_run_includes, item, pinned, pipeline, pipeline_with, positions, roomy};
use cupel_analytics::{budget_sweep, find_min_budget_for, find_min_budget_for_exact};
use cupel_core::{ContextBudget, ContextItem, OverflowStrategy, Slicer};
use cupel_pipeline::Pipeline;
use cupel_slicers::{GreedySlice, KnapsackSlice};
use proptest::prelude::*;

/// A: 60 tokens, score 0.9 (density 0.015); B: 50 tokens, score 0.5 (0.010).
fn a_and_b() -> Vec<ContextItem> {
    vec![item("A", 60, 0.9), item("B", 50, 0.5)]
}

#[test]
fn greedy_inclusion_is_not_monotonic() {
    let items = a_and_b();
    let p = pipeline(GreedySlice, roomy());
    // b = 50: A (60) does not fit; B (50) does.
    assert_eq!(dry_run_includes(&p, &items, 1, 50), Some(true));
    // b = 60: A fits, 0 left; B does not.
    assert_eq!(dry_run_includes(&p, &items, 1, 60), Some(false));
    assert_eq!(dry_run_includes(&p, &items, 0, 60), Some(true));
    // b = 110: A fits, 50 left; B fits.
    assert_eq!(dry_run_includes(&p, &items, 1, 110), Some(true));

    // The sweep shows the gap directly.
    let sweep = budget_sweep(&p, &items, &[50, 60, 110]).unwrap();
    assert_eq!(sweep.rows[0].included, vec![1]);
    assert_eq!(sweep.rows[1].included, vec![0]);
    assert_eq!(sweep.rows[2].included, vec![0, 1]);
    assert_eq!(sweep.by_item, vec![vec![60, 110], vec![50, 110]]);
    assert_eq!(sweep.non_monotonic_items(), vec![1]);
}

#[test]
fn the_binary_search_overshoots_on_the_counterexample() {
    // spec/09: B with ceiling 110 probes 80, 95, 102, 106, 108, 109 (A takes
    // the room at each, leaving 20..49 < 50), verifies 110 and returns 110;
    // the true minimum is 50.
    let items = a_and_b();
    let p = pipeline(GreedySlice, roomy());
    for b in [80, 95, 102, 106, 108, 109] {
        assert_eq!(dry_run_includes(&p, &items, 1, b), Some(false), "b = {b}");
    }
    assert_eq!(find_min_budget_for(&p, &items, 1, 110).unwrap(), Some(110));
    assert_eq!(
        find_min_budget_for_exact(&p, &items, 1, 110).unwrap(),
        Some(50)
    );
}

#[test]
fn knapsack_with_buckets_is_not_monotonic_either() {
    // Bucket 10: sizes are ceil(tokens / 10) buckets, capacity floor(b / 10).
    // X: 15 tokens (2 buckets), score 0.9; Y: 10 tokens (1 bucket), 0.5.
    //   b = 10: capacity 1 -> only Y fits (X needs 2 buckets).      Y in
    //   b = 20: capacity 2 -> X (0.9) beats Y (0.5); X + Y needs 3.  Y out
    //   b = 30: capacity 3 -> X + Y.                                  Y in
    let items = vec![item("X", 15, 0.9), item("Y", 10, 0.5)];
    let p = pipeline(KnapsackSlice::new(10).unwrap(), roomy());
    let sweep = budget_sweep(&p, &items, &[10, 20, 30]).unwrap();
    assert_eq!(sweep.by_item[1], vec![10, 30]);
    assert_eq!(sweep.non_monotonic_items(), vec![1]);
}

#[test]
fn probes_match_the_public_dry_run() {
    // The simulations read included positions through a collector; the public
    // dry run must agree at every size, including sizes without a window.
    let items = vec![
        pinned("sys", 20),
        item("A", 60, 0.9),
        item("B", 50, 0.5),
        item("C", 5, 0.05),
        item("A", 60, 0.2), // duplicate content: deduplicated away
    ];
    let budget = ContextBudget::builder(1_000, 1_000)
        .output_reserve(10)
        .build()
        .unwrap();
    let p = pipeline(GreedySlice, budget);
    let sizes: Vec<i64> = (0..=200).collect();
    let sweep = budget_sweep(&p, &items, &sizes).unwrap();
    for row in &sweep.rows {
        let probe = p
            .budget()
            .to_builder()
            .max_tokens(row.budget)
            .target_tokens(row.budget)
            .build();
        match probe.and_then(|b| p.dry_run_with_budget(&items, &b)) {
            Ok(report) => {
                let mut expected = positions(&items, &report);
                expected.sort_unstable();
                assert_eq!(row.included, expected, "b = {}", row.budget);
                assert!(row.no_window.is_none());
            }
            Err(e) => {
                assert_eq!(row.no_window.as_ref(), Some(&e), "b = {}", row.budget);
                assert!(row.included.is_empty());
            }
        }
    }
    // b < 10: reserve > max; 10 <= b < 30: pinned 20 > b - 10; from 30 a window.
    assert!(sweep.rows[29].no_window.is_some());
    assert!(sweep.rows[30].no_window.is_none());
}

// ----- exact vs binary on random small inputs ---------------------------------------

#[derive(Debug, Clone)]
struct Case {
    /// (tokens, score, pinned, content id)
    items: Vec<(i64, f64, bool, u8)>,
    knapsack: bool,
    reserve: i64,
    target: usize,
    extra: i64,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=5)
        .prop_flat_map(|n| {
            (
                prop::collection::vec(
                    (
                        0i64..=60,
                        // A few distinct scores, so equal densities and ties happen.
                        prop::sample::select(vec![0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]),
                        prop::bool::weighted(0.1),
                        0u8..6,
                    ),
                    n,
                ),
                any::<bool>(),
                prop::sample::select(vec![0i64, 0, 5, 20]),
                0..n,
                0i64..=150,
            )
        })
        .prop_map(|(items, knapsack, reserve, target, extra)| Case {
            items,
            knapsack,
            reserve,
            target,
            extra,
        })
}

fn build(case: &Case) -> (Pipeline, Vec<ContextItem>) {
    let items: Vec<ContextItem> = case
        .items
        .iter()
        .map(|&(tokens, score, pin, id)| {
            ContextItem::builder(format!("content-{id}"), tokens)
                .future_relevance_hint(score)
                .pinned(pin)
                .build()
                .unwrap()
        })
        .collect();
    let slicer: Arc<dyn Slicer> = if case.knapsack {
        Arc::new(KnapsackSlice::new(1).unwrap())
    } else {
        Arc::new(GreedySlice)
    };
    let budget = ContextBudget::builder(1_000, 1_000)
        .output_reserve(case.reserve)
        .build()
        .unwrap();
    (
        pipeline_with(slicer, budget, OverflowStrategy::Throw, true),
        items,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn exact_is_minimal_verified_and_never_above_binary(case in case()) {
        let (p, items) = build(&case);
        let t = case.target;
        let tokens = items[t].tokens();
        let ceiling = tokens + case.extra;

        let binary = find_min_budget_for(&p, &items, t, ceiling).unwrap();
        let exact = find_min_budget_for_exact(&p, &items, t, ceiling).unwrap();

        // Inclusion at every size of the range, through the public dry run
        // (a failed run means no window: not included).
        let included: Vec<bool> = (tokens..=ceiling)
            .map(|b| dry_run_includes(&p, &items, t, b) == Some(true))
            .collect();
        let first = included.iter().position(|&x| x).map(|k| tokens + k as i64);

        // Exact = the first size at which a dry run includes the item.
        prop_assert_eq!(exact, first);
        if let Some(e) = exact {
            prop_assert_eq!(dry_run_includes(&p, &items, t, e), Some(true));
        }
        // Binary: when it answers, the answer is verified and never below exact.
        if let Some(h) = binary {
            prop_assert_eq!(dry_run_includes(&p, &items, t, h), Some(true));
            let e = exact.expect("binary found a size, so exact must too");
            prop_assert!(e <= h, "exact {} > binary {}", e, h);
        }
        // Exact None => binary None (the contrapositive of the above).
        if exact.is_none() {
            prop_assert_eq!(binary, None);
        }
        // On a range where inclusion is monotonic (no gap after the first
        // inclusion), the binary search is exact, except that it never probes
        // its lower bound (S-2).
        let monotonic = match first {
            None => true,
            Some(e) => included[(e - tokens) as usize..].iter().all(|&x| x),
        };
        if monotonic {
            let expected = match exact {
                Some(e) if e == tokens && ceiling > tokens => Some(tokens + 1),
                other => other,
            };
            prop_assert_eq!(binary, expected);
        }
        // The sweep agrees with the same dry runs.
        let sizes: Vec<i64> = (tokens..=ceiling).collect();
        let sweep = budget_sweep(&p, &items, &sizes).unwrap();
        let swept: Vec<bool> = sweep.rows.iter().map(|r| r.included.contains(&t)).collect();
        prop_assert_eq!(swept, included);
    }
}
