//! Cupel decides what goes into a language model's context window.
//!
//! Hand it candidate items — messages, documents, tool outputs, memories,
//! system prompts — with token counts you computed, and a budget. It scores,
//! deduplicates, slices and orders them and returns the window; a dry run also
//! explains every inclusion and exclusion. This facade is the one dependency
//! most applications need: the everyday names are at the root, and each part
//! of Cupel has a module with all of its names.
//!
//! | module | what it holds | crate |
//! | --- | --- | --- |
//! | the root | items, budgets, the pipeline, presets, reports, every scorer, slicer and placer, the run budget's everyday names, the gate's | |
//! | [`config`] | declarative policies: `PolicyConfig`, presets, the component registry | `cupel-rs-pipeline` |
//! | [`diagnostics`] | report and trace types | `cupel-rs-core` |
//! | [`run`] | budgets across an agent run: the run budget shared with subagents, adaptive budgets | `cupel-rs-run` |
//! | [`gate`] | the context gate and its compactors | `cupel-rs-gate` |
//! | [`tokens`] | token counters | `cupel-rs-tokens` |
//! | `chat` (feature `chat`) | OpenAI and Anthropic transcripts in and out | `cupel-rs-chat` |
//! | `analytics` (feature `analytics`) | report metrics, budget simulation, policy sensitivity | `cupel-rs-analytics` |
//! | [`scorers`], [`slicers`], [`placers`] | the stage implementations (their everyday names are also at the root) | |
//!
//! # A selection
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
//! let policy = preset("recent-dense")?.config.build()?;
//! let pipeline = Pipeline::new(policy, ContextBudget::new(4_096, 20)?);
//!
//! let window = pipeline.run(&items)?;
//! assert_eq!(window.len(), 2); // the pinned prompt + the densest turn that fits ("hi": 3 of 12)
//!
//! let report = pipeline.dry_run(&items)?;
//! for excluded in &report.excluded {
//!     println!("left out {:?}: {}", excluded.item.content(), excluded.reason);
//! }
//! # Ok::<(), cupel::CupelError>(())
//! ```
//!
//! # Groups: a tool call stays with its result
//!
//! Items with the same `group` id are kept, dropped and placed together.
//!
//! ```
//! use cupel::{ContextBudget, ContextItem, Pipeline, preset};
//!
//! let items = vec![
//!     ContextItem::builder("user: weather in Paris?", 10).build()?,
//!     ContextItem::builder("tool_call get_weather(Paris)", 15).group("call-1").build()?,
//!     ContextItem::builder("tool_result: 18C, cloudy", 400).group("call-1").build()?,
//! ];
//! let policy = preset("recent-dense")?.config.build()?;
//! // 100 tokens cannot hold the 415-token exchange: neither member is kept.
//! let window = Pipeline::new(policy, ContextBudget::new(4_096, 100)?).run(&items)?;
//! assert_eq!(window.len(), 1);
//! # Ok::<(), cupel::CupelError>(())
//! ```
//!
//! # A run budget shared with subagents
//!
//! ```
//! use cupel::{BudgetPhase, LocalTracker, ManualTimeProvider, RunBudget, TokenLimit, TokenUsage};
//!
//! let clock = ManualTimeProvider::new("2026-01-01T12:00:00Z".parse()?);
//! let budget = RunBudget::builder().token_limit(TokenLimit::new(Some(8_000), None)?).build(&clock)?;
//! let run = LocalTracker::new(budget, clock.clone())?;
//! // The subagent charges the run's ledger under a tighter ceiling of its own.
//! let sub = run.child_named("researcher", RunBudget::new(None, Some(TokenLimit::new(Some(2_000), None)?), &clock)?)?;
//! sub.reserve(BudgetPhase::ProviderRequest, TokenUsage::new(1_500, 0)?)?
//!     .settle(TokenUsage::new(1_400, 150)?); // what the provider reported
//! assert_eq!(run.remaining_tokens().and_then(|r| r.input()), Some(6_600)); // 8,000 - 1,400
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Trimming a chat transcript (feature `chat`)
//!
//! The newest stretch of an OpenAI or Anthropic conversation that fits, in
//! the same format; a tool call and its result are kept or dropped together.
//!
//! ```
//! # #[cfg(feature = "chat")] {
//! use cupel::chat::{Transcript, Trim, trim_transcript};
//!
//! let doc = Transcript::parse(r#"[
//!   {"role": "system", "content": "You are a support agent."},
//!   {"role": "user", "content": "My parcel is late."},
//!   {"role": "assistant", "content": null, "tool_calls": [
//!     {"id": "call_1", "type": "function", "function": {"name": "track", "arguments": "{}"}}]},
//!   {"role": "tool", "tool_call_id": "call_1", "content": "In transit, due Friday."},
//!   {"role": "assistant", "content": "It is due on Friday."},
//!   {"role": "user", "content": "Can I change the address?"}
//! ]"#)?;
//! let (window, out) = trim_transcript(&doc, &Trim::openai(60))?;
//! assert_eq!(out.positions, [0, 5]); // the system prompt and the newest user turn
//! assert_eq!(window.messages().len(), 2);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The context gate
//!
//! ```
//! use cupel::{ContextGate, GateConfig, GateOutcome, RetrievalNode, TokenCounter};
//! use cupel::gate::GateState;
//!
//! struct Words; // a stand-in; count with `cupel::tokens::TiktokenCounter` in production
//! impl TokenCounter for Words {
//!     fn count_tokens(&self, text: &str) -> i64 {
//!         text.split_whitespace().count() as i64
//!     }
//! }
//! let gate = ContextGate::new(GateConfig::builder("answer", 40).build()?, Words);
//! let state = GateState::new(
//!     vec!["the user asked about sales".to_string()],
//!     vec![RetrievalNode::new("SELECT region, SUM(total) FROM sales GROUP BY region;")],
//! );
//! assert!(matches!(gate.admit(state, &[])?, GateOutcome::Admitted(_)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Test assertions (`cupel-testing`) and the OpenTelemetry bridge
//! (`cupel-otel`) are separate crates.
//!
//! # Moved names
//! Names that are not everyday left the root in 0.2 for their module
//! (`cupel::gate::compact_sql`, `cupel::run::UsageMeter`,
//! `cupel::config::ScorerConfig`, ...). The root paths still resolve until
//! 0.3, hidden from these docs (a `use` cannot carry `#[deprecated]`); the
//! CHANGELOG lists them.
//!
//! # Features
//! * `serde` — serde support on the data model (the pipeline layer enables it
//!   for its declarative configuration in any case), on the run-budget
//!   values and on the adaptive recorder (checkpoint a `UsageRecorder`).
//! * `analytics` — `cupel::analytics`: report metrics, budget simulation
//!   (marginal items, minimum budget, sweeps) and policy sensitivity.
//! * `tiktoken` — `cupel::tokens::TiktokenCounter` (also at the root), a
//!   [`TokenCounter`] backed by tiktoken's BPE encodings (`cl100k_base`,
//!   `o200k_base`, ...), for the context gate.
//! * `huggingface` — `cupel::tokens::HuggingFaceCounter`, a tokenizer read
//!   from a `tokenizer.json` you supply.
//! * `chat` — `cupel::chat`: trim an OpenAI or Anthropic chat transcript in
//!   one call (tool calls stay with their results, the window is one the
//!   provider accepts, tokens counted as the provider counts them). The
//!   README's examples run as doctests with this feature and `redis` on.
//! * `redis` — `cupel::run::store::RedisStore`: a run budget shared by
//!   worker processes and machines through Redis or Valkey.

#![cfg_attr(docsrs, feature(doc_cfg))]

// ----- everyday names ---------------------------------------------------------

// The data model and contracts (cupel-core).
pub use cupel_core::{
    ContextBudget, ContextBudgetBuilder, ContextItem, ContextItemBuilder, ContextKind,
    ContextSource, CupelError, DiagnosticTraceCollector, ExcludedItem, ExclusionReason, FanOut,
    FixedTimeProvider, IncludedItem, InclusionReason, ManualTimeProvider, NullTraceCollector,
    OverflowEvent, OverflowStrategy, Placer, ScoredItem, Scorer, SelectionReport, Slicer,
    SystemTimeProvider, Tag, TimeProvider, TokenCounter, TokenTotals, TraceCollector,
    TraceDetailLevel, chrono, diagnostics,
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
    ContiguousSlice, CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice,
    KnapsackSlice, QuotaEntry, QuotaSet, QuotaSetBuilder, QuotaSlice, ScarcityBehavior,
    StreamSlice,
};

// Placers (cupel-placers).
pub use cupel_placers::{ChronologicalPlacer, UShapedPlacer};

// The pipeline (cupel-pipeline).
pub use cupel_pipeline::{
    Pipeline, PipelineBuilder, Policy, PolicyBuilder, PolicyConfig, Preset, RunHold, RunOptions,
    RunOutput, SelectWithinError, preset, presets,
};
// Summaries of what a window evicts (cupel-pipeline).
pub use cupel_pipeline::{
    EvictedUnit, SUMMARY_METADATA_KEY, SummarizedWindow, Summary, SummaryPlan,
};

// The run budget (cupel-run): everyday names here, all of it in `cupel::run`.
/// The old name of [`LocalTracker`].
#[allow(deprecated)]
pub use cupel_run::BudgetTracker;
pub use cupel_run::{
    BudgetDimension, BudgetExceededError, BudgetPhase, Deadline, LocalTracker, Reservation,
    RunBudget, RunError, TokenLimit, TokenUsage,
};
#[doc(hidden)]
pub use cupel_run::{RemainingTime, RemainingTokens, RunBudgetBuilder};

// The context gate (cupel-gate): everyday names here, all of it in `cupel::gate`.
pub use cupel_gate::{
    ContextGate, GateConfig, GateError, GateFailure, GateOutcome, GateReport, RetrievalNode,
};

#[cfg(feature = "tiktoken")]
pub use cupel_tokens::TiktokenCounter;

// ----- modules ------------------------------------------------------------------

/// Declarative configuration (`cupel-rs-pipeline`): [`PolicyConfig`]
/// (TOML/JSON), the scorer, slicer and placer configurations, named
/// [`presets`] and the [`ComponentRegistry`] for
/// custom components. See `spec/07-policy-config.md`.
pub mod config {
    pub use cupel_pipeline::{
        Bm25ScorerConfig, ComponentRegistry, ComponentType, CompositeScorerConfig,
        CountConstrainedKnapsackSlicerConfig, CountQuotaConfig, CountQuotaSlicerConfig,
        CurveConfig, CustomScorerConfig, CustomSlicerConfig, DecayScorerConfig, FusionConfig,
        HybridScorerConfig, InnerScorer, KindScorerConfig, KindWeightConfig, KnapsackSlicerConfig,
        MAX_SCORER_DEPTH, MetadataKeyScorerConfig, MetadataTrustScorerConfig, PlacerConstructor,
        PlacerType, PlainScorerConfig, PolicyConfig, PolicyTable, Preset, QuotaConfig,
        QuotaSlicerConfig, ScaledScorerConfig, ScorerConfig, ScorerConstructor, ScorerType,
        SlicerConfig, SlicerConstructor, SlicerType, StepWindowConfig, TagScorerConfig,
        TagWeightConfig, overflow_strategy_name, preset, presets, samples, scarcity_behavior_name,
        serde_json,
    };
}

/// Budgets across an agent run (`cupel-rs-run`): the run budget an agent
/// shares with its subagents (`LocalTracker`, `spec/15-run-budget.md`),
/// adaptive per-cycle budgets (`UsageRecorder`, `spec/16-adaptive-budget.md`)
/// and the bridge between them (`CycleDemand`); every fallible call returns
/// its `RunError`. A window selected under a run budget
/// (`RunOptions::run_budget`) fails with a [`SelectWithinError`]; the
/// run-budget options of [`RunOptions`] are here too.
///
/// ```
/// use cupel::run::{Decimal, UsageRecorder};
///
/// let mut usage = UsageRecorder::new();
/// usage.record_cycle([("planner", 300), ("coder", 900)])?;
/// // ceil(1200 × 1.25) = 1500
/// assert_eq!(usage.suggest_token_budget(4_000, Decimal::new(25, 2)), 1_500);
/// # Ok::<(), cupel::run::UsageError>(())
/// ```
pub mod run {
    pub use cupel_pipeline::{NoRunBudget, RunBudgetSlot, SelectWithinError, WithRunBudget};
    pub use cupel_run::*;
}

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

/// Every scorer (`cupel-rs-scorers`).
pub mod scorers {
    pub use cupel_scorers::*;
}

/// Every slicer (`cupel-rs-slicers`) and its tuning constants.
pub mod slicers {
    pub use cupel_slicers::*;
}

/// The placers (`cupel-rs-placers`).
pub mod placers {
    pub use cupel_placers::*;
}

// ----- moved names (root paths kept until 0.3) ----------------------------------
//
// Before 0.2 the root re-exported about 190 names in one namespace. Those that
// are not everyday moved to their module; their root paths stay, hidden, for
// one minor version (a `use` cannot carry `#[deprecated]`, rust-lang/rust#30827).
#[doc(hidden)]
pub use cupel_core::{
    CapExclusion, ConfigError, CountRequirementShortfall, DEFAULT_MAX_TABLE_BYTES, ExclusionRecord,
    InclusionRecord, PipelineStage, SliceBudget, SliceOutcome, SliceRoom, SlicerKind, StageTrace,
    TableLimit, TokenSign, TraceEvent, check_counted, check_finite, check_finite_scores,
    check_token_totals, parse_timestamp, score_cmp_desc, score_sort_key, serde_timestamp,
};
#[doc(hidden)]
pub use cupel_gate::{
    Admitted, BuiltinClassifier, BuiltinCompactor, ClassifierScores, CodeKind, CodeLanguage,
    CodeNode, CompactCodeSpec, CompactionPolicy, CompactionPolicyKind, CompactionRule, Compactor,
    ContextCompactor, ContextGateBuilder, GATE_EVENT, GateConfigBuilder, GateConfigError,
    GateDecision, GateSpec, GateState, GaveUp, InboxMessage, LanguageClassifier, LoopGuard,
    LoopOutcome, NODE_HEADER, NodeReport, Over, RuleSpec, SummarizeWith, Unmatched, compact_csharp,
    compact_sql, format_node, header_value,
};
#[doc(hidden)]
pub use cupel_pipeline::{
    ComponentRegistry, ComponentType, CountQuotaConfig, CurveConfig, InnerScorer, KindWeightConfig,
    MAX_SCORER_DEPTH, OverflowObserver, PipelineParts, PlacerConstructor, PlacerType, QuotaConfig,
    ReservedWindow, ScorerConfig, ScorerConstructor, ScorerType, SlicerConfig, SlicerConstructor,
    SlicerType, StepWindowConfig, TagWeightConfig, overflow_strategy_name, samples,
    scarcity_behavior_name, serde_json,
};
#[doc(hidden)]
pub use cupel_run::{RUN_BUDGET_TRACING_TARGET, RunRequest, RunSnapshot, UsageMeter};
#[doc(hidden)]
pub use cupel_slicers::{
    DEFAULT_BUCKET_SIZE, DEFAULT_MAX_TABLE_CELLS, KnapsackTableSize, SCORE_SCALE, StreamSelection,
};
#[cfg(feature = "tiktoken")]
#[doc(hidden)]
pub use cupel_tokens::{TIKTOKEN_ENCODINGS, TokenizerError};

/// Report metrics, budget simulation and policy sensitivity (feature
/// `analytics`). The adaptive budget it used to hold is in [`run`].
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
/// `cupel::chat` and `cupel::run::store::RedisStore`, so they run with the
/// `chat` and `redis` features, as CI's `--all-features` does).
#[doc = include_str!("../../../README.md")]
#[cfg(all(doctest, feature = "chat", feature = "redis"))]
pub struct ReadmeDoctests;
