//! The run budget: a wall-clock deadline and input/output token ceilings
//! shared by an agent run and its subagents.
//!
//! [`RunBudget`] is the immutable contract ([`Deadline`], [`TokenLimit`]);
//! [`BudgetTracker`] is the shared ledger every holder charges
//! ([`TokenUsage`], [`BudgetRequest`], [`Reservation`], and [`UsageMeter`]
//! for providers that report running totals); [`BudgetExceededError`] is the
//! one failure, tagged with a [`BudgetPhase`] and a [`BudgetDimension`].
//! `spec/15-run-budget.md` gives the rules.

mod error;
mod meter;
mod model;
mod request;
mod tracker;

pub use error::{BudgetDimension, BudgetExceededError, BudgetPhase};
pub use meter::UsageMeter;
pub use model::{
    Deadline, RemainingTime, RemainingTokens, RunBudget, RunBudgetBuilder, TokenLimit, TokenUsage,
};
pub use request::BudgetRequest;
pub use tracker::{BudgetSnapshot, BudgetTracker, RUN_BUDGET_TRACING_TARGET, Reservation};

#[cfg(test)]
mod tests;
