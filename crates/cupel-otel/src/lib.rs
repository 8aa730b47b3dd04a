//! OpenTelemetry spans (and, optionally, `tracing` events) for every Cupel pipeline run.
//!
//! [`OtelCollector`] is a [`TraceCollector`](cupel_core::TraceCollector):
//! pass it to a run (`RunOptions::collector`) and each run becomes one span tree in the
//! trace of whatever span is current — typically the model call the context
//! window is built for:
//!
//! ```text
//! cupel.pipeline                 max_tokens, verbosity
//! ├── cupel.stage.classify       item counts in/out, real start and end times
//! ├── cupel.stage.score
//! ├── cupel.stage.deduplicate
//! ├── cupel.stage.slice
//! └── cupel.stage.place
//! ```
//!
//! [`CupelVerbosity`] picks how much detail goes in: stage spans only (for
//! production), plus one event per excluded item on the stage span that
//! excluded it, or plus one event per included item on the Place span. By
//! default each tier records exactly the specification's attribute table;
//! [`OtelCollector::with_extras`] opts in to more (the budget's
//! target, item counts, overflow and shortfall events). The collector's
//! rustdoc lists every span, attribute and event name, and the [`names`]
//! module has each as a public constant;
//! [`exclusion_reason_name`] is how reasons are named. The tracer is named
//! [`TRACER_NAME`] (`"cupel"`). Without an installed tracer provider the
//! collector reports itself disabled and a traced run costs what an untraced
//! one does.
//!
//! With the `tracing` feature, `TracingCollector` reports runs to
//! `tracing` subscribers instead (the same span tree: a run span with one
//! DEBUG span per stage, TRACE events per item, target `cupel`), for
//! applications that do not run OpenTelemetry or export `tracing` spans
//! through `tracing-opentelemetry`.
//!
//! To export spans *and* get the run's [`SelectionReport`](cupel_core::SelectionReport),
//! ask the same run for its report (`RunOptions::report`), or feed the collector and a
//! [`DiagnosticTraceCollector`](cupel_core::DiagnosticTraceCollector) from
//! one run with [`FanOut`](cupel_core::FanOut).
//!
//! A run budget shows on your own spans too: [`record_run_budget`] sets a
//! [`LocalTracker`](cupel_run::LocalTracker)'s remaining time and tokens
//! as attributes (`budget_remaining_time`, `budget_remaining_tokens.input`,
//! `budget_remaining_tokens.output` — the field names of the tracker's own
//! `tracing` events), and [`record_run_budget_exceeded`] records a failed
//! checkpoint as an event.
//!
//! With the `gate` feature a context-gate decision shows on your spans too:
//! [`record_gate_report`] adds a `MANAGE_CONTEXT_BUDGET` event with the
//! decision (`decision` = the seed's `on_ok` / `on_over`, `verdict` =
//! `admitted` / `over`), the token sums, the inbox summary and the per-node
//! language, policy, compacted flag and tokens before and after (the fields
//! of the gate's own `tracing` event); [`record_gate_error`] records a failed
//! call. The report type is `cupel-gate`'s, not the pipeline's.
//!
//! [`record_attributes`] sets reported figures, such as a cache-aware chat
//! turn's (`cupel-chat`'s `CacheTurn::attributes`), as attributes of the
//! model request's span; this crate does not depend on `cupel-chat` for it
//! (the deprecated `chat` feature keeps the older `record_cache_turn` for
//! one minor version).
//!
//! Depends on `cupel-core`, `cupel-run` and the `opentelemetry` API (no SDK);
//! `cupel-gate` and `tracing` only behind the features of the same names.
//!
//! ```
//! use cupel_core::{ContextBudget, ContextItem, OverflowStrategy};
//! use cupel_otel::{OtelCollector, CupelVerbosity};
//! use cupel_pipeline::{Pipeline, RunOptions};
//! use cupel_placers::ChronologicalPlacer;
//! use cupel_scorers::PriorityScorer;
//! use cupel_slicers::GreedySlice;
//! use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
//!
//! // An SDK provider that keeps finished spans in memory.
//! let exporter = InMemorySpanExporter::default();
//! let provider = SdkTracerProvider::builder()
//!     .with_simple_exporter(exporter.clone())
//!     .build();
//!
//! let pipeline = Pipeline::builder()
//!     .scorer(PriorityScorer)
//!     .slicer(GreedySlice)
//!     .placer(ChronologicalPlacer)
//!     .overflow_strategy(OverflowStrategy::Proceed)
//!     .budget(ContextBudget::new(1_000, 100)?)
//!     .build()?;
//! let items = vec![
//!     ContextItem::builder("keep me", 60).priority(9).build()?,
//!     ContextItem::builder("too big", 80).priority(1).build()?,
//! ];
//!
//! let mut collector =
//!     OtelCollector::with_tracer_provider(&provider, CupelVerbosity::StageAndExclusions);
//! let window = pipeline.run_with(&items, RunOptions::new().collector(&mut collector))?.items;
//! assert_eq!(window.len(), 1);
//!
//! let spans = exporter.get_finished_spans().unwrap();
//! // Five stage spans, then the root (spans are exported as they end).
//! let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
//! assert_eq!(names.last(), Some(&"cupel.pipeline"));
//! assert_eq!(spans.len(), 6);
//! // "too big" did not fit: one exclusion event on the Slice span.
//! let slice = spans.iter().find(|s| s.name == "cupel.stage.slice").unwrap();
//! assert_eq!(slice.events.len(), 1);
//! # Ok::<(), cupel_core::CupelError>(())
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]
mod attributes;
#[cfg(feature = "chat")]
mod cache;
mod collector;
#[cfg(feature = "gate")]
mod gate;
pub mod names;
mod run_budget;
#[cfg(feature = "tracing")]
mod tracing_collector;
mod verbosity;

pub use attributes::{attribute_values, record_attributes};
#[cfg(feature = "chat")]
#[cfg_attr(docsrs, doc(cfg(feature = "chat")))]
#[allow(deprecated)]
pub use cache::{cache_turn_attributes, record_cache_turn};
#[allow(deprecated)]
pub use collector::CupelOtelTraceCollector;
pub use collector::OtelCollector;
#[cfg(feature = "gate")]
#[cfg_attr(docsrs, doc(cfg(feature = "gate")))]
pub use gate::{GATE_EVENT_NAME, gate_report_attributes, record_gate_error, record_gate_report};
pub use names::{TRACER_NAME, exclusion_reason_name};
pub use run_budget::{
    BUDGET_DIMENSION, BUDGET_EXCEEDED_EVENT, BUDGET_PHASE, BUDGET_REMAINING_TIME,
    BUDGET_REMAINING_TOKENS_INPUT, BUDGET_REMAINING_TOKENS_OUTPUT, BUDGET_REQUESTER_DEPTH,
    BUDGET_REQUESTER_LABEL, BUDGET_SCOPE_DEPTH, BUDGET_STATE, budget_attributes, record_run_budget,
    record_run_budget_exceeded,
};
#[allow(deprecated)]
pub use run_budget::{record_budget, record_budget_exceeded};
#[cfg(feature = "tracing")]
pub use tracing_collector::TracingCollector;
pub use verbosity::CupelVerbosity;

/// The `opentelemetry` API crate, whose tracer, span and `KeyValue` types appear in this crate's signatures.
pub use opentelemetry;
