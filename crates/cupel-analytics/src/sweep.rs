//! Budget sweeps: the included set at each of many budget sizes.

use std::fmt::Write as _;

use cupel_core::{ContextItem, CupelError};
use cupel_pipeline::Pipeline;

use crate::probe::{Probe, Prober};

/// One budget size of a [`BudgetSweep`].
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRow {
    /// The probe size `b`: the pipeline's budget with `max_tokens` and
    /// `target_tokens` both set to `b`.
    pub budget: i64,
    /// Positions in `items` of the included items, ascending.
    pub included: Vec<usize>,
    /// Sum of the included items' tokens, as the window holds them: an
    /// item taken as a variant (spec chapter 22) counts its variant's tokens.
    pub included_tokens: i64,
    /// Per entry of `included` (same order), the tokens the window holds
    /// for that item: its own, or its variant's.
    pub held_tokens: Vec<i64>,
    /// Why no window exists at this size, if none does (`included` is then
    /// empty): the output reserve exceeds `b`
    /// ([`OutputReserveExceedsMax`](CupelError::OutputReserveExceedsMax)), the
    /// pinned items do not fit
    /// ([`PinnedBudgetExceeded`](CupelError::PinnedBudgetExceeded)), or the
    /// selection overflows under `Throw`
    /// ([`BudgetOverflow`](CupelError::BudgetOverflow)).
    pub no_window: Option<CupelError>,
}

/// The result of [`budget_sweep`]: per budget the included items, per item the
/// budgets at which it is included.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetSweep {
    /// One row per requested budget, in the order given.
    pub rows: Vec<SweepRow>,
    /// `by_item[i]` lists the budgets (in the order given) at which `items[i]`
    /// is included; `by_item.len() == items.len()`.
    pub by_item: Vec<Vec<i64>>,
}

impl BudgetSweep {
    /// The sweep as tidy CSV, one line per (budget, item):
    /// `budget,item,included` with `included` `1` or `0`, rows in the order of
    /// [`rows`](Self::rows) and items by position. Ready for a heat map.
    ///
    /// ```
    /// use cupel_analytics::budget_sweep;
    /// # use cupel_core::{ContextBudget, ContextItem};
    /// # use cupel_pipeline::Pipeline;
    /// # use cupel_placers::ChronologicalPlacer;
    /// # use cupel_scorers::ReflexiveScorer;
    /// # use cupel_slicers::GreedySlice;
    /// # let pipeline = Pipeline::builder().scorer(ReflexiveScorer).slicer(GreedySlice)
    /// #     .placer(ChronologicalPlacer).budget(ContextBudget::new(100, 100)?).build()?;
    /// let items = vec![ContextItem::new("only", 10)?];
    /// let sweep = budget_sweep(&pipeline, &items, &[5, 10])?;
    /// assert_eq!(sweep.to_csv(), "budget,item,included\n5,0,0\n10,0,1\n");
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    pub fn to_csv(&self) -> String {
        let mut out = String::from("budget,item,included\n");
        for row in &self.rows {
            let mut next = row.included.iter().peekable();
            for item in 0..self.by_item.len() {
                let included = next.next_if(|&&i| i == item).is_some();
                // Writing to a String cannot fail.
                let _ = writeln!(out, "{},{item},{}", row.budget, u8::from(included));
            }
        }
        out
    }

    /// Items whose inclusion is not monotonic over the swept budgets: included
    /// at some budget and not included at a larger one (a size without a
    /// window counts as not included). Ascending positions.
    ///
    /// ```
    /// use cupel_analytics::budget_sweep;
    /// # use cupel_core::{ContextBudget, ContextItem};
    /// # use cupel_pipeline::Pipeline;
    /// # use cupel_placers::ChronologicalPlacer;
    /// # use cupel_scorers::ReflexiveScorer;
    /// # use cupel_slicers::GreedySlice;
    /// # let pipeline = Pipeline::builder().scorer(ReflexiveScorer).slicer(GreedySlice)
    /// #     .placer(ChronologicalPlacer).budget(ContextBudget::new(1_000, 1_000)?).build()?;
    /// let items = vec![
    ///     ContextItem::builder("A", 60).future_relevance_hint(0.9).build()?,
    ///     ContextItem::builder("B", 50).future_relevance_hint(0.5).build()?,
    /// ];
    /// let sweep = budget_sweep(&pipeline, &items, &[50, 60, 110])?;
    /// assert_eq!(sweep.by_item[1], vec![50, 110]); // B: in, out, in
    /// assert_eq!(sweep.non_monotonic_items(), vec![1]);
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    pub fn non_monotonic_items(&self) -> Vec<usize> {
        let mut order: Vec<&SweepRow> = self.rows.iter().collect();
        // Stable: equal budgets keep the given order (their rows are identical).
        order.sort_by_key(|r| r.budget);
        let n = self.by_item.len();
        let mut seen_in = vec![false; n];
        let mut broken = vec![false; n];
        let mut here = vec![false; n];
        for row in order {
            here.fill(false);
            for &i in &row.included {
                if let Some(flag) = here.get_mut(i) {
                    *flag = true;
                }
            }
            for i in 0..n {
                if here[i] {
                    seen_in[i] = true;
                } else if seen_in[i] {
                    broken[i] = true;
                }
            }
        }
        (0..n).filter(|&i| broken[i]).collect()
    }
}

/// Dry-runs `pipeline` on `items` at each size in `budgets` and tabulates who
/// is included where.
///
/// Each size `b` is probed as in [`find_min_budget_for`](crate::find_min_budget_for):
/// the pipeline's budget with `max_tokens = target_tokens = b`, output reserve,
/// reserved slots and margin kept (clarification S-3). A size at which no
/// window exists gets a row with no items and the reason in
/// [`SweepRow::no_window`]. Rows follow the order of `budgets` (duplicates
/// allowed); items are identified by position (clarification D-1). Works for
/// every slicer and makes non-monotonic inclusion visible
/// ([`BudgetSweep::non_monotonic_items`]).
///
/// Cost: `budgets.len()` dry runs.
///
/// # Errors
/// * [`CupelError::InvalidArgument`] — a negative size (the message names its
///   position and value);
/// * probe errors other than the no-window ones (see [`SweepRow::no_window`]).
///
/// ```
/// use cupel_analytics::budget_sweep;
/// use cupel_core::{ContextBudget, ContextItem};
/// use cupel_pipeline::Pipeline;
/// use cupel_placers::ChronologicalPlacer;
/// use cupel_scorers::ReflexiveScorer;
/// use cupel_slicers::GreedySlice;
///
/// let items = vec![
///     ContextItem::builder("A", 60).future_relevance_hint(0.9).build()?,
///     ContextItem::builder("B", 50).future_relevance_hint(0.5).build()?,
/// ];
/// let pipeline = Pipeline::builder()
///     .scorer(ReflexiveScorer)
///     .slicer(GreedySlice)
///     .placer(ChronologicalPlacer)
///     .budget(ContextBudget::builder(1_000, 1_000).output_reserve(20).build()?)
///     .build()?;
/// let sweep = budget_sweep(&pipeline, &items, &[10, 70, 80, 130])?;
/// // 10 < output reserve 20: no window. Effective targets: 70 → 50, 80 → 60, 130 → 110.
/// assert!(sweep.rows[0].no_window.is_some());
/// assert_eq!(sweep.rows[1].included, vec![1]);
/// assert_eq!(sweep.rows[2].included, vec![0]);
/// assert_eq!(sweep.rows[3].included, vec![0, 1]);
/// assert_eq!(sweep.by_item[0], vec![80, 130]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn budget_sweep(
    pipeline: &Pipeline,
    items: &[ContextItem],
    budgets: &[i64],
) -> Result<BudgetSweep, CupelError> {
    let mut rows = Vec::with_capacity(budgets.len());
    let mut by_item: Vec<Vec<i64>> = vec![Vec::new(); items.len()];
    for row in budget_sweep_rows(pipeline, items, budgets)? {
        let row = row?;
        for &i in &row.included {
            if let Some(list) = by_item.get_mut(i) {
                list.push(row.budget);
            }
        }
        rows.push(row);
    }
    Ok(BudgetSweep { rows, by_item })
}

/// [`budget_sweep`] one row at a time, in the order of `budgets`: each row is
/// computed when the iterator is advanced, so a caller that summarises rows
/// as they come keeps memory independent of the number of budgets × items
/// (the `cupel sweep` command does).
///
/// # Errors
/// [`CupelError::InvalidArgument`] for a negative size, up front; each item
/// is `Err` for a probe error other than the no-window ones.
///
/// ```
/// use cupel_analytics::budget_sweep_rows;
/// # use cupel_core::{ContextBudget, ContextItem};
/// # use cupel_pipeline::Pipeline;
/// # use cupel_placers::ChronologicalPlacer;
/// # use cupel_scorers::ReflexiveScorer;
/// # use cupel_slicers::GreedySlice;
/// # let pipeline = Pipeline::builder().scorer(ReflexiveScorer).slicer(GreedySlice)
/// #     .placer(ChronologicalPlacer).budget(ContextBudget::new(100, 100)?).build()?;
/// let items = vec![ContextItem::new("only", 10)?];
/// let counts: Vec<usize> = budget_sweep_rows(&pipeline, &items, &[5, 10])?
///     .map(|row| row.map(|r| r.included.len()))
///     .collect::<Result<_, _>>()?;
/// assert_eq!(counts, [0, 1]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn budget_sweep_rows<'a>(
    pipeline: &'a Pipeline,
    items: &'a [ContextItem],
    budgets: &'a [i64],
) -> Result<impl Iterator<Item = Result<SweepRow, CupelError>> + 'a, CupelError> {
    if let Some((k, &b)) = budgets.iter().enumerate().find(|&(_, &b)| b < 0) {
        return Err(CupelError::InvalidArgument(format!(
            "budgets[{k}] is {b}; budget sizes must be >= 0"
        )));
    }
    let prober = Prober::new(pipeline, items)?;
    Ok(budgets.iter().map(move |&b| {
        Ok(match prober.probe(b)? {
            Probe::Window(w) => {
                let mut pairs: Vec<(usize, i64)> = w.placed.into_iter().zip(w.held).collect();
                pairs.sort_unstable();
                let (included, held_tokens) = pairs.into_iter().unzip();
                SweepRow {
                    budget: b,
                    included,
                    included_tokens: w.tokens,
                    held_tokens,
                    no_window: None,
                }
            }
            Probe::NoWindow(e) => SweepRow {
                budget: b,
                included: Vec::new(),
                included_tokens: 0,
                held_tokens: Vec::new(),
                no_window: Some(e),
            },
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(budget: i64, included: Vec<usize>) -> SweepRow {
        SweepRow {
            budget,
            held_tokens: vec![0; included.len()],
            included,
            included_tokens: 0,
            no_window: None,
        }
    }

    #[test]
    fn csv_is_tidy_and_ordered() {
        let sweep = BudgetSweep {
            rows: vec![row(20, vec![0, 2]), row(10, vec![1])],
            by_item: vec![vec![20], vec![10], vec![20]],
        };
        assert_eq!(
            sweep.to_csv(),
            "budget,item,included\n20,0,1\n20,1,0\n20,2,1\n10,0,0\n10,1,1\n10,2,0\n"
        );
    }

    #[test]
    fn non_monotonic_items_sort_budgets_first() {
        // Given out of order: 30 {0, 1}, 10 {1}, 20 {0}.
        // Ascending: 10 {1}, 20 {0}, 30 {0, 1} -> item 1 is in, out, in.
        let sweep = BudgetSweep {
            rows: vec![row(30, vec![0, 1]), row(10, vec![1]), row(20, vec![0])],
            by_item: vec![vec![30, 20], vec![30, 10]],
        };
        assert_eq!(sweep.non_monotonic_items(), vec![1]);
        // A size without a window after an inclusion also breaks monotonicity.
        let sweep = BudgetSweep {
            rows: vec![
                row(10, vec![0]),
                SweepRow {
                    no_window: Some(CupelError::BudgetOverflow {
                        selected_tokens: 30,
                        target_tokens: 20,
                    }),
                    ..row(20, vec![])
                },
            ],
            by_item: vec![vec![10]],
        };
        assert_eq!(sweep.non_monotonic_items(), vec![0]);
    }

    #[test]
    fn empty_sweeps() {
        let sweep = BudgetSweep {
            rows: vec![],
            by_item: vec![vec![], vec![]],
        };
        assert_eq!(sweep.to_csv(), "budget,item,included\n");
        assert!(sweep.non_monotonic_items().is_empty());
    }
}
