//! [`ReflexiveScorer`]: the caller's future-relevance hint, passed through.

use cupel_core::{ContextItem, Scorer};

/// Scores an item by its `future_relevance_hint`, clamped to `[0, 1]`.
///
/// A missing hint scores 0.0, and so does a non-finite one (NaN, ±infinity):
/// finiteness is checked *before* clamping, so `+inf` gives 0.0, not 1.0.
/// An absolute scorer: peers are ignored.
///
/// ```
/// use cupel_core::{ContextItem, Scorer};
/// use cupel_scorers::ReflexiveScorer;
///
/// let hinted = ContextItem::builder("x", 1).future_relevance_hint(1.7).build()?;
/// let nan = ContextItem::builder("y", 1).future_relevance_hint(f64::NAN).build()?;
/// assert_eq!(ReflexiveScorer.score_all(&[&hinted, &nan]), vec![1.0, 0.0]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ReflexiveScorer;

impl ReflexiveScorer {
    /// The scorer (it has no configuration).
    pub fn new() -> Self {
        Self
    }
}

fn reflexive(item: &ContextItem) -> f64 {
    match item.future_relevance_hint() {
        Some(hint) if hint.is_finite() => hint.clamp(0.0, 1.0),
        _ => 0.0,
    }
}

impl Scorer for ReflexiveScorer {
    /// The clamped hint; an out-of-range `index` scores `NaN`.
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        items.get(index).map_or(f64::NAN, |item| reflexive(item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(hint: Option<f64>) -> f64 {
        let item = ContextItem::builder("x", 1)
            .future_relevance_hint_opt(hint)
            .build()
            .unwrap();
        ReflexiveScorer.score(0, &[&item])
    }

    // The edge-case table, row by row.
    #[test]
    fn edge_case_table() {
        assert_eq!(score(None), 0.0); // null
        assert_eq!(score(Some(f64::NAN)), 0.0); // NaN
        assert_eq!(score(Some(f64::INFINITY)), 0.0); // +inf (not clamped to 1.0)
        assert_eq!(score(Some(f64::NEG_INFINITY)), 0.0); // -inf
        assert_eq!(score(Some(0.5)), 0.5); // passthrough
        assert_eq!(score(Some(-0.3)), 0.0); // clamped low
        assert_eq!(score(Some(1.7)), 1.0); // clamped high
    }

    #[test]
    fn boundaries_pass_through() {
        assert_eq!(score(Some(0.0)), 0.0);
        assert_eq!(score(Some(1.0)), 1.0);
    }
}
