//! The data model and the stage contracts of Cupel, the context-window selector.
//!
//! Cupel picks which candidate items (messages, documents, tool outputs,
//! memories, system prompts) go into a language model's context window under a
//! token budget, in what order, and — on request — why. This crate holds what
//! every other Cupel crate shares and nothing more; it does no I/O:
//!
//! * the data: [`ContextItem`] (+ [`ContextItemBuilder`]), [`ContextKind`],
//!   [`ContextSource`], [`ContextBudget`] and the effective [`SliceBudget`],
//!   [`ScoredItem`], [`OverflowStrategy`];
//! * the three narrow stage traits: [`Scorer`], [`Slicer`], [`Placer`];
//! * diagnostics: [`TraceCollector`] (with [`NullTraceCollector`],
//!   [`DiagnosticTraceCollector`], and [`FanOut`] to feed two at once),
//!   [`SelectionReport`], [`ExclusionReason`], [`InclusionReason`],
//!   [`TraceEvent`], [`OverflowEvent`];
//! * the values of a run budget and the error it fails with: [`RunBudget`]
//!   ([`Deadline`], [`TokenLimit`]), [`TokenUsage`] and
//!   [`BudgetExceededError`] — the tracker that enforces them, shared by an
//!   agent and its subagents, is in the `cupel-rs-run` crate (`cupel_run`);
//! * injected services: [`TimeProvider`] (system, fixed and manual clocks)
//!   and [`TokenCounter`];
//! * the one error type, [`CupelError`].
//!
//! Depend on `cupel-core` to implement a custom scorer, slicer, placer or
//! collector; depend on the `cupel` facade to run selections.
//!
//! ```
//! use cupel_core::{ContextBudget, ContextItem, ContextKind};
//!
//! let system = ContextItem::builder("You are a helpful assistant.", 7)
//!     .kind(ContextKind::SYSTEM_PROMPT)
//!     .pinned(true)
//!     .build()?;
//! let budget = ContextBudget::builder(4_096, 3_000).output_reserve(512).build()?;
//! // The slicer gets what is left once pinned tokens are committed.
//! let effective = budget.effective(system.tokens());
//! assert_eq!(effective.max_tokens, 4_096 - 512 - 7);
//! assert_eq!(effective.target_tokens, 3_000 - 7);
//! # Ok::<(), cupel_core::CupelError>(())
//! ```
//!
//! # Features
//! * `serde` — `Serialize`/`Deserialize` for the data: items, kinds, budgets,
//!   slicer outcomes, events, reasons and reports, run budgets and token
//!   usages, gate reports (not for the borrowed [`ScoredItem`] and collector
//!   records, nor for collectors, clocks or errors — a
//!   [`BudgetExceededError`] carries its state as JSON without it), using
//!   the specification's JSON wire format for reasons and reports.
//! * `strict` — [`strict`]: the one strict reader of
//!   configuration shared by the pipeline, the gate and the command-line
//!   tool (unknown keys as errors with one key-path spelling,
//!   `scorers[0].wieght`; accepted keys read from the types; line and
//!   column of a byte offset).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod budget;
pub mod diagnostics;
mod error;
mod generate;
mod item;
mod kind;
mod query;
mod run_budget;
mod stage;
#[cfg(feature = "strict")]
#[cfg_attr(docsrs, doc(cfg(feature = "strict")))]
pub mod strict;
mod tag;
mod time;
mod timestamp;
mod tokens;
mod variant;

pub use budget::{ContextBudget, ContextBudgetBuilder, SliceBudget};
pub use diagnostics::{
    CapExclusion, CountRequirementShortfall, DiagnosticTraceCollector, ExcludedItem,
    ExclusionReason, ExclusionRecord, FanOut, IncludedItem, InclusionReason, InclusionRecord,
    NullTraceCollector, OverflowEvent, PipelineStage, SelectionReport, StageTrace, TraceCollector,
    TraceDetailLevel, TraceEvent,
};
pub use error::{ConfigError, CupelError, DEFAULT_MAX_TABLE_BYTES, TableLimit, TokenSign};
pub use generate::{HeadTail, Placeholder, VariantGenerator, with_generated_variants};
pub use item::{ContextItem, ContextItemBuilder};
pub use kind::{ContextKind, ContextSource};
pub use query::{Query, ScoreContext};
pub use run_budget::{
    Breach, BreachState, BudgetDimension, BudgetExceededError, BudgetPhase, Deadline,
    RemainingTime, RemainingTokens, RunBudget, RunBudgetBuilder, ScopeId, TokenLimit, TokenUsage,
};
pub use stage::{
    OverflowStrategy, Placer, RADIX_SORT_FROM, ScoredItem, Scorer, SliceOutcome, SliceRoom, Slicer,
    SlicerKind, check_counted, check_finite, check_finite_scores, score_cmp_desc, score_sort_key,
    sort_by_key_stable,
};
pub use tag::Tag;
pub use time::{FixedTimeProvider, ManualTimeProvider, SystemTimeProvider, TimeProvider};
pub use timestamp::parse_timestamp;
#[cfg(feature = "serde")]
pub use timestamp::serde_timestamp;
pub use tokens::{TokenCounter, TokenTotals, check_token_totals};
pub use variant::{
    ItemVariant, VARIANT_METADATA_KEY, VariantChoice, VariantOutcome, VariantPick, VariantReason,
};

/// The `chrono` crate, whose `DateTime<Utc>` and `TimeDelta` appear in timestamps, decay and time providers.
pub use chrono;
