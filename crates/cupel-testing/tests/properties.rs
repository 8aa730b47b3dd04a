//! Invariants over generated reports.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cmp::Ordering;

use common::*;
use cupel_core::{SelectionReport, score_cmp_desc};
use cupel_testing::SelectionReportAssertions;
use proptest::prelude::*;

/// Scores from a small pool so ties are frequent; NaN and both zeros included.
fn score() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => prop::sample::select(vec![0.0, -0.0, 0.1, 0.25, 0.5, 0.75, 1.0]),
        1 => Just(f64::NAN),
        2 => -1.0f64..2.0,
    ]
}

/// The U-shaped placer as the specification writes it: rank by score
/// descending (ties by index), even ranks fill from the left, odd from the right.
fn u_shape(scores: &[f64]) -> Vec<f64> {
    let mut ranked: Vec<usize> = (0..scores.len()).collect();
    ranked.sort_by(|&a, &b| score_cmp_desc(scores[a], scores[b]).then(a.cmp(&b)));
    let mut out = vec![0.0; scores.len()];
    let (mut left, mut right) = (0, scores.len());
    for (rank, &i) in ranked.iter().enumerate() {
        if rank % 2 == 0 {
            out[left] = scores[i];
            left += 1;
        } else {
            right -= 1;
            out[right] = scores[i];
        }
    }
    out
}

/// The k-th edge position of a list of `count`: 0, count - 1, 1, count - 2, ...
fn edge(k: usize, count: usize) -> usize {
    if k.is_multiple_of(2) {
        k / 2
    } else {
        count - 1 - k / 2
    }
}

fn included(scores: &[f64]) -> SelectionReport {
    report(scored(scores), vec![])
}

proptest! {
    #[test]
    fn u_shaped_output_passes_top_n_for_every_n(scores in prop::collection::vec(score(), 0..24)) {
        let r = included(&u_shape(&scores));
        for n in 0..=scores.len() {
            prop_assert!(r.check().place_top_n_scored_at_edges(n).is_ok(), "n = {}", n);
        }
        prop_assert!(r.check().place_top_n_scored_at_edges(scores.len() + 1).is_err());
        if !scores.is_empty() {
            // The best score is at an edge.
            let best = r.included.iter().map(|i| i.score).min_by(|a, b| score_cmp_desc(*a, *b)).unwrap();
            prop_assert!(r
                .check()
                .place_item_at_edge(|i| score_cmp_desc(i.score, best) == Ordering::Equal)
                .is_ok());
        }
    }

    #[test]
    fn top_n_passes_iff_the_edges_hold_the_top_n_scores(scores in prop::collection::vec(score(), 0..16)) {
        // Oracle: the scores on the first n edge positions, sorted, are the n best
        // scores (equal scores interchangeable), i.e. each top-n item is on one
        // of those edges in some order.
        let r = included(&scores);
        let count = scores.len();
        let mut best = scores.clone();
        best.sort_by(|a, b| score_cmp_desc(*a, *b));
        for n in 0..=count {
            let mut on_edges: Vec<f64> = (0..n).map(|k| scores[edge(k, count)]).collect();
            on_edges.sort_by(|a, b| score_cmp_desc(*a, *b));
            let expected = on_edges
                .iter()
                .zip(&best[..n])
                .all(|(a, b)| score_cmp_desc(*a, *b) == Ordering::Equal);
            prop_assert_eq!(
                r.check().place_top_n_scored_at_edges(n).is_ok(),
                expected,
                "n = {}, scores = {:?}", n, scores
            );
        }
    }

    #[test]
    fn every_n_up_to_k_passing_means_edge_in_order(scores in prop::collection::vec(score(), 0..16)) {
        // The recipe spec/10 gives for the exact order: assert for n = 1..=k.
        // That holds iff edge position j holds the j-th best score for every j < k.
        let r = included(&scores);
        let count = scores.len();
        let mut best = scores.clone();
        best.sort_by(|a, b| score_cmp_desc(*a, *b));
        for k in 0..=count {
            let all_pass = (1..=k).all(|n| r.check().place_top_n_scored_at_edges(n).is_ok());
            let in_order =
                (0..k).all(|j| score_cmp_desc(scores[edge(j, count)], best[j]) == Ordering::Equal);
            prop_assert_eq!(all_pass, in_order, "k = {}, scores = {:?}", k, scores);
        }
    }

    #[test]
    fn sorted_assertion_agrees_with_the_pipeline_comparator(scores in prop::collection::vec(score(), 0..16)) {
        let r = report(vec![], excluded_scored(&scores));
        let sorted = scores.windows(2).all(|w| score_cmp_desc(w[0], w[1]) != Ordering::Greater);
        prop_assert_eq!(r.check().excluded_items_are_sorted_by_score_descending().is_ok(), sorted);

        let mut fixed = scores.clone();
        fixed.sort_by(|a, b| score_cmp_desc(*a, *b));
        let r = report(vec![], excluded_scored(&fixed));
        prop_assert!(r.check().excluded_items_are_sorted_by_score_descending().is_ok());
    }

    #[test]
    fn both_forms_give_the_same_verdict_and_message(
        scores in prop::collection::vec(score(), 0..10),
        n in 0usize..12,
    ) {
        let r = report(scored(&scores), excluded_scored(&scores));
        let checks = [
            r.check().place_top_n_scored_at_edges(n).err(),
            r.check().have_at_least_n_exclusions(n).err(),
            r.check().have_kind_coverage_count(n).err(),
            r.check().excluded_items_are_sorted_by_score_descending().err(),
        ];
        let runs: [&dyn Fn(); 4] = [
            &|| { let _ = r.should().place_top_n_scored_at_edges(n); },
            &|| { let _ = r.should().have_at_least_n_exclusions(n); },
            &|| { let _ = r.should().have_kind_coverage_count(n); },
            &|| { let _ = r.should().excluded_items_are_sorted_by_score_descending(); },
        ];
        for (check, run) in checks.iter().zip(runs) {
            match check {
                Some(err) => prop_assert_eq!(panic_message(run), err.to_string()),
                None => run(),
            }
        }
    }
}
