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
//! assert_eq!(window.len(), 2); // the pinned prompt + the newest turn that fits ("hi": 3 of 12)
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
//! * `tiktoken` — `cupel::TiktokenCounter` (also in [`tokens`]), a
//!   [`TokenCounter`] backed by tiktoken's BPE encodings (`cl100k_base`,
//!   `o200k_base`, ...), for the context gate.
//! * `huggingface` — `cupel::tokens::HuggingFaceCounter`, a tokenizer read
//!   from a `tokenizer.json` you supply.
//! * `chat` — `cupel::chat`: trim an OpenAI or Anthropic chat transcript in
//!   one call (tool calls stay with their results, the window is one the
//!   provider accepts, tokens counted as the provider counts them). The
//!   README's examples run as doctests with this feature on.

#![cfg_attr(docsrs, feature(doc_cfg))]

// Data model, contracts, diagnostics and run budgets (cupel-core).
pub use cupel_core::{
    BudgetDimension, BudgetExceededError, BudgetPhase, BudgetRequest, BudgetSnapshot,
    BudgetTracker, CapExclusion, ConfigError, ContextBudget, ContextBudgetBuilder, ContextItem,
    ContextItemBuilder, ContextKind, ContextSource, CountRequirementShortfall, CupelError,
    DEFAULT_MAX_TABLE_BYTES, Deadline, DiagnosticTraceCollector, ExcludedItem, ExclusionReason,
    ExclusionRecord, FanOut, FixedTimeProvider, IncludedItem, InclusionReason, InclusionRecord,
    ManualTimeProvider, NullTraceCollector, OverflowEvent, OverflowStrategy, PipelineStage, Placer,
    RUN_BUDGET_TRACING_TARGET, RemainingTokens, Reservation, RunBudget, RunBudgetBuilder,
    ScoredItem, Scorer, SelectionReport, SliceBudget, SliceOutcome, SliceRoom, Slicer, SlicerKind,
    StageTrace, SystemTimeProvider, TableLimit, TimeProvider, TokenCounter, TokenLimit, TokenSign,
    TokenUsage, TraceCollector, TraceDetailLevel, TraceEvent, UsageMeter, check_finite,
    check_finite_scores, check_token_totals, chrono, diagnostics, parse_timestamp, score_cmp_desc,
    score_sort_key, serde_timestamp,
};
// Issue 29: item variants, their generators, summaries of evicted units.
pub use cupel_core::{
    HeadTail, ItemVariant, Placeholder, VARIANT_METADATA_KEY, VariantChoice, VariantGenerator,
    VariantOutcome, VariantPick, VariantReason, with_generated_variants,
};

// Scorers (cupel-scorers).
pub use cupel_scorers::{
    CompositeScorer, CompositeScorerBuilder, DecayCurve, DecayScorer, FrequencyScorer, KindScorer,
    MetadataKeyScorer, MetadataTrustScorer, PositionScorer, PriorityScorer, RecencyScorer,
    ReflexiveScorer, ScaledScorer, StepWindow, TagMatch, TagScorer,
};

// Slicers (cupel-slicers).
pub use cupel_slicers::{
    ContiguousSlice, CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice,
    DEFAULT_BUCKET_SIZE, DEFAULT_MAX_TABLE_CELLS, GreedySlice, KnapsackSlice, KnapsackTableSize,
    QuotaEntry, QuotaSet, QuotaSetBuilder, QuotaSlice, SCORE_SCALE, ScarcityBehavior,
    StreamSelection, StreamSlice,
};

// Placers (cupel-placers).
pub use cupel_placers::{ChronologicalPlacer, UShapedPlacer};

// Pipeline, policy, declarative configuration, presets and registry
// (cupel-pipeline).
pub use cupel_pipeline::{
    BudgetedWindow, ComponentRegistry, ComponentType, CountQuotaConfig, CurveConfig, InnerScorer,
    KindWeightConfig, MAX_SCORER_DEPTH, OverflowObserver, Pipeline, PipelineBuilder, PipelineParts,
    PlacerConstructor, PlacerType, Policy, PolicyBuilder, PolicyConfig, Preset, QuotaConfig,
    RunHold, RunOptions, RunOutput, ScorerConfig, ScorerConstructor, ScorerType, SlicerConfig,
    SlicerConstructor, SlicerType, StepWindowConfig, TagWeightConfig, overflow_strategy_name,
    preset, presets, samples, scarcity_behavior_name, serde_json,
};
pub use cupel_pipeline::{
    EvictedUnit, SUMMARY_METADATA_KEY, SummarizedWindow, Summary, SummaryPlan,
};
// Issue 28: remaining time for people.
pub use cupel_core::RemainingTime;

#[cfg(feature = "tiktoken")]
pub use cupel_tokens::{TIKTOKEN_ENCODINGS, TiktokenCounter, TokenizerError};

// The context gate (cupel-gate): everyday names at the root, all of it in
// `cupel::gate`.
pub use cupel_gate::{
    Admitted, BuiltinClassifier, BuiltinCompactor, ClassifierScores, CodeKind, CodeLanguage,
    CodeNode, CompactCodeSpec, CompactionPolicy, CompactionPolicyKind, CompactionRule, Compactor,
    ContextCompactor, ContextGate, ContextGateBuilder, GATE_EVENT, GateConfig, GateConfigBuilder,
    GateConfigError, GateDecision, GateError, GateOutcome, GateReport, GateSpec, GateState, GaveUp,
    InboxMessage, LanguageClassifier, LoopGuard, LoopOutcome, NODE_HEADER, NodeReport, Over,
    RetrievalNode, RuleSpec, SummarizeWith, Unmatched, compact_csharp, compact_sql, format_node,
    header_value,
};

/// The context gate (`cupel-rs-gate`): admit retrieved code and text into a
/// context under a token budget, compacting SQL and C# where configured, or
/// answer "over" so the caller compacts its context first. See
/// `spec/17-context-gate.md`.
pub mod gate {
    pub use cupel_gate::*;
}

/// Token counters (`cupel-rs-tokens`): [`CharEstimate`](tokens::CharEstimate)
/// always, `TiktokenCounter` with the `tiktoken` feature,
/// `HuggingFaceCounter` with `huggingface`.
pub mod tokens {
    pub use cupel_tokens::*;
}

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

/// Chat transcripts in and out (feature `chat`): the `cupel-rs-chat` crate.
///
/// ```
/// use cupel::chat::{Transcript, Trim, trim_transcript};
/// let doc = Transcript::parse(r#"[{"role": "user", "content": "hi"}]"#)?;
/// let (window, out) = trim_transcript(&doc, &Trim::openai(2_000))?;
/// assert_eq!((window, out.positions), (doc, vec![0]));
/// # Ok::<(), cupel::chat::ChatError>(())
/// ```
#[cfg(feature = "chat")]
pub use cupel_chat as chat;

/// The workspace README's examples, compiled and run as doctests (they use
/// `cupel::chat`, so they run with the `chat` feature, as CI's
/// `--all-features` does).
#[doc = include_str!("../../../README.md")]
#[cfg(all(doctest, feature = "chat"))]
pub struct ReadmeDoctests;
