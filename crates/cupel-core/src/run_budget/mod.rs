//! The values of a run budget and the error it fails with.
//!
//! A run budget (a wall-clock deadline and input/output token ceilings shared
//! by an agent run and its subagents) is enforced by the `cupel-rs-run` crate
//! (`cupel_run::LocalTracker`). What lives here is what a
//! [`CupelError`](crate::CupelError) carries when a run runs out — the
//! immutable contract ([`RunBudget`], [`Deadline`], [`TokenLimit`]), usage
//! ([`TokenUsage`], [`RemainingTokens`]) and [`BudgetExceededError`] with its
//! [`BudgetPhase`] and [`BudgetDimension`] — so that every crate returning a
//! `CupelError` can name them without depending on the tracker.
//! `cupel_run` re-exports all of them; `spec/15-run-budget.md` gives the rules.

mod error;
mod model;

pub use error::{Breach, BreachState, BudgetDimension, BudgetExceededError, BudgetPhase, ScopeId};
pub use model::{
    Deadline, RemainingTime, RemainingTokens, RunBudget, RunBudgetBuilder, TokenLimit, TokenUsage,
};
