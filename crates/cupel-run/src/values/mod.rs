//! The values of a run budget: the immutable contract ([`RunBudget`],
//! [`Deadline`], [`TokenLimit`]), usage ([`TokenUsage`], [`RemainingTokens`])
//! and seed 001's refusal, [`BudgetExceededError`], with its [`BudgetPhase`]
//! and [`BudgetDimension`]. The trackers that enforce them are in the rest of
//! this crate; `spec/15-run-budget.md` gives the rules.

mod exceeded;
mod model;

pub use exceeded::{
    Breach, BreachState, BudgetDimension, BudgetExceededError, BudgetPhase, ScopeId,
};
pub use model::{
    Deadline, RemainingTime, RemainingTokens, RunBudget, RunBudgetBuilder, TokenLimit, TokenUsage,
};
