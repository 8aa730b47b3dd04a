//! The [`SelectionReport`] and its item types.

use crate::diagnostics::{CountRequirementShortfall, ExclusionReason, InclusionReason, TraceEvent};
use crate::{ContextBudget, ContextItem, ContextKind, VariantChoice};

/// An item that made it into the window, with its score and reason.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct IncludedItem {
    /// The item.
    pub item: ContextItem,
    /// Its score when it was selected (1.0 for pinned items).
    pub score: f64,
    /// Why it was included.
    pub reason: InclusionReason,
    /// The item's index in the input slice of the run (an extension to the
    /// specification's three fields; 0 when absent from JSON input).
    #[cfg_attr(feature = "serde", serde(default))]
    pub position: usize,
    /// Which variant of the input item the window holds, why, and the tokens
    /// it saved (an extension: `spec/22-variants.md`); `None` for an item
    /// included whole, and omitted from JSON then.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub variant: Option<VariantChoice>,
    /// What the scorers noted about the item (an extension: e.g. the query
    /// words it matched, `spec/23-relevance.md`); empty, and omitted from
    /// JSON, when no scorer noted anything.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub notes: Vec<crate::ScoreNote>,
}

/// An item left out, with its score and reason.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct ExcludedItem {
    /// The item.
    pub item: ContextItem,
    /// Its score when it was excluded (0.0 if excluded before scoring).
    pub score: f64,
    /// Why it was excluded.
    pub reason: ExclusionReason,
    /// The item's index in the input slice of the run (an extension to the
    /// specification's three fields; 0 when absent from JSON input).
    #[cfg_attr(feature = "serde", serde(default))]
    pub position: usize,
    /// What the scorers noted about the item (an extension: e.g. the query
    /// words it matched, `spec/23-relevance.md`); empty, and omitted from
    /// JSON, when no scorer noted anything.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub notes: Vec<crate::ScoreNote>,
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
#[non_exhaustive]
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
    /// Sum of the tokens of the included items, exact (an `i128` cannot
    /// overflow on any list of `i64` counts).
    pub fn included_tokens(&self) -> i128 {
        self.included
            .iter()
            .map(|i| i128::from(i.item.tokens()))
            .sum()
    }

    /// How full the window is: included tokens ÷ `budget.max_tokens()`.
    ///
    /// The denominator is the hard ceiling (not the target). When `max_tokens`
    /// is 0 — which the budget rules allow — utilisation is defined as 0.0.
    /// An overflow under `Proceed` can make it exceed 1.0.
    ///
    /// ```
    /// use cupel_core::{ContextBudget, ContextItem, IncludedItem, InclusionReason, SelectionReport};
    /// let mut report = SelectionReport::default();
    /// for (c, t) in [("a", 300), ("b", 200)] {
    ///     report.included.push(IncludedItem::new(ContextItem::new(c, t)?, 0.5, InclusionReason::Scored));
    /// }
    /// assert_eq!(report.budget_utilization(&ContextBudget::new(1_000, 800)?), 0.5); // 500 / 1000
    /// assert_eq!(report.budget_utilization(&ContextBudget::new(0, 0)?), 0.0);
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    pub fn budget_utilization(&self, budget: &ContextBudget) -> f64 {
        match budget.max_tokens() {
            0 => 0.0,
            max => self.included_tokens() as f64 / max as f64,
        }
    }

    /// The number of distinct kinds among the included items (ASCII case
    /// folded; 0 for an empty window).
    pub fn kind_diversity(&self) -> usize {
        self.included
            .iter()
            .map(|i| i.item.kind())
            .collect::<std::collections::BTreeSet<&ContextKind>>()
            .len()
    }

    /// The share of included items that carry a timestamp (0.0 for an empty window).
    pub fn timestamp_coverage(&self) -> f64 {
        let n = self.included.len();
        if n == 0 {
            return 0.0;
        }
        let stamped = self
            .included
            .iter()
            .filter(|i| i.item.timestamp().is_some())
            .count();
        stamped as f64 / n as f64
    }

    /// The included items, in placed order.
    pub fn included_items(&self) -> impl Iterator<Item = &ContextItem> {
        self.included.iter().map(|i| &i.item)
    }
}

impl IncludedItem {
    /// An included item with its score and reason, at input position 0
    /// (set another with [`at_position`](Self::at_position)).
    pub fn new(item: ContextItem, score: f64, reason: InclusionReason) -> Self {
        Self {
            item,
            score,
            reason,
            position: 0,
            variant: None,
            notes: Vec::new(),
        }
    }

    /// The same row, for the item at `position` in the run's input.
    ///
    /// ```
    /// use cupel_core::{ContextItem, IncludedItem, InclusionReason};
    /// let row = IncludedItem::new(ContextItem::new("a", 1)?, 0.5, InclusionReason::Scored)
    ///     .at_position(3);
    /// assert_eq!(row.position, 3);
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    #[must_use]
    pub fn at_position(mut self, position: usize) -> Self {
        self.position = position;
        self
    }
}

impl ExcludedItem {
    /// An excluded item with its score and reason, at input position 0
    /// (set another with [`at_position`](Self::at_position)).
    pub fn new(item: ContextItem, score: f64, reason: ExclusionReason) -> Self {
        Self {
            item,
            score,
            reason,
            position: 0,
            notes: Vec::new(),
        }
    }

    /// The same row, for the item at `position` in the run's input.
    #[must_use]
    pub fn at_position(mut self, position: usize) -> Self {
        self.position = position;
        self
    }
}

impl SelectionReport {
    /// A report of `included` (placed order) and `excluded` (score
    /// descending) items, with `total_candidates` and
    /// `total_tokens_considered` computed from them (saturating), no events
    /// and no shortfalls. Set the other fields by assignment.
    pub fn new(included: Vec<IncludedItem>, excluded: Vec<ExcludedItem>) -> Self {
        let total_tokens_considered = included
            .iter()
            .map(|i| i.item.tokens())
            .chain(excluded.iter().map(|e| e.item.tokens()))
            .fold(0i64, i64::saturating_add);
        Self {
            events: Vec::new(),
            total_candidates: included.len() + excluded.len(),
            included,
            excluded,
            total_tokens_considered,
            count_requirement_shortfalls: Vec::new(),
        }
    }
}
