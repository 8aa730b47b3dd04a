//! [`CompositeScorer`]: a weighted average of child scorers.

use std::fmt;
use std::sync::Arc;

use cupel_core::{ContextItem, CupelError, ScoreContext, Scorer};

use crate::gather::TagScope;
use crate::scaled::checked_score_all_in;

/// Combines child scorers into one score: the weighted average of their scores.
///
/// Weights are relative: at construction each is divided by their sum, so
/// `[(recency, 3.0), (priority, 1.0)]` and `[(recency, 0.75), (priority, 0.25)]`
/// score identically. An item's score is
/// `Σ child_i.score(item) · weight_i / Σ weights`, accumulated in child order
/// (index 0 first) so results are reproducible to the bit.
///
/// Children are any [`Scorer`]s behind an [`Arc`] — including other
/// `CompositeScorer`s and [`ScaledScorer`](crate::ScaledScorer)s — and one child
/// may be shared by several parents (the scorer graph is a DAG).
///
/// # Why there is no cycle check
/// The specification asks composite construction to reject cycles (a scorer
/// that is its own ancestor). In Rust such a graph cannot be built from the
/// scorers of this crate: a parent is constructed *from* its children, which
/// must therefore exist first, and every built-in scorer is immutable once
/// built (no method adds a child, the children sit behind `Arc`s that only
/// hand out shared references). The graph is acyclic by construction, and a
/// construction-time check could never fire — at construction the new
/// composite does not exist yet, so no child can refer to it. (Only a
/// user-written scorer with interior mutability — say a `OnceLock` filled with
/// an `Arc` to its own ancestor after the fact — could close a loop; such a
/// scorer is opaque to any graph walk, and would also leak through the `Arc`
/// cycle.)
///
/// # Performance
/// [`score_all`](Scorer::score_all) asks each child for its own whole pass
/// once and combines the results, so the composite costs at most the sum of
/// its children's passes — less when several children read tags
/// ([`TagScorer`](crate::TagScorer), [`FrequencyScorer`](crate::FrequencyScorer),
/// also inside nested composites or [`ScaledScorer`](crate::ScaledScorer)s):
/// the items' tags are then copied out of the items once per pass and shared.
///
/// ```
/// use std::sync::Arc;
/// use cupel_core::{ContextItem, Scorer};
/// use cupel_scorers::{CompositeScorer, KindScorer, PriorityScorer};
///
/// let scorer = CompositeScorer::builder()
///     .add(PriorityScorer, 3.0)
///     .add(KindScorer::default(), 1.0)
///     .build()?;
/// let a = ContextItem::builder("a", 1).priority(1).build()?;
/// let b = ContextItem::builder("b", 1).priority(2).build()?;
/// // a: 0.0 * 0.75 + 0.2 * 0.25 = 0.05;  b: 1.0 * 0.75 + 0.2 * 0.25 = 0.8
/// let s = scorer.score_all(&[&a, &b]);
/// assert!((s[0] - 0.05).abs() < 1e-12 && (s[1] - 0.8).abs() < 1e-12);
/// assert!(CompositeScorer::builder().build().is_err());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Clone)]
pub struct CompositeScorer {
    /// Children with their normalised weights, in invocation order.
    children: Vec<(Arc<dyn Scorer>, f64)>,
}

impl CompositeScorer {
    /// Builds a composite from `(child, weight)` pairs.
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] when `entries` is empty, when a weight is
    /// not `> 0` (zero and negative weights are rejected), when a weight is not
    /// finite, or when the weights add up to more than `f64` can hold. The
    /// message names the child's position and the weight.
    pub fn new<I>(entries: I) -> Result<Self, CupelError>
    where
        I: IntoIterator<Item = (Arc<dyn Scorer>, f64)>,
    {
        let entries: Vec<(Arc<dyn Scorer>, f64)> = entries.into_iter().collect();
        if entries.is_empty() {
            return Err(CupelError::ScorerConfig(
                "CompositeScorer: at least one child scorer is required (got 0)".into(),
            ));
        }
        let mut total = 0.0;
        for (i, (_, weight)) in entries.iter().enumerate() {
            let weight = *weight;
            if weight <= 0.0 {
                return Err(CupelError::ScorerConfig(format!(
                    "CompositeScorer: weight of child {i} must be positive (got {weight})"
                )));
            }
            if !weight.is_finite() {
                return Err(CupelError::ScorerConfig(format!(
                    "CompositeScorer: weight of child {i} must be finite (got {weight})"
                )));
            }
            total += weight;
        }
        if !total.is_finite() {
            return Err(CupelError::ScorerConfig(format!(
                "CompositeScorer: the child weights add up to {total}; their sum must be finite"
            )));
        }
        Ok(Self {
            children: entries
                .into_iter()
                .map(|(scorer, weight)| (scorer, weight / total))
                .collect(),
        })
    }

    /// Starts a [`CompositeScorerBuilder`].
    pub fn builder() -> CompositeScorerBuilder {
        CompositeScorerBuilder::default()
    }

    /// The children and their normalised weights (summing to ~1.0), in order.
    pub fn children(&self) -> impl ExactSizeIterator<Item = (&Arc<dyn Scorer>, f64)> + '_ {
        self.children.iter().map(|(s, w)| (s, *w))
    }
}

impl fmt::Debug for CompositeScorer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let weights: Vec<f64> = self.children.iter().map(|(_, w)| *w).collect();
        f.debug_struct("CompositeScorer")
            .field("children", &self.children.len())
            .field("normalized_weights", &weights)
            .finish()
    }
}

impl Scorer for CompositeScorer {
    /// The weighted average; an out-of-range `index` scores `NaN`.
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        if index >= items.len() {
            return f64::NAN;
        }
        let mut result = 0.0;
        for (child, weight) in &self.children {
            result += child.score(index, items) * weight;
        }
        result
    }

    /// Each child's [`score_all`](Scorer::score_all), combined in child order.
    ///
    /// A (user-written) child whose `score_all` returns the wrong number of
    /// scores is asked item by item with [`score`](Scorer::score) instead.
    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        self.combine(items, None)
    }

    /// As [`score_all`](Scorer::score_all), passing the run's context to
    /// every child.
    fn score_all_in(&self, items: &[&ContextItem], cx: &ScoreContext<'_>) -> Vec<f64> {
        self.combine(items, Some(cx))
    }

    /// As [`score_all`](Scorer::score_all), passing the first child error on.
    fn try_score_all(&self, items: &[&ContextItem]) -> Result<Vec<f64>, CupelError> {
        self.try_combine(items, None)
    }

    /// As [`score_all_in`](Scorer::score_all_in), passing the first child
    /// error on.
    fn try_score_all_in(
        &self,
        items: &[&ContextItem],
        cx: &ScoreContext<'_>,
    ) -> Result<Vec<f64>, CupelError> {
        self.try_combine(items, Some(cx))
    }

    /// Every child's notes, in index order (children in order within one
    /// index).
    fn notes_in(
        &self,
        items: &[&ContextItem],
        cx: &ScoreContext<'_>,
    ) -> Vec<(usize, cupel_core::ScoreNote)> {
        crate::scaled::merge_notes(self.children.iter().map(|(c, _)| c.notes_in(items, cx)))
    }
}

impl CompositeScorer {
    fn try_combine(
        &self,
        items: &[&ContextItem],
        cx: Option<&ScoreContext<'_>>,
    ) -> Result<Vec<f64>, CupelError> {
        let _tags = TagScope::open(items);
        let mut out = vec![0.0; items.len()];
        for (child, weight) in &self.children {
            let scores = crate::scaled::try_checked_score_all_in(&**child, items, cx)?;
            for (acc, s) in out.iter_mut().zip(scores) {
                *acc += s * weight;
            }
        }
        Ok(out)
    }

    fn combine(&self, items: &[&ContextItem], cx: Option<&ScoreContext<'_>>) -> Vec<f64> {
        // Tag-reading children (tag, frequency) gather the items' tags once
        // between them, for this pass only.
        let _tags = TagScope::open(items);
        let mut out = vec![0.0; items.len()];
        for (child, weight) in &self.children {
            for (acc, s) in out
                .iter_mut()
                .zip(checked_score_all_in(&**child, items, cx))
            {
                *acc += s * weight;
            }
        }
        out
    }
}

/// Collects `(child, weight)` entries for a [`CompositeScorer`].
#[derive(Default, Clone)]
pub struct CompositeScorerBuilder {
    entries: Vec<(Arc<dyn Scorer>, f64)>,
}

impl CompositeScorerBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an owned child scorer with a relative weight.
    pub fn add<S: Scorer + 'static>(mut self, scorer: S, weight: f64) -> Self {
        self.entries.push((Arc::new(scorer), weight));
        self
    }

    /// Adds a shared child scorer (one that other composites may also use).
    pub fn add_shared(mut self, scorer: Arc<dyn Scorer>, weight: f64) -> Self {
        self.entries.push((scorer, weight));
        self
    }

    /// Validates and builds; see [`CompositeScorer::new`].
    ///
    /// # Errors
    /// As [`CompositeScorer::new`].
    pub fn build(self) -> Result<CompositeScorer, CupelError> {
        CompositeScorer::new(self.entries)
    }
}

impl fmt::Debug for CompositeScorerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let weights: Vec<f64> = self.entries.iter().map(|(_, w)| *w).collect();
        f.debug_struct("CompositeScorerBuilder")
            .field("weights", &weights)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KindScorer, PriorityScorer, RecencyScorer, ReflexiveScorer, ScaledScorer};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A constant scorer.
    struct Fixed(f64);
    impl Scorer for Fixed {
        fn score(&self, _: usize, _: &[&ContextItem]) -> f64 {
            self.0
        }
    }

    fn items(n: usize) -> Vec<ContextItem> {
        (0..n)
            .map(|i| {
                ContextItem::builder(format!("i{i}"), 1)
                    .priority(i as i64)
                    .build()
                    .unwrap()
            })
            .collect()
    }

    fn both(s: &dyn Scorer, items: &[ContextItem]) -> Vec<f64> {
        let refs: Vec<&ContextItem> = items.iter().collect();
        let batch = s.score_all(&refs);
        let single: Vec<f64> = (0..refs.len()).map(|i| s.score(i, &refs)).collect();
        assert_eq!(batch, single);
        batch
    }

    // Edge-case table row 1: empty entries -> construction error.
    #[test]
    fn empty_is_rejected() {
        let e = CompositeScorer::new(Vec::new()).unwrap_err();
        assert_eq!(
            e,
            CupelError::ScorerConfig(
                "CompositeScorer: at least one child scorer is required (got 0)".into()
            )
        );
    }

    // Row 2: a single entry -> normalised weight 1.0, delegates.
    #[test]
    fn single_entry_delegates() {
        let c = CompositeScorer::builder()
            .add(PriorityScorer, 0.2)
            .build()
            .unwrap();
        assert_eq!(c.children().map(|(_, w)| w).collect::<Vec<_>>(), vec![1.0]);
        // priorities 0, 1, 2 -> 0.0, 0.5, 1.0
        assert_eq!(both(&c, &items(3)), vec![0.0, 0.5, 1.0]);
    }

    // Rows 3 and 4: all children 0.0 -> 0.0; all 1.0 -> 1.0.
    #[test]
    fn all_zero_and_all_one() {
        let zero = CompositeScorer::builder()
            .add(Fixed(0.0), 1.0)
            .add(Fixed(0.0), 2.0)
            .build()
            .unwrap();
        assert_eq!(both(&zero, &items(2)), vec![0.0, 0.0]);
        let one = CompositeScorer::builder()
            .add(Fixed(1.0), 1.0)
            .add(Fixed(1.0), 3.0)
            .build()
            .unwrap();
        // 1.0 * 0.25 + 1.0 * 0.75 = 1.0 exactly
        assert_eq!(both(&one, &items(2)), vec![1.0, 1.0]);
    }

    // Row 5: nested composites score recursively.
    #[test]
    fn nested_composite() {
        // inner = 0.5 * priority + 0.5 * Fixed(1.0)
        let inner = CompositeScorer::builder()
            .add(PriorityScorer, 1.0)
            .add(Fixed(1.0), 1.0)
            .build()
            .unwrap();
        // outer = 0.75 * inner + 0.25 * Fixed(0.0)
        let outer = CompositeScorer::builder()
            .add(inner, 3.0)
            .add(Fixed(0.0), 1.0)
            .build()
            .unwrap();
        // priorities 0, 1 -> priority scores 0.0, 1.0
        // inner: 0.5*0 + 0.5*1 = 0.5 ; 0.5*1 + 0.5*1 = 1.0
        // outer: 0.75*0.5 = 0.375 ; 0.75*1.0 = 0.75
        assert_eq!(both(&outer, &items(2)), vec![0.375, 0.75]);
    }

    // Row 6 (self-referential cycle): cannot be constructed; see the rustdoc.
    // A shared child used twice in a DAG works and is scored each time.
    #[test]
    fn shared_child_in_a_dag() {
        struct Counting(AtomicUsize);
        impl Scorer for Counting {
            fn score(&self, index: usize, _: &[&ContextItem]) -> f64 {
                self.0.fetch_add(1, Ordering::Relaxed);
                index as f64 / 10.0
            }
        }
        let shared = Arc::new(Counting(AtomicUsize::new(0)));
        let left = CompositeScorer::builder()
            .add_shared(shared.clone(), 1.0)
            .add(Fixed(0.0), 1.0)
            .build()
            .unwrap();
        let right = ScaledScorer::new(shared.clone());
        let top = CompositeScorer::builder()
            .add_shared(shared.clone(), 2.0)
            .add(left, 1.0)
            .add(right, 1.0)
            .build()
            .unwrap();
        let its = items(3);
        let refs: Vec<&ContextItem> = its.iter().collect();
        let batch = top.score_all(&refs);
        // shared: 0.0, 0.1, 0.2. left = 0.5*shared: 0, 0.05, 0.1.
        // right = scaled shared: 0, 0.5, 1.
        // top = 0.5*shared + 0.25*left + 0.25*right:
        //   i0: 0; i1: 0.05 + 0.0125 + 0.125 = 0.1875; i2: 0.1 + 0.025 + 0.25 = 0.375
        let expected = [0.0, 0.1875, 0.375];
        for (got, want) in batch.iter().zip(expected) {
            assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        }
        // One whole pass: the shared child is asked 3 times per appearance.
        assert_eq!(shared.0.load(Ordering::Relaxed), 9);
        let single: Vec<f64> = (0..3).map(|i| top.score(i, &refs)).collect();
        assert_eq!(batch, single);
        assert_eq!(Arc::strong_count(&shared), 4);
    }

    #[test]
    fn weights_normalise() {
        let a = CompositeScorer::builder()
            .add(RecencyScorer, 3.0)
            .add(PriorityScorer, 1.0)
            .build()
            .unwrap();
        let b = CompositeScorer::builder()
            .add(RecencyScorer, 0.75)
            .add(PriorityScorer, 0.25)
            .build()
            .unwrap();
        let wa: Vec<f64> = a.children().map(|(_, w)| w).collect();
        let wb: Vec<f64> = b.children().map(|(_, w)| w).collect();
        assert_eq!(wa, vec![0.75, 0.25]);
        assert_eq!(wa, wb);
    }

    #[test]
    fn bad_weights_are_rejected_naming_child_and_value() {
        let cases = [
            (0.0, "positive"),
            (-0.0, "positive"),
            (-2.0, "positive"),
            (f64::NAN, "finite"),
            (f64::NEG_INFINITY, "positive"),
            (f64::INFINITY, "finite"),
        ];
        for (bad, what) in cases {
            let e = CompositeScorer::builder()
                .add(ReflexiveScorer, 1.0)
                .add(KindScorer::default(), bad)
                .build()
                .unwrap_err();
            let CupelError::ScorerConfig(m) = e else {
                panic!("wrong variant")
            };
            assert!(m.contains("child 1") && m.contains(what), "{m}");
            assert!(m.contains(&bad.to_string()), "{m}");
        }
        let e = CompositeScorer::builder()
            .add(ReflexiveScorer, f64::MAX)
            .add(ReflexiveScorer, f64::MAX)
            .build()
            .unwrap_err();
        assert!(matches!(e, CupelError::ScorerConfig(m) if m.contains("sum")));
    }

    #[test]
    fn wrong_length_child_batch_falls_back_to_per_item() {
        struct Short;
        impl Scorer for Short {
            fn score(&self, index: usize, _: &[&ContextItem]) -> f64 {
                index as f64
            }
            fn score_all(&self, _: &[&ContextItem]) -> Vec<f64> {
                vec![42.0]
            }
        }
        let c = CompositeScorer::builder().add(Short, 1.0).build().unwrap();
        let its = items(3);
        let refs: Vec<&ContextItem> = its.iter().collect();
        assert_eq!(c.score_all(&refs), vec![0.0, 1.0, 2.0]);
        assert!(c.score(5, &refs).is_nan());
    }
}
