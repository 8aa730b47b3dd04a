//! Placer invariants on random merged lists.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cupel_core::{ContextItem, Placer, ScoredItem, score_cmp_desc};
use cupel_placers::{ChronologicalPlacer, UShapedPlacer};
use proptest::prelude::*;

fn items(spec: &[(Option<i64>, f64)]) -> Vec<ContextItem> {
    spec.iter()
        .enumerate()
        .map(|(i, (ts, _))| {
            ContextItem::builder(format!("i{i}"), 1)
                .timestamp_opt(ts.map(|t| chrono::DateTime::from_timestamp(t, 0).unwrap()))
                .build()
                .unwrap()
        })
        .collect()
}

fn is_permutation(order: &[usize], n: usize) -> bool {
    let mut seen = vec![false; n];
    order.len() == n
        && order
            .iter()
            .all(|&i| i < n && !std::mem::replace(&mut seen[i], true))
}

proptest! {
    #[test]
    fn chronological_is_a_stable_timestamp_sort(
        spec in prop::collection::vec((prop::option::of(0i64..5), -1.0f64..2.0), 0..40)
    ) {
        let items = items(&spec);
        let scored: Vec<_> = items.iter().zip(&spec).map(|(i, (_, s))| ScoredItem::new(i, *s)).collect();
        let order = ChronologicalPlacer.place(&scored);
        prop_assert!(is_permutation(&order, items.len()));
        // Reference: stable sort by (missing, timestamp).
        let mut expected: Vec<usize> = (0..items.len()).collect();
        expected.sort_by_key(|&i| (spec[i].0.is_none(), spec[i].0));
        prop_assert_eq!(order, expected);
    }

    #[test]
    fn u_shaped_fills_edges_inwards_by_rank(
        scores in prop::collection::vec(prop_oneof![Just(0.5), -1.0f64..2.0], 0..40)
    ) {
        let spec: Vec<(Option<i64>, f64)> = scores.iter().map(|s| (None, *s)).collect();
        let items = items(&spec);
        let scored: Vec<_> = items.iter().zip(&scores).map(|(i, s)| ScoredItem::new(i, *s)).collect();
        let order = UShapedPlacer.place(&scored);
        let n = items.len();
        prop_assert!(is_permutation(&order, n));
        let mut ranked: Vec<usize> = (0..n).collect();
        ranked.sort_by(|&a, &b| score_cmp_desc(scores[a], scores[b]));
        // Rank r sits at r/2 from the left (even r) or r/2 from the right (odd r).
        for (r, &idx) in ranked.iter().enumerate() {
            let pos = if r % 2 == 0 { r / 2 } else { n - 1 - r / 2 };
            prop_assert_eq!(order[pos], idx);
        }
    }
}
