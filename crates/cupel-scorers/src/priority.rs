//! [`PriorityScorer`]: rank by priority.

use cupel_core::{ContextItem, Scorer};

use crate::rank::{rank_i64_scores_all, rank_score_one};

/// Ranks items by their `priority`: the highest scores 1.0, the lowest 0.0,
/// the rest evenly in between.
///
/// The same rank rule as [`RecencyScorer`](crate::RecencyScorer), on the
/// priority field: score = `rank / (count - 1)`, with `count` the number of
/// items that have a priority and `rank` the number of those with a strictly
/// lower priority. Items without a priority score 0.0; a lone prioritised item
/// scores 1.0; equal priorities share a score; if all priorities are equal,
/// all score 0.0.
///
/// # Performance
/// [`score`](Scorer::score) is the reference O(N) scan;
/// [`score_all`](Scorer::score_all) sorts once — O(N log N) per pass, results
/// identical to `score`.
///
/// ```
/// use cupel_core::{ContextItem, Scorer};
/// use cupel_scorers::PriorityScorer;
///
/// let low = ContextItem::builder("low", 1).priority(1).build()?;
/// let high = ContextItem::builder("high", 1).priority(10).build()?;
/// let none = ContextItem::new("none", 1)?;
/// assert_eq!(PriorityScorer.score_all(&[&low, &high, &none]), vec![0.0, 1.0, 0.0]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PriorityScorer;

impl PriorityScorer {
    /// The scorer (it has no configuration).
    pub fn new() -> Self {
        Self
    }
}

impl Scorer for PriorityScorer {
    /// The reference algorithm; an out-of-range `index` scores `NaN`.
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        let Some(item) = items.get(index) else {
            return f64::NAN;
        };
        rank_score_one(item.priority(), items.iter().map(|i| i.priority()))
    }

    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        // Gather the keys first (a branch-free pass the CPU can overlap
        // memory reads in), then rank from the local copy.
        let keys: Vec<Option<i64>> = items.iter().map(|i| i.priority()).collect();
        rank_i64_scores_all(keys.len(), keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str, p: Option<i64>) -> ContextItem {
        ContextItem::builder(name, 1)
            .priority_opt(p)
            .build()
            .unwrap()
    }

    fn both(items: &[ContextItem]) -> Vec<f64> {
        let refs: Vec<&ContextItem> = items.iter().collect();
        let batch = PriorityScorer.score_all(&refs);
        let single: Vec<f64> = (0..refs.len())
            .map(|i| PriorityScorer.score(i, &refs))
            .collect();
        assert_eq!(batch, single);
        batch
    }

    // Edge-case table row 1: item.priority is null -> 0.0.
    #[test]
    fn null_priority_scores_zero() {
        // Prioritised: 5, 7 -> denominator 1; 7 rank 1 -> 1.0; 5 rank 0 -> 0.0.
        assert_eq!(
            both(&[item("a", Some(5)), item("b", None), item("c", Some(7))]),
            vec![0.0, 0.0, 1.0]
        );
    }

    // Row 2: all null -> all 0.0.
    #[test]
    fn all_null_scores_zero() {
        assert_eq!(both(&[item("a", None), item("b", None)]), vec![0.0, 0.0]);
    }

    // Row 3: only one item has a priority -> 1.0.
    #[test]
    fn lone_priority_scores_one() {
        assert_eq!(
            both(&[item("a", None), item("b", Some(-3))]),
            vec![0.0, 1.0]
        );
    }

    // Row 4: all share the same priority -> all 0.0.
    #[test]
    fn all_tied_score_zero() {
        assert_eq!(
            both(&[item("a", Some(2)), item("b", Some(2))]),
            vec![0.0, 0.0]
        );
    }

    #[test]
    fn higher_priority_scores_higher_with_shared_ties() {
        // Priorities 10, 5, 5, 1, i64::MIN -> count 5, denominator 4.
        // ranks: 10 -> 4 (5,5,1,MIN lower); 5 -> 2 (1, MIN); 1 -> 1; MIN -> 0.
        assert_eq!(
            both(&[
                item("a", Some(10)),
                item("b", Some(5)),
                item("c", Some(5)),
                item("d", Some(1)),
                item("e", Some(i64::MIN)),
            ]),
            vec![1.0, 0.5, 0.5, 0.25, 0.0]
        );
    }
}
