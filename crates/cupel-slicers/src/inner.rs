//! Running a wrapped (inner) slicer on a subset and mapping its answer back.

use cupel_core::{CupelError, ScoredItem, SliceBudget, SliceOutcome, Slicer, VariantOutcome};

/// The one rule for non-finite scores (spec H-1, checked by
/// [`cupel_core::check_finite`]): a slicer given a NaN or infinite score
/// fails with [`CupelError::NonFiniteScore`] naming itself and the item's
/// position in its input.
pub(crate) fn check_scores(slicer: &str, items: &[ScoredItem<'_>]) -> Result<(), CupelError> {
    cupel_core::check_finite(items.iter().map(|s| s.score), || {
        format!("the caller of {slicer}")
    })
}

/// Every slicer's entry: the scores are checked ([`check_scores`]), and
/// `true` says there is nothing to slice (no items, or no positive target),
/// so the slicer returns its empty outcome.
pub(crate) fn nothing_to_slice(
    slicer: &str,
    items: &[ScoredItem<'_>],
    budget: SliceBudget,
) -> Result<bool, CupelError> {
    check_scores(slicer, items)?;
    Ok(items.is_empty() || budget.target_tokens <= 0)
}

/// Runs `inner` on the items at `map` (indices into `items`) and returns its
/// outcome with every index translated back to `items`.
///
/// An inner index outside its input is a [`CupelError::PipelineConfig`]
/// naming `who` and the numbers, never a panic. Goes through the inner
/// slicer's [`slice_variants`](Slicer::slice_variants) when `variants` is set; the variant picks are translated back too.
pub(crate) fn slice_subset_with(
    who: &str,
    inner: &dyn Slicer,
    items: &[ScoredItem<'_>],
    map: &[usize],
    budget: SliceBudget,
    variants: bool,
) -> Result<VariantOutcome, CupelError> {
    let sub: Vec<ScoredItem<'_>> = map.iter().filter_map(|&i| items.get(i).copied()).collect();
    let VariantOutcome {
        outcome: out,
        picks,
    } = if variants {
        inner.slice_variants(&sub, budget)?
    } else {
        inner.slice(&sub, budget)?.into()
    };
    let back = |i: usize| {
        map.get(i).copied().ok_or_else(|| {
            CupelError::PipelineConfig(format!(
                "{who}: inner slicer returned index {i}, but its input had {} items",
                map.len()
            ))
        })
    };
    let selected = out
        .selected
        .iter()
        .map(|&i| back(i))
        .collect::<Result<Vec<_>, _>>()?;
    let mut cap_exclusions = out.cap_exclusions;
    for c in &mut cap_exclusions {
        c.index = back(c.index)?;
    }
    let mut rooms = out.rooms;
    for r in &mut rooms {
        for m in &mut r.members {
            *m = back(*m)?;
        }
    }
    let mut picks = picks;
    for p in &mut picks {
        p.index = back(p.index)?;
    }
    Ok(VariantOutcome {
        outcome: SliceOutcome {
            selected,
            shortfalls: out.shortfalls,
            cap_exclusions,
            rooms,
        },
        picks,
    })
}

/// Sum of the tokens of `items[i]` for every `i` in `selected` (indices
/// already validated), saturating: the room a slicer had left is
/// `target − selected_tokens(..)`.
pub(crate) fn selected_tokens(items: &[ScoredItem<'_>], selected: &[usize]) -> i64 {
    selected
        .iter()
        .filter_map(|&i| items.get(i))
        .fold(0i64, |acc, s| acc.saturating_add(s.item.tokens()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{budget, item, scored};
    use cupel_core::SliceOutcome;

    struct Liar;
    impl Slicer for Liar {
        fn slice(&self, _: &[ScoredItem<'_>], _: SliceBudget) -> Result<SliceOutcome, CupelError> {
            Ok(SliceOutcome::selected(vec![0, 7]))
        }
    }

    #[test]
    fn out_of_range_inner_index_is_a_config_error() {
        let items = [item("a", 1), item("b", 1), item("c", 1)];
        let s = scored(&items, &[0.5; 3]);
        let err =
            slice_subset_with("QuotaSlice", &Liar, &s, &[1, 2], budget(10), false).unwrap_err();
        assert_eq!(
            err,
            CupelError::PipelineConfig(
                "QuotaSlice: inner slicer returned index 7, but its input had 2 items".into()
            )
        );
    }

    #[test]
    fn indices_map_back() {
        let items = [item("a", 1), item("b", 1), item("c", 1)];
        let s = scored(&items, &[0.5; 3]);
        let out = slice_subset_with("x", &crate::GreedySlice, &s, &[2, 0], budget(10), false)
            .unwrap()
            .outcome;
        // Sub-input [c, a], equal densities -> sub order 0, 1 -> outer 2, 0.
        assert_eq!(out.selected, vec![2, 0]);
    }
}
