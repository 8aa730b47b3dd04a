//! [`GreedySlice`]: fill the budget by value density (score per token).

use cupel_core::{
    CupelError, ScoredItem, SliceBudget, SliceOutcome, Slicer, SlicerKind, VariantOutcome,
    VariantPick, check_counted, sort_by_key_stable,
};

use crate::variants::{declares_value, form_count, form_tokens, reason};

/// Selects items in order of value density — `score / tokens` — taking each
/// one that still fits the remaining target.
///
/// This is the fractional-knapsack heuristic applied to a 0/1 choice: fast
/// (`O(N log N)`, dominated by one sort) and usually close to optimal. Use
/// [`KnapsackSlice`](crate::KnapsackSlice) when the budget is tight and the
/// exact optimum matters.
///
/// # Algorithm
/// 1. Empty input or `target_tokens <= 0`: select nothing.
/// 2. Density of each item: `score / tokens`; an item with `tokens == 0` gets
///    `f64::MAX` (the largest finite double).
/// 3. Order by density descending, ties by input index ascending. Densities
///    compare with [`score_cmp_desc`](cupel_core::score_cmp_desc): `-0.0 == 0.0`, NaN after every number.
///    Zero-token items all share `f64::MAX`, so among themselves they keep
///    input order whatever their scores.
/// 4. One pass, `remaining = target_tokens`: a zero-token item is always
///    taken; any other item is taken when `tokens <= remaining` (then
///    `remaining -= tokens`), otherwise skipped for good — a skipped item is
///    never reconsidered (skip, not defer).
///
/// The output lists input indices in that pass order (density order), not in
/// input order; the Place stage decides the final order.
///
/// # Variants
/// [`slice_variants`](Slicer::slice_variants) runs the same pass over every
/// *form* of every item (the item itself is form 0, its variants forms
/// `1..`): a form's density is `score * value / tokens`, where a variant
/// without a declared value has exactly its item's density. Ties go to the
/// earlier item, then the more complete form. A form is taken when it fits
/// and no other form of its item was taken; so by default an item's
/// variants are tried, most complete first, right after the item itself
/// failed to fit, and a variant with a declared value can go first when it
/// is denser.
///
/// # Choices where the specification is silent
/// * **Negative token counts** never reach a slicer in the pipeline (Classify
///   excludes them). Given one directly, `GreedySlice` leaves it out: taking it
///   would *raise* the remaining budget.
/// * **Non-finite scores** (NaN, `±inf`) are errors
///   ([`CupelError::NonFiniteScore`]), as in every slicer and in the pipeline
///   (spec H-1).
/// * Only `target_tokens` is consulted; `max_tokens` plays no part (as written
///   in the specification).
///
/// ```
/// use cupel_core::{ContextItem, ScoredItem, SliceBudget, Slicer};
/// use cupel_slicers::GreedySlice;
///
/// let big = ContextItem::new("big", 80)?;     // density 0.9 / 80 = 0.01125
/// let small = ContextItem::new("small", 30)?; // density 0.6 / 30 = 0.02
/// let free = ContextItem::new("free", 0)?;    // density f64::MAX
/// let items = [
///     ScoredItem::new(&big, 0.9),
///     ScoredItem::new(&small, 0.6),
///     ScoredItem::new(&free, 0.1),
/// ];
/// // free (0 tokens), then small: 30 <= 100 (70 left), then big: 80 > 70, skipped.
/// let out = GreedySlice.slice(&items, SliceBudget::new(100, 100))?;
/// assert_eq!(out.selected, vec![2, 1]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct GreedySlice;

impl GreedySlice {
    /// The greedy slicer (it has no configuration).
    pub fn new() -> Self {
        GreedySlice
    }
}

/// `score / tokens`, with `f64::MAX` for zero-token items.
pub(crate) fn density(score: f64, tokens: i64) -> f64 {
    if tokens == 0 {
        f64::MAX
    } else {
        score / tokens as f64
    }
}

/// The score order as an integer key (see [`cupel_core::score_sort_key`]).
pub(crate) fn desc_key(d: f64) -> u64 {
    cupel_core::score_sort_key(d)
}

impl Slicer for GreedySlice {
    fn slice(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<SliceOutcome, CupelError> {
        let tokens: Vec<i64> = items.iter().map(|s| s.item.tokens()).collect();
        self.slice_counted(items, &tokens, budget)
    }

    /// The same pass as [`slice`](Slicer::slice), reading the counts from
    /// `tokens` instead of from each item.
    fn slice_counted(
        &self,
        items: &[ScoredItem<'_>],
        tokens: &[i64],
        budget: SliceBudget,
    ) -> Result<SliceOutcome, CupelError> {
        check_counted(items, tokens)?;
        if crate::inner::nothing_to_slice("GreedySlice", items, budget)? {
            return Ok(SliceOutcome::default());
        }
        // (density key, index) in index order, sorted stably by the key:
        // density descending (NaN last), then index ascending.
        let mut order: Vec<(u64, usize)> = Vec::with_capacity(items.len());
        for (i, (s, &t)) in items.iter().zip(tokens).enumerate() {
            if t >= 0 {
                order.push((desc_key(density(s.score, t)), i));
            }
        }
        sort_by_key_stable(&mut order);

        let mut remaining = budget.target_tokens;
        // The selected indices are written over the front of `order` (never
        // ahead of the entry being read) and then collected from it, which
        // reuses its buffer: no second buffer of the input's size.
        let mut kept = 0;
        for k in 0..order.len() {
            let i = order[k].1;
            let t = tokens[i];
            if t == 0 {
                order[kept].1 = i;
                kept += 1;
            } else if t <= remaining {
                order[kept].1 = i;
                kept += 1;
                // 0 < t <= remaining: cannot overflow or go negative.
                remaining -= t;
            }
        }
        order.truncate(kept);
        let selected: Vec<usize> = order.into_iter().map(|(_, i)| i).collect();
        Ok(SliceOutcome::selected(selected))
    }

    fn slice_variants(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<VariantOutcome, CupelError> {
        if crate::inner::nothing_to_slice("GreedySlice", items, budget)? {
            return Ok(VariantOutcome::default());
        }
        // Every form of every item, in (item, form) order: the position in
        // `forms` is the tie-break, so ties go to the earlier item, then to
        // the more complete form.
        let mut forms: Vec<(usize, usize, i64)> = Vec::with_capacity(items.len());
        let mut order: Vec<(u64, usize)> = Vec::with_capacity(items.len());
        for (i, s) in items.iter().enumerate() {
            let whole = s.item.tokens();
            if whole < 0 {
                continue;
            }
            let whole_density = density(s.score, whole);
            for form in 0..form_count(s.item) {
                let t = form_tokens(s.item, form);
                let d = if declares_value(s.item, form) {
                    let value = s.item.variant_value(form).unwrap_or(1.0);
                    density(s.score * value, t)
                } else {
                    whole_density
                };
                order.push((desc_key(d), forms.len()));
                forms.push((i, form, t));
            }
        }
        sort_by_key_stable(&mut order);

        let mut remaining = budget.target_tokens;
        let mut taken = vec![false; items.len()];
        let mut out = VariantOutcome::default();
        for (_, f) in order {
            let (i, form, t) = forms[f];
            if taken[i] || (t != 0 && t > remaining) {
                continue;
            }
            taken[i] = true;
            out.outcome.selected.push(i);
            if form > 0 {
                let why = reason(items[i].item, form, remaining);
                out.picks.push(VariantPick::new(i, form, why));
            }
            // 0 <= t <= remaining: cannot overflow or go negative.
            remaining -= t;
        }
        Ok(out)
    }

    fn slicer_kind(&self) -> SlicerKind {
        SlicerKind::Greedy
    }

    fn is_monotonic(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{budget, item, scored};

    fn run(items: &[cupel_core::ContextItem], scores: &[f64], target: i64) -> Vec<usize> {
        let s = scored(items, scores);
        GreedySlice.slice(&s, budget(target)).unwrap().selected
    }

    // ----- edge-case table of the specification -----

    #[test]
    fn empty_input_selects_nothing() {
        assert!(run(&[], &[], 100).is_empty());
    }

    #[test]
    fn non_positive_target_selects_nothing_not_even_zero_token_items() {
        let items = [item("z", 0), item("a", 10)];
        assert!(run(&items, &[0.5, 0.5], 0).is_empty());
        assert!(run(&items, &[0.5, 0.5], -5).is_empty());
    }

    #[test]
    fn all_zero_token_items_are_selected_in_index_order() {
        // All densities are f64::MAX; ties break by index, scores ignored.
        let items = [item("a", 0), item("b", 0), item("c", 0)];
        assert_eq!(run(&items, &[0.1, 0.9, 0.5], 1), vec![0, 1, 2]);
    }

    #[test]
    fn single_item_that_fits_is_selected() {
        assert_eq!(run(&[item("a", 50)], &[0.3], 50), vec![0]); // 50 <= 50
    }

    #[test]
    fn single_item_over_budget_leaves_only_zero_token_items() {
        let items = [item("big", 51), item("z", 0)];
        // big: 51 > 50 skipped; z: zero tokens, always taken.
        assert_eq!(run(&items, &[0.9, 0.0], 50), vec![1]);
        assert!(run(&[item("big", 51)], &[0.9], 50).is_empty());
    }

    #[test]
    fn all_items_over_budget_individually_leaves_zero_token_items() {
        let items = [item("a", 20), item("z1", 0), item("b", 30), item("z2", 0)];
        assert_eq!(run(&items, &[0.9, 0.1, 0.8, 0.2], 10), vec![1, 3]);
    }

    #[test]
    fn all_items_fit_all_selected() {
        let items = [item("a", 10), item("b", 20), item("c", 30)];
        // 10 + 20 + 30 = 60 <= 60. Densities 0.05, 0.025, 0.01 -> order 0,1,2.
        assert_eq!(run(&items, &[0.5, 0.5, 0.3], 60), vec![0, 1, 2]);
    }

    // ----- conformance notes -----

    #[test]
    fn equal_density_ties_break_by_lower_index() {
        // Spec example: A (density 0.5, index 0) precedes B (density 0.5, index 3).
        // A = 0.5/1, x = 0.2/1, y = 0.1/1, B = 1.0/2 = 0.5. Target 2: A (1 left),
        // B needs 2 > 1 -> skipped, x fits (0 left), y skipped.
        let items = [item("A", 1), item("x", 1), item("y", 1), item("B", 2)];
        assert_eq!(run(&items, &[0.5, 0.2, 0.1, 1.0], 2), vec![0, 1]);
        // With target 3: A (2 left), B (0 left), x and y skipped.
        assert_eq!(run(&items, &[0.5, 0.2, 0.1, 1.0], 3), vec![0, 3]);
    }

    #[test]
    fn skip_not_defer_single_pass() {
        // Densities: a = 0.9/60 = 0.015, b = 0.5/50 = 0.01, c = 0.1/40 = 0.0025.
        // Target 100: a (40 left), b 50 > 40 skipped, c 40 <= 40 taken (0 left).
        let items = [item("a", 60), item("b", 50), item("c", 40)];
        assert_eq!(run(&items, &[0.9, 0.5, 0.1], 100), vec![0, 2]);
    }

    #[test]
    fn output_is_in_density_order_not_input_order() {
        // a = 0.9/90 = 0.01, b = 0.5/10 = 0.05 -> b first.
        let items = [item("a", 90), item("b", 10)];
        assert_eq!(run(&items, &[0.9, 0.5], 100), vec![1, 0]);
    }

    #[test]
    fn zero_token_items_come_first_whatever_their_score() {
        let items = [item("a", 1), item("z", 0)];
        // a: 1.0/1 = 1.0 < f64::MAX; z first.
        assert_eq!(run(&items, &[1.0, 0.0], 10), vec![1, 0]);
    }

    #[test]
    fn worked_example_of_the_diagnostics_chapter() {
        // fits: 1.0/150 ~ 0.00667 first, 150 <= 200 (50 left); too-big 400 > 50.
        let items = [item("fits", 150), item("too-big", 400)];
        assert_eq!(run(&items, &[1.0, 0.0], 200), vec![0]);
    }

    // ----- choices -----

    #[test]
    fn negative_token_items_are_left_out() {
        let items = [item("neg", -50), item("a", 60)];
        // Without the guard, neg would raise `remaining` to 100 and let a in.
        assert!(run(&items, &[0.9, 0.5], 50).is_empty());
    }

    #[test]
    fn non_finite_scores_are_rejected() {
        // Issue 18 (7): NaN used to sort last and still be taken if it fit.
        let items = [item("nan", 10), item("a", 10)];
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let s = scored(&items, &[bad, 0.5]);
            assert!(matches!(
                GreedySlice.slice(&s, budget(20)),
                Err(CupelError::NonFiniteScore { index: 0, .. })
            ));
        }
    }

    #[test]
    fn negative_zero_density_equals_zero_density() {
        // -0.0/10 == 0.0/10: tie -> index order.
        let items = [item("a", 10), item("b", 10)];
        assert_eq!(run(&items, &[-0.0, 0.0], 20), vec![0, 1]);
        assert_eq!(run(&items, &[0.0, -0.0], 20), vec![0, 1]);
    }

    #[test]
    fn key_matches_score_cmp_desc() {
        use cupel_core::score_cmp_desc;
        let values = [
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            0.25,
            1e-300,
            -1e300,
            0.1 + 0.2,
            0.3,
        ];
        for &a in &values {
            for &b in &values {
                assert_eq!(
                    desc_key(a).cmp(&desc_key(b)),
                    score_cmp_desc(a, b),
                    "{a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn reports_kind_and_monotonicity() {
        assert_eq!(GreedySlice.slicer_kind(), SlicerKind::Greedy);
        assert!(GreedySlice.is_monotonic());
    }
}
