//! [`ScoreOrderSlice`]: the best-scoring items that fit.

use cupel_core::{CupelError, ScoredItem, SliceBudget, SliceOutcome, Slicer, sort_by_key_stable};

use crate::greedy::desc_key;

/// Takes items in score order (highest first, ties to the earlier item),
/// skipping each item that no longer fits and going on with the next: the
/// best-scoring items that fit, whatever their size.
///
/// Unlike [`GreedySlice`](crate::GreedySlice), which orders by score per
/// token and so prefers short items, this slicer suits scores that measure
/// how much an item is *needed* (query relevance): a long relevant item is
/// kept before a short irrelevant one. Items with negative token counts are
/// skipped; zero-token items always fit. `O(N log N)`.
///
/// ```
/// use cupel_core::{ContextItem, ScoredItem, SliceBudget, Slicer};
/// use cupel_slicers::ScoreOrderSlice;
///
/// let big = ContextItem::new("big", 80)?;
/// let small = ContextItem::new("small", 30)?;
/// let mid = ContextItem::new("mid", 25)?;
/// let items = [
///     ScoredItem::new(&big, 0.9),
///     ScoredItem::new(&small, 0.6),
///     ScoredItem::new(&mid, 0.5),
/// ];
/// // big (80, 20 left), small 30 > 20 skipped, mid 25 > 20 skipped.
/// let out = ScoreOrderSlice.slice(&items, SliceBudget::new(100, 100))?;
/// assert_eq!(out.selected, vec![0]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ScoreOrderSlice;

impl ScoreOrderSlice {
    /// The score-order slicer (it has no configuration).
    pub fn new() -> Self {
        ScoreOrderSlice
    }
}

impl Slicer for ScoreOrderSlice {
    fn slice(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<SliceOutcome, CupelError> {
        if crate::inner::nothing_to_slice("ScoreOrderSlice", items, budget)? {
            return Ok(SliceOutcome::default());
        }
        let mut order: Vec<(u64, usize)> = items
            .iter()
            .enumerate()
            .filter(|(_, s)| s.item.tokens() >= 0)
            .map(|(i, s)| (desc_key(s.score), i))
            .collect();
        sort_by_key_stable(&mut order);
        let mut remaining = budget.target_tokens;
        let mut selected = Vec::new();
        for (_, i) in order {
            let t = items[i].item.tokens();
            if t <= remaining {
                selected.push(i);
                // 0 <= t <= remaining: cannot overflow or go negative.
                remaining -= t;
            }
        }
        Ok(SliceOutcome::selected(selected))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cupel_core::ContextItem;

    #[test]
    fn best_scoring_that_fit_ties_to_the_earlier_item() -> Result<(), CupelError> {
        let a = ContextItem::new("a", 50)?;
        let b = ContextItem::new("b", 60)?;
        let c = ContextItem::new("c", 40)?;
        let d = ContextItem::new("d", 10)?;
        let z = ContextItem::new("z", 0)?;
        let items = [
            ScoredItem::new(&a, 0.5),
            ScoredItem::new(&b, 0.9),
            ScoredItem::new(&c, 0.5),
            ScoredItem::new(&d, 0.1),
            ScoredItem::new(&z, 0.0),
        ];
        // b 60 (40 left), a 50 skipped, c 40 (0 left), d 10 skipped, z 0 fits.
        let out = ScoreOrderSlice.slice(&items, SliceBudget::new(100, 100))?;
        assert_eq!(out.selected, vec![1, 2, 4]);
        assert!(
            ScoreOrderSlice
                .slice(&[], SliceBudget::new(10, 10))?
                .selected
                .is_empty()
        );
        Ok(())
    }
}
