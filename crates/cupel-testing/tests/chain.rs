//! The chain plumbing: entry points, fluent chaining, the two forms, the error type.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use common::*;
use cupel_core::{ContextBudget, ContextKind, ExclusionReason, InclusionReason, SelectionReport};
use cupel_testing::{
    Assertion, ReasonKind, SelectionReportAssertionChain, SelectionReportAssertionError,
    SelectionReportAssertions, SelectionReportCheck,
};

/// Included (U-shaped): sys 1.0 | m1 0.7 | m2 0.5 | doc 0.8, tokens 20 + 10 + 10 + 40 = 80.
/// Excluded: tool 0.6 BudgetExceeded{50, 5}, dup 0.2 Deduplicated.
fn sample() -> SelectionReport {
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
        vec![
            exc("tool", 50, &ContextKind::TOOL_OUTPUT, 0.6, budget(50, 5)),
            exc("dup", 10, &ContextKind::MESSAGE, 0.2, dedup("m1")),
        ],
    )
}

#[test]
fn all_thirteen_chain_fluently_in_both_forms() {
    let r = sample();
    let b = ContextBudget::new(100, 90).unwrap(); // 80 / 100 = 0.8
    let chain: SelectionReportAssertionChain<'_> = r
        .should()
        .include_item_with_kind(ContextKind::SYSTEM_PROMPT)
        .include_item_matching(|i| i.reason == InclusionReason::Pinned)
        .include_exactly_n_items_with_kind(ContextKind::MESSAGE, 2)
        .exclude_item_with_reason(ReasonKind::Deduplicated)
        .exclude_item_matching_with_reason(|i| i.content() == "tool", ReasonKind::BudgetExceeded)
        .exclude_item_with_budget_details(|i| i.content() == "tool", 50, 5)
        .have_no_exclusions_for_kind(ContextKind::DOCUMENT)
        .have_at_least_n_exclusions(2)
        .excluded_items_are_sorted_by_score_descending()
        .have_budget_utilization_above(0.8, &b)
        .have_kind_coverage_count(3)
        .place_item_at_edge(|i| i.item.content() == "doc")
        .place_top_n_scored_at_edges(4);
    // The chain still wraps the same report.
    assert!(std::ptr::eq(chain.report(), &r));

    let checked = (|| -> Result<SelectionReportCheck<'_>, SelectionReportAssertionError> {
        r.check()
            .include_item_with_kind(ContextKind::SYSTEM_PROMPT)?
            .include_item_matching(|i| i.reason == InclusionReason::Pinned)?
            .include_exactly_n_items_with_kind(ContextKind::MESSAGE, 2)?
            .exclude_item_with_reason(ReasonKind::Deduplicated)?
            .exclude_item_matching_with_reason(
                |i| i.content() == "tool",
                ReasonKind::BudgetExceeded,
            )?
            .exclude_item_with_budget_details(|i| i.content() == "tool", 50, 5)?
            .have_no_exclusions_for_kind(ContextKind::DOCUMENT)?
            .have_at_least_n_exclusions(2)?
            .excluded_items_are_sorted_by_score_descending()?
            .have_budget_utilization_above(0.8, &b)?
            .have_kind_coverage_count(3)?
            .place_item_at_edge(|i| i.item.content() == "doc")?
            .place_top_n_scored_at_edges(4)
    })()
    .unwrap();
    assert!(std::ptr::eq(checked.report(), &r));
}

#[test]
fn check_stops_at_the_first_failure() {
    let r = sample();
    let mut later_ran = false;
    let res = r.check().have_at_least_n_exclusions(3).and_then(|c| {
        c.include_item_matching(|_| {
            later_ran = true;
            true
        })
    });
    let err = res.unwrap_err();
    assert_eq!(err.assertion, Assertion::HaveAtLeastNExclusions);
    assert_eq!(
        err.message,
        "HaveAtLeastNExclusions(3) failed: expected at least 3 excluded items, but Excluded had 2."
    );
    assert!(!later_ran);
}

#[test]
fn should_panics_at_the_first_failure_in_a_chain() {
    let r = sample();
    let msg = panic_message(|| {
        let _ = r
            .should()
            .have_at_least_n_exclusions(1)
            .have_kind_coverage_count(5)
            .have_at_least_n_exclusions(9);
    });
    assert_eq!(
        msg,
        "HaveKindCoverageCount(5) failed: expected at least 5 distinct ContextKind values in \
         Included, but found 3: [SystemPrompt, Message, Document]. \
         [assertion: have_kind_coverage_count]"
    );
}

#[test]
fn the_two_chains_convert_into_each_other() {
    let r = sample();
    let should = SelectionReportAssertionChain::new(&r);
    assert!(std::ptr::eq(should.check().report(), &r));
    let check = SelectionReportCheck::new(&r);
    assert!(std::ptr::eq(check.should().report(), &r));
    // Passing assertions leave the report as it was.
    let before = r.clone();
    let _ = r
        .should()
        .have_at_least_n_exclusions(0)
        .place_top_n_scored_at_edges(0);
    assert_eq!(r, before);
}

#[test]
fn the_error_is_a_std_error_that_displays_its_message() {
    let r = sample();
    let err = r
        .check()
        .include_item_with_kind(ContextKind::MEMORY)
        .unwrap_err();
    let as_std: &dyn std::error::Error = &err;
    assert_eq!(
        as_std.to_string(),
        "IncludeItemWithKind(Memory) failed: Included contained 0 items with Kind=Memory. \
         Included had 4 items with kinds: [SystemPrompt, Message, Document]. \
         [assertion: include_item_with_kind]"
    );
    assert!(as_std.source().is_none());
    assert_eq!(err.clone(), err);
    assert_eq!(err.assertion.name(), "IncludeItemWithKind");
    assert!(err.message.starts_with(err.assertion.name()));
}

#[test]
fn every_message_starts_with_its_assertion_name() {
    let r = report(vec![], vec![]);
    let b = ContextBudget::new(10, 10).unwrap();
    let unsorted = report(vec![], excluded_scored(&[0.1, 0.2]));
    let errors = [
        r.check()
            .include_item_with_kind(ContextKind::MESSAGE)
            .unwrap_err(),
        r.check().include_item_matching(|_| true).unwrap_err(),
        r.check()
            .include_exactly_n_items_with_kind(ContextKind::MESSAGE, 1)
            .unwrap_err(),
        r.check()
            .exclude_item_with_reason(ReasonKind::Filtered)
            .unwrap_err(),
        r.check()
            .exclude_item_matching_with_reason(|_| true, ReasonKind::Filtered)
            .unwrap_err(),
        r.check()
            .exclude_item_with_budget_details(|_| true, 1, 1)
            .unwrap_err(),
        unsorted
            .check()
            .have_no_exclusions_for_kind(ContextKind::MESSAGE)
            .unwrap_err(),
        r.check().have_at_least_n_exclusions(1).unwrap_err(),
        unsorted
            .check()
            .excluded_items_are_sorted_by_score_descending()
            .unwrap_err(),
        r.check()
            .have_budget_utilization_above(0.5, &b)
            .unwrap_err(),
        r.check().have_kind_coverage_count(1).unwrap_err(),
        r.check().place_item_at_edge(|_| true).unwrap_err(),
        r.check().place_top_n_scored_at_edges(1).unwrap_err(),
    ];
    for (err, expected) in errors.iter().zip(Assertion::ALL) {
        assert_eq!(err.assertion, expected);
        assert!(err.message.starts_with(expected.name()), "{}", err.message);
        assert!(err.message.contains(" failed: "), "{}", err.message);
    }
}

#[test]
fn reason_kind_and_full_values_are_interchangeable() {
    let r = sample();
    passes!(r, c => c.exclude_item_with_reason(ReasonKind::BudgetExceeded));
    passes!(r, c => c.exclude_item_with_reason(ExclusionReason::from(ReasonKind::BudgetExceeded)));
    passes!(r, c => c.exclude_item_matching_with_reason(|i| i.content() == "dup", dedup("x")));
}

#[test]
fn have_no_partial_groups_catches_split_and_scattered_groups() {
    use cupel_core::{ContextItem, ExcludedItem, IncludedItem};
    let g = |c: &str| ContextItem::builder(c, 1).group("g").build().unwrap();
    let plain = ContextItem::new("plain", 1).unwrap();
    let inc = |item: ContextItem| IncludedItem::new(item, 0.5, InclusionReason::Scored);
    // Whole and adjacent: passes.
    let ok = {
        let mut r = SelectionReport::default();
        r.included = vec![inc(plain.clone()), inc(g("call")), inc(g("result"))];
        r
    };
    ok.should().have_no_partial_groups();
    // One member excluded: partial.
    let split = {
        let mut r = SelectionReport::default();
        r.included = vec![inc(g("call"))];
        r.excluded = vec![ExcludedItem::new(
            g("result"),
            0.4,
            ExclusionReason::BudgetExceeded {
                item_tokens: 1,
                available_tokens: 0,
            },
        )];
        r
    };
    let err = split.check().have_no_partial_groups().unwrap_err();
    assert_eq!(err.assertion, Assertion::HaveNoPartialGroups);
    assert_eq!(
        err.message,
        "HaveNoPartialGroups failed: group \"g\" has 1 member(s) in Included and 1 in Excluded: [\"result\"]."
    );
    // Not adjacent.
    let scattered = {
        let mut r = SelectionReport::default();
        r.included = vec![inc(g("call")), inc(plain), inc(g("result"))];
        r
    };
    let err = scattered.check().have_no_partial_groups().unwrap_err();
    assert_eq!(
        err.message,
        "HaveNoPartialGroups failed: the members of group \"g\" are not adjacent in Included: positions [0, 2]."
    );
}
