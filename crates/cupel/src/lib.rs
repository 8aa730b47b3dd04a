//! Cupel decides what goes into a language model's context window.
//!
//! Hand it candidate items — messages, documents, tool outputs, memories,
//! system prompts — with token counts you computed, and a budget. It scores,
//! deduplicates, slices and orders them and returns the window; a dry run also
//! explains every inclusion and exclusion. This facade re-exports the layers
//! most applications need, so one dependency is enough:
//!
//! * the data model and contracts of [`cupel_core`]: [`ContextItem`],
//!   [`ContextBudget`], [`ContextKind`], the [`Scorer`] / [`Slicer`] /
//!   [`Placer`] traits, [`SelectionReport`], [`CupelError`], ...;
//! * every scorer ([`RecencyScorer`], [`CompositeScorer`], [`DecayScorer`], ...),
//!   slicer ([`GreedySlice`], [`KnapsackSlice`], [`QuotaSlice`],
//!   [`CountQuotaSlice`], ...) and placer ([`ChronologicalPlacer`],
//!   [`UShapedPlacer`]);
//! * the pipeline: [`Pipeline`], [`Policy`], declarative [`PolicyConfig`] and
//!   named [`presets`];
//! * the context gate: [`ContextGate`] admits retrieved texts
//!   ([`RetrievalNode`]) into an existing context under a global token budget
//!   ([`GateConfig`]), or answers [`GateOutcome::Over`] so the caller compacts
//!   its context first (module [`gate`]).
//!
//! ```
//! use cupel::{ContextBudget, ContextItem, ContextKind, Pipeline, preset};
//!
//! let items = vec![
//!     ContextItem::builder("You are a support agent.", 8)
//!         .kind(ContextKind::SYSTEM_PROMPT)
//!         .pinned(true)
//!         .build()?,
//!     ContextItem::builder("user: my order never arrived", 12)
//!         .timestamp("2025-03-01T10:00:00Z".parse().unwrap())
//!         .build()?,
//!     ContextItem::builder("user: hi", 3)
//!         .timestamp("2025-03-01T09:58:00Z".parse().unwrap())
//!         .build()?,
//! ];
//! let policy = preset("chat")?.config.build()?;
//! let pipeline = Pipeline::new(policy, ContextBudget::new(4_096, 20)?);
//!
//! let window = pipeline.run(&items)?;
//! assert_eq!(window.len(), 2); // the pinned prompt + the most valuable turn that fits
//!
//! let report = pipeline.dry_run(&items)?;
//! for excluded in &report.excluded {
//!     println!("left out {:?}: {}", excluded.item.content(), excluded.reason);
//! }
//! # Ok::<(), cupel::CupelError>(())
//! ```
//!
//! Test assertions (`cupel-testing`) and the OpenTelemetry bridge
//! (`cupel-otel`) are separate crates; analytics is behind a feature.
//!
//! # Features
//! * `serde` — serde support on the data model (the pipeline layer enables it
//!   for its declarative configuration in any case) and, with `analytics`, on
//!   the adaptive-budget types (checkpoint a `UsageRecorder`).
//! * `analytics` — `cupel::analytics`: report metrics, budget simulation
//!   (marginal items, minimum budget, sweeps), policy sensitivity and adaptive
//!   token budgets for agent loops (`cupel::analytics::UsageRecorder`).
//! * `tiktoken` — `cupel::TiktokenCounter`, a [`TokenCounter`] backed by
//!   tiktoken's BPE encodings (`cl100k_base`, `o200k_base`, ...), for the
//!   context gate.

#![cfg_attr(docsrs, feature(doc_cfg))]
pub use cupel_core::*;
pub use cupel_pipeline::*;
pub use cupel_placers::*;
pub use cupel_scorers::*;
pub use cupel_slicers::*;

/// Report metrics, budget simulation, policy sensitivity and adaptive token
/// budgets (feature `analytics`).
///
/// ```
/// use cupel::analytics::{Decimal, UsageRecorder};
///
/// let mut usage = UsageRecorder::new();
/// usage.record_cycle([("planner", 300), ("coder", 900)])?;
/// // ceil(1200 × 1.25) = 1500
/// assert_eq!(usage.suggest_token_budget(4_000, Decimal::new(25, 2)), 1_500);
/// # Ok::<(), cupel::analytics::UsageError>(())
/// ```
#[cfg(feature = "analytics")]
pub use cupel_analytics as analytics;

/// The workspace README's examples, compiled and run as doctests.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
