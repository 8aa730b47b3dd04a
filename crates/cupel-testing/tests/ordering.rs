//! Patterns 12-13: PlaceItemAtEdge, PlaceTopNScoredAtEdges.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use common::*;
use cupel_core::{ContextKind, InclusionReason, SelectionReport};
use cupel_testing::{Assertion, SelectionReportAssertions};

fn empty() -> SelectionReport {
    report(vec![], vec![])
}

/// U-shaped order of sys 1.0, doc 0.8, m1 0.7, m2 0.5 -> [sys, m1, m2, doc].
fn u_shaped_four() -> SelectionReport {
    report(
        vec![
            inc_r(
                "sys",
                20,
                &ContextKind::SYSTEM_PROMPT,
                1.0,
                InclusionReason::Pinned,
            ),
            inc("m1", 10, &ContextKind::MESSAGE, 0.7),
            inc("m2", 10, &ContextKind::MESSAGE, 0.5),
            inc("doc", 40, &ContextKind::DOCUMENT, 0.8),
        ],
        vec![],
    )
}

// ---- 12. PlaceItemAtEdge ---------------------------------------------------

#[test]
fn place_item_at_edge_passes_at_first_or_last_position() {
    let r = u_shaped_four();
    passes!(r, c => c.place_item_at_edge(|i| i.item.content() == "sys"));
    passes!(r, c => c.place_item_at_edge(|i| i.item.content() == "doc"));
    // Predicate over the whole IncludedItem: the pinned one.
    passes!(r, c => c.place_item_at_edge(|i| i.reason == InclusionReason::Pinned));
    // Matching both a middle and an edge item is fine.
    passes!(r, c => c.place_item_at_edge(|i| i.score >= 0.7));
}

#[test]
fn place_item_at_edge_single_item_is_both_edges() {
    let r = report(scored(&[0.4]), vec![]);
    passes!(r, c => c.place_item_at_edge(|i| i.item.content() == "i0"));
    fails!(
        r,
        c => c.place_item_at_edge(|i| i.item.content() == "other"),
        Assertion::PlaceItemAtEdge,
        "PlaceItemAtEdge failed: no item in Included matched the predicate."
    );
}

#[test]
fn place_item_at_edge_reports_the_first_non_edge_match() {
    fails!(
        u_shaped_four(),
        c => c.place_item_at_edge(|i| i.item.content() == "m2"),
        Assertion::PlaceItemAtEdge,
        "PlaceItemAtEdge failed: item matching predicate was at index 2 (not at edge). \
         Edge positions: 0 and 3. Included had 4 items."
    );
    // m1 (index 1) and m2 (index 2) both match; the first is reported.
    fails!(
        u_shaped_four(),
        c => c.place_item_at_edge(|i| *i.item.kind() == ContextKind::MESSAGE),
        Assertion::PlaceItemAtEdge,
        "PlaceItemAtEdge failed: item matching predicate was at index 1 (not at edge). \
         Edge positions: 0 and 3. Included had 4 items."
    );
}

#[test]
fn place_item_at_edge_position_decides_not_score() {
    // i1 ties with the last item's score but sits in the middle.
    fails!(
        report(scored(&[0.9, 0.8, 0.8]), vec![]),
        c => c.place_item_at_edge(|i| i.item.content() == "i1"),
        Assertion::PlaceItemAtEdge,
        "PlaceItemAtEdge failed: item matching predicate was at index 1 (not at edge). \
         Edge positions: 0 and 2. Included had 3 items."
    );
}

#[test]
fn place_item_at_edge_fails_on_empty_or_no_match() {
    let msg = "PlaceItemAtEdge failed: no item in Included matched the predicate.";
    fails!(empty(), c => c.place_item_at_edge(|_| true), Assertion::PlaceItemAtEdge, msg);
    fails!(
        u_shaped_four(),
        c => c.place_item_at_edge(|i| i.score > 1.0),
        Assertion::PlaceItemAtEdge,
        msg
    );
}

#[test]
fn place_item_at_edge_runs_the_predicate_once_per_item() {
    let r = u_shaped_four();
    let mut seen = Vec::new();
    let res = r.check().place_item_at_edge(|i| {
        seen.push(i.item.content().to_string());
        false
    });
    assert!(res.is_err());
    // Edges first, then the inner positions in order.
    assert_eq!(seen, ["sys", "doc", "m1", "m2"]);
}

// ---- 13. PlaceTopNScoredAtEdges -------------------------------------------

/// The specification's U-shaped example: A..G scored 0.9..0.3, placed
/// [A, C, E, G, F, D, B].
fn spec_example() -> SelectionReport {
    let kinds = [
        ("A", 0.9),
        ("C", 0.7),
        ("E", 0.5),
        ("G", 0.3),
        ("F", 0.4),
        ("D", 0.6),
        ("B", 0.8),
    ];
    report(
        kinds
            .iter()
            .map(|&(c, s)| inc(c, 10, &ContextKind::MESSAGE, s))
            .collect(),
        vec![],
    )
}

#[test]
fn top_n_passes_for_every_n_on_a_u_shaped_list() {
    // Edge positions for 7 items: 0, 6, 1, 5, 2, 4, 3 holding 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3.
    let r = spec_example();
    for n in 0..=7 {
        passes!(r, c => c.place_top_n_scored_at_edges(n));
    }
}

#[test]
fn top_n_zero_passes_even_on_empty() {
    passes!(empty(), c => c.place_top_n_scored_at_edges(0));
}

#[test]
fn top_n_single_item() {
    let r = report(scored(&[0.2]), vec![]);
    passes!(r, c => c.place_top_n_scored_at_edges(1));
}

#[test]
fn top_n_fails_when_n_exceeds_the_count() {
    fails!(
        empty(),
        c => c.place_top_n_scored_at_edges(1),
        Assertion::PlaceTopNScoredAtEdges,
        "PlaceTopNScoredAtEdges(1) failed: expected at least 1 items in Included to fill 1 edge \
         positions, but Included had 0."
    );
    fails!(
        spec_example(),
        c => c.place_top_n_scored_at_edges(8),
        Assertion::PlaceTopNScoredAtEdges,
        "PlaceTopNScoredAtEdges(8) failed: expected at least 8 items in Included to fill 8 edge \
         positions, but Included had 7."
    );
}

#[test]
fn top_n_fails_on_score_sorted_order() {
    // [0.9, 0.8, 0.7, 0.6]: edges 0, 3 should hold 0.9, 0.8; position 3 holds 0.6.
    // Rank 1 (0.8) is i1 at index 1 -> 1 failure.
    fails!(
        report(scored(&[0.9, 0.8, 0.7, 0.6]), vec![]),
        c => c.place_top_n_scored_at_edges(2),
        Assertion::PlaceTopNScoredAtEdges,
        "PlaceTopNScoredAtEdges(2) failed: 1 of the top-2 scored items were not at expected edge \
         positions. Top-2 items (by score): [(kind=Message, score=0.9, idx=0), \
         (kind=Message, score=0.8, idx=1)]. Expected edge positions: [0, 3]."
    );
}

#[test]
fn top_n_checks_membership_not_edge_order() {
    // The repro: included [B 0.8, C 0.5, A 0.9], n = 2. The edges are
    // positions 0 and 2; the top two are A (0.9, at 2) and B (0.8, at 0): both
    // on an edge, so it passes although edge 0 holds the runner-up.
    let r = report(
        vec![
            inc("B", 10, &ContextKind::MESSAGE, 0.8),
            inc("C", 10, &ContextKind::MESSAGE, 0.5),
            inc("A", 10, &ContextKind::MESSAGE, 0.9),
        ],
        vec![],
    );
    passes!(r, c => c.place_top_n_scored_at_edges(2));
    // n = 1: the single edge is position 0 and the best item (A) is at 2 -> 1 failure.
    fails!(
        r,
        c => c.place_top_n_scored_at_edges(1),
        Assertion::PlaceTopNScoredAtEdges,
        "PlaceTopNScoredAtEdges(1) failed: 1 of the top-1 scored items were not at expected edge \
         positions. Top-1 items (by score): [(kind=Message, score=0.9, idx=2)]. \
         Expected edge positions: [0]."
    );
    // Same with the top two swapped across four items: 0.9 at 3, 0.8 at 0, edges 0 and 3.
    passes!(report(scored(&[0.8, 0.7, 0.6, 0.9]), vec![]), c => c.place_top_n_scored_at_edges(2));
}

#[test]
fn top_n_equal_to_count_puts_every_item_on_an_edge() {
    // With n = count every position is one of the first n edge positions, so
    // membership holds for any order (spec/10: the exact edge-in order is
    // checked by asserting for every n from 1 up).
    passes!(report(scored(&[0.9, 0.7, 0.6, 0.8]), vec![]), c => c.place_top_n_scored_at_edges(4));
    let r = report(scored(&[0.9, 0.6, 0.7, 0.8]), vec![]);
    passes!(r, c => c.place_top_n_scored_at_edges(4));
    // The outer two are right, so n = 2 passes too: edges {0, 3} hold 0.9 and 0.8.
    passes!(r, c => c.place_top_n_scored_at_edges(2));
    // n = 3: edges {0, 3, 1}; the top three are 0.9 (idx 0), 0.8 (idx 3) and
    // 0.7 (idx 2, not an edge) -> 1 failure.
    fails!(
        r,
        c => c.place_top_n_scored_at_edges(3),
        Assertion::PlaceTopNScoredAtEdges,
        "PlaceTopNScoredAtEdges(3) failed: 1 of the top-3 scored items were not at expected edge \
         positions. Top-3 items (by score): [(kind=Message, score=0.9, idx=0), \
         (kind=Message, score=0.8, idx=3), (kind=Message, score=0.7, idx=2)]. \
         Expected edge positions: [0, 3, 1]."
    );
}

#[test]
fn top_n_any_item_tied_with_the_nth_score_may_fill_the_nth_edge() {
    // Scores 0.9, 0.7 and three 0.5s; n = 3, edges 0, 4, 1 need 0.9, 0.7, 0.5.
    // Whichever 0.5 sits at position 1 is acceptable.
    for placed in [[0.9, 0.5, 0.5, 0.5, 0.7], [0.9, 0.5, 0.3, 0.5, 0.7]] {
        passes!(report(scored(&placed), vec![]), c => c.place_top_n_scored_at_edges(3));
    }
    // Ties above the boundary are interchangeable too (two 0.9s at edges 0 and 3).
    passes!(report(scored(&[0.9, 0.1, 0.2, 0.9]), vec![]), c => c.place_top_n_scored_at_edges(2));
}

#[test]
fn top_n_fails_when_the_nth_edge_is_below_the_tied_score() {
    // [0.9, 0.3, 0.5, 0.5, 0.7], n = 3: edges 0, 4, 1 need 0.9, 0.7, 0.5; position 1 holds 0.3.
    // Rank 2 is the first 0.5 by position: idx 2.
    fails!(
        report(scored(&[0.9, 0.3, 0.5, 0.5, 0.7]), vec![]),
        c => c.place_top_n_scored_at_edges(3),
        Assertion::PlaceTopNScoredAtEdges,
        "PlaceTopNScoredAtEdges(3) failed: 1 of the top-3 scored items were not at expected edge \
         positions. Top-3 items (by score): [(kind=Message, score=0.9, idx=0), \
         (kind=Message, score=0.7, idx=4), (kind=Message, score=0.5, idx=2)]. \
         Expected edge positions: [0, 4, 1]."
    );
}

#[test]
fn top_n_names_tied_items_already_at_a_correct_edge() {
    // [0.5, 0.5, 0.9, 0.5], n = 2: edges {0, 3}. The top two are 0.9 (idx 2, not an
    // edge) and one of the three tied 0.5s; two of them (idx 0 and 3) are on an edge,
    // so the tie is filled by the first of those in rank order, idx 0 -> 1 failure
    // (the 0.9), and the 0.5 off the edges (idx 1) is never named.
    fails!(
        report(scored(&[0.5, 0.5, 0.9, 0.5]), vec![]),
        c => c.place_top_n_scored_at_edges(2),
        Assertion::PlaceTopNScoredAtEdges,
        "PlaceTopNScoredAtEdges(2) failed: 1 of the top-2 scored items were not at expected edge \
         positions. Top-2 items (by score): [(kind=Message, score=0.9, idx=2), \
         (kind=Message, score=0.5, idx=0)]. Expected edge positions: [0, 3]."
    );
    // [0.3, 0.5, 0.9, 0.5, 0.7], n = 4: edges {0, 4, 1, 3}; top four 0.9 (idx 2),
    // 0.7 (idx 4), 0.5 (idx 1), 0.5 (idx 3): only the 0.9 is off the edges -> 1 failure.
    fails!(
        report(scored(&[0.3, 0.5, 0.9, 0.5, 0.7]), vec![]),
        c => c.place_top_n_scored_at_edges(4),
        Assertion::PlaceTopNScoredAtEdges,
        "PlaceTopNScoredAtEdges(4) failed: 1 of the top-4 scored items were not at expected edge \
         positions. Top-4 items (by score): [(kind=Message, score=0.9, idx=2), \
         (kind=Message, score=0.7, idx=4), (kind=Message, score=0.5, idx=1), \
         (kind=Message, score=0.5, idx=3)]. Expected edge positions: [0, 4, 1, 3]."
    );
}

#[test]
fn top_n_all_equal_scores_pass_in_any_order() {
    let r = report(scored(&[0.5, 0.5, 0.5, 0.5, 0.5]), vec![]);
    for n in 0..=5 {
        passes!(r, c => c.place_top_n_scored_at_edges(n));
    }
}

#[test]
fn top_n_nan_ranks_lowest_and_signed_zeros_tie() {
    // [0.9, NaN, 0.5], n = 3: every position is an edge.
    passes!(report(scored(&[0.9, f64::NAN, 0.5]), vec![]), c => c.place_top_n_scored_at_edges(3));
    // NaN at an edge where a number belongs fails: edges {0, 2}, top two 0.9 (idx 0)
    // and 0.5 (idx 1, not an edge).
    fails!(
        report(scored(&[0.9, 0.5, f64::NAN]), vec![]),
        c => c.place_top_n_scored_at_edges(2),
        Assertion::PlaceTopNScoredAtEdges,
        "PlaceTopNScoredAtEdges(2) failed: 1 of the top-2 scored items were not at expected edge \
         positions. Top-2 items (by score): [(kind=Message, score=0.9, idx=0), \
         (kind=Message, score=0.5, idx=1)]. Expected edge positions: [0, 2]."
    );
    passes!(report(scored(&[-0.0, 0.0]), vec![]), c => c.place_top_n_scored_at_edges(2));
}

#[test]
fn top_n_shows_kinds_of_the_named_items() {
    // [msg 0.3, doc 0.5, sys 1.0, mem 0.1], n = 2: edges {0, 3}; the top two are
    // sys (idx 2) and doc (idx 1), neither on an edge -> 2 failures.
    let r = report(
        vec![
            inc("msg", 10, &ContextKind::MESSAGE, 0.3),
            inc("doc", 10, &ContextKind::DOCUMENT, 0.5),
            inc_r(
                "sys",
                10,
                &ContextKind::SYSTEM_PROMPT,
                1.0,
                InclusionReason::Pinned,
            ),
            inc("mem", 10, &ContextKind::MEMORY, 0.1),
        ],
        vec![],
    );
    fails!(
        r,
        c => c.place_top_n_scored_at_edges(2),
        Assertion::PlaceTopNScoredAtEdges,
        "PlaceTopNScoredAtEdges(2) failed: 2 of the top-2 scored items were not at expected edge \
         positions. Top-2 items (by score): [(kind=SystemPrompt, score=1, idx=2), \
         (kind=Document, score=0.5, idx=1)]. Expected edge positions: [0, 3]."
    );
}
