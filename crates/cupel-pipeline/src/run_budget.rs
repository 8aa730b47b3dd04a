//! Selecting a context window under a run budget: [`RunOptions::run_budget`](crate::RunOptions::run_budget).
//!
//! The window a pipeline selects is the input of the next provider request,
//! so a run budget's *input* ceiling bounds it: the pipeline's own
//! [`ContextBudget`] is clamped to the input allowance the run has left, and
//! the selected tokens are reserved on the run's [`RunTracker`] before the
//! window is handed back. Nothing is selected when the run is out of time or
//! tokens.

use cupel_core::{ContextBudget, ContextItem, CupelError, TokenSign, TraceCollector};
use cupel_run::{
    BudgetExceededError, BudgetPhase, LocalTracker, Reservation, RunError, RunRequest, RunTracker,
    TokenUsage,
};

use crate::pipeline::{OverflowObserver, RunHold, RunOptions, RunOutput, select};
use crate::{Pipeline, Policy};

/// Why a selection under a run budget failed: the selection's own error
/// (core's [`CupelError`], as [`Pipeline::run`] returns it) or the run
/// budget's ([`RunError`]: a refusal, a store failure). What
/// [`Pipeline::run_with`] returns when [`RunOptions::run_budget`] gave a
/// tracker.
///
/// Each crate owns its errors and they meet here (issue 50, SL-6): `?`
/// converts either into this type, so a function that builds items and
/// runs under a run budget can return it.
///
/// ```
/// use cupel_core::CupelError;
/// use cupel_pipeline::SelectWithinError;
/// use cupel_run::{RunError, TokenUsage};
///
/// fn usage(input: i64) -> Result<TokenUsage, SelectWithinError> {
///     Ok(TokenUsage::new(input, 0)?)
/// }
/// let err = usage(-1).unwrap_err();
/// assert!(matches!(err, SelectWithinError::Run(RunError::NegativeTokenUsage { tokens: -1, .. })));
/// assert_eq!(err.to_string(), "run budget input token usage must be >= 0 (got -1)");
/// assert!(err.exceeded().is_none());
/// let selection: SelectWithinError = CupelError::EmptyContent.into();
/// assert_eq!(selection.to_string(), "context item content must not be empty");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectWithinError {
    /// The selection failed as [`Pipeline::run`] can (pinned items over the
    /// budget, a token overflow, a component breaking its contract, ...).
    #[error(transparent)]
    Selection(#[from] CupelError),
    /// The run budget refused the window or could not decide
    /// ([`RunError::Exceeded`], [`RunError::StoreFailed`], ...).
    #[error(transparent)]
    Run(#[from] RunError),
}

impl SelectWithinError {
    /// The run budget's refusal, when this is one
    /// ([`RunError::Exceeded`]): the phase, dimension and numbers to act on.
    pub fn exceeded(&self) -> Option<&BudgetExceededError> {
        match self {
            SelectWithinError::Run(run) => run.exceeded(),
            SelectWithinError::Selection(_) => None,
        }
    }
}

impl From<BudgetExceededError> for SelectWithinError {
    fn from(err: BudgetExceededError) -> Self {
        SelectWithinError::Run(RunError::Exceeded(err))
    }
}

mod sealed {
    use super::{ContextBudget, ContextItem, OverflowObserver, Policy};

    /// Only this crate's two run-budget options implement
    /// [`RunBudgetSlot`](super::RunBudgetSlot).
    pub trait Sealed {}

    /// What one run selects from: the arguments [`Pipeline::run_with`]
    /// hands to its run-budget option. Not nameable outside this crate.
    ///
    /// [`Pipeline::run_with`]: crate::Pipeline::run_with
    pub struct Selection<'r, C: ?Sized> {
        pub(crate) policy: &'r Policy,
        pub(crate) budget: &'r ContextBudget,
        pub(crate) items: &'r [ContextItem],
        pub(crate) collector: Option<&'r mut C>,
        pub(crate) report: bool,
        pub(crate) dry: bool,
        pub(crate) observer: Option<&'r OverflowObserver>,
    }
}

pub(crate) use sealed::Selection;

/// Whether a run holds tokens on a run budget: the last type parameter of
/// [`RunOptions`], which decides what [`Pipeline::run_with`] returns.
///
/// | option | set by | hold | error |
/// | --- | --- | --- | --- |
/// | [`NoRunBudget`] | [`RunOptions::new`] | none ([`RunOutput::hold`] is `None`) | [`CupelError`] |
/// | [`WithRunBudget`] | [`RunOptions::run_budget`] | the tracker's reservation | [`SelectWithinError`] |
///
/// So a run without a run budget keeps returning core's error, and only a
/// run that holds tokens can fail with the run budget's. Sealed: the two
/// implementations are this crate's.
pub trait RunBudgetSlot: sealed::Sealed {
    /// The reservation type of the tracker that holds the window's tokens.
    type Hold;
    /// The error type of a run with this option.
    type Error: From<CupelError>;

    /// Whether a run holds tokens (a tracker was given).
    fn holds(&self) -> bool;

    /// Selects, holding the window's tokens if a tracker was given.
    #[doc(hidden)]
    fn select<C: TraceCollector + ?Sized>(
        self,
        selection: Selection<'_, C>,
    ) -> Result<RunOutput<Self::Hold>, Self::Error>;
}

/// The run-budget option of a run that holds no tokens (the default of
/// [`RunOptions`]): [`Pipeline::run_with`] returns a [`CupelError`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoRunBudget;

impl sealed::Sealed for NoRunBudget {}

impl RunBudgetSlot for NoRunBudget {
    type Hold = Reservation;
    type Error = CupelError;

    fn holds(&self) -> bool {
        false
    }

    fn select<C: TraceCollector + ?Sized>(
        self,
        s: Selection<'_, C>,
    ) -> Result<RunOutput<Reservation>, CupelError> {
        let (items, report) = select(
            s.policy,
            s.budget,
            s.items,
            s.collector,
            s.report,
            s.observer,
        )?;
        Ok(RunOutput {
            items,
            report,
            hold: None,
        })
    }
}

/// The run-budget option of a run that holds its window's tokens on
/// a tracker ([`RunOptions::run_budget`]): [`Pipeline::run_with`] returns a
/// [`SelectWithinError`] and, on success, a [`RunHold`] of the tracker's
/// reservation `R`.
pub struct WithRunBudget<'a, R>(pub(crate) &'a dyn RunTracker<Reservation = R>);

impl<R> std::fmt::Debug for WithRunBudget<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithRunBudget")
            .field("depth", &self.0.depth())
            .field("label", &self.0.label())
            .finish()
    }
}

impl<R> sealed::Sealed for WithRunBudget<'_, R> {}

impl<R> RunBudgetSlot for WithRunBudget<'_, R> {
    type Hold = R;
    type Error = SelectWithinError;

    fn holds(&self) -> bool {
        true
    }

    fn select<C: TraceCollector + ?Sized>(
        self,
        s: Selection<'_, C>,
    ) -> Result<RunOutput<R>, SelectWithinError> {
        if s.dry {
            return Err(CupelError::PipelineConfig(
                "a dry run cannot hold tokens on a run budget: drop `dry` or the run budget".into(),
            )
            .into());
        }
        select_within(self.0, s)
    }
}

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
    ) -> Result<ReservedWindow, SelectWithinError> {
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
    ) -> Result<ReservedWindow, SelectWithinError> {
        let options = RunOptions::new().run_budget(tracker).collector(collector);
        ReservedWindow::from_output(self.run_with(items, options)?)
    }
}

impl ReservedWindow {
    fn from_output(out: RunOutput) -> Result<Self, SelectWithinError> {
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
fn select_within<R, C: TraceCollector + ?Sized>(
    tracker: &dyn RunTracker<Reservation = R>,
    s: Selection<'_, C>,
) -> Result<RunOutput<R>, SelectWithinError> {
    let Selection {
        policy,
        budget,
        items,
        collector,
        report,
        observer,
        ..
    } = s;
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
            // retry with fewer pins (R-19).
            let projected = RunRequest::new(
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
                }
                .into(),
            });
        }
        Err(e) => return Err(e.into()),
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
