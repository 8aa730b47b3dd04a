//! What-if analysis for Cupel selections: report metrics, budget simulation and
//! policy sensitivity, all computed from deterministic dry runs.
//!
//! The questions people ask after a selection, and the function that answers
//! each:
//!
//! | question | function |
//! | --- | --- |
//! | How full is the window? How varied? How fresh? | [`budget_utilization`], [`kind_diversity`], [`timestamp_coverage`] |
//! | How does each kind use its percentage quota? | [`quota_utilization`] |
//! | What would I lose with `k` fewer tokens? | [`get_marginal_items`] |
//! | How much budget does this item need? | [`find_min_budget_for`] (the specification's binary search), [`find_min_budget_for_exact`] (the true minimum) |
//! | Who is in at each of these sizes? | [`budget_sweep`] → [`BudgetSweep`] |
//! | What changes under another policy? | [`policy_sensitivity`], [`policy_sensitivity_from_pipelines`] → [`PolicySensitivityReport`] |
//!
//! # Honest about monotonicity
//! The specification's simulations assume that an item selected at some
//! budget stays selected at every larger one. That is false even for greedy
//! slicing: a denser item that only fits at a larger budget can take the room
//! a smaller one was using (A: 60 tokens, denser; B: 50 tokens — B is in at
//! 50, out at 60, in again at 110). [`find_min_budget_for`] keeps the
//! specification's search, so its answers match other implementations, and
//! documents when it overshoots; [`find_min_budget_for_exact`] and
//! [`budget_sweep`] give exact answers for any slicer at a higher, documented
//! cost.
//!
//! # Identity and determinism
//! Simulations identify items by their **position** in `items` (never by
//! content), because they read the input index the pipeline reports for each
//! included item. Policy sensitivity matches items across policies by
//! **content**, as the specification requires. No output depends on hash-map
//! order, and nothing keeps global state: the same inputs give the same
//! answers. Every simulation probe is a dry run without side effects (a
//! pipeline's overflow observer is not called). Scores do not depend on the
//! budget, so each simulation call scores the items once and replays those
//! scores at every probe; a scorer that reads a clock therefore sees one
//! instant for the whole call.
//!
//! ```
//! use cupel_analytics::{budget_utilization, find_min_budget_for_exact, get_marginal_items};
//! use cupel_core::{ContextBudget, ContextItem};
//! use cupel_pipeline::Pipeline;
//! use cupel_placers::ChronologicalPlacer;
//! use cupel_scorers::ReflexiveScorer;
//! use cupel_slicers::GreedySlice;
//!
//! let items = vec![
//!     ContextItem::builder("answer", 300).future_relevance_hint(0.9).build()?,
//!     ContextItem::builder("background", 500).future_relevance_hint(0.4).build()?,
//!     ContextItem::builder("trivia", 200).future_relevance_hint(0.1).build()?,
//! ];
//! let budget = ContextBudget::new(1_000, 800)?;
//! let pipeline = Pipeline::builder()
//!     .scorer(ReflexiveScorer)
//!     .slicer(GreedySlice)
//!     .placer(ChronologicalPlacer)
//!     .budget(budget.clone())
//!     .build()?;
//!
//! // answer (300) + background (500) fill the 800-token target: 800 / 1000.
//! let report = pipeline.dry_run(&items)?;
//! assert_eq!(budget_utilization(&report, &budget), 0.8);
//! // With 100 tokens less only answer + trivia fit: background is marginal.
//! assert_eq!(get_marginal_items(&pipeline, &items, &budget, 100)?, vec![1]);
//! // background gets in only next to the denser answer: 300 + 500 = 800 tokens.
//! assert_eq!(find_min_budget_for_exact(&pipeline, &items, 1, 1_000)?, Some(800));
//! # Ok::<(), cupel_core::CupelError>(())
//! ```
//!
//! # Adaptive token budgets moved
//! The adaptive budget ([`UsageRecorder`] and its types) moved to
//! `cupel-rs-run` (`cupel_run`) in 0.2, next to the run budget whose trackers
//! now feed it (`cupel_run::CycleDemand`). The names are re-exported here
//! until 0.3.
//!
//! Depends on `cupel-core`, `cupel-pipeline`, (for [`QuotaSet`](cupel_slicers::QuotaSet))
//! `cupel-slicers` and, for the re-exports, `cupel-run`.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod metrics;
mod probe;
mod sensitivity;
mod simulation;
mod sweep;

// The adaptive budget moved to `cupel-rs-run` (`cupel_run`) in 0.2, next to
// the run budget it now feeds from; these re-exports stay until 0.3 (a `use`
// cannot carry `#[deprecated]`).
#[cfg(feature = "serde")]
#[doc(no_inline)]
pub use cupel_run::InvalidRecorderState;
#[doc(no_inline)]
pub use cupel_run::{
    AdaptiveCandidates, AdaptiveSuggestion, SuggestionRule, USAGE_WINDOW, UsageError, UsageRecorder,
};
#[doc(no_inline)]
#[allow(deprecated)]
pub use cupel_run::{BudgetCandidates, BudgetSuggestion};
pub use metrics::{
    KindQuotaUtilization, VariantSavings, budget_utilization, kind_diversity, quota_utilization,
    timestamp_coverage, variant_savings,
};
pub use sensitivity::{
    ItemStatus, PolicySensitivityDiffEntry, PolicySensitivityReport, policy_sensitivity,
    policy_sensitivity_from_pipelines,
};
pub use simulation::{
    MARGINAL_ITEMS_QUOTA_MESSAGE, MIN_BUDGET_MONOTONIC_MESSAGE, find_min_budget_for,
    find_min_budget_for_exact, get_marginal_items,
};
pub use sweep::{BudgetSweep, SweepRow, budget_sweep, budget_sweep_rows};

/// Exact decimal numbers (re-exported from `rust_decimal`): the type of the
/// adaptive-budget margin and of the candidate means.
#[doc(no_inline)]
pub use cupel_run::Decimal;
