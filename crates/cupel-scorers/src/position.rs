//! [`PositionScorer`]: newer by input position scores higher.

use cupel_core::{ContextItem, Scorer};

/// Scores an item by where it stands in the input: the last item 1.0, the
/// first 0.0, evenly spaced between (`index / (count - 1)`); a lone item
/// scores 1.0.
///
/// Conversations are usually handed over oldest first, so this ranks the
/// newest turns highest without needing timestamps. A relative scorer: the
/// score depends on the item's position among its peers (the pipeline scores
/// the unpinned items with non-negative tokens, in input order).
///
/// ```
/// use cupel_core::{ContextItem, Scorer};
/// use cupel_scorers::PositionScorer;
/// let a = ContextItem::new("oldest", 1)?;
/// let b = ContextItem::new("middle", 1)?;
/// let c = ContextItem::new("newest", 1)?;
/// assert_eq!(PositionScorer.score_all(&[&a, &b, &c]), vec![0.0, 0.5, 1.0]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PositionScorer;

impl PositionScorer {
    /// The scorer (it has no configuration).
    pub fn new() -> Self {
        Self
    }
}

impl Scorer for PositionScorer {
    /// `index / (count - 1)`; 1.0 for a lone item; `NaN` for an index out of range.
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        match items.len() {
            n if index >= n => f64::NAN,
            1 => 1.0,
            n => index as f64 / (n - 1) as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evenly_spaced_newest_highest() {
        let items: Vec<ContextItem> = (0..5)
            .map(|i| ContextItem::new(format!("m{i}"), 1).unwrap())
            .collect();
        let refs: Vec<&ContextItem> = items.iter().collect();
        // 0/4, 1/4, 2/4, 3/4, 4/4.
        assert_eq!(
            PositionScorer.score_all(&refs),
            vec![0.0, 0.25, 0.5, 0.75, 1.0]
        );
        assert_eq!(PositionScorer.score_all(&refs[..1]), vec![1.0]);
        assert!(PositionScorer.score(9, &refs).is_nan());
    }
}
