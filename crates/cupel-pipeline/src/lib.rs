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
//! budget; [`run`](Pipeline::run), [`run_traced`](Pipeline::run_traced),
//! [`dry_run`](Pipeline::dry_run)).
//!
//! ```
//! use cupel_core::{ContextBudget, ContextItem, ContextKind};
//! use cupel_pipeline::Pipeline;
//! # use cupel_core::{Scorer, Slicer, Placer, ScoredItem, SliceBudget, SliceOutcome, CupelError};
//! # struct Hint; impl Scorer for Hint { fn score(&self, i: usize, items: &[&ContextItem]) -> f64 { items[i].future_relevance_hint().unwrap_or(0.0) } }
//! # struct Fill; impl Slicer for Fill { fn slice(&self, s: &[ScoredItem<'_>], b: SliceBudget) -> Result<SliceOutcome, CupelError> {
//! #     let mut left = b.target_tokens; let mut out = vec![];
//! #     for (i, x) in s.iter().enumerate() { if x.item.tokens() <= left { left -= x.item.tokens(); out.push(i); } }
//! #     Ok(SliceOutcome::selected(out)) } }
//! # struct Keep; impl Placer for Keep { fn place(&self, s: &[ScoredItem<'_>]) -> Vec<usize> { (0..s.len()).collect() } }
//!
//! let items = vec![
//!     ContextItem::builder("You are terse.", 5).kind(ContextKind::SYSTEM_PROMPT).pinned(true).build()?,
//!     ContextItem::builder("relevant doc", 40).future_relevance_hint(0.9).build()?,
//!     ContextItem::builder("stale doc", 40).future_relevance_hint(0.1).build()?,
//! ];
//! let pipeline = Pipeline::builder()
//!     .scorer(Hint)
//!     .slicer(Fill)
//!     .placer(Keep)
//!     .budget(ContextBudget::new(100, 50)?)
//!     .build()?;
//! let window = pipeline.run(&items)?;
//! let contents: Vec<&str> = window.iter().map(|i| i.content()).collect();
//! assert_eq!(contents, ["You are terse.", "relevant doc"]);
//!
//! let report = pipeline.dry_run(&items)?;
//! assert_eq!(report.excluded[0].item.content(), "stale doc");
//! # Ok::<(), cupel_core::CupelError>(())
//! ```
//!
//! Depends on `cupel-core`, `cupel-scorers`, `cupel-slicers` and `cupel-placers`.

mod config;
mod construct;
mod names;
mod pipeline;
mod policy;
mod presets;
mod run;

pub use config::{
    CountQuotaConfig, CurveConfig, InnerScorer, KindWeightConfig, OverflowName, PolicyConfig,
    QuotaConfig, ScarcityName, ScorerConfig, SlicerConfig, StepWindowConfig, TagWeightConfig,
};
pub use names::{PlacerType, ScorerType, SlicerType};
pub use pipeline::{OverflowObserver, Pipeline, PipelineBuilder};
pub use policy::{Policy, PolicyBuilder};
pub use presets::{Preset, preset, presets};
