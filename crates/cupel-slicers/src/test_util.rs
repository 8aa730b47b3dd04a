//! Helpers for the unit tests.

use cupel_core::{ContextItem, ContextKind, ScoredItem, SliceBudget};

pub(crate) fn item(content: &str, tokens: i64) -> ContextItem {
    ContextItem::new(content, tokens).unwrap()
}

pub(crate) fn item_kind(content: &str, tokens: i64, kind: &str) -> ContextItem {
    ContextItem::builder(content, tokens)
        .kind(ContextKind::new(kind).unwrap())
        .build()
        .unwrap()
}

pub(crate) fn scored<'a>(items: &'a [ContextItem], scores: &[f64]) -> Vec<ScoredItem<'a>> {
    assert_eq!(items.len(), scores.len());
    items
        .iter()
        .zip(scores)
        .map(|(i, &s)| ScoredItem::new(i, s))
        .collect()
}

/// `max_tokens == target_tokens == target`.
pub(crate) fn budget(target: i64) -> SliceBudget {
    SliceBudget::new(target, target)
}
