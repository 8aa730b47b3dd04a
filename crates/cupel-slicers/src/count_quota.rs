//! [`CountQuotaSlice`] and the count policy it shares with
//! [`CountConstrainedKnapsackSlice`](crate::CountConstrainedKnapsackSlice).

use std::fmt;
use std::sync::Arc;

use cupel_core::{
    CapExclusion, ContextKind, CountRequirementShortfall, CupelError, ScoredItem, SliceBudget,
    SliceOutcome, SliceRoom, Slicer, SlicerKind, VariantOutcome, score_cmp_desc,
};

use crate::inner::{selected_tokens, slice_subset_with};
use crate::kinds::KindLookup;
use crate::variants::chosen_tokens;

/// What a count-quota slicer does when a kind has fewer candidates than its
/// `require_count`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScarcityBehavior {
    /// Commit every candidate there is, record a
    /// [`CountRequirementShortfall`] in the outcome, and carry on (the default).
    #[default]
    Degrade,
    /// Fail the slice with [`CupelError::CountRequirementNotMet`].
    Throw,
}

/// One kind's count constraint: commit at least `require_count` items of the
/// kind, keep at most `cap_count`.
///
/// ```
/// use cupel_core::ContextKind;
/// use cupel_slicers::CountQuotaEntry;
///
/// let tools = CountQuotaEntry::new(ContextKind::TOOL_OUTPUT, 2, 5)?;
/// assert_eq!((tools.require_count(), tools.cap_count()), (2, 5));
/// assert!(CountQuotaEntry::new(ContextKind::TOOL_OUTPUT, 3, 2).is_err()); // require > cap
/// assert!(CountQuotaEntry::new(ContextKind::TOOL_OUTPUT, 1, 0).is_err()); // cap 0, require > 0
/// assert!(CountQuotaEntry::new(ContextKind::TOOL_OUTPUT, 0, 0).is_ok());  // "never any"
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CountQuotaEntry {
    kind: ContextKind,
    require_count: usize,
    cap_count: usize,
}

impl CountQuotaEntry {
    /// A validated entry.
    ///
    /// # Errors
    /// [`CupelError::SlicerConfig`] when `cap_count == 0` while
    /// `require_count > 0`, or when `require_count > cap_count`.
    pub fn new(
        kind: ContextKind,
        require_count: usize,
        cap_count: usize,
    ) -> Result<Self, CupelError> {
        if cap_count == 0 && require_count > 0 {
            return Err(CupelError::SlicerConfig(format!(
                "CountQuotaEntry for kind '{kind}': cap_count 0 with require_count {require_count} can never be satisfied"
            )));
        }
        if require_count > cap_count {
            return Err(CupelError::SlicerConfig(format!(
                "CountQuotaEntry for kind '{kind}': require_count ({require_count}) must not exceed cap_count ({cap_count})"
            )));
        }
        Ok(Self {
            kind,
            require_count,
            cap_count,
        })
    }

    /// The constrained kind (compared case-insensitively).
    pub fn kind(&self) -> &ContextKind {
        &self.kind
    }

    /// Minimum number of items of the kind committed in phase 1.
    pub fn require_count(&self) -> usize {
        self.require_count
    }

    /// Maximum number of items of the kind in the result.
    pub fn cap_count(&self) -> usize {
        self.cap_count
    }
}

/// Validated entries plus a kind lookup; shared by both count slicers.
#[derive(Debug, Clone)]
pub(crate) struct CountPolicy {
    entries: Vec<CountQuotaEntry>,
    /// Kind -> entry position (case-insensitive).
    by_kind: KindLookup<ContextKind>,
    scarcity: ScarcityBehavior,
}

/// In which order phase 3 sees the phase-2 selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase2Order {
    /// The inner slicer's output order (`CountQuotaSlice`).
    AsReturned,
    /// Score descending, NaN last, ties by input index
    /// (`CountConstrainedKnapsackSlice`; the knapsack's order means nothing).
    ScoreDescending,
}

/// Phase 1's result.
struct Committed {
    /// Committed input indices, in commit order (entry order, then score order).
    committed: Vec<usize>,
    /// `is_committed[i]` for every input index.
    is_committed: Vec<bool>,
    /// Selected count per entry (seeded by phase 1, advanced by phase 3).
    counts: Vec<usize>,
    /// Sum of the committed items' tokens.
    preallocated: i128,
    shortfalls: Vec<CountRequirementShortfall>,
}

/// Score descending, NaN last, ties by input index: a total order.
fn by_score_then_index(items: &[ScoredItem<'_>], a: usize, b: usize) -> std::cmp::Ordering {
    let score = |i: usize| items.get(i).map_or(f64::NAN, |s| s.score);
    score_cmp_desc(score(a), score(b)).then(a.cmp(&b))
}

impl CountPolicy {
    pub(crate) fn new(
        slicer: &str,
        entries: Vec<CountQuotaEntry>,
        scarcity: ScarcityBehavior,
    ) -> Result<Self, CupelError> {
        let mut by_kind = KindLookup::default();
        for (i, e) in entries.iter().enumerate() {
            if let Some(first) = by_kind.get(&e.kind) {
                return Err(CupelError::SlicerConfig(format!(
                    "{slicer}: kind '{}' has more than one entry (entries {first} and {i})",
                    e.kind
                )));
            }
            by_kind.insert(e.kind.clone());
        }
        Ok(Self {
            entries,
            by_kind,
            scarcity,
        })
    }

    pub(crate) fn entries(&self) -> &[CountQuotaEntry] {
        &self.entries
    }

    pub(crate) fn scarcity(&self) -> ScarcityBehavior {
        self.scarcity
    }

    /// The three phases around `inner` (see [`CountQuotaSlice`]); `slicer`
    /// names the caller in errors. With `order.1` set, phase 2 may take
    /// variants (phase 1 commits whole items; a cap counts an item once,
    /// whichever form it is in).
    pub(crate) fn slice(
        &self,
        slicer: &'static str,
        inner: &dyn Slicer,
        (order, variants): (Phase2Order, bool),
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<VariantOutcome, CupelError> {
        if crate::inner::nothing_to_slice(slicer, items, budget)? {
            return Ok(VariantOutcome::default());
        }
        let Committed {
            committed,
            is_committed,
            mut counts,
            preallocated,
            shortfalls,
        } = self.commit_required(slicer, items)?;

        // Phase 2: the uncommitted, non-negative-token items (input order)
        // with the target reduced by what phase 1 took.
        let residual: Vec<usize> = items
            .iter()
            .zip(&is_committed)
            .enumerate()
            .filter(|(_, (s, committed))| !**committed && s.item.tokens() >= 0)
            .map(|(i, _)| i)
            .collect();
        let target = (i128::from(budget.target_tokens) - preallocated)
            .max(0)
            .min(i128::from(budget.max_tokens));
        // min(.., max_tokens) keeps it within i64.
        let target = i64::try_from(target).unwrap_or(budget.max_tokens);
        let sub = SliceBudget::new(budget.max_tokens, target);
        let got = slice_subset_with(slicer, inner, items, &residual, sub, variants)?;
        // The room phase 2 left: what the items the inner slicer passed over
        // actually had (items the caps remove afterwards took room when it chose).
        let used = if got.picks.is_empty() {
            selected_tokens(items, &got.outcome.selected)
        } else {
            chosen_tokens(items, &got)
        };
        let phase2_room = target.saturating_sub(used);
        let mut picks = got.picks;
        let inner = got.outcome;
        let mut phase2 = inner.selected;
        if order == Phase2Order::ScoreDescending {
            phase2.sort_unstable_by(|&a, &b| by_score_then_index(items, a, b));
        }

        let mut out = SliceOutcome {
            selected: committed,
            shortfalls,
            cap_exclusions: Vec::new(),
            // The inner slicer's own (finer) rooms first: the first listed counts.
            rooms: inner.rooms,
        };
        out.rooms.push(SliceRoom::new(phase2_room, residual));
        self.enforce_caps(items, &phase2, &mut counts, &mut out);
        // Whatever the inner slicer reported itself comes after our own.
        out.shortfalls.extend(inner.shortfalls);
        out.cap_exclusions.extend(inner.cap_exclusions);
        if !picks.is_empty() {
            // A capped item is out in every form.
            let mut kept = vec![false; items.len()];
            for &i in &out.selected {
                if let Some(k) = kept.get_mut(i) {
                    *k = true;
                }
            }
            picks.retain(|p| kept.get(p.index).copied().unwrap_or(false));
        }
        Ok(VariantOutcome {
            outcome: out,
            picks,
        })
    }

    /// Phase 1 (Count-Satisfy): per entry with `require_count > 0`, in entry
    /// order, commit the kind's best `require_count` items.
    fn commit_required(
        &self,
        slicer: &'static str,
        items: &[ScoredItem<'_>],
    ) -> Result<Committed, CupelError> {
        // Partition only the kinds that have a requirement.
        let mut partitions: Vec<Vec<usize>> = vec![Vec::new(); self.entries.len()];
        for (i, s) in items.iter().enumerate() {
            if s.item.tokens() < 0 {
                continue;
            }
            if let Some(e) = self.by_kind.get(s.item.kind())
                && self.entries[e].require_count > 0
            {
                partitions[e].push(i);
            }
        }
        let mut c = Committed {
            committed: Vec::new(),
            is_committed: vec![false; items.len()],
            counts: vec![0; self.entries.len()],
            preallocated: 0,
            shortfalls: Vec::new(),
        };
        for (e, (entry, part)) in self.entries.iter().zip(&mut partitions).enumerate() {
            if entry.require_count == 0 {
                continue;
            }
            part.sort_unstable_by(|&a, &b| by_score_then_index(items, a, b));
            let take = entry.require_count.min(part.len());
            for &i in &part[..take] {
                c.committed.push(i);
                c.is_committed[i] = true;
                c.preallocated += i128::from(items[i].item.tokens());
            }
            c.counts[e] = take;
            if take < entry.require_count {
                match self.scarcity {
                    ScarcityBehavior::Throw => {
                        return Err(CupelError::CountRequirementNotMet {
                            slicer,
                            kind: entry.kind.to_string(),
                            satisfied: take,
                            required: entry.require_count,
                        });
                    }
                    ScarcityBehavior::Degrade => c.shortfalls.push(CountRequirementShortfall::new(
                        entry.kind.clone(),
                        entry.require_count,
                        take,
                    )),
                }
            }
        }
        Ok(c)
    }

    /// Phase 3 (cap enforcement) over `phase2` (input indices, in the order
    /// given), appending kept items to `out.selected` and excluded ones to
    /// `out.cap_exclusions`. Counts continue from phase 1.
    fn enforce_caps(
        &self,
        items: &[ScoredItem<'_>],
        phase2: &[usize],
        counts: &mut [usize],
        out: &mut SliceOutcome,
    ) {
        for &i in phase2 {
            let Some(s) = items.get(i) else { continue };
            match self.by_kind.get(s.item.kind()) {
                Some(e) => {
                    let entry = &self.entries[e];
                    let count = counts[e];
                    if count >= entry.cap_count {
                        out.cap_exclusions.push(CapExclusion::new(
                            i,
                            entry.kind.clone(),
                            entry.cap_count,
                            count,
                        ));
                    } else {
                        out.selected.push(i);
                        counts[e] = count + 1;
                    }
                }
                None => out.selected.push(i),
            }
        }
    }
}

/// Guarantees and limits item *counts* per kind around an inner slicer.
///
/// # Algorithm
/// 1. Empty input or `target_tokens <= 0`: select nothing.
/// 2. **Count-Satisfy.** For each entry with `require_count > 0`, in entry
///    order: take that kind's items (case-insensitive), sort them by score
///    descending (NaN last, ties by input index), and commit the first
///    `require_count`, whatever their tokens. Their tokens add up to
///    `preallocated`; the number committed seeds the kind's count. If there
///    are fewer candidates than required: under
///    [`ScarcityBehavior::Throw`] the slice fails with
///    [`CupelError::CountRequirementNotMet`]; under
///    [`ScarcityBehavior::Degrade`] a [`CountRequirementShortfall`] is
///    returned in [`SliceOutcome::shortfalls`].
/// 3. **Budget-Distribute.** The inner slicer gets the uncommitted items (in
///    input order) and `SliceBudget { max_tokens: budget.max_tokens,
///    target_tokens: min(max(0, target - preallocated), max_tokens) }`.
/// 4. **Cap enforcement**, over the inner slicer's selection **in its output
///    order**: an item whose kind has an entry and already has `cap_count`
///    selected items is dropped and reported as a [`CapExclusion`] (with the
///    count at that moment); otherwise it is kept and its kind's count grows.
///    Kinds without an entry are never capped. Committed items are never
///    dropped.
///
/// Output: the committed items (commit order), then the kept phase-2 items.
/// Phase 1 ignores the budget, so the committed items alone may exceed the
/// target. [`is_monotonic`](Slicer::is_monotonic) is `false`.
///
/// The inner slicer must not be a [`KnapsackSlice`](crate::KnapsackSlice)
/// (checked at construction via [`Slicer::slicer_kind`]); use
/// [`CountConstrainedKnapsackSlice`](crate::CountConstrainedKnapsackSlice)
/// for count constraints with knapsack selection.
///
/// # Choices where the specification is silent
/// * Two entries for the same kind (case-insensitively) are rejected at
///   construction: which one would govern is ambiguous.
/// * Equal scores within a kind commit the lower input index first.
/// * Items with negative token counts (never passed by the pipeline) are
///   neither committed nor handed to the inner slicer.
/// * A [`CapExclusion`]'s `kind` is the entry's kind (the configured spelling).
/// * Shortfalls and cap exclusions reported by the inner slicer itself are
///   passed through after this slicer's own shortfalls.
///
/// ```
/// use std::sync::Arc;
/// use cupel_core::{ContextItem, ContextKind, ScoredItem, SliceBudget, Slicer};
/// use cupel_slicers::{CountQuotaEntry, CountQuotaSlice, GreedySlice, ScarcityBehavior};
///
/// let tool = |c: &str| ContextItem::builder(c, 100).kind(ContextKind::TOOL_OUTPUT).build();
/// let (a, b, c) = (tool("a")?, tool("b")?, tool("c")?);
/// let msg = ContextItem::builder("m", 100).kind(ContextKind::MESSAGE).build()?;
/// let items = [
///     ScoredItem::new(&msg, 0.9),
///     ScoredItem::new(&a, 0.8),
///     ScoredItem::new(&b, 0.7),
///     ScoredItem::new(&c, 0.6),
/// ];
/// let slicer = CountQuotaSlice::new(
///     vec![CountQuotaEntry::new(ContextKind::TOOL_OUTPUT, 1, 2)?],
///     Arc::new(GreedySlice),
///     ScarcityBehavior::Degrade,
/// )?;
/// // Phase 1 commits a (best tool). Greedy gets [m, b, c] with 1000 - 100 = 900:
/// // takes m, b, c; the cap of 2 tools drops c.
/// let out = slicer.slice(&items, SliceBudget::new(1000, 1000))?;
/// assert_eq!(out.selected, vec![1, 0, 2]);
/// assert_eq!(out.cap_exclusions.len(), 1);
/// assert_eq!(out.cap_exclusions[0].index, 3);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Clone)]
pub struct CountQuotaSlice {
    policy: CountPolicy,
    inner: Arc<dyn Slicer>,
}

impl fmt::Debug for CountQuotaSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountQuotaSlice")
            .field("entries", &self.policy.entries)
            .field("scarcity", &self.policy.scarcity)
            .field("inner", &self.inner.slicer_kind())
            .finish()
    }
}

const COUNT_QUOTA: &str = "CountQuotaSlice";

impl CountQuotaSlice {
    /// A count-quota slicer around `inner`.
    ///
    /// # Errors
    /// [`CupelError::SlicerConfig`] when `inner` reports
    /// [`SlicerKind::Knapsack`], or when two entries name the same kind.
    pub fn new(
        entries: Vec<CountQuotaEntry>,
        inner: Arc<dyn Slicer>,
        scarcity: ScarcityBehavior,
    ) -> Result<Self, CupelError> {
        if inner.slicer_kind() == SlicerKind::Knapsack {
            return Err(CupelError::SlicerConfig(
                "CountQuotaSlice does not support KnapsackSlice as its inner slicer; \
                 use GreedySlice, or CountConstrainedKnapsackSlice for knapsack selection"
                    .into(),
            ));
        }
        Ok(Self {
            policy: CountPolicy::new(COUNT_QUOTA, entries, scarcity)?,
            inner,
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

    /// The inner slicer.
    pub fn inner(&self) -> &Arc<dyn Slicer> {
        &self.inner
    }
}

impl Slicer for CountQuotaSlice {
    fn slice(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<SliceOutcome, CupelError> {
        self.policy
            .slice(
                COUNT_QUOTA,
                &*self.inner,
                (Phase2Order::AsReturned, false),
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
            COUNT_QUOTA,
            &*self.inner,
            (Phase2Order::AsReturned, true),
            items,
            budget,
        )
    }

    fn slicer_kind(&self) -> SlicerKind {
        SlicerKind::CountQuota
    }

    fn is_monotonic(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{item_kind, scored};
    use crate::{GreedySlice, KnapsackSlice, QuotaSet, QuotaSlice};
    use std::sync::Mutex;

    fn kind(s: &str) -> ContextKind {
        ContextKind::new(s).unwrap()
    }

    fn entry(k: &str, r: usize, c: usize) -> CountQuotaEntry {
        CountQuotaEntry::new(kind(k), r, c).unwrap()
    }

    fn cq(entries: Vec<CountQuotaEntry>, scarcity: ScarcityBehavior) -> CountQuotaSlice {
        CountQuotaSlice::new(entries, Arc::new(GreedySlice), scarcity).unwrap()
    }

    #[derive(Default)]
    struct Spy(Mutex<Vec<(Vec<String>, SliceBudget)>>);
    impl Slicer for Spy {
        fn slice(
            &self,
            items: &[ScoredItem<'_>],
            b: SliceBudget,
        ) -> Result<SliceOutcome, CupelError> {
            let names = items.iter().map(|s| s.item.content().to_owned()).collect();
            self.0.lock().unwrap().push((names, b));
            // Select everything, in reverse order, to exercise the mapping and
            // the inner-output-order cap loop.
            Ok(SliceOutcome::selected((0..items.len()).rev().collect()))
        }
    }

    // ----- rooms -----

    #[test]
    fn rooms_are_phase_two_and_the_inner_slicers_own_first() {
        // Target 500; entries tool require 1 cap 1; inner QuotaSlice without quotas.
        // Items: t1 (tool 100, 0.9), t2 (tool 100, 0.8), m1 (msg 250, 0.7), m2 (msg 100, 0.6).
        // Phase 1 commits t1 (100). Phase 2: residual [t2, m1, m2], target 500 - 100 = 400.
        // Inner quota shares over masses tool 100, msg 350 (450):
        //   tool floor(400 * 100 / 450) = 88: t2 100 > 88 -> room 88;
        //   msg floor(400 * 350 / 450) = 311: m2 (density 0.006) 100 -> 211 left,
        //   m1 250 > 211 -> room 211.
        // Phase-2 room = 400 - 100 (m2) = 300 for all of the residual, listed after
        // the inner rooms (mapped back to our indices), so t2 reads 88 and m1 211.
        let items = [
            item_kind("t1", 100, "tool"),
            item_kind("t2", 100, "tool"),
            item_kind("m1", 250, "msg"),
            item_kind("m2", 100, "msg"),
        ];
        let s = scored(&items, &[0.9, 0.8, 0.7, 0.6]);
        let inner = QuotaSlice::new(QuotaSet::empty(), Arc::new(GreedySlice));
        let slicer = CountQuotaSlice::new(
            vec![entry("tool", 1, 1)],
            Arc::new(inner),
            ScarcityBehavior::Degrade,
        )
        .unwrap();
        let out = slicer.slice(&s, SliceBudget::new(500, 500)).unwrap();
        assert_eq!(out.selected, vec![0, 3]);
        assert_eq!(
            out.rooms,
            vec![
                SliceRoom::new(88, vec![1]),
                SliceRoom::new(211, vec![2, 3]),
                SliceRoom::new(300, vec![1, 2, 3]),
            ]
        );
    }

    // ----- construction -----

    #[test]
    fn entry_validation() {
        let e = CountQuotaEntry::new(kind("tool"), 3, 2).unwrap_err();
        assert_eq!(
            e,
            CupelError::SlicerConfig(
                "CountQuotaEntry for kind 'tool': require_count (3) must not exceed cap_count (2)"
                    .into()
            )
        );
        let e = CountQuotaEntry::new(kind("tool"), 1, 0).unwrap_err();
        assert!(matches!(e, CupelError::SlicerConfig(m) if m.contains("cap_count 0")));
        assert!(CountQuotaEntry::new(kind("tool"), 0, 0).is_ok());
        assert!(CountQuotaEntry::new(kind("tool"), 2, 2).is_ok());
    }

    #[test]
    fn knapsack_inner_is_rejected_at_construction() {
        let err = CountQuotaSlice::new(
            vec![],
            Arc::new(KnapsackSlice::default()),
            ScarcityBehavior::Degrade,
        )
        .unwrap_err();
        assert!(matches!(err, CupelError::SlicerConfig(m) if m.contains("KnapsackSlice")));
        // Through another pointer layer too (the forwarding impls keep slicer_kind).
        let boxed: Arc<dyn Slicer> = Arc::new(Box::new(KnapsackSlice::default()));
        assert!(CountQuotaSlice::new(vec![], boxed, ScarcityBehavior::Degrade).is_err());
        // A quota slicer wrapping a knapsack is not a knapsack.
        let q = QuotaSlice::new(QuotaSet::empty(), Arc::new(KnapsackSlice::default()));
        assert!(CountQuotaSlice::new(vec![], Arc::new(q), ScarcityBehavior::Degrade).is_ok());
    }

    #[test]
    fn duplicate_kinds_are_rejected() {
        let err = CountQuotaSlice::new(
            vec![entry("tool", 1, 2), entry("TOOL", 0, 3)],
            Arc::new(GreedySlice),
            ScarcityBehavior::Degrade,
        )
        .unwrap_err();
        assert!(
            matches!(err, CupelError::SlicerConfig(m) if m.contains("'TOOL' has more than one entry"))
        );
    }

    // ----- edge-case table -----

    #[test]
    fn empty_input_and_non_positive_target() {
        let s = cq(vec![entry("tool", 1, 2)], ScarcityBehavior::Throw);
        assert_eq!(
            s.slice(&[], SliceBudget::new(10, 10)).unwrap(),
            SliceOutcome::default()
        );
        let items = [item_kind("t", 1, "tool")];
        // target 0: empty before phase 1, so even Throw does not fire... and
        // nothing is committed.
        assert_eq!(
            s.slice(&scored(&items, &[0.5]), SliceBudget::new(10, 0))
                .unwrap(),
            SliceOutcome::default()
        );
    }

    #[test]
    fn no_entries_runs_the_inner_slicer_unconstrained() {
        let s = cq(vec![], ScarcityBehavior::Degrade);
        let items = [item_kind("a", 60, "x"), item_kind("b", 50, "y")];
        // Greedy: a .9/60 = .015, b .5/50 = .01 -> a (40 left), b 50 > 40.
        // Phase 2 had the whole target: room 100 - 60 = 40 for both items.
        let out = s
            .slice(&scored(&items, &[0.9, 0.5]), SliceBudget::new(100, 100))
            .unwrap();
        assert_eq!(
            out,
            SliceOutcome {
                rooms: vec![SliceRoom::new(40, vec![0, 1])],
                ..SliceOutcome::selected(vec![0])
            }
        );
    }

    #[test]
    fn require_equal_to_cap_admits_no_more_of_that_kind() {
        // require = cap = 1: t1 committed (count 1); greedy takes t2 and m; t2
        // is dropped (count 1 >= cap 1).
        let s = cq(vec![entry("tool", 1, 1)], ScarcityBehavior::Degrade);
        let items = [
            item_kind("t1", 10, "tool"),
            item_kind("t2", 10, "tool"),
            item_kind("m", 10, "msg"),
        ];
        let out = s
            .slice(
                &scored(&items, &[0.9, 0.8, 0.7]),
                SliceBudget::new(100, 100),
            )
            .unwrap();
        assert_eq!(out.selected, vec![0, 2]);
        assert_eq!(
            out.cap_exclusions,
            vec![CapExclusion::new(1, kind("tool"), 1, 1)]
        );
    }

    #[test]
    fn require_zero_cap_positive_caps_phase_two_only() {
        // Nothing committed; greedy (equal densities -> index order) returns
        // t1, t2, t3; cap 2 drops t3 (count 2).
        let s = cq(vec![entry("tool", 0, 2)], ScarcityBehavior::Degrade);
        let items = [
            item_kind("t1", 10, "tool"),
            item_kind("t2", 10, "tool"),
            item_kind("t3", 10, "tool"),
        ];
        let out = s
            .slice(
                &scored(&items, &[0.5, 0.5, 0.5]),
                SliceBudget::new(100, 100),
            )
            .unwrap();
        assert_eq!(out.selected, vec![0, 1]);
        assert_eq!(
            out.cap_exclusions,
            vec![CapExclusion::new(2, kind("tool"), 2, 2)]
        );
    }

    #[test]
    fn scarcity_degrade_records_a_shortfall() {
        let s = cq(vec![entry("tool", 3, 5)], ScarcityBehavior::Degrade);
        let items = [item_kind("t", 100, "tool")];
        let out = s
            .slice(&scored(&items, &[0.9]), SliceBudget::new(500, 500))
            .unwrap();
        assert_eq!(out.selected, vec![0]);
        assert_eq!(
            out.shortfalls,
            vec![CountRequirementShortfall::new(kind("tool"), 3, 1)]
        );
    }

    #[test]
    fn scarcity_throw_fails_with_the_spec_message() {
        let s = cq(vec![entry("tool", 3, 5)], ScarcityBehavior::Throw);
        let items = [item_kind("t", 100, "Tool")];
        let err = s
            .slice(&scored(&items, &[0.9]), SliceBudget::new(500, 500))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "CountQuotaSlice: candidate pool for kind 'tool' has 1 items but RequireCount is 3."
        );
    }

    #[test]
    fn phase_one_exhausting_the_budget_leaves_phase_two_nothing() {
        // t1 (300) committed regardless of target 200; residual target max(0, 200-300) = 0.
        let spy = Arc::new(Spy::default());
        let s = CountQuotaSlice::new(
            vec![entry("tool", 1, 5)],
            spy.clone(),
            ScarcityBehavior::Degrade,
        )
        .unwrap();
        let items = [item_kind("t1", 300, "tool"), item_kind("m", 10, "msg")];
        let out = s
            .slice(&scored(&items, &[0.9, 0.8]), SliceBudget::new(1000, 200))
            .unwrap();
        assert_eq!(
            spy.0.lock().unwrap()[0],
            (vec!["m".to_owned()], SliceBudget::new(1000, 0))
        );
        // The spy selects regardless of budget; a real slicer would return
        // nothing for target 0 — with greedy:
        assert_eq!(out.selected, vec![0, 1]);
        let g = cq(vec![entry("tool", 1, 5)], ScarcityBehavior::Degrade);
        let out = g
            .slice(&scored(&items, &[0.9, 0.8]), SliceBudget::new(1000, 200))
            .unwrap();
        assert_eq!(out.selected, vec![0]);
    }

    // ----- phases -----

    #[test]
    fn phase_two_budget_is_target_minus_preallocated_clamped_to_max() {
        let spy = Arc::new(Spy::default());
        let s = CountQuotaSlice::new(
            vec![entry("tool", 1, 5)],
            spy.clone(),
            ScarcityBehavior::Degrade,
        )
        .unwrap();
        let items = [item_kind("m", 10, "msg"), item_kind("t", 30, "tool")];
        // target 100 - 30 = 70, max 500.
        s.slice(&scored(&items, &[0.9, 0.8]), SliceBudget::new(500, 100))
            .unwrap();
        // target 100 - 30 = 70 but max 50 -> min(70, 50) = 50.
        s.slice(&scored(&items, &[0.9, 0.8]), SliceBudget::new(50, 100))
            .unwrap();
        let calls = spy.0.lock().unwrap().clone();
        assert_eq!(calls[0], (vec!["m".to_owned()], SliceBudget::new(500, 70)));
        assert_eq!(calls[1], (vec!["m".to_owned()], SliceBudget::new(50, 50)));
    }

    #[test]
    fn phase_one_sorts_each_kind_by_score_with_index_ties() {
        // tool candidates in input order: t0 0.5, t1 0.9, t2 0.5, t3 0.0.
        // Sorted: t1 (0.9), t0 (0.5, idx 0), t2 (0.5, idx 2), t3 (0.0 last).
        // require 3 -> commits 1, 0, 2.
        let s = cq(vec![entry("tool", 3, 3)], ScarcityBehavior::Degrade);
        let items = [
            item_kind("t0", 10, "tool"),
            item_kind("t1", 10, "TOOL"),
            item_kind("t2", 10, "Tool"),
            item_kind("t3", 10, "tool"),
        ];
        let out = s
            .slice(
                &scored(&items, &[0.5, 0.9, 0.5, 0.0]),
                SliceBudget::new(100, 100),
            )
            .unwrap();
        // Greedy gets [t3] (fits 70) -> capped (3 >= 3).
        assert_eq!(out.selected, vec![1, 0, 2]);
        assert_eq!(
            out.cap_exclusions,
            vec![CapExclusion::new(3, kind("tool"), 3, 3)]
        );
    }

    #[test]
    fn entries_commit_in_entry_order() {
        let s = cq(
            vec![entry("b", 1, 2), entry("a", 1, 2)],
            ScarcityBehavior::Degrade,
        );
        let items = [item_kind("a1", 10, "a"), item_kind("b1", 10, "b")];
        let out = s
            .slice(&scored(&items, &[0.9, 0.1]), SliceBudget::new(100, 100))
            .unwrap();
        assert_eq!(out.selected, vec![1, 0]);
    }

    #[test]
    fn throw_reports_the_first_failing_entry_in_entry_order() {
        let s = cq(
            vec![entry("a", 2, 2), entry("b", 5, 5)],
            ScarcityBehavior::Throw,
        );
        let items = [item_kind("b1", 10, "b")];
        let err = s
            .slice(&scored(&items, &[0.9]), SliceBudget::new(100, 100))
            .unwrap_err();
        assert_eq!(
            err,
            CupelError::CountRequirementNotMet {
                slicer: "CountQuotaSlice",
                kind: "a".into(),
                satisfied: 0,
                required: 2
            }
        );
    }

    #[test]
    fn cap_loop_follows_inner_output_order() {
        // Spy returns the residual reversed: [t3, t2, m] -> t3 kept (count 2),
        // t2 dropped (count 2 >= 2), m uncapped.
        let spy = Arc::new(Spy::default());
        let s = CountQuotaSlice::new(vec![entry("tool", 1, 2)], spy, ScarcityBehavior::Degrade)
            .unwrap();
        let items = [
            item_kind("t1", 10, "tool"),
            item_kind("m", 10, "msg"),
            item_kind("t2", 10, "tool"),
            item_kind("t3", 10, "tool"),
        ];
        let out = s
            .slice(
                &scored(&items, &[0.9, 0.8, 0.7, 0.6]),
                SliceBudget::new(100, 100),
            )
            .unwrap();
        assert_eq!(out.selected, vec![0, 3, 1]);
        assert_eq!(
            out.cap_exclusions,
            vec![CapExclusion::new(2, kind("tool"), 2, 2)]
        );
    }

    #[test]
    fn many_entries_use_the_hashed_lookup_with_the_same_results() {
        // 20 kinds (> 16: hashed lookup), require 1 cap 1 each; two items per
        // kind with differently cased kinds: the better one is committed, the
        // other reaches phase 2 and is capped.
        let entries: Vec<_> = (0..20).map(|k| entry(&format!("Kind{k}"), 1, 1)).collect();
        let s = cq(entries, ScarcityBehavior::Throw);
        let mut items = Vec::new();
        for k in 0..20 {
            items.push(item_kind(&format!("lo{k}"), 1, &format!("KIND{k}")));
            items.push(item_kind(&format!("hi{k}"), 1, &format!("kind{k}")));
        }
        let scores: Vec<f64> = (0..40)
            .map(|i| if i % 2 == 0 { 0.1 } else { 0.9 })
            .collect();
        let out = s
            .slice(&scored(&items, &scores), SliceBudget::new(100, 100))
            .unwrap();
        let committed: Vec<usize> = (0..20).map(|k| 2 * k + 1).collect();
        assert_eq!(out.selected, committed);
        assert_eq!(out.cap_exclusions.len(), 20);
    }

    #[test]
    fn negative_token_items_are_ignored() {
        let s = cq(vec![entry("tool", 1, 1)], ScarcityBehavior::Degrade);
        let items = [item_kind("neg", -5, "tool"), item_kind("t", 5, "tool")];
        let out = s
            .slice(&scored(&items, &[0.9, 0.1]), SliceBudget::new(100, 100))
            .unwrap();
        assert_eq!(out.selected, vec![1]);
    }

    #[test]
    fn reports_kind_and_non_monotonicity() {
        let s = cq(vec![], ScarcityBehavior::default());
        assert_eq!(s.slicer_kind(), SlicerKind::CountQuota);
        assert!(!s.is_monotonic());
        assert_eq!(s.scarcity(), ScarcityBehavior::Degrade);
        assert!(format!("{s:?}").contains("Greedy"));
    }
}
