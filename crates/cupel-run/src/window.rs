//! [`WindowLedger`]: what selecting a context window under a run budget
//! needs from the ledger that tracks it.

use std::fmt;

use cupel_core::{BudgetPhase, CupelError, RemainingTokens, TokenUsage};

use crate::request::BudgetRequest;
use crate::store::{Checkpoint, SharedReservation, SharedTracker};
use crate::tracker::{BudgetTracker, Reservation};

/// What a selection under a run budget needs from its ledger: the allowance
/// left after a pre-flight check, a question that halts nothing, and a hold
/// on the selected window's tokens. The in-process [`BudgetTracker`] and the
/// cross-process [`SharedTracker`] implement it, so a pipeline selects under
/// either (`cupel_pipeline::RunOptions::run_budget` / `shared_run_budget`).
pub trait WindowLedger {
    /// What the selection holds: settle it with the provider's usage.
    type Hold: fmt::Debug;

    /// The pre-flight checkpoint, then what a new request could take per
    /// dimension (`None`: no token ceiling on the path, or — for a shared
    /// tracker failing open — nothing could be checked).
    ///
    /// # Errors
    /// The checkpoint's error.
    fn preflight_allowance(&self) -> Result<Option<RemainingTokens>, CupelError>;

    /// Whether `request` would pass its checkpoint, without halting,
    /// counting or reserving anything.
    ///
    /// # Errors
    /// The error the checkpoint would return.
    fn ask_fit(&self, request: &BudgetRequest) -> Result<(), CupelError>;

    /// Reserves `tokens` for the provider request the window is sent in.
    ///
    /// # Errors
    /// The checkpoint's error; nothing is reserved.
    fn hold_window(&self, tokens: TokenUsage) -> Result<Self::Hold, CupelError>;
}

impl WindowLedger for BudgetTracker {
    type Hold = Reservation;

    fn preflight_allowance(&self) -> Result<Option<RemainingTokens>, CupelError> {
        Ok(self.preflight()?.remaining_tokens)
    }

    fn ask_fit(&self, request: &BudgetRequest) -> Result<(), CupelError> {
        self.would_fit(request).map(|_| ()).map_err(Into::into)
    }

    fn hold_window(&self, tokens: TokenUsage) -> Result<Reservation, CupelError> {
        Ok(self.reserve(BudgetPhase::ProviderRequest, tokens)?)
    }
}

impl WindowLedger for SharedTracker {
    type Hold = SharedReservation;

    fn preflight_allowance(&self) -> Result<Option<RemainingTokens>, CupelError> {
        Ok(match self.preflight()? {
            Checkpoint::Passed(s) => s.remaining_tokens,
            Checkpoint::Unverified(_) => None,
        })
    }

    fn ask_fit(&self, request: &BudgetRequest) -> Result<(), CupelError> {
        self.would_fit(request).map(|_| ())
    }

    fn hold_window(&self, tokens: TokenUsage) -> Result<SharedReservation, CupelError> {
        self.reserve(BudgetPhase::ProviderRequest, tokens)
    }
}
