//! Budgets across an agent run: how long a run may take and how many tokens
//! it may spend, shared by the agent and every subagent it delegates to, and
//! how large the next cycle's budget should be given what the run has used.
//!
//! * **The run budget** (`spec/15-run-budget.md`): a [`RunBudget`] (a
//!   [`Deadline`] and a [`TokenLimit`]) is the contract; a [`LocalTracker`]
//!   is the ledger every holder charges — [`check`](LocalTracker::check) or
//!   [`reserve`](LocalTracker::reserve) before a provider request or a tool
//!   call, [`settle`](Reservation::settle) with what the provider reports,
//!   [`child_named`](LocalTracker::child_named) for a subagent with its own
//!   ceilings inside the parent's. A [`UsageMeter`] turns a provider's running
//!   totals into deltas. Every fallible call returns this crate's
//!   [`RunError`]; every overage is one of its variants,
//!   [`RunError::Exceeded`], carrying seed 001's [`BudgetExceededError`]
//!   tagged with a [`BudgetPhase`] and a [`BudgetDimension`].
//! * **The adaptive budget** (`spec/16-adaptive-budget.md`): a
//!   [`UsageRecorder`] learns each cycle's usage per agent and
//!   [`suggest`s](UsageRecorder::suggest) the next cycle's budget.
//! * **Across processes** ([`store`]): a [`SharedTracker`](store::SharedTracker)
//!   charges books kept in a [`RunStore`](store::RunStore) — Redis
//!   (`RedisStore`, feature `redis`) or memory — so worker processes on
//!   several machines share one run budget (`spec/21-shared-run-budget.md`).
//!   Both trackers implement [`RunTracker`], the one tracker API: code
//!   written against it (a pipeline's window selection, a subagent loop)
//!   runs under either.
//! * **The bridge** between them: a [`CycleDemand`] records what trackers saw
//!   in a cycle into a recorder — refused requests count as demand, so a
//!   suggestion used as a hard cap does not shrink itself — and a
//!   [`AdaptiveSuggestion`] becomes a [`RunBudget`] or a
//!   [`ContextBudget`](cupel_core::ContextBudget) in one call.
//!
//! ```
//! use cupel_run::{BudgetPhase, LocalTracker, ManualTimeProvider, RunBudget, TokenLimit, TokenUsage};
//!
//! let clock = ManualTimeProvider::new("2026-03-01T09:00:00Z".parse()?);
//! let budget = RunBudget::builder()
//!     .token_limit(TokenLimit::new(Some(10_000), Some(2_000))?)
//!     .build(&clock)?;
//! let run = LocalTracker::new(budget, clock.clone())?;
//!
//! // A subagent gets its own ceiling inside the run's.
//! let child = RunBudget::builder()
//!     .token_limit(TokenLimit::new(Some(3_000), None)?)
//!     .build(&clock)?;
//! let researcher = run.child_named("researcher", child)?;
//!
//! // Hold the tokens of a request, then settle with what the provider reports.
//! let hold = researcher.reserve(BudgetPhase::ProviderRequest, TokenUsage::new(2_500, 400)?)?;
//! hold.settle(TokenUsage::new(2_412, 377)?);
//! assert_eq!(run.usage(), TokenUsage::new(2_412, 377)?);
//!
//! // 2,412 of the researcher's 3,000 input tokens are spent: 1,000 more do not fit.
//! let err = researcher
//!     .reserve(BudgetPhase::ProviderRequest, TokenUsage::new(1_000, 0)?)
//!     .unwrap_err();
//! assert!(err.to_string().contains("run budget"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//! * `tracing` (default) — a `tracing` event at every tracker checkpoint
//!   (target [`RUN_BUDGET_TRACING_TARGET`]).
//! * `redis` — `store::RedisStore` (the `redis` crate; enables `serde`).
//! * `serde` — the run-budget values in their JSON form, and
//!   `Serialize`/`Deserialize` for a [`UsageRecorder`] (checkpoint and
//!   resume an orchestrator).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod adaptive;
mod bridge;
mod error;
mod meter;
mod request;
mod rules;
mod run_tracker;
pub mod store;
mod tracker;
mod values;

#[cfg(feature = "serde")]
pub use adaptive::InvalidRecorderState;
pub use adaptive::{
    AdaptiveCandidates, AdaptiveSuggestion, SuggestionRule, USAGE_WINDOW, UsageError, UsageRecorder,
};
#[allow(deprecated)]
pub use adaptive::{BudgetCandidates, BudgetSuggestion};
pub use bridge::CycleDemand;
pub use meter::UsageMeter;
#[allow(deprecated)]
pub use request::{BudgetRequest, RunRequest};
pub use run_tracker::RunTracker;
#[allow(deprecated)]
pub use run_tracker::WindowLedger;
pub use store::Checkpoint;
#[allow(deprecated)]
pub use tracker::{BudgetSnapshot, BudgetTracker};
pub use tracker::{LocalTracker, RUN_BUDGET_TRACING_TARGET, Reservation, RunSnapshot};

/// Core's error type (the adaptive budget's context budgets and usage
/// records return it), and the clocks a tracker can run on (re-exported
/// from `cupel-core`).
pub use cupel_core::{
    CupelError, FixedTimeProvider, ManualTimeProvider, SystemTimeProvider, TimeProvider,
};
pub use error::RunError;
/// Exact decimal numbers (re-exported from `rust_decimal`): the type of the
/// adaptive-budget margin and of the candidate means.
pub use rust_decimal::Decimal;
pub use values::{
    Breach, BreachState, BudgetDimension, BudgetExceededError, BudgetPhase, Deadline,
    RemainingTime, RemainingTokens, RunBudget, RunBudgetBuilder, ScopeId, TokenLimit, TokenUsage,
};

#[cfg(test)]
mod tests;

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
