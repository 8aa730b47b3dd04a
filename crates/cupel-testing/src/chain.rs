//! The entry trait and the two chains: panicking ([`SelectionReportAssertionChain`])
//! and `Result`-returning ([`SelectionReportCheck`]).

use std::borrow::Borrow;

use cupel_core::{
    ContextBudget, ContextItem, ContextKind, ExclusionReason, IncludedItem, SelectionReport,
};

use crate::{SelectionReportAssertionError, patterns};

/// Adds [`should`](Self::should) and [`check`](Self::check) to [`SelectionReport`].
///
/// ```
/// use cupel_core::{ContextItem, IncludedItem, InclusionReason, SelectionReport};
/// use cupel_testing::SelectionReportAssertions;
///
/// let report = SelectionReport::new(
///     vec![IncludedItem::new(ContextItem::new("hello", 1)?, 0.5, InclusionReason::Scored)],
///     vec![],
/// );
/// report.should().have_kind_coverage_count(1).have_at_least_n_exclusions(0);
/// assert!(report.check().have_kind_coverage_count(2).is_err());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub trait SelectionReportAssertions {
    /// Starts a chain of assertions that **panic** on the first failure.
    ///
    /// For `#[test]` functions: the test fails with the assertion's message,
    /// reported at the line of the failing call.
    #[must_use = "a chain asserts nothing until one of its methods is called"]
    fn should(&self) -> SelectionReportAssertionChain<'_>;

    /// Starts a chain of assertions that **return** `Err` on the first failure,
    /// for building your own helpers or reporting failures without unwinding.
    #[must_use = "a chain asserts nothing until one of its methods is called"]
    fn check(&self) -> SelectionReportCheck<'_>;
}

impl SelectionReportAssertions for SelectionReport {
    fn should(&self) -> SelectionReportAssertionChain<'_> {
        SelectionReportAssertionChain::new(self)
    }

    fn check(&self) -> SelectionReportCheck<'_> {
        SelectionReportCheck::new(self)
    }
}

/// Fails the calling test with the assertion's message.
///
/// `#[track_caller]` all the way up, so the panic location is the user's
/// call to the chain method, not this file.
#[track_caller]
#[allow(clippy::panic)] // Panicking is this chain's contract: it is a test assertion.
fn raise(err: SelectionReportAssertionError) -> ! {
    panic!("{err}")
}

/// Fluent assertions over one [`SelectionReport`] that panic on failure.
///
/// Returned by [`SelectionReportAssertions::should`]. Each method checks one
/// pattern of the vocabulary and returns the chain (it is `Copy`: just a
/// reference) so checks can be chained; on failure it panics with the message
/// documented on that method followed by ` [assertion: <method name>]`.
/// Passing checks have no effect.
///
/// Every method has a non-panicking twin of the same name on
/// [`SelectionReportCheck`].
#[derive(Debug, Clone, Copy)]
pub struct SelectionReportAssertionChain<'a> {
    report: &'a SelectionReport,
}

/// Fluent assertions over one [`SelectionReport`] that return `Err` on failure.
///
/// Returned by [`SelectionReportAssertions::check`]. Each method checks the
/// same pattern, with the same message, as its namesake on
/// [`SelectionReportAssertionChain`] (whose docs give the semantics and the
/// message), but returns `Result<Self, SelectionReportAssertionError>`, so
/// checks chain with `?`:
///
/// ```
/// use cupel_core::{ContextKind, SelectionReport};
/// use cupel_testing::{SelectionReportAssertionError, SelectionReportAssertions};
///
/// fn nothing_dropped(report: &SelectionReport) -> Result<(), SelectionReportAssertionError> {
///     report
///         .check()
///         .have_no_exclusions_for_kind(ContextKind::SYSTEM_PROMPT)?
///         .have_no_exclusions_for_kind(ContextKind::TOOL_OUTPUT)?;
///     Ok(())
/// }
/// assert!(nothing_dropped(&SelectionReport::default()).is_ok());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SelectionReportCheck<'a> {
    report: &'a SelectionReport,
}

impl<'a> SelectionReportAssertionChain<'a> {
    /// A chain over `report` (same as `report.should()`).
    pub fn new(report: &'a SelectionReport) -> Self {
        SelectionReportAssertionChain { report }
    }

    /// The report under test.
    pub fn report(&self) -> &'a SelectionReport {
        self.report
    }

    /// The `Result`-returning chain over the same report.
    pub fn check(&self) -> SelectionReportCheck<'a> {
        SelectionReportCheck::new(self.report)
    }

    #[track_caller]
    fn or_raise(self, outcome: Result<(), SelectionReportAssertionError>) -> Self {
        match outcome {
            Ok(()) => self,
            Err(err) => raise(err),
        }
    }

    /// Pattern 1: at least one included item has kind `kind`.
    ///
    /// Kinds compare as [`ContextKind`] does (ASCII case-insensitively). There
    /// is no "any kind" sentinel: every kind is matched literally.
    ///
    /// # Panics
    /// When no included item has the kind:
    ///
    /// `IncludeItemWithKind({kind}) failed: Included contained 0 items with
    /// Kind={kind}. Included had {count} items with kinds: [{actualKinds}].`
    ///
    /// `{actualKinds}`: the distinct included kinds in order of first
    /// appearance (first spelling seen), joined with `", "`; empty when
    /// nothing was included.
    #[track_caller]
    pub fn include_item_with_kind(self, kind: impl Borrow<ContextKind>) -> Self {
        self.or_raise(patterns::include_item_with_kind(self.report, kind.borrow()))
    }

    /// Pattern 2: at least one included item satisfies `predicate`.
    ///
    /// The predicate sees the whole [`IncludedItem`] (item, score, reason).
    ///
    /// # Panics
    /// When no included item matches:
    ///
    /// `IncludeItemMatching failed: no item in Included matched the predicate.
    /// Included had {count} items.`
    ///
    /// When `Included` is not empty, a diagnostic appendix follows: ` Showing
    /// {shown} of {count}: [{items}].` with the first `min(count, 5)` included
    /// items in placed order, each as `(kind={kind}, score={score},
    /// reason={reason})`.
    #[track_caller]
    pub fn include_item_matching(self, predicate: impl FnMut(&IncludedItem) -> bool) -> Self {
        self.or_raise(patterns::include_item_matching(self.report, predicate))
    }

    /// Pattern 3: exactly `n` included items have kind `kind` (`n = 0`
    /// asserts that the kind is absent from `Included`).
    ///
    /// # Panics
    /// When the count differs:
    ///
    /// `IncludeExactlyNItemsWithKind({kind}, {n}) failed: expected {n} items
    /// with Kind={kind} in Included, but found {actual}. Included had {count}
    /// items total.`
    #[track_caller]
    pub fn include_exactly_n_items_with_kind(
        self,
        kind: impl Borrow<ContextKind>,
        n: usize,
    ) -> Self {
        self.or_raise(patterns::include_exactly_n_items_with_kind(
            self.report,
            kind.borrow(),
            n,
        ))
    }

    /// Pattern 4: at least one excluded item's reason is the *variant* of
    /// `reason` (fields ignored; see [`ExclusionReason::same_variant`]).
    ///
    /// Pass a [`ReasonKind`](crate::ReasonKind) to name a variant, or any
    /// [`ExclusionReason`] value. Reserved variants are valid arguments.
    ///
    /// # Panics
    /// When no excluded item has that variant:
    ///
    /// `ExcludeItemWithReason({reason}) failed: no excluded item had reason
    /// {reason}. Excluded had {count} items with reasons: [{reasonList}].`
    ///
    /// `{reason}` is [`ExclusionReason::name`]; `{reasonList}`: the distinct
    /// reason names in `Excluded`, in order of first appearance.
    #[track_caller]
    pub fn exclude_item_with_reason(self, reason: impl Into<ExclusionReason>) -> Self {
        self.or_raise(patterns::exclude_item_with_reason(
            self.report,
            &reason.into(),
        ))
    }

    /// Pattern 5: some excluded item satisfies `predicate` (over the raw
    /// [`ContextItem`]) *and* has the variant of `reason`.
    ///
    /// # Panics
    /// When no excluded item satisfies both:
    ///
    /// `ExcludeItemMatchingWithReason(reason={reason}) failed: predicate
    /// matched {predicateMatchCount} excluded item(s) but none had reason
    /// {reason}. Matched items had reasons: [{actualReasons}].`
    ///
    /// `{actualReasons}`: distinct reason names of the predicate-matching
    /// items, in order of first appearance (empty when none matched).
    #[track_caller]
    pub fn exclude_item_matching_with_reason(
        self,
        predicate: impl FnMut(&ContextItem) -> bool,
        reason: impl Into<ExclusionReason>,
    ) -> Self {
        self.or_raise(patterns::exclude_item_matching_with_reason(
            self.report,
            predicate,
            &reason.into(),
        ))
    }

    /// Pattern 6: some excluded item satisfies `predicate` and was excluded
    /// with `BudgetExceeded { item_tokens, available_tokens }` equal to the
    /// expected values (exact integer equality).
    ///
    /// # Panics
    /// When a predicate-matching `BudgetExceeded` item exists but none has the
    /// expected numbers (the first such item is reported):
    ///
    /// `ExcludeItemWithBudgetDetails failed: expected BudgetExceeded with
    /// item_tokens={eIT}, available_tokens={eAT}, but found item_tokens={aIT},
    /// available_tokens={aAT}. Matched item: "{content}" (kind={kind}).`
    ///
    /// When no predicate-matching item has reason `BudgetExceeded`:
    ///
    /// `ExcludeItemWithBudgetDetails failed: expected BudgetExceeded with
    /// item_tokens={eIT}, available_tokens={eAT}, but no matching item had
    /// reason BudgetExceeded. Predicate matched {m} excluded item(s) with
    /// reasons: [{reasons}].`
    ///
    /// `Matched items ({shown} of {m}): [("{content}" kind={kind},
    /// reason={reason}), ...].`
    ///
    /// (the sentences after the vocabulary's are this crate's extension: `{m}`
    /// predicate matches and their distinct reason names, in order of first
    /// appearance, then the matched items themselves — up to five, contents
    /// cut to 40 characters — so the failure names what matched).
    #[track_caller]
    pub fn exclude_item_with_budget_details(
        self,
        predicate: impl FnMut(&ContextItem) -> bool,
        expected_item_tokens: i64,
        expected_available_tokens: i64,
    ) -> Self {
        self.or_raise(patterns::exclude_item_with_budget_details(
            self.report,
            predicate,
            expected_item_tokens,
            expected_available_tokens,
        ))
    }

    /// Pattern 7: no excluded item has kind `kind` (passes on an empty
    /// `Excluded`).
    ///
    /// # Panics
    /// When some do:
    ///
    /// `HaveNoExclusionsForKind({kind}) failed: found {count} excluded item(s)
    /// with Kind={kind}. First: score={score}, reason={reason}.`
    ///
    /// "First" is the first such item in `Excluded` (the highest-scored one in
    /// a pipeline-built report).
    #[track_caller]
    pub fn have_no_exclusions_for_kind(self, kind: impl Borrow<ContextKind>) -> Self {
        self.or_raise(patterns::have_no_exclusions_for_kind(
            self.report,
            kind.borrow(),
        ))
    }

    /// Pattern 8: `Excluded` has at least `n` items (`n = 0` always passes).
    ///
    /// # Panics
    /// `HaveAtLeastNExclusions({n}) failed: expected at least {n} excluded
    /// items, but Excluded had {actual}.`
    #[track_caller]
    pub fn have_at_least_n_exclusions(self, n: usize) -> Self {
        self.or_raise(patterns::have_at_least_n_exclusions(self.report, n))
    }

    /// Pattern 9 (conformance): `Excluded` is in non-increasing score order.
    ///
    /// Scores are compared with [`cupel_core::score_cmp_desc`], the order the
    /// pipeline sorts by: equal scores may be adjacent, `-0.0 == 0.0`, and NaN
    /// ranks below every number (so NaN scores must come last). Empty and
    /// one-item lists pass.
    ///
    /// # Panics
    /// At the first out-of-order pair (`i`, `i + 1`):
    ///
    /// `ExcludedItemsAreSortedByScoreDescending failed: item at index {i+1}
    /// (score={si1}) is higher than item at index {i} (score={si}). Expected
    /// non-increasing scores.`
    #[track_caller]
    pub fn excluded_items_are_sorted_by_score_descending(self) -> Self {
        self.or_raise(patterns::excluded_items_are_sorted_by_score_descending(
            self.report,
        ))
    }

    /// Pattern 10: `sum(included tokens) / budget.max_tokens() >= threshold`,
    /// compared exactly (no epsilon: pick thresholds away from rounding
    /// boundaries, e.g. `0.799` rather than `0.8`).
    ///
    /// The denominator is the budget's hard ceiling `max_tokens`, never
    /// `target_tokens`. A budget with `max_tokens == 0` has utilisation `0.0`.
    /// A NaN threshold never passes.
    ///
    /// # Panics
    /// `HaveBudgetUtilizationAbove({threshold}) failed: computed utilization
    /// was {actual:.6} (includedTokens={includedTokens},
    /// budget.MaxTokens={maxTokens}).`
    ///
    /// `{threshold}` uses Rust's shortest round-trip `f64` display (`0.8`,
    /// `1`); `{actual}` has exactly six decimals.
    #[track_caller]
    pub fn have_budget_utilization_above(self, threshold: f64, budget: &ContextBudget) -> Self {
        self.or_raise(patterns::have_budget_utilization_above(
            self.report,
            threshold,
            budget,
        ))
    }

    /// Pattern 11: at least `n` distinct kinds appear in `Included` (kinds
    /// compare case-insensitively; `n = 0` always passes).
    ///
    /// # Panics
    /// `HaveKindCoverageCount({n}) failed: expected at least {n} distinct
    /// ContextKind values in Included, but found {actual}: [{actualKinds}].`
    ///
    /// `{actualKinds}`: the distinct kinds in order of first appearance.
    #[track_caller]
    pub fn have_kind_coverage_count(self, n: usize) -> Self {
        self.or_raise(patterns::have_kind_coverage_count(self.report, n))
    }

    /// Extension (atomic groups, not one of the thirteen patterns): no group is
    /// partial — each group id seen in the report has all its members in
    /// `Included` or none — and the included members of each group are
    /// adjacent. Passes trivially when no item has a group.
    ///
    /// # Panics
    /// `HaveNoPartialGroups failed: group {g:?} has {i} member(s) in Included
    /// and {e} in Excluded: [{contents}].` or `HaveNoPartialGroups failed: the
    /// members of group {g:?} are not adjacent in Included: positions [{p}].`
    /// (the first group, by id, that fails).
    ///
    /// ```
    /// use cupel_core::{ContextBudget, ContextItem};
    /// use cupel_pipeline::{Pipeline, preset};
    /// use cupel_testing::SelectionReportAssertions;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let items = vec![
    ///     ContextItem::builder("call: search(\"refund\")", 20).group("t1").build()?,
    ///     ContextItem::builder("result: 3 refunds found", 300).group("t1").build()?,
    ///     ContextItem::builder("User: where is my refund?", 15).build()?,
    /// ];
    /// // The 320-token group does not fit a 150-token target: both members go.
    /// let pipeline = Pipeline::new(preset("chat")?.config.build()?, ContextBudget::new(200, 150)?);
    /// let report = pipeline.dry_run(&items)?;
    /// report.should().have_no_partial_groups();
    /// assert_eq!(report.included.len(), 1);
    /// # Ok(()) }
    /// ```
    #[track_caller]
    pub fn have_no_partial_groups(self) -> Self {
        self.or_raise(patterns::have_no_partial_groups(self.report))
    }

    /// Pattern 12: the first or the last included item satisfies `predicate`.
    ///
    /// Only positions `0` and `count - 1` are edges (one position when a single
    /// item was included). Position decides, not score: a tied item in the
    /// middle does not count. Meaningful only for a placer whose ordering
    /// contract you know (for the U-shaped placer, the top two scores sit at
    /// the edges).
    ///
    /// # Panics
    /// When a matching item exists but none is at an edge (the first match is
    /// reported):
    ///
    /// `PlaceItemAtEdge failed: item matching predicate was at index {actual}
    /// (not at edge). Edge positions: 0 and {last}. Included had {count}
    /// items.`
    ///
    /// When nothing matches, or `Included` is empty:
    ///
    /// `PlaceItemAtEdge failed: no item in Included matched the predicate.`
    #[track_caller]
    pub fn place_item_at_edge(self, predicate: impl FnMut(&IncludedItem) -> bool) -> Self {
        self.or_raise(patterns::place_item_at_edge(self.report, predicate))
    }

    /// Pattern 13: the `n` highest-scored included items sit at the `n`
    /// outermost positions.
    ///
    /// The edge positions, in order, are `0, count-1, 1, count-2, ...`; the
    /// first `n` of them form the edge set. Each of the `n` best-scored items
    /// must occupy one of those positions — which one is not checked, so the
    /// best item may be last and the runner-up first. Equal scores are
    /// interchangeable: any item tied with the n-th highest score may stand in
    /// for it (and likewise at any other rank). Scores compare with
    /// [`cupel_core::score_cmp_desc`] (NaN lowest).
    ///
    /// `n = 0` always passes, and so does `n = count` (every position is then
    /// an edge); `n > count` fails. To check the exact edge-in order the
    /// U-shaped placer produces (best first, runner-up last, ...), assert for
    /// every `n` from 1 up: together those calls require the k-th edge to hold
    /// the k-th best score.
    ///
    /// ```
    /// use cupel_core::{ContextItem, IncludedItem, InclusionReason, SelectionReport};
    /// use cupel_testing::SelectionReportAssertions;
    /// let inc = |c: &str, score: f64| {
    ///     IncludedItem::new(ContextItem::new(c, 10).unwrap(), score, InclusionReason::Scored)
    /// };
    /// // B 0.8, C 0.5, A 0.9: the top two (A, B) are on the edges 0 and 2.
    /// let report = SelectionReport::new(vec![inc("B", 0.8), inc("C", 0.5), inc("A", 0.9)], vec![]);
    /// report.should().place_top_n_scored_at_edges(2);
    /// // But the best item is not at position 0.
    /// assert!(report.check().place_top_n_scored_at_edges(1).is_err());
    /// ```
    ///
    /// # Panics
    /// When `n` exceeds the number of included items:
    ///
    /// `PlaceTopNScoredAtEdges({n}) failed: expected at least {n} items in
    /// Included to fill {n} edge positions, but Included had {count}.`
    ///
    /// When some of the top `n` are not on an edge:
    ///
    /// `PlaceTopNScoredAtEdges({n}) failed: {failCount} of the top-{n} scored
    /// items were not at expected edge positions. Top-{n} items (by score):
    /// [{topItems}]. Expected edge positions: [{edgePositions}].`
    ///
    /// `{failCount}` is the number of top-`n` items off the edge set.
    /// `{topItems}` lists the top `n` items in rank order as `(kind={kind},
    /// score={score}, idx={actualIndex})`; among items tied at the boundary,
    /// those already on an edge are named first (by position), then the rest
    /// by position.
    #[track_caller]
    pub fn place_top_n_scored_at_edges(self, n: usize) -> Self {
        self.or_raise(patterns::place_top_n_scored_at_edges(self.report, n))
    }
}

impl<'a> SelectionReportCheck<'a> {
    /// A checking chain over `report` (same as `report.check()`).
    pub fn new(report: &'a SelectionReport) -> Self {
        SelectionReportCheck { report }
    }

    /// The report under test.
    pub fn report(&self) -> &'a SelectionReport {
        self.report
    }

    /// The panicking chain over the same report.
    pub fn should(&self) -> SelectionReportAssertionChain<'a> {
        SelectionReportAssertionChain::new(self.report)
    }

    fn then(
        self,
        outcome: Result<(), SelectionReportAssertionError>,
    ) -> Result<Self, SelectionReportAssertionError> {
        outcome.map(|()| self)
    }

    /// See [`SelectionReportAssertionChain::include_item_with_kind`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn include_item_with_kind(
        self,
        kind: impl Borrow<ContextKind>,
    ) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::include_item_with_kind(self.report, kind.borrow()))
    }

    /// See [`SelectionReportAssertionChain::include_item_matching`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn include_item_matching(
        self,
        predicate: impl FnMut(&IncludedItem) -> bool,
    ) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::include_item_matching(self.report, predicate))
    }

    /// See [`SelectionReportAssertionChain::include_exactly_n_items_with_kind`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn include_exactly_n_items_with_kind(
        self,
        kind: impl Borrow<ContextKind>,
        n: usize,
    ) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::include_exactly_n_items_with_kind(
            self.report,
            kind.borrow(),
            n,
        ))
    }

    /// See [`SelectionReportAssertionChain::exclude_item_with_reason`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn exclude_item_with_reason(
        self,
        reason: impl Into<ExclusionReason>,
    ) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::exclude_item_with_reason(
            self.report,
            &reason.into(),
        ))
    }

    /// See [`SelectionReportAssertionChain::exclude_item_matching_with_reason`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn exclude_item_matching_with_reason(
        self,
        predicate: impl FnMut(&ContextItem) -> bool,
        reason: impl Into<ExclusionReason>,
    ) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::exclude_item_matching_with_reason(
            self.report,
            predicate,
            &reason.into(),
        ))
    }

    /// See [`SelectionReportAssertionChain::exclude_item_with_budget_details`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn exclude_item_with_budget_details(
        self,
        predicate: impl FnMut(&ContextItem) -> bool,
        expected_item_tokens: i64,
        expected_available_tokens: i64,
    ) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::exclude_item_with_budget_details(
            self.report,
            predicate,
            expected_item_tokens,
            expected_available_tokens,
        ))
    }

    /// See [`SelectionReportAssertionChain::have_no_exclusions_for_kind`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn have_no_exclusions_for_kind(
        self,
        kind: impl Borrow<ContextKind>,
    ) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::have_no_exclusions_for_kind(
            self.report,
            kind.borrow(),
        ))
    }

    /// See [`SelectionReportAssertionChain::have_at_least_n_exclusions`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn have_at_least_n_exclusions(
        self,
        n: usize,
    ) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::have_at_least_n_exclusions(self.report, n))
    }

    /// See [`SelectionReportAssertionChain::excluded_items_are_sorted_by_score_descending`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn excluded_items_are_sorted_by_score_descending(
        self,
    ) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::excluded_items_are_sorted_by_score_descending(
            self.report,
        ))
    }

    /// See [`SelectionReportAssertionChain::have_budget_utilization_above`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn have_budget_utilization_above(
        self,
        threshold: f64,
        budget: &ContextBudget,
    ) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::have_budget_utilization_above(
            self.report,
            threshold,
            budget,
        ))
    }

    /// See [`SelectionReportAssertionChain::have_kind_coverage_count`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn have_kind_coverage_count(self, n: usize) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::have_kind_coverage_count(self.report, n))
    }

    /// See [`SelectionReportAssertionChain::have_no_partial_groups`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn have_no_partial_groups(self) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::have_no_partial_groups(self.report))
    }

    /// See [`SelectionReportAssertionChain::place_item_at_edge`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn place_item_at_edge(
        self,
        predicate: impl FnMut(&IncludedItem) -> bool,
    ) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::place_item_at_edge(self.report, predicate))
    }

    /// See [`SelectionReportAssertionChain::place_top_n_scored_at_edges`].
    ///
    /// # Errors
    /// The failure described there.
    pub fn place_top_n_scored_at_edges(
        self,
        n: usize,
    ) -> Result<Self, SelectionReportAssertionError> {
        self.then(patterns::place_top_n_scored_at_edges(self.report, n))
    }
}
