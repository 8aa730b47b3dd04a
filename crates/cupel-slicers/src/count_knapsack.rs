//! [`CountConstrainedKnapsackSlice`]: count quotas with knapsack selection.

use cupel_core::{
    CupelError, ScoredItem, SliceBudget, SliceOutcome, Slicer, SlicerKind, VariantOutcome,
};

use crate::count_quota::{CountPolicy, CountQuotaEntry, Phase2Order, ScarcityBehavior};
use crate::knapsack::KnapsackSlice;

const NAME: &str = "CountConstrainedKnapsackSlice";

/// Count requirements and caps per kind, with the residual budget packed by a
/// [`KnapsackSlice`] (the specification's COUNT-KNAPSACK-CAP).
///
/// # Algorithm
/// 1. Empty input or `target_tokens <= 0`: select nothing.
/// 2. **Count-Satisfy**, exactly as in [`CountQuotaSlice`](crate::CountQuotaSlice):
///    per entry with `require_count > 0`, in entry order, commit the kind's
///    best `require_count` items (score descending, NaN last, ties by input
///    index); scarcity gives a shortfall ([`ScarcityBehavior::Degrade`]) or
///    [`CupelError::CountRequirementNotMet`] ([`ScarcityBehavior::Throw`]),
///    whose message reads `CountConstrainedKnapsackSlice: candidate pool for
///    kind '<kind>' has <satisfied> items but RequireCount is <require>.`
/// 3. **Knapsack-Distribute.** The knapsack gets the uncommitted items (input
///    order) and `SliceBudget { max_tokens: budget.max_tokens, target_tokens:
///    min(max(0, target - preallocated), max_tokens) }`. Its selection is then
///    **re-sorted by score descending** (NaN last, ties by input index) — the
///    knapsack's own output order carries no meaning.
/// 4. **Cap enforcement** over the re-sorted selection, with each kind's count
///    **starting from what phase 1 committed**: an item whose kind already has
///    `cap_count` selected items is dropped and reported as a
///    [`CapExclusion`](cupel_core::CapExclusion); kinds without an entry are
///    never capped; committed items are never dropped.
///
/// Output: committed items (commit order), then the kept knapsack items in
/// score order. A knapsack table over its guard fails the slice with
/// [`CupelError::TableTooLarge`]. [`is_monotonic`](Slicer::is_monotonic) is
/// `false`.
///
/// # Choices where the specification is silent
/// As for [`CountQuotaSlice`](crate::CountQuotaSlice): duplicate kinds are
/// rejected at construction, negative-token items are ignored, and the
/// re-sort breaks score ties by input index (lower first).
///
/// ```
/// use cupel_core::{ContextItem, ContextKind, ScoredItem, SliceBudget, Slicer};
/// use cupel_slicers::{CountConstrainedKnapsackSlice, CountQuotaEntry, KnapsackSlice, ScarcityBehavior};
///
/// let tool = |c: &str| ContextItem::builder(c, 100).kind(ContextKind::TOOL_OUTPUT).build();
/// let (a, b, c, d) = (tool("a")?, tool("b")?, tool("c")?, tool("d")?);
/// let items = [
///     ScoredItem::new(&a, 0.9), ScoredItem::new(&b, 0.8),
///     ScoredItem::new(&c, 0.7), ScoredItem::new(&d, 0.6),
/// ];
/// let slicer = CountConstrainedKnapsackSlice::new(
///     vec![CountQuotaEntry::new(ContextKind::TOOL_OUTPUT, 1, 2)?],
///     KnapsackSlice::default(),
///     ScarcityBehavior::Degrade,
/// )?;
/// // a committed; the knapsack takes b, c, d (300 <= 500); cap 2 keeps b only.
/// let out = slicer.slice(&items, SliceBudget::new(600, 600))?;
/// assert_eq!(out.selected, vec![0, 1]);
/// assert_eq!(out.cap_exclusions.len(), 2);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone)]
pub struct CountConstrainedKnapsackSlice {
    policy: CountPolicy,
    knapsack: KnapsackSlice,
}

impl CountConstrainedKnapsackSlice {
    /// Count constraints `entries` around `knapsack`.
    ///
    /// # Errors
    /// [`CupelError::SlicerConfig`] when two entries name the same kind
    /// (entries are validated when built, see [`CountQuotaEntry::new`]).
    pub fn new(
        entries: Vec<CountQuotaEntry>,
        knapsack: KnapsackSlice,
        scarcity: ScarcityBehavior,
    ) -> Result<Self, CupelError> {
        Ok(Self {
            policy: CountPolicy::new(NAME, entries, scarcity)?,
            knapsack,
        })
    }

    /// The count entries, in configured order.
    pub fn entries(&self) -> &[CountQuotaEntry] {
        self.policy.entries()
    }

    /// What happens when a kind has too few candidates.
    pub fn scarcity(&self) -> ScarcityBehavior {
        self.policy.scarcity()
    }

    /// The phase-2 knapsack.
    pub fn knapsack(&self) -> &KnapsackSlice {
        &self.knapsack
    }
}

impl Slicer for CountConstrainedKnapsackSlice {
    fn slice(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<SliceOutcome, CupelError> {
        // Normative re-sort of the knapsack's selection before the cap loop.
        self.policy
            .slice(
                NAME,
                &self.knapsack,
                (Phase2Order::ScoreDescending, false),
                items,
                budget,
            )
            .map(|o| o.outcome)
    }

    fn slice_variants(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<VariantOutcome, CupelError> {
        self.policy.slice(
            NAME,
            &self.knapsack,
            (Phase2Order::ScoreDescending, true),
            items,
            budget,
        )
    }

    fn slicer_kind(&self) -> SlicerKind {
        SlicerKind::CountConstrainedKnapsack
    }

    fn is_monotonic(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{item_kind, scored};
    use cupel_core::{
        CapExclusion, ContextItem, ContextKind, CountRequirementShortfall, TableLimit,
    };

    fn kind(s: &str) -> ContextKind {
        ContextKind::new(s).unwrap()
    }

    fn ccks(
        entries: &[(&str, usize, usize)],
        bucket: i64,
        scarcity: ScarcityBehavior,
    ) -> CountConstrainedKnapsackSlice {
        let entries = entries
            .iter()
            .map(|&(k, r, c)| CountQuotaEntry::new(kind(k), r, c).unwrap())
            .collect();
        CountConstrainedKnapsackSlice::new(entries, KnapsackSlice::new(bucket).unwrap(), scarcity)
            .unwrap()
    }

    fn contents(items: &[ContextItem], idx: &[usize]) -> Vec<String> {
        idx.iter().map(|&i| items[i].content().to_owned()).collect()
    }

    // ----- the specification's conformance vector outlines -----

    #[test]
    fn vector_1_baseline() {
        // Phase 1: tool-a (0.9), tool-b (0.7) committed, preallocated 200.
        // Phase 2: [msg-x] with target 1000 - 200 = 800 (capacity 8, weight 1) -> selected.
        // Phase 3: msg uncapped. Result: all three, no shortfall, no cap exclusion.
        let items = [
            item_kind("tool-a", 100, "tool"),
            item_kind("tool-b", 100, "tool"),
            item_kind("msg-x", 100, "msg"),
        ];
        let s = ccks(&[("tool", 2, 4)], 100, ScarcityBehavior::Degrade);
        let out = s
            .slice(
                &scored(&items, &[0.9, 0.7, 0.5]),
                SliceBudget::new(1000, 1000),
            )
            .unwrap();
        assert_eq!(
            contents(&items, &out.selected),
            ["tool-a", "tool-b", "msg-x"]
        );
        assert!(out.shortfalls.is_empty() && out.cap_exclusions.is_empty());
    }

    #[test]
    fn vector_2_cap_exclusion() {
        // Phase 1: tool-a committed (count 1), preallocated 100.
        // Phase 2: target 600 - 100 = 500 -> capacity 5; weights 1, 1, 1 -> all three
        // selected (reconstruction order d, c, b); re-sort -> b (0.8), c (0.7), d (0.6).
        // Phase 3: b: 1 < 2 kept (count 2); c: 2 >= 2 excluded; d: 2 >= 2 excluded.
        let items = [
            item_kind("tool-a", 100, "tool"),
            item_kind("tool-b", 100, "tool"),
            item_kind("tool-c", 100, "tool"),
            item_kind("tool-d", 100, "tool"),
        ];
        let s = ccks(&[("tool", 1, 2)], 100, ScarcityBehavior::Degrade);
        let out = s
            .slice(
                &scored(&items, &[0.9, 0.8, 0.7, 0.6]),
                SliceBudget::new(600, 600),
            )
            .unwrap();
        assert_eq!(contents(&items, &out.selected), ["tool-a", "tool-b"]);
        assert!(out.shortfalls.is_empty());
        assert_eq!(
            out.cap_exclusions,
            vec![
                CapExclusion::new(2, kind("tool"), 2, 2),
                CapExclusion::new(3, kind("tool"), 2, 2),
            ]
        );
    }

    #[test]
    fn vector_3_scarcity_degrade() {
        // require 3, one candidate: committed, shortfall {tool, 3, 1}; residual empty.
        let items = [item_kind("tool-a", 100, "tool")];
        let s = ccks(&[("tool", 3, 5)], 100, ScarcityBehavior::Degrade);
        let out = s
            .slice(&scored(&items, &[0.9]), SliceBudget::new(500, 500))
            .unwrap();
        assert_eq!(contents(&items, &out.selected), ["tool-a"]);
        assert_eq!(
            out.shortfalls,
            vec![CountRequirementShortfall::new(kind("tool"), 3, 1)]
        );
        assert!(out.cap_exclusions.is_empty());
    }

    #[test]
    fn vector_3_variant_scarcity_throw_has_the_exact_message() {
        let items = [item_kind("tool-a", 100, "tool")];
        let s = ccks(&[("tool", 3, 5)], 100, ScarcityBehavior::Throw);
        let err = s
            .slice(&scored(&items, &[0.9]), SliceBudget::new(500, 500))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "CountConstrainedKnapsackSlice: candidate pool for kind 'tool' has 1 items but RequireCount is 3."
        );
    }

    #[test]
    fn vector_4_tag_non_exclusivity() {
        // Phase 1: item-tool (tool), item-memory (memory) committed, preallocated 200.
        // Phase 2: [item-extra] with 800 -> selected. Phase 3: tool count 1 < 4 -> kept.
        let items = [
            item_kind("item-tool", 100, "tool"),
            item_kind("item-memory", 100, "memory"),
            item_kind("item-extra", 100, "tool"),
        ];
        let s = ccks(
            &[("tool", 1, 4), ("memory", 1, 4)],
            100,
            ScarcityBehavior::Degrade,
        );
        let out = s
            .slice(
                &scored(&items, &[0.9, 0.8, 0.5]),
                SliceBudget::new(1000, 1000),
            )
            .unwrap();
        assert_eq!(
            contents(&items, &out.selected),
            ["item-tool", "item-memory", "item-extra"]
        );
        assert!(out.shortfalls.is_empty() && out.cap_exclusions.is_empty());
    }

    #[test]
    fn vector_5_require_and_cap() {
        // bucket 1. Phase 1: tool-a, tool-b committed (count 2), preallocated 200.
        // Phase 2: msg-s 50 + msg-m 150 + msg-l 200 = 400 <= 800 -> all three.
        // Re-sort: msg-s (0.8), msg-m (0.6), msg-l (0.4); msg uncapped -> all kept.
        let items = [
            item_kind("tool-a", 100, "tool"),
            item_kind("tool-b", 100, "tool"),
            item_kind("msg-s", 50, "msg"),
            item_kind("msg-m", 150, "msg"),
            item_kind("msg-l", 200, "msg"),
        ];
        let s = ccks(&[("tool", 2, 2)], 1, ScarcityBehavior::Degrade);
        let out = s
            .slice(
                &scored(&items, &[0.9, 0.7, 0.8, 0.6, 0.4]),
                SliceBudget::new(1000, 1000),
            )
            .unwrap();
        assert_eq!(
            contents(&items, &out.selected),
            ["tool-a", "tool-b", "msg-s", "msg-m", "msg-l"]
        );
        assert!(out.shortfalls.is_empty() && out.cap_exclusions.is_empty());
    }

    // ----- normative details -----

    #[test]
    fn phase_two_output_is_re_sorted_before_the_cap_loop() {
        // No requirement, cap 1. Knapsack takes both (bucket 1, 20 <= 100) and
        // reconstructs hi last: [lo, hi]. Without the re-sort lo would be kept;
        // with it hi (0.9) is kept and lo excluded.
        let items = [item_kind("hi", 10, "tool"), item_kind("lo", 10, "tool")];
        let s = ccks(&[("tool", 0, 1)], 1, ScarcityBehavior::Degrade);
        let out = s
            .slice(&scored(&items, &[0.9, 0.5]), SliceBudget::new(100, 100))
            .unwrap();
        assert_eq!(out.selected, vec![0]);
        assert_eq!(
            out.cap_exclusions,
            vec![CapExclusion::new(1, kind("tool"), 1, 1)]
        );
    }

    #[test]
    fn re_sort_ties_break_by_input_index() {
        // Equal scores: knapsack returns [b, a]; re-sort gives [a, b]; cap 1 keeps a.
        let items = [item_kind("a", 10, "tool"), item_kind("b", 10, "tool")];
        let s = ccks(&[("tool", 0, 1)], 1, ScarcityBehavior::Degrade);
        let out = s
            .slice(&scored(&items, &[0.5, 0.5]), SliceBudget::new(100, 100))
            .unwrap();
        assert_eq!(out.selected, vec![0]);
    }

    #[test]
    fn cap_counts_are_seeded_from_phase_one() {
        // require = cap = 1: t1 committed (count 1); the knapsack also picks t2,
        // which is excluded at count 1 (a zero-seeded count would have kept it).
        let items = [item_kind("t1", 10, "tool"), item_kind("t2", 10, "tool")];
        let s = ccks(&[("tool", 1, 1)], 1, ScarcityBehavior::Degrade);
        let out = s
            .slice(&scored(&items, &[0.9, 0.8]), SliceBudget::new(100, 100))
            .unwrap();
        assert_eq!(out.selected, vec![0]);
        assert_eq!(
            out.cap_exclusions,
            vec![CapExclusion::new(1, kind("tool"), 1, 1)]
        );
    }

    // ----- edge-case table -----

    #[test]
    fn empty_input_and_non_positive_target() {
        let s = ccks(&[("tool", 1, 1)], 100, ScarcityBehavior::Throw);
        assert_eq!(
            s.slice(&[], SliceBudget::new(10, 10)).unwrap(),
            SliceOutcome::default()
        );
        let items = [item_kind("t", 10, "tool")];
        assert_eq!(
            s.slice(&scored(&items, &[0.5]), SliceBudget::new(10, 0))
                .unwrap(),
            SliceOutcome::default()
        );
    }

    #[test]
    fn no_entries_is_a_plain_knapsack_in_score_order() {
        // bucket 1, target 100: a (51, .9) vs b + c (50 + 50, .6 each): 12000 > 9000.
        let items = [
            item_kind("a", 51, "x"),
            item_kind("b", 50, "x"),
            item_kind("c", 50, "x"),
        ];
        let s = ccks(&[], 1, ScarcityBehavior::Degrade);
        let out = s
            .slice(
                &scored(&items, &[0.9, 0.6, 0.6]),
                SliceBudget::new(100, 100),
            )
            .unwrap();
        assert_eq!(out.selected, vec![1, 2]);
    }

    #[test]
    fn phase_one_exhausting_the_budget_leaves_nothing_for_the_knapsack() {
        // t (300) committed with target 200: residual target max(0, -100) = 0.
        let items = [item_kind("t", 300, "tool"), item_kind("m", 1, "msg")];
        let s = ccks(&[("tool", 1, 1)], 1, ScarcityBehavior::Degrade);
        let out = s
            .slice(&scored(&items, &[0.9, 0.9]), SliceBudget::new(1000, 200))
            .unwrap();
        assert_eq!(out.selected, vec![0]);
    }

    #[test]
    fn table_too_large_propagates() {
        // 2 residual candidates x (floor(1000 / 1) + 1) = 2002 cells > 100.
        let entries = vec![CountQuotaEntry::new(kind("tool"), 0, 5).unwrap()];
        let k = KnapsackSlice::new(1).unwrap().with_max_table_cells(100);
        let s = CountConstrainedKnapsackSlice::new(entries, k, ScarcityBehavior::Degrade).unwrap();
        let items = [item_kind("a", 10, "tool"), item_kind("b", 10, "msg")];
        let err = s
            .slice(&scored(&items, &[0.5, 0.5]), SliceBudget::new(1000, 1000))
            .unwrap_err();
        assert_eq!(
            err,
            CupelError::TableTooLarge {
                candidates: 2,
                capacity: 1001,
                cells: 2002,
                keep_bytes: 2 * 16 * 8,
                // Two u32 rows of 1001 buckets.
                row_bytes: 2 * 1001 * 4,
                limit: TableLimit::Cells(100)
            }
        );
    }

    #[test]
    fn duplicate_kinds_are_rejected() {
        let entries = vec![
            CountQuotaEntry::new(kind("tool"), 1, 1).unwrap(),
            CountQuotaEntry::new(kind("Tool"), 1, 2).unwrap(),
        ];
        let err = CountConstrainedKnapsackSlice::new(
            entries,
            KnapsackSlice::default(),
            ScarcityBehavior::Degrade,
        )
        .unwrap_err();
        assert!(
            matches!(err, CupelError::SlicerConfig(m) if m.starts_with("CountConstrainedKnapsackSlice"))
        );
    }

    #[test]
    fn reports_kind_and_non_monotonicity() {
        let s = ccks(&[], 100, ScarcityBehavior::Degrade);
        assert_eq!(s.slicer_kind(), SlicerKind::CountConstrainedKnapsack);
        assert!(!s.is_monotonic());
        assert_eq!(s.knapsack().bucket_size(), 100);
    }
}
