//! Patterns 1-3: IncludeItemWithKind, IncludeItemMatching, IncludeExactlyNItemsWithKind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use common::*;
use cupel_core::{ContextKind, InclusionReason, SelectionReport};
use cupel_testing::Assertion;

/// Included: Message, Document, message (lower-case spelling), SystemPrompt.
fn mixed() -> SelectionReport {
    report(
        vec![
            inc("hi", 10, &ContextKind::MESSAGE, 0.5),
            inc("doc", 50, &ContextKind::DOCUMENT, 0.8),
            inc("again", 12, &kind("message"), 0.4),
            inc_r(
                "sys",
                20,
                &ContextKind::SYSTEM_PROMPT,
                1.0,
                InclusionReason::Pinned,
            ),
        ],
        vec![],
    )
}

// ---- 1. IncludeItemWithKind ----------------------------------------------

#[test]
fn include_item_with_kind_passes_when_any_item_has_the_kind() {
    let r = mixed();
    passes!(r, c => c.include_item_with_kind(ContextKind::DOCUMENT));
    passes!(r, c => c.include_item_with_kind(ContextKind::SYSTEM_PROMPT));
    // Borrowed kinds work as well as owned ones.
    let k = ContextKind::MESSAGE;
    passes!(r, c => c.include_item_with_kind(&k));
}

#[test]
fn include_item_with_kind_compares_kinds_case_insensitively() {
    passes!(mixed(), c => c.include_item_with_kind(kind("DOCUMENT")));
}

#[test]
fn include_item_with_kind_fails_on_empty_included() {
    fails!(
        report(vec![], vec![]),
        c => c.include_item_with_kind(ContextKind::TOOL_OUTPUT),
        Assertion::IncludeItemWithKind,
        "IncludeItemWithKind(ToolOutput) failed: Included contained 0 items with Kind=ToolOutput. \
         Included had 0 items with kinds: []."
    );
}

#[test]
fn include_item_with_kind_fails_listing_distinct_kinds_in_first_appearance_order() {
    // Kinds in order: Message, Document, message (== Message, not repeated), SystemPrompt.
    fails!(
        mixed(),
        c => c.include_item_with_kind(ContextKind::TOOL_OUTPUT),
        Assertion::IncludeItemWithKind,
        "IncludeItemWithKind(ToolOutput) failed: Included contained 0 items with Kind=ToolOutput. \
         Included had 4 items with kinds: [Message, Document, SystemPrompt]."
    );
}

#[test]
fn include_item_with_kind_prints_custom_kinds_as_spelled() {
    fails!(
        report(vec![inc("x", 1, &kind("scratchPad"), 0.1)], vec![]),
        c => c.include_item_with_kind(kind("Memo")),
        Assertion::IncludeItemWithKind,
        "IncludeItemWithKind(Memo) failed: Included contained 0 items with Kind=Memo. \
         Included had 1 items with kinds: [scratchPad]."
    );
}

// ---- 2. IncludeItemMatching ----------------------------------------------

#[test]
fn include_item_matching_passes_when_any_item_matches() {
    let r = mixed();
    passes!(r, c => c.include_item_matching(|i| i.item.content() == "doc"));
    // The predicate sees score and reason, not just the item.
    passes!(r, c => c.include_item_matching(|i| i.reason == InclusionReason::Pinned && i.score == 1.0));
}

#[test]
fn include_item_matching_fails_on_empty_included_without_appendix() {
    fails!(
        report(vec![], vec![]),
        c => c.include_item_matching(|_| true),
        Assertion::IncludeItemMatching,
        "IncludeItemMatching failed: no item in Included matched the predicate. Included had 0 items."
    );
}

#[test]
fn include_item_matching_fails_showing_every_item_when_at_most_five() {
    let r = report(
        vec![
            inc("a", 10, &ContextKind::MESSAGE, 0.5),
            inc_r(
                "s",
                20,
                &ContextKind::SYSTEM_PROMPT,
                1.0,
                InclusionReason::Pinned,
            ),
        ],
        vec![],
    );
    // Score 1.0 displays as "1" (Rust's shortest f64 form).
    fails!(
        r,
        c => c.include_item_matching(|i| i.score > 1.0),
        Assertion::IncludeItemMatching,
        "IncludeItemMatching failed: no item in Included matched the predicate. Included had 2 items. \
         Showing 2 of 2: [(kind=Message, score=0.5, reason=Scored), \
         (kind=SystemPrompt, score=1, reason=Pinned)]."
    );
}

#[test]
fn include_item_matching_fails_showing_the_first_five_of_more() {
    let r = report(
        vec![
            inc("a", 10, &ContextKind::MESSAGE, 0.9),
            inc("b", 10, &ContextKind::DOCUMENT, 0.8),
            inc_r(
                "c",
                0,
                &ContextKind::MEMORY,
                0.7,
                InclusionReason::ZeroToken,
            ),
            inc("d", 10, &ContextKind::MESSAGE, 0.6),
            inc("e", 10, &ContextKind::TOOL_OUTPUT, 0.25),
            inc("f", 10, &ContextKind::MESSAGE, 0.125),
            inc("g", 10, &ContextKind::MESSAGE, 0.0),
        ],
        vec![],
    );
    fails!(
        r,
        c => c.include_item_matching(|i| i.item.content() == "zzz"),
        Assertion::IncludeItemMatching,
        "IncludeItemMatching failed: no item in Included matched the predicate. Included had 7 items. \
         Showing 5 of 7: [(kind=Message, score=0.9, reason=Scored), \
         (kind=Document, score=0.8, reason=Scored), (kind=Memory, score=0.7, reason=ZeroToken), \
         (kind=Message, score=0.6, reason=Scored), (kind=ToolOutput, score=0.25, reason=Scored)]."
    );
}

#[test]
fn include_item_matching_runs_the_predicate_once_per_item() {
    use cupel_testing::SelectionReportAssertions;
    let r = mixed();
    let mut calls = 0;
    let res = r.check().include_item_matching(|_| {
        calls += 1;
        false
    });
    assert!(res.is_err());
    assert_eq!(calls, 4);
}

// ---- 3. IncludeExactlyNItemsWithKind -------------------------------------

#[test]
fn include_exactly_n_passes_on_exact_count_including_zero() {
    let r = mixed();
    // Message and "message" are the same kind: 2 items.
    passes!(r, c => c.include_exactly_n_items_with_kind(ContextKind::MESSAGE, 2));
    passes!(r, c => c.include_exactly_n_items_with_kind(ContextKind::DOCUMENT, 1));
    passes!(r, c => c.include_exactly_n_items_with_kind(ContextKind::TOOL_OUTPUT, 0));
    passes!(report(vec![], vec![]), c => c.include_exactly_n_items_with_kind(ContextKind::MESSAGE, 0));
}

#[test]
fn include_exactly_n_fails_on_empty_included_with_positive_n() {
    fails!(
        report(vec![], vec![]),
        c => c.include_exactly_n_items_with_kind(ContextKind::MESSAGE, 1),
        Assertion::IncludeExactlyNItemsWithKind,
        "IncludeExactlyNItemsWithKind(Message, 1) failed: expected 1 items with Kind=Message in \
         Included, but found 0. Included had 0 items total."
    );
}

#[test]
fn include_exactly_n_fails_when_count_is_too_low_or_too_high() {
    let r = mixed();
    fails!(
        r,
        c => c.include_exactly_n_items_with_kind(ContextKind::MESSAGE, 3),
        Assertion::IncludeExactlyNItemsWithKind,
        "IncludeExactlyNItemsWithKind(Message, 3) failed: expected 3 items with Kind=Message in \
         Included, but found 2. Included had 4 items total."
    );
    fails!(
        r,
        c => c.include_exactly_n_items_with_kind(ContextKind::MESSAGE, 1),
        Assertion::IncludeExactlyNItemsWithKind,
        "IncludeExactlyNItemsWithKind(Message, 1) failed: expected 1 items with Kind=Message in \
         Included, but found 2. Included had 4 items total."
    );
}

#[test]
fn include_exactly_zero_fails_when_the_kind_is_present() {
    fails!(
        mixed(),
        c => c.include_exactly_n_items_with_kind(ContextKind::DOCUMENT, 0),
        Assertion::IncludeExactlyNItemsWithKind,
        "IncludeExactlyNItemsWithKind(Document, 0) failed: expected 0 items with Kind=Document in \
         Included, but found 1. Included had 4 items total."
    );
}
