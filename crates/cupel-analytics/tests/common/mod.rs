//! Shared builders for the integration tests.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    deprecated
)]

use std::sync::Arc;

use cupel_core::{ContextBudget, ContextItem, ContextKind, OverflowStrategy, Slicer};
use cupel_pipeline::{Pipeline, Policy};
use cupel_placers::ChronologicalPlacer;
use cupel_scorers::ReflexiveScorer;

/// An item whose score under `ReflexiveScorer` is `hint`.
pub fn item(content: &str, tokens: i64, hint: f64) -> ContextItem {
    ContextItem::builder(content, tokens)
        .future_relevance_hint(hint)
        .build()
        .unwrap()
}

/// Like [`item`], with a kind.
pub fn kinded(content: &str, tokens: i64, hint: f64, kind: &str) -> ContextItem {
    ContextItem::builder(content, tokens)
        .future_relevance_hint(hint)
        .kind(ContextKind::new(kind).unwrap())
        .build()
        .unwrap()
}

/// A pinned item.
pub fn pinned(content: &str, tokens: i64) -> ContextItem {
    ContextItem::builder(content, tokens)
        .pinned(true)
        .build()
        .unwrap()
}

/// Reflexive scorer (score = hint), the given slicer, chronological placer, Throw.
pub fn policy(slicer: impl Slicer + 'static) -> Policy {
    Policy::builder()
        .scorer(ReflexiveScorer)
        .slicer(slicer)
        .placer(ChronologicalPlacer)
        .build()
        .unwrap()
}

/// [`policy`] bound to `budget`.
pub fn pipeline(slicer: impl Slicer + 'static, budget: ContextBudget) -> Pipeline {
    Pipeline::new(policy(slicer), budget)
}

/// [`pipeline`] with an explicit overflow strategy and deduplication flag.
pub fn pipeline_with(
    slicer: Arc<dyn Slicer>,
    budget: ContextBudget,
    overflow: OverflowStrategy,
    dedup: bool,
) -> Pipeline {
    let policy = Policy::builder()
        .scorer(ReflexiveScorer)
        .slicer_arc(slicer)
        .placer(ChronologicalPlacer)
        .overflow_strategy(overflow)
        .deduplication(dedup)
        .build()
        .unwrap();
    Pipeline::new(policy, budget)
}

/// A roomy budget (the simulations override its sizes anyway).
pub fn roomy() -> ContextBudget {
    ContextBudget::new(10_000, 10_000).unwrap()
}

/// Positions in `items` of the items in `report.included`, by pointer identity
/// (test items are distinct allocations), in placed order.
pub fn positions(items: &[ContextItem], report: &cupel_core::SelectionReport) -> Vec<usize> {
    report
        .included
        .iter()
        .map(|inc| items.iter().position(|i| i.ptr_eq(&inc.item)).unwrap())
        .collect()
}

/// Whether `items[target]` is in the public dry run at probe size `b`
/// (max = target = b, rest of the pipeline's budget kept). `None` when the
/// run fails.
pub fn dry_run_includes(
    pipeline: &Pipeline,
    items: &[ContextItem],
    target: usize,
    b: i64,
) -> Option<bool> {
    let budget = pipeline
        .budget()
        .to_builder()
        .max_tokens(b)
        .target_tokens(b)
        .build()
        .ok()?;
    let report = pipeline.dry_run_with_budget(items, &budget).ok()?;
    Some(
        report
            .included
            .iter()
            .any(|inc| inc.item.ptr_eq(&items[target])),
    )
}
