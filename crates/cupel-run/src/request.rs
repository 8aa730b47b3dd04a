//! [`RunRequest`]: what a checkpoint is asked to admit.

use chrono::TimeDelta;

use crate::{BudgetPhase, RunError, TokenUsage};

/// One request to a run-budget checkpoint: the phase, the projected token
/// cost and, optionally, how long the request is expected to take.
///
/// [`LocalTracker::check`](crate::LocalTracker::check) and
/// [`reserve`](crate::LocalTracker::reserve) take the phase and the tokens
/// directly; build a `RunRequest` to add a projected duration and pass it
/// to [`check_request`](crate::LocalTracker::check_request),
/// [`reserve_request`](crate::LocalTracker::reserve_request) or the
/// non-latching probe [`would_fit`](crate::LocalTracker::would_fit).
///
/// With a duration, a request that would still be running when a deadline
/// on the tracker's path passes is refused before it is issued, on the
/// deadline dimension (R-17): the seed checks the time left against the
/// projected cost, not only against zero.
///
/// ```
/// use chrono::TimeDelta;
/// use cupel_run::{BudgetPhase, RunRequest, TokenUsage};
/// let call = RunRequest::new(BudgetPhase::ProviderRequest, TokenUsage::new(800, 200)?)
///     .with_duration(TimeDelta::seconds(20))?;
/// assert_eq!(call.duration(), Some(TimeDelta::seconds(20)));
/// assert!(RunRequest::tool_execution(TokenUsage::ZERO)
///     .with_duration(TimeDelta::seconds(-1))
///     .is_err());
/// # Ok::<(), cupel_run::RunError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunRequest {
    phase: BudgetPhase,
    tokens: TokenUsage,
    duration: Option<TimeDelta>,
}

impl RunRequest {
    /// A request at `phase` projected to cost `tokens`, with no duration.
    pub fn new(phase: BudgetPhase, tokens: TokenUsage) -> Self {
        Self {
            phase,
            tokens,
            duration: None,
        }
    }

    /// A [`BudgetPhase::ProviderRequest`] projected to cost `tokens`.
    pub fn provider_request(tokens: TokenUsage) -> Self {
        Self::new(BudgetPhase::ProviderRequest, tokens)
    }

    /// A [`BudgetPhase::ToolExecution`] projected to cost `tokens`.
    pub fn tool_execution(tokens: TokenUsage) -> Self {
        Self::new(BudgetPhase::ToolExecution, tokens)
    }

    /// Sets the projected duration: the request is refused unless it ends
    /// no later than every deadline on the tracker's path
    /// (`duration <= deadline - now`).
    ///
    /// # Errors
    /// [`RunError::NegativeProjectedDuration`] when `duration` is negative.
    pub fn with_duration(mut self, duration: TimeDelta) -> Result<Self, RunError> {
        if duration < TimeDelta::zero() {
            return Err(RunError::NegativeProjectedDuration { duration });
        }
        self.duration = Some(duration);
        Ok(self)
    }

    /// The checkpoint the request is checked at.
    pub fn phase(&self) -> BudgetPhase {
        self.phase
    }

    /// The projected token cost.
    pub fn tokens(&self) -> TokenUsage {
        self.tokens
    }

    /// The projected duration, if one was set.
    pub fn duration(&self) -> Option<TimeDelta> {
        self.duration
    }
}

/// The old name of [`RunRequest`] (renamed so that a name holding "Budget"
/// alone means the context budget; ARCHITECTURE.md, Glossary).
#[deprecated(since = "0.2.0", note = "renamed `RunRequest`")]
pub type BudgetRequest = RunRequest;
