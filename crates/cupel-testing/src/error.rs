//! The failure type shared by every assertion, and the names of the assertions.

use std::fmt;

/// The thirteen assertions of the vocabulary, one variant each.
///
/// Carried by [`SelectionReportAssertionError::assertion`] so a helper built on
/// [`check`](crate::SelectionReportAssertions::check) can tell which assertion
/// failed without parsing the message.
///
/// ```
/// use cupel_testing::Assertion;
/// assert_eq!(Assertion::PlaceTopNScoredAtEdges.name(), "PlaceTopNScoredAtEdges");
/// assert_eq!(Assertion::PlaceTopNScoredAtEdges.method_name(), "place_top_n_scored_at_edges");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Assertion {
    /// [`include_item_with_kind`](crate::SelectionReportAssertionChain::include_item_with_kind).
    IncludeItemWithKind,
    /// [`include_item_matching`](crate::SelectionReportAssertionChain::include_item_matching).
    IncludeItemMatching,
    /// [`include_exactly_n_items_with_kind`](crate::SelectionReportAssertionChain::include_exactly_n_items_with_kind).
    IncludeExactlyNItemsWithKind,
    /// [`exclude_item_with_reason`](crate::SelectionReportAssertionChain::exclude_item_with_reason).
    ExcludeItemWithReason,
    /// [`exclude_item_matching_with_reason`](crate::SelectionReportAssertionChain::exclude_item_matching_with_reason).
    ExcludeItemMatchingWithReason,
    /// [`exclude_item_with_budget_details`](crate::SelectionReportAssertionChain::exclude_item_with_budget_details).
    ExcludeItemWithBudgetDetails,
    /// [`have_no_exclusions_for_kind`](crate::SelectionReportAssertionChain::have_no_exclusions_for_kind).
    HaveNoExclusionsForKind,
    /// [`have_at_least_n_exclusions`](crate::SelectionReportAssertionChain::have_at_least_n_exclusions).
    HaveAtLeastNExclusions,
    /// [`excluded_items_are_sorted_by_score_descending`](crate::SelectionReportAssertionChain::excluded_items_are_sorted_by_score_descending).
    ExcludedItemsAreSortedByScoreDescending,
    /// [`have_budget_utilization_above`](crate::SelectionReportAssertionChain::have_budget_utilization_above).
    HaveBudgetUtilizationAbove,
    /// [`have_kind_coverage_count`](crate::SelectionReportAssertionChain::have_kind_coverage_count).
    HaveKindCoverageCount,
    /// [`place_item_at_edge`](crate::SelectionReportAssertionChain::place_item_at_edge).
    PlaceItemAtEdge,
    /// [`place_top_n_scored_at_edges`](crate::SelectionReportAssertionChain::place_top_n_scored_at_edges).
    PlaceTopNScoredAtEdges,
    /// [`have_no_partial_groups`](crate::SelectionReportAssertionChain::have_no_partial_groups)
    /// (the atomic-group extension; not one of the specification's thirteen).
    HaveNoPartialGroups,
}

impl Assertion {
    /// Every assertion, in the vocabulary's order (patterns 1 to 13), then
    /// this crate's extension (`HaveNoPartialGroups`).
    pub const ALL: [Assertion; 14] = [
        Assertion::IncludeItemWithKind,
        Assertion::IncludeItemMatching,
        Assertion::IncludeExactlyNItemsWithKind,
        Assertion::ExcludeItemWithReason,
        Assertion::ExcludeItemMatchingWithReason,
        Assertion::ExcludeItemWithBudgetDetails,
        Assertion::HaveNoExclusionsForKind,
        Assertion::HaveAtLeastNExclusions,
        Assertion::ExcludedItemsAreSortedByScoreDescending,
        Assertion::HaveBudgetUtilizationAbove,
        Assertion::HaveKindCoverageCount,
        Assertion::PlaceItemAtEdge,
        Assertion::PlaceTopNScoredAtEdges,
        Assertion::HaveNoPartialGroups,
    ];

    /// The vocabulary's name for the assertion (PascalCase), which is also the
    /// label every failure message starts with.
    pub fn name(self) -> &'static str {
        match self {
            Assertion::IncludeItemWithKind => "IncludeItemWithKind",
            Assertion::IncludeItemMatching => "IncludeItemMatching",
            Assertion::IncludeExactlyNItemsWithKind => "IncludeExactlyNItemsWithKind",
            Assertion::ExcludeItemWithReason => "ExcludeItemWithReason",
            Assertion::ExcludeItemMatchingWithReason => "ExcludeItemMatchingWithReason",
            Assertion::ExcludeItemWithBudgetDetails => "ExcludeItemWithBudgetDetails",
            Assertion::HaveNoExclusionsForKind => "HaveNoExclusionsForKind",
            Assertion::HaveAtLeastNExclusions => "HaveAtLeastNExclusions",
            Assertion::ExcludedItemsAreSortedByScoreDescending => {
                "ExcludedItemsAreSortedByScoreDescending"
            }
            Assertion::HaveBudgetUtilizationAbove => "HaveBudgetUtilizationAbove",
            Assertion::HaveKindCoverageCount => "HaveKindCoverageCount",
            Assertion::PlaceItemAtEdge => "PlaceItemAtEdge",
            Assertion::PlaceTopNScoredAtEdges => "PlaceTopNScoredAtEdges",
            Assertion::HaveNoPartialGroups => "HaveNoPartialGroups",
        }
    }

    /// The name of the Rust method that runs the assertion (snake_case).
    pub fn method_name(self) -> &'static str {
        match self {
            Assertion::IncludeItemWithKind => "include_item_with_kind",
            Assertion::IncludeItemMatching => "include_item_matching",
            Assertion::IncludeExactlyNItemsWithKind => "include_exactly_n_items_with_kind",
            Assertion::ExcludeItemWithReason => "exclude_item_with_reason",
            Assertion::ExcludeItemMatchingWithReason => "exclude_item_matching_with_reason",
            Assertion::ExcludeItemWithBudgetDetails => "exclude_item_with_budget_details",
            Assertion::HaveNoExclusionsForKind => "have_no_exclusions_for_kind",
            Assertion::HaveAtLeastNExclusions => "have_at_least_n_exclusions",
            Assertion::ExcludedItemsAreSortedByScoreDescending => {
                "excluded_items_are_sorted_by_score_descending"
            }
            Assertion::HaveBudgetUtilizationAbove => "have_budget_utilization_above",
            Assertion::HaveKindCoverageCount => "have_kind_coverage_count",
            Assertion::PlaceItemAtEdge => "place_item_at_edge",
            Assertion::PlaceTopNScoredAtEdges => "place_top_n_scored_at_edges",
            Assertion::HaveNoPartialGroups => "have_no_partial_groups",
        }
    }
}

impl fmt::Display for Assertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed assertion: which one, and the full diagnostic message.
///
/// [`message`](Self::message) is the vocabulary's message for that assertion
/// (floats rounded, see the crate docs). `Display` prints it followed by the
/// snake_case name of the method that failed —
/// `"<message> [assertion: have_at_least_n_exclusions]"` — so a failing test
/// names the call to look at. The panicking chain
/// ([`should`](crate::SelectionReportAssertions::should)) panics with that
/// text; the checking chain
/// ([`check`](crate::SelectionReportAssertions::check)) returns the error.
///
/// ```
/// use cupel_core::SelectionReport;
/// use cupel_testing::{Assertion, SelectionReportAssertions};
///
/// let report = SelectionReport::default();
/// let err = report.check().have_at_least_n_exclusions(1).unwrap_err();
/// assert_eq!(err.assertion, Assertion::HaveAtLeastNExclusions);
/// assert_eq!(
///     err.message,
///     "HaveAtLeastNExclusions(1) failed: expected at least 1 excluded items, but Excluded had 0."
/// );
/// assert_eq!(
///     err.to_string(),
///     "HaveAtLeastNExclusions(1) failed: expected at least 1 excluded items, but Excluded had 0. \
///      [assertion: have_at_least_n_exclusions]"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} [assertion: {}]", assertion.method_name())]
#[non_exhaustive]
pub struct SelectionReportAssertionError {
    /// The assertion that failed.
    pub assertion: Assertion,
    /// The failure message: assertion name, what was expected, what was found.
    pub message: String,
}

impl SelectionReportAssertionError {
    pub(crate) fn new(assertion: Assertion, message: String) -> Self {
        SelectionReportAssertionError { assertion, message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_pascal_case_of_the_snake_case_method() {
        for a in Assertion::ALL {
            // Rebuild the PascalCase name from the method name: each `_x` -> `X`.
            let pascal: String = a
                .method_name()
                .split('_')
                .map(|w| {
                    let mut c = w.chars();
                    c.next()
                        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                        .unwrap_or_default()
                })
                .collect();
            assert_eq!(pascal, a.name());
            assert_eq!(a.to_string(), a.name());
        }
    }

    #[test]
    fn display_is_the_message_and_the_method() {
        let e = SelectionReportAssertionError::new(Assertion::PlaceItemAtEdge, "boom".into());
        assert_eq!(e.to_string(), "boom [assertion: place_item_at_edge]");
    }
}
