//! [`RunTracker`]: the one run-budget API, implemented by the in-process
//! [`LocalTracker`] and by the cross-process [`SharedTracker`].

use std::fmt;

use crate::{BudgetPhase, RemainingTokens, RunBudget, RunError, TokenUsage};

use crate::request::RunRequest;
use crate::store::Checkpoint;
#[cfg(doc)]
use crate::store::SharedTracker;
use crate::tracker::{LocalTracker, Reservation, RunSnapshot};

/// A run-budget tracker: the checkpoints of `spec/15-run-budget.md` and the
/// books they keep, whatever holds the books.
///
/// Two implementations: [`LocalTracker`] (books behind a lock in this
/// process) and [`SharedTracker`] (books in a
/// [`RunStore`](crate::store::RunStore), shared by every process of a
/// run). Code written against `RunTracker` — a generic `T: RunTracker` or a
/// `&dyn RunTracker<Reservation = R>` — runs under either; a pipeline
/// selects under either with `cupel_pipeline::RunOptions::run_budget`.
///
/// Every call answers in the shared form: a checkpoint that passes returns a
/// [`Checkpoint`] (always [`Checkpoint::Passed`] in process; `Unverified`
/// only for a shared tracker that fails open), and every error is a
/// [`RunError`] (a refusal is [`RunError::Exceeded`], a store
/// failure [`RunError::StoreFailed`]). [`LocalTracker`] also has
/// inherent methods of the same names with the in-process types (an
/// infallible [`usage`](LocalTracker::usage), a
/// [`BudgetExceededError`](crate::BudgetExceededError)); method-call
/// syntax picks those, and `RunTracker::usage(&tracker)` the trait's.
///
/// Required: the checkpoints ([`preflight`](Self::preflight),
/// [`check_request`](Self::check_request), [`would_fit`](Self::would_fit),
/// [`reserve_request`](Self::reserve_request), [`finalize`](Self::finalize)),
/// the books ([`record`](Self::record), [`snapshot`](Self::snapshot),
/// [`usage`](Self::usage), [`refused`](Self::refused),
/// [`demand`](Self::demand)), the scope ([`depth`](Self::depth),
/// [`label`](Self::label), [`child`](Self::child),
/// [`child_named`](Self::child_named)). Provided: [`check`](Self::check)
/// and [`reserve`](Self::reserve) (a [`RunRequest`] without a duration)
/// and [`preflight_allowance`](Self::preflight_allowance).
///
/// ```
/// use cupel_run::{BudgetPhase, LocalTracker, FixedTimeProvider, RunBudget, RunTracker, TokenLimit, TokenUsage};
///
/// /// Holds `tokens` on any run budget, in process or shared.
/// fn hold<T: RunTracker>(run: &T, tokens: TokenUsage) -> Result<T::Reservation, cupel_run::RunError> {
///     RunTracker::reserve(run, BudgetPhase::ProviderRequest, tokens)
/// }
///
/// let clock = FixedTimeProvider::new("2026-01-01T00:00:00Z".parse().unwrap());
/// let run = LocalTracker::new(RunBudget::new(None, Some(TokenLimit::new(Some(100), None)?), &clock)?, clock)?;
/// let held = hold(&run, TokenUsage::new(60, 0)?)?;
/// assert!(hold(&run, TokenUsage::new(60, 0)?).is_err());
/// held.settle(TokenUsage::new(55, 10)?);
/// assert_eq!(RunTracker::usage(&run)?, TokenUsage::new(55, 10)?);
/// # Ok::<(), cupel_run::RunError>(())
/// ```
pub trait RunTracker {
    /// The tokens a [`reserve`](Self::reserve) holds: settle it with the
    /// provider's usage; dropping it releases them.
    type Reservation;

    /// `0` for the root scope, `n` for a child `n` levels down.
    fn depth(&self) -> usize;

    /// The label given by [`child_named`](Self::child_named).
    fn label(&self) -> Option<&str>;

    /// A child scope with its own budget inside this one: it charges this
    /// scope and every ancestor, and its own ceilings and deadline apply to
    /// it alone.
    ///
    /// # Errors
    /// [`RunError::Exceeded`] (phase `preflight`) for a deadline
    /// already passed; [`RunError::StoreFailed`] when a store fails.
    fn child(&self, budget: RunBudget) -> Result<Self, RunError>
    where
        Self: Sized;

    /// [`child`](Self::child) labelled `label` (errors name it).
    ///
    /// # Errors
    /// As [`child`](Self::child).
    fn child_named(&self, label: &str, budget: RunBudget) -> Result<Self, RunError>
    where
        Self: Sized;

    /// The pre-flight checkpoint: fails once the deadline passed or a
    /// bounded dimension is depleted (usage plus reservations meet its
    /// ceiling).
    ///
    /// # Errors
    /// [`RunError::Exceeded`] (the breached scope is halted), or
    /// [`RunError::StoreFailed`] when a store fails and the tracker
    /// fails closed.
    fn preflight(&self) -> Result<Checkpoint, RunError>;

    /// Checks whether `request` may start, without reserving: the deadline,
    /// the request's duration, and `usage + reserved + projected <= limit`
    /// on every scope of the path. A checkpoint: a failure halts the
    /// breached scope.
    ///
    /// # Errors
    /// As [`preflight`](Self::preflight).
    fn check_request(&self, request: &RunRequest) -> Result<Checkpoint, RunError>;

    /// Asks whether `request` would pass its checkpoint now, without
    /// halting, counting or reserving anything (R-19).
    ///
    /// # Errors
    /// The error the checkpoint would return.
    fn would_fit(&self, request: &RunRequest) -> Result<Checkpoint, RunError>;

    /// The atomic form of [`check_request`](Self::check_request): if the
    /// request fits, its tokens are reserved on this scope and every
    /// ancestor in one step.
    ///
    /// # Errors
    /// As [`preflight`](Self::preflight); nothing is reserved.
    fn reserve_request(&self, request: &RunRequest) -> Result<Self::Reservation, RunError>;

    /// The finalization checkpoint: fails if the scope was halted or its
    /// final tally is over a ceiling (a tally at the ceiling fits; the
    /// deadline is not checked).
    ///
    /// # Errors
    /// As [`preflight`](Self::preflight).
    fn finalize(&self) -> Result<Checkpoint, RunError>;

    /// Records usage on this scope and its ancestors without a checkpoint
    /// (tokens already spent).
    ///
    /// # Errors
    /// [`RunError::StoreFailed`] when a store fails, whatever the
    /// policy: the usage was not recorded.
    fn record(&self, usage: TokenUsage) -> Result<(), RunError>;

    /// The scope's state now.
    ///
    /// # Errors
    /// [`RunError::StoreFailed`] when a store fails.
    fn snapshot(&self) -> Result<RunSnapshot, RunError>;

    /// Settled usage of this scope (and its children).
    ///
    /// # Errors
    /// As [`snapshot`](Self::snapshot).
    fn usage(&self) -> Result<TokenUsage, RunError>;

    /// Tokens of requests refused at a checkpoint of this scope (and its
    /// children).
    ///
    /// # Errors
    /// As [`snapshot`](Self::snapshot).
    fn refused(&self) -> Result<TokenUsage, RunError>;

    /// [`usage`](Self::usage) plus [`refused`](Self::refused): what the
    /// scope asked for (the adaptive budget's input, spec A-17).
    ///
    /// # Errors
    /// As [`snapshot`](Self::snapshot).
    fn demand(&self) -> Result<TokenUsage, RunError>;

    /// [`check_request`](Self::check_request) for `projected` tokens
    /// without a duration.
    ///
    /// # Errors
    /// As [`check_request`](Self::check_request).
    fn check(&self, phase: BudgetPhase, projected: TokenUsage) -> Result<Checkpoint, RunError> {
        self.check_request(&RunRequest::new(phase, projected))
    }

    /// [`reserve_request`](Self::reserve_request) for `projected` tokens
    /// without a duration.
    ///
    /// # Errors
    /// As [`reserve_request`](Self::reserve_request).
    fn reserve(
        &self,
        phase: BudgetPhase,
        projected: TokenUsage,
    ) -> Result<Self::Reservation, RunError> {
        self.reserve_request(&RunRequest::new(phase, projected))
    }

    /// The [`preflight`](Self::preflight) checkpoint, then what a new
    /// request could take per dimension (`None`: no token ceiling on the
    /// path, or — for a shared tracker failing open — nothing could be
    /// checked).
    ///
    /// # Errors
    /// As [`preflight`](Self::preflight).
    fn preflight_allowance(&self) -> Result<Option<RemainingTokens>, RunError> {
        Ok(self
            .preflight()?
            .snapshot()
            .and_then(|s| s.remaining_tokens))
    }
}

impl RunTracker for LocalTracker {
    type Reservation = Reservation;

    fn depth(&self) -> usize {
        LocalTracker::depth(self)
    }
    fn label(&self) -> Option<&str> {
        LocalTracker::label(self)
    }
    fn child(&self, budget: RunBudget) -> Result<Self, RunError> {
        LocalTracker::child(self, budget)
    }
    fn child_named(&self, label: &str, budget: RunBudget) -> Result<Self, RunError> {
        LocalTracker::child_named(self, label, budget)
    }
    fn preflight(&self) -> Result<Checkpoint, RunError> {
        Ok(Checkpoint::Passed(LocalTracker::preflight(self)?))
    }
    fn check_request(&self, request: &RunRequest) -> Result<Checkpoint, RunError> {
        Ok(Checkpoint::Passed(LocalTracker::check_request(
            self, request,
        )?))
    }
    fn would_fit(&self, request: &RunRequest) -> Result<Checkpoint, RunError> {
        Ok(Checkpoint::Passed(LocalTracker::would_fit(self, request)?))
    }
    fn reserve_request(&self, request: &RunRequest) -> Result<Reservation, RunError> {
        Ok(LocalTracker::reserve_request(self, request)?)
    }
    fn finalize(&self) -> Result<Checkpoint, RunError> {
        Ok(Checkpoint::Passed(LocalTracker::finalize(self)?))
    }
    fn record(&self, usage: TokenUsage) -> Result<(), RunError> {
        LocalTracker::record(self, usage);
        Ok(())
    }
    fn snapshot(&self) -> Result<RunSnapshot, RunError> {
        Ok(LocalTracker::snapshot(self))
    }
    fn usage(&self) -> Result<TokenUsage, RunError> {
        Ok(LocalTracker::usage(self))
    }
    fn refused(&self) -> Result<TokenUsage, RunError> {
        Ok(LocalTracker::refused(self))
    }
    fn demand(&self) -> Result<TokenUsage, RunError> {
        Ok(LocalTracker::demand(self))
    }
}

/// What a selection under a run budget needs from its ledger.
#[deprecated(
    since = "0.2.0",
    note = "use `RunTracker` (`preflight_allowance`, `would_fit`, `reserve`), which both trackers implement"
)]
pub trait WindowLedger {
    /// What the selection holds: settle it with the provider's usage.
    type Hold: fmt::Debug;

    /// [`RunTracker::preflight_allowance`].
    ///
    /// # Errors
    /// The checkpoint's error.
    fn preflight_allowance(&self) -> Result<Option<RemainingTokens>, RunError>;

    /// [`RunTracker::would_fit`], without its answer.
    ///
    /// # Errors
    /// The error the checkpoint would return.
    fn ask_fit(&self, request: &RunRequest) -> Result<(), RunError>;

    /// [`RunTracker::reserve`] for a provider request.
    ///
    /// # Errors
    /// The checkpoint's error; nothing is reserved.
    fn hold_window(&self, tokens: TokenUsage) -> Result<Self::Hold, RunError>;
}

#[allow(deprecated)]
impl<T: RunTracker + ?Sized> WindowLedger for T
where
    T::Reservation: fmt::Debug,
{
    type Hold = T::Reservation;

    fn preflight_allowance(&self) -> Result<Option<RemainingTokens>, RunError> {
        RunTracker::preflight_allowance(self)
    }
    fn ask_fit(&self, request: &RunRequest) -> Result<(), RunError> {
        RunTracker::would_fit(self, request).map(|_| ())
    }
    fn hold_window(&self, tokens: TokenUsage) -> Result<T::Reservation, RunError> {
        RunTracker::reserve(self, BudgetPhase::ProviderRequest, tokens)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::RunTracker;
    use crate::store::{MemoryStore, SharedTracker};
    use crate::{
        BudgetPhase, LocalTracker, ManualTimeProvider, RunBudget, RunError, RunRequest, TokenLimit,
        TokenUsage,
    };

    fn usage(input: i64, output: i64) -> TokenUsage {
        TokenUsage::new(input, output).unwrap()
    }

    /// What one generic run observes, step by step.
    #[derive(Debug, PartialEq, Eq)]
    struct Seen {
        child: (usize, Option<String>),
        fits_while_held: bool,
        fits_after_drop: bool,
        usage: TokenUsage,
        refused_check: bool,
        refused: TokenUsage,
        demand: TokenUsage,
        finalized: bool,
    }

    /// A subagent's turn written once against `RunTracker`.
    fn run<T: RunTracker>(root: &T) -> Result<Seen, RunError> {
        let child = root.child_named("worker", RunBudget::unlimited())?;
        let sixty = RunRequest::provider_request(usage(60, 0));
        let held = child.reserve(BudgetPhase::ProviderRequest, usage(60, 0))?;
        let fits_while_held = child.would_fit(&sixty).is_ok();
        drop(held);
        let fits_after_drop = child.would_fit(&sixty).is_ok();
        child.record(usage(55, 10))?;
        let refused_check = matches!(
            child.check(BudgetPhase::ToolExecution, usage(50, 0)),
            Err(RunError::Exceeded(_))
        );
        Ok(Seen {
            child: (child.depth(), child.label().map(str::to_string)),
            fits_while_held,
            fits_after_drop,
            usage: root.usage()?,
            refused_check,
            refused: root.refused()?,
            demand: root.demand()?,
            finalized: root.finalize().is_ok(),
        })
    }

    #[test]
    fn both_trackers_answer_the_same_through_the_trait() {
        let clock = ManualTimeProvider::new("2026-01-01T00:00:00Z".parse().unwrap());
        let budget = RunBudget::new(
            None,
            Some(TokenLimit::new(Some(100), None).unwrap()),
            &clock,
        )
        .unwrap();
        let local = LocalTracker::new(budget, clock.clone()).unwrap();
        let store = Arc::new(MemoryStore::new(clock));
        let shared = SharedTracker::create(store, "run", budget).unwrap();

        let expected = Seen {
            child: (1, Some("worker".into())),
            fits_while_held: false,
            fits_after_drop: true,
            usage: usage(55, 10),
            refused_check: true,
            refused: usage(50, 0),
            demand: usage(105, 10),
            // The refused check halted the root (its ceiling ran out).
            finalized: false,
        };
        assert_eq!(run(&local).unwrap(), expected);
        assert_eq!(run(&shared).unwrap(), expected);
    }
}
