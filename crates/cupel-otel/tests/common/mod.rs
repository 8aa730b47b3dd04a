//! Shared scenario for the integration tests.
#![allow(dead_code, unreachable_pub)]

use cupel_core::{
    ContextBudget, ContextItem, ContextKind, CupelError, OverflowStrategy, Placer, ScoredItem,
    Scorer, SliceBudget, SliceOutcome, Slicer,
};
use cupel_pipeline::Pipeline;
use cupel_slicers::GreedySlice;

/// Scores an item by its relevance hint (0.0 without one).
pub struct HintScorer;

impl Scorer for HintScorer {
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        items[index].future_relevance_hint().unwrap_or(0.0)
    }
}

/// Places the merged list in reverse, so "placed order" differs from merged order.
pub struct ReversePlacer;

impl Placer for ReversePlacer {
    fn place(&self, items: &[ScoredItem<'_>]) -> Vec<usize> {
        (0..items.len()).rev().collect()
    }
}

/// Selects every item, ignoring the budget (to provoke overflow at Place).
pub struct TakeAll;

impl Slicer for TakeAll {
    fn slice(
        &self,
        items: &[ScoredItem<'_>],
        _budget: SliceBudget,
    ) -> Result<SliceOutcome, CupelError> {
        Ok(SliceOutcome::selected((0..items.len()).collect()))
    }
}

/// The seven-item scenario (budget max 200, target 100):
///
/// | # | content | tokens | hint | kind | fate |
/// | --- | --- | --- | --- | --- | --- |
/// | 0 | sys | 10 | pinned | SystemPrompt | included (Pinned, 1.0) |
/// | 1 | negative | -5 | - | Message | Classify: NegativeTokens |
/// | 2 | alpha | 30 | 0.9 | Message | included |
/// | 3 | alpha | 35 | 0.5 | Memory | Deduplicate: copy of 2 with a lower score |
/// | 4 | beta | 40 | 0.8 | Document | included |
/// | 5 | gamma | 50 | 0.1 | ToolOutput | Slice: BudgetExceeded |
/// | 6 | zero | 0 | 0.3 | Message | included (ZeroToken) |
pub fn scenario() -> Vec<ContextItem> {
    vec![
        ContextItem::builder("sys", 10)
            .kind(ContextKind::SYSTEM_PROMPT)
            .pinned(true)
            .build()
            .unwrap(),
        ContextItem::builder("negative", -5)
            .kind(ContextKind::MESSAGE)
            .build()
            .unwrap(),
        ContextItem::builder("alpha", 30)
            .kind(ContextKind::MESSAGE)
            .future_relevance_hint(0.9)
            .build()
            .unwrap(),
        ContextItem::builder("alpha", 35)
            .kind(ContextKind::MEMORY)
            .future_relevance_hint(0.5)
            .build()
            .unwrap(),
        ContextItem::builder("beta", 40)
            .kind(ContextKind::DOCUMENT)
            .future_relevance_hint(0.8)
            .build()
            .unwrap(),
        ContextItem::builder("gamma", 50)
            .kind(ContextKind::TOOL_OUTPUT)
            .future_relevance_hint(0.1)
            .build()
            .unwrap(),
        ContextItem::builder("zero", 0)
            .kind(ContextKind::MESSAGE)
            .future_relevance_hint(0.3)
            .build()
            .unwrap(),
    ]
}

/// Budget of the scenario: max 200, target 100.
pub fn budget() -> ContextBudget {
    ContextBudget::new(200, 100).unwrap()
}

/// Hint scorer, greedy slicer, reversing placer, dedup on, overflow Throw.
pub fn pipeline() -> Pipeline {
    Pipeline::builder()
        .scorer(HintScorer)
        .slicer(GreedySlice)
        .placer(ReversePlacer)
        .budget(budget())
        .build()
        .unwrap()
}

/// Like [`pipeline`] but every sorted item is sliced, under `strategy`.
pub fn take_all_pipeline(strategy: OverflowStrategy) -> Pipeline {
    Pipeline::builder()
        .scorer(HintScorer)
        .slicer(TakeAll)
        .placer(ReversePlacer)
        .overflow_strategy(strategy)
        .budget(budget())
        .build()
        .unwrap()
}
