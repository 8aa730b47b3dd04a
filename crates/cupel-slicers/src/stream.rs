//! [`StreamSlice`]: first-fit selection in arrival order, for items that
//! arrive one at a time.

use cupel_core::{
    ContextItem, CupelError, ScoredItem, SliceBudget, SliceOutcome, Slicer, SlicerKind,
    VariantOutcome, VariantPick, VariantReason,
};

/// Selects items in the order they arrive, each one the moment it arrives,
/// without seeing the rest of the stream.
///
/// The specification lists a streaming slicer as optional and leaves its rule
/// open; this one is **first fit**:
///
/// * with `target_tokens <= 0` nothing is selected (the slicer contract's
///   empty-budget rule);
/// * an item with negative tokens is never selected;
/// * if a minimum score is set ([`with_min_score`](Self::with_min_score)), an
///   item scoring below it (or NaN) is skipped — this applies to zero-token
///   items too;
/// * a zero-token item is always selected;
/// * any other item is selected if `tokens <= remaining`, which then shrinks
///   by `tokens`; otherwise it is skipped for good (skip, not defer: a later,
///   smaller item may still fit).
///
/// Nothing is sorted and nothing is buffered: memory is O(1) per stream apart
/// from the caller's own list of accepted items, and each decision is final.
/// Use [`start`](Self::start) for a push-style [`StreamSelection`] (one
/// [`offer`](StreamSelection::offer) per arriving item, e.g. from an async
/// stream), or [`select`](Self::select) to drain an iterator.
///
/// As a [`Slicer`] it treats its input slice as the arrival order. In the
/// pipeline that order is score-descending, which makes it "best score first,
/// first fit" — unlike [`GreedySlice`](crate::GreedySlice), which orders by
/// score per token. It claims monotonic inclusion like the greedy slicer,
/// with the same caveat: first fit can admit a small item at a lower budget
/// that a larger, earlier item crowded out at a higher one.
///
/// ```
/// use cupel_core::{ContextItem, ScoredItem, SliceBudget};
/// use cupel_slicers::StreamSlice;
///
/// let a = ContextItem::new("a", 60)?;
/// let b = ContextItem::new("b", 50)?;
/// let c = ContextItem::new("c", 40)?;
/// let mut sel = StreamSlice::new().start(SliceBudget::new(100, 100));
/// assert!(sel.offer(&a, 0.2));  // 60 <= 100, 40 left
/// assert!(!sel.offer(&b, 0.9)); // 50 > 40: skipped for good
/// assert!(sel.offer(&c, 0.1));  // 40 <= 40, 0 left
/// assert_eq!(sel.remaining(), 0);
///
/// // The same decisions, from an iterator (positions in arrival order):
/// let arriving = [ScoredItem::new(&a, 0.2), ScoredItem::new(&b, 0.9), ScoredItem::new(&c, 0.1)];
/// assert_eq!(StreamSlice::new().select(arriving, SliceBudget::new(100, 100)), vec![0, 2]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StreamSlice {
    min_score: Option<f64>,
}

impl StreamSlice {
    /// A first-fit stream slicer with no score threshold.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only items scoring at least `min_score` are considered.
    ///
    /// # Errors
    /// [`CupelError::SlicerConfig`] when `min_score` is NaN.
    pub fn with_min_score(mut self, min_score: f64) -> Result<Self, CupelError> {
        if min_score.is_nan() {
            return Err(CupelError::SlicerConfig(
                "StreamSlice min_score must not be NaN".into(),
            ));
        }
        self.min_score = Some(min_score);
        Ok(self)
    }

    /// The score threshold, if any.
    pub fn min_score(&self) -> Option<f64> {
        self.min_score
    }

    /// Starts deciding one stream within `budget`.
    pub fn start(&self, budget: SliceBudget) -> StreamSelection {
        StreamSelection {
            remaining: budget.target_tokens.max(0),
            open: budget.target_tokens > 0,
            min_score: self.min_score,
            offered: 0,
            accepted: 0,
        }
    }

    /// Drains `items` in order and returns the arrival positions (0-based) of
    /// the accepted ones.
    pub fn select<'a, I>(&self, items: I, budget: SliceBudget) -> Vec<usize>
    where
        I: IntoIterator<Item = ScoredItem<'a>>,
    {
        let mut sel = self.start(budget);
        let mut out = Vec::new();
        for (i, s) in items.into_iter().enumerate() {
            if sel.offer(s.item, s.score) {
                out.push(i);
            }
        }
        out
    }
}

/// The state of one stream being sliced by a [`StreamSlice`]: the tokens left
/// and how many items were offered and accepted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamSelection {
    remaining: i64,
    /// `false` when the target was `<= 0`: nothing is ever selected.
    open: bool,
    min_score: Option<f64>,
    offered: usize,
    accepted: usize,
}

impl StreamSelection {
    /// Decides `item` now: `true` if it is selected (and its tokens spent).
    pub fn offer(&mut self, item: &ContextItem, score: f64) -> bool {
        self.offered += 1;
        let take = self.admits(item.tokens(), score);
        if take {
            // 0 <= tokens <= remaining (admits checked it): never negative.
            self.remaining -= item.tokens();
            self.accepted += 1;
        }
        take
    }

    /// Decides `item` now, in any of its forms (an extension: the item
    /// itself is form 0, its [variants](ContextItem::variants) forms `1..`):
    /// the most complete form that fits is selected and its tokens spent.
    /// Returns that form, or `None` when no form is admitted.
    ///
    /// ```
    /// use cupel_core::{ContextItem, ItemVariant, SliceBudget};
    /// use cupel_slicers::StreamSlice;
    /// let log = ContextItem::builder("log", 300)
    ///     .variant(ItemVariant::new("log head … tail", 60))
    ///     .build()?;
    /// let mut sel = StreamSlice::new().start(SliceBudget::new(100, 100));
    /// // 300 > 100; 60 <= 100: the head and tail, 40 left.
    /// assert_eq!(sel.offer_form(&log, 0.5), Some(1));
    /// assert_eq!(sel.remaining(), 40);
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    pub fn offer_form(&mut self, item: &ContextItem, score: f64) -> Option<usize> {
        self.offered += 1;
        let form = (0..=item.variants().len()).find(|&f| {
            item.variant_tokens(f)
                .is_some_and(|t| item.tokens() >= 0 && self.admits(t, score))
        })?;
        // 0 <= tokens <= remaining (admits checked it): never negative.
        self.remaining -= item.variant_tokens(form).unwrap_or(0);
        self.accepted += 1;
        Some(form)
    }

    fn admits(&self, tokens: i64, score: f64) -> bool {
        if !self.open || tokens < 0 {
            return false;
        }
        if let Some(min) = self.min_score
            && (score.is_nan() || score < min)
        {
            return false;
        }
        tokens <= self.remaining
    }

    /// Tokens still available.
    pub fn remaining(&self) -> i64 {
        self.remaining
    }

    /// Items offered so far.
    pub fn offered(&self) -> usize {
        self.offered
    }

    /// Items accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted
    }
}

impl Slicer for StreamSlice {
    fn slice(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<SliceOutcome, CupelError> {
        crate::inner::check_scores("StreamSlice", items)?;
        Ok(SliceOutcome::selected(
            self.select(items.iter().copied(), budget),
        ))
    }

    /// First fit in arrival order, each item in its most complete form that
    /// fits ([`StreamSelection::offer_form`]); a variant is always taken
    /// because the more complete forms did not fit.
    fn slice_variants(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<VariantOutcome, CupelError> {
        crate::inner::check_scores("StreamSlice", items)?;
        let mut sel = self.start(budget);
        let mut out = VariantOutcome::default();
        for (i, s) in items.iter().enumerate() {
            if let Some(form) = sel.offer_form(s.item, s.score) {
                out.outcome.selected.push(i);
                if form > 0 {
                    out.picks
                        .push(VariantPick::new(i, form, VariantReason::DidNotFit));
                }
            }
        }
        Ok(out)
    }

    fn slicer_kind(&self) -> SlicerKind {
        SlicerKind::Stream
    }

    fn is_monotonic(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{budget, item, scored};

    fn run(s: StreamSlice, items: &[ContextItem], scores: &[f64], target: i64) -> Vec<usize> {
        s.slice(&scored(items, scores), budget(target))
            .unwrap()
            .selected
    }

    #[test]
    fn first_fit_in_arrival_order_skip_not_defer() {
        // 60 <= 100 (40 left); 50 > 40 skipped; 40 <= 40 (0 left); 1 > 0 skipped.
        let items = [item("a", 60), item("b", 50), item("c", 40), item("d", 1)];
        assert_eq!(
            run(StreamSlice::new(), &items, &[0.1, 0.9, 0.5, 0.5], 100),
            vec![0, 2]
        );
    }

    #[test]
    fn zero_token_items_always_enter_even_when_full() {
        let items = [item("a", 100), item("z", 0), item("b", 1), item("z2", 0)];
        assert_eq!(
            run(StreamSlice::new(), &items, &[0.5; 4], 100),
            vec![0, 1, 3]
        );
    }

    #[test]
    fn empty_input_and_non_positive_target_select_nothing() {
        assert!(run(StreamSlice::new(), &[], &[], 10).is_empty());
        let items = [item("z", 0), item("a", 1)];
        assert!(run(StreamSlice::new(), &items, &[0.5, 0.5], 0).is_empty());
        assert!(run(StreamSlice::new(), &items, &[0.5, 0.5], -1).is_empty());
    }

    #[test]
    fn negative_tokens_never_enter() {
        // Taking neg would raise the remaining budget to 15 and let b in.
        let items = [item("neg", -5), item("b", 15)];
        assert!(run(StreamSlice::new(), &items, &[0.5, 0.5], 10).is_empty());
    }

    #[test]
    fn min_score_filters_before_the_budget() {
        let s = StreamSlice::new().with_min_score(0.5).unwrap();
        // a 0.4 < 0.5 skipped (budget untouched); b 0.5 >= 0.5 taken; z (0 tokens)
        // scores 0.1 -> skipped; c 0.9 taken (10 + 10 <= 20).
        let items = [item("a", 10), item("b", 10), item("z", 0), item("c", 10)];
        assert_eq!(run(s, &items, &[0.4, 0.5, 0.1, 0.9], 20), vec![1, 3]);
        // A non-finite score is an error through the Slicer trait (spec H-1).
        assert!(matches!(
            s.slice(&scored(&items, &[0.4, f64::NAN, 0.1, 0.9]), budget(20)),
            Err(CupelError::NonFiniteScore { index: 1, .. })
        ));
        assert!(StreamSlice::new().with_min_score(f64::NAN).is_err());
        assert_eq!(s.min_score(), Some(0.5));
    }

    #[test]
    fn push_style_selection_tracks_counts() {
        let a = item("a", 5);
        let b = item("b", 10);
        let mut sel = StreamSlice::new().start(budget(12));
        assert!(sel.offer(&a, 0.1));
        assert!(!sel.offer(&b, 0.9)); // 10 > 7
        assert_eq!((sel.remaining(), sel.offered(), sel.accepted()), (7, 2, 1));
    }

    #[test]
    fn reports_kind() {
        assert_eq!(StreamSlice::new().slicer_kind(), SlicerKind::Stream);
        assert!(StreamSlice::new().is_monotonic());
    }
}
