//! Selecting a context window under a run budget: [`Pipeline::run_within`].
//!
//! The window a pipeline selects is the input of the next provider request,
//! so a run budget's *input* ceiling bounds it: the pipeline's own
//! [`ContextBudget`] is clamped to the input allowance the run has left, and
//! the selected tokens are reserved on the shared [`BudgetTracker`] before the
//! window is handed back. Nothing is selected when the run is out of time or
//! tokens.

use cupel_core::{
    BudgetPhase, BudgetRequest, BudgetTracker, ContextBudget, ContextItem, CupelError,
    NullTraceCollector, Reservation, TokenSign, TokenUsage, TraceCollector,
};

use crate::Pipeline;
use crate::run::execute;

/// A context window selected under a run budget, with the reservation that
/// holds its tokens on the shared tracker.
///
/// Send the request with [`items`](Self::items), cap the model's generation
/// at [`max_output_tokens`](Self::max_output_tokens), then
/// [`settle`](Reservation::settle) the [`reservation`](Self::reservation) with
/// the usage the provider reports (input and output). Dropping the window
/// without settling releases the tokens, as if the request was never made.
#[derive(Debug)]
#[non_exhaustive]
pub struct BudgetedWindow {
    /// The selected items, in placement order.
    pub items: Vec<ContextItem>,
    /// The sum of the selected items' tokens (reserved as input usage).
    pub input_tokens: i64,
    /// The most the model may generate for this request without breaking the
    /// output ceiling: the pipeline's `output_reserve`, lowered to the output
    /// allowance left; `None` when neither bounds it.
    ///
    /// With `output_reserve = 0` and a bounded output ceiling this is the
    /// whole output allowance left *at selection time*, and none of it is
    /// reserved: every concurrent holder is told the same number, so their
    /// answers together can pass the ceiling (the overage is recorded when
    /// the reservations settle and stops the run at its next checkpoint).
    /// Set an `output_reserve` when holders run concurrently (R-20).
    pub max_output_tokens: Option<i64>,
    /// The budget the selection ran under: the pipeline's own, clamped to
    /// the run's remaining input allowance.
    pub context_budget: ContextBudget,
    /// The tokens held on the tracker for this request: `input_tokens` in,
    /// and the reserved output (see [`Pipeline::run_within`]).
    pub reservation: Reservation,
}

impl Pipeline {
    /// Selects a context window under the run budget tracked by `tracker`.
    ///
    /// 1. **Pre-flight**: an expired deadline or a depleted dimension on the
    ///    tracker fails the call before anything is selected.
    /// 2. **Clamp**: with `R` input tokens left on the tracker (the smallest
    ///    allowance of its scope and ancestors, reservations counted), the
    ///    window may hold at most `R` tokens: when `R` is below
    ///    `max_tokens - output_reserve`, the selection runs under
    ///    `max_tokens = R + output_reserve` and `target_tokens =
    ///    min(target_tokens, R)`. The clamp never raises a limit: the
    ///    pipeline's own budget stays the upper bound.
    /// 3. **Select** as [`run`](Self::run) does.
    /// 4. **Reserve** the request on the tracker, atomically: the selected
    ///    tokens as input, and for the output the pipeline's
    ///    `output_reserve` (lowered to the output allowance left).
    ///
    /// # `output_reserve` and the output ceiling
    /// `output_reserve` is the room kept in the context window for the
    /// model's answer, i.e. the longest answer this request allows. Under a
    /// run budget it is also the request's *projected output cost*: it is
    /// reserved against the output ceiling, so concurrent subagents cannot
    /// together promise more output than the run has left. When less output
    /// allowance remains than `output_reserve`, only what remains is reserved
    /// and [`BudgetedWindow::max_output_tokens`] says so — pass it to the
    /// provider as the generation limit. The reserve does not shrink the
    /// input clamp: input and output are separate ceilings.
    ///
    /// **With `output_reserve = 0` nothing is reserved for the answer.**
    /// `max_output_tokens` is then the whole output allowance left (or
    /// `None` when output is unbounded) — a number, not a hold: concurrent
    /// holders that select at the same time are each told the same
    /// remaining tokens, and if they all use them the run's output ceiling is
    /// passed (recorded when they settle; the next checkpoint fails). Use a
    /// positive `output_reserve` — the longest answer one request may write —
    /// whenever subagents share an output ceiling (R-20).
    ///
    /// # Pinned items that do not fit the run
    /// If the pinned items alone fit the pipeline's own budget but not the
    /// input the run has left, the call fails with the run-budget error of a
    /// `provider_request` check for the pinned tokens — found with the
    /// non-latching [`BudgetTracker::would_fit`], so the tracker is **not**
    /// halted: nothing was requested, and the caller may retry with fewer
    /// pins, a smaller pipeline or after other holders release their
    /// reservations (R-19).
    ///
    /// # Projected duration
    /// The window's reservation carries no duration. To refuse a request
    /// that would outlive the deadline (R-17), check the time first:
    /// `tracker.check_request(&BudgetRequest::provider_request(TokenUsage::ZERO)
    /// .with_duration(expected)?)` — the time rule does not depend on the
    /// tokens.
    ///
    /// # Errors
    /// * [`CupelError::RunBudgetExceeded`] — the pre-flight check failed
    ///   (phase `preflight`; the tracker is halted), pinned items alone need
    ///   more input tokens than remain (phase `provider_request`; not
    ///   halted, see above), or another holder consumed the room between the
    ///   clamp and the reservation (phase `provider_request`; halted).
    /// * every error of [`run`](Self::run).
    ///
    /// ```
    /// use cupel_core::{
    ///     BudgetTracker, ContextBudget, ContextItem, FixedTimeProvider, RunBudget, TokenLimit,
    ///     TokenUsage,
    /// };
    /// use cupel_pipeline::Pipeline;
    /// use cupel_placers::ChronologicalPlacer;
    /// use cupel_scorers::ReflexiveScorer;
    /// use cupel_slicers::GreedySlice;
    ///
    /// let clock = FixedTimeProvider::new("2026-01-01T00:00:00Z".parse().unwrap());
    /// let run = BudgetTracker::new(
    ///     RunBudget::new(None, Some(TokenLimit::new(Some(100), Some(1_000))?), &clock)?,
    ///     clock,
    /// )?;
    /// run.record(TokenUsage::new(40, 0)?); // earlier turns used 40 input tokens
    ///
    /// let pipeline = Pipeline::builder()
    ///     .scorer(ReflexiveScorer::new())
    ///     .slicer(GreedySlice::new())
    ///     .placer(ChronologicalPlacer)
    ///     .budget(ContextBudget::builder(4_096, 4_000).output_reserve(256).build()?)
    ///     .build()?;
    /// let items = vec![
    ///     ContextItem::builder("best", 50).future_relevance_hint(0.9).build()?,
    ///     ContextItem::builder("good", 30).future_relevance_hint(0.5).build()?,
    /// ];
    /// // 100 - 40 = 60 input tokens left: "best" (50) fits, "good" (30) no longer does.
    /// let window = pipeline.run_within(&items, &run)?;
    /// assert_eq!(window.items.len(), 1);
    /// assert_eq!(window.context_budget.target_tokens(), 60);
    /// assert_eq!(window.max_output_tokens, Some(256));
    /// // ... call the model, then settle with what it reports:
    /// window.reservation.settle(TokenUsage::new(50, 120)?);
    /// assert_eq!(run.usage(), TokenUsage::new(90, 120)?);
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    pub fn run_within(
        &self,
        items: &[ContextItem],
        tracker: &BudgetTracker,
    ) -> Result<BudgetedWindow, CupelError> {
        self.run_within_traced(items, tracker, &mut NullTraceCollector)
    }

    /// Like [`run_within`](Self::run_within), reporting the selection to
    /// `collector` (which sees the clamped budget).
    ///
    /// # Errors
    /// As [`run_within`](Self::run_within).
    pub fn run_within_traced<C: TraceCollector + ?Sized>(
        &self,
        items: &[ContextItem],
        tracker: &BudgetTracker,
        collector: &mut C,
    ) -> Result<BudgetedWindow, CupelError> {
        let snapshot = tracker.preflight()?;
        let remaining = snapshot.remaining_tokens;
        let input_left = remaining.and_then(|r| r.input());
        let output_left = remaining.and_then(|r| r.output());

        let (context_budget, clamped) = clamp(&self.budget, input_left)?;
        let items = match execute(
            &self.policy,
            &context_budget,
            items,
            collector,
            self.overflow_observer.as_ref(),
        ) {
            Ok(window) => window,
            Err(CupelError::PinnedBudgetExceeded { pinned_tokens, .. })
                if clamped && pinned_tokens <= self.budget.available_for_pinned() =>
            {
                // The pins fit the pipeline's own budget but not the run's
                // input allowance: that is a run-budget failure. Only ask
                // (no halt): nothing was requested, and the caller may
                // retry with fewer pins (R-19).
                let projected = BudgetRequest::new(
                    BudgetPhase::ProviderRequest,
                    TokenUsage::new(pinned_tokens, 0)?,
                );
                return Err(match tracker.would_fit(&projected) {
                    Err(budget_error) => budget_error.into(),
                    // Another holder released tokens meanwhile: report the
                    // selection's own error.
                    Ok(_) => CupelError::PinnedBudgetExceeded {
                        pinned_tokens,
                        available_tokens: context_budget.available_for_pinned(),
                    },
                });
            }
            Err(e) => return Err(e),
        };

        let total: i128 = items.iter().map(|i| i128::from(i.tokens().max(0))).sum();
        let input_tokens = i64::try_from(total).map_err(|_| CupelError::TokenOverflow {
            sign: TokenSign::Positive,
            total,
        })?;
        let reserve = self.budget.output_reserve();
        let reserved_output = output_left.map_or(reserve, |left| reserve.min(left.max(0)));
        let max_output_tokens = match (output_left, reserve > 0) {
            (Some(left), true) => Some(reserve.min(left)),
            (Some(left), false) => Some(left),
            (None, true) => Some(reserve),
            (None, false) => None,
        };
        let reservation = tracker.reserve(
            BudgetPhase::ProviderRequest,
            TokenUsage::new(input_tokens, reserved_output)?,
        )?;
        Ok(BudgetedWindow {
            items,
            input_tokens,
            max_output_tokens,
            context_budget,
            reservation,
        })
    }
}

/// The pipeline budget clamped to `input_left` window tokens, and whether the
/// clamp changed anything.
fn clamp(
    budget: &ContextBudget,
    input_left: Option<i64>,
) -> Result<(ContextBudget, bool), CupelError> {
    let Some(left) = input_left else {
        return Ok((budget.clone(), false));
    };
    // The pre-flight check guarantees left > 0; stay safe anyway.
    let left = left.max(0);
    let room = budget.available_for_pinned(); // max_tokens - output_reserve
    if left >= room {
        return Ok((budget.clone(), false));
    }
    // left < max - reserve, so left + reserve < max: no overflow, and the
    // result keeps target <= max and reserve <= max.
    let clamped = budget
        .to_builder()
        .max_tokens(left + budget.output_reserve())
        .target_tokens(budget.target_tokens().min(left))
        .build()?;
    Ok((clamped, true))
}
