//! [`ScaledScorer`]: min-max normalisation of an inner scorer.

use std::fmt;
use std::sync::Arc;

use cupel_core::{ContextItem, ScoreContext, Scorer};

/// Rescales an inner scorer's scores to span `[0, 1]`:
/// `(raw - min) / (max - min)`, with `min` and `max` the inner scorer's lowest
/// and highest score over all items.
///
/// When every item gets the same inner score (including the single-item case),
/// or there are no items, the score is exactly 0.5 — "no information".
///
/// Like the specification's reference algorithm, `min` and `max` are found with
/// `<` and `>` comparisons starting from `+inf` and `-inf`, but over the
/// **finite** inner scores only: a non-finite inner score (NaN, `+inf`,
/// `-inf`) keeps its value on its own item and never enters the range, so one
/// `+inf` from a custom scorer cannot turn every other item's score into 0 or
/// NaN. The pipeline then rejects the non-finite score with
/// [`CupelError::NonFiniteScore`](cupel_core::CupelError::NonFiniteScore)
/// naming the item (spec H-1).
///
/// # Performance
/// [`score`](Scorer::score) is the reference algorithm: it runs the inner
/// scorer over every item, so a whole pass of one-item calls costs N inner
/// passes. [`score_all`](Scorer::score_all) runs the inner
/// [`score_all`](Scorer::score_all) once and finds `min`/`max` once: the cost
/// of one inner pass plus O(N). Nesting `ScaledScorer`s stays linear in depth.
///
/// ```
/// use cupel_core::{ContextItem, Scorer};
/// use cupel_scorers::{ReflexiveScorer, ScaledScorer};
///
/// let hint = |h| ContextItem::builder("x", 1).future_relevance_hint(h).build();
/// let (a, b, c) = (hint(0.3)?, hint(0.4)?, hint(0.5)?);
/// let scaled = ScaledScorer::wrap(ReflexiveScorer);
/// let s = scaled.score_all(&[&a, &b, &c]);
/// // (0.4 - 0.3) / (0.5 - 0.3) = 0.5 (to rounding)
/// assert_eq!(s[0], 0.0);
/// assert!((s[1] - 0.5).abs() < 1e-12);
/// assert_eq!(s[2], 1.0);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Clone)]
pub struct ScaledScorer {
    inner: Arc<dyn Scorer>,
}

impl ScaledScorer {
    /// The score given when the inner scores carry no information.
    pub const DEGENERATE_SCORE: f64 = 0.5;

    /// Wraps a (possibly shared) inner scorer.
    pub fn new(inner: Arc<dyn Scorer>) -> Self {
        Self { inner }
    }

    /// Wraps an owned inner scorer.
    pub fn wrap<S: Scorer + 'static>(inner: S) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The inner scorer.
    pub fn inner(&self) -> &Arc<dyn Scorer> {
        &self.inner
    }
}

impl fmt::Debug for ScaledScorer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScaledScorer").finish_non_exhaustive()
    }
}

/// The range of `scores` the way the reference algorithm finds it.
fn min_max(scores: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let mut min = f64::INFINITY;
    let mut max = f64::NEG_INFINITY;
    for s in scores.into_iter().filter(|s| s.is_finite()) {
        if s < min {
            min = s;
        }
        if s > max {
            max = s;
        }
    }
    (min, max)
}

/// `scorer`'s whole pass, or — if a (user-written) scorer's
/// [`score_all`](Scorer::score_all) returns the wrong number of scores — its
/// one-item scores.
pub(crate) fn checked_score_all(scorer: &dyn Scorer, items: &[&ContextItem]) -> Vec<f64> {
    checked_score_all_in(scorer, items, None)
}

/// [`checked_score_all`] in a run's context (`None`: no context, the plain
/// [`score_all`](Scorer::score_all)).
pub(crate) fn checked_score_all_in(
    scorer: &dyn Scorer,
    items: &[&ContextItem],
    cx: Option<&ScoreContext<'_>>,
) -> Vec<f64> {
    let scores = match cx {
        None => scorer.score_all(items),
        Some(cx) => scorer.score_all_in(items, cx),
    };
    if scores.len() == items.len() {
        scores
    } else {
        (0..items.len()).map(|i| scorer.score(i, items)).collect()
    }
}

/// [`checked_score_all_in`] through the fallible methods
/// ([`Scorer::try_score_all`], [`Scorer::try_score_all_in`]).
pub(crate) fn try_checked_score_all_in(
    scorer: &dyn Scorer,
    items: &[&ContextItem],
    cx: Option<&ScoreContext<'_>>,
) -> Result<Vec<f64>, cupel_core::CupelError> {
    let scores = match cx {
        None => scorer.try_score_all(items)?,
        Some(cx) => scorer.try_score_all_in(items, cx)?,
    };
    if scores.len() == items.len() {
        Ok(scores)
    } else {
        Ok((0..items.len()).map(|i| scorer.score(i, items)).collect())
    }
}

/// Several scorers' notes as one list in index order (stable: within one
/// index, in the order the lists are given).
pub(crate) fn merge_notes(
    lists: impl Iterator<Item = Vec<(usize, cupel_core::ScoreNote)>>,
) -> Vec<(usize, cupel_core::ScoreNote)> {
    let mut all: Vec<(usize, cupel_core::ScoreNote)> = lists.flatten().collect();
    all.sort_by_key(|(i, _)| *i);
    all
}

impl Scorer for ScaledScorer {
    /// The reference algorithm (one inner scan). Empty `items` score 0.5 (the
    /// specification's rule); an out-of-range `index` into non-empty `items`
    /// scores `NaN`.
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        if items.is_empty() {
            return Self::DEGENERATE_SCORE;
        }
        if index >= items.len() {
            return f64::NAN;
        }
        let mut raw = f64::NAN;
        let (min, max) = min_max((0..items.len()).map(|i| {
            let s = self.inner.score(i, items);
            if i == index {
                raw = s;
            }
            s
        }));
        if !raw.is_finite() {
            return raw;
        }
        if max == min {
            return Self::DEGENERATE_SCORE;
        }
        (raw - min) / (max - min)
    }

    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        Self::scale(checked_score_all(&*self.inner, items))
    }

    /// The inner scorer's pass in the run's context, scaled.
    fn score_all_in(&self, items: &[&ContextItem], cx: &ScoreContext<'_>) -> Vec<f64> {
        Self::scale(checked_score_all_in(&*self.inner, items, Some(cx)))
    }

    /// The inner scorer's fallible pass, scaled.
    fn try_score_all(&self, items: &[&ContextItem]) -> Result<Vec<f64>, cupel_core::CupelError> {
        try_checked_score_all_in(&*self.inner, items, None).map(Self::scale)
    }

    /// The inner scorer's fallible pass in the run's context, scaled.
    fn try_score_all_in(
        &self,
        items: &[&ContextItem],
        cx: &ScoreContext<'_>,
    ) -> Result<Vec<f64>, cupel_core::CupelError> {
        try_checked_score_all_in(&*self.inner, items, Some(cx)).map(Self::scale)
    }

    /// The inner scorer's notes (its own scores, before scaling).
    fn notes_in(
        &self,
        items: &[&ContextItem],
        cx: &ScoreContext<'_>,
    ) -> Vec<(usize, cupel_core::ScoreNote)> {
        self.inner.notes_in(items, cx)
    }
}

impl ScaledScorer {
    fn scale(raw: Vec<f64>) -> Vec<f64> {
        let (min, max) = min_max(raw.iter().copied());
        let range = max - min;
        raw.into_iter()
            .map(|s| {
                if !s.is_finite() {
                    s
                } else if max == min {
                    Self::DEGENERATE_SCORE
                } else {
                    (s - min) / range
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KindScorer, PriorityScorer};
    use cupel_core::ContextKind;

    /// Returns `values[index]`.
    struct Table(Vec<f64>);
    impl Scorer for Table {
        fn score(&self, index: usize, _: &[&ContextItem]) -> f64 {
            self.0[index]
        }
    }

    fn items(n: usize) -> Vec<ContextItem> {
        (0..n)
            .map(|i| ContextItem::new(format!("i{i}"), 1).unwrap())
            .collect()
    }

    fn both(s: &ScaledScorer, items: &[ContextItem]) -> Vec<f64> {
        let refs: Vec<&ContextItem> = items.iter().collect();
        let batch = s.score_all(&refs);
        let single: Vec<f64> = (0..refs.len()).map(|i| s.score(i, &refs)).collect();
        assert_eq!(batch.len(), single.len());
        for (a, b) in batch.iter().zip(&single) {
            assert!(a == b || (a.is_nan() && b.is_nan()), "{a} vs {b}");
        }
        batch
    }

    fn table(v: &[f64]) -> ScaledScorer {
        ScaledScorer::wrap(Table(v.to_vec()))
    }

    // Edge-case table row 1: empty allItems -> 0.5.
    #[test]
    fn empty_is_degenerate() {
        let s = table(&[]);
        assert!(s.score_all(&[]).is_empty());
        assert_eq!(s.score(0, &[]), 0.5);
    }

    #[test]
    fn out_of_range_index_scores_nan_even_when_degenerate() {
        // One item: the range is degenerate (0.5 for index 0), but index 1 is
        // not an item at all -> NaN, as the rustdoc says (it used to be 0.5).
        let refs_items = items(1);
        let refs: Vec<&ContextItem> = refs_items.iter().collect();
        assert_eq!(table(&[0.9]).score(0, &refs), 0.5);
        assert!(table(&[0.9]).score(1, &refs).is_nan());
    }

    #[test]
    fn wrong_length_inner_batch_falls_back_to_per_item() {
        struct Short;
        impl Scorer for Short {
            fn score(&self, index: usize, _: &[&ContextItem]) -> f64 {
                index as f64
            }
            fn score_all(&self, _: &[&ContextItem]) -> Vec<f64> {
                vec![7.0]
            }
        }
        // Per-item inner scores 0, 1, 2 -> range 2 -> 0.0, 0.5, 1.0.
        assert_eq!(
            both(&ScaledScorer::wrap(Short), &items(3)),
            vec![0.0, 0.5, 1.0]
        );
    }

    // Row 2: a single item -> 0.5 (max == min).
    #[test]
    fn single_item_is_degenerate() {
        assert_eq!(both(&table(&[0.9]), &items(1)), vec![0.5]);
    }

    // Row 3: all the same inner score -> 0.5 each (exactly).
    #[test]
    fn equal_scores_are_degenerate() {
        assert_eq!(
            both(&table(&[0.3, 0.3, 0.3]), &items(3)),
            vec![0.5, 0.5, 0.5]
        );
        // KindScorer over items of one kind: the "degenerate ScaledScorer" vector.
        let its: Vec<ContextItem> = (0..3)
            .map(|i| {
                ContextItem::builder(format!("d{i}"), 1)
                    .kind(ContextKind::DOCUMENT)
                    .build()
                    .unwrap()
            })
            .collect();
        assert_eq!(
            both(&ScaledScorer::wrap(KindScorer::default()), &its),
            vec![0.5, 0.5, 0.5]
        );
    }

    // Row 4: two distinct inner scores -> 0.0 and 1.0.
    #[test]
    fn two_distinct_scores_span_the_range() {
        assert_eq!(both(&table(&[0.7, 0.2]), &items(2)), vec![1.0, 0.0]);
    }

    // Row 5: inner scores outside [0, 1] still map into [0, 1].
    #[test]
    fn out_of_range_inner_scores_are_rescaled() {
        // min -2, max 6, range 8: (-2+2)/8 = 0, (2+2)/8 = 0.5, (6+2)/8 = 1.
        assert_eq!(
            both(&table(&[-2.0, 2.0, 6.0]), &items(3)),
            vec![0.0, 0.5, 1.0]
        );
    }

    #[test]
    fn scales_a_relative_inner_scorer() {
        // Priorities 1, 2, 2 -> PriorityScorer 0.0, 0.5, 0.5 -> scaled 0, 1, 1.
        let its: Vec<ContextItem> = [1, 2, 2]
            .iter()
            .map(|p| ContextItem::builder("x", 1).priority(*p).build().unwrap())
            .collect();
        assert_eq!(
            both(&ScaledScorer::wrap(PriorityScorer), &its),
            vec![0.0, 1.0, 1.0]
        );
    }

    #[test]
    fn nan_inner_scores_are_skipped_for_the_range() {
        // range from 0.2 and 0.6 only: 0.2 -> 0, NaN -> NaN, 0.6 -> 1.
        let s = both(&table(&[0.2, f64::NAN, 0.6]), &items(3));
        assert_eq!(s[0], 0.0);
        assert!(s[1].is_nan());
        assert_eq!(s[2], 1.0);
    }

    #[test]
    fn one_infinite_inner_score_stays_on_its_item() {
        // Issue 18 (7): +inf used to become the max, sending every finite
        // item to 0 and itself to NaN. Now the range is 0.2..0.6 and +inf
        // stays +inf on item 1 only (the pipeline then rejects it by name).
        for bad in [f64::INFINITY, f64::NEG_INFINITY] {
            let s = both(&table(&[0.2, bad, 0.6]), &items(3));
            assert_eq!(s[0], 0.0);
            assert_eq!(s[1], bad);
            assert_eq!(s[2], 1.0);
        }
        // One finite score and one +inf: the finite one is degenerate 0.5.
        let s = both(&table(&[0.3, f64::INFINITY]), &items(2));
        assert_eq!(s[0], 0.5);
        assert_eq!(s[1], f64::INFINITY);
    }

    #[test]
    fn nested_scaled_is_idempotent() {
        let nested = ScaledScorer::wrap(table(&[1.0, 3.0, 2.0]));
        assert_eq!(both(&nested, &items(3)), vec![0.0, 1.0, 0.5]);
    }
}
