use cupel_core::{Placer, ScoredItem, score_cmp_desc};

/// Puts the highest-scored items at both edges of the window and the lowest in
/// the middle.
///
/// Items are ranked by score descending (ties by merged index, NaN last); rank
/// 0 goes to the first position, rank 1 to the last, rank 2 to the second,
/// rank 3 to the second-to-last, and so on inwards. Pinned items arrive with
/// score 1.0 and therefore usually land on the edges.
///
/// ```
/// use cupel_core::{ContextItem, Placer, ScoredItem};
/// use cupel_placers::UShapedPlacer;
///
/// let items: Vec<ContextItem> = ["a", "b", "c", "d"]
///     .iter()
///     .map(|c| ContextItem::new(*c, 1))
///     .collect::<Result<_, _>>()?;
/// let scores = [0.9, 0.7, 0.5, 0.3];
/// let merged: Vec<ScoredItem<'_>> =
///     items.iter().zip(scores).map(|(i, s)| ScoredItem::new(i, s)).collect();
/// // Ranks 0, 1, 2, 3 go to first, last, second, second-to-last.
/// assert_eq!(UShapedPlacer.place(&merged), vec![0, 2, 3, 1]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UShapedPlacer;

impl Placer for UShapedPlacer {
    fn place(&self, items: &[ScoredItem<'_>]) -> Vec<usize> {
        let n = items.len();
        let mut keyed: Vec<(f64, usize)> = items
            .iter()
            .enumerate()
            .map(|(i, s)| (s.score, i))
            .collect();
        keyed.sort_unstable_by(|a, b| score_cmp_desc(a.0, b.0).then(a.1.cmp(&b.1)));
        let mut result = vec![0usize; n];
        let (mut left, mut right) = (0usize, n);
        for (rank, &(_, idx)) in keyed.iter().enumerate() {
            if rank % 2 == 0 {
                result[left] = idx;
                left += 1;
            } else {
                right -= 1;
                result[right] = idx;
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cupel_core::ContextItem;

    fn place(scores: &[(&str, f64)]) -> Vec<String> {
        let items: Vec<ContextItem> = scores
            .iter()
            .map(|(c, _)| ContextItem::new(*c, 1).unwrap())
            .collect();
        let scored: Vec<_> = items
            .iter()
            .zip(scores)
            .map(|(i, (_, s))| ScoredItem::new(i, *s))
            .collect();
        UShapedPlacer
            .place(&scored)
            .into_iter()
            .map(|i| items[i].content().to_string())
            .collect()
    }

    #[test]
    fn spec_seven_item_example() {
        // Sorted A..G by score; ranks 0,2,4,6 -> positions 0,1,2,3; ranks 1,3,5 -> 6,5,4.
        let out = place(&[
            ("D", 0.6),
            ("A", 0.9),
            ("G", 0.3),
            ("B", 0.8),
            ("E", 0.5),
            ("C", 0.7),
            ("F", 0.4),
        ]);
        assert_eq!(out, ["A", "C", "E", "G", "F", "D", "B"]);
    }

    #[test]
    fn small_inputs() {
        assert!(place(&[]).is_empty());
        assert_eq!(place(&[("x", 0.1)]), ["x"]);
        assert_eq!(place(&[("lo", 0.2), ("hi", 0.9)]), ["hi", "lo"]);
    }

    #[test]
    fn ties_use_merged_index() {
        // All equal: ranks follow index: 0->pos0, 1->pos3, 2->pos1, 3->pos2.
        assert_eq!(
            place(&[("a", 0.5), ("b", 0.5), ("c", 0.5), ("d", 0.5)]),
            ["a", "c", "d", "b"]
        );
    }

    #[test]
    fn nan_scores_rank_last() {
        // ranks: hi(0) -> pos0, mid(1) -> pos2, nan(2) -> pos1
        assert_eq!(
            place(&[("nan", f64::NAN), ("hi", 0.9), ("mid", 0.5)]),
            ["hi", "nan", "mid"]
        );
    }
}
