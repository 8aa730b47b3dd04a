//! Patterns 8-11: HaveAtLeastNExclusions, ExcludedItemsAreSortedByScoreDescending,
//! HaveBudgetUtilizationAbove, HaveKindCoverageCount.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use common::*;
use cupel_core::{ContextBudget, ContextKind, SelectionReport};
use cupel_testing::Assertion;

fn empty() -> SelectionReport {
    report(vec![], vec![])
}

fn excluded_with(scores: &[f64]) -> SelectionReport {
    report(vec![], excluded_scored(scores))
}

// ---- 8. HaveAtLeastNExclusions --------------------------------------------

#[test]
fn have_at_least_n_exclusions_passes_at_and_below_the_count() {
    passes!(empty(), c => c.have_at_least_n_exclusions(0));
    let r = excluded_with(&[0.5, 0.4]);
    passes!(r, c => c.have_at_least_n_exclusions(0));
    passes!(r, c => c.have_at_least_n_exclusions(1));
    passes!(r, c => c.have_at_least_n_exclusions(2));
}

#[test]
fn have_at_least_n_exclusions_fails_on_empty_with_positive_n() {
    fails!(
        empty(),
        c => c.have_at_least_n_exclusions(1),
        Assertion::HaveAtLeastNExclusions,
        "HaveAtLeastNExclusions(1) failed: expected at least 1 excluded items, but Excluded had 0."
    );
}

#[test]
fn have_at_least_n_exclusions_fails_above_the_count() {
    fails!(
        excluded_with(&[0.5, 0.4]),
        c => c.have_at_least_n_exclusions(3),
        Assertion::HaveAtLeastNExclusions,
        "HaveAtLeastNExclusions(3) failed: expected at least 3 excluded items, but Excluded had 2."
    );
}

// ---- 9. ExcludedItemsAreSortedByScoreDescending ---------------------------

#[test]
fn sorted_passes_on_empty_single_ties_and_signed_zero() {
    for scores in [
        &[][..],
        &[0.3],
        &[0.9, 0.5, 0.5, 0.1],
        &[1.0, 1.0, 1.0],
        // -0.0 == 0.0: neither order is a violation.
        &[0.0, -0.0, 0.0],
        &[-0.5, -1.0],
    ] {
        passes!(excluded_with(scores), c => c.excluded_items_are_sorted_by_score_descending());
    }
}

#[test]
fn sorted_treats_nan_as_lowest_like_the_pipeline() {
    passes!(excluded_with(&[0.5, 0.0, f64::NAN, f64::NAN]), c => c.excluded_items_are_sorted_by_score_descending());
    fails!(
        excluded_with(&[f64::NAN, 0.5]),
        c => c.excluded_items_are_sorted_by_score_descending(),
        Assertion::ExcludedItemsAreSortedByScoreDescending,
        "ExcludedItemsAreSortedByScoreDescending failed: item at index 1 (score=0.5) is higher than \
         item at index 0 (score=NaN). Expected non-increasing scores."
    );
}

#[test]
fn sorted_fails_at_the_first_violation() {
    // Pairs: (0.9,0.5) ok, (0.5,0.7) violation at i=1, (0.7,0.8) also one but later.
    fails!(
        excluded_with(&[0.9, 0.5, 0.7, 0.8]),
        c => c.excluded_items_are_sorted_by_score_descending(),
        Assertion::ExcludedItemsAreSortedByScoreDescending,
        "ExcludedItemsAreSortedByScoreDescending failed: item at index 2 (score=0.7) is higher than \
         item at index 1 (score=0.5). Expected non-increasing scores."
    );
    fails!(
        excluded_with(&[0.2, 0.3]),
        c => c.excluded_items_are_sorted_by_score_descending(),
        Assertion::ExcludedItemsAreSortedByScoreDescending,
        "ExcludedItemsAreSortedByScoreDescending failed: item at index 1 (score=0.3) is higher than \
         item at index 0 (score=0.2). Expected non-increasing scores."
    );
}

// ---- 10. HaveBudgetUtilizationAbove ---------------------------------------

/// Included tokens 300 + 200 + 300 = 800.
fn eight_hundred() -> SelectionReport {
    report(
        vec![
            inc("a", 300, &ContextKind::MESSAGE, 0.9),
            inc("b", 200, &ContextKind::MESSAGE, 0.8),
            inc("c", 300, &ContextKind::DOCUMENT, 0.7),
        ],
        excluded_scored(&[0.5]),
    )
}

#[test]
fn utilization_passes_at_or_above_threshold_exactly() {
    let b = ContextBudget::new(1_000, 800).unwrap();
    let r = eight_hundred();
    // 800 / 1000 = 0.8; IEEE division is correctly rounded, so it equals the literal 0.8
    // and `>=` passes with no epsilon.
    passes!(r, c => c.have_budget_utilization_above(0.8, &b));
    passes!(r, c => c.have_budget_utilization_above(0.799, &b));
    passes!(r, c => c.have_budget_utilization_above(0.0, &b));
    passes!(r, c => c.have_budget_utilization_above(-1.0, &b));
}

#[test]
fn utilization_fails_below_threshold_with_six_decimals() {
    let b = ContextBudget::new(1_000, 800).unwrap();
    fails!(
        eight_hundred(),
        c => c.have_budget_utilization_above(0.85, &b),
        Assertion::HaveBudgetUtilizationAbove,
        "HaveBudgetUtilizationAbove(0.85) failed: computed utilization was 0.800000 \
         (includedTokens=800, budget.MaxTokens=1000)."
    );
    // The smallest f64 above 0.8 already fails: no epsilon.
    let just_above = f64::from_bits(0.8f64.to_bits() + 1);
    fails!(
        eight_hundred(),
        c => c.have_budget_utilization_above(just_above, &b),
        Assertion::HaveBudgetUtilizationAbove,
        "HaveBudgetUtilizationAbove(0.8000000000000002) failed: computed utilization was 0.800000 \
         (includedTokens=800, budget.MaxTokens=1000)."
    );
}

#[test]
fn utilization_divides_by_max_tokens_not_target() {
    // max 1000, target 500, 600 included: 600/1000 = 0.6 (600/500 would be 1.2).
    let b = ContextBudget::new(1_000, 500).unwrap();
    let r = report(vec![inc("a", 600, &ContextKind::MESSAGE, 0.5)], vec![]);
    passes!(r, c => c.have_budget_utilization_above(0.6, &b));
    fails!(
        r,
        c => c.have_budget_utilization_above(1.0, &b),
        Assertion::HaveBudgetUtilizationAbove,
        "HaveBudgetUtilizationAbove(1) failed: computed utilization was 0.600000 \
         (includedTokens=600, budget.MaxTokens=1000)."
    );
}

#[test]
fn utilization_of_empty_included_is_zero() {
    let b = ContextBudget::new(1_000, 800).unwrap();
    passes!(empty(), c => c.have_budget_utilization_above(0.0, &b));
    fails!(
        empty(),
        c => c.have_budget_utilization_above(0.1, &b),
        Assertion::HaveBudgetUtilizationAbove,
        "HaveBudgetUtilizationAbove(0.1) failed: computed utilization was 0.000000 \
         (includedTokens=0, budget.MaxTokens=1000)."
    );
}

#[test]
fn utilization_threshold_above_one_passes_only_when_over_budget() {
    let b = ContextBudget::new(1_000, 800).unwrap();
    // Hand-built over-budget report: 1200 / 1000 = 1.2 >= 1.1.
    let over = report(vec![inc("big", 1_200, &ContextKind::MESSAGE, 0.5)], vec![]);
    passes!(over, c => c.have_budget_utilization_above(1.1, &b));
    fails!(
        eight_hundred(),
        c => c.have_budget_utilization_above(1.5, &b),
        Assertion::HaveBudgetUtilizationAbove,
        "HaveBudgetUtilizationAbove(1.5) failed: computed utilization was 0.800000 \
         (includedTokens=800, budget.MaxTokens=1000)."
    );
}

#[test]
fn utilization_rounds_to_six_decimals() {
    // 2 / 3 = 0.6666666... -> "0.666667"; 1 / 3 -> "0.333333".
    let b = ContextBudget::new(3, 3).unwrap();
    let two = report(vec![inc("x", 2, &ContextKind::MESSAGE, 0.5)], vec![]);
    fails!(
        two,
        c => c.have_budget_utilization_above(0.7, &b),
        Assertion::HaveBudgetUtilizationAbove,
        "HaveBudgetUtilizationAbove(0.7) failed: computed utilization was 0.666667 \
         (includedTokens=2, budget.MaxTokens=3)."
    );
    let one = report(vec![inc("x", 1, &ContextKind::MESSAGE, 0.5)], vec![]);
    fails!(
        one,
        c => c.have_budget_utilization_above(0.5, &b),
        Assertion::HaveBudgetUtilizationAbove,
        "HaveBudgetUtilizationAbove(0.5) failed: computed utilization was 0.333333 \
         (includedTokens=1, budget.MaxTokens=3)."
    );
}

#[test]
fn utilization_with_zero_max_tokens_is_zero() {
    // D-13: max_tokens == 0 is a valid budget; utilisation is defined as 0.0.
    let b = ContextBudget::new(0, 0).unwrap();
    passes!(empty(), c => c.have_budget_utilization_above(0.0, &b));
    let zero_tokens = report(vec![inc("z", 0, &ContextKind::MESSAGE, 0.5)], vec![]);
    fails!(
        zero_tokens,
        c => c.have_budget_utilization_above(0.5, &b),
        Assertion::HaveBudgetUtilizationAbove,
        "HaveBudgetUtilizationAbove(0.5) failed: computed utilization was 0.000000 \
         (includedTokens=0, budget.MaxTokens=0)."
    );
    // Even with tokens included (a hand-built report), no division by zero happens.
    let some = report(vec![inc("s", 10, &ContextKind::MESSAGE, 0.5)], vec![]);
    fails!(
        some,
        c => c.have_budget_utilization_above(0.5, &b),
        Assertion::HaveBudgetUtilizationAbove,
        "HaveBudgetUtilizationAbove(0.5) failed: computed utilization was 0.000000 \
         (includedTokens=10, budget.MaxTokens=0)."
    );
}

#[test]
fn utilization_nan_threshold_never_passes() {
    let b = ContextBudget::new(1_000, 800).unwrap();
    fails!(
        eight_hundred(),
        c => c.have_budget_utilization_above(f64::NAN, &b),
        Assertion::HaveBudgetUtilizationAbove,
        "HaveBudgetUtilizationAbove(NaN) failed: computed utilization was 0.800000 \
         (includedTokens=800, budget.MaxTokens=1000)."
    );
}

#[test]
fn utilization_token_sum_does_not_overflow() {
    // Two items of 2^62 tokens sum to 2^63 = 9223372036854775808, one past i64::MAX.
    // As f64, 2^63 / (2^63 - 1) rounds to 1.0.
    let b = ContextBudget::new(i64::MAX, 0).unwrap();
    let half = 1i64 << 62;
    let r = report(
        vec![
            inc("a", half, &ContextKind::MESSAGE, 0.5),
            inc("b", half, &ContextKind::MESSAGE, 0.4),
        ],
        vec![],
    );
    passes!(r, c => c.have_budget_utilization_above(1.0, &b));
    fails!(
        r,
        c => c.have_budget_utilization_above(2.0, &b),
        Assertion::HaveBudgetUtilizationAbove,
        "HaveBudgetUtilizationAbove(2) failed: computed utilization was 1.000000 \
         (includedTokens=9223372036854775808, budget.MaxTokens=9223372036854775807)."
    );
}

// ---- 11. HaveKindCoverageCount --------------------------------------------

/// Kinds: Message, Document, message (same as Message), SystemPrompt -> 3 distinct.
fn three_kinds() -> SelectionReport {
    report(
        vec![
            inc("a", 1, &ContextKind::MESSAGE, 0.9),
            inc("b", 1, &ContextKind::DOCUMENT, 0.8),
            inc("c", 1, &kind("message"), 0.7),
            inc("d", 1, &ContextKind::SYSTEM_PROMPT, 0.6),
        ],
        vec![],
    )
}

#[test]
fn kind_coverage_passes_up_to_the_distinct_count() {
    passes!(empty(), c => c.have_kind_coverage_count(0));
    let r = three_kinds();
    for n in 0..=3 {
        passes!(r, c => c.have_kind_coverage_count(n));
    }
}

#[test]
fn kind_coverage_fails_above_the_distinct_count() {
    fails!(
        three_kinds(),
        c => c.have_kind_coverage_count(4),
        Assertion::HaveKindCoverageCount,
        "HaveKindCoverageCount(4) failed: expected at least 4 distinct ContextKind values in \
         Included, but found 3: [Message, Document, SystemPrompt]."
    );
}

#[test]
fn kind_coverage_fails_on_empty_included() {
    fails!(
        empty(),
        c => c.have_kind_coverage_count(1),
        Assertion::HaveKindCoverageCount,
        "HaveKindCoverageCount(1) failed: expected at least 1 distinct ContextKind values in \
         Included, but found 0: []."
    );
}

#[test]
fn kind_coverage_of_a_single_kind_is_one() {
    let r = report(scored(&[0.9, 0.5, 0.1]), vec![]);
    passes!(r, c => c.have_kind_coverage_count(1));
    fails!(
        r,
        c => c.have_kind_coverage_count(2),
        Assertion::HaveKindCoverageCount,
        "HaveKindCoverageCount(2) failed: expected at least 2 distinct ContextKind values in \
         Included, but found 1: [Message]."
    );
}
