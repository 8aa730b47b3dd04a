//! Patterns 4-7: ExcludeItemWithReason, ExcludeItemMatchingWithReason,
//! ExcludeItemWithBudgetDetails, HaveNoExclusionsForKind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use common::*;
use cupel_core::{ContextItem, ContextKind, ExcludedItem, ExclusionReason, SelectionReport};
use cupel_testing::{Assertion, ReasonKind, SelectionReportAssertions};

/// Excluded, score descending:
///   0 tool-a  ToolOutput 0.6  BudgetExceeded{450, 50}
///   1 chat-1  Message    0.5  Deduplicated
///   2 tool-b  ToolOutput 0.4  BudgetExceeded{300, 50}
///   3 chat-2  Message    0.3  PinnedOverride
///   4 chat-3  Message    0.0  NegativeTokens{-5}
fn mixed() -> SelectionReport {
    report(
        vec![inc("kept", 100, &ContextKind::MESSAGE, 0.9)],
        vec![
            exc(
                "tool-a",
                450,
                &ContextKind::TOOL_OUTPUT,
                0.6,
                budget(450, 50),
            ),
            exc("chat-1", 40, &ContextKind::MESSAGE, 0.5, dedup("kept")),
            exc(
                "tool-b",
                300,
                &ContextKind::TOOL_OUTPUT,
                0.4,
                budget(300, 50),
            ),
            exc(
                "chat-2",
                80,
                &ContextKind::MESSAGE,
                0.3,
                ExclusionReason::PinnedOverride {
                    displaced_by: "sys".into(),
                },
            ),
            exc(
                "chat-3",
                -5,
                &ContextKind::MESSAGE,
                0.0,
                ExclusionReason::NegativeTokens { tokens: -5 },
            ),
        ],
    )
}

fn empty() -> SelectionReport {
    report(vec![], vec![])
}

// ---- 4. ExcludeItemWithReason ---------------------------------------------

#[test]
fn exclude_item_with_reason_matches_the_variant_not_the_fields() {
    let r = mixed();
    passes!(r, c => c.exclude_item_with_reason(ReasonKind::BudgetExceeded));
    passes!(r, c => c.exclude_item_with_reason(ReasonKind::NegativeTokens));
    // A full value whose fields match no item still matches by variant.
    passes!(r, c => c.exclude_item_with_reason(budget(1, 2)));
    passes!(r, c => c.exclude_item_with_reason(dedup("something else")));
}

#[test]
fn exclude_item_with_reason_accepts_reserved_and_unknown_variants() {
    let r = report(
        vec![],
        vec![
            exc(
                "f",
                1,
                &ContextKind::MESSAGE,
                0.2,
                ExclusionReason::Filtered {
                    filter_name: "pii".into(),
                },
            ),
            exc(
                "u",
                1,
                &ContextKind::MESSAGE,
                0.1,
                ExclusionReason::Unknown {
                    reason: "Vetoed".into(),
                },
            ),
        ],
    );
    passes!(r, c => c.exclude_item_with_reason(ReasonKind::Filtered));
    passes!(r, c => c.exclude_item_with_reason(ExclusionReason::Unknown { reason: "Vetoed".into() }));
    fails!(
        r,
        c => c.exclude_item_with_reason(ExclusionReason::Unknown { reason: "Other".into() }),
        Assertion::ExcludeItemWithReason,
        "ExcludeItemWithReason(Other) failed: no excluded item had reason Other. \
         Excluded had 2 items with reasons: [Filtered, Vetoed]."
    );
}

#[test]
fn exclude_item_with_reason_fails_on_empty_excluded() {
    fails!(
        empty(),
        c => c.exclude_item_with_reason(ReasonKind::BudgetExceeded),
        Assertion::ExcludeItemWithReason,
        "ExcludeItemWithReason(BudgetExceeded) failed: no excluded item had reason BudgetExceeded. \
         Excluded had 0 items with reasons: []."
    );
}

#[test]
fn exclude_item_with_reason_fails_listing_distinct_reasons_in_first_appearance_order() {
    // Reasons in order: BudgetExceeded, Deduplicated, BudgetExceeded (repeat), PinnedOverride,
    // NegativeTokens.
    fails!(
        mixed(),
        c => c.exclude_item_with_reason(ReasonKind::Filtered),
        Assertion::ExcludeItemWithReason,
        "ExcludeItemWithReason(Filtered) failed: no excluded item had reason Filtered. \
         Excluded had 5 items with reasons: [BudgetExceeded, Deduplicated, PinnedOverride, \
         NegativeTokens]."
    );
}

#[test]
fn quota_cap_and_count_cap_are_different_variants() {
    let r = report(
        vec![],
        vec![exc(
            "m",
            5,
            &ContextKind::MESSAGE,
            0.5,
            ExclusionReason::CountCapExceeded {
                kind: "Message".into(),
                cap: 2,
                count: 2,
            },
        )],
    );
    passes!(r, c => c.exclude_item_with_reason(ReasonKind::CountCapExceeded));
    fails!(
        r,
        c => c.exclude_item_with_reason(ReasonKind::QuotaCapExceeded),
        Assertion::ExcludeItemWithReason,
        "ExcludeItemWithReason(QuotaCapExceeded) failed: no excluded item had reason \
         QuotaCapExceeded. Excluded had 1 items with reasons: [CountCapExceeded]."
    );
}

// ---- 5. ExcludeItemMatchingWithReason -------------------------------------

#[test]
fn exclude_item_matching_with_reason_needs_both_predicate_and_variant() {
    let r = mixed();
    passes!(r, c => c.exclude_item_matching_with_reason(
        |i| i.content() == "tool-b",
        ReasonKind::BudgetExceeded,
    ));
    // Any matching item may carry the reason: the 2nd Message (chat-2) is PinnedOverride.
    passes!(r, c => c.exclude_item_matching_with_reason(
        |i| *i.kind() == ContextKind::MESSAGE,
        ReasonKind::PinnedOverride,
    ));
}

#[test]
fn exclude_item_matching_with_reason_fails_on_empty_excluded() {
    fails!(
        empty(),
        c => c.exclude_item_matching_with_reason(|_| true, ReasonKind::Deduplicated),
        Assertion::ExcludeItemMatchingWithReason,
        "ExcludeItemMatchingWithReason(reason=Deduplicated) failed: predicate matched 0 excluded \
         item(s) but none had reason Deduplicated. Matched items had reasons: []."
    );
}

#[test]
fn exclude_item_matching_with_reason_fails_when_predicate_matches_nothing() {
    // tool-a carries BudgetExceeded, but the predicate does not select it.
    fails!(
        mixed(),
        c => c.exclude_item_matching_with_reason(|i| i.content() == "nope", ReasonKind::BudgetExceeded),
        Assertion::ExcludeItemMatchingWithReason,
        "ExcludeItemMatchingWithReason(reason=BudgetExceeded) failed: predicate matched 0 excluded \
         item(s) but none had reason BudgetExceeded. Matched items had reasons: []."
    );
}

#[test]
fn exclude_item_matching_with_reason_fails_with_partial_match_count_and_reasons() {
    // Messages: chat-1 Deduplicated, chat-2 PinnedOverride, chat-3 NegativeTokens -> 3 matches.
    fails!(
        mixed(),
        c => c.exclude_item_matching_with_reason(
            |i| *i.kind() == ContextKind::MESSAGE,
            ReasonKind::BudgetExceeded,
        ),
        Assertion::ExcludeItemMatchingWithReason,
        "ExcludeItemMatchingWithReason(reason=BudgetExceeded) failed: predicate matched 3 excluded \
         item(s) but none had reason BudgetExceeded. Matched items had reasons: [Deduplicated, \
         PinnedOverride, NegativeTokens]."
    );
}

#[test]
fn exclude_item_matching_with_reason_runs_the_predicate_once_per_item() {
    let r = mixed();
    let mut calls = 0;
    let res = r.check().exclude_item_matching_with_reason(
        |_| {
            calls += 1;
            true
        },
        ReasonKind::Filtered,
    );
    assert!(res.is_err());
    assert_eq!(calls, 5);
}

// ---- 6. ExcludeItemWithBudgetDetails --------------------------------------

#[test]
fn exclude_item_with_budget_details_passes_on_exact_numbers() {
    let r = mixed();
    passes!(r, c => c.exclude_item_with_budget_details(|i| i.content() == "tool-a", 450, 50));
    // Both tools match the predicate; the second one has the expected numbers.
    passes!(r, c => c.exclude_item_with_budget_details(
        |i| *i.kind() == ContextKind::TOOL_OUTPUT,
        300,
        50,
    ));
}

#[test]
fn exclude_item_with_budget_details_reports_the_first_budget_item_when_numbers_differ() {
    // Predicate matches tool-a (450/50) and tool-b (300/50); neither is 450/60; the
    // first (tool-a) is reported.
    fails!(
        mixed(),
        c => c.exclude_item_with_budget_details(|i| *i.kind() == ContextKind::TOOL_OUTPUT, 450, 60),
        Assertion::ExcludeItemWithBudgetDetails,
        "ExcludeItemWithBudgetDetails failed: expected BudgetExceeded with item_tokens=450, \
         available_tokens=60, but found item_tokens=450, available_tokens=50. \
         Matched item: \"tool-a\" (kind=ToolOutput)."
    );
    // Item tokens differ only.
    fails!(
        mixed(),
        c => c.exclude_item_with_budget_details(|i| i.content() == "tool-b", 299, 50),
        Assertion::ExcludeItemWithBudgetDetails,
        "ExcludeItemWithBudgetDetails failed: expected BudgetExceeded with item_tokens=299, \
         available_tokens=50, but found item_tokens=300, available_tokens=50. \
         Matched item: \"tool-b\" (kind=ToolOutput)."
    );
}

#[test]
fn exclude_item_with_budget_details_fails_when_matches_have_other_reasons() {
    // Messages: Deduplicated, PinnedOverride, NegativeTokens; none BudgetExceeded.
    fails!(
        mixed(),
        c => c.exclude_item_with_budget_details(|i| *i.kind() == ContextKind::MESSAGE, 80, 0),
        Assertion::ExcludeItemWithBudgetDetails,
        "ExcludeItemWithBudgetDetails failed: expected BudgetExceeded with item_tokens=80, \
         available_tokens=0, but no matching item had reason BudgetExceeded. Predicate matched 3 \
         excluded item(s) with reasons: [Deduplicated, PinnedOverride, NegativeTokens]. \
         Matched items (3 of 3): [(\"chat-1\" kind=Message, reason=Deduplicated), \
         (\"chat-2\" kind=Message, reason=PinnedOverride), \
         (\"chat-3\" kind=Message, reason=NegativeTokens)]."
    );
}

#[test]
fn exclude_item_with_budget_details_fails_when_nothing_matches_or_excluded_is_empty() {
    let expected = "ExcludeItemWithBudgetDetails failed: expected BudgetExceeded with \
                    item_tokens=450, available_tokens=50, but no matching item had reason \
                    BudgetExceeded. Predicate matched 0 excluded item(s) with reasons: [].";
    fails!(
        mixed(),
        c => c.exclude_item_with_budget_details(|i| i.content() == "nope", 450, 50),
        Assertion::ExcludeItemWithBudgetDetails,
        expected
    );
    fails!(
        empty(),
        c => c.exclude_item_with_budget_details(|_| true, 450, 50),
        Assertion::ExcludeItemWithBudgetDetails,
        expected
    );
}

// ---- 7. HaveNoExclusionsForKind -------------------------------------------

#[test]
fn have_no_exclusions_for_kind_passes_on_empty_or_absent_kind() {
    passes!(empty(), c => c.have_no_exclusions_for_kind(ContextKind::MESSAGE));
    passes!(mixed(), c => c.have_no_exclusions_for_kind(ContextKind::SYSTEM_PROMPT));
    // The kind is in Included, not Excluded: still passes.
    let r = report(vec![inc("d", 5, &ContextKind::DOCUMENT, 0.5)], vec![]);
    passes!(r, c => c.have_no_exclusions_for_kind(ContextKind::DOCUMENT));
}

#[test]
fn have_no_exclusions_for_kind_reports_count_and_first_item() {
    // ToolOutput: tool-a (0.6, BudgetExceeded) first, tool-b second -> 2.
    fails!(
        mixed(),
        c => c.have_no_exclusions_for_kind(ContextKind::TOOL_OUTPUT),
        Assertion::HaveNoExclusionsForKind,
        "HaveNoExclusionsForKind(ToolOutput) failed: found 2 excluded item(s) with Kind=ToolOutput. \
         First: score=0.6, reason=BudgetExceeded."
    );
    // Message: chat-1 (0.5, Deduplicated) first of 3.
    fails!(
        mixed(),
        c => c.have_no_exclusions_for_kind(ContextKind::MESSAGE),
        Assertion::HaveNoExclusionsForKind,
        "HaveNoExclusionsForKind(Message) failed: found 3 excluded item(s) with Kind=Message. \
         First: score=0.5, reason=Deduplicated."
    );
}

#[test]
fn have_no_exclusions_for_kind_matches_case_insensitively_and_prints_the_given_kind() {
    fails!(
        mixed(),
        c => c.have_no_exclusions_for_kind(kind("toolOUTPUT")),
        Assertion::HaveNoExclusionsForKind,
        "HaveNoExclusionsForKind(toolOUTPUT) failed: found 2 excluded item(s) with Kind=toolOUTPUT. \
         First: score=0.6, reason=BudgetExceeded."
    );
}

#[test]
fn have_no_exclusions_for_kind_single_item_with_zero_score() {
    let r = report(
        vec![],
        vec![exc(
            "neg",
            -1,
            &ContextKind::MEMORY,
            0.0,
            ExclusionReason::NegativeTokens { tokens: -1 },
        )],
    );
    fails!(
        r,
        c => c.have_no_exclusions_for_kind(ContextKind::MEMORY),
        Assertion::HaveNoExclusionsForKind,
        "HaveNoExclusionsForKind(Memory) failed: found 1 excluded item(s) with Kind=Memory. \
         First: score=0, reason=NegativeTokens."
    );
}

#[test]
fn budget_details_cut_long_contents_and_show_at_most_five_matches() {
    let long = "x".repeat(100);
    let excluded: Vec<ExcludedItem> = (0..7)
        .map(|i| {
            ExcludedItem::new(
                ContextItem::new(format!("{long}{i}"), 10).unwrap(),
                0.1,
                ExclusionReason::NegativeTokens { tokens: -1 },
            )
        })
        .collect();
    let r = report(vec![], excluded);
    let err = r
        .check()
        .exclude_item_with_budget_details(|_| true, 10, 0)
        .unwrap_err();
    let cut = format!("\"{}…\"", "x".repeat(40));
    assert!(err.message.contains(&cut), "{}", err.message);
    assert!(
        err.message.contains("Matched items (5 of 7)"),
        "{}",
        err.message
    );
    assert_eq!(err.message.matches("reason=NegativeTokens").count(), 5);
}

#[test]
fn scores_print_rounded_to_six_significant_digits() {
    // 0.1 + 0.58 is 0.6799999999999999 in f64: printed 0.68.
    let score = 0.1 + 0.58;
    assert_ne!(score.to_string(), "0.68");
    let excluded = vec![ExcludedItem::new(
        ContextItem::builder("m", 5)
            .kind(ContextKind::MEMORY)
            .build()
            .unwrap(),
        score,
        ExclusionReason::Deduplicated {
            deduplicated_against: "m".into(),
        },
    )];
    fails!(
        report(vec![], excluded),
        c => c.have_no_exclusions_for_kind(ContextKind::MEMORY),
        Assertion::HaveNoExclusionsForKind,
        "HaveNoExclusionsForKind(Memory) failed: found 1 excluded item(s) with Kind=Memory. \
         First: score=0.68, reason=Deduplicated."
    );
}
