//! Budget simulation: marginal items and the minimum budget for an item.

use cupel_core::{ContextBudget, ContextItem, CupelError, SlicerKind};
use cupel_pipeline::Pipeline;

use crate::probe::Prober;

/// The error message of [`get_marginal_items`] for a pipeline whose slicer is
/// a `QuotaSlice` (the specification's exact text), carried by
/// [`CupelError::PipelineConfig`].
pub const MARGINAL_ITEMS_QUOTA_MESSAGE: &str = "GetMarginalItems requires monotonic item inclusion. QuotaSlice produces non-monotonic inclusion as budget changes shift percentage allocations.";

/// The error message of [`find_min_budget_for`] for a pipeline whose slicer is
/// not monotonic (the specification's exact text), carried by
/// [`CupelError::PipelineConfig`].
pub const MIN_BUDGET_MONOTONIC_MESSAGE: &str = "FindMinBudgetFor requires monotonic item inclusion. QuotaSlice and CountQuotaSlice produce non-monotonic inclusion as budget changes shift allocations. Use a GreedySlice or KnapsackSlice inner slicer for budget simulation.";

/// The items that a budget `slack_tokens` smaller would lose.
///
/// Two dry runs of `pipeline`'s policy on `items`: one under `budget`, one
/// under the *reduced* budget — `budget` with `max_tokens - slack_tokens` and
/// `target_tokens - slack_tokens`, and the same output reserve, reserved slots
/// and safety margin (clarification S-20; the seed's pseudocode drops the
/// slots). The result lists the positions in `items` of the items included in
/// the first run but not in the second, in the first run's placed order.
///
/// Items are identified by **position** (clarification D-1), never by
/// content: two equal items at different positions are different items.
/// `budget` replaces the pipeline's own budget for both runs.
///
/// The answer is only as meaningful as the slicer's inclusion is monotonic.
/// The specification refuses `QuotaSlice` (and only it); greedy and knapsack
/// are accepted although they are not strictly monotonic either — see
/// [`find_min_budget_for`] and [`budget_sweep`](crate::budget_sweep).
///
/// # Errors
/// * [`CupelError::InvalidArgument`] — `slack_tokens` outside
///   `0..=budget.target_tokens()` (the message has both numbers);
/// * [`CupelError::PipelineConfig`] with [`MARGINAL_ITEMS_QUOTA_MESSAGE`] —
///   the pipeline's slicer reports [`SlicerKind::Quota`];
/// * the budget rules for the reduced budget (for example
///   `OutputReserveExceedsMax` when `output_reserve > max_tokens - slack`);
/// * any error of either dry run (e.g. `PinnedBudgetExceeded` at the reduced size).
///
/// ```
/// use cupel_analytics::get_marginal_items;
/// use cupel_core::{ContextBudget, ContextItem};
/// use cupel_pipeline::Pipeline;
/// use cupel_placers::ChronologicalPlacer;
/// use cupel_scorers::ReflexiveScorer;
/// use cupel_slicers::GreedySlice;
///
/// let items = vec![
///     ContextItem::builder("best", 40).future_relevance_hint(0.9).build()?,
///     ContextItem::builder("good", 40).future_relevance_hint(0.5).build()?,
///     ContextItem::builder("meh", 40).future_relevance_hint(0.1).build()?,
/// ];
/// let budget = ContextBudget::new(120, 120)?;
/// let pipeline = Pipeline::builder()
///     .scorer(ReflexiveScorer)
///     .slicer(GreedySlice)
///     .placer(ChronologicalPlacer)
///     .budget(budget.clone())
///     .build()?;
/// // 120 tokens hold all three; 120 - 40 = 80 hold the two best.
/// let lost = get_marginal_items(&pipeline, &items, &budget, 40)?;
/// assert_eq!(lost, vec![2]);
/// assert_eq!(items[lost[0]].content(), "meh");
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn get_marginal_items(
    pipeline: &Pipeline,
    items: &[ContextItem],
    budget: &ContextBudget,
    slack_tokens: i64,
) -> Result<Vec<usize>, CupelError> {
    let target = budget.target_tokens();
    if !(0..=target).contains(&slack_tokens) {
        return Err(CupelError::InvalidArgument(format!(
            "slack_tokens must be within 0..=target_tokens ({target}), got {slack_tokens}"
        )));
    }
    if pipeline.policy().slicer().slicer_kind() == SlicerKind::Quota {
        return Err(CupelError::PipelineConfig(
            MARGINAL_ITEMS_QUOTA_MESSAGE.to_owned(),
        ));
    }
    // 0 <= slack <= target <= max, so neither subtraction can go below zero.
    let reduced = budget
        .to_builder()
        .max_tokens(budget.max_tokens() - slack_tokens)
        .target_tokens(target - slack_tokens)
        .build()?;
    let prober = Prober::new(pipeline, items)?;
    let full = prober.included_positions(budget)?;
    let small = prober.included_positions(&reduced)?;
    let mut in_small = vec![false; items.len()];
    for &i in &small {
        if let Some(flag) = in_small.get_mut(i) {
            *flag = true;
        }
    }
    Ok(full
        .into_iter()
        .filter(|&i| !in_small.get(i).copied().unwrap_or(false))
        .collect())
}

/// Checks the preconditions shared by both minimum-budget searches and
/// returns where the search starts: the target item's token count, or its
/// smallest variant's when it has variants (an item taken in any form counts
/// as selected).
fn check_search(
    items: &[ContextItem],
    target_index: usize,
    search_ceiling: i64,
) -> Result<i64, CupelError> {
    let Some(item) = items.get(target_index) else {
        return Err(CupelError::InvalidArgument(format!(
            "targetItem must be an element of items: target_index {target_index} is out of range for {} items",
            items.len()
        )));
    };
    let tokens = item.tokens();
    if tokens < 0 {
        return Err(CupelError::InvalidArgument(format!(
            "targetItem has negative tokens ({tokens}); the pipeline excludes such items at every budget"
        )));
    }
    // With variants (spec chapter 22) the item can be in from its smallest
    // form's tokens on (forms never grow, so that is the last variant's).
    if let Some(smallest) = item.variants().last().map(cupel_core::ItemVariant::tokens) {
        if search_ceiling < smallest {
            return Err(CupelError::InvalidArgument(format!(
                "searchCeiling must be >= the target item's smallest form: search_ceiling is {search_ceiling}, its smallest variant has {smallest} tokens"
            )));
        }
        return Ok(smallest);
    }
    if search_ceiling < tokens {
        return Err(CupelError::InvalidArgument(format!(
            "searchCeiling must be >= targetItem.Tokens: search_ceiling is {search_ceiling}, the item has {tokens} tokens"
        )));
    }
    Ok(tokens)
}

/// The specification's binary search for the smallest budget at which
/// `items[target_index]` is selected, between its token count and
/// `search_ceiling`.
///
/// Each probe at size `b` is a dry run under the pipeline's budget with
/// `max_tokens` and `target_tokens` both set to `b` (output reserve, reserved
/// slots and margin kept; clarification S-3). The search, exactly as the
/// specification writes it:
///
/// ```text
/// low ← tokens, high ← search_ceiling
/// while high − low > 1:
///     mid ← low + (high − low) / 2
///     if included at mid: high ← mid else: low ← mid
/// return high if included at high, else None
/// ```
///
/// About `log2(search_ceiling − tokens) + 1` dry runs. `Ok(None)` means the
/// final verification at `high` did not include the item.
///
/// # When the answer overshoots
/// The search assumes *monotonic inclusion* (selected at `b` ⇒ selected at
/// every larger budget). That is false even for greedy slicing
/// (clarification S-1): a denser item that only fits at a larger budget can
/// take the room the target was using. Two consequences:
///
/// * **Non-monotonic inclusion.** A probe that lands in a gap moves `low`
///   past a smaller working budget; the result is then larger than the true
///   minimum, or `None` although some budget in range works.
/// * **The lower bound is never probed** (clarification S-2). When the item is
///   selected at exactly its own token count, the answer is that count plus
///   one (unless `search_ceiling` equals it).
///
/// Whenever it returns `Some(b)`, the item *is* selected at `b` (verified).
/// For the true minimum use [`find_min_budget_for_exact`]; to see the gaps,
/// [`budget_sweep`](crate::budget_sweep).
///
/// # Budgets at which no window exists
/// A probe whose dry run cannot produce a window counts as "not selected":
/// the output reserve exceeds `b`, the pinned items need more than
/// `b − output_reserve`, or the selection overflows `b` under
/// `OverflowStrategy::Throw`. Every other error is returned.
///
/// # Errors
/// * [`CupelError::InvalidArgument`] — `target_index` out of range; the item
///   has negative tokens (it is never selectable); `search_ceiling` below the
///   item's tokens;
/// * [`CupelError::PipelineConfig`] with [`MIN_BUDGET_MONOTONIC_MESSAGE`] —
///   the slicer is a `QuotaSlice`, `CountQuotaSlice` or
///   `CountConstrainedKnapsackSlice`, or any slicer whose
///   [`is_monotonic`](cupel_core::Slicer::is_monotonic) is `false`
///   (clarification S-4);
/// * errors of a probe other than the no-window ones above.
///
/// ```
/// use cupel_analytics::{find_min_budget_for, find_min_budget_for_exact};
/// use cupel_core::{ContextBudget, ContextItem};
/// use cupel_pipeline::Pipeline;
/// use cupel_placers::ChronologicalPlacer;
/// use cupel_scorers::ReflexiveScorer;
/// use cupel_slicers::GreedySlice;
///
/// let items = vec![
///     ContextItem::builder("A", 60).future_relevance_hint(0.9).build()?, // density 0.015
///     ContextItem::builder("B", 50).future_relevance_hint(0.5).build()?, // density 0.010
/// ];
/// let pipeline = Pipeline::builder()
///     .scorer(ReflexiveScorer)
///     .slicer(GreedySlice)
///     .placer(ChronologicalPlacer)
///     .budget(ContextBudget::new(1_000, 1_000)?)
///     .build()?;
/// // B is selected at 50 (A does not fit), not at 60..=109 (A takes the room),
/// // and again at 110. The binary search probes 80, 95, 102, 106, 108, 109
/// // (all without B) and verifies 110.
/// assert_eq!(find_min_budget_for(&pipeline, &items, 1, 110)?, Some(110));
/// assert_eq!(find_min_budget_for_exact(&pipeline, &items, 1, 110)?, Some(50));
/// // A alone: selected at its own 60 tokens, but 60 is never probed (S-2).
/// assert_eq!(find_min_budget_for(&pipeline, &items, 0, 100)?, Some(61));
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn find_min_budget_for(
    pipeline: &Pipeline,
    items: &[ContextItem],
    target_index: usize,
    search_ceiling: i64,
) -> Result<Option<i64>, CupelError> {
    let tokens = check_search(items, target_index, search_ceiling)?;
    let slicer = pipeline.policy().slicer();
    let refused = matches!(
        slicer.slicer_kind(),
        SlicerKind::Quota | SlicerKind::CountQuota | SlicerKind::CountConstrainedKnapsack
    ) || !slicer.is_monotonic();
    if refused {
        return Err(CupelError::PipelineConfig(
            MIN_BUDGET_MONOTONIC_MESSAGE.to_owned(),
        ));
    }
    let prober = Prober::new(pipeline, items)?;
    let mut low = tokens;
    let mut high = search_ceiling;
    // 0 <= low <= high, so high - low cannot overflow.
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if prober.includes(target_index, mid)? {
            high = mid;
        } else {
            low = mid;
        }
    }
    Ok(prober.includes(target_index, high)?.then_some(high))
}

/// The true smallest budget in `[tokens, search_ceiling]` at which
/// `items[target_index]` is selected, for **any** slicer.
///
/// Probes every size `b = tokens, tokens + 1, …, search_ceiling` in increasing
/// order (each probe formed as in [`find_min_budget_for`]: `max_tokens =
/// target_tokens = b`, the rest of the pipeline's budget kept) and returns the
/// first `b` whose dry run includes the item, or `None` when none does. The
/// answer is therefore verified by a dry run and minimal by construction; it
/// is never larger than [`find_min_budget_for`]'s whenever that returns
/// `Some`. Budgets at which no window exists count as "not selected", as in
/// [`find_min_budget_for`].
///
/// No slicer is refused: quota, count-quota and custom non-monotonic slicers
/// are fine, because nothing is assumed about how inclusion varies with the
/// budget.
///
/// # Complexity
/// Up to `search_ceiling − tokens + 1` dry runs, i.e.
/// `O((search_ceiling − tokens) · T)` where `T` is one dry run (about
/// `O(N log N)` for the built-in scorers and greedy slicing); it stops at the
/// first budget that works. The scores are computed once per call (they do
/// not depend on the budget), so a probe costs only the budget-dependent
/// stages: about 0.1 ms at N = 1k with the standard five-scorer composite,
/// i.e. about 0.2 s for a range of 2,000 sizes (see the crate README for the
/// measured numbers). No slicer-independent exact method can do better in
/// general, since inclusion at one budget says nothing about the next.
///
/// # Errors
/// The argument errors of [`find_min_budget_for`], and probe errors other than
/// the no-window ones.
///
/// ```
/// use cupel_analytics::find_min_budget_for_exact;
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
///     .budget(ContextBudget::new(1_000, 1_000)?)
///     .build()?;
/// assert_eq!(find_min_budget_for_exact(&pipeline, &items, 0, 100)?, Some(60));
/// assert_eq!(find_min_budget_for_exact(&pipeline, &items, 1, 100)?, Some(50));
/// // A 200-token ceiling for a 300-token item is an argument error.
/// let big = vec![ContextItem::new("big", 300)?];
/// assert!(find_min_budget_for_exact(&pipeline, &big, 0, 200).is_err());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn find_min_budget_for_exact(
    pipeline: &Pipeline,
    items: &[ContextItem],
    target_index: usize,
    search_ceiling: i64,
) -> Result<Option<i64>, CupelError> {
    let tokens = check_search(items, target_index, search_ceiling)?;
    let prober = Prober::new(pipeline, items)?;
    for b in tokens..=search_ceiling {
        if prober.includes(target_index, b)? {
            return Ok(Some(b));
        }
    }
    Ok(None)
}
