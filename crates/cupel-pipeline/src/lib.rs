//! The Cupel pipeline: turns candidate items and a budget into an ordered
//! context window, and explains every decision on request.
//!
//! A run always walks the same six stages:
//!
//! 1. **Classify** — negative-token items are excluded, pinned items set aside
//!    (they must fit `max_tokens - output_reserve`), the rest scored;
//! 2. **Score** — the policy's scorer scores the scoreable items in one pass;
//! 3. **Deduplicate** — byte-identical contents keep their best-scored copy;
//! 4. **Sort** — by score, descending, ties in input order;
//! 5. **Slice** — the slicer picks what fits the *effective* budget (output
//!    reserve, pinned tokens, reserved slots and safety margin subtracted);
//! 6. **Place** — pinned items (score 1.0) and sliced items are merged, an
//!    overflow of the target is handled (`Throw`, `Truncate`, `Proceed`), and
//!    the placer orders the window.
//!
//! The main types: [`Policy`] (how to select), [`Pipeline`] (a policy plus a
//! budget; [`run`](Pipeline::run) for the window, [`dry_run`](Pipeline::dry_run)
//! for a report, and [`run_with`](Pipeline::run_with) with [`RunOptions`] for
//! any combination of a per-request budget or policy, a collector, a report
//! and a shared run budget, returning a [`RunOutput`]).
//!
//! ```
//! use cupel_core::{ContextBudget, ContextItem, ContextKind, ExclusionReason};
//! use cupel_pipeline::Pipeline;
//! use cupel_placers::ChronologicalPlacer;
//! use cupel_scorers::ReflexiveScorer;
//! use cupel_slicers::GreedySlice;
//!
//! let items = vec![
//!     ContextItem::builder("You are terse.", 5).kind(ContextKind::SYSTEM_PROMPT).pinned(true).build()?,
//!     ContextItem::builder("relevant doc", 40).future_relevance_hint(0.9).build()?,
//!     ContextItem::builder("stale doc", 40).future_relevance_hint(0.1).build()?,
//! ];
//! let pipeline = Pipeline::builder()
//!     .scorer(ReflexiveScorer::new())      // score = the item's relevance hint
//!     .slicer(GreedySlice::new())
//!     .placer(ChronologicalPlacer)
//!     .budget(ContextBudget::new(100, 50)?)
//!     .build()?;
//! // The slicer gets 50 - 5 pinned = 45 tokens: "relevant doc" (40) fits, "stale doc" does not.
//! let window = pipeline.run(&items)?;
//! let contents: Vec<&str> = window.iter().map(|i| i.content()).collect();
//! // No timestamps: chronological placement keeps the merged order, pinned first.
//! assert_eq!(contents, ["You are terse.", "relevant doc"]);
//!
//! let report = pipeline.dry_run(&items)?;
//! assert_eq!(report.excluded[0].item.content(), "stale doc");
//! // Room left after slicing: 45 - 40 = 5. The stale doc (40 tokens) fits the
//! // effective target 45 on its own, so it lost to the relevant doc, not to
//! // the pinned item: a budget exclusion.
//! assert_eq!(
//!     report.excluded[0].reason,
//!     ExclusionReason::BudgetExceeded { item_tokens: 40, available_tokens: 5 }
//! );
//! # Ok::<(), cupel_core::CupelError>(())
//! ```
//!
//! # How a report explains exclusions
//!
//! * `NegativeTokens` (Classify, score 0.0) and `Deduplicated` (the survivor
//!   has the same content) are decided by their stage.
//! * An item the slicer did not select is `BudgetExceeded` with
//!   `available_tokens` = the room it actually had, at least 0: by default
//!   `effective target - tokens selected`; for a slicer that splits the budget,
//!   the room it reports (`SliceOutcome::rooms`: a `QuotaSlice` kind's share
//!   minus what was taken of it, the count-quota phase-2 room).
//! * It is `PinnedOverride` instead only when it alone is larger than the
//!   effective target with the pinned tokens yet fits the one without them;
//!   `displaced_by` names the first pinned item (input order) whose tokens,
//!   added to those before it, make it too large, and no pinned item is
//!   blamed for more tokens than it holds over the run.
//! * A count-quota cap removal is `CountCapExceeded { kind, cap, count }`.
//! * Under `Truncate`, a dropped item is `PinnedOverride` when it would have
//!   been kept without the pinned tokens (same naming and allowance), else
//!   `BudgetExceeded` with the target minus the tokens kept when the pass
//!   reached it.
//!
//! The placer sees pinned items first (score 1.0, input order), then the
//! sliced items by score — not in the slicer's output order — so ties resolve
//! the same way whatever the slicer. Scores are compared with
//! [`score_cmp_desc`](cupel_core::score_cmp_desc): NaN scores from a custom
//! scorer sort after every number (and never win a deduplication tie), they
//! never cause a panic. `spec/07-diagnostics.md` and
//! `spec/13-clarifications.md` give the full rules with worked examples.
//!
//! # Atomic groups
//!
//! Items that share a [`ContextItem::group`](cupel_core::ContextItem::group)
//! id (an extension, `spec/18-atomic-groups.md`) are kept, dropped and placed
//! together. When any input item has a group, the run collapses each group
//! into one unit after Deduplicate (total tokens, the maximum of its members'
//! scores, its first member's kind, its earliest timestamp), hands the units
//! to the unchanged slicer and placer, and expands each placed unit into its
//! members, adjacent and in input order. A pinned member pins its group, a
//! negative-token member excludes it, grouped items are exempt from
//! deduplication, and Truncate drops whole groups; members of a group left
//! out are `GroupExcluded { group, group_tokens, available_tokens }` (a count
//! cap's removal stays `CountCapExceeded`). A run without groups takes the
//! specification's path unchanged.
//!
//! # The context gate moved
//!
//! The context gate is the `cupel-rs-gate` crate (`cupel_gate`) since 0.2.
//! Its names stay re-exported here (feature `gate`, on by default) for one
//! minor version.
//!
//! # Features
//! * `config` (default) — declarative configuration: [`PolicyConfig`] read
//!   from TOML or JSON, named presets, the [`ComponentRegistry`] for custom
//!   components and the bundled samples. It pulls toml and serde_json and
//!   enables `cupel-core/strict` (the strict reader shared with the gate and
//!   the command-line tool); build with
//!   `default-features = false` for a pipeline assembled in code only.
//! * `tiktoken` — deprecated re-exports of `TiktokenCounter`,
//!   `TokenizerError` and `TIKTOKEN_ENCODINGS`, which moved to the
//!   `cupel-rs-tokens` crate (`cupel_tokens`) in 0.2.
//!
//! Depends on `cupel-core`, `cupel-scorers`, `cupel-slicers`, `cupel-placers`
//! and `cupel-run` (selection under a run budget); on `cupel-gate` and
//! `cupel-tokens` only for the re-exports behind the `gate` and `tiktoken`
//! features.

#![cfg_attr(docsrs, feature(doc_cfg))]
mod blame;
#[cfg(feature = "config")]
mod config;
#[cfg(feature = "config")]
mod construct;
mod contract;
mod dedup;
mod grouped;
#[cfg(feature = "config")]
mod names;
mod pipeline;
mod policy;
#[cfg(feature = "config")]
mod presets;
#[cfg(feature = "config")]
mod registry;
mod run;
mod run_budget;
#[cfg(feature = "config")]
pub mod samples;
#[cfg(feature = "config")]
mod scorer_config;
#[cfg(feature = "config")]
mod slicer_config;
mod summary;

#[cfg(feature = "config")]
pub use config::{
    Bm25ScorerConfig, CompositeScorerConfig, CountConstrainedKnapsackSlicerConfig,
    CountQuotaConfig, CountQuotaSlicerConfig, CurveConfig, CustomScorerConfig, CustomSlicerConfig,
    DecayScorerConfig, FusionConfig, HybridScorerConfig, InnerScorer, KindScorerConfig,
    KindWeightConfig, KnapsackSlicerConfig, MAX_SCORER_DEPTH, MetadataKeyScorerConfig,
    MetadataTrustScorerConfig, PlainScorerConfig, PolicyConfig, PolicyTable, QuotaConfig,
    QuotaSlicerConfig, ScaledScorerConfig, ScorerConfig, SlicerConfig, StepWindowConfig,
    TagScorerConfig, TagWeightConfig, VariantsConfig, overflow_strategy_name,
    scarcity_behavior_name,
};
#[cfg(feature = "config")]
#[allow(deprecated)]
pub use config::{OverflowName, ScarcityName};
/// The context gate, moved to `cupel-rs-gate` (`cupel_gate`) in 0.2; this
/// module and the re-exports below stay for one minor version.
#[cfg(feature = "gate")]
#[deprecated(
    since = "0.2.0",
    note = "the context gate moved to the cupel-rs-gate crate: use cupel_gate"
)]
pub mod gate {
    pub use cupel_gate::*;
}
// Moved to `cupel_gate` in 0.2 (a `use` cannot carry `#[deprecated]`; the
// CHANGELOG lists them). Removed in 0.3.
#[cfg(feature = "gate")]
#[doc(hidden)]
pub use cupel_gate::{
    Admitted, BuiltinClassifier, BuiltinCompactor, ClassifierScores, CodeKind, CompactCodeSpec,
    CompactionPolicy, CompactionPolicyKind, CompactionRule, ContextCompactor, ContextGate,
    ContextGateBuilder, GATE_EVENT, GateConfig, GateConfigBuilder, GateConfigError, GateDecision,
    GateError, GateOutcome, GateReport, GateSpec, GateState, GaveUp, InboxMessage, LoopGuard,
    LoopOutcome, NODE_HEADER, NodeReport, Over, RetrievalNode, RuleSpec, SummarizeWith, Unmatched,
    compact_csharp, compact_sql, format_node, header_value,
};
#[cfg(feature = "config")]
pub use names::{ComponentType, PlacerType, ScorerType, SlicerType};
#[allow(deprecated)]
pub use pipeline::SharedRunHold;
pub use pipeline::{
    OverflowObserver, Pipeline, PipelineBuilder, PipelineParts, RunHold, RunOptions, RunOutput,
};
pub use policy::{Policy, PolicyBuilder};
#[cfg(feature = "config")]
pub use presets::{Preset, preset, presets};
#[cfg(feature = "config")]
pub use registry::{ComponentRegistry, PlacerConstructor, ScorerConstructor, SlicerConstructor};
#[allow(deprecated)]
pub use run_budget::{
    BudgetedWindow, NoRunBudget, ReservedWindow, RunBudgetSlot, SelectWithinError, WithRunBudget,
};
/// The `serde_json` crate, whose `Value` is the parameter table passed to registry constructors.
#[cfg(feature = "config")]
pub use serde_json;
pub use summary::{EvictedUnit, SUMMARY_METADATA_KEY, SummarizedWindow, Summary, SummaryPlan};

/// Moved to `cupel-rs-tokens` (`cupel_tokens::TiktokenCounter`).
#[cfg(feature = "tiktoken")]
#[deprecated(
    since = "0.2.0",
    note = "moved to the cupel-rs-tokens crate: use cupel_tokens::TiktokenCounter"
)]
pub type TiktokenCounter = cupel_tokens::TiktokenCounter;
/// Moved to `cupel-rs-tokens` (`cupel_tokens::TokenizerError`).
#[cfg(feature = "tiktoken")]
#[deprecated(
    since = "0.2.0",
    note = "moved to the cupel-rs-tokens crate: use cupel_tokens::TokenizerError"
)]
pub type TokenizerError = cupel_tokens::TokenizerError;
/// Moved to `cupel-rs-tokens` (`cupel_tokens::TIKTOKEN_ENCODINGS`).
#[cfg(feature = "tiktoken")]
#[deprecated(
    since = "0.2.0",
    note = "moved to the cupel-rs-tokens crate: use cupel_tokens::TIKTOKEN_ENCODINGS"
)]
pub const TIKTOKEN_ENCODINGS: &[&str] = cupel_tokens::TIKTOKEN_ENCODINGS;
