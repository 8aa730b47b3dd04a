//! [`ContiguousSlice`]: take items in score order until the first one that
//! does not fit.

use cupel_core::{
    CupelError, ScoredItem, SliceBudget, SliceOutcome, SliceRoom, Slicer, VariantOutcome,
    VariantPick, VariantReason,
};

use crate::variants::{form_count, form_tokens};

/// Takes items in the order given (score descending in the pipeline) while
/// they fit the target, and stops at the first one that does not: nothing
/// after it enters, even an item small enough to fit.
///
/// With a score that ranks the newest items highest (e.g.
/// [`PositionScorer`](https://docs.rs/cupel-rs-scorers)), this keeps "the
/// newest turns" with no holes: a conversation never resumes past a turn that
/// was left out. Greedy slicing would skip the large item and go on filling
/// with older ones.
///
/// # Algorithm
/// 1. `target_tokens <= 0`: select nothing.
/// 2. One pass in input order, `remaining = target_tokens`: an item with
///    negative tokens is skipped (taking it would raise the budget); an item
///    with `tokens <= remaining` is taken (`remaining -= tokens`); the first
///    item that does not fit ends the pass.
/// 3. Rooms ([`SliceOutcome::rooms`]): the item that ended the pass had
///    `remaining`; every item after it had 0 (the cut left no room for them).
///
/// Monotonic: a larger target only moves the cut later.
///
/// ```
/// use cupel_core::{ContextItem, ScoredItem, SliceBudget, Slicer};
/// use cupel_slicers::ContiguousSlice;
/// let newest = ContextItem::new("newest", 30)?;
/// let big = ContextItem::new("big tool log", 500)?;
/// let old = ContextItem::new("old", 10)?;
/// let items = [ScoredItem::new(&newest, 1.0), ScoredItem::new(&big, 0.5), ScoredItem::new(&old, 0.0)];
/// // 30 fits (70 left); 500 does not: the pass ends, `old` stays out although 10 <= 70.
/// let out = ContiguousSlice.slice(&items, SliceBudget::new(100, 100))?;
/// assert_eq!(out.selected, vec![0]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ContiguousSlice;

impl ContiguousSlice {
    /// The contiguous slicer (it has no configuration).
    pub fn new() -> Self {
        ContiguousSlice
    }
}

impl Slicer for ContiguousSlice {
    fn slice(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<SliceOutcome, CupelError> {
        if crate::inner::nothing_to_slice("ContiguousSlice", items, budget)? {
            return Ok(SliceOutcome::default());
        }
        let mut remaining = budget.target_tokens;
        let mut selected = Vec::new();
        for (i, s) in items.iter().enumerate() {
            let t = s.item.tokens();
            if t < 0 {
                continue;
            }
            if t <= remaining {
                remaining -= t;
                selected.push(i);
                continue;
            }
            let after: Vec<usize> = (i + 1..items.len()).collect();
            let mut outcome = SliceOutcome::selected(selected);
            outcome.rooms.push(SliceRoom::new(remaining, vec![i]));
            if !after.is_empty() {
                outcome.rooms.push(SliceRoom::new(0, after));
            }
            return Ok(outcome);
        }
        Ok(SliceOutcome::selected(selected))
    }

    /// As [`slice`](Slicer::slice), except that an item that does not fit
    /// whole is taken in its most complete variant that fits (reason
    /// `DidNotFit`) and the walk goes on; it stops only at an item no form
    /// of which fits. Variant values play no part: order, not density,
    /// decides here.
    fn slice_variants(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<VariantOutcome, CupelError> {
        if crate::inner::nothing_to_slice("ContiguousSlice", items, budget)? {
            return Ok(VariantOutcome::default());
        }
        let mut remaining = budget.target_tokens;
        let mut out = VariantOutcome::default();
        for (i, s) in items.iter().enumerate() {
            if s.item.tokens() < 0 {
                continue;
            }
            let fitting = (0..form_count(s.item)).find(|&f| form_tokens(s.item, f) <= remaining);
            if let Some(form) = fitting {
                remaining -= form_tokens(s.item, form);
                out.outcome.selected.push(i);
                if form > 0 {
                    out.picks
                        .push(VariantPick::new(i, form, VariantReason::DidNotFit));
                }
                continue;
            }
            out.outcome.rooms.push(SliceRoom::new(remaining, vec![i]));
            if i + 1 < items.len() {
                out.outcome
                    .rooms
                    .push(SliceRoom::new(0, (i + 1..items.len()).collect()));
            }
            return Ok(out);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cupel_core::ContextItem;

    #[test]
    fn stops_at_the_first_item_that_does_not_fit() {
        let a = ContextItem::new("a", 40).unwrap();
        let b = ContextItem::new("b", 50).unwrap();
        let c = ContextItem::new("c", 20).unwrap();
        let d = ContextItem::new("d", 5).unwrap();
        let items = [
            ScoredItem::new(&a, 1.0),
            ScoredItem::new(&b, 0.7),
            ScoredItem::new(&c, 0.3),
            ScoredItem::new(&d, 0.0),
        ];
        // 40 -> 60 left; 50 -> 10 left; 20 > 10: stop (room 10); d after the cut: room 0.
        let out = ContiguousSlice
            .slice(&items, SliceBudget::new(100, 100))
            .unwrap();
        assert_eq!(out.selected, vec![0, 1]);
        assert_eq!(
            out.rooms,
            vec![SliceRoom::new(10, vec![2]), SliceRoom::new(0, vec![3])]
        );
        // Everything fits at 115: 40 + 50 + 20 + 5.
        let out = ContiguousSlice
            .slice(&items, SliceBudget::new(115, 115))
            .unwrap();
        assert_eq!(out.selected, vec![0, 1, 2, 3]);
        assert!(out.rooms.is_empty());
        assert!(
            ContiguousSlice
                .slice(&items, SliceBudget::new(0, 0))
                .unwrap()
                .selected
                .is_empty()
        );
    }
}
