//! Selecting a context window under a run budget: [`RunOptions::run_budget`](crate::RunOptions::run_budget).
//!
//! The window a pipeline selects is the input of the next provider request,
//! so a run budget's *input* ceiling bounds it: the pipeline's own
//! [`ContextBudget`] is clamped to the input allowance the run has left, and
//! the selected tokens are reserved on the run's [`RunTracker`] before the
//! window is handed back. Nothing is selected when the run is out of time or
//! tokens.

use cupel_core::{
    BudgetPhase, ContextBudget, ContextItem, CupelError, TokenSign, TokenUsage, TraceCollector,
};
use cupel_run::{LocalTracker, Reservation, RunRequest, RunTracker};

use crate::pipeline::{OverflowObserver, RunHold, RunOptions, RunOutput, select};
use crate::{Pipeline, Policy};

/// A context window selected under a run budget, with the reservation that
/// holds its tokens on the shared tracker: what the deprecated
/// [`Pipeline::run_within`] returns ([`RunOutput`] with its [`RunHold`](crate::RunHold) is
/// the current form).
///
/// Send the request with [`items`](Self::items), cap the model's generation
/// at [`max_output_tokens`](Self::max_output_tokens), then
/// [`settle`](Reservation::settle) the [`reservation`](Self::reservation) with
/// the usage the provider reports (input and output). Dropping the window
/// without settling releases the tokens, as if the request was never made.
#[derive(Debug)]
#[non_exhaustive]
pub struct ReservedWindow {
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
    /// Set an `output_reserve` when holders run concurrently.
    pub max_output_tokens: Option<i64>,
    /// The budget the selection ran under: the pipeline's own, clamped to
    /// the run's remaining input allowance.
    pub context_budget: ContextBudget,
    /// The tokens held on the tracker for this request: `input_tokens` in,
    /// and the reserved output (see [`Pipeline::run_within`]).
    pub reservation: Reservation,
}

impl Pipeline {
    /// Selects a context window under the run budget tracked by `tracker`:
    /// the rules are those of [`RunOptions::run_budget`].
    ///
    /// # Errors
    /// As [`RunOptions::run_budget`].
    #[deprecated(
        since = "0.2.0",
        note = "use `run_with(items, RunOptions::new().run_budget(t))`; the hold is `RunOutput::hold`"
    )]
    pub fn run_within(
        &self,
        items: &[ContextItem],
        tracker: &LocalTracker,
    ) -> Result<ReservedWindow, CupelError> {
        let out = self.run_with(items, RunOptions::new().run_budget(tracker))?;
        ReservedWindow::from_output(out)
    }

    /// Like [`run_within`](Self::run_within), reporting the selection to
    /// `collector` (which sees the clamped budget).
    ///
    /// # Errors
    /// As [`run_within`](Self::run_within).
    #[deprecated(
        since = "0.2.0",
        note = "use `run_with(items, RunOptions::new().run_budget(t).collector(c))`"
    )]
    pub fn run_within_traced<C: TraceCollector + ?Sized>(
        &self,
        items: &[ContextItem],
        tracker: &LocalTracker,
        collector: &mut C,
    ) -> Result<ReservedWindow, CupelError> {
        let options = RunOptions::new().run_budget(tracker).collector(collector);
        ReservedWindow::from_output(self.run_with(items, options)?)
    }
}

impl ReservedWindow {
    fn from_output(out: RunOutput) -> Result<Self, CupelError> {
        let hold = out.hold.ok_or_else(|| {
            CupelError::PipelineConfig("a run under a run budget returned no hold".into())
        })?;
        Ok(ReservedWindow {
            items: out.items,
            input_tokens: hold.input_tokens,
            max_output_tokens: hold.max_output_tokens,
            context_budget: hold.context_budget,
            reservation: hold.reservation,
        })
    }
}

/// A selection under the run budget tracked by `tracker` (the rules of
/// [`RunOptions::run_budget`](crate::RunOptions::run_budget)), with `budget`
/// as the budget to clamp.
pub(crate) fn select_within<R, C: TraceCollector + ?Sized>(
    policy: &Policy,
    budget: &ContextBudget,
    items: &[ContextItem],
    tracker: &dyn RunTracker<Reservation = R>,
    collector: Option<&mut C>,
    report: bool,
    observer: Option<&OverflowObserver>,
) -> Result<RunOutput<R>, CupelError> {
    let remaining = tracker.preflight_allowance()?;
    let input_left = remaining.and_then(|r| r.input());
    let output_left = remaining.and_then(|r| r.output());

    let (context_budget, clamped) = clamp(budget, input_left)?;
    let (items, report) = match select(policy, &context_budget, items, collector, report, observer)
    {
        Ok(selected) => selected,
        Err(CupelError::PinnedBudgetExceeded { pinned_tokens, .. })
            if clamped && pinned_tokens <= budget.available_for_pinned() =>
        {
            // The pins fit the request's own budget but not the run's
            // input allowance: that is a run-budget failure. Only ask
            // (no halt): nothing was requested, and the caller may
            // retry with fewer pins.
            let projected = RunRequest::new(
                BudgetPhase::ProviderRequest,
                TokenUsage::new(pinned_tokens, 0)?,
            );
            return Err(match tracker.would_fit(&projected) {
                Err(budget_error) => budget_error,
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
    let reserve = budget.output_reserve();
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
    Ok(RunOutput {
        items,
        report,
        hold: Some(RunHold {
            input_tokens,
            max_output_tokens,
            context_budget,
            reservation,
        }),
    })
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

/// The old name of [`ReservedWindow`] (renamed so that a name holding "Budget"
/// alone means the context budget; ARCHITECTURE.md, Glossary).
#[deprecated(since = "0.2.0", note = "renamed `ReservedWindow`")]
pub type BudgetedWindow = ReservedWindow;
