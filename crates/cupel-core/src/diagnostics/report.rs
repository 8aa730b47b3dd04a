//! The [`SelectionReport`] and its item types.

use crate::ContextItem;
use crate::diagnostics::{CountRequirementShortfall, ExclusionReason, InclusionReason, TraceEvent};

/// An item that made it into the window, with its score and reason.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct IncludedItem {
    /// The item.
    pub item: ContextItem,
    /// Its score when it was selected (1.0 for pinned items).
    pub score: f64,
    /// Why it was included.
    pub reason: InclusionReason,
}

/// An item left out, with its score and reason.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ExcludedItem {
    /// The item.
    pub item: ContextItem,
    /// Its score when it was excluded (0.0 if excluded before scoring).
    pub score: f64,
    /// Why it was excluded.
    pub reason: ExclusionReason,
}

/// Everything a run decided, item by item.
///
/// * `included` is in final placed order;
/// * `excluded` is sorted by score descending, ties in the order the run
///   excluded them;
/// * `total_candidates == included.len() + excluded.len()`, and
///   `total_tokens_considered` is the sum of all their tokens.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SelectionReport {
    /// Recorded events in insertion order.
    #[cfg_attr(feature = "serde", serde(default))]
    pub events: Vec<TraceEvent>,
    /// Selected items, in placed order.
    pub included: Vec<IncludedItem>,
    /// Rejected items, score descending.
    pub excluded: Vec<ExcludedItem>,
    /// Number of input items.
    pub total_candidates: usize,
    /// Sum of the tokens of every input item (negative counts included).
    pub total_tokens_considered: i64,
    /// Count requirements the slicer could not meet.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub count_requirement_shortfalls: Vec<CountRequirementShortfall>,
}

impl SelectionReport {
    /// Sum of the tokens of the included items (saturating).
    pub fn included_tokens(&self) -> i64 {
        self.included
            .iter()
            .fold(0i64, |acc, i| acc.saturating_add(i.item.tokens()))
    }

    /// The included items, in placed order.
    pub fn included_items(&self) -> impl Iterator<Item = &ContextItem> {
        self.included.iter().map(|i| &i.item)
    }
}
